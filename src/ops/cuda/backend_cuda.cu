// The CUDA backend: contexts (device, stream, cuBLAS, scratch), graphs, pinned memory and the
// table of ops. The ops themselves are in one file per family next to this one.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/cuda/cuda_common.cuh"

#ifndef CUDARL_RUNTIME_ONLY // which has no communicator
extern "C" {
#include "ops/comm.h"
}
#endif
#include "ops/cuda/conv2d_cuda.h"
#include "ops/cuda/frames_cuda.h"
#include "ops/cuda/loss_scale_cuda.h"
#include "ops/cuda/meminfo.h"

// cuBLAS's own default workspace is 32 MiB on Hopper and 4 MiB before it (cuBLAS docs,
// cublasSetWorkspace); ours replaces it so that no GEMM allocates inside a graph capture.
#define BLAS_WORKSPACE_HOPPER ((size_t)32 << 20)
#define BLAS_WORKSPACE_OTHER ((size_t)4 << 20)

void cr_cuda_fail(const char *expr, const char *err, const char *file, int line) {
    fprintf(stderr, "cudarl: CUDA error at %s:%d: %s: %s\n", file, line, expr, err);
    fflush(stderr);
    abort();
}

void cr_cuda_after_launch(cudarl_ctx *ctx, const char *file, int line) {
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) cr_cuda_fail("launch", cudaGetErrorString(e), file, line);
    const cr_cuda_impl *im = cr_impl(ctx);
    // a branch context (cr_ctx_branch) is captured through its fork without graph_begin of its own
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (im->sync_debug && !im->capturing &&
        cudaStreamIsCapturing(cr_stream(ctx), &cs) == cudaSuccess &&
        cs == cudaStreamCaptureStatusNone) {
        e = cudaStreamSynchronize(cr_stream(ctx));
        if (e == cudaSuccess && im->side) e = cudaStreamSynchronize(im->side);
        if (e != cudaSuccess)
            cr_cuda_fail("launch (CUDARL_SYNC_DEBUG=1)", cudaGetErrorString(e), file, line);
    }
}

int cr_cuda_refuse_in_capture(cudarl_ctx *ctx, const char *op) {
    cr_cuda_impl *im = cr_impl(ctx);
    if (!im->capturing) return 0;
    if (!im->capture_error) im->capture_error = op;
    return 1;
}

// ---- contexts ---------------------------------------------------------------------------

#ifndef CUDARL_RUNTIME_ONLY
static const cr_backend *unfused_table(void); // the table without the fused PPO op (below)
#endif

// Releases what cr_cuda_ctx_init created (any subset of it) and the impl itself.
static void release(cr_cuda_impl *im, cudaStream_t stream) {
    if (!im) return;
    if (im->blas) cublasDestroy(im->blas);
    if (im->blas_workspace) cudaFree(im->blas_workspace);
    if (im->scratch) cudaFree(im->scratch);
    if (im->fmt_ws) cudaFree(im->fmt_ws);
    for (int i = 0; i < im->n_retired; i++) cudaFree(im->fmt_retired[i]);
    if (im->fork) cudaEventDestroy(im->fork);
    if (im->join) cudaEventDestroy(im->join);
    if (im->side) cudaStreamDestroy(im->side);
    if (stream) cudaStreamDestroy(stream);
    free(im);
}

static cudarl_status cuda_failed(const char *what, cudaError_t e, int device) {
    cudaGetLastError(); // clear a non-sticky error so later calls start clean
    return cr_fail(e == cudaErrorMemoryAllocation ? CUDARL_ERR_OUT_OF_MEMORY : CUDARL_ERR_CUDA,
                   "cannot open cuda:%d: %s failed: %s", device, what, cudaGetErrorString(e));
}

cudarl_status cr_cuda_ctx_init(cudarl_ctx *ctx, int device_index) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        const char *why = e != cudaSuccess ? cudaGetErrorString(e) : "the runtime sees no GPU";
        cudaGetLastError();
        return cr_fail(CUDARL_ERR_UNSUPPORTED,
                       "no usable CUDA device (%s); use --device cpu", why);
    }
    if (device_index < 0 || device_index >= count)
        return cr_fail(CUDARL_ERR_INVALID_ARG,
                       "cuda:%d does not exist: this machine has %d CUDA device%s (0..%d)",
                       device_index, count, count == 1 ? "" : "s", count - 1);
    if ((e = cudaSetDevice(device_index)) != cudaSuccess)
        return cuda_failed("cudaSetDevice", e, device_index);
    cudaDeviceProp prop;
    if ((e = cudaGetDeviceProperties(&prop, device_index)) != cudaSuccess)
        return cuda_failed("cudaGetDeviceProperties", e, device_index);

    cr_cuda_impl *im = (cr_cuda_impl *)calloc(1, sizeof *im);
    if (!im) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory opening cuda:%d",
                            device_index);
    im->sync_debug = cr_envvar_value(CR_ENVVAR_SYNC_DEBUG) == 1; // "1"
    im->blas_workspace_bytes = prop.major >= 9 ? BLAS_WORKSPACE_HOPPER : BLAS_WORKSPACE_OTHER;

    cudaStream_t stream = NULL;
    const char *what = NULL;
    if ((e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)) != cudaSuccess)
        what = "cudaStreamCreateWithFlags";
    else if ((e = cr_cuda_malloc(&im->blas_workspace, im->blas_workspace_bytes)) != cudaSuccess)
        what = "cudaMalloc (cuBLAS workspace)";
    else if ((e = cr_cuda_malloc((void **)&im->scratch, sizeof *im->scratch)) != cudaSuccess)
        what = "cudaMalloc (scratch)";
    else if ((e = cudaMemset(im->scratch, 0, sizeof *im->scratch)) != cudaSuccess)
        what = "cudaMemset (scratch)";
    else if ((e = cudaStreamCreateWithFlags(&im->side, cudaStreamNonBlocking)) != cudaSuccess)
        what = "cudaStreamCreateWithFlags (side stream)";
    else if ((e = cudaEventCreateWithFlags(&im->fork, cudaEventDisableTiming)) != cudaSuccess ||
             (e = cudaEventCreateWithFlags(&im->join, cudaEventDisableTiming)) != cudaSuccess)
        what = "cudaEventCreateWithFlags";
    if (what) {
        release(im, stream);
        return cuda_failed(what, e, device_index);
    }
    cublasStatus_t bs = cublasCreate(&im->blas);
    if (bs == CUBLAS_STATUS_SUCCESS) bs = cublasSetStream(im->blas, stream);
    if (bs == CUBLAS_STATUS_SUCCESS)
        bs = cublasSetWorkspace(im->blas, im->blas_workspace, im->blas_workspace_bytes);
    // fp32 GEMMs in fp32: the default math mode never uses TF32 (CUBLAS_TF32_TENSOR_OP_MATH would)
    if (bs == CUBLAS_STATUS_SUCCESS) bs = cublasSetMathMode(im->blas, CUBLAS_DEFAULT_MATH);
    if (bs == CUBLAS_STATUS_SUCCESS) bs = cublasSetPointerMode(im->blas, CUBLAS_POINTER_MODE_HOST);
    if (bs != CUBLAS_STATUS_SUCCESS) {
        release(im, stream);
        cudaGetLastError();
        return cr_fail(bs == CUBLAS_STATUS_ALLOC_FAILED ? CUDARL_ERR_OUT_OF_MEMORY
                                                        : CUDARL_ERR_CUDA,
                       "cannot open cuda:%d: cuBLAS setup failed: %s", device_index,
                       cublasGetStatusString(bs));
    }
    ctx->kind = CUDARL_DEVICE_CUDA;
    ctx->device_index = device_index;
    ctx->ops = &cr_backend_cuda;
    // CUDARL_FUSED=0 (read here, at context init) is the escape hatch that turns the fused PPO
    // minibatch op (ppo_fused.cu) off: this context's table then lacks ppo_minibatch_grads and
    // PPO runs the unfused ops. It is also off where the fused kernels cannot run.
    // The runtime-only build trains nothing and leaves ppo_fused.cu out: its table lacks the op.
#ifndef CUDARL_RUNTIME_ONLY
    if (cr_envvar_value(CR_ENVVAR_FUSED) == 0 || // "0"
        !cr_cuda_ppo_fused_setup(im, prop.multiProcessorCount))
        ctx->ops = unfused_table();
#endif
    ctx->stream = stream;
    ctx->impl = im;
    return CUDARL_OK;
}

cudarl_status cr_cuda_set_blas_workspace(cudarl_ctx *ctx, size_t bytes) {
    cr_cuda_impl *im = cr_impl(ctx);
    CUDARL_ASSERT(im && bytes > 0);
    void *ws = NULL;
    cudaError_t e = cudaStreamSynchronize(cr_stream(ctx)); // nothing may still use the old one
    if (e == cudaSuccess) e = cr_cuda_malloc(&ws, bytes);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return cr_fail(e == cudaErrorMemoryAllocation ? CUDARL_ERR_OUT_OF_MEMORY : CUDARL_ERR_CUDA,
                       "cuda:%d: cannot allocate a cuBLAS workspace of %zu bytes: %s",
                       ctx->device_index, bytes, cudaGetErrorString(e));
    }
    const cublasStatus_t bs = cublasSetWorkspace(im->blas, ws, bytes);
    if (bs != CUBLAS_STATUS_SUCCESS) {
        cudaFree(ws);
        return cr_fail(CUDARL_ERR_CUDA, "cuda:%d: cublasSetWorkspace: %s", ctx->device_index,
                       cublasGetStatusString(bs));
    }
    cudaFree(im->blas_workspace);
    im->blas_workspace = ws, im->blas_workspace_bytes = bytes;
    return CUDARL_OK;
}

void cr_cuda_ctx_free(cudarl_ctx *ctx) {
    cr_cuda_impl *im = cr_impl(ctx);
    if (!im) return;
    cudaError_t e = cudaStreamSynchronize(cr_stream(ctx));
    if (e != cudaSuccess)
        fprintf(stderr, "cudarl: cuda:%d: pending work failed: %s\n", ctx->device_index,
                cudaGetErrorString(e));
    release(im, cr_stream(ctx));
    ctx->impl = NULL;
    ctx->stream = NULL;
}

int64_t cr_cuda_mem_budget(cudarl_ctx *ctx, const char **source) {
    int integrated = 0;
    if (cudaDeviceGetAttribute(&integrated, cudaDevAttrIntegrated, ctx->device_index) !=
        cudaSuccess)
        cudaGetLastError(), integrated = 0;
    if (integrated) {
        *source = "MemAvailable + SwapFree of /proc/meminfo (an integrated GPU shares the host's "
                  "memory, and cudaMemGetInfo leaves out swap)";
        return cr_host_available_bytes(1);
    }
    size_t free_b = 0, total_b = 0;
    *source = "the device's free memory (cudaMemGetInfo)";
    if (cr_cuda_mem_info(ctx, &free_b, &total_b) != CUDARL_OK) return -1;
    return (int64_t)free_b;
}

cudarl_status cr_cuda_mem_info(cudarl_ctx *ctx, size_t *free_bytes, size_t *total_bytes) {
    cudaError_t e = cudaMemGetInfo(free_bytes, total_bytes);
    if (e == cudaSuccess) return CUDARL_OK;
    cudaGetLastError();
    return cr_fail(CUDARL_ERR_CUDA, "cudaMemGetInfo on cuda:%d: %s", ctx->device_index,
                   cudaGetErrorString(e));
}

// ---- graphs -----------------------------------------------------------------------------

// Global: a call that would break the capture is refused on every thread of the process, so
// that one a helper thread makes cannot slip in. In a job of threads (--num-gpus N > 1,
// ops/comm.h) the other threads are the other ranks, which wait, copy and capture on their own
// GPUs meanwhile: each capture then guards its own thread only.
cudarl_status cr_cuda_graph_begin(cudarl_ctx *ctx) {
#ifndef CUDARL_RUNTIME_ONLY
    const cudaStreamCaptureMode mode = cr_comm_thread_rank() >= 0 && cr_comm_thread_size() > 1
                                           ? cudaStreamCaptureModeThreadLocal
                                           : cudaStreamCaptureModeGlobal;
#else
    const cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
#endif
    cudaError_t e = cudaStreamBeginCapture(cr_stream(ctx), mode);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return cr_fail(CUDARL_ERR_CUDA, "cudaStreamBeginCapture: %s", cudaGetErrorString(e));
    }
    cr_impl(ctx)->capturing = 1;
    cr_impl(ctx)->capture_error = NULL;
    return CUDARL_OK;
}

cudarl_status cr_cuda_graph_end(cudarl_ctx *ctx, void **graph_exec) {
    *graph_exec = NULL;
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamEndCapture(cr_stream(ctx), &graph);
    cr_cuda_impl *im = cr_impl(ctx);
    im->capturing = 0;
    if (e == cudaSuccess && im->capture_error) {
        cudaGraphDestroy(graph);
        return cr_fail(CUDARL_ERR_UNSUPPORTED, "%s cannot be part of a CUDA graph (it waits for "
                       "the device or reads pageable host memory); call it outside the "
                       "captured phase", im->capture_error);
    }
    if (e != cudaSuccess) {
        cudaGetLastError();
        if (graph) cudaGraphDestroy(graph);
        return cr_fail(CUDARL_ERR_CUDA, "cudaStreamEndCapture: %s (a call during the capture "
                       "was not allowed in a graph)", cudaGetErrorString(e));
    }
    cudaGraphExec_t exec = NULL;
    e = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return cr_fail(e == cudaErrorMemoryAllocation ? CUDARL_ERR_OUT_OF_MEMORY
                                                      : CUDARL_ERR_CUDA,
                       "cudaGraphInstantiate: %s", cudaGetErrorString(e));
    }
    *graph_exec = exec;
    return CUDARL_OK;
}

void cr_cuda_graph_launch(cudarl_ctx *ctx, void *graph_exec) {
    CUDA_CHECK(cudaGraphLaunch((cudaGraphExec_t)graph_exec, cr_stream(ctx)));
    CR_CUDA_LAUNCHED(ctx);
}

void cr_cuda_graph_free(void *graph_exec) {
    if (graph_exec) CUDA_CHECK(cudaGraphExecDestroy((cudaGraphExec_t)graph_exec));
}

// ---- pinned host memory -----------------------------------------------------------------

cudarl_status cr_cuda_host_alloc_pinned(void **p, size_t bytes) {
    *p = NULL;
    cudaError_t e = cudaHostAlloc(p, bytes ? bytes : 1, cudaHostAllocMapped);
    if (e == cudaSuccess) return CUDARL_OK;
    cudaGetLastError();
    *p = NULL;
    return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes of pinned host memory: %s",
                   bytes, cudaGetErrorString(e));
}

void cr_cuda_host_free_pinned(void *p) {
    if (p) CUDA_CHECK(cudaFreeHost(p));
}

void *cr_cuda_host_device_ptr(void *host) {
    void *d = NULL;
    CUDA_CHECK(cudaHostGetDevicePointer(&d, host, 0));
    return d;
}

// ---- ops that live in files of their own ------------------------------------------------


static size_t bytes_in_use(cudarl_ctx *ctx) { return cr_cuda_bytes_in_use(); }

// Theoretical peaks from the runtime's attributes (backend.h's cr_peaks): SMs x the per-SM rate
// of the architecture for `precision` (cr_peak_flops_per_sm_clock) x the SM clock, and 2 (DDR) x
// memory clock x bus width. Zero where the runtime or the table cannot say.
static void peaks(cudarl_ctx *ctx, cudarl_precision precision, cr_peaks *out) {
    int dev = ctx->device_index, sms = 0, clock_khz = 0, mem_khz = 0, bus_bits = 0, major = 0,
        minor = 0;
    memset(out, 0, sizeof *out);
    out->units = precision == CUDARL_PRECISION_FP32 ? "CUDA cores" : "tensor cores";
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
        cudaGetLastError();
        return;
    }
    out->sms = sms, out->sm_major = major, out->sm_minor = minor;
    out->clock_hz = clock_khz * 1e3;
    out->flops_per_sm_clock = cr_peak_flops_per_sm_clock(major, minor, precision);
    out->flops = (double)sms * out->flops_per_sm_clock * out->clock_hz;
    out->bytes_per_s = 2.0 * mem_khz * 1e3 * (bus_bits / 8.0);
}

// ---- the table --------------------------------------------------------------------------

// Every member set below (C++ designated initializers must follow the declaration order, so a
// reordered backend.h fails to compile here); a new member must be added here too.
static_assert(sizeof(cr_backend) == 75 * sizeof(void *), "cr_backend changed: update this table");

extern "C" const cr_backend cr_backend_cuda = {
    .name = "cuda",
    .arena_alloc = cr_cuda_arena_alloc,
    .arena_free = cr_cuda_arena_free,
    .copy_to_host = cr_cuda_copy_to_host,
    .copy_from_host = cr_cuda_copy_from_host,
    .copy = cr_cuda_copy,
    .zero = cr_cuda_zero,
    .sync = cr_cuda_sync,
    .linear_forward = cr_cuda_linear_forward,
    .linear_tanh_forward = cr_cuda_linear_tanh_forward,
    .linear_backward = cr_cuda_linear_backward,
    .tanh_backward = cr_cuda_tanh_backward,
    .linear_relu_forward = cr_cuda_linear_relu_forward,
    .relu_backward = cr_cuda_relu_backward,
    .uniform = cr_cuda_uniform,
    .rng_skip = cr_cuda_rng_advance,
    .permutation = cr_cuda_permutation,
    .categorical_sample = cr_cuda_categorical_sample,
    .categorical_argmax = cr_cuda_categorical_argmax,
    .episodes_record = cr_cuda_episodes_record,
    .bootstrap_values = cr_cuda_bootstrap_values,
    .gae = cr_cuda_gae,
    .value_stats = cr_cuda_value_stats,
    .gather_rows = cr_cuda_gather_rows,
    .gather_rows_many = cr_cuda_gather_rows_many,
    .keep_rows = cr_cuda_keep_rows,
    .place_values = cr_cuda_place_values,
    .ppo_loss = cr_cuda_ppo_loss,
    .gaussian_sample = cr_cuda_gaussian_sample,
    .ppo_loss_gaussian = cr_cuda_ppo_loss_gaussian,
    .clip_box = cr_cuda_clip_box,
    .running_stats_update = cr_cuda_running_stats_update,
    .normalize_obs = cr_cuda_normalize_obs,
    .normalize_reward = cr_cuda_normalize_reward,
    .clip_grad_norm = cr_cuda_clip_grad_norm,
    .adam_step = cr_cuda_adam_step,
    .loss_scale_apply = cr_cuda_loss_scale_apply,
    .loss_scale_unscale = cr_cuda_loss_scale_unscale,
    .adam_step_if = cr_cuda_adam_step_if,
    .loss_scale_update = cr_cuda_loss_scale_update,
    .graph_begin = cr_cuda_graph_begin,
    .graph_end = cr_cuda_graph_end,
    .graph_launch = cr_cuda_graph_launch,
    .graph_free = cr_cuda_graph_free,
    .bytes_in_use = bytes_in_use,
    .pinned_alloc = cr_cuda_pinned_alloc,
    .pinned_free = cr_cuda_pinned_free,
    .copy_to_host_async = cr_cuda_copy_to_host_async,
    .event_create = cr_cuda_event_create,
    .event_free = cr_cuda_event_free,
    .event_record = cr_cuda_event_record,
    .event_done = cr_cuda_event_done,
    .event_wait = cr_cuda_event_wait,
    .make_current = cr_cuda_make_current,
    .enable_peer = cr_cuda_enable_peer,
    .stream_wait_event = cr_cuda_stream_wait_event,
    .host_device_ptr = cr_cuda_host_device_ptr,
    .timing_event_create = cr_cuda_timing_event_create,
    .event_elapsed_ms = cr_cuda_event_elapsed_ms,
    .mem_budget = cr_cuda_mem_budget,
    .peaks = peaks,
#ifndef CUDARL_RUNTIME_ONLY
    .ppo_minibatch_grads = cr_cuda_ppo_minibatch_grads,
    .ppo_minibatch_scratch_bytes = cr_cuda_ppo_minibatch_scratch_bytes,
    .ppo_minibatch_grads_gaussian = cr_cuda_ppo_minibatch_grads_gaussian,
#endif
    .dqn_loss = cr_cuda_dqn_loss,
    .epsilon_schedule = cr_cuda_epsilon_schedule,
    .epsilon_greedy = cr_cuda_epsilon_greedy,
    .polyak = cr_cuda_polyak,
    .u8_to_float = cr_cuda_u8_to_float,
    .conv2d_plan_init = cr_cuda_conv2d_op_plan_init,
    .conv2d_plan_free = cr_cuda_conv2d_op_plan_free,
    .conv2d_forward = cr_cuda_conv2d_op_forward,
    .conv2d_backward = cr_cuda_conv2d_op_backward,
    .scale_u8 = cr_cuda_scale_u8,
    .frame_to_obs = cr_cuda_frame_to_obs,
};

#ifndef CUDARL_RUNTIME_ONLY
// The table without the fused PPO op, for contexts opened with CUDARL_FUSED=0 or on a device
// where the fused kernels cannot run: callers then take the unfused ops (forward, ppo_loss,
// backward). Filled from cr_backend_cuda on first use.
static cr_backend cuda_unfused;

static const cr_backend *unfused_table(void) {
    static int filled;
    if (!filled) {
        cuda_unfused = cr_backend_cuda;
        cuda_unfused.name = "cuda (unfused)";
        cuda_unfused.ppo_minibatch_grads = NULL;
        cuda_unfused.ppo_minibatch_scratch_bytes = NULL;
        cuda_unfused.ppo_minibatch_grads_gaussian = NULL;
        filled = 1;
    }
    return &cuda_unfused;
}
#endif

extern "C" cudarl_status cr_cuda_set_gemm_precision(cudarl_ctx *ctx, cudarl_precision p) {
    CUDARL_ASSERT(ctx && ctx->kind == CUDARL_DEVICE_CUDA);
    cr_impl(ctx)->gemm_format = p == CUDARL_PRECISION_BF16   ? (int)CUDA_R_16BF
                                : p == CUDARL_PRECISION_FP16 ? (int)CUDA_R_16F
                                                             : 0;
    return CUDARL_OK;
}

// Makes fmt_ws hold at least `bytes` (doubling from 1 MiB). The old workspace is kept until
// the context is freed: products queued or captured so far read it, and freeing it would wait
// for the device, which a capture (this thread's, or another's in cudaStreamCaptureModeGlobal)
// forbids. The allocation is not a stream operation: cudaThreadExchangeStreamCaptureMode lets
// this thread make it during a capture.
static void grow_format_workspace(cudarl_ctx *ctx, size_t bytes) {
    cr_cuda_impl *im = cr_impl(ctx);
    if (im->fmt_ws_bytes >= bytes) return;
    size_t want = (size_t)1 << 20;
    while (want < bytes) want *= 2;
    if (im->fmt_ws) {
        if (im->n_retired == (int)(sizeof im->fmt_retired / sizeof im->fmt_retired[0]))
            cr_cuda_fail("grow_format_workspace", "too many outgrown workspaces", __FILE__,
                         __LINE__);
        im->fmt_retired[im->n_retired++] = im->fmt_ws;
    }
    im->fmt_ws = NULL;
    im->fmt_ws_bytes = 0;
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    CUDA_CHECK(cr_cuda_malloc(&im->fmt_ws, want));
    CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    im->fmt_ws_bytes = want;
}

template <typename T>
static void gemm_in(cudarl_ctx *ctx, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                    int k, const float *A, int lda, const float *B, int ldb, float *C, int ldc) {
    static const float one = 1.0f, zero = 0.0f;
    cr_cuda_impl *im = cr_impl(ctx);
    // the stored extents: A is lda x (ta == N ? k : m), B is ldb x (tb == N ? n : k)
    size_t na = (size_t)lda * ((ta == CUBLAS_OP_N ? k : m) - 1) + (ta == CUBLAS_OP_N ? m : k);
    size_t nb = (size_t)ldb * ((tb == CUBLAS_OP_N ? n : k) - 1) + (tb == CUBLAS_OP_N ? k : n);
    size_t off = (na * sizeof(T) + 255) / 256 * 256;
    grow_format_workspace(ctx, off + nb * sizeof(T));
    T *a = (T *)im->fmt_ws, *b = (T *)((char *)im->fmt_ws + off);
    cudaStream_t st = cr_stream(ctx);
    cr_to_fmt_kernel<T><<<cr_cuda_blocks(na, CR_CUDA_THREADS), CR_CUDA_THREADS, 0, st>>>(A, a, na);
    CR_CUDA_LAUNCHED(ctx);
    cr_to_fmt_kernel<T><<<cr_cuda_blocks(nb, CR_CUDA_THREADS), CR_CUDA_THREADS, 0, st>>>(B, b, nb);
    CR_CUDA_LAUNCHED(ctx);
    const cudaDataType_t f = (cudaDataType_t)im->gemm_format;
    CUBLAS_CHECK(cublasGemmEx(im->blas, ta, tb, m, n, k, &one, a, f, lda, b, f, ldb, &zero, C,
                              CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    CR_CUDA_LAUNCHED(ctx);
}

void cr_cuda_gemm_in_format(cudarl_ctx *ctx, cublasOperation_t ta, cublasOperation_t tb, int m,
                            int n, int k, const float *A, int lda, const float *B, int ldb,
                            float *C, int ldc) {
    CUDARL_ASSERT(m > 0 && n > 0 && k > 0); // the callers skip empty products
    if (cr_impl(ctx)->gemm_format == (int)CUDA_R_16BF)
        gemm_in<__nv_bfloat16>(ctx, ta, tb, m, n, k, A, lda, B, ldb, C, ldc);
    else
        gemm_in<__half>(ctx, ta, tb, m, n, k, A, lda, B, ldb, C, ldc);
}

extern "C" void cr_cuda_make_current(const cudarl_ctx *ctx) {
    CUDA_CHECK(cudaSetDevice(ctx->device_index));
}

extern "C" cudarl_status cr_cuda_enable_peer(const cudarl_ctx *from, const cudarl_ctx *to) {
    if (from->device_index == to->device_index) return CUDARL_OK;
    int can = 0;
    cudaError_t e = cudaDeviceCanAccessPeer(&can, from->device_index, to->device_index);
    if (e != cudaSuccess || !can) {
        cudaGetLastError();
        return cr_fail(CUDARL_ERR_UNSUPPORTED, "cuda:%d cannot access cuda:%d's memory (no peer "
                       "access between them%s%s); put the actor and the learner on one GPU, or "
                       "on two with NVLink or PCIe peer access", from->device_index,
                       to->device_index, e != cudaSuccess ? ": " : "",
                       e != cudaSuccess ? cudaGetErrorString(e) : "");
    }
    int cur = 0;
    CUDA_CHECK(cudaGetDevice(&cur));
    CUDA_CHECK(cudaSetDevice(from->device_index));
    e = cudaDeviceEnablePeerAccess(to->device_index, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError(), e = cudaSuccess;
    CUDA_CHECK(cudaSetDevice(cur));
    if (e != cudaSuccess) {
        cudaGetLastError();
        return cr_fail(CUDARL_ERR_CUDA, "cudaDeviceEnablePeerAccess(cuda:%d -> cuda:%d): %s",
                       from->device_index, to->device_index, cudaGetErrorString(e));
    }
    return CUDARL_OK;
}
