/* What a resumed run, eval, export and the runtime check before trusting a checkpoint, and what
 * training does when it diverges:
 *   1. every state a built-in env reaches in random play passes its state check (the checks
 *      never refuse a real checkpoint), through the pool and through an image twin's layout;
 *   2. a field out of its range is refused, naming it: for each built-in env, the pool's step
 *      count, and a twin's (MinAtar's transposed words, CartPolePixels' structs);
 *   3. a NaN or an inf in an F32, F64, F16 or BF16 tensor is refused by the header check every
 *      reader starts with (CUDARL_ERR_NUMERIC, naming the tensor and the element);
 *   4. PPO in fp32 whose rewards turn NaN stops with CUDARL_ERR_NUMERIC at that iteration and
 *      keeps the checkpoint of the iteration before (which loads); DQN stops without one;
 *   5. the policy runtime, the ONNX export and resume's config load take that checkpoint and
 *      refuse a copy with a NaN weight or an inf Adam moment, naming the tensor.
 *
 * Usage: test_resume_checks RUNS_DIR [STEPS]   STEPS: random steps of each env in 1 (3000) */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "cudarl.h"
#include "env/cartpole_pixels/cartpole_pixels.h"
#include "env/env.h"
#include "env/env_pool.h"
#include "env/image_twin.h"
#include "env/minatar/minatar_asterix_step.h"
#include "env/minatar/minatar_breakout_step.h"
#include "env/minatar/minatar_freeway_step.h"
#include "env/minatar/minatar_seaquest_step.h"
#include "env/minatar/minatar_space_invaders_step.h"
#include "io/checkpoint.h"

static const char *runs;

/* A pool of n envs of `id` on one thread, reset with seed 7; its buffers are malloc'd. */
typedef struct pool_run {
    cr_env_pool pool;
    void *obs, *final_obs;
    float *reward;
    uint8_t *term, *trunc;
    int32_t *actions;
} pool_run;

static void pool_open(pool_run *r, const char *id, int n) {
    const cudarl_env_def *def = cr_env_def_find(id);
    CHECK_MSG(def, "env %s is registered", id);
    cr_env_pool_config c = {.num_envs = n, .num_threads = 1, .num_groups = 1};
    CHECK_OK(cr_env_pool_init(&r->pool, def, &c, NULL));
    size_t ob = cr_env_def_obs_bytes(def) * (size_t)n;
    r->obs = malloc(ob), r->final_obs = malloc(ob);
    r->reward = malloc((size_t)n * sizeof(float));
    r->term = malloc((size_t)n), r->trunc = malloc((size_t)n);
    r->actions = malloc((size_t)n * sizeof(int32_t));
    CHECK(r->obs && r->final_obs && r->reward && r->term && r->trunc && r->actions);
    cr_env_pool_outputs out = {r->obs, r->reward, r->term, r->trunc, r->final_obs};
    cr_env_pool_set_outputs(&r->pool, &out);
    cr_env_pool_reset(&r->pool, 7);
}

static void pool_close(pool_run *r) {
    cr_env_pool_free(&r->pool);
    free(r->obs), free(r->final_obs), free(r->reward), free(r->term), free(r->trunc);
    free(r->actions);
}

/* The check of the whole pool passes; else fails naming the env and why. */
static void expect_pool_ok(const pool_run *r, const char *what, int step) {
    char why[256];
    int bad = 0, i = cr_env_pool_check_state(&r->pool, &bad, why, sizeof why);
    CHECK_MSG(i < 0, "%s, %s at step %d: env %d refused (%d): %s", r->pool.def->id, what, step, i,
              bad, why);
}

/* ---- 1. every reached state passes ----------------------------------------------------------- */

static void random_play(const char *id, int n, int steps) {
    pool_run r;
    pool_open(&r, id, n);
    cr_philox_state rng;
    cr_philox_seed(&rng, 11, 0);
    expect_pool_ok(&r, "after the reset", 0);
    for (int t = 1; t <= steps; t++) {
        for (int i = 0; i < n; i++)
            r.actions[i] = (int32_t)(cr_philox_next_u32(&rng) % (uint32_t)r.pool.def->num_actions);
        cr_env_pool_step(&r.pool, r.actions);
        expect_pool_ok(&r, "in random play", t);
    }
    printf("%s: %d envs x %d random steps, every state passes its check\n", id, n, steps);
    pool_close(&r);
}

/* ---- 2. a field out of range is refused ------------------------------------------------------ */

/* Env 1 of a fresh pool of `id`, changed by `mutate`, is refused (1: its state) with `needle`. */
static void expect_refused(const char *id, void (*mutate)(void *), const char *needle) {
    pool_run r;
    pool_open(&r, id, 3);
    mutate(cr_env_pool_state(&r.pool, 1));
    char why[256] = "";
    int bad = 0, i = cr_env_pool_check_state(&r.pool, &bad, why, sizeof why);
    CHECK_MSG(i == 1 && bad == 1 && strstr(why, needle), "%s: expected env 1's state refused "
              "with '%s', got env %d (%d): %s", id, needle, i, bad, why);
    pool_close(&r);
}

static void breakout_ball(void *s) { ((cr_minatar_breakout_state *)s)->ball_x = 12; }
static void breakout_brick(void *s) { ((cr_minatar_breakout_state *)s)->brick[9][4] = 1; }
static void breakout_low_ball(void *s) { ((cr_minatar_breakout_state *)s)->ball_y = 9; }
static void breakout_rng(void *s) { ((cr_minatar_breakout_state *)s)->rng.used = 7; }
static void asterix_entity(void *s) {
    cr_minatar_asterix_state *a = s;
    a->entities[2].alive = 1, a->entities[2].x = 10;
}
static void asterix_player(void *s) { ((cr_minatar_asterix_state *)s)->player_y = 0; }
static void freeway_car(void *s) { ((cr_minatar_freeway_state *)s)->cars[3].speed = 9; }
static void freeway_timer(void *s) { ((cr_minatar_freeway_state *)s)->terminate_timer = -5; }
static void seaquest_count(void *s) { ((cr_minatar_seaquest_state *)s)->n_fish = 65; }
static void seaquest_fish(void *s) {
    cr_minatar_seaquest_state *q = s;
    q->n_fish = 1, q->fish[0].x = -3, q->fish[0].y = 4;
}
static void seaquest_divers(void *s) { ((cr_minatar_seaquest_state *)s)->diver_count = 7; }
static void invaders_dir(void *s) { ((cr_minatar_space_invaders_state *)s)->alien_dir = 0; }
static void invaders_cell(void *s) { ((cr_minatar_space_invaders_state *)s)->e_bullet[2][3] = 5; }
static void cartpole_nan(void *s) { ((double *)s)[0] = NAN; }      /* x, the struct's first */
static void cartpole_fast(void *s) { ((double *)s)[3] = 1e9; }     /* theta_dot */
static void pixels_slot(void *s) { ((cr_cartpole_pixels_state *)s)->newest = 4; }
static void pixels_elapsed(void *s) { ((cr_cartpole_pixels_state *)s)->elapsed = 500; }

static void refusals(void) {
    static const struct { const char *id; void (*mutate)(void *); const char *needle; } k[] = {
        {"MinAtar/Breakout-v1", breakout_ball, "ball_x is 12, expected 0..9"},
        {"MinAtar/Breakout-v1", breakout_brick, "brick[9][4] is 1, expected 0 outside rows 1..3"},
        {"MinAtar/Breakout-v1", breakout_low_ball, "ball_y is 9, expected 0..8"},
        {"MinAtar/Breakout-v1", breakout_rng, "rng.used is 7, expected 0..4"},
        {"MinAtar/Asterix-v1", asterix_entity, "entities[2].x is 10, expected 0..9"},
        {"MinAtar/Asterix-v1", asterix_player, "player_y is 0, expected 1..8"},
        {"MinAtar/Freeway-v1", freeway_car, "cars[3].speed is 9, expected -5..5"},
        {"MinAtar/Freeway-v1", freeway_timer, "terminate_timer is -5, expected -1..2500"},
        {"MinAtar/Seaquest-v1", seaquest_count, "n_fish is 65, expected 0..64"},
        {"MinAtar/Seaquest-v1", seaquest_fish, "fish[0].x is -3, expected 0..9"},
        {"MinAtar/Seaquest-v1", seaquest_divers, "diver_count is 7, expected"},
        {"MinAtar/SpaceInvaders-v1", invaders_dir, "alien_dir is 0, expected -1 or 1"},
        {"MinAtar/SpaceInvaders-v1", invaders_cell, "e_bullet[2][3] is 5, expected 0 or 1"},
        {"CartPole-v1", cartpole_nan, "x is nan"},
        {"CartPole-v1", cartpole_fast, "theta_dot is 1e+09"},
        {"CartPolePixels-v1", pixels_slot, "newest is 4, expected 0..3"},
        {"CartPolePixels-v1", pixels_elapsed, "elapsed is 500, expected 0..499"},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) expect_refused(k[i].id, k[i].mutate,
                                                                        k[i].needle);
    pool_run r; /* the pool's own step count */
    pool_open(&r, "CartPole-v1", 3);
    r.pool.elapsed[2] = 500;
    char why[256] = "";
    int bad = 0, i = cr_env_pool_check_state(&r.pool, &bad, why, sizeof why);
    CHECK_MSG(i == 2 && bad == 2 && strstr(why, "step count is 500, expected 0..499"),
              "a step count at the time limit: env %d (%d): %s", i, bad, why);
    pool_close(&r);
    pool_open(&r, "MinAtar/Breakout-v1", 3); /* no time limit: any count >= 0 */
    r.pool.elapsed[0] = 1 << 30;
    expect_pool_ok(&r, "a long episode", 0);
    r.pool.elapsed[0] = -1;
    i = cr_env_pool_check_state(&r.pool, &bad, why, sizeof why);
    CHECK_MSG(i == 0 && bad == 2 && strstr(why, "step count is -1"), "a negative step count: env "
              "%d (%d): %s", i, bad, why);
    pool_close(&r);
    printf("a field out of its range is refused, naming it, for every built-in env\n");
}

/* ---- the image twins' layouts (checked on the host in any build) ----------------------------- */

static size_t align64(size_t n) { return (n + 63) / 64 * 64; }

/* A host block laid out as `id`'s twin holds n envs, filled from a pool after some random
 * steps: MinAtar's states as (W, N) words, CartPolePixels' as (N) structs, then the counts. */
static void twin_case(const char *id, int kind) {
    enum { N = 5 };
    pool_run r;
    pool_open(&r, id, N);
    for (int t = 0; t < 30; t++) {
        for (int i = 0; i < N; i++) r.actions[i] = (int32_t)((t + i) % r.pool.def->num_actions);
        cr_env_pool_step(&r.pool, r.actions);
    }
    const size_t sb = r.pool.def->state_bytes, W = sb / 4;
    const size_t states = align64(sb * N), bytes = states + align64(N * sizeof(int32_t));
    unsigned char *mem = aligned_alloc(64, bytes);
    CHECK(mem);
    memset(mem, 0, bytes);
    cr_image_twin twin;
    memset(&twin, 0, sizeof twin);
    twin.kind = kind, twin.num_envs = N, twin.bytes = bytes, twin.mem = mem;
    int32_t *elapsed = (int32_t *)(mem + states);
    for (int i = 0; i < N; i++) {
        const unsigned char *s = cr_env_pool_state(&r.pool, i);
        if (kind == 1)
            for (size_t k = 0; k < W; k++) memcpy(mem + (k * N + (size_t)i) * 4, s + 4 * k, 4);
        else
            memcpy(mem + (size_t)i * sb, s, sb);
        elapsed[i] = r.pool.elapsed[i];
    }
    if (kind == 1) {
        twin.minatar.def = r.pool.def, twin.minatar.num_envs = N;
        twin.minatar.state_words = (int)W;
        twin.minatar.states = (uint32_t *)mem, twin.minatar.elapsed = elapsed;
    } else {
        twin.pixels.num_envs = N;
        twin.pixels.states = (cr_cartpole_pixels_state *)mem, twin.pixels.elapsed = elapsed;
    }
    char why[256] = "";
    int bad = 0, i = cr_image_twin_check_state(&twin, mem, &bad, why, sizeof why);
    CHECK_MSG(i < 0, "%s twin: env %d refused (%d): %s", id, i, bad, why);
    /* env 3's Philox buffer index: the state's word 10 (key 2, ctr 4, buf 4, then used) */
    const size_t used_word = offsetof(cr_philox_state, used) / 4;
    int32_t seven = 7;
    if (kind == 1) memcpy(mem + (used_word * N + 3) * 4, &seven, 4);
    else memcpy(mem + 3 * sb + offsetof(cr_cartpole_pixels_state, rng) + used_word * 4, &seven, 4);
    i = cr_image_twin_check_state(&twin, mem, &bad, why, sizeof why);
    CHECK_MSG(i == 3 && bad == 1 && strstr(why, "rng.used is 7"), "%s twin: a bad word of env 3: "
              "env %d (%d): %s", id, i, bad, why);
    elapsed[1] = -2;
    i = cr_image_twin_check_state(&twin, mem, &bad, why, sizeof why);
    CHECK_MSG(i == 1 && bad == 2 && strstr(why, "step count is -2"), "%s twin: a bad count of env "
              "1: env %d (%d): %s", id, i, bad, why);
    printf("%s: its twin's state is checked from a host copy (%s)\n", id,
           kind == 1 ? "word k of env i at k * N + i" : "state structs side by side");
    free(mem);
    pool_close(&r);
}

/* ---- 3. non-finite numbers in a checkpoint --------------------------------------------------- */

/* A file of header-valid metadata with tensors "a" (F32, 4) and "b" (dtype, 6), b[3] = bits. */
static void write_with(const char *path, cr_st_dtype dtype, uint64_t bits) {
    float a[4] = {1, 2, 3, 4};
    unsigned char b[6 * 8];
    size_t w = cr_st_dtype_size(dtype);
    memset(b, 0, sizeof b);
    memcpy(b + 3 * w, &bits, w); /* little-endian: the low bytes hold the value */
    static cr_st_writer wr;
    cr_st_writer_init(&wr);
    cr_st_add_meta(&wr, "format", CR_CHECKPOINT_FORMAT);
    cr_st_add_meta(&wr, "format_version", "1");
    cr_st_add_meta(&wr, "algo", "ppo");
    int64_t sa[1] = {4}, sb[2] = {2, 3};
    CHECK_OK(cr_st_add_tensor(&wr, "b", dtype, 2, sb, b));
    CHECK_OK(cr_st_add_tensor(&wr, "a", CR_ST_F32, 1, sa, a));
    CHECK_OK(cr_st_write_atomic(&wr, path));
}

static void non_finite(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/finite_%d.safetensors", runs, (int)getpid());
    static const struct { cr_st_dtype dtype; uint64_t bits; const char *word; } k[] = {
        {CR_ST_F32, 0x7FC00000u, "NaN"}, {CR_ST_F32, 0x7F800000u, "inf"},
        {CR_ST_F32, 0xFF800000u, "-inf"}, {CR_ST_F64, 0x7FF8000000000000ull, "NaN"},
        {CR_ST_F64, 0xFFF0000000000000ull, "-inf"}, {CR_ST_F16, 0x7C00u, "inf"},
        {CR_ST_F16, 0x7E00u, "NaN"}, {CR_ST_BF16, 0x7FC0u, "NaN"}, {CR_ST_BF16, 0xFF80u, "-inf"},
        {CR_ST_F32, 0x7F7FFFFFu, NULL}, {CR_ST_F16, 0x7BFFu, NULL}, /* the largest finite */
        {CR_ST_I32, 0x7F800000u, NULL}, /* an integer with those bits is a number */
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        write_with(path, k[i].dtype, k[i].bits);
        cr_st_file *f;
        CHECK_OK(cr_st_open(&f, path));
        cudarl_status s = cr_checkpoint_check_header(f, path, "ppo");
        cr_st_close(f);
        if (!k[i].word) {
            CHECK_MSG(s == CUDARL_OK, "%s with bits %llx: %s", cr_st_dtype_name(k[i].dtype),
                      (unsigned long long)k[i].bits, cudarl_last_error());
            continue;
        }
        char needle[96];
        snprintf(needle, sizeof needle, "tensor 'b' [2, 3] holds %s at element 3", k[i].word);
        CHECK_MSG(s == CUDARL_ERR_NUMERIC && strstr(cudarl_last_error(), needle) &&
                  strstr(cudarl_last_error(), path), "%s with bits %llx: expected NUMERIC with "
                  "'%s', got %s: %s", cr_st_dtype_name(k[i].dtype), (unsigned long long)k[i].bits,
                  needle, cudarl_status_name(s), cudarl_last_error());
    }
    unlink(path);
    printf("NaN and inf in F32, F64, F16 and BF16 tensors are refused, naming the element\n");
}

/* ---- 4. divergence --------------------------------------------------------------------------- */

#define NAN_ENV "NanAfter-v0"
#define NAN_FROM 40 /* the step of each env from which its rewards are NaN */

/* Four random features, reward 1 until the env's NAN_FROM-th step, then NaN. */
typedef struct nan_env {
    cr_philox_state rng;
    int32_t steps; /* since seeding, across episodes */
} nan_env;

static void nan_observe(nan_env *e, float *obs) {
    for (int j = 0; j < 4; j++) obs[j] = cr_philox_uniform(&e->rng) - 0.5f;
}
static void nan_seed(void *state, uint64_t seed, uint64_t index) {
    nan_env *e = state;
    cr_philox_seed(&e->rng, seed, index);
    e->steps = 0;
}
static void nan_reset(void *state, void *obs) { nan_observe(state, obs); }
static void nan_step(void *state, int32_t action, void *obs, float *reward, uint8_t *terminated) {
    nan_env *e = state;
    (void)action;
    e->steps++;
    *reward = e->steps >= NAN_FROM ? NAN : 1.0f;
    *terminated = 0;
    nan_observe(e, obs);
}

static const cudarl_env_def nan_def = {
    .struct_size = sizeof(cudarl_env_def),
    .id = NAN_ENV, .obs_rank = 1, .obs_shape = {4, 1, 1}, .obs_dtype = CUDARL_OBS_F32,
    .num_actions = 2, .max_episode_steps = 10, .solved_return = 10, .state_bytes = sizeof(nan_env),
    .seed = nan_seed, .reset = nan_reset, .step = nan_step,
};

/* Copies the checkpoint at src to dst with float32 element `i` of tensor `name` set to v. */
static void copy_with(const char *src, const char *dst, const char *name, size_t i, float v) {
    cr_st_file *f;
    CHECK_OK(cr_st_open(&f, src));
    static cr_st_writer w;
    cr_st_writer_init(&w);
    void *changed = NULL;
    for (int k = 0; k < cr_st_count(f); k++) {
        const cr_st_tensor *t = cr_st_at(f, k);
        const void *data = t->data;
        if (!strcmp(t->name, name)) {
            CHECK(t->dtype == CR_ST_F32 && i < t->count);
            changed = malloc(t->nbytes);
            CHECK(changed);
            memcpy(changed, t->data, t->nbytes);
            memcpy((unsigned char *)changed + 4 * i, &v, 4);
            data = changed;
        }
        CHECK_OK(cr_st_add_tensor(&w, t->name, t->dtype, t->ndim, t->shape, data));
    }
    CHECK_MSG(changed, "%s has no tensor %s", src, name);
    static const char *const keys[] = {"format", "format_version", "algo", "policy", "env_id",
                                       "obs_dim", "num_actions", "hidden", "num_envs",
                                       "num_steps", "global_step", "seed", "total_timesteps"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        if (cr_st_meta(f, keys[k])) cr_st_add_meta(&w, keys[k], cr_st_meta(f, keys[k]));
    CHECK_OK(cr_st_write_atomic(&w, dst));
    free(changed);
    cr_st_close(f);
}

/* The policy runtime and the ONNX export take the good checkpoint, and refuse a copy with a NaN
 * weight or an inf in Adam's second moment, naming the tensor. */
static void public_readers(const char *good) {
    char bad[600], onnx[600];
    snprintf(bad, sizeof bad, "%s/nan_%d.safetensors", runs, (int)getpid());
    snprintf(onnx, sizeof onnx, "%s/policy_%d.onnx", runs, (int)getpid());
    cudarl_policy *pol;
    CHECK_OK(cudarl_policy_load(good, NULL, &pol));
    cudarl_policy_free(pol);
    CHECK_OK(cudarl_policy_export_onnx(good, onnx, NULL));
    static const struct { const char *name; size_t i; float v; const char *word; } k[] = {
        {"actor.0.weight", 5, NAN, "NaN"},
        {"optimizer.exp_avg_sq.critic.2.bias", 0, INFINITY, "inf"}};
    for (size_t j = 0; j < sizeof k / sizeof k[0]; j++) {
        copy_with(good, bad, k[j].name, k[j].i, k[j].v);
        char needle[160];
        snprintf(needle, sizeof needle, "tensor '%s'", k[j].name);
        cudarl_status s = cudarl_policy_load(bad, NULL, &pol);
        CHECK_MSG(s == CUDARL_ERR_NUMERIC && strstr(cudarl_last_error(), needle) &&
                  strstr(cudarl_last_error(), k[j].word), "cudarl_policy_load of a %s in %s: "
                  "got %s: %s", k[j].word, k[j].name, cudarl_status_name(s), cudarl_last_error());
        s = cudarl_policy_export_onnx(bad, onnx, NULL);
        CHECK_MSG(s == CUDARL_ERR_NUMERIC && strstr(cudarl_last_error(), needle),
                  "cudarl_policy_export_onnx of a %s in %s: got %s: %s", k[j].word, k[j].name,
                  cudarl_status_name(s), cudarl_last_error());
        cudarl_ppo_config cfg;
        s = cudarl_ppo_config_load(bad, &cfg);
        CHECK_MSG(s == CUDARL_ERR_NUMERIC && strstr(cudarl_last_error(), needle),
                  "cudarl_ppo_config_load of a %s in %s: got %s: %s", k[j].word, k[j].name,
                  cudarl_status_name(s), cudarl_last_error());
    }
    unlink(bad), unlink(onnx);
    printf("the runtime, export and resume refuse a NaN weight and an inf moment, naming them\n");
}

static void divergence(cudarl_ctx *ctx) {
    CHECK_OK(cudarl_env_register(&nan_def));
    cudarl_ppo_config c;
    cudarl_ppo_config_default(&c, NAN_ENV);
    c.num_envs = 4, c.num_steps = 16, c.num_minibatches = 2, c.update_epochs = 2, c.hidden = 16;
    c.total_timesteps = 6 * 64, c.checkpoint_every = 1, c.threads = 1, c.env_threads = 1;
    c.device = CUDARL_DEVICE_CPU, c.env_device = CUDARL_DEVICE_CPU, c.quiet = 1;
    snprintf(c.runs_dir, sizeof c.runs_dir, "%s", runs);
    snprintf(c.run_name, sizeof c.run_name, "diverge_%d", (int)getpid());
    cudarl_status s = cudarl_ppo_train(ctx, &c, NULL, NULL);
    /* each env's 40th step falls in iteration 3 (steps 33..48 of each env) */
    CHECK_MSG(s == CUDARL_ERR_NUMERIC && strstr(cudarl_last_error(), "training diverged") &&
              strstr(cudarl_last_error(), "iteration 3's update (step 192)") &&
              strstr(cudarl_last_error(), "lower --learning-rate"),
              "PPO with NaN rewards: got %s: %s", cudarl_status_name(s), cudarl_last_error());
    char path[700];
    snprintf(path, sizeof path, "%s/%s/model.safetensors", runs, c.run_name);
    cr_st_file *f;
    CHECK_OK(cr_st_open(&f, path));
    s = cr_checkpoint_check_header(f, path, "ppo");
    const char *step = cr_st_meta(f, "global_step");
    CHECK_MSG(s == CUDARL_OK && step && !strcmp(step, "128"), "the last good checkpoint: %s, "
              "global_step %s (expected 128): %s", cudarl_status_name(s), step ? step : "-",
              cudarl_last_error());
    cr_st_close(f);
    cudarl_ppo_config saved;
    CHECK_OK(cudarl_ppo_config_load(path, &saved));
    printf("PPO whose rewards turn NaN stops at iteration 3 and keeps iteration 2's checkpoint\n");
    public_readers(path);

    cudarl_dqn_config d;
    cudarl_dqn_config_default(&d, NAN_ENV);
    d.num_envs = 4, d.total_timesteps = 2000, d.learning_starts = 32, d.train_frequency = 4;
    d.buffer_size = 1000, d.batch_size = 16, d.hidden1 = d.hidden2 = 16, d.threads = 1;
    d.env_threads = 1, d.device = CUDARL_DEVICE_CPU, d.env_device = CUDARL_DEVICE_CPU, d.quiet = 1;
    snprintf(d.runs_dir, sizeof d.runs_dir, "%s", runs);
    snprintf(d.run_name, sizeof d.run_name, "diverge_dqn_%d", (int)getpid());
    s = cudarl_dqn_train(ctx, &d, NULL);
    CHECK_MSG(s == CUDARL_ERR_NUMERIC && strstr(cudarl_last_error(), "became"),
              "DQN with NaN rewards: got %s: %s", cudarl_status_name(s), cudarl_last_error());
    snprintf(path, sizeof path, "%s/%s/model.safetensors", runs, d.run_name);
    struct stat st;
    CHECK_MSG(stat(path, &st) != 0, "DQN wrote %s after diverging", path);
    printf("DQN whose rewards turn NaN stops without writing a checkpoint\n");
}

int main(int argc, char **argv) {
    CHECK_MSG(argc == 2 || argc == 3, "usage: test_resume_checks RUNS_DIR [STEPS]");
    runs = argv[1];
    const int steps = argc == 3 ? atoi(argv[2]) : 3000;
    mkdir(runs, 0777);
    cudarl_log_set_level(CUDARL_LOG_WARN);
    static const char *const games[] = {"MinAtar/Breakout-v1", "MinAtar/Asterix-v1",
                                        "MinAtar/Freeway-v1", "MinAtar/Seaquest-v1",
                                        "MinAtar/SpaceInvaders-v1", "CartPole-v1"};
    for (size_t i = 0; i < sizeof games / sizeof games[0]; i++) random_play(games[i], 8, steps);
    random_play("CartPolePixels-v1", 4, steps / 5);
    refusals();
    twin_case("MinAtar/Seaquest-v1", 1);
    twin_case("MinAtar/Breakout-v1", 1);
    twin_case("CartPolePixels-v1", 2);
    non_finite();
    cudarl_ctx *ctx;
    CHECK_OK(cudarl_ctx_init(&ctx, CUDARL_DEVICE_CPU, 0));
    divergence(ctx);
    cudarl_ctx_free(ctx);
    printf("test_resume_checks: ok\n");
    return 0;
}
