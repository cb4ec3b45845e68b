/* Pendulum-v1 as a cudarl_env_def with a continuous action (the torque, box [-2, 2]): one env's
 * state stepped by the per-env code of pendulum_step.h, which the CUDA twin (classic_cuda.cu)
 * runs too. The pool or the batch around it clips the torque into the box, counts the steps,
 * truncates at 200 and resets an ended env in the same step. */
#include "env/classic/classic.h"
#include "env/classic/pendulum_step.h"
#include "env/env_check.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

_Static_assert(sizeof(cr_pendulum_state) == 2 * sizeof(double) + sizeof(cr_philox_state) + 4,
               "cr_pendulum_state has implicit padding");

static void pendulum_seed(void *state, uint64_t seed, uint64_t index) {
    cr_pendulum_seed(state, seed, index);
}

static void pendulum_reset(void *state, void *obs) { cr_pendulum_reset(state, obs); }

static void pendulum_step(void *state, const float *action, void *obs, float *reward,
                          uint8_t *terminated) {
    *terminated = (uint8_t)cr_pendulum_step(state, action, obs, reward);
}

/* The angle within what an episode can turn, the speed within step()'s clip. */
static int pendulum_check(const void *state, char *why, size_t cap) {
    const cr_pendulum_state *e = state;
    return cr_check_real(why, cap, "th", e->s[0], -CR_PD_MAX_THETA, CR_PD_MAX_THETA) ||
           cr_check_real(why, cap, "thdot", e->s[1], -CR_PD_MAX_SPEED, CR_PD_MAX_SPEED) ||
           cr_check_rng(why, cap, "rng", &e->rng) || cr_check_int(why, cap, "pad", e->pad, 0, 0);
}

const cudarl_env_def cr_pendulum_def = {
    .id = "Pendulum-v1",
    .obs_rank = 1,
    .obs_shape = {CR_PENDULUM_OBS_DIM, 1, 1},
    .obs_dtype = CUDARL_OBS_F32,
    .max_episode_steps = CR_PENDULUM_MAX_STEPS,
    .solved_return = -200.0,
    .state_bytes = sizeof(cr_pendulum_state),
    .seed = pendulum_seed,
    .reset = pendulum_reset,
    .state_check = pendulum_check,
    .action_dim = 1,
    .action_low = {-CR_PD_MAX_TORQUE},
    .action_high = {CR_PD_MAX_TORQUE},
    .step_box = pendulum_step,
};
