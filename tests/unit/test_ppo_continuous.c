/* PPO with continuous actions (CleanRL's ppo_continuous_action.py) on the context argv[1] names
 * (cpu, or cuda for the gpu label); argv[2] "learn" runs part 4 only (on cuda with 4b; ctest's
 * test_ppo_continuous_learn, label slow), else parts 1-3 and 5. Over a small C env registered here,
 * Reach-v0: two float
 * observations, targets drawn in [-1, 1] at reset, an action of two floats in [-2, 2] (the box),
 * reward -(sum over k of (a_k - target_k)^2) each of the 8 steps of an episode; the targets stay.
 *  1. The config: the preset of a continuous env (cudarl_ppo_config_for_env), and the refusals
 *     of what the Gaussian policy does not take (conv policies, --async).
 *  2. The rollout: sampled actions are stored as sampled (outside the box too) while the env
 *     sees them clipped; their log-probabilities are the Gaussian's.
 *  3. A checkpoint (normalization statistics included) written after a rollout and an update and
 *     loaded into a fresh trainer continues bit for bit.
 *  4. It learns: the mean return of the last 100 episodes goes from about -21 (the initial policy,
 *     std 1) to above -3 within 100k steps, with --norm-obs and --norm-reward (the preset) and
 *     without them; evaluation of the checkpoint (the mean action, on the policy runtime) scores
 *     above -1.5, and the runtime's actions are the clipped means of the actor over the
 *     normalized observations.
 *  5. A checkpoint whose env changed its kind of actions since (a vector env registered again,
 *     discrete now) is refused by eval and by resume, naming the mismatch. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo/ppo/ppo_internal.h"
#include "check.h"
#include "core/philox.h"
#include "cudarl.h"

typedef struct reach_state {
    cr_philox_state rng;
    float target[2];
} reach_state;

static void reach_seed(void *s, uint64_t seed, uint64_t index) {
    cr_philox_seed(&((reach_state *)s)->rng, seed, index);
}

static void reach_reset(void *sv, void *obs) {
    reach_state *s = sv;
    float *o = obs;
    for (int k = 0; k < 2; k++) {
        s->target[k] = (float)(2.0 * cr_philox_uniform_f64_hd(&s->rng) - 1.0);
        o[k] = s->target[k];
    }
}

/* The last action the env saw (one env steps at a time in part 2's single-thread pool). */
static float seen[2];

static void reach_step(void *sv, const float *a, void *obs, float *reward, uint8_t *terminated) {
    reach_state *s = sv;
    float *o = obs, r = 0.0f;
    for (int k = 0; k < 2; k++) {
        CHECK_MSG(a[k] >= -2.0f && a[k] <= 2.0f, "the env saw action %g outside its box", a[k]);
        r -= (a[k] - s->target[k]) * (a[k] - s->target[k]);
        o[k] = s->target[k];
        seen[k] = a[k];
    }
    *reward = r;
    *terminated = 0;
}

static void register_reach(void) {
    cudarl_env_def d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.id = "Reach-v0", d.obs_rank = 1, d.obs_shape[0] = 2, d.obs_dtype = CUDARL_OBS_F32;
    d.max_episode_steps = 8, d.solved_return = -1.0, d.state_bytes = sizeof(reach_state);
    d.seed = reach_seed, d.reset = reach_reset, d.step_box = reach_step;
    d.action_dim = 2;
    for (int k = 0; k < 2; k++) d.action_low[k] = -2.0f, d.action_high[k] = 2.0f;
    CHECK_OK(cudarl_env_register(&d));
}

static void config(cudarl_ppo_config *c, uint64_t seed) {
    cudarl_ppo_config_default(c, NULL);
    cudarl_ppo_config_for_env(c, "Reach-v0");
    c->seed = seed, c->quiet = 1;
    snprintf(c->runs_dir, sizeof c->runs_dir, "/tmp/test_ppo_continuous_%d", (int)getpid());
}

/* 1. */
static void check_config(void) {
    cudarl_ppo_config c;
    config(&c, 1);
    CHECK(c.num_envs == 8 && c.num_steps == 256 && c.num_minibatches == 32 &&
          c.update_epochs == 10 && c.learning_rate == 3e-4 && c.ent_coef == 0.0 &&
          c.norm_obs == 1 && c.norm_reward == 1);
    CHECK_OK(cudarl_ppo_config_validate(&c));
    cudarl_ppo_config d = c;
    snprintf(d.policy, sizeof d.policy, "nature-cnn");
    CHECK(cudarl_ppo_config_validate(&d) == CUDARL_ERR_INVALID_ARG);
    CHECK_MSG(strstr(cudarl_last_error(), "continuous actions"), "%s", cudarl_last_error());
    d = c, d.async = 1, d.env_device = CUDARL_DEVICE_CPU;
    CHECK(cudarl_ppo_config_validate(&d) == CUDARL_ERR_INVALID_ARG);
    CHECK_MSG(strstr(cudarl_last_error(), "--async"), "%s", cudarl_last_error());
    d = c, d.norm_obs = 2;
    CHECK(cudarl_ppo_config_validate(&d) == CUDARL_ERR_INVALID_ARG);
    /* a discrete env keeps its preset */
    cudarl_ppo_config_default(&d, NULL);
    cudarl_ppo_config_for_env(&d, "CartPole-v1");
    CHECK(d.num_envs == 16 && d.num_steps == 64 && d.norm_obs == 0 && d.update_epochs == 4);
}

static void set_lr(cr_ppo *p, float lr) {
    p->ctx->ops->copy_from_host(p->ctx, p->lr, &lr, sizeof lr);
}

/* 2. One env, one thread: the last step's stored action, clipped, is what the env saw, and the
 * stored log-probability is the Gaussian's of the stored action. */
static void check_rollout(cudarl_ctx *ctx) {
    cudarl_ppo_config c;
    config(&c, 3);
    c.num_envs = 1, c.num_steps = 64, c.num_minibatches = 1, c.env_threads = 1;
    c.env_device = CUDARL_DEVICE_CPU, c.norm_obs = c.norm_reward = 0;
    static cr_ppo p;
    CHECK_OK(cr_ppo_init(&p, ctx, &c));
    CHECK(p.K == 2 && p.A == 2 && p.layout.gaussian && p.num_params == p.layout.num_params);
    /* a wide policy: many samples fall outside the box */
    float logstd[2] = {1.0f, 1.0f};
    ctx->ops->copy_from_host(ctx, cr_ac_logstd(&p.layout, p.params), logstd, sizeof logstd);
    cr_ppo_rollout(&p);
    float act[64 * 2], logp[64], mean[2], obs[2];
    ctx->ops->copy_to_host(ctx, act, p.act_f, sizeof act);
    ctx->ops->copy_to_host(ctx, logp, p.logp, sizeof logp);
    int outside = 0;
    for (int i = 0; i < 128; i++) outside += fabsf(act[i]) > 2.0f;
    CHECK_MSG(outside > 5, "only %d of 128 sampled action floats lie outside the box", outside);
    for (int k = 0; k < 2; k++) {
        float a = act[63 * 2 + k], clipped = a < -2.0f ? -2.0f : a > 2.0f ? 2.0f : a;
        CHECK_MSG(seen[k] == clipped, "dim %d: the env saw %g, the rollout stored %g", k,
                  seen[k], a);
    }
    /* logp of the last step from the actor's mean at its observation */
    ctx->ops->copy_to_host(ctx, obs, p.obs + 63 * 2, sizeof obs);
    cr_mlp_view actor = cr_ac_actor(&p.layout, p.params);
    cr_mlp_forward(ctx, &actor, p.obs + 63 * 2, p.logits, &p.cache_actor, 1);
    ctx->ops->copy_to_host(ctx, mean, p.logits, sizeof mean);
    double want = 0;
    for (int k = 0; k < 2; k++) {
        double sd = exp(1.0), d = act[63 * 2 + k] - mean[k];
        want += -d * d / (2 * sd * sd) - 1.0 - 0.5 * log(2 * 3.14159265358979323846);
    }
    CHECK_CLOSE("log-probability of the stored action", logp[63], want, 1e-4, 1e-5);
    cr_ppo_free(&p);
}

/* 3. */
static void check_resume(cudarl_ctx *ctx) {
    cudarl_ppo_config c;
    config(&c, 5);
    c.num_envs = 8, c.num_steps = 32, c.num_minibatches = 4, c.update_epochs = 2;
    static cr_ppo a, b;
    CHECK_OK(cr_ppo_init(&a, ctx, &c));
    CHECK(a.cfg.norm_obs && a.cfg.norm_reward && a.obs_mean && a.ret_acc);
    set_lr(&a, 3e-4f);
    cr_ppo_rollout(&a);
    cr_ppo_update(&a);
    a.iteration = 1, a.global_step = a.batch;
    char path[96];
    snprintf(path, sizeof path, "/tmp/test_ppo_continuous_%d.safetensors", (int)getpid());
    CHECK_OK(cr_ppo_checkpoint_save(&a, path));
    CHECK_OK(cr_ppo_init(&b, ctx, &c));
    b.num_iterations = 1000;
    CHECK_OK(cr_ppo_checkpoint_load(&b, path));
    unlink(path);
    for (int it = 0; it < 2; it++) {
        cr_ppo *q[2] = {&a, &b};
        for (int i = 0; i < 2; i++) {
            set_lr(q[i], 3e-4f);
            cr_ppo_rollout(q[i]);
            cr_ppo_update(q[i]);
        }
    }
    size_t P = a.num_params, S = 2 * (size_t)a.D + 1 + 3 + (size_t)a.N;
    float *pa = malloc(P * 4), *pb = malloc(P * 4);
    double *sa = malloc(S * 8), *sb = malloc(S * 8);
    ctx->ops->copy_to_host(ctx, pa, a.params, P * 4);
    ctx->ops->copy_to_host(ctx, pb, b.params, P * 4);
    ctx->ops->copy_to_host(ctx, sa, a.obs_mean, S * 8);
    ctx->ops->copy_to_host(ctx, sb, b.obs_mean, S * 8);
    CHECK_MSG(!memcmp(pa, pb, P * 4), "the resumed run's parameters differ");
    CHECK_MSG(!memcmp(sa, sb, S * 8), "the resumed run's normalization statistics differ");
    CHECK_MSG(sa[2 * a.D] > 2 * a.batch, "the observation count is %g after 3 rollouts of %d",
              sa[2 * a.D], a.batch);
    free(pa), free(pb), free(sa), free(sb);
    cr_ppo_free(&a);
    cr_ppo_free(&b);
}

/* 4. */
static void check_learns(cudarl_ctx *ctx, int norm) {
    cudarl_ppo_config c;
    config(&c, 7);
    c.total_timesteps = 100000;
    c.norm_obs = c.norm_reward = norm;
    cudarl_train_summary s;
    CHECK_OK(cudarl_ppo_train(ctx, &c, NULL, &s));
    printf("Reach-v0 (norm %d): mean return of the last 100 episodes %.3f after %lld steps, "
           "%.1f s\n", norm, s.mean_return_100, (long long)s.global_step, s.train_seconds);
    CHECK_MSG(s.mean_return_100 > -3.0, "mean return %g, expected > -3", s.mean_return_100);
    char path[700];
    snprintf(path, sizeof path, "%s/model.safetensors", s.run_dir);
    cudarl_ctx *cpu;
    CHECK_OK(cudarl_ctx_init(&cpu, CUDARL_DEVICE_CPU, 0));
    double mean = 0, sd = 0;
    CHECK_OK(cudarl_policy_eval(cpu, path, 50, 99, &mean, &sd));
    printf("  eval of the mean action: %.3f +- %.3f over 50 episodes\n", mean, sd);
    CHECK_MSG(mean > -1.5, "eval mean return %g, expected > -1.5", mean);
    cudarl_ctx_free(cpu);
    /* the runtime: a far-away target gives a clipped action; the info says what it is */
    cudarl_policy_options opt;
    cudarl_policy_options_default(&opt);
    opt.device = CUDARL_DEVICE_CPU, opt.max_batch = 4;
    cudarl_policy *pol;
    CHECK_OK(cudarl_policy_load(path, &opt, &pol));
    cudarl_policy_info info;
    cudarl_policy_get_info(pol, &info);
    CHECK(info.action_dim == 2 && info.num_actions == 2 && info.action_low[1] == -2.0f &&
          info.action_high[0] == 2.0f && info.has_values);
    float obs[4 * 2] = {0.5f, -0.5f, 0.9f, 0.1f, -0.9f, -0.2f, 0.0f, 0.0f};
    float act[4 * 2], means[4 * 2], values[4];
    CHECK_OK(cudarl_policy_act(pol, obs, CUDARL_OBS_F32, 4, act, values, means));
    for (int i = 0; i < 8; i++) {
        float want = means[i] < -2.0f ? -2.0f : means[i] > 2.0f ? 2.0f : means[i];
        CHECK_MSG(act[i] == want, "action %d: %g, the clipped mean is %g", i, act[i], want);
        CHECK_MSG(fabsf(act[i] - obs[i]) < 0.35f, "action %d is %g for target %g", i, act[i],
                  obs[i]);
    }
    cudarl_policy_free(pol);
    if (cudarl_ctx_kind(ctx) != CUDARL_DEVICE_CUDA) return;
    /* the runtime on the GPU (its graphs: normalization, forward, clip) against the CPU's:
     * actions within float rounding of the products (cuBLAS sums in another order) */
    opt.device = CUDARL_DEVICE_CUDA;
    CHECK_OK(cudarl_policy_load(path, &opt, &pol));
    cudarl_policy_get_info(pol, &info);
    CHECK(info.device == CUDARL_DEVICE_CUDA && info.action_dim == 2);
    float gact[4 * 2], gmeans[4 * 2], gvalues[4];
    CHECK_OK(cudarl_policy_act(pol, obs, CUDARL_OBS_F32, 4, gact, gvalues, gmeans));
    for (int i = 0; i < 8; i++) {
        CHECK_CLOSE("GPU runtime's action", gact[i], act[i], 1e-5, 1e-5);
        CHECK_CLOSE("GPU runtime's mean", gmeans[i], means[i], 1e-5, 1e-5);
    }
    for (int i = 0; i < 4; i++) CHECK_CLOSE("GPU runtime's value", gvalues[i], values[i], 1e-5, 1e-5);
    /* a far target: the mean leaves the box, and the GPU clips it as the CPU does */
    float far[2] = {50.0f, -50.0f}, fa[2], fm[2];
    CHECK_OK(cudarl_policy_act(pol, far, CUDARL_OBS_F32, 1, fa, NULL, fm));
    for (int k = 0; k < 2; k++)
        CHECK_MSG(fa[k] == (fm[k] < -2.0f ? -2.0f : fm[k] > 2.0f ? 2.0f : fm[k]),
                  "GPU clip: action %g for mean %g", fa[k], fm[k]);
    cudarl_policy_free(pol);
}

/* 4b. CUDA: the Gaussian policy learns in the discrete path's other precisions too (tf32, bf16,
 * fp16 with its loss scaling: op by op, cuBLAS in the format), to the same bar. */
static void check_learns_precisions(cudarl_ctx *ctx) {
    static const struct { cudarl_precision p; const char *name; } precisions[] = {
        {CUDARL_PRECISION_TF32, "tf32"}, {CUDARL_PRECISION_BF16, "bf16"},
        {CUDARL_PRECISION_FP16, "fp16"}};
    for (size_t i = 0; i < sizeof precisions / sizeof precisions[0]; i++) {
        cudarl_ppo_config c;
        config(&c, 7);
        c.total_timesteps = 100000;
        c.precision = precisions[i].p;
        cudarl_train_summary s;
        CHECK_OK(cudarl_ppo_train(ctx, &c, NULL, &s));
        printf("Reach-v0 (%s): mean return of the last 100 episodes %.3f after %lld steps, "
               "%.1f s\n", precisions[i].name, s.mean_return_100, (long long)s.global_step,
               s.train_seconds);
        CHECK_MSG(s.mean_return_100 > -3.0, "%s: mean return %g, expected > -3",
                  precisions[i].name, s.mean_return_100);
    }
}

/* 5. VecReach-v0: Reach as a vector env of 4, registered continuous, then discrete. */
static float vec_target[4][2];

static void vec_reset(void *user, int n, uint64_t seed, void *obs) {
    (void)user;
    float *o = obs;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 2; k++) o[2 * i + k] = vec_target[i][k] = (float)((seed + i + k) % 3) - 1;
}

static void vec_step(void *user, int n, const void *actions, void *obs, float *reward,
                     uint8_t *terminated, uint8_t *truncated, void *final_obs) {
    int box = user != NULL;
    float *o = obs;
    for (int i = 0; i < n; i++) {
        float r = 0;
        for (int k = 0; k < 2; k++) {
            float a = box ? ((const float *)actions)[2 * i + k]
                          : (float)((const int32_t *)actions)[i];
            r -= (a - vec_target[i][k]) * (a - vec_target[i][k]);
            o[2 * i + k] = vec_target[i][k];
        }
        reward[i] = r, terminated[i] = 0, truncated[i] = 0;
    }
    (void)final_obs;
}

static void register_vec(int box) {
    cudarl_env_def d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.id = "VecReach-v0", d.obs_rank = 1, d.obs_shape[0] = 2, d.obs_dtype = CUDARL_OBS_F32;
    d.solved_return = 0, d.vec_reset = vec_reset, d.vec_step = vec_step, d.vec_num_envs = 4;
    d.vec_user = box ? (void *)&d : NULL; /* only its being non-NULL is read */
    if (box) {
        d.action_dim = 2;
        for (int k = 0; k < 2; k++) d.action_low[k] = -2, d.action_high[k] = 2;
    } else {
        d.num_actions = 2;
    }
    CHECK_OK(cudarl_env_register(&d));
}

static void check_action_space_mismatch(cudarl_ctx *ctx) {
    register_vec(1);
    cudarl_ppo_config c;
    config(&c, 9);
    snprintf(c.env_id, sizeof c.env_id, "VecReach-v0");
    c.num_envs = 4, c.num_steps = 32, c.num_minibatches = 4, c.total_timesteps = 256;
    c.env_device = CUDARL_DEVICE_CPU;
    cudarl_train_summary s;
    CHECK_OK(cudarl_ppo_train(ctx, &c, NULL, &s));
    char path[700];
    snprintf(path, sizeof path, "%s/model.safetensors", s.run_dir);
    register_vec(0);
    cudarl_ctx *cpu;
    CHECK_OK(cudarl_ctx_init(&cpu, CUDARL_DEVICE_CPU, 0));
    double mean, sd;
    CHECK(cudarl_policy_eval(cpu, path, 4, 1, &mean, &sd) == CUDARL_ERR_MISMATCH);
    CHECK_MSG(strstr(cudarl_last_error(), "continuous actions") &&
                  strstr(cudarl_last_error(), "discrete actions"),
              "%s", cudarl_last_error());
    cudarl_ppo_config r;
    CHECK(cudarl_ppo_config_load(path, &r) == CUDARL_OK); /* the file is fine... */
    r.total_timesteps = 512, r.quiet = 1, r.env_device = CUDARL_DEVICE_CPU;
    CHECK(cudarl_ppo_train(cpu, &r, path, &s) != CUDARL_OK); /* ...its env is not */
    CHECK_MSG(strstr(cudarl_last_error(), "action_dim") || strstr(cudarl_last_error(), "actions"),
              "%s", cudarl_last_error());
    printf("action-space mismatch refused: %s\n", cudarl_last_error());
    cudarl_ctx_free(cpu);
}

int main(int argc, char **argv) {
    const char *kind = argc > 1 ? argv[1] : "cpu";
    cudarl_ctx *ctx;
    CHECK_OK(cudarl_ctx_init(&ctx, strcmp(kind, "cuda") ? CUDARL_DEVICE_CPU : CUDARL_DEVICE_CUDA,
                             0));
    register_reach();
    if (argc > 2 && !strcmp(argv[2], "learn")) {
        check_learns(ctx, 1);
        check_learns(ctx, 0);
        if (cudarl_ctx_kind(ctx) == CUDARL_DEVICE_CUDA) check_learns_precisions(ctx);
    } else {
        check_config();
        check_rollout(ctx);
        check_resume(ctx);
        check_action_space_mismatch(ctx);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf /tmp/test_ppo_continuous_%d", (int)getpid());
    CHECK(system(cmd) == 0);
    cudarl_ctx_free(ctx);
    printf("ok\n");
    return 0;
}
