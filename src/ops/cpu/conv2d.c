/* 2-D convolution forward (NCHW), its shape check and scratch plan, and the im2row gather the
 * backward (conv2d_backward.c) shares.
 *
 * Method: one image at a time, im2row gathers the input patches into col (P Q, C R S), one row
 * per output pixel (zeros where a patch hangs over the padding), and the convolution becomes a
 * matrix product run by cr_cpu_linear_forward. That reuses linear.c's vectorised micro-kernel
 * and its fixed reduction order (bitwise identical for any thread count) instead of a second
 * GEMM that could drift from the first. The product is taken in one of two orientations, the
 * one whose vectorised dimension fills more of the micro-kernel's 64-wide register tile:
 *   by pixel:   y_n (K, P Q) = w (K, C R S) col^T, NCHW directly, the bias and ReLU added after
 *               in one pass (conv1: K = 32, P Q = 400; the MinAtar conv: K = 16, P Q = 64);
 *   by channel: yt (P Q, K) = col w^T + b, then transposed into y_n with the ReLU (conv2, conv3:
 *               K = 64, P Q = 81, 49).
 * A direct loop ordered for vectorisation would have been that second GEMM, written again for
 * every stride and padding case. Interior patches (all of them without padding) are copied with
 * the kernel width a compile-time constant, which keeps im2row a small part of the time.
 *
 * bench/bench_conv_cpu times the Nature-CNN's three convolutions (bench/RESULTS.md, CPU
 * convolutions). */
#include <limits.h>
#include <string.h>

#include "ops/cpu/conv_internal.h"
#include "ops/cpu/ops_conv.h"
#include "ops/cpu/ops_cpu.h"
#include "ops/cpu/simd.h"

/* ---- shape ----------------------------------------------------------------------------------- */

cudarl_status cr_conv2d_shape_check(cr_conv2d_shape *s) {
    const struct {
        const char *name;
        int value, min;
    } f[] = {{"N", s->N, 1}, {"C", s->C, 1}, {"H", s->H, 1},      {"W", s->W, 1},
             {"K", s->K, 1}, {"R", s->R, 1}, {"S", s->S, 1},      {"stride", s->stride, 1},
             {"pad", s->pad, 0}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].value < f[i].min)
            return cr_fail(CUDARL_ERR_INVALID_ARG, "conv2d: %s = %d, must be >= %d", f[i].name,
                           f[i].value, f[i].min);
    int64_t hp = (int64_t)s->H + 2 * (int64_t)s->pad, wp = (int64_t)s->W + 2 * (int64_t)s->pad;
    if (s->R > hp || s->S > wp)
        return cr_fail(CUDARL_ERR_INVALID_ARG,
                       "conv2d: a %dx%d kernel does not fit a %dx%d input padded by %d; use a "
                       "smaller kernel or a larger observation",
                       s->R, s->S, s->H, s->W, s->pad);
    int64_t P = (hp - s->R) / s->stride + 1, Q = (wp - s->S) / s->stride + 1;
    int64_t crs = (int64_t)s->C * s->R * s->S;
    /* Every per-image count the ops index with int (cr_cpu_linear_* take int sizes). */
    if (crs > INT_MAX || P * Q > INT_MAX || (int64_t)s->K * P * Q > INT_MAX ||
        (int64_t)s->C * s->H * s->W > INT_MAX || P * Q * crs > INT_MAX)
        return cr_fail(CUDARL_ERR_INVALID_ARG,
                       "conv2d: C=%d H=%d W=%d K=%d R=%d S=%d is too large for one image",
                       s->C, s->H, s->W, s->K, s->R, s->S);
    s->P = (int)P, s->Q = (int)Q;
    return CUDARL_OK;
}

void cr_conv2d_assert_checked(const cr_conv2d_shape *s) {
    cr_conv2d_shape t = *s;
    CUDARL_ASSERT(cr_conv2d_shape_check(&t) == CUDARL_OK);
    CUDARL_ASSERT(t.P == s->P && t.Q == s->Q);
}

/* ---- scratch --------------------------------------------------------------------------------- */

/* n floats rounded up to whole 64-byte lines. */
static size_t lines(size_t n) { return (n * sizeof(float) + 63) / 64 * 64; }

size_t cr_conv2d_scratch_carve(const cr_conv2d_shape *s, void *base, cr_conv2d_scratch *out) {
    size_t pq = (size_t)s->P * s->Q, crs = (size_t)s->C * s->R * s->S, k = (size_t)s->K;
    const size_t sizes[] = {lines(pq * crs), lines(pq), lines(pq * k), lines(k * crs), lines(k),
                            lines(pq * crs)};
    float **dst[] = {&out->col, &out->zeros, &out->yt, &out->dw, &out->db, &out->dcol};
    unsigned char *p = base;
    size_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        if (p) *dst[i] = (float *)(p + total);
        total += sizes[i];
    }
    if (p) out->dyt = out->yt; /* the forward uses one, the backward the other */
    return total;
}

size_t cr_cpu_conv2d_scratch_bytes(const cr_conv2d_shape *s) {
    cr_conv2d_assert_checked(s);
    cr_conv2d_scratch unused;
    return cr_conv2d_scratch_carve(s, NULL, &unused);
}

/* ---- im2row ---------------------------------------------------------------------------------- */

/* col (C R S) = the patch of x (C, H, W) whose top-left tap is x, wholly inside the image.
 * Inlined with S a constant for the common kernel widths, so the row copy is a few vector moves
 * instead of a loop with a branch per tap. */
__attribute__((always_inline))
static inline void gather_inside(const float *restrict x, float *restrict col, int C, int R, int S,
                                 int H, int W) {
    for (int c = 0; c < C; c++)
        for (int r = 0; r < R; r++, col += S) {
            const float *xr = x + ((size_t)c * H + r) * W;
            for (int j = 0; j < S; j++) col[j] = xr[j];
        }
}

/* The same for a patch that may hang over the padding (top-left tap at row h0, column w0). */
static void gather_border(const float *x, float *col, int C, int R, int S, int H, int W, int h0,
                          int w0) {
    int s0 = w0 < 0 ? -w0 : 0, s1 = W - w0 < S ? W - w0 : S;
    for (int c = 0; c < C; c++)
        for (int r = 0; r < R; r++, col += S) {
            int h = h0 + r;
            if (h < 0 || h >= H || s1 <= s0) {
                memset(col, 0, (size_t)S * sizeof *col);
                continue;
            }
            const float *xr = x + ((size_t)c * H + h) * W; /* row h; tap j is column w0 + j */
            for (int j = 0; j < s0; j++) col[j] = 0.0f;
            for (int j = s0; j < s1; j++) col[j] = xr[w0 + j];
            for (int j = s1; j < S; j++) col[j] = 0.0f;
        }
}

void cr_conv2d_im2row(const cr_conv2d_shape *s, const float *x, float *col) {
    const int C = s->C, H = s->H, W = s->W, R = s->R, S = s->S;
    const size_t crs = (size_t)C * R * S;
    for (int p = 0; p < s->P; p++)
        for (int q = 0; q < s->Q; q++, col += crs) {
            int h0 = p * s->stride - s->pad, w0 = q * s->stride - s->pad;
            if (h0 < 0 || w0 < 0 || h0 + R > H || w0 + S > W) {
                gather_border(x, col, C, R, S, H, W, h0, w0);
                continue;
            }
            const float *xp = x + (size_t)h0 * W + w0;
            switch (S) {
            case 3: gather_inside(xp, col, C, R, 3, H, W); break;
            case 4: gather_inside(xp, col, C, R, 4, H, W); break;
            case 8: gather_inside(xp, col, C, R, 8, H, W); break;
            default: gather_inside(xp, col, C, R, S, H, W); break;
            }
        }
}

/* ---- forward --------------------------------------------------------------------------------- */

/* Width of the register tile of linear.c's micro-kernel on AVX-512 (a multiple of the others'):
 * the product runs fastest when its vectorised dimension is a multiple of this. */
#define LINEAR_TILE 64

/* Share of n covered by whole LINEAR_TILE-wide tiles. */
static double tiled_share(int n) { return (double)(n / LINEAR_TILE * LINEAR_TILE) / n; }

/* y (K, PQ) += b[k] per row, then max(0, .) when relu. */
CR_VECTOR_TARGET
static void bias_relu(float *restrict y, const float *restrict b, int K, int PQ, int relu) {
    for (int k = 0; k < K; k++) {
        float *restrict yk = y + (size_t)k * PQ;
        float bk = b[k];
        if (relu)
            for (int i = 0; i < PQ; i++) {
                float v = yk[i] + bk;
                yk[i] = v < 0.0f ? 0.0f : v;
            }
        else
            for (int i = 0; i < PQ; i++) yk[i] += bk;
    }
}

/* y (K, PQ) = yt^T (yt (PQ, K)), then max(0, .) when relu. */
static void transpose_relu(const float *restrict yt, float *restrict y, int K, int PQ, int relu) {
    for (int k = 0; k < K; k++)
        for (int i = 0; i < PQ; i++) {
            float v = yt[(size_t)i * K + k];
            y[(size_t)k * PQ + i] = relu && v < 0.0f ? 0.0f : v;
        }
}

void cr_cpu_conv2d_forward(const cr_conv2d_shape *s, const float *x, const float *w,
                           const float *b, float *y, int relu, void *scratch) {
    cr_conv2d_assert_checked(s);
    cr_conv2d_scratch t;
    cr_conv2d_scratch_carve(s, scratch, &t);
    int pq = s->P * s->Q, crs = s->C * s->R * s->S;
    size_t x_img = (size_t)s->C * s->H * s->W, y_img = (size_t)s->K * pq;
    /* Vectorise along whichever of K and P Q fills more of the micro-kernel's tile: on the
     * Nature-CNN, pixels for conv1 (K = 32, P Q = 400), channels for conv2 and conv3 (K = 64,
     * P Q = 81, 49), each faster than the other way round (bench/RESULTS.md, CPU convolutions). */
    int by_channel = tiled_share(s->K) > tiled_share(pq);
    memset(t.zeros, 0, (size_t)pq * sizeof *t.zeros);
    for (int n = 0; n < s->N; n++) {
        float *yn = y + n * y_img; /* (K, P, Q) */
        cr_conv2d_im2row(s, x + n * x_img, t.col);
        if (by_channel) {
            cr_cpu_linear_forward(t.col, w, b, t.yt, pq, crs, s->K);
            transpose_relu(t.yt, yn, s->K, pq, relu);
        } else {
            cr_cpu_linear_forward(w, t.col, t.zeros, yn, s->K, crs, pq);
            bias_relu(yn, b, s->K, pq, relu);
        }
    }
}
