/* The drawing of `cudarl plot` (plot_draw.h). */
#include <math.h>
#include <string.h>

#include "plot_draw.h"

void plot_put(plot_image *im, int x, int y, plot_rgb c) {
    if (x < 0 || y < 0 || x >= im->w || y >= im->h) return;
    uint8_t *p = im->rgb + ((size_t)y * (size_t)im->w + (size_t)x) * 3;
    p[0] = c.r, p[1] = c.g, p[2] = c.b;
}

void plot_rect(plot_image *im, int x0, int y0, int x1, int y1, plot_rgb c) {
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) plot_put(im, x, y, c);
}

static int inside(const int clip[4], int x, int y) {
    return x >= clip[0] && y >= clip[1] && x < clip[2] && y < clip[3];
}

/* Steps along the line one pixel at a time (the longer axis), putting a width x width square
 * centred on each step. Ends are rounded to pixels as floor(v): a point at y = 99.7 lies in
 * row 99. */
void plot_line(plot_image *im, double x0, double y0, double x1, double y1, int width,
               plot_rgb c, const int clip[4]) {
    if (!isfinite(x0) || !isfinite(y0) || !isfinite(x1) || !isfinite(y1)) return;
    double dx = x1 - x0, dy = y1 - y0;
    int steps = (int)fmin(ceil(fmax(fabs(dx), fabs(dy))), 1 << 16);
    int lo = -(width - 1) / 2, hi = width / 2;
    for (int k = 0; k <= steps; k++) {
        double t = steps ? (double)k / steps : 0;
        int x = (int)floor(x0 + t * dx), y = (int)floor(y0 + t * dy);
        for (int a = lo; a <= hi; a++)
            for (int b = lo; b <= hi; b++)
                if (inside(clip, x + a, y + b)) plot_put(im, x + a, y + b, c);
    }
}

void plot_band_column(plot_image *im, int x, double y0, double y1, plot_rgb c, double alpha,
                      const int clip[4]) {
    if (!isfinite(y0) || !isfinite(y1)) return;
    if (y0 > y1) {
        double t = y0;
        y0 = y1, y1 = t;
    }
    int a = (int)fmax(floor(y0), clip[1]), b = (int)fmin(floor(y1), clip[3] - 1);
    for (int y = a; y <= b; y++) {
        if (!inside(clip, x, y)) continue;
        uint8_t *p = im->rgb + ((size_t)y * (size_t)im->w + (size_t)x) * 3;
        p[0] = (uint8_t)lround(p[0] + alpha * (c.r - p[0]));
        p[1] = (uint8_t)lround(p[1] + alpha * (c.g - p[1]));
        p[2] = (uint8_t)lround(p[2] + alpha * (c.b - p[2]));
    }
}

static const uint8_t *glyph(char ch) {
    unsigned char u = (unsigned char)ch;
    return plot_font[u >= 32 && u < 127 ? u - 32 : '?' - 32];
}

int plot_text_width(const char *s, int scale) {
    size_t n = strlen(s);
    return n ? (int)n * (PLOT_GLYPH_W + 1) * scale - scale : 0;
}

int plot_text(plot_image *im, int x, int y, const char *s, int scale, plot_rgb c) {
    for (const char *p = s; *p; p++, x += (PLOT_GLYPH_W + 1) * scale) {
        const uint8_t *g = glyph(*p);
        for (int row = 0; row < PLOT_GLYPH_H; row++)
            for (int col = 0; col < PLOT_GLYPH_W; col++)
                if (g[row] >> (PLOT_GLYPH_W - 1 - col) & 1)
                    plot_rect(im, x + col * scale, y + row * scale, x + (col + 1) * scale,
                              y + (row + 1) * scale, c);
    }
    return plot_text_width(s, scale);
}

void plot_text_up(plot_image *im, int x, int y, const char *s, int scale, plot_rgb c) {
    for (const char *p = s; *p; p++, y -= (PLOT_GLYPH_W + 1) * scale) {
        const uint8_t *g = glyph(*p);
        for (int row = 0; row < PLOT_GLYPH_H; row++)
            for (int col = 0; col < PLOT_GLYPH_W; col++)
                if (g[row] >> (PLOT_GLYPH_W - 1 - col) & 1) {
                    /* glyph (col, row) -> image (x + row, y - col) */
                    int px = x + row * scale, py = y - (col + 1) * scale;
                    plot_rect(im, px, py, px + scale, py + scale, c);
                }
    }
}
