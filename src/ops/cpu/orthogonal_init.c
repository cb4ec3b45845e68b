/* torch.nn.init.orthogonal_ for a weight w (O, I).
 *
 * PyTorch draws M (O, I) ~ N(0, 1), takes the QR decomposition of M (O >= I) or of M^T (O < I),
 * multiplies Q by sign(diag(R)) and scales by gain. That sign-corrected Q is the Q whose R has a
 * positive diagonal, which is exactly what Gram-Schmidt produces. This runs it on the columns
 * (O >= I) or rows (O < I) of M, copied into rows of a scratch matrix (a strided walk down
 * columns is ten times slower on large matrices), in blocks of GS_BLOCK vectors: each block is
 * projected off every vector before it twice (block classical Gram-Schmidt, twice: "twice is
 * enough", Giraud et al. 2005), as matrix products the CPU threads share, then orthonormalised
 * within itself by modified Gram-Schmidt, twice per vector. Products are accumulated in double,
 * each by one thread in a fixed order, so the bits do not depend on the thread count. (Vector
 * by vector, Nature-CNN's 512 x 3136 layer took 0.8 s of a run's start.) */
#include <math.h>
#include <stdlib.h>

#include "ops/cpu/ops_cpu.h"
#include "ops/parallel.h"

#define GS_BLOCK 16                  /* vectors a block takes */
#define GS_CHUNK 256                 /* elements a thread updates at a time */
#define GS_PARALLEL ((size_t)1 << 20) /* multiply-adds of a projection worth the threads */

/* <x, y> in double with four partial sums (e mod 4), added pairwise: a fixed order. */
static inline double dot(const float *x, const float *y, int m) {
    double s[4] = {0, 0, 0, 0};
    int e = 0;
    for (; e + 4 <= m; e += 4)
        for (int l = 0; l < 4; l++) s[l] += (double)x[e + l] * y[e + l];
    for (int l = 0; e + l < m; l++) s[l] += (double)x[e + l] * y[e + l];
    return (s[0] + s[1]) + (s[2] + s[3]);
}

/* y = y - c x, in double, rounded once per element. */
static inline void axpy(float *y, const float *x, double c, int m) {
    for (int e = 0; e < m; e++) y[e] = (float)(y[e] - c * x[e]);
}

/* Rows j0 .. j0 + nb - 1 of v (k rows of length m, row j at v + j m) minus their projections on
 * rows 0 .. j0 - 1 (orthonormal): c (nb, j0) = the dot products, then each element of the block
 * minus sum_i c[b][i] x_i, summed in double over i in order and rounded once. */
static void project_block(float *v, int m, int j0, int nb, double *c) {
    const float *x = v;
    float *y = v + (size_t)j0 * m;
    const int par = (size_t)j0 * nb * m >= GS_PARALLEL;
#pragma omp parallel for schedule(static) if (par)
    for (int i = 0; i < j0; i++)
        for (int b = 0; b < nb; b++)
            c[(size_t)b * j0 + i] = dot(x + (size_t)i * m, y + (size_t)b * m, m);
    const int chunks = (m + GS_CHUNK - 1) / GS_CHUNK;
#pragma omp parallel for schedule(static) if (par)
    for (int ch = 0; ch < chunks; ch++) {
        const int e0 = ch * GS_CHUNK, n = m - e0 < GS_CHUNK ? m - e0 : GS_CHUNK;
        double acc[GS_BLOCK][GS_CHUNK];
        for (int b = 0; b < nb; b++)
            for (int e = 0; e < n; e++) acc[b][e] = y[(size_t)b * m + e0 + e];
        for (int i = 0; i < j0; i++) {
            const float *xi = x + (size_t)i * m + e0;
            for (int b = 0; b < nb; b++) {
                const double cb = c[(size_t)b * j0 + i];
                for (int e = 0; e < n; e++) acc[b][e] -= cb * xi[e];
            }
        }
        for (int b = 0; b < nb; b++)
            for (int e = 0; e < n; e++) y[(size_t)b * m + e0 + e] = (float)acc[b][e];
    }
}

/* The k rows of v (length m, contiguous) replaced by their Gram-Schmidt orthonormal basis;
 * c: GS_BLOCK x k doubles. */
static void gram_schmidt(float *v, int k, int m, double *c) {
    for (int j0 = 0; j0 < k; j0 += GS_BLOCK) {
        const int nb = k - j0 < GS_BLOCK ? k - j0 : GS_BLOCK;
        if (j0 > 0)
            for (int pass = 0; pass < 2; pass++) project_block(v, m, j0, nb, c);
        for (int j = j0; j < j0 + nb; j++) {
            float *y = v + (size_t)j * m;
            for (int pass = 0; pass < 2; pass++)
                for (int i = j0; i < j; i++) {
                    const float *x = v + (size_t)i * m;
                    axpy(y, x, dot(x, y, m), m);
                }
            double norm = sqrt(dot(y, y, m));
            CUDARL_ASSERT(norm > 0.0); /* a Gaussian draw is rank-deficient with probability 0 */
            for (int e = 0; e < m; e++) y[e] = (float)(y[e] / norm);
        }
    }
}

/* Word w of the stream of s (its key and counter's high words). */
static uint32_t stream_word(const cr_philox_state *s, uint64_t w) {
    const uint64_t block = w / 4;
    const uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), s->ctr[2], s->ctr[3]};
    uint32_t out[4];
    cr_philox4x32_10(ctr, s->key, out);
    return out[w % 4];
}

/* cr_philox_uniform_f64's value of words a, b. */
static double uniform_of(uint32_t a, uint32_t b) {
    return (double)((uint64_t)(a >> 5) * 67108864u + (b >> 6)) * (1.0 / 9007199254740992.0);
}

void cr_cpu_philox_normals(cr_philox_state *s, float *out, size_t n) {
    const uint64_t next = (uint64_t)s->ctr[0] | (uint64_t)s->ctr[1] << 32; /* the block after buf */
    const uint64_t w0 = s->used == 4 ? 4 * next : 4 * (next - 1) + (uint64_t)s->used;
#pragma omp parallel for schedule(static) if (n >= ((size_t)1 << 16))
    for (size_t i = 0; i < n; i++) {
        const uint64_t w = w0 + 4 * (uint64_t)i;
        uint32_t x[4];
        if (w % 4 == 0) { /* the draw is one block */
            const uint64_t block = w / 4;
            const uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), s->ctr[2],
                                     s->ctr[3]};
            cr_philox4x32_10(ctr, s->key, x);
        } else {
            for (int k = 0; k < 4; k++) x[k] = stream_word(s, w + (uint64_t)k);
        }
        double u1 = uniform_of(x[0], x[1]), u2 = uniform_of(x[2], x[3]);
        if (u1 < 1e-300) u1 = 1e-300; /* cr_philox_normal's, step for step */
        out[i] = (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
    }
    const uint64_t end = w0 + 4 * (uint64_t)n; /* the next word */
    const uint64_t block = end / 4;
    if (end % 4 == 0) {
        s->ctr[0] = (uint32_t)block, s->ctr[1] = (uint32_t)(block >> 32), s->used = 4;
    } else { /* that block in buf, the counter past it */
        const uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), s->ctr[2], s->ctr[3]};
        cr_philox4x32_10(ctr, s->key, s->buf);
        s->ctr[0] = (uint32_t)(block + 1), s->ctr[1] = (uint32_t)((block + 1) >> 32);
        s->used = (int)(end % 4);
    }
}

/* dst (cols, rows) = src (rows, cols)^T. */
static void transpose(const float *src, float *dst, int rows, int cols) {
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) dst[(size_t)c * rows + r] = src[(size_t)r * cols + c];
}

void cr_cpu_orthogonal_init(float *w, int O, int I, double gain, cr_philox_state *rng) {
    const size_t n = (size_t)O * I;
    cr_cpu_philox_normals(rng, w, n);
    const int k = O < I ? O : I; /* the vectors: O rows (O < I) or I columns of length O */
    double *c = malloc((size_t)GS_BLOCK * k * sizeof *c);
    float *t = O < I || I == 1 ? w : malloc(n * sizeof *t);
    CUDARL_ASSERT(c && t); /* a network's init: its weights' size in host memory, once */
    if (t != w) transpose(w, t, O, I);
    gram_schmidt(t, k, O < I ? I : O, c);
    if (t != w) {
        transpose(t, w, I, O);
        free(t);
    }
    free(c);
    for (size_t e = 0; e < n; e++) w[e] = (float)(w[e] * gain);
}
