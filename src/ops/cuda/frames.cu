// Camera frames on the GPU (ops/cuda/frames_cuda.h): the CUDA twin of frame_to_obs and the
// kernels of the frames' device tick. Each output pixel is computed by the CPU reference's
// integer functions of ops/frames.h: one thread per output pixel calls cr_frame_box; where a
// pixel's box is wide (a shrink of 8 or more along x: a 4K frame to 84 x 84 averages boxes of
// 46 x 26 pixels, which one thread would walk alone while most SMs idle) one warp per output
// pixel splits the box's columns over its lanes, each lane calling the same cr_frame_span,
// cr_frame_weight and cr_frame_pixel, and the lanes' integer sums add up exactly to
// cr_frame_box's. Either way each byte is the one cr_cpu_frame_to_obs computes, whatever the
// format, pitch, crop, size or channels.
#include "ops/cuda/cuda_common.cuh"
#include "ops/cuda/frames_cuda.h"

#define FRAME_THREADS 128 // an 84 x 84 image is 56 blocks of single threads: spread over the SMs
#define FRAME_WARP_SHRINK 8 // crop_w >= this x out_w: a warp per output pixel

static bool frame_by_warp(const cr_frame_geom *g) {
    return (int64_t)g->crop_w >= (int64_t)FRAME_WARP_SHRINK * g->out_w;
}

// Blocks of FRAME_THREADS for every output pixel of g, a thread or a warp each.
static unsigned frame_blocks(const cr_frame_geom *g) {
    // pixels <= 2^30 (CUDARL_FRAME_MAX_SIDE^2); by warp out_w <= 2^12, so threads <= 2^32
    const size_t n = (size_t)g->out_w * (size_t)g->out_h * (frame_by_warp(g) ? 32u : 1u);
    return (unsigned)((n + FRAME_THREADS - 1) / FRAME_THREADS);
}

// cr_frame_box of output pixel (ox, oy) by the 32 lanes of a warp: lane l takes columns j0 + l,
// j0 + l + 32, ... of every row of the box, sums wy(i) wx(j) v(i, j) (integers), and the lanes'
// sums meet by shuffles; every lane gets out[0..channels).
__device__ void frame_box_warp(const cr_frame_geom *g, const uint8_t *frame, int ox, int oy,
                               int lane, uint8_t out[3]) {
    int i0, ni, j0, nj;
    cr_frame_span(ox, g->out_w, g->crop_w, &j0, &nj);
    cr_frame_span(oy, g->out_h, g->crop_h, &i0, &ni);
    uint64_t sum[3] = {0, 0, 0};
    for (int i = i0; i < i0 + ni; i++) {
        const uint32_t wy = cr_frame_weight(oy, g->out_h, g->crop_h, i);
        uint32_t row[3] = {0, 0, 0};
        for (int j = j0 + lane; j < j0 + nj; j += 32) {
            const uint32_t wx = cr_frame_weight(ox, g->out_w, g->crop_w, j);
            int v[3] = {0, 0, 0};
            cr_frame_pixel(g, frame, g->crop_x + j, g->crop_y + i, v);
            for (int c = 0; c < g->channels; c++) row[c] += wx * (uint32_t)v[c];
        }
        for (int c = 0; c < g->channels; c++) sum[c] += (uint64_t)wy * row[c];
    }
    for (int c = 0; c < 3; c++)
        for (int off = 16; off > 0; off >>= 1)
            sum[c] += __shfl_xor_sync(0xffffffffu, sum[c], off);
    const uint64_t area = (uint64_t)g->crop_w * (uint64_t)g->crop_h;
    for (int c = 0; c < g->channels; c++) out[c] = (uint8_t)((sum[c] + area / 2) / area);
}

// This thread's output pixel of g (row-major) into *pixel and its values into v; whether the
// thread writes it (by warp: lane 0). Every lane of a warp returns the same but for the write.
template <bool WARP>
__device__ __forceinline__ bool frame_out(const cr_frame_geom *g, const uint8_t *frame,
                                          size_t *pixel, uint8_t v[3]) {
    const size_t plane = (size_t)g->out_w * (size_t)g->out_h;
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x, i = WARP ? t / 32 : t;
    if (i >= plane) return false; // a whole warp at once (FRAME_THREADS is a multiple of 32)
    const int oy = (int)(i / (size_t)g->out_w), ox = (int)(i - (size_t)oy * (size_t)g->out_w);
    *pixel = i;
    if (!WARP) {
        cr_frame_box(g, frame, ox, oy, v);
        return true;
    }
    frame_box_warp(g, frame, ox, oy, (int)(t & 31), v);
    return (t & 31) == 0;
}

// Output pixel i of g from frame into out (channels, out_h, out_w).
template <bool WARP>
__global__ void frame_to_obs_kernel(cr_frame_geom g, const uint8_t *__restrict__ frame,
                                    uint8_t *__restrict__ out) {
    size_t i;
    uint8_t v[3];
    if (!frame_out<WARP>(&g, frame, &i, v)) return;
    const size_t plane = (size_t)g.out_w * (size_t)g.out_h;
    for (int c = 0; c < g.channels; c++) out[(size_t)c * plane + i] = v[c];
}

extern "C" void cr_cuda_frame_to_obs(cudarl_ctx *ctx, const cr_frame_geom *g, const uint8_t *frame,
                                     uint8_t *out) {
    if (frame_by_warp(g))
        frame_to_obs_kernel<true><<<frame_blocks(g), FRAME_THREADS, 0, cr_stream(ctx)>>>(
            *g, frame, out);
    else
        frame_to_obs_kernel<false><<<frame_blocks(g), FRAME_THREADS, 0, cr_stream(ctx)>>>(
            *g, frame, out);
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
template <bool WARP>
__global__ void frames_stack_kernel(cr_frame_geom g, const cr_frames_tick_state *__restrict__ st,
                                    int cam, uint8_t *__restrict__ ring,
                                    uint8_t *__restrict__ row, int depth, size_t slot) {
    size_t i;
    uint8_t v[3];
    if (!frame_out<WARP>(&g, cr_frames_tick_src(st)[cam], &i, v)) return;
    const size_t plane = (size_t)g.out_w * (size_t)g.out_h;
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
    if (frame_by_warp(g))
        frames_stack_kernel<true><<<frame_blocks(g), FRAME_THREADS, 0, cr_stream(ctx)>>>(
            *g, state, cam, ring, row, depth, slot);
    else
        frames_stack_kernel<false><<<frame_blocks(g), FRAME_THREADS, 0, cr_stream(ctx)>>>(
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
