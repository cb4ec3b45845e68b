// Bootstrap values and generalised advantage estimation on the device, bit for bit the CPU's
// (src/ops/cpu/bootstrap.c, gae.c): the masks select rather than multiply, and every product and
// sum is a _rn intrinsic so nvcc cannot fuse one into an FMA the CPU does not do.
#include "ops/cuda/cuda_common.cuh"

// next_values[t, n] = done ? final_values : (t < T-1 ? values[t+1, n] : last_values[n]).
__global__ void bootstrap_values_kernel(const float *__restrict__ values,
                                        const float *__restrict__ final_values,
                                        const float *__restrict__ last_values,
                                        const uint8_t *__restrict__ done,
                                        float *__restrict__ next_values, int T, int N) {
    size_t n_all = (size_t)T * N, stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n_all; i += stride) {
        size_t t = i / (size_t)N, n = i - t * N;
        float following = t + 1 < (size_t)T ? values[i + N] : last_values[n];
        next_values[i] = done[i] ? final_values[i] : following;
    }
}

// One thread per env n walks t = T-1 .. 0, carrying A_{t+1} in a register:
//   A_t = (r_t + [!term_t] gamma nv_t - v_t) + [!done_t and t < T-1] gamma lambda A_{t+1}
__global__ void gae_kernel(const float *__restrict__ rewards, const float *__restrict__ values,
                           const float *__restrict__ next_values,
                           const uint8_t *__restrict__ terminated,
                           const uint8_t *__restrict__ done, float gamma, float gl,
                           float *__restrict__ adv, float *__restrict__ returns, int T, int N) {
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n >= N) return;
    float next = 0.0f;
    for (int t = T - 1; t >= 0; t--) {
        size_t i = (size_t)t * N + n;
        float v = values[i];
        float boot = terminated[i] ? 0.0f : __fmul_rn(gamma, next_values[i]);
        float carry = t + 1 < T && !done[i] ? __fmul_rn(gl, next) : 0.0f;
        float a = __fadd_rn(__fsub_rn(__fadd_rn(rewards[i], boot), v), carry);
        adv[i] = a;
        returns[i] = __fadd_rn(a, v);
        next = a;
    }
}

void cr_cuda_bootstrap_values(cudarl_ctx *ctx, const float *values, const float *final_values,
                              const float *last_values, const uint8_t *done, float *next_values,
                              int T, int N) {
    if (T <= 0 || N <= 0) return;
    bootstrap_values_kernel<<<cr_cuda_blocks((size_t)T * N, CR_CUDA_THREADS), CR_CUDA_THREADS,
                              0, cr_stream(ctx)>>>(values, final_values, last_values, done,
                                                   next_values, T, N);
    CR_CUDA_LAUNCHED(ctx);
}

void cr_cuda_gae(cudarl_ctx *ctx, const float *rewards, const float *values,
                 const float *next_values, const uint8_t *terminated, const uint8_t *done,
                 float gamma, float lambda, float *adv, float *returns, int T, int N) {
    if (T <= 0 || N <= 0) return;
    const float gl = gamma * lambda; // in float, as the CPU
    gae_kernel<<<(N + CR_CUDA_THREADS - 1) / CR_CUDA_THREADS, CR_CUDA_THREADS, 0,
                 cr_stream(ctx)>>>(rewards, values, next_values, terminated, done, gamma, gl, adv,
                                   returns, T, N);
    CR_CUDA_LAUNCHED(ctx);
}
