/* CleanRL's PPO loss (ppo.py) on one minibatch, and its gradient with respect to the logits and
 * the values, with PyTorch's subgradient conventions at the kinks:
 *   clamp passes the gradient at its bounds (inclusive), and max(a, b) gives each side half
 *   of it on a tie.
 * Per-row quantities are float, as in a float32 PyTorch run; means accumulate in double. */
#include <math.h>

#include "ops/cpu/ops_cpu.h"

/* d max(a, b) / da (PyTorch: 1, 0 or 1/2 on a tie). */
static float dmax_da(float a, float b) { return a > b ? 1.0f : a < b ? 0.0f : 0.5f; }

/* Mean and unbiased std + 1e-8 of adv (B), in double. With B = 1 the std is taken as 0
 * (PyTorch would give NaN), so the one advantage normalises to 0. */
static void adv_stats(const float *adv, int B, double *mean, double *denom) {
    double s = 0.0;
    for (int b = 0; b < B; b++) s += adv[b];
    double m = s / B, ss = 0.0;
    for (int b = 0; b < B; b++) ss += ((double)adv[b] - m) * ((double)adv[b] - m);
    double std = B > 1 ? sqrt(ss / (B - 1)) : 0.0;
    *mean = m;
    *denom = std + 1e-8;
}

/* The value term of row b: its loss (before 0.5 and the mean) and d loss / d value. */
static float value_term(float v, float v_old, float ret, float clip, int clip_vloss, float *dv) {
    float du = v - ret, lu = du * du;
    if (!clip_vloss) {
        *dv = 2.0f * du;
        return lu;
    }
    float d = v - v_old;
    float dc = d < -clip ? -clip : d > clip ? clip : d;
    float dcv = (v_old + dc) - ret, lc = dcv * dcv;
    float pass = (d >= -clip && d <= clip) ? 1.0f : 0.0f;
    *dv = dmax_da(lu, lc) * 2.0f * du + dmax_da(lc, lu) * 2.0f * dcv * pass;
    return lu > lc ? lu : lc;
}

void cr_cpu_ppo_loss(const float *logits, const int32_t *action, const float *old_logp,
                     const float *adv, const float *value, const float *old_value,
                     const float *returns, const cr_ppo_loss_params *p, float *dlogits,
                     float *dvalue, cr_ppo_loss_stats *stats, int B, int A) {
    const float clip = p->clip_coef;
    double adv_mean = 0.0, adv_denom = 1.0;
    if (p->norm_adv) adv_stats(adv, B, &adv_mean, &adv_denom);
    double pg_sum = 0, v_sum = 0, ent_sum = 0, okl_sum = 0, kl_sum = 0, clip_sum = 0;
    const float inv_b = 1.0f / (float)B;

    for (int b = 0; b < B; b++) {
        const float *l = logits + (size_t)b * A;
        float *dl = dlogits + (size_t)b * A;
        /* log-softmax and entropy as cr_cpu_categorical_logp_entropy computes them. */
        float m = l[0];
        for (int j = 1; j < A; j++) m = l[j] > m ? l[j] : m;
        float s = 0.0f, el = 0.0f;
        for (int j = 0; j < A; j++) {
            float e = expf(l[j] - m);
            s += e;
            el += e * (l[j] - m);
        }
        float log_s = logf(s), ent = log_s - el / s;
        float logp = (l[action[b]] - m) - log_s;

        float logratio = logp - old_logp[b], ratio = expf(logratio);
        float a = p->norm_adv ? (float)(((double)adv[b] - adv_mean) / adv_denom) : adv[b];
        float rc = ratio < 1.0f - clip ? 1.0f - clip : ratio > 1.0f + clip ? 1.0f + clip : ratio;
        float pg1 = -a * ratio, pg2 = -a * rc;
        float pass = (ratio >= 1.0f - clip && ratio <= 1.0f + clip) ? 1.0f : 0.0f;
        float dratio = dmax_da(pg1, pg2) * -a + dmax_da(pg2, pg1) * -a * pass;
        /* d loss / d logp = dratio * ratio / B; d logp / d l_j = [j == a] - p_j.
         * d (-ent_coef H / B) / d l_j = ent_coef / B * p_j (log p_j + H). */
        float g_logp = dratio * ratio * inv_b, g_ent = p->ent_coef * inv_b;
        for (int j = 0; j < A; j++) {
            float lp = (l[j] - m) - log_s, pj = expf(lp);
            dl[j] = g_logp * ((j == action[b] ? 1.0f : 0.0f) - pj) + g_ent * pj * (lp + ent);
        }

        float dv;
        float vl = value_term(value[b], old_value[b], returns[b], clip, p->clip_vloss, &dv);
        dvalue[b] = p->vf_coef * 0.5f * dv * inv_b;

        pg_sum += pg1 > pg2 ? pg1 : pg2;
        v_sum += vl;
        ent_sum += ent;
        okl_sum += -logratio;
        kl_sum += (ratio - 1.0f) - logratio;
        clip_sum += fabsf(ratio - 1.0f) > clip;
    }
    stats->pg_loss = pg_sum / B;
    stats->v_loss = 0.5 * v_sum / B;
    stats->entropy = ent_sum / B;
    stats->old_approx_kl = okl_sum / B;
    stats->approx_kl = kl_sum / B;
    stats->clipfrac = clip_sum / B;
    stats->loss = stats->pg_loss - p->ent_coef * stats->entropy + p->vf_coef * stats->v_loss;
}

/* ---- continuous actions: CleanRL's ppo_continuous_action.py ----------------------------- */

#define CR_LOG_SQRT_2PI 0.91893853320467274f /* log(sqrt(2 pi)), torch.distributions.Normal's */

void cr_cpu_gaussian_sample(const float *mean, const float *logstd, const float *u,
                            float *action, float *logp, int B, int K) {
    for (int b = 0; b < B; b++) {
        const float *m = mean + (size_t)b * K, *ub = u + (size_t)2 * b * K;
        float *a = action + (size_t)b * K, lp = 0.0f;
        for (int k = 0; k < K; k++) {
            float z = cr_box_muller(ub[2 * k], ub[2 * k + 1]);
            float sd = expf(logstd[k]);
            a[k] = m[k] + sd * z;
            float d = a[k] - m[k];
            lp += -(d * d) / (2.0f * sd * sd) - logstd[k] - CR_LOG_SQRT_2PI;
        }
        logp[b] = lp;
    }
}

void cr_cpu_clip_box(const float *x, const cr_action_box *box, float *y, int B) {
    const int K = box->K;
    for (int b = 0; b < B; b++)
        for (int k = 0; k < K; k++) {
            float v = x[(size_t)b * K + k];
            y[(size_t)b * K + k] = v < box->lo[k] ? box->lo[k] : v > box->hi[k] ? box->hi[k] : v;
        }
}

void cr_cpu_ppo_loss_gaussian(const float *mean, const float *logstd, const float *action,
                              const float *old_logp, const float *adv, const float *value,
                              const float *old_value, const float *returns,
                              const cr_ppo_loss_params *p, float *dmean, float *dlogstd,
                              float *dvalue, cr_ppo_loss_stats *stats, int B, int K) {
    CUDARL_ASSERT(K >= 1 && K <= CR_GAUSSIAN_MAX_K); /* dls below holds K sums */
    const float clip = p->clip_coef;
    double adv_mean = 0.0, adv_denom = 1.0;
    if (p->norm_adv) adv_stats(adv, B, &adv_mean, &adv_denom);
    double pg_sum = 0, v_sum = 0, okl_sum = 0, kl_sum = 0, clip_sum = 0;
    double dls[CR_GAUSSIAN_MAX_K] = {0};
    const float inv_b = 1.0f / (float)B;
    /* every row has the same entropy: sum over k of 0.5 + log(sqrt(2 pi)) + logstd */
    float ent = 0.0f;
    for (int k = 0; k < K; k++) ent += 0.5f + CR_LOG_SQRT_2PI + logstd[k];

    for (int b = 0; b < B; b++) {
        const float *m = mean + (size_t)b * K, *a = action + (size_t)b * K;
        float logp = 0.0f;
        for (int k = 0; k < K; k++) {
            float sd = expf(logstd[k]), d = a[k] - m[k];
            logp += -(d * d) / (2.0f * sd * sd) - logstd[k] - CR_LOG_SQRT_2PI;
        }
        float logratio = logp - old_logp[b], ratio = expf(logratio);
        float an = p->norm_adv ? (float)(((double)adv[b] - adv_mean) / adv_denom) : adv[b];
        float rc = ratio < 1.0f - clip ? 1.0f - clip : ratio > 1.0f + clip ? 1.0f + clip : ratio;
        float pg1 = -an * ratio, pg2 = -an * rc;
        float pass = (ratio >= 1.0f - clip && ratio <= 1.0f + clip) ? 1.0f : 0.0f;
        float dratio = dmax_da(pg1, pg2) * -an + dmax_da(pg2, pg1) * -an * pass;
        /* d logp / d mean_k = d / var; d logp / d logstd_k = d^2 / var - 1 */
        float g_logp = dratio * ratio * inv_b;
        float *dm = dmean + (size_t)b * K;
        for (int k = 0; k < K; k++) {
            float sd = expf(logstd[k]), var = sd * sd, d = a[k] - m[k];
            dm[k] = g_logp * d / var;
            dls[k] += (double)(g_logp * (d * d / var - 1.0f));
        }
        float dv;
        float vl = value_term(value[b], old_value[b], returns[b], clip, p->clip_vloss, &dv);
        dvalue[b] = p->vf_coef * 0.5f * dv * inv_b;

        pg_sum += pg1 > pg2 ? pg1 : pg2;
        v_sum += vl;
        okl_sum += -logratio;
        kl_sum += (ratio - 1.0f) - logratio;
        clip_sum += fabsf(ratio - 1.0f) > clip;
    }
    /* - ent_coef * mean(entropy): d / d logstd_k = -ent_coef */
    for (int k = 0; k < K; k++) dlogstd[k] = (float)(dls[k] - (double)p->ent_coef);
    stats->pg_loss = pg_sum / B;
    stats->v_loss = 0.5 * v_sum / B;
    stats->entropy = ent;
    stats->old_approx_kl = okl_sum / B;
    stats->approx_kl = kl_sum / B;
    stats->clipfrac = clip_sum / B;
    stats->loss = stats->pg_loss - p->ent_coef * stats->entropy + p->vf_coef * stats->v_loss;
}
