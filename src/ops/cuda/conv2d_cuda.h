/* The CUDA twins of ops_conv.h: the conv2d ops of the CUDA backend's table (ops/conv2d.h has
 * their contract) and the two engines behind them, the GEMM engine (conv2d_gemm.cu) and the
 * cuDNN plans below (conv2d_cudnn.cu, compiled only with cuDNN); and the uint8 -> float scaling
 * of pixel observations. Includable from C and C++; compiled only with the CUDA toolkit.
 *
 * The cuDNN plans:
 *
 * Same meaning as the CPU ops (the specification, tests/test_conv_cuda.c holds them together):
 * float32 NCHW activations x (N, C, H, W), y (N, K, P, Q); weights (K, C, R, S), bias (K); a
 * cross-correlation with one stride and one zero padding for both spatial dimensions; gradients
 * overwritten, not accumulated; the ReLU fused on the forward (v < 0 ? 0 : v, NaN passes) and its
 * backward selected by the forward's output (y <= 0 ? 0 : dy).
 *
 * A plan is made once per layer shape (batch size included) at setup: it validates the shape,
 * holds cuDNN's descriptors, chooses the algorithms (cuDNN's heuristics, deterministic GEMM
 * family only, FMA math so fp32 is fp32: conv2d_cudnn.cu says why) and reports the device workspace it
 * needs, so the caller sizes its arena before the loop. The ops then allocate nothing, never wait
 * for the host, and are enqueued on the stream of the context the plan was made with, so they
 * can be captured into a CUDA graph -- after running once outside the capture: cuDNN loads and
 * caches its kernels on a plan's first call. Results are bitwise repeatable on one device with
 * one cuDNN version; they agree with the CPU's to rounding. */
#ifndef CUDARL_CONV2D_CUDA_H
#define CUDARL_CONV2D_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "cudarl.h"
#include "ops/conv2d.h"
#include "ops/cpu/ops_conv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the op table's entries (conv2d.cu): the engine the desc names ---------------------- */

cudarl_status cr_cuda_conv2d_op_plan_init(cudarl_ctx *ctx, const cr_conv2d_desc *d,
                                          cr_conv2d_plan **plan);
void cr_cuda_conv2d_op_plan_free(cr_conv2d_plan *plan);
void cr_cuda_conv2d_op_forward(cudarl_ctx *ctx, const cr_conv2d_plan *plan, const float *x,
                               const float *w, const float *b, float *y, void *workspace,
                               void *keep);
void cr_cuda_conv2d_op_backward(cudarl_ctx *ctx, const cr_conv2d_plan *plan, const float *x,
                                const float *w, const float *y, float *dy, float *dx, float *dw,
                                float *db, void *workspace, void *keep, int kept);

/* ---- the GEMM engine (conv2d_gemm.cu) --------------------------------------------------- */

/* Workspace and keep bytes (cr_conv2d_plan's fields) of desc d, its shape checked. */
void cr_cuda_conv2d_gemm_sizes(const cr_conv2d_desc *d, size_t *workspace, size_t *keep);
/* The op's forward and backward (ops/conv2d.h) for desc d; dy is not written. */
void cr_cuda_conv2d_gemm_forward(cudarl_ctx *ctx, const cr_conv2d_desc *d, const float *x,
                                 const float *w, const float *b, float *y, void *workspace,
                                 void *keep);
void cr_cuda_conv2d_gemm_backward(cudarl_ctx *ctx, const cr_conv2d_desc *d, const float *x,
                                  const float *w, const float *y, const float *dy, float *dx,
                                  float *dw, float *db, void *workspace, void *keep, int kept);

/* ---- the cuDNN plans (conv2d_cudnn.cu) -------------------------------------------------- */

typedef struct cr_cuda_conv2d_plan cr_cuda_conv2d_plan;

/* Makes *plan for one layer of shape s (N .. pad filled; P, Q are set in the plan's copy) on
 * ctx, a CUDA context: a cuDNN handle of its own, bound to ctx's stream, and the descriptors and
 * algorithms. A bad shape is CUDARL_ERR_INVALID_ARG (cr_conv2d_shape_check's message); a shape
 * cuDNN has no deterministic fp32 algorithm for, CUDARL_ERR_UNSUPPORTED; cuDNN failing to start
 * (library, driver, memory), CUDARL_ERR_CUDA or CUDARL_ERR_OUT_OF_MEMORY. *plan is NULL on
 * failure. (host; cuDNN keeps a little device memory per handle) */
cudarl_status cr_cuda_conv2d_plan_init(cudarl_ctx *ctx, const cr_conv2d_shape *s,
                                       cr_cuda_conv2d_plan **plan);
/* Releases what plan_init made (NULL is fine). Waits for the device (cudnnDestroy does). */
void cr_cuda_conv2d_plan_free(cr_cuda_conv2d_plan *plan);

/* The plan's shape, P and Q set. (host, the plan's) */
const cr_conv2d_shape *cr_cuda_conv2d_plan_shape(const cr_cuda_conv2d_plan *plan);

/* Bytes of device workspace the forward and the backward (with or without dx, with or without
 * the ReLU) of this plan need; any alignment works. Its contents need not survive between
 * calls, so one buffer of the largest plan's size serves every plan whose ops run one after
 * another on one stream. (device) */
size_t cr_cuda_conv2d_workspace_bytes(const cr_cuda_conv2d_plan *plan);

/* One line naming the chosen algorithms and the workspace, for logs and benchmarks.
 * (host, the plan's) */
const char *cr_cuda_conv2d_plan_describe(const cr_cuda_conv2d_plan *plan);

/* y = conv2d(x, w) + b, then max(0, y) when relu; cr_cpu_conv2d_forward's meaning.
 * x (N, C, H, W), w (K, C, R, S), b (K), y (N, K, P, Q) (device); workspace of
 * cr_cuda_conv2d_workspace_bytes (device). y must not overlap x. ctx: the plan's. */
void cr_cuda_conv2d_forward(cudarl_ctx *ctx, const cr_cuda_conv2d_plan *plan, const float *x,
                            const float *w, const float *b, float *y, int relu, void *workspace);

/* Gradients of the layer given dy; cr_cpu_conv2d_backward's meaning:
 *   y_relu NULL:     dy is w.r.t. the convolution's output;
 *   y_relu not NULL: the forward's output with relu = 1, (N, K, P, Q), and dy is w.r.t. it: the
 *                    ReLU backward (y <= 0 ? 0 : dy) is applied to a copy in the workspace, dy
 *                    itself is not written.
 * Writes dw (K, C, R, S) and db (K), overwritten, summed over the batch, and dx (N, C, H, W)
 * unless dx is NULL (the first layer). x (N, C, H, W), w (K, C, R, S), dy (N, K, P, Q) (device);
 * workspace as the forward's. dx, dw, db must not overlap the inputs. ctx: the plan's. */
void cr_cuda_conv2d_backward(cudarl_ctx *ctx, const cr_cuda_conv2d_plan *plan, const float *x,
                             const float *w, const float *y_relu, const float *dy, float *dx,
                             float *dw, float *db, void *workspace);

/* y = x / 255 rounded once (bitwise cr_cpu_scale_u8), n elements. x (n) uint8, y (n) float
 * (device), on ctx's stream. (conv2d.cu: in every CUDA build) */
void cr_cuda_scale_u8(cudarl_ctx *ctx, const uint8_t *x, float *y, size_t n);

#ifdef __cplusplus
}
#endif

#endif
