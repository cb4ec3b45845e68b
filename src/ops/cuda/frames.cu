// Camera frames on the GPU (ops/cuda/frames_cuda.h): the CUDA twin of frame_to_obs and the
// kernel of the frames' device tick. Each output pixel is computed by the CPU reference's
// integer functions of ops/frames.h: one thread per output pixel calls cr_frame_box; where a
// pixel's box is wide (a shrink of 8 or more along x: a 4K frame to 84 x 84 averages boxes of
// 46 x 26 pixels, which one thread would walk alone while most SMs idle) one warp per output
// pixel splits the box's columns over its lanes, each lane summing its columns with
// cr_frame_box_part (a load and an add a source pixel where a gray pixel is one byte: GRAY8,
// NV12, YUYV), and the lanes' integer sums add up exactly to cr_frame_box's. Either way each
// byte is the one cr_cpu_frame_to_obs computes, whatever the format, pitch, crop, size or
// channels.
//
// The tick's kernel (frames_tick_kernel) does a tick's device work before the forward for a
// range of cameras in one launch: a grid of (blocks, cameras), each camera's blocks over its
// output pixels, each pixel's thread (or its warp's lane 0) writing the pixel's value into the
// camera's ring, its batch row and the policy's input row, copying the older frames at that
// position from the ring into both rows, and zeroing that position in the input's padding row of
// the camera, if any.
#include <string.h>

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

// Output pixel (ox, oy) by the 32 lanes of a warp: lane l sums the box's columns j0 + l,
// j0 + l + 32, ... (cr_frame_box_part), and the lanes' sums meet by shuffles; every lane gets
// out[0..channels).
__device__ __forceinline__ void frame_box_warp(const cr_frame_geom *g, const uint8_t *frame,
                                               int ox, int oy, int lane, uint8_t out[3]) {
    uint64_t sum[3] = {0, 0, 0};
    cr_frame_box_part(g, frame, ox, oy, lane, 32, sum);
    for (int c = 0; c < 3; c++)
        for (int off = 16; off > 0; off >>= 1)
            sum[c] += __shfl_xor_sync(0xffffffffu, sum[c], off);
    cr_frame_round(g, sum, out);
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
    for (int c = 0; c < 3; c++)
        if (c < g.channels) out[(size_t)c * plane + i] = v[c];
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

// Camera cam's output pixels from its frame (its pointer in the state) into its ring, its batch
// row and the policy's input row, the older frames beside them, the padding row zeroed (the
// file's comment). Blocks past the camera's own return at once.
template <bool WARP>
__device__ __forceinline__ void frames_tick_camera(const cr_frame_geom *g,
                                                   const cr_frames_tick_state *__restrict__ st,
                                                   int cam, uint8_t *__restrict__ ring,
                                                   uint8_t *__restrict__ brow,
                                                   uint8_t *__restrict__ irow,
                                                   uint8_t *__restrict__ pad, int depth,
                                                   size_t slot) {
    size_t i;
    uint8_t v[3];
    if (!frame_out<WARP>(g, cr_frames_tick_src(st)[cam], &i, v)) return;
    const size_t plane = (size_t)g->out_w * (size_t)g->out_h;
    const int fill = st->fill, newest = st->newest;
#pragma unroll
    for (int c = 0; c < 3; c++) { // constant indices of v: registers
        if (c >= g->channels) break;
        const size_t at = (size_t)c * plane + i;
        const uint8_t x = v[c];
        for (int k = 0; k < depth; k++) {
            uint8_t y = x; // fill: every slot; else the oldest first, this tick's last
            if (fill) ring[(size_t)k * slot + at] = x;
            else if (k < depth - 1) y = ring[(size_t)((newest + 1 + k) % depth) * slot + at];
            brow[(size_t)k * slot + at] = y;
            irow[(size_t)k * slot + at] = y;
            if (pad) pad[(size_t)k * slot + at] = 0;
        }
        if (!fill) ring[(size_t)newest * slot + at] = x; // after its old frame was read
    }
}

__global__ void frames_tick_kernel(const cr_frames_tick_state *__restrict__ st,
                                   const cr_frames_camera *__restrict__ cams, int first,
                                   int count, int num_cameras, int rows, int depth, size_t slot,
                                   uint8_t *__restrict__ rings, uint8_t *__restrict__ batch,
                                   uint8_t *__restrict__ in) {
    __shared__ cr_frames_camera sc;
    const size_t row = (size_t)depth * slot;
    for (int cam = first + (int)blockIdx.y; cam < first + count; cam += (int)gridDim.y) {
        __syncthreads(); // the last camera's description read by every thread
        if (threadIdx.x == 0) sc = cams[cam];
        __syncthreads();
        if (blockIdx.x >= sc.blocks) continue; // the whole block
        const cr_frame_geom g = sc.g;
        uint8_t *ring = rings + (size_t)cam * row, *brow = batch + (size_t)cam * row;
        uint8_t *irow = in + (size_t)cam * row;
        uint8_t *pad = cam < rows - num_cameras ? in + (size_t)(num_cameras + cam) * row : NULL;
        if (sc.by_warp)
            frames_tick_camera<true>(&g, st, cam, ring, brow, irow, pad, depth, slot);
        else
            frames_tick_camera<false>(&g, st, cam, ring, brow, irow, pad, depth, slot);
    }
}

extern "C" void cr_cuda_frames_camera_init(const cr_frame_geom *g, cr_frames_camera *out) {
    memset(out, 0, sizeof *out);
    out->g = *g;
    out->by_warp = frame_by_warp(g);
    out->blocks = frame_blocks(g);
}

extern "C" void cr_cuda_frames_tick(cudarl_ctx *ctx, const cr_frames_tick_state *state,
                                    const cr_frames_camera *cams, unsigned max_blocks, int first,
                                    int count, int num_cameras, int rows, int depth,
                                    size_t slot, uint8_t *rings, uint8_t *batch, uint8_t *in) {
    const dim3 grid(max_blocks, (unsigned)(count < 65535 ? count : 65535));
    frames_tick_kernel<<<grid, FRAME_THREADS, 0, cr_stream(ctx)>>>(
        state, cams, first, count, num_cameras, rows, depth, slot, rings, batch, in);
    CR_CUDA_LAUNCHED(ctx);
}
