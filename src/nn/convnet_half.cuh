// The half-precision forward of convnet_cuda (fp16 and bf16, inference only): its plan, its
// weights block, and the calls convnet_cuda.cu makes on a handle of one of those precisions
// (convnet_cuda.h has the API and its meaning; convnet_half.cu the forward, on the conv kernels
// of ops/cuda/conv2d_half.cuh). Internal to src/nn.
//
// A plan is plain data (a few KB, inside the handle), computed once at init from the planned
// net, the declared batch sizes and the device's SM count:
//   weights block (device, weights_bytes): one piece per parameter tensor, each on a 256-byte
//     line: weights in the precision's format, biases in fp32;
//   workspace (device, workspace_bytes): the fp32 products of the trunk's linear stages before
//     their bias and activation (B x out floats of the widest), and a conv's split-K partial
//     sums where they do not fit in the free tail of its output buffer (small batches of a
//     handle declared for small batches only; see cr_conv2d_half_splits);
//   cache (device, cr_convnet_half_cache_bytes): the input in the format when the first stage is
//     not a conv, and the stages' outputs in two buffers used in turn, each for max_batch rows
//     (the odd stages' in the observations' buffer, when the caller lends it: the first stage
//     has read the observations before the second writes).
#ifndef CUDARL_CONVNET_HALF_CUH
#define CUDARL_CONVNET_HALF_CUH

#include <stddef.h>

#include "nn/convnet_cuda.h"
#include "nn/precision.h"
#include "ops/cuda/conv2d_half.cuh"

// How a parameter tensor lies in the weights block.
enum {
    HALF_PIECE_COPY = 0, // a linear or head weight (O, I): each element converted, same order
    HALF_PIECE_KCRS,     // the first conv's weight (Kp, CRSp): rows k, taps j = (c R + r) S + s
    HALF_PIECE_KRSC,     // a later conv's weight (Kp, CRSp): rows k, taps j = (r S + s) C + c,
                         // the order of its channels-last input
    HALF_PIECE_BIAS,     // a bias: fp32, copied
    HALF_PIECE_S2D,      // the first conv's weight for hconv_s2d_kernel (Kp, CRSp): rows k, taps
                         // j = (((r / 4) 2 + s / 4) C + c) 16 + (r % 4) 4 + s % 4 (an 8 x 8 / 4
                         // conv as a 2 x 2 conv over 4 x 4 blocks of 16 C values)
};

struct cr_half_piece {
    int kind;
    size_t src;   // offset in the float parameters (floats)
    size_t dst;   // byte offset in the weights block
    size_t bytes; // its line there: the elements' bytes rounded up to 256
    size_t count; // elements in the block: conv Kp CRSp, else the tensor's count
    int K, C, R, S, CRS, CRSp; // conv weights: K output channels, CRS = C R S taps; Kp and CRSp
                               // round them up to the kernel's tile (zeros past K and CRS)
};

struct cr_convnet_half_plan {
    cudarl_precision precision;           // CUDARL_PRECISION_FP16 or _BF16
    cr_dtype dtype;                       // its format: CR_DTYPE_F16 or CR_DTYPE_BF16
    int npieces;                          // net->ntensors: piece i is tensor i
    cr_half_piece piece[CR_CONVNET_MAX_TENSORS];
    size_t weights_bytes, workspace_bytes;
    int needs_x;                          // the first stage is a linear (or there is none):
                                          // the input is converted into the cache first
    int max_batch;                        // the largest declared batch: the cache's rows
    int sms;                              // the device's SMs (split-K's target grid)
    size_t widest[2];                     // elements per row of cache buffer 0 and 1
    int s2d;                              // the first conv runs hconv_s2d_kernel (its weight
                                          // is a HALF_PIECE_S2D; never split)
    int train;                            // a training handle's forward: every stage writes
                                          // a buffer of its own (a cr_convnet_cache's float
                                          // act[i], which the backward reads) and the last
                                          // linear's epilogue is not left to the heads
    size_t row_bytes[CR_CONVNET_MAX_LAYERS]; // bytes per row of stage i's output buffer
    cr_conv2d_half_desc conv[CR_CONVNET_MAX_LAYERS]; // each conv stage's layer (by stage index)
};

// The plan of `net` at `precision` (FP16 or BF16) for the nbatches batch sizes of batches[] on
// a device of `sms` SMs; train: for a training handle (the `train` field above), whose cache is
// a cr_convnet_cache (convnet_cuda.h) holding the format's values in its float buffers.
void cr_convnet_half_plan_init(const cr_convnet *net, cudarl_precision precision,
                               const int *batches, int nbatches, int sms, int train,
                               cr_convnet_half_plan *hp);
// Bytes of a cache for max_rows (>= hp->max_batch) rows, and carving it from mem (mem NULL:
// sizing only); the odd stages' buffer in input (the observations' buffer, input_bytes) where
// it fits (cr_convnet_cuda_half_cache_bytes).
size_t cr_convnet_half_cache_carve(const cr_convnet *net, const cr_convnet_half_plan *hp,
                                   unsigned char *mem, int max_rows, unsigned char *input,
                                   size_t input_bytes, cr_convnet_half_cache *c);
// params (host, num_params floats) into out (host, weights_bytes).
void cr_convnet_half_pack(const cr_convnet_half_plan *hp, const float *params, void *out);
// The same from params (device) into weights (device), on ctx's stream.
void cr_convnet_half_update(cudarl_ctx *ctx, const cr_convnet_half_plan *hp, const float *params,
                            void *weights);
// The forward: out (B, A) and value (B) (ppo; NULL for dqn) of obs (B, C, H, W) as the spec's
// dtype, with the weights block, the workspace (aligned) and the cache.
void cr_convnet_half_forward(cudarl_ctx *ctx, const cr_convnet *net,
                             const cr_convnet_half_plan *hp, const void *weights, void *workspace,
                             const void *obs, float *out, float *value,
                             const cr_convnet_half_cache *c, int B);

#endif
