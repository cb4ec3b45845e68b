/* Acrobot-v1 as a cudarl_env_def: one env's state stepped by the per-env code of acrobot_step.h,
 * which the CUDA twin (classic_cuda.cu) runs too. The pool or the batch around it counts the
 * steps, truncates at 500 and resets an ended env in the same step. */
#include "env/classic/acrobot_step.h"
#include "env/classic/classic.h"
#include "env/env_check.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

_Static_assert(sizeof(cr_acrobot_state) == 4 * sizeof(double) + sizeof(cr_philox_state) + 4,
               "cr_acrobot_state has implicit padding");

static void acrobot_seed(void *state, uint64_t seed, uint64_t index) {
    cr_acrobot_seed(state, seed, index);
}

static void acrobot_reset(void *state, void *obs) { cr_acrobot_reset(state, obs); }

static void acrobot_step(void *state, int32_t action, void *obs, float *reward,
                         uint8_t *terminated) {
    *terminated = (uint8_t)cr_acrobot_step(state, action, obs, reward);
}

/* Angles within [-pi, pi] (wrap's range), speeds within their bounds, all finite. */
static int acrobot_check(const void *state, char *why, size_t cap) {
    const cr_acrobot_state *e = state;
    const double pi = CR_CLASSIC_PI;
    return cr_check_real(why, cap, "theta1", e->s[0], -pi, pi) ||
           cr_check_real(why, cap, "theta2", e->s[1], -pi, pi) ||
           cr_check_real(why, cap, "dtheta1", e->s[2], -CR_AB_MAX_VEL_1, CR_AB_MAX_VEL_1) ||
           cr_check_real(why, cap, "dtheta2", e->s[3], -CR_AB_MAX_VEL_2, CR_AB_MAX_VEL_2) ||
           cr_check_rng(why, cap, "rng", &e->rng) || cr_check_int(why, cap, "pad", e->pad, 0, 0);
}

const cudarl_env_def cr_acrobot_def = {
    .id = "Acrobot-v1",
    .obs_rank = 1,
    .obs_shape = {CR_ACROBOT_OBS_DIM, 1, 1},
    .obs_dtype = CUDARL_OBS_F32,
    .num_actions = CR_ACROBOT_NUM_ACTIONS,
    .max_episode_steps = CR_ACROBOT_MAX_STEPS,
    .solved_return = -100.0,
    .state_bytes = sizeof(cr_acrobot_state),
    .seed = acrobot_seed,
    .reset = acrobot_reset,
    .step = acrobot_step,
    .state_check = acrobot_check,
};
