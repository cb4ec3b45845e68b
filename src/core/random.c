/* cudarl_random_u32: the public face of the Philox generator (core.h). */
#include "core.h"

void cudarl_random_u32(uint64_t seed, uint64_t stream, uint64_t first, uint32_t *out, size_t n) {
    cr_philox_state s;
    cr_philox_seed(&s, seed, stream);
    /* word w is word w % 4 of the block at counter w / 4 */
    s.ctr[0] = (uint32_t)(first / 4);
    s.ctr[1] = (uint32_t)(first / 4 >> 32);
    for (uint64_t skip = first % 4; skip > 0; skip--) cr_philox_next_u32(&s);
    for (size_t i = 0; i < n; i++) out[i] = cr_philox_next_u32(&s);
}
