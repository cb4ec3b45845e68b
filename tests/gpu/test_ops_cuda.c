/* The CUDA backend against the CPU backend (the specification), op by op: both run on the same
 * inputs (Philox) and edge cases (one row, odd sizes, A = 2 and 7 and 18, large logits, sizes
 * that are not multiples of a block, a permutation of 1), the GPU's results come back to the
 * host and are compared under the tolerance of the table below, which says why each is what it
 * is. GPU outputs are poisoned before each run (every byte 0xFF: NaN as a float or double, -1 as
 * an index), so an element a kernel forgets to write fails. Besides the ops: the arena makes one
 * allocation, a plan too big for the device fails with a status instead of aborting, a captured
 * graph replays the ops bit for bit, and 1,000 runs of every op allocate nothing (the backend's
 * cudaMalloc count and the device's free memory do not move).
 *
 * Usage: test_ops_cuda [group]   (all groups when omitted)
 * Needs a GPU (ctest label gpu); without one it fails and says so. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "nn/actor_critic.h"
#include "nn/precision.h"
#include "ops/backend.h"
#include "ops/cuda/cuda_backend.h"

static cudarl_ctx cpu, gpu;
static cr_philox_state prng;
static char case_name[200]; /* the case being checked, for failure messages */

#define CASE(...) snprintf(case_name, sizeof case_name, __VA_ARGS__)

/* ---- tolerances ---------------------------------------------------------------------------- */

typedef enum tol_kind {
    EXACT, /* the same bits (NaN matches NaN) */
    CLOSE, /* |got - want| <= atol + rtol |want|, element by element */
    NORM,  /* ||got - want||_2 <= rtol ||want||_2 over the whole array */
} tol_kind;

typedef struct tolerance {
    const char *name;
    tol_kind kind;
    double atol, rtol;
    const char *why;
} tolerance;

/* The CPU's cr_tanhf uses fmaf exactly where this build has hardware FMA (CR_FMA, simd.h); the
 * device formula always does. */
#if defined(FP_FAST_FMAF)
#define TANH_TOL EXACT, 0, 0, "the device formula is cr_tanhf's, op for op, fmaf where CR_FMA is fmaf"
#else
#define TANH_TOL CLOSE, 4e-7, 0, "this CPU build's CR_FMA is a*b+c while the device uses fmaf: ulps"
#endif

static const tolerance tolerances[] = {
    {"memory", EXACT, 0, 0, "bytes moved, no arithmetic"},
    {"linear.y", NORM, 0, 1e-5,
     "cuBLAS adds the I products and the bias in another order than the CPU; either order errs by "
     "about I u of the terms at most (u = 6e-8), far below 1e-5 of the output's norm"},
    {"linear.dw", NORM, 0, 1e-5, "as linear.y, summing over the B rows"},
    {"linear.dx", NORM, 0, 1e-5, "as linear.y, summing over the O outputs"},
    {"linear.db", NORM, 0, 1e-5, "column sums in a tree order against the CPU's row order"},
    {"linear.format", NORM, 0, 1e-5,
     "a bf16 / fp16 context's product against the CPU's fp32 one on the inputs rounded to the "
     "format: the products of two bf16 or fp16 values are exact in fp32, so only the order of "
     "the fp32 sums differs, as linear.y; a product that kept fp32 inputs would be off by about "
     "2^-9 (bf16) or 2^-12 (fp16) of the norm, one on TF32 inputs by 2^-9 in bf16 (fp16 keeps "
     "TF32's 10 mantissa bits)"},
    {"linear.tanh", TANH_TOL},
    {"linear.repeat", EXACT, 0, 0,
     "the same GPU op on the same inputs: cuBLAS on one stream and the column sums are "
     "deterministic"},
    {"tanh_backward", EXACT, 0, 0, "elementwise, the CPU's three roundings (no FMA either side)"},
    {"uniform", EXACT, 0, 0, "integer Philox words and an exact conversion to float"},
    {"permutation", EXACT, 0, 0, "integer Feistel rounds: one answer"},
    {"rng.stream", EXACT, 0, 0, "both advance the offset by n"},
    {"categorical.action", EXACT, 0, 0,
     "the same inverse CDF, except where u s lies within rounding of a cumulative weight "
     "(checked in double and allowed only there)"},
    {"categorical.logp", CLOSE, 2e-6, 2e-6,
     "CUDA's expf and logf may differ from glibc's in the last ulp or two"},
    {"argmax", EXACT, 0, 0, "comparisons only"},
    {"episodes", EXACT, 0, 0, "ring, counters, running sums: the same double additions per env; the per-iteration sums (checked to 1e-12) add blocks in order"},
    {"bootstrap", EXACT, 0, 0, "selection only"},
    {"gae", EXACT, 0, 0, "the CPU's float roundings in the CPU's order (no FMA either side)"},
    {"value_stats", CLOSE, 1e-9, 1e-12, "double sums in a tree order against index order"},
    {"gather", EXACT, 0, 0, "bytes moved"},
    {"kept rows", EXACT, 0, 0, "bytes moved where a flag is set"},
    {"kept steps", EXACT, 0, 0, "integers: the step at which a row was kept, 0 once placed"},
    {"placed values", EXACT, 0, 0, "floats moved to (step - 1, row), no arithmetic"},
    {"ppo.dlogits", NORM, 0, 1e-5, "softmax through CUDA's expf/logf: an ulp or two a term"},
    {"ppo.dvalue", EXACT, 0, 0,
     "no transcendental on the value path, and the CPU's roundings (no FMA either side)"},
    {"ppo.stats", CLOSE, 1e-6, 1e-5,
     "means in double of per-row floats that differ by expf/logf ulps, summed in another order"},
    {"ppo.own_policy", EXACT, 0, 0,
     "the loss recomputes the sampled action's logp op for op: the ratio is exactly 1"},
    {"clip.g", CLOSE, 0, 1e-6,
     "the norm differs only in double summation order: the float scale is equal or an ulp off"},
    {"clip.norm", CLOSE, 0, 1e-12, "a double sum of exact squares in another order"},
    {"adam.mv", EXACT, 0, 0, "the CPU's float roundings (no FMA, IEEE sqrt and division)"},
    {"adam.p", CLOSE, 1e-6, 0,
     "the step size comes through pow in double, whose last ulp may differ from glibc's"},
    {"adam.t", EXACT, 0, 0, "an integer"},
    {"graph", EXACT, 0, 0, "a replay runs the same kernels on the same data"},
    {"fused.grad", NORM, 0, 1e-4,
     "fused kernels (3xTF32 products, per-thread and per-block partial sums) against cuBLAS or "
     "the CPU: each product errs by ~2^-20 relative and the B-row sums in another order"},
    {"fused.stats", CLOSE, 1e-6, 1e-5,
     "means in double of per-row floats whose logits and values differ by rounding from the "
     "other path's"},
    {"fused.repeat", EXACT, 0, 0,
     "the same fused op on the same inputs: fixed grid, fixed summation order, no atomics"},
    /* group dqn (src/ops/cuda/dqn_ops.cu) */
    {"relu.y", NORM, 0, 1e-5, "as linear.y: cuBLAS's summation order; the ReLU selects"},
    {"relu.epilogue", EXACT, 0, 0,
     "linear_relu_forward is linear_forward's GEMM and add, then a select: relu of the GPU's own "
     "linear_forward, bit for bit"},
    {"relu_backward", EXACT, 0, 0, "a select (threshold_backward), no arithmetic"},
    {"dqn.dq", EXACT, 0, 0,
     "per row the CPU's float roundings in the CPU's order (_rn intrinsics: no FMA either side)"},
    {"dqn.td", EXACT, 0, 0, "as dqn.dq"},
    {"dqn.stats", CLOSE, 1e-12, 1e-11,
     "means in double of the same per-row floats (|term| < 150), summed in a thread-then-tree "
     "order against the CPU's row order: double rounding only, ~sqrt(B) u of the terms (B up to "
     "65535: ~3e-12 at worst in practice); atol for q means that cancel towards 0"},
    {"dqn.count", EXACT, 0, 0, "a count"},
    {"egreedy", EXACT, 0, 0, "a compare, one float product and an argmax: the CPU's"},
    {"epsilon", EXACT, 0, 0,
     "the schedule in double with the CPU's roundings (C11 contracts nothing; _rn on the device)"},
    {"polyak", EXACT, 0, 0, "two products and a sum, each rounded, as the CPU; tau = 1 copies"},
    {"u8_to_float", EXACT, 0, 0, "an exact conversion"},
    {"dqn.graph", EXACT, 0, 0, "a replay runs the same kernels on the same data"},
};

static const tolerance *tolerance_of(const char *name) {
    for (size_t i = 0; i < sizeof tolerances / sizeof tolerances[0]; i++)
        if (strcmp(tolerances[i].name, name) == 0) return &tolerances[i];
    CHECK_MSG(0, "no tolerance named '%s'", name);
    return NULL;
}

static void fail_at(const tolerance *t, size_t i, double want, double got, const char *note) {
    static const char *const kinds[] = {"exact", "|got - want| <= atol + rtol |want|",
                                        "||got - want|| <= rtol ||want||"};
    fprintf(stderr,
            "FAIL %s (%s) at index %zu: expected %.9g, got %.9g%s\n"
            "  tolerance: %s, atol %g, rtol %g: %s\n",
            t->name, case_name, i, want, got, note, kinds[t->kind], t->atol, t->rtol, t->why);
    exit(1);
}

/* got (GPU) against want (CPU), n doubles (or floats widened), under tolerance `name`. */
static void compare_values(const char *name, const void *got, const void *want, size_t n,
                           int is_float) {
    const tolerance *t = tolerance_of(name);
    double err2 = 0, ref2 = 0, worst = -1;
    size_t worst_i = 0;
    for (size_t i = 0; i < n; i++) {
        double g = is_float ? ((const float *)got)[i] : ((const double *)got)[i];
        double w = is_float ? ((const float *)want)[i] : ((const double *)want)[i];
        if (isnan(g) || isnan(w)) {
            if (isnan(g) && isnan(w)) continue;
            fail_at(t, i, w, g, "");
        }
        size_t size = is_float ? sizeof(float) : sizeof(double);
        int same = memcmp((const char *)got + i * size, (const char *)want + i * size, size) == 0;
        if (t->kind == EXACT) {
            if (!same) fail_at(t, i, w, g, "");
        } else if (t->kind == CLOSE) {
            if (!same && !(fabs(g - w) <= t->atol + t->rtol * fabs(w))) fail_at(t, i, w, g, "");
        } else {
            double e = fabs(g - w);
            err2 += e * e, ref2 += w * w;
            if (e > worst) worst = e, worst_i = i;
        }
    }
    if (t->kind == NORM && !(sqrt(err2) <= t->rtol * sqrt(ref2) + 1e-30)) {
        char note[96];
        snprintf(note, sizeof note, " (the worst element; error norm %.3g of norm %.3g)",
                 sqrt(err2), sqrt(ref2));
        double g = is_float ? ((const float *)got)[worst_i] : ((const double *)got)[worst_i];
        double w = is_float ? ((const float *)want)[worst_i] : ((const double *)want)[worst_i];
        fail_at(t, worst_i, w, g, note);
    }
}

static void compare_f32(const char *name, const float *got, const float *want, size_t n) {
    compare_values(name, got, want, n, 1);
}

static void compare_f64(const char *name, const double *got, const double *want, size_t n) {
    compare_values(name, got, want, n, 0);
}

/* Exact integers: int32 (size 4), int64 (8) or bytes (1). */
static void compare_ints(const char *name, const void *got, const void *want, size_t n,
                         size_t size) {
    const tolerance *t = tolerance_of(name);
    for (size_t i = 0; i < n; i++) {
        const unsigned char *g = (const unsigned char *)got + i * size;
        const unsigned char *w = (const unsigned char *)want + i * size;
        if (memcmp(g, w, size) == 0) continue;
        int64_t gv = 0, wv = 0;
        if (size == 4) gv = *(const int32_t *)g, wv = *(const int32_t *)w;
        else if (size == 8) gv = *(const int64_t *)g, wv = *(const int64_t *)w;
        else gv = *g, wv = *w;
        fail_at(t, i, (double)wv, (double)gv, "");
    }
}

/* ---- buffers ------------------------------------------------------------------------------- */

/* Host and device buffers of the running case, freed together by end_case(). */
#define MAX_BUFS 1024
static void *host_bufs[MAX_BUFS];
static cr_arena dev_bufs[MAX_BUFS];
static int n_host, n_dev;

static void *host(size_t bytes) {
    CHECK_MSG(n_host < MAX_BUFS, "raise MAX_BUFS");
    void *p = malloc(bytes ? bytes : 1);
    CHECK(p != NULL);
    return host_bufs[n_host++] = p;
}

/* bytes of device memory through the backend's own arena (one cudaMalloc each). */
static void *dev(size_t bytes) {
    CHECK_MSG(n_dev < MAX_BUFS, "raise MAX_BUFS");
    cr_plan p;
    cr_plan_init(&p);
    cr_plan_add(&p, "test", bytes);
    CHECK_OK(gpu.ops->arena_alloc(&gpu, &dev_bufs[n_dev], &p));
    return dev_bufs[n_dev++].base;
}

static void end_case(void) {
    while (n_host > 0) free(host_bufs[--n_host]);
    while (n_dev > 0) gpu.ops->arena_free(&gpu, &dev_bufs[--n_dev]);
}

static void up(void *d, const void *h, size_t bytes) { gpu.ops->copy_from_host(&gpu, d, h, bytes); }
static void down(void *h, const void *d, size_t bytes) { gpu.ops->copy_to_host(&gpu, h, d, bytes); }

static void *dev_copy(const void *h, size_t bytes) {
    void *d = dev(bytes);
    up(d, h, bytes);
    return d;
}

/* Every byte 0xFF: NaN as float or double, -1 as an integer. */
static void poison(void *d, size_t bytes) {
    unsigned char *h = malloc(bytes ? bytes : 1);
    CHECK(h != NULL);
    memset(h, 0xFF, bytes);
    up(d, h, bytes);
    free(h);
}

static void *dev_out(size_t bytes) {
    void *d = dev(bytes);
    poison(d, bytes);
    return d;
}

/* A host copy of `bytes` of device memory. */
static void *fetch(const void *d, size_t bytes) {
    void *h = host(bytes);
    down(h, d, bytes);
    return h;
}

static float *host_floats(size_t n) {
    float *p = host(n * sizeof *p);
    for (size_t i = 0; i < n; i++) p[i] = NAN;
    return p;
}

static float *uniform_floats(size_t n, float lo, float hi) {
    float *p = host(n * sizeof *p);
    for (size_t i = 0; i < n; i++) p[i] = lo + (hi - lo) * cr_philox_uniform(&prng);
    return p;
}

static uint8_t *random_flags(size_t n, double prob) {
    uint8_t *p = host(n);
    for (size_t i = 0; i < n; i++) p[i] = cr_philox_uniform_f64(&prng) < prob;
    return p;
}

static int32_t *random_ints(size_t n, int32_t below) {
    int32_t *p = host(n * sizeof *p);
    for (size_t i = 0; i < n; i++) p[i] = (int32_t)(cr_philox_next_u32(&prng) % (uint32_t)below);
    return p;
}

#define F(n) ((size_t)(n) * sizeof(float))

/* ---- memory -------------------------------------------------------------------------------- */

static void test_memory(void) {
    CASE("arena");
    cr_plan p;
    cr_plan_init(&p);
    int i_a = cr_plan_add(&p, "a", 1000), i_b = cr_plan_add(&p, "b", 3);
    int i_c = cr_plan_add(&p, "c", (1u << 20) + 5);
    size_t before = cr_cuda_alloc_count();
    cr_arena ga, ca;
    CHECK_OK(gpu.ops->arena_alloc(&gpu, &ga, &p));
    CHECK_OK(cpu.ops->arena_alloc(&cpu, &ca, &p));
    CHECK_MSG(cr_cuda_alloc_count() == before + 1, "one plan, %zu device allocations",
              cr_cuda_alloc_count() - before);
    CHECK(ga.kind == CR_MEM_DEVICE && ga.base && (uintptr_t)ga.base % CR_ARENA_ALIGN == 0);
    size_t total = p.total;
    unsigned char *h = host(total), *zeros = host(total);
    memset(zeros, 0, total);
    memset(h, 0xAB, total);
    down(h, ga.base, total);
    compare_ints("memory", h, zeros, total, 1); /* zero-filled, like the host arena */

    /* The same copies and zeroing on both arenas, then every byte compared. */
    unsigned char *src = host(total);
    for (size_t i = 0; i < total; i++) src[i] = (unsigned char)cr_philox_next_u32(&prng);
    cudarl_ctx *ctxs[2] = {&cpu, &gpu};
    cr_arena *arenas[2] = {&ca, &ga};
    for (int k = 0; k < 2; k++) {
        cudarl_ctx *c = ctxs[k];
        cr_arena *a = arenas[k];
        c->ops->copy_from_host(c, a->base, src, total);
        c->ops->copy(c, cr_arena_get(a, i_c), cr_arena_get(a, i_a), 1000);
        c->ops->copy(c, (char *)cr_arena_get(a, i_c) + 1001, cr_arena_get(a, i_b), 3);
        c->ops->zero(c, (char *)cr_arena_get(a, i_c) + 4096, 777);
        c->ops->zero(c, cr_arena_get(a, i_b), 0);
        c->ops->sync(c);
    }
    unsigned char *got = host(total);
    down(got, ga.base, total);
    compare_ints("memory", got, ca.base, total, 1);

    /* Pinned host memory both ways. */
    void *pinned = NULL;
    CHECK_OK(cr_cuda_host_alloc_pinned(&pinned, 4096));
    memcpy(pinned, src, 4096);
    gpu.ops->copy_from_host(&gpu, ga.base, pinned, 4096);
    memset(pinned, 0, 4096);
    gpu.ops->copy_to_host(&gpu, pinned, ga.base, 4096);
    compare_ints("memory", pinned, src, 4096, 1);
    cr_cuda_host_free_pinned(pinned);

    gpu.ops->arena_free(&gpu, &ga);
    cpu.ops->arena_free(&cpu, &ca);
    CHECK(ga.base == NULL);

    /* A plan larger than the device: a status and a message, no abort, and the backend still
     * works afterwards. */
    CASE("out of memory");
    size_t free_b = 0, total_b = 0;
    CHECK_OK(cr_cuda_mem_info(&gpu, &free_b, &total_b));
    cr_plan big;
    cr_plan_init(&big);
    cr_plan_add(&big, "too big", total_b * 2);
    cr_arena huge;
    cudarl_status s = gpu.ops->arena_alloc(&gpu, &huge, &big);
    CHECK_MSG(s == CUDARL_ERR_OUT_OF_MEMORY, "got %s", cudarl_status_name(s));
    CHECK(huge.base == NULL);
    printf("  out of memory says: %s\n", cudarl_last_error());
    float *d = dev(F(4)), one[4] = {1, 2, 3, 4}, back[4];
    up(d, one, sizeof one);
    down(back, d, sizeof back);
    compare_f32("memory", back, one, 4);

    /* The optional hooks answer. */
    CHECK(gpu.ops->bytes_in_use && gpu.ops->bytes_in_use(&gpu) > 0);
    CHECK(gpu.ops->peaks);
    cr_peaks pk[CUDARL_PRECISION_COUNT];
    for (int q = 0; q < CUDARL_PRECISION_COUNT; q++)
        gpu.ops->peaks(&gpu, (cudarl_precision)q, &pk[q]);
    printf("  peaks (sm_%d%d, %d SMs at %.0f MHz): %.1f TFLOP/s fp32, %.1f tf32, %.1f bf16, "
           "%.1f fp16 (0: not in the table), %.0f GB/s\n", pk[0].sm_major, pk[0].sm_minor,
           pk[0].sms, pk[0].clock_hz / 1e6, pk[0].flops / 1e12, pk[1].flops / 1e12,
           pk[2].flops / 1e12, pk[3].flops / 1e12, pk[0].bytes_per_s / 1e9);
    CHECK(pk[0].flops > 0 && pk[0].bytes_per_s > 0);
    /* tensor cores, where the table knows the architecture, beat the CUDA cores */
    for (int q = 1; q < CUDARL_PRECISION_COUNT; q++)
        CHECK(pk[q].flops == 0 || pk[q].flops > pk[0].flops);
    end_case();
}

/* ---- linear --------------------------------------------------------------------------------- */

static void linear_case(int B, int I, int O) {
    CASE("B=%d I=%d O=%d", B, I, O);
    size_t nx = (size_t)B * I, nw = (size_t)O * I, ny = (size_t)B * O;
    float *x = uniform_floats(nx, -1, 1), *w = uniform_floats(nw, -1, 1);
    float *b = uniform_floats(O, -1, 1), *dy = uniform_floats(ny, -1, 1);
    float *y = host_floats(ny), *yt = host_floats(ny), *dx = host_floats(nx);
    float *dw = host_floats(nw), *db = host_floats(O);
    cpu.ops->linear_forward(&cpu, x, w, b, y, B, I, O);
    cpu.ops->linear_tanh_forward(&cpu, x, w, b, yt, B, I, O);
    cpu.ops->linear_backward(&cpu, dy, x, w, dx, dw, db, B, I, O);

    float *d_x = dev_copy(x, F(nx)), *d_w = dev_copy(w, F(nw)), *d_b = dev_copy(b, F(O));
    float *d_dy = dev_copy(dy, F(ny));
    float *d_y = dev_out(F(ny)), *d_yt = dev_out(F(ny)), *d_dx = dev_out(F(nx));
    float *d_dw = dev_out(F(nw)), *d_db = dev_out(F(O));
    gpu.ops->linear_forward(&gpu, d_x, d_w, d_b, d_y, B, I, O);
    gpu.ops->linear_tanh_forward(&gpu, d_x, d_w, d_b, d_yt, B, I, O);
    gpu.ops->linear_backward(&gpu, d_dy, d_x, d_w, d_dx, d_dw, d_db, B, I, O);
    float *g_y = fetch(d_y, F(ny)), *g_yt = fetch(d_yt, F(ny)), *g_dx = fetch(d_dx, F(nx));
    float *g_dw = fetch(d_dw, F(nw)), *g_db = fetch(d_db, F(O));
    compare_f32("linear.y", g_y, y, ny);
    compare_f32("linear.y", g_yt, yt, ny);
    compare_f32("linear.dx", g_dx, dx, nx);
    compare_f32("linear.dw", g_dw, dw, nw);
    compare_f32("linear.db", g_db, db, O);
    /* The fused tanh is cr_tanhf of the GPU's own pre-activation. */
    float *t = host_floats(ny);
    for (size_t i = 0; i < ny; i++) t[i] = cr_tanhf(g_y[i]);
    compare_f32("linear.tanh", g_yt, t, ny);
    /* Without dx: the same dw and db, bit for bit. */
    poison(d_dw, F(nw));
    poison(d_db, F(O));
    gpu.ops->linear_backward(&gpu, d_dy, d_x, d_w, NULL, d_dw, d_db, B, I, O);
    compare_f32("linear.repeat", fetch(d_dw, F(nw)), g_dw, nw);
    compare_f32("linear.repeat", fetch(d_db, F(O)), g_db, O);
    end_case();
}

/* The device tanh against cr_tanhf on a dense grid over [-20, 20] and around its switch points
 * (0.625, 9.5), through a linear layer with I = O = 1, w = 1, b = 0. */
static void tanh_grid_case(void) {
    CASE("tanh grid");
    const long K = 820000;
    static const float specials[] = {0.625f, 9.5f, 4.4e-3f, 1e-20f, 1e-40f, FLT_MAX, INFINITY};
    size_t ns = sizeof specials / sizeof specials[0], n = (size_t)(2 * K + 1) + ns * 14 + 1;
    float *x = host_floats(n);
    size_t k = 0;
    for (long i = -K; i <= K; i++) x[k++] = (float)((double)i * (20.0 / (double)K));
    for (size_t i = 0; i < ns; i++)
        for (int d = -3; d <= 3; d++) {
            float v = specials[i];
            for (int s = 0; s < (d < 0 ? -d : d); s++) v = nextafterf(v, d < 0 ? 0.0f : INFINITY);
            x[k++] = v, x[k++] = -v;
        }
    x[k++] = NAN;
    CHECK(k == n);
    float w = 1.0f, b = 0.0f;
    float *d_x = dev_copy(x, F(n)), *d_w = dev_copy(&w, F(1)), *d_b = dev_copy(&b, F(1));
    float *d_y = dev_out(F(n)), *d_yt = dev_out(F(n));
    gpu.ops->linear_forward(&gpu, d_x, d_w, d_b, d_y, (int)n, 1, 1);
    gpu.ops->linear_tanh_forward(&gpu, d_x, d_w, d_b, d_yt, (int)n, 1, 1);
    float *pre = fetch(d_y, F(n)), *got = fetch(d_yt, F(n)), *want = host_floats(n);
    for (size_t i = 0; i < n; i++) want[i] = cr_tanhf(pre[i]);
    compare_f32("linear.tanh", got, want, n);
    end_case();
}

/* A bf16 / fp16 context (cr_cuda_set_gemm_precision, the trainers' --precision): the linear
 * layer's three products take their inputs rounded to the format. The CPU reference rounds the
 * two inputs of each product itself and multiplies in fp32. */
static void linear_format_case(cudarl_precision p, int B, int I, int O) {
    const cr_dtype t = p == CUDARL_PRECISION_BF16 ? CR_DTYPE_BF16 : CR_DTYPE_F16;
    CASE("%s B=%d I=%d O=%d", cudarl_precision_name(p), B, I, O);
    size_t nx = (size_t)B * I, nw = (size_t)O * I, ny = (size_t)B * O;
    float *x = uniform_floats(nx, -1, 1), *w = uniform_floats(nw, -1, 1);
    float *b = uniform_floats(O, -1, 1), *dy = uniform_floats(ny, -1, 1);
    float *xr = host_floats(nx), *wr = host_floats(nw), *dyr = host_floats(ny);
    for (size_t i = 0; i < nx; i++) xr[i] = cr_round_to_dtype(x[i], t);
    for (size_t i = 0; i < nw; i++) wr[i] = cr_round_to_dtype(w[i], t);
    for (size_t i = 0; i < ny; i++) dyr[i] = cr_round_to_dtype(dy[i], t);
    float *y = host_floats(ny), *dx = host_floats(nx), *dw = host_floats(nw);
    float *db = host_floats(O);
    cpu.ops->linear_forward(&cpu, xr, wr, b, y, B, I, O);
    cpu.ops->linear_backward(&cpu, dyr, xr, wr, dx, dw, db, B, I, O);

    float *d_x = dev_copy(x, F(nx)), *d_w = dev_copy(w, F(nw)), *d_b = dev_copy(b, F(O));
    float *d_dy = dev_copy(dy, F(ny));
    float *d_y = dev_out(F(ny)), *d_dx = dev_out(F(nx)), *d_dw = dev_out(F(nw));
    float *d_db = dev_out(F(O));
    CHECK(cr_cuda_set_gemm_precision(&gpu, p) == CUDARL_OK);
    gpu.ops->linear_forward(&gpu, d_x, d_w, d_b, d_y, B, I, O);
    gpu.ops->linear_backward(&gpu, d_dy, d_x, d_w, d_dx, d_dw, d_db, B, I, O);
    CHECK(cr_cuda_set_gemm_precision(&gpu, CUDARL_PRECISION_FP32) == CUDARL_OK);
    compare_f32("linear.format", fetch(d_y, F(ny)), y, ny);
    compare_f32("linear.format", fetch(d_dx, F(nx)), dx, nx);
    compare_f32("linear.format", fetch(d_dw, F(nw)), dw, nw);
    /* the bias gradient sums dy itself, in fp32: no product */
    float *db32 = host_floats(O), *dx32 = host_floats(nx), *dw32 = host_floats(nw);
    cpu.ops->linear_backward(&cpu, dy, x, w, dx32, dw32, db32, B, I, O);
    compare_f32("linear.db", fetch(d_db, F(O)), db32, O);
    end_case();
}

static void test_linear(void) {
    static const int shapes[][3] = {
        {1, 1, 1},     {1, 3, 5},    {3, 5, 1},     {7, 3, 5},     {2, 5, 2},   {13, 64, 1},
        {9, 200, 7},   {33, 70, 130}, {256, 4, 64}, {256, 64, 64}, {256, 64, 2}, {333, 64, 2},
        {1000, 64, 7}, {4097, 4, 64}, {4096, 64, 1},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        linear_case(shapes[s][0], shapes[s][1], shapes[s][2]);
    tanh_grid_case();
    /* CartPole's MLP (4 -> 64 -> 64 -> 2 at a minibatch), the Nature-CNN's FC layer (3136 ->
     * 512) and an odd one */
    static const int fshapes[][3] = {{4096, 4, 64}, {4096, 64, 64}, {4096, 64, 2},
                                     {256, 3136, 512}, {33, 70, 130}};
    static const cudarl_precision fmts[2] = {CUDARL_PRECISION_BF16, CUDARL_PRECISION_FP16};
    for (int q = 0; q < 2; q++)
        for (size_t s = 0; s < sizeof fshapes / sizeof fshapes[0]; s++)
            linear_format_case(fmts[q], fshapes[s][0], fshapes[s][1], fshapes[s][2]);
}

/* ---- tanh backward -------------------------------------------------------------------------- */

static void tanh_backward_case(size_t n) {
    CASE("n=%zu", n);
    float *y = uniform_floats(n, -1, 1), *dy = uniform_floats(n, -3, 3), *dx = host_floats(n);
    cpu.ops->tanh_backward(&cpu, y, dy, dx, n);
    float *d_y = dev_copy(y, F(n)), *d_dy = dev_copy(dy, F(n)), *d_dx = dev_out(F(n));
    gpu.ops->tanh_backward(&gpu, d_y, d_dy, d_dx, n);
    compare_f32("tanh_backward", fetch(d_dx, F(n)), dx, n);
    CASE("n=%zu in place", n);
    gpu.ops->tanh_backward(&gpu, d_y, d_dy, d_dy, n); /* dx aliases dy, as the MLP calls it */
    compare_f32("tanh_backward", fetch(d_dy, F(n)), dx, n);
    end_case();
}

static void test_tanh(void) {
    static const size_t sizes[] = {1, 3, 255, 256, 1000, 4097, (1u << 20) + 1};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) tanh_backward_case(sizes[i]);
}

/* ---- random numbers ------------------------------------------------------------------------- */

static cr_rng_stream stream_at(uint64_t seed, uint64_t id, uint64_t offset) {
    cr_rng_stream s;
    cr_rng_stream_seed(&s, seed, id);
    s.offset = offset;
    return s;
}

static void uniform_case(uint64_t offset, int n) {
    CASE("uniform n=%d offset=%llu", n, (unsigned long long)offset);
    cr_rng_stream s = stream_at(99, 5, offset), hs = s;
    float *u = host_floats(n);
    cpu.ops->uniform(&cpu, &hs, u, n);
    cpu.ops->uniform(&cpu, &hs, u, n); /* the second call continues where the first ended */
    cr_rng_stream *d_s = dev_copy(&s, sizeof s);
    float *d_u = dev_out(F(n));
    gpu.ops->uniform(&gpu, d_s, d_u, n);
    poison(d_u, F(n));
    gpu.ops->uniform(&gpu, d_s, d_u, n);
    compare_f32("uniform", fetch(d_u, F(n)), u, n);
    compare_ints("rng.stream", fetch(d_s, sizeof s), &hs, sizeof s, 1);
    end_case();
}

static void permutation_case(uint64_t seed, uint64_t offset, int n) {
    CASE("permutation n=%d seed=%llu offset=%llu", n, (unsigned long long)seed,
         (unsigned long long)offset);
    cr_rng_stream s = stream_at(seed, 1, offset), hs = s;
    int32_t *perm = host((size_t)n * 4);
    cpu.ops->permutation(&cpu, &hs, perm, n);
    cr_rng_stream *d_s = dev_copy(&s, sizeof s);
    int32_t *d_perm = dev_out((size_t)n * 4);
    gpu.ops->permutation(&gpu, d_s, d_perm, n);
    compare_ints("permutation", fetch(d_perm, (size_t)n * 4), perm, n, 4);
    compare_ints("rng.stream", fetch(d_s, sizeof s), &hs, sizeof s, 1);
    uint8_t *seen = host((size_t)n); /* and it is a permutation */
    memset(seen, 0, (size_t)n);
    for (int i = 0; i < n; i++) {
        CHECK_MSG(perm[i] >= 0 && perm[i] < n && !seen[perm[i]], "not a permutation at %d", i);
        seen[perm[i]] = 1;
    }
    end_case();
}

static void test_rng(void) {
    static const uint64_t offsets[] = {0, 1, 2, 3, 5, (1ull << 34) - 3};
    static const int sizes[] = {1, 3, 4, 5, 1000, 4099, (1 << 20) + 3};
    for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; o++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
            uniform_case(offsets[o], sizes[i]);
    static const int perm_sizes[] = {1, 2, 7, 1000, 65537, 300000};
    for (size_t i = 0; i < sizeof perm_sizes / sizeof perm_sizes[0]; i++) {
        permutation_case(7, 0, perm_sizes[i]);
        permutation_case(11, 3, perm_sizes[i]);
    }
}

/* ---- categorical ---------------------------------------------------------------------------- */

/* Whether u s lies within 1e-5 s of a cumulative weight between actions a1 and a2 of row l
 * (in double): where float rounding may pick either side. */
static int near_boundary(const float *l, int A, float u, int a1, int a2) {
    double m = l[0], s = 0, c = 0;
    for (int j = 1; j < A; j++) m = l[j] > m ? l[j] : m;
    for (int j = 0; j < A; j++) s += exp((double)l[j] - m);
    int lo = a1 < a2 ? a1 : a2, hi = a1 < a2 ? a2 : a1;
    for (int j = 0; j < hi; j++) {
        c += exp((double)l[j] - m);
        if (j >= lo && fabs((double)u * s - c) <= 1e-5 * s) return 1;
    }
    return fabs((double)u * s - s) <= 1e-5 * s; /* the rounding fallback at the top */
}

/* scale: logits in [-scale, scale]; ties: logits rounded to integers (many equal maxima). */
static void categorical_case(int B, int A, float scale, int ties) {
    CASE("B=%d A=%d scale=%g%s", B, A, (double)scale, ties ? " ties" : "");
    size_t n = (size_t)B * A;
    float *l = uniform_floats(n, -scale, scale), *u = uniform_floats(B, 0, 1);
    if (ties)
        for (size_t i = 0; i < n; i++) l[i] = roundf(l[i]);
    u[0] = 0.0f;
    if (B > 1) u[B - 1] = 0x1.fffffep-1f; /* the largest float below 1 */
    int32_t *a = host((size_t)B * 4), *am = host((size_t)B * 4);
    float *logp = host_floats(B);
    cpu.ops->categorical_sample(&cpu, l, u, a, logp, B, A);
    cpu.ops->categorical_argmax(&cpu, l, am, B, A);
    float *d_l = dev_copy(l, F(n)), *d_u = dev_copy(u, F(B)), *d_logp = dev_out(F(B));
    int32_t *d_a = dev_out((size_t)B * 4), *d_am = dev_out((size_t)B * 4);
    gpu.ops->categorical_sample(&gpu, d_l, d_u, d_a, d_logp, B, A);
    gpu.ops->categorical_argmax(&gpu, d_l, d_am, B, A);
    compare_ints("argmax", fetch(d_am, (size_t)B * 4), am, B, 4);
    int32_t *g_a = fetch(d_a, (size_t)B * 4);
    float *g_logp = fetch(d_logp, F(B)), *want = host_floats(B);
    int moved = 0;
    for (int b = 0; b < B; b++) {
        const float *row = l + (size_t)b * A;
        want[b] = logp[b];
        if (g_a[b] == a[b]) continue;
        CHECK_MSG(g_a[b] >= 0 && g_a[b] < A, "%s: row %d: action %d", case_name, b, g_a[b]);
        if (!near_boundary(row, A, u[b], a[b], g_a[b]))
            compare_ints("categorical.action", &g_a[b], &a[b], 1, 4);
        float e;
        cr_cpu_categorical_logp_entropy(row, &g_a[b], &want[b], &e, 1, A);
        moved++;
    }
    if (moved) printf("  %s: %d rows on a rounding boundary picked the neighbour\n", case_name, moved);
    CHECK_MSG(moved <= 1 + B / 1000, "%s: %d rows sampled differently", case_name, moved);
    compare_f32("categorical.logp", g_logp, want, B);
    end_case();
}

static void test_categorical(void) {
    static const int shapes[][2] = {{1, 2}, {1, 7}, {333, 2}, {1000, 7}, {4097, 18}, {256, 1}};
    static const float scales[] = {3.0f, 50.0f, 1e4f};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (size_t k = 0; k < sizeof scales / sizeof scales[0]; k++)
            categorical_case(shapes[s][0], shapes[s][1], scales[k], 0);
    categorical_case(1000, 7, 2.0f, 1);
    categorical_case(257, 2, 0.4f, 1); /* mostly all-equal rows */
}

/* ---- episodes ------------------------------------------------------------------------------- */

static void episodes_case(int N, int steps, int64_t start_episodes) {
    size_t n = (size_t)N;
    double *ret = host(n * 8);
    int64_t *len = host(n * 8);
    memset(ret, 0, n * 8), memset(len, 0, n * 8);
    cr_episode_log log;
    memset(&log, 0, sizeof log);
    log.episodes = start_episodes;
    double *d_ret = dev_copy(ret, n * 8);
    int64_t *d_len = dev_copy(len, n * 8);
    cr_episode_log *d_log = dev_copy(&log, sizeof log);
    float *d_r = dev(F(n));
    uint8_t *d_done = dev(n);
    for (int step = 0; step < steps; step++) {
        CASE("N=%d step %d, %lld episodes before", N, step, (long long)start_episodes);
        float *r = uniform_floats(n, -1, 2);
        uint8_t *done = random_flags(n, step == steps / 2 ? 1.0 : 0.1); /* one step ends all */
        cpu.ops->episodes_record(&cpu, r, done, ret, len, &log, N);
        up(d_r, r, F(n));
        up(d_done, done, n);
        gpu.ops->episodes_record(&gpu, d_r, d_done, d_ret, d_len, d_log, N);
        cr_episode_log g_log;
        down(&g_log, d_log, sizeof g_log);
        compare_f64("episodes", fetch(d_ret, n * 8), ret, n);
        compare_ints("episodes", fetch(d_len, n * 8), len, n, 8);
        compare_f64("episodes", g_log.recent, log.recent, CR_RECENT_EPISODES);
        compare_ints("episodes", &g_log.episodes, &log.episodes, 1, 8);
        compare_ints("episodes", &g_log.iter_episodes, &log.iter_episodes, 1, 8);
        /* the per-iteration sums are added in block order on the GPU, index order on the CPU */
        CHECK_CLOSE("episodes iter_return_sum", g_log.iter_return_sum, log.iter_return_sum, 1e-9, 1e-12);
        CHECK_CLOSE("episodes iter_length_sum", g_log.iter_length_sum, log.iter_length_sum, 1e-9, 1e-12);
    }
    end_case();
}

static void test_episodes(void) {
    episodes_case(1, 30, 0);
    episodes_case(5, 40, 0);
    episodes_case(300, 20, 97);
    episodes_case(1000, 10, 0); /* more than 100 at once: the ring is overwritten in order */
    episodes_case(4099, 4, 12345);
}

/* ---- bootstrap values, GAE, value stats ----------------------------------------------------- */

static void gae_case(int T, int N) {
    CASE("T=%d N=%d", T, N);
    size_t n = (size_t)T * N;
    float *r = uniform_floats(n, -1, 1), *v = uniform_floats(n, -2, 2);
    float *fv = uniform_floats(n, -2, 2), *last = uniform_floats(N, -2, 2);
    uint8_t *term = random_flags(n, 0.05), *trunc = random_flags(n, 0.03), *done = host(n);
    for (size_t i = 0; i < n; i++) {
        done[i] = term[i] | trunc[i];
        if (term[i]) fv[i] = NAN; /* never read through the masks */
    }
    float *nv = host_floats(n), *adv = host_floats(n), *ret = host_floats(n);
    cpu.ops->bootstrap_values(&cpu, v, fv, last, done, nv, T, N);
    cpu.ops->gae(&cpu, r, v, nv, term, done, 0.99f, 0.95f, adv, ret, T, N);
    for (size_t i = 0; i < n; i++) CHECK_MSG(isfinite(adv[i]), "CPU adv[%zu] not finite", i);
    float *d_r = dev_copy(r, F(n)), *d_v = dev_copy(v, F(n)), *d_fv = dev_copy(fv, F(n));
    float *d_last = dev_copy(last, F(N)), *d_nv = dev_out(F(n));
    float *d_adv = dev_out(F(n)), *d_ret = dev_out(F(n));
    uint8_t *d_term = dev_copy(term, n), *d_done = dev_copy(done, n);
    gpu.ops->bootstrap_values(&gpu, d_v, d_fv, d_last, d_done, d_nv, T, N);
    compare_f32("bootstrap", fetch(d_nv, F(n)), nv, n);
    gpu.ops->gae(&gpu, d_r, d_v, d_nv, d_term, d_done, 0.99f, 0.95f, d_adv, d_ret, T, N);
    compare_f32("gae", fetch(d_adv, F(n)), adv, n);
    compare_f32("gae", fetch(d_ret, F(n)), ret, n);
    end_case();
}

static void value_stats_case(int n) {
    CASE("value_stats n=%d", n);
    float *v = uniform_floats(n, -3, 3), *r = uniform_floats(n, -3, 5);
    double out[5] = {2, -1, 3, 0.5, 7}, *d_out = dev_copy(out, sizeof out);
    cpu.ops->value_stats(&cpu, v, r, n, out);
    float *d_v = dev_copy(v, F(n)), *d_r = dev_copy(r, F(n));
    gpu.ops->value_stats(&gpu, d_v, d_r, n, d_out);
    compare_f64("value_stats", fetch(d_out, sizeof out), out, 5);
    end_case();
}

static void test_gae(void) {
    static const int shapes[][2] = {{1, 1}, {5, 7}, {1, 300}, {128, 333}, {16, 1025}, {2048, 3}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        gae_case(shapes[s][0], shapes[s][1]);
    value_stats_case(1);
    value_stats_case(1000);
    value_stats_case(100003);
}

/* ---- gather --------------------------------------------------------------------------------- */

/* offset: bytes by which src and dst are shifted from their allocation (misaligned rows). */
static void gather_case(int src_rows, int rows, size_t row_bytes, size_t offset) {
    CASE("rows=%d of %d, %zu bytes each, offset %zu", rows, src_rows, row_bytes, offset);
    size_t sb = (size_t)src_rows * row_bytes + offset, db = (size_t)rows * row_bytes + offset;
    unsigned char *src = host(sb), *dst = host(db);
    for (size_t i = 0; i < sb; i++) src[i] = (unsigned char)cr_philox_next_u32(&prng);
    memset(dst, 0xFF, db);
    int32_t *idx = random_ints((size_t)rows, src_rows);
    cpu.ops->gather_rows(&cpu, src + offset, idx, dst + offset, rows, row_bytes);
    unsigned char *d_src = dev_copy(src, sb), *d_dst = dev_out(db);
    int32_t *d_idx = dev_copy(idx, (size_t)rows * 4);
    gpu.ops->gather_rows(&gpu, d_src + offset, d_idx, d_dst + offset, rows, row_bytes);
    compare_ints("gather", fetch(d_dst, db), dst, db, 1);
    end_case();
}

/* gather_rows_many over `count` arrays whose row sizes and offsets cycle through the lists below
 * (16-byte, 4-byte and byte words all occur), against the CPU's. */
static void gather_many_case(int src_rows, int rows, int count) {
    static const size_t sizes[] = {16, 4, 12, 1, 32, 17, 4, 8};
    static const size_t offsets[] = {0, 4, 0, 1, 16, 0, 3, 0};
    CASE("gather_rows_many: %d arrays, rows=%d of %d", count, rows, src_rows);
    int32_t *idx = random_ints((size_t)rows, src_rows);
    int32_t *d_idx = dev_copy(idx, (size_t)rows * 4);
    cr_gather_item h[CR_GATHER_MAX], d[CR_GATHER_MAX];
    unsigned char *want[CR_GATHER_MAX], *d_dst[CR_GATHER_MAX];
    size_t db[CR_GATHER_MAX];
    for (int k = 0; k < count; k++) {
        size_t rb = sizes[k], off = offsets[k], sb = (size_t)src_rows * rb + off;
        db[k] = (size_t)rows * rb + off;
        unsigned char *src = host(sb);
        want[k] = host(db[k]);
        for (size_t i = 0; i < sb; i++) src[i] = (unsigned char)cr_philox_next_u32(&prng);
        memset(want[k], 0xFF, db[k]);
        unsigned char *d_src = dev_copy(src, sb);
        d_dst[k] = dev_out(db[k]);
        h[k] = (cr_gather_item){src + off, want[k] + off, rb};
        d[k] = (cr_gather_item){d_src + off, d_dst[k] + off, rb};
    }
    cpu.ops->gather_rows_many(&cpu, idx, rows, count, h);
    gpu.ops->gather_rows_many(&gpu, d_idx, rows, count, d);
    for (int k = 0; k < count; k++) compare_ints("gather", fetch(d_dst[k], db[k]), want[k], db[k], 1);
    end_case();
}

static void test_keep(void);

static void test_gather(void) {
    static const size_t row_bytes[] = {4, 12, 16, 17, 256, 1};
    for (size_t k = 0; k < sizeof row_bytes / sizeof row_bytes[0]; k++) {
        gather_case(1, 1, row_bytes[k], 0);
        gather_case(1000, 777, row_bytes[k], 0);
        gather_case(1000, 333, row_bytes[k], 4);
        gather_case(500, 129, row_bytes[k], 1);
    }
    gather_many_case(1, 1, 1);
    gather_many_case(1000, 777, 6);
    gather_many_case(4096, 4000, CR_GATHER_MAX);
    test_keep();
}

/* keep_rows over T steps of random flags (about one row in `one_in` each step), then
 * place_values: the kept rows, the steps and the placed values bit for bit on both sides, and
 * every step reset to 0. offset: bytes by which the rows are shifted (misaligned rows). */
static void keep_case(int rows, size_t row_bytes, int T, int one_in, size_t offset) {
    CASE("keep_rows: %d rows of %zu bytes over %d steps, 1 in %d, offset %zu; place_values", rows,
         row_bytes, T, one_in, offset);
    size_t ob = (size_t)rows * row_bytes + offset;
    unsigned char *src = host(ob), *kept = host(ob);
    uint8_t *flag = host((size_t)rows);
    int32_t *step = host((size_t)rows * 4);
    float *v = host((size_t)rows * 4), *out = host((size_t)T * rows * 4);
    memset(kept, 0xAB, ob);
    memset(step, 0, (size_t)rows * 4);
    for (size_t i = 0; i < (size_t)T * rows; i++) out[i] = -1.0f;
    unsigned char *d_src = dev_out(ob), *d_kept = dev_copy(kept, ob);
    uint8_t *d_flag = dev_out((size_t)rows);
    int32_t *d_step = dev_copy(step, (size_t)rows * 4);
    for (int t = 1; t <= T; t++) {
        for (size_t i = 0; i < ob; i++) src[i] = (unsigned char)cr_philox_next_u32(&prng);
        for (int i = 0; i < rows; i++) flag[i] = cr_philox_next_u32(&prng) % (uint32_t)one_in == 0;
        cpu.ops->keep_rows(&cpu, src + offset, flag, kept + offset, step, t, rows, row_bytes);
        up(d_src, src, ob);
        up(d_flag, flag, (size_t)rows);
        gpu.ops->keep_rows(&gpu, d_src + offset, d_flag, d_kept + offset, d_step, t, rows,
                           row_bytes);
    }
    compare_ints("kept rows", fetch(d_kept, ob), kept, ob, 1);
    compare_ints("kept steps", fetch(d_step, (size_t)rows * 4), step, (size_t)rows, 4);
    int kept_rows = 0;
    for (int i = 0; i < rows; i++) kept_rows += step[i] > 0;
    for (int i = 0; i < rows; i++) v[i] = (float)(cr_philox_next_u32(&prng) >> 8) - 8e6f;
    float *d_v = dev_copy(v, (size_t)rows * 4), *d_out = dev_copy(out, (size_t)T * rows * 4);
    cpu.ops->place_values(&cpu, v, step, out, rows);
    gpu.ops->place_values(&gpu, d_v, d_step, d_out, rows);
    compare_ints("placed values", fetch(d_out, (size_t)T * rows * 4), out, (size_t)T * rows, 4);
    int placed = 0;
    for (size_t i = 0; i < (size_t)T * rows; i++) placed += out[i] != -1.0f;
    CHECK_MSG(placed == kept_rows, "%d values placed for %d kept rows", placed, kept_rows);
    int32_t *g_step = fetch(d_step, (size_t)rows * 4);
    for (int i = 0; i < rows; i++)
        CHECK_MSG(step[i] == 0 && g_step[i] == 0, "row %d: step %d (cpu) %d (cuda) after placing",
                  i, (int)step[i], (int)g_step[i]);
    end_case();
}

static void test_keep(void) {
    keep_case(1, 16, 1, 1, 0);
    keep_case(4096, 7056 * 4, 16, 50, 0); /* CartPolePixels' frames, 4096 envs */
    keep_case(1000, 17, 40, 7, 3);
    keep_case(333, 4, 128, 300, 0);
}

/* ---- PPO loss ------------------------------------------------------------------------------- */

/* The fields of an accumulator as one array: sum[0..7), count, grad_norm_sum, last_approx_kl. */
#define ACC_VALUES 10
static void acc_values(const cr_ppo_stats_acc *a, double out[ACC_VALUES]) {
    memcpy(out, a->sum, sizeof a->sum);
    out[7] = a->count, out[8] = a->grad_norm_sum, out[9] = a->last_approx_kl;
}

static cr_ppo_stats_acc start_acc(void) {
    cr_ppo_stats_acc a;
    for (int k = 0; k < 7; k++) a.sum[k] = 0.1 * (k + 1);
    a.count = 3, a.grad_norm_sum = 1.5, a.last_approx_kl = 0.7;
    return a;
}

/* A minibatch whose ratios and value differences keep 1e-4 away from the clip bounds, where a
 * one-ulp difference of expf would send a row's gradient to the other side of a kink. */
static void ppo_case(int B, int A, float scale, int norm_adv, int clip_vloss) {
    CASE("B=%d A=%d scale=%g norm_adv=%d clip_vloss=%d", B, A, (double)scale, norm_adv,
         clip_vloss);
    const float clip = 0.2f;
    cr_ppo_loss_params p = {clip, 0.01f, 0.5f, clip_vloss, norm_adv};
    size_t n = (size_t)B * A;
    float *l = uniform_floats(n, -scale, scale), *logp = host_floats(B), *ent = host_floats(B);
    int32_t *act = random_ints((size_t)B, A);
    cr_cpu_categorical_logp_entropy(l, act, logp, ent, B, A);
    float *old_logp = host_floats(B), *adv = uniform_floats(B, -2, 2);
    float *ret = uniform_floats(B, -1, 1), *old_v = uniform_floats(B, -1, 1), *v = host_floats(B);
    for (int b = 0; b < B; b++) {
        float lr, d;
        do {
            float r = -0.4f + 0.8f * cr_philox_uniform(&prng);
            old_logp[b] = logp[b] - r;
            lr = logp[b] - old_logp[b];
        } while (fabs(exp(lr) - (1.0 - clip)) < 1e-4 || fabs(exp(lr) - (1.0 + clip)) < 1e-4);
        do {
            v[b] = old_v[b] + (-0.5f + cr_philox_uniform(&prng));
            d = v[b] - old_v[b];
        } while (fabsf(fabsf(d) - clip) < 1e-4f);
    }
    float *dl = host_floats(n), *dv = host_floats(B);
    cr_ppo_stats_acc acc = start_acc(), acc0 = acc;
    cpu.ops->ppo_loss(&cpu, l, act, old_logp, adv, v, old_v, ret, &p, dl, dv, &acc, B, A);
    cpu.ops->ppo_loss(&cpu, l, act, old_logp, adv, v, old_v, ret, &p, dl, dv, &acc, B, A);

    float *d_l = dev_copy(l, F(n)), *d_old_logp = dev_copy(old_logp, F(B));
    float *d_adv = dev_copy(adv, F(B)), *d_v = dev_copy(v, F(B)), *d_old_v = dev_copy(old_v, F(B));
    float *d_ret = dev_copy(ret, F(B)), *d_dl = dev_out(F(n)), *d_dv = dev_out(F(B));
    int32_t *d_act = dev_copy(act, (size_t)B * 4);
    cr_ppo_stats_acc *d_acc = dev_copy(&acc0, sizeof acc0);
    for (int k = 0; k < 2; k++)
        gpu.ops->ppo_loss(&gpu, d_l, d_act, d_old_logp, d_adv, d_v, d_old_v, d_ret, &p, d_dl,
                          d_dv, d_acc, B, A);
    compare_f32("ppo.dlogits", fetch(d_dl, F(n)), dl, n);
    compare_f32("ppo.dvalue", fetch(d_dv, F(B)), dv, B);
    cr_ppo_stats_acc g_acc;
    down(&g_acc, d_acc, sizeof g_acc);
    double got[ACC_VALUES], want[ACC_VALUES];
    acc_values(&g_acc, got);
    acc_values(&acc, want);
    compare_f64("ppo.stats", got, want, ACC_VALUES);
    end_case();
}

/* Sampling on the GPU and then the loss on the same logits with old_logp = the sampled logp:
 * every ratio is exactly 1, so both KL estimates and the clip fraction add exactly 0. */
static void ppo_own_policy_case(int B, int A) {
    CASE("own policy B=%d A=%d", B, A);
    cr_ppo_loss_params p = {0.2f, 0.01f, 0.5f, 1, 1};
    size_t n = (size_t)B * A;
    float *d_l = dev_copy(uniform_floats(n, -4, 4), F(n)), *d_u = dev_copy(uniform_floats(B, 0, 1), F(B));
    float *d_logp = dev_out(F(B)), *d_adv = dev_copy(uniform_floats(B, -1, 1), F(B));
    float *d_v = dev_copy(uniform_floats(B, -1, 1), F(B)), *d_dl = dev(F(n)), *d_dv = dev(F(B));
    int32_t *d_act = dev_out((size_t)B * 4);
    cr_ppo_stats_acc zero_acc;
    memset(&zero_acc, 0, sizeof zero_acc);
    cr_ppo_stats_acc *d_acc = dev_copy(&zero_acc, sizeof zero_acc);
    gpu.ops->categorical_sample(&gpu, d_l, d_u, d_act, d_logp, B, A);
    gpu.ops->ppo_loss(&gpu, d_l, d_act, d_logp, d_adv, d_v, d_v, d_v, &p, d_dl, d_dv, d_acc, B, A);
    cr_ppo_stats_acc g;
    down(&g, d_acc, sizeof g);
    double zeros[3] = {0, 0, 0};
    compare_f64("ppo.own_policy", g.sum + 4, zeros, 3); /* old_approx_kl, approx_kl, clipfrac */
    end_case();
}

static void test_ppo_loss(void) {
    ppo_case(1, 2, 3.0f, 1, 1); /* B = 1: the std is taken as 0 */
    ppo_case(1, 7, 3.0f, 0, 0);
    ppo_case(7, 2, 3.0f, 1, 1);
    ppo_case(64, 7, 1e4f, 1, 1); /* one-hot softmax */
    ppo_case(64, 7, 50.0f, 0, 1);
    ppo_case(512, 7, 3.0f, 1, 0);
    ppo_case(1000, 2, 3.0f, 0, 1);
    ppo_case(3000, 18, 3.0f, 1, 1); /* several blocks of partial sums */
    ppo_case(300000, 2, 3.0f, 1, 1); /* more rows than the partials: grid-stride */
    ppo_own_policy_case(1000, 7);
    ppo_own_policy_case(1, 2);
}

/* ---- optimiser ------------------------------------------------------------------------------ */

static void clip_case(size_t n, double max_norm, int with_nan) {
    CASE("clip n=%zu max_norm=%g%s", n, max_norm, with_nan ? " NaN" : "");
    float *g = uniform_floats(n, -0.1f, 0.1f);
    if (with_nan) g[n / 2] = NAN;
    float *d_g = dev_copy(g, F(n));
    cr_ppo_stats_acc acc = start_acc(), *d_acc = dev_copy(&acc, sizeof acc);
    cpu.ops->clip_grad_norm(&cpu, g, n, max_norm, &acc.grad_norm_sum);
    gpu.ops->clip_grad_norm(&gpu, d_g, n, max_norm, &d_acc->grad_norm_sum);
    compare_f32("clip.g", fetch(d_g, F(n)), g, n);
    cr_ppo_stats_acc g_acc;
    down(&g_acc, d_acc, sizeof g_acc);
    compare_f64("clip.norm", &g_acc.grad_norm_sum, &acc.grad_norm_sum, 1);
    g_acc.grad_norm_sum = acc.grad_norm_sum;
    double got[ACC_VALUES], want[ACC_VALUES];
    acc_values(&g_acc, got);
    acc_values(&acc, want);
    compare_f64("memory", got, want, ACC_VALUES); /* the other fields untouched */
    end_case();
}

static void adam_case(size_t n, int64_t t0, int steps) {
    float *p = uniform_floats(n, -1, 1), *m = uniform_floats(n, -0.01f, 0.01f);
    float *v = uniform_floats(n, 0, 1e-4f);
    float *d_p = dev_copy(p, F(n)), *d_m = dev_copy(m, F(n)), *d_v = dev_copy(v, F(n));
    int64_t t = t0, *d_t = dev_copy(&t, 8);
    float *d_g = dev(F(n)), *d_lr = dev(F(1));
    for (int k = 0; k < steps; k++) {
        CASE("adam n=%zu t0=%lld step %d", n, (long long)t0, k);
        float *g = uniform_floats(n, -1, 1), lr = 2.5e-4f * (float)(steps - k) / (float)steps;
        if (k == 1) g[0] = 0.0f;
        cpu.ops->adam_step(&cpu, p, g, m, v, n, &lr, 0.9f, 0.999f, 1e-5f, &t);
        up(d_g, g, F(n));
        up(d_lr, &lr, F(1));
        gpu.ops->adam_step(&gpu, d_p, d_g, d_m, d_v, n, d_lr, 0.9f, 0.999f, 1e-5f, d_t);
        compare_ints("adam.t", fetch(d_t, 8), &t, 1, 8);
        compare_f32("adam.mv", fetch(d_m, F(n)), m, n);
        compare_f32("adam.mv", fetch(d_v, F(n)), v, n);
        compare_f32("adam.p", fetch(d_p, F(n)), p, n);
    }
    end_case();
}

static void test_optim(void) {
    static const size_t sizes[] = {1, 1000, 9000, 65536, 65537, (1u << 20) + 3}; /* both paths */
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        clip_case(sizes[i], 0.5, 0);
        clip_case(sizes[i], 1e9, 0);
        adam_case(sizes[i], 0, 3);
        adam_case(sizes[i], 1000, 2);
    }
    clip_case(9000, 0.5, 1);
}

/* ---- a training-shaped pipeline for graphs and allocation checks ---------------------------- */

/* Every op of the backend on one arena: B rows, I inputs, H hidden, A actions; T x N rollout. */
enum { PB = 64, PI = 4, PH = 16, PA = 3, PT = 4, PN = 16 };
#define PP (PH * PI + PH + PA * PH + PA) /* parameters: w1, b1, w2, b2 */

enum { X0, X, H, LOGITS, U, ACT, LOGP, OLD_LOGP, ADV, VAL, RET, DL, DV, DH, PARAMS, GRADS, ADAM_M,
       ADAM_V, ADAM_T, LR, RNG, ACC, REWARD, DONE, TERM, EP_RET, EP_LEN, LOG, FINAL_V, LAST_V,
       NEXT_V, GAE_ADV, GAE_RET, VSTATS, ARGMAX, COPY, PERM, N_ITEMS };

typedef struct pipeline {
    cr_plan plan;
    cr_arena mem;
    unsigned char *image; /* the initial contents (host) of the whole plan */
} pipeline;

#define PTR(pl, i) cr_arena_get(&(pl)->mem, (i))

static void pipeline_init(pipeline *pl) {
    static const size_t sizes[N_ITEMS] = {
        [X0] = F(PB * PI), [X] = F(PB * PI), [H] = F(PB * PH), [LOGITS] = F(PB * PA),
        [U] = F(PB), [ACT] = PB * 4, [LOGP] = F(PB), [OLD_LOGP] = F(PB), [ADV] = F(PB),
        [VAL] = F(PB), [RET] = F(PB), [DL] = F(PB * PA), [DV] = F(PB), [DH] = F(PB * PH),
        [PARAMS] = F(PP), [GRADS] = F(PP), [ADAM_M] = F(PP), [ADAM_V] = F(PP), [ADAM_T] = 8,
        [LR] = F(1), [RNG] = sizeof(cr_rng_stream), [ACC] = sizeof(cr_ppo_stats_acc),
        [REWARD] = F(PT * PN), [DONE] = PT * PN, [TERM] = PT * PN, [EP_RET] = PN * 8,
        [EP_LEN] = PN * 8, [LOG] = sizeof(cr_episode_log), [FINAL_V] = F(PT * PN),
        [LAST_V] = F(PN), [NEXT_V] = F(PT * PN), [GAE_ADV] = F(PT * PN), [GAE_RET] = F(PT * PN),
        [VSTATS] = 5 * 8, [ARGMAX] = PB * 4, [COPY] = F(PB * PI), [PERM] = PB * 4};
    cr_plan_init(&pl->plan);
    for (int i = 0; i < N_ITEMS; i++)
        cr_plan_add(&pl->plan, "pipeline",
                    sizes[i]);
    CHECK_OK(gpu.ops->arena_alloc(&gpu, &pl->mem, &pl->plan));
    /* The initial image: random floats, then the items that need a meaning. */
    size_t bytes = pl->plan.total;
    pl->image = malloc(bytes);
    CHECK(pl->image != NULL);
    float *f = (float *)pl->image;
    for (size_t i = 0; i < bytes / 4; i++) f[i] = -1.0f + 2.0f * cr_philox_uniform(&prng);
#define AT(i, type) ((type *)(pl->image + pl->plan.offsets[i]))
    memset(AT(ADAM_M, char), 0, F(PP));
    memset(AT(ADAM_V, char), 0, F(PP));
    *AT(ADAM_T, int64_t) = 0;
    *AT(LR, float) = 1e-3f;
    cr_rng_stream_seed(AT(RNG, cr_rng_stream), 5, 9);
    memset(AT(ACC, char), 0, sizeof(cr_ppo_stats_acc));
    for (int i = 0; i < PT * PN; i++) {
        AT(TERM, uint8_t)[i] = cr_philox_uniform(&prng) < 0.1f;
        AT(DONE, uint8_t)[i] = AT(TERM, uint8_t)[i] | (cr_philox_uniform(&prng) < 0.05f);
    }
    memset(AT(EP_RET, char), 0, PN * 8);
    memset(AT(EP_LEN, char), 0, PN * 8);
    memset(AT(LOG, char), 0, sizeof(cr_episode_log));
    memset(AT(VSTATS, char), 0, 40);
    for (int i = 0; i < PB; i++) AT(OLD_LOGP, float)[i] = -1.1f + 0.2f * AT(OLD_LOGP, float)[i];
#undef AT
}

static void pipeline_reset(pipeline *pl) {
    up(pl->mem.base, pl->image, pl->plan.total);
}

/* One pass of every op over the pipeline's arena (enqueued only: nothing waits). */
static void pipeline_run(pipeline *pl) {
    cudarl_ctx *c = &gpu;
    const cr_backend *o = c->ops;
    float *params = PTR(pl, PARAMS), *grads = PTR(pl, GRADS);
    float *w1 = params, *b1 = w1 + PH * PI, *w2 = b1 + PH, *b2 = w2 + PA * PH;
    float *gw1 = grads, *gb1 = gw1 + PH * PI, *gw2 = gb1 + PH, *gb2 = gw2 + PA * PH;
    cr_ppo_loss_params lp = {0.2f, 0.01f, 0.5f, 1, 1};
    o->permutation(c, PTR(pl, RNG), PTR(pl, PERM), PB);
    o->gather_rows(c, PTR(pl, X0), PTR(pl, PERM), PTR(pl, X), PB, F(PI));
    o->copy(c, PTR(pl, COPY), PTR(pl, X), F(PB * PI));
    o->zero(c, PTR(pl, COPY), F(PI));
    o->linear_tanh_forward(c, PTR(pl, X), w1, b1, PTR(pl, H), PB, PI, PH);
    o->linear_forward(c, PTR(pl, H), w2, b2, PTR(pl, LOGITS), PB, PH, PA);
    o->uniform(c, PTR(pl, RNG), PTR(pl, U), PB);
    o->categorical_sample(c, PTR(pl, LOGITS), PTR(pl, U), PTR(pl, ACT), PTR(pl, LOGP), PB, PA);
    o->categorical_argmax(c, PTR(pl, LOGITS), PTR(pl, ARGMAX), PB, PA);
    o->ppo_loss(c, PTR(pl, LOGITS), PTR(pl, ACT), PTR(pl, OLD_LOGP), PTR(pl, ADV), PTR(pl, VAL),
                PTR(pl, VAL), PTR(pl, RET), &lp, PTR(pl, DL), PTR(pl, DV), PTR(pl, ACC), PB, PA);
    o->linear_backward(c, PTR(pl, DL), PTR(pl, H), w2, PTR(pl, DH), gw2, gb2, PB, PH, PA);
    o->tanh_backward(c, PTR(pl, H), PTR(pl, DH), PTR(pl, DH), (size_t)PB * PH);
    o->linear_backward(c, PTR(pl, DH), PTR(pl, X), w1, NULL, gw1, gb1, PB, PI, PH);
    o->clip_grad_norm(c, grads, PP, 0.5, &((cr_ppo_stats_acc *)PTR(pl, ACC))->grad_norm_sum);
    o->adam_step(c, params, grads, PTR(pl, ADAM_M), PTR(pl, ADAM_V), PP, PTR(pl, LR), 0.9f,
                 0.999f, 1e-5f, PTR(pl, ADAM_T));
    o->episodes_record(c, PTR(pl, REWARD), PTR(pl, DONE), PTR(pl, EP_RET), PTR(pl, EP_LEN),
                       PTR(pl, LOG), PN);
    o->bootstrap_values(c, PTR(pl, VAL), PTR(pl, FINAL_V), PTR(pl, LAST_V), PTR(pl, DONE),
                        PTR(pl, NEXT_V), PT, PN);
    o->gae(c, PTR(pl, REWARD), PTR(pl, VAL), PTR(pl, NEXT_V), PTR(pl, TERM), PTR(pl, DONE), 0.99f,
           0.95f, PTR(pl, GAE_ADV), PTR(pl, GAE_RET), PT, PN);
    o->value_stats(c, PTR(pl, VAL), PTR(pl, GAE_RET), PT * PN, PTR(pl, VSTATS));
}

static void pipeline_free(pipeline *pl) {
    gpu.ops->arena_free(&gpu, &pl->mem);
    free(pl->image);
}

/* Two launches of one captured pass and two eager passes give the same bytes: the graph reads
 * the RNG offset, Adam's t and the accumulators from device memory at every launch. The capture
 * comes first, so (run as its own ctest) every kernel's first launch happens inside it, as in the
 * trainer, which captures its phases on first use. */
static void test_graph(void) {
    CASE("graph of every op, launched twice");
    pipeline pl;
    pipeline_init(&pl);
    size_t bytes = pl.plan.total;
    unsigned char *eager = host(bytes), *replay = host(bytes);
    pipeline_reset(&pl);
    void *graph = NULL;
    CHECK_OK(gpu.ops->graph_begin(&gpu));
    pipeline_run(&pl);
    CHECK_OK(gpu.ops->graph_end(&gpu, &graph));
    CHECK(graph != NULL);
    gpu.ops->graph_launch(&gpu, graph);
    gpu.ops->graph_launch(&gpu, graph);
    down(replay, pl.mem.base, bytes);
    pipeline_reset(&pl);
    pipeline_run(&pl);
    pipeline_run(&pl);
    down(eager, pl.mem.base, bytes);
    for (int i = 0; i < N_ITEMS; i++) {
        CASE("graph, item %d of the pipeline", i);
        size_t off = pl.plan.offsets[i];
        compare_ints("graph", replay + off, eager + off, pl.plan.sizes[i], 1);
    }
    int64_t t;
    memcpy(&t, eager + pl.plan.offsets[ADAM_T], 8);
    CHECK_MSG(t == 2, "adam t after two passes: %lld", (long long)t);
    gpu.ops->graph_free(graph);

    /* A copy from pinned memory is captured and reads the buffer at each launch. */
    CASE("graph with a copy from pinned memory");
    float *pinned = NULL, *d = PTR(&pl, LR), got = 0;
    CHECK_OK(cr_cuda_host_alloc_pinned((void **)&pinned, sizeof *pinned));
    CHECK_OK(gpu.ops->graph_begin(&gpu));
    gpu.ops->copy_from_host(&gpu, d, pinned, sizeof *pinned);
    CHECK_OK(gpu.ops->graph_end(&gpu, &graph));
    for (int k = 1; k <= 3; k++) {
        *pinned = 0.5f * (float)k;
        gpu.ops->graph_launch(&gpu, graph);
        down(&got, d, sizeof got);
        compare_f32("graph", &got, pinned, 1);
    }
    gpu.ops->graph_free(graph);
    cr_cuda_host_free_pinned(pinned);

    /* What cannot be captured fails the capture with a status, and the context carries on. */
    static const char *const refused[] = {"copy_to_host", "sync", "copy_from_host"};
    for (int k = 0; k < 3; k++) {
        CASE("graph refusing %s", refused[k]);
        float one = 1.0f;
        CHECK_OK(gpu.ops->graph_begin(&gpu));
        gpu.ops->zero(&gpu, d, sizeof one);
        if (k == 0) gpu.ops->copy_to_host(&gpu, &got, d, sizeof got);
        if (k == 1) gpu.ops->sync(&gpu);
        if (k == 2) gpu.ops->copy_from_host(&gpu, d, &one, sizeof one); /* pageable */
        graph = &got;
        cudarl_status st = gpu.ops->graph_end(&gpu, &graph);
        CHECK_MSG(st == CUDARL_ERR_UNSUPPORTED && graph == NULL, "%s: got %s", case_name,
                  cudarl_status_name(st));
        CHECK_MSG(strstr(cudarl_last_error(), refused[k]) != NULL, "message: %s",
                  cudarl_last_error());
        up(d, &one, sizeof one);
        down(&got, d, sizeof got);
        compare_f32("graph", &got, &one, 1);
    }
    pipeline_free(&pl);
    end_case();
}

/* 1,000 passes of every op: no cudaMalloc, and the device's free memory does not drop. */
static void test_noalloc(void) {
    CASE("1000 passes of every op");
    pipeline pl;
    pipeline_init(&pl);
    pipeline_reset(&pl);
    pipeline_run(&pl); /* first launches load the kernels (lazy loading) */
    gpu.ops->sync(&gpu);
    size_t count = cr_cuda_alloc_count(), free0 = 0, free1 = 0, total = 0;
    CHECK_OK(cr_cuda_mem_info(&gpu, &free0, &total));
    for (int k = 0; k < 1000; k++) pipeline_run(&pl);
    gpu.ops->sync(&gpu);
    CHECK_OK(cr_cuda_mem_info(&gpu, &free1, &total));
    CHECK_MSG(cr_cuda_alloc_count() == count, "%zu device allocations during the passes",
              cr_cuda_alloc_count() - count);
    CHECK_MSG(free1 >= free0, "free device memory dropped by %zu bytes over the passes",
              free0 - free1);
    printf("  1000 passes: 0 allocations, free memory %zu -> %zu bytes\n", free0, free1);
    pipeline_free(&pl);
    end_case();
}

/* ---- fused PPO minibatch gradients ---------------------------------------------------------- */

/* The CleanRL actor-critic (hidden 64, A = 2) with weights of the orthogonal init's scale
 * (uniform, so nothing is degenerate), non-zero biases and a critic / actor head of gain 1 (so
 * the logits are far from uniform). Host memory. */
static float *fused_params(const cr_ac_layout *L) {
    float *p = host(F(L->num_params));
    for (int i = 0; i < CR_AC_NUM_TENSORS; i++) {
        const cr_param_tensor *t = &L->t[i];
        float a = t->ndim == 2 ? sqrtf(3.0f) * (t->shape[0] == 64 ? sqrtf(2.0f) : 1.0f) /
                                     sqrtf((float)t->shape[1])
                               : 0.1f;
        for (size_t k = 0; k < t->count; k++)
            p[t->offset + k] = -a + 2 * a * cr_philox_uniform(&prng);
    }
    return p;
}

/* ppo_minibatch_grads against the unfused CUDA ops (cr_mlp_forward, ppo_loss, cr_mlp_backward:
 * what ppo.c runs without it) and against the CPU backend, on one random minibatch whose
 * old_logp and old values are set from the model's own outputs so that the policy ratio and the
 * value change fall on both sides of the clip range (1e-4 away from its bounds). */
static void ppo_fused_case(int B, int D, int norm_adv, int clip_vloss) {
    CASE("fused B=%d D=%d norm_adv=%d clip_vloss=%d", B, D, norm_adv, clip_vloss);
    const int A = 2, Hd = 64;
    const float clip = 0.2f;
    cr_ppo_loss_params p = {clip, 0.01f, 0.5f, clip_vloss, norm_adv};
    cr_ac_layout L;
    cr_ac_layout_init(&L, D, Hd, A);
    const size_t P = L.num_params;
    float *params = fused_params(&L);
    float *obs = uniform_floats((size_t)B * D, -2, 2), *adv = uniform_floats(B, -2, 2);
    float *ret = uniform_floats(B, -1, 1);
    int32_t *act = random_ints((size_t)B, A);

    /* CPU reference: the forward gives the model's logp and value, then the perturbed data. */
    cr_mlp_view a_cpu = cr_ac_actor(&L, params), c_cpu = cr_ac_critic(&L, params);
    float *grads_cpu = host_floats(P);
    cr_mlp_view ga_cpu = cr_ac_actor(&L, grads_cpu), gc_cpu = cr_ac_critic(&L, grads_cpu);
    cr_mlp_cache ca = cr_mlp_cache_carve(host(F(cr_mlp_cache_floats(B, Hd))), B, Hd);
    cr_mlp_cache cc = cr_mlp_cache_carve(host(F(cr_mlp_cache_floats(B, Hd))), B, Hd);
    float *logits = host_floats((size_t)B * A), *value = host_floats(B);
    cr_mlp_forward(&cpu, &a_cpu, obs, logits, &ca, B);
    cr_mlp_forward(&cpu, &c_cpu, obs, value, &cc, B);
    float *logp = host_floats(B), *ent = host_floats(B), *old_logp = host_floats(B);
    float *old_v = host_floats(B);
    cr_cpu_categorical_logp_entropy(logits, act, logp, ent, B, A);
    for (int b = 0; b < B; b++) {
        float lr, d;
        do {
            float r = -0.4f + 0.8f * cr_philox_uniform(&prng);
            old_logp[b] = logp[b] - r;
            lr = logp[b] - old_logp[b];
        } while (fabs(exp(lr) - (1.0 - clip)) < 1e-4 || fabs(exp(lr) - (1.0 + clip)) < 1e-4);
        do {
            old_v[b] = value[b] - (-0.5f + cr_philox_uniform(&prng));
            d = value[b] - old_v[b];
        } while (fabsf(fabsf(d) - clip) < 1e-4f);
    }
    float *dl = host_floats((size_t)B * A), *dv = host_floats(B);
    cr_ppo_stats_acc acc_cpu = start_acc(), acc0 = acc_cpu;
    cpu.ops->ppo_loss(&cpu, logits, act, old_logp, adv, value, old_v, ret, &p, dl, dv, &acc_cpu,
                      B, A);
    cr_mlp_backward(&cpu, &a_cpu, &ga_cpu, obs, dl, &ca, B);
    cr_mlp_backward(&cpu, &c_cpu, &gc_cpu, obs, dv, &cc, B);

    /* The same minibatch on the GPU. */
    float *d_params = dev_copy(params, F(P)), *d_obs = dev_copy(obs, F((size_t)B * D));
    float *d_old_logp = dev_copy(old_logp, F(B)), *d_adv = dev_copy(adv, F(B));
    float *d_old_v = dev_copy(old_v, F(B)), *d_ret = dev_copy(ret, F(B));
    int32_t *d_act = dev_copy(act, (size_t)B * 4);
    cr_mlp_view actor = cr_ac_actor(&L, d_params), critic = cr_ac_critic(&L, d_params);
    CHECK_MSG(cr_ppo_fused_supported(gpu.ops, &actor, &critic),
              "the CUDA backend does not offer ppo_minibatch_grads for D=%d (CUDARL_FUSED=0?)", D);

    /* unfused CUDA path */
    float *d_gu = dev_out(F(P));
    cr_mlp_view ga = cr_ac_actor(&L, d_gu), gc = cr_ac_critic(&L, d_gu);
    cr_mlp_cache dca = cr_mlp_cache_carve(dev(F(cr_mlp_cache_floats(B, Hd))), B, Hd);
    cr_mlp_cache dcc = cr_mlp_cache_carve(dev(F(cr_mlp_cache_floats(B, Hd))), B, Hd);
    float *d_l = dev_out(F((size_t)B * A)), *d_v = dev_out(F(B));
    float *d_dl = dev_out(F((size_t)B * A)), *d_dv = dev_out(F(B));
    cr_ppo_stats_acc *d_acc_u = dev_copy(&acc0, sizeof acc0);
    cr_mlp_forward(&gpu, &actor, d_obs, d_l, &dca, B);
    cr_mlp_forward(&gpu, &critic, d_obs, d_v, &dcc, B);
    gpu.ops->ppo_loss(&gpu, d_l, d_act, d_old_logp, d_adv, d_v, d_old_v, d_ret, &p, d_dl, d_dv,
                      d_acc_u, B, A);
    cr_mlp_backward(&gpu, &actor, &ga, d_obs, d_dl, &dca, B);
    cr_mlp_backward(&gpu, &critic, &gc, d_obs, d_dv, &dcc, B);
    float *grads_u = fetch(d_gu, F(P));
    cr_ppo_stats_acc acc_u;
    down(&acc_u, d_acc_u, sizeof acc_u);

    /* fused, twice, outputs (and the scratch) poisoned before each run; the second run is
     * captured into a graph and replayed (the op allocates nothing and never waits) */
    size_t sb = gpu.ops->ppo_minibatch_scratch_bytes(B, P);
    void *d_scratch = dev(sb);
    float *d_gf = dev(F(P));
    cr_mlp_view gfa = cr_ac_actor(&L, d_gf), gfc = cr_ac_critic(&L, d_gf);
    cr_ppo_stats_acc *d_acc_f = dev(sizeof acc0);
    float *grads_f[2];
    cr_ppo_stats_acc acc_f[2];
    for (int k = 0; k < 2; k++) {
        poison(d_gf, F(P));
        poison(d_scratch, sb);
        up(d_acc_f, &acc0, sizeof acc0);
        void *graph = NULL;
        if (k == 1) CHECK_OK(gpu.ops->graph_begin(&gpu));
        gpu.ops->ppo_minibatch_grads(&gpu, &actor, &critic, &gfa, &gfc, d_obs, d_act, d_old_logp,
                                     d_adv, d_old_v, d_ret, &p, d_acc_f, d_scratch, B, A);
        if (k == 1) {
            CHECK_OK(gpu.ops->graph_end(&gpu, &graph));
            gpu.ops->graph_launch(&gpu, graph);
        }
        grads_f[k] = fetch(d_gf, F(P));
        down(&acc_f[k], d_acc_f, sizeof acc_f[k]);
        if (graph) gpu.ops->graph_free(graph);
    }

    double got[ACC_VALUES], got2[ACC_VALUES], want_u[ACC_VALUES], want_c[ACC_VALUES];
    acc_values(&acc_f[0], got);
    acc_values(&acc_f[1], got2);
    acc_values(&acc_u, want_u);
    acc_values(&acc_cpu, want_c);
    char base[96];
    snprintf(base, sizeof base, "%.90s", case_name);
    for (int i = 0; i < CR_AC_NUM_TENSORS; i++) {
        const cr_param_tensor *t = &L.t[i];
        CASE("%s, %s vs unfused CUDA", base, t->name);
        compare_f32("fused.grad", grads_f[0] + t->offset, grads_u + t->offset, t->count);
        CASE("%s, %s vs CPU", base, t->name);
        compare_f32("fused.grad", grads_f[0] + t->offset, grads_cpu + t->offset, t->count);
    }
    CASE("%s, stats vs unfused CUDA", base);
    compare_f64("fused.stats", got, want_u, ACC_VALUES);
    CASE("%s, stats vs CPU", base);
    compare_f64("fused.stats", got, want_c, ACC_VALUES);
    CASE("%s, second run (graph)", base);
    compare_ints("fused.repeat", grads_f[1], grads_f[0], P, 4);
    compare_ints("fused.repeat", got2, got, ACC_VALUES, 8);
    printf("  %s: ok\n", base);
    end_case();
}

/* ppo_minibatch_grads_gaussian against the unfused CUDA ops (cr_mlp_forward, ppo_loss_gaussian,
 * cr_mlp_backward: what ppo.c runs without it) and against the CPU backend, as ppo_fused_case:
 * actions sampled from the model's own Gaussian, old_logp and old values moved off the model's
 * so that the ratio and the value change fall on both sides of the clip range. */
static void ppo_fused_gaussian_case(int B, int D, int K, int norm_adv, int clip_vloss) {
    CASE("fused gaussian B=%d D=%d K=%d norm_adv=%d clip_vloss=%d", B, D, K, norm_adv,
         clip_vloss);
    const int Hd = 64;
    const float clip = 0.2f;
    cr_ppo_loss_params p = {clip, 0.01f, 0.5f, clip_vloss, norm_adv};
    cr_ac_layout L;
    cr_ac_layout_init_gaussian(&L, D, Hd, K);
    const size_t P = L.num_params;
    float *params = fused_params(&L);
    float *obs = uniform_floats((size_t)B * D, -2, 2), *adv = uniform_floats(B, -2, 2);
    float *ret = uniform_floats(B, -1, 1), *u = uniform_floats((size_t)2 * B * K, 0, 1);
    const float *logstd = cr_ac_logstd(&L, params);

    cr_mlp_view a_cpu = cr_ac_actor(&L, params), c_cpu = cr_ac_critic(&L, params);
    float *grads_cpu = host_floats(P);
    cr_mlp_view ga_cpu = cr_ac_actor(&L, grads_cpu), gc_cpu = cr_ac_critic(&L, grads_cpu);
    cr_mlp_cache ca = cr_mlp_cache_carve(host(F(cr_mlp_cache_floats(B, Hd))), B, Hd);
    cr_mlp_cache cc = cr_mlp_cache_carve(host(F(cr_mlp_cache_floats(B, Hd))), B, Hd);
    float *mean = host_floats((size_t)B * K), *value = host_floats(B);
    cr_mlp_forward(&cpu, &a_cpu, obs, mean, &ca, B);
    cr_mlp_forward(&cpu, &c_cpu, obs, value, &cc, B);
    float *act = host_floats((size_t)B * K), *logp = host_floats(B), *old_logp = host_floats(B);
    float *old_v = host_floats(B);
    cr_cpu_gaussian_sample(mean, logstd, u, act, logp, B, K);
    for (int b = 0; b < B; b++) {
        float lr, d;
        do {
            float r = -0.4f + 0.8f * cr_philox_uniform(&prng);
            old_logp[b] = logp[b] - r;
            lr = logp[b] - old_logp[b];
        } while (fabs(exp(lr) - (1.0 - clip)) < 1e-4 || fabs(exp(lr) - (1.0 + clip)) < 1e-4);
        do {
            old_v[b] = value[b] - (-0.5f + cr_philox_uniform(&prng));
            d = value[b] - old_v[b];
        } while (fabsf(fabsf(d) - clip) < 1e-4f);
    }
    float *dm = host_floats((size_t)B * K), *dv = host_floats(B);
    cr_ppo_stats_acc acc_cpu = start_acc(), acc0 = acc_cpu;
    cpu.ops->ppo_loss_gaussian(&cpu, mean, logstd, act, old_logp, adv, value, old_v, ret, &p, dm,
                               cr_ac_logstd(&L, grads_cpu), dv, &acc_cpu, B, K);
    cr_mlp_backward(&cpu, &a_cpu, &ga_cpu, obs, dm, &ca, B);
    cr_mlp_backward(&cpu, &c_cpu, &gc_cpu, obs, dv, &cc, B);

    float *d_params = dev_copy(params, F(P)), *d_obs = dev_copy(obs, F((size_t)B * D));
    float *d_old_logp = dev_copy(old_logp, F(B)), *d_adv = dev_copy(adv, F(B));
    float *d_old_v = dev_copy(old_v, F(B)), *d_ret = dev_copy(ret, F(B));
    float *d_act = dev_copy(act, F((size_t)B * K));
    float *d_logstd = cr_ac_logstd(&L, d_params);
    cr_mlp_view actor = cr_ac_actor(&L, d_params), critic = cr_ac_critic(&L, d_params);
    CHECK_MSG(cr_ppo_fused_gaussian_supported(gpu.ops, &actor, &critic),
              "the CUDA backend does not offer ppo_minibatch_grads_gaussian for D=%d K=%d", D, K);

    /* unfused CUDA path */
    float *d_gu = dev_out(F(P));
    cr_mlp_view ga = cr_ac_actor(&L, d_gu), gc = cr_ac_critic(&L, d_gu);
    cr_mlp_cache dca = cr_mlp_cache_carve(dev(F(cr_mlp_cache_floats(B, Hd))), B, Hd);
    cr_mlp_cache dcc = cr_mlp_cache_carve(dev(F(cr_mlp_cache_floats(B, Hd))), B, Hd);
    float *d_m = dev_out(F((size_t)B * K)), *d_v = dev_out(F(B));
    float *d_dm = dev_out(F((size_t)B * K)), *d_dv = dev_out(F(B));
    cr_ppo_stats_acc *d_acc_u = dev_copy(&acc0, sizeof acc0);
    cr_mlp_forward(&gpu, &actor, d_obs, d_m, &dca, B);
    cr_mlp_forward(&gpu, &critic, d_obs, d_v, &dcc, B);
    gpu.ops->ppo_loss_gaussian(&gpu, d_m, d_logstd, d_act, d_old_logp, d_adv, d_v, d_old_v, d_ret,
                               &p, d_dm, cr_ac_logstd(&L, d_gu), d_dv, d_acc_u, B, K);
    cr_mlp_backward(&gpu, &actor, &ga, d_obs, d_dm, &dca, B);
    cr_mlp_backward(&gpu, &critic, &gc, d_obs, d_dv, &dcc, B);
    float *grads_u = fetch(d_gu, F(P));
    cr_ppo_stats_acc acc_u;
    down(&acc_u, d_acc_u, sizeof acc_u);

    /* fused, twice, outputs and scratch poisoned before each run; the second run in a graph */
    size_t sb = gpu.ops->ppo_minibatch_scratch_bytes(B, P);
    void *d_scratch = dev(sb);
    float *d_gf = dev(F(P));
    cr_mlp_view gfa = cr_ac_actor(&L, d_gf), gfc = cr_ac_critic(&L, d_gf);
    cr_ppo_stats_acc *d_acc_f = dev(sizeof acc0);
    float *grads_f[2];
    cr_ppo_stats_acc acc_f[2];
    for (int k = 0; k < 2; k++) {
        poison(d_gf, F(P));
        poison(d_scratch, sb);
        up(d_acc_f, &acc0, sizeof acc0);
        void *graph = NULL;
        if (k == 1) CHECK_OK(gpu.ops->graph_begin(&gpu));
        gpu.ops->ppo_minibatch_grads_gaussian(&gpu, &actor, &critic, d_logstd, &gfa, &gfc,
                                              cr_ac_logstd(&L, d_gf), d_obs, d_act, d_old_logp,
                                              d_adv, d_old_v, d_ret, &p, d_acc_f, d_scratch, B);
        if (k == 1) {
            CHECK_OK(gpu.ops->graph_end(&gpu, &graph));
            gpu.ops->graph_launch(&gpu, graph);
        }
        grads_f[k] = fetch(d_gf, F(P));
        down(&acc_f[k], d_acc_f, sizeof acc_f[k]);
        if (graph) gpu.ops->graph_free(graph);
    }

    double got[ACC_VALUES], got2[ACC_VALUES], want_u[ACC_VALUES], want_c[ACC_VALUES];
    acc_values(&acc_f[0], got);
    acc_values(&acc_f[1], got2);
    acc_values(&acc_u, want_u);
    acc_values(&acc_cpu, want_c);
    char base[96];
    snprintf(base, sizeof base, "%.90s", case_name);
    for (int i = 0; i < L.num_tensors; i++) { /* the MLPs' tensors, then the log-std */
        const cr_param_tensor *t = &L.t[i];
        CASE("%s, %s vs unfused CUDA", base, t->name);
        compare_f32("fused.grad", grads_f[0] + t->offset, grads_u + t->offset, t->count);
        CASE("%s, %s vs CPU", base, t->name);
        compare_f32("fused.grad", grads_f[0] + t->offset, grads_cpu + t->offset, t->count);
    }
    CASE("%s, stats vs unfused CUDA", base);
    compare_f64("fused.stats", got, want_u, ACC_VALUES);
    CASE("%s, stats vs CPU", base);
    compare_f64("fused.stats", got, want_c, ACC_VALUES);
    CASE("%s, second run (graph)", base);
    compare_ints("fused.repeat", grads_f[1], grads_f[0], P, 4);
    compare_ints("fused.repeat", got2, got, ACC_VALUES, 8);
    printf("  %s: ok\n", base);
    end_case();
}

static void test_ppo_fused(void) {
    ppo_fused_case(1, 4, 1, 1);      /* B = 1: the std is taken as 0, one partial tile */
    ppo_fused_case(37, 4, 1, 1);     /* less than a tile */
    ppo_fused_case(37, 11, 0, 0);    /* obs_dim padded to 16 */
    ppo_fused_case(4096, 4, 1, 1);   /* 32 tiles, one per block */
    ppo_fused_case(4096, 6, 1, 0);
    ppo_fused_case(262144, 4, 1, 1); /* every block loops over tiles */
    ppo_fused_case(300, 20, 1, 1);   /* obs_dim padded to 32 */
    /* the Gaussian: each padded width and output count, the robots' shapes among them */
    ppo_fused_gaussian_case(1, 3, 1, 1, 1);    /* Pendulum's shape, B = 1 */
    ppo_fused_gaussian_case(64, 3, 1, 1, 1);   /* Pendulum's minibatch */
    ppo_fused_gaussian_case(64, 2, 1, 0, 0);   /* MountainCarContinuous */
    ppo_fused_gaussian_case(64, 11, 3, 1, 1);  /* Hopper */
    ppo_fused_gaussian_case(64, 17, 6, 1, 1);  /* HalfCheetah, Walker2d */
    ppo_fused_gaussian_case(200, 4, 4, 1, 0);
    ppo_fused_gaussian_case(4096, 17, 6, 1, 1); /* 32 tiles */
    ppo_fused_gaussian_case(4096, 32, 8, 0, 1);
    ppo_fused_gaussian_case(100000, 16, 8, 1, 1); /* blocks loop over tiles */
}

/* ---- main ---------------------------------------------------------------------------------- */

static void open_contexts(void) {
    cpu.kind = CUDARL_DEVICE_CPU;
    cpu.ops = &cr_backend_cpu;
    cudarl_status s = cr_cuda_ctx_init(&gpu, 0);
    if (s != CUDARL_OK) {
        fprintf(stderr, "FAIL test_ops_cuda needs a CUDA GPU and could not open one: %s: %s\n",
                cudarl_status_name(s), cudarl_last_error());
        exit(1);
    }
}

/* ---- DQN ------------------------------------------------------------------------------------ */

/* linear_relu_forward against the CPU (to rounding) and against relu of the GPU's own
 * linear_forward (bit for bit); relu_backward bit for bit, in place too. */
static void relu_case(int B, int I, int O) {
    CASE("linear_relu B=%d I=%d O=%d", B, I, O);
    size_t nx = (size_t)B * I, nw = (size_t)O * I, ny = (size_t)B * O;
    float *x = uniform_floats(nx, -2, 2), *w = uniform_floats(nw, -1, 1);
    float *b = uniform_floats((size_t)O, -0.5f, 0.5f), *y = host_floats(ny);
    cpu.ops->linear_relu_forward(&cpu, x, w, b, y, B, I, O);
    float *d_x = dev_copy(x, F(nx)), *d_w = dev_copy(w, F(nw)), *d_b = dev_copy(b, F(O));
    float *d_y = dev_out(F(ny)), *d_lin = dev_out(F(ny));
    gpu.ops->linear_relu_forward(&gpu, d_x, d_w, d_b, d_y, B, I, O);
    gpu.ops->linear_forward(&gpu, d_x, d_w, d_b, d_lin, B, I, O);
    float *g_y = fetch(d_y, F(ny)), *lin = fetch(d_lin, F(ny)), *want = host_floats(ny);
    compare_f32("relu.y", g_y, y, ny);
    for (size_t i = 0; i < ny; i++) want[i] = lin[i] < 0.0f ? 0.0f : lin[i];
    compare_f32("relu.epilogue", g_y, want, ny);
    CASE("relu_backward n=%zu", ny);
    float *dy = uniform_floats(ny, -3, 3), *dx = host_floats(ny);
    if (ny > 2) y[0] = -0.0f, y[1] = 0.0f, dy[1] = NAN, dy[2] = INFINITY; /* masked: 0 */
    cpu.ops->relu_backward(&cpu, y, dy, dx, ny);
    float *d_yy = dev_copy(y, F(ny)), *d_dy = dev_copy(dy, F(ny)), *d_dx = dev_out(F(ny));
    gpu.ops->relu_backward(&gpu, d_yy, d_dy, d_dx, ny);
    compare_f32("relu_backward", fetch(d_dx, F(ny)), dx, ny);
    gpu.ops->relu_backward(&gpu, d_yy, d_dy, d_dy, ny); /* dx aliases dy, as the MLP calls it */
    compare_f32("relu_backward", fetch(d_dy, F(ny)), dx, ny);
    end_case();
}

/* One dqn_loss on random rows: ties in the next values (argmax takes the first), NaN next
 * values on terminated rows (selected away), TD errors on both sides of Huber's +-1. */
static void dqn_loss_case(int B, int A, int double_dqn, int huber, int weighted, int with_td) {
    CASE("dqn_loss B=%d A=%d double=%d huber=%d weights=%d td=%d", B, A, double_dqn, huber,
         weighted, with_td);
    size_t n = (size_t)B * A;
    float *q = uniform_floats(n, -3, 3), *nt = uniform_floats(n, -3, 3);
    float *no = uniform_floats(n, -3, 3), *r = uniform_floats((size_t)B, -1, 2);
    float *w = uniform_floats((size_t)B, 0.1f, 1.0f);
    int32_t *act = random_ints((size_t)B, A);
    uint8_t *term = random_flags((size_t)B, 0.2);
    for (int b = 0; b < B; b++) {
        size_t row = (size_t)b * A;
        if (b % 5 == 1 && A > 1) nt[row + 1] = nt[row], no[row + 1] = no[row]; /* a tie */
        if (term[b] && b % 3 == 0) nt[row] = NAN, no[row] = NAN;
        if (b % 7 == 2) q[row + act[b]] = r[b] + 0.99f * 0.5f; /* a small delta */
    }
    float *dq = host_floats(n), *td = host_floats((size_t)B);
    cr_dqn_stats_acc acc = {0.5, -0.25, 2.0, 3.0, 0.125}, *d_acc = dev_copy(&acc, sizeof acc);
    cpu.ops->dqn_loss(&cpu, q, act, r, term, nt, double_dqn ? no : NULL, weighted ? w : NULL,
                      0.99f, double_dqn, huber, dq, with_td ? td : NULL, &acc, B, A);
    float *d_q = dev_copy(q, F(n)), *d_nt = dev_copy(nt, F(n)), *d_no = dev_copy(no, F(n));
    float *d_r = dev_copy(r, F(B)), *d_w = dev_copy(w, F(B));
    int32_t *d_act = dev_copy(act, (size_t)B * 4);
    uint8_t *d_term = dev_copy(term, (size_t)B);
    float *d_dq = dev_out(F(n)), *d_td = dev_out(F(B));
    gpu.ops->dqn_loss(&gpu, d_q, d_act, d_r, d_term, d_nt, double_dqn ? d_no : NULL,
                      weighted ? d_w : NULL, 0.99f, double_dqn, huber, d_dq,
                      with_td ? d_td : NULL, d_acc, B, A);
    compare_f32("dqn.dq", fetch(d_dq, F(n)), dq, n);
    if (with_td) compare_f32("dqn.td", fetch(d_td, F(B)), td, (size_t)B);
    cr_dqn_stats_acc g;
    down(&g, d_acc, sizeof g);
    double got[4] = {g.loss_sum, g.q_sum, g.td_abs_sum, g.last_loss};
    double want[4] = {acc.loss_sum, acc.q_sum, acc.td_abs_sum, acc.last_loss};
    compare_f64("dqn.stats", got, want, 4);
    compare_f64("dqn.count", &g.count, &acc.count, 1);
    end_case();
}

/* epsilon_schedule at several steps (after the annealing, duration 0, rising schedules), then
 * epsilon_greedy with uniforms around epsilon and tied rows. */
static void egreedy_case(int B, int A, double start_e, double end_e, double duration,
                         int64_t step) {
    CASE("epsilon B=%d A=%d start %g end %g duration %g step %lld", B, A, start_e, end_e,
         duration, (long long)step);
    int64_t h_step = step, *d_step = dev_copy(&step, 8);
    float eps = NAN, *d_eps = dev_out(F(1));
    cpu.ops->epsilon_schedule(&cpu, &h_step, B, start_e, end_e, duration, &eps);
    gpu.ops->epsilon_schedule(&gpu, d_step, B, start_e, end_e, duration, d_eps);
    compare_f32("epsilon", fetch(d_eps, F(1)), &eps, 1);
    compare_ints("epsilon", fetch(d_step, 8), &h_step, 1, 8);
    size_t n = (size_t)B * A;
    float *q = uniform_floats(n, -1, 1), *ue = uniform_floats((size_t)B, 0, 1);
    float *ua = uniform_floats((size_t)B, 0, 1);
    for (int b = 0; b < B; b++) {
        if (b % 4 == 0) ue[b] = eps;                          /* not < eps: greedy */
        if (b % 4 == 1) ue[b] = nextafterf(eps, 0.0f);        /* just below: explore */
        if (b % 6 == 2) ua[b] = nextafterf(1.0f, 0.0f);       /* the last action */
        if (b % 5 == 3 && A > 2) q[(size_t)b * A + 2] = q[(size_t)b * A + 1]; /* a tie */
    }
    int32_t *a = host((size_t)B * 4);
    cpu.ops->epsilon_greedy(&cpu, q, ue, ua, &eps, a, B, A);
    float *d_q = dev_copy(q, F(n)), *d_ue = dev_copy(ue, F(B)), *d_ua = dev_copy(ua, F(B));
    int32_t *d_a = dev_out((size_t)B * 4);
    gpu.ops->epsilon_greedy(&gpu, d_q, d_ue, d_ua, d_eps, d_a, B, A);
    compare_ints("egreedy", fetch(d_a, (size_t)B * 4), a, (size_t)B, 4);
    end_case();
}

static void polyak_case(size_t n, double tau) {
    CASE("polyak n=%zu tau=%g", n, tau);
    float *t = uniform_floats(n, -1, 1), *on = uniform_floats(n, -1, 1);
    if (n > 3) on[0] = -0.0f, on[1] = INFINITY, t[2] = INFINITY, on[3] = NAN;
    float *d_t = dev_copy(t, F(n)), *d_on = dev_copy(on, F(n));
    cpu.ops->polyak(&cpu, t, on, n, tau);
    gpu.ops->polyak(&gpu, d_t, d_on, n, tau);
    compare_f32("polyak", fetch(d_t, F(n)), t, n);
    end_case();
}

static void u8_case(size_t n) {
    CASE("u8_to_float n=%zu", n);
    uint8_t *x = host(n);
    for (size_t i = 0; i < n; i++) x[i] = (uint8_t)(i * 37u + 11u);
    float *y = host_floats(n), *d_y = dev_out(F(n));
    uint8_t *d_x = dev_copy(x, n);
    cpu.ops->u8_to_float(&cpu, x, y, n);
    gpu.ops->u8_to_float(&gpu, d_x, d_y, n);
    compare_f32("u8_to_float", fetch(d_y, F(n)), y, n);
    end_case();
}

/* The DQN ops captured into a graph and launched twice give what two eager passes give (the
 * step counter, epsilon and the accumulator are read from device memory at each launch), and
 * neither allocates. */
static void dqn_graph_case(void) {
    CASE("dqn graph");
    enum { GB = 96, GA = 5, GP = 3000 };
    size_t n = (size_t)GB * GA;
    float *q = uniform_floats(n, -3, 3), *nt = uniform_floats(n, -3, 3);
    float *r = uniform_floats(GB, -1, 1), *u = uniform_floats(2 * GB, 0, 1);
    float *on = uniform_floats(GP, -1, 1), *tg = uniform_floats(GP, -1, 1);
    int32_t *act = random_ints(GB, GA);
    uint8_t *term = random_flags(GB, 0.2);
    cr_dqn_stats_acc acc0 = {0, 0, 0, 0, 0};
    int64_t step0 = 100;
    float *d_q = dev_copy(q, F(n)), *d_nt = dev_copy(nt, F(n)), *d_r = dev_copy(r, F(GB));
    float *d_u = dev_copy(u, F(2 * GB)), *d_on = dev_copy(on, F(GP)), *d_tg = dev(F(GP));
    int32_t *d_act = dev_copy(act, GB * 4), *d_a = dev(GB * 4);
    uint8_t *d_term = dev_copy(term, GB);
    float *d_dq = dev(F(n)), *d_td = dev(F(GB)), *d_eps = dev(F(1));
    int64_t *d_step = dev(8);
    cr_dqn_stats_acc *d_acc = dev(sizeof acc0);
    unsigned char *out[2];
    for (int pass = 0; pass < 2; pass++) {
        up(d_tg, tg, F(GP));
        up(d_acc, &acc0, sizeof acc0);
        up(d_step, &step0, 8);
        gpu.ops->sync(&gpu);
        size_t allocs = cr_cuda_alloc_count();
        void *graph = NULL;
        if (pass == 0) {
            CHECK_OK(gpu.ops->graph_begin(&gpu));
        }
        for (int k = 0; k < (pass == 0 ? 1 : 2); k++) {
            gpu.ops->epsilon_schedule(&gpu, d_step, 32, 1.0, 0.05, 1000.0, d_eps);
            gpu.ops->epsilon_greedy(&gpu, d_q, d_u, d_u + GB, d_eps, d_a, GB, GA);
            gpu.ops->dqn_loss(&gpu, d_q, d_act, d_r, d_term, d_nt, NULL, NULL, 0.99f, 0, 1, d_dq,
                              d_td, d_acc, GB, GA);
            gpu.ops->polyak(&gpu, d_tg, d_on, GP, 0.25);
        }
        if (pass == 0) {
            CHECK_OK(gpu.ops->graph_end(&gpu, &graph));
            gpu.ops->graph_launch(&gpu, graph);
            gpu.ops->graph_launch(&gpu, graph);
        }
        gpu.ops->sync(&gpu);
        CHECK_MSG(cr_cuda_alloc_count() == allocs, "%zu device allocations in the DQN ops",
                  cr_cuda_alloc_count() - allocs);
        if (graph) gpu.ops->graph_free(graph);
        size_t bytes = F(GP) + sizeof acc0 + 8 + F(1) + GB * 4 + F(n) + F(GB);
        out[pass] = host(bytes);
        unsigned char *o = out[pass];
        down(o, d_tg, F(GP)), o += F(GP);
        down(o, d_acc, sizeof acc0), o += sizeof acc0;
        down(o, d_step, 8), o += 8;
        down(o, d_eps, F(1)), o += F(1);
        down(o, d_a, GB * 4), o += GB * 4;
        down(o, d_dq, F(n)), o += F(n);
        down(o, d_td, F(GB));
        if (pass == 1) compare_ints("dqn.graph", out[0], out[1], bytes, 1);
    }
    int64_t steps;
    memcpy(&steps, out[1] + F(GP) + sizeof acc0, 8);
    CHECK_MSG(steps == step0 + 64, "step counter after two passes: %lld", (long long)steps);
    end_case();
}

static void test_dqn(void) {
    static const int shapes[][3] = {{1, 4, 120}, {7, 3, 5}, {128, 4, 120}, {128, 120, 84},
                                    {128, 84, 2}, {512, 400, 120}, {1000, 84, 18}, {4097, 4, 64}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        relu_case(shapes[i][0], shapes[i][1], shapes[i][2]);
    static const int rows[][2] = {{1, 2}, {7, 2}, {128, 2}, {300, 7}, {1000, 18}, {65535, 3}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        for (int v = 0; v < 8; v++)
            dqn_loss_case(rows[i][0], rows[i][1], v & 1, (v >> 1) & 1, (v >> 2) & 1, 1);
    dqn_loss_case(128, 2, 0, 0, 0, 0); /* td_error NULL */
    egreedy_case(1, 2, 1.0, 0.05, 250000.0, 0);
    egreedy_case(300, 2, 1.0, 0.05, 250000.0, 123457);
    egreedy_case(1000, 18, 1.0, 0.05, 250000.0, 400000); /* after the annealing: end_e */
    egreedy_case(257, 7, 0.2, 0.9, 1000.0, 333);         /* rising */
    egreedy_case(64, 3, 1.0, 0.05, 0.0, 5);              /* no annealing: end_e */
    egreedy_case(64, 3, 0.5, 0.5, 100.0, 7);
    static const size_t sizes[] = {1, 4, 1000, 10934, 65537, (1u << 20) + 3};
    static const double taus[] = {1.0, 0.005, 0.5};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        for (size_t t = 0; t < 3; t++) polyak_case(sizes[i], taus[t]);
        u8_case(sizes[i]);
    }
    dqn_graph_case();
}

int main(int argc, char **argv) {
    static const struct {
        const char *name;
        void (*run)(void);
    } tests[] = {
        {"memory", test_memory},   {"linear", test_linear},     {"tanh", test_tanh},
        {"rng", test_rng},         {"categorical", test_categorical},
        {"episodes", test_episodes}, {"gae", test_gae},         {"gather", test_gather},
        {"ppo_loss", test_ppo_loss}, {"optim", test_optim},     {"graph", test_graph},
        {"noalloc", test_noalloc}, {"ppo_fused", test_ppo_fused},
        {"dqn", test_dqn},
    };
    int known = argc < 2;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0] && !known; i++)
        known = strcmp(argv[1], tests[i].name) == 0;
    CHECK_MSG(known, "unknown group '%s'", argv[1]);
    open_contexts();
    cr_philox_seed(&prng, 2024, 0);
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (argc > 1 && strcmp(argv[1], tests[i].name) != 0) continue;
        tests[i].run();
        printf("ok %s\n", tests[i].name);
    }
    cr_cuda_ctx_free(&gpu);
    return 0;
}
