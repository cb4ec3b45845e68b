/* MinAtar Breakout for one env (minatar 1.0.15, environments/breakout.py, as MinAtar/Breakout-v1
 * wraps it): the single definition that the CPU env def (minatar_breakout.c) calls and a CUDA
 * kernel can run one thread per env.
 *
 * A paddle on the bottom row bounces a ball that travels along diagonals and breaks three rows
 * of bricks (rows 1-3), +1 per brick. The episode terminates when the ball reaches the bottom
 * row beside the paddle. Rules kept as MinAtar has them:
 *   - a ball that leaves the side walls is clamped to the edge column for that step;
 *   - after breaking a brick the ball does not break another on the next step: it enters that
 *     brick's cell and leaves it standing (MinAtar's `strike` flag);
 *   - a cleared wall is rebuilt only when the ball next comes down to the paddle's row.
 * Channels: 0 paddle, 1 ball, 2 trail (the ball's previous cell), 3 brick. Minimal action set of
 * Breakout-v1: 0 noop, 1 left, 2 right (MinAtar's n, l, r). One random draw per reset (the
 * ball's start side), one per step (the sticky action). */
#ifndef CUDARL_MINATAR_BREAKOUT_STEP_H
#define CUDARL_MINATAR_BREAKOUT_STEP_H

#include "env/minatar/minatar_common.h"

#define CR_BREAKOUT_CHANNELS 4
#define CR_BREAKOUT_NUM_ACTIONS 3

typedef struct cr_minatar_breakout_state {
    cr_philox_state rng;
    int32_t last_action;     /* full action set; survives resets, as MinAtar's */
    int32_t ball_x, ball_y;
    int32_t ball_dir;        /* 0: up-left, 1: up-right, 2: down-right, 3: down-left */
    int32_t pos;             /* paddle column */
    int32_t last_x, last_y;  /* the ball's previous cell */
    int32_t strike;          /* the ball broke a brick on the previous step */
    int32_t terminal;
    uint8_t brick[CR_MINATAR_SIZE][CR_MINATAR_SIZE]; /* [y][x] */
} cr_minatar_breakout_state;

/* Seeds the env with stream `index` of `seed`; the sticky action starts as noop. */
CR_HD static inline void cr_minatar_breakout_seed(cr_minatar_breakout_state *s, uint64_t seed,
                                                  uint64_t index) {
    cr_philox_seed_hd(&s->rng, seed, index);
    s->last_action = CR_MINATAR_NOOP;
}

/* Writes s's observation obs (4, 10, 10): Env.state() transposed to channels first. */
CR_HD static inline void cr_minatar_breakout_observe(const cr_minatar_breakout_state *s,
                                                     uint8_t *obs) {
    cr_minatar_obs_clear(obs, CR_BREAKOUT_CHANNELS);
    cr_minatar_obs_set(obs, 1, s->ball_y, s->ball_x);
    cr_minatar_obs_set(obs, 0, 9, s->pos);
    cr_minatar_obs_set(obs, 2, s->last_y, s->last_x);
    for (int y = 0; y < CR_MINATAR_SIZE; y++)
        for (int x = 0; x < CR_MINATAR_SIZE; x++)
            if (s->brick[y][x]) cr_minatar_obs_set(obs, 3, y, x);
}

/* Env.reset: the ball starts in row 3 at the left edge heading down-right or at the right edge
 * heading down-left (randint(2)); paddle in column 4; bricks in rows 1-3. Writes obs. */
CR_HD static inline void cr_minatar_breakout_reset(cr_minatar_breakout_state *s, uint8_t *obs) {
    s->ball_y = 3;
    int right = cr_minatar_randint(&s->rng, 0, 2);
    s->ball_x = right ? 9 : 0;
    s->ball_dir = right ? 3 : 2;
    s->pos = 4;
    for (int y = 0; y < CR_MINATAR_SIZE; y++)
        for (int x = 0; x < CR_MINATAR_SIZE; x++) s->brick[y][x] = y >= 1 && y <= 3;
    s->strike = 0;
    s->last_x = s->ball_x;
    s->last_y = s->ball_y;
    s->terminal = 0;
    cr_minatar_breakout_observe(s, obs);
}

/* Whether any brick is standing (np.count_nonzero(brick_map) != 0). */
CR_HD static inline int cr_minatar_breakout_any_brick(const cr_minatar_breakout_state *s) {
    for (int y = 0; y < CR_MINATAR_SIZE; y++)
        for (int x = 0; x < CR_MINATAR_SIZE; x++)
            if (s->brick[y][x]) return 1;
    return 0;
}

/* Env.act with full action `a`; returns the reward. */
CR_HD static inline int cr_minatar_breakout_act(cr_minatar_breakout_state *s, int a) {
    int r = 0;
    if (s->terminal) return r;
    if (a == CR_MINATAR_LEFT) s->pos = s->pos - 1 > 0 ? s->pos - 1 : 0;
    else if (a == CR_MINATAR_RIGHT) s->pos = s->pos + 1 < 9 ? s->pos + 1 : 9;

    s->last_x = s->ball_x;
    s->last_y = s->ball_y;
    int new_x = s->ball_x + (s->ball_dir == 1 || s->ball_dir == 2 ? 1 : -1);
    int new_y = s->ball_y + (s->ball_dir >= 2 ? 1 : -1);

    int strike_toggle = 0;
    if (new_x < 0 || new_x > 9) { /* side wall: clamp, reflect horizontally ([1,0,3,2]) */
        new_x = new_x < 0 ? 0 : 9;
        s->ball_dir ^= 1;
    }
    if (new_y < 0) { /* top wall: reflect vertically ([3,2,1,0]) */
        new_y = 0;
        s->ball_dir = 3 - s->ball_dir;
    } else if (s->brick[new_y][new_x]) {
        strike_toggle = 1;
        if (!s->strike) {
            r += 1;
            s->strike = 1;
            s->brick[new_y][new_x] = 0;
            new_y = s->last_y;
            s->ball_dir = 3 - s->ball_dir;
        }
    } else if (new_y == 9) {
        if (!cr_minatar_breakout_any_brick(s))
            for (int y = 1; y <= 3; y++)
                for (int x = 0; x < CR_MINATAR_SIZE; x++) s->brick[y][x] = 1;
        if (s->ball_x == s->pos) { /* the paddle is under the ball: reflect vertically */
            s->ball_dir = 3 - s->ball_dir;
            new_y = s->last_y;
        } else if (new_x == s->pos) { /* the ball hits the paddle's corner: reverse ([2,3,0,1]) */
            s->ball_dir ^= 2;
            new_y = s->last_y;
        } else {
            s->terminal = 1;
        }
    }
    if (!strike_toggle) s->strike = 0;
    s->ball_x = new_x;
    s->ball_y = new_y;
    return r;
}

/* Environment.act (sticky action, then Env.act) with action (0..2) of the minimal set; writes
 * obs (4, 10, 10), reward and terminated. */
CR_HD static inline void cr_minatar_breakout_step(cr_minatar_breakout_state *s, int32_t action,
                                                  uint8_t *obs, float *reward,
                                                  uint8_t *terminated) {
    const int action_set[CR_BREAKOUT_NUM_ACTIONS] = {CR_MINATAR_NOOP, CR_MINATAR_LEFT,
                                                     CR_MINATAR_RIGHT};
    int a = cr_minatar_sticky(&s->rng, &s->last_action, action_set[action]);
    *reward = (float)cr_minatar_breakout_act(s, a);
    *terminated = (uint8_t)s->terminal;
    cr_minatar_breakout_observe(s, obs);
}

#endif
