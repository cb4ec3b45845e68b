/* The CUDA convolution ops (cuDNN, src/ops/cuda/conv2d_cudnn.cu) against the CPU ops (the
 * specification, src/ops/cpu/conv2d*.c) on the same Philox inputs: forward with and without the
 * fused ReLU, backward with and without the ReLU mask and dx, over edge-case shapes (C = 1,
 * K = 1, batch 1, stride 1 to 4, padding 0 and 1, odd and non-square sizes, kernels as large as
 * the padded input), the Nature-CNN and MinAtar layers at batch 32, and random shapes. Each
 * result is held to the tolerance of the table below, which says why it is what it is; GPU
 * outputs and the workspace are poisoned (every byte 0xFF, NaN) before each run, so an element
 * a kernel forgets to write fails. Besides: every run repeats bit for bit, a captured graph of
 * the Nature-CNN trunk replays the eager ops bit for bit, the uint8 scaling equals the CPU's
 * bit for bit, and bad shapes get a status, not an abort.
 *
 * Usage: test_conv_cuda [group]   group: plan layers random graph scale (all when omitted).
 * Needs a GPU (ctest label gpu); without one it fails and says so. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/core.h"
#include "ops/backend.h"
#include "ops/cpu/ops_conv.h"
#include "ops/cpu/ops_dqn.h"
#include "ops/cuda/conv2d_cuda.h"
#include "ops/cuda/cuda_backend.h"

static cudarl_ctx gpu;
static cr_philox_state prng;
static char case_name[200]; /* the case being checked, for failure messages */

#define CASE(...) snprintf(case_name, sizeof case_name, __VA_ARGS__)
#define F(n) ((size_t)(n) * sizeof(float))

/* ---- tolerances ---------------------------------------------------------------------------- */

typedef enum tol_kind {
    EXACT,  /* the same bits */
    SCALED, /* ||got - want||_2 <= coef u ||mag||_2, u = 2^-24, mag[i] = sum of |terms| of i */
} tol_kind;

typedef struct tolerance {
    const char *name;
    tol_kind kind;
    double coef;
    const char *why;
} tolerance;

/* Why SCALED with coef 8 for the four results of a convolution. Each element is a float sum of
 * T products (T = C R S + 1 for y, K R S / stride^2 or so for dx, N P Q for dw and db), taken by
 * cuDNN in its GEMM order (FMA math, no TF32, GEMM-family algorithms only: conv2d_cudnn.cu) and by the
 * CPU in im2row + linear's order. The inputs here are zero-mean (uniform in [-1, 1]), so a sum's
 * partial sums wander like sqrt(i) and its rounding errors, u |partial sum| each with random
 * sign, add up to about 0.5 u sum|terms| rms, whatever T (u sqrt(T / 6) of a sum that is itself
 * ~sqrt(T) terms); the two sides together ~0.7 u. Measuring against mag = sum|terms| (the CPU op
 * run on |x|, |w|, |b|, |dy|) rather than against the result keeps outputs that cancel to
 * nearly 0 from looking inaccurate. 8 u leaves a factor > 10; an indexing bug, a dropped tap,
 * image or bias is off by at least one term, ~1/T of mag (T <= 12,800 here: >= 8e-5, against
 * 8 u = 4.8e-7). (All-positive inputs, raw pixels, would make partial sums grow like i and the
 * error like sqrt(T) u sum|terms|: this bound is for the zero-mean data of this test.) */
static const tolerance tolerances[] = {
    {"conv.y", SCALED, 8,
     "C R S products and the bias, cuDNN's GEMM order against im2row + linear's"},
    {"conv.dx", SCALED, 8,
     "up to K ceil(R/stride) ceil(S/stride) products per input element, cuDNN's backward-data "
     "GEMM order against the CPU's dcol = dy w then row2im"},
    {"conv.dw", SCALED, 8,
     "N P Q products per weight: cuDNN's backward-filter GEMM order against the CPU's per-image "
     "sums added image by image"},
    {"conv.db", SCALED, 8,
     "N P Q terms: the GPU sums in double (error ~1e-16), the CPU in float per image, then "
     "image by image: the CPU's rounding alone"},
    {"conv.relu", EXACT, 0,
     "the fused ReLU is the plain forward's own output through v < 0 ? 0 : v "
     "(cr_cpu_relu_forward), bit for bit: the same cuDNN call, bias addition and select"},
    {"conv.mask", EXACT, 0,
     "backward with y_relu is backward without it on dy masked by y <= 0 ? 0 : dy "
     "(cr_cpu_relu_backward), bit for bit: the same select and then the same deterministic ops"},
    {"conv.no_dx", EXACT, 0, "dx = NULL skips one cuDNN call; dw and db are untouched by it"},
    {"conv.dy", EXACT, 0, "dy is an input: the ReLU mask goes to the workspace, not into dy"},
    {"conv.repeat", EXACT, 0,
     "deterministic cuDNN algorithms only, chosen by heuristics (not timing) once per plan, "
     "and bias sums in a fixed order: the same inputs give the same bits"},
    {"graph", EXACT, 0, "a replay runs the same kernels on the same data"},
    {"scale", EXACT, 0, "one IEEE division by 255 correctly rounded on both sides (__fdiv_rn)"},
};

static const tolerance *tolerance_of(const char *name) {
    for (size_t i = 0; i < sizeof tolerances / sizeof tolerances[0]; i++)
        if (strcmp(tolerances[i].name, name) == 0) return &tolerances[i];
    CHECK_MSG(0, "no tolerance named '%s'", name);
    return NULL;
}

static void fail_at(const tolerance *t, size_t i, double want, double got, const char *note) {
    fprintf(stderr,
            "FAIL %s (%s) at index %zu: expected %.9g, got %.9g%s\n  tolerance: %s, coef %g: "
            "%s\n",
            t->name, case_name, i, want, got, note,
            t->kind == EXACT ? "exact" : "||got - want|| <= coef 2^-24 ||sum of |terms|||",
            t->coef, t->why);
    exit(1);
}

/* got (GPU) against want, n floats, under tolerance `name`; mag (n) for SCALED, else NULL. */
static void compare(const char *name, const float *got, const float *want, const float *mag,
                    size_t n) {
    const tolerance *t = tolerance_of(name);
    double err2 = 0, mag2 = 0, worst = -1;
    size_t worst_i = 0;
    for (size_t i = 0; i < n; i++) {
        int same = memcmp(&got[i], &want[i], sizeof(float)) == 0;
        if (t->kind == EXACT) {
            if (!same) fail_at(t, i, want[i], got[i], "");
            continue;
        }
        if (isnan(got[i]) || isnan(want[i])) fail_at(t, i, want[i], got[i], " (NaN)");
        double e = fabs((double)got[i] - (double)want[i]);
        err2 += e * e, mag2 += (double)mag[i] * mag[i];
        if (e > worst) worst = e, worst_i = i;
    }
    if (t->kind == SCALED && !(sqrt(err2) <= t->coef * 0x1p-24 * sqrt(mag2))) {
        char note[128];
        snprintf(note, sizeof note, " (the worst element; error norm %.3g, bound %.3g)",
                 sqrt(err2), t->coef * 0x1p-24 * sqrt(mag2));
        fail_at(t, worst_i, want[worst_i], got[worst_i], note);
    }
}

/* ---- buffers ------------------------------------------------------------------------------- */

/* Host and device buffers of the running case, freed together by end_case(). */
#define MAX_BUFS 256
static void *host_bufs[MAX_BUFS];
static cr_arena dev_bufs[MAX_BUFS];
static int n_host, n_dev;

static void *host(size_t bytes) {
    CHECK_MSG(n_host < MAX_BUFS, "raise MAX_BUFS");
    void *p = malloc(bytes ? bytes : 1);
    CHECK(p != NULL);
    return host_bufs[n_host++] = p;
}

static float *host_floats(size_t n) {
    float *p = host(F(n));
    for (size_t i = 0; i < n; i++) p[i] = NAN;
    return p;
}

static float *uniform_floats(size_t n) { /* in [-1, 1) */
    float *p = host(F(n));
    for (size_t i = 0; i < n; i++) p[i] = 2.0f * cr_philox_uniform(&prng) - 1.0f;
    return p;
}

static float *abs_floats(const float *x, size_t n) {
    float *p = host(F(n));
    for (size_t i = 0; i < n; i++) p[i] = fabsf(x[i]);
    return p;
}

/* bytes of device memory through the backend's own arena. */
static void *dev(size_t bytes) {
    CHECK_MSG(n_dev < MAX_BUFS, "raise MAX_BUFS");
    cr_plan p;
    cr_plan_init(&p);
    cr_plan_add(&p, "test", bytes ? bytes : 1);
    CHECK_OK(gpu.ops->arena_alloc(&gpu, &dev_bufs[n_dev], &p));
    return dev_bufs[n_dev++].base;
}

static void end_case(void) {
    while (n_host > 0) free(host_bufs[--n_host]);
    while (n_dev > 0) gpu.ops->arena_free(&gpu, &dev_bufs[--n_dev]);
}

static void up(void *d, const void *h, size_t bytes) { gpu.ops->copy_from_host(&gpu, d, h, bytes); }

static void *dev_copy(const void *h, size_t bytes) {
    void *d = dev(bytes);
    up(d, h, bytes);
    return d;
}

/* Every byte 0xFF: NaN as a float. */
static void poison(void *d, size_t bytes) {
    unsigned char *h = malloc(bytes ? bytes : 1);
    CHECK(h != NULL);
    memset(h, 0xFF, bytes);
    up(d, h, bytes);
    free(h);
}

/* A host copy of n floats of device memory (waits for the stream). */
static float *fetch(const float *d, size_t n) {
    float *h = host(F(n));
    gpu.ops->copy_to_host(&gpu, h, d, F(n));
    return h;
}

/* ---- shapes -------------------------------------------------------------------------------- */

/* N, C, H, W, K, R, S, stride, pad: edge cases, then the two policies' layers at batch 32. */
static const int layer_shapes[][9] = {
    {1, 1, 5, 5, 1, 3, 3, 1, 0},      /* C = 1, K = 1, batch 1 */
    {2, 3, 7, 9, 4, 3, 3, 1, 1},      /* padding 1, H != W */
    {3, 2, 11, 10, 5, 4, 4, 2, 0},    /* stride 2, a row of the input unused */
    {2, 4, 13, 13, 3, 8, 8, 4, 0},    /* stride 4, 8x8 kernel */
    {1, 5, 6, 7, 2, 2, 3, 3, 1},      /* R != S, stride 3 and padding 1 */
    {2, 3, 15, 17, 6, 3, 5, 4, 1},    /* stride 4 with padding, odd sizes */
    {2, 3, 5, 5, 6, 5, 5, 1, 1},      /* kernel as large as the input */
    {1, 2, 3, 3, 2, 3, 3, 2, 1},      /* every patch touches the padding */
    {1, 2, 4, 4, 3, 5, 5, 1, 1},      /* kernel larger than the input, inside the padding */
    {2, 1, 9, 9, 1, 1, 1, 1, 0},      /* 1x1 kernel, C = K = 1 */
    {2, 3, 1, 1, 2, 1, 1, 1, 0},      /* 1x1 image */
    {1, 1, 1, 1, 1, 3, 3, 1, 1},      /* 1x1 image, all but the centre is padding */
    {1, 7, 33, 31, 9, 7, 7, 3, 0},    /* odd everything */
    {32, 4, 10, 10, 16, 3, 3, 1, 0},  /* MinAtar conv (Breakout, Asterix: 4 channels) */
    {32, 10, 10, 10, 16, 3, 3, 1, 0}, /* MinAtar conv (Seaquest: 10 channels) */
    {32, 4, 84, 84, 32, 8, 8, 4, 0},  /* Nature-CNN conv1 */
    {32, 32, 20, 20, 64, 4, 4, 2, 0}, /* Nature-CNN conv2 */
    {32, 64, 9, 9, 64, 3, 3, 1, 0},   /* Nature-CNN conv3 */
};
#define NUM_LAYERS ((int)(sizeof layer_shapes / sizeof layer_shapes[0]))
#define FIRST_NET 13 /* layer_shapes[FIRST_NET..]: the networks' layers, described when run */
#define NUM_RANDOM 40

static int rand_int(int lo, int hi) { /* uniform in [lo, hi] */
    return lo + (int)(cr_philox_next_u32(&prng) % (uint32_t)(hi - lo + 1));
}

static cr_conv2d_shape shape_from(const int *a) {
    cr_conv2d_shape s = {.N = a[0], .C = a[1], .H = a[2], .W = a[3], .K = a[4], .R = a[5],
                         .S = a[6], .stride = a[7], .pad = a[8]};
    CHECK_OK(cr_conv2d_shape_check(&s));
    return s;
}

/* A random shape: stride 1..4, padding 0..1, any sizes up to 21, a kernel that fits. */
static cr_conv2d_shape random_shape(void) {
    int a[9];
    a[0] = rand_int(1, 4), a[1] = rand_int(1, 8), a[2] = rand_int(1, 21), a[3] = rand_int(1, 21);
    a[4] = rand_int(1, 12), a[7] = rand_int(1, 4), a[8] = rand_int(0, 1);
    int hp = a[2] + 2 * a[8], wp = a[3] + 2 * a[8];
    a[5] = rand_int(1, hp < 8 ? hp : 8), a[6] = rand_int(1, wp < 8 ? wp : 8);
    return shape_from(a);
}

static size_t x_count(const cr_conv2d_shape *s) { return (size_t)s->N * s->C * s->H * s->W; }
static size_t y_count(const cr_conv2d_shape *s) { return (size_t)s->N * s->K * s->P * s->Q; }
static size_t w_count(const cr_conv2d_shape *s) { return (size_t)s->K * s->C * s->R * s->S; }

/* ---- one layer ----------------------------------------------------------------------------- */

/* The results of one layer: forward without and with ReLU, backward without and with the mask. */
typedef struct results {
    float *y, *yr, *dx, *dw, *db, *dxm, *dwm, *dbm;
} results;

/* Device buffers of one layer's GPU run. */
typedef struct dev_layer {
    const cr_cuda_conv2d_plan *plan;
    const float *x, *w, *b, *dy, *y_relu; /* y_relu: the CPU's forward with ReLU */
    float *y, *yr, *dx, *dw, *db, *dxm, *dwm, *dbm;
    void *workspace; /* 4 bytes past a 64-byte boundary: the plan must align it itself */
    size_t ws_bytes;
} dev_layer;

/* Poisons d's outputs and workspace, runs the four ops, and fetches the results. */
static results gpu_run(const cr_conv2d_shape *s, dev_layer *d) {
    size_t nx = x_count(s), ny = y_count(s), nw = w_count(s), nk = (size_t)s->K;
    float *outs[] = {d->y, d->yr, d->dx, d->dw, d->db, d->dxm, d->dwm, d->dbm};
    size_t sizes[] = {ny, ny, nx, nw, nk, nx, nw, nk};
    for (int i = 0; i < 8; i++) poison(outs[i], F(sizes[i]));
    poison(d->workspace, d->ws_bytes);
    cr_cuda_conv2d_forward(&gpu, d->plan, d->x, d->w, d->b, d->y, 0, d->workspace);
    cr_cuda_conv2d_forward(&gpu, d->plan, d->x, d->w, d->b, d->yr, 1, d->workspace);
    cr_cuda_conv2d_backward(&gpu, d->plan, d->x, d->w, NULL, d->dy, d->dx, d->dw, d->db,
                            d->workspace);
    cr_cuda_conv2d_backward(&gpu, d->plan, d->x, d->w, d->y_relu, d->dy, d->dxm, d->dwm, d->dbm,
                            d->workspace);
    results r = {fetch(d->y, ny),  fetch(d->yr, ny),  fetch(d->dx, nx),  fetch(d->dw, nw),
                 fetch(d->db, nk), fetch(d->dxm, nx), fetch(d->dwm, nw), fetch(d->dbm, nk)};
    return r;
}

static void compare_all(const char *name, const results *got, const results *want,
                        const cr_conv2d_shape *s) {
    size_t nx = x_count(s), ny = y_count(s), nw = w_count(s), nk = (size_t)s->K;
    compare(name, got->y, want->y, NULL, ny);
    compare(name, got->yr, want->yr, NULL, ny);
    compare(name, got->dx, want->dx, NULL, nx);
    compare(name, got->dw, want->dw, NULL, nw);
    compare(name, got->db, want->db, NULL, nk);
    compare(name, got->dxm, want->dxm, NULL, nx);
    compare(name, got->dwm, want->dwm, NULL, nw);
    compare(name, got->dbm, want->dbm, NULL, nk);
}

static void layer_case(cr_conv2d_shape s, int describe) {
    CASE("N=%d C=%d H=%d W=%d K=%d R=%d S=%d stride=%d pad=%d", s.N, s.C, s.H, s.W, s.K, s.R, s.S,
         s.stride, s.pad);
    size_t nx = x_count(&s), ny = y_count(&s), nw = w_count(&s), nk = (size_t)s.K;
    float *x = uniform_floats(nx), *w = uniform_floats(nw), *b = uniform_floats(nk);
    float *dy = uniform_floats(ny);

    /* The CPU: results, then the sums of |terms| of each element (the same ops on |inputs|). */
    void *scratch = host(cr_cpu_conv2d_scratch_bytes(&s));
    results want;
    float **wp[] = {&want.y, &want.yr, &want.dx, &want.dw, &want.db, &want.dxm, &want.dwm,
                    &want.dbm};
    size_t sizes[] = {ny, ny, nx, nw, nk, nx, nw, nk};
    for (int i = 0; i < 8; i++) *wp[i] = host_floats(sizes[i]);
    cr_cpu_conv2d_forward(&s, x, w, b, want.y, 0, scratch);
    cr_cpu_conv2d_forward(&s, x, w, b, want.yr, 1, scratch);
    cr_cpu_conv2d_backward(&s, x, w, NULL, dy, want.dx, want.dw, want.db, scratch);
    cr_cpu_conv2d_backward(&s, x, w, want.yr, dy, want.dxm, want.dwm, want.dbm, scratch);
    float *dym = host_floats(ny); /* dy through the ReLU's backward */
    cr_cpu_relu_backward(want.yr, dy, dym, ny);
    float *ax = abs_floats(x, nx), *aw = abs_floats(w, nw), *ab = abs_floats(b, nk);
    float *my = host_floats(ny), *mdx = host_floats(nx), *mdw = host_floats(nw);
    float *mdb = host_floats(nk), *mdxm = host_floats(nx), *mdwm = host_floats(nw);
    float *mdbm = host_floats(nk);
    cr_cpu_conv2d_forward(&s, ax, aw, ab, my, 0, scratch);
    cr_cpu_conv2d_backward(&s, ax, aw, NULL, abs_floats(dy, ny), mdx, mdw, mdb, scratch);
    cr_cpu_conv2d_backward(&s, ax, aw, NULL, abs_floats(dym, ny), mdxm, mdwm, mdbm, scratch);

    /* The GPU. */
    cr_cuda_conv2d_plan *plan = NULL;
    CHECK_OK(cr_cuda_conv2d_plan_init(&gpu, &s, &plan));
    const cr_conv2d_shape *ps = cr_cuda_conv2d_plan_shape(plan);
    CHECK(ps->P == s.P && ps->Q == s.Q);
    if (describe) printf("  %s\n", cr_cuda_conv2d_plan_describe(plan));
    dev_layer d = {.plan = plan};
    d.x = dev_copy(x, F(nx)), d.w = dev_copy(w, F(nw)), d.b = dev_copy(b, F(nk));
    float *d_dy = dev_copy(dy, F(ny));
    d.dy = d_dy, d.y_relu = dev_copy(want.yr, F(ny));
    float **dp[] = {&d.y, &d.yr, &d.dx, &d.dw, &d.db, &d.dxm, &d.dwm, &d.dbm};
    for (int i = 0; i < 8; i++) *dp[i] = dev(F(sizes[i]));
    d.ws_bytes = cr_cuda_conv2d_workspace_bytes(plan);
    d.workspace = (char *)dev(d.ws_bytes + 4) + 4;
    results got = gpu_run(&s, &d);

    compare("conv.y", got.y, want.y, my, ny);
    compare("conv.y", got.yr, want.yr, my, ny);
    compare("conv.dx", got.dx, want.dx, mdx, nx);
    compare("conv.dw", got.dw, want.dw, mdw, nw);
    compare("conv.db", got.db, want.db, mdb, nk);
    compare("conv.dx", got.dxm, want.dxm, mdxm, nx);
    compare("conv.dw", got.dwm, want.dwm, mdwm, nw);
    compare("conv.db", got.dbm, want.dbm, mdbm, nk);

    /* Exact properties of the GPU ops themselves. */
    float *relu = host_floats(ny);
    cr_cpu_relu_forward(got.y, relu, ny);
    compare("conv.relu", got.yr, relu, NULL, ny);
    compare("conv.dy", fetch(d_dy, ny), dy, NULL, ny);
    float *d_dym = dev_copy(dym, F(ny)), *dx2 = dev(F(nx)), *dw2 = dev(F(nw)), *db2 = dev(F(nk));
    poison(dx2, F(nx)), poison(dw2, F(nw)), poison(db2, F(nk));
    cr_cuda_conv2d_backward(&gpu, plan, d.x, d.w, NULL, d_dym, dx2, dw2, db2, d.workspace);
    compare("conv.mask", fetch(dx2, nx), got.dxm, NULL, nx);
    compare("conv.mask", fetch(dw2, nw), got.dwm, NULL, nw);
    compare("conv.mask", fetch(db2, nk), got.dbm, NULL, nk);
    poison(dw2, F(nw)), poison(db2, F(nk));
    cr_cuda_conv2d_backward(&gpu, plan, d.x, d.w, d.y_relu, d.dy, NULL, dw2, db2, d.workspace);
    compare("conv.no_dx", fetch(dw2, nw), got.dwm, NULL, nw);
    compare("conv.no_dx", fetch(db2, nk), got.dbm, NULL, nk);

    /* Again, from poisoned outputs and workspace: the same bits. */
    results again = gpu_run(&s, &d);
    compare_all("conv.repeat", &again, &got, &s);

    cr_cuda_conv2d_plan_free(plan);
    end_case();
}

/* ---- groups -------------------------------------------------------------------------------- */

static void expect_bad(cr_conv2d_shape s) {
    cr_cuda_conv2d_plan *plan = (cr_cuda_conv2d_plan *)&s; /* not NULL: init must clear it */
    cudarl_status st = cr_cuda_conv2d_plan_init(&gpu, &s, &plan);
    CHECK_MSG(st == CUDARL_ERR_INVALID_ARG, "accepted N=%d C=%d H=%d W=%d K=%d R=%d S=%d "
              "stride=%d pad=%d: %s", s.N, s.C, s.H, s.W, s.K, s.R, s.S, s.stride, s.pad,
              cudarl_status_name(st));
    CHECK(plan == NULL);
    CHECK(strstr(cudarl_last_error(), "conv2d") != NULL);
}

static void test_plan(void) {
    CASE("plan");
    cr_conv2d_shape c1 = {.N = 32, .C = 4, .H = 84, .W = 84, .K = 32, .R = 8, .S = 8, .stride = 4};
    cr_cuda_conv2d_plan *plan = NULL;
    CHECK_OK(cr_cuda_conv2d_plan_init(&gpu, &c1, &plan));
    const cr_conv2d_shape *s = cr_cuda_conv2d_plan_shape(plan);
    CHECK(s->P == 20 && s->Q == 20 && s->N == 32 && s->K == 32);
    /* The masked dy (N K P Q floats) lives in the workspace, plus 255 bytes of alignment slack. */
    CHECK(cr_cuda_conv2d_workspace_bytes(plan) >= y_count(s) * sizeof(float) + 255);
    const char *desc = cr_cuda_conv2d_plan_describe(plan);
    CHECK(strstr(desc, "fwd ") && strstr(desc, "bwd data ") && strstr(desc, "bwd filter "));
    printf("  %s\n", desc);
    cr_cuda_conv2d_plan_free(plan);
    cr_cuda_conv2d_plan_free(NULL);

    cr_conv2d_shape b = c1;
    b.N = 0, expect_bad(b);
    b = c1, b.K = 0, expect_bad(b);
    b = c1, b.stride = 0, expect_bad(b);
    b = c1, b.pad = -1, expect_bad(b);
    b = c1, b.H = 7, expect_bad(b); /* an 8x8 kernel on a 7-row input */
    b = c1, b.N = 1 << 20, expect_bad(b); /* 2^20 x 4 x 84 x 84 elements: more than int */
}

static void test_layers(void) {
    for (int i = 0; i < NUM_LAYERS; i++) layer_case(shape_from(layer_shapes[i]), i >= FIRST_NET);
}

static void test_random(void) {
    for (int i = 0; i < NUM_RANDOM; i++) layer_case(random_shape(), 0);
}

/* The Nature-CNN trunk at batch 32, forward (ReLU) and backward (masks; conv1 without dx). */
#define TRUNK 3
typedef struct trunk {
    cr_conv2d_shape s[TRUNK];
    cr_cuda_conv2d_plan *plan[TRUNK];
    /* act[0] = x, act[l + 1] = layer l's output; grad[l] = dy of layer l (grad[3] given,
     * grad[0] NULL: conv1 has no dx) */
    float *act[TRUNK + 1], *grad[TRUNK + 1], *w[TRUNK], *b[TRUNK], *dw[TRUNK], *db[TRUNK];
    void *ws; /* one workspace of the largest plan's size serves the three */
    size_t ws_bytes;
} trunk;

static void trunk_init(trunk *t) {
    static const int shapes[TRUNK][9] = {{32, 4, 84, 84, 32, 8, 8, 4, 0},
                                         {32, 32, 20, 20, 64, 4, 4, 2, 0},
                                         {32, 64, 9, 9, 64, 3, 3, 1, 0}};
    t->ws_bytes = 0;
    for (int l = 0; l < TRUNK; l++) {
        t->s[l] = shape_from(shapes[l]);
        CHECK_OK(cr_cuda_conv2d_plan_init(&gpu, &t->s[l], &t->plan[l]));
        size_t bytes = cr_cuda_conv2d_workspace_bytes(t->plan[l]);
        t->ws_bytes = bytes > t->ws_bytes ? bytes : t->ws_bytes;
    }
    t->ws = dev(t->ws_bytes);
    t->act[0] = dev_copy(uniform_floats(x_count(&t->s[0])), F(x_count(&t->s[0])));
    t->grad[TRUNK] = dev_copy(uniform_floats(y_count(&t->s[2])), F(y_count(&t->s[2])));
    t->grad[0] = NULL;
    for (int l = 0; l < TRUNK; l++) {
        size_t nw = w_count(&t->s[l]), nk = (size_t)t->s[l].K;
        t->w[l] = dev_copy(uniform_floats(nw), F(nw));
        t->b[l] = dev_copy(uniform_floats(nk), F(nk));
        t->dw[l] = dev(F(nw)), t->db[l] = dev(F(nk)), t->act[l + 1] = dev(F(y_count(&t->s[l])));
        if (l > 0) t->grad[l] = dev(F(x_count(&t->s[l])));
    }
}

static void trunk_run(trunk *t) {
    for (int l = 0; l < TRUNK; l++)
        cr_cuda_conv2d_forward(&gpu, t->plan[l], t->act[l], t->w[l], t->b[l], t->act[l + 1], 1,
                               t->ws);
    for (int l = TRUNK - 1; l >= 0; l--)
        cr_cuda_conv2d_backward(&gpu, t->plan[l], t->act[l], t->w[l], t->act[l + 1],
                                t->grad[l + 1], t->grad[l], t->dw[l], t->db[l], t->ws);
}

/* The trunk run eagerly, then captured into a graph and replayed once and twice: the same bits.
 * And once warm, more eager runs take no device memory: cuDNN allocates nothing per call. */
static void test_graph(void) {
    trunk t;
    trunk_init(&t);
    enum { OUTS = 4 * TRUNK - 1 }; /* y, dw, db of each layer; dx of conv2 and conv3 */
    float *outs[OUTS], *eager[OUTS];
    size_t counts[OUTS];
    int n_out = 0;
    for (int l = 0; l < TRUNK; l++) {
        outs[n_out] = t.act[l + 1], counts[n_out++] = y_count(&t.s[l]);
        outs[n_out] = t.dw[l], counts[n_out++] = w_count(&t.s[l]);
        outs[n_out] = t.db[l], counts[n_out++] = (size_t)t.s[l].K;
        if (l > 0) outs[n_out] = t.grad[l], counts[n_out++] = x_count(&t.s[l]);
    }
    CHECK(n_out == OUTS);
    void *graph = NULL;
    for (int pass = 0; pass < 3; pass++) { /* eager, captured and launched once, twice */
        for (int i = 0; i < OUTS; i++) poison(outs[i], F(counts[i]));
        poison(t.ws, t.ws_bytes);
        if (pass == 0) trunk_run(&t);
        if (pass == 1) {
            CHECK_OK(gpu.ops->graph_begin(&gpu));
            trunk_run(&t);
            CHECK_OK(gpu.ops->graph_end(&gpu, &graph));
            CHECK(graph != NULL);
        }
        for (int k = 0; k < pass; k++) gpu.ops->graph_launch(&gpu, graph);
        for (int i = 0; i < OUTS; i++) {
            CASE("Nature-CNN trunk, output %d, pass %d (0 eager, 1 graph, 2 graph twice)", i,
                 pass);
            float *h = fetch(outs[i], counts[i]);
            if (pass == 0) eager[i] = h;
            else compare("graph", h, eager[i], NULL, counts[i]);
        }
    }
    gpu.ops->graph_free(graph);

    CASE("Nature-CNN trunk, 20 more eager runs");
    size_t free0 = 0, free1 = 0, total = 0, allocs = cr_cuda_alloc_count();
    gpu.ops->sync(&gpu);
    CHECK_OK(cr_cuda_mem_info(&gpu, &free0, &total));
    for (int r = 0; r < 20; r++) trunk_run(&t);
    gpu.ops->sync(&gpu);
    CHECK_OK(cr_cuda_mem_info(&gpu, &free1, &total));
    CHECK_MSG(free1 == free0 && cr_cuda_alloc_count() == allocs,
              "device memory free before %zu, after %zu bytes; backend allocations %zu more",
              free0, free1, cr_cuda_alloc_count() - allocs);
    for (int l = 0; l < TRUNK; l++) cr_cuda_conv2d_plan_free(t.plan[l]);
    end_case();
}

static void scale_case(size_t n, size_t offset) {
    CASE("scale n=%zu, offset %zu", n, offset);
    uint8_t *x = host(n + offset);
    for (size_t i = 0; i < n + offset; i++) /* 0..255 first, then random bytes */
        x[i] = (uint8_t)(i < 256 ? i : cr_philox_next_u32(&prng));
    float *want = host_floats(n);
    cr_cpu_scale_u8(x + offset, want, n);
    uint8_t *d_x = dev_copy(x, n + offset);
    float *d_y = dev(F(n) + F(1));
    poison(d_y, F(n) + F(1));
    cr_cuda_scale_u8(&gpu, d_x + offset, d_y, n);
    float *got = fetch(d_y, n + 1);
    compare("scale", got, want, NULL, n);
    CHECK_MSG(isnan(got[n]), "scale wrote past its n = %zu elements", n);
    end_case();
}

static void test_scale(void) {
    scale_case(256, 0);              /* every value once */
    scale_case(1000003, 3);          /* odd size, unaligned input */
    scale_case(0, 0);                /* nothing to do, nothing written */
    scale_case(32 * 4 * 84 * 84, 0); /* a batch of stacked Atari frames */
}

/* ---- main ---------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
    static const struct {
        const char *name;
        void (*run)(void);
    } tests[] = {{"plan", test_plan},   {"layers", test_layers}, {"random", test_random},
                 {"graph", test_graph}, {"scale", test_scale}};
    int known = argc < 2;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0] && !known; i++)
        known = strcmp(argv[1], tests[i].name) == 0;
    CHECK_MSG(known, "unknown group '%s'", argv[1]);
    cudarl_status st = cr_cuda_ctx_init(&gpu, 0);
    if (st != CUDARL_OK) {
        fprintf(stderr, "FAIL test_conv_cuda needs a CUDA GPU and could not open one: %s: %s\n",
                cudarl_status_name(st), cudarl_last_error());
        return 1;
    }
    cr_philox_seed(&prng, 2026, 0);
    cr_cpu_set_threads(1);
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (argc > 1 && strcmp(argv[1], tests[i].name) != 0) continue;
        tests[i].run();
        printf("ok %s\n", tests[i].name);
    }
    cr_cuda_ctx_free(&gpu);
    return 0;
}
