// The sums behind explained variance (twin of src/ops/cpu/value_stats.c) over many blocks: each
// block sums its grid-stride slice in double into the context's partials, and one block adds the
// partials in a fixed order (the block count is a function of n), so the result does not depend
// on scheduling and no float atomics are used. (One block walking all of a 1M-row rollout costs a
// good part of the fused rollout's own time: bench/RESULTS.md, GPU PPO.)
#include "ops/cuda/cuda_common.cuh"

#define VS_THREADS 256
#define VS_PER_THREAD 8 // elements a thread aims at before another block is added

__global__ void __launch_bounds__(VS_THREADS)
value_stats_partial_kernel(const float *__restrict__ values, const float *__restrict__ returns,
                           int n, cr_cuda_scratch *scratch) {
    __shared__ double sh[4 * VS_THREADS];
    double v[4] = {0.0, 0.0, 0.0, 0.0};
    for (int i = blockIdx.x * VS_THREADS + threadIdx.x; i < n; i += gridDim.x * VS_THREADS) {
        double y = returns[i], d = (double)returns[i] - (double)values[i];
        v[0] += y, v[1] += y * y, v[2] += d, v[3] += d * d;
    }
    cr_block_sum<4, VS_THREADS>(v, sh);
    if (threadIdx.x == 0)
        for (int k = 0; k < 4; k++) scratch->partial[blockIdx.x][k] = v[k];
}

__global__ void __launch_bounds__(VS_THREADS)
value_stats_finish_kernel(const cr_cuda_scratch *scratch, int blocks, int n, double *out) {
    __shared__ double sh[4 * VS_THREADS];
    double v[4] = {0.0, 0.0, 0.0, 0.0};
    for (int b = threadIdx.x; b < blocks; b += VS_THREADS)
        for (int k = 0; k < 4; k++) v[k] += scratch->partial[b][k];
    cr_block_sum<4, VS_THREADS>(v, sh);
    if (threadIdx.x == 0) {
        out[0] += n;
        for (int k = 0; k < 4; k++) out[k + 1] += v[k];
    }
}

void cr_cuda_value_stats(cudarl_ctx *ctx, const float *values, const float *returns, int n,
                         double *out) {
    if (n <= 0) return;
    cudaStream_t st = cr_stream(ctx);
    cr_cuda_scratch *scratch = cr_impl(ctx)->scratch;
    int blocks = (n + VS_THREADS * VS_PER_THREAD - 1) / (VS_THREADS * VS_PER_THREAD);
    if (blocks > CR_CUDA_MAX_PARTIALS) blocks = CR_CUDA_MAX_PARTIALS;
    value_stats_partial_kernel<<<blocks, VS_THREADS, 0, st>>>(values, returns, n, scratch);
    CR_CUDA_LAUNCHED(ctx);
    value_stats_finish_kernel<<<1, VS_THREADS, 0, st>>>(scratch, blocks, n, out);
    CR_CUDA_LAUNCHED(ctx);
}
