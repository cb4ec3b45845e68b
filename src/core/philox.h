/* Philox4x32-10 counter-based RNG (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy
 * as 1, 2, 3", SC'11) as static inline functions for C and CUDA: one definition, so the host and
 * the device draw the same words from the same (key, counter). The out-of-line API in core.h
 * (cr_philox_seed, cr_philox_next_u32, ...) calls these. Needs only <stdint.h>: a .cu file can
 * include it without core.h. */
#ifndef CUDARL_PHILOX_H
#define CUDARL_PHILOX_H

#include <stdint.h>

/* Marks a function that compiles for both the host and the device under nvcc, host only in C. */
#ifdef __CUDACC__
#define CR_HD __host__ __device__
#else
#define CR_HD
#endif

#define CR_PHILOX_M0 0xD2511F53u
#define CR_PHILOX_M1 0xCD9E8D57u
#define CR_PHILOX_W0 0x9E3779B9u
#define CR_PHILOX_W1 0xBB67AE85u

/* One stream = (key, counter high words); the same (key, counter) gives the same four words on
 * the CPU and the GPU. Plain data: it can live in host or device memory. */
typedef struct cr_philox_state {
    uint32_t key[2];
    uint32_t ctr[4];
    uint32_t buf[4];
    int used; /* words of buf consumed (4 = empty) */
} cr_philox_state;

/* One Philox round on counter c (4) with round key k (2). */
CR_HD static inline void cr_philox_round_hd(uint32_t c[4], const uint32_t k[2]) {
    uint64_t p0 = (uint64_t)CR_PHILOX_M0 * c[0];
    uint64_t p1 = (uint64_t)CR_PHILOX_M1 * c[2];
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    uint32_t n0 = hi1 ^ c[1] ^ k[0];
    uint32_t n1 = lo1;
    uint32_t n2 = hi0 ^ c[3] ^ k[1];
    uint32_t n3 = lo0;
    c[0] = n0, c[1] = n1, c[2] = n2, c[3] = n3;
}

/* The four words out (4) of counter ctr (4) under key (2): ten rounds, Weyl key schedule. */
CR_HD static inline void cr_philox4x32_10_hd(const uint32_t ctr[4], const uint32_t key[2],
                                             uint32_t out[4]) {
    uint32_t c[4] = {ctr[0], ctr[1], ctr[2], ctr[3]};
    uint32_t k[2] = {key[0], key[1]};
    for (int r = 0; r < 10; r++) {
        cr_philox_round_hd(c, k);
        k[0] += CR_PHILOX_W0;
        k[1] += CR_PHILOX_W1;
    }
    out[0] = c[0], out[1] = c[1], out[2] = c[2], out[3] = c[3];
}

/* Stream `stream` of `seed`: key = seed, ctr = (0, 0, stream lo, stream hi). */
CR_HD static inline void cr_philox_seed_hd(cr_philox_state *s, uint64_t seed, uint64_t stream) {
    s->key[0] = (uint32_t)seed;
    s->key[1] = (uint32_t)(seed >> 32);
    s->ctr[0] = 0;
    s->ctr[1] = 0;
    s->ctr[2] = (uint32_t)stream;
    s->ctr[3] = (uint32_t)(stream >> 32);
    s->used = 4;
}

/* The stream's next 32-bit word. */
CR_HD static inline uint32_t cr_philox_next_u32_hd(cr_philox_state *s) {
    if (s->used == 4) {
        cr_philox4x32_10_hd(s->ctr, s->key, s->buf);
        if (++s->ctr[0] == 0) s->ctr[1]++;
        s->used = 0;
    }
    return s->buf[s->used++];
}

/* Uniform in [0, 1) with 24 random bits (one word; the product is exact). */
CR_HD static inline float cr_philox_uniform_hd(cr_philox_state *s) {
    return (float)(cr_philox_next_u32_hd(s) >> 8) * (1.0f / 16777216.0f);
}

/* Uniform in [0, 1) with 53 random bits (two words; the conversion and product are exact). */
CR_HD static inline double cr_philox_uniform_f64_hd(cr_philox_state *s) {
    uint64_t hi = cr_philox_next_u32_hd(s) >> 5;
    uint64_t lo = cr_philox_next_u32_hd(s) >> 6;
    return (double)(hi * 67108864u + lo) * (1.0 / 9007199254740992.0);
}

#endif
