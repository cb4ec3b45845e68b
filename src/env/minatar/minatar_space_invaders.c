/* MinAtar/SpaceInvaders-v1 as a cudarl env def: thin wrappers over the per-env code of
 * minatar_space_invaders_step.h (the rules, and what each channel and action means). */
#include "env/env_check.h"
#include "env/minatar/minatar.h"
#include "env/minatar/minatar_space_invaders_step.h"

static void space_invaders_seed(void *state, uint64_t seed, uint64_t index) {
    cr_minatar_space_invaders_seed(state, seed, index);
}

static void space_invaders_reset(void *state, void *obs) {
    cr_minatar_space_invaders_reset(state, obs);
}

static void space_invaders_step(void *state, int32_t action, void *obs, float *reward,
                                uint8_t *terminated) {
    cr_minatar_space_invaders_step(state, action, obs, reward, terminated);
}

/* The ranges the game keeps: the cannon on the grid, the block heading left or right, the move
 * interval ramped from 12 down to 6 (one ramp a wave), timers counting down from their
 * intervals, and cells of 0 and 1. */
static int space_invaders_check(const void *state, char *why, size_t cap) {
    const cr_minatar_space_invaders_state *s = state;
    const int ramps = CR_SPACE_INVADERS_ENEMY_MOVE_INTERVAL - 6;
    if (s->alien_dir != -1 && s->alien_dir != 1) {
        snprintf(why, cap, "alien_dir is %d, expected -1 or 1", (int)s->alien_dir);
        return 1;
    }
    return cr_check_rng(why, cap, "rng", &s->rng) ||
           cr_check_int(why, cap, "last_action", s->last_action, 0, CR_MINATAR_FULL_ACTIONS - 1) ||
           cr_check_int(why, cap, "pos", s->pos, 0, 9) ||
           cr_check_int(why, cap, "enemy_move_interval", s->enemy_move_interval, 6,
                        CR_SPACE_INVADERS_ENEMY_MOVE_INTERVAL) ||
           cr_check_int(why, cap, "alien_move_timer", s->alien_move_timer, 0,
                        CR_SPACE_INVADERS_ENEMY_MOVE_INTERVAL) ||
           cr_check_int(why, cap, "alien_shot_timer", s->alien_shot_timer, 0,
                        CR_SPACE_INVADERS_ENEMY_SHOT_INTERVAL) ||
           cr_check_int(why, cap, "shot_timer", s->shot_timer, 0,
                        CR_SPACE_INVADERS_SHOT_COOL_DOWN) ||
           cr_check_int(why, cap, "ramp_index", s->ramp_index, 0, ramps) ||
           cr_check_int(why, cap, "terminal", s->terminal, 0, 1) ||
           cr_check_cells(why, cap, "alien", &s->alien[0][0], 0, 9) ||
           cr_check_cells(why, cap, "f_bullet", &s->f_bullet[0][0], 0, 9) ||
           cr_check_cells(why, cap, "e_bullet", &s->e_bullet[0][0], 0, 9);
}

const cudarl_env_def cr_minatar_space_invaders_def = {
    .id = "MinAtar/SpaceInvaders-v1",
    .obs_rank = 3,
    .obs_shape = {CR_SPACE_INVADERS_CHANNELS, CR_MINATAR_SIZE, CR_MINATAR_SIZE},
    .obs_dtype = CUDARL_OBS_U8,
    .num_actions = CR_SPACE_INVADERS_NUM_ACTIONS,
    .max_episode_steps = 0, /* minatar registers no time limit */
    .solved_return = 30.0, /* see minatar.h */
    .state_bytes = sizeof(cr_minatar_space_invaders_state),
    .seed = space_invaders_seed,
    .reset = space_invaders_reset,
    .step = space_invaders_step,
    .state_check = space_invaders_check,
};
