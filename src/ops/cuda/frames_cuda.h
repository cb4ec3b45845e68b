/* The CUDA twin of frame_to_obs (ops/frames.h) and the kernels of the frames' device tick
 * (runtime/frames_cuda.cu): one thread per output pixel calling cr_frame_box, the CPU
 * reference's own integer arithmetic, or where the crop is 8 or more times wider than the output
 * one warp per output pixel over the same functions, its lanes' exact integer sums adding up to
 * cr_frame_box's; every byte equals cr_cpu_frame_to_obs's. Every function enqueues on ctx's
 * stream and allocates nothing: capturable into a CUDA graph. (ops/cuda/frames.cu) */
#ifndef CUDARL_OPS_CUDA_FRAMES_CUDA_H
#define CUDARL_OPS_CUDA_FRAMES_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "ops/frames.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cudarl_ctx cudarl_ctx;

/* The op table's frame_to_obs: frame (device, or mapped host memory; cr_frame_bytes(g)) into out
 * (device, uint8 (g->channels, g->out_h, g->out_w), planar). g: host, read at the call. */
void cr_cuda_frame_to_obs(cudarl_ctx *ctx, const cr_frame_geom *g, const uint8_t *frame,
                          uint8_t *out);

/* What a tick's kernels read on the device, written by the host before each launch: where the
 * ring's newest frame goes and whether the tick fills whole stacks, then the cameras' frame
 * pointers (cr_frames_tick_src). */
typedef struct cr_frames_tick_state {
    int32_t newest; /* the ring slot of this tick's frame, 0..depth-1 */
    int32_t fill;   /* 1: every slot of every stack takes this tick's frame (create, reset) */
    int32_t pad[2];
} cr_frames_tick_state;

/* The frame pointers after the state (device pointers: a camera's staging, its device frame, or
 * the mapped address of its host frame). */
CR_HD static inline const uint8_t *const *cr_frames_tick_src(const cr_frames_tick_state *s) {
    return (const uint8_t *const *)(const void *)(s + 1);
}

/* The old frames of every camera into its batch row, oldest first: batch (num_cameras, depth,
 * slot) slots 0..depth-2 = rings (num_cameras, depth, slot) slots newest+1, ..., newest+depth-1
 * (mod depth). Nothing when the state says fill. state (device). */
void cr_cuda_frames_shift(cudarl_ctx *ctx, const cr_frames_tick_state *state,
                          const uint8_t *rings, uint8_t *batch, int num_cameras, int depth,
                          size_t slot);

/* Camera `cam`'s frame (its pointer in the state) through frame_to_obs's arithmetic into its
 * ring (depth, slot) at slot newest and its batch row (depth, slot) at slot depth-1; with fill,
 * into every slot of both. g: host, read at the call; state, ring, row: device. */
void cr_cuda_frames_stack(cudarl_ctx *ctx, const cr_frame_geom *g,
                          const cr_frames_tick_state *state, int cam, uint8_t *ring, uint8_t *row,
                          int depth, size_t slot);

/* in[j] = j < used ? batch[j] : 0 for j < total: the batch and the zero rows past it in the
 * policy's graph input. batch, in: device (or in: mapped host memory). */
void cr_cuda_frames_pack(cudarl_ctx *ctx, const uint8_t *batch, uint8_t *in, size_t used,
                         size_t total);

#ifdef __cplusplus
}
#endif
#endif
