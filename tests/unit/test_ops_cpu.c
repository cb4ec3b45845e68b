/* CPU ops against straightforward double-precision references, on random inputs (Philox) and
 * edge cases; bitwise determinism across thread counts.
 * Usage: test_ops_cpu [op]   op: linear tanh categorical gae ppo_loss grad_norm adam orthogonal
 * keep (all when omitted). */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "op_buffers.h"
#include "core/core.h"
#include "ops/backend.h"
#include "ops/cpu/ops_cpu.h"

/* ---- helpers: tests/common/op_buffers.h ---------------------------------------------------- */

/* ---- linear -------------------------------------------------------------------------------- */

/* Recursive float summation of K terms errs by at most about K u times the sum of |terms|
 * (u = 2^-24); the check allows (K + 2) u of it. */
static void check_dot(const char *what, int idx, float got, double want, double abs_sum, int K) {
    double tol = (K + 2) * 0x1p-24 * abs_sum + 1e-30;
    if (!(fabs((double)got - want) <= tol)) {
        fprintf(stderr, "FAIL %s[%d]: expected %.9g, got %.9g (tol %.3g)\n", what, idx, want,
                (double)got, tol);
        exit(1);
    }
}

static void linear_case(int B, int I, int O) {
    float *x = uniform_floats((size_t)B * I, -1, 1), *w = uniform_floats((size_t)O * I, -1, 1);
    float *b = uniform_floats((size_t)O, -1, 1), *dy = uniform_floats((size_t)B * O, -1, 1);
    float *y = floats((size_t)B * O), *yt = floats((size_t)B * O), *ytt = floats((size_t)B * O);
    float *dx = floats((size_t)B * I), *dw = floats((size_t)O * I), *db = floats((size_t)O);
    float *dw2 = floats((size_t)O * I), *db2 = floats((size_t)O);

    cr_cpu_linear_forward(x, w, b, y, B, I, O);
    for (int r = 0; r < B; r++)
        for (int o = 0; o < O; o++) {
            double s = b[o], a = fabs(b[o]);
            for (int i = 0; i < I; i++) {
                s += (double)x[r * I + i] * w[o * I + i];
                a += fabs((double)x[r * I + i] * w[o * I + i]);
            }
            check_dot("y", r * O + o, y[r * O + o], s, a, I);
        }
    /* The fused form is the plain forward followed by cr_cpu_tanh_forward, bit for bit. */
    cr_cpu_linear_tanh_forward(x, w, b, yt, B, I, O);
    cr_cpu_tanh_forward(y, ytt, (size_t)B * O);
    CHECK_MSG(bits_equal(yt, ytt, (size_t)B * O), "fused tanh differs at B=%d I=%d O=%d", B, I, O);

    cr_cpu_linear_backward(dy, x, w, dx, dw, db, B, I, O);
    for (int o = 0; o < O; o++) {
        double s = 0, a = 0;
        for (int r = 0; r < B; r++) s += dy[r * O + o], a += fabs(dy[r * O + o]);
        check_dot("db", o, db[o], s, a, B);
        for (int i = 0; i < I; i++) {
            s = 0, a = 0;
            for (int r = 0; r < B; r++) {
                s += (double)dy[r * O + o] * x[r * I + i];
                a += fabs((double)dy[r * O + o] * x[r * I + i]);
            }
            check_dot("dw", o * I + i, dw[o * I + i], s, a, B);
        }
    }
    for (int r = 0; r < B; r++)
        for (int i = 0; i < I; i++) {
            double s = 0, a = 0;
            for (int o = 0; o < O; o++) {
                s += (double)dy[r * O + o] * w[o * I + i];
                a += fabs((double)dy[r * O + o] * w[o * I + i]);
            }
            check_dot("dx", r * I + i, dx[r * I + i], s, a, O);
        }
    /* dx = NULL skips dx and leaves dw, db as they were. */
    cr_cpu_linear_backward(dy, x, w, NULL, dw2, db2, B, I, O);
    CHECK(bits_equal(dw, dw2, (size_t)O * I) && bits_equal(db, db2, (size_t)O));

    free(x), free(w), free(b), free(dy), free(y), free(yt), free(ytt), free(dx), free(dw),
        free(db), free(dw2), free(db2);
}

/* The same outputs, bit for bit, with 1, 2 and 3 threads. */
static void linear_threads_case(int B, int I, int O) {
    float *x = uniform_floats((size_t)B * I, -1, 1), *w = uniform_floats((size_t)O * I, -1, 1);
    float *b = uniform_floats((size_t)O, -1, 1), *dy = uniform_floats((size_t)B * O, -1, 1);
    float *y[3], *yt[3], *dx[3], *dw[3], *db[3];
    for (int k = 0; k < 3; k++) {
        y[k] = floats((size_t)B * O), yt[k] = floats((size_t)B * O);
        dx[k] = floats((size_t)B * I), dw[k] = floats((size_t)O * I), db[k] = floats((size_t)O);
        cr_cpu_set_threads(k + 1);
        cr_cpu_linear_forward(x, w, b, y[k], B, I, O);
        cr_cpu_linear_tanh_forward(x, w, b, yt[k], B, I, O);
        cr_cpu_linear_backward(dy, x, w, dx[k], dw[k], db[k], B, I, O);
    }
    cr_cpu_set_threads(0);
    for (int k = 1; k < 3; k++) {
        CHECK_MSG(bits_equal(y[0], y[k], (size_t)B * O), "y, %d threads, B=%d I=%d O=%d", k + 1,
                  B, I, O);
        CHECK_MSG(bits_equal(yt[0], yt[k], (size_t)B * O), "tanh y, %d threads", k + 1);
        CHECK_MSG(bits_equal(dx[0], dx[k], (size_t)B * I), "dx, %d threads", k + 1);
        CHECK_MSG(bits_equal(dw[0], dw[k], (size_t)O * I), "dw, %d threads", k + 1);
        CHECK_MSG(bits_equal(db[0], db[k], (size_t)O), "db, %d threads", k + 1);
    }
    for (int k = 0; k < 3; k++) free(y[k]), free(yt[k]), free(dx[k]), free(dw[k]), free(db[k]);
    free(x), free(w), free(b), free(dy);
}

static void test_linear(void) {
    /* Edge shapes (one row, odd sizes, narrow and wide outputs, several tiles of 64 in I and O,
     * row counts that are not multiples of 4) and the PPO MLP's own. */
    static const int shapes[][3] = {
        {1, 1, 1},    {1, 3, 5},   {7, 3, 5},   {2, 5, 2},    {5, 64, 2},  {13, 64, 1},
        {9, 200, 7},  {6, 17, 8},  {3, 130, 65}, {33, 70, 130}, {256, 4, 64}, {256, 64, 64},
        {256, 64, 2}, {256, 64, 1}, {5, 1, 9},   {11, 7, 3},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        linear_case(shapes[s][0], shapes[s][1], shapes[s][2]);
    /* Shapes big enough to fork, with odd splits. */
    linear_threads_case(256, 64, 64);
    linear_threads_case(37, 200, 70);
    linear_threads_case(1023, 4, 64);
    linear_threads_case(301, 200, 3);
    linear_threads_case(301, 600, 1);
}

/* ---- tanh ---------------------------------------------------------------------------------- */

static void test_tanh(void) {
    /* A dense grid over [-20, 20] (step ~2.4e-5, 1.6 M points), plus the points around the
     * switch between the two formulas (0.625) and the clamp (9.5). */
    double worst = 0, worst_x = 0;
    float prev = -2.0f;
    for (long k = -820000; k <= 820000; k++) {
        float x = (float)((double)k * (20.0 / 820000.0));
        float t = cr_tanhf(x);
        double err = fabs((double)t - tanh((double)x));
        if (err > worst) worst = err, worst_x = x;
        CHECK_MSG(cr_tanhf(-x) == -t, "not odd at x = %.9g", (double)x);
        CHECK_MSG(t >= prev, "not monotonic at x = %.9g: %.9g after %.9g", (double)x, (double)t,
                  (double)prev);
        prev = t;
    }
    static const float specials[] = {0.625f, 9.5f, 4.4e-3f, 1e-3f, 1e-20f, 1e-40f, 20.0f};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++)
        for (int d = -3; d <= 3; d++) {
            float x = specials[i];
            for (int s = 0; s < (d < 0 ? -d : d); s++) x = nextafterf(x, d < 0 ? 0.0f : 100.0f);
            double err = fabs((double)cr_tanhf(x) - tanh((double)x));
            if (err > worst) worst = err, worst_x = x;
        }
    printf("tanh: max abs error %.3g at x = %.9g\n", worst, worst_x);
    CHECK_MSG(worst <= 5e-7, "max abs error %.3g at x = %.9g", worst, worst_x);
    /* Exact values: 0, odd at 0, saturation, infinities, NaN. */
    CHECK(cr_tanhf(0.0f) == 0.0f && !signbit(cr_tanhf(0.0f)));
    CHECK(cr_tanhf(-0.0f) == 0.0f && signbit(cr_tanhf(-0.0f)));
    CHECK(cr_tanhf(1e-30f) == 1e-30f);
    static const float big[] = {9.5f, 10.0f, 20.0f, 50.0f, 1e10f, FLT_MAX, INFINITY};
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
        CHECK_MSG(cr_tanhf(big[i]) == 1.0f, "tanh(%g) = %.9g", (double)big[i],
                  (double)cr_tanhf(big[i]));
        CHECK_MSG(cr_tanhf(-big[i]) == -1.0f, "tanh(-%g) = %.9g", (double)big[i],
                  (double)cr_tanhf(-big[i]));
    }
    CHECK(isnan(cr_tanhf(NAN)));

    /* The array form is cr_tanhf bit for bit, in place too, with any thread count. */
    size_t n = (1u << 19) + 7; /* above the fork threshold, odd */
    float *x = uniform_floats(n, -12, 12), *y = floats(n), *y2 = floats(n), *yi = floats(n);
    x[0] = 0.0f, x[1] = -0.0f, x[2] = NAN, x[3] = INFINITY, x[4] = 0.625f;
    cr_cpu_set_threads(1);
    cr_cpu_tanh_forward(x, y, n);
    cr_cpu_set_threads(2);
    cr_cpu_tanh_forward(x, y2, n);
    cr_cpu_set_threads(0);
    memcpy(yi, x, n * sizeof *x);
    cr_cpu_tanh_forward(yi, yi, n);
    for (size_t i = 0; i < n; i++) {
        float want = cr_tanhf(x[i]);
        CHECK_MSG(memcmp(&y[i], &want, sizeof want) == 0, "tanh_forward[%zu](%.9g) = %.9g, "
                  "cr_tanhf gives %.9g", i, (double)x[i], (double)y[i], (double)want);
    }
    CHECK(bits_equal(y, y2, n) && bits_equal(y, yi, n));
    for (size_t k = 0; k < 37; k++) { /* short arrays: vector tails */
        float *t = floats(k);
        cr_cpu_tanh_forward(x, t, k);
        CHECK(bits_equal(t, y, k));
        free(t);
    }

    /* Backward: dx = dy (1 - y^2), also with dx aliasing dy. */
    float *dy = uniform_floats(n, -2, 2), *dx = floats(n);
    memcpy(y, x + 5, 1000 * sizeof *y); /* finite values */
    cr_cpu_tanh_forward(y, y, 1000);
    cr_cpu_tanh_backward(y, dy, dx, 1000);
    for (size_t i = 0; i < 1000; i++)
        CHECK_CLOSE("tanh dx", dx[i], (double)dy[i] * (1.0 - (double)y[i] * y[i]), 1e-7, 1e-6);
    cr_cpu_tanh_backward(y, dy, dy, 1000);
    CHECK(bits_equal(dx, dy, 1000));
    free(x), free(y), free(y2), free(yi), free(dy), free(dx);
}

/* ---- categorical ------------------------------------------------------------------------- */

/* log softmax(l)[a] and the entropy, in double. */
static void ref_logp_entropy(const float *l, int A, int a, double *logp, double *ent) {
    double m = l[0], s = 0, h = 0;
    for (int j = 1; j < A; j++) m = l[j] > m ? l[j] : m;
    for (int j = 0; j < A; j++) s += exp(l[j] - m);
    double ls = log(s);
    for (int j = 0; j < A; j++) {
        double lp = l[j] - m - ls;
        h -= exp(lp) * lp;
    }
    *logp = l[a] - m - ls;
    *ent = h;
}

static void categorical_case(int B, int A, float scale) {
    float *l = uniform_floats((size_t)B * A, -scale, scale), *u = uniform_floats((size_t)B, 0, 1);
    float *logp = floats((size_t)B), *logp2 = floats((size_t)B), *ent = floats((size_t)B);
    int32_t *act = malloc((size_t)B * sizeof *act), *amax = malloc((size_t)B * sizeof *amax);
    CHECK(act && amax);
    u[0] = 0.0f;                   /* smallest u: the first action with nonzero probability */
    if (B > 1) u[1] = 0x1.fffffep-1f; /* largest u below 1 */
    cr_cpu_categorical_sample(l, u, act, logp, B, A);
    cr_cpu_categorical_argmax(l, amax, B, A);
    cr_cpu_categorical_logp_entropy(l, act, logp2, ent, B, A);
    for (int b = 0; b < B; b++) {
        const float *r = l + (size_t)b * A;
        /* Inverse CDF in double: a is right unless u sits within 1e-5 of a CDF step (where
         * float rounding may pick the neighbour). */
        double m = r[0], s = 0, c = 0;
        for (int j = 1; j < A; j++) m = r[j] > m ? r[j] : m;
        for (int j = 0; j < A; j++) s += exp(r[j] - m);
        int a = act[b];
        CHECK_MSG(a >= 0 && a < A, "row %d: action %d of %d", b, a, A);
        for (int j = 0; j < a; j++) c += exp(r[j] - m) / s;
        double p_a = exp(r[a] - m) / s;
        CHECK_MSG(p_a > 0, "row %d: sampled action %d of probability 0", b, a);
        CHECK_MSG(u[b] >= c - 1e-5 && u[b] < c + p_a + 1e-5,
                  "row %d: u = %.9g outside [%.9g, %.9g) of action %d", b, (double)u[b], c,
                  c + p_a, a);
        double rl, re;
        ref_logp_entropy(r, A, a, &rl, &re);
        CHECK_CLOSE("sample logp", logp[b], rl, 2e-6, 2e-6);
        CHECK_MSG(memcmp(&logp[b], &logp2[b], sizeof(float)) == 0,
                  "row %d: logp %.9g from sample, %.9g from logp_entropy", b, (double)logp[b],
                  (double)logp2[b]);
        CHECK_CLOSE("entropy", ent[b], re, 2e-6, 2e-6);
        CHECK(ent[b] >= -1e-6f && ent[b] <= logf((float)A) + 1e-6f);
        int best = 0;
        for (int j = 1; j < A; j++)
            if (r[j] > r[best]) best = j;
        CHECK_MSG(amax[b] == best, "row %d: argmax %d, want %d", b, amax[b], best);
    }
    free(l), free(u), free(logp), free(logp2), free(ent), free(act), free(amax);
}

static void test_categorical(void) {
    for (int A = 1; A <= 7; A++) {
        categorical_case(1, A, 3.0f);
        categorical_case(257, A, 3.0f);
        categorical_case(257, A, 50.0f); /* large logits: exp must be shifted */
    }
    categorical_case(64, 18, 1e4f);

    /* Hand cases. Uniform over 7: entropy log 7, logp -log 7, u picks floor(7u). */
    float l7[7] = {0}, u7[7] = {0.0f, 0.1f, 0.2f, 0.5f, 0.7f, 0.9f, 0.99f};
    float lp[7], en[7];
    int32_t a7[7], a7e[7] = {0, 0, 1, 3, 4, 6, 6}, ones[7] = {1, 1, 1, 1, 1, 1, 1};
    for (int b = 0; b < 7; b++) {
        cr_cpu_categorical_sample(l7, &u7[b], &a7[b], &lp[b], 1, 7);
        CHECK_MSG(a7[b] == a7e[b], "u = %g: action %d, want %d", (double)u7[b], a7[b], a7e[b]);
        CHECK_CLOSE("uniform logp", lp[b], -log(7.0), 1e-6, 0);
    }
    cr_cpu_categorical_logp_entropy(l7, ones, lp, en, 1, 7);
    CHECK_CLOSE("uniform entropy", en[0], log(7.0), 1e-6, 0);
    /* [50, -50]: p(1) = e^-100 underflows in float, so 1 is never drawn, even at the top u. */
    float l2[2] = {50.0f, -50.0f}, u2 = 0x1.fffffep-1f;
    int32_t a2;
    cr_cpu_categorical_sample(l2, &u2, &a2, lp, 1, 2);
    CHECK(a2 == 0 && lp[0] == 0.0f);
    int32_t one = 1;
    cr_cpu_categorical_logp_entropy(l2, &one, lp, en, 1, 2);
    CHECK_CLOSE("logp of the -50 logit", lp[0], -100.0, 1e-5, 0);
    CHECK(en[0] >= 0.0f && en[0] < 1e-30f);
    /* Ties: argmax takes the first. */
    float lt[4] = {1, 3, 3, 2};
    int32_t at;
    cr_cpu_categorical_argmax(lt, &at, 1, 4);
    CHECK(at == 1);
}

/* ---- gae ----------------------------------------------------------------------------------- */

static void ref_gae(const float *r, const float *v, const float *nv, const uint8_t *term,
                    const uint8_t *done, double gamma, double lambda, double *adv, int T, int N) {
    for (int n = 0; n < N; n++) {
        double next = 0;
        for (int t = T - 1; t >= 0; t--) {
            int i = t * N + n;
            double delta = r[i] + gamma * (term[i] ? 0.0 : nv[i]) - v[i];
            next = delta + gamma * lambda * (done[i] ? 0.0 : next);
            adv[i] = next;
        }
    }
}

static void test_gae(void) {
    /* T = 3, N = 2 (element t * N + n), gamma 0.9, lambda 0.8 (gamma lambda = 0.72), rewards 1.
     * env 0: plain step, then terminated at t = 1 (its next_values is NaN and must be ignored),
     *        then a plain step into the rollout's last obs, V = 0.2.
     * env 1: truncated at t = 0 (next_values[0] = V(final obs) = 5 is used), then plain steps.
     *   env 0: A2 = 1 + 0.9 * 0.2 - 0.3 = 0.88;  A1 = 1 - 0.4 = 0.6 (cut);
     *          A0 = 1 + 0.9 * 0.4 - 0.5 + 0.72 * 0.6 = 1.292
     *   env 1: A2 = 1 + 0.9 * 4 - 3 = 1.6;  A1 = 1 + 0.9 * 3 - 2 + 0.72 * 1.6 = 2.852;
     *          A0 = 1 + 0.9 * 5 - 1 = 4.5 (cut: the next row is a new episode) */
    const float r[6] = {1, 1, 1, 1, 1, 1};
    const float v[6] = {0.5f, 1.0f, 0.4f, 2.0f, 0.3f, 3.0f};
    const float nv[6] = {0.4f, 5.0f, NAN, 3.0f, 0.2f, 4.0f};
    const uint8_t term[6] = {0, 0, 1, 0, 0, 0}, done[6] = {0, 1, 1, 0, 0, 0};
    const double want[6] = {1.292, 4.5, 0.6, 2.852, 0.88, 1.6};
    float adv[6], ret[6];
    cr_cpu_gae(r, v, nv, term, done, 0.9f, 0.8f, adv, ret, 3, 2);
    for (int i = 0; i < 6; i++) {
        CHECK_CLOSE("hand adv", adv[i], want[i], 1e-6, 1e-6);
        CHECK_CLOSE("hand returns", ret[i], want[i] + v[i], 1e-6, 1e-6);
    }

    static const int sizes[][2] = {{1, 1}, {1, 5}, {17, 5}, {128, 8}, {64, 33}};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int T = sizes[s][0], N = sizes[s][1];
        size_t n = (size_t)T * N;
        float *rr = uniform_floats(n, -1, 1), *vv = uniform_floats(n, -3, 3);
        float *nvv = uniform_floats(n, -3, 3), *aa = floats(n), *rt = floats(n);
        uint8_t *tm = malloc(n), *dn = malloc(n);
        double *ra = doubles(n);
        CHECK(tm && dn);
        for (size_t i = 0; i < n; i++) {
            float q = cr_philox_uniform(&rng);
            tm[i] = q < 0.1f;            /* terminated */
            dn[i] = tm[i] || q > 0.93f; /* or truncated */
        }
        cr_cpu_gae(rr, vv, nvv, tm, dn, 0.99f, 0.95f, aa, rt, T, N);
        ref_gae(rr, vv, nvv, tm, dn, 0.99f, 0.95f, ra, T, N);
        for (size_t i = 0; i < n; i++) {
            CHECK_CLOSE("adv", aa[i], ra[i], 1e-5, 1e-5);
            CHECK_CLOSE("returns", rt[i], ra[i] + vv[i], 1e-5, 1e-5);
        }
        free(rr), free(vv), free(nvv), free(aa), free(rt), free(tm), free(dn), free(ra);
    }
}

/* ---- ppo loss ------------------------------------------------------------------------------ */

typedef struct ppo_batch {
    int B, A;
    float *logits, *old_logp, *adv, *value, *old_value, *returns;
    int32_t *action;
} ppo_batch;

/* The loss in double, as CleanRL writes it, at logits l and values v (double). Fills st. */
static double ref_ppo_loss(const ppo_batch *d, const double *l, const double *v,
                           const cr_ppo_loss_params *p, cr_ppo_loss_stats *st) {
    int B = d->B, A = d->A;
    double mean = 0, var = 0, c = p->clip_coef;
    for (int b = 0; b < B; b++) mean += d->adv[b];
    mean /= B;
    for (int b = 0; b < B; b++) var += (d->adv[b] - mean) * (d->adv[b] - mean);
    double denom = (B > 1 ? sqrt(var / (B - 1)) : 0.0) + 1e-8;
    cr_ppo_loss_stats s = {0};
    for (int b = 0; b < B; b++) {
        const double *r = l + (size_t)b * A;
        double m = r[0], se = 0, h = 0;
        for (int j = 1; j < A; j++) m = r[j] > m ? r[j] : m;
        for (int j = 0; j < A; j++) se += exp(r[j] - m);
        for (int j = 0; j < A; j++) h -= exp(r[j] - m - log(se)) * (r[j] - m - log(se));
        double logratio = r[d->action[b]] - m - log(se) - d->old_logp[b];
        double ratio = exp(logratio);
        double a = p->norm_adv ? (d->adv[b] - mean) / denom : d->adv[b];
        double rc = ratio < 1 - c ? 1 - c : ratio > 1 + c ? 1 + c : ratio;
        s.pg_loss += fmax(-a * ratio, -a * rc) / B;
        double lu = (v[b] - d->returns[b]) * (v[b] - d->returns[b]);
        if (p->clip_vloss) {
            double dv = v[b] - d->old_value[b];
            double vc = d->old_value[b] + (dv < -c ? -c : dv > c ? c : dv);
            lu = fmax(lu, (vc - d->returns[b]) * (vc - d->returns[b]));
        }
        s.v_loss += 0.5 * lu / B;
        s.entropy += h / B;
        s.old_approx_kl += -logratio / B;
        s.approx_kl += ((ratio - 1) - logratio) / B;
        s.clipfrac += (fabs(ratio - 1) > c) / (double)B;
    }
    s.loss = s.pg_loss - p->ent_coef * s.entropy + p->vf_coef * s.v_loss;
    if (st) *st = s;
    return s.loss;
}

static ppo_batch ppo_random_batch(int B, int A, float logit_scale) {
    ppo_batch d = {B, A, uniform_floats((size_t)B * A, -logit_scale, logit_scale),
                   floats((size_t)B), uniform_floats((size_t)B, -2, 2),
                   uniform_floats((size_t)B, -2, 2), uniform_floats((size_t)B, -2, 2),
                   uniform_floats((size_t)B, -2, 2), malloc((size_t)B * sizeof(int32_t))};
    CHECK(d.action != NULL);
    float *ent = floats((size_t)B);
    for (int b = 0; b < B; b++) d.action[b] = (int32_t)(cr_philox_next_u32(&rng) % (uint32_t)A);
    cr_cpu_categorical_logp_entropy(d.logits, d.action, d.old_logp, ent, B, A);
    /* Old policy a little off the current one: ratios spread over about [0.7, 1.4]. */
    for (int b = 0; b < B; b++) d.old_logp[b] += 0.35f * (cr_philox_uniform(&rng) - 0.5f) * 2;
    free(ent);
    return d;
}

static void ppo_free(ppo_batch *d) {
    free(d->logits), free(d->old_logp), free(d->adv), free(d->value), free(d->old_value),
        free(d->returns), free(d->action);
}

/* Moves rows off the loss's kinks (ratio at 1 +- c, value difference at +- c, a tie between
 * clipped and unclipped value losses) by at least `gap`, so finite differences are valid. */
static void ppo_avoid_kinks(ppo_batch *d, float c, double gap) {
    for (int b = 0; b < d->B; b++) {
        for (int tries = 0;; tries++) {
            CHECK(tries < 1000);
            double lp, h;
            ref_logp_entropy(d->logits + (size_t)b * d->A, d->A, d->action[b], &lp, &h);
            double ratio = exp(lp - d->old_logp[b]);
            double dv = (double)d->value[b] - d->old_value[b];
            double vc = d->old_value[b] + (dv < -c ? -c : dv > c ? c : dv);
            double lu = ((double)d->value[b] - d->returns[b]), lc = vc - d->returns[b];
            if (fabs(ratio - (1 - c)) > gap && fabs(ratio - (1 + c)) > gap &&
                fabs(fabs(dv) - c) > gap && (fabs(dv) < c || fabs(lu * lu - lc * lc) > gap))
                break;
            d->old_logp[b] = (float)lp + 0.35f * (cr_philox_uniform(&rng) - 0.5f) * 2;
            d->value[b] = -2 + 4 * cr_philox_uniform(&rng);
        }
    }
}

/* dlogits, dvalue against central differences of ref_ppo_loss, and the stats. */
static void ppo_check_against_reference(const ppo_batch *d, const cr_ppo_loss_params *p) {
    int B = d->B, A = d->A;
    float *dl = floats((size_t)B * A), *dv = floats((size_t)B);
    cr_ppo_loss_stats st, rs;
    cr_cpu_ppo_loss(d->logits, d->action, d->old_logp, d->adv, d->value, d->old_value, d->returns,
                    p, dl, dv, &st, B, A);
    double *l = doubles((size_t)B * A), *v = doubles((size_t)B);
    for (int i = 0; i < B * A; i++) l[i] = d->logits[i];
    for (int b = 0; b < B; b++) v[b] = d->value[b];
    ref_ppo_loss(d, l, v, p, &rs);
    CHECK_CLOSE("loss", st.loss, rs.loss, 5e-5, 5e-5);
    CHECK_CLOSE("pg_loss", st.pg_loss, rs.pg_loss, 5e-5, 5e-5);
    CHECK_CLOSE("v_loss", st.v_loss, rs.v_loss, 5e-5, 5e-5);
    CHECK_CLOSE("entropy", st.entropy, rs.entropy, 5e-5, 5e-5);
    CHECK_CLOSE("old_approx_kl", st.old_approx_kl, rs.old_approx_kl, 5e-5, 5e-5);
    CHECK_CLOSE("approx_kl", st.approx_kl, rs.approx_kl, 5e-5, 5e-5);
    CHECK_CLOSE("clipfrac", st.clipfrac, rs.clipfrac, 1e-12, 0);

    /* Gradient entries are O(1/B); compare on the scale of the largest. */
    const double h = 1e-5;
    double scale = 0;
    /* `if (a > m)`, not fmax(): GCC 12.2 for aarch64 crashes (an internal compiler error) vectorizing
     * an fmax reduction over floats widened to double; the same for every input, NaN left out. */
    for (int i = 0; i < B * A; i++)
        if (fabs(dl[i]) > scale) scale = fabs(dl[i]);
    for (int b = 0; b < B; b++)
        if (fabs(dv[b]) > scale) scale = fabs(dv[b]);
    double tol = 2e-4 * scale + 1e-9;
    for (int i = 0; i < B * A; i++) {
        double keep = l[i];
        l[i] = keep + h;
        double up = ref_ppo_loss(d, l, v, p, NULL);
        l[i] = keep - h;
        double down = ref_ppo_loss(d, l, v, p, NULL);
        l[i] = keep;
        CHECK_CLOSE("dlogits vs finite difference", dl[i], (up - down) / (2 * h), tol, 0);
    }
    for (int b = 0; b < B; b++) {
        double keep = v[b];
        v[b] = keep + h;
        double up = ref_ppo_loss(d, l, v, p, NULL);
        v[b] = keep - h;
        double down = ref_ppo_loss(d, l, v, p, NULL);
        v[b] = keep;
        CHECK_CLOSE("dvalue vs finite difference", dv[b], (up - down) / (2 * h), tol, 0);
    }
    free(dl), free(dv), free(l), free(v);
}

static void ppo_run(const ppo_batch *d, const cr_ppo_loss_params *p, float *dl, float *dv,
                    cr_ppo_loss_stats *st) {
    cr_cpu_ppo_loss(d->logits, d->action, d->old_logp, d->adv, d->value, d->old_value, d->returns,
                    p, dl, dv, st, d->B, d->A);
}

static void test_ppo_loss(void) {
    static const int shapes[][2] = {{1, 2}, {1, 7}, {5, 2}, {16, 7}, {64, 2}, {33, 4}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int flags = 0; flags < 4; flags++) {
            cr_ppo_loss_params p = {0.2f, 0.01f, 0.5f, flags & 1, flags >> 1};
            for (int big = 0; big < 2; big++) {
                ppo_batch d = ppo_random_batch(shapes[s][0], shapes[s][1], big ? 50.0f : 2.0f);
                ppo_avoid_kinks(&d, p.clip_coef, 1e-3);
                ppo_check_against_reference(&d, &p);
                ppo_free(&d);
            }
        }

    /* Exactly at every clip boundary: clip_coef 0, ratio exactly 1 (old_logp is the current
     * logp), value == old_value. PyTorch's clamp passes the gradient at its bounds and max
     * splits it on ties, so the gradient is the unclipped one: that of a run with a clip range
     * no ratio or value reaches. */
    for (int A = 2; A <= 7; A += 5) {
        ppo_batch d = ppo_random_batch(24, A, 2.0f);
        float *ent = floats(24);
        cr_cpu_categorical_logp_entropy(d.logits, d.action, d.old_logp, ent, 24, A);
        memcpy(d.value, d.old_value, 24 * sizeof(float));
        cr_ppo_loss_params at = {0.0f, 0.01f, 0.5f, 1, 1}, wide = {100.0f, 0.01f, 0.5f, 0, 1};
        float *dl = floats((size_t)24 * A), *dv = floats(24), *dl2 = floats((size_t)24 * A),
              *dv2 = floats(24);
        cr_ppo_loss_stats s1, s2;
        ppo_run(&d, &at, dl, dv, &s1);
        ppo_run(&d, &wide, dl2, dv2, &s2);
        CHECK(bits_equal(dl, dl2, (size_t)24 * A) && bits_equal(dv, dv2, 24));
        CHECK(s1.clipfrac == 0.0 && s1.approx_kl == 0.0 && s1.old_approx_kl == 0.0);
        CHECK_CLOSE("pg_loss at the boundary", s1.pg_loss, s2.pg_loss, 0, 0);
        free(ent), free(dl), free(dv), free(dl2), free(dv2);
        ppo_free(&d);
    }
    /* The value clip by hand: c = 0.25, old value 0.5.
     *   value 0.75 sits on the bound: a tie, the full unclipped gradient vf_coef (v - R) / B;
     *   value 0.8 is clipped to 0.75: with R = 0 the unclipped loss is larger (gradient
     *   0.8 vf_coef / B), with R = 2 the clipped one is (gradient 0);
     *   value 1 is clipped to 0.75 and R = 0.875 ties the two losses at 0.125^2: torch's max
     *   gives half the gradient to each side and the clipped side passes none, so
     *   0.5 * 2 * 0.125 * 0.5 vf_coef / B. */
    {
        ppo_batch d = ppo_random_batch(4, 2, 1.0f);
        const float vals[4] = {0.75f, 0.8f, 0.8f, 1.0f}, rets[4] = {0.0f, 0.0f, 2.0f, 0.875f};
        for (int b = 0; b < 4; b++)
            d.value[b] = vals[b], d.old_value[b] = 0.5f, d.returns[b] = rets[b];
        cr_ppo_loss_params p = {0.25f, 0.0f, 0.5f, 1, 0};
        float dl[8], dv[4];
        cr_ppo_loss_stats st;
        ppo_run(&d, &p, dl, dv, &st);
        CHECK_CLOSE("dvalue on the bound", dv[0], 0.5 * 0.75 / 4, 1e-7, 1e-6);
        CHECK_CLOSE("dvalue unclipped wins", dv[1], 0.5 * 0.8 / 4, 1e-7, 1e-6);
        CHECK_CLOSE("dvalue clipped wins", dv[2], 0.0, 0, 0);
        CHECK_CLOSE("dvalue on a tie", dv[3], 0.5 * 0.125 * 0.5 / 4, 1e-9, 1e-6);
        CHECK_CLOSE("v_loss", st.v_loss, 0.5 * (0.5625 + 0.64 + 1.5625 + 0.015625) / 4, 1e-6,
                    1e-6);
        ppo_free(&d);
    }
    /* All-equal advantages with norm_adv: std 0, advantages normalise to 0, so only the
     * entropy term moves the logits; B = 1 is the same case. */
    for (int B = 1; B <= 9; B += 8) {
        ppo_batch d = ppo_random_batch(B, 3, 2.0f);
        for (int b = 0; b < B; b++) d.adv[b] = 0.7f;
        cr_ppo_loss_params p = {0.2f, 0.01f, 0.5f, 1, 1}, p0 = p;
        float *dl = floats((size_t)B * 3), *dv = floats(B), *dl0 = floats((size_t)B * 3),
              *dv0 = floats(B);
        cr_ppo_loss_stats st, st0;
        ppo_run(&d, &p, dl, dv, &st);
        for (int b = 0; b < B; b++) d.adv[b] = 0.0f;
        p0.norm_adv = 0;
        ppo_run(&d, &p0, dl0, dv0, &st0);
        for (int i = 0; i < B * 3; i++) CHECK(isfinite(dl[i]));
        CHECK(bits_equal(dl, dl0, (size_t)B * 3) && bits_equal(dv, dv0, B));
        CHECK(st.pg_loss == 0.0 && isfinite(st.loss));
        free(dl), free(dv), free(dl0), free(dv0);
        ppo_free(&d);
    }
}

/* ---- grad norm ----------------------------------------------------------------------------- */

static void test_grad_norm(void) {
    size_t n = 10007;
    float *g = uniform_floats(n, -1, 1), *g2 = floats(n);
    double ss = 0;
    for (size_t i = 0; i < n; i++) ss += (double)g[i] * g[i];
    CHECK(cr_cpu_sum_squares(g, n) == ss); /* same order, same bits */
    CHECK(cr_cpu_sum_squares(g, 0) == 0.0);

    /* Clipped: g *= max / (norm + 1e-6). */
    memcpy(g2, g, n * sizeof *g);
    double norm = cr_cpu_clip_grad_norm(g2, n, 0.5);
    CHECK(norm == sqrt(ss));
    float coef = (float)(0.5 / (sqrt(ss) + 1e-6));
    for (size_t i = 0; i < n; i++) CHECK(g2[i] == g[i] * coef);
    CHECK_CLOSE("clipped norm", sqrt(cr_cpu_sum_squares(g2, n)), 0.5, 1e-6, 0);
    /* Not clipped when norm + 1e-6 <= max, and the boundary max = norm + 1e-6 (coef 1). */
    memcpy(g2, g, n * sizeof *g);
    CHECK(cr_cpu_clip_grad_norm(g2, n, sqrt(ss) * 2) == sqrt(ss) && bits_equal(g, g2, n));
    CHECK(cr_cpu_clip_grad_norm(g2, n, sqrt(ss) + 1e-6) == sqrt(ss) && bits_equal(g, g2, n));
    /* A norm just above max by less than 1e-6 is still scaled, by torch's coefficient. */
    double mx = sqrt(ss) + 5e-7;
    CHECK(cr_cpu_clip_grad_norm(g2, n, mx) == sqrt(ss));
    coef = (float)(mx / (sqrt(ss) + 1e-6));
    for (size_t i = 0; i < n; i++) CHECK(g2[i] == g[i] * coef);
    /* Zero gradient: norm 0, untouched. */
    float z[3] = {0, 0, 0};
    CHECK(cr_cpu_clip_grad_norm(z, 3, 1.0) == 0.0 && z[0] == 0 && z[1] == 0 && z[2] == 0);
    /* An infinite gradient: norm inf, coefficient 0, inf * 0 = NaN, as in torch. */
    float bad[2] = {INFINITY, 1.0f};
    CHECK(isinf(cr_cpu_clip_grad_norm(bad, 2, 1.0)) && isnan(bad[0]) && bad[1] == 0.0f);

    /* Scale, and thread-count independence above the fork threshold. */
    size_t big = (1u << 19) + 3;
    float *a = uniform_floats(big, -1, 1), *b = floats(big);
    memcpy(b, a, big * sizeof *a);
    cr_cpu_set_threads(1);
    cr_cpu_scale(a, big, 0.37f);
    cr_cpu_set_threads(2);
    cr_cpu_scale(b, big, 0.37f);
    cr_cpu_set_threads(0);
    CHECK(bits_equal(a, b, big));
    free(g), free(g2), free(a), free(b);
}

/* ---- adam ---------------------------------------------------------------------------------- */

static void test_adam(void) {
    size_t n = 1001;
    /* The op takes float hyperparameters: the reference uses exactly those values. */
    const double lr = 3e-4f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
    float *p = uniform_floats(n, -1, 1), *m = floats(n), *v = floats(n);
    float *g1 = uniform_floats(n, -1, 1), *g2 = uniform_floats(n, -1e-3f, 1e-3f);
    g1[0] = 0.0f, g2[0] = 0.0f; /* a parameter that never gets a gradient stays put */
    double *rp = doubles(n), *rm = doubles(n), *rv = doubles(n), *p0 = doubles(n);
    for (size_t i = 0; i < n; i++) m[i] = v[i] = 0.0f, p0[i] = rp[i] = p[i], rm[i] = rv[i] = 0.0;
    for (int t = 1; t <= 2; t++) {
        const float *g = t == 1 ? g1 : g2;
        cr_cpu_adam_step(p, g, m, v, n, (float)lr, (float)b1, (float)b2, (float)eps, t);
        double bc1 = 1 - pow(b1, t), bc2 = 1 - pow(b2, t);
        for (size_t i = 0; i < n; i++) {
            rm[i] = b1 * rm[i] + (1 - b1) * g[i];
            rv[i] = b2 * rv[i] + (1 - b2) * (double)g[i] * g[i];
            rp[i] -= lr / bc1 * rm[i] / (sqrt(rv[i]) / sqrt(bc2) + eps);
            CHECK_CLOSE("adam m", m[i], rm[i], 1e-12, 1e-6);
            CHECK_CLOSE("adam v", v[i], rv[i], 1e-18, 1e-6);
            CHECK_CLOSE("adam p", p[i], rp[i], 1e-9, 1e-6);
        }
        if (t == 1) /* the first step moves each parameter by lr against its gradient's sign */
            for (size_t i = 1; i < n; i++)
                if (fabsf(g1[i]) > 1e-3f)
                    CHECK_CLOSE("adam step 1", p[i], p0[i] - copysign(lr, g1[i]), 1e-9, 1e-5);
    }
    CHECK(p[0] == (float)rp[0]);

    /* Thread-count independence above the fork threshold. */
    size_t big = (1u << 19) + 5;
    float *pa = uniform_floats(big, -1, 1), *ga = uniform_floats(big, -1, 1);
    float *ma = uniform_floats(big, -1, 1), *va = uniform_floats(big, 0, 1);
    float *pb = floats(big), *mb = floats(big), *vb = floats(big);
    memcpy(pb, pa, big * 4), memcpy(mb, ma, big * 4), memcpy(vb, va, big * 4);
    cr_cpu_set_threads(1);
    cr_cpu_adam_step(pa, ga, ma, va, big, 1e-3f, 0.9f, 0.999f, 1e-8f, 7);
    cr_cpu_set_threads(2);
    cr_cpu_adam_step(pb, ga, mb, vb, big, 1e-3f, 0.9f, 0.999f, 1e-8f, 7);
    cr_cpu_set_threads(0);
    CHECK(bits_equal(pa, pb, big) && bits_equal(ma, mb, big) && bits_equal(va, vb, big));
    free(p), free(m), free(v), free(g1), free(g2), free(rp), free(rm), free(rv), free(p0);
    free(pa), free(ga), free(ma), free(va), free(pb), free(mb), free(vb);
}

/* ---- orthogonal init ---------------------------------------------------------------------- */

static void orthogonal_case(int O, int I, double gain) {
    float *w = floats((size_t)O * I), *w2 = floats((size_t)O * I), *w3 = floats((size_t)O * I);
    cr_philox_state s;
    cr_philox_seed(&s, 123, 7);
    cr_cpu_orthogonal_init(w, O, I, gain, &s);
    /* O <= I: rows orthonormal (W W^T = gain^2 I); O > I: columns (W^T W = gain^2 I). */
    int k = O <= I ? O : I, len = O <= I ? I : O;
    size_t sj = O <= I ? (size_t)I : 1, se = O <= I ? 1 : (size_t)I;
    for (int a = 0; a < k; a++)
        for (int b = 0; b < k; b++) {
            double dot = 0;
            for (int e = 0; e < len; e++) dot += (double)w[a * sj + e * se] * w[b * sj + e * se];
            double want = a == b ? gain * gain : 0.0;
            CHECK_MSG(fabs(dot - want) <= 1e-5, "O=%d I=%d gain %g: (%d, %d) product %.9g, "
                      "want %g", O, I, gain, a, b, dot, want);
        }
    /* torch's sign convention: W = gain Q with Q R the QR of the drawn matrix M (of M^T when
     * O < I) and diag(R) > 0, so each vector has a positive dot product with the draw's. */
    cr_philox_seed(&s, 123, 7);
    for (size_t e = 0; e < (size_t)O * I; e++) w3[e] = (float)cr_philox_normal(&s);
    for (int a = 0; a < k; a++) {
        double rjj = 0;
        for (int e = 0; e < len; e++) rjj += (double)w[a * sj + e * se] * w3[a * sj + e * se];
        CHECK_MSG(rjj * gain > 0, "O=%d I=%d: diag(R)[%d] = %g", O, I, a, rjj / gain);
    }
    /* The same stream gives the same matrix; another stream another one. */
    cr_philox_seed(&s, 123, 7);
    cr_cpu_orthogonal_init(w2, O, I, gain, &s);
    CHECK(bits_equal(w, w2, (size_t)O * I));
    cr_philox_seed(&s, 123, 8);
    cr_cpu_orthogonal_init(w2, O, I, gain, &s);
    double diff = 0;
    for (size_t e = 0; e < (size_t)O * I; e++) /* not fmax(): see the gradient scale above */
        if (fabs(w[e] - w2[e]) > diff) diff = fabs(w[e] - w2[e]);
    /* (1 x 1 has one sign-corrected orthogonal matrix: [gain].) */
    CHECK_MSG(diff > 0.01 * gain || (O == 1 && I == 1), "streams 7 and 8 give matrices %g apart",
              diff);
    free(w), free(w2), free(w3);
}

/* cr_cpu_philox_normals (on the threads) against cr_philox_normal one by one: the same floats
 * from any position in the stream (0 to 5 words consumed first), and the stream left where the
 * draws end (its next words the same). */
static void philox_normals_case(void) {
    static const size_t counts[] = {1, 3, 70001};
    for (int skip = 0; skip < 6; skip++)
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
            const size_t n = counts[c];
            float *a = floats(n), *b = floats(n);
            cr_philox_state sa, sb;
            cr_philox_seed(&sa, 99, 3);
            for (int k = 0; k < skip; k++) cr_philox_next_u32(&sa);
            sb = sa;
            for (size_t i = 0; i < n; i++) a[i] = (float)cr_philox_normal(&sa);
            cr_cpu_set_threads(2);
            cr_cpu_philox_normals(&sb, b, n);
            cr_cpu_set_threads(0);
            CHECK_MSG(bits_equal(a, b, n), "%zu normals after %d words: other bits", n, skip);
            for (int k = 0; k < 6; k++) {
                const uint32_t wa = cr_philox_next_u32(&sa), wb = cr_philox_next_u32(&sb);
                CHECK_MSG(wa == wb, "%zu normals after %d words: the stream's word %d after "
                          "them %u, one by one %u", n, skip, k, wb, wa);
            }
            free(a), free(b);
        }
}

static void test_orthogonal(void) {
    philox_normals_case();
    static const int shapes[][2] = {{64, 4}, {4, 64}, {64, 64}, {2, 64}, {1, 64}, {64, 1},
                                    {5, 3},  {3, 5},  {1, 1},   {130, 70}, {7, 7}};
    static const double gains[] = {1.0, 1.4142135623730951, 0.01};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (size_t g = 0; g < 3; g++) orthogonal_case(shapes[s][0], shapes[s][1], gains[g]);
    /* several blocks of vectors, their projections on the threads: the bits are the same on
     * one thread and on four */
    orthogonal_case(200, 700, 1.4142135623730951);
    orthogonal_case(700, 150, 1.0);
    static const int big[][2] = {{200, 700}, {700, 150}};
    for (size_t s = 0; s < 2; s++) {
        const size_t n = (size_t)big[s][0] * big[s][1];
        float *a = floats(n), *b = floats(n);
        cr_philox_state st;
        cr_cpu_set_threads(1);
        cr_philox_seed(&st, 5, 1);
        cr_cpu_orthogonal_init(a, big[s][0], big[s][1], 1.0, &st);
        cr_cpu_set_threads(4);
        cr_philox_seed(&st, 5, 1);
        cr_cpu_orthogonal_init(b, big[s][0], big[s][1], 1.0, &st);
        CHECK_MSG(bits_equal(a, b, n), "%d x %d: one thread and four give other bits",
                  big[s][0], big[s][1]);
        free(a), free(b);
    }
    cr_cpu_set_threads(0);
}

/* ---- main ---------------------------------------------------------------------------------- */

/* ---- keep_rows, place_values (the twin rollout's truncated envs) --------------------------- */

/* Four envs of 3-byte rows over three steps: env 1 truncated at step 1, env 3 at step 3, env 0
 * never, env 2 twice (the later step wins, as a second truncation in one rollout would
 * overwrite: the trainer keeps only rollouts no longer than the time limit).
 * Then the placed values land at (step - 1) * rows + i and every step is 0 again. */
static void test_keep(void) {
    cudarl_ctx ctx = {0};
    ctx.kind = CUDARL_DEVICE_CPU, ctx.ops = &cr_backend_cpu;
    const cr_backend *o = ctx.ops;
    uint8_t kept[12], src[12];
    int32_t step[4] = {0, 0, 0, 0};
    memset(kept, 0xEE, sizeof kept);
    const uint8_t flags[3][4] = {{0, 1, 1, 0}, {0, 0, 0, 0}, {0, 0, 1, 1}};
    for (int t = 1; t <= 3; t++) {
        for (int i = 0; i < 12; i++) src[i] = (uint8_t)(16 * t + i);
        o->keep_rows(&ctx, src, flags[t - 1], kept, step, t, 4, 3);
    }
    const uint8_t want[12] = {0xEE, 0xEE, 0xEE, 16 + 3, 16 + 4, 16 + 5,
                              48 + 6, 48 + 7, 48 + 8, 48 + 9, 48 + 10, 48 + 11};
    CHECK_MSG(!memcmp(kept, want, sizeof want), "keep_rows: the kept rows");
    CHECK_MSG(step[0] == 0 && step[1] == 1 && step[2] == 3 && step[3] == 3,
              "keep_rows: steps %d %d %d %d, expected 0 1 3 3", (int)step[0], (int)step[1],
              (int)step[2], (int)step[3]);
    const float v[4] = {10, 11, 12, 13};
    float out[12];
    for (int i = 0; i < 12; i++) out[i] = -1;
    o->place_values(&ctx, v, step, out, 4);
    const float want_out[12] = {-1, 11, -1, -1, -1, -1, -1, -1, -1, -1, 12, 13};
    CHECK_MSG(!memcmp(out, want_out, sizeof out), "place_values: the placed values");
    CHECK_MSG(!step[0] && !step[1] && !step[2] && !step[3], "place_values: steps not reset");
}

int main(int argc, char **argv) {
    static const struct {
        const char *name;
        void (*run)(void);
    } tests[] = {
        {"linear", test_linear},       {"tanh", test_tanh},   {"categorical", test_categorical},
        {"gae", test_gae},             {"ppo_loss", test_ppo_loss}, {"grad_norm", test_grad_norm},
        {"adam", test_adam},           {"orthogonal", test_orthogonal}, {"keep", test_keep},
    };
    cr_philox_seed(&rng, 2024, 0);
    int ran = 0;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (argc > 1 && strcmp(argv[1], tests[i].name) != 0) continue;
        tests[i].run();
        printf("ok %s\n", tests[i].name);
        ran++;
    }
    CHECK_MSG(ran > 0, "unknown op '%s'", argc > 1 ? argv[1] : "");
    return 0;
}
