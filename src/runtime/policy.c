/* The policy runtime (cudarl_policy_* in cudarl.h): loading a checkpoint into a plan of buffers,
 * the checks of every argument, the forward on the CPU, dispatch to the CUDA side
 * (policy_cuda.cu), and the latency record (runtime/latency.h). runtime/policy.h has the
 * networks and the memory layout. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/abi.h"
#ifdef CUDARL_WITH_CUDA
#include "ops/cuda/cuda_backend.h"
#endif
#include "ops/cpu/ops_conv.h"
#include "runtime/mlp_check.h"
#include "runtime/policy.h"

#define MAX_DEADLINE_US 1e9 /* 1000 s: longer is a mistake in units */

/* ---- the network in a checkpoint --------------------------------------------------------- */

/* Which network the file holds: algo ppo or dqn, and a convolutional network where the file
 * carries its spec (metadata "network"), else the algo's MLP (policy "mlp" or "qnet"), whose
 * tensors cr_checkpoint_check_format checks against the metadata. */
static cudarl_status net_kind(const cr_st_file *f, const char *path, cr_policy_net *net) {
    const char *fmt = cr_st_meta(f, "format"), *algo = cr_st_meta(f, "algo");
    const char *pol = cr_st_meta(f, "policy");
    net->is_dqn = algo && !strcmp(algo, "dqn");
    int is_ppo = algo && !strcmp(algo, "ppo");
    if (fmt && !strcmp(fmt, CR_CHECKPOINT_FORMAT) && !net->is_dqn && !is_ppo)
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s' holds a network of algo '%.32s', "
                       "which the policy runtime does not know; load a checkpoint of cudarl train "
                       "--algo ppo or --algo dqn", path, algo ? algo : "(missing)");
    const char *kind = net->is_dqn ? "dqn" : "ppo";
    CR_TRY(cr_checkpoint_check_header(f, path, kind));
    net->is_conv = cr_st_meta(f, CR_CONVNET_META_KEY) != NULL;
    if (net->is_conv) return CUDARL_OK;
    const char *want = net->is_dqn ? "qnet" : "mlp";
    if (pol && strcmp(pol, want))
        return cr_fail(CUDARL_ERR_UNSUPPORTED, "checkpoint '%s' holds a '%.32s' policy without a "
                       "network spec (metadata \"%s\"); the policy runtime runs MLP policies "
                       "(ppo 'mlp', dqn 'qnet') and convolutional networks whose checkpoint "
                       "carries its spec: load a model.safetensors written by this cudarl's train",
                       path, pol, CR_CONVNET_META_KEY);
    snprintf(net->name, sizeof net->name, "%s", want);
    return cr_checkpoint_check_format(f, path, kind);
}

/* What act() takes, from the checkpoint alone: uint8 where obs_input says so (cast value for
 * value, DQN's MLP on MinAtar, or scaled by 1/255), else float32 features of the file's obs_dim,
 * as the other MLP checkpoints hold. Whether that suits an env is for the code that knows the env
 * to check (algo/eval.c). */
static cudarl_status obs_kind(const cr_st_file *f, const char *path, cr_policy_net *net) {
    const char *in = cr_st_meta(f, "obs_input");
    const int cast = in && !strcmp(in, CR_POLICY_U8_CAST);
    const int scaled = in && !strcmp(in, CR_POLICY_U8_SCALED);
    if (in && !cast && !scaled)
        return cr_fail(CUDARL_ERR_UNSUPPORTED, "checkpoint '%s' records obs_input '%.64s', which "
                       "this cudarl does not know (it knows '%s' and '%s'); load it with the "
                       "cudarl version that wrote it", path, in, CR_POLICY_U8_CAST,
                       CR_POLICY_U8_SCALED);
    net->obs_dtype = in ? CUDARL_OBS_U8 : CUDARL_OBS_F32;
    net->u8_scaled = scaled;
    return CUDARL_OK;
}

/* One comma-separated list of k floats of metadata `key` into v. */
static cudarl_status floats_read(const cr_st_file *f, const char *path, const char *key, int k,
                                 float *v) {
    const char *s = cr_st_meta(f, key);
    if (!s)
        return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s' has action_dim but no \"%s\"; the "
                       "file is damaged: use a model.safetensors written by cudarl train", path,
                       key);
    for (int i = 0; i < k; i++) {
        char *end;
        double x = strtod(s, &end);
        if (end == s || !isfinite(x) || (i < k - 1 ? *end != ',' : *end != 0))
            return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s': metadata \"%s\" is not %d "
                           "comma-separated numbers; the file is damaged", path, key, k);
        v[i] = (float)x;
        s = end + (*end == ',');
    }
    return CUDARL_OK;
}

/* A Gaussian policy's box (metadata action_dim, action_low, action_high); K 0 without. */
static cudarl_status box_read(const cr_st_file *f, const char *path, cr_policy_net *net) {
    if (!cr_st_meta(f, "action_dim")) return CUDARL_OK;
    int k = 0;
    CR_TRY(cr_checkpoint_meta_int(f, path, "action_dim", &k));
    if (k < 1 || k > CR_GAUSSIAN_MAX_K || k != net->num_actions)
        return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s': action_dim %d with num_actions %d; a "
                       "Gaussian policy's are equal, 1 .. %d: the file is damaged", path, k,
                       net->num_actions, CR_GAUSSIAN_MAX_K);
    net->box.K = k;
    CR_TRY(floats_read(f, path, "action_low", k, net->box.lo));
    CR_TRY(floats_read(f, path, "action_high", k, net->box.hi));
    for (int i = 0; i < k; i++)
        if (!(net->box.lo[i] < net->box.hi[i]))
            return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s': action box [%g, %g] of dim %d is "
                           "empty; the file is damaged", path, net->box.lo[i], net->box.hi[i], i);
    return CUDARL_OK;
}

/* The MLP and its observations. */
static cudarl_status mlp_read(const cr_st_file *f, const char *path, cr_policy_net *net) {
    int h1 = 0, h2 = 0;
    CR_TRY(cr_checkpoint_meta_int(f, path, "obs_dim", &net->obs_dim));
    CR_TRY(cr_checkpoint_meta_int(f, path, "num_actions", &net->num_actions));
    CR_TRY(cr_checkpoint_meta_int(f, path, net->is_dqn ? "hidden1" : "hidden", &h1));
    h2 = h1;
    if (net->is_dqn) CR_TRY(cr_checkpoint_meta_int(f, path, "hidden2", &h2));
    CR_TRY(obs_kind(f, path, net));
    if (net->is_dqn) {
        cr_qnet_layout_init(&net->q, net->obs_dim, h1, h2, net->num_actions);
        net->t = net->q.t, net->ntensors = CR_QNET_NUM_TENSORS;
        net->num_params = net->q.num_params, net->widest = cr_qnet_widest(&net->q);
    } else {
        CR_TRY(box_read(f, path, net));
        if (net->box.K > 0) cr_ac_layout_init_gaussian(&net->ac, net->obs_dim, h1, net->box.K);
        else cr_ac_layout_init(&net->ac, net->obs_dim, h1, net->num_actions);
        net->t = net->ac.t, net->ntensors = net->ac.num_tensors;
        net->num_params = net->ac.num_params, net->widest = h1;
        net->norm_obs = cr_st_meta(f, "norm_obs") && strcmp(cr_st_meta(f, "norm_obs"), "0");
    }
    return CUDARL_OK;
}

/* The conv net's observations and size in net's own fields (from its planned spec). */
static void conv_fields(cr_policy_net *net) {
    const cr_convnet_spec *s = &net->cnn.spec;
    net->is_conv = 1;
    net->is_dqn = s->heads == CR_CONVNET_DQN;
    net->obs_dim = net->cnn.in_floats, net->num_actions = s->num_actions;
    net->obs_dtype = s->dtype == CR_CONVNET_U8 ? CUDARL_OBS_U8 : CUDARL_OBS_F32;
    net->u8_scaled = s->scale == CR_CONVNET_SCALE_255;
    net->num_params = net->cnn.num_params, net->ntensors = net->cnn.ntensors;
    net->t = NULL, net->widest = 0;
    snprintf(net->name, sizeof net->name, "%s", s->name);
}

/* Refuses a parameter tensor of the spec's layout whose dtype or shape in the file is not the
 * layout's (a missing one: cr_st_find's CUDARL_ERR_MISMATCH). */
static cudarl_status conv_tensors_check(const cr_st_file *f, const char *path,
                                        const cr_convnet *cnn) {
    for (int i = 0; i < cnn->ntensors; i++) {
        const cr_convnet_tensor *t = &cnn->t[i];
        cr_st_tensor got;
        CR_TRY(cr_st_find(f, t->name, &got));
        int64_t want[4];
        int same = got.dtype == CR_ST_F32 && got.ndim == t->ndim;
        for (int d = 0; d < t->ndim; d++) {
            want[d] = t->shape[d];
            same = same && got.shape[d] == want[d];
        }
        if (same) continue;
        char got_s[160], want_s[96];
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s': tensor '%s' is %s of shape %s, but "
                       "the network its metadata \"%s\" describes ('%s') needs F32 of shape %s; "
                       "the file was altered or damaged: use a model.safetensors written by "
                       "cudarl train", path, t->name, cr_st_dtype_name(got.dtype),
                       cr_checkpoint_shape_text(got_s, sizeof got_s, got.ndim, got.shape),
                       CR_CONVNET_META_KEY, cnn->spec.name,
                       cr_checkpoint_shape_text(want_s, sizeof want_s, t->ndim, want));
    }
    return CUDARL_OK;
}

/* A metadata integer that the spec determines too (obs_dim, num_actions): where present, it must
 * be the spec's. */
static cudarl_status conv_meta_agrees(const cr_st_file *f, const char *path, const char *key,
                                      int want) {
    if (!cr_st_meta(f, key)) return CUDARL_OK;
    int v = 0;
    CR_TRY(cr_checkpoint_meta_int(f, path, key, &v));
    if (v != want)
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s': metadata '%s' is %d but its network "
                       "spec (metadata \"%s\") gives %d; the file was altered: use a "
                       "model.safetensors written by cudarl train", path, key, v,
                       CR_CONVNET_META_KEY, want);
    return CUDARL_OK;
}

/* The convolutional network of the spec under "network": parsed and planned, then held against
 * the algo (its heads), the metadata that describe it too, and the file's tensors. */
static cudarl_status conv_read(const cr_st_file *f, const char *path, cr_policy_net *net) {
    char source[320];
    snprintf(source, sizeof source, "checkpoint '%.256s' metadata \"%s\"", path,
             CR_CONVNET_META_KEY);
    cr_convnet_spec spec;
    CR_TRY(cr_convnet_spec_parse(&spec, cr_st_meta(f, CR_CONVNET_META_KEY), source));
    CR_TRY(cr_convnet_plan(&net->cnn, &spec));
    int is_dqn = net->is_dqn;
    conv_fields(net);
    if (net->is_dqn != is_dqn)
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s' is of algo '%s' but its network spec "
                       "has %s heads; the file was altered: use a model.safetensors written by "
                       "cudarl train", path, is_dqn ? "dqn" : "ppo", net->is_dqn ? "dqn" : "ppo");
    /* the critic's network is not loaded */
    net->no_values = !net->is_dqn && cr_checkpoint_separate_critic(f);
    CR_TRY(conv_meta_agrees(f, path, "obs_dim", net->obs_dim));
    CR_TRY(conv_meta_agrees(f, path, "num_actions", net->num_actions));
    const char *in = cr_st_meta(f, "obs_input");
    int cast = net->obs_dtype == CUDARL_OBS_U8 && !net->u8_scaled;
    if (in && !(!strcmp(in, CR_POLICY_U8_CAST) && cast) &&
        !(!strcmp(in, CR_POLICY_U8_SCALED) && net->u8_scaled))
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s' records obs_input '%.64s' but its "
                       "network spec reads %s observations%s; the file was altered: use a "
                       "model.safetensors written by cudarl train", path, in,
                       net->obs_dtype == CUDARL_OBS_U8 ? "uint8" : "float32",
                       net->u8_scaled ? " scaled by 1/255" : "");
    return conv_tensors_check(f, path, &net->cnn);
}

/* The network and its observations, from the file alone. */
static cudarl_status net_read(const cr_st_file *f, const char *path, cr_policy_net *net) {
    memset(net, 0, sizeof *net);
    CR_TRY(net_kind(f, path, net));
    const char *env = cr_st_meta(f, "env_id");
    snprintf(net->env_id, sizeof net->env_id, "%s", env ? env : "(unnamed)");
    return net->is_conv ? conv_read(f, path, net) : mlp_read(f, path, net);
}

/* ---- options and the context ------------------------------------------------------------- */

/* The defaults into *opt, options of this build's size. */
static void options_defaults(cudarl_policy_options *opt) {
    memset(opt, 0, sizeof *opt);
    opt->struct_size = sizeof *opt;
    opt->device = CUDARL_DEVICE_AUTO;
    opt->device_index = 0;
    opt->precision = CUDARL_PRECISION_FP32;
    opt->max_batch = 1;
    opt->deadline_us = 0;
}

cudarl_status cudarl_policy_options_default_sized(cudarl_policy_options *opt,
                                                  size_t struct_size) {
    CR_REQUIRE(opt, "cudarl_policy_options_default: the options are NULL");
    CR_TRY(cr_struct_check(&cr_abi_policy_options, struct_size,
                           "cudarl_policy_options_default"));
    cudarl_policy_options full;
    options_defaults(&full);
    cr_struct_write(opt, &full, struct_size);
    return CUDARL_OK;
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
    return NULL;
}

/* BF16 and FP16: the half-precision forward of a conv net's CUDA twin (nn/convnet_cuda.h). */
static int is_half(cudarl_precision p) {
    return p == CUDARL_PRECISION_BF16 || p == CUDARL_PRECISION_FP16;
}

/* Why a precision other than FP32 runs on CUDA only (messages). */
static const char *gpu_only_why(cudarl_precision p) {
    return p == CUDARL_PRECISION_TF32 ? "TF32 is a tensor-core format; the CPU computes in fp32"
                                      : "its products run on the GPU's tensor cores; the CPU "
                                        "computes in fp32";
}

/* Opens the context the options ask for; AUTO falls back to the CPU where the GPU's backend
 * cannot run the network (not under TF32, BF16 or FP16, which the CPU does not compute in).
 * BF16 and FP16 run convolutional networks only. */
static cudarl_status ctx_open(const cudarl_policy_options *o, const cr_policy_net *net,
                              const char *path, cudarl_ctx **out) {
    const int gpu_only = o->precision != CUDARL_PRECISION_FP32;
    const char *prec = precision_text(o->precision);
    if (is_half(o->precision) && !net->is_conv)
        return cr_fail(CUDARL_ERR_UNSUPPORTED, "cudarl_policy_load: precision %s is not "
                       "implemented for MLP policies yet (it runs convolutional networks on "
                       "CUDA): load '%s' with precision FP32, or TF32 on CUDA", prec, path);
    if (gpu_only && o->device == CUDARL_DEVICE_CPU)
        return cr_fail(CUDARL_ERR_UNSUPPORTED, "cudarl_policy_load: precision %s runs on CUDA "
                       "only (%s): load '%s' with precision FP32 on the CPU", prec,
                       gpu_only_why(o->precision), path);
    CR_TRY(cudarl_ctx_init(out, o->device, o->device_index));
    const char *why = backend_lacks(*out, net);
    if (gpu_only && !why && (*out)->kind == CUDARL_DEVICE_CPU)
        why = "no usable GPU was found";
    if (!why) return CUDARL_OK;
    cudarl_ctx_free(*out);
    *out = NULL;
    if (gpu_only)
        return cr_fail(CUDARL_ERR_UNSUPPORTED, "cudarl_policy_load: precision %s runs on CUDA "
                       "only, and '%s' cannot run there: %s; load it with precision FP32 (on the "
                       "CPU)", prec, path, why);
    if (o->device != CUDARL_DEVICE_AUTO)
        return cr_fail(CUDARL_ERR_UNSUPPORTED, "cannot run the %s policy of '%s' on cuda:%d: %s; "
                       "load it with device CUDARL_DEVICE_CPU (or AUTO)",
                       net->is_dqn ? "DQN" : "PPO", path, o->device_index, why);
    CR_INFO("policy: running '%s' on the CPU: %s", path, why);
    return cudarl_ctx_init(out, CUDARL_DEVICE_CPU, 0);
}

/* ---- the plan ---------------------------------------------------------------------------- */

enum { H_SELF, H_RING, H_PARAMS, H_RMS, H_COUNT };
enum { B_PARAMS, B_OBS_U8, B_OBS, B_CACHE, B_WORKSPACE, B_WEIGHTS, B_OUT, B_RMS, B_COUNT };

size_t cr_policy_out_bytes(const cudarl_policy *p, int rows) {
    return (size_t)rows * (cr_policy_action_bytes(p) + sizeof(float) +
                           (size_t)p->net.num_actions * sizeof(float));
}

void cr_policy_out_layout(const cudarl_policy *p, void *base, int rows, int32_t **actions,
                          float **values, float **logits) {
    unsigned char *b = base;
    const size_t ab = cr_policy_action_bytes(p);
    *actions = (int32_t *)b;
    *values = (float *)(b + (size_t)rows * ab);
    *logits = (float *)(b + (size_t)rows * (ab + sizeof(float)));
}

/* Bytes of the observation statistics (obs_rms mean and var, doubles), 0 without. */
static size_t rms_bytes(const cr_policy_net *n) {
    return n->norm_obs ? 2 * (size_t)n->obs_dim * sizeof(double) : 0;
}

/* Whether the policy runs its conv net's half-precision forward (BF16, FP16 on CUDA). */
static int runs_half(const cudarl_policy *p, int on_device) {
    return on_device && p->net.is_conv && is_half(p->opt.precision);
}

/* Bytes of the conv net's cache, workspace and converted weights for p->rows rows: on the CPU
 * the full cache of cr_convnet_forward (no workspace); on the device the twin's forward-only
 * cache (fp32, or half: cr_convnet_cuda_half_cache_bytes, which shares the uint8 input's
 * buffer of input_bytes) and its workspace (p->conv_gpu made), and at half precision its
 * converted weights. */
static void conv_bytes(const cudarl_policy *p, int on_device, size_t input_bytes, size_t *cache,
                       size_t *workspace, size_t *weights) {
    *cache = *workspace = *weights = 0;
    if (!on_device) {
        *cache = cr_convnet_cache_bytes(&p->net.cnn, p->rows);
        return;
    }
#ifdef CUDARL_WITH_CUDA
    *cache = runs_half(p, on_device)
                 ? cr_convnet_cuda_half_cache_bytes(p->conv_gpu, p->rows, input_bytes)
                 : cr_convnet_cuda_forward_cache_bytes(&p->net.cnn, p->rows);
    *workspace = cr_convnet_cuda_workspace_bytes(p->conv_gpu);
    *weights = cr_convnet_cuda_weights_bytes(p->conv_gpu);
#endif
}

/* Adds the backend buffers for `rows` rows to `pl`; idx[B_*] receives their items (B_PARAMS is
 * -1 where no float weights are on the backend: on the CPU, which reads the host copy in place,
 * and at half precision on CUDA, which reads only the converted weights, B_WEIGHTS). An MLP's
 * obs_u8 holds uint8 input and obs its float conversion (or the graphs' float input); a conv net
 * converts its input itself, so on the device one of the two holds the graphs' input as the
 * spec's dtype (none where the graphs read the mapped staging: an integrated GPU), and on the
 * CPU neither is needed (act() passes its obs in place). At half precision the conv net's odd
 * stages write into obs_u8 once its first stage has read it (point_backend). */
static void plan_backend(cr_plan *pl, const cudarl_policy *p, int on_device, int idx[B_COUNT]) {
    const cr_policy_net *n = &p->net;
    size_t elems = (size_t)p->rows * (size_t)n->obs_dim;
    int u8 = n->obs_dtype == CUDARL_OBS_U8;
    size_t u8_bytes = u8 ? elems : 0, f32_bytes = elems * sizeof(float);
    size_t cache = cr_mlp_cache_floats(p->rows, n->widest) * sizeof(float), workspace = 0;
    size_t weights = 0;
    if (n->is_conv) {
        const int own = on_device && !p->maps_obs; /* the graphs read a device copy */
        u8_bytes = own && u8 ? elems : 0;
        f32_bytes = own && !u8 ? elems * sizeof(float) : 0;
        conv_bytes(p, on_device, u8_bytes, &cache, &workspace, &weights);
    }
    idx[B_PARAMS] = on_device && !runs_half(p, on_device)
                        ? cr_plan_add(pl, "params", n->num_params * sizeof(float))
                        : -1;
    idx[B_OBS_U8] = cr_plan_add(pl, "obs_u8", u8_bytes);
    idx[B_OBS] = cr_plan_add(pl, "obs", f32_bytes);
    idx[B_CACHE] = cr_plan_add(pl, "cache", cache);
    idx[B_WORKSPACE] = cr_plan_add(pl, "workspace", workspace);
    idx[B_WEIGHTS] = cr_plan_add(pl, "weights (converted)", weights);
    idx[B_OUT] = cr_plan_add(pl, "out", cr_policy_out_bytes(p, p->rows));
    idx[B_RMS] = cr_plan_add(pl, "obs_rms", on_device ? rms_bytes(n) : 0);
}

static void point_backend(cudarl_policy *p, const cr_arena *a, int on_device,
                          const int idx[B_COUNT]) {
    const cr_policy_net *n = &p->net;
    p->params = idx[B_PARAMS] >= 0 ? cr_arena_get(a, idx[B_PARAMS])
                : on_device        ? NULL /* half precision: only converted weights */
                                   : p->params_host;
    p->obs_u8 = a->plan.sizes[idx[B_OBS_U8]] ? cr_arena_get(a, idx[B_OBS_U8]) : NULL;
    p->obs = a->plan.sizes[idx[B_OBS]] ? cr_arena_get(a, idx[B_OBS]) : NULL;
    void *cache = cr_arena_get(a, idx[B_CACHE]);
    p->out = cr_arena_get(a, idx[B_OUT]);
    p->rms = !n->norm_obs ? NULL : on_device ? cr_arena_get(a, idx[B_RMS]) : p->rms_host;
    if (!n->is_conv) {
        p->cache = cr_mlp_cache_carve(cache, p->rows, n->widest);
        return;
    }
    if (!on_device) {
        cr_convnet_cache_carve(&n->cnn, cache, p->rows, &p->conv_cache);
        return;
    }
#ifdef CUDARL_WITH_CUDA
    if (runs_half(p, on_device)) {
        cr_convnet_cuda_half_cache_carve(p->conv_gpu, cache, p->rows, p->obs_u8,
                                         a->plan.sizes[idx[B_OBS_U8]], &p->conv_half);
        cr_convnet_cuda_set_weights(p->conv_gpu, cr_arena_get(a, idx[B_WEIGHTS]));
    } else {
        cr_convnet_cuda_forward_cache_carve(&n->cnn, cache, p->rows, &p->conv_cache);
    }
    cr_convnet_cuda_set_workspace(p->conv_gpu, cr_arena_get(a, idx[B_WORKSPACE]));
#endif
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
    cr_plan_add(&pl, "obs_rms (host)", rms_bytes(net));
    if (on_cpu) plan_backend(&pl, &tmp, 0, idx);
    cr_arena a;
    CR_TRY(cr_arena_alloc(&a, &pl, CR_MEM_HOST));
    cudarl_policy *p = cr_arena_get(&a, H_SELF);
    *p = tmp;
    if (!p->net.is_conv) p->net.t = p->net.is_dqn ? p->net.q.t : p->net.ac.t; /* its own copy */
    p->host = a;
    p->ctx = ctx;
    p->opt = *o;
    cr_latency_init(&p->lat, cr_arena_get(&a, H_RING), o->deadline_us);
    p->params_host = cr_arena_get(&a, H_PARAMS);
    p->rms_host = net->norm_obs ? cr_arena_get(&a, H_RMS) : NULL;
    p->obs_row_bytes = (size_t)net->obs_dim * (net->obs_dtype == CUDARL_OBS_U8 ? 1 : sizeof(float));
    if (on_cpu) point_backend(p, &a, 0, idx);
    *out = p;
    return CUDARL_OK;
}

static cudarl_status params_read(const cr_st_file *f, cudarl_policy *p) {
    const cr_policy_net *n = &p->net;
    for (int i = 0; i < n->ntensors; i++) {
        const char *name = n->is_conv ? n->cnn.t[i].name : n->t[i].name;
        size_t at = n->is_conv ? n->cnn.t[i].offset : n->t[i].offset;
        size_t count = n->is_conv ? n->cnn.t[i].count : n->t[i].count;
        CR_TRY(cr_st_read_f32(f, name, p->params_host + at, count));
    }
    if (!n->norm_obs) return CUDARL_OK;
    static const char *const rms[2] = {"obs_rms.mean", "obs_rms.var"};
    for (int k = 0; k < 2; k++) {
        cr_st_tensor t;
        CR_TRY(cr_st_find(f, rms[k], &t));
        double *dst = p->rms_host + (size_t)k * (size_t)n->obs_dim;
        if (t.dtype != CR_ST_F64 || t.nbytes != (size_t)n->obs_dim * sizeof(double))
            return cr_fail(CUDARL_ERR_FORMAT, "checkpoint: tensor '%s' is %s with %zu bytes, "
                           "expected F64 of %d elements (obs_dim); the file is damaged", rms[k],
                           cr_st_dtype_name(t.dtype), t.nbytes, n->obs_dim);
        memcpy(dst, t.data, t.nbytes);
        for (int d = 0; d < n->obs_dim; d++)
            if (!isfinite(dst[d]) || (k == 1 && dst[d] < 0))
                return cr_fail(CUDARL_ERR_FORMAT, "checkpoint: element %d of '%s' is %g; the "
                               "file is damaged", d, rms[k], dst[d]);
    }
    return CUDARL_OK;
}

/* One forward over max_batch rows of zeros on the CPU, so that the first act() finds OpenMP's
 * threads started. A conv net reads its input in place, so its zeros are a buffer of their own,
 * freed before returning. */
static cudarl_status cpu_warm_up(cudarl_policy *p) {
    if (!p->net.is_conv) {
        cr_policy_forward(p, p->obs, p->opt.max_batch, 1);
        return CUDARL_OK;
    }
    void *zeros = calloc((size_t)p->opt.max_batch, p->obs_row_bytes);
    if (!zeros)
        return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "policy: out of host memory for the warm-up "
                       "input (%d rows of %zu bytes)", p->opt.max_batch, p->obs_row_bytes);
    cr_policy_forward(p, zeros, p->opt.max_batch, 1);
    free(zeros);
    return CUDARL_OK;
}

#ifdef CUDARL_WITH_CUDA
#define POLICY_HALF_BLAS_WORKSPACE ((size_t)1 << 20)

/* On CUDA: the precision's math mode on the policy's own context, and a conv net's CUDA twin
 * for every graph batch size (1, 2, 4, ..., rows). TF32 runs the conv stages on the GEMM engine,
 * the one whose products cuBLAS's math mode reaches (cuDNN's plans are fp32 FMA); BF16 and FP16
 * on the IGEMM engine, the half-precision forward. */
static cudarl_status cuda_net_init(cudarl_policy *p) {
    const cudarl_precision prec = p->opt.precision;
    if (prec == CUDARL_PRECISION_TF32) CR_TRY(cr_convnet_cuda_set_tf32(p->ctx, 1));
    if (!p->net.is_conv) return CUDARL_OK;
    int batches[CR_POLICY_MAX_GRAPHS], n = 0;
    for (int b = 1; b <= p->rows; b <<= 1) batches[n++] = b;
    cr_convnet_engine engine = prec == CUDARL_PRECISION_TF32 ? CR_CONVNET_ENGINE_GEMM
                               : is_half(prec)              ? CR_CONVNET_ENGINE_IGEMM
                                                            : p->conv_engine;
    CR_TRY(cr_convnet_cuda_init_precision(p->ctx, &p->net.cnn, batches, n, engine, prec,
                                          &p->conv_gpu));
    CR_DEBUG("policy: %s", cr_convnet_cuda_describe(p->conv_gpu));
    /* the half forward's one cuBLAS product (its linear stages) borrows a free cache buffer as
     * its workspace where that is larger: the context's own shrinks from 32 MiB to 1 MiB */
    if (is_half(prec)) CR_TRY(cr_cuda_set_blas_workspace(p->ctx, POLICY_HALF_BLAS_WORKSPACE));
    return CUDARL_OK;
}

/* The weights on the device: the float parameters as they are, or at half precision their
 * converted copy into `converted` (device), made on the host (cr_convnet_cuda_weights_pack, in a
 * buffer freed before returning) so that no float copy is ever on the device. */
static cudarl_status weights_upload(cudarl_policy *p, void *converted) {
    cudarl_ctx *ctx = p->ctx;
    if (p->rms) ctx->ops->copy_from_host(ctx, p->rms, p->rms_host, rms_bytes(&p->net));
    if (!runs_half(p, 1)) {
        ctx->ops->copy_from_host(ctx, p->params, p->params_host,
                                 p->net.num_params * sizeof(float));
        ctx->ops->sync(ctx);
        return CUDARL_OK;
    }
    const size_t bytes = cr_convnet_cuda_weights_bytes(p->conv_gpu);
    void *packed = malloc(bytes);
    if (!packed)
        return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "policy: out of host memory converting the "
                       "weights to %s (%zu bytes)", cudarl_precision_name(p->opt.precision),
                       bytes);
    cr_convnet_cuda_weights_pack(p->conv_gpu, p->params_host, packed);
    ctx->ops->copy_from_host(ctx, converted, packed, bytes);
    ctx->ops->sync(ctx);
    free(packed);
    return CUDARL_OK;
}
#endif

/* Device buffers, weights uploaded, staging and graphs (CUDA); on the CPU, the warm-up. */
static cudarl_status backend_setup(cudarl_policy *p) {
    cudarl_ctx *ctx = p->ctx;
    if (ctx->kind == CUDARL_DEVICE_CPU) return cpu_warm_up(p);
#ifdef CUDARL_WITH_CUDA
    CR_TRY(cuda_net_init(p));
    p->maps_obs = cr_policy_cuda_maps_obs(ctx);
    cr_plan pl;
    int idx[B_COUNT];
    cr_plan_init(&pl);
    plan_backend(&pl, p, 1, idx);
    CR_TRY(ctx->ops->arena_alloc(ctx, &p->dev, &pl));
    point_backend(p, &p->dev, 1, idx);
    CR_TRY(weights_upload(p, cr_arena_get(&p->dev, idx[B_WEIGHTS])));
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
    cr_convnet_cuda_free(p->conv_gpu);
#endif
    if (p->dev.base) ctx->ops->arena_free(ctx, &p->dev);
    cudarl_ctx_free(ctx);
    cr_arena host = p->host; /* the handle lives in it */
    cr_arena_free(&host);
}

/* The policy of `net` on the context the options ask for (checked): the handle, the weights
 * (read from f, or copied from params), the backend's buffers and, on CUDA, the graphs. `what`
 * names the source in messages. */
static cudarl_status policy_make(const cr_policy_net *net, const cudarl_policy_options *o,
                                 cr_convnet_engine engine, const char *what, const cr_st_file *f,
                                 const float *params, cudarl_policy **out) {
    cudarl_ctx *ctx = NULL;
    cudarl_policy *p = NULL;
    cudarl_status s = ctx_open(o, net, what, &ctx);
    if (s == CUDARL_OK) s = policy_alloc(ctx, net, o, &p);
    if (s == CUDARL_OK) {
        p->conv_engine = engine;
        CUDARL_ASSERT(f || params); /* the weights come from one of them */
        if (f) s = params_read(f, p);
        else if (params) memcpy(p->params_host, params, net->num_params * sizeof(float));
    }
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
    CR_DEBUG("policy: '%s' (%s %s, env %s) on %s, %s, max_batch %d", what,
             net->is_dqn ? "dqn" : "ppo", net->name, net->env_id, ctx->ops->name,
             cudarl_precision_name(o->precision), o->max_batch);
    *out = p;
    return CUDARL_OK;
}

/* *o from opt (NULL: the defaults), checked; `where` names the public function. */
static cudarl_status options_take(const cudarl_policy_options *opt, cudarl_policy_options *o,
                                  const char *where) {
    options_defaults(o);
    if (opt) CR_TRY(cr_struct_read(&cr_abi_policy_options, o, opt, where));
    return options_check(o);
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
    CR_TRY(options_take(opt, &o, "cudarl_policy_load"));
    cr_policy_net net;
    cr_st_file *f;
    CR_TRY(cr_st_open(&f, path));
    cudarl_status s = net_read(f, path, &net);
    if (s == CUDARL_OK) s = policy_make(&net, &o, CR_CONVNET_ENGINE_AUTO, path, f, NULL, out);
    cr_st_close(f);
    return s;
}

cudarl_status cr_policy_load_convnet(const cr_convnet *cnn, const float *params, const char *label,
                                     cr_convnet_engine engine, const cudarl_policy_options *opt,
                                     cudarl_policy **out) {
    CUDARL_ASSERT(cnn && params && label && out);
    *out = NULL;
    cudarl_policy_options o;
    CR_TRY(options_take(opt, &o, "cudarl_policy_load_network"));
    cr_policy_net net;
    memset(&net, 0, sizeof net);
    net.cnn = *cnn;
    conv_fields(&net);
    snprintf(net.env_id, sizeof net.env_id, "%s", label);
    return policy_make(&net, &o, engine, label, NULL, params, out);
}

void cudarl_policy_get_info(const cudarl_policy *p, cudarl_policy_info *info) {
    memset(info, 0, sizeof *info);
    if (!p) return;
    snprintf(info->algo, sizeof info->algo, "%s", p->net.is_dqn ? "dqn" : "ppo");
    snprintf(info->env_id, sizeof info->env_id, "%s", p->net.env_id);
    info->obs_dtype = p->net.obs_dtype;
    info->obs_dim = p->net.obs_dim, info->num_actions = p->net.num_actions;
    info->has_values = !p->net.is_dqn && !p->net.no_values;
    info->device = p->ctx->kind, info->device_index = p->ctx->device_index;
    info->max_batch = p->opt.max_batch;
    info->graph_batches = p->cuda.graph_batches;
    info->host_bytes = p->host.plan.total;
    info->device_bytes = p->dev.base ? p->dev.plan.total : 0;
    info->pinned_bytes = p->cuda.pinned_bytes;
    snprintf(info->network, sizeof info->network, "%s", p->net.name);
    info->precision = p->opt.precision;
    info->action_dim = p->net.box.K;
    for (int k = 0; k < p->net.box.K; k++)
        info->action_low[k] = p->net.box.lo[k], info->action_high[k] = p->net.box.hi[k];
#ifdef CUDARL_WITH_CUDA
    if (p->ctx->kind == CUDARL_DEVICE_CUDA) info->context_bytes = cr_policy_cuda_context_bytes(p);
#endif
}

/* ---- act --------------------------------------------------------------------------------- */

/* A conv net's logits (or Q-values) and, PPO, values of x (rows) into the out block's parts. */
static void conv_forward(cudarl_policy *p, const void *x, float *logits, float *values,
                         int rows) {
    float *v = p->net.cnn.spec.heads == CR_CONVNET_PPO ? values : NULL;
#ifdef CUDARL_WITH_CUDA
    if (p->conv_gpu && runs_half(p, 1)) {
        cr_convnet_cuda_half_forward(p->ctx, p->conv_gpu, x, logits, v, &p->conv_half, rows);
        return;
    }
    if (p->conv_gpu) {
        cr_convnet_cuda_forward(p->ctx, p->conv_gpu, p->params, x, logits, v, &p->conv_cache,
                                rows);
        return;
    }
#endif
    cr_convnet_forward(&p->net.cnn, p->params, x, logits, v, &p->conv_cache, rows);
}

void cr_policy_forward(cudarl_policy *p, const void *x, int rows, int with_values) {
    cudarl_ctx *ctx = p->ctx;
    const cr_policy_net *n = &p->net;
    int32_t *actions;
    float *values, *logits;
    cr_policy_out_layout(p, p->out, rows, &actions, &values, &logits);
    if (n->is_conv) {
        conv_forward(p, x, logits, values, rows);
        ctx->ops->categorical_argmax(ctx, logits, actions, rows, n->num_actions);
        return;
    }
    if (n->norm_obs) { /* the training run's --norm-obs, its statistics frozen */
        ctx->ops->normalize_obs(ctx, p->rms, p->rms + n->obs_dim, x, p->obs, rows, n->obs_dim,
                                10.0f);
        x = p->obs;
    }
    cr_mlp_view m = n->is_dqn ? cr_qnet_view(&n->q, p->params) : cr_ac_actor(&n->ac, p->params);
    cr_mlp_forward(ctx, &m, x, logits, &p->cache, rows);
    if (n->box.K > 0) /* the Gaussian's mean, in its box */
        ctx->ops->clip_box(ctx, logits, &n->box, (float *)actions, rows);
    else
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

cudarl_status cr_policy_act_check(const cudarl_policy *p, const void *obs, cudarl_obs_dtype dtype,
                                  int n, const void *actions, const float *values,
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
                       "for n actions (%s)", net->box.K > 0 ? "action_dim floats each" : "int32");
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
    if (values && net->no_values)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "cudarl_policy_act: values must be NULL for this "
                       "policy: it was trained with --separate-critic, whose critic is a network "
                       "of its own that a checkpoint's policy does not include (the runtime "
                       "serves the actor: actions and logits)");
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

static cudarl_status cpu_act(cudarl_policy *p, const void *obs, int n, void *actions,
                             float *values, float *logits) {
    const void *x = obs;
    if (p->net.obs_dtype == CUDARL_OBS_F32) {
        CR_TRY(cr_policy_check_finite(p, obs, n));
    } else if (!p->net.is_conv) { /* a conv net converts uint8 itself */
        const uint8_t *u = obs;
        size_t count = (size_t)n * (size_t)p->net.obs_dim;
        if (p->net.u8_scaled) cr_cpu_scale_u8(u, p->obs, count);
        else
            for (size_t i = 0; i < count; i++) p->obs[i] = (float)u[i];
        x = p->obs;
    }
    cr_policy_forward(p, x, n, values != NULL);
    int32_t *a;
    float *v, *l;
    cr_policy_out_layout(p, p->out, n, &a, &v, &l);
    memcpy(actions, a, (size_t)n * cr_policy_action_bytes(p));
    if (values) memcpy(values, v, (size_t)n * sizeof *v);
    if (logits) memcpy(logits, l, (size_t)n * (size_t)p->net.num_actions * sizeof *l);
    return CUDARL_OK;
}

cudarl_status cudarl_policy_obs_buffer(cudarl_policy *p, void **buffer, size_t *bytes) {
    if (!p || !buffer || !bytes)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "cudarl_policy_obs_buffer: policy, buffer and "
                       "bytes must not be NULL (pass a loaded policy and two pointers to fill)");
    *buffer = NULL, *bytes = 0;
#ifdef CUDARL_WITH_CUDA
    if (p->ctx->kind == CUDARL_DEVICE_CUDA) {
        *buffer = p->cuda.stage_obs;
        *bytes = (size_t)p->opt.max_batch * p->obs_row_bytes;
        return CUDARL_OK;
    }
#endif
    return cr_fail(CUDARL_ERR_UNSUPPORTED, "cudarl_policy_obs_buffer: this policy runs on the "
                   "CPU, which reads observations where they are: pass act() your own host "
                   "memory (or load the policy with device CUDA)");
}

cudarl_status cudarl_policy_act(cudarl_policy *p, const void *obs, cudarl_obs_dtype dtype, int n,
                                void *actions, float *values, float *logits) {
    uint64_t t0 = cr_now_ns();
    CR_TRY(cr_policy_act_check(p, obs, dtype, n, actions, values, logits));
#ifdef CUDARL_WITH_CUDA
    if (p->ctx->kind == CUDARL_DEVICE_CUDA)
        CR_TRY(cr_policy_cuda_act(p, obs, n, actions, values, logits));
    else
#endif
        CR_TRY(cpu_act(p, obs, n, actions, values, logits));
    cr_latency_record(&p->lat, cr_now_ns() - t0);
    return CUDARL_OK;
}

/* ---- latency ----------------------------------------------------------------------------- */

cudarl_status cudarl_policy_latency(const cudarl_policy *p, cudarl_latency_stats *st) {
    if (!p || !st)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "cudarl_policy_latency: %s is NULL; pass a loaded "
                       "policy and a cudarl_latency_stats to fill", p ? "stats" : "policy");
    cr_latency_stats_fill(&p->lat, st);
    return CUDARL_OK;
}
