/* Envs drawn for people: an env whose registry line names a renderer (CR_ENV_RENDER) can be
 * drawn as an RGB image, for videos of a policy (`cudarl eval --video`). The renderers draw
 * what Gymnasium's render_mode="rgb_array" shows where the env is Gymnasium's (CartPole-v1 at
 * 600x400, the classic-control envs), an image env's newest frame scaled up (CartPolePixels-v1),
 * or MinAtar's channels in the colors of MinAtar's own display.
 *
 * The canvas below is the little raster kit they share: solid fills of polygons, circles,
 * lines, with a pixel taken as a point (no anti-aliasing: a render has a handful of colors, which
 * a GIF's palette holds exactly). */
#ifndef CUDARL_ENV_RENDER_H
#define CUDARL_ENV_RENDER_H

#include <stdint.h>

#include "cudarl.h"

/* How an env is drawn. */
typedef struct cr_env_renderer {
    int width, height; /* of the image, pixels (even: video encoders want that) */
    int fps;           /* frames per second of the env's time (Gymnasium's metadata
                        * render_fps: CartPole 50) */
    /* Draws env `def`'s state, as the reset or step that wrote obs (the def's observation of
     * that state) left it, into rgb (height, width, 3), rows top to bottom. Reads only. */
    void (*draw)(const cudarl_env_def *def, const void *state, const void *obs, uint8_t *rgb);
} cr_env_renderer;

/* The renderers of the built-in envs, named by their registry lines (env.c). */
extern const cr_env_renderer cr_cartpole_renderer;        /* CartPole-v1 */
extern const cr_env_renderer cr_cartpole_pixels_renderer; /* CartPolePixels-v1 */
extern const cr_env_renderer cr_minatar_renderer;         /* the five MinAtar games */
extern const cr_env_renderer cr_acrobot_renderer;         /* Acrobot-v1 */
extern const cr_env_renderer cr_mountain_car_renderer;    /* MountainCar-v0 */
extern const cr_env_renderer cr_mountain_car_continuous_renderer;
extern const cr_env_renderer cr_pendulum_renderer;        /* Pendulum-v1 */

/* CartPole state s (x, x_dot, theta, theta_dot) drawn as cr_cartpole_renderer draws it:
 * rgb (400, 600, 3). */
void cr_cartpole_draw(const double s[4], uint8_t *rgb);

/* The renderer of registered env `id`, or NULL when it has none (or is not registered). */
const cr_env_renderer *cr_env_renderer_find(const char *id);

/* ---- the canvas --------------------------------------------------------------------------- */

/* An RGB image (h, w, 3) drawn in Gymnasium's (pygame's) surface coordinates: pixel (i, j) is
 * the point (i, j), x to the right, y up from the bottom row when the image is flipped at the
 * end (cr_canvas_flip), as Gymnasium flips its surface. */
typedef struct cr_canvas {
    uint8_t *rgb; /* (h, w, 3) */
    int w, h;
} cr_canvas;

typedef struct cr_rgb {
    uint8_t r, g, b;
} cr_rgb;

/* Every pixel `c`. */
void cr_canvas_fill(cr_canvas *cv, cr_rgb c);
/* The pixels inside convex polygon xy (n points (x, y), n >= 3, either orientation), its
 * edges included. */
void cr_canvas_polygon(cr_canvas *cv, const double *xy, int n, cr_rgb c);
/* The pixels within r of (cx, cy). */
void cr_canvas_circle(cr_canvas *cv, double cx, double cy, double r, cr_rgb c);
/* A 1-px line from (x0, y0) to (x1, y1), both ends included. */
void cr_canvas_line(cr_canvas *cv, double x0, double y0, double x1, double y1, cr_rgb c);
/* Turns the image upside down (row j becomes row h - 1 - j). */
void cr_canvas_flip(cr_canvas *cv);
/* Draws `gray` (gh, gw) scaled up `k` times into rgb (gh * k, gw * k, 3). */
void cr_canvas_gray_scaled(const uint8_t *gray, int gh, int gw, int k, uint8_t *rgb);

#endif
