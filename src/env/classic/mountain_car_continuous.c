/* MountainCarContinuous-v0 as a cudarl_env_def with a continuous action (the force, box
 * [-1, 1]): one env's state stepped by the per-env code of mountain_car_continuous_step.h, which
 * the CUDA twin (classic_cuda.cu) runs too. The pool or the batch around it clips the force into
 * the box, counts the steps, truncates at 999 and resets an ended env in the same step. */
#include "env/classic/classic.h"
#include "env/classic/mountain_car_continuous_step.h"
#include "env/env_check.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

_Static_assert(sizeof(cr_mountain_car_continuous_state) ==
                   2 * sizeof(double) + sizeof(cr_philox_state) + 4,
               "cr_mountain_car_continuous_state has implicit padding");

static void mcc_seed(void *state, uint64_t seed, uint64_t index) {
    cr_mountain_car_continuous_seed(state, seed, index);
}

static void mcc_reset(void *state, void *obs) { cr_mountain_car_continuous_reset(state, obs); }

static void mcc_step(void *state, const float *action, void *obs, float *reward,
                     uint8_t *terminated) {
    *terminated = (uint8_t)cr_mountain_car_continuous_step(state, action, obs, reward);
}

/* Position and velocity within the ranges step() keeps them in, as float32 (its bounds rounded
 * to float32 lie just outside the float64 ones), and fresh 0 or 1. */
static int mcc_check(const void *state, char *why, size_t cap) {
    const cr_mountain_car_continuous_state *e = state;
    const double pmin = cr_f32(CR_MCC_MIN_POSITION), pmax = cr_f32(CR_MCC_MAX_POSITION);
    const double vmax = cr_f32(CR_MCC_MAX_SPEED);
    return cr_check_real(why, cap, "position", e->s[0], pmin, pmax) ||
           cr_check_real(why, cap, "velocity", e->s[1], -vmax, vmax) ||
           cr_check_rng(why, cap, "rng", &e->rng) ||
           cr_check_int(why, cap, "fresh", e->fresh, 0, 1);
}

const cudarl_env_def cr_mountain_car_continuous_def = {
    .id = "MountainCarContinuous-v0",
    .obs_rank = 1,
    .obs_shape = {CR_MOUNTAIN_CAR_CONTINUOUS_OBS_DIM, 1, 1},
    .obs_dtype = CUDARL_OBS_F32,
    .max_episode_steps = CR_MOUNTAIN_CAR_CONTINUOUS_MAX_STEPS,
    .solved_return = 90.0,
    .state_bytes = sizeof(cr_mountain_car_continuous_state),
    .seed = mcc_seed,
    .reset = mcc_reset,
    .state_check = mcc_check,
    .action_dim = 1,
    .action_low = {CR_MCC_MIN_ACTION},
    .action_high = {CR_MCC_MAX_ACTION},
    .step_box = mcc_step,
};
