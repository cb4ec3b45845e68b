/* cudarl's own forward pass of a checkpoint's policy, the reference test_onnx_export.py holds
 * the exported ONNX model against:
 *
 *   onnx_policy_forward CHECKPOINT IN.safetensors OUT.safetensors
 *
 * OUT gets `logits` (N, A) and `value` (N, 1) for a PPO checkpoint or `q_values` (N, A) for a
 * DQN one, F32, and `action` (N) I64, the argmax by the backend's categorical_argmax. IN holds
 * `obs`, F32 or U8, as the exported model's input of the same dtype takes it:
 *   MLP   (N, obs_dim). U8 is converted as cudarl converts it: cast to float where the
 *         checkpoint's obs_input says so (MinAtar), else scaled to [0, 1] by cr_cpu_scale_u8.
 *         The network runs on the CPU backend through cr_mlp_forward, the code cudarl eval and
 *         training run; the weights are read by the layouts' state_dict names.
 *   conv  (N, C, H, W) (a checkpoint with metadata "network"). The policy runtime on the CPU
 *         (cudarl_policy_load, cudarl_policy_act: cr_convnet_forward, what cudarl eval runs).
 *         Observations of the spec's dtype go to act() as they are; F32 for a uint8 spec is the
 *         network's input after the conversion, run through the same net and weights with the
 *         spec reading float32 unscaled; U8 for a float32 spec is scaled by cr_cpu_scale_u8
 *         first (what the export's uint8 input does for such a policy).
 *   Gaussian (a checkpoint with metadata action_dim, PPO on continuous actions): the policy
 *         runtime on the CPU, which normalizes the observations by the checkpoint's statistics
 *         where it has them; OUT gets `action` (N, K) F32 (the mean clipped into the box),
 *         `action_mean` (N, K) and `value` (N, 1).
 * Exits 1 on the first failure. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "nn/actor_critic.h"
#include "nn/convnet.h"
#include "nn/qnet.h"
#include "ops/cpu/ops_conv.h"
#include "runtime/policy.h"
#include "io/safetensors.h"

/* What the forward writes, for N rows and A actions (host). */
typedef struct fwd_out {
    int N, A, dqn;
    float *scores;   /* (N, A) logits or Q-values */
    float *value;    /* (N) PPO */
    int32_t *action; /* (N) */
} fwd_out;

/* Integer metadata `key` of the checkpoint. */
static int meta_int(const cr_st_file *f, const char *key) {
    const char *v = cr_st_meta(f, key);
    CHECK_MSG(v != NULL, "checkpoint metadata '%s' is missing", key);
    return atoi(v);
}

static void *alloc_or_die(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    CHECK_MSG(p != NULL, "out of host memory (%zu bytes)", bytes);
    return p;
}

enum { B_PARAMS, B_X, B_CACHE };

/* The MLP of checkpoint ck on obs (N, obs_dim) into *o. */
static void mlp_run(const cr_st_file *ck, const cr_st_tensor *obs, fwd_out *o) {
    int obs_dim = meta_int(ck, "obs_dim"), A = o->A, N = o->N;
    cr_ac_layout ac;
    cr_qnet_layout q;
    const cr_param_tensor *t;
    int ntensors, widest;
    size_t num_params;
    if (o->dqn) {
        cr_qnet_layout_init(&q, obs_dim, meta_int(ck, "hidden1"), meta_int(ck, "hidden2"), A);
        t = q.t, ntensors = CR_QNET_NUM_TENSORS, num_params = q.num_params;
        widest = cr_qnet_widest(&q);
    } else {
        cr_ac_layout_init(&ac, obs_dim, meta_int(ck, "hidden"), A);
        t = ac.t, ntensors = CR_AC_NUM_TENSORS, num_params = ac.num_params;
        widest = ac.hidden;
    }
    CHECK_MSG(obs->ndim == 2 && obs->shape[1] == obs_dim, "obs must be F32 or U8 (N, %d)",
              obs_dim);
    size_t n = (size_t)N, F = sizeof(float);
    cr_plan pl;
    cr_plan_init(&pl);
    cr_plan_add(&pl, "params", num_params * F);
    cr_plan_add(&pl, "x", n * (size_t)obs_dim * F);
    cr_plan_add(&pl, "cache", cr_mlp_cache_floats(N, widest) * F);
    cr_arena a;
    CHECK_OK(cr_arena_alloc(&a, &pl, CR_MEM_HOST));
    float *params = cr_arena_get(&a, B_PARAMS), *x = cr_arena_get(&a, B_X);
    cr_mlp_cache cache = cr_mlp_cache_carve(cr_arena_get(&a, B_CACHE), N, widest);
    for (int i = 0; i < ntensors; i++)
        CHECK_OK(cr_st_read_f32(ck, t[i].name, params + t[i].offset, t[i].count));
    const char *in = cr_st_meta(ck, "obs_input");
    if (obs->dtype == CR_ST_F32) {
        memcpy(x, obs->data, obs->nbytes);
    } else if (in && !strcmp(in, CR_POLICY_U8_CAST)) {
        const uint8_t *u = obs->data;
        for (size_t i = 0; i < obs->count; i++) x[i] = (float)u[i];
    } else {
        cr_cpu_scale_u8(obs->data, x, obs->count);
    }

    cudarl_ctx *ctx;
    CHECK_OK(cudarl_ctx_init(&ctx, CUDARL_DEVICE_CPU, 0));
    cr_mlp_view net = o->dqn ? cr_qnet_view(&q, params) : cr_ac_actor(&ac, params);
    cr_mlp_forward(ctx, &net, x, o->scores, &cache, N);
    if (!o->dqn) {
        cr_mlp_view critic = cr_ac_critic(&ac, params);
        cr_mlp_forward(ctx, &critic, x, o->value, &cache, N);
    }
    ctx->ops->categorical_argmax(ctx, o->scores, o->action, N, A);
    cudarl_ctx_free(ctx);
    cr_arena_free(&a);
}

/* The conv net of the checkpoint at `path` on obs (N, C, H, W) into *o, by the policy runtime. */
static void conv_run(const char *path, const cr_st_tensor *obs, fwd_out *o) {
    cudarl_policy_options opt;
    cudarl_policy_options_default(&opt);
    opt.device = CUDARL_DEVICE_CPU;
    opt.max_batch = o->N;
    cudarl_policy *pol;
    CHECK_OK(cudarl_policy_load(path, &opt, &pol));
    const cr_convnet_spec *s = &pol->net.cnn.spec;
    CHECK_MSG(obs->ndim == 4 && obs->shape[1] == s->in_c && obs->shape[2] == s->in_h &&
              obs->shape[3] == s->in_w, "obs must be F32 or U8 (N, %d, %d, %d)", s->in_c,
              s->in_h, s->in_w);
    const int spec_u8 = s->dtype == CR_CONVNET_U8;
    cudarl_obs_dtype dtype = obs->dtype == CR_ST_U8 ? CUDARL_OBS_U8 : CUDARL_OBS_F32;
    void *x = alloc_or_die(obs->count * sizeof(float)); /* the view may be unaligned */
    if (dtype == CUDARL_OBS_U8 && !spec_u8) {
        cr_cpu_scale_u8(obs->data, x, obs->count);
        dtype = CUDARL_OBS_F32;
    } else {
        memcpy(x, obs->data, obs->nbytes);
    }
    cudarl_policy *run = pol;
    if (dtype == CUDARL_OBS_F32 && spec_u8) { /* the network's float input: no conversion */
        cr_convnet_spec f32 = *s;
        f32.dtype = CR_CONVNET_F32, f32.scale = CR_CONVNET_SCALE_NONE;
        snprintf(f32.name, sizeof f32.name, "custom");
        cr_convnet net;
        CHECK_OK(cr_convnet_plan(&net, &f32));
        CHECK_MSG(net.num_params == pol->net.num_params, "float32 twin of the spec has %zu "
                  "parameters, the checkpoint's %zu", net.num_params, pol->net.num_params);
        CHECK_OK(cr_policy_load_convnet(&net, pol->params_host, path, CR_CONVNET_ENGINE_AUTO,
                                        &opt, &run));
    }
    CHECK_OK(cudarl_policy_act(run, x, dtype, o->N, o->action, o->dqn ? NULL : o->value,
                               o->scores));
    if (run != pol) cudarl_policy_free(run);
    cudarl_policy_free(pol);
    free(x);
}

/* A Gaussian policy's outputs on obs (N, obs_dim) F32 by the policy runtime, written to out. */
static void gaussian_run(const char *path, const cr_st_tensor *obs, const char *out) {
    cudarl_policy_options opt;
    cudarl_policy_options_default(&opt);
    opt.device = CUDARL_DEVICE_CPU;
    opt.max_batch = (int)obs->shape[0];
    cudarl_policy *pol;
    CHECK_OK(cudarl_policy_load(path, &opt, &pol));
    cudarl_policy_info info;
    cudarl_policy_get_info(pol, &info);
    const int N = (int)obs->shape[0], K = info.action_dim;
    CHECK_MSG(obs->dtype == CR_ST_F32 && obs->ndim == 2 && obs->shape[1] == info.obs_dim,
              "obs must be F32 (N, %d)", info.obs_dim);
    float *x = alloc_or_die(obs->nbytes), *act = alloc_or_die((size_t)N * K * sizeof(float));
    float *mean = alloc_or_die((size_t)N * K * sizeof(float));
    float *value = alloc_or_die((size_t)N * sizeof(float));
    memcpy(x, obs->data, obs->nbytes);
    CHECK_OK(cudarl_policy_act(pol, x, CUDARL_OBS_F32, N, act, value, mean));
    cr_st_writer *w = alloc_or_die(sizeof *w);
    cr_st_writer_init(w);
    cr_st_add_tensor(w, "action", CR_ST_F32, 2, (int64_t[]){N, K}, act);
    cr_st_add_tensor(w, "action_mean", CR_ST_F32, 2, (int64_t[]){N, K}, mean);
    cr_st_add_tensor(w, "value", CR_ST_F32, 2, (int64_t[]){N, 1}, value);
    CHECK_OK(cr_st_write_atomic(w, out));
    free(w), free(x), free(act), free(mean), free(value);
    cudarl_policy_free(pol);
}

int main(int argc, char **argv) {
    CHECK_MSG(argc == 4, "usage: onnx_policy_forward CHECKPOINT IN.safetensors OUT.safetensors");
    cr_st_file *ck, *in;
    CHECK_OK(cr_st_open(&ck, argv[1]));
    CHECK_OK(cr_st_open(&in, argv[2]));
    const char *algo = cr_st_meta(ck, "algo");
    CHECK_MSG(algo && (!strcmp(algo, "ppo") || !strcmp(algo, "dqn")), "algo %s", algo ? algo : "?");
    cr_st_tensor obs;
    CHECK_OK(cr_st_find(in, "obs", &obs));
    CHECK_MSG(obs.ndim >= 2 && obs.shape[0] >= 1 && (obs.dtype == CR_ST_F32 || obs.dtype == CR_ST_U8),
              "obs must be F32 or U8 with rows first");
    if (cr_st_meta(ck, "action_dim")) {
        gaussian_run(argv[1], &obs, argv[3]);
        cr_st_close(in);
        cr_st_close(ck);
        return 0;
    }
    fwd_out o = {.N = (int)obs.shape[0], .A = meta_int(ck, "num_actions"),
                 .dqn = !strcmp(algo, "dqn")};
    size_t n = (size_t)o.N;
    o.scores = alloc_or_die(n * (size_t)o.A * sizeof(float));
    o.value = alloc_or_die(n * sizeof(float));
    o.action = alloc_or_die(n * sizeof(int32_t));
    int64_t *action64 = alloc_or_die(n * sizeof(int64_t));
    if (cr_st_meta(ck, CR_CONVNET_META_KEY)) conv_run(argv[1], &obs, &o);
    else mlp_run(ck, &obs, &o);
    for (int i = 0; i < o.N; i++) action64[i] = o.action[i];

    cr_st_writer *w = alloc_or_die(sizeof *w);
    cr_st_writer_init(w);
    cr_st_add_tensor(w, "action", CR_ST_I64, 1, (int64_t[]){o.N}, action64); /* widest first */
    cr_st_add_tensor(w, o.dqn ? "q_values" : "logits", CR_ST_F32, 2, (int64_t[]){o.N, o.A},
                     o.scores);
    if (!o.dqn) cr_st_add_tensor(w, "value", CR_ST_F32, 2, (int64_t[]){o.N, 1}, o.value);
    CHECK_OK(cr_st_write_atomic(w, argv[3]));
    free(w), free(action64), free(o.action), free(o.value), free(o.scores);
    cr_st_close(in);
    cr_st_close(ck);
    return 0;
}
