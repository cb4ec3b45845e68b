/* Learning is tested, not assumed: DQN with CleanRL dqn.py's defaults (1 env, buffer 10,000,
 * batch 128, target every 500 steps, epsilon 1 -> 0.05 over half the run) reaches a mean return
 * of 475 over the last 100 episodes on CartPole-v1 within 400,000 steps on the CPU (CleanRL's
 * dqn.py got there after 289k steps); then the checkpoint evaluates as a DQN policy. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "cudarl.h"

int main(int argc, char **argv) {
    const char *runs = argc > 1 ? argv[1] : "dqn-runs";
    cudarl_log_set_level(CUDARL_LOG_WARN);
    cudarl_ctx *ctx;
    CHECK_OK(cudarl_ctx_init(&ctx, CUDARL_DEVICE_CPU, 0));
    cudarl_dqn_config c;
    cudarl_dqn_config_default(&c, "CartPole-v1");
    c.total_timesteps = 400000;
    c.quiet = 1;
    snprintf(c.runs_dir, sizeof c.runs_dir, "%s", runs);
    snprintf(c.run_name, sizeof c.run_name, "dqn_%d_%lld", (int)getpid(), (long long)time(NULL));
    cudarl_train_summary s;
    CHECK_OK(cudarl_dqn_train(ctx, &c, &s));
    printf("DQN: %lld steps in %.2f s (%.0f steps/s), 475 first reached at step %lld (%.2f s), "
           "final mean of the last 100 %.1f\n", (long long)s.global_step, s.train_seconds, s.sps,
           (long long)s.solved_step, s.solved_seconds, s.mean_return_100);
    CHECK_MSG(s.solved_step > 0, "DQN never reached a mean of 475 over 100 episodes");
    char path[700];
    snprintf(path, sizeof path, "%s/model.safetensors", s.run_dir);
    double mean = 0, std = 0;
    CHECK_OK(cudarl_policy_eval(ctx, path, 20, 7, &mean, &std));
    printf("eval of the final Q-network: mean %.1f, std %.1f over 20 episodes\n", mean, std);
    CHECK(mean >= 1.0 && mean <= 500.0);
    cudarl_ctx_free(ctx);
    return 0;
}
