/* MinAtar Asterix for one env (minatar 1.0.15, environments/asterix.py, as MinAtar/Asterix-v1
 * wraps it, difficulty ramping on): the single definition that the CPU env def
 * (minatar_asterix.c) calls and a CUDA kernel can run one thread per env.
 *
 * The player moves in rows 1-8. Each of rows 1-8 holds at most one entity (slot i is row i+1),
 * spawned at the left or right edge every spawn_speed + 1 steps into a free row: an enemy or,
 * with probability 1/3, gold (+1 when touched). Touching an enemy terminates. Entities move
 * one cell every move_speed + 1 steps and vanish past the edge. Ramping: on step 102 of an
 * episode and every 102 steps after, spawn_speed drops by one (to 1) and, on every other ramp,
 * move_speed too (to 1).
 * Channels: 0 player, 1 enemy, 2 trail (the cell an entity came from), 3 gold. Minimal action
 * set of Asterix-v1: 0 noop, 1 left, 2 up, 3 right, 4 down. Random draws per step: the sticky
 * action, and on a spawn step rand() (side), rand() (gold) and, when a row is free,
 * randint(free rows). */
#ifndef CUDARL_MINATAR_ASTERIX_STEP_H
#define CUDARL_MINATAR_ASTERIX_STEP_H

#include "env/minatar/minatar_common.h"

#define CR_ASTERIX_CHANNELS 4
#define CR_ASTERIX_NUM_ACTIONS 5
#define CR_ASTERIX_SLOTS 8
#define CR_ASTERIX_RAMP_INTERVAL 100
#define CR_ASTERIX_INIT_SPAWN_SPEED 10
#define CR_ASTERIX_INIT_MOVE_INTERVAL 5

/* One entity: MinAtar's [x, slot + 1, lr, is_gold], or None when !alive. */
typedef struct cr_minatar_asterix_entity {
    int8_t alive;
    int8_t x;
    int8_t lr;   /* moves right */
    int8_t gold;
} cr_minatar_asterix_entity;

typedef struct cr_minatar_asterix_state {
    cr_philox_state rng;
    int32_t last_action; /* full action set; survives resets, as MinAtar's */
    int32_t player_x, player_y;
    int32_t spawn_speed, spawn_timer;
    int32_t move_speed, move_timer;
    int32_t ramp_timer, ramp_index;
    int32_t terminal;
    cr_minatar_asterix_entity entities[CR_ASTERIX_SLOTS];
} cr_minatar_asterix_state;

/* Seeds the env with stream `index` of `seed`; the sticky action starts as noop. */
CR_HD static inline void cr_minatar_asterix_seed(cr_minatar_asterix_state *s, uint64_t seed,
                                                 uint64_t index) {
    cr_philox_seed_hd(&s->rng, seed, index);
    s->last_action = CR_MINATAR_NOOP;
}

/* Writes s's observation obs (4, 10, 10): Env.state() transposed to channels first. */
CR_HD static inline void cr_minatar_asterix_observe(const cr_minatar_asterix_state *s,
                                                    uint8_t *obs) {
    cr_minatar_obs_clear(obs, CR_ASTERIX_CHANNELS);
    cr_minatar_obs_set(obs, 0, s->player_y, s->player_x);
    for (int i = 0; i < CR_ASTERIX_SLOTS; i++) {
        const cr_minatar_asterix_entity *e = &s->entities[i];
        if (!e->alive) continue;
        cr_minatar_obs_set(obs, e->gold ? 3 : 1, i + 1, e->x);
        int back_x = e->lr ? e->x - 1 : e->x + 1;
        if (back_x >= 0 && back_x <= 9) cr_minatar_obs_set(obs, 2, i + 1, back_x);
    }
}

/* Env.reset: player at (5, 5), no entities, initial speeds. Writes obs. No random draws. */
CR_HD static inline void cr_minatar_asterix_reset(cr_minatar_asterix_state *s, uint8_t *obs) {
    s->player_x = 5;
    s->player_y = 5;
    for (int i = 0; i < CR_ASTERIX_SLOTS; i++) s->entities[i].alive = 0;
    s->spawn_speed = CR_ASTERIX_INIT_SPAWN_SPEED;
    s->spawn_timer = s->spawn_speed;
    s->move_speed = CR_ASTERIX_INIT_MOVE_INTERVAL;
    s->move_timer = s->move_speed;
    s->ramp_timer = CR_ASTERIX_RAMP_INTERVAL;
    s->ramp_index = 0;
    s->terminal = 0;
    cr_minatar_asterix_observe(s, obs);
}

/* Env._spawn_entity: side and kind are drawn first; then a free slot, if there is one. */
CR_HD static inline void cr_minatar_asterix_spawn(cr_minatar_asterix_state *s) {
    int lr = cr_minatar_rand(&s->rng) < 1.0 / 2;
    int gold = cr_minatar_rand(&s->rng) < 1.0 / 3;
    int free_slots[CR_ASTERIX_SLOTS], n = 0;
    for (int i = 0; i < CR_ASTERIX_SLOTS; i++)
        if (!s->entities[i].alive) free_slots[n++] = i;
    if (n == 0) return;
    int slot = free_slots[cr_minatar_randint(&s->rng, 0, n)];
    cr_minatar_asterix_entity *e = &s->entities[slot];
    e->alive = 1;
    e->x = (int8_t)(lr ? 0 : 9);
    e->lr = (int8_t)lr;
    e->gold = (int8_t)gold;
}

/* The player touches entity i (in its row, at its column): gold is picked up, an enemy kills. */
CR_HD static inline int cr_minatar_asterix_touch(cr_minatar_asterix_state *s, int i) {
    if (s->entities[i].gold) {
        s->entities[i].alive = 0;
        return 1;
    }
    s->terminal = 1;
    return 0;
}

/* Env.act with full action `a`; returns the reward. */
CR_HD static inline int cr_minatar_asterix_act(cr_minatar_asterix_state *s, int a) {
    int r = 0;
    if (s->terminal) return r;
    if (s->spawn_timer == 0) {
        cr_minatar_asterix_spawn(s);
        s->spawn_timer = s->spawn_speed;
    }
    if (a == CR_MINATAR_LEFT) s->player_x = s->player_x - 1 > 0 ? s->player_x - 1 : 0;
    else if (a == CR_MINATAR_RIGHT) s->player_x = s->player_x + 1 < 9 ? s->player_x + 1 : 9;
    else if (a == CR_MINATAR_UP) s->player_y = s->player_y - 1 > 1 ? s->player_y - 1 : 1;
    else if (a == CR_MINATAR_DOWN) s->player_y = s->player_y + 1 < 8 ? s->player_y + 1 : 8;

    for (int i = 0; i < CR_ASTERIX_SLOTS; i++) {
        const cr_minatar_asterix_entity *e = &s->entities[i];
        if (e->alive && e->x == s->player_x && i + 1 == s->player_y)
            r += cr_minatar_asterix_touch(s, i);
    }
    if (s->move_timer == 0) {
        s->move_timer = s->move_speed;
        for (int i = 0; i < CR_ASTERIX_SLOTS; i++) {
            cr_minatar_asterix_entity *e = &s->entities[i];
            if (!e->alive) continue;
            e->x = (int8_t)(e->x + (e->lr ? 1 : -1));
            if (e->x < 0 || e->x > 9) e->alive = 0;
            else if (e->x == s->player_x && i + 1 == s->player_y)
                r += cr_minatar_asterix_touch(s, i);
        }
    }
    s->spawn_timer -= 1;
    s->move_timer -= 1;

    if (s->spawn_speed > 1 || s->move_speed > 1) { /* ramping (on in every MinAtar gym id) */
        if (s->ramp_timer >= 0) {
            s->ramp_timer -= 1;
        } else {
            if (s->move_speed > 1 && s->ramp_index % 2) s->move_speed -= 1;
            if (s->spawn_speed > 1) s->spawn_speed -= 1;
            s->ramp_index += 1;
            s->ramp_timer = CR_ASTERIX_RAMP_INTERVAL;
        }
    }
    return r;
}

/* Environment.act (sticky action, then Env.act) with action (0..4) of the minimal set; writes
 * obs (4, 10, 10), reward and terminated. */
CR_HD static inline void cr_minatar_asterix_step(cr_minatar_asterix_state *s, int32_t action,
                                                 uint8_t *obs, float *reward,
                                                 uint8_t *terminated) {
    /* Asterix-v1's minimal set n l u r d is the full set's first five actions. */
    int a = cr_minatar_sticky(&s->rng, &s->last_action, action);
    *reward = (float)cr_minatar_asterix_act(s, a);
    *terminated = (uint8_t)s->terminal;
    cr_minatar_asterix_observe(s, obs);
}

#endif
