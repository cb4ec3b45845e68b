/* Core: Philox known-answer vectors, stream independence, arena planning, status messages. */
#include <string.h>

#include "check.h"
#include "core/shuffle.h"
#include "core/core.h"

/* Known-answer vectors for Philox4x32-10 published with Random123 (kat_vectors). */
static void test_philox_kat(void) {
    static const struct {
        uint32_t ctr[4], key[2], out[4];
    } kat[] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
         {0xffffffff, 0xffffffff},
         {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
         {0xa4093822, 0x299f31d0},
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    };
    for (size_t i = 0; i < sizeof kat / sizeof kat[0]; i++) {
        uint32_t out[4];
        cr_philox4x32_10(kat[i].ctr, kat[i].key, out);
        for (int j = 0; j < 4; j++)
            CHECK_MSG(out[j] == kat[i].out[j], "vector %zu word %d: expected %08x, got %08x", i, j,
                      kat[i].out[j], out[j]);
    }
}

static void test_philox_streams(void) {
    cr_philox_state a, b, a2;
    cr_philox_seed(&a, 42, 0);
    cr_philox_seed(&b, 42, 1);
    cr_philox_seed(&a2, 42, 0);
    int same = 0;
    double sum = 0;
    for (int i = 0; i < 100000; i++) {
        uint32_t x = cr_philox_next_u32(&a), y = cr_philox_next_u32(&b);
        CHECK_MSG(x == cr_philox_next_u32(&a2), "same stream differs at draw %d", i);
        same += x == y;
    }
    CHECK_MSG(same < 5, "streams 0 and 1 agree on %d of 100000 draws", same);
    cr_philox_seed(&a, 7, 3);
    for (int i = 0; i < 100000; i++) {
        float u = cr_philox_uniform(&a);
        CHECK(u >= 0.0f && u < 1.0f);
        sum += u;
    }
    CHECK_CLOSE("mean of 1e5 uniforms", sum / 100000, 0.5, 0.005, 0);
    double s1 = 0, s2 = 0;
    for (int i = 0; i < 100000; i++) {
        double z = cr_philox_normal(&a);
        s1 += z, s2 += z * z;
    }
    CHECK_CLOSE("mean of 1e5 normals", s1 / 1e5, 0.0, 0.02, 0);
    CHECK_CLOSE("variance of 1e5 normals", s2 / 1e5, 1.0, 0.03, 0);
}

static void test_arena(void) {
    cr_plan p;
    cr_plan_init(&p);
    int a = cr_plan_add(&p, "a", 3);
    int b = cr_plan_add(&p, "b", 100);
    int c = cr_plan_add(&p, "c", 0);
    CHECK(p.offsets[a] == 0 && p.offsets[b] == 64 && p.offsets[c] == 192);
    CHECK(p.total == 192);
    cr_arena ar;
    CHECK_OK(cr_arena_alloc(&ar, &p, CR_MEM_HOST));
    unsigned char *pb = cr_arena_get(&ar, b);
    CHECK(((uintptr_t)pb % 64) == 0);
    for (int i = 0; i < 100; i++) CHECK(pb[i] == 0);
    cr_arena_free(&ar);
    CHECK(ar.base == NULL);
}

static void test_status(void) {
    cudarl_status s = cr_fail(CUDARL_ERR_INVALID_ARG, "--num-envs must be >= 1, got %d", 0);
    CHECK(s == CUDARL_ERR_INVALID_ARG);
    CHECK(!strcmp(cudarl_last_error(), "--num-envs must be >= 1, got 0"));
    CHECK(!strcmp(cudarl_status_name(CUDARL_ERR_FORMAT), "CUDARL_ERR_FORMAT"));
}

static void test_timer(void) {
    double t0 = cr_time_now(), t1 = cr_time_now();
    CHECK(t1 >= t0 && t0 > 0);
}

/* The Feistel shuffle (core/shuffle.h): a bijection of [0, n) for every n tried, and uniform:
 * over many keys, element e lands in position p equally often (chi-square over the n x n
 * table), and the positions of two elements are independent (chi-square over their joint table).
 * Keys come from a fixed Philox stream, so the test is deterministic; the thresholds sit at
 * p ~ 1e-7 under a uniform permutation (a weak round function fails them by orders of
 * magnitude: with 2 rounds instead of 8 the joint statistic is in the thousands). */
static void shuffle_keys(cr_philox_state *rng, uint32_t keys[CR_SHUFFLE_ROUNDS]) {
    for (int r = 0; r < CR_SHUFFLE_ROUNDS; r++) keys[r] = cr_philox_next_u32(rng);
}

/* Chi-square of where element e lands (n x n table) and of where elements 0 and 1 land together
 * (n (n - 1) cells), over K = 1,500 n (n - 1) keys; threshold dof + 5.3 sqrt(2 dof) (p ~ 1e-7). */
static void shuffle_uniformity(cr_philox_state *rng, int n) {
    enum { MAXN = 17 };
    static double pos[MAXN][MAXN], joint[MAXN][MAXN];
    memset(pos, 0, sizeof pos);
    memset(joint, 0, sizeof joint);
    const int K = 1500 * n * (n - 1);
    uint32_t keys[CR_SHUFFLE_ROUNDS];
    for (int k = 0; k < K; k++) {
        shuffle_keys(rng, keys);
        cr_shuffle sh = cr_shuffle_make((uint32_t)n, keys);
        int where[MAXN];
        for (int i = 0; i < n; i++) where[cr_shuffle_at(&sh, (uint32_t)i)] = i;
        for (int e = 0; e < n; e++) pos[e][where[e]] += 1;
        joint[where[0]][where[1]] += 1;
    }
    double chi_pos = 0, chi_joint = 0, e1 = (double)K / n, e2 = (double)K / (n * (n - 1));
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            chi_pos += (pos[a][b] - e1) * (pos[a][b] - e1) / e1;
            if (a != b) chi_joint += (joint[a][b] - e2) * (joint[a][b] - e2) / e2;
            else CHECK(joint[a][b] == 0);
        }
    double dof_pos = (double)(n - 1) * (n - 1), dof_joint = (double)n * (n - 1) - 1;
    double lim_pos = dof_pos + 5.3 * sqrt(2 * dof_pos), lim_joint = dof_joint + 5.3 * sqrt(2 * dof_joint);
    printf("shuffle n=%d: chi-square %.1f (%.0f dof, limit %.0f), pairs %.1f (%.0f dof, limit %.0f)\n",
           n, chi_pos, dof_pos, lim_pos, chi_joint, dof_joint, lim_joint);
    CHECK_MSG(chi_pos < lim_pos, "n=%d: positions are not uniform", n);
    CHECK_MSG(chi_joint < lim_joint, "n=%d: pair positions are not independent", n);
}

static void test_shuffle(void) {
    cr_philox_state rng;
    cr_philox_seed(&rng, 99, 0);
    uint32_t keys[CR_SHUFFLE_ROUNDS];
    static uint8_t seen[(1 << 20) + 7];
    static const uint32_t big[] = {1000003, 1u << 20, (1u << 20) + 7, 65537, 49728};
    for (uint32_t t = 0; t < 300 + sizeof big / sizeof big[0]; t++) {
        uint32_t n = t < 300 ? t + 1 : big[t - 300];
        shuffle_keys(&rng, keys);
        cr_shuffle sh = cr_shuffle_make(n, keys);
        memset(seen, 0, n);
        for (uint32_t i = 0; i < n; i++) {
            uint32_t v = cr_shuffle_at(&sh, i);
            CHECK_MSG(v < n && !seen[v], "n=%u: position %u maps to %u twice or out of range", n,
                      i, v);
            seen[v] = 1;
        }
    }
    static const int sizes[] = {2, 3, 4, 5, 8, 17};
    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++)
        shuffle_uniformity(&rng, sizes[t]);
}

int main(void) {
    test_philox_kat();
    test_shuffle();
    test_philox_streams();
    test_arena();
    test_status();
    test_timer();
    printf("test_core: ok\n");
    return 0;
}
