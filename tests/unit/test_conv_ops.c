/* The conv2d ops of the op table (ops/conv2d.h) against a direct reference: every output of a
 * layer (y = act(conv(x, w) + b); dx, dw, db from dy) summed in double straight from the
 * definition, on small shapes (stride 1 to 3, padding 0 and 1, C = 1, K = 1, batch 1 and 3,
 * non-square), each activation, through ctx->ops. Each value must be within
 *     tol = (terms * 2^-24 + products) * mag + 2^-22 |want|
 * of the reference, where mag is the same sum over the terms' absolute values (the worst-case
 * bound of a float sum of `terms` products in any order), products is 0 for fp32 and the
 * relative error of one product of two rounded inputs for bf16 (2^-7) and fp16 (2^-10), and the
 * last term covers tanh's own rounding (cr_tanhf: a few ulp). A mixed plan's dx has one rounding
 * more: its dcol matrix is stored in the format before col2im sums it (half of `products`
 * again: the format's unit roundoff). The backward is handed the
 * reference's y, so the activation's mask and derivative read the same values on both sides.
 *
 *   test_conv_ops cpu   the CPU backend's entries, and its refusals (bad shape, half products)
 *   test_conv_ops gpu   the CUDA backend's: the gemm engine in fp32, bf16 and fp16 products,
 *                       the cudnn engine where built; besides the reference, every run repeats
 *                       bit for bit and a mixed plan's backward gives the same bits whether its
 *                       forward's im2col matrix was kept or is rebuilt. Needs a GPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/core.h"
#include "ops/backend.h"

static cudarl_ctx *ctx;
static cr_philox_state rng;

/* N C H W K R S stride pad */
static const int shapes[][9] = {
    {1, 1, 5, 5, 1, 3, 3, 1, 0},  {3, 2, 7, 6, 4, 3, 3, 1, 1}, {2, 3, 9, 9, 5, 4, 4, 2, 0},
    {3, 4, 12, 10, 3, 5, 3, 3, 1}, {2, 4, 20, 20, 8, 8, 8, 4, 0}, {3, 7, 10, 10, 16, 3, 3, 1, 0},
};

static double tanh_d(double v) { return tanh(v); }

typedef struct layer {
    cr_conv2d_shape s;
    size_t nx, ny, nw;
    float *x, *w, *b, *dy;         /* inputs (host) */
    double *y, *mag_y;             /* reference forward and its magnitude */
    float *yf;                     /* the reference y as float, for the backward */
    double *dx, *dw, *db, *mag_dx, *mag_dw, *mag_db;
} layer;

static float uniform(void) { return 2.0f * cr_philox_uniform(&rng) - 1.0f; }

static void *xmalloc(size_t n) {
    void *p = calloc(1, n ? n : 1);
    CHECK(p != NULL);
    return p;
}

/* The reference: forward, then the backward of dy through act. */
static void reference(layer *L, cr_conv2d_act act) {
    const cr_conv2d_shape *s = &L->s;
    for (int n = 0; n < s->N; n++)
        for (int k = 0; k < s->K; k++)
            for (int p = 0; p < s->P; p++)
                for (int q = 0; q < s->Q; q++) {
                    double v = L->b[k], m = fabs(L->b[k]);
                    for (int c = 0; c < s->C; c++)
                        for (int r = 0; r < s->R; r++)
                            for (int t = 0; t < s->S; t++) {
                                int h = p * s->stride - s->pad + r, w = q * s->stride - s->pad + t;
                                if (h < 0 || h >= s->H || w < 0 || w >= s->W) continue;
                                double xv = L->x[((size_t)(n * s->C + c) * s->H + h) * s->W + w];
                                double wv = L->w[((size_t)(k * s->C + c) * s->R + r) * s->S + t];
                                v += xv * wv, m += fabs(xv * wv);
                            }
                    size_t i = ((size_t)(n * s->K + k) * s->P + p) * s->Q + q;
                    if (act == CR_CONV2D_RELU) v = v < 0 ? 0 : v;
                    if (act == CR_CONV2D_TANH) v = tanh_d(v);
                    L->y[i] = v, L->mag_y[i] = m, L->yf[i] = (float)v;
                }
    memset(L->dx, 0, L->nx * sizeof(double)), memset(L->mag_dx, 0, L->nx * sizeof(double));
    memset(L->dw, 0, L->nw * sizeof(double)), memset(L->mag_dw, 0, L->nw * sizeof(double));
    memset(L->db, 0, s->K * sizeof(double)), memset(L->mag_db, 0, s->K * sizeof(double));
    for (int n = 0; n < s->N; n++)
        for (int k = 0; k < s->K; k++)
            for (int p = 0; p < s->P; p++)
                for (int q = 0; q < s->Q; q++) {
                    size_t i = ((size_t)(n * s->K + k) * s->P + p) * s->Q + q;
                    double g = L->dy[i], y = L->yf[i];
                    if (act == CR_CONV2D_RELU) g = y <= 0 ? 0 : g;
                    if (act == CR_CONV2D_TANH) g = g * (1.0 - y * y);
                    L->db[k] += g, L->mag_db[k] += fabs(g);
                    for (int c = 0; c < s->C; c++)
                        for (int r = 0; r < s->R; r++)
                            for (int t = 0; t < s->S; t++) {
                                int h = p * s->stride - s->pad + r, w = q * s->stride - s->pad + t;
                                if (h < 0 || h >= s->H || w < 0 || w >= s->W) continue;
                                size_t xi = ((size_t)(n * s->C + c) * s->H + h) * s->W + w;
                                size_t wi = ((size_t)(k * s->C + c) * s->R + r) * s->S + t;
                                L->dw[wi] += g * L->x[xi], L->mag_dw[wi] += fabs(g * L->x[xi]);
                                L->dx[xi] += g * L->w[wi], L->mag_dx[xi] += fabs(g * L->w[wi]);
                            }
                }
}

static layer make_layer(const int *a) {
    layer L;
    memset(&L, 0, sizeof L);
    L.s = (cr_conv2d_shape){.N = a[0], .C = a[1], .H = a[2], .W = a[3], .K = a[4], .R = a[5],
                            .S = a[6], .stride = a[7], .pad = a[8]};
    CHECK_OK(cr_conv2d_shape_check(&L.s));
    L.nx = (size_t)L.s.N * L.s.C * L.s.H * L.s.W;
    L.ny = (size_t)L.s.N * L.s.K * L.s.P * L.s.Q;
    L.nw = (size_t)L.s.K * L.s.C * L.s.R * L.s.S;
    L.x = xmalloc(L.nx * 4), L.w = xmalloc(L.nw * 4), L.b = xmalloc(L.s.K * 4);
    L.dy = xmalloc(L.ny * 4), L.yf = xmalloc(L.ny * 4);
    L.y = xmalloc(L.ny * 8), L.mag_y = xmalloc(L.ny * 8);
    L.dx = xmalloc(L.nx * 8), L.mag_dx = xmalloc(L.nx * 8);
    L.dw = xmalloc(L.nw * 8), L.mag_dw = xmalloc(L.nw * 8);
    L.db = xmalloc(L.s.K * 8), L.mag_db = xmalloc(L.s.K * 8);
    for (size_t i = 0; i < L.nx; i++) L.x[i] = uniform();
    for (size_t i = 0; i < L.nw; i++) L.w[i] = 0.5f * uniform();
    for (int i = 0; i < L.s.K; i++) L.b[i] = 0.25f * uniform();
    for (size_t i = 0; i < L.ny; i++) L.dy[i] = uniform();
    return L;
}

static void free_layer(layer *L) {
    void *p[] = {L->x, L->w, L->b, L->dy, L->yf, L->y, L->mag_y, L->dx, L->mag_dx,
                 L->dw, L->mag_dw, L->db, L->mag_db};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) free(p[i]);
}

static void compare(const char *what, const char *name, const float *got, const double *want,
                    const double *mag, size_t n, int terms, double products) {
    for (size_t i = 0; i < n; i++) {
        double tol = (terms * 0x1p-24 + products) * mag[i] + 0x1p-22 * fabs(want[i]) + 1e-30;
        CHECK_MSG(fabs((double)got[i] - want[i]) <= tol,
                  "%s %s[%zu]: want %.9g, got %.9g (tolerance %.3g)", name, what, i, want[i],
                  (double)got[i], tol);
    }
}

/* Backend memory of ctx. */
static void *dev(cr_arena *a, size_t bytes) {
    cr_plan p;
    cr_plan_init(&p);
    cr_plan_add(&p, "buf", bytes ? bytes : 1);
    CHECK_OK(ctx->ops->arena_alloc(ctx, a, &p));
    return a->base;
}

/* Runs desc on L through ctx->ops and compares with the reference; returns the forward's y. */
static void run_case(layer *L, const cr_conv2d_desc *d, double products, const char *name) {
    const cr_backend *o = ctx->ops;
    cr_conv2d_plan *plan = NULL;
    CHECK_OK(o->conv2d_plan_init(ctx, d, &plan));
    CHECK(plan->desc.shape.P == L->s.P && plan->desc.shape.Q == L->s.Q);
    enum { X, W, B, Y, DY, DX, DW, DB, WS, KEEP, NBUF };
    cr_arena a[NBUF];
    memset(a, 0, sizeof a);
    size_t bytes[NBUF] = {L->nx * 4, L->nw * 4, L->s.K * 4, L->ny * 4, L->ny * 4,
                          L->nx * 4, L->nw * 4, L->s.K * 4, plan->workspace_bytes,
                          plan->keep_bytes};
    void *m[NBUF];
    for (int i = 0; i < NBUF; i++) m[i] = dev(&a[i], bytes[i]);
    void *keep = plan->keep_bytes ? m[KEEP] : NULL;
    o->copy_from_host(ctx, m[X], L->x, bytes[X]);
    o->copy_from_host(ctx, m[W], L->w, bytes[W]);
    o->copy_from_host(ctx, m[B], L->b, bytes[B]);
    float *y = xmalloc(bytes[Y]), *y2 = xmalloc(bytes[Y]);
    o->conv2d_forward(ctx, plan, m[X], m[W], m[B], m[Y], m[WS], keep);
    o->copy_to_host(ctx, y, m[Y], bytes[Y]);
    compare("y", name, y, L->y, L->mag_y, L->ny, L->s.C * L->s.R * L->s.S + 1, products);
    o->conv2d_forward(ctx, plan, m[X], m[W], m[B], m[Y], m[WS], keep);
    o->copy_to_host(ctx, y2, m[Y], bytes[Y]);
    CHECK_MSG(!memcmp(y, y2, bytes[Y]), "%s: a second forward gave other bits", name);
    /* backward on the reference's y; dy may be overwritten, so it is uploaded each time */
    o->copy_from_host(ctx, m[Y], L->yf, bytes[Y]);
    float *g[3], *g2[3];
    const int out[3] = {DX, DW, DB};
    for (int k = 0; k < 3; k++) g[k] = xmalloc(bytes[out[k]]), g2[k] = xmalloc(bytes[out[k]]);
    for (int rep = 0; rep < 2; rep++) {
        o->copy_from_host(ctx, m[DY], L->dy, bytes[DY]);
        /* kept: the forward above left this x's matrix; the second run rebuilds it */
        o->conv2d_backward(ctx, plan, m[X], m[W], m[Y], m[DY], d->no_dx ? NULL : m[DX], m[DW],
                           m[DB], m[WS], keep, rep == 0);
        for (int k = 0; k < 3; k++)
            if (k || !d->no_dx) o->copy_to_host(ctx, rep ? g2[k] : g[k], m[out[k]], bytes[out[k]]);
    }
    const int n_terms = L->s.N * L->s.P * L->s.Q; /* dw, db: over the batch's pixels */
    if (!d->no_dx) compare("dx", name, g[0], L->dx, L->mag_dx, L->nx, L->s.K * L->s.R * L->s.S,
                           1.5 * products);
    compare("dw", name, g[1], L->dw, L->mag_dw, L->nw, n_terms, products);
    compare("db", name, g[2], L->db, L->mag_db, L->s.K, n_terms, 0);
    for (int k = 0; k < 3; k++)
        CHECK_MSG((k == 0 && d->no_dx) || !memcmp(g[k], g2[k], bytes[out[k]]),
                  "%s: the backward's %s changed between kept and rebuilt (or repeated) runs",
                  name, k == 0 ? "dx" : k == 1 ? "dw" : "db");
    for (int k = 0; k < 3; k++) free(g[k]), free(g2[k]);
    free(y), free(y2);
    for (int i = 0; i < NBUF; i++) ctx->ops->arena_free(ctx, &a[i]);
    o->conv2d_plan_free(plan);
}

static void run_all(const cr_conv2d_engine *engines, int nengines,
                    const cudarl_precision *products, int nproducts) {
    static const char *const act_names[] = {"identity", "relu", "tanh"};
    int cases = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        layer L = make_layer(shapes[si]);
        for (int act = CR_CONV2D_IDENTITY; act <= CR_CONV2D_TANH; act++) {
            reference(&L, (cr_conv2d_act)act);
            for (int e = 0; e < nengines; e++)
                for (int p = 0; p < nproducts; p++) {
                    if (engines[e] == CR_CONV2D_CUDNN && products[p] != CUDARL_PRECISION_FP32)
                        continue;
                    cr_conv2d_desc d;
                    memset(&d, 0, sizeof d);
                    d.shape = L.s, d.act = (cr_conv2d_act)act, d.engine = engines[e];
                    d.products = products[p];
                    d.no_dx = si == 0; /* one first layer */
                    const double prod = products[p] == CUDARL_PRECISION_BF16   ? 0x1p-7
                                        : products[p] == CUDARL_PRECISION_FP16 ? 0x1p-10
                                                                               : 0.0;
                    char name[160];
                    snprintf(name, sizeof name, "shape %zu %s %s %s", si, act_names[act],
                             engines[e] == CR_CONV2D_CUDNN ? "cudnn" : "gemm",
                             cudarl_precision_name(products[p]));
                    run_case(&L, &d, prod, name);
                    cases++;
                }
        }
        free_layer(&L);
    }
    printf("conv2d ops on %s: %d cases match the reference\n", ctx->ops->name, cases);
}

static void test_cpu(void) {
    CHECK_OK(cudarl_ctx_init(&ctx, CUDARL_DEVICE_CPU, 0));
    const cr_conv2d_engine e[] = {CR_CONV2D_GEMM};
    const cudarl_precision p[] = {CUDARL_PRECISION_FP32};
    run_all(e, 1, p, 1);
    /* refusals: a kernel larger than the padded input; products the CPU does not have */
    cr_conv2d_desc d;
    memset(&d, 0, sizeof d);
    d.shape = (cr_conv2d_shape){.N = 1, .C = 1, .H = 3, .W = 3, .K = 1, .R = 5, .S = 5,
                                .stride = 1, .pad = 0};
    cr_conv2d_plan *plan = (cr_conv2d_plan *)&d;
    CHECK(ctx->ops->conv2d_plan_init(ctx, &d, &plan) == CUDARL_ERR_INVALID_ARG && !plan);
    d.shape.R = d.shape.S = 3;
    d.products = CUDARL_PRECISION_BF16;
    plan = (cr_conv2d_plan *)&d;
    CHECK(ctx->ops->conv2d_plan_init(ctx, &d, &plan) == CUDARL_ERR_UNSUPPORTED && !plan);
    CHECK_MSG(strstr(cudarl_last_error(), "fp32") != NULL, "%s", cudarl_last_error());
    /* scale_u8: x / 255, every byte */
    uint8_t u[256];
    float f[256];
    for (int i = 0; i < 256; i++) u[i] = (uint8_t)i;
    ctx->ops->scale_u8(ctx, u, f, 256);
    for (int i = 0; i < 256; i++) CHECK(f[i] == (float)i / 255.0f);
    cudarl_ctx_free(ctx);
}

#ifdef CUDARL_WITH_CUDA
static void test_gpu(void) {
    CHECK_OK(cudarl_ctx_init(&ctx, CUDARL_DEVICE_CUDA, 0));
#ifdef CUDARL_WITH_CUDNN
    const cr_conv2d_engine e[] = {CR_CONV2D_GEMM, CR_CONV2D_CUDNN};
#else
    const cr_conv2d_engine e[] = {CR_CONV2D_GEMM};
#endif
    const cudarl_precision p[] = {CUDARL_PRECISION_FP32, CUDARL_PRECISION_BF16,
                                  CUDARL_PRECISION_FP16};
    run_all(e, (int)(sizeof e / sizeof e[0]), p, 3);
    /* the cudnn engine has no half products */
    cr_conv2d_desc d;
    memset(&d, 0, sizeof d);
    d.shape = (cr_conv2d_shape){.N = 1, .C = 1, .H = 3, .W = 3, .K = 1, .R = 3, .S = 3,
                                .stride = 1, .pad = 0};
    d.engine = CR_CONV2D_CUDNN, d.products = CUDARL_PRECISION_BF16;
    cr_conv2d_plan *plan = (cr_conv2d_plan *)&d;
    CHECK(ctx->ops->conv2d_plan_init(ctx, &d, &plan) == CUDARL_ERR_UNSUPPORTED && !plan);
    cudarl_ctx_free(ctx);
}
#endif

int main(int argc, char **argv) {
    cr_philox_seed(&rng, 20261201, 0);
    const char *which = argc > 1 ? argv[1] : "cpu";
    if (!strcmp(which, "cpu")) {
        test_cpu();
    } else if (!strcmp(which, "gpu")) {
#ifdef CUDARL_WITH_CUDA
        test_gpu();
#else
        fprintf(stderr, "test_conv_ops gpu: this build has no CUDA backend\n");
        return 1;
#endif
    } else {
        fprintf(stderr, "usage: test_conv_ops cpu|gpu\n");
        return 2;
    }
    return 0;
}
