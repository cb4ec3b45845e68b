/* One PPO update of a convolutional policy reproduced against PyTorch:
 * ppo_conv_golden.safetensors, written by golden_ppo_conv.py (CleanRL
 * ppo_atari.py's Agent with MinAtar's network, ppo_atari.py's loss and hyperparameters, torch
 * autograd and Adam, float32 on the CPU).
 *
 * The update runs through the trainer's own code: a trainer for --policy minatar-cnn on
 * MinAtar/Breakout-v1 (64 envs x 1 step, one minibatch) is given the golden parameters and
 * minibatch in its rollout buffers (the observations as uint8 rows), and cr_ppo_update_minibatch
 * runs twice: the uint8 row gather, cr_convnet_forward, the PPO loss, cr_convnet_backward, the
 * gradient clip and Adam, as in training.
 *
 * Tolerance table (why each is what it is; "seen" = torch 2.15 on an x86-64 CPU):
 *   logits, values   |d| <= 1e-5 (max|want| + |want|): sums of up to 1024 products in another
 *                    order than torch's, through three layers (test_convnet_golden.c's bound)
 *   losses           atol 2e-6, rtol 5e-5: means of 64 terms, each within the forward's bound
 *   gradients        rel 1e-5 of the norm per tensor (test_convnet_golden.c's), compared with
 *                    torch's raw gradient scaled by the clip factor
 *   Adam's m         rel 2e-5 of the norm: linear in the gradient (seen 1.4e-6)
 *   Adam's v         rel 4e-5 of the norm: quadratic in the gradient, and cudarl's 1 - beta2
 *                    is 1 - 0.999f in float, 1.3e-5 below torch's (double) 1e-3 (seen 1.6e-5)
 *   parameters       atol 2e-6 after step 1, 4e-6 after step 2 (both steps' errors): a step
 *                    moves a weight by at most lr = 2.5e-4; near g = 0 the step
 *                    lr g / (|g| + eps) has slope lr / eps = 25, so a gradient error of 1e-8
 *                    moves it by 2.5e-7 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algo/ppo/ppo_internal.h"
#include "check.h"
#include "io/safetensors.h"

#define B 64
#define OBS_BYTES 400 /* 4 x 10 x 10 */
#define NUM_ACTIONS 3

static cr_st_file *golden;

static void load(const char *name, float *dst, size_t n) { CHECK_OK(cr_st_read_f32(golden, name, dst, n)); }

static float scalar(const char *name) {
    float v;
    load(name, &v, 1);
    return v;
}

static double meta(const char *key) {
    const char *v = cr_st_meta(golden, key);
    CHECK_MSG(v != NULL, "golden metadata '%s' missing", key);
    return atof(v);
}

static void set_config(cudarl_ppo_config *c) {
    cudarl_ppo_config_default(c, "MinAtar/Breakout-v1");
    cudarl_ppo_config_for_policy(c, "minatar-cnn");
    c->num_envs = B, c->num_steps = 1, c->num_minibatches = 1, c->total_timesteps = B;
    c->env_threads = 1, c->threads = 1, c->quiet = 1;
    c->clip_coef = meta("clip_coef"), c->ent_coef = meta("ent_coef");
    c->vf_coef = meta("vf_coef"), c->max_grad_norm = meta("max_grad_norm");
    c->learning_rate = meta("learning_rate");
    c->norm_adv = !strcmp(cr_st_meta(golden, "norm_adv"), "true");
    c->clip_vloss = !strcmp(cr_st_meta(golden, "clip_vloss"), "true");
    CHECK(meta("adam_eps") == 1e-5 && meta("adam_beta1") == 0.9 && meta("adam_beta2") == 0.999);
}

/* The golden minibatch as the trainer's rollout rows 0..B-1, and mb_idx = 0..B-1. */
static void load_minibatch(cr_ppo *p) {
    cudarl_ctx *ctx = p->ctx;
    cr_st_tensor t;
    CHECK_OK(cr_st_find(golden, "mb.obs", &t));
    CHECK(t.dtype == CR_ST_U8 && t.nbytes == (size_t)B * OBS_BYTES && p->D == OBS_BYTES);
    ctx->ops->copy_from_host(ctx, p->cnn.obs, t.data, t.nbytes);
    int32_t idx[B];
    CHECK_OK(cr_st_find(golden, "mb.actions", &t));
    CHECK(t.dtype == CR_ST_I32 && t.count == B);
    memcpy(idx, t.data, sizeof idx);
    ctx->ops->copy_from_host(ctx, p->actions, idx, sizeof idx);
    const char *names[] = {"mb.logprobs", "mb.advantages", "mb.returns", "mb.values"};
    float *dst[] = {p->logp, p->adv, p->returns, p->values};
    for (int i = 0; i < 4; i++) {
        float host[B];
        load(names[i], host, B);
        ctx->ops->copy_from_host(ctx, dst[i], host, sizeof host);
    }
    for (int i = 0; i < B; i++) idx[i] = i;
    ctx->ops->copy_from_host(ctx, p->mb_idx, idx, sizeof idx);
}

/* The golden state_dict (names, order, shapes) is the trainer's layout. */
static void check_layout(const cr_ppo *p) {
    const cr_convnet *net = &p->cnn.net;
    const char *sd = cr_st_meta(golden, "state_dict");
    CHECK(sd != NULL);
    char want[1024] = "[";
    for (int i = 0; i < net->ntensors; i++) {
        const cr_convnet_tensor *t = &net->t[i];
        size_t n = strlen(want);
        snprintf(want + n, sizeof want - n, "%s[\"%s\", [", i ? ", " : "", t->name);
        for (int d = 0; d < t->ndim; d++) {
            n = strlen(want);
            snprintf(want + n, sizeof want - n, "%s%d", d ? ", " : "", t->shape[d]);
        }
        n = strlen(want);
        snprintf(want + n, sizeof want - n, "]]");
    }
    strcat(want, "]");
    CHECK_MSG(!strcmp(sd, want), "state_dict:\n  golden %s\n  cudarl %s", sd, want);
}

static void load_params(cr_ppo *p) {
    const cr_convnet *net = &p->cnn.net;
    float *h = malloc(p->num_params * sizeof(float));
    CHECK(h != NULL);
    for (int i = 0; i < net->ntensors; i++) {
        char name[96];
        snprintf(name, sizeof name, "params.%s", net->t[i].name);
        load(name, h + net->t[i].offset, net->t[i].count);
    }
    p->ctx->ops->copy_from_host(p->ctx, p->params, h, p->num_params * sizeof(float));
    free(h);
}

/* got vs golden "<prefix><name>" for every tensor (those present when `optional`): normwise
 * (scale * want; rel_tol) or per element (atol > 0). */
static void check_tensors(const cr_ppo *p, const float *buf, const char *prefix, double scale,
                          double rel_tol, double atol, int optional) {
    const cr_convnet *net = &p->cnn.net;
    double worst = 0;
    const char *worst_at = "";
    for (int i = 0; i < net->ntensors; i++) {
        const cr_convnet_tensor *t = &net->t[i];
        char name[96];
        snprintf(name, sizeof name, "%s%s", prefix, t->name);
        cr_st_tensor st;
        if (optional && cr_st_find(golden, name, &st) != CUDARL_OK) continue;
        float *want = malloc(t->count * sizeof(float));
        CHECK(want != NULL);
        load(name, want, t->count);
        const float *got = buf + t->offset;
        if (atol > 0) {
            for (size_t e = 0; e < t->count; e++) {
                char label[128];
                snprintf(label, sizeof label, "%s[%zu]", name, e);
                CHECK_CLOSE(label, got[e], want[e], atol, 0);
                double d = fabs((double)got[e] - want[e]);
                if (d > worst) worst = d, worst_at = t->name;
            }
        } else {
            double num = 0, den = 0;
            for (size_t e = 0; e < t->count; e++) {
                double w = scale * want[e], d = got[e] - w;
                num += d * d, den += w * w;
            }
            double rel = sqrt(num) / (sqrt(den) + 1e-30);
            CHECK_MSG(rel <= rel_tol, "%s: relative error %.3g > %.3g", name, rel, rel_tol);
            if (rel > worst) worst = rel, worst_at = t->name;
        }
        free(want);
    }
    printf("  %-20s worst %s %.3g (%s)\n", prefix, atol > 0 ? "|diff|" : "relative error", worst,
           worst_at);
}

/* Per element: |got - want| <= tol (max|want| + |want|). */
static void check_outputs(const char *what, const float *got, const float *want, size_t n,
                          double tol) {
    double top = 0;
    /* `if (a > m)`, not fmax(): GCC 12.2 for aarch64 crashes (an internal compiler error) vectorizing
     * an fmax reduction over floats widened to double; the same for every input, NaN left out. */
    for (size_t i = 0; i < n; i++)
        if (fabs(want[i]) > top) top = fabs(want[i]);
    for (size_t i = 0; i < n; i++) {
        char label[96];
        snprintf(label, sizeof label, "%s[%zu]", what, i);
        CHECK_CLOSE(label, got[i], want[i], tol * top, tol);
    }
}

int main(void) {
    const char *dir = getenv("CUDARL_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/ppo_conv_golden.safetensors", dir ? dir : "tests/golden");
    CHECK_OK(cr_st_open(&golden, path));
    CHECK_MSG(!strcmp(cr_st_meta(golden, "format"), "cudarl-golden-ppo-conv"),
              "not a golden file");
    cudarl_log_set_level(CUDARL_LOG_WARN);
    cudarl_ctx *ctx;
    CHECK_OK(cudarl_ctx_init(&ctx, CUDARL_DEVICE_CPU, 0));
    cudarl_ppo_config cfg;
    set_config(&cfg);
    static cr_ppo p;
    CHECK_OK(cr_ppo_init(&p, ctx, &cfg));
    CHECK(p.conv && p.mb == B && p.A == NUM_ACTIONS);
    check_layout(&p);
    load_params(&p);
    load_minibatch(&p);
    const size_t P = p.num_params;
    float *h = malloc(P * sizeof(float));
    CHECK(h != NULL);
    cr_ppo_stats_acc zero = {0}, acc;
    ctx->ops->copy_from_host(ctx, p.acc, &zero, sizeof zero);
    float lr = (float)cfg.learning_rate;
    ctx->ops->copy_from_host(ctx, p.lr, &lr, sizeof lr);

    /* step 1: forward, losses, gradients, Adam */
    cr_ppo_update_minibatch(&p, p.mb_idx);
    float logits[B * NUM_ACTIONS], want_logits[B * NUM_ACTIONS], value[B], want_value[B];
    ctx->ops->copy_to_host(ctx, logits, p.mb_logits, sizeof logits);
    ctx->ops->copy_to_host(ctx, value, p.mb_value, sizeof value);
    load("out.logits", want_logits, B * NUM_ACTIONS), load("out.newvalue", want_value, B);
    check_outputs("out.logits", logits, want_logits, B * NUM_ACTIONS, 1e-5);
    check_outputs("out.newvalue", value, want_value, B, 1e-5);
    ctx->ops->copy_to_host(ctx, &acc, p.acc, sizeof acc);
    CHECK(acc.count == 1);
    const char *names[7] = {"out.loss", "out.pg_loss", "out.v_loss", "out.entropy",
                            "out.old_approx_kl", "out.approx_kl", "out.clipfrac"};
    for (int i = 0; i < 7; i++) CHECK_CLOSE(names[i], acc.sum[i], scalar(names[i]), 2e-6, 5e-5);
    double norm = scalar("out.grad_norm");
    CHECK_CLOSE("out.grad_norm", acc.grad_norm_sum, norm, 1e-6, 1e-5);
    double coef = cfg.max_grad_norm / (norm + 1e-6);
    CHECK_MSG(coef < 1, "the golden step-1 gradient should need clipping (norm %g)", norm);
    printf("step 1: logits, values and the 7 losses match; gradient norm %.6f (torch %.6f)\n",
           acc.grad_norm_sum, norm);
    ctx->ops->copy_to_host(ctx, h, p.grads, P * sizeof(float)); /* clipped in place */
    check_tensors(&p, h, "grad.", coef, 1e-5, 0, 0);
    ctx->ops->copy_to_host(ctx, h, p.adam_m, P * sizeof(float));
    check_tensors(&p, h, "step1.exp_avg.", 1, 2e-5, 0, 1);
    ctx->ops->copy_to_host(ctx, h, p.adam_v, P * sizeof(float));
    check_tensors(&p, h, "step1.exp_avg_sq.", 1, 4e-5, 0, 1);
    ctx->ops->copy_to_host(ctx, h, p.params, P * sizeof(float));
    check_tensors(&p, h, "step1.", 1, 0, 2e-6, 0);

    /* step 2: the same minibatch again, Adam at t = 2 */
    ctx->ops->copy_from_host(ctx, p.acc, &zero, sizeof zero);
    cr_ppo_update_minibatch(&p, p.mb_idx);
    ctx->ops->copy_to_host(ctx, &acc, p.acc, sizeof acc);
    CHECK_CLOSE("step2.loss", acc.sum[0], scalar("step2.loss"), 2e-6, 5e-5);
    CHECK_CLOSE("step2.grad_norm", acc.grad_norm_sum, scalar("step2.grad_norm"), 1e-6, 1e-5);
    ctx->ops->copy_to_host(ctx, h, p.params, P * sizeof(float));
    check_tensors(&p, h, "step2.", 1, 0, 4e-6, 0);

    free(h);
    cr_ppo_free(&p);
    cudarl_ctx_free(ctx);
    cr_st_close(golden);
    printf("test_ppo_conv_golden: minatar-cnn's forward, losses, gradients and two Adam steps "
           "match PyTorch\n");
    return 0;
}
