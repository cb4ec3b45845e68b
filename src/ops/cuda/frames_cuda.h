/* The CUDA twin of frame_to_obs (ops/frames.h) and the kernel of the frames' device tick
 * (runtime/frames_cuda.cu): one thread per output pixel calling cr_frame_box, the CPU
 * reference's own integer arithmetic, or where the crop is 8 or more times wider than the output
 * one warp per output pixel, its lanes summing columns with cr_frame_box_part, their exact
 * integer sums adding up to cr_frame_box's; every byte equals cr_cpu_frame_to_obs's. Every
 * function enqueues on ctx's stream and allocates nothing: capturable into a CUDA graph.
 * (ops/cuda/frames.cu) */
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

/* One camera as the tick's kernel reads it (device memory, written at create): its geometry,
 * whether a warp computes each output pixel, and its blocks of the kernel's grid. */
typedef struct cr_frames_camera {
    cr_frame_geom g;
    int32_t by_warp;
    uint32_t blocks;
} cr_frames_camera;

/* *out for camera geometry g (host). */
void cr_cuda_frames_camera_init(const cr_frame_geom *g, cr_frames_camera *out);

/* A tick's device work before the forward for cameras first..first+count-1 of num_cameras, one
 * kernel launch (the tick launches it once for every camera, or, where frames are uploaded, for
 * all but the last camera under the last camera's copy and then for the last): camera i's frame
 * (cr_frames_tick_src(state)[i]) through frame_to_obs's arithmetic into its ring (depth, slot)
 * at slot newest and, with the older frames from the ring (oldest first), into its row of the
 * batch and of the policy's input `in` (each (num_cameras, depth, slot)); with fill, into every
 * slot of the three. The input's rows num_cameras..rows-1 are zeroed (rows < 2 num_cameras).
 * max_blocks: the largest cams[i].blocks. state, cams, rings, batch: device; in: device or
 * mapped host memory. */
void cr_cuda_frames_tick(cudarl_ctx *ctx, const cr_frames_tick_state *state,
                         const cr_frames_camera *cams, unsigned max_blocks, int first, int count,
                         int num_cameras, int rows, int depth, size_t slot, uint8_t *rings,
                         uint8_t *batch, uint8_t *in);

#ifdef __cplusplus
}
#endif
#endif
