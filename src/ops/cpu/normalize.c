/* Gymnasium's running normalization of observations and rewards (RunningMeanStd with
 * NormalizeObservation and NormalizeReward), as CleanRL's ppo_continuous_action.py wraps its envs:
 * statistics in double, merged batch by batch. */
#include <math.h>

#include "ops/cpu/ops_cpu.h"

/* RunningMeanStd.update_from_moments: merge a batch of count n, mean bm, variance bv. */
static void merge(double *mean, double *var, double count, double bm, double bv, double n) {
    double delta = bm - *mean, tot = count + n;
    double m2 = *var * count + bv * n + delta * delta * count * n / tot;
    *mean += delta * n / tot;
    *var = m2 / tot;
}

void cr_cpu_running_stats_update(double *mean, double *var, double *count, const float *x,
                                 int B, int D) {
    if (B <= 0) return; /* no batch: 0 / 0 would turn every statistic NaN for good */
    for (int d = 0; d < D; d++) {
        double s = 0.0;
        for (int b = 0; b < B; b++) s += x[(size_t)b * D + d];
        double bm = s / B, ss = 0.0;
        for (int b = 0; b < B; b++) {
            double e = x[(size_t)b * D + d] - bm;
            ss += e * e;
        }
        merge(&mean[d], &var[d], *count, bm, ss / B, (double)B);
    }
    *count += B;
}

static float clipf(float v, float c) { return v < -c ? -c : v > c ? c : v; }

void cr_cpu_normalize_obs(const double *mean, const double *var, const float *x, float *y, int B,
                          int D, float clip) {
    for (int b = 0; b < B; b++)
        for (int d = 0; d < D; d++) {
            size_t i = (size_t)b * D + d;
            y[i] = clipf((float)((x[i] - mean[d]) / sqrt(var[d] + 1e-8)), clip);
        }
}

void cr_cpu_normalize_reward(double *mean, double *var, double *count, double *ret,
                             const float *reward, const uint8_t *terminated, float *out, int N,
                             float gamma, float clip) {
    if (N <= 0) return;
    double s = 0.0;
    for (int i = 0; i < N; i++) {
        ret[i] = ret[i] * gamma * (1.0 - terminated[i]) + reward[i];
        s += ret[i];
    }
    double bm = s / N, ss = 0.0;
    for (int i = 0; i < N; i++) ss += (ret[i] - bm) * (ret[i] - bm);
    merge(mean, var, *count, bm, ss / N, (double)N);
    *count += N;
    double sd = sqrt(*var + 1e-8);
    for (int i = 0; i < N; i++) out[i] = clipf((float)(reward[i] / sd), clip);
}
