/* The host side of image_twin.h: whether a twin can truncate (any build), and, in a build without
 * the CUDA backend, the rest: no twin can run, so bytes and init refuse (the trainers ask them
 * before anything else) and reset and step are never reached. With the backend image_twin.cu
 * defines those. */
#include "env/image_twin.h"

int cr_image_twin_truncates(const cr_image_twin *twin) {
    return twin->kind == 2 || twin->minatar.max_episode_steps > 0;
}

#ifndef CUDARL_WITH_CUDA
#include <string.h>

#include "core/core.h"

cudarl_status cr_image_twin_bytes(const char *id, int n, size_t *bytes) {
    (void)n;
    *bytes = 0;
    return cr_fail(CUDARL_ERR_UNSUPPORTED, "%s on the GPU needs cudarl built with CUDA; use "
                   "--env-device cpu", id ? id : "(no env)");
}

cudarl_status cr_image_twin_init(cr_image_twin *twin, const char *id, int n, void *mem) {
    (void)mem;
    memset(twin, 0, sizeof *twin);
    return cr_image_twin_bytes(id, n, &twin->bytes);
}

void cr_image_twin_reset(cudarl_ctx *ctx, const cr_image_twin *twin, uint64_t seed,
                         uint8_t *obs) {
    (void)ctx, (void)twin, (void)seed, (void)obs;
    CUDARL_ASSERT(!"an image twin steps on a CUDA context only");
}

void cr_image_twin_step(cudarl_ctx *ctx, const cr_image_twin *twin, const int32_t *actions,
                        uint8_t *obs, float *reward, uint8_t *terminated, uint8_t *truncated,
                        uint8_t *done, uint8_t *final_obs) {
    (void)ctx, (void)twin, (void)actions, (void)obs, (void)reward, (void)terminated;
    (void)truncated, (void)done, (void)final_obs;
    CUDARL_ASSERT(!"an image twin steps on a CUDA context only");
}
#endif
