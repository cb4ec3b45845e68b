/* The env thread pool and the env registry: every env stepped once per step with its own
 * action across shard and group boundaries (N not divisible by T, N < T, uneven groups),
 * same-step autoreset, truncation (with and without termination), final_obs rows, begin/wait of
 * groups in any order with hooks, CartPole through the pool bit for bit equal to the batch for
 * any thread and group count, pools of a batch's halves (first_env) stepping as the whole
 * batch's envs, a bad action aborting with a message, cudarl_env_register
 * refusing each bad field with its message (a continuous env's action_dim, box and step
 * functions too), and a continuous env's actions clipped into its box. */
#define _POSIX_C_SOURCE 200809L
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "env/cartpole/cartpole.h"
#include "env/env.h"
#include "env/env_pool.h"

#define SENTINEL (-1234.5f)

/* ---- Probe-v0: an env whose observations say which env, episode and step wrote them -------- */

enum { PROBE_MAX_STEPS = 7, PROBE_END = 2, PROBE_ACTIONS = 3 };

/* One probe env: action 2 terminates; every other action continues. */
typedef struct probe {
    uint32_t index;   /* the env's number in its batch */
    uint32_t episode; /* seed, then +1 at every reset */
    int32_t t;        /* steps into the episode (the env's own count) */
} probe;

static void probe_seed(void *state, uint64_t seed, uint64_t index) {
    probe *p = state;
    p->index = (uint32_t)index;
    p->episode = (uint32_t)seed;
}

/* obs (4) f32: index, episode, t, action (-1 after a reset). */
static void probe_reset(void *state, void *obs) {
    probe *p = state;
    float *o = obs;
    p->episode++, p->t = 0;
    o[0] = (float)p->index, o[1] = (float)p->episode, o[2] = 0.0f, o[3] = -1.0f;
}

static void probe_step(void *state, int32_t action, void *obs, float *reward,
                       uint8_t *terminated) {
    probe *p = state;
    float *o = obs;
    p->t++;
    o[0] = (float)p->index, o[1] = (float)p->episode, o[2] = (float)p->t, o[3] = (float)action;
    *reward = (float)(p->index * 10 + (uint32_t)action);
    *terminated = action == PROBE_END;
}

/* The same env with obs (3, 1, 2) u8: index, episode, t, action (255 after a reset), 0xAB, 0xCD
 * (mod 256). */
static void probe_reset_u8(void *state, void *obs) {
    probe *p = state;
    uint8_t *o = obs;
    p->episode++, p->t = 0;
    const uint8_t row[6] = {(uint8_t)p->index, (uint8_t)p->episode, 0, 255, 0xAB, 0xCD};
    memcpy(o, row, sizeof row);
}

static void probe_step_u8(void *state, int32_t action, void *obs, float *reward,
                          uint8_t *terminated) {
    probe *p = state;
    uint8_t *o = obs;
    p->t++;
    const uint8_t row[6] = {(uint8_t)p->index, (uint8_t)p->episode, (uint8_t)p->t,
                            (uint8_t)action, 0xAB, 0xCD};
    memcpy(o, row, sizeof row);
    *reward = (float)(p->index * 10 + (uint32_t)action);
    *terminated = (uint8_t)(action == PROBE_END ? 7 : 0); /* any non-zero means terminated */
}

static const cudarl_env_def probe_def = {
    .struct_size = sizeof(cudarl_env_def),
    .id = "Probe-v0", .obs_rank = 1, .obs_shape = {4, 1, 1}, .obs_dtype = CUDARL_OBS_F32,
    .num_actions = PROBE_ACTIONS, .max_episode_steps = PROBE_MAX_STEPS, .solved_return = 1.0,
    .state_bytes = sizeof(probe), .seed = probe_seed, .reset = probe_reset, .step = probe_step,
};

static const cudarl_env_def probe_u8_def = {
    .struct_size = sizeof(cudarl_env_def),
    .id = "ProbeU8-v0", .obs_rank = 3, .obs_shape = {3, 1, 2}, .obs_dtype = CUDARL_OBS_U8,
    .num_actions = PROBE_ACTIONS, .max_episode_steps = PROBE_MAX_STEPS, .solved_return = 1.0,
    .state_bytes = sizeof(probe), .seed = probe_seed, .reset = probe_reset_u8,
    .step = probe_step_u8,
};

/* ---- a pool with its output buffers ------------------------------------------------------- */

typedef struct pooled {
    cr_env_pool pool;
    int n;
    size_t obs_elems;
    int32_t *actions;    /* (N) */
    void *obs;           /* (N, obs_elems) */
    float *reward;       /* (N) */
    uint8_t *terminated; /* (N) */
    uint8_t *truncated;  /* (N) */
    void *final_obs;     /* (N, obs_elems); f32 rows start as SENTINEL, u8 rows as 0x5A */
} pooled;

static void pooled_init(pooled *p, const cudarl_env_def *def, const cr_env_pool_config *cfg,
                        uint64_t seed) {
    size_t n = (size_t)cfg->num_envs, ob = cr_env_def_obs_bytes(def);
    p->n = cfg->num_envs;
    p->obs_elems = cr_env_def_obs_elems(def);
    CHECK_OK(cr_env_pool_init(&p->pool, def, cfg, NULL));
    p->actions = calloc(n, sizeof(int32_t));
    p->obs = calloc(n, ob);
    p->reward = calloc(n, sizeof(float));
    p->terminated = calloc(n, 1);
    p->truncated = calloc(n, 1);
    p->final_obs = malloc(n * ob);
    CHECK(p->actions && p->obs && p->reward && p->terminated && p->truncated && p->final_obs);
    if (def->obs_dtype == CUDARL_OBS_F32)
        for (size_t k = 0; k < n * p->obs_elems; k++) ((float *)p->final_obs)[k] = SENTINEL;
    else
        memset(p->final_obs, 0x5A, n * ob);
    cr_env_pool_set_outputs(&p->pool, &(cr_env_pool_outputs){p->obs, p->reward, p->terminated,
                                                              p->truncated, p->final_obs});
    cr_env_pool_reset(&p->pool, seed);
}

static void pooled_free(pooled *p) {
    cr_env_pool_free(&p->pool);
    free(p->actions), free(p->obs), free(p->reward), free(p->terminated), free(p->truncated);
    free(p->final_obs);
}

/* Steps every group: begun in a random order, waited for in another (G > 1), or at once. */
static void pooled_step_shuffled(pooled *p, cr_philox_state *rng) {
    int g = p->pool.num_groups, order[CR_ENV_POOL_MAX_GROUPS];
    if (g == 1 || cr_philox_next_u32(rng) % 4 == 0) {
        cr_env_pool_step(&p->pool, p->actions);
        return;
    }
    for (int pass = 0; pass < 2; pass++) {
        for (int k = 0; k < g; k++) order[k] = k;
        for (int k = g - 1; k > 0; k--) {
            int j = (int)(cr_philox_next_u32(rng) % (uint32_t)(k + 1)), tmp = order[k];
            order[k] = order[j], order[j] = tmp;
        }
        for (int k = 0; k < g; k++) {
            if (pass == 0) cr_env_pool_step_begin(&p->pool, order[k], p->actions);
            else cr_env_pool_step_wait(&p->pool, order[k]);
        }
    }
}

/* ---- the probe model ------------------------------------------------------------------------ */

/* What one probe env's obs row should read: index, episode, t, action. */
static void probe_expect(const pooled *p, int i, const float want[4], const void *rows,
                         const char *what, int step) {
    if (p->pool.def->obs_dtype == CUDARL_OBS_F32) {
        const float *got = (const float *)rows + (size_t)i * 4;
        for (int j = 0; j < 4; j++)
            CHECK_MSG(got[j] == want[j], "step %d env %d %s[%d]: expected %g, got %g", step, i,
                      what, j, (double)want[j], (double)got[j]);
    } else {
        const uint8_t *got = (const uint8_t *)rows + (size_t)i * 6;
        const uint8_t w[6] = {(uint8_t)(int)want[0], (uint8_t)(int)want[1],
                              (uint8_t)(int)want[2], (uint8_t)(want[3] < 0 ? 255 : (int)want[3]),
                              0xAB, 0xCD};
        for (int j = 0; j < 6; j++)
            CHECK_MSG(got[j] == w[j], "step %d env %d %s byte %d: expected %d, got %d", step, i,
                      what, j, w[j], got[j]);
    }
}

/* Runs `steps` random steps of a probe pool, checking every output of every env against the
 * model: its own action reached it (reward), episodes and step counts, termination on action 2,
 * truncation at 7 steps (both on a terminating 7th step), final_obs rows only of ended envs. */
static void probe_run(const char *name, const cudarl_env_def *def, cr_env_pool_config cfg,
                      int steps) {
    enum { SEED = 100 };
    pooled p;
    pooled_init(&p, def, &cfg, SEED);
    int n = cfg.num_envs, both = 0, truncs = 0, terms = 0;
    float(*final_want)[4] = malloc((size_t)n * sizeof *final_want);
    int32_t *ep = malloc((size_t)n * sizeof *ep), *t = malloc((size_t)n * sizeof *t);
    CHECK(final_want && ep && t);
    for (int i = 0; i < n; i++) {
        ep[i] = SEED + 1, t[i] = 0;
        probe_expect(&p, i, (float[4]){(float)i, (float)ep[i], 0, -1}, p.obs, "reset obs", 0);
        CHECK(p.pool.elapsed[i] == 0);
    }
    cr_philox_state rng;
    cr_philox_seed(&rng, 7, 0);
    for (int s = 1; s <= steps; s++) {
        for (int i = 0; i < n; i++) {
            uint32_t u = cr_philox_next_u32(&rng) % 8;
            p.actions[i] = u == 0 ? PROBE_END : (int32_t)(u & 1);
        }
        pooled_step_shuffled(&p, &rng);
        for (int i = 0; i < n; i++) {
            int a = p.actions[i], term = a == PROBE_END, trunc = ++t[i] >= PROBE_MAX_STEPS;
            CHECK_MSG(p.reward[i] == (float)(i * 10 + a), "%s step %d env %d: reward %g, expected "
                      "%d (stepped with another env's action, or not at all)", name, s, i,
                      (double)p.reward[i], i * 10 + a);
            CHECK_MSG(p.terminated[i] == term && p.truncated[i] == trunc, "%s step %d env %d: "
                      "terminated %d truncated %d, expected %d %d", name, s, i, p.terminated[i],
                      p.truncated[i], term, trunc);
            if (term || trunc) {
                const float last[4] = {(float)i, (float)ep[i], (float)t[i], (float)a};
                memcpy(final_want[i], last, sizeof last);
                probe_expect(&p, i, final_want[i], p.final_obs, "final_obs", s);
                ep[i]++, t[i] = 0;
                probe_expect(&p, i, (float[4]){(float)i, (float)ep[i], 0, -1}, p.obs, "obs", s);
                both += term && trunc, truncs += trunc, terms += term;
            } else {
                probe_expect(&p, i, (float[4]){(float)i, (float)ep[i], (float)t[i], (float)a},
                             p.obs, "obs", s);
                if (ep[i] == SEED + 1) { /* not ended yet: the row still holds its fill */
                    if (def->obs_dtype == CUDARL_OBS_F32)
                        CHECK_MSG(((float *)p.final_obs)[i * 4] == SENTINEL, "%s step %d: "
                                  "final_obs row %d written before its episode ended", name, s, i);
                } else {
                    probe_expect(&p, i, final_want[i], p.final_obs, "final_obs kept", s);
                }
            }
            CHECK_MSG(p.pool.elapsed[i] == t[i], "%s step %d env %d: elapsed %d, expected %d",
                      name, s, i, p.pool.elapsed[i], t[i]);
        }
    }
    CHECK_MSG(terms > 0 && truncs > 0 && (steps < 200 || both > 0), "%s: %d terminations, %d "
              "truncations, %d both in %d steps", name, terms, truncs, both, steps);
    free(final_want), free(ep), free(t);
    pooled_free(&p);
}

static void test_probe_shards(void) {
    static const int sizes_1_6[] = {1, 6}, sizes_5_1_7[] = {5, 1, 7}, sizes_3_1[] = {3, 1};
    probe_run("N 10, T 3", &probe_def, (cr_env_pool_config){10, 3, 1, NULL, 0, 0, 0, 0}, 300);
    probe_run("N 7, T 3, groups 1+6", &probe_def,
              (cr_env_pool_config){7, 3, 2, sizes_1_6, 0, 0, 0, 0}, 300);
    probe_run("N 2 < T 5", &probe_def, (cr_env_pool_config){2, 5, 1, NULL, 0, 0, 0, 0}, 300);
    probe_run("N 13, T 4, groups 5+1+7", &probe_def,
              (cr_env_pool_config){13, 4, 3, sizes_5_1_7, 0, 0, 0, 0}, 300);
    probe_run("N 64, T 1, 4 groups", &probe_def, (cr_env_pool_config){64, 1, 4, NULL, 0, 0, 0, 0},
              200);
    probe_run("N 9, T 2 caller idle, 3 groups", &probe_def,
              (cr_env_pool_config){9, 2, 3, NULL, 1, 0, 0, 0}, 300);
    probe_run("N 1, T 1 caller idle", &probe_def, (cr_env_pool_config){1, 1, 0, NULL, 1, 0, 0, 0},
              300);
    probe_run("N 31, T 3, 31 groups", &probe_def,
              (cr_env_pool_config){31, 3, CR_ENV_POOL_MAX_GROUPS, NULL, 0, 0, -1, 0}, 200);
    probe_run("N 101, T 6, 2 groups, no spin", &probe_def,
              (cr_env_pool_config){101, 6, 2, NULL, 0, 0, -1, 0}, 200);
    probe_run("u8 obs, N 4, T 3, groups 3+1", &probe_u8_def,
              (cr_env_pool_config){4, 3, 2, sizes_3_1, 0, 0, 0, 0}, 300);
    probe_run("u8 obs, N 33, T 2, pinned", &probe_u8_def,
              (cr_env_pool_config){33, 2, 1, NULL, 0, 1, 0, 0}, 200);
}

/* Group ranges as configured, the state block laid out in the caller's memory. */
static void test_layout(void) {
    static const int sizes[] = {5, 1, 7};
    cr_env_pool_config cfg = {13, 4, 3, sizes, 0, 0, 0, 0};
    size_t bytes = 0;
    CHECK_OK(cr_env_pool_plan(&probe_def, &cfg, &bytes));
    CHECK(bytes >= 13 * 64);
    unsigned char *mem = aligned_alloc(64, (bytes + 63) / 64 * 64);
    CHECK(mem);
    cr_env_pool pool;
    CHECK_OK(cr_env_pool_init(&pool, &probe_def, &cfg, mem));
    int want[][2] = {{0, 5}, {5, 6}, {6, 13}};
    for (int g = 0; g < 3; g++) {
        int b, e;
        cr_env_pool_group_range(&pool, g, &b, &e);
        CHECK_MSG(b == want[g][0] && e == want[g][1], "group %d: [%d, %d), expected [%d, %d)", g,
                  b, e, want[g][0], want[g][1]);
    }
    CHECK(pool.state_stride == 64);
    for (int i = 0; i < 13; i++) {
        unsigned char *s = cr_env_pool_state(&pool, i);
        CHECK((uintptr_t)s % 64 == 0 && s >= mem && s + 64 <= mem + bytes);
    }
    cr_env_pool_free(&pool);
    free(mem);
    cfg = (cr_env_pool_config){10, 3, 3, NULL, 0, 0, 0, 0}; /* even split: 3, 3, 4 */
    CHECK_OK(cr_env_pool_init(&pool, &probe_def, &cfg, NULL));
    for (int g = 0, b, e; g < 3; g++) {
        cr_env_pool_group_range(&pool, g, &b, &e);
        CHECK_MSG(b == 10 * g / 3 && e == 10 * (g + 1) / 3, "even group %d: [%d, %d)", g, b, e);
    }
    cr_env_pool_free(&pool);
}

/* Bad pool configurations return a message naming the field. */
static void test_config_errors(void) {
    static const int bad_sum[] = {3, 3}, zero[] = {6, 0};
    struct {
        cr_env_pool_config cfg;
        const char *want;
    } cases[] = {
        {{0, 1, 1, NULL, 0, 0, 0, 0}, "num_envs"},
        {{4, 0, 1, NULL, 0, 0, 0, 0}, "num_threads"},
        {{4, CR_ENV_POOL_MAX_THREADS + 1, 1, NULL, 0, 0, 0, 0}, "num_threads"},
        {{4, 2, 5, NULL, 0, 0, 0, 0}, "num_groups"},
        {{64, 2, CR_ENV_POOL_MAX_GROUPS + 1, NULL, 0, 0, 0, 0}, "num_groups"},
        {{4, 2, -1, NULL, 0, 0, 0, 0}, "num_groups"},
        {{7, 2, 2, bad_sum, 0, 0, 0, 0}, "group_sizes sum"},
        {{6, 2, 2, zero, 0, 0, 0, 0}, "group_sizes[1]"},
        {{4, 1, 1, NULL, 0, 0, 0, .first_env = -1}, "first_env is -1"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        size_t bytes;
        cr_env_pool pool;
        cudarl_status s = cr_env_pool_plan(&probe_def, &cases[k].cfg, &bytes);
        CHECK_MSG(s == CUDARL_ERR_INVALID_ARG && strstr(cudarl_last_error(), cases[k].want),
                  "case %zu: expected a message about '%s', got %s: %s", k, cases[k].want,
                  cudarl_status_name(s), cudarl_last_error());
        s = cr_env_pool_init(&pool, &probe_def, &cases[k].cfg, NULL);
        CHECK(s == CUDARL_ERR_INVALID_ARG && strstr(cudarl_last_error(), cases[k].want));
    }
    cudarl_env_def bad = probe_def; /* a def that never went through the registry */
    bad.num_actions = 0;
    cr_env_pool pool;
    cudarl_status s =
        cr_env_pool_init(&pool, &bad, &(cr_env_pool_config){4, 1, 1, NULL, 0, 0, 0, 0}, NULL);
    CHECK_MSG(s == CUDARL_ERR_INVALID_ARG && strstr(cudarl_last_error(), "env pool: env "
              "'Probe-v0': num_actions is 0"), "a bad def: %s", cudarl_last_error());
}

/* ---- CartPole: the pool of its def against the batch ---------------------------------------- */

/* A hook that holds the group's workers until the test says its actions have landed (as the GPU
 * path waits for a CUDA event), and counts the calls. */
typedef struct gate {
    atomic_int open[CR_ENV_POOL_MAX_GROUPS];
    atomic_int calls[CR_ENV_POOL_MAX_GROUPS];
} gate;

static void gate_wait(void *arg, int group) {
    gate *g = arg;
    atomic_fetch_add(&g->calls[group], 1);
    while (!atomic_load_explicit(&g->open[group], memory_order_acquire)) sched_yield();
}

/* A noisy balancing controller for even envs (their episodes reach the 500-step limit), random
 * actions for odd ones. */
static void cartpole_actions(const float *obs, int n, cr_philox_state *rng, int32_t *actions) {
    for (int i = 0; i < n; i++) {
        const float *s = obs + (size_t)i * 4;
        uint32_t u = cr_philox_next_u32(rng);
        int ctrl = s[2] + 0.5f * s[3] + 0.05f * s[0] + 0.1f * s[1] > 0;
        actions[i] = i % 2 == 0 && u % 64 != 0 ? ctrl : (int32_t)(u >> 8 & 1);
    }
}

static void check_same(const char *name, const pooled *p, const float *obs, const float *reward,
                       const uint8_t *term, const uint8_t *trunc, const float *final_obs,
                       int step) {
    size_t n = (size_t)p->n;
    CHECK_MSG(!memcmp(p->obs, obs, n * 16), "%s: obs differ from the batch at step %d", name,
              step);
    CHECK_MSG(!memcmp(p->reward, reward, n * 4), "%s: reward differs at step %d", name, step);
    CHECK_MSG(!memcmp(p->terminated, term, n), "%s: terminated differs at step %d", name, step);
    CHECK_MSG(!memcmp(p->truncated, trunc, n), "%s: truncated differs at step %d", name, step);
    CHECK_MSG(!memcmp(p->final_obs, final_obs, n * 16), "%s: final_obs differs at step %d", name,
              step);
}

/* 10,000 steps of 64 envs: the batch (cr_cartpole_step), a pool on 1 thread, one on 3 threads
 * with groups 40+24 stepped at once, and one on 4 spawned threads with 3 groups begun and
 * waited for interleaved, each group's workers held by a gate until its actions are written
 * after step_begin. All outputs equal bit for bit at every step, through terminations and
 * truncations. */
static void test_cartpole_equivalence(void) {
    enum { N = 64, STEPS = 10000, SEED = 2024 };
    static const int sizes[] = {40, 24};
    cr_plan plan;
    cr_plan_init(&plan);
    cr_plan_add(&plan, "env", cr_cartpole_bytes(N));
    cr_arena arena;
    CHECK_OK(cr_arena_alloc(&arena, &plan, CR_MEM_HOST));
    cr_cartpole batch;
    cr_cartpole_init(&batch, N, cr_arena_get(&arena, 0));
    float obs[N * 4], reward[N] = {0}, final_obs[N * 4];
    uint8_t term[N], trunc[N];
    int32_t actions[N];
    for (int k = 0; k < N * 4; k++) final_obs[k] = SENTINEL;
    cr_cartpole_reset(&batch, SEED, obs);

    const cudarl_env_def *def = cr_env_def_find("CartPole-v1");
    CHECK(def == cr_env_find("CartPole-v1")->def);
    pooled p1, p3, p4;
    pooled_init(&p1, def, &(cr_env_pool_config){N, 1, 1, NULL, 0, 0, 0, 0}, SEED);
    /* no spinning: 6 threads share this test's cores, and the futex path gets exercised */
    pooled_init(&p3, def, &(cr_env_pool_config){N, 3, 2, sizes, 0, 0, -1, 0}, SEED);
    pooled_init(&p4, def, &(cr_env_pool_config){N, 4, 3, NULL, 1, 0, -1, 0}, SEED);
    static gate gt;
    for (int g = 0; g < 3; g++) cr_env_pool_set_hook(&p4.pool, g, gate_wait, &gt);
    pooled *all[] = {&p1, &p3, &p4};
    const char *names[] = {"pool T=1", "pool T=3 G=2", "pool T=4 idle caller G=3 interleaved"};
    uint8_t none[N] = {0};
    for (int k = 0; k < 3; k++) check_same(names[k], all[k], obs, reward, none, none, final_obs, 0);

    cr_philox_state rng;
    cr_philox_seed(&rng, 31, 0);
    int truncs = 0, terms = 0;
    for (int s = 1; s <= STEPS; s++) {
        cartpole_actions(obs, N, &rng, actions);
        memcpy(p1.actions, actions, sizeof actions);
        memcpy(p3.actions, actions, sizeof actions);
        int first = s % 3, second = (s + 1) % 3, third = (s + 2) % 3;
        for (int g = 0; g < 3; g++) atomic_store(&gt.open[g], 0);
        cr_env_pool_step_begin(&p4.pool, first, p4.actions);
        cr_env_pool_step_begin(&p4.pool, second, p4.actions);
        cr_cartpole_step(&batch, actions, obs, reward, term, trunc, final_obs);
        cr_env_pool_step(&p1.pool, p1.actions);
        for (int g = 0; g < 3; g++) { /* the actions land, group by group */
            int b, e;
            cr_env_pool_group_range(&p4.pool, g, &b, &e);
            memcpy(p4.actions + b, actions + b, (size_t)(e - b) * sizeof actions[0]);
            atomic_store_explicit(&gt.open[g], 1, memory_order_release);
            if (g == 0) cr_env_pool_step_begin(&p4.pool, third, p4.actions);
        }
        cr_env_pool_step(&p3.pool, p3.actions);
        cr_env_pool_step_wait(&p4.pool, second);
        cr_env_pool_step_wait(&p4.pool, third);
        cr_env_pool_step_wait(&p4.pool, first);
        for (int k = 0; k < 3; k++) check_same(names[k], all[k], obs, reward, term, trunc,
                                               final_obs, s);
        for (int i = 0; i < N; i++) truncs += trunc[i], terms += term[i];
    }
    CHECK_MSG(truncs >= 20 && terms >= 1000, "only %d truncations and %d terminations", truncs,
              terms);
    for (int g = 0; g < 3; g++) /* 64 envs over 4 lanes: every lane has work in every group */
        CHECK_MSG(atomic_load(&gt.calls[g]) == 4 * STEPS, "group %d hook called %d times, "
                  "expected %d", g, atomic_load(&gt.calls[g]), 4 * STEPS);
    for (int k = 0; k < 3; k++) pooled_free(all[k]);
    cr_arena_free(&arena);
}

/* first_env (a data-parallel rank's share): pools of envs 0..3 and 4..7 (first_env 4) step
 * exactly as envs 0..7 of one pool, from the reset through episodes that end and restart. */
static void test_first_env(void) {
    enum { N = 8, HALF = N / 2, STEPS = 600, SEED = 77 };
    const cudarl_env_def *def = cr_env_def_find("CartPole-v1");
    pooled whole, lo, hi;
    pooled_init(&whole, def, &(cr_env_pool_config){N, 2, 1, NULL, 0, 0, -1, 0}, SEED);
    pooled_init(&lo, def, &(cr_env_pool_config){HALF, 1, 1, NULL, 0, 0, -1, 0}, SEED);
    pooled_init(&hi, def, &(cr_env_pool_config){HALF, 2, 2, NULL, 0, 0, -1, .first_env = HALF},
                SEED);
    const size_t row = 4 * sizeof(float);
    cr_philox_state rng;
    cr_philox_seed(&rng, 5, 0);
    int ends = 0;
    for (int s = 0; s <= STEPS; s++) {
        CHECK_MSG(!memcmp(lo.obs, whole.obs, HALF * row) &&
                  !memcmp(hi.obs, (char *)whole.obs + HALF * row, HALF * row),
                  "step %d: the halves' observations are not the whole pool's", s);
        CHECK(!memcmp(hi.reward, whole.reward + HALF, HALF * sizeof(float)) &&
              !memcmp(hi.terminated, whole.terminated + HALF, HALF));
        if (s == STEPS) break;
        cartpole_actions(whole.obs, N, &rng, whole.actions);
        memcpy(lo.actions, whole.actions, HALF * sizeof(int32_t));
        memcpy(hi.actions, whole.actions + HALF, HALF * sizeof(int32_t));
        cr_env_pool_step(&whole.pool, whole.actions);
        cr_env_pool_step(&lo.pool, lo.actions);
        cr_env_pool_step(&hi.pool, hi.actions);
        for (int i = 0; i < N; i++) ends += whole.terminated[i] | whole.truncated[i];
    }
    CHECK_MSG(ends >= 20, "only %d episodes ended", ends);
    pooled_free(&whole), pooled_free(&lo), pooled_free(&hi);
}

/* An action out of range aborts with a message naming the env and the action. */
static void test_bad_action(void) {
    int fds[2];
    CHECK(pipe(fds) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 2);
        pooled p;
        pooled_init(&p, &probe_def, &(cr_env_pool_config){4, 1, 1, NULL, 0, 0, 0, 0}, 1);
        p.actions[2] = PROBE_ACTIONS;
        cr_env_pool_step(&p.pool, p.actions);
        _exit(0);
    }
    close(fds[1]);
    char msg[1024] = "";
    size_t len = 0;
    ssize_t got;
    while (len + 1 < sizeof msg && (got = read(fds[0], msg + len, sizeof msg - 1 - len)) > 0)
        len += (size_t)got;
    msg[len] = 0;
    close(fds[0]);
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, "a bad action did not abort "
              "(status %d)", status);
    CHECK_MSG(strstr(msg, "action 3 for env 2 is outside 0..2"), "message: %s", msg);
}

/* ---- the registry ---------------------------------------------------------------------------- */

static int names_contain(const char *id) {
    for (const char *const *n = cudarl_env_names(); *n; n++)
        if (!strcmp(*n, id)) return 1;
    return 0;
}

static void test_builtins(void) {
    const cudarl_env_def *d = cr_env_def_find("CartPole-v1");
    const cr_env_info *info = cr_env_find("CartPole-v1");
    CHECK(d && info && info->def == d && !strcmp(d->id, "CartPole-v1"));
    CHECK(info->obs_dim == 4 && info->num_actions == 2 && info->max_episode_steps == 500 &&
          info->solved_return == 475.0 && !strcmp(info->id, "CartPole-v1"));
    CHECK(d->obs_rank == 1 && d->obs_dtype == CUDARL_OBS_F32 && cr_env_def_obs_bytes(d) == 16);
    CHECK(names_contain("CartPole-v1") && !cr_env_find("Nope-v0") && !cr_env_def_find("Nope-v0"));
    CHECK(!cr_env_def_find(NULL) && !cr_env_find(NULL));
}

typedef struct bad_case {
    const char *what;
    cudarl_env_def def;
    const char *want; /* a piece of the message */
} bad_case;

/* Each bad field refused with INVALID_ARG and a message that names it. */
static void test_register_errors(void) {
    static char long_id[CUDARL_ENV_ID_MAX + 1];
    memset(long_id, 'x', CUDARL_ENV_ID_MAX);
    cudarl_env_def ok = probe_def;
    ok.id = "Good-v0";
    bad_case cases[32];
    int n = 0;
#define BAD(field_assign, message)                  \
    do {                                            \
        cases[n].what = #field_assign;              \
        cases[n].def = ok;                          \
        cases[n].def.field_assign;                  \
        cases[n++].want = message;                  \
    } while (0)
    BAD(id = NULL, "id is NULL");
    BAD(id = "", "id is empty");
    BAD(id = long_id, "longer than 63 characters");
    BAD(id = "Good v0", "contains character 32 at position 4");
    BAD(obs_rank = 2, "obs_rank is 2; use 1");
    BAD(obs_rank = 0, "obs_rank is 0");
    BAD(obs_shape[0] = 0, "obs_shape[0] is 0");
    BAD(obs_shape[0] = -3, "obs_shape[0] is -3");
    BAD(obs_shape[1] = 2, "obs_shape[1] is 2 but obs_rank is 1");
    BAD(obs_shape[2] = 3, "obs_shape[2] is 3 but obs_rank is 1");
    BAD(obs_dtype = (cudarl_obs_dtype)5, "obs_dtype is 5");
    BAD(num_actions = 0, "num_actions is 0");
    BAD(num_actions = -1, "num_actions is -1");
    BAD(max_episode_steps = -1, "max_episode_steps is -1");
    BAD(solved_return = NAN, "solved_return is not finite");
    BAD(state_bytes = 0, "state_bytes is 0");
    BAD(state_bytes = (size_t)1 << 31, "state_bytes is 2147483648");
    BAD(seed = NULL, "seed is NULL");
    BAD(reset = NULL, "reset is NULL");
    BAD(step = NULL, "step is NULL");
    BAD(id = "CartPole-v1", "'CartPole-v1' is already registered");
#undef BAD
    cases[n].what = "rank 3 with a zero dim";
    cases[n].def = probe_u8_def;
    cases[n].def.id = "Img-v0";
    cases[n].def.obs_shape[2] = 0;
    cases[n++].want = "obs_shape[2] is 0; every dim of a rank-3 observation must be >= 1";
    cases[n].what = "rank 3 with too many elements";
    cases[n].def = probe_u8_def;
    cases[n].def.id = "Img-v0";
    cases[n].def.obs_shape[0] = cases[n].def.obs_shape[1] = cases[n].def.obs_shape[2] = 4096;
    cases[n++].want = "more than 2147483647 elements";
    cases[n].what = "frame_stack out of range";
    cases[n].def = probe_u8_def;
    cases[n].def.id = "Img-v0";
    cases[n].def.frame_stack = 17;
    cases[n++].want = "frame_stack is 17; use 0 (not a frame stack) or the frames per observation";
    cases[n].what = "frame_stack not along C";
    cases[n].def = probe_u8_def;
    cases[n].def.id = "Img-v0";
    cases[n].def.frame_stack = 4; /* obs_shape (3, 1, 2) */
    cases[n++].want = "frame_stack 4 needs uint8 (C, H, W) observations with C = 4";
    cases[n].what = "frame_stack of float features";
    cases[n].def = ok;
    cases[n].def.frame_stack = 2;
    cases[n++].want = "frame_stack 2 needs uint8 (C, H, W) observations";
    CHECK(n <= 32);
    for (int k = 0; k < n; k++) {
        cudarl_status s = cudarl_env_register(&cases[k].def);
        CHECK_MSG(s == CUDARL_ERR_INVALID_ARG && strstr(cudarl_last_error(), cases[k].want),
                  "%s: expected INVALID_ARG with '%s', got %s: %s", cases[k].what, cases[k].want,
                  cudarl_status_name(s), cudarl_last_error());
        CHECK_MSG(strstr(cudarl_last_error(), "cudarl_env_register"), "%s: message '%s' does "
                  "not say which function", cases[k].what, cudarl_last_error());
    }
    CHECK(cudarl_env_register(NULL) == CUDARL_ERR_INVALID_ARG &&
          strstr(cudarl_last_error(), "cudarl_env_register: the def is NULL"));
    CHECK(!cr_env_def_find("Good-v0") && !names_contain("Good-v0") && !names_contain("Img-v0"));
}

/* ---- continuous (Box) actions ----------------------------------------------------------- */

/* ProbeBox-v0: Probe-v0 whose step takes 2 floats, written to obs[2..3] as the env saw them. */
static void probe_step_box(void *state, const float *action, void *obs, float *reward,
                           uint8_t *terminated) {
    probe *p = state;
    float *o = obs;
    p->t++;
    o[0] = (float)p->index, o[1] = (float)p->episode, o[2] = action[0], o[3] = action[1];
    *reward = 0.0f;
    *terminated = 0;
}

static const cudarl_env_def probe_box_def = {
    .struct_size = sizeof(cudarl_env_def),
    .id = "ProbeBox-v0", .obs_rank = 1, .obs_shape = {4, 1, 1}, .obs_dtype = CUDARL_OBS_F32,
    .max_episode_steps = PROBE_MAX_STEPS, .solved_return = 1.0, .state_bytes = sizeof(probe),
    .seed = probe_seed, .reset = probe_reset, .action_dim = 2, .action_low = {-1.0f, 0.0f},
    .action_high = {1.0f, 0.5f}, .step_box = probe_step_box,
};

/* Each bad field of a continuous env refused with INVALID_ARG and a message naming the fix. */
static void test_register_box_errors(void) {
    bad_case cases[16];
    int n = 0;
#define BAD(field_assign, message)                  \
    do {                                            \
        cases[n].what = #field_assign;              \
        cases[n].def = probe_box_def;               \
        cases[n].def.field_assign;                  \
        cases[n++].want = message;                  \
    } while (0)
    BAD(action_dim = -1, "action_dim is -1; use 1 .. 32 floats per action");
    BAD(action_dim = CUDARL_ACTION_DIM_MAX + 1, "action_dim is 33; use 1 .. 32 floats per action");
    BAD(num_actions = 2, "num_actions is 2 with action_dim 2; a continuous env has no discrete "
        "actions: set num_actions 0");
    BAD(action_low[1] = NAN, "action bounds [nan, 0.5] of dim 1; give finite bounds with low < "
        "high");
    BAD(action_high[0] = INFINITY, "action bounds [-1, inf] of dim 0");
    BAD(action_low[0] = 1.0f, "action bounds [1, 1] of dim 0; give finite bounds with low < high");
    BAD(action_high[1] = -0.5f, "action bounds [0, -0.5] of dim 1");
    BAD(step_box = NULL, "steps with step_box(state, const float *action, ...); set step_box and "
        "leave step NULL");
    BAD(step = probe_step, "set step_box and leave step NULL");
    BAD(action_dim = 0, "num_actions is 0; a discrete env needs at least 1 action");
#undef BAD
    cases[n].what = "step_box on a discrete env";
    cases[n].def = probe_def;
    cases[n].def.id = "ProbeBox-v0";
    cases[n].def.step_box = probe_step_box;
    cases[n++].want = "step_box is set but action_dim is 0; set action_dim";
    for (int k = 0; k < n; k++) {
        cudarl_status s = cudarl_env_register(&cases[k].def);
        CHECK_MSG(s == CUDARL_ERR_INVALID_ARG && strstr(cudarl_last_error(), cases[k].want),
                  "%s: expected INVALID_ARG with '%s', got %s: %s", cases[k].what, cases[k].want,
                  cudarl_status_name(s), cudarl_last_error());
    }
    CHECK(!cr_env_def_find("ProbeBox-v0"));
}

/* A registered continuous env: found with its action_dim, offered to no batch trainer, and its
 * actions clipped into the box (a NaN stays NaN) before its step sees them, the caller's left
 * as they were. */
static void test_box_actions(void) {
    CHECK_OK(cudarl_env_register(&probe_box_def));
    const cr_env_info *info = cr_env_info_find("ProbeBox-v0");
    CHECK(info && info->action_dim == 2 && info->num_actions == 0 && !info->batch &&
          !cr_env_find("ProbeBox-v0"));
    CHECK(cr_env_def_action_bytes(info->def) == 2 * sizeof(float));
    cr_env_pool pool;
    CHECK_OK(cr_env_pool_init(&pool, info->def, &(cr_env_pool_config){3, 2, 1, NULL, 0, 0, 0, 0},
                              NULL));
    float obs[3 * 4], final_obs[3 * 4], reward[3];
    uint8_t term[3], trunc[3];
    cr_env_pool_set_outputs(&pool, &(cr_env_pool_outputs){obs, reward, term, trunc, final_obs});
    cr_env_pool_reset(&pool, 1);
    float actions[3 * 2] = {-3.0f, 0.25f, 0.5f, 9.0f, NAN, -2.0f};
    const float want[3 * 2] = {-1.0f, 0.25f, 0.5f, 0.5f, NAN, 0.0f};
    float copy[3 * 2];
    memcpy(copy, actions, sizeof copy);
    cr_env_pool_step(&pool, actions);
    for (int k = 0; k < 6; k++) {
        float got = obs[(k / 2) * 4 + 2 + k % 2];
        CHECK_MSG(isnan(want[k]) ? isnan(got) : got == want[k], "env %d dim %d: the env saw "
                  "%g, expected %g", k / 2, k % 2, got, want[k]);
    }
    CHECK(!memcmp(copy, actions, sizeof copy));
    cr_env_pool_free(&pool);
}

/* ---- vector envs (cudarl_env_def.vec_*: a batch that steps itself) ------------------------ */

#define VEC_N 3
static struct { int resets, steps, hooks; uint64_t seed; } vec_calls;

/* obs of env i: (i, its step in the episode); an episode ends after 3 steps (terminated), reward
 * the action + 1. */
static int vec_t[VEC_N];
static void vec_reset(void *user, int n, uint64_t seed, void *obs) {
    CHECK(user == &vec_calls && n == VEC_N);
    vec_calls.resets++, vec_calls.seed = seed;
    float *o = obs;
    for (int i = 0; i < n; i++) vec_t[i] = 0, o[2 * i] = (float)i, o[2 * i + 1] = 0.0f;
}
static void vec_step(void *user, int n, const void *actions_v, void *obs, float *reward,
                     uint8_t *terminated, uint8_t *truncated, void *final_obs) {
    CHECK(user == &vec_calls && n == VEC_N && vec_calls.hooks == vec_calls.steps + 1);
    vec_calls.steps++;
    const int32_t *actions = actions_v;
    float *o = obs, *f = final_obs;
    for (int i = 0; i < n; i++) {
        reward[i] = (float)actions[i] + 1.0f;
        truncated[i] = 0;
        terminated[i] = ++vec_t[i] == 3;
        if (terminated[i]) f[2 * i] = (float)i, f[2 * i + 1] = 3.0f, vec_t[i] = 0;
        o[2 * i] = (float)i, o[2 * i + 1] = (float)vec_t[i];
    }
}
static void vec_hook(void *arg, int group) {
    CHECK(arg == &vec_calls && group == 0);
    vec_calls.hooks++;
}

static const cudarl_env_def vec_def = {
    .struct_size = sizeof(cudarl_env_def),
    .id = "Vec-v0", .obs_rank = 1, .obs_shape = {2, 1, 1}, .obs_dtype = CUDARL_OBS_F32,
    .num_actions = 2, .solved_return = 1.0, .vec_reset = vec_reset, .vec_step = vec_step,
    .vec_user = &vec_calls, .vec_num_envs = VEC_N,
};

/* A vector env: its fields checked at registration, registered again (replaced), stepped whole by
 * the pool on the calling thread after the group's hook, and refused for another batch shape. */
static void test_vec_env(void) {
    struct { const char *what, *want; cudarl_env_def def; } bad[6];
    for (int k = 0; k < 6; k++) bad[k].def = vec_def;
    bad[0].what = "no vec_reset", bad[0].def.vec_reset = NULL;
    bad[0].want = "needs both vec_reset and vec_step";
    bad[1].what = "a seed too", bad[1].def.seed = probe_def.seed;
    bad[1].want = "leave seed, reset, step, step_box NULL and state_bytes 0";
    bad[2].what = "state bytes", bad[2].def.state_bytes = 8;
    bad[2].want = "leave seed, reset, step, step_box NULL and state_bytes 0";
    bad[3].what = "no envs", bad[3].def.vec_num_envs = 0;
    bad[3].want = "vec_num_envs is 0";
    bad[4].what = "a time limit", bad[4].def.max_episode_steps = 10;
    bad[4].want = "keeps its own time limit";
    bad[5].what = "a frame stack", bad[5].def.frame_stack = 2;
    bad[5].want = "frame_stack is 2";
    for (int k = 0; k < 6; k++) {
        cudarl_status s = cudarl_env_register(&bad[k].def);
        CHECK_MSG(s == CUDARL_ERR_INVALID_ARG && strstr(cudarl_last_error(), bad[k].want),
                  "%s: expected INVALID_ARG with '%s', got %s: %s", bad[k].what, bad[k].want,
                  cudarl_status_name(s), cudarl_last_error());
    }
    cudarl_env_def first = vec_def;
    first.num_actions = 5;
    CHECK_OK(cudarl_env_register(&first));
    CHECK(cr_env_def_find("Vec-v0")->num_actions == 5);
    CHECK_OK(cudarl_env_register(&vec_def)); /* a vector env's id: replaced */
    const cudarl_env_def *d = cr_env_def_find("Vec-v0");
    CHECK(d && d->num_actions == 2 && d->vec_step == vec_step && !strcmp(d->id, "Vec-v0"));
    cudarl_env_def plain = probe_def; /* a plain env does not replace a vector env's id */
    plain.id = "Vec-v0";
    CHECK(cudarl_env_register(&plain) == CUDARL_ERR_INVALID_ARG &&
          strstr(cudarl_last_error(), "already registered"));

    CHECK_OK(cr_env_check_run(d, VEC_N, 0));
    CHECK(cr_env_check_run(d, 4, 0) == CUDARL_ERR_INVALID_ARG &&
          strstr(cudarl_last_error(), "--num-envs 4: Vec-v0 is a vector env of 3 envs; use "
                 "--num-envs 3"));
    CHECK(cr_env_check_run(d, VEC_N, 2) == CUDARL_ERR_INVALID_ARG &&
          strstr(cudarl_last_error(), "--env-groups 2"));
    cr_env_pool pool;
    CHECK(cr_env_pool_init(&pool, d, &(cr_env_pool_config){4, 1, 1, NULL, 0, 0, 0, 0}, NULL) ==
              CUDARL_ERR_INVALID_ARG &&
          strstr(cudarl_last_error(), "a vector env of 3 envs steps as one batch"));
    CHECK(cr_env_pool_init(&pool, d, &(cr_env_pool_config){VEC_N, 1, 2, NULL, 0, 0, 0, 0}, NULL) ==
          CUDARL_ERR_INVALID_ARG);

    /* 4 threads asked for, caller idle: the pool steps it on the calling thread alone */
    CHECK_OK(cr_env_pool_init(&pool, d, &(cr_env_pool_config){VEC_N, 4, 1, NULL, 1, 0, 0, 0},
                              NULL));
    CHECK(pool.num_threads == 1 && !pool.caller_idle);
    float obs[2 * VEC_N], final_obs[2 * VEC_N], reward[VEC_N];
    uint8_t term[VEC_N], trunc[VEC_N];
    cr_env_pool_set_outputs(&pool, &(cr_env_pool_outputs){obs, reward, term, trunc, final_obs});
    cr_env_pool_set_hook(&pool, 0, vec_hook, &vec_calls);
    cr_env_pool_reset(&pool, 42);
    CHECK(vec_calls.resets == 1 && vec_calls.seed == 42 && vec_calls.hooks == 0);
    const int32_t actions[VEC_N] = {0, 1, 1};
    for (int t = 1; t <= 3; t++) {
        cr_env_pool_step_begin(&pool, 0, actions);
        CHECK(vec_calls.steps == t - 1); /* stepped in step_wait, on this thread */
        cr_env_pool_step_wait(&pool, 0);
        CHECK(vec_calls.steps == t && vec_calls.hooks == t);
        for (int i = 0; i < VEC_N; i++)
            CHECK(reward[i] == (float)actions[i] + 1.0f && term[i] == (t == 3) && !trunc[i] &&
                  obs[2 * i] == (float)i && obs[2 * i + 1] == (float)(t % 3));
    }
    for (int i = 0; i < VEC_N; i++) CHECK(final_obs[2 * i + 1] == 3.0f);
    cr_env_pool_free(&pool);
}

/* A registered env is a copy (the caller's struct and id may go), found by id and listed, not
 * offered to the batch trainers; a second one with its id is refused; the registry fills up. */
static void test_register(void) {
    char id[32] = "Probe-v0";
    cudarl_env_def mine = probe_def;
    mine.id = id;
    CHECK_OK(cudarl_env_register(&mine));
    strcpy(id, "Changed-v0");
    mine.num_actions = 99;
    const cudarl_env_def *d = cr_env_def_find("Probe-v0");
    CHECK(d && d != &probe_def && !strcmp(d->id, "Probe-v0") && d->num_actions == PROBE_ACTIONS);
    CHECK(d->step == probe_step && !cr_env_def_find("Changed-v0"));
    CHECK(names_contain("Probe-v0") && names_contain("CartPole-v1"));
    CHECK_MSG(!cr_env_find("Probe-v0"), "the batch trainers must not be offered Probe-v0");
    CHECK(cudarl_env_register(&probe_def) == CUDARL_ERR_INVALID_ARG &&
          strstr(cudarl_last_error(), "already registered"));
    probe_run("registered Probe-v0", d, (cr_env_pool_config){5, 2, 1, NULL, 0, 0, 0, 0}, 100);

    cudarl_env_def zeros = probe_def; /* unused dims left 0 by a designated initializer */
    zeros.id = "Zeros-v0";
    zeros.obs_shape[1] = zeros.obs_shape[2] = 0;
    CHECK_OK(cudarl_env_register(&zeros));
    d = cr_env_def_find("Zeros-v0");
    CHECK(d->obs_shape[0] == 4 && d->obs_shape[1] == 1 && d->obs_shape[2] == 1);
    CHECK(cr_env_def_obs_elems(&zeros) == 4 && cr_env_def_obs_bytes(d) == 16);

    int count = 0;
    for (const char *const *n = cudarl_env_names(); *n; n++) count++;
    cudarl_env_def more = probe_def;
    char more_id[32];
    more.id = more_id;
    for (int k = count; k < CUDARL_ENV_MAX; k++) {
        snprintf(more_id, sizeof more_id, "More-v%d", k);
        CHECK_OK(cudarl_env_register(&more));
    }
    snprintf(more_id, sizeof more_id, "OneTooMany-v0");
    CHECK(cudarl_env_register(&more) == CUDARL_ERR_OUT_OF_MEMORY &&
          strstr(cudarl_last_error(), "registry is full"));
    count = 0;
    for (const char *const *n = cudarl_env_names(); *n; n++) count++;
    CHECK_MSG(count == CUDARL_ENV_MAX, "%d names listed, expected %d", count, CUDARL_ENV_MAX);
    snprintf(more_id, sizeof more_id, "More-v%d", CUDARL_ENV_MAX - 1); /* the last one in */
    CHECK(cr_env_def_find(more_id) && !cr_env_def_find("OneTooMany-v0"));
}

int main(void) {
    test_builtins();
    test_layout();
    test_config_errors();
    test_probe_shards();
    test_cartpole_equivalence();
    test_first_env();
    test_bad_action();
    test_register_errors();
    test_register_box_errors();
    test_box_actions();
    test_vec_env();
    test_register(); /* last: fills the registry */
    printf("test_env_pool: ok\n");
    return 0;
}
