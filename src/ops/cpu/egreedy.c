/* Epsilon-greedy action selection and CleanRL's linear epsilon schedule. */
#include "ops/cpu/ops_cpu.h"
#include "ops/cpu/ops_dqn.h"

void cr_cpu_epsilon_greedy(const float *q, const float *u_explore, const float *u_action,
                           float epsilon, int32_t *actions, int B, int A) {
    for (int b = 0; b < B; b++) {
        if (u_explore[b] < epsilon) {
            /* u < 1 gives u * A < A in float for any A below 2^24; the min guards u == 1. */
            int a = (int)(u_action[b] * (float)A);
            actions[b] = a < A - 1 ? a : A - 1;
        } else {
            cr_cpu_categorical_argmax(q + (size_t)b * A, actions + b, 1, A);
        }
    }
}

double cr_linear_schedule(double start_e, double end_e, double duration, double t) {
    if (!(duration > 0.0)) return end_e;
    double slope = (end_e - start_e) / duration;
    double e = slope * t + start_e;
    /* Python's max(e, end_e): end_e only when it is strictly larger. */
    return end_e > e ? end_e : e;
}
