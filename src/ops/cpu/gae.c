/* Generalised advantage estimation (Schulman et al. 2016) with terminated and truncated kept
 * apart: a truncated step bootstraps from V(final obs) in next_values, a terminated one does
 * not, and neither lets the advantage of the next episode flow back across the boundary.
 * The masks select rather than multiply, so a terminated step's next_values and the advantage
 * after a done step are ignored even when they are not finite; otherwise this is the header's
 * formula, in float as CleanRL computes it. */
#include "ops/cpu/ops_cpu.h"

void cr_cpu_gae(const float *rewards, const float *values, const float *next_values,
                const uint8_t *terminated, const uint8_t *done, float gamma, float lambda,
                float *adv, float *returns, int T, int N) {
    const float gl = gamma * lambda;
    for (int t = T - 1; t >= 0; t--) {
        size_t row = (size_t)t * N;
        const float *restrict r = rewards + row, *restrict v = values + row,
                              *restrict nv = next_values + row;
        const uint8_t *restrict term = terminated + row, *restrict dn = done + row;
        float *restrict a = adv + row, *restrict ret = returns + row;
        /* A_{t+1}: the next row of adv, already written; none past the end. */
        const float *restrict next = t + 1 < T ? adv + row + N : NULL;
        for (int n = 0; n < N; n++) {
            float boot = term[n] ? 0.0f : gamma * nv[n];
            float carry = next && !dn[n] ? gl * next[n] : 0.0f;
            a[n] = (r[n] + boot - v[n]) + carry;
            ret[n] = a[n] + v[n];
        }
    }
}
