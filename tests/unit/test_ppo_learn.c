/* Learning is tested, not assumed: PPO with the default preset solves CartPole-v1 (mean return
 * of the last 100 episodes >= 475 at the end of training) for seeds 1..3 on the CPU. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "cudarl.h"

int main(int argc, char **argv) {
    const char *runs = argc > 1 ? argv[1] : "learn-runs";
    cudarl_log_set_level(CUDARL_LOG_WARN);
    cudarl_ctx *ctx;
    CHECK_OK(cudarl_ctx_init(&ctx, CUDARL_DEVICE_CPU, 0));
    for (int seed = 1; seed <= 3; seed++) {
        cudarl_ppo_config cfg;
        cudarl_ppo_config_default(&cfg, "CartPole-v1");
        cfg.seed = (uint64_t)seed;
        cfg.quiet = 1;
        snprintf(cfg.runs_dir, sizeof cfg.runs_dir, "%s", runs);
        snprintf(cfg.run_name, sizeof cfg.run_name, "learn_seed%d_%d_%lld", seed, (int)getpid(),
                 (long long)time(NULL));
        cudarl_train_summary s;
        CHECK_OK(cudarl_ppo_train(ctx, &cfg, NULL, &s));
        printf("seed %d: mean return of the last 100 = %.1f after %lld steps (%.0f steps/s), "
               "first >= 475 at step %lld\n", seed, s.mean_return_100, (long long)s.global_step,
               s.sps, (long long)s.solved_step);
        CHECK_MSG(s.mean_return_100 >= 475.0, "seed %d ended at %.1f, below 475", seed,
                  s.mean_return_100);
        CHECK(s.solved_step > 0 && s.solved_step <= s.global_step);
    }
    cudarl_ctx_free(ctx);
    return 0;
}
