/* MinAtar/Seaquest-v1 as a cudarl env def: thin wrappers over the per-env code of
 * minatar_seaquest_step.h (the rules, and what each channel and action means). */
#include "env/minatar/minatar.h"
#include "env/minatar/minatar_seaquest_step.h"

static void seaquest_seed(void *state, uint64_t seed, uint64_t index) {
    cr_minatar_seaquest_seed(state, seed, index);
}

static void seaquest_reset(void *state, void *obs) {
    cr_minatar_seaquest_reset(state, obs);
}

static void seaquest_step(void *state, int32_t action, void *obs, float *reward,
                          uint8_t *terminated) {
    cr_minatar_seaquest_step(state, action, obs, reward, terminated);
}

const cudarl_env_def cr_minatar_seaquest_def = {
    .id = "MinAtar/Seaquest-v1",
    .obs_rank = 3,
    .obs_shape = {CR_SEAQUEST_CHANNELS, CR_MINATAR_SIZE, CR_MINATAR_SIZE},
    .obs_dtype = CUDARL_OBS_U8,
    .num_actions = CR_SEAQUEST_NUM_ACTIONS,
    .max_episode_steps = 0, /* minatar registers no time limit */
    .solved_return = 10.0, /* see minatar.h */
    .state_bytes = sizeof(cr_minatar_seaquest_state),
    .seed = seaquest_seed,
    .reset = seaquest_reset,
    .step = seaquest_step,
};
