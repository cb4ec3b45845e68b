// The CUDA backend's conv2d ops (ops/conv2d.h has the contract; backend_cuda.cu puts them in
// the table): a plan picks the engine its desc names, the GEMM engine (conv2d_gemm.cu) or the
// CUDNN engine (conv2d_cudnn.cu, builds with cuDNN only), and every call goes to it. And the
// uint8 -> float scaling of pixel observations, the twin of scale_u8.c.
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "ops/cuda/cuda_common.cuh"
#include "ops/cuda/conv2d_cuda.h"
#include "ops/cuda/tanh_device.cuh"

#ifdef CUDARL_WITH_CUDNN
// y (n) = tanh(y) in place (the CUDNN engine's conv + tanh).
static __global__ void tanh_inplace_kernel(float *y, size_t n) {
    const size_t step = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        y[i] = cr_tanhf_device(y[i]);
}
#endif

// y[i] = x[i] / 255 correctly rounded (IEEE division, as the CPU's and PyTorch's).
static __global__ void scale_u8_kernel(const uint8_t *__restrict__ x, float *__restrict__ y,
                                       size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = __fdiv_rn((float)x[i], 255.0f);
}

static int is_mixed(cudarl_precision p) {
    return p == CUDARL_PRECISION_BF16 || p == CUDARL_PRECISION_FP16;
}

// Refuses a batch whose activations or im2col matrix a GEMM, a kernel or cuDNN cannot index
// with int.
static cudarl_status check_sizes(const cr_conv2d_shape *s) {
    const int64_t in = (int64_t)s->N * s->C * s->H * s->W, out = (int64_t)s->N * s->K * s->P * s->Q;
    const int64_t L = (int64_t)s->N * s->P * s->Q;
    if (in > INT_MAX || out > INT_MAX || L > INT_MAX)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "conv2d on CUDA: a batch of %d images makes the "
                       "layer's activations larger than 2^31 elements; use smaller batches",
                       s->N);
    return CUDARL_OK;
}

extern "C" cudarl_status cr_cuda_conv2d_op_plan_init(cudarl_ctx *ctx, const cr_conv2d_desc *d,
                                                     cr_conv2d_plan **out) {
    CUDARL_ASSERT(ctx && ctx->kind == CUDARL_DEVICE_CUDA && d && out);
    *out = NULL;
    cr_conv2d_desc desc = *d;
    CR_TRY(cr_conv2d_shape_check(&desc.shape));
    CR_TRY(check_sizes(&desc.shape));
    if ((unsigned)desc.act > CR_CONV2D_TANH)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "conv2d on CUDA: unknown activation %d",
                       (int)desc.act);
    if (desc.engine != CR_CONV2D_GEMM && desc.engine != CR_CONV2D_CUDNN)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "conv2d on CUDA: unknown engine %d",
                       (int)desc.engine);
    if (desc.engine == CR_CONV2D_CUDNN && is_mixed(desc.products))
        return cr_fail(CUDARL_ERR_UNSUPPORTED, "conv2d on CUDA: the cudnn engine computes in "
                       "fp32 only, not %s; use the gemm engine",
                       cudarl_precision_name(desc.products));
#ifndef CUDARL_WITH_CUDNN
    if (desc.engine == CR_CONV2D_CUDNN)
        return cr_fail(CUDARL_ERR_UNSUPPORTED, "the cuDNN convolution engine is not in this "
                       "build (cuDNN was not found when cudarl was configured); use the gemm "
                       "engine (unset CUDARL_CONV_ENGINE)");
#endif
    cr_conv2d_plan *p = (cr_conv2d_plan *)calloc(1, sizeof *p);
    if (!p) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "conv2d on CUDA: out of host memory");
    p->desc = desc;
    if (desc.engine == CR_CONV2D_GEMM) {
        cr_cuda_conv2d_gemm_sizes(&desc, &p->workspace_bytes, &p->keep_bytes);
        snprintf(p->describe, sizeof p->describe, "%s",
                 desc.products == CUDARL_PRECISION_FP16
                     ? "im2col + cublasGemmEx, fp16 products, fp32 sums"
                 : desc.products == CUDARL_PRECISION_BF16
                     ? "im2col + cublasGemmEx, bf16 products, fp32 sums"
                     : "im2col + cuBLAS SGEMM, fp32");
        *out = p;
        return CUDARL_OK;
    }
#ifdef CUDARL_WITH_CUDNN
    cr_cuda_conv2d_plan *cp = NULL;
    cudarl_status st = cr_cuda_conv2d_plan_init(ctx, &desc.shape, &cp);
    if (st != CUDARL_OK) {
        free(p);
        return st;
    }
    p->impl = cp;
    p->workspace_bytes = cr_cuda_conv2d_workspace_bytes(cp);
    snprintf(p->describe, sizeof p->describe, "%s", cr_cuda_conv2d_plan_describe(cp));
#endif
    *out = p;
    return CUDARL_OK;
}

extern "C" void cr_cuda_conv2d_op_plan_free(cr_conv2d_plan *p) {
    if (!p) return;
#ifdef CUDARL_WITH_CUDNN
    cr_cuda_conv2d_plan_free((cr_cuda_conv2d_plan *)p->impl);
#endif
    free(p);
}

extern "C" void cr_cuda_conv2d_op_forward(cudarl_ctx *ctx, const cr_conv2d_plan *p,
                                          const float *x, const float *w, const float *b,
                                          float *y, void *workspace, void *keep) {
    const cr_conv2d_desc *d = &p->desc;
    if (d->engine == CR_CONV2D_GEMM) {
        cr_cuda_conv2d_gemm_forward(ctx, d, x, w, b, y, workspace, keep);
        return;
    }
#ifdef CUDARL_WITH_CUDNN
    cr_cuda_conv2d_forward(ctx, (const cr_cuda_conv2d_plan *)p->impl, x, w, b, y,
                           d->act == CR_CONV2D_RELU, workspace);
    if (d->act == CR_CONV2D_TANH) {
        const cr_conv2d_shape *s = &d->shape;
        const size_t n = (size_t)s->N * s->K * s->P * s->Q;
        tanh_inplace_kernel<<<cr_cuda_blocks(n, CR_CUDA_THREADS), CR_CUDA_THREADS, 0,
                              cr_stream(ctx)>>>(y, n);
        CR_CUDA_LAUNCHED(ctx);
    }
#else
    CUDARL_ASSERT(!"the CUDNN engine is refused at plan init in builds without cuDNN");
#endif
}

extern "C" void cr_cuda_conv2d_op_backward(cudarl_ctx *ctx, const cr_conv2d_plan *p,
                                           const float *x, const float *w, const float *y,
                                           float *dy, float *dx, float *dw, float *db,
                                           void *workspace, void *keep, int kept) {
    const cr_conv2d_desc *d = &p->desc;
    if (d->engine == CR_CONV2D_GEMM) {
        cr_cuda_conv2d_gemm_backward(ctx, d, x, w, y, dy, dx, dw, db, workspace, keep, kept);
        return;
    }
#ifdef CUDARL_WITH_CUDNN
    const cr_conv2d_shape *s = &d->shape;
    if (d->act == CR_CONV2D_TANH)
        ctx->ops->tanh_backward(ctx, y, dy, dy, (size_t)s->N * s->K * s->P * s->Q);
    cr_cuda_conv2d_backward(ctx, (const cr_cuda_conv2d_plan *)p->impl, x, w,
                            d->act == CR_CONV2D_RELU ? y : NULL, dy, dx, dw, db, workspace);
#else
    CUDARL_ASSERT(!"the CUDNN engine is refused at plan init in builds without cuDNN");
#endif
}

extern "C" void cr_cuda_scale_u8(cudarl_ctx *ctx, const uint8_t *x, float *y, size_t n) {
    if (n == 0) return;
    scale_u8_kernel<<<cr_cuda_blocks(n, CR_CUDA_THREADS), CR_CUDA_THREADS, 0, cr_stream(ctx)>>>(
        x, y, n);
    CR_CUDA_LAUNCHED(ctx);
}
