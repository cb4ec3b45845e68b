// The clip of continuous actions into their box on the device: cr_cpu_clip_box's comparisons,
// so the two agree bit for bit.
#include "ops/cuda/cuda_common.cuh"

// y (B, K) = min(max(x, lo), hi) per column; the box by value (a kernel parameter, which a
// captured graph keeps).
__global__ void clip_box_kernel(const float *x, cr_action_box box, float *y, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        int k = (int)(i % (size_t)box.K);
        float v = x[i];
        y[i] = v < box.lo[k] ? box.lo[k] : v > box.hi[k] ? box.hi[k] : v;
    }
}

void cr_cuda_clip_box(cudarl_ctx *ctx, const float *x, const cr_action_box *box, float *y,
                      int B) {
    size_t n = (size_t)B * (size_t)box->K;
    if (!n) return;
    clip_box_kernel<<<cr_cuda_blocks(n, CR_CUDA_THREADS), CR_CUDA_THREADS, 0, cr_stream(ctx)>>>(
        x, *box, y, n);
    CR_CUDA_LAUNCHED(ctx);
}
