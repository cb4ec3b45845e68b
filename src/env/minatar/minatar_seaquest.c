/* MinAtar/Seaquest-v1 as a cudarl env def: thin wrappers over the per-env code of
 * minatar_seaquest_step.h (the rules, and what each channel and action means). */
#include "env/env_check.h"
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

/* Objects `name` (n of them, of at most cap): on the grid (x 0..9, y in rows_lo..rows_hi), a
 * direction of 0 or 1, timers within max_timer and max_shot. */
static int check_objects(char *why, size_t cap, const char *name, const cr_minatar_seaquest_obj *v,
                         int32_t n, int max_n, int rows_lo, int rows_hi, int max_timer,
                         int max_shot) {
    char field[48];
    snprintf(field, sizeof field, "n_%s", name);
    if (cr_check_int(why, cap, field, n, 0, max_n)) return 1;
    for (int i = 0; i < n; i++) {
        const cr_minatar_seaquest_obj *o = &v[i];
        struct { const char *f; int value, lo, hi; } k[] = {
            {"x", o->x, 0, 9}, {"y", o->y, rows_lo, rows_hi}, {"dir", o->dir, 0, 1},
            {"timer", o->timer, 0, max_timer}, {"shot", o->shot, 0, max_shot}};
        for (size_t j = 0; j < sizeof k / sizeof k[0]; j++) {
            snprintf(field, sizeof field, "%s[%d].%s", name, i, k[j].f);
            if (cr_check_int(why, cap, field, k[j].value, k[j].lo, k[j].hi)) return 1;
        }
    }
    return 0;
}

/* The ranges the game keeps: the sub in rows 0-8, oxygen up to 200 (-1 once it ran out: the
 * game is over), the diver bar up to 6 (below 0 after paying for 6 divers: see the step's
 * header), speeds and timers between their ramped-down floors and their initial values, at most
 * 19 ramps (spawn interval 20 down to 1), and list lengths within their capacities. */
static int seaquest_check(const void *state, char *why, size_t cap) {
    const cr_minatar_seaquest_state *s = state;
    const int ramps = CR_SEAQUEST_INIT_SPAWN_SPEED - 1;
    return cr_check_rng(why, cap, "rng", &s->rng) ||
           cr_check_int(why, cap, "last_action", s->last_action, 0, CR_MINATAR_FULL_ACTIONS - 1) ||
           cr_check_int(why, cap, "oxygen", s->oxygen, -1, CR_SEAQUEST_MAX_OXYGEN) ||
           cr_check_int(why, cap, "diver_count", s->diver_count, -(1 << 30), 6) ||
           cr_check_int(why, cap, "sub_x", s->sub_x, 0, 9) ||
           cr_check_int(why, cap, "sub_y", s->sub_y, 0, 8) ||
           cr_check_int(why, cap, "sub_or", s->sub_or, 0, 1) ||
           cr_check_int(why, cap, "e_spawn_speed", s->e_spawn_speed, 1,
                        CR_SEAQUEST_INIT_SPAWN_SPEED) ||
           cr_check_int(why, cap, "e_spawn_timer", s->e_spawn_timer, 0,
                        CR_SEAQUEST_INIT_SPAWN_SPEED) ||
           cr_check_int(why, cap, "d_spawn_timer", s->d_spawn_timer, 0,
                        CR_SEAQUEST_DIVER_SPAWN_SPEED) ||
           cr_check_int(why, cap, "move_speed", s->move_speed, 2, CR_SEAQUEST_INIT_MOVE_INTERVAL) ||
           cr_check_int(why, cap, "ramp_index", s->ramp_index, 0, ramps) ||
           cr_check_int(why, cap, "shot_timer", s->shot_timer, 0, CR_SEAQUEST_SHOT_COOL_DOWN) ||
           cr_check_int(why, cap, "surface", s->surface, 0, 1) ||
           cr_check_int(why, cap, "terminal", s->terminal, 0, 1) ||
           cr_check_int(why, cap, "overflow", s->overflow, 0, 1) ||
           check_objects(why, cap, "fish", s->fish, s->n_fish, CR_SEAQUEST_MAX_ENEMIES, 1, 8,
                         CR_SEAQUEST_INIT_MOVE_INTERVAL, 0) ||
           check_objects(why, cap, "subs", s->subs, s->n_subs, CR_SEAQUEST_MAX_ENEMIES, 1, 8,
                         CR_SEAQUEST_INIT_MOVE_INTERVAL, CR_SEAQUEST_ENEMY_SHOT_INTERVAL) ||
           check_objects(why, cap, "e_bullets", s->e_bullets, s->n_e_bullets,
                         CR_SEAQUEST_MAX_E_BULLETS, 1, 8, 0, 0) ||
           check_objects(why, cap, "f_bullets", s->f_bullets, s->n_f_bullets,
                         CR_SEAQUEST_MAX_F_BULLETS, 0, 8, 0, 0) ||
           check_objects(why, cap, "divers", s->divers, s->n_divers, CR_SEAQUEST_MAX_DIVERS, 1, 8,
                         CR_SEAQUEST_DIVER_MOVE_INTERVAL, 0);
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
    .state_check = seaquest_check,
};
