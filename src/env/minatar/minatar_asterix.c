/* MinAtar/Asterix-v1 as a cudarl env def: thin wrappers over the per-env code of
 * minatar_asterix_step.h (the rules, and what each channel and action means). */
#include "env/minatar/minatar.h"
#include "env/minatar/minatar_asterix_step.h"

static void asterix_seed(void *state, uint64_t seed, uint64_t index) {
    cr_minatar_asterix_seed(state, seed, index);
}

static void asterix_reset(void *state, void *obs) {
    cr_minatar_asterix_reset(state, obs);
}

static void asterix_step(void *state, int32_t action, void *obs, float *reward,
                         uint8_t *terminated) {
    cr_minatar_asterix_step(state, action, obs, reward, terminated);
}

const cudarl_env_def cr_minatar_asterix_def = {
    .id = "MinAtar/Asterix-v1",
    .obs_rank = 3,
    .obs_shape = {CR_ASTERIX_CHANNELS, CR_MINATAR_SIZE, CR_MINATAR_SIZE},
    .obs_dtype = CUDARL_OBS_U8,
    .num_actions = CR_ASTERIX_NUM_ACTIONS,
    .max_episode_steps = 0, /* minatar registers no time limit */
    .solved_return = 10.0, /* see minatar.h */
    .state_bytes = sizeof(cr_minatar_asterix_state),
    .seed = asterix_seed,
    .reset = asterix_reset,
    .step = asterix_step,
};
