/* PPO with a convolutional policy (--policy minatar-cnn | nature-cnn: src/algo/ppo/ppo_conv.c and
 * the conv branches of ppo.c, ppo_pool.c, ppo_checkpoint.c) on the context given by argv[1]
 * (cpu; cuda for the gpu label). Envs: MinAtar/Breakout-v1, and "test/Lamp-v0", registered
 * here: a (1, 10, 10) uint8 frame with one lit cell; action 1 pays 1 when the cell is in the
 * right half, action 0 when it is in the left half; the next frame is a new random cell. An
 * episode ends when the cell lands on the corner (terminated, 1 in 100) or after 8 steps
 * (truncated), so both kinds of episode end occur, unsynchronised across envs: the rollout's
 * V(final obs) path runs. Random play earns half of each episode's steps; the best, all.
 *
 *  cpu  1. validation: --policy's refusals (unknown name, conv on float features, mlp on
 *          pixels naming the conv policy to use, a conv net that does not fit, --async,
 *          --env-device cuda) and cudarl_ppo_config_for_policy's preset (ppo_atari.py's).
 *       2. breakout: a few iterations of minatar-cnn on MinAtar/Breakout-v1: episodes finish,
 *          metrics.csv has a row per iteration, and the checkpoint records the policy, the
 *          network spec text (parses back to minatar-cnn (4, 10, 10), 3 actions, PPO heads),
 *          every tensor of that layout and Adam's moments with the layout's shapes (finite),
 *          and the current observations as uint8 (N, 400); cudarl eval plays it (the
 *          policy runtime's greedy actions on CPU envs, src/runtime/checkpoint.c).
 *       3. resume: 4 iterations straight, and 2 + a resume to 4 (learning rate not annealed, so
 *          the two schedules agree), give the same checkpoint bit for bit: every tensor,
 *          parameters, Adam's moments, env states, RNG streams, episode statistics; resuming
 *          with another policy is refused.
 *       4. learn: minatar-cnn on test/Lamp-v0 (gamma 0.5) goes from random play (mean return
 *          about half an episode's length) to at least 90% of the best within 24,576 steps,
 *          and the value loss of the last iterations is below that of the first; with
 *          --separate-critic too when argv[3] lists learn_separate (label slow).
 *       5. separate: --separate-critic (two networks; routing of the heads' gradients, the
 *          rollout's values from the critic's network, checkpoint, runtime, export) and its
 *          exact resume, and resuming with the other setting refused.
 *  cuda 1. match: a CPU and a CUDA trainer (same seed, Lamp-v0, 13 envs: two groups of 6 and 7
 *          on CUDA, one of 13 on the CPU) run 3 iterations side by side. Each rollout is held
 *          to the CPU's: the same env steps (obs, rewards, flags bit for bit while the sampled
 *          actions agree), values and log-probabilities within VAL_TOL, advantages within
 *          ADV_TOL; at most one env may sample another action (a uniform within rounding of a
 *          softmax boundary, about 1e-6 per draw). Then the CUDA trainer is given the CPU's
 *          rollout, both update on it, and parameters, Adam's moments and the loss statistics
 *          are compared, ||cuda - cpu|| / ||cpu|| per buffer (expected: ~1e-6):
 *            parameters    1e-3  each minibatch's gradient differs by ~1e-6 relative (the
 *                                network's sums in cuBLAS's order against the CPU's; the
 *                                convnet twin's own test holds gradients to 5e-4), and Adam
 *                                turns that into steps of lr = 1e-3 at most. The margin is for
 *                                a ReLU whose pre-activation lands within rounding (~1e-7 of
 *                                its scale) of 0 on one side only (a few percent chance over
 *                                the test): the forward barely moves, but that sample's term
 *                                drops out of one row's gradient, moving the row's Adam steps
 *                                by ~lr / sqrt(mb): ~2e-4 of the weights' norm (~16). A wrong
 *                                gather, offset or head moves them by O(1) of it.
 *            Adam's m, v   2e-2  the gradients themselves (and their squares), undamped, over
 *                                48 minibatches; the same flip moves one row's moments by
 *                                ~10%, ~1e-2 of the norm
 *            loss sums     1e-3  relative, the means of the same minibatches (clipfrac: plus
 *                                two samples' worth, a ratio at the clip boundary may fall
 *                                either side)
 *       2. run: cudarl_ppo_train on CUDA, minatar-cnn on MinAtar/Breakout-v1 (the update
 *          captured into a CUDA graph, envs in two groups): episodes finish, the losses stay
 *          finite, device memory does not grow after the first iteration, and the checkpoint
 *          holds the network as on the CPU; then resume is exact on the GPU too (as cpu 3),
 *          in fp32 and in bf16 (the file's precision comes back; another is refused).
 *       3. pixels: nature-cnn on CartPolePixels-v1 for 4 short iterations runs (the 84x84
 *          network's CUDA path end to end). */
#define _GNU_SOURCE /* memmem */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo/ppo/ppo_internal.h"
#include "check.h"
#include "metrics_csv.h"
#include "cudarl.h"
#include "env/env.h"
#include "nn/convnet.h"
#include "io/safetensors.h"

#define BREAKOUT "MinAtar/Breakout-v1"
#define LAMP "test/Lamp-v0"
#define LAMP_STEPS 8 /* the time limit: an episode's best return */
#define VAL_TOL 1e-4
#define ADV_TOL 3e-4
#define TOL_PARAMS 1e-3
#define TOL_MOMENTS 2e-2
#define TOL_LOSS 1e-3

static const char *runs;

/* ---- test/Lamp-v0 -------------------------------------------------------------------------- */

typedef struct lamp_state {
    cr_philox_state rng;
    int32_t cell; /* the lit cell, row * 10 + column */
} lamp_state;

static void lamp_draw(lamp_state *s, uint8_t *obs) {
    s->cell = (int32_t)(cr_philox_next_u32(&s->rng) % 100u);
    memset(obs, 0, 100);
    obs[s->cell] = 1;
}

static void lamp_seed(void *state, uint64_t seed, uint64_t index) {
    cr_philox_seed(&((lamp_state *)state)->rng, seed, index);
}

static void lamp_reset(void *state, void *obs) { lamp_draw(state, obs); }

static void lamp_step(void *state, int32_t action, void *obs, float *reward,
                      uint8_t *terminated) {
    lamp_state *s = state;
    *reward = action == (s->cell % 10 >= 5) ? 1.0f : 0.0f;
    lamp_draw(s, obs);
    *terminated = s->cell == 0;
}

static const cudarl_env_def lamp_def = {
    .struct_size = sizeof(cudarl_env_def),
    .id = LAMP,
    .obs_rank = 3,
    .obs_shape = {1, 10, 10},
    .obs_dtype = CUDARL_OBS_U8,
    .num_actions = 2,
    .max_episode_steps = LAMP_STEPS,
    .solved_return = 0.9 * LAMP_STEPS,
    .state_bytes = sizeof(lamp_state),
    .seed = lamp_seed,
    .reset = lamp_reset,
    .step = lamp_step,
};

/* ---- helpers ------------------------------------------------------------------------------- */

static void conv_config(cudarl_ppo_config *c, const char *env, const char *policy,
                        cudarl_device_kind device, const char *name) {
    cudarl_ppo_config_default(c, env);
    cudarl_ppo_config_for_policy(c, policy);
    c->num_envs = 8, c->num_steps = 32, c->num_minibatches = 4, c->update_epochs = 4;
    c->total_timesteps = 4 * 8 * 32;
    c->env_threads = 2, c->device = device, c->quiet = 1;
    snprintf(c->runs_dir, sizeof c->runs_dir, "%s", runs);
    snprintf(c->run_name, sizeof c->run_name, "%s_%s_%d", name,
             device == CUDARL_DEVICE_CUDA ? "cuda" : "cpu", (int)getpid());
}

/* Expects `s` to be `want` with a message containing `needle`. */
static void expect_refusal(const char *what, cudarl_status s, cudarl_status want,
                           const char *needle) {
    const char *msg = cudarl_last_error();
    CHECK_MSG(s == want && strstr(msg, needle) != NULL, "%s: expected %s with '%s', got %s: %s",
              what, cudarl_status_name(want), needle, cudarl_status_name(s), msg);
    printf("%s: refused: %s\n", what, msg);
}

/* ||a - b|| / ||b|| over n floats. */
static double rel_diff(const float *a, const float *b, size_t n) {
    double e = 0, r = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - (double)b[i];
        e += d * d, r += (double)b[i] * b[i];
    }
    double rel = sqrt(e) / (sqrt(r) + 1e-30);
    return isnan(rel) ? INFINITY : rel;
}

/* The numbers in column `name` of runs/<run>/metrics.csv, one per row (NaN for an empty
 * cell); their count. */
static int csv_column(const char *run_dir, const char *name, double *out, int cap) {
    char path[700], line[2048];
    snprintf(path, sizeof path, "%s/metrics.csv", run_dir);
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "no %s", path);
    CHECK(fgets(line, sizeof line, f) != NULL);
    int col = -1, k = 0;
    for (char *tok = strtok(line, ",\n"); tok; tok = strtok(NULL, ",\n"), k++)
        if (!strcmp(tok, name)) col = k;
    CHECK_MSG(col >= 0, "%s: no column %s", path, name);
    int n = 0;
    while (n < cap && fgets(line, sizeof line, f)) {
        const char *p = line;
        for (int c = 0; c < col && p; c++) {
            p = strchr(p, ',');
            if (p) p++;
        }
        CHECK(p != NULL);
        out[n++] = *p == ',' || *p == '\n' ? NAN : atof(p);
    }
    fclose(f);
    return n;
}

/* The trained network of a checkpoint: its policy and spec text, and every tensor of the layout
 * the spec plans (parameters and Adam's moments) with that shape and finite values. */
static void check_checkpoint(const char *path, const char *policy, int c, int h, int w,
                             int actions, int num_envs) {
    cr_st_file *f = NULL;
    CHECK_OK(cr_st_open(&f, path));
    const char *pol = cr_st_meta(f, "policy"), *algo = cr_st_meta(f, "algo");
    CHECK_MSG(pol && !strcmp(pol, policy) && algo && !strcmp(algo, "ppo"),
              "policy metadata '%s', algo '%s'", pol ? pol : "(none)", algo ? algo : "(none)");
    cr_convnet_spec spec;
    CHECK_OK(cr_convnet_spec_parse(&spec, cr_st_meta(f, CR_CONVNET_META_KEY), path));
    CHECK_MSG(!strcmp(spec.name, policy) && spec.heads == CR_CONVNET_PPO && spec.in_c == c &&
                  spec.in_h == h && spec.in_w == w && spec.num_actions == actions &&
                  spec.dtype == CR_CONVNET_U8,
              "network spec %s heads %d (%d, %d, %d) actions %d dtype %d", spec.name,
              (int)spec.heads, spec.in_c, spec.in_h, spec.in_w, spec.num_actions,
              (int)spec.dtype);
    static cr_convnet net;
    CHECK_OK(cr_convnet_plan(&net, &spec));
    static const char *const prefix[3] = {"", "optimizer.exp_avg.", "optimizer.exp_avg_sq."};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < net.ntensors; i++) {
            const cr_convnet_tensor *t = &net.t[i];
            char name[96];
            snprintf(name, sizeof name, "%s%s", prefix[k], t->name);
            cr_st_tensor st;
            CHECK_OK(cr_st_find(f, name, &st));
            CHECK_MSG(st.dtype == CR_ST_F32 && st.ndim == t->ndim, "%s: dtype %d, %d dims", name,
                      (int)st.dtype, st.ndim);
            for (int d = 0; d < t->ndim; d++)
                CHECK_MSG(st.shape[d] == t->shape[d], "%s: dim %d is %lld, expected %d", name, d,
                          (long long)st.shape[d], t->shape[d]);
            float *v = malloc(t->count * sizeof(float));
            CHECK(v != NULL);
            CHECK_OK(cr_st_read_f32(f, name, v, t->count));
            for (size_t e = 0; e < t->count; e++)
                CHECK_MSG(isfinite(v[e]), "%s[%zu] = %g", name, e, v[e]);
            free(v);
        }
    CHECK(cr_convnet_find(&net, "actor.weight") >= 0 && cr_convnet_find(&net, "critic.bias") >= 0);
    cr_st_tensor obs;
    CHECK_OK(cr_st_find(f, "state.obs", &obs));
    CHECK_MSG(obs.dtype == CR_ST_U8 && obs.ndim == 2 && obs.shape[0] == num_envs &&
                  obs.shape[1] == (int64_t)c * h * w,
              "state.obs: dtype %d, shape (%lld, %lld)", (int)obs.dtype, (long long)obs.shape[0],
              (long long)obs.shape[1]);
    cr_st_close(f);
    printf("checkpoint: policy %s, %zu parameters in %d tensors, network spec parses back\n",
           policy, net.num_params, net.ntensors);
}

/* Every tensor of checkpoint a is in b with the same dtype, shape and bytes, and b has no
 * other tensors. */
static void same_checkpoint(const char *what, const char *a, const char *b) {
    cr_st_file *fa = NULL, *fb = NULL;
    CHECK_OK(cr_st_open(&fa, a));
    CHECK_OK(cr_st_open(&fb, b));
    CHECK_MSG(cr_st_count(fa) == cr_st_count(fb), "%s: %d tensors vs %d", what, cr_st_count(fa),
              cr_st_count(fb));
    size_t bytes = 0;
    for (int i = 0; i < cr_st_count(fa); i++) {
        const cr_st_tensor *t = cr_st_at(fa, i);
        cr_st_tensor u;
        CHECK_OK(cr_st_find(fb, t->name, &u));
        CHECK_MSG(u.dtype == t->dtype && u.nbytes == t->nbytes &&
                      memcmp(u.data, t->data, t->nbytes) == 0,
                  "%s: tensor %s differs", what, t->name);
        bytes += t->nbytes;
    }
    const int count = cr_st_count(fa);
    cr_st_close(fa);
    cr_st_close(fb);
    printf("%s: %d tensors (%zu bytes) bit for bit\n", what, count, bytes);
}

/* ---- cpu ------------------------------------------------------------------------------------ */

static void validation_case(void) {
    cudarl_ppo_config c;
    conv_config(&c, BREAKOUT, "minatar-cnn", CUDARL_DEVICE_CPU, "v");
    CHECK_OK(cudarl_ppo_config_validate(&c));
    snprintf(c.policy, sizeof c.policy, "resnet");
    expect_refusal("unknown policy", cudarl_ppo_config_validate(&c), CUDARL_ERR_INVALID_ARG,
                   "choose one of: mlp, minatar-cnn, nature-cnn");
    snprintf(c.policy, sizeof c.policy, "nature-cnn");
    expect_refusal("nature-cnn on MinAtar", cudarl_ppo_config_validate(&c),
                   CUDARL_ERR_INVALID_ARG, "use --policy minatar-cnn");
    snprintf(c.policy, sizeof c.policy, "mlp");
    expect_refusal("mlp on MinAtar", cudarl_ppo_config_validate(&c), CUDARL_ERR_INVALID_ARG,
                   "use --policy minatar-cnn");
    conv_config(&c, BREAKOUT, "minatar-cnn", CUDARL_DEVICE_CPU, "v");
    c.env_device = CUDARL_DEVICE_CUDA; /* Breakout has a CUDA twin, the run no GPU */
    expect_refusal("minatar-cnn with --env-device cuda on the CPU", cudarl_ppo_config_validate(&c),
                   CUDARL_ERR_INVALID_ARG, "--env-device cuda needs the GPU");
    conv_config(&c, LAMP, "minatar-cnn", CUDARL_DEVICE_CUDA, "v");
    c.env_device = CUDARL_DEVICE_CUDA; /* a user's env: CPU threads only */
    expect_refusal("a registered env with --env-device cuda", cudarl_ppo_config_validate(&c),
                   CUDARL_ERR_INVALID_ARG, "has no CUDA twin for --policy minatar-cnn");
    conv_config(&c, BREAKOUT, "minatar-cnn", CUDARL_DEVICE_CPU, "v");
    c.async = 1, c.env_device = CUDARL_DEVICE_CPU;
    expect_refusal("minatar-cnn with --async", cudarl_ppo_config_validate(&c),
                   CUDARL_ERR_INVALID_ARG, "drop --async");
    cudarl_ppo_config_default(&c, "CartPolePixels-v1");
    expect_refusal("mlp on CartPolePixels", cudarl_ppo_config_validate(&c),
                   CUDARL_ERR_INVALID_ARG, "use --policy nature-cnn");
    cudarl_ppo_config_for_policy(&c, "nature-cnn");
    CHECK_OK(cudarl_ppo_config_validate(&c));
    CHECK_MSG(c.num_envs == 8 && c.num_steps == 128 && c.learning_rate == 2.5e-4 &&
                  c.clip_coef == 0.1 && c.ent_coef == 0.01 && c.num_minibatches == 4 &&
                  c.update_epochs == 4 && c.anneal_lr && c.total_timesteps == 10000000 &&
                  c.max_grad_norm == 0.5 && c.vf_coef == 0.5 && c.gamma == 0.99 &&
                  c.gae_lambda == 0.95 && c.clip_vloss && c.norm_adv,
              "the conv preset is not ppo_atari.py's");
    cudarl_ppo_config_default(&c, "CartPole-v1");
    cudarl_ppo_config_for_policy(&c, "minatar-cnn");
    expect_refusal("minatar-cnn on CartPole", cudarl_ppo_config_validate(&c),
                   CUDARL_ERR_INVALID_ARG, "use --policy mlp");
    cudarl_ppo_config_default(&c, "CartPole-v1");
    c.separate_critic = 1;
    expect_refusal("--separate-critic with the MLP policy", cudarl_ppo_config_validate(&c),
                   CUDARL_ERR_INVALID_ARG, "separate networks already");
    cudarl_ppo_config before;
    cudarl_ppo_config_default(&c, "CartPole-v1");
    before = c;
    cudarl_ppo_config_for_policy(&c, "mlp");
    CHECK_MSG(memcmp(&before, &c, sizeof c) == 0, "the mlp preset changed the config");

    /* the env's preset: its conv policy with ppo_atari.py's defaults on any device (as
     * for_policy sets them), the Nature-CNN's and MinAtar's recipes at scale on CUDA only */
    cudarl_ppo_config_default(&c, NULL);
    cudarl_ppo_config_for_env_on(&c, BREAKOUT, CUDARL_DEVICE_CPU);
    CHECK_MSG(!strcmp(c.env_id, BREAKOUT) && !strcmp(c.policy, "minatar-cnn") &&
                  c.num_envs == 8 && c.num_steps == 128 && c.learning_rate == 2.5e-4 &&
                  c.precision == CUDARL_PRECISION_FP32,
              "the CPU preset of %s: policy %s, %d x %d, lr %g", BREAKOUT, c.policy, c.num_envs,
              c.num_steps, c.learning_rate);
    CHECK_OK(cudarl_ppo_config_validate(&c));
    cudarl_ppo_config_default(&c, NULL);
    cudarl_ppo_config_for_device(&c, CUDARL_DEVICE_CUDA);
    cudarl_ppo_config_for_policy(&c, "mlp");
    cudarl_ppo_config_for_env_on(&c, BREAKOUT, CUDARL_DEVICE_CUDA);
    CHECK_MSG(!strcmp(c.policy, "minatar-cnn") && c.num_envs == 1024 && c.num_steps == 128 &&
                  c.num_minibatches == 32 && c.update_epochs == 4 && c.learning_rate == 2e-3 &&
                  c.anneal_lr && c.clip_coef == 0.2 && c.ent_coef == 0.01 &&
                  c.precision == CUDARL_PRECISION_BF16 && c.total_timesteps == 40000000,
              "MinAtar's CUDA recipe: policy %s, %d x %d, %d minibatches, lr %g, precision %d",
              c.policy, c.num_envs, c.num_steps, c.num_minibatches, c.learning_rate,
              (int)c.precision);
    CHECK_OK(cudarl_ppo_config_validate(&c));
    cudarl_ppo_config_default(&c, NULL);
    cudarl_ppo_config_for_device(&c, CUDARL_DEVICE_CUDA);
    cudarl_ppo_config_for_env_on(&c, "CartPolePixels-v1", CUDARL_DEVICE_CUDA);
    CHECK_MSG(!strcmp(c.policy, "nature-cnn") && c.num_envs == 512 && c.num_steps == 32 &&
                  c.num_minibatches == 16 && c.learning_rate == 7e-4 && !c.anneal_lr &&
                  !c.clip_vloss && c.separate_critic && c.precision == CUDARL_PRECISION_BF16,
              "CartPolePixels-v1's CUDA recipe: policy %s, %d x %d, %d minibatches, lr %g",
              c.policy, c.num_envs, c.num_steps, c.num_minibatches, c.learning_rate);
    CHECK_OK(cudarl_ppo_config_validate(&c));
    cudarl_ppo_config_default(&c, NULL);
    cudarl_ppo_config_for_env_on(&c, "CartPolePixels-v1", CUDARL_DEVICE_CPU);
    CHECK_MSG(!strcmp(c.policy, "nature-cnn") && c.num_envs == 8 && c.num_steps == 128 &&
                  c.precision == CUDARL_PRECISION_FP32 && !c.separate_critic,
              "CartPolePixels-v1's CPU preset: policy %s, %d x %d", c.policy, c.num_envs,
              c.num_steps);
    cudarl_ppo_config_default(&c, NULL);
    cudarl_ppo_config_for_device(&c, CUDARL_DEVICE_CUDA);
    before = c;
    cudarl_ppo_config_for_env_on(&c, "CartPole-v1", CUDARL_DEVICE_CUDA);
    CHECK_MSG(!memcmp(&before, &c, sizeof c), "CartPole-v1's env preset changed the config");
}

/* --precision tf32, bf16 and fp16 pass validation with --device auto (conv and MLP policies),
 * and a CPU context refuses them when the trainer starts, before it writes anything; so does
 * validation with --device cpu. */
static void precision_case(cudarl_ctx *cpu) {
    static const cudarl_precision precs[3] = {CUDARL_PRECISION_TF32, CUDARL_PRECISION_BF16,
                                              CUDARL_PRECISION_FP16};
    for (int q = 0; q < 3; q++) {
        cudarl_ppo_config c;
        conv_config(&c, BREAKOUT, "minatar-cnn", CUDARL_DEVICE_AUTO, "precision");
        c.precision = precs[q];
        char needle[64];
        snprintf(needle, sizeof needle, "--precision %s needs the GPU",
                 cudarl_precision_name(precs[q]));
        CHECK_OK(cudarl_ppo_config_validate(&c));
        expect_refusal("a reduced precision on a CPU context",
                       cudarl_ppo_train(cpu, &c, NULL, NULL), CUDARL_ERR_INVALID_ARG, needle);
        c.device = CUDARL_DEVICE_CPU;
        expect_refusal("a reduced precision with --device cpu", cudarl_ppo_config_validate(&c),
                       CUDARL_ERR_INVALID_ARG, needle);
        cudarl_ppo_config m; /* the MLP too: op by op on the GPU */
        cudarl_ppo_config_default(&m, "CartPole-v1");
        m.precision = precs[q], m.device = CUDARL_DEVICE_AUTO;
        CHECK_OK(cudarl_ppo_config_validate(&m));
    }
}

/* Trains on ctx (of `device`); eval runs on cpu (it runs on the CPU only). */
static void breakout_case(cudarl_ctx *ctx, cudarl_ctx *cpu, cudarl_device_kind device) {
    cudarl_ppo_config c;
    conv_config(&c, BREAKOUT, "minatar-cnn", device, "breakout");
    cudarl_train_summary s;
    CHECK_OK(cudarl_ppo_train(ctx, &c, NULL, &s));
    printf("%s minatar-cnn (%s): %lld steps, %lld episodes, mean(100) %.2f, %.2f s, %.0f "
           "steps/s\n", BREAKOUT, device == CUDARL_DEVICE_CUDA ? "cuda" : "cpu",
           (long long)s.global_step, (long long)s.episodes, s.mean_return_100, s.train_seconds,
           s.sps);
    CHECK(s.global_step == c.total_timesteps && !s.interrupted);
    CHECK_MSG(s.episodes >= 20, "only %lld episodes in %lld steps", (long long)s.episodes,
              (long long)s.global_step);
    double loss[16];
    int rows = csv_column(s.run_dir, "losses/value_loss", loss, 16);
    CHECK_MSG(rows == 4, "metrics.csv: %d rows, expected one per iteration (4)", rows);
    for (int i = 0; i < rows; i++) CHECK_MSG(isfinite(loss[i]), "value loss of row %d: %g", i, loss[i]);
    if (device == CUDARL_DEVICE_CUDA)
        CHECK_MSG(s.device_bytes_growth <= 0, "device memory grew by %lld bytes",
                  (long long)s.device_bytes_growth);
    char path[700];
    snprintf(path, sizeof path, "%s/model.safetensors", s.run_dir);
    const cr_env_info *info = cr_env_info_find(BREAKOUT);
    CHECK(info != NULL);
    check_checkpoint(path, "minatar-cnn", 4, 10, 10, info->num_actions, c.num_envs);
    double mean = 0, std = 0;
    CHECK_OK(cudarl_policy_eval(cpu, path, 4, 3, &mean, &std)); /* the runtime, greedy */
    CHECK_MSG(isfinite(mean) && mean >= 0 && std >= 0, "eval of a PPO minatar-cnn checkpoint: "
              "mean %g std %g", mean, std);
}

/* A copy of checkpoint `from` at `to` whose header gives network.3.weight the transposed shape
 * (1024, 128): the same bytes, so only a shape check can tell. */
static void write_transposed(const char *from, const char *to) {
    FILE *f = fopen(from, "rb");
    CHECK_MSG(f != NULL, "cannot read %s", from);
    static char buf[4 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    CHECK(n > 8 && n < sizeof buf);
    static const char was[] = "\"network.3.weight\":{\"dtype\":\"F32\",\"shape\":[128,1024]";
    char *at = memmem(buf, n, was, sizeof was - 1);
    CHECK_MSG(at != NULL, "%s: no network.3.weight entry of shape [128,1024] in the header", from);
    memcpy(at + sizeof was - 1 - strlen("128,1024]"), "1024,128]", strlen("1024,128]"));
    f = fopen(to, "wb");
    CHECK(f != NULL && fwrite(buf, 1, n, f) == n);
    fclose(f);
}

/* 4 iterations straight against 2, then a resume to 4: the same final checkpoint, in
 * `precision` (a resume in another is refused). */
static void resume_case(cudarl_ctx *ctx, cudarl_device_kind device, int separate,
                        cudarl_precision precision) {
    cudarl_ppo_config c;
    char name[64];
    snprintf(name, sizeof name, "straight%s_%s", separate ? "_sep" : "",
             cudarl_precision_name(precision));
    conv_config(&c, BREAKOUT, "minatar-cnn", device, name);
    c.anneal_lr = 0; /* the first half's schedule would otherwise be over 2 iterations */
    c.separate_critic = separate, c.precision = precision;
    cudarl_train_summary straight, half, rest;
    CHECK_OK(cudarl_ppo_train(ctx, &c, NULL, &straight));
    snprintf(name, sizeof name, "resumed%s_%s", separate ? "_sep" : "",
             cudarl_precision_name(precision));
    conv_config(&c, BREAKOUT, "minatar-cnn", device, name);
    c.anneal_lr = 0, c.total_timesteps /= 2, c.separate_critic = separate;
    c.precision = precision;
    CHECK_OK(cudarl_ppo_train(ctx, &c, NULL, &half));
    char path[2][700];
    snprintf(path[0], sizeof path[0], "%s/model.safetensors", straight.run_dir);
    snprintf(path[1], sizeof path[1], "%s/model.safetensors", half.run_dir);
    cudarl_ppo_config other;
    cudarl_ppo_config_default(&other, "CartPole-v1");
    other.quiet = 1, other.device = device;
    snprintf(other.runs_dir, sizeof other.runs_dir, "%s", runs);
    expect_refusal("resume with another policy", cudarl_ppo_train(ctx, &other, path[1], NULL),
                   CUDARL_ERR_MISMATCH, "resume with --policy minatar-cnn");
    c.total_timesteps *= 2, c.separate_critic = !separate;
    expect_refusal("resume with the other --separate-critic", cudarl_ppo_train(ctx, &c, path[1], NULL),
                   CUDARL_ERR_MISMATCH, separate ? "resume it with --separate-critic"
                                                 : "resume it without --separate-critic");
    c.total_timesteps /= 2, c.separate_critic = separate;
    char bad[760];
    snprintf(bad, sizeof bad, "%s/transposed.safetensors", half.run_dir);
    write_transposed(path[1], bad);
    c.total_timesteps *= 2;
    expect_refusal("resume of a checkpoint with a transposed weight",
                   cudarl_ppo_train(ctx, &c, bad, NULL), CUDARL_ERR_MISMATCH,
                   "'network.3.weight'");
    unlink(bad);
    if (precision != CUDARL_PRECISION_FP32) { /* the file's precision, or refused */
        c.precision = CUDARL_PRECISION_FP32;
        char needle[96];
        snprintf(needle, sizeof needle, "trained in precision %s but this run's is fp32",
                 cudarl_precision_name(precision));
        expect_refusal("resume in another precision", cudarl_ppo_train(ctx, &c, path[1], NULL),
                       CUDARL_ERR_MISMATCH, needle);
        c.precision = precision;
        cudarl_ppo_config loaded;
        CHECK_OK(cudarl_ppo_config_load(path[1], &loaded));
        CHECK_MSG(loaded.precision == precision, "the file's config loads precision %s, not %s",
                  cudarl_precision_name(loaded.precision), cudarl_precision_name(precision));
    }
    CHECK_OK(cudarl_ppo_train(ctx, &c, path[1], &rest));
    CHECK(rest.global_step == straight.global_step && rest.run_steps == straight.global_step / 2);
    CHECK_MSG(rest.episodes == straight.episodes &&
                  memcmp(&rest.mean_return_100, &straight.mean_return_100, sizeof(double)) == 0,
              "resumed: %lld episodes (mean %.17g), straight: %lld (%.17g)",
              (long long)rest.episodes, rest.mean_return_100, (long long)straight.episodes,
              straight.mean_return_100);
    same_checkpoint("resume", path[0], path[1]);
}

/* Tensors of checkpoint a that b has too, bit for bit (the env state's differ in layout between
 * envs on threads and on the GPU); the network, Adam's moments, the sampler and the episode
 * statistics among them. */
static void same_training(const char *what, const char *a, const char *b) {
    cr_st_file *fa = NULL, *fb = NULL;
    CHECK_OK(cr_st_open(&fa, a));
    CHECK_OK(cr_st_open(&fb, b));
    int compared = 0;
    for (int i = 0; i < cr_st_count(fa); i++) {
        const cr_st_tensor *t = cr_st_at(fa, i);
        cr_st_tensor u;
        if (cr_st_find(fb, t->name, &u) != CUDARL_OK) continue;
        CHECK_MSG(u.dtype == t->dtype && u.nbytes == t->nbytes &&
                      memcmp(u.data, t->data, t->nbytes) == 0,
                  "%s: tensor %s differs", what, t->name);
        compared++;
    }
    CHECK_MSG(compared >= 3 * 6 + 6, "%s: only %d tensors in common", what, compared);
    cr_st_close(fa);
    cr_st_close(fb);
    printf("%s: %d tensors in common, bit for bit\n", what, compared);
}

/* The envs' CUDA twin (--env-device cuda) against the env pool on CPU threads in one group (the
 * same ops in the same order): the same weights, observations, sampler and episode statistics
 * bit for bit, for MinAtar's twin and CartPolePixels-v1's; then a resumed twin run continues
 * exactly as a straight one. */
static void twin_case(cudarl_ctx *gpu) {
    const char *envs[2] = {BREAKOUT, "CartPolePixels-v1"};
    const char *policies[2] = {"minatar-cnn", "nature-cnn"};
    for (int e = 0; e < 2; e++) {
        char path[2][700];
        for (int side = 0; side < 2; side++) {
            cudarl_ppo_config c;
            char name[32];
            snprintf(name, sizeof name, "%s_env%d", side ? "twin" : "pool1", e);
            conv_config(&c, envs[e], policies[e], CUDARL_DEVICE_CUDA, name);
            c.env_device = side ? CUDARL_DEVICE_CUDA : CUDARL_DEVICE_CPU;
            c.env_groups = 1;
            cudarl_train_summary s;
            CHECK_OK(cudarl_ppo_train(gpu, &c, NULL, &s));
            printf("%s %s, envs %s: %lld episodes, %.0f steps/s\n", envs[e], policies[e],
                   side ? "on the GPU" : "on CPU threads", (long long)s.episodes, s.sps);
            snprintf(path[side], sizeof path[side], "%s/model.safetensors", s.run_dir);
        }
        same_training(envs[e], path[0], path[1]);
    }
    cudarl_ppo_config c;
    conv_config(&c, "CartPolePixels-v1", "nature-cnn", CUDARL_DEVICE_CUDA, "twin_straight");
    c.env_device = CUDARL_DEVICE_CUDA, c.anneal_lr = 0;
    cudarl_train_summary straight, half, rest;
    CHECK_OK(cudarl_ppo_train(gpu, &c, NULL, &straight));
    conv_config(&c, "CartPolePixels-v1", "nature-cnn", CUDARL_DEVICE_CUDA, "twin_resumed");
    c.env_device = CUDARL_DEVICE_CUDA, c.anneal_lr = 0, c.total_timesteps /= 2;
    CHECK_OK(cudarl_ppo_train(gpu, &c, NULL, &half));
    char a[700], b[700];
    snprintf(a, sizeof a, "%s/model.safetensors", straight.run_dir);
    snprintf(b, sizeof b, "%s/model.safetensors", half.run_dir);
    c.env_device = CUDARL_DEVICE_CPU; /* a twin's checkpoint does not resume on threads */
    c.total_timesteps *= 2;
    expect_refusal("twin checkpoint resumed on CPU threads", cudarl_ppo_train(gpu, &c, b, NULL),
                   CUDARL_ERR_MISMATCH, "resume with --env-device cuda");
    c.env_device = CUDARL_DEVICE_CUDA;
    CHECK_OK(cudarl_ppo_train(gpu, &c, b, &rest));
    CHECK(rest.global_step == straight.global_step && rest.episodes == straight.episodes);
    same_checkpoint("twin resume", a, b);
}

/* Host copy of n floats of backend memory at p (static: one at a time per call site). */
static float *host_floats_of(cr_ppo *p, const float *src, size_t n) {
    float *h = malloc(n * sizeof(float));
    CHECK(h != NULL);
    p->ctx->ops->copy_to_host(p->ctx, h, src, n * sizeof(float));
    return h;
}

/* Whether tensor `name` of the network at offset `base` is the same in a and b, bit for bit. */
static int tensor_same(const cr_convnet *net, const float *a, const float *b, size_t base,
                       const char *name) {
    int i = cr_convnet_find(net, name);
    CHECK_MSG(i >= 0, "no tensor %s", name);
    return memcmp(a + base + net->t[i].offset, b + base + net->t[i].offset,
                  net->t[i].count * sizeof(float)) == 0;
}

/* --separate-critic on the CPU: two networks of the spec, the critic's after the actor's; over
 * two updates the actor's network trains its trunk and actor head and never its critic head,
 * the critic's its trunk and critic head and never its actor head (their gradients are zero,
 * so Adam leaves them bit for bit); the rollout's values are the critic network's. The
 * checkpoint holds both (the critic's under critic_network.), the policy runtime plays the
 * actor and refuses values, and export writes the actor without a value output. */
static void separate_case(cudarl_ctx *ctx) {
    cudarl_ppo_config c;
    conv_config(&c, LAMP, "minatar-cnn", CUDARL_DEVICE_CPU, "separate");
    c.separate_critic = 1, c.gamma = 0.5, c.learning_rate = 1e-3;
    static cr_ppo p;
    CHECK_OK(cr_ppo_init(&p, ctx, &c));
    const cr_convnet *net = &p.cnn.net;
    const size_t n1 = net->num_params, P = p.num_params;
    CHECK_MSG(p.cnn.separate && P == 2 * n1, "%zu parameters for a net of %zu", P, n1);
    float *before = host_floats_of(&p, p.params, P);
    CHECK_MSG(memcmp(before, before + n1, n1 * sizeof(float)) != 0,
              "the two networks start from the same weights");
    float lr = (float)c.learning_rate;
    ctx->ops->copy_from_host(ctx, p.lr, &lr, sizeof lr);
    for (int it = 0; it < 2; it++) {
        cr_ppo_rollout(&p);
        if (it == 0) { /* the rollout's values are the critic network's */
            const size_t B = 8, D = (size_t)p.D, A = (size_t)p.A;
            static float logits[8 * 8], value[8], logits2[8 * 8], value2[8];
            CHECK(A <= 8);
            static uint8_t obs[8 * 400];
            CHECK(D <= 400);
            memcpy(obs, p.cnn.obs, B * D); /* the first step's observations (host memory) */
            static cr_convnet_cache cache;
            _Alignas(64) static char mem[1 << 20];
            CHECK(cr_convnet_cache_bytes(net, (int)B) <= sizeof mem);
            cr_convnet_cache_carve(net, mem, (int)B, &cache);
            cr_convnet_forward(net, before, obs, logits, value, &cache, (int)B);
            cr_convnet_forward(net, before + n1, obs, logits2, value2, &cache, (int)B);
            float *vals = host_floats_of(&p, p.values, B);
            CHECK_MSG(memcmp(vals, value2, B * sizeof(float)) == 0 &&
                          memcmp(vals, value, B * sizeof(float)) != 0,
                      "rollout values %g %g: the critic network's are %g %g, the actor "
                      "network's head's %g %g", vals[0], vals[1], value2[0], value2[1],
                      value[0], value[1]);
            free(vals);
        }
        cr_ppo_update(&p);
    }
    float *after = host_floats_of(&p, p.params, P);
    CHECK_MSG(tensor_same(net, before, after, 0, "critic.weight") &&
                  tensor_same(net, before, after, 0, "critic.bias"),
              "the actor network's critic head moved");
    CHECK_MSG(tensor_same(net, before, after, n1, "actor.weight") &&
                  tensor_same(net, before, after, n1, "actor.bias"),
              "the critic network's actor head moved");
    CHECK_MSG(!tensor_same(net, before, after, 0, "actor.weight") &&
                  !tensor_same(net, before, after, 0, "network.0.weight"),
              "the actor network did not train");
    CHECK_MSG(!tensor_same(net, before, after, n1, "critic.weight") &&
                  !tensor_same(net, before, after, n1, "network.0.weight"),
              "the critic network did not train");
    free(before), free(after);
    cr_ppo_free(&p);

    cudarl_train_summary s;
    conv_config(&c, LAMP, "minatar-cnn", CUDARL_DEVICE_CPU, "separate_run");
    c.separate_critic = 1;
    CHECK_OK(cudarl_ppo_train(ctx, &c, NULL, &s));
    char path[700], onnx[760];
    snprintf(path, sizeof path, "%s/model.safetensors", s.run_dir);
    cr_st_file *f = NULL;
    CHECK_OK(cr_st_open(&f, path));
    cr_st_tensor t;
    CHECK_OK(cr_st_find(f, "critic_network.network.0.weight", &t));
    CHECK_OK(cr_st_find(f, "optimizer.exp_avg_sq.critic_network.critic.bias", &t));
    const char *sc = cr_st_meta(f, "separate_critic");
    CHECK_MSG(sc && !strcmp(sc, "1"), "separate_critic metadata '%s'", sc ? sc : "(none)");
    cr_st_close(f);
    cudarl_policy_options o;
    cudarl_policy_options_default(&o);
    o.device = CUDARL_DEVICE_CPU;
    cudarl_policy *pol;
    CHECK_OK(cudarl_policy_load(path, &o, &pol));
    cudarl_policy_info info;
    cudarl_policy_get_info(pol, &info);
    CHECK_MSG(!info.has_values, "the runtime offers values of a separate critic's policy");
    static uint8_t obs[400];
    obs[55] = 1;
    int32_t act = -1;
    float value = 0;
    CHECK_OK(cudarl_policy_act(pol, obs, CUDARL_OBS_U8, 1, &act, NULL, NULL));
    CHECK(act == 0 || act == 1);
    expect_refusal("values of a --separate-critic policy",
                   cudarl_policy_act(pol, obs, CUDARL_OBS_U8, 1, &act, &value, NULL),
                   CUDARL_ERR_INVALID_ARG, "--separate-critic");
    cudarl_policy_free(pol);
    snprintf(onnx, sizeof onnx, "%s/policy.onnx", s.run_dir);
    CHECK_OK(cudarl_policy_export_onnx(path, onnx, NULL));
    FILE *fo = fopen(onnx, "rb");
    CHECK(fo != NULL);
    static char bytes[1 << 20];
    size_t nb = fread(bytes, 1, sizeof bytes, fo);
    fclose(fo);
    CHECK(nb > 0 && nb < sizeof bytes);
    CHECK_MSG(memmem(bytes, nb, "no value output", 15) != NULL &&
                  memmem(bytes, nb, "critic.weight", 13) == NULL,
              "the ONNX file has the critic head or lacks the note");
    printf("--separate-critic: heads trained as routed, checkpoint with critic_network.*, the "
           "runtime and export serve the actor only\n");
}

static void learn_case(cudarl_ctx *ctx, int separate) {
    cudarl_ppo_config c;
    conv_config(&c, LAMP, "minatar-cnn", CUDARL_DEVICE_CPU, separate ? "lamp_sep" : "lamp");
    c.gamma = 0.5, c.learning_rate = 1e-3, c.total_timesteps = 96 * 256;
    c.separate_critic = separate;
    cudarl_train_summary s;
    CHECK_OK(cudarl_ppo_train(ctx, &c, NULL, &s));
    double ret[128], vloss[128];
    int rows = csv_column(s.run_dir, "charts/mean_return_100", ret, 128);
    CHECK(csv_column(s.run_dir, "losses/value_loss", vloss, 128) == rows && rows == 96);
    double v0 = (vloss[0] + vloss[1] + vloss[2]) / 3, v1 = (vloss[93] + vloss[94] + vloss[95]) / 3;
    printf("%s minatar-cnn%s: mean return %.2f after the first iteration, %.2f at the end (best "
           "%d); value loss %.4f -> %.4f; %.1f s\n", LAMP,
           separate ? " (separate critic)" : "", ret[0], s.mean_return_100,
           LAMP_STEPS, v0, v1, s.train_seconds);
    CHECK_MSG(ret[0] < 0.7 * LAMP_STEPS, "the first iteration already earns %.2f", ret[0]);
    CHECK_MSG(s.mean_return_100 >= 0.9 * LAMP_STEPS, "PPO did not learn %s: mean return %.2f "
              "of %d after %lld steps", LAMP, s.mean_return_100, LAMP_STEPS,
              (long long)s.global_step);
    CHECK_MSG(v1 < v0, "the value loss did not decrease: %.4f -> %.4f", v0, v1);
}

/* ---- cuda: the trainers side by side -------------------------------------------------------- */

#define M_ENVS 13
#define M_STEPS 16
#define M_ITERS 3

/* What a rollout wrote (host copies). */
typedef struct rollout {
    uint8_t obs[M_STEPS * M_ENVS * 100];
    int32_t actions[M_STEPS * M_ENVS];
    float logp[M_STEPS * M_ENVS], values[M_STEPS * M_ENVS], rewards[M_STEPS * M_ENVS];
    float adv[M_STEPS * M_ENVS], returns[M_STEPS * M_ENVS];
    uint8_t terminated[M_STEPS * M_ENVS], truncated[M_STEPS * M_ENVS];
} rollout;

static void fetch(cr_ppo *p, rollout *r) {
    cudarl_ctx *c = p->ctx;
    const cr_backend *o = c->ops;
    const size_t tn = (size_t)M_STEPS * M_ENVS;
    o->copy_to_host(c, r->obs, p->cnn.obs, sizeof r->obs);
    o->copy_to_host(c, r->actions, p->actions, tn * sizeof(int32_t));
    o->copy_to_host(c, r->logp, p->logp, tn * sizeof(float));
    o->copy_to_host(c, r->values, p->values, tn * sizeof(float));
    o->copy_to_host(c, r->rewards, p->rewards, tn * sizeof(float));
    o->copy_to_host(c, r->adv, p->adv, tn * sizeof(float));
    o->copy_to_host(c, r->returns, p->returns, tn * sizeof(float));
    o->copy_to_host(c, r->terminated, p->terminated, tn);
    o->copy_to_host(c, r->truncated, p->truncated, tn);
}

/* What the update reads, from the host copy r into p. */
static void give(cr_ppo *p, const rollout *r) {
    cudarl_ctx *c = p->ctx;
    const cr_backend *o = c->ops;
    const size_t tn = (size_t)M_STEPS * M_ENVS;
    o->copy_from_host(c, p->cnn.obs, r->obs, sizeof r->obs);
    o->copy_from_host(c, p->actions, r->actions, tn * sizeof(int32_t));
    o->copy_from_host(c, p->logp, r->logp, tn * sizeof(float));
    o->copy_from_host(c, p->values, r->values, tn * sizeof(float));
    o->copy_from_host(c, p->adv, r->adv, tn * sizeof(float));
    o->copy_from_host(c, p->returns, r->returns, tn * sizeof(float));
    o->sync(c);
}

/* The GPU's rollout against the CPU's; diverged[n] marks envs that sampled another action
 * (their later steps are not compared). Returns the truncations seen. */
static int compare_rollouts(int it, const rollout *want, const rollout *got, int *diverged) {
    int truncations = 0;
    for (int n = 0; n < M_ENVS; n++)
        for (int t = 0; t < M_STEPS && !diverged[n]; t++) {
            size_t r = (size_t)t * M_ENVS + n;
            CHECK_MSG(!memcmp(want->obs + r * 100, got->obs + r * 100, 100),
                      "iteration %d (t %d, n %d): observations differ", it, t, n);
            if (want->actions[r] != got->actions[r]) {
                printf("iteration %d: env %d sampled action %d on CUDA, %d on the CPU at t %d "
                       "(log-probabilities %.9g, %.9g)\n", it, n, got->actions[r],
                       want->actions[r], t, got->logp[r], want->logp[r]);
                diverged[n] = 1;
                break;
            }
            char name[96];
            snprintf(name, sizeof name, "iteration %d (t %d, n %d) value", it, t, n);
            CHECK_CLOSE(name, got->values[r], want->values[r], VAL_TOL, 0);
            snprintf(name, sizeof name, "iteration %d (t %d, n %d) logp", it, t, n);
            CHECK_CLOSE(name, got->logp[r], want->logp[r], VAL_TOL, 0);
            CHECK_MSG(got->rewards[r] == want->rewards[r] &&
                          got->terminated[r] == want->terminated[r] &&
                          got->truncated[r] == want->truncated[r],
                      "iteration %d (t %d, n %d): reward or flags differ", it, t, n);
            truncations += want->truncated[r];
        }
    int count = 0;
    for (int n = 0; n < M_ENVS; n++) count += diverged[n];
    CHECK_MSG(count <= 1, "%d envs sampled other actions on CUDA", count);
    for (int n = 0; n < M_ENVS; n++) /* GAE runs back along each env's own steps */
        for (int t = 0; t < M_STEPS && !diverged[n]; t++) {
            size_t r = (size_t)t * M_ENVS + n;
            char name[80];
            snprintf(name, sizeof name, "iteration %d (t %d, n %d) advantage", it, t, n);
            CHECK_CLOSE(name, got->adv[r], want->adv[r], ADV_TOL, 0);
        }
    return truncations;
}

/* Parameters, Adam's moments and the loss sums of the two trainers. */
static void compare_updates(int it, cr_ppo *cpu, cr_ppo *gpu) {
    const size_t P = cpu->num_params;
    CHECK(gpu->num_params == P);
    float *a = malloc(P * sizeof(float)), *b = malloc(P * sizeof(float));
    CHECK(a && b);
    float *const bufs[2][3] = {{cpu->params, cpu->adam_m, cpu->adam_v},
                               {gpu->params, gpu->adam_m, gpu->adam_v}};
    static const char *const names[3] = {"params", "adam.m", "adam.v"};
    for (int k = 0; k < 3; k++) {
        cpu->ctx->ops->copy_to_host(cpu->ctx, a, bufs[0][k], P * sizeof(float));
        gpu->ctx->ops->copy_to_host(gpu->ctx, b, bufs[1][k], P * sizeof(float));
        double rel = rel_diff(b, a, P), tol = k ? TOL_MOMENTS : TOL_PARAMS;
        printf("iteration %d: %-7s ||cuda - cpu|| / ||cpu|| = %.3g (tolerance %g)\n", it,
               names[k], rel, tol);
        CHECK_MSG(rel <= tol, "iteration %d: %s differ by %.3g relative (tolerance %g)", it,
                  names[k], rel, tol);
    }
    free(a), free(b);
    cr_ppo_stats_acc sa, sb;
    cpu->ctx->ops->copy_to_host(cpu->ctx, &sa, cpu->acc, sizeof sa);
    gpu->ctx->ops->copy_to_host(gpu->ctx, &sb, gpu->acc, sizeof sb);
    CHECK(sa.count == sb.count && sa.count > 0);
    static const char *const stat[7] = {"loss", "pg_loss", "v_loss", "entropy", "old_approx_kl",
                                        "approx_kl", "clipfrac"};
    const double flips = 2.0 / cpu->mb; /* clipfrac: two samples of one minibatch */
    for (int i = 0; i < 7; i++) {
        double scale = fabs(sa.sum[i]) > 1e-3 * sa.count ? fabs(sa.sum[i]) : 1e-3 * sa.count;
        CHECK_MSG(fabs(sb.sum[i] - sa.sum[i]) <= TOL_LOSS * scale + (i == 6 ? flips : 0),
                  "iteration %d: %s sums %.9g (cuda) vs %.9g (cpu)", it, stat[i], sb.sum[i],
                  sa.sum[i]);
    }
}

static void match_run(cudarl_ctx *cpu_ctx, cudarl_ctx *gpu_ctx, int separate) {
    cudarl_ppo_config c;
    conv_config(&c, LAMP, "minatar-cnn", CUDARL_DEVICE_CPU, separate ? "match_sep" : "match");
    c.separate_critic = separate;
    c.num_envs = M_ENVS, c.num_steps = M_STEPS, c.gamma = 0.5, c.learning_rate = 1e-3;
    c.total_timesteps = (int64_t)M_ENVS * M_STEPS * M_ITERS;
    static cr_ppo cpu, gpu;
    CHECK_OK(cr_ppo_init(&cpu, cpu_ctx, &c));
    c.device = CUDARL_DEVICE_CUDA;
    CHECK_OK(cr_ppo_init(&gpu, gpu_ctx, &c));
    CHECK_MSG(cpu.pool && gpu.pool && cpu.conv && gpu.conv, "the trainers are not conv + pool");
    /* --separate-critic: the critic's network on a branch of the GPU's context, in order on the
     * CPU's; the rollouts and updates below hold the branch's results to the CPU's */
    CHECK_MSG(!cpu.cnn.branch.ctx && (gpu.cnn.branch.ctx != NULL) == separate,
              "the critic's branch: %p on the CPU, %p on the GPU (separate %d)",
              (void *)cpu.cnn.branch.ctx, (void *)gpu.cnn.branch.ctx, separate);
    CHECK_MSG(cr_ppo_pool_groups(&gpu) == 2 && cr_ppo_pool_groups(&cpu) == 1,
              "groups: %d on CUDA, %d on the CPU", cr_ppo_pool_groups(&gpu),
              cr_ppo_pool_groups(&cpu));
    static rollout want, got;
    int diverged[M_ENVS] = {0}, truncations = 0;
    float lr = (float)c.learning_rate;
    cpu_ctx->ops->copy_from_host(cpu_ctx, cpu.lr, &lr, sizeof lr);
    gpu_ctx->ops->copy_from_host(gpu_ctx, gpu.lr, &lr, sizeof lr);
    for (int it = 1; it <= M_ITERS; it++) {
        cr_ppo_rollout(&cpu);
        cr_ppo_rollout(&gpu);
        fetch(&cpu, &want);
        fetch(&gpu, &got);
        truncations += compare_rollouts(it, &want, &got, diverged);
        give(&gpu, &want);
        cr_ppo_update(&cpu);
        cr_ppo_update(&gpu);
        compare_updates(it, &cpu, &gpu);
    }
    CHECK_MSG(truncations >= 5, "only %d truncations: V(final obs) went untested", truncations);
    cr_ppo_free(&cpu);
    cr_ppo_free(&gpu);
}

static void match_case(cudarl_ctx *cpu_ctx, cudarl_ctx *gpu_ctx) {
    match_run(cpu_ctx, gpu_ctx, 0);
}

/* match with --separate-critic: the two networks' twins against the CPU's. */
static void separate_match_case(cudarl_ctx *cpu_ctx, cudarl_ctx *gpu_ctx) {
    match_run(cpu_ctx, gpu_ctx, 1);
}

static void pixels_case(cudarl_ctx *gpu) {
    cudarl_ppo_config c;
    conv_config(&c, "CartPolePixels-v1", "nature-cnn", CUDARL_DEVICE_CUDA, "pixels");
    c.env_threads = 4;
    cudarl_train_summary s;
    CHECK_OK(cudarl_ppo_train(gpu, &c, NULL, &s));
    printf("CartPolePixels-v1 nature-cnn on CUDA: %lld steps, %lld episodes, %.2f s, %.0f "
           "steps/s\n", (long long)s.global_step, (long long)s.episodes, s.train_seconds, s.sps);
    CHECK(s.global_step == c.total_timesteps && s.episodes >= 8);
    char path[700];
    snprintf(path, sizeof path, "%s/model.safetensors", s.run_dir);
    check_checkpoint(path, "nature-cnn", 4, 84, 84, 2, c.num_envs);
}

/* bf16 and fp16 PPO on the GPU (the conv products in the format, fp16 with loss scaling):
 * Breakout trains with finite statistics, fp16's metrics carry the loss scale (2^16 halved
 * once per skipped step) and bf16's leave it blank; an fp16 run resumed halfway ends
 * with the straight run's checkpoint bit for bit (the scaler's state included). */
static void mixed_case(cudarl_ctx *gpu) {
    static const cudarl_precision precs[2] = {CUDARL_PRECISION_BF16, CUDARL_PRECISION_FP16};
    for (int q = 0; q < 2; q++) {
        cudarl_ppo_config c;
        char name[32];
        snprintf(name, sizeof name, "mixed_%s", cudarl_precision_name(precs[q]));
        conv_config(&c, BREAKOUT, "minatar-cnn", CUDARL_DEVICE_CUDA, name);
        c.precision = precs[q], c.anneal_lr = 0;
        cudarl_train_summary s;
        CHECK_OK(cudarl_ppo_train(gpu, &c, NULL, &s));
        char loss[64];
        metrics_last_field(s.run_dir, "losses/value_loss", loss, sizeof loss);
        printf("PPO minatar-cnn %s on CUDA: %lld steps, value loss %s\n",
               cudarl_precision_name(precs[q]), (long long)s.global_step, loss);
        CHECK_MSG(loss[0] && isfinite(strtod(loss, NULL)), "%s: value loss '%s'", name, loss);
        check_amp_columns(s.run_dir, precs[q] == CUDARL_PRECISION_FP16);
    }
    cudarl_ppo_config c;
    conv_config(&c, BREAKOUT, "minatar-cnn", CUDARL_DEVICE_CUDA, "fp16_straight");
    c.precision = CUDARL_PRECISION_FP16, c.anneal_lr = 0;
    cudarl_train_summary straight, half, rest;
    CHECK_OK(cudarl_ppo_train(gpu, &c, NULL, &straight));
    conv_config(&c, BREAKOUT, "minatar-cnn", CUDARL_DEVICE_CUDA, "fp16_resumed");
    c.precision = CUDARL_PRECISION_FP16, c.anneal_lr = 0, c.total_timesteps /= 2;
    CHECK_OK(cudarl_ppo_train(gpu, &c, NULL, &half));
    char a[700], b[700];
    snprintf(a, sizeof a, "%s/model.safetensors", straight.run_dir);
    snprintf(b, sizeof b, "%s/model.safetensors", half.run_dir);
    c.total_timesteps *= 2;
    CHECK_OK(cudarl_ppo_train(gpu, &c, b, &rest));
    same_checkpoint("fp16 resume", a, b);
}

/* A forced overflow never corrupts the weights: an fp16 trainer whose loss scale is set to
 * 2^120 (every gradient's fp16 G overflows to inf) runs a whole update; the weights, Adam's
 * moments and step count stay bit for bit, every minibatch step is counted as skipped and the
 * scale halved once per step. Then, from a scale of 2^10, the next update steps. */
static void overflow_case(cudarl_ctx *gpu) {
    cudarl_ppo_config c;
    conv_config(&c, BREAKOUT, "minatar-cnn", CUDARL_DEVICE_CUDA, "overflow");
    c.precision = CUDARL_PRECISION_FP16;
    static cr_ppo p;
    CHECK_OK(cr_ppo_init(&p, gpu, &c));
    CHECK(p.amp.scaling == 1);
    const cr_backend *o = gpu->ops;
    const size_t P = p.num_params;
    float lr = (float)c.learning_rate;
    o->copy_from_host(gpu, p.lr, &lr, sizeof lr);
    cr_loss_scale_state st = {0};
    st.scale = 0x1p120f;
    o->copy_from_host(gpu, p.amp.state, &st, sizeof st);
    float *before = malloc(3 * P * sizeof(float)), *after = malloc(3 * P * sizeof(float));
    CHECK(before && after);
    int64_t t0, t1;
    o->copy_to_host(gpu, before, p.params, P * sizeof(float));
    o->copy_to_host(gpu, before + P, p.adam_m, P * sizeof(float));
    o->copy_to_host(gpu, before + 2 * P, p.adam_v, P * sizeof(float));
    o->copy_to_host(gpu, &t0, p.adam_t, sizeof t0);
    cr_ppo_rollout(&p);
    cr_ppo_update(&p);
    o->copy_to_host(gpu, after, p.params, P * sizeof(float));
    o->copy_to_host(gpu, after + P, p.adam_m, P * sizeof(float));
    o->copy_to_host(gpu, after + 2 * P, p.adam_v, P * sizeof(float));
    o->copy_to_host(gpu, &t1, p.adam_t, sizeof t1);
    o->copy_to_host(gpu, &st, p.amp.state, sizeof st);
    const int64_t steps = (int64_t)c.update_epochs * c.num_minibatches;
    CHECK_MSG(memcmp(before, after, 3 * P * sizeof(float)) == 0 && t0 == t1,
              "an overflowed update changed the weights or Adam's state (t %lld -> %lld)",
              (long long)t0, (long long)t1);
    CHECK_MSG(st.skipped_steps == steps && st.scale == ldexpf(1.0f, 120 - (int)steps) &&
                  st.found_inf == 0.0f,
              "after %lld overflowed steps: skipped %lld, scale %g, found_inf %g",
              (long long)steps, (long long)st.skipped_steps, (double)st.scale,
              (double)st.found_inf);
    st.scale = 0x1p10f;
    o->copy_from_host(gpu, p.amp.state, &st, sizeof st);
    cr_ppo_rollout(&p);
    cr_ppo_update(&p);
    o->copy_to_host(gpu, after, p.params, P * sizeof(float));
    o->copy_to_host(gpu, &t1, p.adam_t, sizeof t1);
    o->copy_to_host(gpu, &st, p.amp.state, sizeof st);
    int finite = 1;
    for (size_t i = 0; i < P; i++) finite &= isfinite(after[i]) != 0;
    CHECK_MSG(t1 == t0 + steps && st.skipped_steps == steps && finite &&
                  memcmp(before, after, P * sizeof(float)) != 0,
              "from a scale of 2^10: Adam's t %lld (expected %lld), skipped %lld, weights %s",
              (long long)t1, (long long)(t0 + steps), (long long)st.skipped_steps,
              finite ? "finite" : "not finite");
    printf("fp16 overflow: %lld steps skipped with the weights untouched, scale 2^120 -> %g; "
           "then %lld steps taken\n", (long long)steps, (double)ldexpf(1.0f, 120 - (int)steps),
           (long long)steps);
    free(before), free(after);
    cr_ppo_free(&p);
}

/* Whether the comma-separated list `only` names case `name` (NULL: every case but the ones run
 * only when listed). */
static int listed(const char *only, const char *name) {
    if (!only) return 1;
    size_t n = strlen(name);
    for (const char *p = only; *p;) {
        size_t k = strcspn(p, ",");
        if (k == n && !strncmp(p, name, n)) return 1;
        p += k + (p[k] == ',');
    }
    return 0;
}

int main(int argc, char **argv) {
    int cuda = argc > 1 && !strcmp(argv[1], "cuda");
    runs = argc > 2 ? argv[2] : "ppo-conv-runs";
    cudarl_log_set_level(CUDARL_LOG_WARN);
    CHECK_OK(cudarl_env_register(&lamp_def));
    cudarl_ctx *ctx;
    CHECK_OK(cudarl_ctx_init(&ctx, CUDARL_DEVICE_CPU, 0));
    if (cuda) {
        cudarl_ctx *gpu;
        CHECK_OK(cudarl_ctx_init(&gpu, CUDARL_DEVICE_CUDA, 0));
        /* argv[3] (optional): run only the cases whose names it lists, e.g. "mixed,overflow" */
        const char *only = argc > 3 ? argv[3] : NULL;
#define RUN(name, call) if (listed(only, name)) call
        RUN("match", match_case(ctx, gpu));
        RUN("breakout", breakout_case(gpu, ctx, CUDARL_DEVICE_CUDA));
        RUN("resume", resume_case(gpu, CUDARL_DEVICE_CUDA, 0, CUDARL_PRECISION_FP32));
        RUN("resume", resume_case(gpu, CUDARL_DEVICE_CUDA, 0, CUDARL_PRECISION_BF16));
        RUN("separate", resume_case(gpu, CUDARL_DEVICE_CUDA, 1, CUDARL_PRECISION_FP32));
        RUN("separate", resume_case(gpu, CUDARL_DEVICE_CUDA, 1, CUDARL_PRECISION_BF16));
        RUN("separate", separate_match_case(ctx, gpu));
        RUN("pixels", pixels_case(gpu));
        RUN("twin", twin_case(gpu));
        RUN("mixed", mixed_case(gpu));
        RUN("overflow", overflow_case(gpu));
#undef RUN
        cudarl_ctx_free(gpu);
    } else {
        /* argv[3] (optional): only the listed cases; learn_separate (the slowest: two networks
         * over 96 iterations) runs only when listed. ctest runs learn and learn_separate as
         * tests of their own, label slow, which the sanitizer build skips (under it, learn
         * alone took 252 s of test_ppo_conv's 424) */
        const char *only = argc > 3 ? argv[3] : NULL;
#define RUN(name, call) if (listed(only, name)) call
        RUN("validation", validation_case());
        RUN("precision", precision_case(ctx));
        RUN("breakout", breakout_case(ctx, ctx, CUDARL_DEVICE_CPU));
        RUN("resume", resume_case(ctx, CUDARL_DEVICE_CPU, 0, CUDARL_PRECISION_FP32));
        RUN("separate", resume_case(ctx, CUDARL_DEVICE_CPU, 1, CUDARL_PRECISION_FP32));
        RUN("separate", separate_case(ctx));
        RUN("learn", learn_case(ctx, 0));
#undef RUN
        if (only && listed(only, "learn_separate")) learn_case(ctx, 1);
    }
    cudarl_ctx_free(ctx);
    printf("test_ppo_conv: ok\n");
    return 0;
}
