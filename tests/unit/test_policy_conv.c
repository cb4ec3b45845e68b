/* The policy runtime on convolutional networks (cudarl_policy_* with a checkpoint that carries its
 * network spec under "network", and cr_policy_load_convnet for a net built in memory).
 *
 *   test_policy_conv cpu  DQN_CNN_CKPT WORKDIR   (label cpu)
 *   test_policy_conv cuda DQN_CNN_CKPT WORKDIR   (label gpu)
 *
 * DQN_CNN_CKPT is trained by the fixture of tests/unit/policy_conv.cmake (`cudarl train --algo dqn
 * --policy minatar-cnn` on MinAtar/Breakout-v1, a few thousand steps); WORKDIR receives the
 * checkpoints this program writes itself: CleanRL ppo_atari-shaped PPO heads (`network.*`,
 * `actor.*`, `critic.*`) on nature-cnn over CartPolePixels-v1's 4x84x84 frames, a custom spec
 * with float input, padding and tanh for an env not registered here, and damaged ones.
 *
 * The networks (their reference is the CPU forward, cr_convnet_forward, on the same weights):
 *   dqn  the trained minatar-cnn checkpoint: uint8 0/1 channels cast, not scaled
 *   ppo  nature-cnn, PPO heads, uint8 pixels scaled by 1/255
 *   f32  custom: float input (3, 12, 10), conv 8@3x3/1 pad 1 + tanh, conv 6@2x3/2 + relu,
 *        flatten, linear 20 + tanh, PPO heads (5 actions)
 *   mem  custom, the bench's shape scaled down: uint8 (4, 40, 40) / 255, conv 8@8x8/4, 16@4x4/2,
 *        16@3x3/1, flatten, linear 32 relu, PPO heads (7 actions), through cr_policy_load_convnet
 *   odd  (cuda only) custom, the half kernels' other paths: uint8 cast (3, 11, 9), conv 6@3x3/1
 *        pad 1 + relu, conv 5@3x3/2 pad 1 + tanh (6 input channels: not a multiple of 8), conv
 *        40@2x2/1 without activation (more than 32 channels, not a multiple of 64), flatten, DQN
 *        head (6 actions), through cr_policy_load_convnet
 *   pipe (cuda only) custom, the pipelined channels-last conv kernel's shapes: float (3, 13, 11),
 *        conv 8@3x3/1 pad 1 + relu, conv 40@3x3/2 pad 1 + relu (8 input channels: 4 taps to a
 *        chunk), conv 48@2x3/1 + tanh (40 input channels: chunks across taps), flatten, PPO
 *        heads (4 actions), through cr_policy_load_convnet
 *
 * cpu: act()'s logits, values and actions bitwise equal to cr_convnet_forward + argmax at several
 *   n (the runtime calls the same function on the same weights); what get_info says; every
 *   refusal of a conv checkpoint (heads of the other algo, a tensor of another shape or missing,
 *   a malformed spec, metadata that disagree with the spec, an env whose observations are not
 *   the spec's) and of act (float obs for a uint8 net, values of a DQN, NaN in float obs);
 *   TF32, BF16 and FP16 on the CPU refused (and without a GPU, asked for on AUTO); no allocation
 *   over 1,000 acts (mallinfo2, or the sanitizer's count under ASan).
 * cuda: each net's CUDA act() against its CPU act(), normwise per output (||got - want||_2 <=
 *   rtol ||want||_2, as test_convnet_cuda.c holds the twin's forward), rtol
 *   cr_precision_chain_rtol(precision, products), products = the stages and the head the
 *   output went through: fp32 1e-4 (cuBLAS's and cuDNN's summation orders against the CPU's,
 *   test_convnet_cuda's RTOL_OUT), on the GEMM engine and, where built, on cuDNN; TF32, BF16
 *   and FP16 products x the per-product tolerance of nn/precision.c's rows (2^-8, 2^-6, 2^-9:
 *   relative errors of a chain of products add up to first order); FP16 also max |got - want| /
 *   max |want| <= 1e-2, the criterion (bench infer's error column); BF16 and FP16 also
 *   against the CPU's emulation of the same roundings (rounded_forward), NORM
 *   cr_precision_twin_rtol = the format's u: only the sums' order differs there, so this is the
 *   check that catches a wrong index (random nets hide one in the float32 comparison: their
 *   outputs move by about 1% when a conv reads the wrong taps); actions equal where
 *   the CPU's top two logits are further apart than the tolerance; uint8 observations in device
 *   memory giving exactly what host ones give; at BF16 and FP16 the converted weights made on
 *   the host (cr_convnet_cuda_weights_pack) and on the device (_update) byte for byte the same,
 *   outputs bitwise the same over repeated calls and over two loads, no float weights on the
 *   device; no device allocation over 2,000 acts (cr_cuda_alloc_count) at FP32, FP16 and
 *   BF16; GPU time of the forward graph (cr_policy_cuda_time_forward) and the latency of act()
 *   at n = 1 and 16, printed, at FP32 and FP16; cudarl_policy_eval on a CUDA context (DQN and PPO
 *   checkpoints) giving the CPU's returns. */
#define _GNU_SOURCE
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "cudarl.h"
#include "env/env.h"
#include "nn/convnet.h"
#include "nn/precision.h"
#include "ops/cpu/ops_cpu.h"
#include "io/checkpoint.h"
#include "runtime/policy.h"
#include "io/safetensors.h"
#ifdef CUDARL_WITH_CUDA
#include <cuda_runtime.h>

#include "nn/convnet_cuda.h"
#include "ops/cuda/cuda_backend.h"
#endif

#if defined(__SANITIZE_ADDRESS__)
size_t __sanitizer_get_current_allocated_bytes(void); /* sanitizer/allocator_interface.h */
static size_t heap_in_use(void) { return __sanitizer_get_current_allocated_bytes(); }
#else
static size_t heap_in_use(void) { return mallinfo2().uordblks; }
#endif

#define MAXB 16 /* max_batch of the policies compared */
#define PIXELS "CartPolePixels-v1"
#define BREAKOUT "MinAtar/Breakout-v1"
#define UNREGISTERED "Custom/NotRegistered-v0"

static const char *dqn_path, *work;

/* ---- helpers ----------------------------------------------------------------------------- */

static void expect_refusal(const char *what, cudarl_status s, cudarl_status want,
                           const char *const *needles) {
    CHECK_MSG(s == want, "%s: expected %s, got %s (%s)", what, cudarl_status_name(want),
              cudarl_status_name(s), s == CUDARL_OK ? "no message" : cudarl_last_error());
    const char *msg = cudarl_last_error();
    for (int i = 0; needles[i]; i++)
        CHECK_MSG(strstr(msg, needles[i]), "%s: message lacks '%s': %s", what, needles[i], msg);
    printf("  refused %-46s %s\n", what, cudarl_status_name(s));
}
#define REFUSED(what, expr, want, ...) \
    expect_refusal(what, (expr), want, (const char *const[]){__VA_ARGS__, NULL})

static void work_path(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "%s/%s", work, name);
}

static void random_u8(uint8_t *x, size_t n, uint64_t seed, unsigned mask) {
    cr_philox_state r;
    cr_philox_seed(&r, seed, 0);
    for (size_t i = 0; i < n; i++) x[i] = (uint8_t)(cr_philox_next_u32(&r) & mask);
}

static void random_f32(float *x, size_t n, uint64_t seed) {
    cr_philox_state r;
    cr_philox_seed(&r, seed, 0);
    for (size_t i = 0; i < n; i++) x[i] = (float)cr_philox_normal(&r);
}

/* PyTorch's default init of every tensor: uniform in +-1/sqrt(fan_in) (cheap at any size, unlike
 * the orthogonal init; the runtime does not care where the weights came from). */
static void init_uniform(const cr_convnet *net, float *params, uint64_t seed) {
    cr_philox_state r;
    cr_philox_seed(&r, seed, 0);
    for (int i = 0; i < net->ntensors; i++) {
        const cr_convnet_tensor *t = &net->t[i];
        double bound = 1.0 / sqrt((double)t->fan_in);
        for (size_t e = 0; e < t->count; e++)
            params[t->offset + e] = (float)((2.0 * cr_philox_uniform_f64(&r) - 1.0) * bound);
    }
}

static void set_layers(cr_convnet_spec *s, const cr_convnet_layer *l, int n) {
    s->num_layers = n;
    for (int i = 0; i < n; i++) s->layers[i] = l[i];
}

#define CONV(k, r, s_, st, p) {CR_CONVNET_CONV, k, {r, s_}, st, p}
#define LAYER(op) {op, 0, {0, 0}, 0, 0}
#define LINEAR(o) {CR_CONVNET_LINEAR, o, {0, 0}, 0, 0}

/* The custom float-input spec (see the top of the file). */
static void spec_f32(cr_convnet_spec *s) {
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "custom");
    s->in_c = 3, s->in_h = 12, s->in_w = 10;
    s->dtype = CR_CONVNET_F32, s->scale = CR_CONVNET_SCALE_NONE;
    s->heads = CR_CONVNET_PPO, s->num_actions = 5;
    const cr_convnet_layer l[] = {CONV(8, 3, 3, 1, 1), LAYER(CR_CONVNET_TANH),
                                  CONV(6, 2, 3, 2, 0), LAYER(CR_CONVNET_RELU),
                                  LAYER(CR_CONVNET_FLATTEN), LINEAR(20), LAYER(CR_CONVNET_TANH)};
    set_layers(s, l, (int)(sizeof l / sizeof l[0]));
}

/* The bench's network (tools/cmd_bench.c) at 40x40 instead of 256x256. */
static void spec_mem(cr_convnet_spec *s) {
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "custom");
    s->in_c = 4, s->in_h = 40, s->in_w = 40;
    s->dtype = CR_CONVNET_U8, s->scale = CR_CONVNET_SCALE_255;
    s->heads = CR_CONVNET_PPO, s->num_actions = 7;
    const cr_convnet_layer l[] = {CONV(8, 8, 8, 4, 0), LAYER(CR_CONVNET_RELU),
                                  CONV(16, 4, 4, 2, 0), LAYER(CR_CONVNET_RELU),
                                  CONV(16, 3, 3, 1, 0), LAYER(CR_CONVNET_RELU),
                                  LAYER(CR_CONVNET_FLATTEN), LINEAR(32), LAYER(CR_CONVNET_RELU)};
    set_layers(s, l, (int)(sizeof l / sizeof l[0]));
}

/* The half kernels' other paths (see the top of the file). */
static void spec_odd(cr_convnet_spec *s) {
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "custom");
    s->in_c = 3, s->in_h = 11, s->in_w = 9;
    s->dtype = CR_CONVNET_U8, s->scale = CR_CONVNET_SCALE_NONE;
    s->heads = CR_CONVNET_DQN, s->num_actions = 6;
    const cr_convnet_layer l[] = {CONV(6, 3, 3, 1, 1), LAYER(CR_CONVNET_RELU),
                                  CONV(5, 3, 3, 2, 1), LAYER(CR_CONVNET_TANH),
                                  CONV(40, 2, 2, 1, 0), LAYER(CR_CONVNET_FLATTEN)};
    set_layers(s, l, (int)(sizeof l / sizeof l[0]));
}

/* The pipelined channels-last conv kernel's shapes (see the top of the file). */
static void spec_pipe(cr_convnet_spec *s) {
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "custom");
    s->in_c = 3, s->in_h = 13, s->in_w = 11;
    s->dtype = CR_CONVNET_F32, s->scale = CR_CONVNET_SCALE_NONE;
    s->heads = CR_CONVNET_PPO, s->num_actions = 4;
    const cr_convnet_layer l[] = {CONV(8, 3, 3, 1, 1), LAYER(CR_CONVNET_RELU),
                                  CONV(40, 3, 3, 2, 1), LAYER(CR_CONVNET_RELU),
                                  CONV(48, 2, 3, 1, 0), LAYER(CR_CONVNET_TANH),
                                  LAYER(CR_CONVNET_FLATTEN)};
    set_layers(s, l, (int)(sizeof l / sizeof l[0]));
}

/* A linear stage over 65,536 features (16 channels of 64 x 64): the half forward's streamed
 * FC (batch sizes up to 8) slices inputs this wide over clusters of two blocks, which the other
 * nets' linear stages are too narrow for. */
#ifdef CUDARL_WITH_CUDA
static void spec_wide(cr_convnet_spec *s) {
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "custom");
    s->in_c = 4, s->in_h = 64, s->in_w = 64;
    s->dtype = CR_CONVNET_U8, s->scale = CR_CONVNET_SCALE_255;
    s->heads = CR_CONVNET_PPO, s->num_actions = 3;
    const cr_convnet_layer l[] = {CONV(16, 3, 3, 1, 1), LAYER(CR_CONVNET_RELU),
                                  LAYER(CR_CONVNET_FLATTEN), LINEAR(64), LAYER(CR_CONVNET_RELU)};
    set_layers(s, l, (int)(sizeof l / sizeof l[0]));
}

/* The bench's network (tools/cmd_bench.c) at its 256 x 256: at 20 and more observations its
 * second conv, and at 32 its third, run unsplit (the other nets' convs split at every n <= MAXB:
 * the path the larger batches take, on hconv_halo_kernel). */
static void spec_seed(cr_convnet_spec *s) {
    spec_mem(s);
    s->in_h = 256, s->in_w = 256;
    const cr_convnet_layer l[] = {CONV(32, 8, 8, 4, 0), LAYER(CR_CONVNET_RELU),
                                  CONV(64, 4, 4, 2, 0), LAYER(CR_CONVNET_RELU),
                                  CONV(64, 3, 3, 1, 0), LAYER(CR_CONVNET_RELU),
                                  LAYER(CR_CONVNET_FLATTEN), LINEAR(512), LAYER(CR_CONVNET_RELU)};
    set_layers(s, l, (int)(sizeof l / sizeof l[0]));
}
#endif

/* What a checkpoint writer may get wrong, for the refusal cases. */
typedef struct damage {
    const char *meta_k, *meta_v; /* one more (or overriding) metadata entry */
    const char *spec_text;       /* the "network" text instead of the spec's own */
    const char *skip_tensor;     /* a tensor left out */
    const char *bad_tensor;      /* a tensor written with its dims reversed */
} damage;

/* Writes a checkpoint of `algo` for env `env` holding net (spec text under "network") with
 * weights params, as cudarl train lays one out (policy, obs_dim and num_actions metadata). */
static void write_conv_checkpoint(const char *path, const char *algo, const char *env,
                                  const cr_convnet *net, const float *params, const damage *dmg) {
    static const damage none;
    if (!dmg) dmg = &none;
    char text[CR_CONVNET_TEXT_MAX], b[32];
    CHECK_OK(cr_convnet_spec_to_text(&net->spec, text, sizeof text));
    cr_st_writer *w = malloc(sizeof *w);
    CHECK(w);
    cr_st_writer_init(w);
    cr_st_add_meta(w, "format", CR_CHECKPOINT_FORMAT);
    snprintf(b, sizeof b, "%d", CR_CHECKPOINT_VERSION), cr_st_add_meta(w, "format_version", b);
    cr_st_add_meta(w, "algo", algo);
    cr_st_add_meta(w, "policy", net->spec.name);
    cr_st_add_meta(w, CR_CONVNET_META_KEY, dmg->spec_text ? dmg->spec_text : text);
    cr_st_add_meta(w, "env_id", env);
    const char *k = dmg->meta_k ? dmg->meta_k : "";
    snprintf(b, sizeof b, "%d", net->in_floats);
    if (strcmp(k, "obs_dim")) cr_st_add_meta(w, "obs_dim", b);
    snprintf(b, sizeof b, "%d", net->spec.num_actions);
    if (strcmp(k, "num_actions")) cr_st_add_meta(w, "num_actions", b);
    if (dmg->meta_k) cr_st_add_meta(w, dmg->meta_k, dmg->meta_v);
    for (int i = 0; i < net->ntensors; i++) {
        const cr_convnet_tensor *t = &net->t[i];
        if (dmg->skip_tensor && !strcmp(t->name, dmg->skip_tensor)) continue;
        int reverse = dmg->bad_tensor && !strcmp(t->name, dmg->bad_tensor);
        int64_t shape[4];
        for (int d = 0; d < t->ndim; d++) shape[d] = t->shape[reverse ? t->ndim - 1 - d : d];
        CHECK_OK(cr_st_add_tensor(w, t->name, CR_ST_F32, t->ndim, shape, params + t->offset));
    }
    CHECK_OK(cr_st_write_atomic(w, path));
    free(w);
}

/* A net of a checkpoint or built here: its plan, weights, and where it comes from. */
typedef struct test_net {
    const char *label;
    char path[512];            /* the checkpoint; empty for the in-memory net */
    cr_convnet net;
    float *params;             /* (host) net.num_params */
    cudarl_obs_dtype dtype;
    unsigned u8_mask;          /* random uint8 observations: 1 (MinAtar's 0/1) or 255 */
} test_net;

/* The trained DQN checkpoint's net, read with the library's own readers. */
static void net_from_checkpoint(test_net *t, const char *label, const char *path) {
    memset(t, 0, sizeof *t);
    t->label = label;
    snprintf(t->path, sizeof t->path, "%s", path);
    cr_st_file *f;
    CHECK_OK(cr_st_open(&f, path));
    cr_convnet_spec spec;
    CHECK_OK(cr_convnet_spec_parse(&spec, cr_st_meta(f, CR_CONVNET_META_KEY), path));
    CHECK_OK(cr_convnet_plan(&t->net, &spec));
    t->params = malloc(t->net.num_params * sizeof(float));
    CHECK(t->params);
    for (int i = 0; i < t->net.ntensors; i++)
        CHECK_OK(cr_st_read_f32(f, t->net.t[i].name, t->params + t->net.t[i].offset,
                                t->net.t[i].count));
    cr_st_close(f);
    t->dtype = spec.dtype == CR_CONVNET_U8 ? CUDARL_OBS_U8 : CUDARL_OBS_F32;
    t->u8_mask = spec.scale == CR_CONVNET_SCALE_255 ? 255u : 1u;
}

/* A net of `spec` with random weights, written as a checkpoint `file` of env `env` (file NULL:
 * kept in memory, for cr_policy_load_convnet). */
static void net_made(test_net *t, const char *label, const cr_convnet_spec *spec,
                     const char *env, const char *file, uint64_t seed) {
    memset(t, 0, sizeof *t);
    t->label = label;
    CHECK_OK(cr_convnet_plan(&t->net, spec));
    t->params = malloc(t->net.num_params * sizeof(float));
    CHECK(t->params);
    init_uniform(&t->net, t->params, seed);
    t->dtype = spec->dtype == CR_CONVNET_U8 ? CUDARL_OBS_U8 : CUDARL_OBS_F32;
    t->u8_mask = spec->scale == CR_CONVNET_SCALE_255 ? 255u : 1u;
    if (!file) return;
    work_path(t->path, sizeof t->path, file);
    write_conv_checkpoint(t->path, spec->heads == CR_CONVNET_DQN ? "dqn" : "ppo", env, &t->net,
                          t->params, NULL);
}

static cudarl_policy *load_net(const test_net *t, cudarl_device_kind dev, cudarl_precision prec,
                               cr_convnet_engine engine, int max_batch) {
    cudarl_policy_options o;
    cudarl_policy_options_default(&o);
    o.device = dev, o.precision = prec, o.max_batch = max_batch;
    cudarl_policy *p = NULL;
    if (t->path[0] && engine == CR_CONVNET_ENGINE_AUTO)
        CHECK_OK(cudarl_policy_load(t->path, &o, &p));
    else
        CHECK_OK(cr_policy_load_convnet(&t->net, t->params, t->label, engine, &o, &p));
    return p;
}

static size_t obs_bytes(const test_net *t, int n) {
    return (size_t)n * (size_t)t->net.in_floats * (t->dtype == CUDARL_OBS_U8 ? 1 : sizeof(float));
}

/* n random observations of the net's dtype into obs. */
static void random_obs(const test_net *t, void *obs, int n, uint64_t seed) {
    size_t elems = (size_t)n * (size_t)t->net.in_floats;
    if (t->dtype == CUDARL_OBS_U8) random_u8(obs, elems, seed, t->u8_mask);
    else random_f32(obs, elems, seed);
}

static int is_ppo(const test_net *t) { return t->net.spec.heads == CR_CONVNET_PPO; }

/* ---- cpu --------------------------------------------------------------------------------- */

/* act() against cr_convnet_forward + argmax on the same observations, bitwise. */
static void test_forward_bitwise(const test_net *t) {
    cudarl_policy *p = load_net(t, CUDARL_DEVICE_CPU, CUDARL_PRECISION_FP32,
                                CR_CONVNET_ENGINE_AUTO, MAXB);
    cudarl_policy_info info;
    cudarl_policy_get_info(p, &info);
    const int A = t->net.spec.num_actions, ppo = is_ppo(t);
    CHECK_MSG(info.obs_dim == t->net.in_floats && info.num_actions == A &&
              info.obs_dtype == t->dtype && info.has_values == ppo &&
              !strcmp(info.algo, ppo ? "ppo" : "dqn") &&
              !strcmp(info.network, t->net.spec.name) && info.device == CUDARL_DEVICE_CPU &&
              info.precision == CUDARL_PRECISION_FP32 && info.graph_batches == 0,
              "%s: info says %s %s, obs_dim %d, %d actions", t->label, info.algo, info.network,
              info.obs_dim, info.num_actions);
    void *obs = malloc(obs_bytes(t, MAXB));
    void *cache = aligned_alloc(64, (cr_convnet_cache_bytes(&t->net, MAXB) + 63) / 64 * 64);
    float *lg = malloc((size_t)MAXB * A * sizeof(float)), *lw = malloc((size_t)MAXB * A * 4);
    float v[MAXB], vw[MAXB];
    int32_t a[MAXB], aw[MAXB];
    CHECK(obs && cache && lg && lw);
    cr_convnet_cache c;
    cr_convnet_cache_carve(&t->net, cache, MAXB, &c);
    const int ns[] = {1, 3, 8, MAXB};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        int n = ns[k];
        random_obs(t, obs, n, 100 + k);
        CHECK_OK(cudarl_policy_act(p, obs, t->dtype, n, a, ppo ? v : NULL, lg));
        cr_convnet_forward(&t->net, t->params, obs, lw, ppo ? vw : NULL, &c, n);
        cr_cpu_categorical_argmax(lw, aw, n, A);
        CHECK_MSG(!memcmp(lg, lw, (size_t)n * A * sizeof *lg), "%s n %d: logits differ from "
                  "cr_convnet_forward's", t->label, n);
        CHECK_MSG(!memcmp(a, aw, (size_t)n * sizeof *a), "%s n %d: actions differ", t->label, n);
        if (ppo) CHECK_MSG(!memcmp(v, vw, (size_t)n * sizeof *v), "%s n %d: values differ",
                           t->label, n);
        int32_t only[MAXB];
        CHECK_OK(cudarl_policy_act(p, obs, t->dtype, n, only, NULL, NULL));
        CHECK_MSG(!memcmp(only, aw, (size_t)n * sizeof *only), "%s n %d: actions without the "
                  "other outputs differ", t->label, n);
    }
    printf("  %s (%s, %s, %s): act() bitwise equal to cr_convnet_forward + argmax at n = 1, 3, "
           "8, %d\n", t->label, info.algo, info.network,
           t->dtype == CUDARL_OBS_U8 ? (t->u8_mask == 1 ? "uint8 cast" : "uint8 / 255")
                                     : "float32", MAXB);
    cudarl_policy_free(p);
    free(obs), free(cache), free(lg), free(lw);
}

static cudarl_status load_status(const char *path, cudarl_device_kind dev,
                                 cudarl_precision prec) {
    cudarl_policy_options o;
    cudarl_policy_options_default(&o);
    o.device = dev, o.precision = prec;
    cudarl_policy *p = NULL;
    cudarl_status s = cudarl_policy_load(path, &o, &p);
    CHECK_MSG((s == CUDARL_OK) == (p != NULL), "load returned %s with policy %p",
              cudarl_status_name(s), (void *)p);
    cudarl_policy_free(p);
    return s;
}

/* Writes t's net with one damage and returns what loading it says. */
static cudarl_status load_damaged(const test_net *t, const char *algo, const char *env,
                                  const damage *d) {
    char path[512];
    work_path(path, sizeof path, "damaged.safetensors");
    write_conv_checkpoint(path, algo, env, &t->net, t->params, d);
    return load_status(path, CUDARL_DEVICE_CPU, CUDARL_PRECISION_FP32);
}

/* The same file evaluated on the CPU (2 episodes): the runtime reads a network from its file
 * alone, and evaluation, which knows the env the file names, holds the two against each other. */
static cudarl_status eval_damaged(const test_net *t, const char *algo, const char *env,
                                  const damage *d) {
    CHECK_MSG(load_damaged(t, algo, env, d) == CUDARL_OK, "a network for another env's "
              "observations did not load: %s", cudarl_last_error());
    char path[512];
    work_path(path, sizeof path, "damaged.safetensors");
    cudarl_ctx *cpu;
    CHECK_OK(cudarl_ctx_init(&cpu, CUDARL_DEVICE_CPU, 0));
    double mean = 0, std = 0;
    cudarl_status s = cudarl_policy_eval(cpu, path, 2, 1, &mean, &std);
    cudarl_ctx_free(cpu);
    return s;
}

static void test_load_refusals(const test_net *ppo, const test_net *f32) {
    damage d;
    memset(&d, 0, sizeof d);
    REFUSED("ppo checkpoint of a net with DQN heads",
            load_damaged(ppo, "dqn", PIXELS, &d), CUDARL_ERR_MISMATCH, "algo 'dqn'",
            "ppo heads");
    d = (damage){.bad_tensor = "network.0.weight"};
    REFUSED("a conv weight of another shape", load_damaged(ppo, "ppo", PIXELS, &d),
            CUDARL_ERR_MISMATCH, "network.0.weight", "[8, 8, 4, 32]", "[32, 4, 8, 8]");
    d = (damage){.bad_tensor = "actor.weight"};
    REFUSED("a head of another shape", load_damaged(ppo, "ppo", PIXELS, &d),
            CUDARL_ERR_MISMATCH, "actor.weight", "[512, 2]");
    d = (damage){.skip_tensor = "critic.bias"};
    REFUSED("a missing tensor", load_damaged(ppo, "ppo", PIXELS, &d), CUDARL_ERR_MISMATCH,
            "critic.bias");
    d = (damage){.spec_text = "{\"format\":\"cudarl-convnet\",\"version\":1,"};
    REFUSED("a spec that is not JSON", load_damaged(ppo, "ppo", PIXELS, &d), CUDARL_ERR_FORMAT,
            "metadata \"network\"", "not valid JSON");
    d = (damage){.spec_text = "{\"format\":\"cudarl-convnet\",\"version\":9}"};
    REFUSED("a spec of a newer version", load_damaged(ppo, "ppo", PIXELS, &d),
            CUDARL_ERR_FORMAT, "version 9");
    d = (damage){.meta_k = "obs_dim", .meta_v = "1234"};
    REFUSED("obs_dim that is not the spec's", load_damaged(f32, "ppo", UNREGISTERED, &d),
            CUDARL_ERR_MISMATCH, "'obs_dim' is 1234", "360");
    d = (damage){.meta_k = "obs_input", .meta_v = CR_POLICY_U8_CAST};
    REFUSED("obs_input cast for a /255 spec", load_damaged(ppo, "ppo", PIXELS, &d),
            CUDARL_ERR_MISMATCH, "obs_input", "scaled by 1/255");
    memset(&d, 0, sizeof d);
    REFUSED("eval: the spec of another env's frames", eval_damaged(ppo, "ppo", BREAKOUT, &d),
            CUDARL_ERR_MISMATCH, "(4, 84, 84)", BREAKOUT, "(4, 10, 10)");
    REFUSED("eval: float32 frames for a uint8 env", eval_damaged(f32, "ppo", PIXELS, &d),
            CUDARL_ERR_MISMATCH, "float32 observations", PIXELS);
    REFUSED("TF32 on the CPU", load_status(ppo->path, CUDARL_DEVICE_CPU, CUDARL_PRECISION_TF32),
            CUDARL_ERR_UNSUPPORTED, "TF32", "CUDA only", "FP32");
    REFUSED("BF16 on the CPU", load_status(ppo->path, CUDARL_DEVICE_CPU, CUDARL_PRECISION_BF16),
            CUDARL_ERR_UNSUPPORTED, "BF16", "CUDA only", "tensor cores", "FP32");
    REFUSED("FP16 on the CPU", load_status(ppo->path, CUDARL_DEVICE_CPU, CUDARL_PRECISION_FP16),
            CUDARL_ERR_UNSUPPORTED, "FP16", "CUDA only", "FP32");
    int gpus = 0;
#ifdef CUDARL_WITH_CUDA
    gpus = cr_policy_cuda_devices();
#endif
    if (!gpus) /* AUTO finds no GPU: the CPU does not compute in fp16 */
        REFUSED("FP16 on AUTO without a GPU", load_status(ppo->path, CUDARL_DEVICE_AUTO,
                CUDARL_PRECISION_FP16), CUDARL_ERR_UNSUPPORTED, "FP16", "CUDA only",
                "no usable GPU", "FP32");
}

static void test_act_refusals(const test_net *dqn, const test_net *f32) {
    cudarl_policy *q = load_net(dqn, CUDARL_DEVICE_CPU, CUDARL_PRECISION_FP32,
                                CR_CONVNET_ENGINE_AUTO, 4);
    cudarl_policy *p = load_net(f32, CUDARL_DEVICE_CPU, CUDARL_PRECISION_FP32,
                                CR_CONVNET_ENGINE_AUTO, 4);
    float *obs = calloc((size_t)4 * f32->net.in_floats, sizeof(float));
    float v[4], lg[4 * 8];
    int32_t a[4];
    CHECK(obs);
    REFUSED("act: float32 obs for a uint8 conv net", cudarl_policy_act(q, obs, CUDARL_OBS_F32, 1,
            a, NULL, NULL), CUDARL_ERR_INVALID_ARG, "CUDARL_OBS_U8", "cast");
    REFUSED("act: values of a DQN conv net", cudarl_policy_act(q, obs, CUDARL_OBS_U8, 1, a, v,
            lg), CUDARL_ERR_INVALID_ARG, "values must be NULL");
    REFUSED("act: uint8 obs for a float32 conv net", cudarl_policy_act(p, obs, CUDARL_OBS_U8, 1,
            a, NULL, NULL), CUDARL_ERR_INVALID_ARG, "CUDARL_OBS_F32");
    obs[2 * f32->net.in_floats + 7] = NAN;
    REFUSED("act: NaN observation", cudarl_policy_act(p, obs, CUDARL_OBS_F32, 3, a, v, NULL),
            CUDARL_ERR_NUMERIC, "observation 2, element 7");
    cudarl_latency_stats st;
    CHECK_OK(cudarl_policy_latency(p, &st));
    CHECK_MSG(st.count == 0, "refused acts were counted: %lld", (long long)st.count);
    cudarl_policy_free(q);
    cudarl_policy_free(p);
    free(obs);
}

static void test_noalloc_cpu(const test_net *const *nets, int count) {
    cudarl_policy *p[4];
    void *obs[4];
    float v[MAXB], lg[MAXB * 8];
    int32_t a[MAXB];
    for (int k = 0; k < count; k++) {
        p[k] = load_net(nets[k], CUDARL_DEVICE_CPU, CUDARL_PRECISION_FP32,
                        CR_CONVNET_ENGINE_AUTO, 8);
        obs[k] = malloc(obs_bytes(nets[k], 8));
        CHECK(obs[k]);
        random_obs(nets[k], obs[k], 8, 31 + k);
        CHECK_OK(cudarl_policy_act(p[k], obs[k], nets[k]->dtype, 8, a, NULL, NULL));
    }
    size_t before = 0;
    /* one cycle of the loop's pattern first: OpenMP keeps the team of the last parallel region
     * for the next, sized for its thread count, so the heap is compared from the same state */
    for (int pass = 0; pass < 2; pass++) {
        if (pass) before = heap_in_use();
        for (int i = 0; i < (pass ? 1000 : 4); i++)
            for (int k = 0; k < count; k++) {
                int n = 1 + i % 4, ppo = is_ppo(nets[k]);
                CHECK_OK(cudarl_policy_act(p[k], obs[k], nets[k]->dtype, n, a,
                                           ppo && (i & 1) ? v : NULL, (i & 2) ? lg : NULL));
            }
    }
    size_t after = heap_in_use();
    CHECK_MSG(after == before, "heap in use went from %zu to %zu bytes over 1,000 acts", before,
              after);
    printf("  no allocation: heap in use %zu bytes before and after 1,000 acts of each conv net\n",
           after);
    for (int k = 0; k < count; k++) cudarl_policy_free(p[k]), free(obs[k]);
}

/* ---- cuda -------------------------------------------------------------------------------- */

#ifdef CUDARL_WITH_CUDA
#define CUDA_OK(expr) CHECK_MSG((expr) == cudaSuccess, "%s", cudaGetErrorString(cudaGetLastError()))
#define FP16_MAX_REL 1e-2 /* issue 8: fp16 outputs within 1e-2 relative of fp32 */

static int is_half(cudarl_precision p) {
    return p == CUDARL_PRECISION_BF16 || p == CUDARL_PRECISION_FP16;
}

/* ||got - want||_2 / ||want||_2 over n floats (no NaN in got). */
static double norm_err(const float *got, const float *want, size_t n) {
    double e = 0, w = 0;
    for (size_t i = 0; i < n; i++) {
        CHECK_MSG(!isnan(got[i]), "element %zu is NaN", i);
        e += ((double)got[i] - want[i]) * ((double)got[i] - want[i]);
        w += (double)want[i] * want[i];
    }
    return sqrt(e) / fmax(sqrt(w), 1e-30);
}

/* Actions equal wherever the CPU's best logit leads the runner-up by more than tol of the row's
 * largest logit. */
static void check_actions(const char *what, const int32_t *got, const int32_t *want,
                          const float *lw, int n, int A, double tol) {
    for (int i = 0; i < n; i++) {
        if (got[i] == want[i]) continue;
        double scale = 1e-30;
        for (int j = 0; j < A; j++) scale = fmax(scale, fabs(lw[i * A + j]));
        double gap = fabs((double)lw[i * A + got[i]] - lw[i * A + want[i]]);
        CHECK_MSG(gap <= tol * scale, "%s row %d: CUDA action %d, CPU %d, logits %g apart", what,
                  i, got[i], want[i], gap);
    }
}

/* The tolerance of a net's outputs in `prec`: cr_precision_chain_rtol over the products on the
 * way, every stage and the head (DQN's Q head is one of its stages). */
static double net_rtol(const test_net *t, cudarl_precision prec) {
    return cr_precision_chain_rtol(prec, t->net.nstages + (is_ppo(t) ? 1 : 0));
}

/* Whether the half forward's first conv multiplies the uint8 bytes themselves and divides its
 * sums by 255 (a first conv over uint8 / 255 read a word at a time: no padding; S, stride and W
 * multiples of 4: ops/cuda/conv2d_half.cu's u8_words). */
static int exact_bytes(const cr_convnet *net) {
    const cr_conv2d_shape *cs = &net->stage[0].conv;
    return net->spec.dtype == CR_CONVNET_U8 && net->spec.scale == CR_CONVNET_SCALE_255 &&
           net->stage[0].op == CR_CONVNET_CONV && cs->pad == 0 && cs->S % 4 == 0 &&
           cs->stride % 4 == 0 && cs->W % 4 == 0;
}

/* The BF16 / FP16 forward emulated on the CPU: the GPU's roundings up to the order of the
 * float32 sums. The input as the spec scales it, then rounded to the format; each stage's
 * weights rounded, its float32 bias, the CPU's conv or linear op in float32, the activation,
 * the output rounded; the heads' weights rounded, their outputs float32. out (n, A), value (n)
 * (ppo; else not written). Test code: it allocates its buffers. */
static void rounded_forward(const test_net *t, cr_dtype fmt, const void *obs, int n, float *out,
                            float *value) {
    const cr_convnet *net = &t->net;
    const float *params = t->params;
    float *w = malloc(net->num_params * sizeof *w);
    CHECK(w);
    memcpy(w, params, net->num_params * sizeof *w);
    for (int i = 0; i < net->ntensors; i++)
        if (net->t[i].ndim > 1)
            for (size_t e = 0; e < net->t[i].count; e++)
                w[net->t[i].offset + e] = cr_round_to_dtype(w[net->t[i].offset + e], fmt);
    const size_t width = (size_t)(net->in_floats > net->widest ? net->in_floats : net->widest);
    const size_t in = (size_t)n * net->in_floats;
    float *cur = malloc((size_t)n * width * sizeof *cur), *nxt = malloc((size_t)n * width * 4);
    size_t scratch_bytes = 64;
    for (int i = 0; i < net->ntrunk; i++)
        if (net->stage[i].op == CR_CONVNET_CONV) {
            size_t b = cr_cpu_conv2d_scratch_bytes(&net->stage[i].conv);
            scratch_bytes = b > scratch_bytes ? b : scratch_bytes;
        }
    void *scratch = aligned_alloc(64, (scratch_bytes + 63) / 64 * 64);
    CHECK(cur && nxt && scratch);
    const int exact = exact_bytes(net); /* the bytes as they are: 0 .. 255 exact in the format */
    if (net->spec.dtype == CR_CONVNET_F32) memcpy(cur, obs, in * sizeof *cur);
    else if (net->spec.scale == CR_CONVNET_SCALE_255 && !exact) cr_cpu_scale_u8(obs, cur, in);
    else
        for (size_t i = 0; i < in; i++) cur[i] = (float)((const uint8_t *)obs)[i];
    for (size_t i = 0; i < in; i++) cur[i] = cr_round_to_dtype(cur[i], fmt);
    float *zeros = calloc((size_t)net->widest, sizeof *zeros);
    CHECK(zeros);
    for (int i = 0; i < net->ntrunk; i++) {
        const cr_convnet_stage *st = &net->stage[i];
        const float *sw = w + net->t[st->weight].offset, *sb = params + net->t[st->bias].offset;
        const int div = exact && i == 0; /* the sum / 255, then the bias */
        if (st->op == CR_CONVNET_CONV) {
            cr_conv2d_shape s = st->conv;
            s.N = n;
            cr_cpu_conv2d_forward(&s, cur, sw, div ? zeros : sb, nxt, 0, scratch);
        } else {
            cr_cpu_linear_forward(cur, sw, sb, nxt, n, st->in, st->out);
        }
        const size_t m = (size_t)n * st->out;
        const size_t per_image = (size_t)st->out;
        for (size_t e = 0; e < m; e++) {
            float v = nxt[e];
            if (div) { /* (N, K, P, Q): channel k = (e mod K P Q) / (P Q) */
                const size_t pq = (size_t)st->conv.P * st->conv.Q;
                v = v / 255.0f + sb[(e % per_image) / pq];
            }
            if (st->act == CR_CONVNET_RELU) v = v < 0.0f ? 0.0f : v;
            else if (st->act == CR_CONVNET_TANH) v = cr_tanhf(v);
            nxt[e] = cr_round_to_dtype(v, fmt);
        }
        float *swap = cur;
        cur = nxt, nxt = swap;
    }
    const int F = net->features, A = net->spec.num_actions;
    if (net->spec.heads == CR_CONVNET_DQN) {
        const cr_convnet_stage *q = &net->stage[net->ntrunk];
        cr_cpu_linear_forward(cur, w + net->t[q->weight].offset, params + net->t[q->bias].offset,
                              out, n, F, A);
    } else {
        cr_cpu_linear_forward(cur, w + net->t[net->actor_w].offset,
                              params + net->t[net->actor_b].offset, out, n, F, A);
        cr_cpu_linear_forward(cur, w + net->t[net->critic_w].offset,
                              params + net->t[net->critic_b].offset, value, n, F, 1);
    }
    free(w), free(cur), free(nxt), free(scratch), free(zeros);
}

/* max |got - want| over n / max |want| over n (bench infer's error column). */
static double max_rel_err(const float *got, const float *want, size_t n) {
    double e = 0, m = 1e-30;
    for (size_t i = 0; i < n; i++) {
        e = fmax(e, fabs((double)got[i] - want[i]));
        m = fmax(m, fabs((double)want[i]));
    }
    return e / m;
}

/* The net's CUDA act() (precision, engine) against its CPU act() at several n. */
static void compare_devices(const test_net *t, cudarl_precision prec, cr_convnet_engine engine) {
    const int A = t->net.spec.num_actions, ppo = is_ppo(t);
    const double rtol = net_rtol(t, prec);
    cudarl_policy *cpu = load_net(t, CUDARL_DEVICE_CPU, CUDARL_PRECISION_FP32,
                                  CR_CONVNET_ENGINE_AUTO, MAXB);
    cudarl_policy *gpu = load_net(t, CUDARL_DEVICE_CUDA, prec, engine, MAXB);
    cudarl_policy_info info;
    cudarl_policy_get_info(gpu, &info);
    CHECK_MSG(info.device == CUDARL_DEVICE_CUDA && info.graph_batches == 5 &&
              info.precision == prec && info.device_bytes > 0 && info.context_bytes > 0,
              "%s: info device %d, %d graph batches, %zu device bytes", t->label,
              (int)info.device, info.graph_batches, info.device_bytes);
    /* a half policy's context keeps a 1 MiB cuBLAS workspace (its product borrows a cache
     * buffer), not the default 32 MiB (Hopper) or 4 MiB */
    CHECK_MSG(!is_half(prec) || info.context_bytes < ((size_t)2 << 20),
              "%s %s: the context holds %zu bytes; a half policy's cuBLAS workspace is 1 MiB",
              t->label, cudarl_precision_name(prec), info.context_bytes);
    void *obs = malloc(obs_bytes(t, MAXB));
    float *lc = malloc((size_t)MAXB * A * 4), *lg = malloc((size_t)MAXB * A * 4);
    float vc[MAXB], vg[MAXB];
    int32_t ac[MAXB], ag[MAXB];
    CHECK(obs && lc && lg);
    const int ns[] = {1, 2, 3, 5, 9, MAXB};
    const cr_dtype fmt = cr_precision_policy_of(prec)->activations;
    const double twin_rtol = cr_precision_twin_rtol(prec);
    float *lt = malloc((size_t)MAXB * A * 4), vt[MAXB];
    CHECK(lt);
    double worst = 0, worst_max = 0, worst_twin = 0;
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        int n = ns[k];
        random_obs(t, obs, n, 40 + k);
        CHECK_OK(cudarl_policy_act(cpu, obs, t->dtype, n, ac, ppo ? vc : NULL, lc));
        CHECK_OK(cudarl_policy_act(gpu, obs, t->dtype, n, ag, ppo ? vg : NULL, lg));
        double e = norm_err(lg, lc, (size_t)n * A);
        double em = max_rel_err(lg, lc, (size_t)n * A);
        if (ppo) e = fmax(e, norm_err(vg, vc, (size_t)n));
        if (ppo) em = fmax(em, max_rel_err(vg, vc, (size_t)n));
        CHECK_MSG(e <= rtol, "%s %s n %d: ||cuda - cpu|| / ||cpu|| = %.3g > %.3g", t->label,
                  cudarl_precision_name(prec), n, e, rtol);
        CHECK_MSG(prec != CUDARL_PRECISION_FP16 || em <= FP16_MAX_REL, "%s fp16 n %d: max |cuda "
                  "- cpu| / max |cpu| = %.3g > %g", t->label, n, em, FP16_MAX_REL);
        check_actions(t->label, ag, ac, lc, n, A, rtol);
        worst = fmax(worst, e), worst_max = fmax(worst_max, em);
        if (!is_half(prec)) continue;
        /* the same roundings on the CPU: only the sums' order differs (a wrong index: percents) */
        rounded_forward(t, fmt, obs, n, lt, vt);
        double et = norm_err(lg, lt, (size_t)n * A);
        if (ppo) et = fmax(et, norm_err(vg, vt, (size_t)n));
        CHECK_MSG(et <= twin_rtol, "%s %s n %d: ||cuda - rounded cpu|| / ||rounded cpu|| = "
                  "%.3g > %.3g", t->label, cudarl_precision_name(prec), n, et, twin_rtol);
        worst_twin = fmax(worst_twin, et);
    }
    const char *eng = cr_convnet_cuda_engine_name(cr_convnet_cuda_engine(gpu->conv_gpu));
    printf("  %s, %s, engine %s: CUDA act() against CPU act() at n = 1..%d: %.3g (<= %.3g), "
           "max rel. %.3g, actions equal; %zu B device + %zu B context, %zu B pinned\n",
           t->label, cudarl_precision_name(prec), eng, MAXB, worst, rtol, worst_max,
           info.device_bytes, info.context_bytes, info.pinned_bytes);
    if (is_half(prec))
        printf("  %s, %s: against the CPU's emulation of its roundings %.3g (<= %.3g)\n",
               t->label, cudarl_precision_name(prec), worst_twin, twin_rtol);
    if (is_half(prec)) { /* the float weights stay on the host: only the converted ones here */
        size_t wbytes = cr_convnet_cuda_weights_bytes(gpu->conv_gpu);
        CHECK_MSG(gpu->params == NULL && wbytes > 0 && info.device_bytes >= wbytes,
                  "%s %s: params %p, %zu B converted weights, %zu device bytes", t->label,
                  cudarl_precision_name(prec), (void *)gpu->params, wbytes, info.device_bytes);
        /* uint8 input on a discrete GPU: the odd stages write into the input's own buffer where
         * they fit (their outputs above are right, so the first stage read it before) */
        const cr_convnet_half_cache *hc = &gpu->conv_half;
        size_t odd = 0; /* bytes of the odd stages' buffer, on the cache's 256-byte line */
        for (int i = 1; i < t->net.ntrunk; i += 2)
            if ((size_t)t->net.stage[i].out * 2 > odd) odd = (size_t)t->net.stage[i].out * 2;
        odd = (odd * (size_t)gpu->rows + 255) / 256 * 256;
        const int lends = t->dtype == CUDARL_OBS_U8 && !gpu->maps_obs && odd > 0 &&
                          odd <= (size_t)gpu->rows * gpu->obs_row_bytes;
        CHECK_MSG(lends ? hc->input == gpu->obs_u8 && hc->act[1] == gpu->obs_u8
                        : hc->input == NULL,
                  "%s %s: the second stage's output at %p, the input buffer %p (lent: %p, "
                  "want %s)", t->label, cudarl_precision_name(prec), hc->act[1],
                  (void *)gpu->obs_u8, hc->input, lends ? "lent" : "not lent");
    }
    cudarl_policy_free(cpu);
    cudarl_policy_free(gpu);
    free(obs), free(lc), free(lg), free(lt);
}

/* Observations in device memory, and outputs there (the compute graph and act()'s own copies),
 * give what host pointers give (the full graph). */
static void test_device_pointers(const test_net *t, cudarl_precision prec) {
    const int n = 13, A = t->net.spec.num_actions, ppo = is_ppo(t);
    cudarl_policy *gpu = load_net(t, CUDARL_DEVICE_CUDA, prec, CR_CONVNET_ENGINE_AUTO, MAXB);
    size_t bytes = obs_bytes(t, n);
    void *obs = malloc(bytes), *d_obs = NULL;
    float *lh = malloc((size_t)n * A * 4), *l2 = malloc((size_t)n * A * 4), *d_l = NULL;
    float vh[MAXB], v2[MAXB], *d_v = NULL;
    int32_t ah[MAXB], a2[MAXB], *d_a = NULL;
    CHECK(obs && lh && l2);
    random_obs(t, obs, n, 77);
    /* values only from a PPO net: a DQN policy refuses a values buffer */
    memset(vh, 0, sizeof vh), memset(v2, 0, sizeof v2);
    CHECK_OK(cudarl_policy_act(gpu, obs, t->dtype, n, ah, ppo ? vh : NULL, lh));
    CUDA_OK(cudaMalloc(&d_obs, bytes));
    CUDA_OK(cudaMalloc((void **)&d_l, (size_t)n * A * 4));
    CUDA_OK(cudaMalloc((void **)&d_v, (size_t)n * 4));
    CUDA_OK(cudaMalloc((void **)&d_a, (size_t)n * 4));
    CUDA_OK(cudaMemcpy(d_obs, obs, bytes, cudaMemcpyHostToDevice));
    for (int mode = 0; mode < 2; mode++) { /* device obs; device obs and outputs */
        float *vals = !ppo ? NULL : mode ? d_v : v2;
        CHECK_OK(cudarl_policy_act(gpu, d_obs, t->dtype, n, mode ? d_a : a2, vals,
                                   mode ? d_l : l2));
        if (mode) {
            CUDA_OK(cudaMemcpy(a2, d_a, (size_t)n * 4, cudaMemcpyDeviceToHost));
            if (ppo) CUDA_OK(cudaMemcpy(v2, d_v, (size_t)n * 4, cudaMemcpyDeviceToHost));
            CUDA_OK(cudaMemcpy(l2, d_l, (size_t)n * A * 4, cudaMemcpyDeviceToHost));
        }
        CHECK_MSG(!memcmp(a2, ah, (size_t)n * 4) && !memcmp(v2, vh, (size_t)n * 4) &&
                  !memcmp(l2, lh, (size_t)n * A * 4), "%s: pointer mode %d differs from host",
                  t->label, mode);
    }
    printf("  %s, %s: device observations (and outputs) give the host pointers' outputs, "
           "bitwise\n", t->label, cudarl_precision_name(prec));
    cudaFree(d_obs), cudaFree(d_l), cudaFree(d_v), cudaFree(d_a);
    cudarl_policy_free(gpu);
    free(obs), free(lh), free(l2);
}

static void test_noalloc_cuda(const test_net *t, cudarl_precision prec) {
    cudarl_policy *gpu = load_net(t, CUDARL_DEVICE_CUDA, prec, CR_CONVNET_ENGINE_AUTO, MAXB);
    const int A = t->net.spec.num_actions, ppo = is_ppo(t);
    size_t bytes = obs_bytes(t, MAXB);
    void *obs = malloc(bytes), *d_obs = NULL;
    float *lg = malloc((size_t)MAXB * A * 4), v[MAXB];
    int32_t a[MAXB];
    CHECK(obs && lg);
    random_obs(t, obs, MAXB, 5);
    CUDA_OK(cudaMalloc(&d_obs, bytes));
    CUDA_OK(cudaMemcpy(d_obs, obs, bytes, cudaMemcpyHostToDevice));
    size_t before = cr_cuda_alloc_count();
    for (int i = 0; i < 2000; i++) {
        int n = 1 + i % MAXB;
        CHECK_OK(cudarl_policy_act(gpu, (i % 3) ? obs : d_obs, t->dtype, n, a,
                                   ppo && (i & 1) ? v : NULL, (i & 2) ? lg : NULL));
    }
    size_t after = cr_cuda_alloc_count();
    CHECK_MSG(after == before, "%s: %zu device allocations over 2,000 acts", t->label,
              after - before);
    printf("  %s, %s: no device allocation over 2,000 acts (cr_cuda_alloc_count %zu)\n",
           t->label, cudarl_precision_name(prec), after);
    cudaFree(d_obs);
    cudarl_policy_free(gpu);
    free(obs), free(lg);
}

/* GPU time of the forward graph and act()'s latency at n = 1 and n = MAXB, printed. */
static void test_timing(const test_net *t, cudarl_precision prec) {
    cudarl_policy *gpu = load_net(t, CUDARL_DEVICE_CUDA, prec, CR_CONVNET_ENGINE_AUTO, MAXB);
    void *obs = malloc(obs_bytes(t, MAXB));
    int32_t a[MAXB];
    float ms[200];
    CHECK(obs);
    random_obs(t, obs, MAXB, 9);
    const int ns[2] = {1, MAXB};
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < 200; i++)
            CHECK_OK(cudarl_policy_act(gpu, obs, t->dtype, ns[k], a, NULL, NULL));
        CHECK_OK(cr_policy_cuda_time_forward(gpu, ns[k], 200, ms));
        float lo = ms[0];
        for (int i = 0; i < 200; i++) {
            CHECK_MSG(ms[i] > 0 && ms[i] < 1e4, "GPU time %g ms", ms[i]);
            lo = ms[i] < lo ? ms[i] : lo;
        }
        cudarl_latency_stats st;
        CHECK_OK(cudarl_policy_latency(gpu, &st));
        printf("  %s, %s, n = %d: forward graph GPU time min %.1f us; act() end to end (host in "
               "and out) p50 %.1f us, p99 %.1f us\n", t->label, cudarl_precision_name(prec),
               ns[k], 1e3 * lo, st.p50_us, st.p99_us);
    }
    cudarl_policy_free(gpu);
    free(obs);
}

/* The converted weights made on the host (cr_convnet_cuda_weights_pack) and on the device
 * (cr_convnet_cuda_weights_update, from float weights in device memory) are the same bytes. */
static void test_weights_twin(const test_net *t, cudarl_precision prec) {
    cudarl_ctx *ctx = NULL;
    cr_convnet_cuda *cn = NULL;
    const int batches[1] = {1};
    CHECK_OK(cudarl_ctx_init(&ctx, CUDARL_DEVICE_CUDA, 0));
    CHECK_OK(cr_convnet_cuda_init_precision(ctx, &t->net, batches, 1, CR_CONVNET_ENGINE_AUTO,
                                            prec, &cn));
    CHECK(cr_convnet_cuda_engine(cn) == CR_CONVNET_ENGINE_IGEMM &&
          cr_convnet_cuda_precision(cn) == prec);
    const size_t bytes = cr_convnet_cuda_weights_bytes(cn), pbytes = t->net.num_params * 4;
    unsigned char *host = malloc(bytes), *back = malloc(bytes);
    void *d_weights = NULL, *d_params = NULL;
    CHECK(host && back && bytes > 0);
    cr_convnet_cuda_weights_pack(cn, t->params, host);
    CUDA_OK(cudaMalloc(&d_weights, bytes));
    CUDA_OK(cudaMalloc(&d_params, pbytes));
    CUDA_OK(cudaMemset(d_weights, 0xff, bytes)); /* the update must write every byte */
    CUDA_OK(cudaMemcpy(d_params, t->params, pbytes, cudaMemcpyHostToDevice));
    cr_convnet_cuda_set_weights(cn, d_weights);
    cr_convnet_cuda_weights_update(ctx, cn, d_params);
    ctx->ops->sync(ctx);
    CUDA_OK(cudaMemcpy(back, d_weights, bytes, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < bytes; i++)
        CHECK_MSG(back[i] == host[i], "%s %s: converted weights byte %zu: device %02x, host %02x",
                  t->label, cudarl_precision_name(prec), i, back[i], host[i]);
    printf("  %s, %s: converted weights (%zu B) of the host and the device byte for byte equal\n",
           t->label, cudarl_precision_name(prec), bytes);
    cudaFree(d_weights), cudaFree(d_params);
    free(host), free(back);
    cr_convnet_cuda_free(cn);
    cudarl_ctx_free(ctx);
}

/* Two loads of a net, each called twice on the same observations at every n: all outputs
 * bitwise the same (fixed summation orders, no atomics). */
static void test_repeatable(const test_net *t, cudarl_precision prec) {
    const int A = t->net.spec.num_actions, ppo = is_ppo(t);
    cudarl_policy *p[2];
    for (int k = 0; k < 2; k++) p[k] = load_net(t, CUDARL_DEVICE_CUDA, prec,
                                                CR_CONVNET_ENGINE_AUTO, MAXB);
    void *obs = malloc(obs_bytes(t, MAXB));
    float *l[3], v[3][MAXB];
    int32_t a[3][MAXB];
    for (int k = 0; k < 3; k++) l[k] = malloc((size_t)MAXB * A * sizeof(float));
    CHECK(obs && l[0] && l[1] && l[2]);
    random_obs(t, obs, MAXB, 123);
    for (int n = 1; n <= MAXB; n++) {
        /* call 0 and 1 on the first load, call 2 on the second */
        for (int k = 0; k < 3; k++)
            CHECK_OK(cudarl_policy_act(p[k / 2], obs, t->dtype, n, a[k], ppo ? v[k] : NULL,
                                       l[k]));
        for (int k = 1; k < 3; k++) {
            CHECK_MSG(!memcmp(l[k], l[0], (size_t)n * A * sizeof(float)) &&
                      !memcmp(a[k], a[0], (size_t)n * sizeof(int32_t)) &&
                      (!ppo || !memcmp(v[k], v[0], (size_t)n * sizeof(float))),
                      "%s %s n %d: call %d differs from the first", t->label,
                      cudarl_precision_name(prec), n, k);
        }
    }
    printf("  %s, %s: outputs bitwise repeatable over calls and loads at n = 1..%d\n", t->label,
           cudarl_precision_name(prec), MAXB);
    for (int k = 0; k < 2; k++) cudarl_policy_free(p[k]);
    for (int k = 0; k < 3; k++) free(l[k]);
    free(obs);
}

/* cudarl_policy_eval on a CUDA context (the runtime on the GPU, fp32) against the same on the
 * CPU: the same greedy returns, and the same again when repeated. A greedy action flips only
 * where two logits are within the fp32 twins' 1e-4 of each other, which the trained DQN and
 * the seeded PPO net are not at the states these episodes reach (else the means differ and
 * this says so). */
static void test_eval_on_device(const test_net *t, int episodes) {
    cudarl_ctx *cpu, *gpu;
    CHECK_OK(cudarl_ctx_init(&cpu, CUDARL_DEVICE_CPU, 0));
    CHECK_OK(cudarl_ctx_init(&gpu, CUDARL_DEVICE_CUDA, 0));
    double m_cpu, s_cpu, m_gpu, s_gpu, m_again, s_again;
    CHECK_OK(cudarl_policy_eval(cpu, t->path, episodes, 7, &m_cpu, &s_cpu));
    CHECK_OK(cudarl_policy_eval(gpu, t->path, episodes, 7, &m_gpu, &s_gpu));
    CHECK_OK(cudarl_policy_eval(gpu, t->path, episodes, 7, &m_again, &s_again));
    printf("  %s: eval of %d episodes, mean %.3f std %.3f on the CPU, %.3f %.3f on the GPU\n",
           t->label, episodes, m_cpu, s_cpu, m_gpu, s_gpu);
    CHECK_MSG(m_gpu == m_again && s_gpu == s_again, "%s: two GPU evals differ (%.6f, %.6f)",
              t->label, m_gpu, m_again);
    CHECK_MSG(m_gpu == m_cpu && s_gpu == s_cpu, "%s: the GPU eval's returns differ from the "
              "CPU's (mean %.6f vs %.6f): a greedy action flipped at a near-tie of two logits, "
              "or the runtime's actions differ", t->label, m_gpu, m_cpu);
    /* in fp16 (the runtime's half engine): a result, the same twice (near-ties may flip an
     * action against fp32, so it is printed, not compared) */
    double m16, s16, m16b, s16b;
    CHECK_OK(cudarl_policy_eval_precision(gpu, t->path, episodes, 7, CUDARL_PRECISION_FP16, &m16,
                                          &s16));
    CHECK_OK(cudarl_policy_eval_precision(gpu, t->path, episodes, 7, CUDARL_PRECISION_FP16,
                                          &m16b, &s16b));
    printf("  %s: eval in fp16 on the GPU: mean %.3f std %.3f\n", t->label, m16, s16);
    CHECK_MSG(isfinite(m16) && m16 >= 0 && m16 == m16b && s16 == s16b,
              "%s: fp16 evals %.6f and %.6f", t->label, m16, m16b);
    /* a missing file is named as missing on the GPU too (it was once called "an MLP policy") */
    char missing[600];
    snprintf(missing, sizeof missing, "%s.missing", t->path);
    cudarl_status ms = cudarl_policy_eval_precision(gpu, missing, 2, 7, CUDARL_PRECISION_FP32,
                                                    &m16, &s16);
    CHECK_MSG(ms != CUDARL_OK && strstr(cudarl_last_error(), missing) &&
                  !strstr(cudarl_last_error(), "MLP"),
              "eval of a missing file on the GPU: status %d, '%s'", (int)ms, cudarl_last_error());
    REFUSED("eval in bf16 on the CPU",
            cudarl_policy_eval_precision(cpu, t->path, 2, 7, CUDARL_PRECISION_BF16, &m16, &s16),
            CUDARL_ERR_INVALID_ARG, "evaluates on the GPU", "--device cuda");
    cudarl_ctx_free(cpu);
    cudarl_ctx_free(gpu);
}

/* The unsplit convs (the larger batches' path) in fp16 and bf16 against the CPU, at n = 20
 * (conv3 still split) and 32 (neither split) on the bench's network; the CPU's forward once per
 * n (it is the slow part). */
static void test_unsplit(const test_net *t) {
    enum { NB = 32 };
    static const int ns[2] = {20, NB};
    static const cudarl_precision prec[2] = {CUDARL_PRECISION_FP16, CUDARL_PRECISION_BF16};
    const int A = t->net.spec.num_actions;
    cudarl_policy *gpu[2];
    for (int h = 0; h < 2; h++)
        gpu[h] = load_net(t, CUDARL_DEVICE_CUDA, prec[h], CR_CONVNET_ENGINE_AUTO, NB);
    cudarl_policy *cpu = load_net(t, CUDARL_DEVICE_CPU, CUDARL_PRECISION_FP32,
                                  CR_CONVNET_ENGINE_AUTO, NB);
    void *obs = malloc(obs_bytes(t, NB));
    float *lg = malloc((size_t)NB * A * sizeof(float)), *lc = malloc((size_t)NB * A * sizeof(float));
    float vg[NB], vc[NB];
    int32_t ag[NB], ac[NB];
    CHECK(obs && lg && lc);
    double worst[2] = {0, 0};
    for (int j = 0; j < 2; j++) {
        const int n = ns[j];
        random_obs(t, obs, n, 77 + j);
        CHECK_OK(cudarl_policy_act(cpu, obs, t->dtype, n, ac, vc, lc));
        for (int h = 0; h < 2; h++) {
            const double rtol = net_rtol(t, prec[h]);
            CHECK_OK(cudarl_policy_act(gpu[h], obs, t->dtype, n, ag, vg, lg));
            const double e = fmax(norm_err(lg, lc, (size_t)n * A), norm_err(vg, vc, (size_t)n));
            CHECK_MSG(e <= rtol, "%s %s n %d: ||cuda - cpu|| / ||cpu|| = %.3g > %.3g", t->label,
                      cudarl_precision_name(prec[h]), n, e, rtol);
            check_actions(t->label, ag, ac, lc, n, A, rtol);
            worst[h] = fmax(worst[h], e);
        }
    }
    for (int h = 0; h < 2; h++) {
        printf("  %s, %s: CUDA act() against CPU act() at n = 20 and 32, the convs unsplit: "
               "%.3g (<= %.3g)\n", t->label, cudarl_precision_name(prec[h]), worst[h],
               net_rtol(t, prec[h]));
        cudarl_policy_free(gpu[h]);
    }
    cudarl_policy_free(cpu);
    free(obs), free(lg), free(lc);
}

/* cudarl_policy_obs_buffer: observations written into the policy's own pinned buffer give
 * act() the bits of the same observations from the caller's memory, at every n (act() zeroes
 * the buffer's rows n .. of the graph's batch), without an allocation. */
static void test_obs_buffer(const test_net *t, cudarl_precision prec) {
    const int A = t->net.spec.num_actions, ppo = is_ppo(t);
    cudarl_policy *p = load_net(t, CUDARL_DEVICE_CUDA, prec, CR_CONVNET_ENGINE_AUTO, MAXB);
    void *buf = NULL;
    size_t bytes = 0;
    CHECK_OK(cudarl_policy_obs_buffer(p, &buf, &bytes));
    CHECK_MSG(buf && bytes == obs_bytes(t, MAXB), "%s: obs_buffer %p of %zu bytes (want %zu)",
              t->label, buf, bytes, obs_bytes(t, MAXB));
    void *obs = malloc(bytes);
    float *l0 = malloc((size_t)MAXB * A * sizeof(float)), *l1 = malloc((size_t)MAXB * A * 4);
    float v0[MAXB], v1[MAXB];
    int32_t a0[MAXB], a1[MAXB];
    CHECK(obs && l0 && l1);
    random_obs(t, obs, MAXB, 99);
    memset(buf, 0xA5, bytes); /* what a previous step left: act() must not read past n */
    const size_t allocs = cr_cuda_alloc_count();
    for (int n = MAXB; n >= 1; n--) {
        memcpy(buf, obs, obs_bytes(t, n));
        CHECK_OK(cudarl_policy_act(p, obs, t->dtype, n, a0, ppo ? v0 : NULL, l0));
        CHECK_OK(cudarl_policy_act(p, buf, t->dtype, n, a1, ppo ? v1 : NULL, l1));
        CHECK_MSG(!memcmp(a0, a1, (size_t)n * sizeof *a0) &&
                      !memcmp(l0, l1, (size_t)n * A * sizeof *l0) &&
                      (!ppo || !memcmp(v0, v1, (size_t)n * sizeof *v0)),
                  "%s %s n %d: act() from the policy's buffer differs from act() from the "
                  "caller's memory", t->label, cudarl_precision_name(prec), n);
    }
    CHECK_MSG(cr_cuda_alloc_count() == allocs, "%s: act() from the buffer allocated", t->label);
    printf("  %s, %s: act() from cudarl_policy_obs_buffer (%zu bytes) = act() from the caller's "
           "memory, n = %d..1\n", t->label, cudarl_precision_name(prec), bytes, MAXB);
    cudarl_policy_free(p);
    free(obs), free(l0), free(l1);
}

static void run_cuda(const test_net *const *nets, int count, const test_net *wide,
                     const test_net *seed) {
    test_eval_on_device(nets[0], 12); /* the trained DQN on MinAtar/Breakout-v1 */
    test_eval_on_device(nets[1], 70); /* PPO nature-cnn on CartPolePixels-v1: two chunks */
    static const cudarl_precision halves[2] = {CUDARL_PRECISION_FP16, CUDARL_PRECISION_BF16};
    for (int k = 0; k < count; k++) {
        compare_devices(nets[k], CUDARL_PRECISION_FP32, CR_CONVNET_ENGINE_AUTO);
#ifdef CUDARL_WITH_CUDNN
        compare_devices(nets[k], CUDARL_PRECISION_FP32, CR_CONVNET_ENGINE_CUDNN);
#endif
        compare_devices(nets[k], CUDARL_PRECISION_TF32, CR_CONVNET_ENGINE_AUTO);
        for (int h = 0; h < 2; h++) {
            compare_devices(nets[k], halves[h], CR_CONVNET_ENGINE_AUTO);
            test_weights_twin(nets[k], halves[h]);
            test_repeatable(nets[k], halves[h]);
        }
    }
    /* the streamed FC's clusters, at n = 1, 2, 3 and 5 of compare_devices's sizes */
    for (int h = 0; h < 2; h++) compare_devices(wide, halves[h], CR_CONVNET_ENGINE_AUTO);
    test_unsplit(seed);
    test_device_pointers(nets[0], CUDARL_PRECISION_FP32);
    test_device_pointers(nets[2], CUDARL_PRECISION_FP32);
    for (int h = 0; h < 2; h++) {
        test_device_pointers(nets[0], halves[h]);
        test_device_pointers(nets[2], halves[h]);
    }
    test_obs_buffer(nets[1], CUDARL_PRECISION_FP16); /* uint8 pixels */
    test_obs_buffer(nets[2], CUDARL_PRECISION_FP32); /* float features */
    test_noalloc_cuda(nets[1], CUDARL_PRECISION_FP32);
    test_noalloc_cuda(nets[1], CUDARL_PRECISION_FP16);
    test_noalloc_cuda(nets[0], CUDARL_PRECISION_BF16);
    test_timing(nets[1], CUDARL_PRECISION_FP32);
    test_timing(nets[1], CUDARL_PRECISION_FP16);
}
#endif

int main(int argc, char **argv) {
    if (argc != 4 || (strcmp(argv[1], "cpu") && strcmp(argv[1], "cuda"))) {
        fprintf(stderr, "usage: test_policy_conv cpu|cuda DQN_CNN_CKPT WORKDIR\n");
        return 2;
    }
    dqn_path = argv[2], work = argv[3];
    mkdir(work, 0755); /* may exist */
    cudarl_log_set_level(CUDARL_LOG_WARN);
    cr_convnet_spec spec;
    test_net dqn, ppo, f32, mem, odd, pipe;
    net_from_checkpoint(&dqn, "dqn minatar-cnn", dqn_path);
    CHECK_OK(cr_convnet_spec_named(&spec, "nature-cnn", 4, 84, 84, CR_CONVNET_PPO, 2));
    net_made(&ppo, "ppo nature-cnn", &spec, PIXELS, "ppo_nature.safetensors", 1);
    spec_f32(&spec);
    net_made(&f32, "ppo custom f32", &spec, UNREGISTERED, "ppo_f32.safetensors", 2);
    spec_mem(&spec);
    net_made(&mem, "in-memory custom", &spec, NULL, NULL, 3);
    spec_odd(&spec);
    net_made(&odd, "in-memory odd", &spec, NULL, NULL, 4);
    spec_pipe(&spec);
    net_made(&pipe, "in-memory pipe", &spec, NULL, NULL, 5);
    const test_net *nets[6] = {&dqn, &ppo, &f32, &mem, &odd, &pipe};
    if (!strcmp(argv[1], "cpu")) {
        for (int k = 0; k < 4; k++) test_forward_bitwise(nets[k]);
        test_load_refusals(&ppo, &f32);
        test_act_refusals(&dqn, &f32);
        test_noalloc_cpu(nets, 4);
    } else {
#ifdef CUDARL_WITH_CUDA
        test_net wide, seed;
        spec_wide(&spec);
        net_made(&wide, "in-memory wide", &spec, NULL, NULL, 6);
        spec_seed(&spec);
        net_made(&seed, "in-memory seed", &spec, NULL, NULL, 7);
        run_cuda(nets, 6, &wide, &seed);
        free(wide.params), free(seed.params);
#else
        fprintf(stderr, "test_policy_conv cuda: this build has no CUDA backend\n");
        return 1;
#endif
    }
    for (int k = 0; k < 6; k++) free(nets[k]->params);
    printf("test_policy_conv %s: ok\n", argv[1]);
    return 0;
}
