/* Random numbers from stream positions in backend memory: uniforms and permutations. */
#include <string.h>

#include "core/shuffle.h"
#include "ops/cpu/ops_cpu.h"

/* words (n) = the stream's next n words, advancing it by n (one Philox block per 4 words). */
static void next_words(cr_rng_stream *s, uint32_t *words, int n) {
    uint32_t block[4];
    uint64_t w = s->offset;
    for (int i = 0; i < n; i++, w++) {
        if (i == 0 || w % 4 == 0) {
            uint64_t b = w / 4;
            uint32_t ctr[4] = {(uint32_t)b, (uint32_t)(b >> 32), s->stream[0], s->stream[1]};
            cr_philox4x32_10(ctr, s->key, block);
        }
        words[i] = block[w % 4];
    }
    s->offset += (uint64_t)n;
}

void cr_cpu_uniform(cr_rng_stream *s, float *u, int n) {
    uint32_t words[256];
    for (int done = 0; done < n; done += 256) {
        int k = n - done < 256 ? n - done : 256;
        next_words(s, words, k);
        for (int i = 0; i < k; i++) u[done + i] = (float)(words[i] >> 8) * (1.0f / 16777216.0f);
    }
}

/* perm (n): the shuffle (core/shuffle.h) keyed by the stream's next CR_SHUFFLE_ROUNDS words. */
void cr_cpu_permutation(cr_rng_stream *s, int32_t *perm, int n) {
    CUDARL_ASSERT(n >= 0);
    if (n == 0) return;
    uint32_t keys[CR_SHUFFLE_ROUNDS];
    next_words(s, keys, CR_SHUFFLE_ROUNDS);
    cr_shuffle sh = cr_shuffle_make((uint32_t)n, keys);
    for (int i = 0; i < n; i++) perm[i] = (int32_t)cr_shuffle_at(&sh, (uint32_t)i);
}
