/* The convolution ops of the op table (backend.h: conv2d_*, scale_u8): one layer's 2-D
 * convolution with its bias and activation, forward and backward, on any context.
 *
 * Meaning (the CPU's, ops/cpu/conv2d.c and conv2d_backward.c, is the reference): float32 NCHW
 * activations x (N, C, H, W), y (N, K, P, Q); weights (K, C, R, S), bias (K); PyTorch's
 * nn.Conv2d (a cross-correlation) with one stride and one zero padding for both dimensions,
 * then the activation (ReLU: v < 0 ? 0 : v, NaN passes; tanh: cr_tanhf). Gradients are
 * overwritten, never accumulated, and summed over the batch.
 *
 * A plan is made once per layer and batch size at setup (conv2d_plan_init): it checks the shape,
 * chooses how the backend runs it and says how much workspace the ops need, so that the caller
 * sizes its arena before the loop. The ops then allocate nothing and, on CUDA, never wait for
 * the host and are enqueued on the plan's context's stream: capturable into a graph after one
 * call outside the capture (cuDNN loads its kernels on a plan's first call).
 *
 * How each backend runs a plan:
 *   CPU   ops/cpu/conv2d.c: per image, the im2col matrix times the weights (OpenMP threads split
 *         each product), fp32, bitwise the same for any thread count. Products other than fp32
 *         are CUDARL_ERR_UNSUPPORTED (nn/precision.c models them on the CPU).
 *   CUDA  engine GEMM (ops/cuda/conv2d_gemm.cu, the default): the whole batch's im2col matrix
 *         and one cuBLAS product per direction, fp32, or with the products' inputs in bf16 /
 *         fp16 (fp32 sums) for mixed-precision training; engine CUDNN (ops/cuda/conv2d_cudnn.cu,
 *         builds with cuDNN only): cuDNN's deterministic fp32 FMA algorithms. Both agree with
 *         the CPU to rounding and repeat bit for bit.
 * The half-precision inference kernels (ops/cuda/conv2d_half.cuh) are not in the table: they are
 * the policy runtime's fused forward, with layouts (channels-last, padded weight tiles) that only
 * a whole network can choose (nn/convnet_half.cu drives them). */
#ifndef CUDARL_OPS_CONV2D_H
#define CUDARL_OPS_CONV2D_H

#include <stddef.h>

#include "core/core.h"
#include "ops/cpu/ops_conv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The activation after the convolution. */
typedef enum cr_conv2d_act { CR_CONV2D_IDENTITY = 0, CR_CONV2D_RELU, CR_CONV2D_TANH } cr_conv2d_act;

/* How the CUDA backend runs the convolution (the CPU has one way and ignores it). */
typedef enum cr_conv2d_engine { CR_CONV2D_GEMM = 0, CR_CONV2D_CUDNN } cr_conv2d_engine;

/* One layer at one batch size. */
typedef struct cr_conv2d_desc {
    cr_conv2d_shape shape;      /* N .. pad filled (N: the batch the plan runs); P, Q are set
                                   in the plan's copy */
    cr_conv2d_act act;
    cudarl_precision products;  /* FP32 (or TF32: the context's math mode), or BF16 / FP16: the
                                   three products' inputs rounded to that format, fp32 sums
                                   (CUDA, engine GEMM only) */
    cr_conv2d_engine engine;
    int no_dx;                  /* nonzero: the backward is never asked for dx (a first layer,
                                   whose input is an observation), so the plan leaves out its
                                   workspace */
} cr_conv2d_desc;

/* What conv2d_plan_init made (host memory, the backend's; freed by conv2d_plan_free). */
typedef struct cr_conv2d_plan {
    cr_conv2d_desc desc;        /* P and Q set */
    size_t workspace_bytes;     /* backend memory forward and backward need, any alignment; its
                                   contents need not survive between calls, so one buffer of
                                   the largest plan's size serves every plan whose ops run one
                                   after another on one context */
    size_t keep_bytes;          /* 0, or the bytes of a buffer the caller keeps per layer
                                   (backend memory, 256-byte aligned) in which a forward leaves
                                   its im2col matrix for the backward of the same x (a
                                   mixed-precision plan's: rebuilding it costs a pass over x) */
    char describe[256];         /* one line naming how it runs */
    void *impl;                 /* the backend's (the cuDNN plan) */
} cr_conv2d_plan;

/* The ops' contract, which every backend's table entries keep:
 *
 * conv2d_plan_init(ctx, desc, &plan): a bad shape is CUDARL_ERR_INVALID_ARG (the message of
 *   cr_conv2d_shape_check); a batch whose activations or im2col matrix exceed what one GEMM or
 *   kernel indexes (2^31 elements), CUDARL_ERR_INVALID_ARG; an engine or product format the
 *   backend does not have, CUDARL_ERR_UNSUPPORTED naming what it has; cuDNN failing to start,
 *   CUDARL_ERR_CUDA or CUDARL_ERR_OUT_OF_MEMORY. *plan is NULL on failure.
 * conv2d_plan_free(plan): NULL is fine; on CUDA it waits for the device.
 * conv2d_forward(ctx, plan, x, w, b, y, workspace, keep): y = act(conv2d(x, w) + b); keep: a buffer of
 *   plan->keep_bytes (NULL when that is 0). y must not overlap x.
 * conv2d_backward(ctx, plan, x, w, y, dy, dx, dw, db, workspace, keep, kept): given dy, the
 *   gradient w.r.t. y (the forward's output, after the activation), writes dw, db and, unless
 *   dx is NULL (a first layer), dx. dy may be overwritten (the activation's backward may be
 *   applied in place). keep: the forward's (NULL when keep_bytes is 0); kept nonzero when it
 *   still holds the im2col matrix of this x at this batch, else the backward rebuilds it there.
 * scale_u8(ctx, x, y, n): y = x / 255 as float (one IEEE division: torch's obs.float() / 255.0,
 *   bitwise cr_cpu_scale_u8), n uint8 elements. */

#ifdef __cplusplus
}
#endif

#endif
