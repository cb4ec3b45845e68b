/* uint8 pixel observations to float32 in [0, 1].
 *
 * A true division by 255, not a multiply by 1/255: x * (1.0f / 255) differs from x / 255.0f in
 * the last bit for some x, and the division is what PyTorch's obs.float() / 255.0 computes (the
 * Python scalar becomes a float32 divisor), so this matches it bit for bit. gcc vectorises it. */

#include "ops/cpu/ops_conv.h"
#include "ops/cpu/simd.h"
#include "ops/parallel.h"

/* Elements below which the loop stays on the calling thread. */
#define PARALLEL_N ((size_t)1 << 18)

CR_VECTOR_TARGET
void cr_cpu_scale_u8(const uint8_t *x, float *y, size_t n) {
    long nn = (long)n;
#pragma omp parallel for schedule(static) if (n >= PARALLEL_N)
    for (long i = 0; i < nn; i++) y[i] = (float)x[i] / 255.0f;
}
