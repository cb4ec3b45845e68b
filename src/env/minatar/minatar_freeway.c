/* MinAtar/Freeway-v1 as a cudarl env def: thin wrappers over the per-env code of
 * minatar_freeway_step.h (the rules, and what each channel and action means). */
#include "env/env_check.h"
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

/* The ranges the game keeps: the chicken in rows 0-9, cars on the grid at speeds -5..5 with
 * their timers counting down from |speed|, the timers within their initial values (the episode
 * terminates once terminate_timer drops below 0). */
static int freeway_check(const void *state, char *why, size_t cap) {
    const cr_minatar_freeway_state *s = state;
    if (cr_check_rng(why, cap, "rng", &s->rng) ||
        cr_check_int(why, cap, "last_action", s->last_action, 0, CR_MINATAR_FULL_ACTIONS - 1) ||
        cr_check_int(why, cap, "pos", s->pos, 0, 9) ||
        cr_check_int(why, cap, "move_timer", s->move_timer, 0, CR_FREEWAY_PLAYER_SPEED) ||
        cr_check_int(why, cap, "terminate_timer", s->terminate_timer, -1, CR_FREEWAY_TIME_LIMIT) ||
        cr_check_int(why, cap, "terminal", s->terminal, 0, 1))
        return 1;
    for (int i = 0; i < CR_FREEWAY_CARS; i++) {
        const cr_minatar_freeway_car *c = &s->cars[i];
        char name[32];
        snprintf(name, sizeof name, "cars[%d].x", i);
        if (cr_check_int(why, cap, name, c->x, 0, 9)) return 1;
        snprintf(name, sizeof name, "cars[%d].speed", i);
        if (cr_check_int(why, cap, name, c->speed, -5, 5)) return 1;
        snprintf(name, sizeof name, "cars[%d].timer", i);
        if (cr_check_int(why, cap, name, c->timer, 0, 5)) return 1;
    }
    return 0;
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
    .state_check = freeway_check,
};
