/* Random numbers from stream positions in backend memory: uniforms and permutations. */
#include <string.h>

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

size_t cr_cpu_permutation_scratch_bytes(int n) { return (size_t)n * 3 * sizeof(uint32_t); }

/* perm = 0..n-1 stably sorted by the stream's next n words: LSD radix sort, 8 bits a pass,
 * which is what the GPU twin's stable radix sort computes too. */
void cr_cpu_permutation(cr_rng_stream *s, int32_t *perm, int n, void *scratch) {
    uint32_t *keys = scratch, *keys2 = keys + n, *idx2 = keys2 + n;
    uint32_t *idx = (uint32_t *)perm;
    next_words(s, keys, n);
    for (int i = 0; i < n; i++) idx[i] = (uint32_t)i;
    for (int shift = 0; shift < 32; shift += 8) {
        size_t count[257] = {0};
        for (int i = 0; i < n; i++) count[((keys[i] >> shift) & 255) + 1]++;
        for (int d = 0; d < 256; d++) count[d + 1] += count[d];
        for (int i = 0; i < n; i++) {
            size_t at = count[(keys[i] >> shift) & 255]++;
            keys2[at] = keys[i];
            idx2[at] = idx[i];
        }
        memcpy(keys, keys2, (size_t)n * sizeof *keys);
        memcpy(idx, idx2, (size_t)n * sizeof *idx);
    }
}
