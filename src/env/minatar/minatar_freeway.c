/* MinAtar/Freeway-v1 as a cudarl env def: thin wrappers over the per-env code of
 * minatar_freeway_step.h (the rules, and what each channel and action means). */
#include "env/minatar/minatar.h"
#include "env/minatar/minatar_freeway_step.h"

static void freeway_seed(void *state, uint64_t seed, uint64_t index) {
    cr_minatar_freeway_seed(state, seed, index);
}

static void freeway_reset(void *state, void *obs) {
    cr_minatar_freeway_reset(state, obs);
}

static void freeway_step(void *state, int32_t action, void *obs, float *reward,
                         uint8_t *terminated) {
    cr_minatar_freeway_step(state, action, obs, reward, terminated);
}

const cudarl_env_def cr_minatar_freeway_def = {
    .id = "MinAtar/Freeway-v1",
    .obs_rank = 3,
    .obs_shape = {CR_FREEWAY_CHANNELS, CR_MINATAR_SIZE, CR_MINATAR_SIZE},
    .obs_dtype = CUDARL_OBS_U8,
    .num_actions = CR_FREEWAY_NUM_ACTIONS,
    .max_episode_steps = 0, /* minatar registers no time limit */
    .solved_return = 40.0, /* see minatar.h */
    .state_bytes = sizeof(cr_minatar_freeway_state),
    .seed = freeway_seed,
    .reset = freeway_reset,
    .step = freeway_step,
};
