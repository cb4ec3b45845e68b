/* The CPU references of the continuous-action ops (ops/cpu/ops_cpu.h) against straightforward
 * double-precision references:
 *   sample     cr_cpu_gaussian_sample: the moments of many draws, logp against the closed form,
 *              the edges of the uniforms;
 *   loss       cr_cpu_ppo_loss_gaussian: the statistics against CleanRL's loss in double, and
 *              dmean, dlogstd, dvalue against central differences of that loss;
 *   normalize  cr_cpu_running_stats_update, cr_cpu_normalize_obs, cr_cpu_normalize_reward
 *              against Gymnasium's formulas in double (RunningMeanStd, NormalizeObservation,
 *              NormalizeReward), batches merged one by one against one big batch.
 * Usage: test_continuous_ops [sample|loss|normalize]   (all when omitted) */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "op_buffers.h"
#include "core/core.h"
#include "ops/cpu/ops_cpu.h"

#define LOG_SQRT_2PI 0.91893853320467274178 /* log(sqrt(2 pi)) */
#define U 0x1p-24                            /* float's unit roundoff */

/* ---- sampling ------------------------------------------------------------------------------ */

/* logp of one row in double: sum over k of the normal log density of a (K) under N(m, exp(ls)). */
static double ref_logp(const float *a, const float *m, const float *ls, int K, double *abs_sum) {
    double s = 0, as = 0;
    for (int k = 0; k < K; k++) {
        double d = (double)a[k] - m[k], var = exp(2.0 * ls[k]);
        double q = -d * d / (2 * var);
        s += q - ls[k] - LOG_SQRT_2PI;
        as += fabs(q) + fabs(ls[k]) + LOG_SQRT_2PI;
    }
    if (abs_sum) *abs_sum = as;
    return s;
}

/* B rows of K: every column k has mean mu[k] and log-std ls[k]. The standardised draws
 * (a - m) / sd of each column must have mean 0, variance 1, fourth moment 3 and put 68.27 % of
 * themselves within one sd, each within 5 standard errors of n = B draws; logp matches the
 * closed form. */
static void sample_moments_case(int B, int K) {
    float *mean = floats((size_t)B * K), *ls = floats(K);
    float *u = uniform_floats((size_t)2 * B * K, 0, 1);
    float *a = floats((size_t)B * K), *logp = floats(B);
    for (int k = 0; k < K; k++) ls[k] = -1.5f + 2.0f * (float)k / (float)(K > 1 ? K - 1 : 1);
    for (int b = 0; b < B; b++)
        for (int k = 0; k < K; k++) mean[(size_t)b * K + k] = 0.5f * (float)k - 1.0f;
    cr_cpu_gaussian_sample(mean, ls, u, a, logp, B, K);
    const double n = B, se = 1.0 / sqrt(n);
    for (int k = 0; k < K; k++) {
        double s1 = 0, s2 = 0, s4 = 0, in1 = 0, sd = exp((double)ls[k]);
        for (int b = 0; b < B; b++) {
            double z = ((double)a[(size_t)b * K + k] - mean[(size_t)b * K + k]) / sd;
            s1 += z, s2 += z * z, s4 += z * z * z * z, in1 += fabs(z) <= 1.0;
        }
        char what[64];
        snprintf(what, sizeof what, "K=%d column %d mean", K, k);
        CHECK_CLOSE(what, s1 / n, 0.0, 5 * se, 0);
        snprintf(what, sizeof what, "K=%d column %d variance", K, k);
        CHECK_CLOSE(what, s2 / n, 1.0, 5 * sqrt(2.0) * se, 0); /* var of z^2 is 2 */
        snprintf(what, sizeof what, "K=%d column %d fourth moment", K, k);
        CHECK_CLOSE(what, s4 / n, 3.0, 5 * sqrt(96.0) * se, 0); /* var of z^4 is 105 - 9 */
        snprintf(what, sizeof what, "K=%d column %d within one sd", K, k);
        CHECK_CLOSE(what, in1 / n, 0.682689492, 5 * sqrt(0.6827 * 0.3173) * se, 0);
    }
    /* logp: the float sum of K float terms against the double sum on the same actions */
    for (int b = 0; b < B; b++) {
        double abs_sum, want = ref_logp(a + (size_t)b * K, mean + (size_t)b * K, ls, K, &abs_sum);
        CHECK_CLOSE("logp vs closed form", logp[b], want, (K + 8) * U * abs_sum, 0);
    }
    free(mean), free(ls), free(u), free(a), free(logp);
}

/* The edges of the uniforms: u1 = 0 gives z = 0 (action = mean exactly), u1 just below 1 the
 * largest |z| (sqrt(-2 log 2^-24) = 5.77), u2 = 0 and 0.5 the signs of the cosine. */
static void sample_edges_case(void) {
    const float u_max = 0x1.fffffep-1f;
    float u[8] = {0.0f, 0.3f, u_max, 0.0f, u_max, 0.5f, 0.7f, 0.25f};
    float mean[4] = {0.25f, -1.0f, 2.0f, 0.0f}, ls[4] = {0.0f, -0.5f, 0.3f, -2.0f};
    float a[4], logp;
    cr_cpu_gaussian_sample(mean, ls, u, a, &logp, 1, 4);
    CHECK(a[0] == mean[0]);
    double zmax = sqrt(-2.0 * log(0x1p-24));
    CHECK_CLOSE("z at u1 max, u2 0", (a[1] - mean[1]) / exp(ls[1]), zmax, 1e-5, 1e-5);
    CHECK_CLOSE("z at u1 max, u2 0.5", (a[2] - mean[2]) / exp(ls[2]), -zmax, 1e-5, 1e-5);
    CHECK(isfinite(a[3]) && fabs(a[3] - mean[3]) < 1e-6 * 4); /* cos(pi / 2) ~ 0 */
    double abs_sum, want = ref_logp(a, mean, ls, 4, &abs_sum);
    CHECK_CLOSE("edge logp", logp, want, 12 * U * abs_sum, 0);
}

static void test_sample(void) {
    sample_moments_case(200000, 1);
    sample_moments_case(50000, 3);
    sample_moments_case(4000, CR_GAUSSIAN_MAX_K);
    sample_edges_case();
}

/* ---- PPO loss ------------------------------------------------------------------------------ */

typedef struct gauss_batch {
    int B, K;
    float *mean, *logstd, *action, *old_logp, *adv, *value, *old_value, *returns;
} gauss_batch;

/* CleanRL's continuous loss in double at mean m (B, K), log-std ls (K) and values v (B):
 * Normal(m, exp(ls)).log_prob(action).sum(1), entropy().sum(1), the clipped objective with
 * norm_adv (unbiased std + 1e-8; B = 1 as ppo_loss.c takes it: std 0) and clip_vloss. Fills st;
 * abs_dls (K), unless NULL, gets sum over the rows of |d loss_b / d ls_k| (the scale of dlogstd's
 * rounding). */
static double ref_loss(const gauss_batch *g, const double *m, const double *ls, const double *v,
                       const cr_ppo_loss_params *p, cr_ppo_loss_stats *st, double *abs_dls) {
    const int B = g->B, K = g->K;
    const double c = p->clip_coef;
    double mean = 0, var = 0;
    for (int b = 0; b < B; b++) mean += g->adv[b];
    mean /= B;
    for (int b = 0; b < B; b++) var += (g->adv[b] - mean) * (g->adv[b] - mean);
    double denom = (B > 1 ? sqrt(var / (B - 1)) : 0.0) + 1e-8;
    cr_ppo_loss_stats s = {0};
    if (abs_dls)
        for (int k = 0; k < K; k++) abs_dls[k] = 0;
    for (int k = 0; k < K; k++) s.entropy += 0.5 + LOG_SQRT_2PI + ls[k];
    for (int b = 0; b < B; b++) {
        double logp = 0;
        for (int k = 0; k < K; k++) {
            double d = g->action[(size_t)b * K + k] - m[(size_t)b * K + k];
            logp += -d * d / (2 * exp(2 * ls[k])) - ls[k] - LOG_SQRT_2PI;
        }
        double logratio = logp - g->old_logp[b], ratio = exp(logratio);
        double a = p->norm_adv ? (g->adv[b] - mean) / denom : g->adv[b];
        double rc = ratio < 1 - c ? 1 - c : ratio > 1 + c ? 1 + c : ratio;
        s.pg_loss += fmax(-a * ratio, -a * rc) / B;
        double lu = (v[b] - g->returns[b]) * (v[b] - g->returns[b]);
        if (p->clip_vloss) {
            double dv = v[b] - g->old_value[b];
            double vc = g->old_value[b] + (dv < -c ? -c : dv > c ? c : dv);
            lu = fmax(lu, (vc - g->returns[b]) * (vc - g->returns[b]));
        }
        s.v_loss += 0.5 * lu / B;
        s.old_approx_kl += -logratio / B;
        s.approx_kl += ((ratio - 1) - logratio) / B;
        s.clipfrac += (fabs(ratio - 1) > c) / (double)B;
        if (abs_dls) /* |d pg / d logp| <= |a| ratio / B, d logp / d ls_k = d^2 / var - 1 */
            for (int k = 0; k < K; k++) {
                double d = g->action[(size_t)b * K + k] - m[(size_t)b * K + k];
                abs_dls[k] += fabs(a) * ratio / B * fabs(d * d / exp(2 * ls[k]) - 1);
            }
    }
    s.loss = s.pg_loss - p->ent_coef * s.entropy + p->vf_coef * s.v_loss;
    if (st) *st = s;
    return s.loss;
}

/* A random minibatch: means in [-1, 1], log-stds in [-1.2, 0.3], actions drawn from the policy,
 * old log-probs 0.35 off the current ones (ratios over about [0.7, 1.4]), values and returns in
 * [-2, 2]. */
static gauss_batch random_batch(int B, int K) {
    gauss_batch g = {B, K, uniform_floats((size_t)B * K, -1, 1), uniform_floats(K, -1.2f, 0.3f),
                     floats((size_t)B * K), floats(B), uniform_floats(B, -2, 2),
                     uniform_floats(B, -2, 2), uniform_floats(B, -2, 2), uniform_floats(B, -2, 2)};
    float *u = uniform_floats((size_t)2 * B * K, 0, 1);
    cr_cpu_gaussian_sample(g.mean, g.logstd, u, g.action, g.old_logp, B, K);
    for (int b = 0; b < B; b++) g.old_logp[b] += 0.35f * (cr_philox_uniform(&rng) - 0.5f) * 2;
    free(u);
    return g;
}

static void batch_free(gauss_batch *g) {
    free(g->mean), free(g->logstd), free(g->action), free(g->old_logp), free(g->adv),
        free(g->value), free(g->old_value), free(g->returns);
}

/* Moves rows off the loss's kinks (ratio at 1 +- c, value difference at +- c, a tie between the
 * clipped and unclipped value losses) by at least `gap`, so central differences are valid. */
static void avoid_kinks(gauss_batch *g, float c, double gap) {
    const int K = g->K;
    double *m = doubles((size_t)K), *ls = doubles((size_t)K);
    for (int k = 0; k < K; k++) ls[k] = g->logstd[k];
    for (int b = 0; b < g->B; b++)
        for (int tries = 0;; tries++) {
            CHECK(tries < 1000);
            for (int k = 0; k < K; k++) m[k] = g->mean[(size_t)b * K + k];
            double lp = 0;
            for (int k = 0; k < K; k++) {
                double d = g->action[(size_t)b * K + k] - m[k];
                lp += -d * d / (2 * exp(2 * ls[k])) - ls[k] - LOG_SQRT_2PI;
            }
            double ratio = exp(lp - g->old_logp[b]);
            double dv = (double)g->value[b] - g->old_value[b];
            double vc = g->old_value[b] + (dv < -c ? -c : dv > c ? c : dv);
            double lu = (double)g->value[b] - g->returns[b], lc = vc - g->returns[b];
            if (fabs(ratio - (1 - c)) > gap && fabs(ratio - (1 + c)) > gap &&
                fabs(fabs(dv) - c) > gap && (fabs(dv) < c || fabs(lu * lu - lc * lc) > gap))
                break;
            g->old_logp[b] = (float)lp + 0.35f * (cr_philox_uniform(&rng) - 0.5f) * 2;
            g->value[b] = -2 + 4 * cr_philox_uniform(&rng);
        }
    free(m), free(ls);
}

/* The stats against ref_loss; dmean, dlogstd, dvalue against its central differences. */
static void loss_check(const gauss_batch *g, const cr_ppo_loss_params *p) {
    const int B = g->B, K = g->K;
    const size_t n = (size_t)B * K;
    float *dm = floats(n), *dls = floats(K), *dv = floats(B);
    cr_ppo_loss_stats st, rs;
    cr_cpu_ppo_loss_gaussian(g->mean, g->logstd, g->action, g->old_logp, g->adv, g->value,
                             g->old_value, g->returns, p, dm, dls, dv, &st, B, K);
    double *m = doubles(n), *ls = doubles(K), *v = doubles(B), *abs_dls = doubles(K);
    for (size_t i = 0; i < n; i++) m[i] = g->mean[i];
    for (int k = 0; k < K; k++) ls[k] = g->logstd[k];
    for (int b = 0; b < B; b++) v[b] = g->value[b];
    ref_loss(g, m, ls, v, p, &rs, abs_dls);
    /* per-row floats (logp a float sum of K terms of up to ~10) averaged in double */
    const double atol = 2e-5 * K, rtol = 5e-5;
    CHECK_CLOSE("loss", st.loss, rs.loss, atol, rtol);
    CHECK_CLOSE("pg_loss", st.pg_loss, rs.pg_loss, atol, rtol);
    CHECK_CLOSE("v_loss", st.v_loss, rs.v_loss, 1e-6, 1e-6);
    CHECK_CLOSE("entropy", st.entropy, rs.entropy, 4 * K * U * (1.5 + K), 0);
    CHECK_CLOSE("old_approx_kl", st.old_approx_kl, rs.old_approx_kl, atol, rtol);
    CHECK_CLOSE("approx_kl", st.approx_kl, rs.approx_kl, atol, rtol);
    CHECK_CLOSE("clipfrac", st.clipfrac, rs.clipfrac, 1e-12, 0);

    /* Central differences of the double loss (h = 1e-5: truncation ~h^2, rounding ~1e-11).
     * The float gradient's own error follows the row's logp (a float sum of K terms, so a
     * relative error of a few K u in the ratio): dmean and dvalue within 2e-4 of their
     * largest entry, dlogstd_k within 2e-4 of the sum over the rows of its terms' magnitudes
     * (the sum cancels) plus ent_coef. */
    const double h = 1e-5;
    double scale_m = 0, scale_v = 0;
    /* `if (a > m)`, not fmax(): GCC 12.2 for aarch64 crashes (an internal compiler error) vectorizing
     * an fmax reduction over floats widened to double; the same for every input, NaN left out. */
    for (size_t i = 0; i < n; i++)
        if (fabs(dm[i]) > scale_m) scale_m = fabs(dm[i]);
    for (int b = 0; b < B; b++)
        if (fabs(dv[b]) > scale_v) scale_v = fabs(dv[b]);
    for (size_t i = 0; i < n; i++) {
        double keep = m[i];
        m[i] = keep + h;
        double up = ref_loss(g, m, ls, v, p, NULL, NULL);
        m[i] = keep - h;
        double down = ref_loss(g, m, ls, v, p, NULL, NULL);
        m[i] = keep;
        char what[64];
        snprintf(what, sizeof what, "dmean[%zu] vs finite difference", i);
        CHECK_CLOSE(what, dm[i], (up - down) / (2 * h), 2e-4 * scale_m + 1e-9, 0);
    }
    for (int k = 0; k < K; k++) {
        double keep = ls[k];
        ls[k] = keep + h;
        double up = ref_loss(g, m, ls, v, p, NULL, NULL);
        ls[k] = keep - h;
        double down = ref_loss(g, m, ls, v, p, NULL, NULL);
        ls[k] = keep;
        char what[64];
        snprintf(what, sizeof what, "dlogstd[%d] vs finite difference", k);
        CHECK_CLOSE(what, dls[k], (up - down) / (2 * h), 2e-4 * (abs_dls[k] + p->ent_coef) + 1e-9,
                    0);
    }
    for (int b = 0; b < B; b++) {
        double keep = v[b];
        v[b] = keep + h;
        double up = ref_loss(g, m, ls, v, p, NULL, NULL);
        v[b] = keep - h;
        double down = ref_loss(g, m, ls, v, p, NULL, NULL);
        v[b] = keep;
        char what[64];
        snprintf(what, sizeof what, "dvalue[%d] vs finite difference", b);
        CHECK_CLOSE(what, dv[b], (up - down) / (2 * h), 1e-5 * scale_v + 1e-9, 0);
    }
    free(dm), free(dls), free(dv), free(m), free(ls), free(v), free(abs_dls);
}

static void test_loss(void) {
    static const int shapes[][2] = {{1, 1}, {1, 6}, {5, 2}, {16, 3}, {64, 6}, {33, 17}, {40, 32}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int flags = 0; flags < 4; flags++) {
            cr_ppo_loss_params p = {0.2f, 0.01f, 0.5f, flags & 1, flags >> 1};
            gauss_batch g = random_batch(shapes[s][0], shapes[s][1]);
            avoid_kinks(&g, p.clip_coef, 1e-3);
            loss_check(&g, &p);
            batch_free(&g);
        }

    /* The loss on the policy that just sampled: every ratio is exactly 1, the clipped objective
     * is -mean(adv) and its gradient the unclipped one; nothing is clipped and both KL
     * estimates are exactly 0. */
    {
        const int B = 50, K = 4;
        gauss_batch g = random_batch(B, K);
        float *u = uniform_floats((size_t)2 * B * K, 0, 1);
        cr_cpu_gaussian_sample(g.mean, g.logstd, u, g.action, g.old_logp, B, K);
        cr_ppo_loss_params p = {0.2f, 0.0f, 0.5f, 1, 0}, wide = {50.0f, 0.0f, 0.5f, 1, 0};
        float *dm = floats((size_t)B * K), *dls = floats(K), *dv = floats(B);
        float *dm2 = floats((size_t)B * K), *dls2 = floats(K), *dv2 = floats(B);
        cr_ppo_loss_stats st, st2;
        cr_cpu_ppo_loss_gaussian(g.mean, g.logstd, g.action, g.old_logp, g.adv, g.value,
                                 g.old_value, g.returns, &p, dm, dls, dv, &st, B, K);
        cr_cpu_ppo_loss_gaussian(g.mean, g.logstd, g.action, g.old_logp, g.adv, g.value,
                                 g.old_value, g.returns, &wide, dm2, dls2, dv2, &st2, B, K);
        CHECK(st.clipfrac == 0.0 && st.approx_kl == 0.0 && st.old_approx_kl == 0.0);
        CHECK(bits_equal(dm, dm2, (size_t)B * K) && bits_equal(dls, dls2, K));
        double adv_mean = 0;
        for (int b = 0; b < B; b++) adv_mean += g.adv[b];
        CHECK_CLOSE("pg_loss at ratio 1", st.pg_loss, -adv_mean / B, 1e-6, 1e-6);
        free(u), free(dm), free(dls), free(dv), free(dm2), free(dls2), free(dv2);
        batch_free(&g);
    }
    /* All-equal advantages with norm_adv (and B = 1): they normalise to 0, so only the entropy
     * bonus moves the log-std (dlogstd = -ent_coef exactly) and the means not at all. */
    for (int B = 1; B <= 9; B += 8) {
        gauss_batch g = random_batch(B, 3);
        for (int b = 0; b < B; b++) g.adv[b] = 0.7f;
        cr_ppo_loss_params p = {0.2f, 0.01f, 0.5f, 1, 1};
        float *dm = floats((size_t)B * 3), dls[3], *dv = floats(B);
        cr_ppo_loss_stats st;
        cr_cpu_ppo_loss_gaussian(g.mean, g.logstd, g.action, g.old_logp, g.adv, g.value,
                                 g.old_value, g.returns, &p, dm, dls, dv, &st, B, 3);
        for (int i = 0; i < B * 3; i++) CHECK_MSG(dm[i] == 0.0f, "dmean[%d] = %g", i, dm[i]);
        for (int k = 0; k < 3; k++) CHECK(dls[k] == -0.01f);
        CHECK(st.pg_loss == 0.0 && isfinite(st.loss));
        free(dm), free(dv);
        batch_free(&g);
    }
}

/* ---- normalization ------------------------------------------------------------------------- */

/* Gymnasium's RunningMeanStd in double: mean (D), var (D), count. */
typedef struct rms {
    int D;
    double *mean, *var, count;
} rms;

static rms rms_new(int D) {
    rms r = {D, doubles(D), doubles(D), 1e-4};
    for (int d = 0; d < D; d++) r.mean[d] = 0.0, r.var[d] = 1.0;
    return r;
}

/* RunningMeanStd.update(x): np.mean and np.var (population) of x (B, D) along axis 0 (the
 * textbook two passes, here in long double), then update_mean_var_count_from_moments. */
static void rms_update(rms *r, const double *x, int B) {
    for (int d = 0; d < r->D; d++) {
        long double s = 0, ss = 0;
        for (int b = 0; b < B; b++) s += x[(size_t)b * r->D + d];
        long double bm = s / B;
        for (int b = 0; b < B; b++) {
            long double e = x[(size_t)b * r->D + d] - bm;
            ss += e * e;
        }
        double batch_mean = (double)bm, batch_var = (double)(ss / B), batch_count = B;
        double delta = batch_mean - r->mean[d], tot = r->count + batch_count;
        double new_mean = r->mean[d] + delta * batch_count / tot;
        double m2 = r->var[d] * r->count + batch_var * batch_count +
                    delta * delta * r->count * batch_count / tot;
        r->mean[d] = new_mean, r->var[d] = m2 / tot;
    }
    r->count += B;
}

/* The statistics of the op (mean, var, count) against the reference's: both sum B values in
 * double, in different orders; the difference is a few B u of the magnitudes (u = 2^-53). */
static void check_stats(const char *what, const double *mean, const double *var, double count,
                        const rms *r, int B) {
    const double tol = 8.0 * (B + 16) * 0x1p-53;
    CHECK_CLOSE(what, count, r->count, 0, 4 * 0x1p-53); /* 1e-4 + B + ... in another order */
    for (int d = 0; d < r->D; d++) {
        double sd = sqrt(r->var[d]);
        CHECK_CLOSE(what, mean[d], r->mean[d], tol * (fabs(r->mean[d]) + sd), 0);
        CHECK_CLOSE(what, var[d], r->var[d], tol * (r->var[d] + r->mean[d] * r->mean[d]), 0);
    }
}

/* Batches of B rows (observations around 3 with spread 2 per dimension, the first batch shifted,
 * so the merge's delta term matters) folded in one at a time by the op and by the reference;
 * then every batch at once from the start gives the same statistics (Chan's rule is exact in
 * exact arithmetic); normalize_obs of the last batch, in place too. */
static void running_stats_case(int B, int D, int batches) {
    float *x = floats((size_t)batches * B * D);
    double *xd = doubles((size_t)batches * B * D);
    for (size_t i = 0; i < (size_t)batches * B * D; i++) {
        int d = (int)(i % D);
        x[i] = (float)(3.0 + 0.1 * d) + 2.0f * (cr_philox_uniform(&rng) - 0.5f) * (1 + d % 3);
        if (i < (size_t)B * D) x[i] -= 5.0f;
        xd[i] = x[i];
    }
    double *mean = doubles(D), *var = doubles(D), count = 1e-4;
    for (int d = 0; d < D; d++) mean[d] = 0.0, var[d] = 1.0;
    rms r = rms_new(D), all = rms_new(D);
    for (int k = 0; k < batches; k++) {
        cr_cpu_running_stats_update(mean, var, &count, x + (size_t)k * B * D, B, D);
        rms_update(&r, xd + (size_t)k * B * D, B);
        check_stats("running stats, batch by batch", mean, var, count, &r, B);
    }
    rms_update(&all, xd, batches * B);
    check_stats("batches merged vs one big batch", mean, var, count, &all, batches * B);
    /* B = 0 changes nothing */
    double m0 = mean[0], v0 = var[0], c0 = count;
    cr_cpu_running_stats_update(mean, var, &count, x, 0, D);
    CHECK(mean[0] == m0 && var[0] == v0 && count == c0);

    const float *last = x + (size_t)(batches - 1) * B * D;
    float *y = floats((size_t)B * D), *in_place = floats((size_t)B * D);
    const float clip = 1.5f;
    cr_cpu_normalize_obs(mean, var, last, y, B, D, clip);
    memcpy(in_place, last, (size_t)B * D * sizeof(float));
    cr_cpu_normalize_obs(mean, var, in_place, in_place, B, D, clip);
    CHECK(bits_equal(y, in_place, (size_t)B * D));
    int clipped = 0;
    for (int b = 0; b < B; b++)
        for (int d = 0; d < D; d++) {
            size_t i = (size_t)b * D + d;
            double want = ((double)last[i] - mean[d]) / sqrt(var[d] + 1e-8);
            want = want < -clip ? -clip : want > clip ? clip : want;
            clipped += fabs(want) == clip;
            CHECK_CLOSE("normalize_obs", y[i], want, 0, U);
        }
    CHECK_MSG(B * D < 50 || clipped > 0, "no observation reached the clip");
    free(x), free(xd), free(mean), free(var), free(y), free(in_place);
    free(r.mean), free(r.var), free(all.mean), free(all.var);
}

/* NormalizeReward over steps of N envs: each env's discounted return restarts where it
 * terminated (ret = reward exactly), the statistics follow RunningMeanStd over the returns, and
 * the reward is scaled by the updated variance and clipped. */
static void normalize_reward_case(int N, int steps) {
    const float gamma = 0.99f, clip = 10.0f;
    double *ret = doubles(N), *ret_ref = doubles(N), mean = 0.0, var = 1.0, count = 1e-4;
    for (int i = 0; i < N; i++) ret[i] = ret_ref[i] = 0.0;
    rms r = rms_new(1);
    float *reward = floats(N), *out = floats(N);
    uint8_t *term = malloc(N);
    CHECK(term != NULL);
    int resets = 0;
    for (int t = 0; t < steps; t++) {
        for (int i = 0; i < N; i++) {
            reward[i] = (i % 2 ? 0.01f : 1.0f) * (cr_philox_uniform(&rng) * 4.0f - 1.0f);
            term[i] = cr_philox_uniform(&rng) < 0.05f;
        }
        if (t == steps / 2) reward[0] = 1e4f; /* beyond the clip once scaled */
        cr_cpu_normalize_reward(&mean, &var, &count, ret, reward, term, out, N, gamma, clip);
        for (int i = 0; i < N; i++) {
            ret_ref[i] = ret_ref[i] * (double)gamma * (1 - term[i]) + reward[i];
            CHECK_MSG(ret[i] == ret_ref[i], "step %d env %d: ret %.17g, want %.17g", t, i, ret[i],
                      ret_ref[i]);
            if (term[i]) {
                CHECK(ret[i] == (double)reward[i]);
                resets++;
            }
        }
        rms_update(&r, ret_ref, N);
        check_stats("normalize_reward statistics", &mean, &var, count, &r, N);
        for (int i = 0; i < N; i++) {
            double want = reward[i] / sqrt(r.var[0] + 1e-8);
            want = want < -clip ? -clip : want > clip ? clip : want;
            CHECK_CLOSE("normalize_reward out", out[i], want, 0, 2 * U);
        }
        if (t == steps / 2) CHECK(out[0] == clip);
    }
    CHECK_MSG(resets > 0 || N * steps < 40, "no env terminated");
    double m0 = mean, c0 = count; /* N = 0 changes nothing */
    cr_cpu_normalize_reward(&mean, &var, &count, ret, reward, term, out, 0, gamma, clip);
    CHECK(mean == m0 && count == c0);
    free(ret), free(ret_ref), free(reward), free(out), free(term), free(r.mean), free(r.var);
}

static void test_normalize(void) {
    static const int shapes[][3] = {{1, 1, 3}, {1, 17, 4}, {7, 3, 5}, {64, 17, 3},
                                    {1000, 11, 4}, {4096, 376, 2}, {100000, 4, 3}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        running_stats_case(shapes[s][0], shapes[s][1], shapes[s][2]);
    normalize_reward_case(1, 300);
    normalize_reward_case(16, 200);
    normalize_reward_case(1000, 20);
}

int main(int argc, char **argv) {
    static const struct {
        const char *name;
        void (*run)(void);
    } tests[] = {{"sample", test_sample}, {"loss", test_loss}, {"normalize", test_normalize}};
    cr_philox_seed(&rng, 2026, 0);
    int ran = 0;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (argc > 1 && strcmp(argv[1], tests[i].name) != 0) continue;
        tests[i].run();
        printf("ok %s\n", tests[i].name);
        ran++;
    }
    CHECK_MSG(ran > 0, "unknown group '%s'", argc > 1 ? argv[1] : "");
    return 0;
}
