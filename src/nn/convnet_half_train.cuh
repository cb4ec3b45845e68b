// The backward of the IGEMM engine's training handles (fp16 and bf16; convnet_cuda.h has the
// API and its meaning, convnet_half_train.cu how it runs). The forward is the policy runtime's
// (convnet_half.cu, on a plan made with train set: every stage keeps its output); this is what
// a training handle adds: cuDNN plans for the convolutions' two gradients, and the kernels
// around them. Internal to src/nn; built with cuDNN only (without it, fits says so and nothing
// else is called).
#ifndef CUDARL_CONVNET_HALF_TRAIN_CUH
#define CUDARL_CONVNET_HALF_TRAIN_CUH

#include <stddef.h>

#include "nn/convnet_half.cuh"

typedef struct cr_convnet_half_train cr_convnet_half_train;

// 1 when the half backward can train `net` (planned as hp), else 0 with the reason in why (a
// sentence naming what does not fit; n bytes).
int cr_convnet_half_train_fits(const cr_convnet *net, const cr_convnet_half_plan *hp, char *why,
                               size_t n);
// Its cuDNN plans for each conv stage and each of the nbatches batch sizes, on ctx's stream.
// cuDNN refusing a shape or failing to start: CUDARL_ERR_UNSUPPORTED or _CUDA, *out NULL.
cudarl_status cr_convnet_half_train_init(cudarl_ctx *ctx, const cr_convnet *net,
                                         const cr_convnet_half_plan *hp, const int *batches,
                                         int nbatches, cr_convnet_half_train **out);
void cr_convnet_half_train_free(cr_convnet_half_train *t);
// Device workspace the backward needs at the largest batch (any alignment: aligned inside).
size_t cr_convnet_half_train_workspace_bytes(const cr_convnet_half_train *t);
// One line naming the algorithms, for the handle's description.
const char *cr_convnet_half_train_describe(const cr_convnet_half_train *t);
// grads (num_params floats, overwritten) of the forward that filled c at B rows, given dout
// (B, A) and dvalue (B) (ppo; NULL for dqn): params the float parameters (the heads' input
// gradient reads their fp32 weights), weights the block that forward read, obs its
// observations (rows obs_stride elements apart), workspace cr_convnet_half_train_workspace_bytes
// (it may overlap the forward's: the forward is done), c->d[] the gradient buffers. Enqueued on
// ctx's stream; allocates nothing.
void cr_convnet_half_backward(cudarl_ctx *ctx, const cr_convnet *net,
                              const cr_convnet_half_plan *hp, const cr_convnet_half_train *t,
                              const void *weights, void *workspace, const void *obs,
                              size_t obs_stride, const float *params, float *grads,
                              const float *dout, const float *dvalue, const cr_convnet_cache *c,
                              int B);

#endif
