/* DQN with a convolutional Q-network (--policy minatar-cnn, src/algo/dqn/dqn.c through cr_convnet)
 * on the context given by argv[1] (cpu; cuda for the gpu label):
 *  cpu  1. --policy is validated: an unknown name is refused listing the choices, a conv policy
 *          on CartPole-v1 (vector observations) is refused, nature-cnn on MinAtar's 10x10 is
 *          refused as not fitting; DQN's MLP on MinAtar is accepted (its 0/1 channels cast),
 *          where PPO refuses its MLP (docs/training.md says which does what).
 *       2. MinAtar/Breakout-v1 trains for a few thousand steps with minatar-cnn: episodes finish
 *          and are logged in metrics.csv; the checkpoint's "network" metadata parses back to
 *          minatar-cnn for (4, 10, 10) and 3 actions with DQN heads, its policy is minatar-cnn,
 *          and every tensor of that layout (online, target, Adam's moments) is there, with the
 *          layout's shape, and finite.
 *       3. cudarl eval plays the checkpoint greedily (the policy runtime and CPU envs): a finite,
 *          non-negative mean return, the same twice for one seed.
 *  cuda 1. match: a few hundred updates of minatar-cnn on MinAtar/Breakout-v1 on the CPU and on
 *          CUDA (the network through cr_convnet_cuda) from one seed, with epsilon held at 1 so
 *          that actions come from the uniforms alone: both see the same env steps (checked:
 *          the same episodes, bit for bit), the same replay contents and minibatches (the
 *          replay twins are bit for bit and draw the same RNG words), and differ only in the
 *          network's arithmetic (cuBLAS's and the conv engine's summation orders against the
 *          CPU's). Tolerances, ||cuda - cpu|| / ||cpu|| per buffer, as test_dqn_cuda's for the
 *          MLP and for the same reasons (the conv net's sums are no longer: at most 1024
 *          products, the MLP's 120):
 *            online, target  1e-4   each update's gradient differs by ~1e-6 relative; Adam's
 *                                   steps by about as much; a few hundred steps of lr 2.5e-4
 *                                   move a weight by < 0.1, so ~1e-7 of the weights, amplified
 *                                   by the TD targets' feedback
 *            Adam's moments  1e-3   the gradients themselves and their squares, undamped; ReLU
 *                                   units at the edge flip
 *       2. run: the CUDA preset (cudarl_dqn_config_for_device: 32 envs, batch 256) trains
 *          minatar-cnn on the GPU for 20,000 steps: episodes finish, the loss stays finite, and
 *          the checkpoint holds the network as on the CPU.
 *       3. mixed: the same in bf16 and in fp16 (loss scaling): finite TD loss, and metrics.csv's
 *          amp columns blank for bf16, GradScaler's scale and skips for fp16. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "metrics_csv.h"
#include "cudarl.h"
#include "env/env.h"
#include "nn/convnet.h"
#include "io/safetensors.h"

#define BREAKOUT "MinAtar/Breakout-v1"
#define TOL_WEIGHTS 1e-4
#define TOL_MOMENTS 1e-3

/* The network's tensors under these prefixes: online, target, Adam's two moments. */
static const char *const prefix[] = {"", "target_", "optimizer.exp_avg.",
                                     "optimizer.exp_avg_sq."};

static const char *runs;

static void breakout_config(cudarl_dqn_config *c, cudarl_device_kind kind) {
    cudarl_dqn_config_default(c, BREAKOUT);
    snprintf(c->policy, sizeof c->policy, "minatar-cnn");
    c->num_envs = 4, c->total_timesteps = 4000, c->learning_starts = 500, c->train_frequency = 4;
    c->batch_size = 32, c->buffer_size = 2000, c->target_network_frequency = 400;
    c->env_device = CUDARL_DEVICE_CPU, c->env_threads = 2, c->device = kind, c->quiet = 1;
    snprintf(c->runs_dir, sizeof c->runs_dir, "%s", runs);
    snprintf(c->run_name, sizeof c->run_name, "breakout_cnn_%d", (int)getpid());
}

/* Expects `s` to be `want` with a message containing `needle`. */
static void expect_refusal(const char *what, cudarl_status s, cudarl_status want,
                           const char *needle) {
    const char *msg = cudarl_last_error();
    CHECK_MSG(s == want && strstr(msg, needle) != NULL, "%s: expected %s with '%s', got %s: %s",
              what, cudarl_status_name(want), needle, cudarl_status_name(s), msg);
    printf("%s: refused: %s\n", what, msg);
}

static void validation_case(void) {
    cudarl_dqn_config c;
    breakout_config(&c, CUDARL_DEVICE_CPU);
    CHECK_OK(cudarl_dqn_config_validate(&c));
    snprintf(c.policy, sizeof c.policy, "resnet");
    expect_refusal("unknown policy", cudarl_dqn_config_validate(&c), CUDARL_ERR_INVALID_ARG,
                   "choose one of: mlp, minatar-cnn, nature-cnn");
    snprintf(c.policy, sizeof c.policy, "nature-cnn");
    expect_refusal("nature-cnn on MinAtar", cudarl_dqn_config_validate(&c),
                   CUDARL_ERR_INVALID_ARG, "does not fit");
    cudarl_dqn_config_default(&c, "CartPole-v1");
    snprintf(c.policy, sizeof c.policy, "minatar-cnn");
    expect_refusal("minatar-cnn on CartPole", cudarl_dqn_config_validate(&c),
                   CUDARL_ERR_INVALID_ARG, "use --policy mlp");
    breakout_config(&c, CUDARL_DEVICE_CPU);
    snprintf(c.policy, sizeof c.policy, "mlp");
    CHECK_MSG(cudarl_dqn_config_validate(&c) == CUDARL_OK, "DQN's MLP on %s refused: %s", BREAKOUT,
              cudarl_last_error());
    cudarl_ppo_config p;
    cudarl_ppo_config_default(&p, BREAKOUT);
    expect_refusal("PPO's MLP on MinAtar", cudarl_ppo_config_validate(&p), CUDARL_ERR_INVALID_ARG,
                   "use --policy minatar-cnn");
    printf("DQN's MLP on %s accepted, PPO's refused\n", BREAKOUT);

    /* the env's preset: its Q-network on any device, MinAtar's recipe on CUDA only */
    cudarl_dqn_config_default(&c, "CartPole-v1");
    cudarl_dqn_config_for_env_on(&c, BREAKOUT, CUDARL_DEVICE_CPU);
    CHECK_MSG(!strcmp(c.env_id, BREAKOUT) && !strcmp(c.policy, "minatar-cnn") &&
                  c.num_envs == 1 && c.batch_size == 128 && !c.huber,
              "the CPU preset of %s: policy %s, %d envs, batch %d", BREAKOUT, c.policy,
              c.num_envs, c.batch_size);
    CHECK_OK(cudarl_dqn_config_validate(&c));
    cudarl_dqn_config_default(&c, NULL);
    cudarl_dqn_config_for_device(&c, CUDARL_DEVICE_CUDA);
    cudarl_dqn_config_for_env_on(&c, BREAKOUT, CUDARL_DEVICE_CUDA);
    CHECK_MSG(!strcmp(c.policy, "minatar-cnn") && c.num_envs == 256 && c.batch_size == 512 &&
                  c.learning_rate == 1e-3 && c.train_frequency == 64 &&
                  c.target_network_frequency == 8192 && c.buffer_size == 100000 &&
                  c.learning_starts == 5000 && c.end_e == 0.01 &&
                  c.exploration_fraction == 0.02 && c.huber && c.total_timesteps == 2500000,
              "MinAtar's CUDA recipe: policy %s, %d envs, batch %d, lr %g", c.policy, c.num_envs,
              c.batch_size, c.learning_rate);
    c.device = CUDARL_DEVICE_AUTO;
    CHECK_OK(cudarl_dqn_config_validate(&c));
    cudarl_dqn_config_default(&c, NULL);
    cudarl_dqn_config_for_env_on(&c, "CartPolePixels-v1", CUDARL_DEVICE_CUDA);
    CHECK_MSG(!strcmp(c.policy, "nature-cnn") && c.num_envs == 1,
              "CartPolePixels-v1's preset: policy %s, %d envs", c.policy, c.num_envs);
    cudarl_dqn_config before;
    cudarl_dqn_config_default(&c, NULL);
    before = c;
    cudarl_dqn_config_for_env_on(&c, "CartPole-v1", CUDARL_DEVICE_CUDA);
    CHECK_MSG(!memcmp(&before, &c, sizeof c), "CartPole-v1's env preset changed the config");
    printf("DQN's env presets: the Q-network of an image env, MinAtar's recipe on CUDA\n");
}

/* Every tensor of net's layout under each prefix in the checkpoint at path, with the layout's
 * shape and finite values: 4 num_params floats (malloc'd), online, target, then Adam's m, v. */
static float *load_weights(const char *path, const cr_convnet *net) {
    cr_st_file *f = NULL;
    CHECK_OK(cr_st_open(&f, path));
    const size_t P = net->num_params;
    float *w = malloc(4 * P * sizeof(float));
    CHECK(w != NULL);
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < net->ntensors; i++) {
            const cr_convnet_tensor *t = &net->t[i];
            char name[96];
            snprintf(name, sizeof name, "%s%s", prefix[k], t->name);
            cr_st_tensor st;
            CHECK_OK(cr_st_find(f, name, &st));
            CHECK_MSG(st.ndim == t->ndim, "%s: %d dims, expected %d", name, st.ndim, t->ndim);
            for (int d = 0; d < t->ndim; d++)
                CHECK_MSG(st.shape[d] == t->shape[d], "%s: dim %d is %lld, expected %d", name, d,
                          (long long)st.shape[d], t->shape[d]);
            float *dst = w + k * P + t->offset;
            CHECK_OK(cr_st_read_f32(f, name, dst, t->count));
            for (size_t e = 0; e < t->count; e++)
                CHECK_MSG(isfinite(dst[e]), "%s[%zu] = %g", name, e, dst[e]);
        }
    cr_st_close(f);
    return w;
}

/* The checkpoint's network: its spec text parses to minatar-cnn, and every tensor of the layout
 * it plans is in the file with that shape and finite values. */
static void check_checkpoint(const char *path, int num_actions) {
    cr_st_file *f = NULL;
    CHECK_OK(cr_st_open(&f, path));
    const char *pol = cr_st_meta(f, "policy");
    CHECK_MSG(pol && !strcmp(pol, "minatar-cnn"), "policy metadata '%s'", pol ? pol : "(none)");
    cr_convnet_spec spec;
    CHECK_OK(cr_convnet_spec_parse(&spec, cr_st_meta(f, CR_CONVNET_META_KEY), path));
    CHECK_MSG(!strcmp(spec.name, "minatar-cnn") && spec.heads == CR_CONVNET_DQN &&
                  spec.in_c == 4 && spec.in_h == 10 && spec.in_w == 10 &&
                  spec.num_actions == num_actions && spec.dtype == CR_CONVNET_U8 &&
                  spec.scale == CR_CONVNET_SCALE_NONE,
              "network spec %s heads %d (%d, %d, %d) actions %d dtype %d scale %d", spec.name,
              (int)spec.heads, spec.in_c, spec.in_h, spec.in_w, spec.num_actions,
              (int)spec.dtype, (int)spec.scale);
    static cr_convnet net;
    CHECK_OK(cr_convnet_plan(&net, &spec));
    CHECK(net.ntensors == 6 && cr_convnet_find(&net, "network.5.weight") == 4);
    cr_st_close(f);
    free(load_weights(path, &net));
    printf("checkpoint: policy minatar-cnn, %zu parameters in %d tensors\n", net.num_params,
           net.ntensors);
}

static void breakout_case(cudarl_ctx *ctx) {
    cudarl_dqn_config c;
    breakout_config(&c, CUDARL_DEVICE_CPU);
    cudarl_train_summary s;
    CHECK_OK(cudarl_dqn_train(ctx, &c, &s));
    printf("%s minatar-cnn: %lld steps, %lld episodes, mean(100) %.2f, %.2f s\n", BREAKOUT,
           (long long)s.global_step, (long long)s.episodes, s.mean_return_100, s.train_seconds);
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
    snprintf(path, sizeof path, "%s/model.safetensors", s.run_dir);
    const cr_env_info *info = cr_env_info_find(BREAKOUT);
    CHECK(info != NULL);
    check_checkpoint(path, info->num_actions);
    double mean = 0, std = 0;
    CHECK_OK(cudarl_policy_eval(ctx, path, 5, 7, &mean, &std));
    double mean2 = -1, std2 = -1;
    CHECK_OK(cudarl_policy_eval(ctx, path, 5, 7, &mean2, &std2));
    CHECK_MSG(isfinite(mean) && mean >= 0 && std >= 0 && mean == mean2 && std == std2,
              "eval of a minatar-cnn checkpoint: mean %g std %g, then %g %g", mean, std, mean2,
              std2);
    printf("eval of the minatar-cnn checkpoint: mean return %.2f (std %.2f) over 5 episodes\n",
           mean, std);
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

/* The minatar-cnn of Breakout planned into *net, and the checkpoints of runs s[0] and s[1]
 * (online, target, Adam's moments: 4 P floats each) into w[0], w[1] (free them). */
static void load_runs(const cudarl_train_summary s[2], cr_convnet *net, float *w[2]) {
    const cr_env_info *info = cr_env_info_find(BREAKOUT);
    CHECK(info != NULL);
    cr_convnet_spec spec;
    CHECK_OK(cr_convnet_spec_named(&spec, "minatar-cnn", 4, 10, 10, CR_CONVNET_DQN,
                                   info->num_actions));
    CHECK_OK(cr_convnet_plan(net, &spec));
    for (int k = 0; k < 2; k++) {
        char path[700];
        snprintf(path, sizeof path, "%s/model.safetensors", s[k].run_dir);
        w[k] = load_weights(path, net);
    }
}

static void cuda_match_case(cudarl_ctx *cpu, cudarl_ctx *gpu) {
    cudarl_dqn_config c;
    breakout_config(&c, CUDARL_DEVICE_CPU);
    c.total_timesteps = 2000, c.learning_starts = 500; /* (2000 - 500) / 4 = 375 updates */
    c.start_e = 1.0, c.end_e = 1.0;
    cudarl_train_summary s[2];
    cudarl_ctx *ctxs[2] = {cpu, gpu};
    for (int k = 0; k < 2; k++) {
        c.device = k ? CUDARL_DEVICE_CUDA : CUDARL_DEVICE_CPU;
        snprintf(c.run_name, sizeof c.run_name, "breakout_cnn_match_%s_%d", k ? "cuda" : "cpu",
                 (int)getpid());
        CHECK_OK(cudarl_dqn_train(ctxs[k], &c, &s[k]));
    }
    CHECK_MSG(s[0].episodes >= 5 && s[1].episodes == s[0].episodes &&
                  memcmp(&s[1].mean_return_100, &s[0].mean_return_100, sizeof(double)) == 0,
              "the envs saw other actions: cpu %lld episodes (mean %.17g), cuda %lld (%.17g)",
              (long long)s[0].episodes, s[0].mean_return_100, (long long)s[1].episodes,
              s[1].mean_return_100);
    static cr_convnet net;
    float *w[2];
    load_runs(s, &net, w);
    const size_t P = net.num_params;
    static const char *const names[4] = {"online", "target", "adam.m", "adam.v"};
    for (int k = 0; k < 4; k++) {
        double worst, rel = rel_diff(w[1] + k * P, w[0] + k * P, P, &worst);
        double tol = k < 2 ? TOL_WEIGHTS : TOL_MOMENTS;
        printf("match: %-7s ||cuda - cpu|| / ||cpu|| = %.3g (tolerance %g), largest |diff| %.3g\n",
               names[k], rel, tol, worst);
        CHECK_MSG(rel <= tol, "%s differ by %.3g relative (tolerance %g)", names[k], rel, tol);
    }
    free(w[0]), free(w[1]);
}

/* NoTwin-v0: a registered env (one float feature, never ends) with no CUDA twin. */
static void no_twin_seed(void *state, uint64_t seed, uint64_t index) {
    (void)seed, (void)index;
    *(int32_t *)state = 0;
}

static void no_twin_reset(void *state, void *obs) {
    *(int32_t *)state = 0;
    *(float *)obs = 0.0f;
}

static void no_twin_step(void *state, int32_t action, void *obs, float *reward,
                         uint8_t *terminated) {
    *(float *)obs = (float)++*(int32_t *)state;
    *reward = (float)action, *terminated = 0;
}

static const cudarl_env_def *no_twin_def(void) {
    static const cudarl_env_def def = {
        .struct_size = sizeof(cudarl_env_def),
        .id = "NoTwin-v0", .obs_rank = 1, .obs_shape = {1, 1, 1}, .obs_dtype = CUDARL_OBS_F32,
        .num_actions = 2, .max_episode_steps = 10, .solved_return = 10.0,
        .state_bytes = sizeof(int32_t), .seed = no_twin_seed, .reset = no_twin_reset,
        .step = no_twin_step};
    if (!cudarl_env_find(def.id)) CHECK_OK(cudarl_env_register(&def));
    return &def;
}
/* MinAtar's CUDA twin (--env-device cuda: iterations captured into graphs) against the env
 * pool on CPU threads (--env-device cpu: launched op by op), both on the GPU: the same envs bit
 * for bit, so the same episodes; the same ops on the same inputs, so the same weights (graph
 * replay runs the captured kernels; the tolerance only allows cuBLAS another algorithm). */
static void cuda_twin_case(cudarl_ctx *gpu) {
    cudarl_dqn_config c;
    breakout_config(&c, CUDARL_DEVICE_CUDA);
    c.total_timesteps = 2000, c.learning_starts = 500, c.target_network_frequency = 400;
    c.start_e = 1.0, c.end_e = 1.0;
    cudarl_train_summary s[2];
    for (int k = 0; k < 2; k++) {
        c.env_device = k ? CUDARL_DEVICE_CUDA : CUDARL_DEVICE_CPU;
        snprintf(c.run_name, sizeof c.run_name, "breakout_cnn_twin_%s_%d", k ? "cuda" : "pool",
                 (int)getpid());
        CHECK_OK(cudarl_dqn_train(gpu, &c, &s[k]));
    }
    CHECK_MSG(s[0].episodes >= 5 && s[1].episodes == s[0].episodes &&
                  memcmp(&s[1].mean_return_100, &s[0].mean_return_100, sizeof(double)) == 0,
              "the twin's episodes differ from the pool's: pool %lld (mean %.17g), twin %lld "
              "(%.17g)", (long long)s[0].episodes, s[0].mean_return_100,
              (long long)s[1].episodes, s[1].mean_return_100);
    static cr_convnet net;
    float *w[2];
    load_runs(s, &net, w);
    double worst, rel = rel_diff(w[1], w[0], net.num_params, &worst);
    printf("twin: %lld episodes as the pool's; online weights ||twin - pool|| / ||pool|| = %.3g\n",
           (long long)s[0].episodes, rel);
    CHECK_MSG(rel <= 1e-5, "the twin's weights differ from the pool's by %.3g relative", rel);
    free(w[0]), free(w[1]);
    /* --env-device cuda on an env without a CUDA twin (every built-in has one: a registered
     * env) is refused, naming the fix */
    const cudarl_env_def *no_twin = no_twin_def();
    cudarl_dqn_config bad;
    breakout_config(&bad, CUDARL_DEVICE_CUDA);
    snprintf(bad.env_id, sizeof bad.env_id, "%s", no_twin->id);
    snprintf(bad.policy, sizeof bad.policy, "mlp");
    bad.env_device = CUDARL_DEVICE_CUDA;
    cudarl_train_summary unused;
    expect_refusal("--env-device cuda without a twin", cudarl_dqn_train(gpu, &bad, &unused),
                   CUDARL_ERR_INVALID_ARG, "--env-device cpu");
}

static void cuda_run_case(cudarl_ctx *gpu) {
    cudarl_dqn_config c;
    cudarl_dqn_config_default(&c, BREAKOUT);
    cudarl_dqn_config_for_device(&c, CUDARL_DEVICE_CUDA);
    snprintf(c.policy, sizeof c.policy, "minatar-cnn");
    c.total_timesteps = 20000, c.device = CUDARL_DEVICE_CUDA, c.quiet = 1;
    snprintf(c.runs_dir, sizeof c.runs_dir, "%s", runs);
    snprintf(c.run_name, sizeof c.run_name, "breakout_cnn_cuda_%d", (int)getpid());
    cudarl_train_summary s;
    CHECK_OK(cudarl_dqn_train(gpu, &c, &s));
    printf("%s minatar-cnn on CUDA (%d envs, batch %d): %lld steps, %lld episodes, mean(100) "
           "%.2f, %.2f s, %.0f steps/s\n", BREAKOUT, c.num_envs, c.batch_size,
           (long long)s.global_step, (long long)s.episodes, s.mean_return_100, s.train_seconds,
           s.sps);
    CHECK(s.global_step == 20000);
    CHECK_MSG(s.episodes >= 20, "only %lld episodes in 20,000 steps", (long long)s.episodes);
    CHECK(s.mean_return_100 >= 0.0);
    char path[700];
    snprintf(path, sizeof path, "%s/model.safetensors", s.run_dir);
    const cr_env_info *info = cr_env_info_find(BREAKOUT);
    CHECK(info != NULL);
    check_checkpoint(path, info->num_actions);
}

/* DQN in bf16 and fp16 on the GPU (the conv products in the format, fp16 with loss scaling):
 * MinAtar Breakout with the CUDA preset trains 20,000 steps with a finite TD loss; fp16's
 * metrics carry the loss scale (2^16 halved once per skipped step, a few skips at most) and
 * bf16's leave it blank. */
static void cuda_mixed_case(cudarl_ctx *gpu) {
    static const cudarl_precision precs[2] = {CUDARL_PRECISION_BF16, CUDARL_PRECISION_FP16};
    for (int q = 0; q < 2; q++) {
        cudarl_dqn_config c;
        cudarl_dqn_config_default(&c, BREAKOUT);
        cudarl_dqn_config_for_device(&c, CUDARL_DEVICE_CUDA);
        snprintf(c.policy, sizeof c.policy, "minatar-cnn");
        c.total_timesteps = 20000, c.device = CUDARL_DEVICE_CUDA, c.quiet = 1;
        c.precision = precs[q];
        snprintf(c.runs_dir, sizeof c.runs_dir, "%s", runs);
        snprintf(c.run_name, sizeof c.run_name, "breakout_%s_%d", cudarl_precision_name(precs[q]),
                 (int)getpid());
        cudarl_train_summary s;
        CHECK_OK(cudarl_dqn_train(gpu, &c, &s));
        char loss[64];
        metrics_last_field(s.run_dir, "losses/td_loss", loss, sizeof loss);
        printf("DQN minatar-cnn %s on CUDA: %lld steps, %lld episodes, td loss %s\n",
               cudarl_precision_name(precs[q]), (long long)s.global_step, (long long)s.episodes,
               loss);
        CHECK(s.global_step == 20000 && s.episodes >= 20);
        CHECK_MSG(loss[0] && isfinite(strtod(loss, NULL)), "%s: td loss '%s'",
                  cudarl_precision_name(precs[q]), loss);
        check_amp_columns(s.run_dir, precs[q] == CUDARL_PRECISION_FP16);
    }
}

/* replay_frames on CartPolePixels-v1 (a frame-stacked env: each 84x84 frame stored once, the
 * minibatch sampled as (B, 5) windows the net reads as obs and next_obs) learns exactly what
 * whole stored stacks learn: before the ring wraps both draw the same transitions, the rebuilt
 * stacks equal the env's, and the net converts the same bytes. Every tensor, bit for bit. */
static void frames_case(cudarl_device_kind kind) {
    float *w[2];
    static cr_convnet net;
    for (int frames = 0; frames < 2; frames++) {
        cudarl_dqn_config c;
        cudarl_dqn_config_default(&c, "CartPolePixels-v1");
        snprintf(c.policy, sizeof c.policy, "nature-cnn");
        /* short (the suite also runs under ASan): 10 gradient steps on windows with episode
         * starts in them, before the ring wraps */
        c.num_envs = 4, c.total_timesteps = 240, c.learning_starts = 100, c.train_frequency = 12;
        c.batch_size = 8, c.buffer_size = 2000, c.target_network_frequency = 120;
        c.env_device = CUDARL_DEVICE_CPU, c.env_threads = 2, c.device = kind, c.quiet = 1;
        c.replay_frames = frames;
        snprintf(c.runs_dir, sizeof c.runs_dir, "%s", runs);
        snprintf(c.run_name, sizeof c.run_name, "pixels_frames%d_%d_%d", frames, (int)kind,
                 (int)getpid());
        cudarl_ctx *ctx;
        CHECK_OK(cudarl_ctx_init(&ctx, kind, 0));
        cudarl_train_summary s;
        CHECK_OK(cudarl_dqn_train(ctx, &c, &s));
        cudarl_ctx_free(ctx);
        CHECK_MSG(s.episodes >= 8, "only %lld episodes", (long long)s.episodes);
        char path[700];
        snprintf(path, sizeof path, "%s/model.safetensors", s.run_dir);
        if (!frames) {
            cr_convnet_spec spec;
            const cr_env_info *info = cr_env_info_find("CartPolePixels-v1");
            CHECK_OK(cr_convnet_spec_named(&spec, "nature-cnn", 4, 84, 84, CR_CONVNET_DQN,
                                           info->num_actions));
            CHECK_OK(cr_convnet_plan(&net, &spec));
        }
        w[frames] = load_weights(path, &net);
    }
    size_t n = 4 * net.num_params, diff = 0;
    for (size_t i = 0; i < n; i++) diff += memcmp(&w[0][i], &w[1][i], sizeof(float)) != 0;
    CHECK_MSG(diff == 0, "replay_frames changed %zu of %zu floats", diff, n);
    printf("CartPolePixels-v1, %s: frames stored once and whole stacks give the same %zu floats\n",
           kind == CUDARL_DEVICE_CUDA ? "cuda" : "cpu", n);
    free(w[0]), free(w[1]);
    cudarl_dqn_config c;
    cudarl_dqn_config_default(&c, "CartPolePixels-v1");
    c.replay_frames = 2;
    expect_refusal("replay_frames 2", cudarl_dqn_config_validate(&c), CUDARL_ERR_INVALID_ARG,
                   "replay_frames is 2");
}

int main(int argc, char **argv) {
    cudarl_device_kind kind =
        argc > 1 && !strcmp(argv[1], "cuda") ? CUDARL_DEVICE_CUDA : CUDARL_DEVICE_CPU;
    runs = argc > 2 ? argv[2] : "dqn-conv-runs";
    cudarl_log_set_level(CUDARL_LOG_WARN);
    cudarl_ctx *ctx;
    CHECK_OK(cudarl_ctx_init(&ctx, CUDARL_DEVICE_CPU, 0));
    if (kind == CUDARL_DEVICE_CUDA) {
        cudarl_ctx *gpu;
        CHECK_OK(cudarl_ctx_init(&gpu, CUDARL_DEVICE_CUDA, 0));
        cuda_match_case(ctx, gpu);
        cuda_twin_case(gpu);
        cuda_run_case(gpu);
        cuda_mixed_case(gpu);
        frames_case(CUDARL_DEVICE_CUDA);
        cudarl_ctx_free(gpu);
    } else {
        validation_case();
        breakout_case(ctx);
        frames_case(CUDARL_DEVICE_CPU);
    }
    cudarl_ctx_free(ctx);
    printf("test_dqn_conv: ok\n");
    return 0;
}
