// The sums behind explained variance (twin of src/ops/cpu/value_stats.c): one block, a fixed
// reduction order, so the result does not depend on scheduling (no float atomics).
#include <cuda_runtime.h>

#include "ops/cuda/value_stats.h"

#define VS_THREADS 512

__global__ void value_stats_kernel(const float *values, const float *returns, int n, double *out) {
    __shared__ double sh[4][VS_THREADS];
    double sy = 0, syy = 0, sd = 0, sdd = 0;
    for (int i = threadIdx.x; i < n; i += VS_THREADS) {
        double y = returns[i], d = (double)returns[i] - (double)values[i];
        sy += y, syy += y * y, sd += d, sdd += d * d;
    }
    sh[0][threadIdx.x] = sy, sh[1][threadIdx.x] = syy, sh[2][threadIdx.x] = sd;
    sh[3][threadIdx.x] = sdd;
    __syncthreads();
    for (int stride = VS_THREADS / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride)
            for (int k = 0; k < 4; k++) sh[k][threadIdx.x] += sh[k][threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        out[0] += n;
        for (int k = 0; k < 4; k++) out[k + 1] += sh[k][0];
    }
}

extern "C" void cr_cuda_value_stats(const float *values, const float *returns, int n, double *out,
                                    void *stream) {
    value_stats_kernel<<<1, VS_THREADS, 0, (cudaStream_t)stream>>>(values, returns, n, out);
}
