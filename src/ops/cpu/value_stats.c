/* The sums behind explained variance. */
#include "ops/cpu/ops_cpu.h"

void cr_cpu_value_stats(const float *values, const float *returns, int n, double *out) {
    double sy = 0, syy = 0, sd = 0, sdd = 0;
    for (int i = 0; i < n; i++) {
        double y = returns[i], d = (double)returns[i] - (double)values[i];
        sy += y, syy += y * y, sd += d, sdd += d * d;
    }
    out[0] += n, out[1] += sy, out[2] += syy, out[3] += sd, out[4] += sdd;
}
