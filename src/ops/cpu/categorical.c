/* Categorical distribution over logits: sampling, argmax, log-probability and entropy.
 *
 * Each row is shifted by its max before exp, so logits of any size (+-50, +-1e4) are safe.
 * Sampling and logp_entropy compute log p(a) with the same operations in the same order, so
 * the PPO ratio on the data's own policy is exactly 1. */
#include <math.h>

#include "ops/cpu/ops_cpu.h"

/* Max of row l (A). */
static float row_max(const float *l, int A) {
    float m = l[0];
    for (int j = 1; j < A; j++) m = l[j] > m ? l[j] : m;
    return m;
}

/* sum_j exp(l_j - m), j ascending. */
static float row_sum_exp(const float *l, float m, int A) {
    float s = 0.0f;
    for (int j = 0; j < A; j++) s += expf(l[j] - m);
    return s;
}

void cr_cpu_categorical_sample(const float *logits, const float *u, int32_t *action, float *logp,
                               int B, int A) {
    for (int b = 0; b < B; b++) {
        const float *l = logits + (size_t)b * A;
        float m = row_max(l, A), s = row_sum_exp(l, m, A);
        /* Inverse CDF: the first action whose cumulative weight exceeds u s. Actions with zero
         * weight (exp underflowed) are never chosen; if rounding leaves u s >= the total, the
         * last action with nonzero weight is. */
        float target = u[b] * s, c = 0.0f;
        int a = -1, last = 0;
        for (int j = 0; j < A && a < 0; j++) {
            float e = expf(l[j] - m);
            if (e > 0.0f) last = j;
            c += e;
            if (target < c) a = j;
        }
        if (a < 0) a = last;
        action[b] = a;
        logp[b] = (l[a] - m) - logf(s);
    }
}

void cr_cpu_categorical_argmax(const float *logits, int32_t *action, int B, int A) {
    for (int b = 0; b < B; b++) {
        const float *l = logits + (size_t)b * A;
        int best = 0;
        for (int j = 1; j < A; j++)
            if (l[j] > l[best]) best = j;
        action[b] = best;
    }
}

void cr_cpu_categorical_logp_entropy(const float *logits, const int32_t *action, float *logp,
                                     float *entropy, int B, int A) {
    for (int b = 0; b < B; b++) {
        const float *l = logits + (size_t)b * A;
        float m = row_max(l, A);
        /* s as in row_sum_exp; H = -sum p log p = log s - sum_j e_j (l_j - m) / s. */
        float s = 0.0f, el = 0.0f;
        for (int j = 0; j < A; j++) {
            float e = expf(l[j] - m);
            s += e;
            el += e * (l[j] - m);
        }
        float log_s = logf(s);
        logp[b] = (l[action[b]] - m) - log_s;
        entropy[b] = log_s - el / s;
    }
}
