/* One DQN update reproduced against PyTorch: dqn_golden.safetensors, written by
 * golden_dqn.py (CleanRL's dqn.py update, torch autograd, float32 on the CPU).
 *
 * Four variants of one update from the same weights and a fresh Adam each (dqn_mse: CleanRL's;
 * double_huber: double DQN + smooth_l1; per_huber: importance-weighted smooth_l1; mse_clip:
 * dqn_mse + clip_grad_norm_), then one Polyak update. Each runs through the ops the trainer's
 * train_step (src/algo/dqn/dqn.c) calls, in its order: target forward on next_obs, online forward
 * on next_obs (double DQN), online forward on obs, cr_cpu_dqn_loss, cr_mlp_backward,
 * cr_cpu_clip_grad_norm, cr_cpu_adam_step; the target update is cr_cpu_polyak.
 *
 * Tolerance table (why each is what it is; "seen" = torch 2.11 on an x86-64 CPU):
 *   loss         rel 1e-5        a mean of 64 per-row losses, each a float32 function of a TD
 *                                error; we sum in double, torch in float32 in another order
 *                                (seen <= 7e-8)
 *   td errors    abs 1e-5        q_sa - (r + gamma max Q'), |delta| < 4: three float32 layers
 *                                whose dot products sum in another order than torch's sgemm,
 *                                a few ulps of values below 4 (seen 2.4e-7)
 *   gradients    rel 1e-4        ||g - g_torch|| / ||g_torch|| per tensor (not per element: an
 *                                element can be a cancelling sum): sums over 64 rows of
 *                                products of forward values, in another order (seen 2e-7)
 *   grad norm    rel 1e-5        sqrt of a sum of squares: ours in double, torch's in float32
 *   parameters   abs 2e-6        Adam's first step moves a weight by lr * g / (|g| + eps), at
 *                                most lr = 1e-3; 2e-6 is 0.2% of that (seen 3e-8). Checked
 *                                twice: from torch's own gradient (optimizer and clipping
 *                                alone, every element), and end to end from our gradient.
 *     steep      see below       End to end, where 0 < |g_torch| < STEEP_GRAD the step is steep
 *                                in g: its slope is lr * eps / (|g| + eps)^2, up to lr / eps =
 *                                1e5 at g = 0, so 1e-11 of float32 noise in a 1e-9 gradient
 *                                moves the weight by 1e-6 (seen: 2.4e-10 moved one by 2e-5).
 *                                There the tolerance adds lr * |dir(g) - dir(g_torch)|, what
 *                                the gradients' own difference does to the step, provided the
 *                                gradients agree within STEEP_GRAD_ABS (seen 7e-10) and at most
 *                                MAX_STEEP elements are steep (seen 88 of 4 x 10,830). Above
 *                                STEEP_GRAD the slope is <= 10, so gradient noise < 1e-8 moves
 *                                a weight < 1e-7: the plain 2e-6 holds.
 *   polyak       1 ulp           tau * online + (1 - tau) * target from the same float32
 *                                inputs (torch's step1.dqn_mse and target): the same two
 *                                products and sum, each rounded; 1 ulp lets a compiler fuse one
 *                                into an FMA (seen 0) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cudarl.h"
#include "nn/qnet.h"
#include "ops/cpu/ops_cpu.h"
#include "ops/cpu/ops_dqn.h"
#include "io/safetensors.h"

#define TOL_LOSS_REL 1e-5
#define TOL_TD_ABS 1e-5
#define TOL_GRAD_REL 1e-4
#define TOL_NORM_REL 1e-5
#define TOL_PARAM_ABS 2e-6
#define TOL_POLYAK_ULP 1
#define STEEP_GRAD 1e-6     /* 0 < |g_torch| below this: Adam's first step is steep in g */
#define STEEP_GRAD_ABS 1e-8 /* how far our gradient may be from torch's there */
#define MAX_STEEP 200       /* of 4 x 10,830 elements; the script prints how many it has */
#define MIN_BRANCH 5        /* rows each branch must have: as golden_dqn.py asserts */

#define B 64
#define OBS 4
#define ACT 2

#define REGENERATE "python3 tests/golden/golden_dqn.py --out tests/golden/dqn_golden.safetensors"

typedef struct variant {
    const char *name;
    int double_dqn, huber, weighted, clip;
} variant;

/* As VARIANTS in golden_dqn.py, in its order. */
static const variant variants[] = {
    {"dqn_mse", 0, 0, 0, 0},
    {"double_huber", 1, 1, 0, 0},
    {"per_huber", 0, 1, 1, 0},
    {"mse_clip", 0, 0, 0, 1},
};
#define NV ((int)(sizeof variants / sizeof variants[0]))

static cr_st_file *golden;
static cr_qnet_layout layout;
static double gamma_, lr, eps, b1, b2, tau, max_grad_norm;

/* The minibatch, as the golden file holds it. */
static float obs[B * OBS], next_obs[B * OBS], rewards[B], weights[B];
static int32_t actions[B];
static uint8_t terminated[B];

static void load(const char *name, float *dst, size_t n) {
    CHECK_OK(cr_st_read_f32(golden, name, dst, n));
}

static float scalar(const char *name) {
    float v;
    load(name, &v, 1);
    return v;
}

static double meta(const char *key) {
    const char *v = cr_st_meta(golden, key);
    CHECK_MSG(v != NULL, "golden file has no metadata \"%s\"; regenerate it: %s", key, REGENERATE);
    return atof(v);
}

static void *xmalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    CHECK(p != NULL);
    return p;
}

/* Every parameter-shaped golden tensor "<prefix><state_dict name>" into one buffer. */
static float *load_params(const char *prefix) {
    float *p = xmalloc(layout.num_params * sizeof(float));
    for (int i = 0; i < CR_QNET_NUM_TENSORS; i++) {
        const cr_param_tensor *t = &layout.t[i];
        char name[96];
        snprintf(name, sizeof name, "%s%s", prefix, t->name);
        cr_st_tensor st;
        CHECK_OK(cr_st_find(golden, name, &st));
        CHECK_MSG(st.ndim == t->ndim && st.shape[0] == t->shape[0] &&
                      (t->ndim == 1 || st.shape[1] == t->shape[1]),
                  "%s: shape differs from CleanRL's QNetwork", name);
        load(name, p + t->offset, t->count);
    }
    return p;
}

static void load_bytes(const char *name, cr_st_dtype dtype, void *dst, size_t count) {
    cr_st_tensor t;
    CHECK_OK(cr_st_find(golden, name, &t));
    CHECK_MSG(t.dtype == dtype && t.count == count, "%s: %s of %zu elements, want %s of %zu", name,
              cr_st_dtype_name(t.dtype), t.count, cr_st_dtype_name(dtype), count);
    memcpy(dst, t.data, t.nbytes);
}

static void load_minibatch(void) {
    load("mb.obs", obs, B * OBS), load("mb.next_obs", next_obs, B * OBS);
    load("mb.rewards", rewards, B), load("mb.weights", weights, B);
    load_bytes("mb.actions", CR_ST_I32, actions, B);
    load_bytes("mb.terminated", CR_ST_U8, terminated, B);
    int term = 0;
    for (int b = 0; b < B; b++) {
        CHECK(actions[b] >= 0 && actions[b] < ACT && terminated[b] <= 1);
        term += terminated[b];
    }
    CHECK_MSG(term >= MIN_BRANCH && B - term >= MIN_BRANCH, "%d of %d rows terminated", term, B);
}

/* ||got - want|| / ||want|| over each parameter tensor. */
static double check_grads(const char *vname, const float *got, const float *want) {
    double worst = 0;
    for (int i = 0; i < CR_QNET_NUM_TENSORS; i++) {
        const cr_param_tensor *t = &layout.t[i];
        double num = 0, den = 0;
        for (size_t k = t->offset; k < t->offset + t->count; k++) {
            double d = (double)got[k] - want[k];
            num += d * d, den += (double)want[k] * want[k];
        }
        double rel = sqrt(num) / (sqrt(den) + 1e-30);
        CHECK_MSG(rel <= TOL_GRAD_REL, "grad.%s.%s: relative error %.3g > %.3g", vname, t->name,
                  rel, TOL_GRAD_REL);
        if (rel > worst) worst = rel;
    }
    return worst;
}

/* Adam's first step as a fraction of lr (m_hat = g, sqrt(v_hat) = |g|). */
static double adam1_dir(double g) { return g / (fabs(g) + eps); }

static int steep_total;       /* steep elements over all variants */
static double steep_grad_err; /* the largest |g - g_torch| among them */

/* Parameters after the step against torch's. g_ours, g_torch (the gradients the steps used,
 * after clipping) NULL: every element at TOL_PARAM_ABS. Otherwise the steep elements get the
 * allowance of the tolerance table. Returns the largest error, counts steep elements. */
static double check_params(const char *what, const float *got, const float *want,
                           const float *g_ours, const float *g_torch, int *steep) {
    double worst = 0;
    for (int i = 0; i < CR_QNET_NUM_TENSORS; i++) {
        const cr_param_tensor *t = &layout.t[i];
        for (size_t k = t->offset; k < t->offset + t->count; k++) {
            double err = fabs((double)got[k] - want[k]), tol = TOL_PARAM_ABS;
            if (g_torch && g_torch[k] != 0 && fabs(g_torch[k]) < STEEP_GRAD) {
                CHECK_MSG(fabs((double)g_ours[k] - g_torch[k]) <= STEEP_GRAD_ABS,
                          "%s %s[%zu]: gradient %.9g, torch %.9g (steep step: abs %g)", what,
                          t->name, k - t->offset, (double)g_ours[k], (double)g_torch[k],
                          STEEP_GRAD_ABS);
                tol += lr * fabs(adam1_dir(g_ours[k]) - adam1_dir(g_torch[k]));
                (*steep)++;
                steep_grad_err = fmax(steep_grad_err, fabs((double)g_ours[k] - g_torch[k]));
            } else if (err > worst) {
                worst = err;
            }
            CHECK_MSG(err <= tol, "%s %s[%zu]: expected %.9g, got %.9g (abs %g; gradients: ours "
                      "%.9g, torch %.9g)", what, t->name, k - t->offset, (double)want[k],
                      (double)got[k], tol, g_ours ? (double)g_ours[k] : NAN,
                      g_torch ? (double)g_torch[k] : NAN);
        }
    }
    return worst;
}

/* torch's clip_grad_norm_ on its own gradient, scale min(1, max / (norm + 1e-6)) (torch rounds
 * the scale to float32 first: a few ulps apart, which only moves the steep allowance). */
static void torch_clip(float *g, double norm) {
    double coef = max_grad_norm / (norm + 1e-6);
    if (coef < 1)
        for (size_t k = 0; k < layout.num_params; k++) g[k] *= (float)coef;
}

static void test_variant(cudarl_ctx *ctx, const variant *v) {
    const size_t P = layout.num_params;
    const int H = cr_qnet_widest(&layout);
    char name[96];
    float *online = load_params("params."), *target = load_params("target.");
    float *grads = xmalloc(P * sizeof(float)), *m = calloc(P, sizeof(float)),
          *vv = calloc(P, sizeof(float));
    CHECK(m && vv);
    size_t cf = cr_mlp_cache_floats(B, H);
    float *cache_mem = xmalloc(3 * cf * sizeof(float));
    cr_mlp_cache cache_q = cr_mlp_cache_carve(cache_mem, B, H);
    cr_mlp_cache cache_t = cr_mlp_cache_carve(cache_mem + cf, B, H);
    cr_mlp_cache cache_o = cr_mlp_cache_carve(cache_mem + 2 * cf, B, H);
    float q[B * ACT], next_t[B * ACT], next_o[B * ACT], dq[B * ACT], td[B], want_td[B];

    /* train_step's order */
    cr_mlp_view on = cr_qnet_view(&layout, online), tg = cr_qnet_view(&layout, target);
    cr_mlp_view gv = cr_qnet_view(&layout, grads);
    cr_mlp_forward(ctx, &tg, next_obs, next_t, &cache_t, B);
    if (v->double_dqn) cr_mlp_forward(ctx, &on, next_obs, next_o, &cache_o, B);
    cr_mlp_forward(ctx, &on, obs, q, &cache_q, B);
    cr_dqn_loss_stats st;
    cr_cpu_dqn_loss(q, actions, rewards, terminated, next_t, v->double_dqn ? next_o : NULL,
                    v->weighted ? weights : NULL, (float)gamma_, v->double_dqn, v->huber, dq, td,
                    &st, B, ACT);
    cr_mlp_backward(ctx, &on, &gv, obs, dq, &cache_q, B);

    /* loss, TD errors, raw gradients */
    snprintf(name, sizeof name, "loss.%s", v->name);
    double want_loss = scalar(name);
    CHECK_CLOSE(name, st.loss, want_loss, 0, TOL_LOSS_REL);
    snprintf(name, sizeof name, "td.%s", v->name);
    load(name, want_td, B);
    double td_err = 0;
    for (int b = 0; b < B; b++) {
        char label[128];
        snprintf(label, sizeof label, "%s[%d]", name, b);
        CHECK_CLOSE(label, td[b], want_td[b], TOL_TD_ABS, 0);
        td_err = fmax(td_err, fabs((double)td[b] - want_td[b]));
    }
    if (v->huber) { /* the file must exercise both branches of smooth_l1 */
        int linear = 0;
        for (int b = 0; b < B; b++) linear += fabsf(want_td[b]) > 1.0f;
        CHECK_MSG(linear >= MIN_BRANCH && B - linear >= MIN_BRANCH,
                  "%s: %d of %d rows with |delta| > 1; regenerate: %s", v->name, linear, B,
                  REGENERATE);
    }
    snprintf(name, sizeof name, "grad.%s.", v->name);
    float *want_g = load_params(name);
    double g_err = check_grads(v->name, grads, want_g);

    /* clipping, as train_step does it, and torch's the same way on its own gradient */
    double want_norm = 0;
    if (v->clip) {
        double norm = cr_cpu_clip_grad_norm(grads, P, max_grad_norm);
        snprintf(name, sizeof name, "grad_norm.%s", v->name);
        want_norm = scalar(name);
        CHECK_CLOSE(name, norm, want_norm, 0, TOL_NORM_REL);
        CHECK_MSG(norm > max_grad_norm, "%s: the golden gradient should need clipping (norm %g)",
                  v->name, norm);
        torch_clip(want_g, want_norm);
    }

    /* Adam step 1, end to end */
    cr_cpu_adam_step(online, grads, m, vv, P, (float)lr, (float)b1, (float)b2, (float)eps, 1);
    snprintf(name, sizeof name, "step1.%s.", v->name);
    float *want_p = load_params(name);
    int steep = 0;
    snprintf(name, sizeof name, "step1.%s (end to end)", v->name);
    double p_err = check_params(name, online, want_p, grads, want_g, &steep);
    steep_total += steep;

    /* Adam step 1 from torch's own gradient: the optimizer (and clipping) alone, every element */
    float *p2 = load_params("params.");
    memset(m, 0, P * sizeof(float)), memset(vv, 0, P * sizeof(float));
    snprintf(name, sizeof name, "grad.%s.", v->name);
    float *g2 = load_params(name);
    if (v->clip) {
        double norm2 = cr_cpu_clip_grad_norm(g2, P, max_grad_norm);
        CHECK_CLOSE("norm of torch's gradient", norm2, want_norm, 0, TOL_NORM_REL);
    }
    cr_cpu_adam_step(p2, g2, m, vv, P, (float)lr, (float)b1, (float)b2, (float)eps, 1);
    snprintf(name, sizeof name, "step1.%s (from torch's gradient)", v->name);
    double p2_err = check_params(name, p2, want_p, NULL, NULL, NULL);

    printf("%-13s loss %.7g (rel err %.2g)  td err %.2g  grad rel err %.2g  params err %.2g "
           "(steep %d) / %.2g from torch's gradient%s\n",
           v->name, st.loss, fabs(st.loss - want_loss) / fabs(want_loss), td_err, g_err,
           p_err, steep, p2_err, v->clip ? "  clipped" : "");
    free(online), free(target), free(grads), free(m), free(vv), free(cache_mem);
    free(want_g), free(want_p), free(p2), free(g2);
}

/* Distance in representable floats (finite values). */
static int64_t ulps(float a, float b) {
    int32_t ia, ib;
    memcpy(&ia, &a, 4), memcpy(&ib, &b, 4);
    int64_t x = ia < 0 ? (int64_t)INT32_MIN - ia : ia, y = ib < 0 ? (int64_t)INT32_MIN - ib : ib;
    return x > y ? x - y : y - x;
}

/* CleanRL's soft update from torch's stepped weights (step1.dqn_mse) and its target. */
static void test_polyak(void) {
    float *online = load_params("step1.dqn_mse."), *target = load_params("target.");
    float *want = load_params("polyak.");
    cr_cpu_polyak(target, online, layout.num_params, tau);
    int64_t worst = 0;
    for (int i = 0; i < CR_QNET_NUM_TENSORS; i++) {
        const cr_param_tensor *t = &layout.t[i];
        for (size_t k = t->offset; k < t->offset + t->count; k++) {
            int64_t u = ulps(target[k], want[k]);
            CHECK_MSG(u <= TOL_POLYAK_ULP, "polyak.%s[%zu]: expected %.9g, got %.9g (%lld ulps)",
                      t->name, k - t->offset, (double)want[k], (double)target[k], (long long)u);
            if (u > worst) worst = u;
        }
    }
    printf("polyak        tau %g: worst %lld ulp\n", tau, (long long)worst);
    free(online), free(target), free(want);
}

int main(void) {
    const char *dir = getenv("CUDARL_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/dqn_golden.safetensors", dir ? dir : "tests/golden");
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "FAIL: golden file %s is missing. Generate it (PyTorch, numpy and "
                "safetensors, on the CPU) from the repository root with\n    %s\nand commit it "
                "with the script (see tests/golden/README.md).\n", path, REGENERATE);
        return 1;
    }
    fclose(f);
    CHECK_OK(cr_st_open(&golden, path));
    const char *format = cr_st_meta(golden, "format"), *version = cr_st_meta(golden, "version");
    CHECK_MSG(format && !strcmp(format, "cudarl-golden-dqn"), "%s: not a DQN golden file", path);
    CHECK_MSG(version && !strcmp(version, "1"), "%s: version %s, this test reads 1; regenerate: %s",
              path, version ? version : "(none)", REGENERATE);
    char list[256] = "";
    for (int i = 0; i < NV; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? "," : "",
                 variants[i].name);
    const char *have = cr_st_meta(golden, "variants");
    CHECK_MSG(have && !strcmp(have, list), "%s: variants \"%s\", this test knows \"%s\"", path,
              have ? have : "(none)", list);
    CHECK(meta("B") == B);
    gamma_ = meta("gamma"), lr = meta("learning_rate"), eps = meta("adam_eps");
    b1 = meta("adam_beta1"), b2 = meta("adam_beta2"), tau = meta("tau");
    max_grad_norm = meta("max_grad_norm");
    CHECK(eps == 1e-8 && b1 == 0.9 && b2 == 0.999); /* what train_step passes cr_cpu_adam_step */

    cr_qnet_layout_init(&layout, OBS, 120, 84, ACT);
    load_minibatch();
    cudarl_ctx *ctx;
    CHECK_OK(cudarl_ctx_init(&ctx, CUDARL_DEVICE_CPU, 0));
    for (int i = 0; i < NV; i++) test_variant(ctx, &variants[i]);
    CHECK_MSG(steep_total <= MAX_STEEP, "%d steep elements (limit %d)", steep_total, MAX_STEEP);
    printf("steep         %d elements with 0 < |g| < %g; their gradients within %.2g of torch's\n",
           steep_total, STEEP_GRAD, steep_grad_err);
    test_polyak();
    const char *torch = cr_st_meta(golden, "torch");
    printf("test_dqn_golden: losses, TD errors, gradients, clipping, Adam step and Polyak match "
           "PyTorch %s\n", torch ? torch : "(version not recorded)");
    cudarl_ctx_free(ctx);
    cr_st_close(golden);
    return 0;
}
