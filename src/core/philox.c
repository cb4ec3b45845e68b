/* Philox4x32-10 counter-based RNG (Salmon, Moraes, Dror, Shaw, "Parallel random numbers:
 * as easy as 1, 2, 3", SC'11): the out-of-line API of core.h over the inline definitions in
 * philox.h, which the GPU code calls too, so both draw the same numbers. */
#include <math.h>

#include "core.h"

void cr_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    cr_philox4x32_10_hd(ctr, key, out);
}

void cr_philox_seed(cr_philox_state *s, uint64_t seed, uint64_t stream) {
    cr_philox_seed_hd(s, seed, stream);
}

uint32_t cr_philox_next_u32(cr_philox_state *s) { return cr_philox_next_u32_hd(s); }

float cr_philox_uniform(cr_philox_state *s) { return cr_philox_uniform_hd(s); }

double cr_philox_uniform_f64(cr_philox_state *s) { return cr_philox_uniform_f64_hd(s); }

double cr_philox_normal(cr_philox_state *s) {
    double u1 = cr_philox_uniform_f64(s), u2 = cr_philox_uniform_f64(s);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
