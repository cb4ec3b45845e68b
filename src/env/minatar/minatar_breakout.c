/* MinAtar/Breakout-v1 as a cudarl env def: thin wrappers over the per-env code of
 * minatar_breakout_step.h (the rules, and what each channel and action means). */
#include "env/minatar/minatar.h"
#include "env/minatar/minatar_breakout_step.h"

static void breakout_seed(void *state, uint64_t seed, uint64_t index) {
    cr_minatar_breakout_seed(state, seed, index);
}

static void breakout_reset(void *state, void *obs) {
    cr_minatar_breakout_reset(state, obs);
}

static void breakout_step(void *state, int32_t action, void *obs, float *reward,
                          uint8_t *terminated) {
    cr_minatar_breakout_step(state, action, obs, reward, terminated);
}

const cudarl_env_def cr_minatar_breakout_def = {
    .id = "MinAtar/Breakout-v1",
    .obs_rank = 3,
    .obs_shape = {CR_BREAKOUT_CHANNELS, CR_MINATAR_SIZE, CR_MINATAR_SIZE},
    .obs_dtype = CUDARL_OBS_U8,
    .num_actions = CR_BREAKOUT_NUM_ACTIONS,
    .max_episode_steps = 0, /* minatar registers no time limit */
    .solved_return = 10.0, /* see minatar.h */
    .state_bytes = sizeof(cr_minatar_breakout_state),
    .seed = breakout_seed,
    .reset = breakout_reset,
    .step = breakout_step,
};
