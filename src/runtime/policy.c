/* The policy runtime (cudarl_policy_* in cudarl.h): loading a checkpoint into a plan of buffers,
 * the checks of every argument, the forward on the CPU, dispatch to the CUDA side
 * (policy_cuda.cu), and the latency ring. runtime/policy.h has the memory layout. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "env/env.h"
#include "ops/cpu/ops_conv.h"
#include "runtime/checkpoint.h"
#include "runtime/policy.h"

#define MAX_DEADLINE_US 1e9 /* 1000 s: longer is a mistake in units */

/* ---- the network in a checkpoint --------------------------------------------------------- */

/* A positive integer of the checkpoint's metadata (cr_checkpoint_check_format has checked the
 * ones the tensors depend on). */
static cudarl_status meta_int(const cr_st_file *f, const char *path, const char *key, int *out) {
    const char *v = cr_st_meta(f, key);
    char *end = NULL;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || *end || end == v || x < 1 || x > 1 << 20)
        return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s': metadata '%s' is %.32s, expected a "
                       "positive integer; the file is damaged", path, key, v ? v : "missing");
    *out = (int)x;
    return CUDARL_OK;
}

/* Which network the file holds: algo ppo with policy "mlp" or algo dqn with policy "qnet". Other
 * policies (the CNNs) are refused here until the runtime runs them. */
static cudarl_status net_kind(const cr_st_file *f, const char *path, int *is_dqn) {
    const char *fmt = cr_st_meta(f, "format"), *algo = cr_st_meta(f, "algo");
    const char *pol = cr_st_meta(f, "policy");
    *is_dqn = algo && !strcmp(algo, "dqn");
    int is_ppo = algo && !strcmp(algo, "ppo");
    if (fmt && !strcmp(fmt, CR_CHECKPOINT_FORMAT) && !*is_dqn && !is_ppo)
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s' holds a network of algo '%.32s', "
                       "which the policy runtime does not know; load a checkpoint of cudarl train "
                       "--algo ppo or --algo dqn", path, algo ? algo : "(missing)");
    CR_TRY(cr_checkpoint_check_format(f, path, *is_dqn ? "dqn" : "ppo"));
    const char *want = *is_dqn ? "qnet" : "mlp";
    if (pol && strcmp(pol, want))
        return cr_fail(CUDARL_ERR_UNSUPPORTED, "checkpoint '%s' holds a '%.32s' policy; the policy "
                       "runtime runs the MLP policies for now (ppo 'mlp', dqn 'qnet'): export it "
                       "to ONNX (cudarl export) to deploy it meanwhile", path, pol);
    return CUDARL_OK;
}

/* What act() takes, from the checkpoint's obs_input and its env: uint8 cast value for value
 * where obs_input says so (DQN on MinAtar); else the env's dtype, uint8 meaning pixels scaled by
 * 1/255. An env not registered in this process (a user's, where the policy is only deployed) is
 * taken as float32 features of the file's obs_dim: what the other MLP checkpoints hold. */
static cudarl_status obs_kind(const cr_st_file *f, const char *path, const cudarl_env_def *def,
                              cr_policy_net *net) {
    const char *in = cr_st_meta(f, "obs_input");
    if (in && strcmp(in, CR_POLICY_U8_CAST))
        return cr_fail(CUDARL_ERR_UNSUPPORTED, "checkpoint '%s' records obs_input '%.64s', which "
                       "this cudarl does not know (it knows '%s'); load it with the cudarl "
                       "version that wrote it", path, in, CR_POLICY_U8_CAST);
    if (in && def && def->obs_dtype != CUDARL_OBS_U8)
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s' records uint8 observations (obs_input "
                       "'%s') but env '%s' gives float32 ones; the file was altered: use a "
                       "model.safetensors written by cudarl train", path, in, def->id);
    int u8 = in || (def && def->obs_dtype == CUDARL_OBS_U8);
    net->obs_dtype = u8 ? CUDARL_OBS_U8 : CUDARL_OBS_F32;
    net->u8_scaled = net->obs_dtype == CUDARL_OBS_U8 && !in;
    if (!def)
        CR_DEBUG("policy: env '%s' of '%s' is not registered here: taking %s observations of %d "
                 "elements", net->env_id, path, in ? "uint8" : "float32", net->obs_dim);
    return CUDARL_OK;
}

/* The network and its observations; an env registered here must agree with the file's shape. */
static cudarl_status net_read(const cr_st_file *f, const char *path, cr_policy_net *net) {
    memset(net, 0, sizeof *net);
    CR_TRY(net_kind(f, path, &net->is_dqn));
    int h1 = 0, h2 = 0;
    CR_TRY(meta_int(f, path, "obs_dim", &net->obs_dim));
    CR_TRY(meta_int(f, path, "num_actions", &net->num_actions));
    CR_TRY(meta_int(f, path, net->is_dqn ? "hidden1" : "hidden", &h1));
    h2 = h1;
    if (net->is_dqn) CR_TRY(meta_int(f, path, "hidden2", &h2));
    const char *env = cr_st_meta(f, "env_id");
    snprintf(net->env_id, sizeof net->env_id, "%s", env ? env : "(unnamed)");
    const cudarl_env_def *def = env ? cr_env_def_find(env) : NULL;
    if (def && (cr_env_def_obs_elems(def) != (size_t)net->obs_dim ||
                def->num_actions != net->num_actions))
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s' is for env '%s' with obs_dim %d and "
                       "%d actions, but the registered '%s' has %zu and %d; load it in a process "
                       "where '%s' is the env it was trained on", path, env, net->obs_dim,
                       net->num_actions, env, cr_env_def_obs_elems(def), def->num_actions, env);
    CR_TRY(obs_kind(f, path, def, net));
    if (net->is_dqn) {
        cr_qnet_layout_init(&net->q, net->obs_dim, h1, h2, net->num_actions);
        net->t = net->q.t, net->ntensors = CR_QNET_NUM_TENSORS;
        net->num_params = net->q.num_params, net->widest = cr_qnet_widest(&net->q);
    } else {
        cr_ac_layout_init(&net->ac, net->obs_dim, h1, net->num_actions);
        net->t = net->ac.t, net->ntensors = CR_AC_NUM_TENSORS;
        net->num_params = net->ac.num_params, net->widest = h1;
    }
    return CUDARL_OK;
}

/* ---- options and the context ------------------------------------------------------------- */

void cudarl_policy_options_default(cudarl_policy_options *opt) {
    memset(opt, 0, sizeof *opt);
    opt->device = CUDARL_DEVICE_AUTO;
    opt->device_index = 0;
    opt->precision = CUDARL_PRECISION_FP32;
    opt->max_batch = 1;
    opt->deadline_us = 0;
}

static const char *precision_text(cudarl_precision p) {
    switch (p) {
    case CUDARL_PRECISION_FP32: return "CUDARL_PRECISION_FP32";
    case CUDARL_PRECISION_TF32: return "CUDARL_PRECISION_TF32";
    case CUDARL_PRECISION_BF16: return "CUDARL_PRECISION_BF16";
    case CUDARL_PRECISION_FP16: return "CUDARL_PRECISION_FP16";
    }
    return "?";
}

static cudarl_status options_check(const cudarl_policy_options *o) {
    if (o->device != CUDARL_DEVICE_AUTO && o->device != CUDARL_DEVICE_CPU &&
        o->device != CUDARL_DEVICE_CUDA)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "cudarl_policy_load: device %d is not "
                       "CUDARL_DEVICE_AUTO, _CPU or _CUDA", (int)o->device);
    if (o->device_index < 0)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "cudarl_policy_load: device_index is %d; GPUs are "
                       "numbered from 0", o->device_index);
    if ((int)o->precision < (int)CUDARL_PRECISION_FP32 ||
        (int)o->precision > (int)CUDARL_PRECISION_FP16)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "cudarl_policy_load: precision %d is not one of "
                       "CUDARL_PRECISION_FP32, _TF32, _BF16, _FP16", (int)o->precision);
    if (o->precision != CUDARL_PRECISION_FP32)
        return cr_fail(CUDARL_ERR_UNSUPPORTED, "cudarl_policy_load: precision %s is not "
                       "implemented in the policy runtime yet: only CUDARL_PRECISION_FP32 runs; "
                       "load the policy with precision FP32", precision_text(o->precision));
    if (o->max_batch < 1 || o->max_batch > CUDARL_POLICY_MAX_BATCH)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "cudarl_policy_load: max_batch is %d; give the "
                       "most observations one act() will take, 1 to %d", o->max_batch,
                       CUDARL_POLICY_MAX_BATCH);
    if (!(o->deadline_us >= 0 && o->deadline_us <= MAX_DEADLINE_US))
        return cr_fail(CUDARL_ERR_INVALID_ARG, "cudarl_policy_load: deadline_us is %g; give the "
                       "deadline of one act() in microseconds (0 < d <= %g), or 0 for none",
                       o->deadline_us, MAX_DEADLINE_US);
    return CUDARL_OK;
}

/* Why the context's backend cannot run `net`, or NULL. */
static const char *backend_lacks(const cudarl_ctx *ctx, const cr_policy_net *net) {
    if (net->is_dqn && !ctx->ops->linear_relu_forward)
        return "the CUDA backend has no ReLU layer yet (linear_relu_forward), which the DQN "
               "Q-network needs";
#ifdef CUDARL_WITH_CUDA
    if (ctx->kind == CUDARL_DEVICE_CUDA) return cr_policy_cuda_lacks(net);
#endif
    return NULL;
}

/* Opens the context the options ask for; AUTO falls back to the CPU where the GPU's backend
 * cannot run the network. */
static cudarl_status ctx_open(const cudarl_policy_options *o, const cr_policy_net *net,
                              const char *path, cudarl_ctx **out) {
    CR_TRY(cudarl_ctx_init(out, o->device, o->device_index));
    const char *why = backend_lacks(*out, net);
    if (!why) return CUDARL_OK;
    cudarl_ctx_free(*out);
    *out = NULL;
    if (o->device != CUDARL_DEVICE_AUTO)
        return cr_fail(CUDARL_ERR_UNSUPPORTED, "cannot run the %s policy of '%s' on cuda:%d: %s; "
                       "load it with device CUDARL_DEVICE_CPU (or AUTO)",
                       net->is_dqn ? "DQN" : "PPO", path, o->device_index, why);
    CR_INFO("policy: running '%s' on the CPU: %s", path, why);
    return cudarl_ctx_init(out, CUDARL_DEVICE_CPU, 0);
}

/* ---- the plan ---------------------------------------------------------------------------- */

enum { H_SELF, H_RING, H_PARAMS, H_COUNT };
enum { B_PARAMS, B_OBS_U8, B_OBS, B_CACHE, B_OUT, B_COUNT };

size_t cr_policy_out_bytes(const cudarl_policy *p, int rows) {
    return (size_t)rows * (sizeof(int32_t) + sizeof(float) +
                           (size_t)p->net.num_actions * sizeof(float));
}

void cr_policy_out_layout(const cudarl_policy *p, void *base, int rows, int32_t **actions,
                          float **values, float **logits) {
    unsigned char *b = base;
    *actions = (int32_t *)b;
    *values = (float *)(b + (size_t)rows * sizeof(int32_t));
    *logits = (float *)(b + (size_t)rows * (sizeof(int32_t) + sizeof(float)));
}

/* Adds the backend buffers for `rows` rows to `pl`; idx[B_*] receives their items (B_PARAMS is
 * -1 where the weights are read in place: on the CPU). */
static void plan_backend(cr_plan *pl, const cudarl_policy *p, int with_params, int idx[B_COUNT]) {
    const cr_policy_net *n = &p->net;
    size_t elems = (size_t)p->rows * (size_t)n->obs_dim;
    idx[B_PARAMS] = with_params ? cr_plan_add(pl, "params", n->num_params * sizeof(float)) : -1;
    idx[B_OBS_U8] = cr_plan_add(pl, "obs_u8", n->obs_dtype == CUDARL_OBS_U8 ? elems : 0);
    idx[B_OBS] = cr_plan_add(pl, "obs", elems * sizeof(float));
    idx[B_CACHE] = cr_plan_add(pl, "cache",
                               cr_mlp_cache_floats(p->rows, n->widest) * sizeof(float));
    idx[B_OUT] = cr_plan_add(pl, "out", cr_policy_out_bytes(p, p->rows));
}

static void point_backend(cudarl_policy *p, const cr_arena *a, const int idx[B_COUNT]) {
    p->params = idx[B_PARAMS] >= 0 ? cr_arena_get(a, idx[B_PARAMS]) : p->params_host;
    p->obs_u8 = p->net.obs_dtype == CUDARL_OBS_U8 ? cr_arena_get(a, idx[B_OBS_U8]) : NULL;
    p->obs = cr_arena_get(a, idx[B_OBS]);
    p->cache = cr_mlp_cache_carve(cr_arena_get(a, idx[B_CACHE]), p->rows, p->net.widest);
    p->out = cr_arena_get(a, idx[B_OUT]);
}

static int pow2_at_least(int n) {
    int b = 1;
    while (b < n) b <<= 1;
    return b;
}

/* The handle in one host arena (with the backend buffers too on the CPU). */
static cudarl_status policy_alloc(cudarl_ctx *ctx, const cr_policy_net *net,
                                  const cudarl_policy_options *o, cudarl_policy **out) {
    cudarl_policy tmp; /* what plan_backend needs to know before the handle exists */
    memset(&tmp, 0, sizeof tmp);
    tmp.net = *net;
    tmp.rows = ctx->kind == CUDARL_DEVICE_CUDA ? pow2_at_least(o->max_batch) : o->max_batch;
    int on_cpu = ctx->kind == CUDARL_DEVICE_CPU, idx[B_COUNT];
    cr_plan pl;
    cr_plan_init(&pl);
    cr_plan_add(&pl, "policy", sizeof(cudarl_policy));
    cr_plan_add(&pl, "latency ring", (size_t)CUDARL_LATENCY_WINDOW * sizeof(uint32_t));
    cr_plan_add(&pl, "params (host)", net->num_params * sizeof(float));
    if (on_cpu) plan_backend(&pl, &tmp, 0, idx);
    cr_arena a;
    CR_TRY(cr_arena_alloc(&a, &pl, CR_MEM_HOST));
    cudarl_policy *p = cr_arena_get(&a, H_SELF);
    *p = tmp;
    p->net.t = p->net.is_dqn ? p->net.q.t : p->net.ac.t; /* into the handle's own copy */
    p->host = a;
    p->ctx = ctx;
    p->opt = *o;
    p->ring_ns = cr_arena_get(&a, H_RING);
    p->params_host = cr_arena_get(&a, H_PARAMS);
    p->obs_row_bytes = (size_t)net->obs_dim * (net->obs_dtype == CUDARL_OBS_U8 ? 1 : sizeof(float));
    p->deadline_ns = (uint64_t)llround(o->deadline_us * 1e3);
    if (on_cpu) point_backend(p, &a, idx);
    *out = p;
    return CUDARL_OK;
}

static cudarl_status params_read(const cr_st_file *f, cudarl_policy *p) {
    const cr_policy_net *n = &p->net;
    for (int i = 0; i < n->ntensors; i++)
        CR_TRY(cr_st_read_f32(f, n->t[i].name, p->params_host + n->t[i].offset, n->t[i].count));
    return CUDARL_OK;
}

/* Device buffers, weights uploaded, staging and graphs (CUDA); on the CPU, one forward over
 * max_batch rows of zeros so that the first act() finds OpenMP's threads started. */
static cudarl_status backend_setup(cudarl_policy *p) {
    cudarl_ctx *ctx = p->ctx;
    if (ctx->kind == CUDARL_DEVICE_CPU) {
        cr_policy_forward(p, p->obs, p->opt.max_batch, 1);
        return CUDARL_OK;
    }
#ifdef CUDARL_WITH_CUDA
    cr_plan pl;
    int idx[B_COUNT];
    cr_plan_init(&pl);
    plan_backend(&pl, p, 1, idx);
    CR_TRY(ctx->ops->arena_alloc(ctx, &p->dev, &pl));
    point_backend(p, &p->dev, idx);
    ctx->ops->copy_from_host(ctx, p->params, p->params_host, p->net.num_params * sizeof(float));
    ctx->ops->sync(ctx);
    return cr_policy_cuda_init(p);
#else
    return cr_fail(CUDARL_ERR_UNSUPPORTED, "this cudarl was built without CUDA");
#endif
}

/* ---- load and free ----------------------------------------------------------------------- */

void cudarl_policy_free(cudarl_policy *p) {
    if (!p) return;
    cudarl_ctx *ctx = p->ctx;
#ifdef CUDARL_WITH_CUDA
    if (ctx && ctx->kind == CUDARL_DEVICE_CUDA) cr_policy_cuda_free(p);
#endif
    if (p->dev.base) ctx->ops->arena_free(ctx, &p->dev);
    cudarl_ctx_free(ctx);
    cr_arena host = p->host; /* the handle lives in it */
    cr_arena_free(&host);
}

cudarl_status cudarl_policy_load(const char *path, const cudarl_policy_options *opt,
                                 cudarl_policy **out) {
    if (!out)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "cudarl_policy_load: out is NULL; pass the address "
                       "of a cudarl_policy pointer");
    *out = NULL;
    if (!path)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "cudarl_policy_load: checkpoint is NULL; pass the "
                       "path of a model.safetensors written by cudarl train");
    cudarl_policy_options o;
    if (opt) o = *opt;
    else cudarl_policy_options_default(&o);
    CR_TRY(options_check(&o));
    cr_policy_net net;
    cr_st_file *f;
    CR_TRY(cr_st_open(&f, path));
    cudarl_status s = net_read(f, path, &net);
    cudarl_ctx *ctx = NULL;
    cudarl_policy *p = NULL;
    if (s == CUDARL_OK) s = ctx_open(&o, &net, path, &ctx);
    if (s == CUDARL_OK) s = policy_alloc(ctx, &net, &o, &p);
    if (s == CUDARL_OK) s = params_read(f, p);
    cr_st_close(f);
    if (s == CUDARL_OK) {
        p->check_device_ptrs = 0;
#ifdef CUDARL_WITH_CUDA
        p->check_device_ptrs = ctx->kind == CUDARL_DEVICE_CPU && cr_policy_cuda_devices() > 0;
#endif
        s = backend_setup(p);
    }
    if (s != CUDARL_OK) {
        if (p) cudarl_policy_free(p);
        else cudarl_ctx_free(ctx);
        return s;
    }
    CR_DEBUG("policy: '%s' (%s, env %s) on %s, max_batch %d", path, net.is_dqn ? "dqn" : "ppo",
             net.env_id, ctx->ops->name, o.max_batch);
    *out = p;
    return CUDARL_OK;
}

void cudarl_policy_get_info(const cudarl_policy *p, cudarl_policy_info *info) {
    memset(info, 0, sizeof *info);
    if (!p) return;
    snprintf(info->algo, sizeof info->algo, "%s", p->net.is_dqn ? "dqn" : "ppo");
    snprintf(info->env_id, sizeof info->env_id, "%s", p->net.env_id);
    info->obs_dtype = p->net.obs_dtype;
    info->obs_dim = p->net.obs_dim, info->num_actions = p->net.num_actions;
    info->has_values = !p->net.is_dqn;
    info->device = p->ctx->kind, info->device_index = p->ctx->device_index;
    info->max_batch = p->opt.max_batch;
    info->graph_batches = p->cuda.graph_batches;
    info->host_bytes = p->host.plan.total;
    info->device_bytes = p->dev.base ? p->dev.plan.total : 0;
    info->pinned_bytes = p->cuda.pinned_bytes;
}

/* ---- act --------------------------------------------------------------------------------- */

void cr_policy_forward(cudarl_policy *p, const float *x, int rows, int with_values) {
    cudarl_ctx *ctx = p->ctx;
    const cr_policy_net *n = &p->net;
    int32_t *actions;
    float *values, *logits;
    cr_policy_out_layout(p, p->out, rows, &actions, &values, &logits);
    cr_mlp_view m = n->is_dqn ? cr_qnet_view(&n->q, p->params) : cr_ac_actor(&n->ac, p->params);
    cr_mlp_forward(ctx, &m, x, logits, &p->cache, rows);
    ctx->ops->categorical_argmax(ctx, logits, actions, rows, n->num_actions);
    if (!n->is_dqn && with_values) {
        cr_mlp_view c = cr_ac_critic(&n->ac, p->params);
        cr_mlp_forward(ctx, &c, x, values, &p->cache, rows);
    }
}

cudarl_status cr_policy_check_finite(const cudarl_policy *p, const float *obs, int n) {
    size_t D = (size_t)p->net.obs_dim, total = (size_t)n * D;
    for (size_t i = 0; i < total; i++)
        if (!isfinite(obs[i]))
            return cr_fail(CUDARL_ERR_NUMERIC, "cudarl_policy_act: observation %zu, element %zu is "
                           "%g; the policy needs finite observations: check the sensor or env that "
                           "produced it", i / D, i % D, (double)obs[i]);
    return CUDARL_OK;
}

static const char *dtype_text(cudarl_obs_dtype d) {
    return d == CUDARL_OBS_U8 ? "uint8 (CUDARL_OBS_U8)" : "float32 (CUDARL_OBS_F32)";
}

/* Every argument of act() that does not depend on where its memory lives (CUDA checks that). */
static cudarl_status act_check(const cudarl_policy *p, const void *obs, cudarl_obs_dtype dtype,
                               int n, const int32_t *actions, const float *values,
                               const float *logits) {
    if (!p)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "cudarl_policy_act: policy is NULL; load one with "
                       "cudarl_policy_load");
    const cr_policy_net *net = &p->net;
    if (n < 1 || n > p->opt.max_batch)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "cudarl_policy_act: n is %d; this policy takes 1 "
                       "to %d observations per call (its max_batch: load it with a larger "
                       "cudarl_policy_options.max_batch for more)", n, p->opt.max_batch);
    if (!obs)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "cudarl_policy_act: obs is NULL; pass n "
                       "observations of %d elements each", net->obs_dim);
    if (!actions)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "cudarl_policy_act: actions is NULL; pass room "
                       "for n int32 actions");
    if (dtype != CUDARL_OBS_F32 && dtype != CUDARL_OBS_U8)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "cudarl_policy_act: dtype %d is not CUDARL_OBS_F32 "
                       "or CUDARL_OBS_U8", (int)dtype);
    if (dtype != net->obs_dtype && net->obs_dtype == CUDARL_OBS_F32)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "cudarl_policy_act: %s observations for the policy "
                       "of env '%s', whose observations are float32 features; pass float32 "
                       "(CUDARL_OBS_F32). uint8 is taken only for policies trained on uint8 "
                       "observations (pixels, MinAtar)", dtype_text(dtype), net->env_id);
    if (dtype != net->obs_dtype)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "cudarl_policy_act: %s observations for the policy "
                       "of env '%s', whose observations are uint8; pass them as the env gives "
                       "them (CUDARL_OBS_U8): they are %s inside, as in training",
                       dtype_text(dtype), net->env_id,
                       net->u8_scaled ? "scaled by 1/255" : "cast to float value for value");
    if (values && net->is_dqn)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "cudarl_policy_act: values must be NULL for a DQN "
                       "policy: a Q-network has no value head (logits receive the Q-values, whose "
                       "max is the greedy state value)");
#ifdef CUDARL_WITH_CUDA
    if (p->check_device_ptrs) {
        const void *ptr[4] = {obs, actions, values, logits};
        static const char *const name[4] = {"obs", "actions", "values", "logits"};
        for (int i = 0; i < 4; i++) {
            int dev = ptr[i] ? cr_policy_pointer_device(ptr[i]) : -1;
            if (dev >= 0)
                return cr_fail(CUDARL_ERR_INVALID_ARG, "cudarl_policy_act: %s is device memory "
                               "(cuda:%d) but this policy runs on the CPU; pass host memory, or "
                               "load the policy with device CUDARL_DEVICE_CUDA", name[i], dev);
        }
    }
#endif
    return CUDARL_OK;
}

static cudarl_status cpu_act(cudarl_policy *p, const void *obs, int n, int32_t *actions,
                             float *values, float *logits) {
    const float *x = obs;
    if (p->net.obs_dtype == CUDARL_OBS_U8) {
        const uint8_t *u = obs;
        size_t count = (size_t)n * (size_t)p->net.obs_dim;
        if (p->net.u8_scaled) cr_cpu_scale_u8(u, p->obs, count);
        else
            for (size_t i = 0; i < count; i++) p->obs[i] = (float)u[i];
        x = p->obs;
    } else {
        CR_TRY(cr_policy_check_finite(p, x, n));
    }
    cr_policy_forward(p, x, n, values != NULL);
    int32_t *a;
    float *v, *l;
    cr_policy_out_layout(p, p->out, n, &a, &v, &l);
    memcpy(actions, a, (size_t)n * sizeof *a);
    if (values) memcpy(values, v, (size_t)n * sizeof *v);
    if (logits) memcpy(logits, l, (size_t)n * (size_t)p->net.num_actions * sizeof *l);
    return CUDARL_OK;
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

cudarl_status cudarl_policy_act(cudarl_policy *p, const void *obs, cudarl_obs_dtype dtype, int n,
                                int32_t *actions, float *values, float *logits) {
    uint64_t t0 = now_ns();
    CR_TRY(act_check(p, obs, dtype, n, actions, values, logits));
#ifdef CUDARL_WITH_CUDA
    if (p->ctx->kind == CUDARL_DEVICE_CUDA)
        CR_TRY(cr_policy_cuda_act(p, obs, n, actions, values, logits));
    else
#endif
        CR_TRY(cpu_act(p, obs, n, actions, values, logits));
    uint64_t ns = now_ns() - t0;
    p->ring_ns[(uint64_t)p->count & (CUDARL_LATENCY_WINDOW - 1)] =
        ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
    p->count++;
    if (p->deadline_ns && ns > p->deadline_ns) p->misses++;
    return CUDARL_OK;
}

/* ---- latency ----------------------------------------------------------------------------- */

_Static_assert((CUDARL_LATENCY_WINDOW & (CUDARL_LATENCY_WINDOW - 1)) == 0,
               "the latency ring is indexed by count mod a power of two");

/* Byte by byte from the top: count the values that share the prefix chosen so far by their next
 * byte, and descend into the byte where rank k falls. Four passes over v. */
uint32_t cr_select_kth_u32(const uint32_t *v, int64_t n, int64_t k) {
    CUDARL_ASSERT(n > 0 && k >= 0 && k < n);
    uint32_t prefix = 0, mask = 0;
    for (int shift = 24; shift >= 0; shift -= 8) {
        int64_t hist[256] = {0};
        for (int64_t i = 0; i < n; i++)
            if ((v[i] & mask) == prefix) hist[(v[i] >> shift) & 255u]++;
        unsigned b = 0;
        while (k >= hist[b]) k -= hist[b++];
        prefix |= (uint32_t)b << shift;
        mask |= 255u << shift;
    }
    return prefix;
}

cudarl_status cudarl_policy_latency(const cudarl_policy *p, cudarl_latency_stats *st) {
    if (!p || !st)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "cudarl_policy_latency: %s is NULL; pass a loaded "
                       "policy and a cudarl_latency_stats to fill", p ? "stats" : "policy");
    memset(st, 0, sizeof *st);
    st->count = p->count;
    st->deadline_us = p->opt.deadline_us;
    st->deadline_misses = p->misses;
    int64_t w = p->count < CUDARL_LATENCY_WINDOW ? p->count : CUDARL_LATENCY_WINDOW;
    st->window = w;
    if (w == 0) return CUDARL_OK;
    uint32_t mx = 0;
    for (int64_t i = 0; i < w; i++) mx = p->ring_ns[i] > mx ? p->ring_ns[i] : mx;
    /* nearest rank: the ceil(q w)-th smallest */
    st->p50_us = 1e-3 * cr_select_kth_u32(p->ring_ns, w, (w + 1) / 2 - 1);
    st->p99_us = 1e-3 * cr_select_kth_u32(p->ring_ns, w, (99 * w + 99) / 100 - 1);
    st->max_us = 1e-3 * mx;
    return CUDARL_OK;
}
