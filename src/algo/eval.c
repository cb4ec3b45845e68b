/* Evaluation of a checkpoint: mean and std of the greedy policy's return over whole episodes,
 * the MLPs on the CPU (an env batch env's with the env batch, any other env's through the policy
 * runtime with an env pool), convolutional policies through the policy runtime on the context's
 * device with an env pool. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/eval.h"
#include "env/env.h"
#include "env/env_pool.h"
#include "nn/actor_critic.h"
#include "nn/convnet.h"
#include "nn/qnet.h"
#include "runtime/mlp_check.h"
#include "runtime/policy.h"

enum { E_ENV, E_OBS, E_FINAL_OBS, E_REWARD, E_LOGITS, E_CACHE, E_TERM, E_TRUNC, E_LIVE,
       E_ACTIONS, E_DONE, E_COUNT };

/* The greedy policy of a checkpoint: the PPO actor's logits or the DQN Q-values, argmax'ed. */
typedef struct eval_policy {
    const cr_param_tensor *t; /* the network's tensors in the file */
    int ntensors;
    size_t num_params;
    int obs_dim, num_actions, widest;
    const cr_env_info *env; /* the env batch's env it plays */
    cr_ac_layout ac;
    cr_qnet_layout q;
    int is_dqn;
} eval_policy;

static cr_mlp_view eval_view(const eval_policy *e, float *params) {
    return e->is_dqn ? cr_qnet_view(&e->q, params) : cr_ac_actor(&e->ac, params);
}

/* Host buffers for evaluating up to n envs at once. */
static void plan_eval(cr_plan *pl, const eval_policy *l, int n) {
    size_t N = (size_t)n, F = sizeof(float);
    cr_plan_init(pl);
    cr_plan_add(pl, "env", cr_env_batch_bytes(l->env, n));
    cr_plan_add(pl, "obs", N * (size_t)l->obs_dim * F);
    cr_plan_add(pl, "final_obs", N * (size_t)l->obs_dim * F);
    cr_plan_add(pl, "reward", N * F);
    cr_plan_add(pl, "logits", N * (size_t)l->num_actions * F);
    cr_plan_add(pl, "cache", cr_mlp_cache_floats(n, l->widest) * F);
    cr_plan_add(pl, "terminated", N);
    cr_plan_add(pl, "truncated", N);
    cr_plan_add(pl, "live", N);
    cr_plan_add(pl, "actions", N * sizeof(int32_t));
    cr_plan_add(pl, "done", N);
}

/* Plays one episode in each of n envs of the env batch (on ctx, the CPU) with the greedy
 * (argmax) policy; writes each return. */
static void eval_batch(cudarl_ctx *ctx, const eval_policy *l, float *params, const cr_arena *a,
                       int n, uint64_t seed, double *returns) {
    cr_env_batch env;
    float *obs = cr_arena_get(a, E_OBS), *final_obs = cr_arena_get(a, E_FINAL_OBS);
    float *reward = cr_arena_get(a, E_REWARD), *logits = cr_arena_get(a, E_LOGITS);
    uint8_t *term = cr_arena_get(a, E_TERM), *trunc = cr_arena_get(a, E_TRUNC);
    uint8_t *live = cr_arena_get(a, E_LIVE);
    int32_t *actions = cr_arena_get(a, E_ACTIONS);
    uint8_t *done = cr_arena_get(a, E_DONE);
    cr_mlp_cache cache = cr_mlp_cache_carve(cr_arena_get(a, E_CACHE), n, l->widest);
    cr_mlp_view actor = eval_view(l, params);
    cr_env_batch_init(&env, l->env, n, cr_arena_get(a, E_ENV));
    cr_env_batch_reset(ctx, &env, seed, obs);
    for (int i = 0; i < n; i++) returns[i] = 0, live[i] = 1;
    for (int remaining = n; remaining > 0;) {
        cr_mlp_forward(ctx, &actor, obs, logits, &cache, n);
        ctx->ops->categorical_argmax(ctx, logits, actions, n, l->num_actions);
        cr_env_batch_step(ctx, &env, actions, obs, reward, term, trunc, done, final_obs);
        for (int i = 0; i < n; i++) {
            if (!live[i]) continue;
            returns[i] += reward[i];
            if (term[i] || trunc[i]) live[i] = 0, remaining--;
        }
    }
}

/* The refusal of a checkpoint whose env `env` is not registered in this process. */
static cudarl_status env_not_registered(const char *path, const char *env) {
    CR_TRY(cr_env_check_built(env, "the checkpoint's env "));
    return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s' names env '%s', which is not registered "
                   "in this process (cudarl info lists those that are); evaluate it in the program "
                   "that registers '%s' (cudarl_env_register), or check that the file is a "
                   "checkpoint of cudarl train", path, env ? env : "(missing)",
                   env ? env : "its env");
}

/* The env a checkpoint names must be the one its network was trained on: the MLP's obs_dim and
 * actions, and uint8 input (obs_input) exactly for an env of uint8 observations. The policy
 * runtime reads a network from its file alone; this is where the env is known. */
static cudarl_status check_mlp_env(const char *path, const cudarl_env_def *def, int obs_dim,
                                   int num_actions, int action_dim, const char *obs_input) {
    if (def->action_dim != action_dim)
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s' is for env '%s' with %s, but the "
                       "registered '%s' has %s; load it in a process where '%s' is the env it "
                       "was trained on", path, def->id, action_dim ? "continuous actions" :
                       "discrete actions", def->id, def->action_dim ? "continuous actions" :
                       "discrete actions", def->id);
    if (action_dim) num_actions = 0; /* a Gaussian's outputs are its means, the def has none */
    if (cr_env_def_obs_elems(def) != (size_t)obs_dim || def->num_actions != num_actions ||
        (action_dim && action_dim != def->action_dim))
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s' is for env '%s' with obs_dim %d and "
                       "%d actions, but the registered '%s' has %zu and %d; load it in a process "
                       "where '%s' is the env it was trained on", path, def->id, obs_dim,
                       num_actions, def->id, cr_env_def_obs_elems(def), def->num_actions, def->id);
    if (obs_input && def->obs_dtype != CUDARL_OBS_U8)
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s' records uint8 observations (obs_input "
                       "'%s') but env '%s' gives float32 ones; the file was altered: use a "
                       "model.safetensors written by cudarl train", path, obs_input, def->id);
    if (!obs_input && def->obs_dtype == CUDARL_OBS_U8)
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s' holds an MLP over float32 features "
                       "but env '%s' gives uint8 observations (the file records no obs_input); "
                       "use a model.safetensors written by cudarl train for '%s'", path, def->id,
                       def->id);
    return CUDARL_OK;
}

/* A convolutional network against the env: its input's shape and dtype and its actions. */
static cudarl_status check_conv_env(const char *path, const cudarl_env_def *def,
                                    const cr_convnet_spec *s) {
    if (def->obs_rank != 3 || def->obs_shape[0] != s->in_c || def->obs_shape[1] != s->in_h ||
        def->obs_shape[2] != s->in_w || def->num_actions != s->num_actions ||
        (def->obs_dtype == CUDARL_OBS_U8) != (s->dtype == CR_CONVNET_U8))
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s' holds a network for %s observations "
                       "(%d, %d, %d) and %d actions, but the registered env '%s' gives %s "
                       "observations of rank %d (%d, %d, %d) and has %d actions; load it in a "
                       "process where '%s' is the env it was trained on", path,
                       s->dtype == CR_CONVNET_U8 ? "uint8" : "float32", s->in_c, s->in_h, s->in_w,
                       s->num_actions, def->id, def->obs_dtype == CUDARL_OBS_U8 ? "uint8"
                       : "float32", def->obs_rank, def->obs_shape[0], def->obs_shape[1],
                       def->obs_shape[2], def->num_actions, def->id);
    return CUDARL_OK;
}

cudarl_status cr_eval_policy_env(const char *path, const cudarl_policy *pol,
                                 const cudarl_env_def **def) {
    cudarl_policy_info info;
    cudarl_policy_get_info(pol, &info);
    *def = cr_env_def_find(info.env_id);
    const cr_policy_net *net = &pol->net;
    const char *u8_input = net->u8_scaled ? CR_POLICY_U8_SCALED : CR_POLICY_U8_CAST;
    if (!*def) return env_not_registered(path, info.env_id);
    if (net->is_conv) return check_conv_env(path, *def, &net->cnn.spec);
    return check_mlp_env(path, *def, net->obs_dim, net->num_actions, net->box.K,
                         net->obs_dtype == CUDARL_OBS_U8 ? u8_input : NULL);
}

/* Reads which network a checkpoint holds and its shape (from __metadata__). */
static cudarl_status eval_policy_load(const char *path, eval_policy *e) {
    memset(e, 0, sizeof *e);
    cr_st_file *f;
    CR_TRY(cr_st_open(&f, path));
    const char *algo = cr_st_meta(f, "algo");
    e->is_dqn = algo && !strcmp(algo, "dqn");
    cudarl_status s = cr_checkpoint_check_format(f, path, e->is_dqn ? "dqn" : "ppo");
    long long h1 = 0, h2 = 0;
    const char *env = cr_st_meta(f, "env_id");
    const cr_env_info *info = env ? cr_env_find(env) : NULL; /* the env batch's (eval_route) */
    if (s == CUDARL_OK && !info) s = env_not_registered(path, env);
    int obs_dim = 0, num_actions = 0;
    if (s == CUDARL_OK) s = cr_checkpoint_meta_int(f, path, "obs_dim", &obs_dim);
    if (s == CUDARL_OK) s = cr_checkpoint_meta_int(f, path, "num_actions", &num_actions);
    if (s == CUDARL_OK)
        s = check_mlp_env(path, info->def, obs_dim, num_actions, 0, cr_st_meta(f, "obs_input"));
    if (s == CUDARL_OK && e->is_dqn) {
        s = cr_checkpoint_meta_ll(f, path, "hidden1", &h1);
        if (s == CUDARL_OK) s = cr_checkpoint_meta_ll(f, path, "hidden2", &h2);
    }
    cr_st_close(f);
    CR_TRY(s);
    e->obs_dim = info->obs_dim, e->num_actions = info->num_actions, e->env = info;
    if (e->is_dqn) {
        cr_qnet_layout_init(&e->q, info->obs_dim, (int)h1, (int)h2, info->num_actions);
        e->t = e->q.t, e->ntensors = CR_QNET_NUM_TENSORS, e->num_params = e->q.num_params;
        e->widest = cr_qnet_widest(&e->q);
        return CUDARL_OK;
    }
    cudarl_ppo_config cfg;
    CR_TRY(cudarl_ppo_config_load(path, &cfg));
    cr_ac_layout_init(&e->ac, info->obs_dim, cfg.hidden, info->num_actions);
    e->t = e->ac.t, e->ntensors = CR_AC_NUM_TENSORS, e->num_params = e->ac.num_params;
    e->widest = cfg.hidden;
    return CUDARL_OK;
}

/* A convolutional checkpoint (any registered image env): the policy runtime's greedy actions on
 * `device` (fp32) for chunks of up to 64 envs of an env pool on one thread, seeded (seed, i),
 * each played to the end of its first episode; returns[i] its return. The MLP path below keeps
 * its own batch envs. */
static cudarl_status eval_runtime(const char *path, cudarl_device_kind device,
                                  cudarl_precision precision, int episodes, uint64_t seed,
                                  double *returns) {
    cudarl_policy_options opt;
    cudarl_policy_options_default(&opt);
    opt.device = device, opt.precision = precision;
    const int chunk = episodes < 64 ? episodes : 64;
    opt.max_batch = chunk;
    cudarl_policy *pol;
    CR_TRY(cudarl_policy_load(path, &opt, &pol));
    const cudarl_env_def *def = NULL;
    cudarl_status s = cr_eval_policy_env(path, pol, &def);
    const size_t ob = def ? cr_env_def_obs_bytes(def) : 0;
    uint8_t *obs = malloc((size_t)chunk * ob + 1), *fin = malloc((size_t)chunk * ob + 1);
    float *rew = malloc((size_t)chunk * sizeof(float));
    uint8_t *term = malloc((size_t)chunk), *trunc = malloc((size_t)chunk);
    uint8_t *live = malloc((size_t)chunk);
    void *act = malloc((size_t)chunk * cr_policy_action_bytes(pol));
    if (s == CUDARL_OK && !(obs && fin && rew && term && trunc && live && act))
        s = cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory for evaluation");
    for (int done = 0; s == CUDARL_OK && done < episodes; done += chunk) {
        const int n = episodes - done < chunk ? episodes - done : chunk;
        cr_env_pool pool;
        cr_env_pool_config pc = {.num_envs = n, .num_threads = 1, .num_groups = 1};
        s = cr_env_pool_init(&pool, def, &pc, NULL);
        if (s != CUDARL_OK) break;
        cr_env_pool_outputs out = {obs, rew, term, trunc, fin};
        cr_env_pool_set_outputs(&pool, &out);
        cr_env_pool_reset(&pool, seed + (uint64_t)done);
        for (int i = 0; i < n; i++) returns[done + i] = 0.0, live[i] = 1;
        for (int remaining = n; remaining > 0 && s == CUDARL_OK;) {
            s = cudarl_policy_act(pol, obs, def->obs_dtype, n, act, NULL, NULL);
            if (s != CUDARL_OK) break;
            cr_env_pool_step(&pool, act);
            for (int i = 0; i < n; i++) {
                if (!live[i]) continue;
                returns[done + i] += rew[i];
                if (term[i] || trunc[i]) live[i] = 0, remaining--;
            }
        }
        cr_env_pool_free(&pool);
    }
    free(obs), free(fin), free(rew), free(term), free(trunc), free(live), free(act);
    cudarl_policy_free(pol);
    return s;
}

/* *mean and *std (population) of returns[0..n). */
static void mean_std(const double *returns, int n, double *mean, double *std) {
    double m = 0, v = 0;
    for (int i = 0; i < n; i++) m += returns[i];
    m /= n;
    for (int i = 0; i < n; i++) v += (returns[i] - m) * (returns[i] - m);
    *mean = m, *std = sqrt(v / n);
}

/* Where the checkpoint at path is played: *conv, a conv policy (its layer list); *batch, an MLP
 * of an env the env batch steps (CR_ENV_BATCH), played by eval_batch; an MLP of any other
 * registered env (DQN's on MinAtar, a user's env) goes through the policy runtime with CPU
 * envs, as a conv policy does. A file that cannot be read fails with the reader's message
 * (which names it), not as "an MLP". */
static cudarl_status eval_route(const char *path, int *conv, int *batch) {
    cr_st_file *f;
    CR_TRY(cr_st_open(&f, path));
    const char *env = cr_st_meta(f, "env_id");
    *conv = cr_st_meta(f, CR_CONVNET_META_KEY) != NULL;
    /* a Gaussian policy, or one that normalizes its observations, plays on the runtime */
    const char *norm = cr_st_meta(f, "norm_obs");
    *batch = !*conv && !(env && !cr_env_find(env) && cr_env_def_find(env)) &&
             !cr_st_meta(f, "action_dim") && !(norm && strcmp(norm, "0"));
    cr_st_close(f);
    return CUDARL_OK;
}

/* Plays `episodes` through the policy runtime (eval_runtime); their mean and std. */
static cudarl_status eval_on_runtime(const char *path, cudarl_device_kind device,
                                     cudarl_precision precision, int episodes, uint64_t seed,
                                     double *mean, double *std) {
    double *returns = malloc((size_t)episodes * sizeof(double));
    if (!returns) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory for evaluation");
    cudarl_status s = eval_runtime(path, device, precision, episodes, seed, returns);
    if (s == CUDARL_OK) mean_std(returns, episodes, mean, std);
    free(returns);
    return s;
}

cudarl_status cudarl_policy_eval(cudarl_ctx *ctx, const char *path, int episodes, uint64_t seed,
                                 double *mean, double *std) {
    return cudarl_policy_eval_precision(ctx, path, episodes, seed, CUDARL_PRECISION_FP32, mean,
                                        std);
}

cudarl_status cudarl_policy_eval_precision(cudarl_ctx *ctx, const char *path, int episodes,
                                           uint64_t seed, cudarl_precision precision,
                                           double *mean, double *std) {
    if ((unsigned)precision >= CUDARL_PRECISION_COUNT)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "--precision %d is not a precision; choose one "
                       "of fp32, tf32, bf16, fp16", (int)precision);
    if (precision != CUDARL_PRECISION_FP32 && ctx->kind != CUDARL_DEVICE_CUDA)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "--precision %s evaluates on the GPU (the CPU "
                       "runs fp32 only); use --device cuda, or --precision fp32",
                       cudarl_precision_name(precision));
    if (episodes < 1 || episodes > CUDARL_EVAL_MAX_EPISODES)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "--episodes must be between 1 and %d, got %d",
                       CUDARL_EVAL_MAX_EPISODES, episodes);
    int conv = 0, batch = 0;
    CR_TRY(eval_route(path, &conv, &batch));
    if (conv) /* the policy runtime, on the context's device */
        return eval_on_runtime(path, ctx->kind, precision, episodes, seed, mean, std);
    if (ctx->kind != CUDARL_DEVICE_CPU)
        return cr_fail(CUDARL_ERR_UNSUPPORTED, "'%s' holds an MLP policy, which evaluates on the "
                       "CPU for now (conv policies evaluate on the GPU too); use --device cpu",
                       path);
    if (precision != CUDARL_PRECISION_FP32)
        return cr_fail(CUDARL_ERR_UNSUPPORTED, "'%s' holds an MLP policy, which evaluates in fp32 "
                       "only; use --precision fp32", path);
    if (!batch) /* an env the env batch does not step: the runtime's MLP, CPU envs */
        return eval_on_runtime(path, CUDARL_DEVICE_CPU, precision, episodes, seed, mean, std);
    eval_policy l;
    CR_TRY(eval_policy_load(path, &l));
    int chunk = episodes < 256 ? episodes : 256;
    cr_plan pl;
    plan_eval(&pl, &l, chunk);
    cr_plan_add(&pl, "params", l.num_params * sizeof(float));
    cr_plan_add(&pl, "returns", (size_t)episodes * sizeof(double));
    cr_arena a;
    CR_TRY(cr_arena_alloc(&a, &pl, CR_MEM_HOST));
    float *params = cr_arena_get(&a, E_COUNT);
    double *returns = cr_arena_get(&a, E_COUNT + 1);
    cr_st_file *f = NULL;
    cudarl_status s = cr_st_open(&f, path);
    for (int i = 0; i < l.ntensors && s == CUDARL_OK; i++)
        s = cr_st_read_f32(f, l.t[i].name, params + l.t[i].offset, l.t[i].count);
    for (int done = 0; s == CUDARL_OK && done < episodes; done += chunk) {
        int n = episodes - done < chunk ? episodes - done : chunk;
        eval_batch(ctx, &l, params, &a, n, seed + (uint64_t)done, returns + done);
    }
    if (s == CUDARL_OK) mean_std(returns, episodes, mean, std);
    cr_st_close(f);
    cr_arena_free(&a);
    return s;
}
