/* 2-D convolution backward (NCHW): dw, db, and optionally dx, with an optional fused ReLU mask.
 *
 * One image at a time, as the forward: im2row gathers x_n into col (P Q, C R S) again (cheaper
 * than keeping every image's col from the forward: it is R S / stride^2 times the input), dy_n
 * (K, P Q) is transposed into dyt (P Q, K) with the ReLU select applied, and
 * cr_cpu_linear_backward on (dyt, col, w) gives the image's dw = dyt^T col, db = column sums of
 * dyt and dcol = dyt w, which row2im scatters back onto dx_n. In that orientation the long
 * reduction (over P Q for dw) and the vectorised loops (along C R S, a multiple of 64 in both
 * nets) suit linear.c's micro-kernel, and dcol can be skipped for the first layer.
 *
 * Order of the sums, fixed whatever the thread count: dw and db are the image-0 result plus
 * image 1's plus image 2's ..., each image's summed over pixels by cr_cpu_linear_backward;
 * dx elements add their contributions in output pixel order, then (c, r, s) order. */
#include <string.h>

#include "ops/cpu/conv_internal.h"
#include "ops/cpu/ops_conv.h"
#include "ops/cpu/ops_cpu.h"
#include "ops/cpu/simd.h"

/* dyt (PQ, K) = dy^T, or (y <= 0 ? 0 : dy)^T when y is not NULL. dy, y (K, PQ). */
static void transpose_masked(const float *dy, const float *y, float *dyt, int K, int PQ) {
    for (int k = 0; k < K; k++) {
        const float *dk = dy + (size_t)k * PQ;
        if (y) {
            const float *yk = y + (size_t)k * PQ;
            for (int i = 0; i < PQ; i++) dyt[(size_t)i * K + k] = yk[i] <= 0.0f ? 0.0f : dk[i];
        } else {
            for (int i = 0; i < PQ; i++) dyt[(size_t)i * K + k] = dk[i];
        }
    }
}

/* acc (n) += v (n). */
CR_VECTOR_TARGET
static void add_floats(float *restrict acc, const float *restrict v, size_t n) {
    for (size_t i = 0; i < n; i++) acc[i] += v[i];
}

/* x (C R S) += dcol, the patch whose top-left tap is x, wholly inside the image. Inlined with S a
 * constant for the common kernel widths, as im2row's gather. */
__attribute__((always_inline))
static inline void scatter_inside(const float *restrict dcol, float *restrict x, int C, int R,
                                  int S, int H, int W) {
    for (int c = 0; c < C; c++)
        for (int r = 0; r < R; r++, dcol += S) {
            float *xr = x + ((size_t)c * H + r) * W;
            for (int j = 0; j < S; j++) xr[j] += dcol[j];
        }
}

/* The same for a patch that may hang over the padding (top-left tap at row h0, column w0);
 * padding entries are dropped. */
static void scatter_border(const float *dcol, float *x, int C, int R, int S, int H, int W, int h0,
                           int w0) {
    int s0 = w0 < 0 ? -w0 : 0, s1 = W - w0 < S ? W - w0 : S;
    for (int c = 0; c < C; c++)
        for (int r = 0; r < R; r++, dcol += S) {
            int h = h0 + r;
            if (h < 0 || h >= H) continue;
            float *xr = x + ((size_t)c * H + h) * W; /* row h; tap j is column w0 + j */
            for (int j = s0; j < s1; j++) xr[w0 + j] += dcol[j];
        }
}

/* dx (C, H, W) = the sum onto each input element of the dcol (PQ, CRS) entries im2row copied it
 * to. The transpose of cr_conv2d_im2row, one image. */
static void row2im(const cr_conv2d_shape *s, const float *dcol, float *dx) {
    const int C = s->C, H = s->H, W = s->W, R = s->R, S = s->S;
    const size_t crs = (size_t)C * R * S;
    memset(dx, 0, (size_t)C * H * W * sizeof *dx);
    for (int p = 0; p < s->P; p++)
        for (int q = 0; q < s->Q; q++, dcol += crs) {
            int h0 = p * s->stride - s->pad, w0 = q * s->stride - s->pad;
            if (h0 < 0 || w0 < 0 || h0 + R > H || w0 + S > W) {
                scatter_border(dcol, dx, C, R, S, H, W, h0, w0);
                continue;
            }
            float *xp = dx + (size_t)h0 * W + w0;
            switch (S) {
            case 3: scatter_inside(dcol, xp, C, R, 3, H, W); break;
            case 4: scatter_inside(dcol, xp, C, R, 4, H, W); break;
            case 8: scatter_inside(dcol, xp, C, R, 8, H, W); break;
            default: scatter_inside(dcol, xp, C, R, S, H, W); break;
            }
        }
}

void cr_cpu_conv2d_backward(const cr_conv2d_shape *s, const float *x, const float *w,
                            const float *y_relu, const float *dy, float *dx, float *dw, float *db,
                            void *scratch) {
    cr_conv2d_assert_checked(s);
    cr_conv2d_scratch t;
    cr_conv2d_scratch_carve(s, scratch, &t);
    int pq = s->P * s->Q, crs = s->C * s->R * s->S, K = s->K;
    size_t x_img = (size_t)s->C * s->H * s->W, y_img = (size_t)K * pq;
    for (int n = 0; n < s->N; n++) {
        cr_conv2d_im2row(s, x + n * x_img, t.col);
        transpose_masked(dy + n * y_img, y_relu ? y_relu + n * y_img : NULL, t.dyt, K, pq);
        /* Image 0 writes dw, db directly; later images go through scratch and are added. */
        float *dw_n = n == 0 ? dw : t.dw, *db_n = n == 0 ? db : t.db;
        cr_cpu_linear_backward(t.dyt, t.col, w, dx ? t.dcol : NULL, dw_n, db_n, pq, crs, K);
        if (n > 0) {
            add_floats(dw, t.dw, (size_t)K * crs);
            add_floats(db, t.db, (size_t)K);
        }
        if (dx) row2im(s, t.dcol, dx + n * x_img);
    }
}
