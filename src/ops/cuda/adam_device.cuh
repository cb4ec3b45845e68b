// One Adam step over a grid, the body of optim.cu's adam_kernel and of loss_scale.cu's
// adam_if_kernel (which first checks the loss scaler's found_inf), so the two cannot drift:
//   m = b1 m + c1 g;  v = b2 v + c2 g^2;  p -= step * m / (sqrt(v) / bc2_sqrt + eps)
// in the CPU's roundings (src/ops/cpu/adam.c: _rn intrinsics, no FMA), so m and v match it bit
// for bit. Each block's thread 0 computes lr / (1 - b1^t) and sqrt(1 - b2^t) for t = *t + 1 in
// double, as the CPU; the last block to finish (a ticket in the scratch) stores t + 1: every
// block has read *t before any block can be last, so all see the same t.
#ifndef CUDARL_ADAM_DEVICE_CUH
#define CUDARL_ADAM_DEVICE_CUH

#include "ops/cuda/cuda_common.cuh"

// Adam's bias-corrected step size lr / (1 - b1^t) and sqrt(1 - b2^t) at step t, in double and
// rounded once to float, as the CPU computes them (src/ops/cpu/adam.c): the one place the CUDA
// twins compute them (cr_adam_block, optim.cu's adam_prepare, loss_scale.cu's skip-aware one).
__device__ __forceinline__ void cr_adam_bias_terms(int64_t t, const float *lr, float b1, float b2,
                                                   float *step, float *bc2_sqrt) {
    double bc1 = 1.0 - pow((double)b1, (double)t), bc2 = 1.0 - pow((double)b2, (double)t);
    *step = (float)((double)*lr / bc1);
    *bc2_sqrt = (float)sqrt(bc2);
}

__device__ __forceinline__ void cr_adam_block(float *__restrict__ p, const float *__restrict__ g,
                                              float *__restrict__ m, float *__restrict__ v,
                                              size_t n, int64_t *t, const float *lr, float b1,
                                              float b2, float c1, float c2, float eps,
                                              cr_cuda_scratch *scratch) {
    __shared__ float step_sh, bc2_sqrt_sh;
    __shared__ int64_t t_sh;
    if (threadIdx.x == 0) {
        int64_t next = *t + 1;
        cr_adam_bias_terms(next, lr, b1, b2, &step_sh, &bc2_sqrt_sh);
        t_sh = next;
    }
    __syncthreads();
    const float step = step_sh, bc2_sqrt = bc2_sqrt_sh;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float gi = g[i];
        float mi = __fadd_rn(__fmul_rn(b1, m[i]), __fmul_rn(c1, gi));
        float vi = __fadd_rn(__fmul_rn(b2, v[i]), __fmul_rn(c2, __fmul_rn(gi, gi)));
        m[i] = mi;
        v[i] = vi;
        float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), bc2_sqrt), eps);
        p[i] = __fsub_rn(p[i], __fmul_rn(step, __fdiv_rn(mi, denom)));
    }
    if (threadIdx.x == 0) {
        unsigned ticket = atomicAdd(&scratch->adam_blocks_done, 1u);
        if (ticket == gridDim.x - 1) { // every block has read *t
            *t = t_sh;
            scratch->adam_step = step_sh, scratch->adam_bc2_sqrt = bc2_sqrt_sh;
            scratch->adam_blocks_done = 0;
        }
    }
}

#endif
