/* Registers Chain-v0 (chain_env.c), a user env written against the public header, and steps a
 * batch of it on CPU threads with two fixed policies: uniform random actions, and always
 * right. Prints the mean return of each (what a PPO agent has to learn its way from, and to)
 * and the steps per second.
 * Usage: example_chain [--envs N] [--threads T] [--steps S]   (defaults 256, 2, 5000)
 *
 * cudarl_env_register is public; the pool (src/env/env_pool.h) is cudarl's internal batching of
 * registered envs, used here directly until the trainers take an env by id. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chain_env.h"
#include "core/core.h"
#include "env/env.h"
#include "env/env_pool.h"

typedef struct options {
    int envs, threads, steps;
} options;

static int parse_options(int argc, char **argv, options *o) {
    *o = (options){256, 2, 5000};
    for (int i = 1; i + 1 < argc; i += 2) {
        int v = atoi(argv[i + 1]);
        if (!strcmp(argv[i], "--envs")) o->envs = v;
        else if (!strcmp(argv[i], "--threads")) o->threads = v;
        else if (!strcmp(argv[i], "--steps")) o->steps = v;
        else break;
    }
    if (argc % 2 == 0 || o->envs < 1 || o->threads < 1 || o->steps < 1) {
        fprintf(stderr, "usage: example_chain [--envs N >= 1] [--threads T >= 1] "
                        "[--steps S >= 1]\n");
        return 0;
    }
    return 1;
}

/* Steps the pool `steps` times with `policy` (0: random, 1: always right); the mean return of
 * the episodes that ended. */
static double mean_return(cr_env_pool *pool, int policy, int steps, int32_t *actions,
                          const float *reward, const uint8_t *terminated,
                          const uint8_t *truncated, double *sps) {
    int n = pool->num_envs;
    double *ret = calloc((size_t)n, sizeof *ret), total = 0;
    long episodes = 0;
    cr_philox_state rng;
    cr_philox_seed(&rng, 7, 0);
    double stepping = 0;
    for (int s = 0; s < steps; s++) {
        for (int i = 0; i < n; i++)
            actions[i] = policy ? 1 : (int32_t)(cr_philox_next_u32(&rng) & 1);
        double ts = cr_time_now();
        cr_env_pool_step(pool, actions);
        stepping += cr_time_now() - ts;
        for (int i = 0; i < n; i++) {
            ret[i] += reward[i];
            if (terminated[i] || truncated[i]) total += ret[i], episodes++, ret[i] = 0;
        }
    }
    *sps = (double)n * steps / stepping;
    free(ret);
    return episodes ? total / (double)episodes : 0.0;
}

int main(int argc, char **argv) {
    options o;
    if (!parse_options(argc, argv, &o)) return 2;
    if (cudarl_env_register(&chain_env_def) != CUDARL_OK) {
        fprintf(stderr, "example_chain: %s\n", cudarl_last_error());
        return 1;
    }
    printf("registered envs:");
    for (const char *const *name = cudarl_env_names(); *name; name++) printf(" %s", *name);
    printf("\n");

    const cudarl_env_def *def = cr_env_def_find(CHAIN_ID);
    size_t n = (size_t)o.envs;
    float *obs = malloc(n * CHAIN_LENGTH * sizeof(float));
    float *final_obs = malloc(n * CHAIN_LENGTH * sizeof(float));
    float *reward = malloc(n * sizeof(float));
    uint8_t *terminated = malloc(n), *truncated = malloc(n);
    int32_t *actions = malloc(n * sizeof(int32_t));
    cr_env_pool pool;
    cr_env_pool_config cfg = {.num_envs = o.envs, .num_threads = o.threads};
    if (!obs || !final_obs || !reward || !terminated || !truncated || !actions ||
        cr_env_pool_init(&pool, def, &cfg, NULL) != CUDARL_OK) {
        fprintf(stderr, "example_chain: %s\n", cudarl_last_error());
        return 1;
    }
    cr_env_pool_set_outputs(&pool, &(cr_env_pool_outputs){obs, reward, terminated, truncated,
                                                           final_obs});
    static const char *const names[] = {"random", "always right"};
    for (int policy = 0; policy < 2; policy++) {
        double sps;
        cr_env_pool_reset(&pool, 1);
        double r = mean_return(&pool, policy, o.steps, actions, reward, terminated, truncated,
                               &sps);
        printf("%-13s mean return %.3f (solved at %.2f)  %.1fM env steps/s on %d thread%s\n",
               names[policy], r, def->solved_return, sps * 1e-6, o.threads,
               o.threads > 1 ? "s" : "");
    }
    cr_env_pool_free(&pool);
    free(obs), free(final_obs), free(reward), free(terminated), free(truncated), free(actions);
    return 0;
}
