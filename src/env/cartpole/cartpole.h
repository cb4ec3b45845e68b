/* CartPole-v1, batched, on the CPU and (built with CUDA) on the GPU: Gymnasium's dynamics and
 * constants exactly. Both run the per-env code of cartpole_step.h.
 *
 * State is kept in float64 as Gymnasium does; observations are float32. Reset draws each state
 * component uniformly from [-0.05, 0.05) from the env's own Philox stream (stream i of the seed).
 * Terminated when |x| > 2.4 or |theta| > 12 degrees (2*pi*12/360 rad); truncated when the episode
 * reaches 500 steps. As with Gymnasium's TimeLimit wrapper the two are independent: a step that
 * terminates on the 500th step sets both.
 * Reward is 1.0 on every step, including the terminating one. */
#ifndef CUDARL_CARTPOLE_H
#define CUDARL_CARTPOLE_H

#include <stddef.h>
#include <stdint.h>

#include "core/philox.h"
#ifndef __cplusplus
#include "core/core.h" /* C only: it uses _Noreturn; the CUDA twin needs only philox.h */
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define CR_CARTPOLE_OBS_DIM 4
#define CR_CARTPOLE_NUM_ACTIONS 2
#define CR_CARTPOLE_MAX_STEPS 500

typedef struct cr_cartpole {
    int num_envs;
    double *state;          /* (N, 4): x, x_dot, theta, theta_dot */
    int32_t *elapsed;       /* (N) steps in the current episode */
    cr_philox_state *rng;   /* (N) one stream per env */
} cr_cartpole;

/* Bytes cr_cartpole_init needs in `mem` for n envs (host or device). */
size_t cr_cartpole_bytes(int num_envs);
/* Carves the env batch out of `mem` (cr_cartpole_bytes(n) bytes, 64-byte aligned). `mem` is
 * only pointed into, never touched, so it may be device memory for the CUDA functions below. */
void cr_cartpole_init(cr_cartpole *env, int num_envs, void *mem);
/* Seeds env i with stream i of `seed`, resets every env, writes obs (N, 4). */
void cr_cartpole_reset(cr_cartpole *env, uint64_t seed, float *obs);
/* cr_cartpole_reset with env i seeded as env first + i of a larger batch. */
void cr_cartpole_reset_from(cr_cartpole *env, uint64_t seed, int64_t first, float *obs);
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
/* Whether s (4) is a state an episode can be in after a reset or a step (cartpole_def.c): 0 if
 * so; else 1 with what is wrong in why (cap bytes). Every component finite, the cart and the pole
 * within the termination thresholds (a step that crosses them resets the env), and the speeds
 * under CR_CARTPOLE_MAX_SPEED. Host only. */
int cr_cartpole_check_state(const double s[4], char *why, size_t cap);
/* A speed (m/s, rad/s) no episode reaches: an episode keeps |x_dot| under about 250 (the cart
 * moves tau * x_dot a step and stays within 2.4 of the centre) and |theta_dot| under about 25. */
#define CR_CARTPOLE_MAX_SPEED 1000.0

#ifdef CUDARL_WITH_CUDA
/* The CUDA twin (cartpole.cu), one thread per env, running the same per-env code as the CPU
 * (cartpole_step.h). `env` is a host struct whose arrays were carved by cr_cartpole_init out of
 * device memory; every other pointer is device memory too. Work is queued on `stream` (a
 * cudaStream_t; NULL for the default stream) and nothing waits for it. A failed launch is a bug:
 * it prints file:line and the CUDA error and aborts. An action other than 0 or 1 (the CPU path's
 * assertion) traps the kernel, which the next synchronising CUDA call reports. */

/* Seeds env i with stream i of `seed`, resets every env, writes obs (N, 4) (device). Draws the
 * same states as cr_cartpole_reset. */
void cr_cartpole_cuda_reset(cr_cartpole *env, uint64_t seed, int64_t first, float *obs,
                            void *stream);
/* Steps every env with actions (N) in {0, 1}, as cr_cartpole_step: writes obs (N, 4), reward (N),
 * terminated (N), truncated (N), when done is not NULL done (N) = terminated | truncated, and
 * final_obs (N, 4) rows of envs that ended (others untouched) (all device). */
void cr_cartpole_cuda_step(cr_cartpole *env, const int32_t *actions, float *obs, float *reward,
                           uint8_t *terminated, uint8_t *truncated, uint8_t *done,
                           float *final_obs, void *stream);
#endif

#ifdef __cplusplus
}
#endif
#endif
