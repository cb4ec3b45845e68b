// Camera frames on the GPU (ops/cuda/frames_cuda.h): the CUDA twin of frame_to_obs and the
// kernels of the frames' device tick. One thread per output pixel calls cr_frame_box
// (ops/frames.h), the CPU reference's integer conversion and exact area average, so each byte is
// the one cr_cpu_frame_to_obs computes, whatever the format, pitch, crop, size or channels.
#include "ops/cuda/cuda_common.cuh"
#include "ops/cuda/frames_cuda.h"

#define FRAME_THREADS 128 // an 84 x 84 image is 56 blocks: spread over the SMs

static unsigned frame_blocks(const cr_frame_geom *g) {
    const size_t n = (size_t)g->out_w * (size_t)g->out_h; // <= 2^30 (CUDARL_FRAME_MAX_SIDE^2)
    return (unsigned)((n + FRAME_THREADS - 1) / FRAME_THREADS);
}

// Output pixel i of g (row-major) from frame into out (channels, out_h, out_w).
__global__ void frame_to_obs_kernel(cr_frame_geom g, const uint8_t *__restrict__ frame,
                                    uint8_t *__restrict__ out) {
    const size_t plane = (size_t)g.out_w * (size_t)g.out_h;
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= plane) return;
    const int oy = (int)(i / (size_t)g.out_w), ox = (int)(i - (size_t)oy * (size_t)g.out_w);
    uint8_t v[3];
    cr_frame_box(&g, frame, ox, oy, v);
    for (int c = 0; c < g.channels; c++) out[(size_t)c * plane + i] = v[c];
}

extern "C" void cr_cuda_frame_to_obs(cudarl_ctx *ctx, const cr_frame_geom *g, const uint8_t *frame,
                                     uint8_t *out) {
    frame_to_obs_kernel<<<frame_blocks(g), FRAME_THREADS, 0, cr_stream(ctx)>>>(*g, frame, out);
    CR_CUDA_LAUNCHED(ctx);
}

// Element i of the old frames (num_cameras, depth-1, slot) from the rings into the batch.
__global__ void frames_shift_kernel(const cr_frames_tick_state *__restrict__ st,
                                    const uint8_t *__restrict__ rings, uint8_t *__restrict__ batch,
                                    size_t n, int depth, size_t slot) {
    if (st->fill) return;
    const int newest = st->newest;
    const size_t old = (size_t)(depth - 1) * slot, step = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        const size_t cam = i / old, r = i - cam * old, k = r / slot, p = r - k * slot;
        const size_t from = (size_t)((newest + 1 + (int)k) % depth);
        batch[(cam * depth + k) * slot + p] = rings[(cam * depth + from) * slot + p];
    }
}

extern "C" void cr_cuda_frames_shift(cudarl_ctx *ctx, const cr_frames_tick_state *state,
                                     const uint8_t *rings, uint8_t *batch, int num_cameras,
                                     int depth, size_t slot) {
    const size_t n = (size_t)num_cameras * (size_t)(depth - 1) * slot;
    if (n == 0) return; // a stack of one frame has no old frames
    frames_shift_kernel<<<cr_cuda_blocks(n, CR_CUDA_THREADS), CR_CUDA_THREADS, 0,
                          cr_stream(ctx)>>>(state, rings, batch, n, depth, slot);
    CR_CUDA_LAUNCHED(ctx);
}

// Output pixel i of camera cam's frame into its ring and batch row.
__global__ void frames_stack_kernel(cr_frame_geom g, const cr_frames_tick_state *__restrict__ st,
                                    int cam, uint8_t *__restrict__ ring,
                                    uint8_t *__restrict__ row, int depth, size_t slot) {
    const size_t plane = (size_t)g.out_w * (size_t)g.out_h;
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= plane) return;
    const int oy = (int)(i / (size_t)g.out_w), ox = (int)(i - (size_t)oy * (size_t)g.out_w);
    uint8_t v[3];
    cr_frame_box(&g, cr_frames_tick_src(st)[cam], ox, oy, v);
    const int fill = st->fill;
    const size_t newest = (size_t)st->newest, last = (size_t)(depth - 1);
    for (int c = 0; c < g.channels; c++) {
        const size_t at = (size_t)c * plane + i;
        if (fill) {
            for (int k = 0; k < depth; k++) ring[(size_t)k * slot + at] = v[c];
            for (int k = 0; k < depth; k++) row[(size_t)k * slot + at] = v[c];
        } else {
            ring[newest * slot + at] = v[c];
            row[last * slot + at] = v[c];
        }
    }
}

extern "C" void cr_cuda_frames_stack(cudarl_ctx *ctx, const cr_frame_geom *g,
                                     const cr_frames_tick_state *state, int cam, uint8_t *ring,
                                     uint8_t *row, int depth, size_t slot) {
    frames_stack_kernel<<<frame_blocks(g), FRAME_THREADS, 0, cr_stream(ctx)>>>(
        *g, state, cam, ring, row, depth, slot);
    CR_CUDA_LAUNCHED(ctx);
}

__global__ void frames_pack_kernel(const uint8_t *__restrict__ batch, uint8_t *__restrict__ in,
                                   size_t used, size_t total) {
    const size_t step = (size_t)gridDim.x * blockDim.x;
    for (size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x; j < total; j += step)
        in[j] = j < used ? batch[j] : 0;
}

extern "C" void cr_cuda_frames_pack(cudarl_ctx *ctx, const uint8_t *batch, uint8_t *in,
                                    size_t used, size_t total) {
    if (total == 0) return;
    frames_pack_kernel<<<cr_cuda_blocks(total, CR_CUDA_THREADS), CR_CUDA_THREADS, 0,
                         cr_stream(ctx)>>>(batch, in, used, total);
    CR_CUDA_LAUNCHED(ctx);
}
