/* MinAtar/Breakout-v1 as a cudarl env def: thin wrappers over the per-env code of
 * minatar_breakout_step.h (the rules, and what each channel and action means). */
#include "env/env_check.h"
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

/* The ranges the game keeps: cells 0..9, bricks only in rows 1-3, and the ball above the
 * paddle's row while the game goes on (it moves one row a step, and row 10 is off the grid). */
static int breakout_check(const void *state, char *why, size_t cap) {
    const cr_minatar_breakout_state *s = state;
    return cr_check_rng(why, cap, "rng", &s->rng) ||
           cr_check_int(why, cap, "last_action", s->last_action, 0, CR_MINATAR_FULL_ACTIONS - 1) ||
           cr_check_int(why, cap, "terminal", s->terminal, 0, 1) ||
           cr_check_int(why, cap, "ball_x", s->ball_x, 0, 9) ||
           cr_check_int(why, cap, "ball_y", s->ball_y, 0, s->terminal ? 9 : 8) ||
           cr_check_int(why, cap, "ball_dir", s->ball_dir, 0, 3) ||
           cr_check_int(why, cap, "pos", s->pos, 0, 9) ||
           cr_check_int(why, cap, "last_x", s->last_x, 0, 9) ||
           cr_check_int(why, cap, "last_y", s->last_y, 0, 9) ||
           cr_check_int(why, cap, "strike", s->strike, 0, 1) ||
           cr_check_cells(why, cap, "brick", &s->brick[0][0], 1, 3);
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
    .state_check = breakout_check,
};
