/* The classic envs' batch on the CPU (classic.h): the def's own functions over each env's state,
 * moved in and out of the transposed block, with the pool's step count, truncation and
 * same-step autoreset (classic_step.h's cr_classic_count_step, which the CUDA twin runs too). */
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "env/classic/classic.h"
#include "env/classic/classic_step.h"
#include "env/env.h"

static const cudarl_env_def *const classic_defs[CR_CLASSIC_KINDS] = {
    [CR_CLASSIC_ACROBOT] = &cr_acrobot_def,
    [CR_CLASSIC_MOUNTAIN_CAR] = &cr_mountain_car_def,
    [CR_CLASSIC_PENDULUM] = &cr_pendulum_def,
    [CR_CLASSIC_MOUNTAIN_CAR_CONTINUOUS] = &cr_mountain_car_continuous_def,
};

int cr_classic_kind(const cudarl_env_def *def) {
    for (int k = 0; k < CR_CLASSIC_KINDS; k++)
        if (def && def->id && !strcmp(def->id, classic_defs[k]->id)) return k;
    return -1;
}

/* The block's plan: states (W, N) words, elapsed (N), each 64-byte aligned. */
static void classic_plan(cr_plan *p, const cudarl_env_def *def, int num_envs) {
    size_t n = (size_t)num_envs;
    cr_plan_init(p);
    cr_plan_add(p, "classic.states", n * def->state_bytes);
    cr_plan_add(p, "classic.elapsed", n * sizeof(int32_t));
}

size_t cr_classic_bytes(const cudarl_env_def *def, int num_envs) {
    CUDARL_ASSERT(num_envs >= 1 && cr_classic_kind(def) >= 0);
    cr_plan p;
    classic_plan(&p, def, num_envs);
    return p.total;
}

void cr_classic_init(cr_classic *c, const cudarl_env_def *def, int num_envs, void *mem) {
    CUDARL_ASSERT(num_envs >= 1 && mem && (uintptr_t)mem % CR_ARENA_ALIGN == 0);
    CUDARL_ASSERT(def->state_bytes % 4 == 0 && def->state_bytes <= CR_CLASSIC_STATE_MAX);
    cr_plan p;
    classic_plan(&p, def, num_envs);
    unsigned char *base = mem;
    c->def = def;
    c->kind = cr_classic_kind(def);
    CUDARL_ASSERT(c->kind >= 0);
    c->num_envs = num_envs;
    c->state_words = (int)(def->state_bytes / 4);
    c->states = (uint32_t *)(base + p.offsets[0]);
    c->elapsed = (int32_t *)(base + p.offsets[1]);
}

void cr_classic_get_state(const cr_classic *c, const uint32_t *states, int i, void *state) {
    uint32_t w[CR_CLASSIC_STATE_MAX / 4];
    const size_t n = (size_t)c->num_envs;
    for (int k = 0; k < c->state_words; k++) w[k] = states[(size_t)k * n + (size_t)i];
    memcpy(state, w, (size_t)c->state_words * 4);
}

/* Env i's words = state (state_words of them). */
static void put_state(cr_classic *c, int i, const void *state) {
    uint32_t w[CR_CLASSIC_STATE_MAX / 4];
    const size_t n = (size_t)c->num_envs;
    memcpy(w, state, (size_t)c->state_words * 4);
    for (int k = 0; k < c->state_words; k++) c->states[(size_t)k * n + (size_t)i] = w[k];
}

void cr_classic_set_state(cr_classic *c, int i, const void *state, int32_t elapsed) {
    CUDARL_ASSERT(0 <= i && i < c->num_envs && elapsed >= 0);
    put_state(c, i, state);
    c->elapsed[i] = elapsed;
}

void cr_classic_reset(cr_classic *c, uint64_t seed, float *obs) {
    cr_classic_reset_from(c, seed, 0, obs);
}

void cr_classic_reset_from(cr_classic *c, uint64_t seed, int64_t first, float *obs) {
    CUDARL_ASSERT(first >= 0);
    const cudarl_env_def *d = c->def;
    const size_t D = (size_t)d->obs_shape[0];
    _Alignas(16) unsigned char state[CR_CLASSIC_STATE_MAX];
    for (int i = 0; i < c->num_envs; i++) {
        memset(state, 0, sizeof state);
        d->seed(state, seed, (uint64_t)(first + i));
        d->reset(state, obs + (size_t)i * D);
        put_state(c, i, state);
        c->elapsed[i] = 0;
    }
}

_Noreturn static void bad_action(const cr_classic *c, int env, int32_t action) {
    fprintf(stderr, "cudarl: env batch '%s': action %d for env %d is outside 0..%d: the policy "
            "produced an invalid action (a bug in its sampler or its action count)\n",
            c->def->id, (int)action, env, c->def->num_actions - 1);
    cr_assert_fail("0 <= action && action < num_actions", __FILE__, __LINE__);
}

void cr_classic_step(cr_classic *c, const void *actions, float *obs, float *reward,
                     uint8_t *terminated, uint8_t *truncated, uint8_t *done, float *final_obs) {
    const cudarl_env_def *d = c->def;
    const size_t D = (size_t)d->obs_shape[0];
    const int K = d->action_dim;
    const int32_t *discrete = actions;
    const float *box = actions; /* (N, K) */
    _Alignas(16) unsigned char state[CR_CLASSIC_STATE_MAX];
    float clipped[CUDARL_ACTION_DIM_MAX];
    for (int i = 0; i < c->num_envs; i++) {
        float *row = obs + (size_t)i * D;
        float r = 0.0f;
        uint8_t term = 0;
        cr_classic_get_state(c, c->states, i, state);
        if (K > 0) {
            cr_env_clip_action(d, box + (size_t)i * (size_t)K, clipped);
            d->step_box(state, clipped, row, &r, &term);
        } else {
            int32_t a = discrete[i];
            if (a < 0 || a >= d->num_actions) bad_action(c, i, a);
            d->step(state, a, row, &r, &term);
        }
        reward[i] = r;
        int ended = cr_classic_count_step(term, &c->elapsed[i], d->max_episode_steps, row,
                                          (int)D, &terminated[i], &truncated[i],
                                          final_obs + (size_t)i * D);
        if (ended) {
            d->reset(state, row);
            c->elapsed[i] = 0;
        }
        if (done) done[i] = (uint8_t)ended;
        put_state(c, i, state);
    }
}
