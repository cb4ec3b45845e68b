/* torch.nn.init.orthogonal_ for a weight w (O, I).
 *
 * PyTorch draws M (O, I) ~ N(0, 1), takes the QR decomposition of M (O >= I) or of M^T (O < I),
 * multiplies Q by sign(diag(R)) and scales by gain. That sign-corrected Q is the Q whose R has a
 * positive diagonal, which is exactly what Gram-Schmidt produces, so this runs modified
 * Gram-Schmidt on the columns (O >= I) or rows (O < I) of M, twice per vector ("twice is
 * enough", Giraud et al. 2005), with products accumulated in double. Columns are copied into
 * rows of a scratch matrix first when it can be allocated (a strided walk down columns is ten
 * times slower on large matrices); the arithmetic is the same either way. */
#include <math.h>
#include <stdlib.h>

#include "ops/cpu/ops_cpu.h"

/* k vectors of length m: element e of vector j at w[j * sj + e * se]. */
typedef struct vecs {
    float *w;
    size_t sj, se;
    int k, m;
} vecs;

/* <x, y> in double with four partial sums (e mod 4), added pairwise: a fixed order. */
static inline double dot(const float *x, const float *y, size_t se, int m) {
    double s[4] = {0, 0, 0, 0};
    int e = 0;
    for (; e + 4 <= m; e += 4)
        for (int l = 0; l < 4; l++) s[l] += (double)x[(e + l) * se] * y[(e + l) * se];
    for (int l = 0; e + l < m; l++) s[l] += (double)x[(e + l) * se] * y[(e + l) * se];
    return (s[0] + s[1]) + (s[2] + s[3]);
}

/* y = y - c x, in double, rounded once per element. */
static inline void axpy(float *y, const float *x, double c, size_t se, int m) {
    for (int e = 0; e < m; e++) y[e * se] = (float)(y[e * se] - c * x[e * se]);
}

/* The vectors are contiguous in every call but the fallback; saying so lets gcc vectorise. */
static inline void gram_schmidt_se(const vecs *v, size_t se) {
    for (int j = 0; j < v->k; j++) {
        float *y = v->w + j * v->sj;
        for (int pass = 0; pass < 2; pass++)
            for (int i = 0; i < j; i++) {
                const float *x = v->w + i * v->sj;
                axpy(y, x, dot(x, y, se, v->m), se, v->m);
            }
        double norm = sqrt(dot(y, y, se, v->m));
        CUDARL_ASSERT(norm > 0.0); /* a Gaussian draw is rank-deficient with probability 0 */
        for (int e = 0; e < v->m; e++) y[e * se] = (float)(y[e * se] / norm);
    }
}

static void gram_schmidt(const vecs *v) {
    if (v->se == 1)
        gram_schmidt_se(v, 1);
    else
        gram_schmidt_se(v, v->se);
}

/* dst (cols, rows) = src (rows, cols)^T. */
static void transpose(const float *src, float *dst, int rows, int cols) {
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) dst[(size_t)c * rows + r] = src[(size_t)r * cols + c];
}

void cr_cpu_orthogonal_init(float *w, int O, int I, double gain, cr_philox_state *rng) {
    size_t n = (size_t)O * I;
    for (size_t e = 0; e < n; e++) w[e] = (float)cr_philox_normal(rng);
    if (O < I) { /* the O rows, contiguous */
        gram_schmidt(&(vecs){w, (size_t)I, 1, O, I});
    } else {     /* the I columns (length O) */
        float *t = I > 1 ? malloc(n * sizeof *t) : NULL;
        if (t) {
            transpose(w, t, O, I);
            gram_schmidt(&(vecs){t, (size_t)O, 1, I, O});
            transpose(t, w, I, O);
            free(t);
        } else {
            gram_schmidt(&(vecs){w, 1, (size_t)I, I, O});
        }
    }
    for (size_t e = 0; e < n; e++) w[e] = (float)(w[e] * gain);
}
