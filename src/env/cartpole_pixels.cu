// CartPolePixels-v1's renderer on the GPU: one block per frame, its threads striding over the
// frame's pixels, each pixel from cr_cartpole_pixels_shade of cartpole_pixels_render.h, the
// function the CPU renderer (cartpole_pixels.c) calls. That function is integer arithmetic after
// two exact conversions (see its header), so the bytes match the CPU's whatever -fmad says.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "env/cartpole_pixels.h"

#define RENDER_THREADS 256

// A failed CUDA call is a bug here: print the call, the error, file:line, and abort.
#define CUDA_CHECK(expr)                                                              \
    do {                                                                              \
        cudaError_t cuda_check_e_ = (expr);                                           \
        if (cuda_check_e_ != cudaSuccess)                                             \
            cuda_check_fail(#expr, cuda_check_e_, __FILE__, __LINE__);                \
    } while (0)

static void cuda_check_fail(const char *expr, cudaError_t e, const char *file, int line) {
    fprintf(stderr, "cudarl: CUDA error at %s:%d: %s: %s (%s)\n", file, line, expr,
            cudaGetErrorString(e), cudaGetErrorName(e));
    fflush(stderr);
    abort();
}

static int sync_debug(void) {
    static int on = -1;
    if (on < 0) {
        const char *v = getenv("CUDARL_SYNC_DEBUG");
        on = v && v[0] == '1';
    }
    return on;
}

// Frame blockIdx.x: frames (N, 84, 84) of states (N, 4); x and theta read once per thread.
__global__ void cartpole_pixels_render_kernel(const double *state, uint8_t *frames) {
    size_t f = blockIdx.x;
    cr_cartpole_pixels_pose pose = cr_cartpole_pixels_pose_of(state[f * 4 + 0], state[f * 4 + 2]);
    uint8_t *frame = frames + f * CR_CARTPOLE_PIXELS_FRAME_BYTES;
    for (int i = threadIdx.x; i < CR_CARTPOLE_PIXELS_FRAME_BYTES; i += blockDim.x)
        frame[i] = cr_cartpole_pixels_shade(&pose, i / CR_CARTPOLE_PIXELS_SIDE,
                                            i % CR_CARTPOLE_PIXELS_SIDE);
}

extern "C" void cr_cartpole_pixels_cuda_render(const double *state, uint8_t *frames, int N,
                                               void *stream) {
    if (N < 0) { // a bug in the caller, as a failed launch would be
        fprintf(stderr, "cudarl: cr_cartpole_pixels_cuda_render: N = %d frames\n", N);
        abort();
    }
    if (N == 0) return;
    cudaStream_t st = (cudaStream_t)stream;
    cartpole_pixels_render_kernel<<<(unsigned)N, RENDER_THREADS, 0, st>>>(state, frames);
    CUDA_CHECK(cudaGetLastError());
    if (sync_debug()) CUDA_CHECK(cudaStreamSynchronize(st));
}
