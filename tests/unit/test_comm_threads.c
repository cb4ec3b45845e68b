/* A job of threads (cr_comm_run_threads, the host side of --num-gpus N; docs/multigpu.md): each
 * of N threads sees its own rank and the job's size; over many rounds (each with other values,
 * so that a rank reading a slot too early or too late sees the wrong round's) allgather, an
 * in-place allgather, gather0 and bcast0 deliver every rank's bytes in rank order, and
 * cr_comm_mean_f32 gives every rank cr_comm_sum_ranks_f32's bits of the ranks' vectors. Outside
 * the job the communicator is one rank again. The weight check's word-wise FNV-1a
 * (cr_comm_fnv1a_words): a reference value, the byte-wise hash below 8 bytes, every length's tail
 * counted, any one flipped bit seen. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "ops/comm.h"

#define ROUNDS 300
#define LEN 37

static float value(int round, int rank, int i) {
    /* order-sensitive float sums: magnitudes from 2^-12 to 2^12 */
    uint32_t h = (uint32_t)(round * 2654435761u) ^ (uint32_t)(rank * 40503u + i * 977u);
    h ^= h >> 13, h *= 0x5bd1e995u, h ^= h >> 15;
    return ldexpf((float)(h & 0xFFFF) / 65536.0f - 0.5f, (int)(h >> 16) % 25 - 12);
}

static int job_size;

static int rank_main(int rank, void *arg) {
    (void)arg;
    CHECK(cr_comm_rank() == rank && cr_comm_size() == job_size);
    const int R = job_size;
    int32_t mine[LEN], all[64 * LEN], in_place[64 * LEN];
    float grad[LEN], scratch[64 * LEN], want_all[64 * LEN], want[LEN];
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < LEN; i++) mine[i] = round * 1000003 + rank * 1009 + i;
        memset(all, 0xFF, sizeof all);
        cr_comm_allgather(mine, all, sizeof mine);
        for (int r = 0; r < R; r++)
            for (int i = 0; i < LEN; i++)
                CHECK_MSG(all[r * LEN + i] == round * 1000003 + r * 1009 + i,
                          "round %d rank %d: allgather's element %d of rank %d", round, rank, i, r);
        memcpy(in_place + rank * LEN, mine, sizeof mine);
        cr_comm_allgather(in_place + rank * LEN, in_place, sizeof mine);
        CHECK_MSG(memcmp(in_place, all, (size_t)R * sizeof mine) == 0,
                  "round %d rank %d: the in-place allgather", round, rank);
        memset(all, 0xFF, sizeof all);
        cr_comm_gather0(mine, rank == 0 ? all : NULL, sizeof mine);
        if (rank == 0)
            CHECK_MSG(memcmp(in_place, all, (size_t)R * sizeof mine) == 0,
                      "round %d: gather0", round);
        int64_t b = rank == 0 ? (int64_t)round * 7919 : -1;
        cr_comm_bcast0(&b, sizeof b);
        CHECK_MSG(b == (int64_t)round * 7919, "round %d rank %d: bcast0 gave %lld", round, rank,
                  (long long)b);
        for (int i = 0; i < LEN; i++) grad[i] = value(round, rank, i);
        for (int r = 0; r < R; r++)
            for (int i = 0; i < LEN; i++) want_all[r * LEN + i] = value(round, r, i);
        cr_comm_sum_ranks_f32(want_all, want, LEN, R);
        cr_comm_mean_f32(grad, scratch, LEN);
        CHECK_MSG(memcmp(grad, want, sizeof want) == 0, "round %d rank %d: the gradient mean",
                  round, rank);
    }
    return 0;
}

/* cr_comm_fnv1a_words: 8-byte little-endian words, FNV-1a's xor-multiply per word, the tail
 * byte by byte. */
static void check_fnv1a_words(void) {
    const uint64_t P = 1099511628211ull, S = CR_COMM_FNV1A_START;
    unsigned char b[64];
    for (int i = 0; i < 64; i++) b[i] = (unsigned char)(i * 37 + 11);
    /* by hand: words 0 and 1, then tail byte 16 */
    uint64_t w0 = 0, w1 = 0;
    for (int k = 0; k < 8; k++) w0 |= (uint64_t)b[k] << (8 * k), w1 |= (uint64_t)b[8 + k] << (8 * k);
    uint64_t want = ((((S ^ w0) * P) ^ w1) * P ^ b[16]) * P;
    CHECK(cr_comm_fnv1a_words(S, b, 17) == want);
    for (size_t n = 0; n < 8; n++) CHECK(cr_comm_fnv1a_words(S, b, n) == cr_comm_fnv1a(S, b, n));
    for (size_t n = 1; n <= 64; n++) { /* a flipped bit anywhere, a byte more or less: another hash */
        const uint64_t h = cr_comm_fnv1a_words(S, b, n);
        CHECK(h != cr_comm_fnv1a_words(S, b, n - 1));
        for (size_t i = 0; i < n; i++)
            for (int bit = 0; bit < 8; bit++) {
                b[i] ^= (unsigned char)(1u << bit);
                CHECK(cr_comm_fnv1a_words(S, b, n) != h);
                b[i] ^= (unsigned char)(1u << bit);
            }
    }
}

int main(void) {
    check_fnv1a_words();
    static const int sizes[] = {1, 2, 3, 8};
    for (int k = 0; k < 4; k++) {
        job_size = sizes[k];
        CHECK(cr_comm_run_threads(job_size, rank_main, NULL) == 0);
        CHECK(cr_comm_rank() == 0 && cr_comm_size() == 1 && cr_comm_thread_rank() == -1);
    }
    printf("comm_threads: jobs of 1, 2, 3 and 8 threads: ranks, allgather (in place too), "
           "gather0, bcast0 and the rank-order mean, %d rounds each; the word-wise FNV-1a\n", ROUNDS);
    return 0;
}
