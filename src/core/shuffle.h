/* A pseudo-random permutation of [0, n) that any element can be computed from on its own: a
 * balanced Feistel network over the smallest even-bit domain 2^(2h) >= n, with cycle walking
 * (an index that maps outside [0, n) is mapped again until it lands inside), keyed by
 * CR_SHUFFLE_ROUNDS 32-bit words drawn from an RNG stream.
 *
 * Why not "sort by random keys" (np.random.permutation's job): a stable radix sort of n 32-bit
 * keys is 8 launches and 4 passes over n on the GPU (dev/cuda/README.md has its cost), while this
 * is one pass with no scratch, the CPU and
 * CUDA twins share this header, and the stream advances by CR_SHUFFLE_ROUNDS words instead of n.
 *
 * Quality: a Feistel network is a bijection for any round function; with a well-mixing keyed
 * round function (murmur3's finaliser of R xor key) and 16 rounds it is, for minibatch
 * shuffling, indistinguishable from a uniform permutation (tests/test_core.c checks the bijection
 * for many n and, with chi-square tests, that every element lands in every position equally
 * often across keys and that two elements' positions are independent). Small n need the rounds:
 * their halves are 1-3 bits wide, and at 8 rounds n = 5 failed the pair test, at 12 n = 3 sat at
 * its limit. The domain is under 4n, so a walk takes under 4 steps on average; a round is ~8
 * integer instructions. */
#ifndef CUDARL_SHUFFLE_H
#define CUDARL_SHUFFLE_H

#include <stdint.h>

#include "core/philox.h"

#define CR_SHUFFLE_ROUNDS 16

typedef struct cr_shuffle {
    uint32_t n;                       /* the permutation is of [0, n) */
    uint32_t half_bits;               /* h: each Feistel half has h bits */
    uint32_t keys[CR_SHUFFLE_ROUNDS]; /* round keys */
} cr_shuffle;

/* The shuffle of [0, n) (1 <= n <= 2^31) with round keys `keys`. */
CR_HD static inline cr_shuffle cr_shuffle_make(uint32_t n, const uint32_t keys[CR_SHUFFLE_ROUNDS]) {
    cr_shuffle s;
    uint32_t bits = 0;
    while (bits < 32 && (1u << bits) < n) bits++; /* smallest bits with 2^bits >= n */
    s.n = n;
    s.half_bits = (bits + 1) / 2;
    if (s.half_bits == 0) s.half_bits = 1;
    for (int r = 0; r < CR_SHUFFLE_ROUNDS; r++) s.keys[r] = keys[r];
    return s;
}

/* The round function: murmur3's 32-bit finaliser of r ^ key. */
CR_HD static inline uint32_t cr_shuffle_mix(uint32_t r, uint32_t key) {
    uint32_t x = r ^ key;
    x ^= x >> 16;
    x *= 0x85ebca6bu;
    x ^= x >> 13;
    x *= 0xc2b2ae35u;
    x ^= x >> 16;
    return x;
}

/* The element at position i (0 <= i < n) of the permutation. */
CR_HD static inline uint32_t cr_shuffle_at(const cr_shuffle *s, uint32_t i) {
    const uint32_t h = s->half_bits, mask = (1u << h) - 1u;
    uint32_t x = i;
    do {
        uint32_t left = x >> h, right = x & mask;
        for (int r = 0; r < CR_SHUFFLE_ROUNDS; r++) {
            uint32_t next = left ^ (cr_shuffle_mix(right, s->keys[r]) & mask);
            left = right;
            right = next;
        }
        x = (left << h) | right;
    } while (x >= s->n);
    return x;
}

#endif
