/* MinAtar/Asterix-v1 as a cudarl env def: thin wrappers over the per-env code of
 * minatar_asterix_step.h (the rules, and what each channel and action means). */
#include "env/env_check.h"
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

/* The ranges the game keeps: the player in rows 1-8, a live entity on the grid, speeds and
 * timers between their ramped-down floor and their initial value (a timer counts down to 0 and
 * is set back), at most 9 ramps (spawn speed 10 down to 1). */
static int asterix_check(const void *state, char *why, size_t cap) {
    const cr_minatar_asterix_state *s = state;
    if (cr_check_rng(why, cap, "rng", &s->rng) ||
        cr_check_int(why, cap, "last_action", s->last_action, 0, CR_MINATAR_FULL_ACTIONS - 1) ||
        cr_check_int(why, cap, "player_x", s->player_x, 0, 9) ||
        cr_check_int(why, cap, "player_y", s->player_y, 1, 8) ||
        cr_check_int(why, cap, "spawn_speed", s->spawn_speed, 1, CR_ASTERIX_INIT_SPAWN_SPEED) ||
        cr_check_int(why, cap, "spawn_timer", s->spawn_timer, 0, CR_ASTERIX_INIT_SPAWN_SPEED) ||
        cr_check_int(why, cap, "move_speed", s->move_speed, 1, CR_ASTERIX_INIT_MOVE_INTERVAL) ||
        cr_check_int(why, cap, "move_timer", s->move_timer, 0, CR_ASTERIX_INIT_MOVE_INTERVAL) ||
        cr_check_int(why, cap, "ramp_timer", s->ramp_timer, -1, CR_ASTERIX_RAMP_INTERVAL) ||
        cr_check_int(why, cap, "ramp_index", s->ramp_index, 0, CR_ASTERIX_INIT_SPAWN_SPEED - 1) ||
        cr_check_int(why, cap, "terminal", s->terminal, 0, 1))
        return 1;
    for (int i = 0; i < CR_ASTERIX_SLOTS; i++) {
        const cr_minatar_asterix_entity *e = &s->entities[i];
        char name[32];
        snprintf(name, sizeof name, "entities[%d].alive", i);
        if (cr_check_int(why, cap, name, e->alive, 0, 1)) return 1;
        snprintf(name, sizeof name, "entities[%d].lr", i);
        if (cr_check_int(why, cap, name, e->lr, 0, 1)) return 1;
        snprintf(name, sizeof name, "entities[%d].gold", i);
        if (cr_check_int(why, cap, name, e->gold, 0, 1)) return 1;
        snprintf(name, sizeof name, "entities[%d].x", i);
        if (e->alive && cr_check_int(why, cap, name, e->x, 0, 9)) return 1;
    }
    return 0;
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
    .state_check = asterix_check,
};
