/* DQN with the envs on CPU threads (--env-device cpu, src/algo/dqn/dqn.c's env pool) on the context
 * given by argv[1] (cpu; cuda for the gpu label):
 *  1. CartPole-v1 on a pool of 3 threads trains exactly as on the env batch (CartPole's CUDA twin
 *     on cuda): the same episodes and the same weights, target and Adam moments bit for bit. The
 *     pool steps synchronously (the CartPole def is cr_cartpole_step's code, the RNG words and
 *     the ops are the same on the same shapes). Two variants: uniform replay with double DQN
 *     (on cuda the batch runs in captured graphs and the pool op by op: the same kernels), and
 *     prioritized replay with Huber loss and gradient clipping.
 *  2. MinAtar/Breakout-v1 (uint8 observations of 4x10x10, stored as uint8 in the replay and cast
 *     to float for the Q-network) trains for a few thousand steps: episodes finish and are
 *     logged in metrics.csv, and a checkpoint is written. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "cudarl.h"
#include "dqn_weights.h"
#include "env/env.h"

static const char *runs;
static cudarl_device_kind kind;

static void name_run(cudarl_dqn_config *c, const char *what) {
    c->quiet = 1;
    snprintf(c->runs_dir, sizeof c->runs_dir, "%s", runs);
    snprintf(c->run_name, sizeof c->run_name, "%s_%s_%d", what,
             kind == CUDARL_DEVICE_CUDA ? "cuda" : "cpu", (int)getpid());
}

static void cartpole_case(cudarl_ctx *ctx, const char *what, int prioritized) {
    cudarl_dqn_config c;
    cudarl_dqn_config_default(&c, "CartPole-v1");
    c.num_envs = 7, c.total_timesteps = 7 * 1200, c.learning_starts = 700;
    c.train_frequency = 7, c.batch_size = 64, c.target_network_frequency = 280;
    c.buffer_size = 4200, c.learning_rate = 1e-3;
    c.double_dqn = !prioritized, c.prioritized = prioritized, c.huber = prioritized;
    c.max_grad_norm = prioritized ? 5.0 : 0.0;
    c.device = kind;
    cudarl_train_summary s[2];
    char name[64];
    for (int pool = 0; pool < 2; pool++) {
        c.env_device = pool ? CUDARL_DEVICE_CPU : (kind == CUDARL_DEVICE_CUDA ? CUDARL_DEVICE_CUDA
                                                                              : CUDARL_DEVICE_AUTO);
        c.env_threads = pool ? 3 : 0;
        snprintf(name, sizeof name, "%s_%s", what, pool ? "pool" : "batch");
        name_run(&c, name);
        CHECK_OK(cudarl_dqn_train(ctx, &c, &s[pool]));
    }
    printf("%s: batch %lld episodes, mean(100) %.3f; pool %lld episodes, mean(100) %.3f\n", what,
           (long long)s[0].episodes, s[0].mean_return_100, (long long)s[1].episodes,
           s[1].mean_return_100);
    CHECK_MSG(s[0].episodes > 10, "%s: only %lld episodes", what, (long long)s[0].episodes);
    CHECK_MSG(s[1].episodes == s[0].episodes, "%s: %lld episodes on the pool, %lld on the batch",
              what, (long long)s[1].episodes, (long long)s[0].episodes);
    CHECK_MSG(memcmp(&s[1].mean_return_100, &s[0].mean_return_100, sizeof(double)) == 0,
              "%s: mean return %.17g on the pool, %.17g on the batch", what,
              s[1].mean_return_100, s[0].mean_return_100);
    cr_qnet_layout l;
    cr_qnet_layout_init(&l, 4, c.hidden1, c.hidden2, 2);
    float *w[2] = {dqn_weights_load(s[0].run_dir, &l), dqn_weights_load(s[1].run_dir, &l)};
    size_t P = l.num_params;
    for (size_t i = 0; i < DQN_WEIGHT_KINDS * P; i++)
        CHECK_MSG(memcmp(&w[0][i], &w[1][i], sizeof(float)) == 0,
                  "%s: %s element %zu: batch %.9g, pool %.9g", what,
                  dqn_weight_prefix[i / P][0] ? dqn_weight_prefix[i / P] : "network", i % P,
                  w[0][i], w[1][i]);
    free(w[0]), free(w[1]);
}

static void minatar_case(cudarl_ctx *ctx) {
    cudarl_dqn_config c;
    cudarl_dqn_config_default(&c, "MinAtar/Breakout-v1");
    c.num_envs = 4, c.total_timesteps = 4000, c.learning_starts = 500, c.train_frequency = 4;
    c.batch_size = 32, c.buffer_size = 2000, c.target_network_frequency = 400;
    c.env_device = CUDARL_DEVICE_CPU, c.env_threads = 2, c.device = kind;
    name_run(&c, "breakout");
    cudarl_train_summary s;
    CHECK_OK(cudarl_dqn_train(ctx, &c, &s));
    printf("MinAtar/Breakout-v1: %lld steps, %lld episodes, mean(100) %.2f\n",
           (long long)s.global_step, (long long)s.episodes, s.mean_return_100);
    CHECK(s.global_step == 4000);
    CHECK_MSG(s.episodes >= 5, "only %lld episodes in 4,000 steps", (long long)s.episodes);
    CHECK(s.mean_return_100 >= 0.0);
    char path[700], line[512];
    snprintf(path, sizeof path, "%s/metrics.csv", s.run_dir);
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "no %s", path);
    int rows = 0, with_return = 0;
    while (fgets(line, sizeof line, f)) {
        if (rows++ == 0) continue; /* the header */
        const char *p = strchr(line, ',');
        p = p ? strchr(p + 1, ',') : NULL; /* charts/episodic_return follows the 2nd comma */
        if (p && p[1] != ',') with_return++;
    }
    fclose(f);
    CHECK_MSG(rows > 10 && with_return > 0, "metrics.csv: %d rows, %d with an episodic return",
              rows, with_return);
    const cr_env_info *info = cr_env_info_find("MinAtar/Breakout-v1");
    CHECK(info != NULL && info->obs_dim == 400);
    cr_qnet_layout l;
    cr_qnet_layout_init(&l, info->obs_dim, c.hidden1, c.hidden2, info->num_actions);
    free(dqn_weights_load(s.run_dir, &l));
}

int main(int argc, char **argv) {
    kind = argc > 1 && !strcmp(argv[1], "cuda") ? CUDARL_DEVICE_CUDA : CUDARL_DEVICE_CPU;
    runs = argc > 2 ? argv[2] : "dqn-pool-runs";
    cudarl_log_set_level(CUDARL_LOG_WARN);
    cudarl_ctx *ctx;
    CHECK_OK(cudarl_ctx_init(&ctx, kind, 0));
    cartpole_case(ctx, "uniform_double", 0);
    cartpole_case(ctx, "prioritized_huber_clip", 1);
    minatar_case(ctx);
    cudarl_ctx_free(ctx);
    printf("test_dqn_pool: ok\n");
    return 0;
}
