/* Chain-v0 (chain_env.h): the seed, reset and step of one env. */
#include <stdio.h>
#include <string.h>

#include "chain_env.h"

/* splitmix64 (Steele, Lea, Flood 2014): the next 64 random bits of state *s. */
static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1) with 53 random bits. */
static double uniform(uint64_t *s) { return (double)(splitmix64(s) >> 11) * 0x1.0p-53; }

/* obs (CHAIN_LENGTH): 1 at the env's cell, 0 elsewhere. */
static void chain_observe(const chain_state *c, float *obs) {
    memset(obs, 0, CHAIN_LENGTH * sizeof(float));
    obs[c->pos] = 1.0f;
}

/* Env `index` of a batch seeded with `seed`: its own stream, mixed from both. */
static void chain_seed(void *state, uint64_t seed, uint64_t index) {
    chain_state *c = state;
    uint64_t mix = seed ^ (index * 0xD1B54A32D192ED03ull);
    c->rng = splitmix64(&mix);
    c->pos = CHAIN_START;
}

static void chain_reset(void *state, void *obs) {
    chain_state *c = state;
    c->pos = CHAIN_START;
    chain_observe(c, obs);
}

static void chain_step(void *state, int32_t action, void *obs, float *reward,
                       uint8_t *terminated) {
    chain_state *c = state;
    int move = action == 1 ? 1 : -1;
    if (uniform(&c->rng) < CHAIN_SLIP) move = -move;
    c->pos += move;
    *reward = c->pos == 0 ? CHAIN_NEAR_REWARD : c->pos == CHAIN_LENGTH - 1 ? 1.0f : 0.0f;
    *terminated = c->pos == 0 || c->pos == CHAIN_LENGTH - 1;
    chain_observe(c, obs);
}

/* A state the functions can take (a resumed run's, read back from its checkpoint): the cell
 * indexes the observation, so it must lie in the corridor. */
static int chain_check(const void *state, char *why, size_t why_cap) {
    const chain_state *c = state;
    if (c->pos >= 0 && c->pos < CHAIN_LENGTH) return 0;
    snprintf(why, why_cap, "pos is %d, expected 0..%d", (int)c->pos, CHAIN_LENGTH - 1);
    return 1;
}

const cudarl_env_def chain_env_def = {
    .struct_size = sizeof(cudarl_env_def),
    .id = CHAIN_ID,
    .obs_rank = 1,
    .obs_shape = {CHAIN_LENGTH, 1, 1},
    .obs_dtype = CUDARL_OBS_F32,
    .num_actions = 2,
    .max_episode_steps = CHAIN_MAX_STEPS,
    .solved_return = 0.9,
    .state_bytes = sizeof(chain_state),
    .seed = chain_seed,
    .reset = chain_reset,
    .step = chain_step,
    .state_check = chain_check,
};
