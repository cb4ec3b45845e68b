// The image envs' CUDA twins behind one interface (image_twin.h): a dispatch on the kind.
#include <string.h>

#include "core/core.h"
#include "env/image_twin.h"
#include "ops/cuda/cuda_common.cuh"

extern "C" cudarl_status cr_image_twin_bytes(const char *id, int n, size_t *bytes) {
    if (id && !strcmp(id, cr_cartpole_pixels_def.id)) {
        if (n < 1)
            return cr_fail(CUDARL_ERR_INVALID_ARG, "%s on the GPU: %d envs; use at least 1", id, n);
        *bytes = cr_cartpole_pixels_cuda_bytes(n);
        return CUDARL_OK;
    }
    return cr_minatar_cuda_bytes(id, n, bytes);
}

extern "C" cudarl_status cr_image_twin_init(cr_image_twin *twin, const char *id, int n,
                                            void *mem) {
    memset(twin, 0, sizeof *twin);
    CR_TRY(cr_image_twin_bytes(id, n, &twin->bytes));
    twin->num_envs = n, twin->mem = mem;
    if (!strcmp(id, cr_cartpole_pixels_def.id)) {
        twin->kind = 2;
        cr_cartpole_pixels_cuda_init(&twin->pixels, n, mem);
        return CUDARL_OK;
    }
    twin->kind = 1;
    return cr_minatar_cuda_init(&twin->minatar, id, n, mem);
}

extern "C" void cr_image_twin_reset(cudarl_ctx *ctx, const cr_image_twin *twin, uint64_t seed,
                                    uint8_t *obs) {
    if (twin->kind == 2) {
        cr_cartpole_pixels_cuda pixels = twin->pixels;
        pixels.first = twin->first;
        cr_cartpole_pixels_cuda_reset(&pixels, seed, obs, cr_stream(ctx));
    } else {
        cr_minatar_cuda minatar = twin->minatar;
        minatar.first = twin->first;
        cr_minatar_cuda_reset(ctx, &minatar, seed, obs);
    }
}

extern "C" void cr_image_twin_step(cudarl_ctx *ctx, const cr_image_twin *twin,
                                   const int32_t *actions, uint8_t *obs, float *reward,
                                   uint8_t *terminated, uint8_t *truncated, uint8_t *done,
                                   uint8_t *final_obs) {
    if (twin->kind == 2)
        cr_cartpole_pixels_cuda_step(&twin->pixels, actions, obs, reward, terminated, truncated,
                                     done, final_obs, cr_stream(ctx));
    else
        cr_minatar_cuda_step(ctx, &twin->minatar, actions, obs, reward, terminated, truncated,
                             done, final_obs);
}
