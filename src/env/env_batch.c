/* Env batches: the state lives where the context computes, stepped by the matching twin. Each
 * env with CR_ENV_BATCH names its batch twin on its registry line (env.c); the twins are here,
 * each a table of its family's functions, and so is the choice between the CPU and the CUDA one. */
#include <string.h>

#include "env/env.h"
#include "env/env_check.h"

/* ---- CartPole-v1: cartpole/cartpole.h's batch ------------------------------------------------ */

static size_t cartpole_bytes(const cr_env_info *info, int n) { return cr_cartpole_bytes(n); }

static void cartpole_init(cr_env_batch *b, void *mem) {
    cr_cartpole_init(&b->cartpole, b->num_envs, mem);
}

static void cartpole_reset(cr_env_batch *b, uint64_t seed, float *obs) {
    cr_cartpole_reset_from(&b->cartpole, seed, b->first, obs);
}

static void cartpole_step(cr_env_batch *b, const void *actions, float *obs, float *reward,
                          uint8_t *terminated, uint8_t *truncated, uint8_t *done,
                          float *final_obs) {
    cr_cartpole_step(&b->cartpole, actions, obs, reward, terminated, truncated, final_obs);
    for (int i = 0; i < b->num_envs; i++) done[i] = terminated[i] | truncated[i];
}

/* Byte offset of `p` (an array of the batch) in its block. */
static size_t offset_in(const cr_env_batch *b, const void *p) {
    return (size_t)((const unsigned char *)p - (const unsigned char *)b->mem);
}

static int cartpole_check_env(const cr_env_batch *b, const void *block, int i, char *why,
                              size_t cap) {
    const unsigned char *base = block;
    double s[CR_CARTPOLE_OBS_DIM];
    int32_t elapsed;
    cr_philox_state rng;
    memcpy(s, base + offset_in(b, b->cartpole.state) + sizeof s * (size_t)i, sizeof s);
    memcpy(&elapsed, base + offset_in(b, b->cartpole.elapsed) + sizeof elapsed * (size_t)i,
           sizeof elapsed);
    memcpy(&rng, base + offset_in(b, b->cartpole.rng) + sizeof rng * (size_t)i, sizeof rng);
    if (cr_check_int(why, cap, "its step count", elapsed, 0, CR_CARTPOLE_MAX_STEPS - 1)) return 2;
    return cr_cartpole_check_state(s, why, cap) || cr_check_rng(why, cap, "rng", &rng);
}

static void cartpole_copy_env(cr_env_batch *dst, int di, const cr_env_batch *src, int si) {
    const cr_cartpole *s = &src->cartpole;
    cr_cartpole *d = &dst->cartpole;
    memcpy(d->state + (size_t)di * CR_CARTPOLE_OBS_DIM, s->state + (size_t)si * CR_CARTPOLE_OBS_DIM,
           CR_CARTPOLE_OBS_DIM * sizeof(double));
    d->elapsed[di] = s->elapsed[si];
    d->rng[di] = s->rng[si];
}

#ifdef CUDARL_WITH_CUDA
static void cartpole_cuda_reset(cudarl_ctx *ctx, cr_env_batch *b, uint64_t seed, float *obs) {
    cr_cartpole_cuda_reset(&b->cartpole, seed, b->first, obs, ctx->stream);
}

static void cartpole_cuda_step(cudarl_ctx *ctx, cr_env_batch *b, const void *actions,
                               float *obs, float *reward, uint8_t *terminated,
                               uint8_t *truncated, uint8_t *done, float *final_obs) {
    cr_cartpole_cuda_step(&b->cartpole, actions, obs, reward, terminated, truncated, done,
                          final_obs, ctx->stream);
}
#endif

const cr_env_batch_twin cr_cartpole_batch = {
    .bytes = cartpole_bytes,
    .init = cartpole_init,
    .reset = cartpole_reset,
    .step = cartpole_step,
#ifdef CUDARL_WITH_CUDA
    .cuda_reset = cartpole_cuda_reset,
    .cuda_step = cartpole_cuda_step,
#endif
    .check_env = cartpole_check_env,
    .copy_env = cartpole_copy_env,
};

/* ---- the classic-control envs: classic/classic.h's batch ------------------------------------- */

static size_t classic_bytes(const cr_env_info *info, int n) {
    return cr_classic_bytes(info->def, n);
}

static void classic_init(cr_env_batch *b, void *mem) {
    cr_classic_init(&b->classic, b->info->def, b->num_envs, mem);
}

static void classic_reset(cr_env_batch *b, uint64_t seed, float *obs) {
    cr_classic_reset_from(&b->classic, seed, b->first, obs);
}

static void classic_step(cr_env_batch *b, const void *actions, float *obs, float *reward,
                         uint8_t *terminated, uint8_t *truncated, uint8_t *done,
                         float *final_obs) {
    cr_classic_step(&b->classic, actions, obs, reward, terminated, truncated, done, final_obs);
}

static int classic_check_env(const cr_env_batch *b, const void *block, int i, char *why,
                             size_t cap) {
    const cr_classic *c = &b->classic;
    const unsigned char *base = block;
    _Alignas(16) unsigned char state[CR_CLASSIC_STATE_MAX];
    int32_t elapsed;
    CUDARL_ASSERT(c->def->state_bytes <= sizeof state);
    cr_classic_get_state(c, (const uint32_t *)(base + offset_in(b, c->states)), i, state);
    memcpy(&elapsed, base + offset_in(b, c->elapsed) + sizeof elapsed * (size_t)i,
           sizeof elapsed);
    return cr_env_check_state(c->def, state, elapsed, why, cap);
}

static void classic_copy_env(cr_env_batch *dst, int di, const cr_env_batch *src, int si) {
    _Alignas(16) unsigned char state[CR_CLASSIC_STATE_MAX];
    cr_classic_get_state(&src->classic, src->classic.states, si, state);
    cr_classic_set_state(&dst->classic, di, state, src->classic.elapsed[si]);
}

#ifdef CUDARL_WITH_CUDA
static void classic_cuda_reset(cudarl_ctx *ctx, cr_env_batch *b, uint64_t seed, float *obs) {
    cr_classic_cuda_reset(ctx, &b->classic, seed, b->first, obs);
}

static void classic_cuda_step(cudarl_ctx *ctx, cr_env_batch *b, const void *actions, float *obs,
                              float *reward, uint8_t *terminated, uint8_t *truncated,
                              uint8_t *done, float *final_obs) {
    cr_classic_cuda_step(ctx, &b->classic, actions, obs, reward, terminated, truncated, done,
                         final_obs);
}
#endif

const cr_env_batch_twin cr_classic_batch = {
    .bytes = classic_bytes,
    .init = classic_init,
    .reset = classic_reset,
    .step = classic_step,
#ifdef CUDARL_WITH_CUDA
    .cuda_reset = classic_cuda_reset,
    .cuda_step = classic_cuda_step,
#endif
    .check_env = classic_check_env,
    .copy_env = classic_copy_env,
};

/* ---- the batch ------------------------------------------------------------------------------- */

size_t cr_env_batch_bytes(const cr_env_info *info, int n) {
    CUDARL_ASSERT(info->batch && n >= 1); /* an env with CR_ENV_BATCH */
    return info->batch->bytes(info, n);
}

void cr_env_batch_init(cr_env_batch *b, const cr_env_info *info, int n, void *mem) {
    memset(b, 0, sizeof *b);
    b->info = info;
    b->num_envs = n;
    b->mem = mem;
    b->bytes = cr_env_batch_bytes(info, n);
    info->batch->init(b, mem);
}

void cr_env_batch_reset(cudarl_ctx *ctx, cr_env_batch *b, uint64_t seed, float *obs) {
#ifdef CUDARL_WITH_CUDA
    if (ctx->kind == CUDARL_DEVICE_CUDA) {
        b->info->batch->cuda_reset(ctx, b, seed, obs);
        return;
    }
#endif
    b->info->batch->reset(b, seed, obs);
}

void cr_env_batch_step(cudarl_ctx *ctx, cr_env_batch *b, const void *actions, float *obs,
                       float *reward, uint8_t *terminated, uint8_t *truncated, uint8_t *done,
                       float *final_obs) {
#ifdef CUDARL_WITH_CUDA
    if (ctx->kind == CUDARL_DEVICE_CUDA) {
        b->info->batch->cuda_step(ctx, b, actions, obs, reward, terminated, truncated, done,
                                  final_obs);
        return;
    }
#endif
    b->info->batch->step(b, actions, obs, reward, terminated, truncated, done, final_obs);
}

void cr_env_batch_copy_env(cr_env_batch *dst, int di, const cr_env_batch *src, int si) {
    CUDARL_ASSERT(dst->info == src->info && 0 <= di && di < dst->num_envs && 0 <= si &&
                  si < src->num_envs);
    src->info->batch->copy_env(dst, di, src, si);
}

int cr_env_batch_check_state(const cr_env_batch *b, const void *block, int *bad, char *why,
                             size_t cap) {
    for (int i = 0; i < b->num_envs; i++) {
        *bad = b->info->batch->check_env(b, block, i, why, cap);
        if (*bad) return i;
    }
    return -1;
}
