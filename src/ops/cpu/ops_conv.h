/* The CPU ops of convolutional policies (Nature-CNN, the MinAtar net): 2-D convolution forward
 * and backward, and the uint8 -> float scaling of pixel observations.
 *
 * Conventions of ops_cpu.h: float32, contiguous, results bitwise identical for any thread count
 * (the ops go one image at a time; OpenMP threads split each image's matrix product, as in
 * cr_cpu_linear_*). No op allocates: each takes a caller-sized scratch buffer.
 * Activations are NCHW: x (N, C, H, W), y (N, K, P, Q); weights (K, C, R, S), bias (K), as
 * PyTorch's nn.Conv2d (a cross-correlation, no kernel flip), with one stride and one zero padding
 * for both spatial dimensions.
 *
 * Flatten is not an op: an NCHW tensor (N, K, P, Q) in contiguous memory already is the
 * (N, K * P * Q) matrix torch.flatten(y, 1) gives, in the same element order, so the first fully
 * connected layer after the convolutions reads the conv output pointer as its x (B = N,
 * I = K * P * Q) and writes its dx straight into the conv's dy. */
#ifndef CUDARL_OPS_CONV_H
#define CUDARL_OPS_CONV_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One convolution layer's shape. The caller fills N .. pad; cr_conv2d_shape_check fills P, Q. */
typedef struct cr_conv2d_shape {
    int N, C, H, W; /* input (N, C, H, W) */
    int K, R, S;    /* output channels; kernel rows, columns: weights (K, C, R, S), bias (K) */
    int stride;     /* >= 1, both dimensions */
    int pad;        /* >= 0 zeros on each side, both dimensions */
    int P, Q;       /* output rows, columns: (H + 2 pad - R) / stride + 1, same for Q */
} cr_conv2d_shape;

/* Validates s (positive sizes, a kernel that fits the padded input, every count within int) and
 * sets s->P and s->Q. A shape comes from a model spec and an environment's observation shape, so
 * a bad one is a user error: CUDARL_ERR_INVALID_ARG with a message naming the field. The ops
 * below assert (a bug, abort) when handed a shape this did not accept. */
cudarl_status cr_conv2d_shape_check(cr_conv2d_shape *s);

/* Bytes of scratch the forward and the backward (with or without dx) of shape s need, for any
 * batch size N: the ops work one image at a time. One buffer of the largest layer's size serves
 * every layer. (host; any alignment works, 64 bytes as the arenas give keeps its pieces on their
 * own cache lines; its contents need not survive between calls) */
size_t cr_cpu_conv2d_scratch_bytes(const cr_conv2d_shape *s);

/* y = conv2d(x, w) + b, then max(0, y) when relu (cr_cpu_relu_forward's semantics, NaN passes).
 * x (N, C, H, W), w (K, C, R, S), b (K), y (N, K, P, Q); scratch of cr_cpu_conv2d_scratch_bytes.
 * y must not overlap x. */
void cr_cpu_conv2d_forward(const cr_conv2d_shape *s, const float *x, const float *w,
                           const float *b, float *y, int relu, void *scratch);

/* Gradients of the layer given dy, the gradient of the loss w.r.t. its output:
 *   y_relu NULL:     dy is w.r.t. the convolution's output (a layer without ReLU, or a caller
 *                    that ran cr_cpu_relu_backward itself);
 *   y_relu not NULL: it is the forward's output with relu = 1, (N, K, P, Q), and dy is w.r.t.
 *                    it; the ReLU backward (cr_cpu_relu_backward's select: y <= 0 ? 0 : dy) is
 *                    fused in, dy itself is not written.
 * Writes dw (K, C, R, S) and db (K), overwritten, not accumulated, summed over the batch; and
 * dx (N, C, H, W) unless dx is NULL (the first layer, whose input is an observation).
 * x (N, C, H, W) is the forward's input, w (K, C, R, S), dy (N, K, P, Q); scratch of
 * cr_cpu_conv2d_scratch_bytes. dx must not overlap the inputs. */
void cr_cpu_conv2d_backward(const cr_conv2d_shape *s, const float *x, const float *w,
                            const float *y_relu, const float *dy, float *dx, float *dw, float *db,
                            void *scratch);

/* y = x / 255 (a float division, bitwise torch's obs.float() / 255.0), n elements: pixel
 * observations to [0, 1]. x (n) uint8, y (n) float. */
void cr_cpu_scale_u8(const uint8_t *x, float *y, size_t n);

#ifdef __cplusplus
}
#endif

#endif
