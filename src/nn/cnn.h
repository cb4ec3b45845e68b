/* A convolutional network (convnet.h) on a context, for training: the CPU reference on a CPU
 * context, its CUDA twin (convnet_cuda.h) on a CUDA one. The trainers call this interface and
 * never ask which runs; the twins agree to rounding (convnet_cuda.h says how). Parameters,
 * gradients, inputs, outputs and caches are backend memory of the context. */
#ifndef CUDARL_NN_CNN_H
#define CUDARL_NN_CNN_H

#include <stddef.h>

#include "nn/convnet.h"
#include "ops/backend.h"

struct cr_convnet_cuda;

typedef struct cr_cnn {
    const cr_convnet *net;       /* the planned spec (host, the caller's) */
    struct cr_convnet_cuda *gpu; /* its CUDA twin on a CUDA context, else NULL */
} cr_cnn;

/* Makes the twin of ctx for `net` and the batch sizes the caller will run (the CUDA twin plans
 * per batch size; every forward and backward must use one of them), computing in `precision`
 * (fp32 on the CPU). cn->net points at net, which must outlive cn. */
cudarl_status cr_cnn_init(cr_cnn *cn, cudarl_ctx *ctx, const cr_convnet *net,
                          const int *batches, int nbatches, cudarl_precision precision);
void cr_cnn_free(cr_cnn *cn);
/* Whether the CUDA twin runs (for logs), the name of its conv engine ("cpu" on the CPU) and a
 * description of its plan (an empty string on the CPU). */
int cr_cnn_on_gpu(const cr_cnn *cn);
const char *cr_cnn_engine_name(const cr_cnn *cn);
const char *cr_cnn_describe(const cr_cnn *cn);

/* Bytes of one forward's cache for max_rows rows; of the twin's workspace (0 on the CPU). */
size_t cr_cnn_cache_bytes(const cr_cnn *cn, int max_rows);
size_t cr_cnn_workspace_bytes(const cr_cnn *cn);
/* Points c into mem (cr_cnn_cache_bytes), and the twin at its workspace (ignored on the CPU). */
void cr_cnn_cache_carve(const cr_cnn *cn, void *mem, int max_rows, cr_convnet_cache *c);
void cr_cnn_set_workspace(cr_cnn *cn, void *workspace);

/* out (B, A) and, ppo only, value (B) (NULL for dqn) of obs (B, C, H, W) rows obs_stride
 * elements apart; fills the cache c. */
void cr_cnn_forward_rows(cudarl_ctx *ctx, const cr_cnn *cn, const float *params, const void *obs,
                         size_t obs_stride, float *out, float *value, const cr_convnet_cache *c,
                         int B);
/* cr_cnn_forward_rows of packed rows (C H W elements apart). */
void cr_cnn_forward(cudarl_ctx *ctx, const cr_cnn *cn, const float *params, const void *obs,
                    float *out, float *value, const cr_convnet_cache *c, int B);
/* grads (num_params) overwritten with d loss / d params given dout (B, A) and dvalue (B) (ppo;
 * NULL for dqn), from the cache of the forward on the same params and rows. */
void cr_cnn_backward(cudarl_ctx *ctx, const cr_cnn *cn, const float *params, float *grads,
                     const float *dout, const float *dvalue, const cr_convnet_cache *c, int B);

#endif
