/* MinAtar Freeway for one env (minatar 1.0.15, environments/freeway.py, as MinAtar/Freeway-v1
 * wraps it): the single definition that the CPU env def (minatar_freeway.c) calls and a CUDA
 * kernel can run one thread per env.
 *
 * A chicken in column 4 crosses eight lanes of traffic (rows 1-8) from row 9 to row 0, moving
 * at most once every 3 steps; reaching row 0 gives +1, sends it back to row 9 and redraws every
 * car's speed and direction. A car hit sends it back to row 9. Car i (row i + 1) moves one cell
 * every |speed| + 1 steps (2 to 6; MinAtar's docstring says 1 to 5), wrapping around the edges.
 * The episode terminates on its 2501st step (MinAtar's terminate_timer starts at 2500 and ends
 * the game when it drops below 0): a termination of the MDP in MinAtar's terms, so cudarl
 * reports terminated, not truncated.
 * Channels: 0 chicken, 1 car, 2-6 the trail of a car of |speed| 1-5 (its previous cell).
 * Minimal action set of Freeway-v1: 0 noop, 1 up, 2 down. Random draws: 16 per reset and per
 * crossing (randint(1, 6) for each car's |speed|, then rand() for each car's direction); one
 * per step (the sticky action). */
#ifndef CUDARL_MINATAR_FREEWAY_STEP_H
#define CUDARL_MINATAR_FREEWAY_STEP_H

#include "env/minatar/minatar_common.h"

#define CR_FREEWAY_CHANNELS 7
#define CR_FREEWAY_NUM_ACTIONS 3
#define CR_FREEWAY_CARS 8
#define CR_FREEWAY_PLAYER_SPEED 3
#define CR_FREEWAY_TIME_LIMIT 2500

/* Car i of MinAtar's [x, i + 1, timer, speed]. */
typedef struct cr_minatar_freeway_car {
    int8_t x;
    int8_t timer; /* steps until the car next moves */
    int8_t speed; /* +-1..5: moves right when > 0 (0 only if rand() drew exactly 0.5) */
} cr_minatar_freeway_car;

typedef struct cr_minatar_freeway_state {
    cr_philox_state rng;
    int32_t last_action; /* full action set; survives resets, as MinAtar's */
    int32_t pos;         /* the chicken's row */
    int32_t move_timer;
    int32_t terminate_timer;
    int32_t terminal;
    cr_minatar_freeway_car cars[CR_FREEWAY_CARS];
} cr_minatar_freeway_state;

/* Seeds the env with stream `index` of `seed`; the sticky action starts as noop. */
CR_HD static inline void cr_minatar_freeway_seed(cr_minatar_freeway_state *s, uint64_t seed,
                                                 uint64_t index) {
    cr_philox_seed_hd(&s->rng, seed, index);
    s->last_action = CR_MINATAR_NOOP;
}

/* Writes s's observation obs (7, 10, 10): Env.state() transposed to channels first. */
CR_HD static inline void cr_minatar_freeway_observe(const cr_minatar_freeway_state *s,
                                                    uint8_t *obs) {
    cr_minatar_obs_clear(obs, CR_FREEWAY_CHANNELS);
    cr_minatar_obs_set(obs, 0, s->pos, 4);
    /* Python's loop variable `trail` outlives an iteration: a car of speed 0 (probability 2^-53
     * per draw) takes the previous car's trail channel; car 0 would raise there, we draw none. */
    int trail = -1;
    for (int i = 0; i < CR_FREEWAY_CARS; i++) {
        const cr_minatar_freeway_car *c = &s->cars[i];
        cr_minatar_obs_set(obs, 1, i + 1, c->x);
        int back_x = c->speed > 0 ? c->x - 1 : c->x + 1;
        if (back_x < 0) back_x = 9;
        else if (back_x > 9) back_x = 0;
        int speed = c->speed < 0 ? -c->speed : c->speed;
        if (speed >= 1 && speed <= 5) trail = 1 + speed;
        if (trail >= 0) cr_minatar_obs_set(obs, trail, i + 1, back_x);
    }
}

/* Env._randomize_cars: speeds = randint(1, 6, 8), directions = sign(rand(8) - 0.5); the cars
 * keep their columns unless `initialize` puts them all in column 0. */
CR_HD static inline void cr_minatar_freeway_randomize(cr_minatar_freeway_state *s, int initialize) {
    int speeds[CR_FREEWAY_CARS];
    for (int i = 0; i < CR_FREEWAY_CARS; i++) speeds[i] = cr_minatar_randint(&s->rng, 1, 6);
    for (int i = 0; i < CR_FREEWAY_CARS; i++) {
        double u = cr_minatar_rand(&s->rng);
        speeds[i] *= u < 0.5 ? -1 : u > 0.5 ? 1 : 0; /* np.sign(u - 0.5); u - 0.5 is exact */
    }
    for (int i = 0; i < CR_FREEWAY_CARS; i++) {
        cr_minatar_freeway_car *c = &s->cars[i];
        if (initialize) c->x = 0;
        c->timer = (int8_t)(speeds[i] < 0 ? -speeds[i] : speeds[i]);
        c->speed = (int8_t)speeds[i];
    }
}

/* Env.reset: cars randomized in column 0, chicken in row 9. Writes obs. */
CR_HD static inline void cr_minatar_freeway_reset(cr_minatar_freeway_state *s, uint8_t *obs) {
    cr_minatar_freeway_randomize(s, 1);
    s->pos = 9;
    s->move_timer = CR_FREEWAY_PLAYER_SPEED;
    s->terminate_timer = CR_FREEWAY_TIME_LIMIT;
    s->terminal = 0;
    cr_minatar_freeway_observe(s, obs);
}

/* Env.act with full action `a`; returns the reward. */
CR_HD static inline int cr_minatar_freeway_act(cr_minatar_freeway_state *s, int a) {
    int r = 0;
    if (s->terminal) return r;
    if (a == CR_MINATAR_UP && s->move_timer == 0) {
        s->move_timer = CR_FREEWAY_PLAYER_SPEED;
        s->pos = s->pos - 1 > 0 ? s->pos - 1 : 0;
    } else if (a == CR_MINATAR_DOWN && s->move_timer == 0) {
        s->move_timer = CR_FREEWAY_PLAYER_SPEED;
        s->pos = s->pos + 1 < 9 ? s->pos + 1 : 9;
    }
    if (s->pos == 0) { /* crossed */
        r += 1;
        cr_minatar_freeway_randomize(s, 0);
        s->pos = 9;
    }
    for (int i = 0; i < CR_FREEWAY_CARS; i++) {
        cr_minatar_freeway_car *c = &s->cars[i];
        if (c->x == 4 && i + 1 == s->pos) s->pos = 9;
        if (c->timer == 0) {
            c->timer = (int8_t)(c->speed < 0 ? -c->speed : c->speed);
            c->x = (int8_t)(c->x + (c->speed > 0 ? 1 : -1));
            if (c->x < 0) c->x = 9;
            else if (c->x > 9) c->x = 0;
            if (c->x == 4 && i + 1 == s->pos) s->pos = 9;
        } else {
            c->timer -= 1;
        }
    }
    if (s->move_timer > 0) s->move_timer -= 1;
    s->terminate_timer -= 1;
    if (s->terminate_timer < 0) s->terminal = 1;
    return r;
}

/* Environment.act (sticky action, then Env.act) with action (0..2) of the minimal set; writes
 * obs (7, 10, 10), reward and terminated. */
CR_HD static inline void cr_minatar_freeway_step(cr_minatar_freeway_state *s, int32_t action,
                                                 uint8_t *obs, float *reward,
                                                 uint8_t *terminated) {
    const int action_set[CR_FREEWAY_NUM_ACTIONS] = {CR_MINATAR_NOOP, CR_MINATAR_UP,
                                                    CR_MINATAR_DOWN};
    int a = cr_minatar_sticky(&s->rng, &s->last_action, action_set[action]);
    *reward = (float)cr_minatar_freeway_act(s, a);
    *terminated = (uint8_t)s->terminal;
    cr_minatar_freeway_observe(s, obs);
}

#endif
