/* CartPole drawn as one 84x84 grayscale frame: the per-pixel definition that the CPU renderer
 * (cartpole_pixels.c) and the CUDA kernel (cartpole_pixels.cu) both call, so the two write the
 * same bytes for the same state.
 *
 * Geometry (image rows grow downwards; pixel (row, col) covers [col, col+1) x [row, row+1)). The
 * scene below defines an intensity at every point; a pixel's intensity is the mean over an 8 x 8
 * grid of points inside it (at (col + (i + 0.5) / 8, row + (j + 0.5) / 8)), rounded: the frame
 * is anti-aliased, as a downscaled render would be, so an edge's position shows to 1/8 px. With
 * one point per pixel (its centre) a cart moving at 0.5 m/s, 0.15 px per step, changes the frame
 * once in 7 steps, and a 4-frame stack seldom shows any motion at all, so PPO learns slowly and
 * its greedy policy falls well short of 500 (bench/RESULTS.md, pixels).
 *   scale   15 px per metre. Gymnasium's renderer maps the world width 4.8 m (|x| <= 2.4) onto the
 *           screen, so a cart at the edge is half off-screen; 84 px / 4.8 m would be 17.5 px/m.
 *           Here the whole track, the cart's half width (0.2 m) and a pole leaning 12 degrees at
 *           the edge must stay in the frame: 84 / 15 = 5.6 m shows |x| <= 2.8 m. x = 0 is column
 *           boundary 42 (the frame's middle).
 *   track   row 60, every column, intensity 80.
 *   cart    a filled rectangle 6 px wide (2 x 0.2 m, Gymnasium's 50 px at 125 px/m) and 4 px high
 *           (Gymnasium's 0.24 m, rounded up), sitting on the track: rows 56..59, columns whose
 *           points x in [cx - 3, cx + 3) with cx = 42 + 15 x; intensity 255.
 *   pole    a thick segment from the cart's top centre (cx, 56) of length 15 px (Gymnasium's
 *           2 * length = 1 m) at angle theta from the vertical, leaning right for theta > 0 (as
 *           Gymnasium draws it): the points within 1 px of the axis (2 px thick) and between
 *           the pivot and the tip; intensity 160, drawn over the cart.
 *   other   0.
 * A cart at x = 2.4 with its pole leaning 12 degrees right covers columns 75..81 and rows
 * 41..59 (at x = 2.45, 13 degrees, a little past where episodes end: columns 76..82); a
 * pole pointing down (theta = pi) reaches row 70. Pixels are evaluated only inside the frame, so
 * a cart or pole beyond its edge is clipped, never wrapped. Only the pixels near the cart and the
 * pole (the pose's box) read 64 points; the others, background or track throughout, read one.
 *
 * Reproducibility: the CPU and the GPU must write identical bytes, so after two exact conversions
 * everything is integer arithmetic, which C and CUDA define identically.
 *   1. x (metres) and theta (radians) become fixed point by a multiplication with a power of two
 *      (exact in IEEE double: no rounding, nothing an FMA could fuse, no flag changes it) and a
 *      conversion to int64 that truncates toward zero (defined the same by C and CUDA). Each is
 *      clamped first so the conversion cannot overflow: |x| <= 64 m (960 px, far outside the
 *      frame), |theta| <= 2^20 rad; NaN counts as 0.
 *   2. sin and cos of theta are not libm's (glibc's and CUDA's differ in the last ulp, which
 *      would move a pixel whenever a pole edge grazes a pixel centre) nor a double polynomial
 *      (correct only as long as no compiler contracts it into FMAs), but an integer one: theta
 *      is reduced modulo 2 pi in Q32 radians, folded into the first quadrant, and sin and cos
 *      of the remainder are Taylor polynomials (to x^11 and x^12) evaluated by Horner in Q30
 *      unsigned arithmetic; the quadrant's signs and swap give sin and cos of theta in Q30,
 *      within 2e-7 of the true values.
 *   3. The point test compares 64-bit integer dot and cross products (Q16 pixels x Q30) with
 *      integer bounds; every intermediate stays below 2^58. The sample points are exact in Q16
 *      (steps of 2^13), and a pixel's mean is an integer sum and division.
 * The state's bytes are read as doubles on both sides (the caller passes the same doubles), so
 * the frame is a pure function of (x, theta). */
#ifndef CUDARL_CARTPOLE_PIXELS_RENDER_H
#define CUDARL_CARTPOLE_PIXELS_RENDER_H

#include <stdint.h>

#include "core/philox.h" /* CR_HD */

#define CR_CARTPOLE_PIXELS_SIDE 84 /* frame height and width */
#define CR_CARTPOLE_PIXELS_FRAME_BYTES (CR_CARTPOLE_PIXELS_SIDE * CR_CARTPOLE_PIXELS_SIDE)

/* Intensities. */
#define CR_CPIX_BACKGROUND 0
#define CR_CPIX_TRACK 80
#define CR_CPIX_POLE 160
#define CR_CPIX_CART 255

/* Geometry in pixels (see above); Q16 means units of 1/65536 px. */
#define CR_CPIX_PX_PER_M 15
#define CR_CPIX_CENTRE_COL 42     /* column boundary of x = 0 */
#define CR_CPIX_TRACK_ROW 60
#define CR_CPIX_CART_TOP_ROW 56   /* rows 56 .. 59; the pole's pivot is at y = 56.0 */
#define CR_CPIX_CART_HALF_W 3     /* px */
#define CR_CPIX_POLE_LEN 15       /* px */
#define CR_CPIX_POLE_HALF_W 1     /* px */
#define CR_CPIX_Q16 ((int64_t)1 << 16)
#define CR_CPIX_Q30 ((int64_t)1 << 30)
#define CR_CPIX_SUB 8             /* sample points per pixel side: 64 per pixel */

/* Clamps of the two inputs before their fixed-point conversion. */
#define CR_CPIX_X_LIMIT 64.0                 /* metres */
#define CR_CPIX_THETA_LIMIT 1048576.0        /* 2^20 radians */
/* pi/2 in Q32 radians, round(pi / 2 * 2^32); a full turn is taken as exactly 4 of them (an error
 * of 1e-9 rad per turn). */
#define CR_CPIX_HALF_PI_Q32 INT64_C(6746518852)

/* A state as the pixel test reads it: the cart's centre column in Q16 px and sin, cos of theta
 * in Q30. */
typedef struct cr_cartpole_pixels_pose {
    int64_t cart_x; /* Q16 px */
    int64_t sin_q30, cos_q30;
    /* the pixels the cart or the pole may touch, with a margin of 2 px: columns box[0]..box[1],
     * rows box[2]..box[3] (may reach outside the frame) */
    int64_t box[4];
} cr_cartpole_pixels_pose;

/* v clamped to [-limit, limit] (NaN to 0) times `pow2` (a power of two: exact), truncated toward
 * zero. */
CR_HD static inline int64_t cr_cpix_fixed(double v, double limit, double pow2) {
    if (v != v) v = 0.0;
    if (v > limit) v = limit;
    if (v < -limit) v = -limit;
    return (int64_t)(v * pow2);
}

/* sin (s) and cos (c) in Q30 of r in [0, pi/2] (Q30 radians, unsigned): Horner forms of
 *   sin r = r (1 - r^2/6 (1 - r^2/20 (1 - r^2/42 (1 - r^2/72 (1 - r^2/110)))))
 *   cos r = 1 - r^2/2 (1 - r^2/12 (1 - r^2/30 (1 - r^2/56 (1 - r^2/90 (1 - r^2/132)))))
 * Every bracket stays in (0, 1] on the interval, so unsigned arithmetic never wraps; only the
 * outermost step of cos can go a few units below 0 near pi/2 and is clamped. Products stay below
 * 2^62 (r^2 < 2.5 * 2^30, brackets <= 2^30). */
CR_HD static inline void cr_cpix_sincos_quadrant(uint64_t r, uint64_t *s, uint64_t *c) {
    const uint64_t one = (uint64_t)CR_CPIX_Q30;
    uint64_t r2 = (r * r) >> 30;
    uint64_t t = one - r2 / 110;
    t = one - ((r2 * t) >> 30) / 72;
    t = one - ((r2 * t) >> 30) / 42;
    t = one - ((r2 * t) >> 30) / 20;
    t = one - ((r2 * t) >> 30) / 6;
    *s = (r * t) >> 30;
    uint64_t u = one - r2 / 132;
    u = one - ((r2 * u) >> 30) / 90;
    u = one - ((r2 * u) >> 30) / 56;
    u = one - ((r2 * u) >> 30) / 30;
    u = one - ((r2 * u) >> 30) / 12;
    uint64_t half = (r2 * u) >> 31; /* r^2/2 (...) */
    *c = half >= one ? 0 : one - half;
}

/* sin and cos of theta (radians) in Q30, the same integers on the host and the device. */
CR_HD static inline void cr_cartpole_pixels_sincos(double theta, int64_t *sin_q30,
                                                   int64_t *cos_q30) {
    const int64_t quarter = CR_CPIX_HALF_PI_Q32, turn = 4 * CR_CPIX_HALF_PI_Q32;
    int64_t a = cr_cpix_fixed(theta, CR_CPIX_THETA_LIMIT, 4294967296.0) % turn; /* Q32 rad */
    if (a < 0) a += turn;
    int q = (int)(a / quarter); /* 0 .. 3 */
    uint64_t s, c;
    cr_cpix_sincos_quadrant((uint64_t)(a - q * quarter) >> 2, &s, &c);
    int64_t si = (int64_t)s, ci = (int64_t)c;
    switch (q) {
    case 0: *sin_q30 = si, *cos_q30 = ci; break;
    case 1: *sin_q30 = ci, *cos_q30 = -si; break;
    case 2: *sin_q30 = -si, *cos_q30 = -ci; break;
    default: *sin_q30 = -ci, *cos_q30 = si; break;
    }
}

/* floor(v / 2^16) without relying on how >> treats negative numbers */
CR_HD static inline int64_t cr_cpix_floor_px(int64_t v) {
    return v >= 0 ? v / CR_CPIX_Q16 : -((-v + CR_CPIX_Q16 - 1) / CR_CPIX_Q16);
}

/* The pose of state (x metres, theta radians): the one conversion from doubles. */
CR_HD static inline cr_cartpole_pixels_pose cr_cartpole_pixels_pose_of(double x, double theta) {
    cr_cartpole_pixels_pose p;
    int64_t x_q16 = cr_cpix_fixed(x, CR_CPIX_X_LIMIT, 65536.0); /* Q16 metres */
    p.cart_x = CR_CPIX_CENTRE_COL * CR_CPIX_Q16 + CR_CPIX_PX_PER_M * x_q16;
    cr_cartpole_pixels_sincos(theta, &p.sin_q30, &p.cos_q30);
    /* the pole's tip, Q16 px: 15 px times sin, cos in Q30 is (15 sin) / 2^14 in Q16 */
    const int64_t pivot_y = CR_CPIX_CART_TOP_ROW * CR_CPIX_Q16;
    int64_t tip_x = p.cart_x + CR_CPIX_POLE_LEN * p.sin_q30 / (CR_CPIX_Q30 / CR_CPIX_Q16);
    int64_t tip_y = pivot_y - CR_CPIX_POLE_LEN * p.cos_q30 / (CR_CPIX_Q30 / CR_CPIX_Q16);
    int64_t lo_x = tip_x < p.cart_x ? tip_x : p.cart_x, hi_x = tip_x < p.cart_x ? p.cart_x : tip_x;
    int64_t lo_y = tip_y < pivot_y ? tip_y : pivot_y;
    int64_t hi_y = tip_y > CR_CPIX_TRACK_ROW * CR_CPIX_Q16 ? tip_y : CR_CPIX_TRACK_ROW * CR_CPIX_Q16;
    const int64_t margin = (CR_CPIX_CART_HALF_W + 2) * CR_CPIX_Q16; /* >= pole half width + 2 */
    p.box[0] = cr_cpix_floor_px(lo_x - margin);
    p.box[1] = cr_cpix_floor_px(hi_x + margin);
    p.box[2] = cr_cpix_floor_px(lo_y - margin);
    p.box[3] = cr_cpix_floor_px(hi_y + margin);
    return p;
}

/* Intensity at point (px, py) of the frame of pose `p`, both in Q16 px (the frame's top-left
 * corner is (0, 0)): the layers as the header's comment lists them, the pole over the cart over
 * the track. */
CR_HD static inline int cr_cartpole_pixels_point(const cr_cartpole_pixels_pose *p, int64_t px,
                                                 int64_t py) {
    /* the point relative to the pivot (the cart's top centre), Q16 px */
    int64_t dx = px - p->cart_x;
    int64_t dy = py - CR_CPIX_CART_TOP_ROW * CR_CPIX_Q16;
    /* along and across the pole's axis u = (sin, -cos) (up for theta = 0), Q46 px:
     * |dx|, |dy| < 2^26 (the cart is clamped to 960 px off the frame) and |sin|, |cos| <= 2^30,
     * so each product stays below 2^56 and each sum below 2^58 */
    int64_t along = dx * p->sin_q30 - dy * p->cos_q30;
    int64_t across = dx * p->cos_q30 + dy * p->sin_q30;
    const int64_t len = CR_CPIX_POLE_LEN * CR_CPIX_Q16 * CR_CPIX_Q30;
    const int64_t half_w = CR_CPIX_POLE_HALF_W * CR_CPIX_Q16 * CR_CPIX_Q30;
    if (along >= 0 && along <= len && across >= -half_w && across <= half_w) return CR_CPIX_POLE;
    if (py >= CR_CPIX_CART_TOP_ROW * CR_CPIX_Q16 && py < CR_CPIX_TRACK_ROW * CR_CPIX_Q16 &&
        dx >= -CR_CPIX_CART_HALF_W * CR_CPIX_Q16 && dx < CR_CPIX_CART_HALF_W * CR_CPIX_Q16)
        return CR_CPIX_CART;
    if (py >= CR_CPIX_TRACK_ROW * CR_CPIX_Q16 && py < (CR_CPIX_TRACK_ROW + 1) * CR_CPIX_Q16)
        return CR_CPIX_TRACK;
    return CR_CPIX_BACKGROUND;
}

/* Intensity of pixel (row, col), both in [0, 84), of the frame of pose `p`: the mean of the
 * intensities at the pixel's CR_CPIX_SUB x CR_CPIX_SUB sample points, rounded to nearest. A pixel
 * the cart and pole cannot reach (outside p->box) is background or track throughout, so its
 * centre alone is read. */
CR_HD static inline uint8_t cr_cartpole_pixels_shade(const cr_cartpole_pixels_pose *p, int row,
                                                     int col) {
    int64_t x0 = (int64_t)col * CR_CPIX_Q16, y0 = (int64_t)row * CR_CPIX_Q16;
    if (col < p->box[0] || col > p->box[1] || row < p->box[2] || row > p->box[3])
        return (uint8_t)cr_cartpole_pixels_point(p, x0 + CR_CPIX_Q16 / 2, y0 + CR_CPIX_Q16 / 2);
    const int64_t step = CR_CPIX_Q16 / CR_CPIX_SUB; /* exact: CR_CPIX_SUB is a power of two */
    int sum = 0;
    for (int j = 0; j < CR_CPIX_SUB; j++)
        for (int i = 0; i < CR_CPIX_SUB; i++)
            sum += cr_cartpole_pixels_point(p, x0 + i * step + step / 2, y0 + j * step + step / 2);
    return (uint8_t)((sum + CR_CPIX_SUB * CR_CPIX_SUB / 2) / (CR_CPIX_SUB * CR_CPIX_SUB));
}

#endif
