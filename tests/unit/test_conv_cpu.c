/* CPU convolution ops against a naive 7-loop double-precision reference and central finite
 * differences, on fixed edge-case shapes and random ones (Philox); bitwise determinism across
 * thread counts; the shape check; the uint8 scaling.
 * Usage: test_conv_cpu [part]   part: shape forward backward fd threads scale (all if omitted). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "core/core.h"
#include "op_buffers.h"
#include "ops/cpu/ops_conv.h"
#include "ops/cpu/ops_cpu.h"
#include "ops/cpu/ops_dqn.h"

/* N, C, H, W, K, R, S, stride, pad: edge cases, then the two policies' layers. */
static const int fixed_shapes[][9] = {
    {1, 1, 5, 5, 1, 3, 3, 1, 0},     /* C = 1, K = 1, batch 1 */
    {2, 3, 7, 9, 4, 3, 3, 1, 1},     /* padding 1, H != W */
    {3, 2, 11, 10, 5, 4, 4, 2, 0},   /* stride 2, a row of the input unused */
    {2, 4, 13, 13, 3, 8, 8, 4, 0},   /* stride 4, 8x8 kernel */
    {1, 5, 6, 7, 2, 2, 3, 3, 1},     /* R != S, stride 3 and padding 1 */
    {2, 3, 5, 5, 6, 5, 5, 1, 1},     /* kernel as large as the input */
    {1, 2, 3, 3, 2, 3, 3, 2, 1},     /* every patch touches the padding */
    {1, 2, 4, 4, 3, 5, 5, 1, 1},     /* kernel larger than the input, inside the padding */
    {2, 1, 9, 9, 1, 1, 1, 1, 0},     /* 1x1 kernel */
    {2, 3, 1, 1, 2, 1, 1, 1, 0},     /* 1x1 image */
    {1, 1, 1, 1, 1, 3, 3, 1, 1},     /* 1x1 image, all but the centre is padding */
    {2, 4, 10, 10, 16, 3, 3, 1, 0},  /* MinAtar conv */
    {1, 4, 84, 84, 32, 8, 8, 4, 0},  /* Nature-CNN conv1 */
    {2, 32, 20, 20, 64, 4, 4, 2, 0}, /* Nature-CNN conv2 */
    {2, 64, 9, 9, 64, 3, 3, 1, 0},   /* Nature-CNN conv3 */
};
#define NUM_FIXED ((int)(sizeof fixed_shapes / sizeof fixed_shapes[0]))
#define NUM_RANDOM 24

static int rand_int(int lo, int hi) { /* uniform in [lo, hi] */
    return lo + (int)(cr_philox_uniform(&rng) * (float)(hi - lo + 1)) % (hi - lo + 1);
}

static cr_conv2d_shape shape_from(const int *a) {
    cr_conv2d_shape s = {.N = a[0], .C = a[1], .H = a[2], .W = a[3], .K = a[4], .R = a[5],
                         .S = a[6], .stride = a[7], .pad = a[8]};
    CHECK_OK(cr_conv2d_shape_check(&s));
    return s;
}

/* Shape i: the fixed ones, then random ones (a kernel that fits the padded input). */
static cr_conv2d_shape shape_at(int i) {
    if (i < NUM_FIXED) return shape_from(fixed_shapes[i]);
    int a[9];
    a[0] = rand_int(1, 3), a[1] = rand_int(1, 6), a[2] = rand_int(1, 14), a[3] = rand_int(1, 14);
    a[4] = rand_int(1, 9), a[7] = rand_int(1, 4), a[8] = rand_int(0, 1);
    a[5] = rand_int(1, a[2] + 2 * a[8] < 6 ? a[2] + 2 * a[8] : 6);
    a[6] = rand_int(1, a[3] + 2 * a[8] < 6 ? a[3] + 2 * a[8] : 6);
    return shape_from(a);
}

static size_t x_count(const cr_conv2d_shape *s) { return (size_t)s->N * s->C * s->H * s->W; }
static size_t y_count(const cr_conv2d_shape *s) { return (size_t)s->N * s->K * s->P * s->Q; }
static size_t w_count(const cr_conv2d_shape *s) { return (size_t)s->K * s->C * s->R * s->S; }

static void *scratch_for(const cr_conv2d_shape *s) {
    size_t bytes = cr_cpu_conv2d_scratch_bytes(s);
    CHECK(bytes % 64 == 0);
    float *p = floats(bytes / sizeof(float)); /* NaN: the ops must not read what they did not write */
    return p;
}

/* ---- the naive reference ---------------------------------------------------------------------- */

/* Runs the statements for every (output, input) pair the convolution multiplies, with their
 * indices xi, wi, yi into x, w, y: the seven loops of the definition, padding skipped. */
#define FOR_EACH_TAP(s, ...)                                                                     \
    for (int n = 0; n < (s)->N; n++)                                                             \
        for (int k = 0; k < (s)->K; k++)                                                         \
            for (int p = 0; p < (s)->P; p++)                                                     \
                for (int q = 0; q < (s)->Q; q++)                                                 \
                    for (int c = 0; c < (s)->C; c++)                                             \
                        for (int r = 0; r < (s)->R; r++)                                         \
                            for (int t = 0; t < (s)->S; t++) {                                   \
                                int h = p * (s)->stride - (s)->pad + r;                          \
                                int v = q * (s)->stride - (s)->pad + t;                          \
                                if (h < 0 || h >= (s)->H || v < 0 || v >= (s)->W) continue;     \
                                size_t xi = (((size_t)n * (s)->C + c) * (s)->H + h) * (s)->W + v; \
                                size_t wi = (((size_t)k * (s)->C + c) * (s)->R + r) * (s)->S + t; \
                                size_t yi = (((size_t)n * (s)->K + k) * (s)->P + p) * (s)->Q + q; \
                                __VA_ARGS__                                                      \
                            }

/* y (N, K, P, Q) = conv(x, w) + b in double; abs (same shape) the sum of |terms| (may be NULL). */
static void ref_forward(const cr_conv2d_shape *s, const double *x, const double *w,
                        const double *b, double *y, double *abs_sum) {
    size_t ny = y_count(s);
    for (size_t i = 0; i < ny; i++) {
        int k = (int)(i / ((size_t)s->P * s->Q) % s->K);
        y[i] = b[k];
        if (abs_sum) abs_sum[i] = fabs(b[k]);
    }
    FOR_EACH_TAP(s, {
        y[yi] += x[xi] * w[wi];
        if (abs_sum) abs_sum[yi] += fabs(x[xi] * w[wi]);
    })
}

/* Gradients of sum(g y) in double, with their |term| sums and term counts: dx (N, C, H, W),
 * dw (K, C, R, S), db (K); g (N, K, P, Q). */
typedef struct ref_grads {
    double *dx, *dx_abs, *dw, *dw_abs, *db, *db_abs;
    int *dx_terms;
} ref_grads;

static ref_grads ref_backward(const cr_conv2d_shape *s, const double *x, const double *w,
                              const double *g) {
    ref_grads rg;
    size_t nx = x_count(s), nw = w_count(s);
    rg.dx = calloc(nx, sizeof(double)), rg.dx_abs = calloc(nx, sizeof(double));
    rg.dx_terms = calloc(nx, sizeof(int));
    rg.dw = calloc(nw, sizeof(double)), rg.dw_abs = calloc(nw, sizeof(double));
    rg.db = calloc((size_t)s->K, sizeof(double)), rg.db_abs = calloc((size_t)s->K, sizeof(double));
    CHECK(rg.dx && rg.dx_abs && rg.dx_terms && rg.dw && rg.dw_abs && rg.db && rg.db_abs);
    FOR_EACH_TAP(s, {
        rg.dx[xi] += g[yi] * w[wi], rg.dx_abs[xi] += fabs(g[yi] * w[wi]), rg.dx_terms[xi]++;
        rg.dw[wi] += g[yi] * x[xi], rg.dw_abs[wi] += fabs(g[yi] * x[xi]);
    })
    for (size_t i = 0; i < y_count(s); i++) {
        int k = (int)(i / ((size_t)s->P * s->Q) % s->K);
        rg.db[k] += g[i], rg.db_abs[k] += fabs(g[i]);
    }
    return rg;
}

static void ref_free(ref_grads *r) {
    free(r->dx), free(r->dx_abs), free(r->dx_terms), free(r->dw), free(r->dw_abs), free(r->db),
        free(r->db_abs);
}

static double *to_double(const float *p, size_t n) {
    double *d = doubles(n);
    for (size_t i = 0; i < n; i++) d[i] = p[i];
    return d;
}

/* A float sum of T terms in any order errs by at most about T u times the sum of |terms|
 * (u = 2^-24, fma or not); the check allows (T + 2) u of it. */
static void check_sum(const char *what, const cr_conv2d_shape *s, size_t i, float got, double want,
                      double abs_sum, long terms) {
    double tol = (double)(terms + 2) * 0x1p-24 * abs_sum + 1e-30;
    if (!(fabs((double)got - want) <= tol)) {
        fprintf(stderr,
                "FAIL %s[%zu] (N=%d C=%d H=%d W=%d K=%d R=%d S=%d stride=%d pad=%d): expected "
                "%.9g, got %.9g (tol %.3g)\n",
                what, i, s->N, s->C, s->H, s->W, s->K, s->R, s->S, s->stride, s->pad, want,
                (double)got, tol);
        exit(1);
    }
}

/* ---- shape ------------------------------------------------------------------------------------ */

static void expect_bad(cr_conv2d_shape s) {
    cudarl_status st = cr_conv2d_shape_check(&s);
    CHECK_MSG(st == CUDARL_ERR_INVALID_ARG, "accepted N=%d C=%d H=%d W=%d K=%d R=%d S=%d "
              "stride=%d pad=%d", s.N, s.C, s.H, s.W, s.K, s.R, s.S, s.stride, s.pad);
    CHECK(strstr(cudarl_last_error(), "conv2d") != NULL);
}

static void test_shape(void) {
    /* Nature-CNN: 84 -> 20 -> 9 -> 7, flattening to 64 * 7 * 7 = 3136; MinAtar: 10 -> 8. */
    cr_conv2d_shape c1 = {.N = 32, .C = 4, .H = 84, .W = 84, .K = 32, .R = 8, .S = 8, .stride = 4};
    CHECK_OK(cr_conv2d_shape_check(&c1));
    CHECK(c1.P == 20 && c1.Q == 20);
    cr_conv2d_shape c2 = {.N = 32, .C = 32, .H = 20, .W = 20, .K = 64, .R = 4, .S = 4, .stride = 2};
    CHECK_OK(cr_conv2d_shape_check(&c2));
    CHECK(c2.P == 9 && c2.Q == 9);
    cr_conv2d_shape c3 = {.N = 32, .C = 64, .H = 9, .W = 9, .K = 64, .R = 3, .S = 3, .stride = 1};
    CHECK_OK(cr_conv2d_shape_check(&c3));
    CHECK(c3.P == 7 && c3.Q == 7 && c3.K * c3.P * c3.Q == 3136);
    cr_conv2d_shape m = {.N = 1, .C = 7, .H = 10, .W = 10, .K = 16, .R = 3, .S = 3, .stride = 1};
    CHECK_OK(cr_conv2d_shape_check(&m));
    CHECK(m.P == 8 && m.Q == 8);
    cr_conv2d_shape pad = {.N = 1, .C = 1, .H = 5, .W = 6, .K = 1, .R = 3, .S = 3, .stride = 2,
                           .pad = 1};
    CHECK_OK(cr_conv2d_shape_check(&pad));
    CHECK(pad.P == 3 && pad.Q == 3); /* (5 + 2 - 3) / 2 + 1, (6 + 2 - 3) / 2 + 1 */

    cr_conv2d_shape b = c1;
    b.N = 0, expect_bad(b);
    b = c1, b.C = -1, expect_bad(b);
    b = c1, b.K = 0, expect_bad(b);
    b = c1, b.R = 0, expect_bad(b);
    b = c1, b.stride = 0, expect_bad(b);
    b = c1, b.pad = -1, expect_bad(b);
    b = c1, b.H = 7, expect_bad(b);           /* an 8x8 kernel on a 7-row input */
    b = m, b.W = 1, b.pad = 0, expect_bad(b); /* 3 columns on 1 */
    b = c1, b.C = 1 << 20, b.R = b.S = 64, b.H = b.W = 64, expect_bad(b); /* too large */
}

/* ---- forward ---------------------------------------------------------------------------------- */

static void forward_case(const cr_conv2d_shape *s) {
    size_t nx = x_count(s), ny = y_count(s), nw = w_count(s);
    float *x = uniform_floats(nx, -1, 1), *w = uniform_floats(nw, -1, 1);
    float *b = uniform_floats((size_t)s->K, -1, 1), *y = floats(ny), *yr = floats(ny);
    float *yr2 = floats(ny);
    void *scratch = scratch_for(s);
    cr_cpu_conv2d_forward(s, x, w, b, y, 0, scratch);
    cr_cpu_conv2d_forward(s, x, w, b, yr, 1, scratch);

    double *xd = to_double(x, nx), *wd = to_double(w, nw), *bd = to_double(b, (size_t)s->K);
    double *yd = doubles(ny), *ya = doubles(ny);
    ref_forward(s, xd, wd, bd, yd, ya);
    long terms = (long)s->C * s->R * s->S + 1;
    for (size_t i = 0; i < ny; i++) check_sum("y", s, i, y[i], yd[i], ya[i], terms);
    /* The fused ReLU is the plain forward followed by cr_cpu_relu_forward, bit for bit. */
    cr_cpu_relu_forward(y, yr2, ny);
    CHECK_MSG(bits_equal(yr, yr2, ny), "fused ReLU differs (K=%d P=%d)", s->K, s->P);
    free(x), free(w), free(b), free(y), free(yr), free(yr2), free(scratch), free(xd), free(wd),
        free(bd), free(yd), free(ya);
}

static void test_forward(void) {
    for (int i = 0; i < NUM_FIXED + NUM_RANDOM; i++) {
        cr_conv2d_shape s = shape_at(i);
        forward_case(&s);
    }
}

/* ---- backward --------------------------------------------------------------------------------- */

static void backward_case(const cr_conv2d_shape *s) {
    size_t nx = x_count(s), ny = y_count(s), nw = w_count(s);
    float *x = uniform_floats(nx, -1, 1), *w = uniform_floats(nw, -1, 1);
    float *b = uniform_floats((size_t)s->K, -1, 1), *dy = uniform_floats(ny, -1, 1);
    float *y = floats(ny), *dym = floats(ny);
    float *dx = floats(nx), *dw = floats(nw), *db = floats((size_t)s->K);
    float *dx2 = floats(nx), *dw2 = floats(nw), *db2 = floats((size_t)s->K);
    void *scratch = scratch_for(s);

    /* Unmasked: dy is the gradient of the convolution's output. */
    cr_cpu_conv2d_backward(s, x, w, NULL, dy, dx, dw, db, scratch);
    double *xd = to_double(x, nx), *wd = to_double(w, nw), *gd = to_double(dy, ny);
    ref_grads r = ref_backward(s, xd, wd, gd);
    for (size_t i = 0; i < nx; i++) check_sum("dx", s, i, dx[i], r.dx[i], r.dx_abs[i], r.dx_terms[i]);
    long pixels = (long)s->N * s->P * s->Q;
    for (size_t i = 0; i < nw; i++) check_sum("dw", s, i, dw[i], r.dw[i], r.dw_abs[i], pixels);
    for (int k = 0; k < s->K; k++) check_sum("db", s, (size_t)k, db[k], r.db[k], r.db_abs[k], pixels);
    /* dx = NULL skips dx and gives the same dw, db bit for bit. */
    cr_cpu_conv2d_backward(s, x, w, NULL, dy, NULL, dw2, db2, scratch);
    CHECK(bits_equal(dw, dw2, nw) && bits_equal(db, db2, (size_t)s->K));

    /* Masked: the fused ReLU equals cr_cpu_relu_backward and then the unmasked op, bit for bit. */
    cr_cpu_conv2d_forward(s, x, w, b, y, 1, scratch);
    cr_cpu_conv2d_backward(s, x, w, y, dy, dx, dw, db, scratch);
    cr_cpu_relu_backward(y, dy, dym, ny);
    cr_cpu_conv2d_backward(s, x, w, NULL, dym, dx2, dw2, db2, scratch);
    CHECK_MSG(bits_equal(dx, dx2, nx) && bits_equal(dw, dw2, nw) &&
                  bits_equal(db, db2, (size_t)s->K),
              "fused ReLU backward differs (K=%d P=%d)", s->K, s->P);

    ref_free(&r);
    free(x), free(w), free(b), free(dy), free(y), free(dym), free(dx), free(dw), free(db),
        free(dx2), free(dw2), free(db2), free(scratch), free(xd), free(wd), free(gd);
}

static void test_backward(void) {
    for (int i = 0; i < NUM_FIXED + NUM_RANDOM; i++) {
        cr_conv2d_shape s = shape_at(i);
        backward_case(&s);
    }
}

/* ---- finite differences ----------------------------------------------------------------------- */

/* L = sum g relu(conv(x, w) + b) in double; mask (N, K, P, Q) gets conv + b > 0. */
static double fd_loss(const cr_conv2d_shape *s, const double *x, const double *w, const double *b,
                      const double *g, double *y, unsigned char *mask) {
    ref_forward(s, x, w, b, y, NULL);
    double L = 0;
    for (size_t i = 0; i < y_count(s); i++) {
        mask[i] = y[i] > 0;
        L += g[i] * (y[i] > 0 ? y[i] : 0);
    }
    return L;
}

/* Checks got[i] against the central difference of fd_loss along p[i], for up to 16 indices
 * (the first, the last and random ones); skips an index whose step moves a ReLU across its kink
 * (the difference is then not the derivative). Returns the number checked. */
static int fd_check(const char *what, const cr_conv2d_shape *s, double *p, size_t n,
                    const float *got, double *x, double *w, double *b, const double *g) {
    size_t ny = y_count(s);
    double *y = doubles(ny);
    unsigned char *m0 = malloc(ny), *m1 = malloc(ny);
    CHECK(m0 && m1);
    fd_loss(s, x, w, b, g, y, m0);
    double scale = 0;
    for (size_t i = 0; i < ny; i++) scale += fabs(g[i] * y[i]);
    int checked = 0;
    for (int j = 0; j < 16 && (size_t)j < n; j++) {
        size_t i = j == 0 ? 0 : j == 1 ? n - 1 : (size_t)(cr_philox_uniform(&rng) * (float)n) % n;
        const double h = 1e-3, keep = p[i];
        p[i] = keep + h;
        double Lp = fd_loss(s, x, w, b, g, y, m1);
        int kink = memcmp(m0, m1, ny) != 0;
        p[i] = keep - h;
        double Lm = fd_loss(s, x, w, b, g, y, m1);
        kink |= memcmp(m0, m1, ny) != 0;
        p[i] = keep;
        if (kink) continue;
        /* L is linear in p[i] between the kinks, so the central difference is the derivative up
         * to double rounding (~1e-16 sum |terms| / h). The float gradient sums at most a few
         * hundred products of numbers in [-1, 1] here: within 1e-4 (1 + |gradient|) of it. The
         * tight bound is the reference check's; this one catches a wrong formula. */
        double fd = (Lp - Lm) / (2 * h);
        double tol = 1e-4 * (fabs(fd) + 1) + 1e-12 * scale / h;
        CHECK_MSG(fabs(got[i] - fd) <= tol, "%s[%zu]: finite difference %.9g, op %.9g (tol %.3g)",
                  what, i, fd, (double)got[i], tol);
        checked++;
    }
    free(y), free(m0), free(m1);
    return checked;
}

static void fd_case(const cr_conv2d_shape *s) {
    size_t nx = x_count(s), ny = y_count(s), nw = w_count(s);
    float *x = uniform_floats(nx, -1, 1), *w = uniform_floats(nw, -1, 1);
    float *b = uniform_floats((size_t)s->K, -1, 1), *g = uniform_floats(ny, -1, 1);
    float *y = floats(ny), *dx = floats(nx), *dw = floats(nw), *db = floats((size_t)s->K);
    void *scratch = scratch_for(s);
    cr_cpu_conv2d_forward(s, x, w, b, y, 1, scratch);
    cr_cpu_conv2d_backward(s, x, w, y, g, dx, dw, db, scratch);
    double *xd = to_double(x, nx), *wd = to_double(w, nw), *bd = to_double(b, (size_t)s->K);
    double *gd = to_double(g, ny);
    int checked = fd_check("dx", s, xd, nx, dx, xd, wd, bd, gd);
    checked += fd_check("dw", s, wd, nw, dw, xd, wd, bd, gd);
    checked += fd_check("db", s, bd, (size_t)s->K, db, xd, wd, bd, gd);
    CHECK_MSG(checked >= 3, "only %d finite differences away from ReLU kinks", checked);
    free(x), free(w), free(b), free(g), free(y), free(dx), free(dw), free(db), free(scratch),
        free(xd), free(wd), free(bd), free(gd);
}

static void test_fd(void) {
    /* The small shapes only: each difference is two whole forwards. */
    for (int i = 0; i < NUM_FIXED + NUM_RANDOM; i++) {
        cr_conv2d_shape s = shape_at(i);
        if ((double)y_count(&s) * s.C * s.R * s.S <= 2e5) fd_case(&s);
    }
}

/* ---- threads ---------------------------------------------------------------------------------- */

static void test_threads(void) {
    static const int shapes[][9] = {{3, 32, 20, 20, 64, 4, 4, 2, 0}, {2, 4, 30, 30, 32, 8, 8, 4, 1}};
    for (int c = 0; c < 2; c++) {
        cr_conv2d_shape s = shape_from(shapes[c]);
        size_t nx = x_count(&s), ny = y_count(&s), nw = w_count(&s);
        float *x = uniform_floats(nx, -1, 1), *w = uniform_floats(nw, -1, 1);
        float *b = uniform_floats((size_t)s.K, -1, 1), *dy = uniform_floats(ny, -1, 1);
        float *out[2][4];
        void *scratch = scratch_for(&s);
        for (int t = 0; t < 2; t++) {
            cr_cpu_set_threads(t + 1);
            out[t][0] = floats(ny), out[t][1] = floats(nx), out[t][2] = floats(nw);
            out[t][3] = floats((size_t)s.K);
            cr_cpu_conv2d_forward(&s, x, w, b, out[t][0], 1, scratch);
            cr_cpu_conv2d_backward(&s, x, w, out[t][0], dy, out[t][1], out[t][2], out[t][3],
                                   scratch);
        }
        cr_cpu_set_threads(1);
        CHECK_MSG(bits_equal(out[0][0], out[1][0], ny) && bits_equal(out[0][1], out[1][1], nx) &&
                      bits_equal(out[0][2], out[1][2], nw) &&
                      bits_equal(out[0][3], out[1][3], (size_t)s.K),
                  "1 and 2 threads differ (shape %d)", c);
        for (int t = 0; t < 2; t++)
            for (int j = 0; j < 4; j++) free(out[t][j]);
        free(x), free(w), free(b), free(dy), free(scratch);
    }
}

/* ---- scale ------------------------------------------------------------------------------------ */

static void test_scale(void) {
    enum { N = 1000 };
    uint8_t x[N];
    float *y = floats(N);
    for (int i = 0; i < N; i++) x[i] = (uint8_t)(i * 37 + i / 256);
    cr_cpu_scale_u8(x, y, N);
    for (int i = 0; i < N; i++) {
        /* v / 255 rounded once to float: what a float division (and PyTorch's) gives. */
        float want = (float)((double)x[i] / 255.0);
        CHECK_MSG(y[i] == want, "scale(%d) = %.9g, expected %.9g", x[i], (double)y[i],
                  (double)want);
    }
    uint8_t ends[2] = {0, 255};
    cr_cpu_scale_u8(ends, y, 2);
    CHECK(y[0] == 0.0f && y[1] == 1.0f);
    free(y);
}

/* ---- main ------------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
    static const struct {
        const char *name;
        void (*run)(void);
    } tests[] = {{"shape", test_shape}, {"forward", test_forward}, {"backward", test_backward},
                 {"fd", test_fd},       {"threads", test_threads}, {"scale", test_scale}};
    cr_philox_seed(&rng, 2025, 0);
    cr_cpu_set_threads(1);
    int ran = 0;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (argc > 1 && strcmp(argv[1], tests[i].name) != 0) continue;
        tests[i].run();
        printf("ok %s\n", tests[i].name);
        ran++;
    }
    CHECK_MSG(ran > 0, "unknown part '%s'", argc > 1 ? argv[1] : "");
    return 0;
}
