/* The communicator's launch detection, shared by both builds (ops/comm.h). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- a job of threads (--num-gpus N) ---- */

typedef struct thread_group {
    int n;
    pthread_barrier_t barrier;
    const void **slot; /* each rank's buffer of the exchange under way */
} thread_group;

static thread_group *group;          /* set while cr_comm_run_threads runs */
static _Thread_local int group_rank = -1;

typedef struct thread_start {
    int rank;
    int (*fn)(int rank, void *arg);
    void *arg;
} thread_start;

static void *thread_main(void *a) {
    const thread_start *t = a;
    group_rank = t->rank;
    int rc = t->fn(t->rank, t->arg);
    if (rc != 0) {
        fprintf(stderr, "cudarl: rank %d of %d failed (exit code %d); ending the job\n",
                t->rank, group->n, rc);
        fflush(stdout), fflush(stderr);
        exit(rc); /* the others may wait for this rank in an exchange */
    }
    return NULL;
}

int cr_comm_run_threads(int n, int (*fn)(int rank, void *arg), void *arg) {
    CUDARL_ASSERT(n >= 1 && n <= 4096 && !group && cr_comm_launched_size() == 0);
    thread_group g = {.n = n};
    thread_start *starts = calloc((size_t)n, sizeof *starts);
    pthread_t *threads = calloc((size_t)n, sizeof *threads);
    g.slot = calloc((size_t)n, sizeof *g.slot);
    CUDARL_ASSERT(starts && threads && g.slot && pthread_barrier_init(&g.barrier, NULL, (unsigned)n) == 0);
    group = &g;
    for (int r = 0; r < n; r++) starts[r] = (thread_start){r, fn, arg};
    for (int r = 1; r < n; r++)
        if (pthread_create(&threads[r], NULL, thread_main, &starts[r]) != 0) {
            fprintf(stderr, "cudarl: could not start the thread of rank %d of %d; ending\n", r, n);
            exit(1);
        }
    group_rank = 0;
    int rc = fn(0, arg);
    if (rc != 0 && n > 1) {
        fprintf(stderr, "cudarl: rank 0 of %d failed (exit code %d); ending the job\n", n, rc);
        fflush(stdout), fflush(stderr);
        exit(rc);
    }
    for (int r = 1; r < n; r++) pthread_join(threads[r], NULL);
    group_rank = -1;
    group = NULL;
    pthread_barrier_destroy(&g.barrier);
    free(starts), free(threads), free(g.slot);
    return rc;
}

int cr_comm_thread_rank(void) { return group ? group_rank : -1; }
int cr_comm_thread_size(void) { return group->n; }

/* Every rank's `send` is posted, every rank reads what it needs, and none returns (so frees or
 * reuses its buffer) before all have read. */
void cr_comm_thread_allgather(const void *send, void *recv, size_t bytes) {
    const int n = group->n;
    group->slot[group_rank] = send;
    pthread_barrier_wait(&group->barrier);
    for (int r = 0; r < n; r++)
        if ((char *)recv + (size_t)r * bytes != group->slot[r])
            memmove((char *)recv + (size_t)r * bytes, group->slot[r], bytes);
    pthread_barrier_wait(&group->barrier);
}

void cr_comm_thread_gather0(const void *send, void *recv, size_t bytes) {
    group->slot[group_rank] = send;
    pthread_barrier_wait(&group->barrier);
    if (group_rank == 0)
        for (int r = 0; r < group->n; r++)
            if ((char *)recv + (size_t)r * bytes != group->slot[r])
                memmove((char *)recv + (size_t)r * bytes, group->slot[r], bytes);
    pthread_barrier_wait(&group->barrier);
}

void cr_comm_thread_bcast0(void *buf, size_t bytes) {
    if (group_rank == 0) group->slot[0] = buf;
    pthread_barrier_wait(&group->barrier);
    if (group_rank != 0) memcpy(buf, group->slot[0], bytes);
    pthread_barrier_wait(&group->barrier);
}

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

uint64_t cr_comm_fnv1a_words(uint64_t h, const void *p, size_t bytes) {
    const unsigned char *b = (const unsigned char *)p;
    size_t i = 0;
    for (; i + 8 <= bytes; i += 8) {
        uint64_t w = 0;
        for (int k = 0; k < 8; k++) w |= (uint64_t)b[i + k] << (8 * k); /* little-endian */
        h ^= w;
        h *= 1099511628211ull;
    }
    return cr_comm_fnv1a(h, b + i, bytes - i);
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
int cudarl_dist_run_threads(int n, int (*fn)(int rank, void *arg), void *arg) {
    return cr_comm_run_threads(n, fn, arg);
}
void cudarl_dist_abort(int code) { cr_comm_abort(code); }
