/* MinAtar Space Invaders for one env (minatar 1.0.15, environments/space_invaders.py, as
 * MinAtar/SpaceInvaders-v1 wraps it, difficulty ramping on): the single definition that the CPU
 * env def (minatar_space_invaders.c) calls and a CUDA kernel can run one thread per env.
 *
 * A cannon on the bottom row shoots upward (at most once every 5 steps) at a 4 x 6 block of
 * aliens (+1 each). The block moves sideways one cell every min(aliens left, move interval)
 * steps; when it touches the wall it is heading for, it steps down a row instead (np.roll: a
 * row pushed off the bottom would come back at the top, but that step has already ended the
 * game) and turns. Every 10 steps (first on step 11) the alien nearest the cannon's column
 * (ties: the left one) drops a bullet from its own cell. The game terminates when an alien
 * bullet or an alien reaches the cannon's cell. A cleared block is replaced, and the move
 * interval drops by one per wave from 12 to 6. Bullets fly one row per step. Channels:
 * 0 cannon, 1 alien, 2 alien_left, 3 alien_right (the alien map, in the channel of the block's
 * direction), 4 friendly bullet, 5 enemy bullet. Minimal action set of SpaceInvaders-v1: 0 noop,
 * 1 left, 2 right, 3 fire. The game draws nothing at random: the only draw is the sticky
 * action's. */
#ifndef CUDARL_MINATAR_SPACE_INVADERS_STEP_H
#define CUDARL_MINATAR_SPACE_INVADERS_STEP_H

#include "env/minatar/minatar_common.h"

#define CR_SPACE_INVADERS_CHANNELS 6
#define CR_SPACE_INVADERS_NUM_ACTIONS 4
#define CR_SPACE_INVADERS_SHOT_COOL_DOWN 5
#define CR_SPACE_INVADERS_ENEMY_MOVE_INTERVAL 12
#define CR_SPACE_INVADERS_ENEMY_SHOT_INTERVAL 10

typedef struct cr_minatar_space_invaders_state {
    cr_philox_state rng;
    int32_t last_action; /* full action set; survives resets, as MinAtar's */
    int32_t pos;         /* the cannon's column */
    int32_t alien_dir;   /* -1 left, +1 right */
    int32_t enemy_move_interval;
    int32_t alien_move_timer, alien_shot_timer, shot_timer;
    int32_t ramp_index;
    int32_t terminal;
    uint8_t alien[CR_MINATAR_SIZE][CR_MINATAR_SIZE];    /* [y][x] */
    uint8_t f_bullet[CR_MINATAR_SIZE][CR_MINATAR_SIZE]; /* the cannon's bullets */
    uint8_t e_bullet[CR_MINATAR_SIZE][CR_MINATAR_SIZE]; /* the aliens' bullets */
} cr_minatar_space_invaders_state;

/* Seeds the env with stream `index` of `seed`; the sticky action starts as noop. */
CR_HD static inline void cr_minatar_space_invaders_seed(cr_minatar_space_invaders_state *s,
                                                        uint64_t seed, uint64_t index) {
    cr_philox_seed_hd(&s->rng, seed, index);
    s->last_action = CR_MINATAR_NOOP;
}

/* Writes s's observation obs (6, 10, 10): Env.state() transposed to channels first. */
CR_HD static inline void cr_minatar_space_invaders_observe(
    const cr_minatar_space_invaders_state *s, uint8_t *obs) {
    cr_minatar_obs_clear(obs, CR_SPACE_INVADERS_CHANNELS);
    cr_minatar_obs_set(obs, 0, 9, s->pos);
    int dir_channel = s->alien_dir < 0 ? 2 : 3;
    for (int y = 0; y < CR_MINATAR_SIZE; y++)
        for (int x = 0; x < CR_MINATAR_SIZE; x++) {
            if (s->alien[y][x]) {
                cr_minatar_obs_set(obs, 1, y, x);
                cr_minatar_obs_set(obs, dir_channel, y, x);
            }
            if (s->f_bullet[y][x]) cr_minatar_obs_set(obs, 4, y, x);
            if (s->e_bullet[y][x]) cr_minatar_obs_set(obs, 5, y, x);
        }
}

/* alien_map[0:4, 2:8] = 1. */
CR_HD static inline void cr_minatar_space_invaders_fill_aliens(cr_minatar_space_invaders_state *s) {
    for (int y = 0; y < 4; y++)
        for (int x = 2; x < 8; x++) s->alien[y][x] = 1;
}

/* Env.reset: cannon in column 5, a full block heading left, no bullets. Writes obs. No draws. */
CR_HD static inline void cr_minatar_space_invaders_reset(cr_minatar_space_invaders_state *s,
                                                         uint8_t *obs) {
    s->pos = 5;
    for (int y = 0; y < CR_MINATAR_SIZE; y++)
        for (int x = 0; x < CR_MINATAR_SIZE; x++)
            s->alien[y][x] = s->f_bullet[y][x] = s->e_bullet[y][x] = 0;
    cr_minatar_space_invaders_fill_aliens(s);
    s->alien_dir = -1;
    s->enemy_move_interval = CR_SPACE_INVADERS_ENEMY_MOVE_INTERVAL;
    s->alien_move_timer = s->enemy_move_interval;
    s->alien_shot_timer = CR_SPACE_INVADERS_ENEMY_SHOT_INTERVAL;
    s->ramp_index = 0;
    s->shot_timer = 0;
    s->terminal = 0;
    cr_minatar_space_invaders_observe(s, obs);
}

/* np.roll(m, shift, axis=0) for shift +-1: row y of the result is row y - shift (mod 10). */
CR_HD static inline void cr_minatar_roll_rows(uint8_t m[CR_MINATAR_SIZE][CR_MINATAR_SIZE],
                                              int shift) {
    uint8_t t[CR_MINATAR_SIZE][CR_MINATAR_SIZE];
    for (int y = 0; y < CR_MINATAR_SIZE; y++)
        for (int x = 0; x < CR_MINATAR_SIZE; x++)
            t[y][x] = m[(y - shift + CR_MINATAR_SIZE) % CR_MINATAR_SIZE][x];
    for (int y = 0; y < CR_MINATAR_SIZE; y++)
        for (int x = 0; x < CR_MINATAR_SIZE; x++) m[y][x] = t[y][x];
}

/* np.roll(m, shift, axis=1) for shift +-1: column x of the result is column x - shift (mod 10). */
CR_HD static inline void cr_minatar_roll_cols(uint8_t m[CR_MINATAR_SIZE][CR_MINATAR_SIZE],
                                              int shift) {
    for (int y = 0; y < CR_MINATAR_SIZE; y++) {
        uint8_t t[CR_MINATAR_SIZE];
        for (int x = 0; x < CR_MINATAR_SIZE; x++)
            t[x] = m[y][(x - shift + CR_MINATAR_SIZE) % CR_MINATAR_SIZE];
        for (int x = 0; x < CR_MINATAR_SIZE; x++) m[y][x] = t[x];
    }
}

/* Aliens standing in the whole map, in row y (x < 0), or in column x (y < 0). */
CR_HD static inline int cr_minatar_space_invaders_count(const cr_minatar_space_invaders_state *s,
                                                        int y, int x) {
    int n = 0;
    for (int yy = 0; yy < CR_MINATAR_SIZE; yy++)
        for (int xx = 0; xx < CR_MINATAR_SIZE; xx++)
            n += s->alien[yy][xx] && (y < 0 || yy == y) && (x < 0 || xx == x);
    return n;
}

/* Env._nearest_alien: columns in order of distance from `pos` (ties: the left one first, as
 * Python's stable sort leaves them); the lowest alien of the first non-empty column drops an
 * enemy bullet in its own cell. The block is never empty here (it is refilled every step). */
CR_HD static inline void cr_minatar_space_invaders_alien_shoot(cr_minatar_space_invaders_state *s) {
    for (int d = 0; d < CR_MINATAR_SIZE; d++)
        for (int side = -1; side <= 1; side += 2) {
            int x = s->pos + side * d;
            if (x < 0 || x > 9 || (d == 0 && side > 0)) continue;
            for (int y = CR_MINATAR_SIZE - 1; y >= 0; y--)
                if (s->alien[y][x]) {
                    s->e_bullet[y][x] = 1;
                    return;
                }
        }
}

/* Env.act with full action `a`; returns the reward. */
CR_HD static inline int cr_minatar_space_invaders_act(cr_minatar_space_invaders_state *s, int a) {
    int r = 0;
    if (s->terminal) return r;
    if (a == CR_MINATAR_FIRE && s->shot_timer == 0) {
        s->f_bullet[9][s->pos] = 1;
        s->shot_timer = CR_SPACE_INVADERS_SHOT_COOL_DOWN;
    } else if (a == CR_MINATAR_LEFT) {
        s->pos = s->pos - 1 > 0 ? s->pos - 1 : 0;
    } else if (a == CR_MINATAR_RIGHT) {
        s->pos = s->pos + 1 < 9 ? s->pos + 1 : 9;
    }

    cr_minatar_roll_rows(s->f_bullet, -1); /* friendly bullets fly up, off the top */
    for (int x = 0; x < CR_MINATAR_SIZE; x++) s->f_bullet[9][x] = 0;
    cr_minatar_roll_rows(s->e_bullet, 1); /* enemy bullets fall, off the bottom */
    for (int x = 0; x < CR_MINATAR_SIZE; x++) s->e_bullet[0][x] = 0;
    if (s->e_bullet[9][s->pos]) s->terminal = 1;

    if (s->alien[9][s->pos]) s->terminal = 1;
    if (s->alien_move_timer == 0) {
        int n = cr_minatar_space_invaders_count(s, -1, -1);
        s->alien_move_timer = n < s->enemy_move_interval ? n : s->enemy_move_interval;
        if ((cr_minatar_space_invaders_count(s, -1, 0) > 0 && s->alien_dir < 0) ||
            (cr_minatar_space_invaders_count(s, -1, 9) > 0 && s->alien_dir > 0)) {
            s->alien_dir = -s->alien_dir;
            if (cr_minatar_space_invaders_count(s, 9, -1) > 0) s->terminal = 1;
            cr_minatar_roll_rows(s->alien, 1);
        } else {
            cr_minatar_roll_cols(s->alien, s->alien_dir);
        }
        if (s->alien[9][s->pos]) s->terminal = 1;
    }
    if (s->alien_shot_timer == 0) {
        s->alien_shot_timer = CR_SPACE_INVADERS_ENEMY_SHOT_INTERVAL;
        cr_minatar_space_invaders_alien_shoot(s);
    }

    for (int y = 0; y < CR_MINATAR_SIZE; y++) /* kill_locations: an alien and a bullet meet */
        for (int x = 0; x < CR_MINATAR_SIZE; x++)
            if (s->alien[y][x] && s->f_bullet[y][x]) {
                r += 1;
                s->alien[y][x] = s->f_bullet[y][x] = 0;
            }

    if (s->shot_timer > 0) s->shot_timer -= 1;
    s->alien_move_timer -= 1;
    s->alien_shot_timer -= 1;
    if (cr_minatar_space_invaders_count(s, -1, -1) == 0) {
        if (s->enemy_move_interval > 6) { /* ramping (on in every MinAtar gym id) */
            s->enemy_move_interval -= 1;
            s->ramp_index += 1;
        }
        cr_minatar_space_invaders_fill_aliens(s);
    }
    return r;
}

/* Environment.act (sticky action, then Env.act) with action (0..3) of the minimal set; writes
 * obs (6, 10, 10), reward and terminated. */
CR_HD static inline void cr_minatar_space_invaders_step(cr_minatar_space_invaders_state *s,
                                                        int32_t action, uint8_t *obs,
                                                        float *reward, uint8_t *terminated) {
    const int action_set[CR_SPACE_INVADERS_NUM_ACTIONS] = {CR_MINATAR_NOOP, CR_MINATAR_LEFT,
                                                           CR_MINATAR_RIGHT, CR_MINATAR_FIRE};
    int a = cr_minatar_sticky(&s->rng, &s->last_action, action_set[action]);
    *reward = (float)cr_minatar_space_invaders_act(s, a);
    *terminated = (uint8_t)s->terminal;
    cr_minatar_space_invaders_observe(s, obs);
}

#endif
