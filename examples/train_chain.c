/* Trains PPO on a user's env through the public API only: registers Chain-v0 (chain_env.c) with
 * cudarl_env_register, then cudarl_ppo_train steps it on CPU threads (--env-device cpu) while
 * the policy learns on the context's device (the GPU if there is one). Exits 0 when the mean
 * return of the last 100 episodes reaches the def's solved_return (0.9: walking right; a random
 * walk earns ~0.28).
 * Usage: example_train_chain [RUNS_DIR]   (default: runs) */
#include <stdio.h>

#include "chain_env.h"

int main(int argc, char **argv) {
    if (cudarl_env_register(&chain_env_def) != CUDARL_OK) {
        fprintf(stderr, "example_train_chain: %s\n", cudarl_last_error());
        return 1;
    }
    cudarl_ctx *ctx;
    if (cudarl_ctx_init(&ctx, CUDARL_DEVICE_AUTO, 0) != CUDARL_OK) {
        fprintf(stderr, "example_train_chain: %s\n", cudarl_last_error());
        return 1;
    }
    cudarl_ppo_config cfg;
    cudarl_ppo_config_default(&cfg, CHAIN_ID);
    cfg.env_device = CUDARL_DEVICE_CPU;
    cfg.env_threads = 2;
    cfg.num_envs = 64, cfg.num_steps = 32;
    cfg.total_timesteps = 200000;
    cfg.ent_coef = 0.01; /* explore past the near prize */
    cfg.quiet = 1;
    snprintf(cfg.runs_dir, sizeof cfg.runs_dir, "%s", argc > 1 ? argv[1] : "runs");
    cudarl_train_summary sum;
    cudarl_status s = cudarl_ppo_train(ctx, &cfg, NULL, &sum);
    cudarl_ctx_free(ctx);
    if (s != CUDARL_OK) {
        fprintf(stderr, "example_train_chain: %s\n", cudarl_last_error());
        return 1;
    }
    printf("Chain-v0: mean return of the last 100 episodes %.3f after %lld steps (%.0f steps/s); "
           "solved (>= %.2f) at step %lld\n", sum.mean_return_100, (long long)sum.global_step,
           sum.sps, chain_env_def.solved_return, (long long)sum.solved_step);
    return sum.mean_return_100 >= chain_env_def.solved_return ? 0 : 1;
}
