/* PPO on the GPU: learning, memory, and agreement with the CPU path.
 *  1. `cudarl train --device cuda` with the CUDA preset solves CartPole-v1 (mean of the last
 *     100 episodes >= 475 at the end) for seeds 1..5.
 *  2. No device allocation after setup: the backend's cudaMalloc count goes up by exactly one
 *     (the training arena) per run, and device memory in use does not grow over 1,000
 *     iterations (cudaMemGetInfo, read by the trainer after the first and the last iteration).
 *  3. --precision bf16 and fp16 (the MLP op by op, its products through cuBLAS in the format;
 *     fp16 with loss scaling) solve it too with the CUDA preset, seed 1. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "cudarl.h"
#include "ops/cuda/cuda_backend.h"

static const char *runs;

static void name_run(cudarl_ppo_config *c, const char *what, int seed) {
    c->quiet = 1;
    snprintf(c->runs_dir, sizeof c->runs_dir, "%s", runs);
    snprintf(c->run_name, sizeof c->run_name, "%s_%d_%d", what, seed, (int)getpid());
}

static void test_learning(cudarl_ctx *ctx) {
    for (int seed = 1; seed <= 5; seed++) {
        cudarl_ppo_config c;
        cudarl_ppo_config_default(&c, "CartPole-v1");
        cudarl_ppo_config_for_device(&c, CUDARL_DEVICE_CUDA);
        c.seed = (uint64_t)seed;
        name_run(&c, "learn", seed);
        cudarl_train_summary s;
        CHECK_OK(cudarl_ppo_train(ctx, &c, NULL, &s));
        printf("seed %d: mean of last 100 %.1f, %lld steps in %.3f s (%.0f steps/s), 475 at step "
               "%lld after %.3f s\n", seed, s.mean_return_100, (long long)s.global_step,
               s.train_seconds, s.sps, (long long)s.solved_step, s.solved_seconds);
        CHECK_MSG(s.mean_return_100 >= 475.0, "seed %d ended at %.1f", seed, s.mean_return_100);
    }
}

static void test_precisions(cudarl_ctx *ctx) {
    static const cudarl_precision precs[2] = {CUDARL_PRECISION_BF16, CUDARL_PRECISION_FP16};
    for (int q = 0; q < 2; q++) {
        cudarl_ppo_config c;
        cudarl_ppo_config_default(&c, "CartPole-v1");
        cudarl_ppo_config_for_device(&c, CUDARL_DEVICE_CUDA);
        c.precision = precs[q];
        name_run(&c, cudarl_precision_name(precs[q]), 1);
        cudarl_train_summary s;
        CHECK_OK(cudarl_ppo_train(ctx, &c, NULL, &s));
        printf("%s: mean of last 100 %.1f, %lld steps in %.3f s (%.0f steps/s), 475 at step "
               "%lld\n", cudarl_precision_name(precs[q]), s.mean_return_100,
               (long long)s.global_step, s.train_seconds, s.sps, (long long)s.solved_step);
        CHECK_MSG(s.mean_return_100 >= 475.0, "%s ended at %.1f",
                  cudarl_precision_name(precs[q]), s.mean_return_100);
    }
}

static void test_memory(cudarl_ctx *ctx) {
    cudarl_ppo_config c;
    cudarl_ppo_config_default(&c, "CartPole-v1");
    c.num_envs = 64, c.num_steps = 8, c.num_minibatches = 2, c.update_epochs = 1;
    c.total_timesteps = 64 * 8 * 1000; /* 1,000 iterations */
    name_run(&c, "memory", 0);
    size_t before = cr_cuda_alloc_count();
    cudarl_train_summary s;
    CHECK_OK(cudarl_ppo_train(ctx, &c, NULL, &s));
    size_t allocs = cr_cuda_alloc_count() - before;
    printf("memory: %zu device allocation(s) for a 1,000-iteration run; %lld bytes in use after "
           "setup, growth %lld bytes\n", allocs, (long long)s.device_bytes_after_setup,
           (long long)s.device_bytes_growth);
    CHECK_MSG(allocs == 1, "expected exactly one device allocation (the arena), got %zu", allocs);
    CHECK(s.device_bytes_after_setup > 0);
    CHECK_MSG(s.device_bytes_growth <= 0, "device memory grew by %lld bytes over 1,000 iterations",
              (long long)s.device_bytes_growth);
}

int main(int argc, char **argv) {
    runs = argc > 1 ? argv[1] : "cuda-runs";
    cudarl_log_set_level(CUDARL_LOG_WARN);
    cudarl_ctx *ctx;
    CHECK_OK(cudarl_ctx_init(&ctx, CUDARL_DEVICE_CUDA, 0));
    test_memory(ctx);
    test_learning(ctx);
    test_precisions(ctx);
    cudarl_ctx_free(ctx);
    printf("test_ppo_cuda: ok\n");
    return 0;
}
