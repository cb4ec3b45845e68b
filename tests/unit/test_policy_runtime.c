/* The policy runtime (cudarl_policy_*, src/runtime/policy.c and policy_cuda.cu).
 *
 *   test_policy_runtime cpu  PPO_CKPT DQN_CKPT WORKDIR   (label cpu)
 *   test_policy_runtime cuda PPO_CKPT DQN_CKPT WORKDIR   (label gpu)
 *
 * The checkpoints are trained by the fixture tests of tests/unit/policy_runtime.cmake
 * (`cudarl train --total-timesteps 4096`); WORKDIR receives the checkpoints this program writes
 * itself (uint8 and damaged ones).
 *
 * cpu: act() equals the greedy policy as cudarl eval computes it, bitwise: its logits, values
 *   and actions against cr_mlp_forward + argmax on the CPU backend, and the returns of episodes
 *   played through act() against cudarl_policy_eval's; uint8 observations (pixels: x / 255;
 *   MinAtar DQN: cast) against the same forward of the converted floats; every refusal of load,
 *   act and latency with its status and message; cudarl_policy_eval of an MLP on MinAtar (the
 *   runtime's), and its refusals of a network that does not fit its env; the latency stats (count, window, p50 <= p99 <=
 *   max, deadline misses, refused calls not counted) and the radix select under them against
 *   qsort; no allocation over 10,000 acts (glibc mallinfo2().uordblks unchanged; under ASan
 *   the sanitizer allocator's bytes in use).
 * cuda: CUDA act() against CPU act() (normalised error <= 1e-5: cuBLAS sums in another order than
 *   the CPU, as in test_ops_cuda's linear; actions equal where the top two logits are further
 *   apart than that; under TF32, 3 x 2^-8: see TOL_TF32), device-pointer observations and outputs (and managed memory) giving
 *   exactly what host pointers give, device pointers refused by a CPU policy, no device
 *   allocation over 10,000 acts (cr_cuda_alloc_count unchanged), and the latency of a host
 *   act() of one observation, printed. */
#define _GNU_SOURCE
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "cudarl.h"
#include "env/cartpole/cartpole.h"
#include "env/env.h"
#include "nn/actor_critic.h"
#include "nn/qnet.h"
#include "ops/cpu/ops_conv.h"
#include "io/checkpoint.h"
#include "runtime/policy.h"
#include "io/safetensors.h"
#ifdef CUDARL_WITH_CUDA
#include <cuda_runtime.h>

#include "ops/cuda/cuda_backend.h"
#endif

/* Heap bytes in use: glibc's count, or the sanitizer allocator's under ASan (which replaces
 * glibc's malloc, so that mallinfo2 would see nothing). */
#if defined(__SANITIZE_ADDRESS__)
size_t __sanitizer_get_current_allocated_bytes(void); /* sanitizer/allocator_interface.h */
static size_t heap_in_use(void) { return __sanitizer_get_current_allocated_bytes(); }
#else
static size_t heap_in_use(void) { return mallinfo2().uordblks; }
#endif

#define MAXB 64        /* max_batch of the policies compared */
#define MAX_ACTIONS 16
#define MAX_OBS 512

static const char *ppo_path, *dqn_path, *work;

/* ---- helpers ----------------------------------------------------------------------------- */

static cudarl_policy *load(const char *path, cudarl_device_kind dev, int max_batch,
                           double deadline_us) {
    cudarl_policy_options o;
    cudarl_policy_options_default(&o);
    o.device = dev, o.max_batch = max_batch, o.deadline_us = deadline_us;
    cudarl_policy *p = NULL;
    CHECK_OK(cudarl_policy_load(path, &o, &p));
    return p;
}

/* n * d normal observations (float32) from stream `seed`. */
static void random_obs(float *obs, int n, int d, uint64_t seed) {
    cr_philox_state r;
    cr_philox_seed(&r, seed, 0);
    for (int i = 0; i < n * d; i++) obs[i] = (float)cr_philox_normal(&r);
}

/* Expects `s` to be `want` with every needle in the message. */
static void expect_refusal(const char *what, cudarl_status s, cudarl_status want,
                           const char *const *needles) {
    CHECK_MSG(s == want, "%s: expected %s, got %s (%s)", what, cudarl_status_name(want),
              cudarl_status_name(s), s == CUDARL_OK ? "no message" : cudarl_last_error());
    const char *msg = cudarl_last_error();
    for (int i = 0; needles[i]; i++)
        CHECK_MSG(strstr(msg, needles[i]), "%s: message lacks '%s': %s", what, needles[i], msg);
    printf("  refused %-44s %s\n", what, cudarl_status_name(s));
}
#define REFUSED(what, expr, want, ...) \
    expect_refusal(what, (expr), want, (const char *const[]){__VA_ARGS__, NULL})

/* The network in a checkpoint, read with the library's own readers: what cudarl eval runs. */
typedef struct ref_net {
    int is_dqn, obs_dim, num_actions, widest;
    cr_ac_layout ac;
    cr_qnet_layout q;
    float *params;
} ref_net;

static int meta_int(const cr_st_file *f, const char *key) {
    const char *v = cr_st_meta(f, key);
    CHECK_MSG(v, "metadata '%s' missing", key);
    return atoi(v);
}

static void ref_load(const char *path, ref_net *r) {
    memset(r, 0, sizeof *r);
    cr_st_file *f;
    CHECK_OK(cr_st_open(&f, path));
    r->is_dqn = !strcmp(cr_st_meta(f, "algo"), "dqn");
    r->obs_dim = meta_int(f, "obs_dim"), r->num_actions = meta_int(f, "num_actions");
    const cr_param_tensor *t;
    int nt;
    size_t np;
    if (r->is_dqn) {
        cr_qnet_layout_init(&r->q, r->obs_dim, meta_int(f, "hidden1"), meta_int(f, "hidden2"),
                            r->num_actions);
        t = r->q.t, nt = CR_QNET_NUM_TENSORS, np = r->q.num_params;
        r->widest = cr_qnet_widest(&r->q);
    } else {
        cr_ac_layout_init(&r->ac, r->obs_dim, meta_int(f, "hidden"), r->num_actions);
        t = r->ac.t, nt = CR_AC_NUM_TENSORS, np = r->ac.num_params, r->widest = r->ac.hidden;
    }
    r->params = malloc(np * sizeof(float));
    CHECK(r->params);
    for (int i = 0; i < nt; i++)
        CHECK_OK(cr_st_read_f32(f, t[i].name, r->params + t[i].offset, t[i].count));
    cr_st_close(f);
}

/* logits (n, A), actions (n), values (n, PPO) of float observations x (n, D) on the CPU backend:
 * cr_mlp_forward and categorical_argmax, as cudarl eval's eval_batch calls them. */
static void ref_forward(cudarl_ctx *ctx, const ref_net *r, const float *x, int n, float *logits,
                        int32_t *actions, float *values) {
    float *mem = malloc(cr_mlp_cache_floats(n, r->widest) * sizeof(float));
    CHECK(mem);
    cr_mlp_cache cache = cr_mlp_cache_carve(mem, n, r->widest);
    cr_mlp_view m = r->is_dqn ? cr_qnet_view(&r->q, r->params) : cr_ac_actor(&r->ac, r->params);
    cr_mlp_forward(ctx, &m, x, logits, &cache, n);
    ctx->ops->categorical_argmax(ctx, logits, actions, n, r->num_actions);
    if (!r->is_dqn) {
        cr_mlp_view c = cr_ac_critic(&r->ac, r->params);
        cr_mlp_forward(ctx, &c, x, values, &cache, n);
    }
    free(mem);
}

static void check_bitwise(const char *what, const void *got, const void *want, size_t bytes) {
    CHECK_MSG(!memcmp(got, want, bytes), "%s differs from the reference", what);
}

/* ---- cpu: the greedy policy as cudarl eval computes it ------------------------------------ */

static void test_forward_bitwise(cudarl_ctx *cpu, const char *path) {
    ref_net r;
    ref_load(path, &r);
    cudarl_policy *p = load(path, CUDARL_DEVICE_CPU, MAXB, 0);
    static float obs[MAXB * MAX_OBS], lg[MAXB * MAX_ACTIONS], lw[MAXB * MAX_ACTIONS];
    static float v[MAXB], vw[MAXB];
    static int32_t a[MAXB], aw[MAXB];
    const int ns[] = {1, 3, 8, MAXB};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        int n = ns[k], A = r.num_actions;
        random_obs(obs, n, r.obs_dim, 100 + k);
        CHECK_OK(cudarl_policy_act(p, obs, CUDARL_OBS_F32, n, a, r.is_dqn ? NULL : v, lg));
        ref_forward(cpu, &r, obs, n, lw, aw, vw);
        check_bitwise("logits", lg, lw, (size_t)n * A * sizeof(float));
        check_bitwise("actions", a, aw, (size_t)n * sizeof(int32_t));
        if (!r.is_dqn) check_bitwise("values", v, vw, (size_t)n * sizeof(float));
        int32_t only[MAXB];
        CHECK_OK(cudarl_policy_act(p, obs, CUDARL_OBS_F32, n, only, NULL, NULL));
        check_bitwise("actions without values and logits", only, aw, (size_t)n * sizeof(int32_t));
    }
    printf("  %s: act() logits, values and actions bitwise equal to cr_mlp_forward + argmax at "
           "n = 1, 3, 8, %d\n", r.is_dqn ? "dqn" : "ppo", MAXB);
    cudarl_policy_free(p);
    free(r.params);
}

/* Plays `n` CartPole episodes (seed) greedily through act(), as eval_batch plays them. */
static void play_through_act(cudarl_policy *p, int n, uint64_t seed, double *mean, double *std) {
    cr_cartpole env;
    void *mem = aligned_alloc(64, (cr_cartpole_bytes(n) + 63) / 64 * 64);
    float *obs = malloc((size_t)n * 4 * sizeof(float));
    float *fin = malloc((size_t)n * 4 * sizeof(float));
    float *reward = malloc((size_t)n * sizeof(float));
    uint8_t *term = malloc((size_t)n), *trunc = malloc((size_t)n), *live = malloc((size_t)n);
    int32_t *actions = malloc((size_t)n * sizeof(int32_t));
    double *ret = calloc((size_t)n, sizeof(double));
    CHECK(mem && obs && fin && reward && term && trunc && live && actions && ret);
    cr_cartpole_init(&env, n, mem);
    cr_cartpole_reset(&env, seed, obs);
    memset(live, 1, (size_t)n);
    for (int remaining = n; remaining > 0;) {
        CHECK_OK(cudarl_policy_act(p, obs, CUDARL_OBS_F32, n, actions, NULL, NULL));
        cr_cartpole_step(&env, actions, obs, reward, term, trunc, fin);
        for (int i = 0; i < n; i++) {
            if (!live[i]) continue;
            ret[i] += reward[i];
            if (term[i] || trunc[i]) live[i] = 0, remaining--;
        }
    }
    double m = 0, v = 0;
    for (int i = 0; i < n; i++) m += ret[i];
    m /= n;
    for (int i = 0; i < n; i++) v += (ret[i] - m) * (ret[i] - m);
    *mean = m, *std = sqrt(v / n);
    free(mem), free(obs), free(fin), free(reward), free(term), free(trunc), free(live);
    free(actions), free(ret);
}

static void test_matches_eval(cudarl_ctx *cpu, const char *path) {
    const int episodes = 16;
    const uint64_t seed = 11;
    double em, es, am, as;
    CHECK_OK(cudarl_policy_eval(cpu, path, episodes, seed, &em, &es));
    cudarl_policy *p = load(path, CUDARL_DEVICE_CPU, episodes, 0);
    play_through_act(p, episodes, seed, &am, &as);
    cudarl_policy_free(p);
    CHECK_MSG(am == em && as == es, "episodes through act(): mean %.17g std %.17g; cudarl eval: "
              "mean %.17g std %.17g", am, as, em, es);
    printf("  %s: %d episodes through act() return mean %.2f std %.2f, exactly cudarl eval's\n",
           path, episodes, am, as);
}

/* ---- cpu: uint8 observations ------------------------------------------------------------- */

/* Writes a checkpoint of random weights for env `env` (registered) as cudarl train lays it out:
 * algo `algo`, `policy` metadata, and `extra` metadata key/value (may be NULL). */
static void write_checkpoint(const char *path, const char *algo, const char *policy,
                             const char *env, int obs_dim, int A, int hidden, const char *extra_k,
                             const char *extra_v) {
    int dqn = !strcmp(algo, "dqn");
    cr_ac_layout ac;
    cr_qnet_layout q;
    const cr_param_tensor *t;
    int nt;
    size_t np;
    if (dqn) {
        cr_qnet_layout_init(&q, obs_dim, hidden, hidden, A);
        t = q.t, nt = CR_QNET_NUM_TENSORS, np = q.num_params;
    } else {
        cr_ac_layout_init(&ac, obs_dim, hidden, A);
        t = ac.t, nt = CR_AC_NUM_TENSORS, np = ac.num_params;
    }
    float *params = malloc(np * sizeof(float));
    cr_st_writer *w = malloc(sizeof *w);
    CHECK(params && w);
    random_obs(params, 1, (int)np, 5);
    for (size_t i = 0; i < np; i++) params[i] *= 0.2f;
    cr_st_writer_init(w);
    char b[32];
    cr_st_add_meta(w, "format", CR_CHECKPOINT_FORMAT);
    snprintf(b, sizeof b, "%d", CR_CHECKPOINT_VERSION), cr_st_add_meta(w, "format_version", b);
    cr_st_add_meta(w, "algo", algo);
    cr_st_add_meta(w, "policy", policy);
    cr_st_add_meta(w, "env_id", env);
    snprintf(b, sizeof b, "%d", obs_dim), cr_st_add_meta(w, "obs_dim", b);
    snprintf(b, sizeof b, "%d", A), cr_st_add_meta(w, "num_actions", b);
    snprintf(b, sizeof b, "%d", hidden);
    cr_st_add_meta(w, dqn ? "hidden1" : "hidden", b);
    if (dqn) cr_st_add_meta(w, "hidden2", b);
    if (extra_k) cr_st_add_meta(w, extra_k, extra_v);
    for (int i = 0; i < nt; i++) {
        int64_t shape[2] = {t[i].shape[0], t[i].shape[1]};
        CHECK_OK(cr_st_add_tensor(w, t[i].name, CR_ST_F32, t[i].ndim, shape, params + t[i].offset));
    }
    CHECK_OK(cr_st_write_atomic(w, path));
    free(w), free(params);
}

static void work_path(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "%s/%s", work, name);
}

#define BREAKOUT "MinAtar/Breakout-v1"

/* The two uint8 checkpoints: PPO on Breakout's frames without obs_input (pixels: x / 255), and a
 * DQN with obs_input CR_POLICY_U8_CAST (MinAtar's 0/1 channels cast as they are). */
static void u8_checkpoints(char *scaled, char *cast, size_t cap, int *obs_dim, int *A) {
    const cudarl_env_def *def = cr_env_def_find(BREAKOUT);
    CHECK_MSG(def, "%s is not registered", BREAKOUT);
    *obs_dim = (int)cr_env_def_obs_elems(def), *A = def->num_actions;
    work_path(scaled, cap, "u8_scaled.safetensors");
    work_path(cast, cap, "u8_cast.safetensors");
    write_checkpoint(scaled, "ppo", "mlp", BREAKOUT, *obs_dim, *A, 16, "obs_input",
                     CR_POLICY_U8_SCALED);
    write_checkpoint(cast, "dqn", "qnet", BREAKOUT, *obs_dim, *A, 16, "obs_input",
                     CR_POLICY_U8_CAST);
}

static void random_u8(uint8_t *x, size_t n, uint64_t seed) {
    cr_philox_state r;
    cr_philox_seed(&r, seed, 0);
    for (size_t i = 0; i < n; i++) x[i] = (uint8_t)(cr_philox_next_u32(&r) & 255u);
}

static void test_u8(cudarl_ctx *cpu) {
    char scaled[512], cast[512];
    int D, A;
    u8_checkpoints(scaled, cast, sizeof scaled, &D, &A);
    const char *paths[2] = {scaled, cast};
    const int n = 5;
    uint8_t *x = malloc((size_t)n * D);
    float *xf = malloc((size_t)n * D * sizeof(float));
    CHECK(x && xf);
    random_u8(x, (size_t)n * D, 3);
    for (int k = 0; k < 2; k++) {
        ref_net r;
        ref_load(paths[k], &r);
        cudarl_policy *p = load(paths[k], CUDARL_DEVICE_CPU, 8, 0);
        cudarl_policy_info info;
        cudarl_policy_get_info(p, &info);
        CHECK(info.obs_dtype == CUDARL_OBS_U8 && info.obs_dim == D && info.num_actions == A);
        if (k == 0) cr_cpu_scale_u8(x, xf, (size_t)n * D);
        else
            for (int i = 0; i < n * D; i++) xf[i] = (float)x[i];
        float lg[8 * MAX_ACTIONS], lw[8 * MAX_ACTIONS], v[8], vw[8];
        int32_t a[8], aw[8];
        CHECK_OK(cudarl_policy_act(p, x, CUDARL_OBS_U8, n, a, k ? NULL : v, lg));
        ref_forward(cpu, &r, xf, n, lw, aw, vw);
        check_bitwise("uint8 logits", lg, lw, (size_t)n * A * sizeof(float));
        check_bitwise("uint8 actions", a, aw, (size_t)n * sizeof(int32_t));
        if (!k) check_bitwise("uint8 values", v, vw, (size_t)n * sizeof(float));
        REFUSED(k ? "float32 obs for a cast-uint8 policy" : "float32 obs for a pixel policy",
                cudarl_policy_act(p, xf, CUDARL_OBS_F32, n, a, NULL, NULL),
                CUDARL_ERR_INVALID_ARG, "float32", "CUDARL_OBS_U8", k ? "cast" : "1/255");
        cudarl_policy_free(p);
        free(r.params);
    }
    printf("  uint8: pixels (x / 255) and MinAtar DQN (cast) bitwise equal to the forward of the "
           "converted floats\n");
    free(x), free(xf);
}

/* ---- cpu: refusals ----------------------------------------------------------------------- */

static cudarl_status load_with(const char *path, cudarl_policy_options o) {
    cudarl_policy *p = NULL;
    cudarl_status s = cudarl_policy_load(path, &o, &p);
    CHECK_MSG(s != CUDARL_OK || p, "load returned OK without a policy");
    CHECK_MSG(s == CUDARL_OK || !p, "load failed but returned a policy");
    cudarl_policy_free(p);
    return s;
}

/* cudarl_policy_eval of path on the CPU (5 episodes): where the env the file names is known. */
static cudarl_status eval_on_cpu(const char *path) {
    cudarl_ctx *cpu;
    CHECK_OK(cudarl_ctx_init(&cpu, CUDARL_DEVICE_CPU, 0));
    double mean = 0, std = 0;
    cudarl_status s = cudarl_policy_eval(cpu, path, 5, 1, &mean, &std);
    cudarl_ctx_free(cpu);
    return s;
}

static void test_load_refusals(void) {
    cudarl_policy_options d, o;
    cudarl_policy_options_default(&d);
    cudarl_policy *p;
    REFUSED("load: out NULL", cudarl_policy_load(ppo_path, &d, NULL), CUDARL_ERR_INVALID_ARG,
            "out is NULL");
    REFUSED("load: checkpoint NULL", cudarl_policy_load(NULL, &d, &p), CUDARL_ERR_INVALID_ARG,
            "checkpoint is NULL", "cudarl train");
    char missing[512], bad[512], path[512];
    work_path(missing, sizeof missing, "no-such-dir/model.safetensors");
    REFUSED("load: missing file", load_with(missing, d), CUDARL_ERR_IO, missing, "check the path");
    work_path(bad, sizeof bad, "not_a_checkpoint.safetensors");
    FILE *f = fopen(bad, "wb");
    CHECK(f);
    fputs("this is not safetensors", f);
    fclose(f);
    CHECK(load_with(bad, d) == CUDARL_ERR_FORMAT);
    printf("  refused %-44s %s\n", "load: not a checkpoint", "CUDARL_ERR_FORMAT");
    o = d, o.device = (cudarl_device_kind)9;
    REFUSED("load: bad device", load_with(ppo_path, o), CUDARL_ERR_INVALID_ARG, "device 9");
    o = d, o.device_index = -1;
    REFUSED("load: negative device_index", load_with(ppo_path, o), CUDARL_ERR_INVALID_ARG,
            "device_index is -1");
    const cudarl_precision later[2] = {CUDARL_PRECISION_BF16, CUDARL_PRECISION_FP16};
    const char *later_name[2] = {"BF16", "FP16"};
    for (int i = 0; i < 2; i++) {
        o = d, o.precision = later[i];
        REFUSED(later_name[i], load_with(ppo_path, o), CUDARL_ERR_UNSUPPORTED, later_name[i],
                "not implemented", "FP32");
    }
    o = d, o.precision = CUDARL_PRECISION_TF32, o.device = CUDARL_DEVICE_CPU;
    REFUSED("TF32 on the CPU", load_with(ppo_path, o), CUDARL_ERR_UNSUPPORTED, "TF32",
            "CUDA only", "FP32");
    o = d, o.precision = (cudarl_precision)42;
    REFUSED("load: precision 42", load_with(ppo_path, o), CUDARL_ERR_INVALID_ARG, "precision 42");
    o = d, o.max_batch = 0;
    REFUSED("load: max_batch 0", load_with(ppo_path, o), CUDARL_ERR_INVALID_ARG, "max_batch is 0");
    o = d, o.max_batch = CUDARL_POLICY_MAX_BATCH + 1;
    REFUSED("load: max_batch too large", load_with(ppo_path, o), CUDARL_ERR_INVALID_ARG,
            "max_batch is 65537", "1 to 65536");
    o = d, o.deadline_us = -1;
    REFUSED("load: negative deadline", load_with(ppo_path, o), CUDARL_ERR_INVALID_ARG,
            "deadline_us is -1", "0 for none");
    o = d, o.deadline_us = NAN;
    REFUSED("load: NaN deadline", load_with(ppo_path, o), CUDARL_ERR_INVALID_ARG, "deadline_us");
    work_path(path, sizeof path, "cnn.safetensors");
    write_checkpoint(path, "ppo", "nature-cnn", "CartPole-v1", 4, 2, 8, NULL, NULL);
    REFUSED("load: a CNN policy without its spec", load_with(path, d), CUDARL_ERR_UNSUPPORTED,
            "nature-cnn", "MLP policies", "metadata \"network\"");
    work_path(path, sizeof path, "obs_input.safetensors");
    write_checkpoint(path, "dqn", "qnet", BREAKOUT, 400, 3, 8, "obs_input", "uint8 as bits");
    REFUSED("load: unknown obs_input", load_with(path, d), CUDARL_ERR_UNSUPPORTED,
            "uint8 as bits", CR_POLICY_U8_CAST);
    work_path(path, sizeof path, "wrong_env.safetensors");
    write_checkpoint(path, "ppo", "mlp", "CartPole-v1", 5, 2, 8, NULL, NULL);
    /* the runtime reads the network from the file alone; evaluation, which knows the env the file
     * names, holds the two against each other */
    CHECK_MSG(load_with(path, d) == CUDARL_OK, "load: a network of 5 features did not load");
    REFUSED("eval: shape of another env", eval_on_cpu(path), CUDARL_ERR_MISMATCH, "obs_dim 5",
            "CartPole-v1");
    work_path(path, sizeof path, "cast_float_env.safetensors");
    write_checkpoint(path, "dqn", "qnet", "CartPole-v1", 4, 2, 8, "obs_input", CR_POLICY_U8_CAST);
    CHECK_MSG(load_with(path, d) == CUDARL_OK, "load: a network of uint8 input did not load");
    REFUSED("eval: uint8 input of a float env", eval_on_cpu(path), CUDARL_ERR_MISMATCH,
            "float32", "altered");
    o = d, o.device = CUDARL_DEVICE_CUDA;
    cudarl_status s = load_with(ppo_path, o);
    if (s != CUDARL_OK)
        REFUSED("load: device CUDA without a GPU", s, CUDARL_ERR_UNSUPPORTED, "cpu");
}

/* cudarl eval plays an MLP of an env the env batch does not step (DQN's on MinAtar's channels)
 * through the runtime, the same returns for the same seed; such a network that does not fit
 * its env is a mismatch saying which, and an env not registered here is named as such, with
 * where to look, not as one "this cudarl does not have". */
static void test_eval_other_envs(void) {
    char path[512];
    const cudarl_env_def *def = cr_env_def_find(BREAKOUT);
    CHECK(def);
    const int D = (int)cr_env_def_obs_elems(def), A = def->num_actions;
    cudarl_ctx *cpu;
    CHECK_OK(cudarl_ctx_init(&cpu, CUDARL_DEVICE_CPU, 0));
    work_path(path, sizeof path, "breakout_qnet.safetensors");
    write_checkpoint(path, "dqn", "qnet", BREAKOUT, D, A, 8, "obs_input", CR_POLICY_U8_CAST);
    double m1 = -1, s1 = -1, m2 = -2, s2 = -2;
    CHECK_OK(cudarl_policy_eval(cpu, path, 4, 3, &m1, &s1));
    CHECK_OK(cudarl_policy_eval(cpu, path, 4, 3, &m2, &s2));
    CHECK_MSG(isfinite(m1) && m1 >= 0 && s1 >= 0 && m1 == m2 && s1 == s2,
              "eval of a DQN MLP on %s: mean %g std %g, again %g %g", BREAKOUT, m1, s1, m2, s2);
    printf("eval: a DQN MLP on %s, 4 episodes: mean %.2f std %.2f, the same again\n", BREAKOUT,
           m1, s1);
    cudarl_ctx_free(cpu);
    write_checkpoint(path, "dqn", "qnet", BREAKOUT, D + 1, A, 8, "obs_input", CR_POLICY_U8_CAST);
    REFUSED("eval: an MLP of another shape on MinAtar", eval_on_cpu(path), CUDARL_ERR_MISMATCH,
            "obs_dim 401", BREAKOUT, "has 400");
    write_checkpoint(path, "dqn", "qnet", BREAKOUT, D, A, 8, NULL, NULL);
    REFUSED("eval: float input for MinAtar's uint8", eval_on_cpu(path), CUDARL_ERR_MISMATCH,
            "float32 features", "uint8 observations");
    work_path(path, sizeof path, "unregistered_env.safetensors");
    write_checkpoint(path, "ppo", "mlp", "Nope-v0", 4, 2, 8, NULL, NULL);
    REFUSED("eval: an env not registered here", eval_on_cpu(path), CUDARL_ERR_MISMATCH,
            "'Nope-v0'", "not registered in this process", "cudarl info",
            "cudarl_env_register");
}

static void test_act_refusals(void) {
    cudarl_policy *ppo = load(ppo_path, CUDARL_DEVICE_CPU, 4, 0);
    cudarl_policy *dqn = load(dqn_path, CUDARL_DEVICE_CPU, 4, 0);
    float obs[4 * 4] = {0}, v[4], lg[8];
    int32_t a[4];
    uint8_t u8[16] = {0};
    REFUSED("act: policy NULL", cudarl_policy_act(NULL, obs, CUDARL_OBS_F32, 1, a, NULL, NULL),
            CUDARL_ERR_INVALID_ARG, "policy is NULL", "cudarl_policy_load");
    REFUSED("act: n 0", cudarl_policy_act(ppo, obs, CUDARL_OBS_F32, 0, a, NULL, NULL),
            CUDARL_ERR_INVALID_ARG, "n is 0", "1 to 4");
    REFUSED("act: n > max_batch", cudarl_policy_act(ppo, obs, CUDARL_OBS_F32, 5, a, NULL, NULL),
            CUDARL_ERR_INVALID_ARG, "n is 5", "max_batch");
    REFUSED("act: obs NULL", cudarl_policy_act(ppo, NULL, CUDARL_OBS_F32, 1, a, NULL, NULL),
            CUDARL_ERR_INVALID_ARG, "obs is NULL", "4 elements");
    REFUSED("act: actions NULL", cudarl_policy_act(ppo, obs, CUDARL_OBS_F32, 1, NULL, v, lg),
            CUDARL_ERR_INVALID_ARG, "actions is NULL");
    REFUSED("act: dtype 7", cudarl_policy_act(ppo, obs, (cudarl_obs_dtype)7, 1, a, NULL, NULL),
            CUDARL_ERR_INVALID_ARG, "dtype 7");
    REFUSED("act: uint8 obs for CartPole", cudarl_policy_act(ppo, u8, CUDARL_OBS_U8, 1, a, NULL,
            NULL), CUDARL_ERR_INVALID_ARG, "uint8", "CartPole-v1", "CUDARL_OBS_F32");
    REFUSED("act: values of a DQN", cudarl_policy_act(dqn, obs, CUDARL_OBS_F32, 1, a, v, lg),
            CUDARL_ERR_INVALID_ARG, "values must be NULL", "Q-values");
    obs[2 * 4 + 3] = NAN;
    REFUSED("act: NaN observation", cudarl_policy_act(ppo, obs, CUDARL_OBS_F32, 4, a, NULL, NULL),
            CUDARL_ERR_NUMERIC, "observation 2, element 3", "finite");
    obs[2 * 4 + 3] = INFINITY;
    REFUSED("act: inf observation", cudarl_policy_act(dqn, obs, CUDARL_OBS_F32, 3, a, NULL, lg),
            CUDARL_ERR_NUMERIC, "observation 2, element 3");
    void *buf = (void *)1;
    size_t bytes = 1;
    REFUSED("obs_buffer: policy NULL", cudarl_policy_obs_buffer(NULL, &buf, &bytes),
            CUDARL_ERR_INVALID_ARG, "must not be NULL", "loaded policy");
    REFUSED("obs_buffer: bytes NULL", cudarl_policy_obs_buffer(ppo, &buf, NULL),
            CUDARL_ERR_INVALID_ARG, "must not be NULL");
    REFUSED("obs_buffer: a CPU policy", cudarl_policy_obs_buffer(ppo, &buf, &bytes),
            CUDARL_ERR_UNSUPPORTED, "runs on the CPU", "your own host memory", "CUDA");
    CHECK_MSG(buf == NULL && bytes == 0, "obs_buffer refused: *buffer %p, *bytes %zu (want "
              "NULL, 0)", buf, bytes);
    cudarl_latency_stats st;
    REFUSED("latency: policy NULL", cudarl_policy_latency(NULL, &st), CUDARL_ERR_INVALID_ARG,
            "policy is NULL");
    REFUSED("latency: stats NULL", cudarl_policy_latency(ppo, NULL), CUDARL_ERR_INVALID_ARG,
            "stats is NULL");
    CHECK_OK(cudarl_policy_latency(ppo, &st));
    CHECK_MSG(st.count == 0 && st.window == 0, "refused acts were counted: %lld",
              (long long)st.count);
    cudarl_policy_free(ppo);
    cudarl_policy_free(dqn);
}

/* ---- cpu: latency ------------------------------------------------------------------------ */

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static void test_select_kth(void) {
    enum { N = 5000 };
    static uint32_t v[N], s[N];
    cr_philox_state r;
    cr_philox_seed(&r, 9, 0);
    for (int trial = 0; trial < 4; trial++) {
        int n = trial == 0 ? 1 : trial == 1 ? 2 : N;
        for (int i = 0; i < n; i++) {
            uint32_t w = cr_philox_next_u32(&r);
            v[i] = trial == 3 ? w % 7 : trial == 2 ? w : w | 0xff000000u; /* duplicates, spread */
        }
        memcpy(s, v, sizeof(uint32_t) * n);
        qsort(s, (size_t)n, sizeof *s, cmp_u32);
        for (int k = 0; k < n; k += (n > 100 ? 37 : 1))
            CHECK_MSG(cr_select_kth_u32(v, n, k) == s[k], "select k %d of %d: got %u, want %u", k,
                      n, cr_select_kth_u32(v, n, k), s[k]);
        CHECK(cr_select_kth_u32(v, n, n - 1) == s[n - 1]);
    }
    printf("  radix select equals qsort's order (n = 1, 2, %d; spread and duplicate values)\n", N);
}

static void check_stats_sane(const cudarl_latency_stats *st, int64_t count) {
    CHECK_MSG(st->count == count, "count %lld, want %lld", (long long)st->count, (long long)count);
    int64_t w = count < CUDARL_LATENCY_WINDOW ? count : CUDARL_LATENCY_WINDOW;
    CHECK_MSG(st->window == w, "window %lld, want %lld", (long long)st->window, (long long)w);
    CHECK_MSG(st->p50_us > 0 && st->p50_us <= st->p99_us && st->p99_us <= st->max_us,
              "p50 %.3f, p99 %.3f, max %.3f us are not ordered", st->p50_us, st->p99_us,
              st->max_us);
}

static void test_latency(void) {
    float obs[4] = {0.01f, 0.02f, 0.03f, 0.04f};
    int32_t a[1];
    cudarl_policy *never = load(ppo_path, CUDARL_DEVICE_CPU, 1, 1e9);  /* 1000 s */
    cudarl_policy *always = load(ppo_path, CUDARL_DEVICE_CPU, 1, 1e-3); /* 1 ns */
    const int64_t n = CUDARL_LATENCY_WINDOW + 4464; /* 70,000: the ring wraps */
    cudarl_latency_stats st;
    double last_max = 0;
    for (int64_t i = 0; i < n; i++) {
        CHECK_OK(cudarl_policy_act(never, obs, CUDARL_OBS_F32, 1, a, NULL, NULL));
        if (i < 1000) CHECK_OK(cudarl_policy_act(always, obs, CUDARL_OBS_F32, 1, a, NULL, NULL));
        if (i == 999) {
            CHECK_OK(cudarl_policy_latency(never, &st));
            check_stats_sane(&st, 1000);
            last_max = st.max_us;
        }
    }
    CHECK(cudarl_policy_act(never, NULL, CUDARL_OBS_F32, 1, a, NULL, NULL) != CUDARL_OK);
    CHECK_OK(cudarl_policy_latency(never, &st));
    check_stats_sane(&st, n);
    CHECK_MSG(st.deadline_misses == 0 && st.deadline_us == 1e9, "misses %lld with a 1000 s "
              "deadline", (long long)st.deadline_misses);
    printf("  latency, CPU, n = 1, %lld acts: p50 %.2f us, p99 %.2f us, max %.2f us (first 1,000: "
           "max %.2f us)\n", (long long)st.count, st.p50_us, st.p99_us, st.max_us, last_max);
    CHECK_OK(cudarl_policy_latency(always, &st));
    check_stats_sane(&st, 1000);
    CHECK_MSG(st.deadline_misses == 1000, "a 1 ns deadline missed %lld of 1000 acts",
              (long long)st.deadline_misses);
    cudarl_policy_free(never);
    cudarl_policy_free(always);
}

/* ---- cpu: no allocation ------------------------------------------------------------------ */

static void test_noalloc_cpu(void) {
    cudarl_policy *ppo = load(ppo_path, CUDARL_DEVICE_CPU, MAXB, 0);
    cudarl_policy *dqn = load(dqn_path, CUDARL_DEVICE_CPU, MAXB, 0);
    static float obs[MAXB * 4], v[MAXB], lg[MAXB * MAX_ACTIONS];
    static int32_t a[MAXB];
    random_obs(obs, MAXB, 4, 21);
    for (int i = 0; i < 10; i++) /* whatever a first call may set up (stdio, OpenMP) */
        CHECK_OK(cudarl_policy_act(ppo, obs, CUDARL_OBS_F32, MAXB, a, v, lg));
    size_t before = heap_in_use();
    for (int i = 0; i < 10000; i++) {
        int n = i % 100 ? 1 + i % 8 : MAXB; /* every path of the ops, without taking minutes */
        CHECK_OK(cudarl_policy_act(ppo, obs, CUDARL_OBS_F32, n, a, (i & 1) ? v : NULL, lg));
        CHECK_OK(cudarl_policy_act(dqn, obs, CUDARL_OBS_F32, n, a, NULL, (i & 2) ? lg : NULL));
    }
    size_t after = heap_in_use();
    CHECK_MSG(after == before, "heap in use went from %zu to %zu bytes over 10,000 acts", before,
              after);
    printf("  no allocation: heap in use %zu bytes before and after 10,000 acts of "
           "each policy\n", after);
    cudarl_policy_free(ppo);
    cudarl_policy_free(dqn);
}

static void run_cpu(void) {
    cudarl_ctx *cpu;
    CHECK_OK(cudarl_ctx_init(&cpu, CUDARL_DEVICE_CPU, 0));
    test_forward_bitwise(cpu, ppo_path);
    test_forward_bitwise(cpu, dqn_path);
    test_matches_eval(cpu, ppo_path);
    test_matches_eval(cpu, dqn_path);
    test_u8(cpu);
    test_load_refusals();
    test_eval_other_envs();
    test_act_refusals();
    test_select_kth();
    test_latency();
    test_noalloc_cpu();
    cudarl_ctx_free(cpu);
}

/* ---- cuda -------------------------------------------------------------------------------- */

#ifdef CUDARL_WITH_CUDA
#define CUDA_OK(expr) CHECK_MSG((expr) == cudaSuccess, "%s", cudaGetErrorString(cudaGetLastError()))

/* Normalised error of got against want (n): max |got - want| / max |want|. */
static double norm_err(const float *got, const float *want, int n) {
    double e = 0, m = 1e-30;
    for (int i = 0; i < n; i++) {
        e = fmax(e, fabs((double)got[i] - want[i]));
        m = fmax(m, fabs((double)want[i]));
    }
    return e / m;
}

/* Actions equal wherever the reference's best logit leads the runner-up by more than tol. */
static void check_actions(const int32_t *got, const int32_t *want, const float *lw, int n, int A,
                          double tol) {
    for (int i = 0; i < n; i++) {
        if (got[i] == want[i]) continue;
        double scale = 1e-30;
        for (int j = 0; j < A; j++) scale = fmax(scale, fabs(lw[i * A + j]));
        double gap = fabs((double)lw[i * A + got[i]] - lw[i * A + want[i]]);
        CHECK_MSG(gap <= tol * scale, "row %d: CUDA action %d, CPU %d, logits %g apart", i,
                  got[i], want[i], gap);
    }
}

#define TOL 1e-5 /* cuBLAS's sum order against the CPU's, as test_ops_cuda's linear */

/* TF32 against the CPU's fp32: 2^-8 normwise per product (nn/precision.c's TF32 rows), three
 * products deep (first-order relative errors add), on the logits' largest as TOL's scale. */
#define TOL_TF32 (3 * 0x1p-8)

/* CUDA act() (precision prec) against CPU act() on the same checkpoint, at several n. */
static void compare_devices_in(const char *label, const char *path, cudarl_obs_dtype dtype, int D,
                               cudarl_precision prec) {
    const double tol = prec == CUDARL_PRECISION_TF32 ? TOL_TF32 : TOL;
    cudarl_policy *cpu = load(path, CUDARL_DEVICE_CPU, MAXB, 0);
    cudarl_policy_options opt;
    cudarl_policy_options_default(&opt);
    opt.device = CUDARL_DEVICE_CUDA, opt.max_batch = MAXB, opt.precision = prec;
    cudarl_policy *gpu = NULL;
    CHECK_OK(cudarl_policy_load(path, &opt, &gpu));
    cudarl_policy_info info;
    cudarl_policy_get_info(gpu, &info);
    CHECK(info.device == CUDARL_DEVICE_CUDA && info.graph_batches == 7 && info.precision == prec);
    int A = info.num_actions, pv = info.has_values;
    float *obs = malloc((size_t)MAXB * D * sizeof(float));
    float lc[MAXB * MAX_ACTIONS], lg[MAXB * MAX_ACTIONS];
    float vc[MAXB], vg[MAXB];
    int32_t ac[MAXB], ag[MAXB];
    CHECK(obs);
    const int ns[] = {1, 2, 3, 5, 17, 33, MAXB};
    double worst = 0;
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        int n = ns[k];
        if (dtype == CUDARL_OBS_U8) random_u8((uint8_t *)obs, (size_t)n * D, 40 + k);
        else random_obs(obs, n, D, 40 + k);
        CHECK_OK(cudarl_policy_act(cpu, obs, dtype, n, ac, pv ? vc : NULL, lc));
        CHECK_OK(cudarl_policy_act(gpu, obs, dtype, n, ag, pv ? vg : NULL, lg));
        double e = norm_err(lg, lc, n * A);
        if (pv) e = fmax(e, norm_err(vg, vc, n));
        CHECK_MSG(e <= tol, "%s %s n %d: normalised error %.3g > %g", label,
                  cudarl_precision_name(prec), n, e, tol);
        check_actions(ag, ac, lc, n, A, tol);
        worst = fmax(worst, e);
    }
    printf("  %s, %s: CUDA act() against CPU act() at n = 1..%d: normalised error %.3g (<= %g), "
           "actions equal\n", label, cudarl_precision_name(prec), MAXB, worst, tol);
    cudarl_policy_free(cpu);
    cudarl_policy_free(gpu);
    free(obs);
}

static void compare_devices(const char *label, const char *path, cudarl_obs_dtype dtype, int D) {
    compare_devices_in(label, path, dtype, D, CUDARL_PRECISION_FP32);
}

/* Host and device pointers in every combination give the same outputs, bitwise. */
static void test_device_pointers(void) {
    cudarl_policy *gpu = load(ppo_path, CUDARL_DEVICE_CUDA, MAXB, 0);
    cudarl_policy *cpu = load(ppo_path, CUDARL_DEVICE_CPU, MAXB, 0);
    const int n = 13, D = 4, A = 2;
    float obs[MAXB * 4], lh[MAXB * 2], vh[MAXB], l2[MAXB * 2], v2[MAXB];
    int32_t ah[MAXB], a2[MAXB];
    random_obs(obs, n, D, 77);
    CHECK_OK(cudarl_policy_act(gpu, obs, CUDARL_OBS_F32, n, ah, vh, lh));
    float *d_obs, *d_v, *d_l, *m_obs;
    int32_t *d_a;
    CUDA_OK(cudaMalloc((void **)&d_obs, sizeof obs));
    CUDA_OK(cudaMalloc((void **)&d_v, sizeof vh));
    CUDA_OK(cudaMalloc((void **)&d_l, sizeof lh));
    CUDA_OK(cudaMalloc((void **)&d_a, sizeof ah));
    CUDA_OK(cudaMallocManaged((void **)&m_obs, sizeof obs, cudaMemAttachGlobal));
    CUDA_OK(cudaMemcpy(d_obs, obs, sizeof obs, cudaMemcpyHostToDevice));
    memcpy(m_obs, obs, sizeof obs);
    for (int mode = 0; mode < 4; mode++) { /* device obs; device outputs; both; managed obs */
        const float *o = mode == 0 || mode == 2 ? d_obs : mode == 3 ? m_obs : obs;
        int dev_out = mode == 1 || mode == 2;
        CHECK_OK(cudarl_policy_act(gpu, o, CUDARL_OBS_F32, n, dev_out ? d_a : a2,
                                   dev_out ? d_v : v2, dev_out ? d_l : l2));
        if (dev_out) {
            CUDA_OK(cudaMemcpy(a2, d_a, n * sizeof *a2, cudaMemcpyDeviceToHost));
            CUDA_OK(cudaMemcpy(v2, d_v, n * sizeof *v2, cudaMemcpyDeviceToHost));
            CUDA_OK(cudaMemcpy(l2, d_l, n * A * sizeof *l2, cudaMemcpyDeviceToHost));
        }
        CHECK_MSG(!memcmp(a2, ah, n * sizeof *a2) && !memcmp(v2, vh, n * sizeof *v2) &&
                  !memcmp(l2, lh, n * A * sizeof *l2), "pointer mode %d differs from host", mode);
    }
    printf("  device, managed and host pointers give the same outputs, bitwise\n");
    REFUSED("CPU policy: device obs", cudarl_policy_act(cpu, d_obs, CUDARL_OBS_F32, n, a2, NULL,
            NULL), CUDARL_ERR_INVALID_ARG, "obs is device memory", "runs on the CPU");
    REFUSED("CPU policy: device actions", cudarl_policy_act(cpu, obs, CUDARL_OBS_F32, n, d_a, NULL,
            NULL), CUDARL_ERR_INVALID_ARG, "actions is device memory", "CUDARL_DEVICE_CUDA");
    REFUSED("CPU policy: device logits", cudarl_policy_act(cpu, obs, CUDARL_OBS_F32, n, a2, NULL,
            d_l), CUDARL_ERR_INVALID_ARG, "logits is device memory");
    cudaFree(d_obs), cudaFree(d_v), cudaFree(d_l), cudaFree(d_a), cudaFree(m_obs);
    cudarl_policy_free(gpu);
    cudarl_policy_free(cpu);
}

static void test_noalloc_cuda(void) {
    cudarl_policy *gpu = load(ppo_path, CUDARL_DEVICE_CUDA, MAXB, 0);
    static float obs[MAXB * 4], v[MAXB], lg[MAXB * 2];
    static int32_t a[MAXB];
    float *d_obs;
    CUDA_OK(cudaMalloc((void **)&d_obs, sizeof obs));
    random_obs(obs, MAXB, 4, 5);
    CUDA_OK(cudaMemcpy(d_obs, obs, sizeof obs, cudaMemcpyHostToDevice));
    size_t before = cr_cuda_alloc_count(), heap = heap_in_use();
    for (int i = 0; i < 10000; i++) {
        int n = 1 + i % MAXB;
        CHECK_OK(cudarl_policy_act(gpu, (i % 3) ? obs : d_obs, CUDARL_OBS_F32, n, a,
                                   (i & 1) ? v : NULL, (i & 2) ? lg : NULL));
    }
    size_t after = cr_cuda_alloc_count();
    CHECK_MSG(after == before, "%zu device allocations over 10,000 acts", after - before);
    printf("  no device allocation over 10,000 acts (cr_cuda_alloc_count %zu); heap in use "
           "%zu -> %zu bytes (driver's, for information)\n", after, heap,
           heap_in_use());
    cudaFree(d_obs);
    cudarl_policy_free(gpu);
}

static void test_latency_cuda(void) {
    cudarl_policy *gpu = load(ppo_path, CUDARL_DEVICE_CUDA, 1, 100);
    float obs[4] = {0.01f, -0.02f, 0.03f, -0.04f};
    int32_t a[1];
    for (int i = 0; i < 10000; i++)
        CHECK_OK(cudarl_policy_act(gpu, obs, CUDARL_OBS_F32, 1, a, NULL, NULL));
    cudarl_latency_stats st;
    CHECK_OK(cudarl_policy_latency(gpu, &st));
    check_stats_sane(&st, 10000);
    cudarl_policy_info info;
    cudarl_policy_get_info(gpu, &info);
    printf("  latency, CUDA, n = 1, host in and out, %lld acts: p50 %.2f us, p99 %.2f us, max "
           "%.2f us, %lld over 100 us; %zu B device, %zu B pinned\n", (long long)st.count,
           st.p50_us, st.p99_us, st.max_us, (long long)st.deadline_misses, info.device_bytes,
           info.pinned_bytes);
    cudarl_policy_free(gpu);
}

/* DQN's Q-network needs linear_relu_forward on the device; until the CUDA backend has it, CUDA
 * is refused and AUTO runs it on the CPU. */
static void test_dqn_cuda(void) {
    cudarl_policy_options o;
    cudarl_policy_options_default(&o);
    o.device = CUDARL_DEVICE_CUDA;
    o.max_batch = MAXB;
    cudarl_policy *p = NULL;
    cudarl_status s = cudarl_policy_load(dqn_path, &o, &p);
    if (s == CUDARL_OK) {
        cudarl_policy_free(p);
        compare_devices("dqn", dqn_path, CUDARL_OBS_F32, 4);
        return;
    }
    REFUSED("DQN on CUDA without a ReLU layer", s, CUDARL_ERR_UNSUPPORTED, "linear_relu_forward",
            "CUDARL_DEVICE_CPU");
    o.device = CUDARL_DEVICE_AUTO;
    CHECK_OK(cudarl_policy_load(dqn_path, &o, &p));
    cudarl_policy_info info;
    cudarl_policy_get_info(p, &info);
    CHECK(info.device == CUDARL_DEVICE_CPU);
    printf("  dqn: AUTO runs it on the CPU (no CUDA ReLU layer in this build)\n");
    cudarl_policy_free(p);
}

static void run_cuda(void) {
    compare_devices("ppo", ppo_path, CUDARL_OBS_F32, 4);
    compare_devices_in("ppo", ppo_path, CUDARL_OBS_F32, 4, CUDARL_PRECISION_TF32);
    test_dqn_cuda();
    char scaled[512], cast[512];
    int D, A;
    u8_checkpoints(scaled, cast, sizeof scaled, &D, &A);
    const char *u8_path[2] = {scaled, cast}, *u8_label[2] = {"ppo uint8 pixels", "dqn uint8 cast"};
    for (int k = 0; k < 2; k++) {
        cudarl_policy_options o;
        cudarl_policy_options_default(&o);
        o.device = CUDARL_DEVICE_CUDA;
        cudarl_policy *p = NULL;
        cudarl_status s = cudarl_policy_load(u8_path[k], &o, &p);
        cudarl_policy_free(p);
        if (s == CUDARL_OK) compare_devices(u8_label[k], u8_path[k], CUDARL_OBS_U8, D);
        else /* said, not skipped silently: a build without cuDNN, or DQN without the ReLU op */
            printf("  %s: not on CUDA in this build (%s: %s)\n", u8_label[k],
                   cudarl_status_name(s), cudarl_last_error());
        CHECK_MSG(s == CUDARL_OK || s == CUDARL_ERR_UNSUPPORTED, "%s", cudarl_last_error());
    }
    test_device_pointers();
    test_noalloc_cuda();
    test_latency_cuda();
}
#endif

int main(int argc, char **argv) {
    if (argc != 5 || (strcmp(argv[1], "cpu") && strcmp(argv[1], "cuda"))) {
        fprintf(stderr, "usage: test_policy_runtime cpu|cuda PPO_CKPT DQN_CKPT WORKDIR\n");
        return 2;
    }
    ppo_path = argv[2], dqn_path = argv[3], work = argv[4];
    mkdir(work, 0755); /* may exist */
    cudarl_log_set_level(CUDARL_LOG_WARN);
    if (!strcmp(argv[1], "cpu")) {
        run_cpu();
    } else {
#ifdef CUDARL_WITH_CUDA
        run_cuda();
#else
        fprintf(stderr, "test_policy_runtime cuda: this build has no CUDA backend\n");
        return 1;
#endif
    }
    printf("test_policy_runtime %s: ok\n", argv[1]);
    return 0;
}
