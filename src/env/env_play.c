/* Random play of one env, for looking at its observations (`cudarl render`), and the registry
 * lookup of the public API. */
#include <stdlib.h>

#include "core/core.h"
#include "env/env.h"
#include "env/env_pool.h"

#define POLICY_STREAM (UINT64_C(1) << 63) /* the policy's Philox stream: no env's (env i uses i) */

const cudarl_env_def *cudarl_env_find(const char *id) { return id ? cr_env_def_find(id) : NULL; }

/* The play in `pool` (one env, outputs set): reset, then steps - 1 random steps, fn after each. */
static cudarl_status play(cr_env_pool *pool, const cudarl_env_def *d, uint64_t seed, int steps,
                          const void *obs, const uint8_t *terminated, const uint8_t *truncated,
                          cudarl_env_play_fn fn, void *user) {
    cr_env_pool_reset(pool, seed);
    cr_philox_state policy;
    cr_philox_seed(&policy, seed, POLICY_STREAM);
    int episodes = 0;
    for (int t = 0; t < steps; t++) {
        if (t > 0) {
            int32_t action = 0;
            float box[CUDARL_ACTION_DIM_MAX]; /* continuous: uniform in the box */
            for (int k = 0; k < d->action_dim; k++) {
                float u = (float)(cr_philox_next_u32(&policy) >> 8) * 0x1p-24f;
                box[k] = d->action_low[k] + u * (d->action_high[k] - d->action_low[k]);
            }
            if (d->action_dim == 0)
                action = (int32_t)(cr_philox_next_u32(&policy) % (uint32_t)d->num_actions);
            cr_env_pool_step(pool, d->action_dim > 0 ? (const void *)box : (const void *)&action);
            episodes += *terminated | *truncated;
        }
        CR_TRY(fn(user, t, obs, episodes));
    }
    return CUDARL_OK;
}

cudarl_status cudarl_env_play_random(const char *id, uint64_t seed, int steps,
                                     cudarl_env_play_fn fn, void *user) {
    CR_REQUIRE(fn, "cudarl_env_play_random: fn is NULL; pass the function that takes each "
                     "observation");
    CR_REQUIRE(steps >= 1, "cudarl_env_play_random: steps is %d; play at least 1 (the "
                             "reset's observation)", steps);
    const cudarl_env_def *d = cudarl_env_find(id);
    CR_REQUIRE(d, "no env '%s' is registered (cudarl_env_names lists them)", id ? id : "(null)");
    size_t obs_bytes = cr_env_def_obs_bytes(d);
    void *obs = malloc(obs_bytes), *final_obs = malloc(obs_bytes);
    float reward = 0;
    uint8_t terminated = 0, truncated = 0;
    cudarl_status s = CUDARL_OK;
    cr_env_pool pool;
    cr_env_pool_config cfg = {.num_envs = 1, .num_threads = 1};
    if (!obs || !final_obs)
        s = cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory for one observation of '%s' "
                    "(%zu bytes)", d->id, obs_bytes);
    else if ((s = cr_env_pool_init(&pool, d, &cfg, NULL)) == CUDARL_OK) {
        cr_env_pool_outputs out = {obs, &reward, &terminated, &truncated, final_obs};
        cr_env_pool_set_outputs(&pool, &out);
        s = play(&pool, d, seed, steps, obs, &terminated, &truncated, fn, user);
        cr_env_pool_free(&pool);
    }
    free(obs);
    free(final_obs);
    return s;
}
