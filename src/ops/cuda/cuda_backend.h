/* The CUDA backend: every op of cr_backend enqueued on the context's stream (compiled only with
 * the CUDA toolkit). Includable from C and C++.
 *
 * A CUDA context owns one non-blocking stream, a cuBLAS handle bound to it with a preallocated
 * workspace (so GEMMs can be captured into a CUDA graph), and a small scratch block of device
 * memory for the reductions of ppo_loss, ppo_loss_gaussian, running_stats_update,
 * normalize_reward, clip_grad_norm and adam_step. Every op is asynchronous, allocates nothing
 * and never waits on the host, so any sequence of ops can be captured into a graph. Ops that share one context share its scratch: launch them (and its graphs) on its
 * stream only. CUDARL_SYNC_DEBUG=1 (read at context init) waits for and checks every launch.
 * CUDARL_FUSED=0 (read at context init) leaves out the fused PPO minibatch op
 * (ppo_minibatch_grads, ppo_fused.cu): ctx->ops then points at a copy of the table without it,
 * and PPO runs the unfused ops (MLP forward, ppo_loss, MLP backward) as before. */
#ifndef CUDARL_CUDA_BACKEND_H
#define CUDARL_CUDA_BACKEND_H

#include <stddef.h>

#include "cudarl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cr_backend cr_backend;

extern const cr_backend cr_backend_cuda;

/* Opens device `device_index` for `ctx` (host memory the caller owns): selects the device,
 * creates the stream, the cuBLAS handle and the scratch (device), and sets ctx->ops, ->kind,
 * ->device_index, ->stream and ->impl. No GPU, a bad index or no memory return a status with a
 * message and leave ctx as it was. */
cudarl_status cr_cuda_ctx_init(cudarl_ctx *ctx, int device_index);
/* The format of the fp32 products that go through cr_cuda_sgemm (the linear layers, the fp32
 * conv engine's GEMMs): BF16 or FP16 rounds both inputs into the format (a workspace the context
 * grows to the largest product) and multiplies them on the tensor cores with fp32 sums
 * (cublasGemmEx, CUBLAS_COMPUTE_32F); anything else: cublasSgemm as the math mode says (fp32,
 * or TF32 under cr_convnet_cuda_set_tf32). */
cudarl_status cr_cuda_set_gemm_precision(cudarl_ctx *ctx, cudarl_precision p);
/* Replaces the context's cuBLAS workspace (32 MiB on Hopper, 4 MiB before) by one of `bytes`
 * (> 0): for a context whose large GEMMs bring a workspace of their own (the policy runtime's
 * half-precision forward lends cuBLAS a free buffer of its cache, cr_convnet_cuda_half_forward).
 * Waits for the stream first. CUDARL_ERR_OUT_OF_MEMORY (the old one kept) where the new one
 * cannot be allocated. */
cudarl_status cr_cuda_set_blas_workspace(cudarl_ctx *ctx, size_t bytes);
/* Makes ctx's GPU the calling thread's current device (cudaSetDevice): launches, events and
 * cuBLAS calls on a context must be made with its device current. */
void cr_cuda_make_current(const cudarl_ctx *ctx);
/* Lets kernels on `from`'s GPU read and write `to`'s device memory (cudaDeviceEnablePeerAccess;
 * a no-op on one GPU); the current device is left as it was. CUDARL_ERR_UNSUPPORTED, naming
 * the two, where the GPUs have no peer access. */
cudarl_status cr_cuda_enable_peer(const cudarl_ctx *from, const cudarl_ctx *to);
/* Waits for the context's stream, then releases what cr_cuda_ctx_init created. */
void cr_cuda_ctx_free(cudarl_ctx *ctx);

/* Device allocations (cudaMalloc) this process has made through the backend, ever. A test
 * reads it before and after a run of ops to prove the ops allocate nothing. */
size_t cr_cuda_alloc_count(void);
/* Free and total memory of the context's device, as cudaMemGetInfo reports them. */
cudarl_status cr_cuda_mem_info(cudarl_ctx *ctx, size_t *free_bytes, size_t *total_bytes);

/* CUDA graphs by stream capture (global mode: a call that is unsafe during capture, from any
 * thread, fails the capture instead of running). Between begin and end the ops are recorded,
 * not run; end instantiates them into *graph_exec (host handle), which launch replays on the
 * context's stream with the same buffers and free destroys. */
cudarl_status cr_cuda_graph_begin(cudarl_ctx *ctx);
cudarl_status cr_cuda_graph_end(cudarl_ctx *ctx, void **graph_exec);
void cr_cuda_graph_launch(cudarl_ctx *ctx, void *graph_exec);
void cr_cuda_graph_free(void *graph_exec);

/* Page-locked host memory (host, pinned) for asynchronous copies, mapped into the device's
 * address space (cr_cuda_host_device_ptr); *p is NULL on failure. */
cudarl_status cr_cuda_host_alloc_pinned(void **p, size_t bytes);
/* The address under which kernels read and write the pinned host memory at `host` (from
 * cr_cuda_host_alloc_pinned, also through cr_host_buffer_alloc on a CUDA context): zero-copy
 * access, over the bus on a discrete GPU, the same DRAM on an integrated one. */
void *cr_cuda_host_device_ptr(void *host);
/* Profiling: an event that records time (the backend's event_create makes them without), and
 * the milliseconds between two such events recorded on one stream, both completed. */
cudarl_status cr_cuda_timing_event_create(void **event);
float cr_cuda_event_elapsed_ms(void *start, void *end);
/* What a run on ctx's device may allocate, and where that figure comes from (static text): on
 * an integrated GPU (Jetson: cudaDevAttrIntegrated), whose memory is the host's, the CUDA for
 * Tegra estimate MemAvailable + SwapFree from /proc/meminfo, since cudaMemGetInfo leaves out
 * swap; elsewhere cudaMemGetInfo's free bytes. -1 when neither can be read. */
int64_t cr_cuda_mem_budget(cudarl_ctx *ctx, const char **source);
/* Makes the work queued on ctx's stream after this call wait, on the device, for `event` (an
 * event of any context of the same device, from the backend's event_create): how two contexts'
 * streams order their work without the host waiting (PPO's --async). */
void cr_cuda_stream_wait_event(cudarl_ctx *ctx, void *event);
void cr_cuda_host_free_pinned(void *p);
/* out (n, device) = the rank-order sum of the `ranks` vectors of all (ranks x n, device), times
 * 1 / ranks: cr_comm_sum_ranks_f32's bits, on ctx's stream (ops/cuda/comm_nccl.cu; in builds with
 * NCCL only). */
void cr_cuda_sum_ranks_f32(cudarl_ctx *ctx, const float *all, float *out, size_t n, int ranks);

#ifdef __cplusplus
}
#endif
#endif
