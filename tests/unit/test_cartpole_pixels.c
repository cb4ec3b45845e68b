/* CartPolePixels-v1 on the CPU: its def in the registry; the integer sin/cos against libm; the
 * scene's geometry, sampled at pixel centres (the cart's pixels where x puts them, moving right
 * as x grows, the pole's pixels leaning the way theta says at the length it should have,
 * everything of an in-episode state inside the frame, only the four intensities); the
 * anti-aliased frame (each pixel the rounded mean of its 64 points, counted here without the
 * renderer's shortcut; the cart's position and the pole's angle readable to a fraction of a
 * pixel, where centre sampling cannot tell them); and the env through the pool against
 * CartPole-v1's batch (cr_cartpole_step) over 5,000 steps with terminations and truncations: the
 * float64 states bit for bit, rewards and flags, and the frame stack (shifted by one frame per
 * step, padded with the first frame on reset, the final observation the old stack plus the last
 * frame). A few golden frame checksums pin the drawing against unnoticed changes. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "env/cartpole/cartpole.h"
#include "env/cartpole_pixels/cartpole_pixels.h"
#include "env/cartpole/cartpole_step.h"
#include "env/env.h"
#include "env/env_pool.h"

#define SIDE CR_CARTPOLE_PIXELS_SIDE
#define FRAME CR_CARTPOLE_PIXELS_FRAME_BYTES
#define STACK CR_CARTPOLE_PIXELS_STACK
#define PI 3.14159265358979323846
#define DEG (PI / 180.0)
/* px by which the fixed-point conversion of x (to 1/65536 m, toward zero) may move the cart */
#define X_QUANTUM ((double)CR_CPIX_PX_PER_M / 65536)

/* What a frame shows: counts and centroids (pixel centres) of the cart's and the pole's pixels. */
typedef struct frame_stats {
    int cart, pole, track, other;  /* pixels of each intensity; other: none of the four */
    double cart_col, cart_row;     /* centroid of the cart's pixels */
    double pole_col, pole_row;     /* centroid of the pole's pixels */
    int cart_row_min, cart_row_max;
    int pole_col_min, pole_col_max, pole_row_min, pole_row_max;
} frame_stats;

static frame_stats stats_of(const uint8_t *f) {
    frame_stats s = {0};
    s.cart_row_min = s.pole_col_min = s.pole_row_min = SIDE;
    s.cart_row_max = s.pole_col_max = s.pole_row_max = -1;
    for (int r = 0; r < SIDE; r++)
        for (int c = 0; c < SIDE; c++) {
            uint8_t v = f[r * SIDE + c];
            if (v == CR_CPIX_CART) {
                s.cart++, s.cart_col += c + 0.5, s.cart_row += r + 0.5;
                if (r < s.cart_row_min) s.cart_row_min = r;
                if (r > s.cart_row_max) s.cart_row_max = r;
            } else if (v == CR_CPIX_POLE) {
                s.pole++, s.pole_col += c + 0.5, s.pole_row += r + 0.5;
                if (c < s.pole_col_min) s.pole_col_min = c;
                if (c > s.pole_col_max) s.pole_col_max = c;
                if (r < s.pole_row_min) s.pole_row_min = r;
                if (r > s.pole_row_max) s.pole_row_max = r;
            } else if (v == CR_CPIX_TRACK) {
                s.track++;
            } else if (v != CR_CPIX_BACKGROUND) {
                s.other++;
            }
        }
    if (s.cart) s.cart_col /= s.cart, s.cart_row /= s.cart;
    if (s.pole) s.pole_col /= s.pole, s.pole_row /= s.pole;
    return s;
}

static void render_xt(double x, double theta, uint8_t *frame) {
    const double state[4] = {x, 0.0, theta, 0.0};
    cr_cartpole_pixels_render(state, frame);
}

/* The scene read at each pixel's centre only, without the anti-aliasing: the geometry the tests
 * below judge pixel by pixel. */
static void render_centres(double x, double theta, uint8_t *frame) {
    cr_cartpole_pixels_pose p = cr_cartpole_pixels_pose_of(x, theta);
    for (int r = 0; r < SIDE; r++)
        for (int c = 0; c < SIDE; c++)
            frame[r * SIDE + c] = (uint8_t)cr_cartpole_pixels_point(
                &p, c * CR_CPIX_Q16 + CR_CPIX_Q16 / 2, r * CR_CPIX_Q16 + CR_CPIX_Q16 / 2);
}

/* Column of the cart's centre (and the pole's pivot) for cart position x. */
static double pivot_col(double x) { return CR_CPIX_CENTRE_COL + CR_CPIX_PX_PER_M * x; }

/* The largest distance of a pole pixel's centre from the pivot, in pixels. */
static double pole_reach(const uint8_t *f, double x) {
    double best = 0;
    for (int r = 0; r < SIDE; r++)
        for (int c = 0; c < SIDE; c++)
            if (f[r * SIDE + c] == CR_CPIX_POLE) {
                double dx = c + 0.5 - pivot_col(x), dy = r + 0.5 - CR_CPIX_CART_TOP_ROW;
                double d = sqrt(dx * dx + dy * dy);
                if (d > best) best = d;
            }
    return best;
}

static uint64_t fnv1a(const uint8_t *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3u;
    return h;
}

/* ---- the def ---------------------------------------------------------------------------------- */

static void test_registry(void) {
    const cudarl_env_def *d = cr_env_def_find("CartPolePixels-v1");
    CHECK_MSG(d, "CartPolePixels-v1 is not registered");
    CHECK(d->obs_rank == 3 && d->obs_shape[0] == 4 && d->obs_shape[1] == 84 &&
          d->obs_shape[2] == 84 && d->obs_dtype == CUDARL_OBS_U8);
    CHECK(d->num_actions == 2 && d->max_episode_steps == 500 && d->solved_return == 475.0);
    CHECK(d->state_bytes == sizeof(cr_cartpole_pixels_state));
    CHECK(cr_env_def_obs_bytes(d) == (size_t)STACK * FRAME);
    CHECK_OK(cr_env_def_check(d));
    CHECK_MSG(!cr_env_find("CartPolePixels-v1"), "the batch claims to run CartPolePixels-v1");
    int listed = 0;
    for (const char *const *n = cudarl_env_names(); *n; n++) listed += !strcmp(*n, d->id);
    CHECK(listed == 1);
}

/* ---- sin and cos ------------------------------------------------------------------------------ */

/* The header's integer sin/cos within 2.5e-7 of libm's over [-20, 20] rad and at the quadrant
 * boundaries; NaN counts as 0. */
static void test_sincos(void) {
    double worst = 0;
    for (int k = -400000; k <= 400000; k++) {
        double t = k * 5e-5;
        int64_t s, c;
        cr_cartpole_pixels_sincos(t, &s, &c);
        double es = fabs((double)s / (1 << 30) - sin(t)), ec = fabs((double)c / (1 << 30) - cos(t));
        if (es > worst) worst = es;
        if (ec > worst) worst = ec;
        CHECK_MSG(es < 2.5e-7 && ec < 2.5e-7, "theta %.17g: sin %.9g (libm %.9g), cos %.9g "
                  "(libm %.9g)", t, (double)s / (1 << 30), sin(t), (double)c / (1 << 30), cos(t));
    }
    for (int q = -8; q <= 8; q++)
        for (int e = -2; e <= 2; e++) {
            double t = q * (PI / 2) + e * 1e-9;
            int64_t s, c;
            cr_cartpole_pixels_sincos(t, &s, &c);
            CHECK_CLOSE("sin at a quadrant boundary", (double)s / (1 << 30), sin(t), 2.5e-7, 0);
            CHECK_CLOSE("cos at a quadrant boundary", (double)c / (1 << 30), cos(t), 2.5e-7, 0);
        }
    int64_t s, c;
    cr_cartpole_pixels_sincos(NAN, &s, &c);
    CHECK(s == 0 && c == (1 << 30));
    printf("sin/cos: worst error %.3g over [-20, 20] rad\n", worst);
    fflush(stdout);
}

/* ---- geometry --------------------------------------------------------------------------------- */

/* The cart: 6 x 4 pixels on rows 56..59 centred where x says, moving right as x grows; the
 * track a full row below it; only the four intensities anywhere. */
static void test_cart(void) {
    uint8_t f[FRAME];
    double last = -1;
    for (int k = -24; k <= 24; k++) { /* x from -2.4 to 2.4 by 0.1 m = 1.5 px */
        double x = k * 0.1;
        render_centres(x, 0.0, f);
        frame_stats s = stats_of(f);
        CHECK_MSG(s.cart == 2 * CR_CPIX_CART_HALF_W * 4, "x %g: %d cart pixels", x, s.cart);
        CHECK_MSG(s.cart_row_min == CR_CPIX_CART_TOP_ROW && s.cart_row_max == CR_CPIX_TRACK_ROW - 1,
                  "x %g: cart rows %d..%d", x, s.cart_row_min, s.cart_row_max);
        /* 6 pixel centres in [cx - 3, cx + 3) average to within 0.5 of cx; x in 1/65536 m */
        CHECK_MSG(fabs(s.cart_col - pivot_col(x)) <= 0.5 + X_QUANTUM, "x %g: cart centroid "
                  "column %g, expected %g within 0.5", x, s.cart_col, pivot_col(x));
        CHECK_MSG(s.cart_col > last, "x %g: cart centroid %g does not move right of %g", x,
                  s.cart_col, last);
        last = s.cart_col;
        CHECK_MSG(s.track == SIDE && s.other == 0, "x %g: %d track pixels, %d of no known "
                  "intensity", x, s.track, s.other);
        for (int c = 0; c < SIDE; c++) CHECK(f[CR_CPIX_TRACK_ROW * SIDE + c] == CR_CPIX_TRACK);
    }
    /* off the frame: no cart, the pole too far to show; NaN draws as 0 */
    render_centres(10.0, 0.0, f);
    frame_stats s = stats_of(f);
    CHECK_MSG(s.cart == 0 && s.pole == 0 && s.track == SIDE, "x 10: %d cart, %d pole pixels",
              s.cart, s.pole);
    render_centres(-1e300, 0.0, f);
    s = stats_of(f);
    CHECK(s.cart == 0 && s.pole == 0 && s.track == SIDE);
    uint8_t g[FRAME];
    render_xt(NAN, NAN, f);
    render_xt(0.0, 0.0, g);
    CHECK_MSG(!memcmp(f, g, FRAME), "a NaN state does not draw as x = 0, theta = 0");
}

/* The pole: leaning right for theta > 0 and left for theta < 0, its pixels' centroid in the
 * direction theta within 4 degrees, reaching 15 px from the pivot, 20 to 48 pixels of it. */
static void test_pole(void) {
    uint8_t f[FRAME];
    const double xs[] = {0.0, 0.73, -1.1};
    double worst_dir = 0;
    for (int xi = 0; xi < 3; xi++) {
        double upright_dx = 0;
        for (int d0 = 0; d0 <= 160; d0++) { /* 0, 1, -1, 2, -2, ... degrees */
            int d = d0 % 2 ? (d0 + 1) / 2 : -d0 / 2;
            double x = xs[xi], theta = d * DEG;
            render_centres(x, theta, f);
            frame_stats s = stats_of(f);
            double dx = s.pole_col - pivot_col(x), up = CR_CPIX_CART_TOP_ROW - s.pole_row;
            if (d == 0) {
                CHECK_MSG(fabs(dx) <= 0.5 + X_QUANTUM && s.pole_col_max - s.pole_col_min <= 2, "theta 0 at "
                          "x %g: centroid %g px off the pivot, columns %d..%d", x, dx,
                          s.pole_col_min, s.pole_col_max);
                upright_dx = dx;
            }
            /* leaning the way theta says, against the upright pole at the same x (the pixel
             * grid puts that up to half a pixel off the pivot). The 2-px band can move almost a
             * pixel at the tip (4 degrees) before a pixel centre leaves or enters it; from 5
             * degrees the pixels must have moved. The upright frame comes first. */
            double lean = dx - upright_dx;
            if (d > 0) CHECK_MSG(d < 5 ? lean >= 0 : lean > 0, "x %g theta %d deg: pole "
                                 "centroid %g px right of the upright one's", x, d, lean);
            if (d < 0) CHECK_MSG(d > -5 ? lean <= 0 : lean < 0, "x %g theta %d deg: pole "
                                 "centroid %g px right of the upright one's", x, d, lean);
            double dir = atan2(dx, up) - theta;
            if (fabs(dir) > worst_dir) worst_dir = fabs(dir);
            /* the grid may put the centroid up to 0.5 px beside the axis, 7.5 px out: 3.8 deg */
            CHECK_MSG(fabs(dir) < 4 * DEG, "x %g theta %d deg: pole pixels point at %g deg", x,
                      d, atan2(dx, up) / DEG);
            CHECK_MSG(fabs(hypot(dx, up) - 7.5) < 0.75, "x %g theta %d deg: pole centroid %g px "
                      "from the pivot, expected 7.5", x, d, hypot(dx, up));
            double reach = pole_reach(f, x);
            CHECK_MSG(reach > CR_CPIX_POLE_LEN - 1 && reach <= hypot(CR_CPIX_POLE_LEN, 1) + 1e-3,
                      "x %g theta %d deg: pole reaches %g px", x, d, reach);
            /* the band's area is 2 x 15 px; at 45 degrees the pixel centres lie on diagonals
             * 0.71 px apart, 2 or 3 of them inside, ~10.6 points each: 21 to 32 */
            CHECK_MSG(s.pole >= 20 && s.pole <= 3 * (CR_CPIX_POLE_LEN + 1),
                      "x %g theta %d deg: %d pole pixels", x, d, s.pole);
            /* the pole's thickness dips at most 1 px below the pivot: into the cart's top row */
            CHECK_MSG(s.pole_row_max <= CR_CPIX_CART_TOP_ROW, "x %g theta %d deg: pole pixels "
                      "down to row %d", x, d, s.pole_row_max);
        }
    }
    printf("pole: its pixels point within %.2f deg of theta\n", worst_dir / DEG);
    /* pointing down (beyond anything an episode reaches): below the pivot, drawn over the cart */
    render_centres(0.0, PI, f);
    frame_stats s = stats_of(f);
    CHECK_MSG(s.pole_row_min >= CR_CPIX_CART_TOP_ROW && s.pole_row_max == CR_CPIX_CART_TOP_ROW +
              CR_CPIX_POLE_LEN - 1 && s.cart < 24, "theta pi: pole rows %d..%d, %d cart pixels",
              s.pole_row_min, s.pole_row_max, s.cart);
    /* a whole number of turns away draws the same frame */
    uint8_t g[FRAME];
    render_centres(0.3, 0.1, f);
    render_centres(0.3, 0.1 + 4 * PI, g);
    int differ = 0;
    for (int i = 0; i < FRAME; i++) differ += f[i] != g[i];
    CHECK_MSG(differ <= 2, "theta 0.1 and 0.1 + 4 pi differ in %d pixels", differ);
}

/* Every state an episode can show (|x| <= 2.4 + a step, |theta| <= 12 degrees + a step) is
 * drawn whole: the full cart, the pole reaching its length, nothing on the frame's border. */
static void test_in_frame(void) {
    uint8_t f[FRAME];
    const double xs[] = {-2.45, -2.4, -2.0, 0.0, 1.7, 2.4, 2.45};
    const double ts[] = {-13, -12, -6, 0, 6, 12, 13};
    for (int i = 0; i < 7; i++)
        for (int j = 0; j < 7; j++) {
            double x = xs[i], theta = ts[j] * DEG;
            render_centres(x, theta, f);
            frame_stats s = stats_of(f);
            CHECK_MSG(s.cart == 24 && s.pole >= 20 &&
                      pole_reach(f, x) > CR_CPIX_POLE_LEN - 1, "x %g theta %g deg: %d cart and "
                      "%d pole pixels, reach %g", x, ts[j], s.cart, s.pole, pole_reach(f, x));
            uint8_t g[FRAME]; /* the anti-aliased frame's border too */
            render_xt(x, theta, g);
            /* past the episode's range (2.45 m, 13 degrees) the anti-aliased pole's edge may
             * just touch the border (it comes within 0.12 px of it) */
            int past = fabs(x) > 2.4 || fabs(ts[j]) > 12;
            for (int k = 0; k < (past ? SIDE : 2 * SIDE); k++) {
                const uint8_t *h = k < SIDE ? f : g;
                int m = k % SIDE;
                uint8_t edge[4] = {h[m], h[(SIDE - 1) * SIDE + m], h[m * SIDE],
                                   h[m * SIDE + SIDE - 1]};
                for (int e = 0; e < 4; e++)
                    CHECK_MSG(edge[e] == CR_CPIX_BACKGROUND || edge[e] == CR_CPIX_TRACK,
                              "x %g theta %g deg: the frame's border has intensity %d", x, ts[j],
                              edge[e]);
            }
        }
}

/* ---- anti-aliasing ---------------------------------------------------------------------------- */

/* Pixel (r, c) counted here from the scene: the rounded mean of its 8 x 8 points, without the
 * renderer's box (which reads one point where the cart and pole cannot reach). */
static int mean_of_points(const cr_cartpole_pixels_pose *p, int r, int c) {
    const int64_t step = CR_CPIX_Q16 / CR_CPIX_SUB;
    int sum = 0;
    for (int j = 0; j < CR_CPIX_SUB; j++)
        for (int i = 0; i < CR_CPIX_SUB; i++)
            sum += cr_cartpole_pixels_point(p, c * CR_CPIX_Q16 + i * step + step / 2,
                                            r * CR_CPIX_Q16 + j * step + step / 2);
    return (sum + CR_CPIX_SUB * CR_CPIX_SUB / 2) / (CR_CPIX_SUB * CR_CPIX_SUB);
}

/* Intensity-weighted centroid column of rows r0..r1 of f, and their total intensity. */
static double centroid_col(const uint8_t *f, int r0, int r1, double *mass) {
    double m = 0, mc = 0;
    for (int r = r0; r <= r1; r++)
        for (int c = 0; c < SIDE; c++) m += f[r * SIDE + c], mc += f[r * SIDE + c] * (c + 0.5);
    *mass = m;
    return m > 0 ? mc / m : 0;
}

static void test_antialias(void) {
    uint8_t f[FRAME];
    /* 1. every pixel is the mean of its points: states over and beyond an episode's range, the
     * pole sideways and down, the cart off the frame */
    cr_philox_state rng;
    cr_philox_seed(&rng, 11, 0);
    int partial = 0;
    for (int k = 0; k < 400; k++) {
        double u = cr_philox_next_u32(&rng) / 4294967296.0, v = cr_philox_next_u32(&rng) / 4294967296.0;
        double x = (u - 0.5) * (k < 300 ? 5.2 : 7.0), theta = (v - 0.5) * (k < 300 ? 0.5 : 7.0);
        if (k == 0) x = 0.0, theta = PI;
        if (k == 1) x = 10.0, theta = 0.0;
        render_xt(x, theta, f);
        cr_cartpole_pixels_pose p = cr_cartpole_pixels_pose_of(x, theta);
        for (int r = 0; r < SIDE; r++)
            for (int c = 0; c < SIDE; c++) {
                int want = mean_of_points(&p, r, c), got = f[r * SIDE + c];
                CHECK_MSG(got == want, "x %g theta %g: pixel (%d, %d) is %d, the mean of its "
                          "points %d", x, theta, r, c, got, want);
                partial += got != CR_CPIX_BACKGROUND && got != CR_CPIX_TRACK &&
                           got != CR_CPIX_POLE && got != CR_CPIX_CART;
            }
    }
    CHECK_MSG(partial > 400 * 10, "only %d partly covered pixels in 400 frames", partial);

    /* 2. the cart (rows 57..59: the pole reaches at most row 56 while it leans less than 90
     * degrees) moved by 0.01 m = 0.15 px: its intensity-weighted centroid moves right every
     * time, lies within 1/16 px of the cart's centre (its edges show to 1/8 px) and its mass is
     * 3 rows of 6 px of 255, to the rounding of the two edge pixels per row */
    double last = -1, worst = 0;
    int centre_changes = 0;
    uint8_t prev_centres[FRAME], centres[FRAME];
    for (int k = -240; k <= 240; k++) {
        double x = k * 0.01, mass;
        render_xt(x, 0.05, f);
        double col = centroid_col(f, CR_CPIX_CART_TOP_ROW + 1, CR_CPIX_TRACK_ROW - 1, &mass);
        CHECK_MSG(col > last, "x %g: the cart's centroid %.4f px does not move right of %.4f", x,
                  col, last);
        double err = fabs(col - pivot_col(x));
        if (err > worst) worst = err;
        CHECK_MSG(err <= 1.0 / 16 + X_QUANTUM, "x %g: the cart's centroid %.4f px, its centre "
                  "%.4f", x, col, pivot_col(x));
        CHECK_MSG(fabs(mass - 3 * 6 * 255.0) <= 3 * 2 * 0.5, "x %g: the cart's rows hold %g, "
                  "expected %d", x, mass, 3 * 6 * 255);
        last = col;
        render_centres(x, 0.05, centres);
        const size_t cart_rows = (size_t)(CR_CPIX_CART_TOP_ROW + 1) * SIDE;
        if (k > -240)
            centre_changes += !!memcmp(centres + cart_rows, prev_centres + cart_rows, 3 * SIDE);
        memcpy(prev_centres, centres, FRAME);
    }
    printf("anti-aliasing: the cart's centroid within %.4f px of its centre; sampled at pixel "
           "centres, %d of 480 moves of 0.15 px change the cart's rows\n", worst, centre_changes);

    /* 3. the pole above the cart (rows up to 54) turned by 1 degree (0.26 px at the tip): its
     * centroid moves the way theta turns every time, and points at theta within 1 degree (the
     * cut at row 55 is not square to a leaning pole, which pulls the centroid a little aside) */
    double worst_dir = 0;
    for (int xi = 0; xi < 2; xi++) {
        double x = xi ? -1.37 : 0.52, last_col = -1;
        for (int d = -14; d <= 14; d++) {
            double theta = d * DEG, mass;
            render_xt(x, theta, f);
            double col = centroid_col(f, 0, CR_CPIX_CART_TOP_ROW - 2, &mass), mr = 0;
            for (int r = 0; r <= CR_CPIX_CART_TOP_ROW - 2; r++)
                for (int c = 0; c < SIDE; c++) mr += f[r * SIDE + c] * (r + 0.5);
            double up = CR_CPIX_CART_TOP_ROW - mr / mass, dx = col - pivot_col(x);
            double dir = atan2(dx, up) - theta;
            if (fabs(dir) > worst_dir) worst_dir = fabs(dir);
            CHECK_MSG(fabs(dir) < 1 * DEG, "x %g theta %d deg: the pole's centroid points at "
                      "%.3f deg", x, d, atan2(dx, up) / DEG);
            CHECK_MSG(col > last_col, "x %g theta %d deg: the pole's centroid %.4f px does not "
                      "move right of %.4f", x, d, col, last_col);
            last_col = col;
        }
    }
    printf("anti-aliasing: the pole's centroid points within %.3f deg of theta\n", worst_dir / DEG);
}

/* Golden checksums (FNV-1a of the frame), recorded from this renderer: they fail on any change of
 * the drawing, which the geometric checks above then judge. `centres` sampled at pixel centres
 * (the scene), `frame` the anti-aliased frame the env observes. */
static void test_golden(void) {
    static const struct {
        double x, theta;
        uint64_t centres, frame;
    } cases[] = {
        {0.0, 0.0, UINT64_C(0xd86aa2f37e9837bd), UINT64_C(0xd86aa2f37e9837bd)}, /* on the grid */
        {-1.234567, 0.1234, UINT64_C(0x185f1ff66807302d), UINT64_C(0xef007f148a09c3fa)},
        {2.4, -12 * DEG, UINT64_C(0x45a1467806dcdfbd), UINT64_C(0x5a2eeaf0d522785b)},
    };
    uint8_t f[FRAME];
    for (int k = 0; k < 3; k++) {
        render_centres(cases[k].x, cases[k].theta, f);
        uint64_t h = fnv1a(f, FRAME);
        CHECK_MSG(h == cases[k].centres, "frame of x %g theta %g sampled at pixel centres: "
                  "checksum %#llx, expected %#llx", cases[k].x, cases[k].theta,
                  (unsigned long long)h, (unsigned long long)cases[k].centres);
        render_xt(cases[k].x, cases[k].theta, f);
        h = fnv1a(f, FRAME);
        CHECK_MSG(h == cases[k].frame, "frame of x %g theta %g: checksum %#llx, expected %#llx",
                  cases[k].x, cases[k].theta, (unsigned long long)h,
                  (unsigned long long)cases[k].frame);
    }
}

/* ---- the env against CartPole-v1 -------------------------------------------------------------- */

enum { N = 4, STEPS = 5000, SEED = 77 };

/* Balances the even envs (so episodes reach the 500-step limit), random actions for the odd. */
static void actions_for(const double *state, cr_philox_state *rng, int32_t *actions) {
    for (int i = 0; i < N; i++) {
        const double *s = state + i * 4;
        uint32_t u = cr_philox_next_u32(rng);
        int ctrl = s[2] + 0.5 * s[3] + 0.05 * s[0] + 0.1 * s[1] > 0;
        actions[i] = i % 2 == 0 && u % 64 != 0 ? ctrl : (int32_t)(u >> 8 & 1);
    }
}

/* Checks env i's observation after a step: the previous stack shifted by one frame and the
 * frame of `state` (4) newest, or, when the episode ended (pre: the state it ended in), the
 * final observation that way and the new stack all the first frame of `state`. */
static void check_stack(int step, int i, const uint8_t *prev, const uint8_t *obs,
                        const uint8_t *final_obs, const double *state, const double *pre,
                        int ended) {
    uint8_t want[FRAME];
    const uint8_t *shifted = ended ? final_obs : obs;
    if (ended) {
        cr_cartpole_pixels_render(pre, want);
        CHECK_MSG(!memcmp(final_obs + 3 * FRAME, want, FRAME), "step %d env %d: the final "
                  "observation's newest frame is not the frame of the last state", step, i);
    } else {
        cr_cartpole_pixels_render(state, want);
    }
    for (int k = 0; k < STACK - 1; k++)
        CHECK_MSG(!memcmp(shifted + k * FRAME, prev + (k + 1) * FRAME, FRAME), "step %d env %d: "
                  "channel %d is not the previous observation's channel %d", step, i, k, k + 1);
    if (!ended) {
        CHECK_MSG(!memcmp(obs + 3 * FRAME, want, FRAME), "step %d env %d: the newest frame is not "
                  "the frame of the state", step, i);
        return;
    }
    cr_cartpole_pixels_render(state, want);
    for (int k = 0; k < STACK; k++)
        CHECK_MSG(!memcmp(obs + k * FRAME, want, FRAME), "step %d env %d: after the reset, "
                  "channel %d is not the first frame (padding)", step, i, k);
}

static void test_against_cartpole(void) {
    cr_plan plan;
    cr_plan_init(&plan);
    cr_plan_add(&plan, "batch", cr_cartpole_bytes(N));
    cr_arena arena;
    CHECK_OK(cr_arena_alloc(&arena, &plan, CR_MEM_HOST));
    cr_cartpole batch;
    cr_cartpole_init(&batch, N, cr_arena_get(&arena, 0));
    float bobs[N * 4], breward[N], bfinal[N * 4];
    uint8_t bterm[N], btrunc[N];
    cr_cartpole_reset(&batch, SEED, bobs);

    const cudarl_env_def *def = cr_env_def_find("CartPolePixels-v1");
    cr_env_pool pool;
    CHECK_OK(cr_env_pool_init(&pool, def, &(cr_env_pool_config){N, 2, 1, NULL, 0, 0, -1, 0},
                              NULL));
    static uint8_t obs[N][STACK * FRAME], final_obs[N][STACK * FRAME], prev[N][STACK * FRAME];
    float reward[N];
    uint8_t term[N], trunc[N];
    cr_env_pool_outputs out = {obs, reward, term, trunc, final_obs};
    cr_env_pool_set_outputs(&pool, &out);
    cr_env_pool_reset(&pool, SEED);
    for (int i = 0; i < N; i++) { /* the first observation: the first frame, 4 times */
        const cr_cartpole_pixels_state *st = cr_env_pool_state(&pool, i);
        CHECK_MSG(!memcmp(st->s, batch.state + i * 4, sizeof st->s), "env %d: reset state "
                  "differs from CartPole-v1's", i);
        uint8_t want[FRAME];
        cr_cartpole_pixels_render(st->s, want);
        for (int k = 0; k < STACK; k++) CHECK(!memcmp(obs[i] + k * FRAME, want, FRAME));
    }

    cr_philox_state rng;
    cr_philox_seed(&rng, 5, 0);
    int32_t actions[N];
    int terms = 0, truncs = 0;
    for (int step = 1; step <= STEPS; step++) {
        double before[N * 4], pre[N * 4];
        memcpy(before, batch.state, sizeof before);
        memcpy(prev, obs, sizeof prev);
        actions_for(batch.state, &rng, actions);
        cr_cartpole_step(&batch, actions, bobs, breward, bterm, btrunc, bfinal);
        cr_env_pool_step(&pool, actions);
        for (int i = 0; i < N; i++) {
            const cr_cartpole_pixels_state *st = cr_env_pool_state(&pool, i);
            CHECK_MSG(!memcmp(st->s, batch.state + i * 4, sizeof st->s), "step %d env %d: state "
                      "(%a, %a, %a, %a) differs from CartPole-v1's (%a, %a, %a, %a)", step, i,
                      st->s[0], st->s[1], st->s[2], st->s[3], batch.state[i * 4],
                      batch.state[i * 4 + 1], batch.state[i * 4 + 2], batch.state[i * 4 + 3]);
            CHECK_MSG(st->elapsed == batch.elapsed[i] && pool.elapsed[i] == batch.elapsed[i],
                      "step %d env %d: elapsed %d (pool %d), CartPole-v1 %d", step, i,
                      st->elapsed, pool.elapsed[i], batch.elapsed[i]);
            CHECK_MSG(reward[i] == breward[i] && term[i] == bterm[i] && trunc[i] == btrunc[i],
                      "step %d env %d: reward %g term %d trunc %d, CartPole-v1 %g %d %d", step, i,
                      reward[i], term[i], trunc[i], breward[i], bterm[i], btrunc[i]);
            int ended = term[i] | trunc[i];
            memcpy(pre + i * 4, before + i * 4, 4 * sizeof(double));
            cr_cartpole_physics(pre + i * 4, actions[i]); /* the state the episode ended in */
            if (ended)
                for (int j = 0; j < 4; j++)
                    CHECK(bfinal[i * 4 + j] == (float)pre[i * 4 + j]);
            check_stack(step, i, prev[i], obs[i], final_obs[i], st->s, pre + i * 4, ended);
            terms += term[i], truncs += trunc[i];
        }
    }
    printf("against CartPole-v1: %d steps of %d envs, %d terminations, %d truncations\n", STEPS,
           N, terms, truncs);
    CHECK_MSG(terms >= 100 && truncs >= 2, "only %d terminations and %d truncations", terms,
              truncs);
    cr_env_pool_free(&pool);
    cr_arena_free(&arena);
}

int main(void) {
    test_registry();
    test_sincos();
    test_cart();
    test_pole();
    test_in_frame();
    test_antialias();
    test_golden();
    test_against_cartpole();
    printf("test_cartpole_pixels: ok\n");
    return 0;
}
