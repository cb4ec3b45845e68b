/* cr_cnn (cnn.h): each call goes to the twin the network was made with. */
#include "nn/cnn.h"

#include <string.h>

#ifdef CUDARL_WITH_CUDA
#include "nn/convnet_cuda.h"
#endif

cudarl_status cr_cnn_init(cr_cnn *cn, cudarl_ctx *ctx, const cr_convnet *net,
                          const int *batches, int nbatches, cudarl_precision precision) {
    memset(cn, 0, sizeof *cn);
    cn->net = net;
#ifdef CUDARL_WITH_CUDA
    if (ctx->kind == CUDARL_DEVICE_CUDA)
        return cr_convnet_cuda_init_training(ctx, net, batches, nbatches, CR_CONVNET_ENGINE_AUTO,
                                             precision, &cn->gpu);
#endif
    (void)ctx, (void)batches, (void)nbatches, (void)precision;
    return CUDARL_OK;
}

void cr_cnn_free(cr_cnn *cn) {
#ifdef CUDARL_WITH_CUDA
    cr_convnet_cuda_free(cn->gpu);
#endif
    cn->gpu = NULL;
}

int cr_cnn_on_gpu(const cr_cnn *cn) { return cn->gpu != NULL; }

const char *cr_cnn_engine_name(const cr_cnn *cn) {
#ifdef CUDARL_WITH_CUDA
    if (cn->gpu) return cr_convnet_cuda_engine_name(cr_convnet_cuda_engine(cn->gpu));
#endif
    (void)cn;
    return "cpu";
}

const char *cr_cnn_describe(const cr_cnn *cn) {
#ifdef CUDARL_WITH_CUDA
    if (cn->gpu) return cr_convnet_cuda_describe(cn->gpu);
#endif
    (void)cn;
    return "";
}

size_t cr_cnn_cache_bytes(const cr_cnn *cn, int max_rows) {
#ifdef CUDARL_WITH_CUDA
    if (cn->gpu) return cr_convnet_cuda_cache_bytes(cn->net, max_rows);
#endif
    return cr_convnet_cache_bytes(cn->net, max_rows);
}

size_t cr_cnn_workspace_bytes(const cr_cnn *cn) {
#ifdef CUDARL_WITH_CUDA
    if (cn->gpu) return cr_convnet_cuda_workspace_bytes(cn->gpu);
#endif
    (void)cn;
    return 0;
}

void cr_cnn_cache_carve(const cr_cnn *cn, void *mem, int max_rows, cr_convnet_cache *c) {
#ifdef CUDARL_WITH_CUDA
    if (cn->gpu) {
        cr_convnet_cuda_cache_carve(cn->net, mem, max_rows, c);
        return;
    }
#endif
    cr_convnet_cache_carve(cn->net, mem, max_rows, c);
}

void cr_cnn_set_workspace(cr_cnn *cn, void *workspace) {
#ifdef CUDARL_WITH_CUDA
    if (cn->gpu) cr_convnet_cuda_set_workspace(cn->gpu, workspace);
#endif
    (void)cn, (void)workspace;
}

void cr_cnn_forward_rows(cudarl_ctx *ctx, const cr_cnn *cn, const float *params, const void *obs,
                         size_t obs_stride, float *out, float *value, const cr_convnet_cache *c,
                         int B) {
#ifdef CUDARL_WITH_CUDA
    if (cn->gpu) {
        cr_convnet_cuda_forward_rows(ctx, cn->gpu, params, obs, obs_stride, out, value, c, B);
        return;
    }
#endif
    CUDARL_ASSERT(ctx->kind == CUDARL_DEVICE_CPU);
    cr_convnet_forward_rows(cn->net, params, obs, obs_stride, out, value, c, B);
}

void cr_cnn_forward(cudarl_ctx *ctx, const cr_cnn *cn, const float *params, const void *obs,
                    float *out, float *value, const cr_convnet_cache *c, int B) {
    cr_cnn_forward_rows(ctx, cn, params, obs, (size_t)cn->net->in_floats, out, value, c, B);
}

void cr_cnn_backward(cudarl_ctx *ctx, const cr_cnn *cn, const float *params, float *grads,
                     const float *dout, const float *dvalue, const cr_convnet_cache *c, int B) {
#ifdef CUDARL_WITH_CUDA
    if (cn->gpu) {
        cr_convnet_cuda_backward(ctx, cn->gpu, params, grads, dout, dvalue, c, B);
        return;
    }
#endif
    CUDARL_ASSERT(ctx->kind == CUDARL_DEVICE_CPU);
    cr_convnet_backward(cn->net, params, grads, dout, dvalue, c, B);
}
