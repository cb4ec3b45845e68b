/* One PPO update reproduced against PyTorch: ppo_golden.safetensors, written by
 * golden_ppo.py (CleanRL's update, torch autograd, float32 on the CPU).
 *
 * The update runs through the trainer's own code (cr_ppo_update_minibatch on a 64-row batch),
 * so this holds the real path, not a copy of it.
 *
 * Tolerance table (why each is what it is):
 *   gae          atol 1e-6, rtol 1e-6  same float32 recursion in the same order; at most a few
 *                                      ulps from the compiler's choice of instructions
 *   logits/value atol 2e-6, rtol 2e-5  our tanh is a polynomial (<= 5e-7 abs error) and dot
 *                                      products sum in another order than torch's sgemm
 *   losses       atol 2e-6, rtol 5e-5  means of 64 terms, each within the forward tolerance
 *   gradients    rel 2e-4 of the norm  ‖g - g_torch‖ / ‖g_torch‖ per tensor: sums over 64 rows
 *                                      of products of forward values, in another order
 *   Adam states  rel 2e-4 of the norm  linear (m) and quadratic (v) in the gradient
 *   parameters   atol 2e-6             one step moves a weight by <= lr = 1e-3; the step is
 *                                      m / (sqrt(v) + eps), whose error follows the gradient's */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algo/ppo/ppo_internal.h"
#include "check.h"
#include "io/safetensors.h"

#define B 64

static cr_st_file *golden;

static void load(const char *name, float *dst, size_t n) { CHECK_OK(cr_st_read_f32(golden, name, dst, n)); }

static float scalar(const char *name) {
    float v;
    load(name, &v, 1);
    return v;
}

static void check_all_close(const char *what, const float *got, const float *want, size_t n,
                            double atol, double rtol) {
    for (size_t i = 0; i < n; i++) {
        char label[128];
        snprintf(label, sizeof label, "%s[%zu]", what, i);
        CHECK_CLOSE(label, got[i], want[i], atol, rtol);
    }
}

static void check_rel_norm(const char *what, const float *got, const float *want, size_t n,
                           double scale, double tol) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = got[i] - scale * want[i];
        num += d * d, den += scale * want[i] * scale * want[i];
    }
    double rel = sqrt(num) / (sqrt(den) + 1e-30);
    CHECK_MSG(rel <= tol, "%s: relative error %.3g > %.3g", what, rel, tol);
}

static void set_config(cudarl_ppo_config *c) {
    cudarl_ppo_config_default(c, "CartPole-v1");
    c->num_envs = B, c->num_steps = 1, c->num_minibatches = 1, c->total_timesteps = B;
    c->clip_coef = atof(cr_st_meta(golden, "clip_coef"));
    c->ent_coef = atof(cr_st_meta(golden, "ent_coef"));
    c->vf_coef = atof(cr_st_meta(golden, "vf_coef"));
    c->max_grad_norm = atof(cr_st_meta(golden, "max_grad_norm"));
    c->learning_rate = atof(cr_st_meta(golden, "learning_rate"));
    c->norm_adv = !strcmp(cr_st_meta(golden, "norm_adv"), "true");
    c->clip_vloss = !strcmp(cr_st_meta(golden, "clip_vloss"), "true");
    c->hidden = 64;
    c->quiet = 1;
    CHECK(atof(cr_st_meta(golden, "adam_eps")) == 1e-5);
}

static void test_gae(void) {
    enum { T = 8, N = 4 };
    float r[T * N], v[T * N], nv[T * N], adv[T * N], ret[T * N], want_adv[T * N], want_ret[T * N];
    uint8_t term[T * N], done[T * N];
    load("gae.rewards", r, T * N), load("gae.values", v, T * N), load("gae.next_values", nv, T * N);
    load("gae.advantages", want_adv, T * N), load("gae.returns", want_ret, T * N);
    cr_st_tensor t;
    CHECK_OK(cr_st_find(golden, "gae.terminated", &t));
    CHECK(t.dtype == CR_ST_U8 && t.count == T * N);
    memcpy(term, t.data, T * N);
    CHECK_OK(cr_st_find(golden, "gae.done", &t));
    CHECK(t.dtype == CR_ST_U8 && t.count == T * N);
    memcpy(done, t.data, T * N);
    cr_cpu_gae(r, v, nv, term, done, 0.99f, 0.95f, adv, ret, T, N);
    check_all_close("gae.advantages", adv, want_adv, T * N, 1e-6, 1e-6);
    check_all_close("gae.returns", ret, want_ret, T * N, 1e-6, 1e-6);
}

static void load_minibatch(cr_ppo *p) {
    float host[B * 4];
    int32_t act[B];
    cudarl_ctx *ctx = p->ctx;
    load("mb.obs", host, B * 4);
    ctx->ops->copy_from_host(ctx, p->obs, host, sizeof(float) * B * 4);
    cr_st_tensor t;
    CHECK_OK(cr_st_find(golden, "mb.actions", &t));
    CHECK(t.dtype == CR_ST_I32 && t.count == B);
    memcpy(act, t.data, sizeof act);
    ctx->ops->copy_from_host(ctx, p->actions, act, sizeof act);
    const char *names[] = {"mb.logprobs", "mb.advantages", "mb.returns", "mb.values"};
    float *dst[] = {p->logp, p->adv, p->returns, p->values};
    for (int i = 0; i < 4; i++) {
        load(names[i], host, B);
        ctx->ops->copy_from_host(ctx, dst[i], host, sizeof(float) * B);
    }
    for (int i = 0; i < B; i++) act[i] = i;
    ctx->ops->copy_from_host(ctx, p->mb_idx, act, sizeof act);
}

static void load_params(cr_ppo *p) {
    size_t P = p->layout.num_params;
    float *h = malloc(P * sizeof(float));
    for (int i = 0; i < CR_AC_NUM_TENSORS; i++) {
        char name[96];
        snprintf(name, sizeof name, "params.%s", p->layout.t[i].name);
        load(name, h + p->layout.t[i].offset, p->layout.t[i].count);
    }
    p->ctx->ops->copy_from_host(p->ctx, p->params, h, P * sizeof(float));
    free(h);
}

/* Compares every parameter-shaped tensor of `buf` with golden tensors "<prefix><name>". */
static void check_tensors(cr_ppo *p, const float *buf, const char *prefix, double scale,
                          double rel_tol, double atol) {
    for (int i = 0; i < CR_AC_NUM_TENSORS; i++) {
        const cr_param_tensor *t = &p->layout.t[i];
        char name[96];
        snprintf(name, sizeof name, "%s%s", prefix, t->name);
        float *want = malloc(t->count * sizeof(float));
        load(name, want, t->count);
        if (atol > 0) check_all_close(name, buf + t->offset, want, t->count, atol, 0);
        else check_rel_norm(name, buf + t->offset, want, t->count, scale, rel_tol);
        free(want);
    }
}

static void test_update(void) {
    cudarl_ctx *ctx;
    CHECK_OK(cudarl_ctx_init(&ctx, CUDARL_DEVICE_CPU, 0));
    cudarl_ppo_config cfg;
    set_config(&cfg);
    cr_ppo p;
    CHECK_OK(cr_ppo_init(&p, ctx, &cfg));
    load_params(&p);
    load_minibatch(&p);
    size_t P = p.layout.num_params;
    float *h = malloc(P * sizeof(float));
    cr_ppo_stats_acc zero = {0}, acc;
    ctx->ops->copy_from_host(ctx, p.acc, &zero, sizeof zero);

    float lr = (float)cfg.learning_rate;
    ctx->ops->copy_from_host(ctx, p.lr, &lr, sizeof lr);
    cr_ppo_update_minibatch(&p, p.mb_idx);

    /* forward */
    float logits[B * 2], want_logits[B * 2], value[B], want_value[B];
    ctx->ops->copy_to_host(ctx, logits, p.mb_logits, sizeof logits);
    ctx->ops->copy_to_host(ctx, value, p.mb_value, sizeof value);
    load("out.logits", want_logits, B * 2), load("out.newvalue", want_value, B);
    check_all_close("out.logits", logits, want_logits, B * 2, 2e-6, 2e-5);
    check_all_close("out.newvalue", value, want_value, B, 2e-6, 2e-5);
    float logp[B], ent[B], want_logp[B], want_ent[B];
    int32_t act[B];
    ctx->ops->copy_to_host(ctx, act, p.mb_act, sizeof act);
    cr_cpu_categorical_logp_entropy(logits, act, logp, ent, B, 2);
    load("out.newlogprob", want_logp, B), load("out.entropy_per_sample", want_ent, B);
    check_all_close("out.newlogprob", logp, want_logp, B, 2e-6, 2e-5);
    check_all_close("out.entropy_per_sample", ent, want_ent, B, 2e-6, 2e-5);

    /* losses, as means over the minibatch */
    ctx->ops->copy_to_host(ctx, &acc, p.acc, sizeof acc);
    CHECK(acc.count == 1);
    const char *names[7] = {"out.loss", "out.pg_loss", "out.v_loss", "out.entropy",
                            "out.old_approx_kl", "out.approx_kl", "out.clipfrac"};
    for (int i = 0; i < 7; i++) CHECK_CLOSE(names[i], acc.sum[i], scalar(names[i]), 2e-6, 5e-5);
    double norm = scalar("out.grad_norm");
    CHECK_CLOSE("out.grad_norm", acc.grad_norm_sum, norm, 1e-6, 1e-4);

    /* gradients (clipped in place by the trainer: compare with torch's, clipped the same way) */
    double coef = cfg.max_grad_norm / (norm + 1e-6);
    if (coef > 1) coef = 1;
    CHECK_MSG(coef < 1, "the golden step-1 gradient should need clipping (norm %g)", norm);
    ctx->ops->copy_to_host(ctx, h, p.grads, P * sizeof(float));
    check_tensors(&p, h, "grad.", coef, 2e-4, 0);

    /* Adam step 1 */
    ctx->ops->copy_to_host(ctx, h, p.adam_m, P * sizeof(float));
    check_tensors(&p, h, "step1.exp_avg.", 1, 2e-4, 0);
    ctx->ops->copy_to_host(ctx, h, p.adam_v, P * sizeof(float));
    check_tensors(&p, h, "step1.exp_avg_sq.", 1, 4e-4, 0);
    ctx->ops->copy_to_host(ctx, h, p.params, P * sizeof(float));
    check_tensors(&p, h, "step1.", 1, 0, 2e-6);

    /* Adam step 2: a second forward/backward on the same minibatch, bias correction at t = 2 */
    ctx->ops->copy_from_host(ctx, p.acc, &zero, sizeof zero);
    cr_ppo_update_minibatch(&p, p.mb_idx);
    ctx->ops->copy_to_host(ctx, &acc, p.acc, sizeof acc);
    CHECK_CLOSE("step2.loss", acc.sum[0], scalar("step2.loss"), 2e-6, 5e-5);
    CHECK_CLOSE("step2.grad_norm", acc.grad_norm_sum, scalar("step2.grad_norm"), 1e-6, 1e-4);
    ctx->ops->copy_to_host(ctx, h, p.params, P * sizeof(float));
    check_tensors(&p, h, "step2.", 1, 0, 4e-6);

    free(h);
    cr_ppo_free(&p);
    cudarl_ctx_free(ctx);
}

int main(void) {
    const char *dir = getenv("CUDARL_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/ppo_golden.safetensors", dir ? dir : "tests/golden");
    CHECK_OK(cr_st_open(&golden, path));
    CHECK_MSG(!strcmp(cr_st_meta(golden, "format"), "cudarl-golden-ppo"), "not a golden file");
    test_gae();
    test_update();
    cr_st_close(golden);
    printf("test_ppo_golden: GAE, forward, losses, gradients and two Adam steps match PyTorch\n");
    return 0;
}
