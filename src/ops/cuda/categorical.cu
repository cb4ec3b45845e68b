// Categorical sampling and argmax over logits on the device: one thread per row, the CPU's
// loops (src/ops/cpu/categorical.c) as they are. Rows are short (A = 2 for CartPole, 18 at most
// for Atari), so a thread walking its row beats a warp-wide reduction at these sizes.
#include "ops/cuda/cuda_common.cuh"
#include "ops/cuda/categorical_device.cuh"

// action[b] ~ softmax(logits[b]) by inverse CDF with u[b], and its log-probability.
__global__ void categorical_sample_kernel(const float *__restrict__ logits,
                                          const float *__restrict__ u, int32_t *action,
                                          float *logp, int B, int A) {
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= B) return;
    action[b] = cr_row_sample(logits + (size_t)b * A, A, u[b], &logp[b]);
}

// action[b] = index of the largest logit of row b, the first on ties.
__global__ void categorical_argmax_kernel(const float *__restrict__ logits, int32_t *action,
                                          int B, int A) {
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= B) return;
    const float *l = logits + (size_t)b * A;
    int best = 0;
    for (int j = 1; j < A; j++)
        if (l[j] > l[best]) best = j;
    action[b] = best;
}

static unsigned row_blocks(int B) { return (unsigned)((B + CR_CUDA_THREADS - 1) / CR_CUDA_THREADS); }

void cr_cuda_categorical_sample(cudarl_ctx *ctx, const float *logits, const float *u,
                                int32_t *action, float *logp, int B, int A) {
    if (B <= 0) return;
    categorical_sample_kernel<<<row_blocks(B), CR_CUDA_THREADS, 0, cr_stream(ctx)>>>(
        logits, u, action, logp, B, A);
    CR_CUDA_LAUNCHED(ctx);
}

void cr_cuda_categorical_argmax(cudarl_ctx *ctx, const float *logits, int32_t *action, int B,
                                int A) {
    if (B <= 0) return;
    categorical_argmax_kernel<<<row_blocks(B), CR_CUDA_THREADS, 0, cr_stream(ctx)>>>(
        logits, action, B, A);
    CR_CUDA_LAUNCHED(ctx);
}
