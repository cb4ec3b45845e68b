/* The five MinAtar games on the GPU (minatar_cuda.cu): N envs of one game, stepped by one kernel
 * launch per step, one thread per env, running the per-env code of minatar_<game>_step.h that
 * the CPU env defs (minatar_<game>.c) run. For the same seed and actions a CUDA batch writes the
 * same bytes as a cr_env_pool of the def (env_pool.h): observations, rewards, terminated,
 * truncated and final observations, with the pool's same-step autoreset and step counting, and
 * its env states end up identical too (tests/test_minatar_cuda.c holds the two together).
 *
 * Memory (device, one block from the caller, cr_minatar_cuda_bytes):
 *   states  (W, N) uint32: env i's state is the CPU def's struct (cr_minatar_<game>_state, its
 *           Philox stream included), stored transposed by 32-bit word: word k of env i at
 *           states[k * N + i]. A thread copies its env's W words into a local struct with one
 *           coalesced load per word (a warp reads 128 contiguous bytes), runs the shared code on
 *           it, and writes it back the same way; the structs' own layout (no padding, sizes a
 *           multiple of 4) is what both sides compute on.
 *   elapsed (N) int32: steps into each env's current episode, as the pool counts them.
 * Observations are staged per block in shared memory and written out coalesced: obs and
 * final_obs are (N, C, 10, 10) uint8, rows of C * 100 bytes (a multiple of 4), 4-byte aligned.
 *
 * Every call is queued on the context's stream, allocates nothing, never waits for the host
 * (except cr_minatar_cuda_get_state, for tests), and reset and step can be captured into a CUDA
 * graph. A failed launch is a bug: it prints file:line and the CUDA error and aborts. An action
 * outside 0 .. num_actions-1 (the pool's abort) traps the kernel, which the next synchronising
 * CUDA call reports. */
#ifndef CUDARL_MINATAR_CUDA_H
#define CUDARL_MINATAR_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "cudarl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A batch of N envs of one MinAtar game on the device. */
typedef struct cr_minatar_cuda {
    const cudarl_env_def *def; /* the CPU def it twins: id, obs_shape, num_actions */
    int game;                  /* index of the game in minatar_cuda.cu's table */
    int num_envs;              /* N */
    int state_words;           /* W = def->state_bytes / 4 */
    int max_episode_steps;     /* truncation, as the pool's: the def's (0 for every MinAtar id:
                                * never); a caller may set another before stepping */
    int64_t first;             /* env i is seeded as env first + i (0 from init): a data-parallel
                                * rank's share of a job's envs, as the pool's first_env */
    uint32_t *states;          /* (W, N) (device) word k of env i at states[k * N + i] */
    int32_t *elapsed;          /* (N) (device) steps into the current episode */
} cr_minatar_cuda;

/* The CPU def of the MinAtar game `id` ("MinAtar/Breakout-v1", ...) if it has a CUDA twin (all
 * five do), else NULL. The def lives in static storage. */
const cudarl_env_def *cr_minatar_cuda_find(const char *id);
/* Device bytes for `num_envs` envs of game `id` into *bytes: INVALID_ARG (with a message) for an
 * id without a twin or num_envs < 1 or too large. */
cudarl_status cr_minatar_cuda_bytes(const char *id, int num_envs, size_t *bytes);
/* Points env at `mem` (cr_minatar_cuda_bytes bytes of device memory, 64-byte aligned, owned by
 * the caller); `mem` is not touched. Envs are not seeded until cr_minatar_cuda_reset. The same
 * errors as cr_minatar_cuda_bytes. */
cudarl_status cr_minatar_cuda_init(cr_minatar_cuda *env, const char *id, int num_envs, void *mem);

/* Zeroes env i's state, seeds it with (seed, first + i), starts its first episode and writes obs (N, C,
 * 10, 10) (device); step counts 0. What cr_env_pool_reset does for the def. */
void cr_minatar_cuda_reset(cudarl_ctx *ctx, const cr_minatar_cuda *env, uint64_t seed,
                           uint8_t *obs);
/* Steps env i with actions[i] (N, device, each in 0 .. num_actions-1), as cr_env_pool_step does:
 * writes obs (N, C, 10, 10), reward (N), terminated (N), truncated (N) (the step count reached
 * max_episode_steps; never with the MinAtar defs), done (N) = terminated | truncated unless done
 * is NULL, and for the envs that ended, their final_obs (N, C, 10, 10) row (the episode's last
 * observation; other rows untouched) before obs gets the next episode's first. All device. */
void cr_minatar_cuda_step(cudarl_ctx *ctx, const cr_minatar_cuda *env, const int32_t *actions,
                          uint8_t *obs, float *reward, uint8_t *terminated, uint8_t *truncated,
                          uint8_t *done, uint8_t *final_obs);

/* Copies env i's state struct (def->state_bytes, host) out of the transposed layout and waits
 * for the stream: for tests and debugging, never in a loop that should stay on the device. */
void cr_minatar_cuda_get_state(cudarl_ctx *ctx, const cr_minatar_cuda *env, int i, void *state);

#ifdef __cplusplus
}
#endif
#endif
