/* The CUDA twin of cr_convnet_forward / cr_convnet_backward (convnet.h): a planned convolutional
 * network's forward and backward on device memory, with the CPU functions' meaning (the
 * specification; tests/test_convnet_cuda.c holds the two together): the same parameter and
 * gradient layout (state_dict order, one flat buffer each), the input read as the spec says
 * (uint8 scaled by 1/255 or cast, or float), out (B, A) actor logits or Q-values and value (B)
 * the critic (ppo), every gradient overwritten, never accumulated, dout and dvalue not written.
 * Includable from C and C++; compiled only with the CUDA toolkit.
 *
 * Stages run as on the CPU (convnet.c): each conv or linear with the activation after it, the
 * heads on the trunk's flat output, the backward in reverse with two gradient buffers in turn.
 * Linear stages and heads are the backend's cuBLAS ops (ops/cuda/linear.cu, dqn_ops.cu). Conv
 * stages run on one of two engines, chosen at init:
 *   GEMM   im2col + one cuBLAS SGEMM per product (forward, weight gradient, input gradient),
 *          with our kernels for the bias, activation, the gradient's ReLU/tanh select with the
 *          bias gradient, and col2im (convnet_cuda.cu says why this is the default);
 *   CUDNN  the cuDNN plans of ops/cuda/conv2d_cuda.h, one per conv stage and batch size (only
 *          in builds with cuDNN).
 * Both are fp32 throughout (no TF32 unless cr_convnet_cuda_set_tf32 turns it on for the GEMM
 * engine's context), deterministic (no float atomics; a fixed summation order
 * chosen at init), and agree with the CPU to rounding: their sums run in cuBLAS's / cuDNN's
 * order, not the CPU's.
 *
 * Memory, sized up front:
 *   - the handle (cr_convnet_cuda_init): host memory, a few KB, and the cuDNN plans' handles;
 *   - a workspace of cr_convnet_cuda_workspace_bytes (device): im2col columns, the GEMM
 *     engine's transposed products and bias partial sums, or cuDNN's workspace; its contents
 *     need not survive between calls, so one serves every forward and backward on one stream.
 *     The caller provides it (its arena) with cr_convnet_cuda_set_workspace before the first
 *     call;
 *   - caches (cr_convnet_cache, carved by cr_convnet_cuda_cache_carve from
 *     cr_convnet_cuda_cache_bytes of device memory): what a backward needs from its forward,
 *     one per forward whose backward is still to come (scratch is NULL: the workspace serves).
 * Forward and backward allocate nothing, never wait for the host, and enqueue everything on the
 * context's stream, so a sequence of them can be captured into a CUDA graph -- after one call of
 * each batch size outside the capture (cuDNN loads its kernels on a plan's first call; a
 * warm-up costs nothing with the GEMM engine either). Results repeat bit for bit on one device
 * with one library version. */
#ifndef CUDARL_CONVNET_CUDA_H
#define CUDARL_CONVNET_CUDA_H

#include <stddef.h>

#include "nn/convnet.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which implementation runs the conv stages. AUTO: the environment variable
 * CUDARL_CONV_ENGINE ("gemm" or "cudnn", read at init) if set, else GEMM. */
typedef enum cr_convnet_engine {
    CR_CONVNET_ENGINE_AUTO = 0,
    CR_CONVNET_ENGINE_GEMM,
    CR_CONVNET_ENGINE_CUDNN,
} cr_convnet_engine;

/* Batch sizes a handle may be declared for (e.g. {act rows, learner rows}; the policy runtime
 * declares every power of two up to its rows: 1 .. 2^16, 17 sizes). */
#define CR_CONVNET_CUDA_MAX_BATCHES 17

typedef struct cr_convnet_cuda cr_convnet_cuda;

/* Makes *cn for the planned net on ctx (a CUDA context) for forwards and backwards of exactly
 * the nbatches (1 .. CR_CONVNET_CUDA_MAX_BATCHES) batch sizes in batches[] (each >= 1; repeats
 * are fine): the engine's plans, and the workspace size. An unknown CUDARL_CONV_ENGINE value or
 * a batch count out of range is CUDARL_ERR_INVALID_ARG; the cuDNN engine in a build without
 * cuDNN, or a shape cuDNN refuses, CUDARL_ERR_UNSUPPORTED; a batch too large for one GEMM or
 * cuDNN call (more than 2^31 elements in an activation or im2col matrix),
 * CUDARL_ERR_INVALID_ARG; cuDNN failing to start, CUDARL_ERR_CUDA or _OUT_OF_MEMORY. *cn is NULL
 * on failure. net is copied. (host) */
cudarl_status cr_convnet_cuda_init(cudarl_ctx *ctx, const cr_convnet *net, const int *batches,
                                   int nbatches, cr_convnet_engine engine, cr_convnet_cuda **cn);
/* Releases what init made (NULL is fine); not the workspace, which is the caller's. */
void cr_convnet_cuda_free(cr_convnet_cuda *cn);

/* The engine init chose (GEMM or CUDNN, never AUTO), and its name ("gemm", "cudnn"). */
cr_convnet_engine cr_convnet_cuda_engine(const cr_convnet_cuda *cn);
const char *cr_convnet_cuda_engine_name(cr_convnet_engine engine);
/* Lines naming the engine, each conv stage's shape and (cuDNN) algorithms, and the workspace,
 * for logs and benchmarks. (host, the handle's) */
const char *cr_convnet_cuda_describe(const cr_convnet_cuda *cn);

/* Sets the math mode of ctx's cuBLAS handle: tf32 nonzero lets every SGEMM enqueued on ctx from
 * then on (the GEMM engine's convolutions, the backend's linear layers) round its inputs to TF32
 * on the tensor cores (CUBLAS_TF32_TENSOR_OP_MATH; sums stay fp32); 0 restores the context's
 * fp32 default (CUBLAS_DEFAULT_MATH). The mode belongs to the context, not to a handle of this
 * file: turn it on only on a context that runs nothing that must stay fp32 (the policy runtime's
 * own). The CUDNN engine's plans stay fp32 FMA either way. A cuBLAS failure is CUDARL_ERR_CUDA. */
cudarl_status cr_convnet_cuda_set_tf32(cudarl_ctx *ctx, int tf32);

/* Bytes of device workspace forward and backward need at every declared batch size; any
 * alignment works (the pieces are aligned inside). */
size_t cr_convnet_cuda_workspace_bytes(const cr_convnet_cuda *cn);
/* The workspace (device, cr_convnet_cuda_workspace_bytes) the calls below use. */
void cr_convnet_cuda_set_workspace(cr_convnet_cuda *cn, void *workspace);

/* Bytes of one device cache for up to max_rows rows (>= 1): the float input, every trunk
 * stage's output and two gradient buffers of the widest stage, each on 256-byte lines. */
size_t cr_convnet_cuda_cache_bytes(const cr_convnet *net, int max_rows);
/* Points *c into mem (device, cr_convnet_cuda_cache_bytes(net, max_rows) bytes, 64-byte
 * aligned); c->scratch is NULL. */
void cr_convnet_cuda_cache_carve(const cr_convnet *net, void *mem, int max_rows,
                                 cr_convnet_cache *c);

/* Bytes of a forward-only device cache for up to max_rows rows (>= 1): the float input and the
 * trunk stages' outputs in two buffers used in turn (stage i writes buffer i mod 2, each sized
 * for the largest of its stages), on 256-byte lines, no gradient buffers: for forwards whose
 * backward never comes (the policy runtime). */
size_t cr_convnet_cuda_forward_cache_bytes(const cr_convnet *net, int max_rows);
/* Points *c into mem (device, cr_convnet_cuda_forward_cache_bytes(net, max_rows) bytes, 64-byte
 * aligned) as that cache: c->act[i] of even and of odd i alias; c->d[] and c->scratch are NULL,
 * so cr_convnet_cuda_backward refuses it (an assertion). */
void cr_convnet_cuda_forward_cache_carve(const cr_convnet *net, void *mem, int max_rows,
                                         cr_convnet_cache *c);

/* cr_convnet_forward on the device: out (B, A) and, ppo only, value (B) (NULL for dqn) of obs
 * (B, C, H, W), uint8 or float as the spec's dtype; fills the cache c. B must be one of the
 * declared batch sizes and <= c->max_rows. params (num_params), obs, out, value and c: device
 * memory. ctx: the handle's. */
void cr_convnet_cuda_forward(cudarl_ctx *ctx, const cr_convnet_cuda *cn, const float *params,
                             const void *obs, float *out, float *value,
                             const cr_convnet_cache *c, int B);
/* cr_convnet_backward on the device: grads (num_params) overwritten with the gradients given
 * dout (B, A) and dvalue (B) (ppo; NULL for dqn), from the cache of the forward on the same
 * params and rows. All device memory; dout and dvalue are not written. */
void cr_convnet_cuda_backward(cudarl_ctx *ctx, const cr_convnet_cuda *cn, const float *params,
                              float *grads, const float *dout, const float *dvalue,
                              const cr_convnet_cache *c, int B);

#ifdef __cplusplus
}
#endif

#endif
