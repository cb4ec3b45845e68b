/* Camera frames to observation planes (cudarl.h, "camera frames to observations"): one frame's
 * pixel conversion, crop and exact area resize, as inline functions for C and CUDA, so that the
 * CPU reference (ops/cpu/frames.c, the op table's frame_to_obs) and its CUDA twin compute each
 * output pixel with the same integer arithmetic, bit for bit.
 *
 * Output pixel (ox, oy) of an out_w x out_h image of the crop (cw x ch at crop_x, crop_y) covers
 * crop columns [ox cw / out_w, (ox+1) cw / out_w) and rows likewise. Scaled by out_w, its edges
 * are the integers a = ox cw and b = a + cw, crop column j covers [j out_w, (j+1) out_w), and
 * their overlap wx(j) = min(b, (j+1) out_w) - max(a, j out_w) is an integer; sum_j wx(j) = cw.
 * With wy(i) the same along rows, the pixel is
 *     (sum_i wy(i) sum_j wx(j) v(i, j) + area / 2) / area,  area = cw ch,
 * the exact box average rounded half up, where v is the converted source pixel. The sums are
 * integers (cr_frame_box), so any order of summation (threads, warps) gives the same result. */
#ifndef CUDARL_OPS_FRAMES_H
#define CUDARL_OPS_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "core/philox.h" /* CR_HD */
#include "cudarl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One camera's frame and the image made of it; every field resolved (checked by the runtime:
 * pitch never 0, the crop inside the frame). */
typedef struct cr_frame_geom {
    int format;            /* cudarl_pixel_format */
    int width, height;     /* the frame, pixels */
    size_t pitch;          /* bytes a row (NV12: of the Y plane; the U,V plane at height x pitch) */
    int crop_x, crop_y, crop_w, crop_h;
    int out_w, out_h;      /* the image */
    int channels;          /* 1 gray, 3 R, G, B planes */
} cr_frame_geom;

/* Bytes a pixel of a packed format (GRAY8, RGB8, BGR8, YUYV); NV12's Y plane: 1. */
CR_HD static inline int cr_frame_pixel_bytes(int format) {
    return format == CUDARL_PIXEL_RGB8 || format == CUDARL_PIXEL_BGR8 ? 3
           : format == CUDARL_PIXEL_YUYV                             ? 2
                                                                     : 1;
}

/* Bytes of a frame: height rows of pitch (NV12: and height / 2 rows of its U,V plane). */
CR_HD static inline size_t cr_frame_bytes(const cr_frame_geom *g) {
    size_t rows = (size_t)g->height + (g->format == CUDARL_PIXEL_NV12 ? (size_t)g->height / 2 : 0);
    return rows * g->pitch;
}

/* The bytes of a frame that its conversion (cr_frame_box, cr_frame_box_part) reads, as at most
 * two ranges [off, off + len) of the frame: the crop's rows, whole (pitch bytes each), and for
 * NV12 into RGB the U,V rows of those rows (row y's at height + y / 2); NV12 into gray reads its
 * Y plane only, 2/3 of the frame. The CUDA tick uploads these alone. Returns how many ranges. */
CR_HD static inline int cr_frame_read_ranges(const cr_frame_geom *g, size_t off[2],
                                             size_t len[2]) {
    const size_t pitch = g->pitch, y0 = (size_t)g->crop_y, y1 = y0 + (size_t)g->crop_h;
    off[0] = y0 * pitch, len[0] = (y1 - y0) * pitch;
    if (g->format != CUDARL_PIXEL_NV12 || g->channels != 3) return 1;
    const size_t h = (size_t)g->height;
    const size_t u0 = (h + y0 / 2) * pitch, u1 = (h + (y1 - 1) / 2 + 1) * pitch;
    if (u0 == off[0] + len[0]) { /* the crop's rows reach the bottom: one range */
        len[0] = u1 - off[0];
        return 1;
    }
    off[1] = u0, len[1] = u1 - u0;
    return 2;
}

/* OpenCV's RGB2GRAY fixed point: 0.299, 0.587, 0.114 in 15 bits (sum 32768), rounded. */
#define CR_GRAY_R 9798
#define CR_GRAY_G 19235
#define CR_GRAY_B 3735
#define CR_GRAY_SHIFT 15

CR_HD static inline uint8_t cr_frame_gray_of(int r, int g, int b) {
    return (uint8_t)((r * CR_GRAY_R + g * CR_GRAY_G + b * CR_GRAY_B + (1 << (CR_GRAY_SHIFT - 1))) >>
                     CR_GRAY_SHIFT);
}

/* ITU-R BT.601 limited range to RGB, OpenCV's COLOR_YUV2RGB_NV12 / _YUYV constants (x 2^20). */
#define CR_BT601_SHIFT 20
#define CR_BT601_CY 1220542
#define CR_BT601_CVR 1673527
#define CR_BT601_CVG (-852492)
#define CR_BT601_CUG (-409993)
#define CR_BT601_CUB 2116026

CR_HD static inline uint8_t cr_frame_clamp_u8(int v) {
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

CR_HD static inline void cr_frame_yuv_to_rgb(int y, int u, int v, int rgb[3]) {
    const int yy = (y > 16 ? y - 16 : 0) * CR_BT601_CY + (1 << (CR_BT601_SHIFT - 1));
    u -= 128, v -= 128;
    rgb[0] = cr_frame_clamp_u8((yy + CR_BT601_CVR * v) >> CR_BT601_SHIFT);
    rgb[1] = cr_frame_clamp_u8((yy + CR_BT601_CVG * v + CR_BT601_CUG * u) >> CR_BT601_SHIFT);
    rgb[2] = cr_frame_clamp_u8((yy + CR_BT601_CUB * u) >> CR_BT601_SHIFT);
}

/* The converted pixel (x, y) of the whole frame into v[0] (gray) or v[0..2] (R, G, B). */
CR_HD static inline void cr_frame_pixel(const cr_frame_geom *g, const uint8_t *frame, int x, int y,
                                        int v[3]) {
    const uint8_t *row = frame + (size_t)y * g->pitch;
    const int rgb = g->channels == 3;
    switch (g->format) {
    case CUDARL_PIXEL_RGB8:
    case CUDARL_PIXEL_BGR8: {
        const uint8_t *p = row + 3 * (size_t)x;
        const int r = g->format == CUDARL_PIXEL_RGB8 ? p[0] : p[2];
        const int b = g->format == CUDARL_PIXEL_RGB8 ? p[2] : p[0];
        if (rgb) v[0] = r, v[1] = p[1], v[2] = b;
        else v[0] = cr_frame_gray_of(r, p[1], b);
        return;
    }
    case CUDARL_PIXEL_YUYV: {
        const uint8_t *pair = row + 4 * (size_t)(x >> 1);
        const int Y = pair[2 * (x & 1)];
        if (rgb) cr_frame_yuv_to_rgb(Y, pair[1], pair[3], v);
        else v[0] = Y;
        return;
    }
    case CUDARL_PIXEL_NV12: {
        const int Y = row[x];
        if (!rgb) {
            v[0] = Y;
            return;
        }
        const uint8_t *uv =
            frame + ((size_t)g->height + (size_t)(y >> 1)) * g->pitch + 2 * (size_t)(x >> 1);
        cr_frame_yuv_to_rgb(Y, uv[0], uv[1], v);
        return;
    }
    default: /* CUDARL_PIXEL_GRAY8 */
        v[0] = row[x];
        if (rgb) v[1] = v[0], v[2] = v[0];
        return;
    }
}

/* The first crop column (row) of output column (row) o of n over a crop side of c, and the
 * number of them: [o c / n, ceil((o+1) c / n)). */
CR_HD static inline void cr_frame_span(int o, int n, int c, int *first, int *count) {
    const int64_t a = (int64_t)o * c, b = a + c;
    const int j0 = (int)(a / n), j1 = (int)((b + n - 1) / n);
    *first = j0, *count = j1 - j0;
}

/* The weight of crop column j in output column o of n over a crop side of c (units of 1/n). */
CR_HD static inline uint32_t cr_frame_weight(int o, int n, int c, int j) {
    const int64_t a = (int64_t)o * c, b = a + c, lo = (int64_t)j * n, hi = lo + n;
    return (uint32_t)((b < hi ? b : hi) - (a > lo ? a : lo));
}

/* Output pixel (ox, oy): the area average of its box of converted crop pixels, per channel, into
 * out[0] or out[0..2]. A row's sum is at most 255 sum_j wx(j) = 255 cw < 2^23 (cw <=
 * CUDARL_FRAME_MAX_SIDE = 2^15): uint32; the box's at most 255 cw ch < 2^38: uint64. */
CR_HD static inline void cr_frame_box(const cr_frame_geom *g, const uint8_t *frame, int ox, int oy,
                                      uint8_t out[3]) {
    int i0, ni, j0, nj;
    cr_frame_span(ox, g->out_w, g->crop_w, &j0, &nj);
    cr_frame_span(oy, g->out_h, g->crop_h, &i0, &ni);
    uint64_t sum[3] = {0, 0, 0};
    for (int i = i0; i < i0 + ni; i++) {
        const uint32_t wy = cr_frame_weight(oy, g->out_h, g->crop_h, i);
        uint32_t row[3] = {0, 0, 0};
        for (int j = j0; j < j0 + nj; j++) {
            const uint32_t wx = cr_frame_weight(ox, g->out_w, g->crop_w, j);
            int v[3] = {0, 0, 0};
            cr_frame_pixel(g, frame, g->crop_x + j, g->crop_y + i, v);
            for (int c = 0; c < 3; c++) row[c] += wx * (uint32_t)v[c]; /* past channels: 0 */
        }
        for (int c = 0; c < 3; c++) sum[c] += (uint64_t)wy * row[c];
    }
    const uint64_t area = (uint64_t)g->crop_w * (uint64_t)g->crop_h;
    for (int c = 0; c < 3; c++) /* constant indices: registers on a GPU */
        if (c < g->channels) out[c] = (uint8_t)((sum[c] + area / 2) / area);
}

/* The same sums split by columns, for a GPU's warp (ops/cuda/frames.cu): Sum_i Sum_j wy(i) wx(j)
 * v(i, j) = Sum_j wx(j) t(j) with t(j) = Sum_i wy(i) v(i, j), and every row of a box but its
 * first and last has the full weight wy = out_h, so t(j) = out_h Sum_i v(i, j) + (wy(first) -
 * out_h) v(first, j) + (wy(last) - out_h) v(last, j) (one row: wy(first) v(first, j)): a column's
 * inner loop is a load and an add a pixel. Integers modulo 2^32, exact: t(j) <= 255 Sum_i wy(i)
 * = 255 crop_h < 2^23. */

#ifdef __CUDA_ARCH__
#define CR_FRAME_UNROLL _Pragma("unroll 8")
#else
#define CR_FRAME_UNROLL
#endif

/* The byte step between the gray samples of a row when the image is gray and a pixel's gray
 * value is one byte of the frame: 1 (GRAY8, NV12's Y plane), 2 (YUYV's Y samples: pixel x's Y is
 * byte 2x of its row); else 0 (a conversion a pixel: cr_frame_pixel). */
CR_HD static inline int cr_frame_gray_step(const cr_frame_geom *g) {
    if (g->channels != 1) return 0;
    if (g->format == CUDARL_PIXEL_YUYV) return 2;
    return g->format == CUDARL_PIXEL_GRAY8 || g->format == CUDARL_PIXEL_NV12 ? 1 : 0;
}

/* Sum_i wy(i) v(i, j) over the ni box rows from crop row i0 for crop columns j and j + dj of a
 * gray image whose pixels are single bytes `step` apart (cr_frame_gray_step), into t[0] and
 * t[1], in one pass (two loads in flight a row); wy0 and wyl the first and last rows' weights
 * (equal when ni is 1). */
CR_HD static inline void cr_frame_columns_gray(const cr_frame_geom *g, const uint8_t *frame,
                                               int step, int j, int dj, int i0, int ni,
                                               uint32_t wy0, uint32_t wyl, uint32_t t[2]) {
    const uint32_t H = (uint32_t)g->out_h, e0 = wy0 - H, e1 = ni > 1 ? wyl - H : 0u;
    const size_t pitch = g->pitch, last = (size_t)(ni - 1) * pitch;
    const uint8_t *p = frame + (size_t)(g->crop_y + i0) * pitch +
                       (size_t)(g->crop_x + j) * (size_t)step;
    const uint8_t *p2 = p + (ptrdiff_t)dj * step, *q = p;
    uint32_t s = 0, s2 = 0;
    CR_FRAME_UNROLL
    for (int k = 0; k < ni; k++, q += pitch) s += q[0], s2 += q[(ptrdiff_t)dj * step];
    t[0] = H * s + e0 * p[0] + e1 * p[last];
    t[1] = H * s2 + e0 * p2[0] + e1 * p2[last];
}

/* The same for any format and channels (cr_frame_pixel a pixel): t[0..channels). */
CR_HD static inline void cr_frame_column(const cr_frame_geom *g, const uint8_t *frame, int j,
                                         int i0, int ni, uint32_t wy0, uint32_t wyl,
                                         uint32_t t[3]) {
    const uint32_t H = (uint32_t)g->out_h, e0 = wy0 - H, e1 = ni > 1 ? wyl - H : 0u;
    const int x = g->crop_x + j, y0 = g->crop_y + i0;
    uint32_t s[3] = {0, 0, 0};
    for (int k = 0; k < ni; k++) {
        int v[3] = {0, 0, 0};
        cr_frame_pixel(g, frame, x, y0 + k, v);
        for (int c = 0; c < 3; c++) s[c] += (uint32_t)v[c]; /* past channels: 0 */
    }
    int f[3] = {0, 0, 0}, l[3] = {0, 0, 0};
    cr_frame_pixel(g, frame, x, y0, f);
    cr_frame_pixel(g, frame, x, y0 + ni - 1, l);
    for (int c = 0; c < 3; c++) t[c] = H * s[c] + e0 * (uint32_t)f[c] + e1 * (uint32_t)l[c];
}

/* Part `part` of `parts` of output pixel (ox, oy)'s box sums: Sum_j wx(j) t(j) over its crop
 * columns j0 + part, j0 + part + parts, ..., added to sum[0..channels) (sum[channels..2]
 * unchanged). The parts 0..parts-1 add up to cr_frame_box's sums exactly, in any order. */
CR_HD static inline void cr_frame_box_part(const cr_frame_geom *g, const uint8_t *frame, int ox,
                                           int oy, int part, int parts, uint64_t sum[3]) {
    int i0, ni, j0, nj;
    cr_frame_span(ox, g->out_w, g->crop_w, &j0, &nj);
    cr_frame_span(oy, g->out_h, g->crop_h, &i0, &ni);
    const uint32_t wy0 = cr_frame_weight(oy, g->out_h, g->crop_h, i0);
    const uint32_t wyl = cr_frame_weight(oy, g->out_h, g->crop_h, i0 + ni - 1);
    const int step = cr_frame_gray_step(g);
    if (step) { /* two columns a pass: j and j + parts (else j again, weighed 0) */
        uint64_t s = 0;
        for (int j = j0 + part; j < j0 + nj; j += 2 * parts) {
            const int two = j + parts < j0 + nj;
            uint32_t t[2];
            cr_frame_columns_gray(g, frame, step, j, two ? parts : 0, i0, ni, wy0, wyl, t);
            s += (uint64_t)cr_frame_weight(ox, g->out_w, g->crop_w, j) * t[0];
            if (two) s += (uint64_t)cr_frame_weight(ox, g->out_w, g->crop_w, j + parts) * t[1];
        }
        sum[0] += s;
        return;
    }
    for (int j = j0 + part; j < j0 + nj; j += parts) {
        const uint64_t wx = cr_frame_weight(ox, g->out_w, g->crop_w, j);
        uint32_t t[3];
        cr_frame_column(g, frame, j, i0, ni, wy0, wyl, t);
        for (int c = 0; c < 3; c++)
            if (c < g->channels) sum[c] += wx * t[c];
    }
}

/* A box's sums (cr_frame_box's, or its parts' added up) to the output pixel's values. */
CR_HD static inline void cr_frame_round(const cr_frame_geom *g, const uint64_t sum[3],
                                        uint8_t out[3]) {
    const uint64_t area = (uint64_t)g->crop_w * (uint64_t)g->crop_h;
    for (int c = 0; c < 3; c++)
        if (c < g->channels) out[c] = (uint8_t)((sum[c] + area / 2) / area);
}

/* The CPU reference of the op table's frame_to_obs: every output pixel of g from frame (host,
 * cr_frame_bytes(g)) into out (host, uint8 (channels, out_h, out_w), planar). */
void cr_cpu_frame_to_obs(const cr_frame_geom *g, const uint8_t *frame, uint8_t *out);

#ifdef __cplusplus
}
#endif
#endif
