/* CartPole-v1 as a cudarl_env_def: one env's state stepped by the per-env code of
 * cartpole_step.h that the batch (cartpole.c) and the CUDA twin also run. The pool that batches
 * a def counts the steps, truncates at max_episode_steps (500) and resets ended envs in the same
 * step, as the batch does inside cr_cartpole_step_one; env i is seeded with stream i of the seed
 * and draws every reset state from that stream, as cr_cartpole_reset. So a pool of this def
 * and cr_cartpole_step give the same obs, rewards, flags and final observations bit for bit. */
#include "env/cartpole/cartpole_step.h"
#include "env/env.h"
#include "env/env_check.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

/* One CartPole env. */
typedef struct cartpole_state {
    double s[CR_CARTPOLE_OBS_DIM]; /* x, x_dot, theta, theta_dot */
    cr_philox_state rng;           /* stream `index` of the batch's seed */
} cartpole_state;

static void cartpole_seed(void *state, uint64_t seed, uint64_t index) {
    cartpole_state *c = state;
    cr_philox_seed(&c->rng, seed, index);
}

static void cartpole_reset(void *state, void *obs) {
    cartpole_state *c = state;
    int32_t elapsed; /* the pool counts the steps */
    cr_cartpole_reset_one(c->s, &elapsed, &c->rng);
    cr_cartpole_observe(c->s, obs);
}

static void cartpole_step(void *state, int32_t action, void *obs, float *reward,
                          uint8_t *terminated) {
    cartpole_state *c = state;
    cr_cartpole_physics(c->s, action);
    *terminated = (uint8_t)cr_cartpole_is_terminated(c->s);
    *reward = 1.0f;
    cr_cartpole_observe(c->s, obs);
}

int cr_cartpole_check_state(const double s[4], char *why, size_t cap) {
    return cr_check_real(why, cap, "x", s[0], -CR_CP_X_THRESHOLD, CR_CP_X_THRESHOLD) ||
           cr_check_real(why, cap, "x_dot", s[1], -CR_CARTPOLE_MAX_SPEED, CR_CARTPOLE_MAX_SPEED) ||
           cr_check_real(why, cap, "theta", s[2], -CR_CP_THETA_THRESHOLD, CR_CP_THETA_THRESHOLD) ||
           cr_check_real(why, cap, "theta_dot", s[3], -CR_CARTPOLE_MAX_SPEED,
                         CR_CARTPOLE_MAX_SPEED);
}

static int cartpole_check(const void *state, char *why, size_t cap) {
    const cartpole_state *c = state;
    return cr_cartpole_check_state(c->s, why, cap) || cr_check_rng(why, cap, "rng", &c->rng);
}

const cudarl_env_def cr_cartpole_def = {
    .id = "CartPole-v1",
    .obs_rank = 1,
    .obs_shape = {CR_CARTPOLE_OBS_DIM, 1, 1},
    .obs_dtype = CUDARL_OBS_F32,
    .num_actions = CR_CARTPOLE_NUM_ACTIONS,
    .max_episode_steps = CR_CARTPOLE_MAX_STEPS,
    .solved_return = 475.0,
    .state_bytes = sizeof(cartpole_state),
    .seed = cartpole_seed,
    .reset = cartpole_reset,
    .step = cartpole_step,
    .state_check = cartpole_check,
};
