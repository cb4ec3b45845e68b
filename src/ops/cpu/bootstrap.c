/* next_values for GAE: the value of whatever followed each step within its episode. */
#include "ops/cpu/ops_cpu.h"

/* next_values[t] = done[t] ? final_values[t] : (t < T-1 ? values[t+1] : last_values).
 * values, final_values, next_values (T, N); done (T, N); last_values (N). */
void cr_cpu_bootstrap_values(const float *values, const float *final_values,
                             const float *last_values, const uint8_t *done, float *next_values,
                             int T, int N) {
    for (int t = 0; t < T; t++) {
        const float *following = t + 1 < T ? values + (size_t)(t + 1) * N : last_values;
        for (int n = 0; n < N; n++) {
            size_t i = (size_t)t * N + n;
            next_values[i] = done[i] ? final_values[i] : following[n];
        }
    }
}
