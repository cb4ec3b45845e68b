/* The Gaussian policy's PPO loss reproduced against PyTorch: ppo_gaussian_golden.safetensors,
 * written by golden_ppo_gaussian.py (CleanRL's ppo_continuous_action.py loss, torch autograd,
 * float32 on the CPU), through the CPU backend's op table (ppo_loss_gaussian, gaussian_sample).
 *
 * Tolerance table (why each is what it is):
 *   stats        atol 2e-6, rtol 2e-5   means of 64 rows; each row's log-prob is a float sum of
 *                                       6 terms (torch takes log(exp(logstd)) for log sd, we
 *                                       take logstd) and its ratio an expf: a few ulps apart
 *   gradients    rel 2e-5 of the norm   ||g - g_torch|| / ||g_torch|| per tensor: per-row
 *                                       products of those ratios; dlogstd sums the 64 rows
 *                                       (double here, torch's float reduction there)
 *   sampling     atol 2e-6 |z| + 2 ulp  the same float formula; torch's log, cos and exp
 *                                       against glibc's (each within an ulp or two) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "io/safetensors.h"
#include "ops/backend.h"

static cr_st_file *golden;
static int B, K;

static float *load(const char *name, size_t n) {
    float *p = malloc(n * sizeof *p);
    CHECK(p != NULL);
    CHECK_OK(cr_st_read_f32(golden, name, p, n));
    return p;
}

static double scalar(const char *name) {
    float v;
    CHECK_OK(cr_st_read_f32(golden, name, &v, 1));
    return v;
}

static int meta_int(const char *key) {
    const char *v = cr_st_meta(golden, key);
    CHECK_MSG(v != NULL, "golden file lacks metadata '%s'", key);
    return atoi(v);
}

static float meta_float(const char *key) {
    const char *v = cr_st_meta(golden, key);
    CHECK_MSG(v != NULL, "golden file lacks metadata '%s'", key);
    return (float)atof(v);
}

static int meta_bool(const char *key) {
    const char *v = cr_st_meta(golden, key);
    CHECK_MSG(v != NULL, "golden file lacks metadata '%s'", key);
    return strcmp(v, "true") == 0;
}

static void check_rel_norm(const char *what, const float *got, const float *want, size_t n,
                           double tol) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)got[i] - want[i];
        num += d * d, den += (double)want[i] * want[i];
    }
    double rel = sqrt(num) / (sqrt(den) + 1e-30);
    CHECK_MSG(rel <= tol, "%s: relative error %.3g > %.3g", what, rel, tol);
    printf("  %-24s relative error %.2g (tolerance %.0e)\n", what, rel, tol);
}

/* One variant of the loss: the stats CleanRL logs and the gradients torch's autograd gives. */
static void test_variant(cudarl_ctx *ctx, const char *v) {
    char key[96];
    cr_ppo_loss_params p;
    p.clip_coef = meta_float("clip_coef"), p.ent_coef = meta_float("ent_coef");
    p.vf_coef = meta_float("vf_coef");
    snprintf(key, sizeof key, "%s.clip_vloss", v), p.clip_vloss = meta_bool(key);
    snprintf(key, sizeof key, "%s.norm_adv", v), p.norm_adv = meta_bool(key);
    const size_t n = (size_t)B * K;
    float *mean = load("mb.mean", n), *ls = load("mb.logstd", K), *act = load("mb.action", n);
    float *old_logp = load("mb.logprobs", B), *adv = load("mb.advantages", B);
    float *old_v = load("mb.values", B), *ret = load("mb.returns", B);
    float *value = load("mb.newvalue", B);
    float *dm = malloc(n * sizeof *dm), *dls = malloc(K * sizeof *dls);
    float *dv = malloc(B * sizeof *dv);
    CHECK(dm && dls && dv);
    cr_ppo_stats_acc acc;
    memset(&acc, 0, sizeof acc);
    ctx->ops->ppo_loss_gaussian(ctx, mean, ls, act, old_logp, adv, value, old_v, ret, &p, dm, dls,
                                dv, &acc, B, K);
    CHECK(acc.count == 1);
    printf("%s (norm_adv %d, clip_vloss %d):\n", v, p.norm_adv, p.clip_vloss);
    static const char *const names[7] = {"loss", "pg_loss", "v_loss", "entropy",
                                         "old_approx_kl", "approx_kl", "clipfrac"};
    double worst = 0;
    for (int i = 0; i < 7; i++) {
        snprintf(key, sizeof key, "out.%s.%s", v, names[i]);
        double want = scalar(key), tol = 2e-6 + 2e-5 * fabs(want);
        CHECK_CLOSE(key, acc.sum[i], want, 2e-6, 2e-5);
        worst = fmax(worst, fabs(acc.sum[i] - want) / tol);
    }
    printf("  %-24s worst error %.2g of the tolerance\n", "stats", worst);
    CHECK_MSG(acc.last_approx_kl == acc.sum[5], "last_approx_kl %g", acc.last_approx_kl);
    snprintf(key, sizeof key, "grad.%s.mean", v);
    float *want = load(key, n);
    check_rel_norm(key, dm, want, n, 2e-5);
    free(want);
    snprintf(key, sizeof key, "grad.%s.logstd", v);
    want = load(key, K);
    check_rel_norm(key, dls, want, K, 2e-5);
    free(want);
    snprintf(key, sizeof key, "grad.%s.value", v);
    want = load(key, B);
    check_rel_norm(key, dv, want, B, 2e-5);
    free(want);
    free(mean), free(ls), free(act), free(old_logp), free(adv), free(old_v), free(ret),
        free(value), free(dm), free(dls), free(dv);
}

/* cr_box_muller and the sampled log-prob against torch's float32 ops on the same uniforms. */
static void test_sample(cudarl_ctx *ctx) {
    const size_t n = (size_t)B * K;
    float *mean = load("mb.mean", n), *ls = load("mb.logstd", K), *u = load("sample.u", 2 * n);
    float *want_a = load("sample.action", n), *want_lp = load("sample.logp", B);
    float *a = malloc(n * sizeof *a), *lp = malloc(B * sizeof *lp);
    CHECK(a && lp);
    ctx->ops->gaussian_sample(ctx, mean, ls, u, a, lp, B, K);
    CHECK_MSG(a[0] == mean[0], "u1 = 0 gives the mean itself");
    for (size_t j = 0; j < n; j++) {
        char what[64];
        snprintf(what, sizeof what, "sample.action[%zu]", j);
        double z = ((double)want_a[j] - mean[j]) / exp(ls[j % K]);
        CHECK_CLOSE(what, a[j], want_a[j], 2e-6 * fabs(z) + 2 * 0x1p-23 * fabs(want_a[j]), 0);
    }
    for (int b = 0; b < B; b++) {
        char what[64];
        snprintf(what, sizeof what, "sample.logp[%d]", b);
        CHECK_CLOSE(what, lp[b], want_lp[b], 2e-5, 2e-6);
    }
    printf("sample: %zu draws and %d log-probs match torch\n", n, B);
    free(mean), free(ls), free(u), free(want_a), free(want_lp), free(a), free(lp);
}

int main(void) {
    const char *dir = getenv("CUDARL_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/ppo_gaussian_golden.safetensors", dir ? dir : "tests/golden");
    cudarl_status s = cr_st_open(&golden, path);
    CHECK_MSG(s == CUDARL_OK, "golden file missing or unreadable (%s): run "
              "tests/golden/golden_ppo_gaussian.py with torch", cudarl_last_error());
    CHECK_MSG(!strcmp(cr_st_meta(golden, "format"), "cudarl-golden-ppo-gaussian"),
              "not a golden file");
    B = meta_int("B"), K = meta_int("K");
    CHECK(B >= 1 && K >= 1 && K <= CR_GAUSSIAN_MAX_K);
    cudarl_ctx cpu;
    memset(&cpu, 0, sizeof cpu);
    cpu.kind = CUDARL_DEVICE_CPU;
    cpu.ops = &cr_backend_cpu;
    test_variant(&cpu, "clip");
    test_variant(&cpu, "plain");
    test_sample(&cpu);
    cr_st_close(golden);
    printf("test_ppo_gaussian_golden: the Gaussian PPO loss, its gradients and sampling match "
           "PyTorch\n");
    return 0;
}
