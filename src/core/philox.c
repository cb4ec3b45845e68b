/* Philox4x32-10 counter-based RNG (Salmon, Moraes, Dror, Shaw, "Parallel random numbers:
 * as easy as 1, 2, 3", SC'11). Constants are the paper's; the GPU twin uses the same ones. */
#include <math.h>

#include "core.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

static inline void philox_round(uint32_t c[4], const uint32_t k[2]) {
    uint64_t p0 = (uint64_t)PHILOX_M0 * c[0];
    uint64_t p1 = (uint64_t)PHILOX_M1 * c[2];
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    uint32_t n0 = hi1 ^ c[1] ^ k[0];
    uint32_t n1 = lo1;
    uint32_t n2 = hi0 ^ c[3] ^ k[1];
    uint32_t n3 = lo0;
    c[0] = n0, c[1] = n1, c[2] = n2, c[3] = n3;
}

void cr_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    uint32_t c[4] = {ctr[0], ctr[1], ctr[2], ctr[3]};
    uint32_t k[2] = {key[0], key[1]};
    for (int r = 0; r < 10; r++) {
        philox_round(c, k);
        k[0] += PHILOX_W0;
        k[1] += PHILOX_W1;
    }
    out[0] = c[0], out[1] = c[1], out[2] = c[2], out[3] = c[3];
}

void cr_philox_seed(cr_philox_state *s, uint64_t seed, uint64_t stream) {
    s->key[0] = (uint32_t)seed;
    s->key[1] = (uint32_t)(seed >> 32);
    s->ctr[0] = 0;
    s->ctr[1] = 0;
    s->ctr[2] = (uint32_t)stream;
    s->ctr[3] = (uint32_t)(stream >> 32);
    s->used = 4;
}

uint32_t cr_philox_next_u32(cr_philox_state *s) {
    if (s->used == 4) {
        cr_philox4x32_10(s->ctr, s->key, s->buf);
        if (++s->ctr[0] == 0) s->ctr[1]++;
        s->used = 0;
    }
    return s->buf[s->used++];
}

float cr_philox_uniform(cr_philox_state *s) {
    return (float)(cr_philox_next_u32(s) >> 8) * (1.0f / 16777216.0f);
}

double cr_philox_uniform_f64(cr_philox_state *s) {
    uint64_t hi = cr_philox_next_u32(s) >> 5, lo = cr_philox_next_u32(s) >> 6;
    return (double)(hi * 67108864u + lo) * (1.0 / 9007199254740992.0);
}

double cr_philox_normal(cr_philox_state *s) {
    double u1 = cr_philox_uniform_f64(s), u2 = cr_philox_uniform_f64(s);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
