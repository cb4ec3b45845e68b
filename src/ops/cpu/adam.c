/* Adam (Kingma & Ba 2015) as torch.optim.Adam computes it: no weight decay, no amsgrad. */
#include <math.h>

#include "ops/cpu/ops_cpu.h"
#include "ops/parallel.h"

/* Elements below which the step stays on the calling thread. */
#define PARALLEL_N ((size_t)1 << 18)

void cr_cpu_adam_step(float *p, const float *g, float *m, float *v, size_t n, float lr, float b1,
                      float b2, float eps, int64_t t) {
    CUDARL_ASSERT(t >= 1);
    /* The bias corrections in double, as PyTorch computes them in Python floats. */
    double bc1 = 1.0 - pow((double)b1, (double)t), bc2 = 1.0 - pow((double)b2, (double)t);
    const float step = (float)((double)lr / bc1), bc2_sqrt = (float)sqrt(bc2);
    const float c1 = 1.0f - b1, c2 = 1.0f - b2;
    long nn = (long)n;
#pragma omp parallel for schedule(static) if (n >= PARALLEL_N)
    for (long i = 0; i < nn; i++) {
        float gi = g[i];
        float mi = b1 * m[i] + c1 * gi;
        float vi = b2 * v[i] + c2 * (gi * gi);
        m[i] = mi;
        v[i] = vi;
        p[i] -= step * (mi / (sqrtf(vi) / bc2_sqrt + eps));
    }
}
