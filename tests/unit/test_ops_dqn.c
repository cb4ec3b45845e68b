/* DQN's CPU ops against straightforward double-precision references, on random inputs (Philox)
 * and edge cases; bitwise determinism across thread counts.
 * Usage: test_ops_dqn [op]   op: relu dqn_loss egreedy polyak (all when omitted). */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "op_buffers.h"
#include "core/core.h"
#include "ops/cpu/ops_cpu.h"
#include "ops/cpu/ops_dqn.h"

/* ---- helpers: tests/common/op_buffers.h ---------------------------------------------------- */

/* Index of the first largest of x (A), the rule the ops promise ("first on ties"). */
static int first_argmax(const float *x, int A) {
    int best = 0;
    for (int j = 1; j < A; j++)
        if (x[j] > x[best]) best = j;
    return best;
}

/* ---- relu ---------------------------------------------------------------------------------- */

static void relu_specials(void) {
    const float x[] = {-2.0f, -1e-40f, -0.0f, 0.0f, 1e-40f, 3.0f, INFINITY, -INFINITY, NAN};
    const float want[] = {0.0f, 0.0f, -0.0f, 0.0f, 1e-40f, 3.0f, INFINITY, 0.0f, NAN};
    enum { N = sizeof x / sizeof x[0] };
    float y[N], yi[N];
    cr_cpu_relu_forward(x, y, N);
    memcpy(yi, x, sizeof x);
    cr_cpu_relu_forward(yi, yi, N); /* in place */
    CHECK(bits_equal(y, yi, N));
    for (int i = 0; i < N; i++)
        CHECK_MSG(isnan(want[i]) ? isnan(y[i]) : memcmp(&y[i], &want[i], sizeof y[i]) == 0,
                  "relu(%g) = %g, want %g", (double)x[i], (double)y[i], (double)want[i]);

    /* threshold_backward: zero at y == +-0 and below, even for a NaN or infinite dy; dy where
     * y > 0 (a denormal too) and where y is NaN. */
    const float yb[] = {0.0f, -0.0f, 0.0f, -1.0f, 1e-40f, 2.0f, NAN, 5.0f};
    const float dy[] = {5.0f, 5.0f, NAN, INFINITY, 7.0f, -3.0f, 4.0f, NAN};
    const float dwant[] = {0.0f, 0.0f, 0.0f, 0.0f, 7.0f, -3.0f, 4.0f, NAN};
    enum { M = sizeof yb / sizeof yb[0] };
    float dx[M], da[M];
    cr_cpu_relu_backward(yb, dy, dx, M);
    memcpy(da, dy, sizeof dy);
    cr_cpu_relu_backward(yb, da, da, M); /* dx aliases dy */
    CHECK(bits_equal(dx, da, M));
    for (int i = 0; i < M; i++)
        CHECK_MSG(isnan(dwant[i]) ? isnan(dx[i]) : memcmp(&dx[i], &dwant[i], sizeof dx[i]) == 0,
                  "relu_backward(y %g, dy %g) = %g, want %g", (double)yb[i], (double)dy[i],
                  (double)dx[i], (double)dwant[i]);
}

/* Above the fork threshold, odd length: the definition element by element, and the same bits
 * with 1, 2 and 3 threads. */
static void relu_large(void) {
    size_t n = (1u << 19) + 7;
    float *x = uniform_floats(n, -1, 1), *dy = uniform_floats(n, -1, 1);
    for (size_t i = 0; i < n; i += 101) x[i] = 0.0f;
    float *y[3], *dx[3];
    for (int k = 0; k < 3; k++) {
        y[k] = floats(n), dx[k] = floats(n);
        cr_cpu_set_threads(k + 1);
        cr_cpu_relu_forward(x, y[k], n);
        cr_cpu_relu_backward(y[k], dy, dx[k], n);
    }
    cr_cpu_set_threads(0);
    for (size_t i = 0; i < n; i++) {
        float yw = x[i] > 0 ? x[i] : 0.0f, dw = x[i] > 0 ? dy[i] : 0.0f;
        CHECK_MSG(y[0][i] == yw, "relu[%zu](%g) = %g", i, (double)x[i], (double)y[0][i]);
        CHECK_MSG(dx[0][i] == dw, "relu_backward[%zu] = %g, want %g", i, (double)dx[0][i],
                  (double)dw);
    }
    for (int k = 1; k < 3; k++)
        CHECK_MSG(bits_equal(y[0], y[k], n) && bits_equal(dx[0], dx[k], n), "%d threads",
                  k + 1);
    for (int k = 0; k < 3; k++) free(y[k]), free(dx[k]);
    free(x), free(dy);
}

/* y = max(0, x w^T + b) within the float summation bound of the dot product, and bit for bit
 * the plain forward followed by cr_cpu_relu_forward. */
static void linear_relu_case(int B, int I, int O) {
    float *x = uniform_floats((size_t)B * I, -1, 1), *w = uniform_floats((size_t)O * I, -1, 1);
    float *b = uniform_floats((size_t)O, -1, 1);
    float *y = floats((size_t)B * O), *y2 = floats((size_t)B * O);
    cr_cpu_linear_relu_forward(x, w, b, y, B, I, O);
    cr_cpu_linear_forward(x, w, b, y2, B, I, O);
    cr_cpu_relu_forward(y2, y2, (size_t)B * O);
    CHECK_MSG(bits_equal(y, y2, (size_t)B * O), "fused relu differs at B=%d I=%d O=%d", B, I, O);
    for (int r = 0; r < B; r++)
        for (int o = 0; o < O; o++) {
            double s = b[o], a = fabs(b[o]);
            for (int i = 0; i < I; i++) {
                s += (double)x[r * I + i] * w[o * I + i];
                a += fabs((double)x[r * I + i] * w[o * I + i]);
            }
            double want = s > 0 ? s : 0, tol = (I + 2) * 0x1p-24 * a + 1e-30;
            CHECK_MSG(fabs(y[r * O + o] - want) <= tol && y[r * O + o] >= 0,
                      "y[%d, %d] = %.9g, want %.9g (B=%d I=%d O=%d)", r, o, (double)y[r * O + o],
                      want, B, I, O);
        }
    free(x), free(w), free(b), free(y), free(y2);
}

/* L = sum c * relu(x w^T + b) in double, for the finite differences below. */
static double ref_relu_layer_loss(const double *x, const double *w, const double *b,
                                  const float *c, int B, int I, int O, double *min_abs_z) {
    double L = 0, mz = INFINITY;
    for (int r = 0; r < B; r++)
        for (int o = 0; o < O; o++) {
            double z = b[o];
            for (int i = 0; i < I; i++) z += x[r * I + i] * w[o * I + i];
            mz = fmin(mz, fabs(z));
            L += c[r * O + o] * (z > 0 ? z : 0);
        }
    if (min_abs_z) *min_abs_z = mz;
    return L;
}

/* Central differences of one parameter array p (n) of the layer against the op's gradient g. */
static void relu_fd_check(const char *what, double *p, const float *g, size_t n, const double *x,
                          const double *w, const double *b, const float *c, int B, int I, int O) {
    const double h = 1e-6;
    for (size_t k = 0; k < n; k++) {
        double keep = p[k];
        p[k] = keep + h;
        double up = ref_relu_layer_loss(x, w, b, c, B, I, O, NULL);
        p[k] = keep - h;
        double down = ref_relu_layer_loss(x, w, b, c, B, I, O, NULL);
        p[k] = keep;
        CHECK_CLOSE(what, g[k], (up - down) / (2 * h), 1e-5, 1e-4);
    }
}

/* The gradient of a ReLU layer through cr_cpu_relu_backward and cr_cpu_linear_backward, against
 * central differences (inputs drawn again until no pre-activation is within 1e-4 of the kink). */
static void relu_layer_grad_case(int B, int I, int O) {
    size_t nx = (size_t)B * I, nw = (size_t)O * I, ny = (size_t)B * O;
    float *x = floats(nx), *w = floats(nw), *b = floats(O), *c = uniform_floats(ny, -1, 1);
    double *xd = doubles(nx), *wd = doubles(nw), *bd = doubles(O), mz = 0;
    for (int tries = 0; mz < 1e-4; tries++) {
        CHECK(tries < 100);
        for (size_t k = 0; k < nx; k++) xd[k] = x[k] = 2 * cr_philox_uniform(&rng) - 1;
        for (size_t k = 0; k < nw; k++) wd[k] = w[k] = 2 * cr_philox_uniform(&rng) - 1;
        for (int k = 0; k < O; k++) bd[k] = b[k] = 2 * cr_philox_uniform(&rng) - 1;
        ref_relu_layer_loss(xd, wd, bd, c, B, I, O, &mz);
    }
    float *y = floats(ny), *dz = floats(ny), *dx = floats(nx), *dw = floats(nw), *db = floats(O);
    cr_cpu_linear_relu_forward(x, w, b, y, B, I, O);
    cr_cpu_relu_backward(y, c, dz, ny);
    cr_cpu_linear_backward(dz, x, w, dx, dw, db, B, I, O);
    relu_fd_check("dx", xd, dx, nx, xd, wd, bd, c, B, I, O);
    relu_fd_check("dw", wd, dw, nw, xd, wd, bd, c, B, I, O);
    relu_fd_check("db", bd, db, (size_t)O, xd, wd, bd, c, B, I, O);
    free(x), free(w), free(b), free(c), free(xd), free(wd), free(bd), free(y), free(dz), free(dx),
        free(dw), free(db);
}

static void test_relu(void) {
    relu_specials();
    relu_large();
    /* Edge shapes and CleanRL's CartPole Q-network (4 -> 120 -> 84 -> 2). */
    static const int shapes[][3] = {{1, 1, 1},   {1, 4, 120}, {7, 3, 5},   {32, 4, 120},
                                    {32, 120, 84}, {33, 84, 2}, {5, 70, 130}, {13, 64, 1}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        linear_relu_case(shapes[s][0], shapes[s][1], shapes[s][2]);
    /* Large enough to fork: the same bits with 1, 2 and 3 threads. */
    {
        int B = 301, I = 200, O = 70;
        float *x = uniform_floats((size_t)B * I, -1, 1), *w = uniform_floats((size_t)O * I, -1, 1);
        float *b = uniform_floats(O, -1, 1), *y[3];
        for (int k = 0; k < 3; k++) {
            y[k] = floats((size_t)B * O);
            cr_cpu_set_threads(k + 1);
            cr_cpu_linear_relu_forward(x, w, b, y[k], B, I, O);
        }
        cr_cpu_set_threads(0);
        for (int k = 1; k < 3; k++)
            CHECK_MSG(bits_equal(y[0], y[k], (size_t)B * O), "linear_relu, %d threads", k + 1);
        for (int k = 0; k < 3; k++) free(y[k]);
        free(x), free(w), free(b);
    }
    relu_layer_grad_case(1, 3, 2);
    relu_layer_grad_case(6, 5, 9);
    relu_layer_grad_case(9, 12, 7);
}

/* ---- dqn loss ------------------------------------------------------------------------------ */

typedef struct dqn_batch {
    int B, A;
    float *q, *rewards, *next_t, *next_o, *weights; /* (B, A), (B), (B, A), (B, A), (B) */
    int32_t *actions;                               /* (B) */
    uint8_t *term;                                  /* (B) */
} dqn_batch;

typedef struct dqn_cfg {
    float gamma;
    int double_dqn, huber, weighted;
} dqn_cfg;

/* Random minibatch, about a third of the rows terminated. With `ties` the next-state values
 * come from {-1, 0, 1}, so rows of next_q_online tie on their maximum and the targets at the
 * tied actions differ. */
static dqn_batch dqn_random_batch(int B, int A, int ties) {
    size_t n = (size_t)B * A;
    dqn_batch d = {B,
                   A,
                   uniform_floats(n, -3, 3),
                   uniform_floats(B, -1, 1),
                   uniform_floats(n, -3, 3),
                   uniform_floats(n, -3, 3),
                   uniform_floats(B, 0.1f, 1),
                   malloc((size_t)B * sizeof(int32_t)),
                   malloc((size_t)B)};
    CHECK(d.actions != NULL && d.term != NULL);
    for (int b = 0; b < B; b++) {
        d.actions[b] = (int32_t)(cr_philox_next_u32(&rng) % (uint32_t)A);
        d.term[b] = cr_philox_uniform(&rng) < 0.33f;
    }
    if (ties)
        for (size_t k = 0; k < n; k++) {
            d.next_o[k] = floorf(3 * cr_philox_uniform(&rng)) - 1;
            d.next_t[k] = floorf(3 * cr_philox_uniform(&rng)) - 1;
        }
    return d;
}

static void dqn_free(dqn_batch *d) {
    free(d->q), free(d->rewards), free(d->next_t), free(d->next_o), free(d->weights),
        free(d->actions), free(d->term);
}

/* The loss in double at online Q-values q (B, A), as dqn.py writes it. Fills st and delta (B)
 * unless NULL. */
static double ref_dqn_loss(const dqn_batch *d, const double *q, const dqn_cfg *c,
                           cr_dqn_loss_stats *st, double *delta) {
    int B = d->B, A = d->A;
    cr_dqn_loss_stats s = {0};
    for (int b = 0; b < B; b++) {
        const float *nt = d->next_t + (size_t)b * A, *no = d->next_o + (size_t)b * A;
        double v = nt[first_argmax(c->double_dqn ? no : nt, A)];
        double target = d->term[b] ? d->rewards[b] : d->rewards[b] + (double)c->gamma * v;
        double qa = q[(size_t)b * A + d->actions[b]], del = qa - target, z = fabs(del);
        double l = c->huber ? (z < 1 ? 0.5 * del * del : z - 0.5) : del * del;
        double w = c->weighted ? d->weights[b] : 1.0;
        s.loss += w * l / B;
        s.q_mean += qa / B;
        s.td_abs_mean += z / B;
        if (delta) delta[b] = del;
    }
    if (st) *st = s;
    return s.loss;
}

static void dqn_run(const dqn_batch *d, const dqn_cfg *c, float *dq, float *td,
                    cr_dqn_loss_stats *st) {
    cr_cpu_dqn_loss(d->q, d->actions, d->rewards, d->term, d->next_t,
                    c->double_dqn ? d->next_o : NULL, c->weighted ? d->weights : NULL, c->gamma,
                    c->double_dqn, c->huber, dq, td, st, d->B, d->A);
}

/* Moves q at the taken actions at least `gap` away from the Huber kink |delta| = 1. */
static void dqn_avoid_kinks(dqn_batch *d, const dqn_cfg *c, double gap) {
    int B = d->B, A = d->A;
    double *q = doubles((size_t)B * A), *delta = doubles(B);
    for (int b = 0; b < B; b++) {
        for (int tries = 0;; tries++) {
            CHECK(tries < 1000);
            for (int k = 0; k < B * A; k++) q[k] = d->q[k];
            ref_dqn_loss(d, q, c, NULL, delta);
            if (fabs(fabs(delta[b]) - 1) > gap) break;
            d->q[(size_t)b * A + d->actions[b]] = -3 + 6 * cr_philox_uniform(&rng);
        }
    }
    free(q), free(delta);
}

/* dq against central differences of ref_dqn_loss, td_error and the stats against the reference;
 * dq exactly 0 off the taken actions. */
static void dqn_check_against_reference(const dqn_batch *d, const dqn_cfg *c) {
    int B = d->B, A = d->A;
    size_t n = (size_t)B * A;
    float *dq = floats(n), *td = floats(B);
    cr_dqn_loss_stats st, rs;
    dqn_run(d, c, dq, td, &st);
    double *q = doubles(n), *delta = doubles(B);
    for (size_t k = 0; k < n; k++) q[k] = d->q[k];
    ref_dqn_loss(d, q, c, &rs, delta);
    CHECK_CLOSE("loss", st.loss, rs.loss, 1e-6, 1e-5);
    CHECK_CLOSE("q_mean", st.q_mean, rs.q_mean, 1e-6, 1e-6);
    CHECK_CLOSE("td_abs_mean", st.td_abs_mean, rs.td_abs_mean, 1e-6, 1e-5);
    for (int b = 0; b < B; b++) CHECK_CLOSE("td_error", td[b], delta[b], 4e-6, 1e-6);

    const double h = 1e-4;
    for (size_t k = 0; k < n; k++) {
        double keep = q[k];
        q[k] = keep + h;
        double up = ref_dqn_loss(d, q, c, NULL, NULL);
        q[k] = keep - h;
        double down = ref_dqn_loss(d, q, c, NULL, NULL);
        q[k] = keep;
        if ((int)(k % A) != d->actions[k / A])
            CHECK_MSG(dq[k] == 0.0f, "dq[%zu] = %g off the taken action", k, (double)dq[k]);
        CHECK_MSG(fabs(dq[k] - (up - down) / (2 * h)) <= 1e-5 / B + 1e-5 * fabs(dq[k]),
                  "dq[%zu] = %.9g, finite difference %.9g (B=%d A=%d double %d huber %d "
                  "weighted %d)",
                  k, (double)dq[k], (up - down) / (2 * h), B, A, c->double_dqn, c->huber,
                  c->weighted);
    }
    free(dq), free(td), free(q), free(delta);
}

/* Hand-computed minibatch, exact in float. gamma 0.5, A = 3.
 *   row 0: a = 1, q = 2, r = 1, next_q_online = [1, 3, 3] (a tie), next_q_target = [0, 5, 7]:
 *          vanilla target 1 + 0.5 * 7 = 4.5, delta -2.5;
 *          double DQN takes the first tied action, 1: target 1 + 0.5 * 5 = 3.5, delta -1.5.
 *   row 1: terminated, a = 0, q = 1, r = 0.75, next values NaN and infinite (selected away):
 *          target 0.75, delta 0.25. */
static void dqn_hand_case(void) {
    float q[6] = {0.5f, 2.0f, -1.0f, 1.0f, 0.25f, 0.0f}, r[2] = {1.0f, 0.75f};
    float nt[6] = {0.0f, 5.0f, 7.0f, NAN, INFINITY, 0.0f};
    float no[6] = {1.0f, 3.0f, 3.0f, INFINITY, NAN, -INFINITY}, w[2] = {2.0f, 0.5f};
    int32_t a[2] = {1, 0};
    uint8_t term[2] = {0, 1};
    float dq[6], td[2];
    cr_dqn_loss_stats st;
    const struct {
        int dbl, huber, weighted;
        double loss, td0, td_abs, g0, g1;
    } cases[] = {
        /* huber: l = 1.5 - 0.5 and 0.5 * 0.25^2; gradient clamp(delta, -1, 1) / B */
        {1, 1, 0, (1.0 + 0.03125) / 2, -1.5, (1.5 + 0.25) / 2, -0.5, 0.125},
        {0, 1, 0, (2.0 + 0.03125) / 2, -2.5, (2.5 + 0.25) / 2, -0.5, 0.125},
        /* mse: l = delta^2, gradient 2 delta / B, times the weights */
        {0, 0, 0, (6.25 + 0.0625) / 2, -2.5, (2.5 + 0.25) / 2, -2.5, 0.25},
        {0, 0, 1, (2 * 6.25 + 0.5 * 0.0625) / 2, -2.5, (2.5 + 0.25) / 2, -5.0, 0.125},
        {1, 0, 1, (2 * 2.25 + 0.5 * 0.0625) / 2, -1.5, (1.5 + 0.25) / 2, -3.0, 0.125},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_cpu_dqn_loss(q, a, r, term, nt, no, cases[i].weighted ? w : NULL, 0.5f, cases[i].dbl,
                        cases[i].huber, dq, td, &st, 2, 3);
        const float want[6] = {0.0f, (float)cases[i].g0, 0.0f, (float)cases[i].g1, 0.0f, 0.0f};
        for (int k = 0; k < 6; k++)
            CHECK_MSG(dq[k] == want[k], "hand case %zu: dq[%d] = %.9g, want %.9g", i, k,
                      (double)dq[k], (double)want[k]);
        CHECK_MSG(st.loss == cases[i].loss, "hand case %zu: loss %.17g, want %.17g", i, st.loss,
                  cases[i].loss);
        CHECK(td[0] == (float)cases[i].td0 && td[1] == 0.25f);
        CHECK(st.q_mean == 1.5 && st.td_abs_mean == cases[i].td_abs);
    }
    /* Huber exactly at |delta| = 1: loss 0.5, gradient +-1 / B (both sides of the kink agree). */
    float q1[4] = {1.0f, 9.0f, 9.0f, -1.0f}, r1[2] = {0.0f, 0.0f}, n1[4] = {0, 0, 0, 0};
    int32_t a1[2] = {0, 1};
    uint8_t t1[2] = {1, 1};
    float dq1[4];
    cr_cpu_dqn_loss(q1, a1, r1, t1, n1, NULL, NULL, 0.99f, 0, 1, dq1, NULL, &st, 2, 2);
    CHECK(dq1[0] == 0.5f && dq1[1] == 0.0f && dq1[2] == 0.0f && dq1[3] == -0.5f);
    CHECK(st.loss == 0.5 && st.td_abs_mean == 1.0);
}

static void test_dqn_loss(void) {
    dqn_hand_case();
    static const int shapes[][2] = {{1, 2}, {1, 7}, {5, 2}, {32, 7}, {64, 2}, {33, 4}, {128, 6}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int flags = 0; flags < 16; flags++) {
            dqn_cfg c = {0.99f, flags & 1, (flags >> 1) & 1, (flags >> 2) & 1};
            dqn_batch d = dqn_random_batch(shapes[s][0], shapes[s][1], flags >> 3);
            if (c.huber) dqn_avoid_kinks(&d, &c, 1e-3);
            dqn_check_against_reference(&d, &c);
            dqn_free(&d);
        }

    /* Options that must not change anything: all-one weights vs NULL; td_error NULL; a
     * terminated row's next values, however bad. (Outside double DQN next_q_online is NULL.) */
    for (int A = 2; A <= 7; A += 5) {
        int B = 48;
        size_t n = (size_t)B * A;
        dqn_batch d = dqn_random_batch(B, A, 0);
        float *dq = floats(n), *dq2 = floats(n), *td = floats(B), *td2 = floats(B);
        for (int b = 0; b < B; b++) d.weights[b] = 1.0f;
        for (int flags = 0; flags < 4; flags++) {
            dqn_cfg c = {0.99f, flags & 1, flags >> 1, 0}, cw = c;
            cw.weighted = 1;
            cr_dqn_loss_stats s1, s2;
            dqn_run(&d, &c, dq, td, &s1);
            dqn_run(&d, &cw, dq2, NULL, &s2);
            CHECK(bits_equal(dq, dq2, n) && s1.loss == s2.loss && s1.q_mean == s2.q_mean);

            float *nt = floats(n), *no = floats(n);
            memcpy(nt, d.next_t, n * sizeof *nt), memcpy(no, d.next_o, n * sizeof *no);
            for (int b = 0; b < B; b++)
                if (d.term[b])
                    for (int j = 0; j < A; j++)
                        d.next_t[b * A + j] = j % 2 ? NAN : INFINITY,
                                         d.next_o[b * A + j] = j % 2 ? -INFINITY : NAN;
            dqn_run(&d, &c, dq2, td2, &s2);
            CHECK(bits_equal(dq, dq2, n) && bits_equal(td, td2, B) && s1.loss == s2.loss &&
                  isfinite(s2.loss));
            memcpy(d.next_t, nt, n * sizeof *nt), memcpy(d.next_o, no, n * sizeof *no);
            free(nt), free(no);
        }
        free(dq), free(dq2), free(td), free(td2);
        dqn_free(&d);
    }
}

/* ---- epsilon-greedy ------------------------------------------------------------------------- */

static void egreedy_check(const float *q, const float *ue, const float *ua, float eps,
                          const int32_t *act, int B, int A) {
    for (int b = 0; b < B; b++) {
        int want;
        if (ue[b] < eps) {
            want = (int)floorf(ua[b] * (float)A);
            if (want > A - 1) want = A - 1;
        } else {
            want = first_argmax(q + (size_t)b * A, A);
        }
        CHECK_MSG(act[b] == want && act[b] >= 0 && act[b] < A,
                  "row %d (eps %g, u_explore %.9g, u_action %.9g): action %d, want %d", b,
                  (double)eps, (double)ue[b], (double)ua[b], act[b], want);
    }
}

static void test_egreedy(void) {
    cr_rng_stream s;
    cr_rng_stream_seed(&s, 2024, 3);
    static const int shapes[][2] = {{1, 2}, {1, 7}, {64, 2}, {257, 7}, {100, 18}};
    static const float eps[] = {0.0f, 0.05f, 0.3f, 1.0f};
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
        int B = shapes[sh][0], A = shapes[sh][1];
        float *q = uniform_floats((size_t)B * A, -1, 1), *ue = floats(B), *ua = floats(B);
        int32_t *act = malloc((size_t)B * sizeof *act);
        CHECK(act != NULL);
        /* Every other row from {-1, 0, 1}: ties on the maximum. */
        for (int b = 0; b < B; b += 2)
            for (int j = 0; j < A; j++) q[b * A + j] = floorf(3 * cr_philox_uniform(&rng)) - 1;
        cr_cpu_uniform(&s, ue, B);
        cr_cpu_uniform(&s, ua, B);
        for (size_t e = 0; e < sizeof eps / sizeof eps[0]; e++) {
            /* u_explore == epsilon exploits (strict <). */
            float keep = B > 3 ? ue[3] : 0.0f;
            if (B > 3 && eps[e] > 0.0f && eps[e] < 1.0f) ue[3] = eps[e];
            cr_cpu_epsilon_greedy(q, ue, ua, eps[e], act, B, A);
            egreedy_check(q, ue, ua, eps[e], act, B, A);
            int explored = 0;
            for (int b = 0; b < B; b++) explored += ue[b] < eps[e];
            if (eps[e] == 0.0f) CHECK(explored == 0);
            if (eps[e] == 1.0f) CHECK(explored == B);
            if (B > 3) ue[3] = keep;
        }
        free(q), free(ue), free(ua), free(act);
    }

    /* u_action at the ends: 0 gives action 0; the largest uniform below 1 and 1 itself give
     * A - 1; the middle of each action's interval gives that action. */
    for (int A = 1; A <= 1000; A = A * 3 + 1) {
        float q[1] = {0.0f}, one = 1.0f, top = nextafterf(1.0f, 0.0f), zero = 0.0f;
        int32_t act;
        cr_cpu_epsilon_greedy(q, &zero, &zero, 1.0f, &act, 1, A);
        CHECK(act == 0);
        cr_cpu_epsilon_greedy(q, &zero, &top, 1.0f, &act, 1, A);
        CHECK_MSG(act == A - 1, "A=%d: u_action 1 - 2^-24 gives %d", A, act);
        cr_cpu_epsilon_greedy(q, &zero, &one, 1.0f, &act, 1, A);
        CHECK_MSG(act == A - 1, "A=%d: u_action 1 gives %d", A, act);
        for (int k = 0; k < A; k++) {
            float u = (float)((k + 0.5) / A);
            cr_cpu_epsilon_greedy(q, &zero, &u, 1.0f, &act, 1, A);
            CHECK_MSG(act == k, "A=%d: u_action %.9g gives %d, want %d", A, (double)u, act, k);
        }
    }

    /* CleanRL's defaults: start 1, end 0.05, exploration_fraction 0.5 of 500,000 steps. */
    const double D = 0.5 * 500000;
    CHECK(cr_linear_schedule(1.0, 0.05, D, 0) == 1.0);
    CHECK_CLOSE("half way", cr_linear_schedule(1.0, 0.05, D, D / 2), 0.525, 1e-15, 0);
    CHECK_CLOSE("at the end", cr_linear_schedule(1.0, 0.05, D, D), 0.05, 1e-15, 0);
    CHECK(cr_linear_schedule(1.0, 0.05, D, D + 1) == 0.05);
    CHECK(cr_linear_schedule(1.0, 0.05, D, 1e9) == 0.05);
    double prev = 2.0;
    for (double t = 0; t <= 2 * D; t += 997) {
        double e = cr_linear_schedule(1.0, 0.05, D, t);
        CHECK_MSG(e <= prev && e >= 0.05, "t=%g: %.17g after %.17g", t, e, prev);
        CHECK_CLOSE("schedule", e, fmax(1.0 - 0.95 * t / D, 0.05), 1e-15, 0);
        prev = e;
    }
    /* No exploration phase: end_e at once. */
    CHECK(cr_linear_schedule(1.0, 0.05, 0.0, 0) == 0.05);
    CHECK(cr_linear_schedule(1.0, 0.05, 0.0, 10) == 0.05);
    CHECK(cr_linear_schedule(1.0, 0.05, -5.0, 10) == 0.05);
}

/* ---- polyak ------------------------------------------------------------------------------- */

/* target = tau online + (1 - tau) target against double, and bit for bit PyTorch's float32
 * evaluation (tau and 1 - tau rounded to float, each product and the sum rounded). */
static void polyak_case(size_t n, double tau) {
    float *t = uniform_floats(n, -2, 2), *o = uniform_floats(n, -2, 2), *t0 = floats(n);
    if (n) memcpy(t0, t, n * sizeof *t);
    cr_cpu_polyak(t, o, n, tau);
    const float a = (float)tau, c = (float)(1.0 - tau);
    for (size_t i = 0; i < n; i++) {
        double want = tau * o[i] + (1.0 - tau) * t0[i];
        double tol = 4 * 0x1p-24 * (fabs(tau * o[i]) + fabs((1.0 - tau) * t0[i])) + 1e-30;
        CHECK_MSG(fabs(t[i] - want) <= tol, "tau %g, [%zu]: %.9g, want %.9g", tau, i,
                  (double)t[i], want);
        float torch = a * o[i] + c * t0[i];
        CHECK_MSG(t[i] == torch, "tau %g, [%zu]: %.9g, PyTorch's float32 gives %.9g", tau, i,
                  (double)t[i], (double)torch);
        if (tau == 0.0) CHECK(t[i] == t0[i]);
    }
    free(t), free(o), free(t0);
}

static void test_polyak(void) {
    static const size_t sizes[] = {0, 1, 7, 1000, 10627};
    static const double taus[] = {0.005, 0.5, 0.9, 0.0};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t k = 0; k < sizeof taus / sizeof taus[0]; k++) polyak_case(sizes[s], taus[k]);

    /* tau = 1 (a hard update) copies bit for bit: -0, NaN, infinities, denormals. */
    const float on[] = {-0.0f, NAN, 1e-40f, -INFINITY, 3.0f, 0.0f};
    float tg[] = {INFINITY, 1.0f, NAN, -0.0f, -INFINITY, -0.0f};
    enum { N = sizeof on / sizeof on[0] };
    cr_cpu_polyak(tg, on, N, 1.0);
    CHECK(bits_equal(tg, on, N));

    /* Above the fork threshold: the same bits with 1, 2 and 3 threads. */
    size_t n = (1u << 19) + 3;
    float *o = uniform_floats(n, -1, 1), *t0 = uniform_floats(n, -1, 1), *t[3];
    for (int k = 0; k < 3; k++) {
        t[k] = floats(n);
        memcpy(t[k], t0, n * sizeof *t0);
        cr_cpu_set_threads(k + 1);
        cr_cpu_polyak(t[k], o, n, 0.005);
    }
    cr_cpu_set_threads(0);
    for (int k = 1; k < 3; k++) CHECK_MSG(bits_equal(t[0], t[k], n), "polyak, %d threads", k + 1);
    cr_cpu_polyak(t[0], o, n, 1.0);
    CHECK(bits_equal(t[0], o, n));
    for (int k = 0; k < 3; k++) free(t[k]);
    free(o), free(t0);
}

/* ---- main ---------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
    static const struct {
        const char *name;
        void (*run)(void);
    } tests[] = {
        {"relu", test_relu},
        {"dqn_loss", test_dqn_loss},
        {"egreedy", test_egreedy},
        {"polyak", test_polyak},
    };
    cr_philox_seed(&rng, 2025, 0);
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
