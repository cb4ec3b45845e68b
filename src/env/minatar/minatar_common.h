/* What the five MinAtar games share (minatar 1.0.15, Young & Tian 2019): the random draws, the
 * sticky actions of minatar.Environment.act and the observation writes. CR_HD static inline, so
 * the CPU batch and a CUDA kernel (one thread per env) run the same code.
 *
 * Randomness. MinAtar draws from one numpy RandomState per env (Environment.seed hands the
 * wrapper's RandomState to the game, so the sticky-action draws and the game's draws share one
 * stream). Ours draw from the env's own Philox stream instead, in the same order and with the
 * same meaning as the numpy calls they stand for:
 *   random.rand()             -> cr_minatar_rand: uniform [0, 1), 53 bits (two Philox words)
 *   random.randint(lo, hi)    -> cr_minatar_randint: lo + floor(word * (hi - lo) / 2^32) (one word)
 *   random.rand(n), randint(lo, hi, n) -> n such draws, element 0 first.
 * tests/minatar_trace.py gives the unmodified Python game an object with exactly this rand/randint
 * (a Python Philox), so the two produce the same trajectories draw for draw.
 *
 * Observations. MinAtar's state() is a (10, 10, C) bool array indexed [y, x, channel]; cudarl's is
 * (C, 10, 10) uint8 (channels first, the layout of obs_shape), obs[c][y][x] = state[y, x, c]. */
#ifndef CUDARL_MINATAR_COMMON_H
#define CUDARL_MINATAR_COMMON_H

#include <stdint.h>

#include "core/philox.h"

#define CR_MINATAR_SIZE 10           /* the grid is 10 x 10 cells */
#define CR_MINATAR_CELLS 100
#define CR_MINATAR_STICKY_PROB 0.1   /* Environment(sticky_action_prob=0.1) */
#define CR_MINATAR_FULL_ACTIONS 6    /* MinAtar's action_map: n l u r d f */

/* MinAtar's full action set, the indices of its action_map ['n','l','u','r','d','f']. */
enum {
    CR_MINATAR_NOOP = 0,
    CR_MINATAR_LEFT = 1,
    CR_MINATAR_UP = 2,
    CR_MINATAR_RIGHT = 3,
    CR_MINATAR_DOWN = 4,
    CR_MINATAR_FIRE = 5,
};

/* numpy's random.rand(): uniform in [0, 1) with 53 random bits. */
CR_HD static inline double cr_minatar_rand(cr_philox_state *rng) {
    return cr_philox_uniform_f64_hd(rng);
}

/* numpy's random.randint(lo, hi): an integer in [lo, hi), from one word by multiply-shift (exact
 * integer arithmetic; bias below 2^-29 for the ranges MinAtar uses, hi - lo <= 8). */
CR_HD static inline int cr_minatar_randint(cr_philox_state *rng, int lo, int hi) {
    uint64_t w = cr_philox_next_u32_hd(rng);
    return lo + (int)((w * (uint64_t)(hi - lo)) >> 32);
}

/* minatar.Environment.act's sticky action: with probability 0.1 the previous action is repeated
 * instead of `action` (both in the full 6-action set). One draw on every step. *last_action
 * starts at 0 when the env is seeded and, as in MinAtar, is not cleared by a reset. */
CR_HD static inline int cr_minatar_sticky(cr_philox_state *rng, int32_t *last_action, int action) {
    if (cr_minatar_rand(rng) < CR_MINATAR_STICKY_PROB) action = *last_action;
    *last_action = action;
    return action;
}

/* Zeroes an observation of `channels` planes (C, 10, 10). */
CR_HD static inline void cr_minatar_obs_clear(uint8_t *obs, int channels) {
    for (int k = 0; k < channels * CR_MINATAR_CELLS; k++) obs[k] = 0;
}

/* Sets cell (y, x) of channel c of obs (C, 10, 10): MinAtar's state[y, x, c] = 1. */
CR_HD static inline void cr_minatar_obs_set(uint8_t *obs, int c, int y, int x) {
    obs[c * CR_MINATAR_CELLS + y * CR_MINATAR_SIZE + x] = 1;
}

#endif
