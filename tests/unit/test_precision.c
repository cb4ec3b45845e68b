/* The precision policy (src/nn/precision.c): --precision spelling and refusal, the policy table's
 * invariants (float32 accumulation, master weights, weight gradients and Adam state under every
 * precision; loss scaling with fp16 only), the roundings to each format against a bit-level
 * rounding, and the tolerance table against a CPU emulation of each precision: the float32 CPU op
 * run on inputs rounded as the precision rounds them, its output rounded as the precision stores
 * it, must stay within the table's tolerance of the plain float32 op, and not absurdly far
 * inside it (so a tolerance 100x too loose fails too); and the chain tolerance of a network's
 * outputs (cr_precision_chain_rtol, what the policy runtime's GPU tests hold its reduced-precision
 * forwards to) against the same emulation of a chain of layers.
 *
 * Usage: test_precision [group]   group: parse policy round tolerances chain */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/core.h"
#include "nn/precision.h"
#include "ops/cpu/ops_cpu.h"

/* ---- parse --------------------------------------------------------------------------------- */

static void test_parse(void) {
    for (int i = 0; i < CUDARL_PRECISION_COUNT; i++) {
        cudarl_precision p = CUDARL_PRECISION_FP32;
        CHECK_OK(cudarl_precision_parse(cudarl_precision_name((cudarl_precision)i), &p));
        CHECK((int)p == i);
    }
    CHECK(strcmp(cudarl_precision_name(CUDARL_PRECISION_BF16), "bf16") == 0);
    CHECK(strcmp(cudarl_precision_name((cudarl_precision)99), "?") == 0);
    const char *bad[] = {"FP16", "fp64", "", "bf16 ", "float16", NULL};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cudarl_precision p = CUDARL_PRECISION_TF32;
        CHECK_MSG(cudarl_precision_parse(bad[i], &p) == CUDARL_ERR_INVALID_ARG, "'%s' accepted",
                  bad[i] ? bad[i] : "(null)");
        CHECK(p == CUDARL_PRECISION_TF32);
        const char *msg = cudarl_last_error();
        CHECK_MSG(strstr(msg, "--precision") && strstr(msg, "fp32") && strstr(msg, "tf32") &&
                      strstr(msg, "bf16") && strstr(msg, "fp16"),
                  "the refusal should list the choices: %s", msg);
    }
}

/* ---- policy -------------------------------------------------------------------------------- */

static void test_policy(void) {
    for (int i = 0; i < CUDARL_PRECISION_COUNT; i++) {
        const cr_precision_policy *pol = cr_precision_policy_of((cudarl_precision)i);
        CHECK((int)pol->precision == i && pol->why && strlen(pol->why) > 20);
        CHECK_MSG(pol->accumulate == CR_DTYPE_F32 && pol->master_weights == CR_DTYPE_F32 &&
                      pol->weight_grads == CR_DTYPE_F32 && pol->optimizer_state == CR_DTYPE_F32,
                  "%s: accumulation, master weights, weight grads and Adam state must be f32",
                  cudarl_precision_name((cudarl_precision)i));
        CHECK(pol->loss_scaling == (i == CUDARL_PRECISION_FP16));
        CHECK(pol->activations != CR_DTYPE_TF32); /* a compute format, never stored */
    }
    CHECK(cr_precision_policy_of(CUDARL_PRECISION_FP32)->matmul == CR_DTYPE_F32);
    CHECK(cr_precision_policy_of(CUDARL_PRECISION_TF32)->activations == CR_DTYPE_F32);
    CHECK(cr_precision_policy_of(CUDARL_PRECISION_BF16)->activations == CR_DTYPE_BF16);
    CHECK(cr_precision_policy_of(CUDARL_PRECISION_FP16)->matmul == CR_DTYPE_F16);
    static const char *const must_be_fp32[] = {"ppo_loss", "dqn_loss", "categorical_sample", "gae",
                                               "value_stats", "clip_grad_norm", "adam_step",
                                               "loss_scale"};
    for (size_t i = 0; i < sizeof must_be_fp32 / sizeof must_be_fp32[0]; i++)
        CHECK_MSG(cr_precision_op_is_fp32(must_be_fp32[i]), "%s should stay fp32", must_be_fp32[i]);
    CHECK(!cr_precision_op_is_fp32("linear_forward"));
    for (size_t i = 0; i < cr_precision_fp32_op_count; i++)
        CHECK(cr_precision_fp32_ops[i].why && strlen(cr_precision_fp32_ops[i].why) > 20);
    CHECK(strlen(cr_precision_why_fp32_accumulate) > 20);
    CHECK(strlen(cr_precision_why_fp32_master) > 20);
}

/* ---- rounding ------------------------------------------------------------------------------ */

/* Round to nearest even by dropping the low `drop` bits of the float32 pattern (bf16: 16,
 * TF32: 13): the usual bit-level conversion, a second implementation to hold the first to. */
static float round_bits(float x, int drop) {
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) == 0x7f800000u) return x;
    uint32_t lsb = (u >> drop) & 1u;
    u += (1u << (drop - 1)) - 1u + lsb;
    u &= ~((1u << drop) - 1u);
    memcpy(&x, &u, 4);
    return x;
}

/* Truncation to TF32 (what tensor cores may do instead of rounding). */
static float truncate_tf32(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    u &= ~((1u << 13) - 1u);
    memcpy(&x, &u, 4);
    return x;
}

static void same(const char *what, float got, float want) {
    CHECK_MSG(memcmp(&got, &want, 4) == 0 || (isnan(got) && isnan(want)), "%s: got %a, want %a",
              what, (double)got, (double)want);
}

static void test_round(void) {
    /* Known values. */
    same("bf16 1+2^-8 (tie, even)", cr_round_to_dtype(1.0f + 0x1p-8f, CR_DTYPE_BF16), 1.0f);
    same("bf16 1+3 2^-8 (tie, even)", cr_round_to_dtype(1.0f + 0x3p-8f, CR_DTYPE_BF16),
         1.0f + 0x1p-6f);
    same("bf16 FLT_MAX", cr_round_to_dtype(FLT_MAX, CR_DTYPE_BF16), INFINITY);
    same("tf32 1+2^-11 (tie)", cr_round_to_dtype(1.0f + 0x1p-11f, CR_DTYPE_TF32), 1.0f);
    same("f16 65504", cr_round_to_dtype(65504.0f, CR_DTYPE_F16), 65504.0f);
    same("f16 65519", cr_round_to_dtype(65519.0f, CR_DTYPE_F16), 65504.0f);
    same("f16 65520", cr_round_to_dtype(65520.0f, CR_DTYPE_F16), INFINITY);
    same("f16 -1e6", cr_round_to_dtype(-1e6f, CR_DTYPE_F16), -INFINITY);
    same("f16 2^-25 (tie to 0)", cr_round_to_dtype(0x1p-25f, CR_DTYPE_F16), 0.0f);
    same("f16 3 2^-26", cr_round_to_dtype(0x3p-26f, CR_DTYPE_F16), 0x1p-24f);
    same("f16 subnormal", cr_round_to_dtype(0x1.01p-20f, CR_DTYPE_F16), 0x1p-20f);
    same("f16 1+2^-11 (tie)", cr_round_to_dtype(1.0f + 0x1p-11f, CR_DTYPE_F16), 1.0f);
    same("f16 -0", cr_round_to_dtype(-0.0f, CR_DTYPE_F16), -0.0f);
    same("f16 NaN", cr_round_to_dtype(NAN, CR_DTYPE_F16), NAN);
    same("f32 is itself", cr_round_to_dtype(0.1f, CR_DTYPE_F32), 0.1f);
    CHECK(cr_dtype_unit_roundoff(CR_DTYPE_BF16) == 0x1p-8 &&
          cr_dtype_unit_roundoff(CR_DTYPE_F16) == 0x1p-11);
    /* bf16 and TF32 against the bit-level rounding over random bit patterns, subnormals and
     * overflow included; f16 of values that are exact in it stays put, and f16 rounding errs by
     * at most half a spacing. */
    cr_philox_state rng;
    cr_philox_seed(&rng, 77, 0);
    for (int i = 0; i < 2000000; i++) {
        uint32_t u = cr_philox_next_u32(&rng);
        float x;
        memcpy(&x, &u, 4);
        same("bf16 vs bits", cr_round_to_dtype(x, CR_DTYPE_BF16), round_bits(x, 16));
        same("tf32 vs bits", cr_round_to_dtype(x, CR_DTYPE_TF32), round_bits(x, 13));
        float h = cr_round_to_dtype(x, CR_DTYPE_F16);
        same("f16 is idempotent", cr_round_to_dtype(h, CR_DTYPE_F16), h);
        if (isfinite(h)) {
            double ax = fabs((double)x), spacing = ax < 0x1p-14 ? 0x1p-24 : 0.0;
            if (spacing == 0.0) {
                int e;
                frexp(ax, &e);
                spacing = ldexp(1.0, e - 11);
            }
            CHECK_MSG(fabs((double)h - x) <= 0.5 * spacing, "f16(%a) = %a", (double)x, (double)h);
        }
    }
}

/* ---- tolerances against an emulation ------------------------------------------------------- */

static const char *const table_ops[] = {"linear.y", "linear.dx", "linear.dw", "linear.db",
                                        "conv.y",   "conv.dx",   "conv.dw",   "conv.db",
                                        "activation"};
#define N_TABLE_OPS (sizeof table_ops / sizeof table_ops[0])

static float *uniform(size_t n, float lo, float hi, cr_philox_state *rng) {
    float *p = malloc(n * sizeof *p);
    CHECK(p != NULL);
    for (size_t i = 0; i < n; i++) p[i] = lo + (hi - lo) * cr_philox_uniform(rng);
    return p;
}

/* y (n) = x rounded to `t` (or truncated to TF32 when `trunc`). */
static float *rounded(const float *x, size_t n, cr_dtype t, int trunc) {
    float *y = malloc(n * sizeof *y);
    CHECK(y != NULL);
    for (size_t i = 0; i < n; i++)
        y[i] = trunc && t == CR_DTYPE_TF32 ? truncate_tf32(x[i]) : cr_round_to_dtype(x[i], t);
    return y;
}

/* Stored, then converted for the product: what a matmul input goes through. */
static float *as_matmul_input(const float *x, size_t n, const cr_precision_policy *pol,
                              int stored, int trunc) {
    float *s = rounded(x, n, stored ? pol->activations : CR_DTYPE_F32, 0);
    float *r = rounded(s, n, pol->matmul, trunc);
    free(s);
    return r;
}

static void round_in_place(float *x, size_t n, cr_dtype t) {
    for (size_t i = 0; i < n; i++) x[i] = cr_round_to_dtype(x[i], t);
}

/* Worst ratio of error to tolerance seen, per table entry. */
static double worst[CUDARL_PRECISION_COUNT][N_TABLE_OPS];

static void hold(const char *op, cudarl_precision p, const float *got, const float *want,
                 size_t n, const char *shape) {
    const cr_precision_tolerance *t = cr_precision_tolerance_of(op, p);
    CHECK(t != NULL && t->kind == CR_TOL_NORM);
    double e2 = 0, w2 = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)got[i] - want[i];
        e2 += d * d, w2 += (double)want[i] * want[i];
    }
    double ratio = sqrt(e2) / (t->rtol * sqrt(w2));
    CHECK_MSG(ratio <= 1.0, "%s in %s (%s): error norm %.3g of norm %.3g, over rtol %g: %s", op,
              cudarl_precision_name(p), shape, sqrt(e2), sqrt(w2), t->rtol, t->why);
    for (size_t k = 0; k < N_TABLE_OPS; k++)
        if (strcmp(table_ops[k], op) == 0 && ratio > worst[p][k]) worst[p][k] = ratio;
}

/* linear forward and backward emulated in precision p (TF32 truncating when `trunc`). */
static void linear_case(cudarl_precision p, int B, int I, int O, int trunc, cr_philox_state *rng) {
    const cr_precision_policy *pol = cr_precision_policy_of(p);
    char shape[64];
    snprintf(shape, sizeof shape, "B=%d I=%d O=%d%s", B, I, O, trunc ? " truncating" : "");
    size_t nx = (size_t)B * I, nw = (size_t)O * I, ny = (size_t)B * O;
    float *x = uniform(nx, -1, 1, rng), *w = uniform(nw, -1, 1, rng);
    float *b = uniform((size_t)O, -1, 1, rng), *dy = uniform(ny, -1, 1, rng);
    float *y = malloc(ny * 4), *dx = malloc(nx * 4), *dw = malloc(nw * 4);
    float *db = malloc((size_t)O * 4);
    float *ey = malloc(ny * 4), *edx = malloc(nx * 4), *edw = malloc(nw * 4),
          *edb = malloc((size_t)O * 4);
    CHECK(y && dx && dw && db && ey && edx && edw && edb);
    cr_cpu_linear_forward(x, w, b, y, B, I, O);
    cr_cpu_linear_backward(dy, x, w, dx, dw, db, B, I, O);

    float *xr = as_matmul_input(x, nx, pol, 1, trunc), *wr = as_matmul_input(w, nw, pol, 0, trunc);
    float *br = rounded(b, (size_t)O, pol->activations, 0);
    float *dyr = as_matmul_input(dy, ny, pol, 1, trunc);
    float *dys = rounded(dy, ny, pol->activations, 0); /* db reads the stored dy, no product */
    cr_cpu_linear_forward(xr, wr, br, ey, B, I, O);
    round_in_place(ey, ny, pol->activations);
    float *scratch_db = malloc((size_t)O * 4), *scratch_dw = malloc(nw * 4);
    CHECK(scratch_db && scratch_dw);
    cr_cpu_linear_backward(dyr, xr, wr, edx, edw, scratch_db, B, I, O); /* the products */
    round_in_place(edx, nx, pol->activations);
    cr_cpu_linear_backward(dys, x, w, NULL, scratch_dw, edb, B, I, O); /* db: the stored dy */
    hold("linear.y", p, ey, y, ny, shape);
    hold("linear.dx", p, edx, dx, nx, shape);
    hold("linear.dw", p, edw, dw, nw, shape);
    hold("linear.db", p, edb, db, (size_t)O, shape);
    /* A convolution is the same products over C R S (im2row): the same emulation stands in. */
    hold("conv.y", p, ey, y, ny, shape);
    hold("conv.dx", p, edx, dx, nx, shape);
    hold("conv.dw", p, edw, dw, nw, shape);
    hold("conv.db", p, edb, db, (size_t)O, shape);
    free(x), free(w), free(b), free(dy), free(y), free(dx), free(dw), free(db);
    free(ey), free(edx), free(edw), free(edb), free(xr), free(wr), free(br), free(dyr), free(dys);
    free(scratch_db), free(scratch_dw);
}

/* tanh and ReLU from the stored input, output stored, against the float32 op. */
static void activation_case(cudarl_precision p, cr_philox_state *rng) {
    const cr_precision_policy *pol = cr_precision_policy_of(p);
    const cr_precision_tolerance *t = cr_precision_tolerance_of("activation", p);
    CHECK(t != NULL && t->kind == CR_TOL_CLOSE);
    size_t n = 200000;
    float *x = uniform(n, -4, 4, rng);
    for (size_t i = 0; i < n / 10; i++) x[i] *= 1e-6f; /* small values: subnormals for f16 */
    double ratio = 0;
    for (size_t i = 0; i < n; i++) {
        float xs = cr_round_to_dtype(x[i], pol->activations);
        float pairs[2][2] = {{cr_tanhf(x[i]), cr_round_to_dtype(cr_tanhf(xs), pol->activations)},
                             {x[i] > 0 ? x[i] : 0.0f, xs > 0 ? xs : 0.0f}};
        for (int k = 0; k < 2; k++) {
            double want = pairs[k][0], got = pairs[k][1];
            double tol = t->atol + t->rtol * fabs(want), err = fabs(got - want);
            CHECK_MSG(err <= tol, "activation %d in %s at x = %a: %a, want %a: %s", k,
                      cudarl_precision_name(p), (double)x[i], got, want, t->why);
            if (tol > 0 && err / tol > ratio) ratio = err / tol;
        }
    }
    worst[p][N_TABLE_OPS - 1] = ratio;
    free(x);
}

static void test_tolerances(void) {
    /* Every (op, precision) has exactly one entry, with a reason; no fp32-list op has one. */
    size_t found = 0;
    for (size_t k = 0; k < N_TABLE_OPS; k++)
        for (int p = 0; p < CUDARL_PRECISION_COUNT; p++) {
            const cr_precision_tolerance *t =
                cr_precision_tolerance_of(table_ops[k], (cudarl_precision)p);
            CHECK_MSG(t != NULL, "no tolerance for %s in %s", table_ops[k],
                      cudarl_precision_name((cudarl_precision)p));
            CHECK(t->why && strlen(t->why) > 20 && t->rtol >= 0 && t->atol >= 0);
            found++;
        }
    CHECK_MSG(found == cr_precision_tolerance_count, "%zu entries, %zu expected",
              cr_precision_tolerance_count, found);
    for (size_t i = 0; i < cr_precision_fp32_op_count; i++)
        for (int p = 0; p < CUDARL_PRECISION_COUNT; p++)
            CHECK(!cr_precision_tolerance_of(cr_precision_fp32_ops[i].op, (cudarl_precision)p));

    cr_philox_state rng;
    cr_philox_seed(&rng, 4242, 0);
    static const int shapes[][3] = {{64, 256, 64}, {256, 33, 7}, {3, 1024, 5}, {512, 64, 64}};
    for (int p = 0; p < CUDARL_PRECISION_COUNT; p++) {
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            linear_case((cudarl_precision)p, shapes[s][0], shapes[s][1], shapes[s][2], 0, &rng);
            if (p == CUDARL_PRECISION_TF32)
                linear_case((cudarl_precision)p, shapes[s][0], shapes[s][1], shapes[s][2], 1, &rng);
        }
        activation_case((cudarl_precision)p, &rng);
    }
    /* Report, and fail a reduced-precision tolerance the emulation uses less than 1/20 of: it
     * would hide a real error that large. (fp32 entries and TF32's bias and activations are
     * float32 on both sides here: the emulation's error is 0 and says nothing of them.) */
    printf("  worst error / tolerance of the emulation (fp32 tf32 bf16 fp16):\n");
    for (size_t k = 0; k < N_TABLE_OPS; k++) {
        printf("  %-11s", table_ops[k]);
        for (int p = 0; p < CUDARL_PRECISION_COUNT; p++) {
            const cr_precision_tolerance *t =
                cr_precision_tolerance_of(table_ops[k], (cudarl_precision)p);
            printf(" %6.3f", worst[p][k]);
            int reduced = t->rtol >= 1e-4;
            CHECK_MSG(!reduced || worst[p][k] >= 0.05,
                      "%s in %s: the emulation's error is %.3g of the tolerance: too loose?",
                      table_ops[k], cudarl_precision_name((cudarl_precision)p), worst[p][k]);
        }
        printf("\n");
    }
}

/* ---- the chain tolerance of a network ------------------------------------------------------- */

/* A net's forward as the policy runtime runs it in precision p, emulated: the input rounded as
 * it is stored, each layer's weights rounded for its product, the float32 sum plus the float32
 * bias, ReLU, the output rounded as activations are stored; the last layer (the head) written
 * in float32. Its outputs against the plain float32 chain on the unrounded input and weights
 * must stay within cr_precision_chain_rtol(p, layers), and use at least 1/100 of it: the
 * chain's tolerance adds the stages' 4 u linearly, a bound, while their errors add more like a
 * random walk and partly average out in the later products (the emulation lands near 1/50). */
static double chain_case(cudarl_precision p, cr_philox_state *rng) {
    enum { B = 64, L = 5 };
    static const int width[L + 1] = {512, 256, 256, 128, 64, 8}; /* in, then each layer's out */
    const cr_precision_policy *pol = cr_precision_policy_of(p);
    float *x = uniform((size_t)B * width[0], 0, 1, rng); /* pixels / 255 are in [0, 1] */
    float *h = malloc((size_t)B * 512 * sizeof *h), *e = malloc((size_t)B * 512 * sizeof *e);
    float *y = malloc((size_t)B * 512 * sizeof *y), *ey = malloc((size_t)B * 512 * sizeof *ey);
    CHECK(h && e && y && ey);
    memcpy(h, x, (size_t)B * width[0] * sizeof *h);
    memcpy(e, x, (size_t)B * width[0] * sizeof *e);
    round_in_place(e, (size_t)B * width[0], pol->activations);
    for (int l = 0; l < L; l++) {
        const int I = width[l], O = width[l + 1];
        const float bound = (float)(1.0 / sqrt((double)I)); /* PyTorch's default init */
        float *w = uniform((size_t)O * I, -bound, bound, rng), *b = uniform((size_t)O, -bound,
                                                                              bound, rng);
        float *wr = as_matmul_input(w, (size_t)O * I, pol, 0, 0);
        float *er = as_matmul_input(e, (size_t)B * I, pol, 0, 0);
        cr_cpu_linear_forward(h, w, b, y, B, I, O);
        cr_cpu_linear_forward(er, wr, b, ey, B, I, O);
        const size_t n = (size_t)B * O;
        if (l + 1 < L) {
            for (size_t i = 0; i < n; i++) {
                y[i] = y[i] < 0 ? 0.0f : y[i];
                ey[i] = ey[i] < 0 ? 0.0f : ey[i];
            }
            round_in_place(ey, n, pol->activations);
        }
        memcpy(h, y, n * sizeof *h), memcpy(e, ey, n * sizeof *e);
        free(w), free(b), free(wr), free(er);
    }
    const size_t n = (size_t)B * width[L];
    double e2 = 0, w2 = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)e[i] - h[i];
        e2 += d * d, w2 += (double)h[i] * h[i];
    }
    const double rtol = cr_precision_chain_rtol(p, L), ratio = sqrt(e2 / w2) / rtol;
    CHECK_MSG(ratio <= 1.0, "chain of %d layers in %s: error %.3g of the norm, over %.3g", L,
              cudarl_precision_name(p), sqrt(e2 / w2), rtol);
    free(x), free(h), free(e), free(y), free(ey);
    return ratio;
}

static void test_chain(void) {
    CHECK(cr_precision_chain_rtol(CUDARL_PRECISION_FP32, 7) == 1e-4);
    CHECK(cr_precision_chain_rtol(CUDARL_PRECISION_FP16, 5) == 5 * 0x1p-9);
    CHECK(cr_precision_chain_rtol(CUDARL_PRECISION_BF16, 5) == 5 * 0x1p-6);
    CHECK(cr_precision_chain_rtol(CUDARL_PRECISION_TF32, 2) == 2 * 0x1p-8);
    CHECK(cr_precision_twin_rtol(CUDARL_PRECISION_FP16) == 0x1p-11);
    CHECK(cr_precision_twin_rtol(CUDARL_PRECISION_BF16) == 0x1p-8);
    CHECK(cr_precision_twin_rtol(CUDARL_PRECISION_FP32) == 1e-4);
    cr_philox_state rng;
    cr_philox_seed(&rng, 99, 0);
    printf("  chain of 5 layers, worst error / cr_precision_chain_rtol over 10 nets:");
    for (int p = CUDARL_PRECISION_TF32; p < CUDARL_PRECISION_COUNT; p++) {
        double worst_ratio = 0;
        for (int k = 0; k < 10; k++) worst_ratio = fmax(worst_ratio, chain_case(p, &rng));
        printf(" %s %.3f", cudarl_precision_name((cudarl_precision)p), worst_ratio);
        CHECK_MSG(worst_ratio >= 0.01, "%s: the chain's error is %.3g of its tolerance: too "
                  "loose?", cudarl_precision_name((cudarl_precision)p), worst_ratio);
    }
    printf("\n");
}

int main(int argc, char **argv) {
    static const struct {
        const char *name;
        void (*run)(void);
    } tests[] = {
        {"parse", test_parse},
        {"policy", test_policy},
        {"round", test_round},
        {"tolerances", test_tolerances},
        {"chain", test_chain},
    };
    int known = argc < 2;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0] && !known; i++)
        known = strcmp(argv[1], tests[i].name) == 0;
    CHECK_MSG(known, "unknown group '%s'", argv[1]);
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (argc > 1 && strcmp(argv[1], tests[i].name) != 0) continue;
        tests[i].run();
        printf("ok %s\n", tests[i].name);
    }
    return 0;
}
