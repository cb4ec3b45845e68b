/* CartPole-v1 on the CPU: transitions against hand-computed values and a textbook formula,
 * termination at the thresholds, truncation at 500 steps, same-step autoreset, per-env streams,
 * and stepping ranges of the batch. */
#include <string.h>

#include "check.h"
#include "env/cartpole/cartpole.h"

#define PI 3.14159265358979323846
#define THETA_THRESHOLD (12 * 2 * PI / 360)
#define SENTINEL (-1234.5f) /* fills final_obs rows that must stay untouched */

/* A batch of envs and its step buffers, all in one arena. */
typedef struct batch {
    cr_arena arena;
    cr_cartpole env;
    int32_t *actions;    /* (N) */
    float *obs;          /* (N, 4) */
    float *reward;       /* (N) */
    uint8_t *terminated; /* (N) */
    uint8_t *truncated;  /* (N) */
    float *final_obs;    /* (N, 4), SENTINEL until an env ends */
} batch;

/* Plans, allocates and resets n envs with `seed`. */
static void batch_init(batch *b, int n, uint64_t seed) {
    size_t un = (size_t)n, row = CR_CARTPOLE_OBS_DIM * sizeof(float);
    cr_plan p;
    cr_plan_init(&p);
    int ienv = cr_plan_add(&p, "env", cr_cartpole_bytes(n));
    int iact = cr_plan_add(&p, "actions", un * sizeof(int32_t));
    int iobs = cr_plan_add(&p, "obs", un * row);
    int irew = cr_plan_add(&p, "reward", un * sizeof(float));
    int iterm = cr_plan_add(&p, "terminated", un);
    int itrunc = cr_plan_add(&p, "truncated", un);
    int ifin = cr_plan_add(&p, "final_obs", un * row);
    CHECK_OK(cr_arena_alloc(&b->arena, &p, CR_MEM_HOST));
    void *mem = cr_arena_get(&b->arena, ienv);
    cr_cartpole_init(&b->env, n, mem);
    const void *parts[] = {b->env.state, b->env.elapsed, b->env.rng};
    for (int k = 0; k < 3; k++) {
        const unsigned char *q = parts[k];
        CHECK_MSG((uintptr_t)q % 64 == 0, "sub-buffer %d not 64-byte aligned", k);
        CHECK((unsigned char *)mem <= q && q < (unsigned char *)mem + cr_cartpole_bytes(n));
    }
    b->actions = cr_arena_get(&b->arena, iact);
    b->obs = cr_arena_get(&b->arena, iobs);
    b->reward = cr_arena_get(&b->arena, irew);
    b->terminated = cr_arena_get(&b->arena, iterm);
    b->truncated = cr_arena_get(&b->arena, itrunc);
    b->final_obs = cr_arena_get(&b->arena, ifin);
    for (size_t k = 0; k < un * CR_CARTPOLE_OBS_DIM; k++) b->final_obs[k] = SENTINEL;
    cr_cartpole_reset(&b->env, seed, b->obs);
}

static void batch_step(batch *b) {
    cr_cartpole_step(&b->env, b->actions, b->obs, b->reward, b->terminated, b->truncated,
                     b->final_obs);
}

static const double *batch_state(const batch *b, int i) {
    return b->env.state + (size_t)i * CR_CARTPOLE_OBS_DIM;
}

/* Next state from Florian (2007), "Correct equations for the dynamics of the cart-pole system",
 * eqs. 23-24 without friction: written apart from cartpole.c's (Gymnasium's) operation order. */
static void ref_step(const double s[4], int action, double out[4]) {
    const double g = 9.8, mc = 1.0, mp = 0.1, l = 0.5, tau = 0.02;
    double f = action == 1 ? 10.0 : -10.0, th = s[2], w = s[3];
    double num = g * sin(th) + cos(th) * (-f - mp * l * w * w * sin(th)) / (mc + mp);
    double thacc = num / (l * (4.0 / 3.0 - mp * cos(th) * cos(th) / (mc + mp)));
    double xacc = (f + mp * l * (w * w * sin(th) - thacc * cos(th))) / (mc + mp);
    out[0] = s[0] + tau * s[1];
    out[1] = s[1] + tau * xacc;
    out[2] = th + tau * w;
    out[3] = w + tau * thacc;
}

/* Requires float row `got` (4) to be the float32 of double row `want` (4) up to `atol`. */
static void check_row(const char *what, const float *got, const double *want, double atol) {
    for (int j = 0; j < CR_CARTPOLE_OBS_DIM; j++) {
        char name[96];
        snprintf(name, sizeof name, "%s[%d]", what, j);
        CHECK_CLOSE(name, got[j], (float)want[j], atol, 0);
    }
}

/* From the upright rest state force +-10 N gives xacc = +-4400/451, thetaacc = -+600/41. */
static void test_hand_computed(void) {
    batch b;
    batch_init(&b, 2, 1);
    const double rest[4] = {0, 0, 0, 0};
    cr_cartpole_set_state(&b.env, 0, rest, 0);
    cr_cartpole_set_state(&b.env, 1, rest, 0);
    b.actions[0] = 1, b.actions[1] = 0;
    batch_step(&b);
    const double right[4] = {0, 0.02 * 4400 / 451, 0, -0.02 * 600 / 41};
    for (int j = 0; j < 4; j++) {
        CHECK_CLOSE("push right from rest", batch_state(&b, 0)[j], right[j], 1e-15, 0);
        CHECK_CLOSE("push left from rest", batch_state(&b, 1)[j], -right[j], 1e-15, 0);
    }
    cr_arena_free(&b.arena);
}

/* Assorted states, both actions: the double state against ref_step, obs its float32 exactly. */
static void test_transitions(void) {
    static const double states[][4] = {
        {0.01, -0.02, 0.03, -0.04}, {-1.0, 1.5, -0.15, 2.0},
        {2.0, -0.7, 0.2, -1.3},     {0.3, 0.0, -0.2, 3.1},
    };
    batch b;
    batch_init(&b, 1, 1);
    for (size_t k = 0; k < sizeof states / sizeof states[0]; k++) {
        for (int a = 0; a < 2; a++) {
            double want[4];
            ref_step(states[k], a, want);
            cr_cartpole_set_state(&b.env, 0, states[k], 0);
            b.actions[0] = a;
            batch_step(&b);
            CHECK_MSG(!b.terminated[0] && !b.truncated[0], "state %zu action %d ended", k, a);
            for (int j = 0; j < 4; j++)
                CHECK_CLOSE("state vs Florian's equations", batch_state(&b, 0)[j], want[j], 1e-12,
                            1e-12);
            for (int j = 0; j < 4; j++) CHECK(b.obs[j] == (float)batch_state(&b, 0)[j]);
            CHECK(b.reward[0] == 1.0f && b.env.elapsed[0] == 1);
        }
    }
    cr_arena_free(&b.arena);
}

/* One step of action 1 from s with `elapsed` steps done: checks both flags and, for an env that
 * ended, final_obs = the stepped state and obs a fresh reset; otherwise final_obs untouched. */
static void check_step(const char *what, double x, double x_dot, double theta, int32_t elapsed,
                       int want_term, int want_trunc) {
    const double s[4] = {x, x_dot, theta, 0.0};
    double next[4];
    ref_step(s, 1, next);
    batch b;
    batch_init(&b, 1, 5);
    cr_cartpole_set_state(&b.env, 0, s, elapsed);
    b.actions[0] = 1;
    batch_step(&b);
    CHECK_MSG(b.terminated[0] == want_term && b.truncated[0] == want_trunc,
              "%s: expected terminated %d truncated %d, got %d %d", what, want_term, want_trunc,
              b.terminated[0], b.truncated[0]);
    CHECK_MSG(b.reward[0] == 1.0f, "%s: reward %g", what, (double)b.reward[0]);
    if (want_term || want_trunc) {
        check_row(what, b.final_obs, next, 1e-6);
        CHECK_MSG(b.env.elapsed[0] == 0, "%s: elapsed %d after the end", what, b.env.elapsed[0]);
        for (int j = 0; j < 4; j++) CHECK(fabsf(b.obs[j]) <= 0.05f);
    } else {
        check_row(what, b.obs, next, 1e-6);
        for (int j = 0; j < 4; j++)
            CHECK_MSG(b.final_obs[j] == SENTINEL, "%s: final_obs written", what);
    }
    cr_arena_free(&b.arena);
}

/* Terminated iff x < -2.4, x > 2.4, theta < -12 deg or theta > 12 deg after the step. With
 * zero velocities x and theta stay bit-identical, so the boundary values themselves are tested. */
static void test_termination(void) {
    const double thr = THETA_THRESHOLD;
    check_step("x = 2.4", 2.4, 0, 0, 0, 0, 0);
    check_step("x just above 2.4", nextafter(2.4, 3.0), 0, 0, 0, 1, 0);
    check_step("x just below 2.4", nextafter(2.4, 0.0), 0, 0, 0, 0, 0);
    check_step("x = -2.4", -2.4, 0, 0, 0, 0, 0);
    check_step("x just below -2.4", nextafter(-2.4, -3.0), 0, 0, 0, 1, 0);
    check_step("theta = 12 deg", 0, 0, thr, 0, 0, 0);
    check_step("theta just above 12 deg", 0, 0, nextafter(thr, 1.0), 0, 1, 0);
    check_step("theta = -12 deg", 0, 0, -thr, 0, 0, 0);
    check_step("theta just below -12 deg", 0, 0, nextafter(-thr, -1.0), 0, 1, 0);
    check_step("x 2.39 moving out at 0.6", 2.39, 0.6, 0, 0, 1, 0);
    check_step("x 2.39 moving out at 0.4", 2.39, 0.4, 0, 0, 0, 0);
}

/* Truncated on the 500th step whatever the state; both flags when that step also terminates. */
static void test_truncation(void) {
    check_step("balanced, step 499", 0, 0, 0, 498, 0, 0);
    check_step("balanced, step 500", 0, 0, 0, 499, 0, 1);
    check_step("falls on step 500", nextafter(2.4, 3.0), 0, 0, 499, 1, 1);
    check_step("falls on step 499", nextafter(2.4, 3.0), 0, 0, 498, 1, 0);
}

/* A balancing controller from rest: no flag for 499 steps, truncated alone on the 500th. */
static void test_full_episode(void) {
    batch b;
    batch_init(&b, 1, 3);
    cr_cartpole_set_state(&b.env, 0, (const double[4]){0, 0, 0, 0}, 0);
    for (int t = 1; t <= CR_CARTPOLE_MAX_STEPS; t++) {
        const double *s = batch_state(&b, 0);
        b.actions[0] = s[2] + 0.5 * s[3] + 0.05 * s[0] + 0.1 * s[1] > 0;
        batch_step(&b);
        int last = t == CR_CARTPOLE_MAX_STEPS;
        CHECK_MSG(!b.terminated[0] && b.truncated[0] == last, "step %d: terminated %d truncated %d",
                  t, b.terminated[0], b.truncated[0]);
        CHECK_MSG(b.env.elapsed[0] == (last ? 0 : t), "step %d: elapsed %d", t, b.env.elapsed[0]);
    }
    cr_arena_free(&b.arena);
}

/* The reset state env i draws next: Gymnasium's low + (high - low) * u from stream i, rounded
 * after the product as numpy does (two statements, so that no compiler fuses them into an fma). */
static void expected_reset(cr_philox_state *rng, double out[4]) {
    for (int j = 0; j < 4; j++) {
        double scaled = (0.05 - -0.05) * cr_philox_uniform_f64(rng);
        out[j] = -0.05 + scaled;
    }
}

/* Env 1 falls: final_obs keeps its last obs, obs is the next draw of its stream, elapsed 0;
 * envs 0 and 2 continue with their final_obs rows untouched. */
static void test_autoreset(void) {
    batch b;
    batch_init(&b, 3, 7);
    cr_philox_state rng;
    double first[4], second[4], falling[4] = {nextafter(2.4, 3.0), 0.5, 0.1, -0.3}, last[4];
    cr_philox_seed(&rng, 7, 1);
    expected_reset(&rng, first);
    expected_reset(&rng, second);
    for (int j = 0; j < 4; j++) CHECK(batch_state(&b, 1)[j] == first[j]);
    cr_cartpole_set_state(&b.env, 1, falling, 17);
    ref_step(falling, 0, last);
    b.actions[0] = 0, b.actions[1] = 0, b.actions[2] = 1;
    batch_step(&b);
    CHECK(!b.terminated[0] && b.terminated[1] && !b.terminated[2]);
    CHECK(!b.truncated[0] && !b.truncated[1] && !b.truncated[2]);
    check_row("final_obs of the fallen env", b.final_obs + 4, last, 1e-6);
    for (int j = 0; j < 4; j++) {
        CHECK_MSG(batch_state(&b, 1)[j] == second[j], "reset state[%d]: expected %.17g, got %.17g",
                  j, second[j], batch_state(&b, 1)[j]);
        CHECK(b.obs[4 + j] == (float)second[j] && b.obs[4 + j] >= -0.05f && b.obs[4 + j] < 0.05f);
        CHECK_MSG(b.final_obs[j] == SENTINEL && b.final_obs[8 + j] == SENTINEL,
                  "final_obs row of an env that did not end was written");
    }
    CHECK(b.env.elapsed[0] == 1 && b.env.elapsed[1] == 0 && b.env.elapsed[2] == 1);
    for (int i = 0; i < 3; i++) CHECK(b.reward[i] == 1.0f);
    cr_arena_free(&b.arena);
}

/* Same seed: identical batches; each env its own stream: different reset states. */
static void test_streams(void) {
    enum { N = 6 };
    batch a, b, c;
    batch_init(&a, N, 42);
    batch_init(&b, N, 42);
    batch_init(&c, N, 43);
    CHECK(!memcmp(a.env.state, b.env.state, N * 4 * sizeof(double)));
    CHECK(!memcmp(a.obs, b.obs, N * 4 * sizeof(float)));
    CHECK(memcmp(a.env.state, c.env.state, N * 4 * sizeof(double)));
    for (int i = 0; i < N; i++) {
        cr_philox_state rng;
        double want[4];
        cr_philox_seed(&rng, 42, (uint64_t)i);
        expected_reset(&rng, want);
        for (int j = 0; j < 4; j++) {
            CHECK_MSG(batch_state(&a, i)[j] == want[j], "env %d state[%d]: expected %.17g, got "
                      "%.17g", i, j, want[j], batch_state(&a, i)[j]);
            CHECK(want[j] >= -0.05 && want[j] < 0.05 && a.obs[i * 4 + j] == (float)want[j]);
        }
        for (int k = 0; k < i; k++)
            CHECK_MSG(memcmp(batch_state(&a, i), batch_state(&a, k), 4 * sizeof(double)),
                      "envs %d and %d reset to the same state", k, i);
    }
    cr_arena_free(&a.arena);
    cr_arena_free(&b.arena);
    cr_arena_free(&c.arena);
}

/* Random actions for a whole batch: reward always 1, flags consistent with the state,
 * elapsed counting the episode, reset obs in range. Returns the number of episodes ended. */
static int rollout_checks(batch *b, cr_philox_state *actions_rng, int steps) {
    int n = b->env.num_envs, ended = 0;
    int32_t len[64] = {0};
    CHECK(n <= 64);
    for (int t = 0; t < steps; t++) {
        for (int i = 0; i < n; i++) b->actions[i] = (int32_t)(cr_philox_next_u32(actions_rng) & 1);
        batch_step(b);
        for (int i = 0; i < n; i++) {
            const float *o = b->obs + i * 4, *f = b->final_obs + i * 4;
            CHECK_MSG(b->reward[i] == 1.0f, "step %d env %d reward %g", t, i, (double)b->reward[i]);
            CHECK(!b->truncated[i]); /* random actions never last 500 steps */
            len[i] = b->terminated[i] ? 0 : len[i] + 1;
            CHECK_MSG(b->env.elapsed[i] == len[i], "step %d env %d elapsed %d, expected %d", t, i,
                      b->env.elapsed[i], len[i]);
            if (b->terminated[i]) {
                ended++;
                CHECK(fabsf(f[0]) > 2.4f - 1e-6f || fabsf(f[2]) > (float)THETA_THRESHOLD - 1e-6f);
                for (int j = 0; j < 4; j++) CHECK(o[j] >= -0.05f && o[j] < 0.05f);
            } else {
                CHECK(fabsf(o[0]) <= 2.4f && fabsf(o[2]) <= (float)THETA_THRESHOLD + 1e-6f);
            }
        }
    }
    return ended;
}

static void test_rollout(void) {
    batch b;
    cr_philox_state rng;
    batch_init(&b, 16, 11);
    cr_philox_seed(&rng, 99, 0);
    int ended = rollout_checks(&b, &rng, 3000);
    CHECK_MSG(ended > 16 * 3000 / 40, "only %d episodes ended in 3000 steps of 16 envs", ended);
    cr_arena_free(&b.arena);
}

/* Stepping [0,3), [3,3), [3,6), [6,7) equals stepping all 7, byte for byte, through resets;
 * a range writes only its own rows. */
static void test_ranges(void) {
    enum { N = 7, STEPS = 2000 };
    static const int cuts[] = {0, 3, 3, 6, 7};
    batch a, b;
    batch_init(&a, N, 9);
    batch_init(&b, N, 9);
    cr_philox_state rng;
    cr_philox_seed(&rng, 5, 0);
    for (int t = 0; t < STEPS; t++) {
        for (int i = 0; i < N; i++)
            a.actions[i] = b.actions[i] = (int32_t)(cr_philox_next_u32(&rng) & 1);
        batch_step(&a);
        for (int i = 0; i < N * 4; i++) b.obs[i] = SENTINEL;
        for (size_t k = 0; k + 1 < sizeof cuts / sizeof cuts[0]; k++) {
            cr_cartpole_step_range(&b.env, cuts[k], cuts[k + 1], b.actions, b.obs, b.reward,
                                   b.terminated, b.truncated, b.final_obs);
            for (int i = cuts[k + 1] * 4; i < N * 4; i++)
                CHECK_MSG(b.obs[i] == SENTINEL, "range [%d,%d) wrote obs element %d", cuts[k],
                          cuts[k + 1], i);
        }
        CHECK_MSG(!memcmp(a.obs, b.obs, N * 4 * sizeof(float)), "obs differ at step %d", t);
        CHECK_MSG(!memcmp(a.final_obs, b.final_obs, N * 4 * sizeof(float)), "final_obs differ "
                  "at step %d", t);
        CHECK(!memcmp(a.reward, b.reward, N * sizeof(float)));
        CHECK(!memcmp(a.terminated, b.terminated, N) && !memcmp(a.truncated, b.truncated, N));
    }
    CHECK(!memcmp(a.env.state, b.env.state, N * 4 * sizeof(double)));
    CHECK(!memcmp(a.env.elapsed, b.env.elapsed, N * sizeof(int32_t)));
    cr_arena_free(&a.arena);
    cr_arena_free(&b.arena);
}

int main(void) {
    test_hand_computed();
    test_transitions();
    test_termination();
    test_truncation();
    test_full_episode();
    test_autoreset();
    test_streams();
    test_rollout();
    test_ranges();
    printf("test_cartpole: ok\n");
    return 0;
}
