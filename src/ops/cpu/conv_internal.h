/* What conv2d.c shares with conv2d_backward.c: the scratch layout and the im2row gather. */
#ifndef CUDARL_OPS_CONV_INTERNAL_H
#define CUDARL_OPS_CONV_INTERNAL_H

#include <stddef.h>

#include "ops/cpu/ops_conv.h"

/* The pieces of a conv op's scratch, each on its own 64-byte lines. PQ = P Q, CRS = C R S. */
typedef struct cr_conv2d_scratch {
    float *col;   /* (PQ, CRS) one image's patches, a row per output pixel */
    float *zeros; /* (PQ) the forward's zero "bias" for cr_cpu_linear_forward */
    float *yt;    /* (PQ, K) one image's output, pixel-major, before its transpose */
    float *dyt;   /* (PQ, K) one image's dy, transposed, ReLU mask applied (aliases yt) */
    float *dw;    /* (K, CRS) one image's weight gradient, before it is added to the sum */
    float *db;    /* (K) one image's bias gradient */
    float *dcol;  /* (PQ, CRS) one image's gradient w.r.t. col */
} cr_conv2d_scratch;

/* Points out's fields into base (when not NULL) and returns the bytes they take. */
size_t cr_conv2d_scratch_carve(const cr_conv2d_shape *s, void *base, cr_conv2d_scratch *out);

/* Aborts unless cr_conv2d_shape_check accepts s and gives its P, Q (a caller's bug). */
void cr_conv2d_assert_checked(const cr_conv2d_shape *s);

/* col (PQ, CRS): col[p Q + q, (c R + r) S + s'] = x[c, p stride - pad + r, q stride - pad + s'],
 * 0 outside the input. x (C, H, W), one image. */
void cr_conv2d_im2row(const cr_conv2d_shape *s, const float *x, float *col);

#endif
