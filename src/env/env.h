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

typedef struct cr_env_info {
    const char *id;          /* "CartPole-v1" */
    int obs_dim;             /* floats per observation */
    int num_actions;         /* discrete actions */
    int max_episode_steps;   /* truncation limit */
    double solved_return;    /* the conventional "solved" threshold of the mean return */
} cr_env_info;

/* The built-in env named `id`, or NULL. */
const cr_env_info *cr_env_find(const char *id);

#endif
