/* The CUDA twins of the built-in image envs (the registry's CR_ENV_IMAGE_TWIN), behind one
 * interface for the trainers: MinAtar's five games (minatar_cuda.h) and CartPolePixels-v1
 * (cartpole_pixels.h's twin). Each steps N envs on the device as a cr_env_pool of the env's def
 * steps them on CPU threads (the same observation bytes, rewards, flags and final observations
 * for the same seed and actions), so a trainer may put its envs on either side. Every call is
 * queued on the context's stream, allocates nothing and can be captured in a CUDA graph. Declared
 * in every build; without the CUDA backend, bytes and init refuse with a message (no context
 * can be a CUDA one there, so nothing else is reached). */
#ifndef CUDARL_IMAGE_TWIN_H
#define CUDARL_IMAGE_TWIN_H

#include <stddef.h>
#include <stdint.h>

#include "cudarl.h"
#include "env/cartpole_pixels/cartpole_pixels.h"
#include "env/minatar/minatar_cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cr_image_twin {
    int kind;                   /* 1: a MinAtar game, 2: CartPolePixels-v1 */
    int num_envs;
    int64_t first;              /* env i is seeded as env first + i (0 from init; a data-parallel
                                 * rank's share of the job's envs, as the pool's first_env) */
    size_t bytes;               /* of its device state, for checkpoints */
    void *mem;                  /* its device state (the caller's block) */
    cr_minatar_cuda minatar;
    cr_cartpole_pixels_cuda pixels;
} cr_image_twin;

/* Device bytes for n envs of `id`; INVALID_ARG (with a message) without a twin or for n < 1. */
cudarl_status cr_image_twin_bytes(const char *id, int n, size_t *bytes);
/* Points twin at mem (cr_image_twin_bytes, 64-byte aligned device memory); the same errors. */
cudarl_status cr_image_twin_init(cr_image_twin *twin, const char *id, int n, void *mem);
/* Seeds env i with (seed, first + i) and starts its first episode; obs (N, C, H, W) (device). */
void cr_image_twin_reset(cudarl_ctx *ctx, const cr_image_twin *twin, uint64_t seed,
                         uint8_t *obs);
/* One step of every env (all device): cr_env_pool_step's outputs plus done = terminated |
 * truncated; final_obs rows only for the envs that ended. */
void cr_image_twin_step(cudarl_ctx *ctx, const cr_image_twin *twin, const int32_t *actions,
                        uint8_t *obs, float *reward, uint8_t *terminated, uint8_t *truncated,
                        uint8_t *done, uint8_t *final_obs);
/* Whether an episode of the env can be truncated (a time limit): MinAtar's cannot. */
int cr_image_twin_truncates(const cr_image_twin *twin);
/* Checks every env's state and step count in `bytes`, a host copy of the twin's device state
 * (twin->bytes of it, as a checkpoint holds it), with cr_env_check_state: -1 when all pass; else
 * the first bad env, with *bad = 1 (its state) or 2 (its step count) and what is wrong in why
 * (cap bytes). Any build: it reads the layout only. */
int cr_image_twin_check_state(const cr_image_twin *twin, const void *bytes, int *bad, char *why,
                              size_t cap);
/* Copies env j's state and step count out of `src` (a host copy of src's block) into env i of
 * `dst` (a host copy of dst's block): twins of one env, each block carved by its own env count
 * (MinAtar's words are stored transposed), so a data-parallel checkpoint regroups the ranks'
 * envs into the job's block and back. Any build: it reads the layouts only. */
void cr_image_twin_copy_env(const cr_image_twin *dst, void *dst_bytes, int i,
                            const cr_image_twin *src, const void *src_bytes, int j);

#ifdef __cplusplus
}
#endif
#endif
