/* MountainCar-v0 as a cudarl_env_def: one env's state stepped by the per-env code of
 * mountain_car_step.h, which the CUDA twin (classic_cuda.cu) runs too. The pool or the batch
 * around it counts the steps, truncates at 200 and resets an ended env in the same step. */
#include "env/classic/classic.h"
#include "env/classic/mountain_car_step.h"
#include "env/env_check.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

_Static_assert(sizeof(cr_mountain_car_state) == 2 * sizeof(double) + sizeof(cr_philox_state) + 4,
               "cr_mountain_car_state has implicit padding");

static void mountain_car_seed(void *state, uint64_t seed, uint64_t index) {
    cr_mountain_car_seed(state, seed, index);
}

static void mountain_car_reset(void *state, void *obs) { cr_mountain_car_reset(state, obs); }

static void mountain_car_step(void *state, int32_t action, void *obs, float *reward,
                              uint8_t *terminated) {
    *terminated = (uint8_t)cr_mountain_car_step(state, action, obs, reward);
}

/* Position and velocity within the ranges step() clips them to. */
static int mountain_car_check(const void *state, char *why, size_t cap) {
    const cr_mountain_car_state *e = state;
    return cr_check_real(why, cap, "position", e->s[0], CR_MC_MIN_POSITION, CR_MC_MAX_POSITION) ||
           cr_check_real(why, cap, "velocity", e->s[1], -CR_MC_MAX_SPEED, CR_MC_MAX_SPEED) ||
           cr_check_rng(why, cap, "rng", &e->rng) || cr_check_int(why, cap, "pad", e->pad, 0, 0);
}

const cudarl_env_def cr_mountain_car_def = {
    .id = "MountainCar-v0",
    .obs_rank = 1,
    .obs_shape = {CR_MOUNTAIN_CAR_OBS_DIM, 1, 1},
    .obs_dtype = CUDARL_OBS_F32,
    .num_actions = CR_MOUNTAIN_CAR_NUM_ACTIONS,
    .max_episode_steps = CR_MOUNTAIN_CAR_MAX_STEPS,
    .solved_return = -110.0,
    .state_bytes = sizeof(cr_mountain_car_state),
    .seed = mountain_car_seed,
    .reset = mountain_car_reset,
    .step = mountain_car_step,
    .state_check = mountain_car_check,
};
