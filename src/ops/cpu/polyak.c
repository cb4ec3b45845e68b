/* Soft (Polyak) update of a target network, as CleanRL's dqn.py writes it in PyTorch:
 *   target.copy_(tau * online + (1.0 - tau) * target)
 * with tau a Python float: PyTorch rounds tau and 1.0 - tau (computed in double) to float and
 * rounds each product and the sum, which is what the loop below does (C11 mode: no contraction
 * into an fma). Elementwise, so the thread count changes nothing. */
#include <string.h>

#include "ops/cpu/ops_cpu.h"
#include "ops/cpu/ops_dqn.h"
#include "ops/cpu/simd.h"
#include "ops/parallel.h"

/* Elements below which the update stays on the calling thread. */
#define PARALLEL_N ((size_t)1 << 18)

CR_VECTOR_TARGET
void cr_cpu_polyak(float *restrict target, const float *restrict online, size_t n, double tau) {
    if (tau == 1.0) {
        if (n) memcpy(target, online, n * sizeof *target);
        return;
    }
    const float a = (float)tau, c = (float)(1.0 - tau);
    long nn = (long)n;
#pragma omp parallel for schedule(static) if (n >= PARALLEL_N)
    for (long i = 0; i < nn; i++) target[i] = a * online[i] + c * target[i];
}
