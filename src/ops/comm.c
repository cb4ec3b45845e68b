/* The communicator's launch detection, shared by both builds (ops/comm.h). */
#include <stdio.h>
#include <stdlib.h>

#include "ops/comm.h"

int cr_comm_launched_size(void) {
    static const char *const sizes[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(sizes[i]);
        if (v && *v) {
            long n = strtol(v, NULL, 10);
            return n > 0 && n < 1 << 20 ? (int)n : 1;
        }
    }
    return getenv("PMIX_RANK") || getenv("PMI_RANK") ? 1 : 0; /* a rank, its size unnamed */
}

void cr_comm_sum_ranks_f32(const float *all, float *out, size_t n, int ranks) {
    const float inv = 1.0f / (float)ranks;
    for (size_t i = 0; i < n; i++) {
        float s = all[i];
        for (int r = 1; r < ranks; r++) s += all[(size_t)r * n + i];
        out[i] = s * inv;
    }
}

void cr_comm_mean_f32(float *buf, float *scratch, size_t n) {
    cr_comm_allgather(buf, scratch, n * sizeof(float));
    cr_comm_sum_ranks_f32(scratch, buf, n, cr_comm_size());
}

/* ---- the device side ---- */

static int local_gpus; /* --num-gpus, or 0 */

cudarl_status cr_comm_local_gpus(int n) {
    if (n < 1)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "--num-gpus %d: give 1 or more GPUs (or leave "
                       "it out for a plain run)", n);
    if (cr_comm_size() > 1 || cr_comm_launched_size() > 0)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "--num-gpus %d in a job that mpirun started: "
                       "mpirun -np R already runs R ranks of one GPU each; drop --num-gpus, or "
                       "run without mpirun", n);
    const int have = cudarl_cuda_device_count();
    if (have == 0)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "--num-gpus %d: this cudarl sees no CUDA GPU "
                       "(cudarl info says why: a build without the CUDA backend, or no GPU or "
                       "driver); train on the CPU without --num-gpus (data parallel there: "
                       "mpirun -np R cudarl train --device cpu)", n);
    if (n > have)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "--num-gpus %d: this machine has %d CUDA GPU%s "
                       "(cudarl info lists them); ask for at most %d", n, have,
                       have == 1 ? "" : "s", have);
    if (!cr_comm_nccl_built())
        return cr_fail(CUDARL_ERR_UNSUPPORTED, "--num-gpus %d: the GPUs exchange gradients over "
                       "NCCL, and this cudarl was built without it; install NCCL (libnccl-dev, "
                       "or pip's nvidia-nccl-cu13) and rebuild with -DCUDARL_NCCL=ON "
                       "(NCCL_ROOT=<its folder> if CMake does not find it)", n);
    if (n > 1)
        return cr_fail(CUDARL_ERR_UNSUPPORTED, "--num-gpus %d: one process driving several "
                       "GPUs (a thread each) is not built yet, only --num-gpus 1; run "
                       "mpirun -np %d cudarl train --device cuda ... (a rank per GPU; "
                       "docs/multigpu.md)", n, n);
    local_gpus = n;
    return CUDARL_OK;
}

int cr_comm_local_gpu_count(void) { return local_gpus; }

int cr_comm_local_rank(void) {
    static const char *const names[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                        "PMI_LOCAL_RANK", "SLURM_LOCALID"};
    if (cr_comm_size() == 1) return 0;
    for (int i = 0; i < 4; i++) {
        const char *v = getenv(names[i]);
        if (v && *v) return (int)strtol(v, NULL, 10);
    }
    return cr_comm_rank(); /* no launcher's word: one host */
}

int cr_comm_dev_wanted(void) { return cr_comm_size() > 1 || local_gpus > 0; }

#ifdef CUDARL_WITH_CUDA
#include "ops/backend.h"
/* ops/cuda/comm_nccl.cu, or below where the build has no NCCL */
cudarl_status cr_nccl_open(cudarl_ctx *ctx, float *scratch, size_t n);
void cr_nccl_close(cudarl_ctx *ctx);
void cr_nccl_mean_f32(cudarl_ctx *ctx, float *buf, float *scratch, size_t n);

#ifdef CUDARL_HAVE_NCCL
int cr_comm_nccl_built(void) { return 1; }
#else
int cr_comm_nccl_built(void) { return 0; }
cudarl_status cr_nccl_open(cudarl_ctx *ctx, float *scratch, size_t n) {
    (void)ctx, (void)scratch, (void)n;
    return cr_fail(CUDARL_ERR_UNSUPPORTED, "data parallel on GPUs (%s) exchanges gradients over "
                   "NCCL, and this cudarl was built without it; install NCCL (NVIDIA's "
                   "libnccl-dev, or pip's nvidia-nccl-cu13) and rebuild with -DCUDARL_NCCL=ON "
                   "(NCCL_ROOT=<its folder> if CMake does not find it), or train on the CPU "
                   "(--device cpu, mpirun -np R)",
                   local_gpus ? "--num-gpus" : "mpirun on a CUDA device");
}
void cr_nccl_close(cudarl_ctx *ctx) { (void)ctx; }
void cr_nccl_mean_f32(cudarl_ctx *ctx, float *buf, float *scratch, size_t n) {
    (void)ctx, (void)buf, (void)scratch, (void)n;
    CUDARL_ASSERT(!"cr_nccl_mean_f32 without NCCL: cr_nccl_open refuses first");
}
#endif

cudarl_status cr_comm_dev_open(cudarl_ctx *ctx, float *scratch, size_t n) {
    return ctx->kind == CUDARL_DEVICE_CUDA ? cr_nccl_open(ctx, scratch, n) : CUDARL_OK;
}

void cr_comm_dev_close(cudarl_ctx *ctx) {
    if (ctx->kind == CUDARL_DEVICE_CUDA) cr_nccl_close(ctx);
}

void cr_comm_dev_mean_f32(cudarl_ctx *ctx, float *buf, float *scratch, size_t n) {
    if (ctx->kind == CUDARL_DEVICE_CUDA) cr_nccl_mean_f32(ctx, buf, scratch, n);
    else cr_comm_mean_f32(buf, scratch, n);
}
#else
int cr_comm_nccl_built(void) { return 0; }

cudarl_status cr_comm_dev_open(cudarl_ctx *ctx, float *scratch, size_t n) {
    (void)ctx, (void)scratch, (void)n; /* a CPU build has CPU contexts only */
    return CUDARL_OK;
}

void cr_comm_dev_close(cudarl_ctx *ctx) { (void)ctx; }

void cr_comm_dev_mean_f32(cudarl_ctx *ctx, float *buf, float *scratch, size_t n) {
    (void)ctx;
    cr_comm_mean_f32(buf, scratch, n);
}
#endif

uint64_t cr_comm_fnv1a(uint64_t h, const void *p, size_t bytes) {
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = 0; i < bytes; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

void *cr_comm_host_alloc(size_t bytes, const char *what) {
    size_t n = (bytes + CR_ARENA_ALIGN - 1) / CR_ARENA_ALIGN * CR_ARENA_ALIGN;
    void *m = aligned_alloc(CR_ARENA_ALIGN, n ? n : CR_ARENA_ALIGN);
    if (!m) {
        fprintf(stderr, "cudarl: out of host memory for %zu bytes (%s); ending the job\n", bytes,
                what);
        cr_comm_abort(1);
    }
    return m;
}

cudarl_status cudarl_dist_init(void) { return cr_comm_init(); }
void cudarl_dist_finalize(void) { cr_comm_finalize(); }
int cudarl_dist_rank(void) { return cr_comm_rank(); }
int cudarl_dist_size(void) { return cr_comm_size(); }
cudarl_status cudarl_dist_local_gpus(int num_gpus) { return cr_comm_local_gpus(num_gpus); }
int cudarl_dist_local_rank(void) { return cr_comm_local_rank(); }
void cudarl_dist_abort(int code) { cr_comm_abort(code); }
