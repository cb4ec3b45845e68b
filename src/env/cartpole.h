/* CartPole-v1, batched, on the CPU: Gymnasium's dynamics and constants exactly.
 *
 * State is kept in float64 as Gymnasium does; observations are float32. Reset draws each state
 * component uniformly from [-0.05, 0.05) from the env's own Philox stream (stream i of the seed).
 * Terminated when |x| > 2.4 or |theta| > 12 degrees (2*pi*12/360 rad); truncated when the episode
 * reaches 500 steps. As with Gymnasium's TimeLimit wrapper the two are independent: a step that
 * terminates on the 500th step sets both.
 * Reward is 1.0 on every step, including the terminating one. */
#ifndef CUDARL_CARTPOLE_H
#define CUDARL_CARTPOLE_H

#include <stdint.h>

#include "core/core.h"

#define CR_CARTPOLE_OBS_DIM 4
#define CR_CARTPOLE_NUM_ACTIONS 2
#define CR_CARTPOLE_MAX_STEPS 500

typedef struct cr_cartpole {
    int num_envs;
    double *state;          /* (N, 4): x, x_dot, theta, theta_dot */
    int32_t *elapsed;       /* (N) steps in the current episode */
    cr_philox_state *rng;   /* (N) one stream per env */
} cr_cartpole;

/* Bytes cr_cartpole_init needs in `mem` for n envs (host). */
size_t cr_cartpole_bytes(int num_envs);
/* Carves the env batch out of `mem` (cr_cartpole_bytes(n) bytes, 64-byte aligned, host). */
void cr_cartpole_init(cr_cartpole *env, int num_envs, void *mem);
/* Seeds env i with stream i of `seed`, resets every env, writes obs (N, 4). */
void cr_cartpole_reset(cr_cartpole *env, uint64_t seed, float *obs);
/* Steps every env with actions (N) in {0, 1}. Writes obs (N, 4), reward (N), terminated (N),
 * truncated (N) and, for envs that ended, final_obs (N, 4) rows (other rows untouched). */
void cr_cartpole_step(cr_cartpole *env, const int32_t *actions, float *obs, float *reward,
                      uint8_t *terminated, uint8_t *truncated, float *final_obs);
/* Steps envs [begin, end) only: the unit of work a thread pool hands out. */
void cr_cartpole_step_range(cr_cartpole *env, int begin, int end, const int32_t *actions,
                            float *obs, float *reward, uint8_t *terminated, uint8_t *truncated,
                            float *final_obs);
/* Overwrites env i's state (for tests against the reference) and its elapsed-step count. */
void cr_cartpole_set_state(cr_cartpole *env, int i, const double state[4], int32_t elapsed);

#endif
