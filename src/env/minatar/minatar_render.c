/* The MinAtar games drawn as MinAtar's own display (minatar.Environment.display_state) draws
 * them: each cell takes the colour of the last of its channels that is set (channel c of C, in
 * MinAtar's order, is colour c + 1 of seaborn's "cubehelix" palette of C colours: matplotlib's
 * cubehelix colormap at (c + 1) / (C + 1)), black where none is; here each cell is a 32x32
 * square. MinAtar shows a state for 50 ms (display_state's default): 20 frames a second. */
#include <math.h>

#include "env/minatar/minatar_common.h"
#include "env/render.h"

#define CELL 32
#define SIDE (CR_MINATAR_SIZE * CELL)

/* Colour k + 1 of the palette of n colours (0 <= k < n): matplotlib's "cubehelix" colormap
 * (Green 2011 with gamma 1, start 0.5, rotations -1.5, hue 1; a table of 256 entries, entry i at
 * i / 255) at x = (k + 1) / (n + 1), each channel clipped to [0, 1] and scaled to 0..255 as
 * matplotlib's colormaps give bytes (truncated). */
static cr_rgb cubehelix(int k, int n) {
    double x = (double)(k + 1) / (n + 1);
    int i = (int)(x * 256);
    if (i > 255) i = 255;
    double v = i / 255.0, amp = v * (1 - v) / 2, phi = 2 * 3.14159265358979323846 * (0.5 / 3 - 1.5 * v);
    double rgb[3] = {v + amp * (-0.14861 * cos(phi) + 1.78277 * sin(phi)),
                     v + amp * (-0.29227 * cos(phi) - 0.90649 * sin(phi)),
                     v + amp * (1.97294 * cos(phi))};
    uint8_t out[3];
    for (int j = 0; j < 3; j++) out[j] = (uint8_t)(fmin(fmax(rgb[j], 0), 1) * 255);
    return (cr_rgb){out[0], out[1], out[2]};
}

/* obs (C, 10, 10) of a MinAtar game into rgb (320, 320, 3). */
static void minatar_draw(const cudarl_env_def *def, const void *state, const void *obs,
                         uint8_t *rgb) {
    (void)state;
    const uint8_t *o = obs;
    const int n = def->obs_shape[0];
    cr_rgb palette[16] = {{0, 0, 0}};
    for (int k = 0; k < n && k < 15; k++) palette[k + 1] = cubehelix(k, n);
    for (int y = 0; y < CR_MINATAR_SIZE; y++)
        for (int x = 0; x < CR_MINATAR_SIZE; x++) {
            int top = 0; /* the last channel set, plus one */
            for (int c = 0; c < n && c < 15; c++)
                if (o[c * CR_MINATAR_CELLS + y * CR_MINATAR_SIZE + x]) top = c + 1;
            cr_rgb col = palette[top];
            for (int j = 0; j < CELL; j++)
                for (int i = 0; i < CELL; i++) {
                    uint8_t *p = rgb + ((size_t)(y * CELL + j) * SIDE + (size_t)(x * CELL + i)) * 3;
                    p[0] = col.r, p[1] = col.g, p[2] = col.b;
                }
        }
}

const cr_env_renderer cr_minatar_renderer = {SIDE, SIDE, 20, minatar_draw};
