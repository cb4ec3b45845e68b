/* The five MinAtar games (Young & Tian 2019; the `minatar` package 1.0.15) as cudarl env defs,
 * each exactly its Gymnasium id MinAtar/<Game>-v1: sticky actions with probability 0.1,
 * difficulty ramping on, the game's minimal action set, no time limit (minatar registers none,
 * so max_episode_steps = 0; Freeway ends itself on its 2501st step, as a termination).
 *
 * Observations are uint8 (C, 10, 10), channels first, each cell 0 or 1: MinAtar's state() is a
 * (10, 10, C) bool array indexed [y, x, channel], so obs[c][y][x] = state[y, x, c] (transpose
 * with np.transpose(state, (2, 0, 1)) to compare). Channels, in MinAtar's order:
 *   Breakout (4)       paddle, ball, trail, brick
 *   Asterix (4)        player, enemy, trail, gold
 *   Freeway (7)        chicken, car, speed1 .. speed5
 *   Seaquest (10)      sub_front, sub_back, friendly_bullet, trail, enemy_bullet, enemy_fish,
 *                      enemy_sub, oxygen_guage, diver_guage, diver
 *   SpaceInvaders (6)  cannon, alien, alien_left, alien_right, friendly_bullet, enemy_bullet
 * Actions are indices into the minimal set (MinAtar's n l u r d f names):
 *   Breakout n l r; Asterix n l u r d; Freeway n u d; Seaquest n l u r d f; SpaceInvaders n l r f.
 *
 * Each env draws from its own Philox stream (seed, index) instead of numpy's RandomState, in the
 * same order and with the same meaning (minatar_common.h); tests/minatar_trace.py runs the
 * Python games on the same stream and tests/test_minatar_ref.c compares them step by step.
 * minatar_cuda.h steps N envs of each game on the GPU with the same per-env code, bit for bit.
 *
 * solved_return, the mean return over 100 episodes counted as solved, is cudarl's choice
 * (MinAtar defines none): a return only a policy that really plays reaches - many times a
 * uniformly random policy's (measured by test_minatar, in brackets) and, for Freeway, well above
 * always pressing up (15 to 26); a bar for a learned policy, not a published score:
 *   Breakout 10 (0.4), Asterix 10 (0.6), Freeway 40 (0 to 1), Seaquest 10 (0.1),
 *   SpaceInvaders 30 (4.4). */
#ifndef CUDARL_MINATAR_H
#define CUDARL_MINATAR_H

#include "cudarl.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const cudarl_env_def cr_minatar_breakout_def;       /* MinAtar/Breakout-v1 */
extern const cudarl_env_def cr_minatar_asterix_def;        /* MinAtar/Asterix-v1 */
extern const cudarl_env_def cr_minatar_freeway_def;        /* MinAtar/Freeway-v1 */
extern const cudarl_env_def cr_minatar_seaquest_def;       /* MinAtar/Seaquest-v1 */
extern const cudarl_env_def cr_minatar_space_invaders_def; /* MinAtar/SpaceInvaders-v1 */

#ifdef __cplusplus
}
#endif
#endif
