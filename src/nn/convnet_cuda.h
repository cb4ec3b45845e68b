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
 * Linear stages and heads are the backend's cuBLAS ops (ops/cuda/linear.cu, dqn_ops.cu); conv
 * stages the op table's conv2d plans (ops/conv2d.h), one per conv stage and batch size, on one
 * of two engines, chosen at init:
 *   GEMM   im2col + one cuBLAS SGEMM per product (ops/cuda/conv2d_gemm.cu says why this is the
 *          default);
 *   CUDNN  cuDNN's deterministic fp32 algorithms (ops/cuda/conv2d_cudnn.cu; only in builds
 *          with cuDNN).
 * Both are fp32 throughout (no TF32 unless cr_convnet_cuda_set_tf32 turns it on for the GEMM
 * engine's context), deterministic (no float atomics; a fixed summation order
 * chosen at init), and agree with the CPU to rounding: their sums run in cuBLAS's / cuDNN's
 * order, not the CPU's.
 *
 * Half precision (a handle of cr_convnet_cuda_init_precision with CUDARL_PRECISION_FP16 or
 * _BF16; forward only, for inference): the third engine,
 *   IGEMM  each conv stage one implicit-GEMM kernel on the tensor cores (fp16 or bf16
 *          inputs, fp32 accumulation; ops/cuda/conv2d_half.cu says which kernel takes
 *          which shape): it gathers its im2col tiles straight from the previous stage's output, or
 *          from the observations (uint8 scaled by 1/255 or cast, or float, rounded to the format
 *          as they are read), so no im2col matrix exists; the bias and activation run in fp32 on
 *          the accumulators and the result is rounded once to the format (channels-last between
 *          convs, NCHW before a flatten). Linear stages are one cublasGemmEx each (format
 *          inputs, fp32 output, CUBLAS_COMPUTE_32F), or at batch sizes up to 8 one kernel
 *          streaming the weights, with an fp32 bias + activation epilogue that rounds to the
 *          format; the heads (and DQN's Q head) one kernel, fp32 sums of format products plus
 *          the fp32 bias, written in fp32.
 * Trained too (cr_convnet_cuda_init_training in bf16 or fp16 with engine AUTO or IGEMM, where
 * the net fits it: cuDNN built, the trunk's convs before its linears, ReLU or no activation,
 * channel counts cuDNN's tensor-core kernels take; AUTO also wants a million conv multiply-adds
 * a row, and takes the GEMM engine below otherwise):
 * the same calls as an fp32 handle (cr_convnet_cuda_forward, _backward on a cr_convnet_cache).
 * Its forward converts the float parameters into a weights block inside its workspace, then runs
 * the kernels above with every stage's output kept in the cache's float buffers (in the format);
 * its backward (nn/convnet_half_train.cu) runs the conv data and weight gradients through cuDNN
 * (NHWC in the format, fp32 compute, ALGO_1 on the tensor cores), the linear stages' and heads'
 * through cublasGemmEx, and its own kernels for the masks, the layout changes and the bias
 * sums, reading the observations its forward was given again (a handle remembers each cache's
 * last forward). Rounding as the mixed GEMM engine's, plus cuDNN's gradients written in the
 * format (docs/precision.md).
 * An inference handle's weights are a converted copy in a block of their own
 * (cr_convnet_cuda_weights_*): weights in the format, conv weights zero-padded to the kernel's
 * tile and, after the first conv, reordered to the channels-last taps; biases fp32. Made once from the float parameters
 * (cr_convnet_cuda_weights_pack on the host, or cr_convnet_cuda_weights_update on the device when
 * the caller's float weights change); the float parameters are not read by its forward.
 * Deterministic as the fp32 engines: every sum in a fixed order (the conv tiles' chunk order,
 * cuBLAS's order for a fixed handle and shape), no atomics.
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
    CR_CONVNET_ENGINE_IGEMM, /* fp16 / bf16 handles only (and the only engine they run) */
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
/* cr_convnet_cuda_init with a precision. FP32 and TF32: what cr_convnet_cuda_init makes (TF32 is
 * the context's cuBLAS math mode, cr_convnet_cuda_set_tf32). FP16 and BF16: a forward-only handle
 * on the IGEMM engine (engine AUTO or IGEMM; CUDARL_CONV_ENGINE is not read), whose calls are the
 * cr_convnet_cuda_weights_* and _half_* ones below; GEMM or CUDNN asked for with them is
 * CUDARL_ERR_INVALID_ARG, and so is IGEMM with FP32 or TF32; a device below compute capability
 * 8.0 (no bf16 tensor cores) is CUDARL_ERR_UNSUPPORTED. Other refusals as cr_convnet_cuda_init's.
 * (host) */
/* A handle for training (forward and backward) in `precision`. FP32 and TF32: what
 * cr_convnet_cuda_init makes (TF32 is the context's math mode, set by the trainer). BF16 and
 * FP16: the IGEMM engine (above) where the net fits it and engine is AUTO or IGEMM (IGEMM on a
 * net it does not fit is CUDARL_ERR_UNSUPPORTED naming why), else the GEMM engine (engine AUTO
 * or GEMM; CUDNN is CUDARL_ERR_INVALID_ARG) with
 * the inputs of every conv product in the format - the im2col matrix, the activation-gradient
 * matrix G and the conv weights, converted from the float ones at each use - multiplied on the
 * tensor cores by cublasGemmEx with fp32 sums (CUBLAS_COMPUTE_32F) into fp32 outputs; biases,
 * activations, their gradients, col2im stay fp32; the linear stages and heads are the backend's
 * ops, whose products take the context's format (cr_cuda_set_gemm_precision, set by the trainer). The same calls as an fp32
 * handle (cr_convnet_cuda_forward, _backward); its workspace holds each conv stage's im2col
 * matrix in the format (kept from the forward for the backward that follows it; rebuilt when a
 * forward on another cache or batch came between), the largest input-gradient matrix in the
 * format, and the largest conv weight in the format. A device below compute
 * capability 8.0 is CUDARL_ERR_UNSUPPORTED. (host) */
cudarl_status cr_convnet_cuda_init_training(cudarl_ctx *ctx, const cr_convnet *net,
                                            const int *batches, int nbatches,
                                            cr_convnet_engine engine, cudarl_precision precision,
                                            cr_convnet_cuda **cn);
cudarl_status cr_convnet_cuda_init_precision(cudarl_ctx *ctx, const cr_convnet *net,
                                             const int *batches, int nbatches,
                                             cr_convnet_engine engine, cudarl_precision precision,
                                             cr_convnet_cuda **cn);
/* The precision the handle was made for (cr_convnet_cuda_init: FP32). */
cudarl_precision cr_convnet_cuda_precision(const cr_convnet_cuda *cn);
/* Releases what init made (NULL is fine); not the workspace, which is the caller's. */
void cr_convnet_cuda_free(cr_convnet_cuda *cn);

/* The engine init chose (GEMM, CUDNN or IGEMM, never AUTO), and its name ("gemm", "cudnn",
 * "igemm"). */
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

/* Bytes of device workspace forward and backward need at every declared batch size (IGEMM: the
 * forward's fp32 products of the linear stages, 0 without any); any alignment works (the pieces
 * are aligned inside). */
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

/* ---- half precision (FP16 / BF16 handles, IGEMM engine) ---------------------------------- */

/* Bytes of the handle's converted weights (device): every weight in its format (2 bytes an
 * element), conv weights zero-padded to the kernel's tile, biases fp32, each tensor on a 256-byte
 * line; 0 for an FP32 or TF32 handle. About half the float parameters' bytes. */
size_t cr_convnet_cuda_weights_bytes(const cr_convnet_cuda *cn);
/* Where they live (device, cr_convnet_cuda_weights_bytes, 64-byte aligned); before the first
 * forward or update. */
void cr_convnet_cuda_set_weights(cr_convnet_cuda *cn, void *weights);
/* Converts params (host, num_params floats in state_dict order) into out (host,
 * cr_convnet_cuda_weights_bytes): the bytes cr_convnet_cuda_weights_update writes, for a caller
 * whose float weights stay on the host (the policy runtime uploads them and keeps no float copy
 * on the device). Rounds to nearest even (__float2half_rn / __float2bfloat16_rn). */
void cr_convnet_cuda_weights_pack(const cr_convnet_cuda *cn, const float *params, void *out);
/* The same conversion on the device: the handle's weights (set with cr_convnet_cuda_set_weights)
 * from params (device, num_params floats), on ctx's stream; for a caller whose float weights
 * change (after an optimizer step). Allocates nothing, waits for nothing: capturable. */
void cr_convnet_cuda_weights_update(cudarl_ctx *ctx, const cr_convnet_cuda *cn,
                                    const float *params);

/* A half handle's forward cache for up to max_rows rows (device memory, 2 bytes an element in
 * the handle's format; carved by cr_convnet_cuda_half_cache_carve). */
typedef struct cr_convnet_half_cache {
    int max_rows;
    void *x;                              /* (B, C, H, W) the input in the format when the first
                                             stage is a linear (or there is none); else NULL:
                                             the first conv reads the observations in place */
    void *act[CR_CONVNET_MAX_LAYERS + 1]; /* (B, stage out) after the activation; even stages
                                             share one buffer, odd ones the other. A conv's
                                             output is channels-last (B, P, Q, K) when a conv
                                             follows it, else (B, K, P, Q): the flatten order */
    const void *input;                    /* the observations' buffer when the odd stages'
                                             outputs live in it (the forward must then read its
                                             observations there), else NULL */
} cr_convnet_half_cache;

/* Bytes of that cache for max_rows rows, at least the largest declared batch size (a conv's
 * split-K partial sums at a small batch use the rows past it), on 256-byte lines. input_bytes:
 * the size of the buffer every forward will read its observations from, which it may then
 * overwrite (0: none); where the odd stages' buffer fits in it, the cache holds only the even
 * stages' (and the observations' buffer is reused once the first stage has read it). */
size_t cr_convnet_cuda_half_cache_bytes(const cr_convnet_cuda *cn, int max_rows,
                                        size_t input_bytes);
/* Points *c into mem (device, cr_convnet_cuda_half_cache_bytes(cn, max_rows, input_bytes),
 * 64-byte aligned), and the odd stages' buffer into input (device, input_bytes, 64-byte
 * aligned) where it fits, as the sizing said. */
void cr_convnet_cuda_half_cache_carve(const cr_convnet_cuda *cn, void *mem, int max_rows,
                                      void *input, size_t input_bytes, cr_convnet_half_cache *c);
/* cr_convnet_forward on a half handle: out (B, A) and, ppo only, value (B) (NULL for dqn), both
 * fp32, of obs (B, C, H, W), uint8 or float as the spec's dtype, with the handle's converted
 * weights (the float parameters are not read); fills the cache c (carved for the largest
 * declared batch size or more). B must be one of the declared batch sizes. obs (16-byte
 * aligned: the first conv reads uint8 rows a 32-bit word at a time), out, value and c: device
 * memory; ctx: the handle's. Enqueues everything on ctx's stream, allocates nothing:
 * capturable. At batches too small to give every SM two blocks, a conv splits its reduction
 * across blocks and sums the partial sums in a fixed order (the workspace, or the free rows of
 * its output buffer, holds them): every batch size sums in one fixed order. */
void cr_convnet_cuda_half_forward(cudarl_ctx *ctx, const cr_convnet_cuda *cn, const void *obs,
                                  float *out, float *value, const cr_convnet_half_cache *c, int B);

/* cr_convnet_forward on the device (an FP32 or TF32 handle): out (B, A) and, ppo only, value (B)
 * (NULL for dqn) of obs (B, C, H, W), uint8 or float as the spec's dtype; fills the cache c. B
 * must be one of the declared batch sizes and <= c->max_rows. params (num_params), obs, out,
 * value and c: device memory. ctx: the handle's. */
void cr_convnet_cuda_forward(cudarl_ctx *ctx, const cr_convnet_cuda *cn, const float *params,
                             const void *obs, float *out, float *value,
                             const cr_convnet_cache *c, int B);
/* cr_convnet_cuda_forward of input rows obs_stride elements apart (cr_convnet_forward_rows). */
void cr_convnet_cuda_forward_rows(cudarl_ctx *ctx, const cr_convnet_cuda *cn, const float *params,
                                  const void *obs, size_t obs_stride, float *out, float *value,
                                  const cr_convnet_cache *c, int B);
/* cr_convnet_backward on the device (an FP32 or TF32 handle): grads (num_params) overwritten
 * with the gradients given dout (B, A) and dvalue (B) (ppo; NULL for dqn), from the cache of the
 * forward on the same params and rows. All device memory; dout and dvalue are not written. */
void cr_convnet_cuda_backward(cudarl_ctx *ctx, const cr_convnet_cuda *cn, const float *params,
                              float *grads, const float *dout, const float *dvalue,
                              const cr_convnet_cache *c, int B);

#ifdef __cplusplus
}
#endif

#endif
