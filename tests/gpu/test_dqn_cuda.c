/* DQN on the GPU (src/algo/dqn/dqn.c on a CUDA context). Usage: test_dqn_cuda match|learn|noalloc
 * [runs dir]; each group is its own ctest (label gpu), so `learn` times a fresh process.
 *
 *  match    A few hundred DQN updates on the CPU and on CUDA from the same seed, with epsilon
 *           held at 1 so that actions come from the uniforms alone: both see the same env steps
 *           (checked: the same episodes, bit for bit), the same replay contents and the same
 *           minibatches (the replay twins are bit for bit and draw from the same RNG words), and
 *           differ only in the network arithmetic: cuBLAS sums the layers' products in another
 *           order than the CPU. Tolerances (||gpu - cpu|| / ||cpu|| per buffer):
 *             online, target   1e-4   each update's gradient differs by ~1e-6 relative; Adam
 *                                     divides by sqrt(v), so the steps differ by about as much,
 *                                     and 350 steps of at most lr = 2.5e-4 each move a weight
 *                                     by < 0.1: 1e-6 relative of the updates is ~1e-7 of the
 *                                     weights, amplified by the TD targets' feedback (the
 *                                     target net copies the online one) - 1e-4 leaves 100x
 *           Adam's moments 1e-3   m and v are the gradients themselves (and their squares),
 *                                     so they carry the 1e-6-relative differences undamped; an
 *                                     element whose gradient is near 0 can differ by more, and
 *                                     ReLU units at the edge of dying flip; 1e-3 of the norm
 *           Two variants: CleanRL's (MSE, tau 1) and double DQN + Huber + clip 10 + tau 0.5.
 *  learn    `cudarl train --algo dqn --device cuda` as the CLI runs it (the CUDA preset,
 *           cudarl_dqn_config_for_device) solves CartPole-v1 (mean of 100 episodes >= 475) for
 *           seed 1; prints the time from process start to the solve (target: 5 s on an H200)
 *           and the host synchronisations per iteration (the CUDA path waits for the device only
 *           when its four metric slots are all in flight: well under one per iteration).
 *  noalloc  After setup nothing is allocated: the backend's cudaMalloc count goes up by one (the
 *           arena) over a whole run with captured blocks, and device memory in use does not grow
 *           between the first block and the end. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "cudarl.h"
#include "dqn_weights.h"
#include "ops/cuda/cuda_backend.h"

#define TOL_WEIGHTS 1e-4
#define TOL_MOMENTS 1e-3

static const char *runs;

static double unix_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* When this process started (unix seconds), from /proc (10 ms resolution); `fallback` (a time
 * taken at main's entry) where /proc cannot tell. */
static double process_start(double fallback) {
    FILE *f = fopen("/proc/self/stat", "r");
    char buf[4096];
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* fields after the command name; starttime is field 22 */
    unsigned long long start = 0;
    for (int field = 3; p && field <= 22; field++) {
        p = strchr(p + 1, ' ');
        if (p && field == 22) start = strtoull(p + 1, NULL, 10);
    }
    double uptime = 0;
    f = fopen("/proc/uptime", "r");
    int ok = f && fscanf(f, "%lf", &uptime) == 1;
    if (f) fclose(f);
    long tck = sysconf(_SC_CLK_TCK);
    if (!ok || !start || tck <= 0) return fallback;
    return unix_now() - (uptime - (double)start / (double)tck);
}

static void name_run(cudarl_dqn_config *c, const char *what) {
    c->quiet = 1;
    snprintf(c->runs_dir, sizeof c->runs_dir, "%s", runs);
    snprintf(c->run_name, sizeof c->run_name, "%s_%d", what, (int)getpid());
}

/* ||a - b|| / ||b|| over n floats, and the largest |a - b|. */
static double rel_diff(const float *a, const float *b, size_t n, double *worst) {
    double e = 0, r = 0;
    *worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        e += d * d, r += (double)b[i] * b[i];
        if (d > *worst || isnan(d)) *worst = d;
    }
    return sqrt(e) / (sqrt(r) + 1e-30);
}

static void match_case(cudarl_ctx *cpu, cudarl_ctx *gpu, const char *what, int variant) {
    cudarl_dqn_config c;
    cudarl_dqn_config_default(&c, "CartPole-v1");
    c.num_envs = 8, c.total_timesteps = 8 * 400, c.learning_starts = 400;
    c.train_frequency = 8, c.batch_size = 64, c.target_network_frequency = 320;
    c.buffer_size = 2400, c.start_e = 1.0, c.end_e = 1.0;
    if (variant) c.double_dqn = 1, c.huber = 1, c.max_grad_norm = 10.0, c.tau = 0.5;
    cudarl_train_summary s[2];
    cudarl_ctx *ctxs[2] = {cpu, gpu};
    for (int k = 0; k < 2; k++) {
        char name[64];
        snprintf(name, sizeof name, "match_%s_%s", what, k ? "cuda" : "cpu");
        c.device = k ? CUDARL_DEVICE_CUDA : CUDARL_DEVICE_CPU;
        name_run(&c, name);
        CHECK_OK(cudarl_dqn_train(ctxs[k], &c, &s[k]));
    }
    CHECK_MSG(s[0].episodes > 50 && s[1].episodes == s[0].episodes &&
                  memcmp(&s[1].mean_return_100, &s[0].mean_return_100, sizeof(double)) == 0,
              "%s: the envs saw other actions: cpu %lld episodes (mean %.17g), cuda %lld (%.17g)",
              what, (long long)s[0].episodes, s[0].mean_return_100, (long long)s[1].episodes,
              s[1].mean_return_100);
    cr_qnet_layout l;
    cr_qnet_layout_init(&l, 4, c.hidden1, c.hidden2, 2);
    size_t P = l.num_params;
    float *w[2] = {dqn_weights_load(s[0].run_dir, &l), dqn_weights_load(s[1].run_dir, &l)};
    static const char *const names[4] = {"online", "target", "adam.m", "adam.v"};
    for (int k = 0; k < DQN_WEIGHT_KINDS; k++) {
        double worst, rel = rel_diff(w[1] + k * P, w[0] + k * P, P, &worst);
        double tol = k < 2 ? TOL_WEIGHTS : TOL_MOMENTS;
        printf("%s: %-7s ||cuda - cpu|| / ||cpu|| = %.3g (tolerance %g), largest |diff| %.3g\n",
               what, names[k], rel, tol, worst);
        CHECK_MSG(rel <= tol, "%s: %s differ by %.3g relative (tolerance %g)", what, names[k], rel,
                  tol);
    }
    free(w[0]), free(w[1]);
}

/* Prioritized replay on the GPU captured into graphs (the envs' CUDA twin; beta's step read on
 * the device) against the same run launched op by op (envs on CPU threads, the same CartPole bit
 * for bit): the same episodes and the same weights. */
static void prio_graph_case(cudarl_ctx *gpu) {
    cudarl_dqn_config c;
    cudarl_dqn_config_default(&c, "CartPole-v1");
    c.num_envs = 8, c.total_timesteps = 8 * 400, c.learning_starts = 400;
    c.train_frequency = 8, c.batch_size = 64, c.target_network_frequency = 320;
    c.buffer_size = 2400, c.start_e = 1.0, c.end_e = 0.1, c.prioritized = 1;
    c.device = CUDARL_DEVICE_CUDA;
    cudarl_train_summary s[2];
    for (int k = 0; k < 2; k++) {
        c.env_device = k ? CUDARL_DEVICE_CUDA : CUDARL_DEVICE_CPU;
        name_run(&c, k ? "prio_graphs" : "prio_eager");
        CHECK_OK(cudarl_dqn_train(gpu, &c, &s[k]));
    }
    CHECK_MSG(s[0].episodes > 50 && s[1].episodes == s[0].episodes &&
                  memcmp(&s[1].mean_return_100, &s[0].mean_return_100, sizeof(double)) == 0,
              "prioritized: graphs %lld episodes (mean %.17g), op by op %lld (%.17g)",
              (long long)s[1].episodes, s[1].mean_return_100, (long long)s[0].episodes,
              s[0].mean_return_100);
    cr_qnet_layout l;
    cr_qnet_layout_init(&l, 4, c.hidden1, c.hidden2, 2);
    float *w[2] = {dqn_weights_load(s[0].run_dir, &l), dqn_weights_load(s[1].run_dir, &l)};
    double worst, rel = rel_diff(w[1], w[0], l.num_params, &worst);
    printf("prioritized: graphs vs op by op: %lld episodes each, online weights differ by %.3g "
           "relative\n", (long long)s[0].episodes, rel);
    CHECK_MSG(rel <= 1e-5, "prioritized: graphs and op by op differ by %.3g relative", rel);
    free(w[0]), free(w[1]);
}

static void test_match(void) {
    cudarl_ctx *cpu, *gpu;
    CHECK_OK(cudarl_ctx_init(&cpu, CUDARL_DEVICE_CPU, 0));
    CHECK_OK(cudarl_ctx_init(&gpu, CUDARL_DEVICE_CUDA, 0));
    match_case(cpu, gpu, "cleanrl", 0);
    match_case(cpu, gpu, "double_huber_clip", 1);
    prio_graph_case(gpu);
    cudarl_ctx_free(gpu);
    cudarl_ctx_free(cpu);
}

static void test_learn(double t0) {
    cudarl_ctx *gpu;
    CHECK_OK(cudarl_ctx_init(&gpu, CUDARL_DEVICE_CUDA, 0));
    cudarl_dqn_config c;
    cudarl_dqn_config_default(&c, "CartPole-v1");
    cudarl_dqn_config_for_device(&c, CUDARL_DEVICE_CUDA);
    name_run(&c, "learn");
    cudarl_train_summary s;
    CHECK_OK(cudarl_dqn_train(gpu, &c, &s));
    cudarl_ctx_free(gpu);
    double from_start = s.solved_step >= 0 ? s.solved_unix_time - t0 : -1;
    printf("learn: %lld steps in %.2f s (%.0f steps/s), mean of the last 100 %.1f, host syncs "
           "per iteration %.4f\n", (long long)s.global_step, s.train_seconds, s.sps,
           s.mean_return_100, s.host_syncs_per_iteration);
    printf("learn: 475 first reached at step %lld, %.3f s into the loop, %.3f s from process "
           "start (target 5 s)%s\n", (long long)s.solved_step, s.solved_seconds, from_start,
           from_start > 5.0 ? "  TARGET MISSED" : "");
    CHECK_MSG(s.solved_step > 0, "DQN on the GPU never reached a mean of 475 over 100 episodes "
              "in %lld steps", (long long)s.global_step);
    CHECK_MSG(s.host_syncs_per_iteration < 0.1, "%.3f host syncs per iteration",
              s.host_syncs_per_iteration);
}

static void test_noalloc(void) {
    cudarl_ctx *gpu;
    CHECK_OK(cudarl_ctx_init(&gpu, CUDARL_DEVICE_CUDA, 0));
    cudarl_dqn_config c;
    cudarl_dqn_config_default(&c, "CartPole-v1");
    cudarl_dqn_config_for_device(&c, CUDARL_DEVICE_CUDA);
    c.total_timesteps = 60000;
    name_run(&c, "noalloc");
    size_t before = cr_cuda_alloc_count();
    cudarl_train_summary s;
    CHECK_OK(cudarl_dqn_train(gpu, &c, &s));
    size_t allocs = cr_cuda_alloc_count() - before;
    printf("noalloc: %zu device allocation(s) for a %lld-step run; %lld bytes in use after the "
           "first block, growth %lld bytes\n", allocs, (long long)s.global_step,
           (long long)s.device_bytes_after_setup, (long long)s.device_bytes_growth);
    CHECK_MSG(allocs == 1, "expected exactly one device allocation (the arena), got %zu", allocs);
    CHECK(s.device_bytes_after_setup > 0);
    CHECK_MSG(s.device_bytes_growth <= 0, "device memory grew by %lld bytes",
              (long long)s.device_bytes_growth);
    cudarl_ctx_free(gpu);
}

int main(int argc, char **argv) {
    double t0 = process_start(unix_now());
    const char *group = argc > 1 ? argv[1] : "";
    runs = argc > 2 ? argv[2] : "dqn-cuda-runs";
    cudarl_log_set_level(CUDARL_LOG_WARN);
    if (!strcmp(group, "match")) test_match();
    else if (!strcmp(group, "learn")) test_learn(t0);
    else if (!strcmp(group, "noalloc")) test_noalloc();
    else CHECK_MSG(0, "usage: test_dqn_cuda match|learn|noalloc [runs dir]; got '%s'", group);
    printf("test_dqn_cuda %s: ok\n", group);
    return 0;
}
