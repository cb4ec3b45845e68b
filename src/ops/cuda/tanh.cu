// tanh backward on the device: dx = dy * (1 - y^2), the CPU's roundings (no FMA), so the two
// agree bit for bit. The forward tanh runs fused into the linear layer's epilogue (linear.cu).
#include "ops/cuda/cuda_common.cuh"

// dx (n) = dy * (1 - y * y); dx may alias dy.
__global__ void tanh_backward_kernel(const float *y, const float *dy, float *dx, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float yi = y[i];
        dx[i] = __fmul_rn(dy[i], __fsub_rn(1.0f, __fmul_rn(yi, yi)));
    }
}

void cr_cuda_tanh_backward(cudarl_ctx *ctx, const float *y, const float *dy, float *dx,
                           size_t n) {
    if (!n) return;
    tanh_backward_kernel<<<cr_cuda_blocks(n, CR_CUDA_THREADS), CR_CUDA_THREADS, 0,
                           cr_stream(ctx)>>>(y, dy, dx, n);
    CR_CUDA_LAUNCHED(ctx);
}
