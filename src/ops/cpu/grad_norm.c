/* Gradient norm and clipping with torch.nn.utils.clip_grad_norm_ semantics. */
#include <math.h>

#include "ops/cpu/ops_cpu.h"
#include "ops/parallel.h"

/* Elements below which scaling stays on the calling thread. */
#define PARALLEL_N ((size_t)1 << 18)

double cr_cpu_sum_squares(const float *g, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)g[i] * g[i];
    return s;
}

void cr_cpu_scale(float *g, size_t n, float s) {
    long nn = (long)n;
#pragma omp parallel for schedule(static) if (n >= PARALLEL_N)
    for (long i = 0; i < nn; i++) g[i] *= s;
}

double cr_cpu_clip_grad_norm(float *g, size_t n, double max_norm) {
    double norm = sqrt(cr_cpu_sum_squares(g, n));
    double coef = max_norm / (norm + 1e-6);
    /* torch multiplies by clamp(coef, max=1): a no-op at 1, and a NaN norm makes g NaN. */
    if (!(coef >= 1.0)) cr_cpu_scale(g, n, (float)coef);
    return norm;
}
