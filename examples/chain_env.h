/* Chain-v0, an example of an environment written by a user in C against the public header
 * only, and added to cudarl with cudarl_env_register (see chain_main.c).
 *
 * A corridor of CHAIN_LENGTH cells. An episode starts in cell CHAIN_START, near the left end.
 * Action 0 moves one cell left, action 1 one cell right; with probability CHAIN_SLIP the move
 * goes the other way. Reaching cell 0 pays CHAIN_NEAR_REWARD and ends the episode (terminated);
 * reaching the last cell pays 1 and ends it; every other step pays 0. The time limit is
 * CHAIN_MAX_STEPS. A random walk ends at the near, small prize most of the time; walking right
 * earns about 1 per episode: the exploration problem a PPO agent learns to solve. The
 * observation is the one-hot position (CHAIN_LENGTH floats). */
#ifndef CUDARL_EXAMPLE_CHAIN_ENV_H
#define CUDARL_EXAMPLE_CHAIN_ENV_H

#include <cudarl.h>

#define CHAIN_ID "Chain-v0"
#define CHAIN_LENGTH 10
#define CHAIN_START 2
#define CHAIN_SLIP 0.1
#define CHAIN_NEAR_REWARD 0.1f
#define CHAIN_MAX_STEPS 50

/* One env: its position and its own RNG (no globals), as cudarl_env_def asks. */
typedef struct chain_state {
    uint64_t rng; /* splitmix64 state */
    int32_t pos;  /* 0 .. CHAIN_LENGTH-1 */
} chain_state;

/* The table of functions to register. */
extern const cudarl_env_def chain_env_def;

#endif
