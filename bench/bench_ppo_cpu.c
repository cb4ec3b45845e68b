/* CPU PPO throughput and time to solve CartPole-v1 with the default preset.
 *
 * Runs `cudarl train` (through the library, the same code path) for several seeds and prints,
 * per seed and as the median: env steps/s over the whole loop (rollout + update, metrics and
 * checkpoint on), the step and loop time at which the mean return of the last 100 episodes
 * first reached 475, and the final mean.
 *
 *   bench_ppo_cpu [--seeds N] [--threads T] [--runs-dir DIR]
 * Peer: bench/peers/ppo_torch.py runs the same workload in PyTorch (see bench/RESULTS.md). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "cudarl.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv) {
    int seeds = 5, threads = 1;
    const char *runs_dir = "bench-runs";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--seeds")) seeds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--runs-dir")) runs_dir = argv[i + 1];
        else {
            fprintf(stderr, "bench_ppo_cpu: unknown flag %s (--seeds N --threads T --runs-dir D)\n", argv[i]);
            return 2;
        }
    }
    if (seeds < 1 || seeds > 100) {
        fprintf(stderr, "bench_ppo_cpu: --seeds must be between 1 and 100\n");
        return 2;
    }
    cudarl_log_set_level(CUDARL_LOG_WARN);
    cudarl_ctx *ctx;
    if (cudarl_ctx_init(&ctx, CUDARL_DEVICE_CPU, 0) != CUDARL_OK) {
        fprintf(stderr, "bench_ppo_cpu: %s\n", cudarl_last_error());
        return 1;
    }
    double sps[100], solve_s[100], solve_step[100];
    int solved = 0;
    cudarl_ppo_config cfg;
    cudarl_ppo_config_default(&cfg, "CartPole-v1");
    printf("cudarl CPU PPO, CartPole-v1, default preset: %d envs x %d steps, %d epochs x %d "
           "minibatches, %lld steps, %d thread(s)\n", cfg.num_envs, cfg.num_steps,
           cfg.update_epochs, cfg.num_minibatches, (long long)cfg.total_timesteps, threads);
    printf("%6s %12s %14s %12s %10s\n", "seed", "steps/s", "solved@step", "solved@s", "final100");
    for (int s = 0; s < seeds; s++) {
        cudarl_ppo_config_default(&cfg, "CartPole-v1");
        cfg.seed = (uint64_t)s + 1;
        cfg.threads = threads;
        cfg.quiet = 1;
        snprintf(cfg.runs_dir, sizeof cfg.runs_dir, "%s", runs_dir);
        snprintf(cfg.run_name, sizeof cfg.run_name, "bench_ppo_cpu_%d_%d", s + 1, (int)getpid());
        cudarl_train_summary sum;
        if (cudarl_ppo_train(ctx, &cfg, NULL, &sum) != CUDARL_OK) {
            fprintf(stderr, "bench_ppo_cpu: %s\n", cudarl_last_error());
            return 1;
        }
        sps[s] = sum.sps;
        if (sum.solved_step >= 0) {
            solve_s[solved] = sum.solved_seconds;
            solve_step[solved++] = (double)sum.solved_step;
        }
        printf("%6d %12.0f %14lld %12.3f %10.1f\n", s + 1, sum.sps, (long long)sum.solved_step,
               sum.solved_seconds, sum.mean_return_100);
    }
    printf("median: %.0f steps/s; solved %d of %d seeds", median(sps, seeds), solved, seeds);
    if (solved) printf(", median %.0f steps and %.3f s of loop time to reach 475",
                       median(solve_step, solved), median(solve_s, solved));
    printf("\n");
    cudarl_ctx_free(ctx);
    return 0;
}
