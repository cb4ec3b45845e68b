/* Gymnasium's classic-control envs beside CartPole: Acrobot-v1, MountainCar-v0, Pendulum-v1 and
 * MountainCarContinuous-v0. Each is a def (<env>.c) over the per-env code of its step header
 * (<env>_step.h), which the pool steps on CPU threads, and a batch (cr_classic) with a CPU twin
 * (classic.c, a loop over the def) and a CUDA twin (classic_cuda.cu, one thread per env running
 * the same step header): the env batch of env.h runs them for the envs' CR_ENV_BATCH.
 *
 * A batch of N envs lives in one block (backend memory) as the pool's states do, the def's own
 * state struct per env, but stored transposed by 32-bit word so that the CUDA twin's loads
 * coalesce:
 *   states  (W, N) uint32: word k of env i's struct at states[k * N + i], W = state_bytes / 4
 *   elapsed (N) int32: steps into each env's current episode
 * For the same seed and actions the batch and a pool of the def give the same observations,
 * rewards, flags and final observations (env i seeded with (seed, i), the pool's step count,
 * truncation and same-step autoreset), and both clip continuous actions into the box first. */
#ifndef CUDARL_CLASSIC_H
#define CUDARL_CLASSIC_H

#include <stddef.h>
#include <stdint.h>

#include "cudarl.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const cudarl_env_def cr_acrobot_def;
extern const cudarl_env_def cr_mountain_car_def;
extern const cudarl_env_def cr_pendulum_def;
extern const cudarl_env_def cr_mountain_car_continuous_def;

/* The classic envs, as cr_classic.kind numbers them (the CUDA twin's dispatch). */
enum {
    CR_CLASSIC_ACROBOT,
    CR_CLASSIC_MOUNTAIN_CAR,
    CR_CLASSIC_PENDULUM,
    CR_CLASSIC_MOUNTAIN_CAR_CONTINUOUS,
    CR_CLASSIC_KINDS
};

#define CR_CLASSIC_STATE_MAX 128 /* bytes of the largest classic env's state struct, at most */

/* A batch of N envs of one classic env, its arrays carved from the caller's block. */
typedef struct cr_classic {
    const cudarl_env_def *def; /* the env's def: state struct, shapes, box, time limit */
    int kind;                  /* CR_CLASSIC_* */
    int num_envs;              /* N */
    int state_words;           /* W = def->state_bytes / 4 */
    uint32_t *states;          /* (W, N) word k of env i at states[k * N + i] */
    int32_t *elapsed;          /* (N) steps into each episode */
} cr_classic;

/* The CR_CLASSIC_* kind of `def` (a classic env's def or the registry's copy), or -1. */
int cr_classic_kind(const cudarl_env_def *def);
/* Bytes of the block for n envs of `def` (a classic env's). */
size_t cr_classic_bytes(const cudarl_env_def *def, int num_envs);
/* Carves the batch out of `mem` (cr_classic_bytes, 64-byte aligned, host or device memory; not
 * touched here). */
void cr_classic_init(cr_classic *c, const cudarl_env_def *def, int num_envs, void *mem);
/* Seeds env i with (seed, i) and resets every env (host memory); obs (N, D). */
void cr_classic_reset(cr_classic *c, uint64_t seed, float *obs);
/* cr_classic_reset with env i seeded as env first + i of a larger batch. */
void cr_classic_reset_from(cr_classic *c, uint64_t seed, int64_t first, float *obs);
/* Steps every env (host memory): actions int32 (N) for a discrete env (each in 0 .. A-1, else a
 * bug: it aborts saying so), float (N, action_dim) for a continuous one (clipped into the box).
 * Writes obs (N, D), reward (N), terminated, truncated (N), done = terminated | truncated (N)
 * unless done is NULL, and the final_obs (N, D) rows of the envs that ended (others untouched). */
void cr_classic_step(cr_classic *c, const void *actions, float *obs, float *reward,
                     uint8_t *terminated, uint8_t *truncated, uint8_t *done, float *final_obs);
/* Env i's state struct (def->state_bytes) out of `states`, a (W, N) block laid out as
 * c->states (the batch's own, or a host copy of a device batch's), into `state`. */
void cr_classic_get_state(const cr_classic *c, const uint32_t *states, int i, void *state);
/* Overwrites env i's state struct and its step count (host memory; for tests). */
void cr_classic_set_state(cr_classic *c, int i, const void *state, int32_t elapsed);

#ifdef CUDARL_WITH_CUDA
/* The CUDA twin (classic_cuda.cu): c was carved from device memory, every array is device
 * memory, and the work is queued on the context's stream (nothing waits; capturable in a CUDA
 * graph). The same results as cr_classic_reset and cr_classic_step, but for the last ulp of
 * CUDA's cos, sin and pow against glibc's. A discrete action out of range traps the kernel (the
 * CPU's abort), which the next synchronising CUDA call reports. */
void cr_classic_cuda_reset(cudarl_ctx *ctx, const cr_classic *c, uint64_t seed, int64_t first,
                           float *obs);
void cr_classic_cuda_step(cudarl_ctx *ctx, const cr_classic *c, const void *actions, float *obs,
                          float *reward, uint8_t *terminated, uint8_t *truncated, uint8_t *done,
                          float *final_obs);
#endif

#ifdef __cplusplus
}
#endif
#endif
