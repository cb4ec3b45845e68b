/* Batched environments: the registry of built-in envs and the interface the trainers use.
 *
 * Every env is a struct of its state plus one Philox stream per env (no globals), stepping N
 * envs at once into caller-owned slices. Same-step autoreset: when env i ends (terminated or
 * truncated), final_obs[i] receives the last observation of the episode and obs[i] the first
 * observation of the next one; terminated and truncated stay distinct. */
#ifndef CUDARL_ENV_H
#define CUDARL_ENV_H

#include <stdint.h>

#include "core/core.h"
#include "env/cartpole.h"
#include "ops/backend.h"

typedef struct cr_env_info {
    const char *id;          /* "CartPole-v1" */
    int obs_dim;             /* floats per observation */
    int num_actions;         /* discrete actions */
    int max_episode_steps;   /* truncation limit */
    double solved_return;    /* the conventional "solved" threshold of the mean return */
} cr_env_info;

/* The built-in env named `id`, or NULL. */
const cr_env_info *cr_env_find(const char *id);

/* A batch of N envs whose state lives in the context's backend memory (device memory on
 * CUDA), stepped on the CPU or by the CUDA twin accordingly. */
typedef struct cr_env_batch {
    const cr_env_info *info;
    int num_envs;
    cr_cartpole cartpole;
} cr_env_batch;

/* Backend-memory bytes for n envs of `info`. */
size_t cr_env_batch_bytes(const cr_env_info *info, int n);
/* Carves the batch out of `mem` (cr_env_batch_bytes, 64-byte aligned, backend memory). */
void cr_env_batch_init(cr_env_batch *b, const cr_env_info *info, int n, void *mem);
/* Seeds env i with stream i of `seed` and resets every env; obs (N, D) in backend memory. */
void cr_env_batch_reset(cudarl_ctx *ctx, cr_env_batch *b, uint64_t seed, float *obs);
/* Steps every env; all arrays in backend memory: actions (N), obs (N, D), reward (N),
 * terminated, truncated, done = terminated | truncated (N), final_obs (N, D) (rows of envs that
 * ended; others untouched). */
void cr_env_batch_step(cudarl_ctx *ctx, cr_env_batch *b, const int32_t *actions, float *obs,
                       float *reward, uint8_t *terminated, uint8_t *truncated, uint8_t *done,
                       float *final_obs);

#endif
