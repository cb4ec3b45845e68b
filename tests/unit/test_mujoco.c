/* Gymnasium's MuJoCo tasks (src/env/mujoco/), each of the four: its def in the registry; a pool
 * of it stepped on 1 and on 4 threads giving the same bytes (autoresets included); a state
 * saved mid-episode and restored continuing alike, with other envs stepped on the thread in
 * between; the state check's refusals; the reset noise within Gymnasium's ranges; actions
 * outside the box stepped as the box's edge. Prints each task's microseconds per env step on
 * one thread (resets included). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "env/env.h"
#include "env/env_pool.h"
#include "env/mujoco/mujoco_task.h"

static const char *const ids[CR_MUJOCO_TASKS] = {CR_MUJOCO_IDS};
static const int obs_dims[CR_MUJOCO_TASKS] = {17, 11, 17, 105};
static const int action_dims[CR_MUJOCO_TASKS] = {6, 3, 6, 8};

/* Action k of env i at step t: uniform in [-scale, scale], from its own Philox stream. */
static void draw_actions(float *a, int n, int dim, int t, float scale) {
    cr_philox_state r;
    cr_philox_seed(&r, 99, (uint64_t)t);
    for (int i = 0; i < n * dim; i++) a[i] = scale * (2.0f * cr_philox_uniform(&r) - 1.0f);
}

/* An env's state, with room for any task's (a check of another task reads its own size). */
#define STATE_ROOM 4096
static void *state_alloc(const cudarl_env_def *d) {
    CHECK(d->state_bytes <= STATE_ROOM);
    void *s = aligned_alloc(64, STATE_ROOM);
    CHECK(s);
    memset(s, 0, STATE_ROOM);
    return s;
}

/* ---- the registry ----------------------------------------------------------------------- */

static void test_registry(void) {
    for (int t = 0; t < CR_MUJOCO_TASKS; t++) {
        const cudarl_env_def *d = cr_env_def_find(ids[t]);
        const cr_env_info *info = cr_env_info_find(ids[t]);
        CHECK_MSG(d && info && info->def == d, "%s is not registered", ids[t]);
        CHECK(!strcmp(cr_mujoco_defs[t]->id, ids[t]) && !cr_env_find(ids[t]));
        CHECK(info->caps == 0 && info->action_dim == action_dims[t] && info->num_actions == 0);
        CHECK(info->obs_dim == obs_dims[t] && d->obs_dtype == CUDARL_OBS_F32);
        CHECK(d->max_episode_steps == 1000 && d->step_box && !d->step && d->state_check);
        for (int k = 0; k < d->action_dim; k++)
            CHECK(d->action_low[k] == -1.0f && d->action_high[k] == 1.0f);
        CHECK(!cr_mujoco_left_out(ids[t]) && cr_env_check_built(ids[t], "") == CUDARL_OK);
        int listed = 0;
        for (const char *const *n = cudarl_env_names(); *n; n++) listed += !strcmp(*n, ids[t]);
        CHECK_MSG(listed == 1, "%s listed %d times", ids[t], listed);
    }
    CHECK(cr_mujoco_defs[CR_MUJOCO_TASKS] == NULL);
}

/* ---- a pool on 1 and on 4 threads ------------------------------------------------------- */

/* Everything a pool run wrote, step after step, and its final states. */
typedef struct pool_run {
    float *obs, *fin, *rew; /* (steps, N, D), (steps, N, D), (steps, N) */
    uint8_t *flags;         /* (steps, N, 2) terminated, truncated */
    unsigned char *states;  /* (N, state_bytes) after the last step */
} pool_run;

static void pool_record(const cudarl_env_def *d, int n, int threads, int steps, pool_run *r) {
    const int D = d->obs_shape[0], K = d->action_dim;
    r->obs = calloc((size_t)steps * n * D, sizeof(float));
    r->fin = calloc((size_t)steps * n * D, sizeof(float));
    r->rew = calloc((size_t)steps * n, sizeof(float));
    r->flags = calloc((size_t)steps * n * 2, 1);
    r->states = malloc((size_t)n * d->state_bytes);
    const size_t ob = (size_t)n * D * sizeof(float);
    float *obs = malloc(ob), *fin = malloc(ob);
    float *rew = malloc((size_t)n * sizeof(float)), *act = malloc((size_t)n * K * sizeof(float));
    uint8_t *term = malloc((size_t)n), *trunc = malloc((size_t)n);
    CHECK(r->obs && r->fin && r->rew && r->flags && r->states && obs && fin && rew && act && term &&
          trunc);
    cr_env_pool pool;
    cr_env_pool_config cfg = {.num_envs = n, .num_threads = threads, .num_groups = 1};
    CHECK_OK(cr_env_pool_init(&pool, d, &cfg, NULL));
    cr_env_pool_outputs out = {obs, rew, term, trunc, fin};
    cr_env_pool_set_outputs(&pool, &out);
    cr_env_pool_reset(&pool, 5);
    for (int t = 0; t < steps; t++) {
        draw_actions(act, n, K, t, 1.25f);
        for (int i = 0; i < n * D; i++) fin[i] = -7.0f;
        cr_env_pool_step(&pool, act);
        memcpy(r->obs + (size_t)t * n * D, obs, (size_t)n * D * sizeof(float));
        memcpy(r->fin + (size_t)t * n * D, fin, (size_t)n * D * sizeof(float));
        memcpy(r->rew + (size_t)t * n, rew, (size_t)n * sizeof(float));
        for (int i = 0; i < n; i++)
            r->flags[((size_t)t * n + i) * 2] = term[i],
                       r->flags[((size_t)t * n + i) * 2 + 1] = trunc[i];
    }
    for (int i = 0; i < n; i++)
        memcpy(r->states + (size_t)i * d->state_bytes, cr_env_pool_state(&pool, i), d->state_bytes);
    cr_env_pool_free(&pool);
    free(obs), free(fin), free(rew), free(act), free(term), free(trunc);
}

static void pool_run_free(pool_run *r) {
    free(r->obs), free(r->fin), free(r->rew), free(r->flags), free(r->states);
}

/* The first byte where two runs differ, named. */
static void pool_compare(const char *id, const char *what, const void *a, const void *b,
                         size_t bytes) {
    const unsigned char *x = a, *y = b;
    for (size_t i = 0; i < bytes; i++)
        CHECK_MSG(x[i] == y[i], "%s: 1 and 4 threads differ in %s at byte %zu", id, what, i);
}

static void test_threads(int t) {
    const cudarl_env_def *d = cr_env_def_find(ids[t]);
    const int n = 6, steps = 150, D = d->obs_shape[0];
    pool_run one, four;
    pool_record(d, n, 1, steps, &one);
    pool_record(d, n, 4, steps, &four);
    pool_compare(ids[t], "obs", one.obs, four.obs, (size_t)steps * n * D * sizeof(float));
    pool_compare(ids[t], "final_obs", one.fin, four.fin, (size_t)steps * n * D * sizeof(float));
    pool_compare(ids[t], "reward", one.rew, four.rew, (size_t)steps * n * sizeof(float));
    pool_compare(ids[t], "flags", one.flags, four.flags, (size_t)steps * n * 2);
    pool_compare(ids[t], "states", one.states, four.states, (size_t)n * d->state_bytes);
    long ends = 0;
    for (size_t i = 0; i < (size_t)steps * n * 2; i++) ends += one.flags[i];
    printf("test_mujoco: %s: %d envs, %d steps alike on 1 and 4 threads (%ld episodes ended)\n",
           ids[t], n, steps, ends);
    pool_run_free(&one), pool_run_free(&four);
}

/* ---- a state saved and restored --------------------------------------------------------- */

/* Steps env `s` of d `steps` times from action stream `first` on (small actions, so that an
 * episode lasts), resetting it where one ends; writes the outputs to obs (steps, D), rew
 * (steps), term (steps). */
static void run_env(const cudarl_env_def *d, void *s, int first, int steps, float *obs,
                    float *rew, uint8_t *term) {
    const int D = d->obs_shape[0];
    float a[CUDARL_ACTION_DIM_MAX], o[128];
    for (int t = 0; t < steps; t++) {
        draw_actions(a, 1, d->action_dim, first + t, 0.3f);
        d->step_box(s, a, obs + (size_t)t * D, &rew[t], &term[t]);
        if (term[t]) d->reset(s, o);
    }
}

static void test_save_restore(int t) {
    const cudarl_env_def *d = cr_env_def_find(ids[t]);
    const cudarl_env_def *other = cr_env_def_find(ids[(t + 1) % CR_MUJOCO_TASKS]);
    const int D = d->obs_shape[0], steps = 40;
    void *a = state_alloc(d), *b = state_alloc(d), *c = state_alloc(d), *o = state_alloc(other);
    float obs[128], *obs_a = malloc(steps * D * sizeof(float));
    float *obs_b = malloc(steps * D * sizeof(float));
    float *junk = malloc(8 * 128 * sizeof(float)), rew_a[40], rew_b[40], rew_j[8];
    uint8_t term_a[40], term_b[40], term_j[8];
    CHECK(obs_a && obs_b && junk);
    d->seed(a, 11, 3);
    d->reset(a, obs);
    run_env(d, a, 0, 7, obs_a, rew_a, term_a); /* mid-episode */
    memcpy(b, a, d->state_bytes);              /* the checkpoint */
    d->seed(c, 12, 0), d->reset(c, obs);       /* other envs on this thread's scratch data */
    other->seed(o, 13, 0), other->reset(o, obs);
    run_env(d, c, 100, 5, junk, rew_j, term_j);
    run_env(other, o, 200, 5, junk, rew_j, term_j);
    run_env(d, a, 7, steps, obs_a, rew_a, term_a);
    run_env(other, o, 300, 3, junk, rew_j, term_j);
    run_env(d, b, 7, steps, obs_b, rew_b, term_b);
    CHECK_MSG(!memcmp(obs_a, obs_b, steps * D * sizeof(float)) &&
              !memcmp(rew_a, rew_b, sizeof rew_a) && !memcmp(term_a, term_b, sizeof term_a),
              "%s: the restored state continues differently", ids[t]);
    CHECK_MSG(!memcmp(a, b, d->state_bytes), "%s: the states differ after the continuation",
              ids[t]);
    free(a), free(b), free(c), free(o), free(obs_a), free(obs_b), free(junk);
}

/* ---- the state check -------------------------------------------------------------------- */

/* def's check of `s` refuses it with a message containing `want`. */
static void expect_refused(const cudarl_env_def *d, const void *s, const char *want) {
    char why[200] = "";
    CHECK_MSG(d->state_check(s, why, sizeof why) != 0, "%s: a state with %s passed", d->id, want);
    CHECK_MSG(strstr(why, want), "%s: refusal '%s' lacks '%s'", d->id, why, want);
    int32_t elapsed = 3;
    char full[300] = "";
    CHECK(cr_env_check_state(d, s, elapsed, full, sizeof full) == 1 && strstr(full, want));
}

static void test_state_check(int t) {
    const cudarl_env_def *d = cr_env_def_find(ids[t]);
    const cudarl_env_def *next = cr_env_def_find(ids[(t + 1) % CR_MUJOCO_TASKS]);
    const cr_mj_task *task = cr_mj_tasks[t];
    void *s = state_alloc(d), *bad = state_alloc(d);
    float obs[3 * 128], rew[3];
    uint8_t term[3];
    char why[200], want[120];
    d->seed(s, 1, 0), d->reset(s, obs);
    run_env(d, s, 0, 3, obs, rew, term);
    CHECK_MSG(d->state_check(s, why, sizeof why) == 0, "%s: a stepped state refused: %s", ids[t],
              why);
    CHECK(cr_env_check_state(d, s, 999, why, sizeof why) == 0);
    CHECK(cr_env_check_state(d, s, 1000, why, sizeof why) == 2 && strstr(why, "0..999"));
    snprintf(want, sizeof want, "its tag is 0x%08x, expected 0x%08x (a %s state)", task->tag,
             cr_mj_tasks[(t + 1) % CR_MUJOCO_TASKS]->tag, next->id);
    expect_refused(next, s, want);
    const int nq = task->nq, nv = task->nv;
    struct {
        int field;     /* -1 nphys, -2 rng.used, -3 track_xy[1], else phys[field] */
        double value;
        const char *want;
    } cases[] = {
        {-1, 5, "its MuJoCo state's size is 5"},
        {-2, 9, "rng.used is 9, expected 0..4"},
        {-3, NAN, "track_xy[1] is nan"},
        {0, -1.0, "time is -1, expected a number in [0, inf]"},
        {1 + 3, NAN, "qpos[3] is nan, expected a finite number"},
        {1 + nq, INFINITY, "qvel[0] is inf"},
        {1 + nq + nv + 2, -INFINITY, "qacc_warmstart[2] is -inf"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        memcpy(bad, s, d->state_bytes);
        cr_mj_state *m = bad;
        if (cases[k].field == -1) m->nphys = (uint32_t)cases[k].value;
        else if (cases[k].field == -2) m->rng.used = (int)cases[k].value;
        else if (cases[k].field == -3) m->track_xy[1] = cases[k].value;
        else m->phys[cases[k].field] = cases[k].value;
        expect_refused(d, bad, cases[k].want);
    }
    free(s), free(bad);
}

/* ---- reset noise ------------------------------------------------------------------------ */

/* Gymnasium's reset_model: qpos0 + U(-c, c) and qvel U(-c, c) or c * N(0, 1), with c the
 * task's reset_noise_scale; time and warm start 0; the first observation the state's. */
static void test_reset_noise(int t) {
    const cudarl_env_def *d = cr_env_def_find(ids[t]);
    const int resets = 400;
    void *s = state_alloc(d);
    float obs[128];
    double lo = HUGE_VAL, hi = -HUGE_VAL, sum = 0, sum2 = 0, vlo = HUGE_VAL, vhi = -HUGE_VAL;
    long nvel = 0;
    cr_mujoco_view v;
    for (int i = 0; i < resets; i++) {
        d->seed(s, 21, (uint64_t)i);
        d->reset(s, obs);
        cr_mujoco_view_state(s, &v);
        CHECK(v.time == 0.0);
        for (int j = 0; j < v.nv; j++) CHECK(v.warm[j] == 0.0);
        for (int j = 0; j < v.nq; j++) {
            double u = v.qpos[j] - v.qpos0[j];
            CHECK_MSG(fabs(u) <= v.noise * (1 + 1e-9), "%s: qpos[%d] - qpos0 = %g, outside "
                      "[-%g, %g]", ids[t], j, u, v.noise, v.noise);
            lo = fmin(lo, u), hi = fmax(hi, u);
        }
        for (int j = 0; j < v.nv; j++, nvel++) {
            double q = v.qvel[j];
            CHECK_MSG(v.qvel_normal || fabs(q) <= v.noise, "%s: qvel[%d] = %g outside [-%g, %g]",
                      ids[t], j, q, v.noise, v.noise);
            sum += q, sum2 += q * q, vlo = fmin(vlo, q), vhi = fmax(vhi, q);
        }
        int skip = t == 3 ? 2 : 1; /* the observation leaves out qpos[0] (Ant: and qpos[1]) */
        CHECK(obs[0] == (float)v.qpos[skip] && obs[v.nq - skip] == (float)v.qvel[0]);
    }
    CHECK_MSG(lo < -0.95 * v.noise && hi > 0.95 * v.noise, "%s: qpos noise spans [%g, %g] of "
              "[-%g, %g]", ids[t], lo, hi, v.noise, v.noise);
    double mean = sum / nvel, std = sqrt(sum2 / nvel - mean * mean);
    double want_std = v.qvel_normal ? v.noise : v.noise / sqrt(3.0);
    CHECK_MSG(fabs(mean) < 4 * want_std / sqrt((double)nvel) && fabs(std / want_std - 1) < 0.06,
              "%s: qvel noise has mean %g and std %g over %ld draws, expected 0 and %g", ids[t],
              mean, std, nvel, want_std);
    if (!v.qvel_normal)
        CHECK_MSG(vlo < -0.95 * v.noise && vhi > 0.95 * v.noise, "%s: qvel spans [%g, %g]",
                  ids[t], vlo, vhi);
    free(s);
}

/* ---- clipping and speed ----------------------------------------------------------------- */

/* Actions beyond the box step as its edge: the pool clips them (Gymnasium's ClipAction). */
static void test_clip(int t) {
    const cudarl_env_def *d = cr_env_def_find(ids[t]);
    const int K = d->action_dim, D = d->obs_shape[0];
    float big[CUDARL_ACTION_DIM_MAX], edge[CUDARL_ACTION_DIM_MAX], obs[2][128], fin[128], rew[2];
    uint8_t term[2], trunc[2];
    for (int k = 0; k < K; k++) big[k] = k % 2 ? -3.5f : 2.0f, edge[k] = k % 2 ? -1.0f : 1.0f;
    for (int r = 0; r < 2; r++) {
        cr_env_pool pool;
        cr_env_pool_config cfg = {.num_envs = 1, .num_threads = 1, .num_groups = 1};
        CHECK_OK(cr_env_pool_init(&pool, d, &cfg, NULL));
        cr_env_pool_outputs out = {obs[r], &rew[r], &term[r], &trunc[r], fin};
        cr_env_pool_set_outputs(&pool, &out);
        cr_env_pool_reset(&pool, 8);
        cr_env_pool_step(&pool, r ? edge : big);
        cr_env_pool_free(&pool);
    }
    CHECK_MSG(!memcmp(obs[0], obs[1], (size_t)D * sizeof(float)) && rew[0] == rew[1],
              "%s: an action beyond the box steps unlike the box's edge", ids[t]);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One env on this thread: microseconds per step of random actions, resets included. */
static void report_speed(int t) {
    const cudarl_env_def *d = cr_env_def_find(ids[t]);
    const int steps = 400;
    void *s = state_alloc(d);
    float obs[128], a[CUDARL_ACTION_DIM_MAX], rew;
    uint8_t term;
    d->seed(s, 4, 0), d->reset(s, obs);
    double t0 = now();
    for (int i = 0; i < steps; i++) {
        draw_actions(a, 1, d->action_dim, i, 1.0f);
        d->step_box(s, a, obs, &rew, &term);
        if (term) d->reset(s, obs);
    }
    printf("test_mujoco: %s: %.1f us per step on one thread\n", ids[t], (now() - t0) / steps * 1e6);
    free(s);
}

int main(void) {
    test_registry();
    for (int t = 0; t < CR_MUJOCO_TASKS; t++) {
        test_state_check(t);
        test_reset_noise(t);
        test_save_restore(t);
        test_clip(t);
        test_threads(t);
        report_speed(t);
    }
    printf("test_mujoco: ok\n");
    return 0;
}
