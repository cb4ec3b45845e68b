/* The canvas the env renderers draw on (render.h), and the lookup of an env's renderer. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "env/env.h"
#include "env/render.h"

const cr_env_renderer *cr_env_renderer_find(const char *id) {
    const cr_env_info *info = cr_env_info_find(id);
    return info && (info->caps & CR_ENV_RENDER) ? info->render : NULL;
}

static void put(cr_canvas *cv, int i, int j, cr_rgb c) {
    if (i < 0 || j < 0 || i >= cv->w || j >= cv->h) return;
    uint8_t *p = cv->rgb + ((size_t)j * (size_t)cv->w + (size_t)i) * 3;
    p[0] = c.r, p[1] = c.g, p[2] = c.b;
}

/* v as a pixel index in -1 .. n (a coordinate outside the image, or NaN, lands just outside). */
static int clamp_px(double v, int n) {
    return v >= -1 && v <= n ? (int)v : v > n ? n : -1;
}

void cr_canvas_fill(cr_canvas *cv, cr_rgb c) {
    for (int j = 0; j < cv->h; j++)
        for (int i = 0; i < cv->w; i++) put(cv, i, j, c);
}

/* Row by row: a convex polygon meets line y = j in one segment, from the least to the greatest x
 * where an edge (closed, so a vertex and a horizontal edge count) meets that line. */
void cr_canvas_polygon(cr_canvas *cv, const double *xy, int n, cr_rgb c) {
    double ymin = xy[1], ymax = xy[1];
    for (int k = 1; k < n; k++) ymin = fmin(ymin, xy[2 * k + 1]), ymax = fmax(ymax, xy[2 * k + 1]);
    int j0 = clamp_px(ceil(ymin), cv->h), j1 = clamp_px(floor(ymax), cv->h);
    for (int j = j0; j <= j1; j++) {
        double y = j, lo = INFINITY, hi = -INFINITY;
        for (int k = 0; k < n; k++) {
            double xa = xy[2 * k], ya = xy[2 * k + 1];
            double xb = xy[2 * ((k + 1) % n)], yb = xy[2 * ((k + 1) % n) + 1];
            if (!((ya <= y && y <= yb) || (yb <= y && y <= ya))) continue;
            double x0 = ya == yb ? xa : xa + (y - ya) * (xb - xa) / (yb - ya);
            double x1 = ya == yb ? xb : x0;
            lo = fmin(lo, fmin(x0, x1)), hi = fmax(hi, fmax(x0, x1));
        }
        if (lo > hi) continue;
        int i0 = clamp_px(ceil(lo), cv->w), i1 = clamp_px(floor(hi), cv->w);
        for (int i = i0; i <= i1; i++) put(cv, i, j, c);
    }
}

void cr_canvas_circle(cr_canvas *cv, double cx, double cy, double r, cr_rgb c) {
    int j1 = clamp_px(ceil(cy + r), cv->h), i1 = clamp_px(ceil(cx + r), cv->w);
    for (int j = clamp_px(floor(cy - r), cv->h); j <= j1; j++)
        for (int i = clamp_px(floor(cx - r), cv->w); i <= i1; i++)
            if ((i - cx) * (i - cx) + (j - cy) * (j - cy) <= r * r) put(cv, i, j, c);
}

void cr_canvas_line(cr_canvas *cv, double x0, double y0, double x1, double y1, cr_rgb c) {
    double dx = x1 - x0, dy = y1 - y0;
    int steps = (int)ceil(fmax(fabs(dx), fabs(dy)));
    if (steps > 1 << 16) steps = 1 << 16; /* a line far outside the image draws nothing more */
    for (int k = 0; k <= steps; k++) {
        double t = steps ? (double)k / steps : 0;
        put(cv, (int)lround(x0 + t * dx), (int)lround(y0 + t * dy), c);
    }
}

void cr_canvas_flip(cr_canvas *cv) {
    size_t row = (size_t)cv->w * 3;
    uint8_t tmp[4096 * 3];
    for (int j = 0; j < cv->h / 2 && row <= sizeof tmp; j++) {
        uint8_t *a = cv->rgb + (size_t)j * row, *b = cv->rgb + (size_t)(cv->h - 1 - j) * row;
        memcpy(tmp, a, row), memcpy(a, b, row), memcpy(b, tmp, row);
    }
}

void cr_canvas_gray_scaled(const uint8_t *gray, int gh, int gw, int k, uint8_t *rgb) {
    size_t w = (size_t)gw * (size_t)k;
    for (int y = 0; y < gh * k; y++)
        for (size_t x = 0; x < w; x++) {
            uint8_t v = gray[(size_t)(y / k) * (size_t)gw + x / (size_t)k];
            uint8_t *p = rgb + ((size_t)y * w + x) * 3;
            p[0] = p[1] = p[2] = v;
        }
}
