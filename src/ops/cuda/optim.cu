// Gradient-norm clipping and Adam on the device, with the semantics of src/ops/cpu/grad_norm.c
// and adam.c. Nothing comes back to the host: the clip coefficient, Adam's step count and its
// bias corrections are computed by one thread and read from the scratch by the next launch.
//
// clip_grad_norm: sum of squares in double, each of G blocks over a grid-stride slice, then one
// block adds the G partials (G a function of n only: a fixed order, bitwise repeatable; it differs
// from the CPU's index order only in double rounding), computes norm and coef, and adds the norm
// to *norm_sum; a third launch scales g when coef < 1 (or is NaN, as torch does).
//
// adam_step: one launch; each block computes lr / (1 - b1^t) and sqrt(1 - b2^t) for the new t
// (double, as the CPU), and the elementwise loop is the CPU's with every rounding in the same
// place (_rn intrinsics, no FMA), so m and v match the CPU bit for bit.
#include "ops/cuda/adam_device.cuh"
#include "ops/cuda/cuda_common.cuh"

#define NORM_THREADS 256
// Elements per thread a sum-of-squares block aims at before another block is added.
#define NORM_PER_THREAD 8

__global__ void __launch_bounds__(NORM_THREADS)
sum_squares_kernel(const float *__restrict__ g, size_t n, cr_cuda_scratch *scratch) {
    __shared__ double sh[NORM_THREADS];
    double v[1] = {0.0};
    size_t stride = (size_t)gridDim.x * NORM_THREADS;
    for (size_t i = (size_t)blockIdx.x * NORM_THREADS + threadIdx.x; i < n; i += stride) {
        double x = (double)g[i];
        v[0] += x * x; // exact product of two floats in double
    }
    cr_block_sum<1, NORM_THREADS>(v, sh);
    if (threadIdx.x == 0) scratch->partial[blockIdx.x][0] = v[0];
}

__global__ void __launch_bounds__(NORM_THREADS)
norm_finish_kernel(cr_cuda_scratch *scratch, int blocks, double max_norm, double *norm_sum) {
    __shared__ double sh[NORM_THREADS];
    double v[1] = {0.0};
    for (int k = threadIdx.x; k < blocks; k += NORM_THREADS) v[0] += scratch->partial[k][0];
    cr_block_sum<1, NORM_THREADS>(v, sh);
    if (threadIdx.x != 0) return;
    double norm = sqrt(v[0]);
    scratch->clip_coef = max_norm / (norm + 1e-6);
    *norm_sum += norm;
}

// g *= coef when !(coef >= 1): torch multiplies by clamp(coef, max=1), a no-op at 1, and a NaN
// norm makes g NaN.
__global__ void scale_kernel(float *g, size_t n, const cr_cuda_scratch *scratch) {
    double coef = scratch->clip_coef;
    if (coef >= 1.0) return;
    const float c = (float)coef;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        g[i] = __fmul_rn(g[i], c);
}

// Small n (the PPO MLPs have ~9 K parameters): the three launches above in one block - the sum
// of squares in a fixed order, the norm and coefficient by thread 0, then the scaling - since at
// this size each launch costs more than its work.
#define SMALL_THREADS 1024
#define SMALL_N 65536

__global__ void __launch_bounds__(SMALL_THREADS)
clip_small_kernel(float *g, size_t n, double max_norm, cr_cuda_scratch *scratch,
                  double *norm_sum) {
    __shared__ double sh[SMALL_THREADS];
    __shared__ double coef_sh;
    double v[1] = {0.0};
    for (size_t i = threadIdx.x; i < n; i += SMALL_THREADS) {
        double x = (double)g[i];
        v[0] += x * x;
    }
    cr_block_sum<1, SMALL_THREADS>(v, sh);
    if (threadIdx.x == 0) {
        double norm = sqrt(v[0]);
        coef_sh = max_norm / (norm + 1e-6);
        scratch->clip_coef = coef_sh;
        *norm_sum += norm;
    }
    __syncthreads();
    const double coef = coef_sh;
    if (coef >= 1.0) return;
    const float c = (float)coef;
    for (size_t i = threadIdx.x; i < n; i += SMALL_THREADS) g[i] = __fmul_rn(g[i], c);
}

void cr_cuda_clip_grad_norm(cudarl_ctx *ctx, float *g, size_t n, double max_norm,
                            double *norm_sum) {
    if (!n) return; // norm 0: coef >= 1, and adding 0 to the sum changes nothing
    cudaStream_t st = cr_stream(ctx);
    cr_cuda_scratch *scratch = cr_impl(ctx)->scratch;
    if (n <= SMALL_N) {
        clip_small_kernel<<<1, SMALL_THREADS, 0, st>>>(g, n, max_norm, scratch, norm_sum);
        CR_CUDA_LAUNCHED(ctx);
        return;
    }
    size_t want = (n + NORM_THREADS * NORM_PER_THREAD - 1) / (NORM_THREADS * NORM_PER_THREAD);
    int blocks = want > CR_CUDA_MAX_PARTIALS ? CR_CUDA_MAX_PARTIALS : (int)want;
    sum_squares_kernel<<<blocks, NORM_THREADS, 0, st>>>(g, n, scratch);
    CR_CUDA_LAUNCHED(ctx);
    norm_finish_kernel<<<1, NORM_THREADS, 0, st>>>(scratch, blocks, max_norm, norm_sum);
    CR_CUDA_LAUNCHED(ctx);
    scale_kernel<<<cr_cuda_blocks(n, CR_CUDA_THREADS), CR_CUDA_THREADS, 0, st>>>(g, n, scratch);
    CR_CUDA_LAUNCHED(ctx);
}

// *t += 1; the step size and sqrt of the second bias correction for the new t.
__device__ void adam_prepare(int64_t *t, const float *lr, float b1, float b2,
                             cr_cuda_scratch *scratch) {
    int64_t step = *t + 1;
    *t = step;
    cr_adam_bias_terms(step, lr, b1, b2, &scratch->adam_step, &scratch->adam_bc2_sqrt);
}

__global__ void adam_prepare_kernel(int64_t *t, const float *lr, float b1, float b2,
                                    cr_cuda_scratch *scratch) {
    adam_prepare(t, lr, b1, b2, scratch);
}

__global__ void adam_kernel(float *__restrict__ p, const float *__restrict__ g,
                            float *__restrict__ m, float *__restrict__ v, size_t n, int64_t *t,
                            const float *lr, float b1, float b2, float c1, float c2, float eps,
                            cr_cuda_scratch *scratch) {
    cr_adam_block(p, g, m, v, n, t, lr, b1, b2, c1, c2, eps, scratch);
}

void cr_cuda_adam_step(cudarl_ctx *ctx, float *p, const float *g, float *m, float *v, size_t n,
                       const float *lr, float b1, float b2, float eps, int64_t *t) {
    cudaStream_t st = cr_stream(ctx);
    cr_cuda_scratch *scratch = cr_impl(ctx)->scratch;
    if (!n) {
        adam_prepare_kernel<<<1, 1, 0, st>>>(t, lr, b1, b2, scratch);
        CR_CUDA_LAUNCHED(ctx);
        return;
    }
    adam_kernel<<<cr_cuda_blocks(n, CR_CUDA_THREADS), CR_CUDA_THREADS, 0, st>>>(
        p, g, m, v, n, t, lr, b1, b2, 1.0f - b1, 1.0f - b2, eps, scratch);
    CR_CUDA_LAUNCHED(ctx);
}
