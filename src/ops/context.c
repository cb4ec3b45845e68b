/* Compute contexts: which backend runs the ops, on which device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/backend.h"
#include "ops/comm.h"
#include "ops/parallel.h"
#ifdef CUDARL_WITH_CUDA
#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_info.h"
#endif

/* Why CUDA cannot be used here, or NULL if it can. */
static const char *cuda_unavailable(char *why, size_t cap) {
#ifdef CUDARL_WITH_CUDA
    return cr_cuda_device_count(why, cap) == 0 ? why : NULL;
#else
    snprintf(why, cap, "this cudarl was built without CUDA (reconfigure with -DCUDARL_CUDA=ON "
                       "on a machine with the CUDA toolkit)");
    return why;
#endif
}

cudarl_status cudarl_ctx_init(cudarl_ctx **out, cudarl_device_kind kind, int index) {
    *out = NULL;
    CR_TRY(cudarl_check_environment()); /* refused here whether or not this run reads them */
    char why[256];
    const char *no_cuda = cuda_unavailable(why, sizeof why);
    if (kind == CUDARL_DEVICE_CUDA && no_cuda)
        return cr_fail(CUDARL_ERR_UNSUPPORTED, "--device cuda is not available: %s; use --device "
                                               "cpu (or auto)", no_cuda);
    if (kind == CUDARL_DEVICE_AUTO) {
        if (no_cuda) CR_INFO("device: cpu (no CUDA: %s)", no_cuda);
        kind = no_cuda ? CUDARL_DEVICE_CPU : CUDARL_DEVICE_CUDA;
    }
    cudarl_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory creating a context");
    ctx->kind = CUDARL_DEVICE_CPU;
    ctx->device_index = index;
    ctx->ops = &cr_backend_cpu;
    ctx->threads = omp_get_max_threads();
#ifdef CUDARL_WITH_CUDA
    if (kind == CUDARL_DEVICE_CUDA) {
        cudarl_status s = cr_cuda_ctx_init(ctx, index);
        if (s != CUDARL_OK) {
            free(ctx);
            return s;
        }
    }
#endif
    *out = ctx;
    return CUDARL_OK;
}

void cudarl_ctx_free(cudarl_ctx *ctx) {
    if (!ctx) return;
#ifdef CUDARL_WITH_CUDA
    if (ctx->kind == CUDARL_DEVICE_CUDA) cr_cuda_ctx_free(ctx);
#endif
    free(ctx);
}

cudarl_device_kind cudarl_ctx_kind(const cudarl_ctx *ctx) { return ctx->kind; }

/* What this build is: whether it has the trainers (docs/install.md, "The runtime-only build")
 * and which OpenMP its CPU ops run on. */
#ifdef CUDARL_RUNTIME_ONLY
#define CR_BUILD_KIND "runtime only (no trainers, envs, ONNX export)"
#else
#define CR_BUILD_KIND "full"
#endif
#ifdef _OPENMP
#define CR_OPENMP_TEXT "OpenMP " CUDARL_STRINGIFY(_OPENMP)
#else
#define CR_OPENMP_TEXT "no OpenMP (the CPU ops on the calling thread)"
#endif

void cudarl_info(char *buf, size_t cap) {
    snprintf(buf, cap,
             "cudarl %s (ABI %d), %s\n"
             "  build: C11, %s, CUDA backend %s\n"
             "  cpu: %d threads available\n",
             CUDARL_VERSION_STRING, CUDARL_ABI_VERSION, CR_BUILD_KIND, CR_OPENMP_TEXT,
#ifdef CUDARL_WITH_CUDA
             "built",
#else
             "not built",
#endif
             omp_get_max_threads());
#ifdef CUDARL_WITH_CUDA
    cr_cuda_describe(buf, cap);
#endif
#ifndef CUDARL_RUNTIME_ONLY /* which has no envs and no communicator */
    size_t len = strlen(buf);
    snprintf(buf + len, cap - len, "  data parallel: %s; %s\n",
             cr_comm_built() ? "MPI (mpirun -np R cudarl train ...; docs/multigpu.md)"
                             : "not built (no MPI: one process only)",
             cr_comm_nccl_built() ? "GPUs' gradients over NCCL (--device cuda; --num-gpus 1)"
                                  : "no NCCL (GPU runs are one process of one GPU)");
    len = strlen(buf);
    const char *const *envs = cudarl_env_names();
    snprintf(buf + len, cap - len, "  environments:");
    for (int i = 0; envs[i]; i++) {
        len = strlen(buf);
        snprintf(buf + len, cap - len, " %s", envs[i]);
    }
    len = strlen(buf);
    snprintf(buf + len, cap - len, "\n");
#endif
}

cudarl_status cr_host_buffer_alloc(cudarl_ctx *ctx, void **p, size_t bytes) {
    if (ctx->ops->pinned_alloc) return ctx->ops->pinned_alloc(ctx, p, bytes);
    *p = malloc(bytes ? bytes : 1);
    return *p ? CUDARL_OK
              : cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory (%zu bytes)", bytes);
}

void cr_host_buffer_free(cudarl_ctx *ctx, void *p) {
    if (!p) return;
    if (ctx->ops->pinned_free) ctx->ops->pinned_free(ctx, p);
    else free(p);
}

void cr_ctx_make_current(const cudarl_ctx *ctx) {
    if (ctx->ops->make_current) ctx->ops->make_current(ctx);
}

cudarl_status cr_ctx_enable_peer(const cudarl_ctx *from, const cudarl_ctx *to) {
    if (from->ops->enable_peer) return from->ops->enable_peer(from, to);
    return cr_fail(CUDARL_ERR_UNSUPPORTED, "peer access between contexts needs two GPU contexts "
                   "(this one is %s)", from->ops->name);
}

void cr_ctx_stream_wait_event(cudarl_ctx *ctx, void *event) {
    if (ctx->ops->stream_wait_event) ctx->ops->stream_wait_event(ctx, event);
}

cudarl_status cr_ctx_branch_open(cudarl_ctx *ctx, cr_ctx_branch *b) {
    memset(b, 0, sizeof *b);
    if (!ctx->ops->stream_wait_event || !ctx->ops->event_create) return CUDARL_OK;
    cudarl_status s = cudarl_ctx_init(&b->ctx, ctx->kind, ctx->device_index);
    cr_ctx_make_current(ctx); /* opening a context makes its device current */
    if (s == CUDARL_OK) s = ctx->ops->event_create(ctx, &b->fork);
    if (s == CUDARL_OK) s = ctx->ops->event_create(ctx, &b->join);
    if (s != CUDARL_OK) cr_ctx_branch_close(ctx, b);
    return s;
}

void cr_ctx_branch_close(cudarl_ctx *ctx, cr_ctx_branch *b) {
    if (b->fork) ctx->ops->event_free(ctx, b->fork);
    if (b->join) ctx->ops->event_free(ctx, b->join);
    cudarl_ctx_free(b->ctx); /* waits for its stream */
    if (b->ctx) cr_ctx_make_current(ctx);
    memset(b, 0, sizeof *b);
}

cudarl_ctx *cr_ctx_branch_of(cudarl_ctx *ctx, const cr_ctx_branch *b) {
    return b->ctx ? b->ctx : ctx;
}

void cr_ctx_branch_fork(cudarl_ctx *ctx, const cr_ctx_branch *b) {
    if (!b->ctx) return;
    ctx->ops->event_record(ctx, b->fork);
    b->ctx->ops->stream_wait_event(b->ctx, b->fork);
}

void cr_ctx_branch_join(cudarl_ctx *ctx, const cr_ctx_branch *b) {
    if (!b->ctx) return;
    b->ctx->ops->event_record(b->ctx, b->join);
    ctx->ops->stream_wait_event(ctx, b->join);
}

void *cr_ctx_host_device_ptr(const cudarl_ctx *ctx, void *host) {
    return ctx->ops->host_device_ptr ? ctx->ops->host_device_ptr(host) : host;
}

cudarl_status cr_ctx_timing_event_create(const cudarl_ctx *ctx, void **event) {
    *event = NULL;
    return ctx->ops->timing_event_create ? ctx->ops->timing_event_create(event) : CUDARL_OK;
}

float cr_ctx_event_elapsed_ms(const cudarl_ctx *ctx, void *start, void *end) {
    return ctx->ops->event_elapsed_ms ? ctx->ops->event_elapsed_ms(start, end) : 0.0f;
}

int64_t cr_ctx_mem_budget(cudarl_ctx *ctx, const char **source) {
    if (ctx->ops->mem_budget) return ctx->ops->mem_budget(ctx, source);
    *source = "no device";
    return -1;
}
