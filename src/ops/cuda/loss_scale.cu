// Dynamic loss scaling on the device (loss_scale_cuda.h), with the semantics and roundings of
// src/ops/cpu/loss_scale.c: every product is one IEEE float multiplication (__fmul_rn), the reciprocal
// and the scale updates are double operations rounded once to float, as on the host.
//
// unscale: a grid-stride loop; a thread that meets an inf or NaN stores 1.0f into found_inf. Every
// such store writes the same value and nothing reads found_inf in this kernel (torch's CUDA kernel
// does the same), so the result does not depend on which thread stores or in what order.
//
// adam_step_if: the body of optim.cu's adam_kernel, rounding for rounding, behind one test of
// found_inf at the top of every block. A skipping launch touches nothing, not even the scratch's
// ticket counter (no block takes a ticket), so the next adam_step finds the scratch as the last
// one left it. tests/test_loss_scale_cuda.c holds a clean adam_step_if to adam_step bit for bit,
// so the two bodies cannot drift apart unnoticed.
#include "ops/cuda/adam_device.cuh"
#include "ops/cuda/cuda_common.cuh"

extern "C" {
#include "ops/cuda/loss_scale_cuda.h"
}

__global__ void loss_scale_apply_kernel(const cr_loss_scale_state *s, float *dy, size_t n) {
    const float scale = s->scale;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dy[i] = __fmul_rn(dy[i], scale);
}

__global__ void loss_scale_unscale_kernel(cr_loss_scale_state *s, float *g, size_t n) {
    const float inv_scale = __double2float_rn(__drcp_rn((double)s->scale));
    int found = 0;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float x = g[i];
        found |= !isfinite(x);
        g[i] = inv_scale == 1.0f ? x : __fmul_rn(x, inv_scale);
    }
    if (found) s->found_inf = 1.0f;
}

// One thread: _amp_update_scale_ (aten/src/ATen/native/cuda/AmpKernels.cu), then found_inf = 0.
__global__ void loss_scale_update_kernel(cr_loss_scale_state *s, double growth_factor,
                                         double backoff_factor, int32_t growth_interval) {
    if (s->found_inf != 0.0f) {
        s->scale = __double2float_rn(__dmul_rn((double)s->scale, backoff_factor));
        s->growth_tracker = 0;
        s->skipped_steps += 1;
    } else {
        int32_t successful = s->growth_tracker + 1;
        if (successful == growth_interval) {
            float grown = __double2float_rn(__dmul_rn((double)s->scale, growth_factor));
            if (isfinite(grown)) s->scale = grown;
            s->growth_tracker = 0;
        } else {
            s->growth_tracker = successful;
        }
    }
    s->found_inf = 0.0f;
}

// n == 0: adam_step still counts the step (optim.cu's adam_prepare_kernel), unless skipped.
__global__ void adam_if_prepare_kernel(const cr_loss_scale_state *s, int64_t *t, const float *lr,
                                       float b1, float b2, cr_cuda_scratch *scratch) {
    if (s->found_inf != 0.0f) return;
    int64_t step = *t + 1;
    *t = step;
    cr_adam_bias_terms(step, lr, b1, b2, &scratch->adam_step, &scratch->adam_bc2_sqrt);
}

// optim.cu's adam_kernel behind `found_inf == 0`: the same cr_adam_block (adam_device.cuh).
__global__ void adam_if_kernel(const cr_loss_scale_state *s, float *__restrict__ p,
                               const float *__restrict__ g, float *__restrict__ m,
                               float *__restrict__ v, size_t n, int64_t *t, const float *lr,
                               float b1, float b2, float c1, float c2, float eps,
                               cr_cuda_scratch *scratch) {
    if (s->found_inf != 0.0f) return; // the same in every thread of every block
    cr_adam_block(p, g, m, v, n, t, lr, b1, b2, c1, c2, eps, scratch);
}

void cr_cuda_loss_scale_apply(cudarl_ctx *ctx, const cr_loss_scale_state *s, float *dy,
                              size_t n) {
    if (!n) return;
    loss_scale_apply_kernel<<<cr_cuda_blocks(n, CR_CUDA_THREADS), CR_CUDA_THREADS, 0,
                              cr_stream(ctx)>>>(s, dy, n);
    CR_CUDA_LAUNCHED(ctx);
}

void cr_cuda_loss_scale_unscale(cudarl_ctx *ctx, cr_loss_scale_state *s, float *g, size_t n) {
    if (!n) return;
    loss_scale_unscale_kernel<<<cr_cuda_blocks(n, CR_CUDA_THREADS), CR_CUDA_THREADS, 0,
                                cr_stream(ctx)>>>(s, g, n);
    CR_CUDA_LAUNCHED(ctx);
}

void cr_cuda_adam_step_if(cudarl_ctx *ctx, const cr_loss_scale_state *s, float *p, const float *g,
                          float *m, float *v, size_t n, const float *lr, float b1, float b2,
                          float eps, int64_t *t) {
    cudaStream_t st = cr_stream(ctx);
    cr_cuda_scratch *scratch = cr_impl(ctx)->scratch;
    if (!n) {
        adam_if_prepare_kernel<<<1, 1, 0, st>>>(s, t, lr, b1, b2, scratch);
        CR_CUDA_LAUNCHED(ctx);
        return;
    }
    adam_if_kernel<<<cr_cuda_blocks(n, CR_CUDA_THREADS), CR_CUDA_THREADS, 0, st>>>(
        s, p, g, m, v, n, t, lr, b1, b2, 1.0f - b1, 1.0f - b2, eps, scratch);
    CR_CUDA_LAUNCHED(ctx);
}

void cr_cuda_loss_scale_update(cudarl_ctx *ctx, cr_loss_scale_state *s,
                               const cr_loss_scale_config *cfg) {
    loss_scale_update_kernel<<<1, 1, 0, cr_stream(ctx)>>>(s, cfg->growth_factor,
                                                          cfg->backoff_factor,
                                                          cfg->growth_interval);
    CR_CUDA_LAUNCHED(ctx);
}
