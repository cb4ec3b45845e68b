// Per-row softmax pieces shared by categorical.cu and ppo_loss.cu, in the CPU's order
// (src/ops/cpu/categorical.c): the max, then sum_j exp(l_j - m) with j ascending. Sampling and
// the PPO loss call the same functions, so log p(a) of an action sampled on the device is
// bitwise what the loss recomputes on the same logits (the PPO ratio of the data's own policy
// is exactly 1). Versus the CPU, CUDA's expf/logf may differ from glibc's in the last ulp.
#ifndef CUDARL_CATEGORICAL_DEVICE_CUH
#define CUDARL_CATEGORICAL_DEVICE_CUH

// Max of row l (A).
__device__ __forceinline__ float cr_row_max(const float *l, int A) {
    float m = l[0];
    for (int j = 1; j < A; j++) m = l[j] > m ? l[j] : m;
    return m;
}

// sum_j exp(l_j - m), j ascending.
__device__ __forceinline__ float cr_row_sum_exp(const float *l, float m, int A) {
    float s = 0.0f;
    for (int j = 0; j < A; j++) s += expf(l[j] - m);
    return s;
}

// log softmax(l)[a] given the row's max m and sum s.
__device__ __forceinline__ float cr_row_logp(const float *l, int a, float m, float s) {
    return (l[a] - m) - logf(s);
}

// The index sampled from softmax(l) (A) by inverse CDF with uniform u, and its log-probability:
// the first action whose cumulative weight exceeds u s; never one whose weight underflowed to
// 0; the last with nonzero weight if rounding leaves u s >= the total (the CPU's loop).
__device__ __forceinline__ int cr_row_sample(const float *l, int A, float u, float *logp) {
    float m = cr_row_max(l, A), s = cr_row_sum_exp(l, m, A);
    float target = u * s, c = 0.0f;
    int a = -1, last = 0;
    for (int j = 0; j < A && a < 0; j++) {
        float e = expf(l[j] - m);
        if (e > 0.0f) last = j;
        c += e;
        if (target < c) a = j;
    }
    if (a < 0) a = last;
    *logp = cr_row_logp(l, a, m, s);
    return a;
}

#endif
