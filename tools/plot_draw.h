/* The drawing of `cudarl plot`: an RGB image, lines, bands, rectangles and text in a 5x7 bitmap
 * font (plot_font.c), in image coordinates (x to the right, y down, pixel (x, y) the square
 * [x, x+1) x [y, y+1)). */
#ifndef CUDARL_TOOLS_PLOT_DRAW_H
#define CUDARL_TOOLS_PLOT_DRAW_H

#include <stdint.h>

typedef struct plot_rgb {
    uint8_t r, g, b;
} plot_rgb;

typedef struct plot_image {
    uint8_t *rgb; /* (h, w, 3) */
    int w, h;
} plot_image;

#define PLOT_GLYPH_W 5
#define PLOT_GLYPH_H 9
extern const uint8_t plot_font[95][PLOT_GLYPH_H]; /* ' ' .. '~'; other characters draw as '?' */

/* Pixel (x, y) set to c; outside the image nothing. */
void plot_put(plot_image *im, int x, int y, plot_rgb c);
/* Pixels [x0, x1) x [y0, y1) set to c. */
void plot_rect(plot_image *im, int x0, int y0, int x1, int y1, plot_rgb c);
/* A line `width` px wide (1 or more) from (x0, y0) to (x1, y1), clipped to the rectangle clip
 * (x0, y0, x1, y1). */
void plot_line(plot_image *im, double x0, double y0, double x1, double y1, int width,
               plot_rgb c, const int clip[4]);
/* Column x from row y0 to row y1 (either order) blended with c at opacity alpha (0..1), clipped. */
void plot_band_column(plot_image *im, int x, double y0, double y1, plot_rgb c, double alpha,
                      const int clip[4]);
/* Text at (x, y) (its top-left), each font pixel a scale x scale square; returns its width. */
int plot_text(plot_image *im, int x, int y, const char *s, int scale, plot_rgb c);
/* Width in pixels of s at scale. */
int plot_text_width(const char *s, int scale);
/* Text turned a quarter anticlockwise (reads upwards) with its bottom-left at (x, y). */
void plot_text_up(plot_image *im, int x, int y, const char *s, int scale, plot_rgb c);

#endif
