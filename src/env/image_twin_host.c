/* The host side of image_twin.h: whether a twin can truncate and the check of its state as a
 * checkpoint holds it (any build), and, in a build without the CUDA backend, the rest: no twin
 * can run, so bytes and init refuse (the trainers ask them before anything else) and reset and
 * step are never reached. With the backend image_twin.cu defines those. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "env/env.h"
#include "env/image_twin.h"

int cr_image_twin_truncates(const cr_image_twin *twin) {
    return twin->kind == 2 || twin->minatar.max_episode_steps > 0;
}

/* Byte offset of `p` from the twin's block. */
static size_t offset_in(const cr_image_twin *twin, const void *p) {
    return (size_t)((const unsigned char *)p - (const unsigned char *)twin->mem);
}

int cr_image_twin_check_state(const cr_image_twin *twin, const void *bytes, int *bad, char *why,
                              size_t cap) {
    const unsigned char *b = bytes;
    const int n = twin->num_envs;
    if (twin->kind == 2) { /* (N) state structs, then (N) step counts */
        const unsigned char *states = b + offset_in(twin, twin->pixels.states);
        const unsigned char *elapsed = b + offset_in(twin, twin->pixels.elapsed);
        for (int i = 0; i < n; i++) {
            int32_t e;
            memcpy(&e, elapsed + (size_t)i * sizeof e, sizeof e);
            *bad = cr_env_check_state(&cr_cartpole_pixels_def,
                                      states + (size_t)i * sizeof(cr_cartpole_pixels_state), e,
                                      why, cap);
            if (*bad) return i;
        }
        return -1;
    }
    /* MinAtar: (W, N) words, word k of env i at k * N + i, then (N) step counts */
    const cr_minatar_cuda *m = &twin->minatar;
    const unsigned char *words = b + offset_in(twin, m->states);
    const unsigned char *elapsed = b + offset_in(twin, m->elapsed);
    uint32_t *state = malloc(m->def->state_bytes);
    if (!state) {
        snprintf(why, cap, "no host memory to check it");
        *bad = 1;
        return 0;
    }
    int first = -1;
    for (int i = 0; i < n && first < 0; i++) {
        for (int k = 0; k < m->state_words; k++)
            memcpy(&state[k], words + ((size_t)k * (size_t)n + (size_t)i) * 4, 4);
        int32_t e;
        memcpy(&e, elapsed + (size_t)i * sizeof e, sizeof e);
        *bad = cr_env_check_state(m->def, state, e, why, cap);
        if (*bad) first = i;
    }
    free(state);
    return first;
}

void cr_image_twin_copy_env(const cr_image_twin *dst, void *dst_bytes, int i,
                            const cr_image_twin *src, const void *src_bytes, int j) {
    CUDARL_ASSERT(dst->kind == src->kind && i >= 0 && i < dst->num_envs && j >= 0 &&
                  j < src->num_envs);
    unsigned char *d = dst_bytes;
    const unsigned char *s = src_bytes;
    const void *d_elapsed, *s_elapsed;
    if (dst->kind == 2) { /* (N) state structs, then (N) step counts */
        const size_t sb = sizeof(cr_cartpole_pixels_state);
        memcpy(d + offset_in(dst, dst->pixels.states) + (size_t)i * sb,
               s + offset_in(src, src->pixels.states) + (size_t)j * sb, sb);
        d_elapsed = dst->pixels.elapsed, s_elapsed = src->pixels.elapsed;
    } else { /* MinAtar: word k of env i at k * N + i */
        const cr_minatar_cuda *dm = &dst->minatar, *sm = &src->minatar;
        CUDARL_ASSERT(dm->state_words == sm->state_words);
        const size_t dn = (size_t)dst->num_envs, sn = (size_t)src->num_envs;
        for (int k = 0; k < dm->state_words; k++)
            memcpy(d + offset_in(dst, dm->states) + ((size_t)k * dn + (size_t)i) * 4,
                   s + offset_in(src, sm->states) + ((size_t)k * sn + (size_t)j) * 4, 4);
        d_elapsed = dm->elapsed, s_elapsed = sm->elapsed;
    }
    memcpy(d + offset_in(dst, d_elapsed) + (size_t)i * 4, s + offset_in(src, s_elapsed) +
           (size_t)j * 4, 4);
}

#ifndef CUDARL_WITH_CUDA

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
