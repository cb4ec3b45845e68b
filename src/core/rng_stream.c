/* Philox streams whose position is plain data, for random numbers drawn where the work runs. */
#include "core/core.h"

void cr_rng_stream_seed(cr_rng_stream *s, uint64_t seed, uint64_t stream) {
    s->key[0] = (uint32_t)seed;
    s->key[1] = (uint32_t)(seed >> 32);
    s->stream[0] = (uint32_t)stream;
    s->stream[1] = (uint32_t)(stream >> 32);
    s->offset = 0;
}

uint32_t cr_rng_stream_word(const cr_rng_stream *s, uint64_t w) {
    uint64_t block = w / 4;
    uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), s->stream[0], s->stream[1]};
    uint32_t out[4];
    cr_philox4x32_10(ctr, s->key, out);
    return out[w % 4];
}
