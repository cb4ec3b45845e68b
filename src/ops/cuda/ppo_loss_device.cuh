// Per-row pieces of CleanRL's PPO loss on the device, shared by ppo_loss.cu (the loss on given
// logits and values) and ppo_fused.cu (the loss inside the fused MLP kernels), so both compute
// one row with the same operations (the semantics: src/ops/cpu/ppo_loss.c). Every product that
// feeds a sum is a _rn intrinsic (no FMA contraction).
#ifndef CUDARL_PPO_LOSS_DEVICE_CUH
#define CUDARL_PPO_LOSS_DEVICE_CUH

#include "ops/cuda/categorical_device.cuh"

// d max(a, b) / da (PyTorch: 1, 0 or 1/2 on a tie).
__device__ __forceinline__ float cr_dmax_da(float a, float b) {
    return a > b ? 1.0f : a < b ? 0.0f : 0.5f;
}

// The value term of one row: its loss (before 0.5 and the mean) and d loss / d value.
__device__ __forceinline__ float cr_ppo_value_term(float v, float v_old, float ret, float clip,
                                                   int clip_vloss, float *dv) {
    float du = __fsub_rn(v, ret), lu = __fmul_rn(du, du);
    if (!clip_vloss) {
        *dv = __fmul_rn(2.0f, du);
        return lu;
    }
    float d = __fsub_rn(v, v_old);
    float dc = d < -clip ? -clip : d > clip ? clip : d;
    float dcv = __fsub_rn(__fadd_rn(v_old, dc), ret), lc = __fmul_rn(dcv, dcv);
    float pass = (d >= -clip && d <= clip) ? 1.0f : 0.0f;
    *dv = __fadd_rn(__fmul_rn(__fmul_rn(cr_dmax_da(lu, lc), 2.0f), du),
                    __fmul_rn(__fmul_rn(__fmul_rn(cr_dmax_da(lc, lu), 2.0f), dcv), pass));
    return lu > lc ? lu : lc;
}

// d loss / d value of one row (vf_coef * 0.5 * dv / B, as the CPU rounds it).
__device__ __forceinline__ float cr_ppo_dvalue(float vf_coef, float dv, float inv_b) {
    return __fmul_rn(__fmul_rn(__fmul_rn(vf_coef, 0.5f), dv), inv_b);
}

// The normalised advantage of one row (mean and std + 1e-8 in double, from the adv stats).
__device__ __forceinline__ float cr_ppo_norm_adv(float adv, int norm_adv, double mean,
                                                 double denom) {
    return norm_adv ? (float)(((double)adv - mean) / denom) : adv;
}

// The clipped surrogate of one row, from its new and old log-probs and its (normalised)
// advantage a: returns d loss / d logp (dratio * ratio / B) and sets
// st = {max(pg1, pg2), -logratio, (ratio - 1) - logratio, clipped ? 1 : 0}.
__device__ __forceinline__ float cr_ppo_surrogate(float logp, float old_logp, float a,
                                                  float clip, float inv_b, float st[4]) {
    const float lo = 1.0f - clip, hi = 1.0f + clip;
    float logratio = logp - old_logp, ratio = expf(logratio);
    float rc = ratio < lo ? lo : ratio > hi ? hi : ratio;
    float pg1 = __fmul_rn(-a, ratio), pg2 = __fmul_rn(-a, rc);
    float pass = (ratio >= lo && ratio <= hi) ? 1.0f : 0.0f;
    float dratio = __fadd_rn(__fmul_rn(cr_dmax_da(pg1, pg2), -a),
                             __fmul_rn(__fmul_rn(cr_dmax_da(pg2, pg1), -a), pass));
    st[0] = pg1 > pg2 ? pg1 : pg2;
    st[1] = -logratio;
    st[2] = (ratio - 1.0f) - logratio;
    st[3] = fabsf(ratio - 1.0f) > clip ? 1.0f : 0.0f;
    return __fmul_rn(__fmul_rn(dratio, ratio), inv_b);
}

// The policy part of one row: logits l (A), the action act, old log p, the (normalised)
// advantage a; writes dl (A) = d loss / d logits (including the entropy bonus, both / B) and
// st = {max(pg1, pg2), entropy, -logratio, (ratio - 1) - logratio, clipped ? 1 : 0}.
__device__ __forceinline__ void cr_ppo_policy_row(const float *l, int A, int act, float old_logp,
                                                  float a, float clip, float ent_coef,
                                                  float inv_b, float *dl, float st[5]) {
    // log-softmax and entropy as the CPU computes them; s is cr_row_sum_exp's sum
    float m = cr_row_max(l, A);
    float s = 0.0f, el = 0.0f;
    for (int j = 0; j < A; j++) {
        float lm = l[j] - m, e = expf(lm);
        s = __fadd_rn(s, e);
        el = __fadd_rn(el, __fmul_rn(e, lm));
    }
    float log_s = logf(s), ent = __fsub_rn(log_s, __fdiv_rn(el, s));
    float logp = cr_row_logp(l, act, m, s);

    float sur[4];
    float g_logp = cr_ppo_surrogate(logp, old_logp, a, clip, inv_b, sur);
    float g_ent = __fmul_rn(ent_coef, inv_b);
    for (int j = 0; j < A; j++) {
        float lp = (l[j] - m) - log_s, pj = expf(lp);
        float onehot = j == act ? 1.0f : 0.0f;
        dl[j] = __fadd_rn(__fmul_rn(g_logp, __fsub_rn(onehot, pj)),
                          __fmul_rn(__fmul_rn(g_ent, pj), __fadd_rn(lp, ent)));
    }
    st[0] = sur[0];
    st[1] = ent;
    st[2] = sur[1];
    st[3] = sur[2];
    st[4] = sur[3];
}

// log(sqrt(2 pi)), as ppo_loss.c
#define CR_LOG_SQRT_2PI 0.91893853320467274f

// One term of a Gaussian's log density, -(d^2) / (2 sd^2) - log sd - log(sqrt(2 pi)),
// d = action - mean, rounded as ppo_loss.c rounds it (shared by gaussian.cu and ppo_fused.cu so
// that sampling and both losses compute the same log-prob bit for bit).
__device__ __forceinline__ float cr_gaussian_logp_term(float d, float sd, float logstd) {
    float q = __fdiv_rn(-__fmul_rn(d, d), __fmul_rn(__fmul_rn(2.0f, sd), sd));
    return __fsub_rn(__fsub_rn(q, logstd), CR_LOG_SQRT_2PI);
}

// Adds one minibatch's statistics to acc (sum[], count, last_approx_kl) as the CPU backend's
// wrapper does: the means of the B rows' sums {pg, v, -logratio, kl, clipfrac} (v_loss is
// 0.5 sum / B), the mean entropy as given, and the loss formed from them as cr_cpu_ppo_loss
// forms it.
__device__ __forceinline__ void cr_ppo_acc_add_entropy(const double sums[5], double entropy,
                                                       float ent_coef, float vf_coef,
                                                       cr_ppo_stats_acc *acc, int B) {
    double pg_loss = sums[0] / B, v_loss = __dmul_rn(0.5, sums[1]) / B;
    double old_approx_kl = sums[2] / B, approx_kl = sums[3] / B, clipfrac = sums[4] / B;
    double loss = __dadd_rn(__dsub_rn(pg_loss, __dmul_rn((double)ent_coef, entropy)),
                            __dmul_rn((double)vf_coef, v_loss));
    acc->sum[0] += loss, acc->sum[1] += pg_loss, acc->sum[2] += v_loss;
    acc->sum[3] += entropy, acc->sum[4] += old_approx_kl, acc->sum[5] += approx_kl;
    acc->sum[6] += clipfrac;
    acc->count += 1;
    acc->last_approx_kl = approx_kl;
}

// cr_ppo_acc_add_entropy from the sums {pg, v, entropy, -logratio, kl, clipfrac} of B rows.
__device__ __forceinline__ void cr_ppo_acc_add(const double sums[6], float ent_coef,
                                               float vf_coef, cr_ppo_stats_acc *acc, int B) {
    const double rest[5] = {sums[0], sums[1], sums[3], sums[4], sums[5]};
    cr_ppo_acc_add_entropy(rest, sums[2] / B, ent_coef, vf_coef, acc, B);
}

#endif
