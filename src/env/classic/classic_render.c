/* The classic-control envs drawn as Gymnasium's render_mode="rgb_array" draws them (the geometry
 * and colours of gymnasium/envs/classic_control/{acrobot,mountain_car,continuous_mountain_car,
 * pendulum}.py), on render.h's canvas: solid shapes without Gymnasium's anti-aliased outlines,
 * and Pendulum without the arrow image that shows the last torque (which is not in the state). */
#include <math.h>

#include "env/classic/acrobot_step.h"
#include "env/classic/mountain_car_continuous_step.h"
#include "env/classic/mountain_car_step.h"
#include "env/classic/pendulum_step.h"
#include "env/render.h"

#define PI 3.14159265358979323846

static const cr_rgb WHITE = {255, 255, 255}, BLACK = {0, 0, 0};

/* Rectangle (l, b, r, t) turned by `angle` (counter-clockwise for a positive angle, as pygame's
 * Vector2.rotate_rad) and moved by (x, y), filled. */
static void turned_box(cr_canvas *cv, double l, double b, double r, double t, double angle,
                       double x, double y, cr_rgb c) {
    const double corners[8] = {l, b, l, t, r, t, r, b};
    const double co = cos(angle), si = sin(angle);
    double xy[8];
    for (int k = 0; k < 4; k++) {
        double px = corners[2 * k], py = corners[2 * k + 1];
        xy[2 * k] = px * co - py * si + x;
        xy[2 * k + 1] = px * si + py * co + y;
    }
    cr_canvas_polygon(cv, xy, 4, c);
}

/* Acrobot-v1: 500x500, 2.2 m from the centre to each edge; the target line at 1 m above the
 * pivot, two links 0.2 m thick (0, 204, 204) with a joint disc (204, 204, 0) at the start of
 * each. */
static void acrobot_draw(const cudarl_env_def *def, const void *state, const void *obs,
                         uint8_t *rgb) {
    (void)def, (void)obs;
    const double *s = ((const cr_acrobot_state *)state)->s;
    const double dim = 500, l1 = CR_AB_L1, l2 = 1.0 /* LINK_LENGTH_2 */;
    const double scale = dim / (2 * (l1 + l2 + 0.2)), offset = dim / 2;
    cr_canvas cv = {rgb, 500, 500};
    cr_canvas_fill(&cv, WHITE);
    /* the joints' (x, y): Gymnasium's p1 with its coordinates swapped */
    const double joints[4] = {0, 0, l1 * sin(s[0]) * scale, -l1 * cos(s[0]) * scale};
    const double thetas[2] = {s[0] - PI / 2, s[0] + s[1] - PI / 2};
    const double lengths[2] = {l1 * scale, l2 * scale};
    cr_canvas_line(&cv, -2.2 * scale + offset, 1 * scale + offset, 2.2 * scale + offset,
                   1 * scale + offset, BLACK);
    for (int k = 0; k < 2; k++) {
        double x = joints[2 * k] + offset, y = joints[2 * k + 1] + offset;
        turned_box(&cv, 0, -0.1 * scale, lengths[k], 0.1 * scale, thetas[k], x, y,
                   (cr_rgb){0, 204, 204});
        cr_canvas_circle(&cv, (int)x, (int)y, (int)(0.1 * scale), (cr_rgb){204, 204, 0});
    }
    cr_canvas_flip(&cv);
}

/* MountainCar-v0 and MountainCarContinuous-v0: 600x400, the track y = sin(3 x) * 0.45 + 0.55 as
 * 100 points from -1.2 to 0.6, the car a black 40x20 px box 10 px above it, tilted by
 * cos(3 x), with two grey wheels of radius 8; a flag pole at the goal with a yellow pennant. */
static void mountain_car_draw_at(double pos, double goal, uint8_t *rgb) {
    const double min_pos = CR_MC_MIN_POSITION, max_pos = CR_MC_MAX_POSITION;
    const double scale = 600 / (max_pos - min_pos), car_w = 40, car_h = 20, clearance = 10;
    cr_canvas cv = {rgb, 600, 400};
    cr_canvas_fill(&cv, WHITE);
    double px = 0, py = 0;
    for (int k = 0; k < 100; k++) {
        double xs = min_pos + (max_pos - min_pos) * k / 99.0;
        double x = (xs - min_pos) * scale, y = (sin(3 * xs) * 0.45 + 0.55) * scale;
        if (k) cr_canvas_line(&cv, px, py, x, y, BLACK);
        px = x, py = y;
    }
    const double angle = cos(3 * pos), cx = (pos - min_pos) * scale;
    const double cy = clearance + (sin(3 * pos) * 0.45 + 0.55) * scale;
    turned_box(&cv, -car_w / 2, 0, car_w / 2, car_h, angle, cx, cy, BLACK);
    for (int k = 0; k < 2; k++) {
        double wx = k ? -car_w / 4 : car_w / 4;
        cr_canvas_circle(&cv, (int)(wx * cos(angle) + cx), (int)(wx * sin(angle) + cy),
                         (int)(car_h / 2.5), (cr_rgb){128, 128, 128});
    }
    const int flag_x = (int)((goal - min_pos) * scale);
    const int flag_y1 = (int)((sin(3 * goal) * 0.45 + 0.55) * scale), flag_y2 = flag_y1 + 50;
    cr_canvas_line(&cv, flag_x, flag_y1, flag_x, flag_y2, BLACK);
    const double pennant[6] = {flag_x, flag_y2, flag_x, flag_y2 - 10, flag_x + 25, flag_y2 - 5};
    cr_canvas_polygon(&cv, pennant, 3, (cr_rgb){204, 204, 0});
    cr_canvas_flip(&cv);
}

static void mountain_car_draw(const cudarl_env_def *def, const void *state, const void *obs,
                              uint8_t *rgb) {
    (void)def, (void)obs;
    mountain_car_draw_at(((const cr_mountain_car_state *)state)->s[0], CR_MC_GOAL_POSITION, rgb);
}

static void mountain_car_continuous_draw(const cudarl_env_def *def, const void *state,
                                         const void *obs, uint8_t *rgb) {
    (void)def, (void)obs;
    mountain_car_draw_at(((const cr_mountain_car_continuous_state *)state)->s[0],
                         CR_MCC_GOAL_POSITION, rgb);
}

/* Pendulum-v1: 500x500, 2.2 m from the centre to each edge; a rod of 1 m and 0.2 m thick
 * (204, 77, 77) from the centre at angle th + pi/2 (th = 0 points up), round at both ends, and
 * a black axle of radius 0.05 m. */
static void pendulum_draw(const cudarl_env_def *def, const void *state, const void *obs,
                          uint8_t *rgb) {
    (void)def, (void)obs;
    const double th = ((const cr_pendulum_state *)state)->s[0];
    const double dim = 500, scale = dim / (2 * 2.2), offset = 250;
    const double rod_len = 1 * scale, rod_w = 0.2 * scale;
    const cr_rgb rod = {204, 77, 77};
    cr_canvas cv = {rgb, 500, 500};
    cr_canvas_fill(&cv, WHITE);
    turned_box(&cv, 0, -rod_w / 2, rod_len, rod_w / 2, th + PI / 2, offset, offset, rod);
    cr_canvas_circle(&cv, offset, offset, (int)(rod_w / 2), rod);
    const double a = th + PI / 2;
    cr_canvas_circle(&cv, (int)(rod_len * cos(a) + offset), (int)(rod_len * sin(a) + offset),
                     (int)(rod_w / 2), rod);
    cr_canvas_circle(&cv, offset, offset, (int)(0.05 * scale), BLACK);
    cr_canvas_flip(&cv);
}

const cr_env_renderer cr_acrobot_renderer = {500, 500, 15, acrobot_draw};
const cr_env_renderer cr_mountain_car_renderer = {600, 400, 30, mountain_car_draw};
const cr_env_renderer cr_mountain_car_continuous_renderer = {600, 400, 30,
                                                             mountain_car_continuous_draw};
const cr_env_renderer cr_pendulum_renderer = {500, 500, 30, pendulum_draw};
