// The half-precision (fp16, bf16) implicit-GEMM convolution of the policy runtime's forward:
// what a caller needs to run one conv layer on these kernels (conv2d_half.cu and
// conv2d_half_mma.cu hold them; conv2d_half_kernels.cuh what they share). Forward only, for
// inference; not in the op table (ops/conv2d.h says why): nn/convnet_half.cu chooses the
// layouts of a whole network and calls these.
//
// A layer y[m][k] = act(b[k] + sum_j A[m][j] W[k][j]): rows m = (n, p, q) output pixels, K
// output channels, the taps j of one output gathered from the input as the kernels go (no
// im2col matrix is written), products in the format with fp32 sums, the bias and activation
// on the fp32 sums, the result rounded once to the format. The input is the observations
// (uint8, divided by 255 or cast, or float; NCHW) or a previous layer's output in the format,
// channels-last (N, H, W, C); the output channels-last (N, P, Q, K) or, before a flatten,
// NCHW. Weights (Kp, CRSp) in the format, zero-padded to whole tiles (K to HALF_KP, taps to
// HALF_BK), taps in the input's order: (c, r, s) for an NCHW input, (r, s, c) for a
// channels-last one, the s2d order for hconv_s2d_kernel (nn/convnet_half.cuh's pieces).
#ifndef CUDARL_CONV2D_HALF_CUH
#define CUDARL_CONV2D_HALF_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stddef.h>

#include "cudarl.h"
#include "ops/cpu/ops_conv.h"

// The tile the weights are padded to: Kp = round up(K, HALF_KP), CRSp = round up(C R S, HALF_BK).
#define HALF_KP 64
#define HALF_BK 32
#define HALF_ALIGN ((size_t)256) // a split-K tail's alignment (and nn's weight and cache pieces')

enum { IN_U8 = 0, IN_F32, IN_NHWC }; // what a conv layer reads

// One conv layer for these kernels, fixed at setup. The batch is each call's.
struct cr_conv2d_half_desc {
    cr_conv2d_shape shape; // N unused; P, Q set (cr_conv2d_shape_check)
    int in;                // IN_U8, IN_F32 (NCHW observations) or IN_NHWC (a layer's output)
    int scale255;          // IN_U8: divided by 255 (else cast)
    int act;               // 0 none, 1 ReLU, 2 tanh (ops/conv2d.h's cr_conv2d_act values)
    int out_nchw;          // the output NCHW (the flatten order), else channels-last
    int CRSp;              // taps per weight row, padded
    int s2d;               // runs hconv_s2d_kernel (cr_conv2d_half_s2d_fits)
    int sms;               // the device's SMs (split-K's target grid)
    size_t out_cap;        // bytes of the output buffer: split-K partial sums go in its tail
                           // past the output's own (rounded) bytes when they fit
};

// How a layer's reduction is split at batch B (cr_conv2d_half_splits): `splits` blocks along
// the taps (gridDim.z), each of `cps` chunks of HALF_BK taps; 1 split: no partials. The
// partial sums, splits x (B P Q) x K floats, go at `at` bytes into the output buffer (its tail
// past the output's own line) when in_output, else at the workspace's start.
struct cr_half_split {
    int splits, cps;
    int in_output;
    size_t at, bytes;
};

// Enough blocks for two per SM where the pixels alone give fewer, at most one split per chunk
// of taps. A fixed function of the desc and B, so a batch size always sums in the same order.
cr_half_split cr_conv2d_half_splits(const cr_conv2d_half_desc *d, int B);
// Whether a first layer of this shape over uint8 / 255 observations (u8_scaled), followed by a
// conv (next_conv), runs hconv_s2d_kernel: the Nature-CNN's 8x8/4 conv over 4 channels.
int cr_conv2d_half_s2d_fits(const cr_conv2d_shape *s, int u8_scaled, int next_conv);
// y = act(conv(x) + b) in the format T at batch B: x the observations or the previous layer's
// output, w and b the layer's weights (format) and bias (fp32), y its output buffer
// (d->out_cap bytes), ws the workspace for split-K partials that y cannot hold (or NULL). On
// ctx's stream; allocates nothing.
template <typename T>
void cr_conv2d_half_forward(cudarl_ctx *ctx, const cr_conv2d_half_desc *d, const void *x,
                            const void *w, const float *b, void *y, float *ws, int B);

#endif
