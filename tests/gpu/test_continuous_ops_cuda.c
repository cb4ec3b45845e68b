/* The CUDA twins of the continuous-action ops (src/ops/cuda/gaussian.cu, normalize.cu) against
 * the CPU backend (the specification): gaussian_sample, ppo_loss_gaussian, running_stats_update,
 * normalize_obs and normalize_reward on the same random inputs (Philox) and edge cases (one row,
 * K = 1 and 32, odd sizes, more rows than the grid holds, a whole rollout of observations),
 * compared under the tolerance table below, which says why each is what it is. GPU outputs are
 * poisoned before each run (every byte 0xFF: NaN), so an element a kernel forgets to write
 * fails; every op runs twice and must give the same bits (fixed grids and summation orders, no
 * atomics). The graph group captures all five ops into a CUDA graph, launches it twice and
 * compares with two eager passes bit for bit, and checks that 100 passes allocate nothing.
 * Every group prints the largest error it saw as a fraction of its tolerance.
 *
 * Usage: test_continuous_ops_cuda [sample|loss|running_stats|normalize_obs|normalize_reward|graph]
 * (all groups when omitted). Needs a GPU (ctest label gpu); without one it fails and says so. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops/backend.h"
#include "ops/cuda/cuda_backend.h"

#define U 0x1p-24  /* float's unit roundoff */
#define UD 0x1p-53 /* double's */
#define LOG_SQRT_2PI 0.91893853320467274178

static cudarl_ctx cpu, gpu;
static cr_philox_state prng;
static char case_name[200]; /* the case being checked, for failure messages */

#define CASE(...) snprintf(case_name, sizeof case_name, __VA_ARGS__)

/* ---- tolerances ---------------------------------------------------------------------------- */

typedef enum tol_kind {
    EXACT, /* the same bits (NaN matches NaN) */
    BOUND, /* |got - want| <= the element's own bound, computed from the data (see why) */
    NORM,  /* ||got - want||_2 <= rtol ||want||_2 over the whole array */
} tol_kind;

typedef struct tolerance {
    const char *name;
    tol_kind kind;
    double rtol;
    const char *why;
} tolerance;

static const tolerance tolerances[] = {
    {"sample.action", BOUND, 0,
     "bound 2e-6 |action - mean| + 2^-22 |action|: z goes through CUDA's logf (<= 1 ulp) and "
     "cosf (<= 2 ulp) against glibc's (<= 1 ulp; sqrtf is IEEE on both), the std through expf "
     "(<= 2 ulp against <= 1): sd z differs by <= ~10 ulp (1.2e-6); then the sum with the mean "
     "rounds on each side: up to 1.5 ulp of the CPU's action where the two straddle a power "
     "of two, so two ulps"},
    {"sample.logp", BOUND, 0,
     "bound sum_k |d_k| / var_k * (the action's bound) + (24 + 2K) 2^-24 sum_k |term_k|: the "
     "action's difference through d logp / d action, each term's var through expf (<= 3 ulp) "
     "and the K roundings of the float sum, on inputs that differ"},
    {"sample.own_policy", EXACT, 0,
     "the loss recomputes the sampled action's log-prob op for op, in the same k order: every "
     "ratio is exactly 1, both KL sums and the clip fraction exactly 0"},
    {"loss.dmean", NORM, 1e-4,
     "per row the CPU's float roundings; the row's logp (a float sum of K terms, each through "
     "CUDA's expf of the log-std) and its ratio (expf) differ by a few ulps of the terms, "
     "~(16 + K) 2^-24 sum |term| at worst (1.4e-4 at K = 32 with every error aligned, ~1e-6 "
     "typically); the minibatches keep every ratio 2e-3 from the clip bounds so no row changes "
     "branch"},
    {"loss.dlogstd", NORM, 1e-4,
     "sums over the rows (double, a tree against row order) of per-row terms that differ as "
     "loss.dmean's"},
    {"loss.dvalue", EXACT, 0,
     "no transcendental on the value path, and the CPU's roundings (_rn intrinsics, no FMA)"},
    {"loss.stats", BOUND, 0,
     "bound 1e-6 K + 1e-5 |want| (loss, pg_loss, v_loss, both KL, last_approx_kl): means in "
     "double of per-row floats that differ as loss.dmean's (the value losses only by the order "
     "of the double sum)"},
    {"loss.exact", EXACT, 0,
     "the count, grad_norm_sum (untouched), the entropy (the log-std's float sum, the CPU's "
     "roundings) and the clip fraction (no ratio near a bound: the same 0s and 1s)"},
    {"repeat", EXACT, 0,
     "the same op on the same inputs: fixed grids and summation orders, no atomics"},
    {"stats.mean", BOUND, 0,
     "bound 8 (B + 16) 2^-53 (|mean| + sd): both sum the B values in double, the CPU in row "
     "order, the GPU by chunks; recursive summation errs by at most B u of the magnitudes"},
    {"stats.var", BOUND, 0,
     "bound 8 (B + 16) 2^-53 (var + mean^2): the squared deviations summed as stats.mean, "
     "the GPU by chunks about their own means (the exact decomposition), then the CPU's merge"},
    {"stats.count", EXACT, 0, "count + B: one double addition, the CPU's"},
    {"normalize_obs", EXACT, 0,
     "the CPU's double subtraction, IEEE sqrt and division, and one rounding to float"},
    {"reward.ret", EXACT, 0, "ret gamma (1 - terminated) + reward in double: the CPU's roundings"},
    {"reward.out", BOUND, 0,
     "bound 2^-23 |out| (one float ulp): the variance differs from the CPU's by double "
     "summation order (~1e-15), which can move the float rounding of reward / sd by an ulp; "
     "against the GPU's own variance it is EXACT (reward.own)"},
    {"reward.own", EXACT, 0,
     "clip((float)(reward / sqrt(var + 1e-8))) of the GPU's own variance: the CPU's operations"},
    {"graph", EXACT, 0, "a replay runs the same kernels on the same data"},
};

#define N_TOLERANCES (sizeof tolerances / sizeof tolerances[0])
/* The largest error each tolerance has seen in the running group, as a fraction of it, and
 * where. */
static struct worst {
    double fraction, got, want;
    size_t index;
    char where[200];
} worst_seen[N_TOLERANCES];

static const tolerance *tolerance_of(const char *name) {
    for (size_t i = 0; i < N_TOLERANCES; i++)
        if (strcmp(tolerances[i].name, name) == 0) return &tolerances[i];
    CHECK_MSG(0, "no tolerance named '%s'", name);
    return NULL;
}

static void fail_at(const tolerance *t, size_t i, double want, double got, double bound,
                    const char *note) {
    static const char *const kinds[] = {"exact", "|got - want| <= bound",
                                        "||got - want|| <= rtol ||want||"};
    fprintf(stderr,
            "FAIL %s (%s) at index %zu: expected %.17g, got %.17g%s\n"
            "  tolerance: %s (bound %.3g, rtol %g): %s\n",
            t->name, case_name, i, want, got, note, kinds[t->kind], bound, t->rtol, t->why);
    exit(1);
}

static void note_worst(const tolerance *t, double fraction, size_t i, double got, double want) {
    struct worst *w = &worst_seen[t - tolerances];
    if (!(fraction > w->fraction)) return;
    w->fraction = fraction, w->index = i, w->got = got, w->want = want;
    snprintf(w->where, sizeof w->where, "%s", case_name);
}

/* got (GPU) against want (CPU), n floats or doubles; bound (n) for BOUND tolerances. */
static void compare_values(const char *name, const void *got, const void *want, size_t n,
                           int is_float, const double *bound) {
    const tolerance *t = tolerance_of(name);
    double err2 = 0, ref2 = 0, worst = -1;
    size_t worst_i = 0, size = is_float ? sizeof(float) : sizeof(double);
    for (size_t i = 0; i < n; i++) {
        double g = is_float ? ((const float *)got)[i] : ((const double *)got)[i];
        double w = is_float ? ((const float *)want)[i] : ((const double *)want)[i];
        int same = memcmp((const char *)got + i * size, (const char *)want + i * size, size) == 0;
        if (same) continue;
        if (isnan(g) || isnan(w)) {
            if (isnan(g) && isnan(w)) continue; /* NaN matches NaN, whatever its payload */
            fail_at(t, i, w, g, 0, "");
        }
        if (t->kind == EXACT) fail_at(t, i, w, g, 0, "");
        double e = fabs(g - w);
        if (t->kind == BOUND) {
            if (!(e <= bound[i])) fail_at(t, i, w, g, bound[i], "");
            note_worst(t, bound[i] > 0 ? e / bound[i] : 0, i, g, w);
        } else {
            err2 += e * e;
            if (e > worst) worst = e, worst_i = i;
        }
    }
    if (t->kind != NORM) return;
    for (size_t i = 0; i < n; i++) {
        double w = is_float ? ((const float *)want)[i] : ((const double *)want)[i];
        ref2 += w * w;
    }
    double lim = t->rtol * sqrt(ref2) + 1e-30;
    double g = is_float ? ((const float *)got)[worst_i] : ((const double *)got)[worst_i];
    double w = is_float ? ((const float *)want)[worst_i] : ((const double *)want)[worst_i];
    if (!(sqrt(err2) <= lim)) {
        char note[96];
        snprintf(note, sizeof note, " (the worst element; error norm %.3g of norm %.3g)",
                 sqrt(err2), sqrt(ref2));
        fail_at(t, worst_i, w, g, lim, note);
    }
    note_worst(t, sqrt(err2) / lim, worst_i, g, w);
}

static void compare_f32(const char *name, const float *got, const float *want, size_t n,
                        const double *bound) {
    compare_values(name, got, want, n, 1, bound);
}

static void compare_f64(const char *name, const double *got, const double *want, size_t n,
                        const double *bound) {
    compare_values(name, got, want, n, 0, bound);
}

static void compare_bytes(const char *name, const void *got, const void *want, size_t bytes) {
    const tolerance *t = tolerance_of(name);
    for (size_t i = 0; i < bytes; i++)
        if (((const unsigned char *)got)[i] != ((const unsigned char *)want)[i])
            fail_at(t, i, ((const unsigned char *)want)[i], ((const unsigned char *)got)[i], 0,
                    " (byte)");
}

static void print_worst(void) {
    for (size_t i = 0; i < N_TOLERANCES; i++) {
        const struct worst *w = &worst_seen[i];
        if (tolerances[i].kind != EXACT && w->fraction > 0)
            printf("  %-14s worst error %.3g of its tolerance (%s, index %zu: want %.9g, got "
                   "%.9g)\n", tolerances[i].name, w->fraction, w->where, w->index, w->want,
                   w->got);
        memset(&worst_seen[i], 0, sizeof worst_seen[i]);
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

/* Every byte 0xFF: NaN as float or double. */
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

static void *fetch(const void *d, size_t bytes) {
    void *h = host(bytes);
    down(h, d, bytes);
    return h;
}

static float *uniform_floats(size_t n, float lo, float hi) {
    float *p = host(n * sizeof *p);
    for (size_t i = 0; i < n; i++) p[i] = lo + (hi - lo) * cr_philox_uniform(&prng);
    return p;
}

static double *host_doubles(size_t n) { return host(n * sizeof(double)); }

#define F(n) ((size_t)(n) * sizeof(float))
#define D8(n) ((size_t)(n) * sizeof(double))

/* ---- gaussian_sample ----------------------------------------------------------------------- */

/* The bounds of sample.action and sample.logp for the CPU's results (action, logp) of one row
 * set: see the table. */
static void sample_bounds(const float *mean, const float *ls, const float *a, int B, int K,
                          double *ba, double *bl) {
    for (int b = 0; b < B; b++) {
        double prop = 0, abs_terms = 0;
        for (int k = 0; k < K; k++) {
            size_t j = (size_t)b * K + k;
            double d = (double)a[j] - mean[j], var = exp(2.0 * ls[k]);
            ba[j] = 2e-6 * fabs(d) + 0x1p-22 * fabs(a[j]) + 1e-37;
            prop += fabs(d) / var * ba[j];
            abs_terms += d * d / (2 * var) + fabs(ls[k]) + LOG_SQRT_2PI;
        }
        bl[b] = prop + (24 + 2 * K) * U * abs_terms;
    }
}

static void sample_case(int B, int K, int edges) {
    CASE("sample B=%d K=%d%s", B, K, edges ? " edges" : "");
    const size_t n = (size_t)B * K;
    float *mean = uniform_floats(n, -2, 2), *ls = uniform_floats(K, -2.5f, 1.0f);
    float *u = uniform_floats(2 * n, 0, 1);
    if (edges) /* u1 = 0 (z = 0), u1 just below 1 (the largest |z|), u2 at 0, 1/4, 1/2 */
        for (size_t j = 0; j < n; j++) {
            static const float u1s[] = {0.0f, 0x1.fffffep-1f, 0.5f};
            static const float u2s[] = {0.0f, 0.25f, 0.5f, 0x1.fffffep-1f};
            u[2 * j] = u1s[j % 3], u[2 * j + 1] = u2s[(j / 3) % 4];
        }
    float *a = host(F(n)), *logp = host(F(B));
    cpu.ops->gaussian_sample(&cpu, mean, ls, u, a, logp, B, K);
    float *d_mean = dev_copy(mean, F(n)), *d_ls = dev_copy(ls, F(K)), *d_u = dev_copy(u, F(2 * n));
    float *d_a = dev_out(F(n)), *d_logp = dev_out(F(B));
    gpu.ops->gaussian_sample(&gpu, d_mean, d_ls, d_u, d_a, d_logp, B, K);
    float *g_a = fetch(d_a, F(n)), *g_logp = fetch(d_logp, F(B));
    double *ba = host_doubles(n), *bl = host_doubles(B);
    sample_bounds(mean, ls, a, B, K, ba, bl);
    compare_f32("sample.action", g_a, a, n, ba);
    compare_f32("sample.logp", g_logp, logp, B, bl);
    if (edges)
        for (size_t j = 0; j < n; j += 3)
            CHECK_MSG(g_a[j] == mean[j], "%s: u1 = 0 must give the mean itself", case_name);
    /* again, outputs poisoned: the same bits */
    poison(d_a, F(n)), poison(d_logp, F(B));
    gpu.ops->gaussian_sample(&gpu, d_mean, d_ls, d_u, d_a, d_logp, B, K);
    compare_bytes("repeat", fetch(d_a, F(n)), g_a, F(n));
    compare_bytes("repeat", fetch(d_logp, F(B)), g_logp, F(B));
    end_case();
}

static void test_sample(void) {
    static const int shapes[][2] = {{1, 1},    {1, 32},  {7, 3},     {333, 6},    {1000, 17},
                                    {4097, 1}, {513, 32}, {65537, 2}, {300000, 5}, {20000, 9}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        sample_case(shapes[s][0], shapes[s][1], 0);
    sample_case(120, 4, 1);
    sample_case(37, 32, 1);
}

/* ---- ppo_loss_gaussian --------------------------------------------------------------------- */

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

/* The new log-prob of row b in double (for keeping the ratios off the clip bounds). */
static double row_logp(const float *mean, const float *ls, const float *a, int K) {
    double s = 0;
    for (int k = 0; k < K; k++) {
        double d = (double)a[k] - mean[k];
        s += -d * d / (2 * exp(2.0 * ls[k])) - ls[k] - LOG_SQRT_2PI;
    }
    return s;
}

/* A minibatch: actions sampled from the policy, old log-probs 0.4 off (ratios over about
 * [0.67, 1.5], on both sides of the clip range but 2e-3 away from its bounds), values 0.5 off
 * the old ones (both sides of the value clip, 1e-4 away). The loss runs twice into one
 * accumulator on each side (the second adds to the first), and once more on the GPU from the
 * same start, which must give the same bits. */
static void loss_case(int B, int K, int norm_adv, int clip_vloss) {
    CASE("loss B=%d K=%d norm_adv=%d clip_vloss=%d", B, K, norm_adv, clip_vloss);
    const float clip = 0.2f;
    cr_ppo_loss_params p = {clip, 0.01f, 0.5f, clip_vloss, norm_adv};
    const size_t n = (size_t)B * K;
    float *mean = uniform_floats(n, -1, 1), *ls = uniform_floats(K, -1.5f, 0.5f);
    float *u = uniform_floats(2 * n, 0, 1), *act = host(F(n)), *old_logp = host(F(B));
    cr_cpu_gaussian_sample(mean, ls, u, act, old_logp, B, K);
    float *adv = uniform_floats(B, -2, 2), *ret = uniform_floats(B, -1, 1);
    float *old_v = uniform_floats(B, -1, 1), *v = host(F(B));
    for (int b = 0; b < B; b++) {
        double lp = row_logp(mean + (size_t)b * K, ls, act + (size_t)b * K, K), r;
        do {
            old_logp[b] = (float)(lp - (-0.4 + 0.8 * cr_philox_uniform(&prng)));
            r = exp(lp - old_logp[b]);
        } while (fabs(r - (1.0 - clip)) < 2e-3 || fabs(r - (1.0 + clip)) < 2e-3);
        float d;
        do {
            v[b] = old_v[b] + (-0.5f + cr_philox_uniform(&prng));
            d = v[b] - old_v[b];
        } while (fabsf(fabsf(d) - clip) < 1e-4f);
    }
    float *dm = host(F(n)), *dls = host(F(K)), *dv = host(F(B));
    cr_ppo_stats_acc acc = start_acc(), acc0 = acc;
    for (int k = 0; k < 2; k++)
        cpu.ops->ppo_loss_gaussian(&cpu, mean, ls, act, old_logp, adv, v, old_v, ret, &p, dm, dls,
                                   dv, &acc, B, K);

    float *d_mean = dev_copy(mean, F(n)), *d_ls = dev_copy(ls, F(K)), *d_act = dev_copy(act, F(n));
    float *d_old_logp = dev_copy(old_logp, F(B)), *d_adv = dev_copy(adv, F(B));
    float *d_v = dev_copy(v, F(B)), *d_old_v = dev_copy(old_v, F(B)), *d_ret = dev_copy(ret, F(B));
    float *d_dm = dev_out(F(n)), *d_dls = dev_out(F(K)), *d_dv = dev_out(F(B));
    cr_ppo_stats_acc *d_acc = dev_copy(&acc0, sizeof acc0);
    for (int k = 0; k < 2; k++)
        gpu.ops->ppo_loss_gaussian(&gpu, d_mean, d_ls, d_act, d_old_logp, d_adv, d_v, d_old_v,
                                   d_ret, &p, d_dm, d_dls, d_dv, d_acc, B, K);
    float *g_dm = fetch(d_dm, F(n)), *g_dls = fetch(d_dls, F(K)), *g_dv = fetch(d_dv, F(B));
    compare_f32("loss.dmean", g_dm, dm, n, NULL);
    compare_f32("loss.dlogstd", g_dls, dls, K, NULL);
    compare_f32("loss.dvalue", g_dv, dv, B, NULL);
    cr_ppo_stats_acc g_acc;
    down(&g_acc, d_acc, sizeof g_acc);
    double got[ACC_VALUES], want[ACC_VALUES];
    acc_values(&g_acc, got);
    acc_values(&acc, want);
    static const int exact[] = {3, 6, 7, 8}; /* entropy, clipfrac, count, grad_norm_sum */
    for (int i = 0; i < 4; i++) compare_f64("loss.exact", &got[exact[i]], &want[exact[i]], 1, NULL);
    double bound[ACC_VALUES];
    for (int i = 0; i < ACC_VALUES; i++) bound[i] = 1e-6 * K + 1e-5 * fabs(want[i]);
    compare_f64("loss.stats", got, want, ACC_VALUES, bound);

    /* a third run from the same start: the same bits as the second */
    up(d_acc, &acc0, sizeof acc0);
    poison(d_dm, F(n)), poison(d_dls, F(K)), poison(d_dv, F(B));
    for (int k = 0; k < 2; k++)
        gpu.ops->ppo_loss_gaussian(&gpu, d_mean, d_ls, d_act, d_old_logp, d_adv, d_v, d_old_v,
                                   d_ret, &p, d_dm, d_dls, d_dv, d_acc, B, K);
    compare_bytes("repeat", fetch(d_dm, F(n)), g_dm, F(n));
    compare_bytes("repeat", fetch(d_dls, F(K)), g_dls, F(K));
    compare_bytes("repeat", fetch(d_dv, F(B)), g_dv, F(B));
    cr_ppo_stats_acc g_acc2;
    down(&g_acc2, d_acc, sizeof g_acc2);
    compare_bytes("repeat", &g_acc2, &g_acc, sizeof g_acc);
    end_case();
}

/* Sampling on the GPU, then the loss at the same mean and log-std with old_logp = the sampled
 * logp: every ratio is exactly 1, so both KL sums and the clip fraction add exactly 0. */
static void own_policy_case(int B, int K) {
    CASE("own policy B=%d K=%d", B, K);
    cr_ppo_loss_params p = {0.2f, 0.01f, 0.5f, 1, 1};
    const size_t n = (size_t)B * K;
    float *d_mean = dev_copy(uniform_floats(n, -2, 2), F(n));
    float *d_ls = dev_copy(uniform_floats(K, -2, 1), F(K));
    float *d_u = dev_copy(uniform_floats(2 * n, 0, 1), F(2 * n));
    float *d_act = dev_out(F(n)), *d_logp = dev_out(F(B));
    float *d_adv = dev_copy(uniform_floats(B, -1, 1), F(B));
    float *d_v = dev_copy(uniform_floats(B, -1, 1), F(B));
    float *d_dm = dev(F(n)), *d_dls = dev(F(K)), *d_dv = dev(F(B));
    cr_ppo_stats_acc zero;
    memset(&zero, 0, sizeof zero);
    cr_ppo_stats_acc *d_acc = dev_copy(&zero, sizeof zero);
    gpu.ops->gaussian_sample(&gpu, d_mean, d_ls, d_u, d_act, d_logp, B, K);
    gpu.ops->ppo_loss_gaussian(&gpu, d_mean, d_ls, d_act, d_logp, d_adv, d_v, d_v, d_v, &p, d_dm,
                               d_dls, d_dv, d_acc, B, K);
    cr_ppo_stats_acc g;
    down(&g, d_acc, sizeof g);
    double zeros[3] = {0, 0, 0};
    /* old_approx_kl, approx_kl, clipfrac */
    compare_f64("sample.own_policy", g.sum + 4, zeros, 3, NULL);
    end_case();
}

static void test_loss(void) {
    loss_case(1, 1, 1, 1); /* B = 1: the std is taken as 0 */
    loss_case(1, 6, 0, 0);
    loss_case(7, 2, 1, 1);
    loss_case(64, 6, 1, 1);
    loss_case(64, 6, 0, 1);
    loss_case(257, 17, 1, 0);
    loss_case(1000, 32, 1, 1);
    loss_case(3000, 3, 0, 0);
    loss_case(4096, 1, 1, 1);
    loss_case(300000, 6, 1, 1); /* more rows than the grid: grid-stride */
    own_policy_case(1000, 6);
    own_policy_case(1, 1);
    own_policy_case(333, 32);
}

/* ---- running statistics and normalize_obs -------------------------------------------------- */

/* Bounds of stats.mean and stats.var for statistics (mean, var) of columns fed B rows a batch. */
static void stats_bounds(const double *mean, const double *var, int D, long B, double *bm,
                         double *bv) {
    const double tol = 8.0 * (B + 16) * UD;
    for (int d = 0; d < D; d++) {
        bm[d] = tol * (fabs(mean[d]) + sqrt(var[d])) + 1e-300;
        bv[d] = tol * (var[d] + mean[d] * mean[d]) + 1e-300;
    }
}

/* `batches` batches of B rows, D columns (per column an offset and a spread of its own; the first
 * batch shifted, so the merge's delta term matters), folded into the statistics one at a time
 * on both sides, compared after each; then normalize_obs of the last batch with the CPU's
 * statistics on both sides (bit for bit), in place too. */
static void running_stats_case(long B, int D, int batches) {
    CASE("running stats B=%ld D=%d x%d", B, D, batches);
    const size_t n = (size_t)B * D;
    double *mean = host_doubles(D), *var = host_doubles(D), count = 1e-4;
    for (int d = 0; d < D; d++) mean[d] = 0.0, var[d] = 1.0;
    double *d_mean = dev_copy(mean, D8(D)), *d_var = dev_copy(var, D8(D));
    double *d_count = dev_copy(&count, D8(1));
    float *x = host(F(n)), *d_x = dev(F(n));
    double *bm = host_doubles(D), *bv = host_doubles(D);
    for (int k = 0; k < batches; k++) {
        CASE("running stats B=%ld D=%d batch %d of %d", B, D, k + 1, batches);
        for (size_t i = 0; i < n; i++) {
            int d = (int)(i % (size_t)D);
            x[i] = (float)(0.3 * (d % 7) - 1.0) +
                   3.0f * (1 + d % 4) * (cr_philox_uniform(&prng) - 0.5f);
            if (k == 0) x[i] += 4.0f;
        }
        cpu.ops->running_stats_update(&cpu, mean, var, &count, x, (int)B, D);
        up(d_x, x, F(n));
        gpu.ops->running_stats_update(&gpu, d_mean, d_var, d_count, d_x, (int)B, D);
        stats_bounds(mean, var, D, B, bm, bv);
        double *g_mean = fetch(d_mean, D8(D)), *g_var = fetch(d_var, D8(D)), g_count;
        down(&g_count, d_count, D8(1));
        compare_f64("stats.mean", g_mean, mean, D, bm);
        compare_f64("stats.var", g_var, var, D, bv);
        compare_f64("stats.count", &g_count, &count, 1, NULL);
    }
    /* repeat: the last update again from the same statistics on the GPU gives the same bits */
    double *g_mean = fetch(d_mean, D8(D)), *g_var = fetch(d_var, D8(D));
    double *d_mean2 = dev_copy(g_mean, D8(D)), *d_var2 = dev_copy(g_var, D8(D));
    double *d_count2 = dev_copy(&count, D8(1));
    gpu.ops->running_stats_update(&gpu, d_mean, d_var, d_count, d_x, (int)B, D);
    gpu.ops->running_stats_update(&gpu, d_mean2, d_var2, d_count2, d_x, (int)B, D);
    compare_bytes("repeat", fetch(d_mean2, D8(D)), fetch(d_mean, D8(D)), D8(D));
    compare_bytes("repeat", fetch(d_var2, D8(D)), fetch(d_var, D8(D)), D8(D));

    /* normalize_obs with the CPU's statistics, so both sides see the same ones */
    CASE("normalize_obs B=%ld D=%d", B, D);
    const float clip = 1.2f;
    float *y = host(F(n));
    cpu.ops->normalize_obs(&cpu, mean, var, x, y, (int)B, D, clip);
    up(d_mean, mean, D8(D)), up(d_var, var, D8(D));
    float *d_y = dev_out(F(n));
    gpu.ops->normalize_obs(&gpu, d_mean, d_var, d_x, d_y, (int)B, D, clip);
    compare_f32("normalize_obs", fetch(d_y, F(n)), y, n, NULL);
    gpu.ops->normalize_obs(&gpu, d_mean, d_var, d_x, d_x, (int)B, D, clip); /* in place */
    compare_f32("normalize_obs", fetch(d_x, F(n)), y, n, NULL);
    size_t clipped = 0;
    for (size_t i = 0; i < n; i++) clipped += fabsf(y[i]) == clip;
    CHECK_MSG(n < 100 || clipped > 0, "%s: nothing reached the clip", case_name);
    end_case();
}

static void test_running_stats(void) {
    static const struct { long B; int D, batches; } shapes[] = {
        {1, 1, 3},      {3, 1, 2},       {1, 17, 2},     {7, 3, 3},       {1000, 11, 3},
        {4096, 376, 2}, {262144, 4, 2},  {1 << 20, 1, 2}, {2500, 400, 2}, {65536, 400, 1},
        {1 << 20, 17, 1}, {3, 40000, 2}, {5000, 33, 2},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        running_stats_case(shapes[s].B, shapes[s].D, shapes[s].batches);
    /* B = 0 changes nothing */
    CASE("running stats B=0");
    double mv[3] = {0.5, 2.0, 7.0}, *d_mv = dev_copy(mv, sizeof mv);
    float *d_x = dev(F(4));
    gpu.ops->running_stats_update(&gpu, d_mv, d_mv + 1, d_mv + 2, d_x, 0, 1);
    compare_f64("stats.count", fetch(d_mv, sizeof mv), mv, 3, NULL);
    end_case();
}

static void test_normalize_obs(void) {
    /* the last two: more elements than the grid's threads, so each thread strides on */
    static const struct { long B; int D; } shapes[] = {{1, 1},      {1, 400},      {9, 3},
                                                       {4097, 17},  {100003, 7},  {300007, 13},
                                                       {5000, 999}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        long B = shapes[s].B;
        int D = shapes[s].D;
        CASE("normalize_obs B=%ld D=%d", B, D);
        const size_t n = (size_t)B * D;
        float *x = uniform_floats(n, -30, 30), *y = host(F(n));
        double *mean = host_doubles(D), *var = host_doubles(D);
        for (int d = 0; d < D; d++)
            mean[d] = 10.0 * (cr_philox_uniform_f64(&prng) - 0.5),
            var[d] = d % 5 == 0 ? 0.0 : 100.0 * cr_philox_uniform_f64(&prng); /* var 0: 1e-8 */
        if (n > 3) x[0] = NAN, x[1] = INFINITY, x[2] = -0.0f;
        for (int c = 0; c < 2; c++) {
            const float clip = c ? 1e30f : 5.0f; /* clipping and not */
            cpu.ops->normalize_obs(&cpu, mean, var, x, y, (int)B, D, clip);
            double *d_mean = dev_copy(mean, D8(D)), *d_var = dev_copy(var, D8(D));
            float *d_x = dev_copy(x, F(n)), *d_y = dev_out(F(n));
            gpu.ops->normalize_obs(&gpu, d_mean, d_var, d_x, d_y, (int)B, D, clip);
            compare_f32("normalize_obs", fetch(d_y, F(n)), y, n, NULL);
        }
        end_case();
    }
}

/* ---- normalize_reward ---------------------------------------------------------------------- */

static void reward_case(int N, int steps) {
    CASE("normalize_reward N=%d", N);
    const float gamma = 0.99f, clip = 10.0f;
    double st[3] = {0.0, 1.0, 1e-4}, *ret = host_doubles(N);
    for (int i = 0; i < N; i++) ret[i] = 0.0;
    double *d_st = dev_copy(st, sizeof st), *d_ret = dev_copy(ret, D8(N));
    float *reward = host(F(N)), *out = host(F(N)), *d_reward = dev(F(N)), *d_out = dev(F(N));
    uint8_t *term = host((size_t)N), *d_term = dev((size_t)N);
    double *bound = host_doubles(N), bm, bv, g_st[3], *g_ret = host_doubles(N);
    float *own = host(F(N)), *g_out = host(F(N));
    for (int t = 0; t < steps; t++) {
        CASE("normalize_reward N=%d step %d", N, t);
        for (int i = 0; i < N; i++) {
            reward[i] = (i % 3 ? 0.1f : 2.0f) * (4.0f * cr_philox_uniform(&prng) - 1.0f);
            term[i] = cr_philox_uniform(&prng) < 0.03f;
        }
        if (t == steps / 2) reward[0] = 1e5f; /* clipped once scaled */
        cpu.ops->normalize_reward(&cpu, &st[0], &st[1], &st[2], ret, reward, term, out, N, gamma,
                                  clip);
        up(d_reward, reward, F(N)), up(d_term, term, (size_t)N), poison(d_out, F(N));
        gpu.ops->normalize_reward(&gpu, &d_st[0], &d_st[1], &d_st[2], d_ret, d_reward, d_term,
                                  d_out, N, gamma, clip);
        down(g_st, d_st, sizeof st), down(g_ret, d_ret, D8(N)), down(g_out, d_out, F(N));
        compare_f64("reward.ret", g_ret, ret, N, NULL);
        stats_bounds(&st[0], &st[1], 1, N, &bm, &bv);
        compare_f64("stats.mean", &g_st[0], &st[0], 1, &bm);
        compare_f64("stats.var", &g_st[1], &st[1], 1, &bv);
        compare_f64("stats.count", &g_st[2], &st[2], 1, NULL);
        for (int i = 0; i < N; i++) bound[i] = 0x1p-23 * fabs(out[i]);
        compare_f32("reward.out", g_out, out, N, bound);
        double sd = sqrt(g_st[1] + 1e-8);
        for (int i = 0; i < N; i++) {
            float v = (float)(reward[i] / sd);
            own[i] = v < -clip ? -clip : v > clip ? clip : v;
        }
        compare_f32("reward.own", g_out, own, N, NULL);
    }
    end_case();
}

static void test_normalize_reward(void) {
    reward_case(1, 200);
    reward_case(5, 100);
    reward_case(1000, 30);
    reward_case(4099, 10);
    reward_case(100000, 4);
}

/* ---- graph --------------------------------------------------------------------------------- */

/* Every op of this file on one arena: a policy step (sample), a minibatch loss, and the
 * normalizations of a step of observations and rewards. */
enum { GB = 96, GK = 6, GD = 17 };
enum { MEAN, LOGSTD, U_, ACT, LOGP, OLD_LOGP, ADV, VAL, OLD_VAL, RET, DMEAN, DLOGSTD, DVAL, ACC,
       OBS, OBS_N, OBS_STATS, REWARD, TERM, REW_RET, REW_STATS, REW_OUT, N_ITEMS };

typedef struct pipeline {
    cr_plan plan;
    cr_arena mem;
    unsigned char *image; /* the initial contents (host) of the whole plan */
} pipeline;

#define PTR(pl, i) cr_arena_get(&(pl)->mem, (i))

static void pipeline_init(pipeline *pl) {
    const size_t sizes[N_ITEMS] = {
        [MEAN] = F(GB * GK), [LOGSTD] = F(GK), [U_] = F(2 * GB * GK), [ACT] = F(GB * GK),
        [LOGP] = F(GB), [OLD_LOGP] = F(GB), [ADV] = F(GB), [VAL] = F(GB), [OLD_VAL] = F(GB),
        [RET] = F(GB), [DMEAN] = F(GB * GK), [DLOGSTD] = F(GK), [DVAL] = F(GB),
        [ACC] = sizeof(cr_ppo_stats_acc), [OBS] = F(GB * GD), [OBS_N] = F(GB * GD),
        [OBS_STATS] = D8(2 * GD + 1), [REWARD] = F(GB), [TERM] = GB, [REW_RET] = D8(GB),
        [REW_STATS] = D8(3), [REW_OUT] = F(GB)};
    cr_plan_init(&pl->plan);
    for (int i = 0; i < N_ITEMS; i++) cr_plan_add(&pl->plan, "pipeline", sizes[i]);
    CHECK_OK(gpu.ops->arena_alloc(&gpu, &pl->mem, &pl->plan));
    size_t bytes = pl->plan.total;
    pl->image = malloc(bytes);
    CHECK(pl->image != NULL);
    float *f = (float *)pl->image;
    for (size_t i = 0; i < bytes / 4; i++) f[i] = cr_philox_uniform(&prng); /* [0, 1) */
#define AT(i, type) ((type *)(pl->image + pl->plan.offsets[i]))
    for (int i = 0; i < GB * GK; i++) AT(MEAN, float)[i] = 2 * AT(MEAN, float)[i] - 1;
    for (int i = 0; i < GK; i++) AT(LOGSTD, float)[i] = -AT(LOGSTD, float)[i];
    for (int i = 0; i < GB; i++) AT(OLD_LOGP, float)[i] = -8.0f + AT(OLD_LOGP, float)[i];
    memset(AT(ACC, char), 0, sizeof(cr_ppo_stats_acc));
    double *os = AT(OBS_STATS, double), *rs = AT(REW_STATS, double);
    for (int d = 0; d < GD; d++) os[d] = 0.0, os[GD + d] = 1.0;
    os[2 * GD] = 1e-4;
    rs[0] = 0.0, rs[1] = 1.0, rs[2] = 1e-4;
    for (int i = 0; i < GB; i++) {
        AT(TERM, uint8_t)[i] = cr_philox_uniform(&prng) < 0.1f;
        AT(REW_RET, double)[i] = 0.0;
    }
#undef AT
}

static void pipeline_reset(pipeline *pl) { up(pl->mem.base, pl->image, pl->plan.total); }

/* One pass of every op over the pipeline's arena (enqueued only: nothing waits). */
static void pipeline_run(pipeline *pl) {
    cudarl_ctx *c = &gpu;
    const cr_backend *o = c->ops;
    cr_ppo_loss_params lp = {0.2f, 0.01f, 0.5f, 1, 1};
    double *os = PTR(pl, OBS_STATS), *rs = PTR(pl, REW_STATS);
    o->gaussian_sample(c, PTR(pl, MEAN), PTR(pl, LOGSTD), PTR(pl, U_), PTR(pl, ACT),
                       PTR(pl, LOGP), GB, GK);
    o->ppo_loss_gaussian(c, PTR(pl, MEAN), PTR(pl, LOGSTD), PTR(pl, ACT), PTR(pl, OLD_LOGP),
                         PTR(pl, ADV), PTR(pl, VAL), PTR(pl, OLD_VAL), PTR(pl, RET), &lp,
                         PTR(pl, DMEAN), PTR(pl, DLOGSTD), PTR(pl, DVAL), PTR(pl, ACC), GB, GK);
    o->running_stats_update(c, os, os + GD, os + 2 * GD, PTR(pl, OBS), GB, GD);
    o->normalize_obs(c, os, os + GD, PTR(pl, OBS), PTR(pl, OBS_N), GB, GD, 10.0f);
    o->normalize_reward(c, rs, rs + 1, rs + 2, PTR(pl, REW_RET), PTR(pl, REWARD), PTR(pl, TERM),
                        PTR(pl, REW_OUT), GB, 0.99f, 10.0f);
}

/* Two launches of one captured pass and two eager passes give the same bytes (the loss's
 * accumulator, both running statistics and the discounted returns carry over from the first
 * pass into the second). The capture comes first, so every kernel's first launch happens inside
 * it, as in the trainer. Then 100 eager passes and 100 replays allocate nothing. */
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
        compare_bytes("graph", replay + pl.plan.offsets[i], eager + pl.plan.offsets[i],
                      pl.plan.sizes[i]);
    }
    double count;
    memcpy(&count, eager + pl.plan.offsets[OBS_STATS] + D8(2 * GD), sizeof count);
    CHECK_MSG(count == 1e-4 + GB + GB, "observation count after two passes: %.17g", count);
    cr_ppo_stats_acc acc;
    memcpy(&acc, eager + pl.plan.offsets[ACC], sizeof acc);
    CHECK_MSG(acc.count == 2 && isfinite(acc.sum[0]), "accumulator after two passes: count %g",
              acc.count);

    CASE("100 passes and 100 replays allocate nothing");
    gpu.ops->sync(&gpu);
    size_t allocs = cr_cuda_alloc_count();
    for (int k = 0; k < 100; k++) {
        pipeline_run(&pl);
        gpu.ops->graph_launch(&gpu, graph);
    }
    gpu.ops->sync(&gpu);
    CHECK_MSG(cr_cuda_alloc_count() == allocs, "%zu device allocations during the passes",
              cr_cuda_alloc_count() - allocs);
    gpu.ops->graph_free(graph);
    gpu.ops->arena_free(&gpu, &pl.mem);
    free(pl.image);
    end_case();
}

/* ---- main ---------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
    static const struct {
        const char *name;
        void (*run)(void);
    } tests[] = {
        {"sample", test_sample},
        {"loss", test_loss},
        {"running_stats", test_running_stats},
        {"normalize_obs", test_normalize_obs},
        {"normalize_reward", test_normalize_reward},
        {"graph", test_graph},
    };
    int known = argc < 2;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0] && !known; i++)
        known = strcmp(argv[1], tests[i].name) == 0;
    CHECK_MSG(known, "unknown group '%s'", argv[1]);
    cpu.kind = CUDARL_DEVICE_CPU;
    cpu.ops = &cr_backend_cpu;
    cudarl_status s = cr_cuda_ctx_init(&gpu, 0);
    if (s != CUDARL_OK) {
        fprintf(stderr, "FAIL test_continuous_ops_cuda needs a CUDA GPU and could not open one: "
                        "%s: %s\n", cudarl_status_name(s), cudarl_last_error());
        return 1;
    }
    CHECK_MSG(gpu.ops->gaussian_sample && gpu.ops->ppo_loss_gaussian &&
                  gpu.ops->running_stats_update && gpu.ops->normalize_obs &&
                  gpu.ops->normalize_reward,
              "the CUDA backend's table lacks a continuous-action op");
    cr_philox_seed(&prng, 2026, 7);
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (argc > 1 && strcmp(argv[1], tests[i].name) != 0) continue;
        tests[i].run();
        print_worst();
        printf("ok %s\n", tests[i].name);
    }
    cr_cuda_ctx_free(&gpu);
    return 0;
}
