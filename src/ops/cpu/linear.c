/* Fully connected layer y = x w^T + b: forward, fused forward + tanh, backward.
 *
 * Every output element is reduced in one fixed order (bias, then i = 0, 1, ... for y;
 * o = 0, 1, ... for dx; b = 0, 1, ... for dw and db), whatever the thread count and whichever
 * row block it lands in, so results are bitwise identical for any number of threads. Threads
 * split independent outputs: rows of y and dx, rows of dw and db.
 *
 * All three products run through one micro-kernel, c_r += sum_k a_r[k] bm[k, :] for four rows r
 * at a time: its inner loop walks a contiguous row of bm and c with the reduction index k
 * outside, so gcc -O3 vectorises it without reassociating anything (no -ffast-math), and on
 * full tiles of TILE_N columns the four rows of c stay in vector registers across k. The
 * forward packs w^T into a stack tile first; outputs narrower than NARROW use dot products
 * along I instead. bench/bench_ops_cpu.c times it (bench/RESULTS.md, CPU op microbenchmark). */
#include <math.h>
#include <string.h>

#include "ops/cpu/ops_cpu.h"
#include "ops/cpu/simd.h"
#include "ops/parallel.h"

/* noinline keeps the vector-width attribute from being lost by inlining into a caller. */
#define CR_VECTOR_KERNEL CR_VECTOR_TARGET __attribute__((noinline))

/* Width of the register tile of mk4_tile: 4 rows x TILE_N floats of accumulators, 16 of the
 * 32 AVX-512 registers; 8 of the 16 AVX2 ones, or 16 of the 32 NEON ones, with TILE_N = 16. */
#if defined(__AVX512F__)
#define TILE_N 64
#else
#define TILE_N 16
#endif
/* gcc's unroll-and-jam (-O3) unrolls mk4_tile's k loop and jams the copies, which sends its
 * accumulators back to memory and halves its speed. */
#if defined(__GNUC__) && !defined(__clang__)
#define CR_NO_JAM __attribute__((optimize("no-loop-unroll-and-jam")))
#else
#define CR_NO_JAM
#endif

/* Tile of w^T packed on the stack for the forward: KC inputs by NC outputs (16 KiB). Columns of
 * dx and dw are processed NC at a time too, so four output rows stay in L1. */
#define NC 64
#define KC 64
/* Below this many outputs the forward runs as dot products along I (value head, logits). */
#define NARROW 8
/* Lanes of the dot-product accumulator: one AVX-512 register, two AVX2 or four NEON ones. */
#define LANES 16
/* Multiply-adds below which an op stays on the calling thread (a fork costs microseconds). */
#define PARALLEL_WORK (1L << 17)

static int min_int(int a, int b) { return a < b ? a : b; }

/* The [lo, hi) share of `n` items for the calling thread, in whole blocks of `blk`. */
static void thread_range(int n, int blk, int *lo, int *hi) {
    int t = omp_get_thread_num(), nt = omp_get_num_threads();
    long nb = (n + blk - 1) / blk;
    *lo = min_int((int)(nb * t / nt) * blk, n);
    *hi = min_int((int)(nb * (t + 1) / nt) * blk, n);
}

/* dst = src (n floats), as a loop gcc vectorises (its inline memcpy of a runtime size is not). */
static void copy_floats(float *restrict dst, const float *restrict src, int n) {
    for (int i = 0; i < n; i++) dst[i] = src[i];
}

/* ---- the micro-kernel -------------------------------------------------------------------- */

/* For r < 4: c_r[n] += sum_{k < K} a_r[k] bm[k, n], k ascending, n < N.
 * a_r[k] = a[r * lda + k * sa]; bm rows of stride ldb. The restrict parameters (gcc ignores
 * restrict on local pointers) let the n loop vectorise with no alias check per k. */
CR_VECTOR_KERNEL
static void mk4(const float *a, size_t lda, size_t sa, const float *restrict bm, size_t ldb,
                float *restrict c0, float *restrict c1, float *restrict c2, float *restrict c3,
                int K, int N) {
    for (int k = 0; k < K; k++) {
        const float *restrict br = bm + (size_t)k * ldb;
        const float *ak = a + (size_t)k * sa;
        float a0 = ak[0], a1 = ak[lda], a2 = ak[2 * lda], a3 = ak[3 * lda];
        for (int n = 0; n < N; n++) {
            float bn = br[n];
            c0[n] = CR_FMA(a0, bn, c0[n]);
            c1[n] = CR_FMA(a1, bn, c1[n]);
            c2[n] = CR_FMA(a2, bn, c2[n]);
            c3[n] = CR_FMA(a3, bn, c3[n]);
        }
    }
}

/* mk4 for N = TILE_N, with the four rows of c held in registers across the k loop (gcc keeps
 * fixed-size local arrays in vector registers). The same operations in the same order. */
CR_VECTOR_KERNEL CR_NO_JAM
static void mk4_tile(const float *a, size_t lda, size_t sa, const float *restrict bm, size_t ldb,
                     float *restrict c0, float *restrict c1, float *restrict c2,
                     float *restrict c3, int K) {
    float t0[TILE_N], t1[TILE_N], t2[TILE_N], t3[TILE_N];
    for (int n = 0; n < TILE_N; n++) t0[n] = c0[n], t1[n] = c1[n], t2[n] = c2[n], t3[n] = c3[n];
    for (int k = 0; k < K; k++) {
        const float *restrict br = bm + (size_t)k * ldb;
        const float *ak = a + (size_t)k * sa;
        float a0 = ak[0], a1 = ak[lda], a2 = ak[2 * lda], a3 = ak[3 * lda];
        for (int n = 0; n < TILE_N; n++) {
            float bn = br[n];
            t0[n] = CR_FMA(a0, bn, t0[n]);
            t1[n] = CR_FMA(a1, bn, t1[n]);
            t2[n] = CR_FMA(a2, bn, t2[n]);
            t3[n] = CR_FMA(a3, bn, t3[n]);
        }
    }
    for (int n = 0; n < TILE_N; n++) c0[n] = t0[n], c1[n] = t1[n], c2[n] = t2[n], c3[n] = t3[n];
}

/* One row of mk4: the same operations in the same order. */
CR_VECTOR_KERNEL
static void mk1(const float *a, size_t sa, const float *restrict bm, size_t ldb,
                float *restrict c, int K, int N) {
    for (int k = 0; k < K; k++) {
        const float *restrict br = bm + (size_t)k * ldb;
        float ak = a[(size_t)k * sa];
        for (int n = 0; n < N; n++) c[n] = CR_FMA(ak, br[n], c[n]);
    }
}

/* Rows [r0, r1) of c += a bm through mk4 / mk1 (row r of a at a + r * lda). */
static void mk_rows(const float *a, size_t lda, size_t sa, const float *bm, size_t ldb, float *c,
                    size_t ldc, int r0, int r1, int K, int N) {
    int r = r0;
    for (; r + 4 <= r1; r += 4) {
        const float *ar = a + (size_t)r * lda;
        float *c0 = c + (size_t)r * ldc;
        int n = 0;
        for (; n + TILE_N <= N; n += TILE_N)
            mk4_tile(ar, lda, sa, bm + n, ldb, c0 + n, c0 + ldc + n, c0 + 2 * ldc + n,
                     c0 + 3 * ldc + n, K);
        if (n < N)
            mk4(ar, lda, sa, bm + n, ldb, c0 + n, c0 + ldc + n, c0 + 2 * ldc + n,
                c0 + 3 * ldc + n, K, N - n);
    }
    for (; r < r1; r++) mk1(a + (size_t)r * lda, sa, bm, ldb, c + (size_t)r * ldc, K, N);
}

/* ---- forward ------------------------------------------------------------------------------ */

/* wt (kc, nc) = w[o0 : o0 + nc, i0 : i0 + kc]^T. */
static void pack_wt(const float *restrict w, float *restrict wt, int I, int o0, int nc, int i0,
                    int kc) {
    const float *src = w + (size_t)o0 * I + i0;
    for (int i = 0; i < kc; i++)
        for (int k = 0; k < nc; k++) wt[i * nc + k] = src[(size_t)k * I + i];
}

/* Rows [r0, r1) of y[:, o0 : o0 + nc] = x w^T + b, through packed tiles of w^T. */
static void fwd_wide(const float *x, const float *w, const float *b, float *y, int r0, int r1,
                     int I, int O, int o0, int nc) {
    float wt[KC * NC];
    for (int r = r0; r < r1; r++) copy_floats(y + (size_t)r * O + o0, b + o0, nc);
    for (int i0 = 0; i0 < I; i0 += KC) {
        int kc = min_int(KC, I - i0);
        pack_wt(w, wt, I, o0, nc, i0, kc);
        mk_rows(x + i0, (size_t)I, 1, wt, (size_t)nc, y + o0, (size_t)O, r0, r1, kc, nc);
    }
}

/* acc[0] = sum of acc[0 .. LANES), added pairwise: halves, then quarters, ... */
static inline float lanes_sum(float *acc) {
    for (int l = 0; l < 8; l++) acc[l] += acc[l + 8];
    for (int l = 0; l < 4; l++) acc[l] += acc[l + 4];
    for (int l = 0; l < 2; l++) acc[l] += acc[l + 2];
    return acc[0] + acc[1];
}

/* y_r = bias + sum_i x_r[i] w[i] for the rows x_r = x + r * ldx, r < R (R <= 4), with LANES
 * partial sums per row (lane l takes i = l mod LANES, ascending) added pairwise at the end: a
 * fixed order that vectorises without reassociation, whatever R is. */
CR_VECTOR_TARGET __attribute__((always_inline))
static inline void dot_lanes(const float *restrict x, size_t ldx, int R, const float *restrict w,
                             int n, float bias, float *restrict y, size_t ldy) {
    _Static_assert(LANES == 16, "lanes_sum adds 16 lanes");
    float acc[4][LANES] = {{0}};
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int r = 0; r < R; r++)
            for (int l = 0; l < LANES; l++)
                acc[r][l] = CR_FMA(x[r * ldx + i + l], w[i + l], acc[r][l]);
    for (int r = 0; r < R; r++)
        for (int l = 0; i + l < n; l++) acc[r][l] = CR_FMA(x[r * ldx + i + l], w[i + l], acc[r][l]);
    for (int r = 0; r < R; r++) y[r * ldy] = bias + lanes_sum(acc[r]);
}

/* dot_lanes for four rows (R known, so the accumulators stay in registers) and for fewer. */
CR_VECTOR_KERNEL
static void dot_lanes4(const float *x, size_t ldx, const float *w, int n, float bias, float *y,
                       size_t ldy) {
    dot_lanes(x, ldx, 4, w, n, bias, y, ldy);
}
CR_VECTOR_KERNEL
static void dot_lanes_r(const float *x, size_t ldx, int R, const float *w, int n, float bias,
                        float *y, size_t ldy) {
    dot_lanes(x, ldx, R, w, n, bias, y, ldy);
}

/* Rows [r0, r1) of y = x w^T + b for O < NARROW: dot products along I, four rows at a time. */
static void fwd_narrow(const float *x, const float *w, const float *b, float *y, int r0, int r1,
                       int I, int O) {
    for (int r = r0; r < r1; r += 4)
        for (int o = 0; o < O; o++) {
            const float *xr = x + (size_t)r * I, *wo = w + (size_t)o * I;
            float *yr = y + (size_t)r * O + o;
            if (r + 4 <= r1)
                dot_lanes4(xr, (size_t)I, wo, I, b[o], yr, (size_t)O);
            else
                dot_lanes_r(xr, (size_t)I, r1 - r, wo, I, b[o], yr, (size_t)O);
        }
}

/* Rows [r0, r1) of y = x w^T + b, then tanh over them when `act`. */
static void fwd_rows(const float *x, const float *w, const float *b, float *y, int r0, int r1,
                     int I, int O, int act) {
    if (r0 >= r1) return;
    if (O < NARROW)
        fwd_narrow(x, w, b, y, r0, r1, I, O);
    else
        for (int o0 = 0; o0 < O; o0 += NC)
            fwd_wide(x, w, b, y, r0, r1, I, O, o0, min_int(NC, O - o0));
    if (act) cr_cpu_tanh_forward(y + (size_t)r0 * O, y + (size_t)r0 * O, (size_t)(r1 - r0) * O);
}

static void forward(const float *x, const float *w, const float *b, float *y, int B, int I, int O,
                    int act) {
    long work = (long)B * I * O;
#pragma omp parallel if (work >= PARALLEL_WORK && B >= 8)
    {
        int r0, r1;
        thread_range(B, 4, &r0, &r1);
        fwd_rows(x, w, b, y, r0, r1, I, O, act);
    }
}

void cr_cpu_linear_forward(const float *x, const float *w, const float *b, float *y, int B, int I,
                           int O) {
    forward(x, w, b, y, B, I, O, 0);
}

void cr_cpu_linear_tanh_forward(const float *x, const float *w, const float *b, float *y, int B,
                                int I, int O) {
    forward(x, w, b, y, B, I, O, 1);
}

/* ---- backward ----------------------------------------------------------------------------- */

/* Rows [o0, o1) of dw = dy^T x and db = sum_b dy[b, :]. */
static void bwd_dw(const float *dy, const float *x, float *dw, float *db, int o0, int o1, int B,
                   int I, int O) {
    if (o0 >= o1) return;
    int no = o1 - o0;
    memset(db + o0, 0, (size_t)no * sizeof *db);
    for (int b = 0; b < B; b++) {
        const float *restrict d = dy + (size_t)b * O + o0;
        float *restrict acc = db + o0;
        for (int o = 0; o < no; o++) acc[o] += d[o];
    }
    if (I < NARROW) {
        /* Few inputs (the first layer): dw^T (I, no) = x^T dy, vectorised along o, in NC-wide
         * tiles on the stack, then transposed into dw. Same order over b per element. */
        float t[NARROW * NC];
        for (int c0 = o0; c0 < o1; c0 += NC) {
            int nc = min_int(NC, o1 - c0);
            memset(t, 0, sizeof t);
            mk_rows(x, 1, (size_t)I, dy + c0, (size_t)O, t, (size_t)nc, 0, I, B, nc);
            for (int i = 0; i < I; i++)
                for (int o = 0; o < nc; o++) dw[(size_t)(c0 + o) * I + i] = t[i * nc + o];
        }
        return;
    }
    memset(dw + (size_t)o0 * I, 0, (size_t)no * I * sizeof *dw);
    for (int i0 = 0; i0 < I; i0 += NC)
        mk_rows(dy, 1, (size_t)O, x + i0, (size_t)I, dw + i0, (size_t)I, o0, o1, B,
                min_int(NC, I - i0));
}

/* Rows [r0, r1) of dx = dy w. */
static void bwd_dx(const float *dy, const float *w, float *dx, int r0, int r1, int I, int O) {
    if (r0 >= r1) return;
    memset(dx + (size_t)r0 * I, 0, (size_t)(r1 - r0) * I * sizeof *dx);
    for (int i0 = 0; i0 < I; i0 += NC)
        mk_rows(dy, (size_t)O, 1, w + i0, (size_t)I, dx + i0, (size_t)I, r0, r1, O,
                min_int(NC, I - i0));
}

void cr_cpu_linear_backward(const float *dy, const float *x, const float *w, float *dx, float *dw,
                            float *db, int B, int I, int O) {
    long work = (long)B * I * O * (dx ? 2 : 1);
#pragma omp parallel if (work >= PARALLEL_WORK)
    {
        int lo, hi;
        thread_range(O, 4, &lo, &hi);
        bwd_dw(dy, x, dw, db, lo, hi, B, I, O);
        if (dx) {
            thread_range(B, 4, &lo, &hi);
            bwd_dx(dy, w, dx, lo, hi, I, O);
        }
    }
}
