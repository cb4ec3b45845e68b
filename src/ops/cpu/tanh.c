/* tanh forward and backward, with a tanh of our own that vectorises (libm's tanhf does not).
 *
 * The formula is Cephes' tanhf (S. Moshier) with its expf inlined:
 *   |x| <  0.625:  tanh x = x + x^3 P(x^2), P a degree-4 minimax polynomial;
 *   |x| >= 0.625:  tanh x = sign(x) (1 - 2 / (e^(2|x|) + 1)), |x| clamped to 9.5 first, where
 *                  the result already rounds to exactly 1.
 * e^t is Cephes' expf: t = n ln2 + r by a two-constant Cody-Waite reduction, e^r a degree-7
 * polynomial, 2^n built from its exponent bits. Both branches are computed and one selected,
 * so the loop has no branches. Max abs error vs double tanh: 7.6e-8 over [-20, 20] (the test
 * holds it to 5e-7); tanh(+-0) = +-0, odd, monotonic, exactly +-1 for |x| >= 9.5, NaN gives
 * NaN. About one cycle per element with AVX-512. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ops/cpu/ops_cpu.h"
#include "ops/cpu/simd.h"
#include "ops/parallel.h"


/* Without AVX-512's masked division gcc will not if-convert the loop (the division, used in one
 * branch only, might trap), so it would not vectorise; the ops set no FP exception flags anyone
 * reads. Results are the same either way. On every function of the formula: gcc does not
 * inline across different optimize attributes. */
#if defined(__GNUC__) && !defined(__clang__)
#define CR_NO_TRAPS __attribute__((optimize("no-trapping-math")))
#else
#define CR_NO_TRAPS
#endif

/* Elements below which the elementwise loops stay on the calling thread. */
#define PARALLEL_N ((size_t)1 << 18)

/* e^t for t in [0, 19] (no overflow or underflow handling needed there). */
CR_NO_TRAPS static inline float exp_small(float t) {
    const float magic = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    float kf = CR_FMA(t, 1.44269504088896341f, magic);
    uint32_t kbits;
    memcpy(&kbits, &kf, sizeof kbits);
    kf -= magic;
    float r = CR_FMA(kf, -0.693359375f, t);
    r = CR_FMA(kf, 2.12194440e-4f, r);
    float p = 1.9875691500e-4f;
    p = CR_FMA(p, r, 1.3981999507e-3f);
    p = CR_FMA(p, r, 8.3334519073e-3f);
    p = CR_FMA(p, r, 4.1665795894e-2f);
    p = CR_FMA(p, r, 1.6666665459e-1f);
    p = CR_FMA(p, r, 5.0000001201e-1f);
    p = CR_FMA(p, r * r, r) + 1.0f;
    /* n sits in the low mantissa bits of kf + magic; 2^n has exponent field n + 127. Unsigned
     * arithmetic, so a NaN input gives a harmless garbage scale rather than undefined shifts. */
    uint32_t sbits = (kbits - 0x4B400000u + 127u) << 23;
    float scale;
    memcpy(&scale, &sbits, sizeof scale);
    return p * scale;
}

CR_NO_TRAPS static inline float tanh_one(float x) {
    float ax = fabsf(x);
    float z = x * x;
    float q = CR_FMA(-5.70498872745e-3f, z, 2.06390887954e-2f);
    q = CR_FMA(q, z, -5.37397155531e-2f);
    q = CR_FMA(q, z, 1.33314422036e-1f);
    q = CR_FMA(q, z, -3.33332819422e-1f);
    float small = CR_FMA(q * z, ax, ax);
    float e = exp_small(2.0f * (ax > 9.5f ? 9.5f : ax));
    float big = 1.0f - 2.0f / (e + 1.0f);
    return copysignf(ax < 0.625f ? small : big, x);
}

CR_NO_TRAPS float cr_tanhf(float x) { return tanh_one(x); }

CR_VECTOR_TARGET CR_NO_TRAPS
void cr_cpu_tanh_forward(const float *x, float *y, size_t n) {
    long nn = (long)n;
#pragma omp parallel for schedule(static) if (n >= PARALLEL_N)
    for (long i = 0; i < nn; i++) y[i] = tanh_one(x[i]);
}

CR_VECTOR_TARGET
void cr_cpu_tanh_backward(const float *y, const float *dy, float *dx, size_t n) {
    long nn = (long)n;
#pragma omp parallel for schedule(static) if (n >= PARALLEL_N)
    for (long i = 0; i < nn; i++) dx[i] = dy[i] * (1.0f - y[i] * y[i]);
}
