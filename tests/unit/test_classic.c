/* The classic-control envs (Acrobot-v1, MountainCar-v0, Pendulum-v1, MountainCarContinuous-v0):
 *   1. each is registered with the batch capability and Gymnasium's shapes, box and time limit;
 *   2. the env batch on a CPU context against a pool of the same def, same seed and actions
 *      (half the envs under a goal-seeking policy, so episodes terminate as well as truncate):
 *      obs, rewards, flags, final observations, step counts and every env state bit for bit;
 *      continuous actions, a third of them outside the box, clipped without touching the
 *      caller's array; every state reached passes the def's state check, through the pool and
 *      through the batch's block;
 *   3. a discrete action out of range aborts the batch with a message naming it;
 *   4. corners of the dynamics that Gymnasium traces seldom reach: MountainCarContinuous' float32
 *      comparisons with the goal and the left wall (numpy rounds the constants to float32),
 *      MountainCar's left wall, the clip of Pendulum's and MountainCarContinuous' actions;
 *   5. a field out of range refused naming it, by each def's state check and by the batch's check
 *      of a block (CartPole's too), and a step count at the time limit. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "env/classic/acrobot_step.h"
#include "env/classic/classic.h"
#include "env/classic/mountain_car_continuous_step.h"
#include "env/classic/mountain_car_step.h"
#include "env/classic/pendulum_step.h"
#include "env/env.h"
#include "env/env_pool.h"

#define N 13
#define SEED 20240611u
#define SENTINEL (-1234.5f)

/* What Gymnasium's registration and spaces say of each env. */
typedef struct classic_case {
    const char *id;
    int obs_dim, num_actions, action_dim;
    float low, high; /* the box (continuous) */
    int max_steps;
    double solved;
    int terminates; /* the goal-seeking policy reaches a terminal state */
} classic_case;

static const classic_case cases[] = {
    {"Acrobot-v1", 6, 3, 0, 0, 0, 500, -100.0, 1},
    {"MountainCar-v0", 2, 3, 0, 0, 0, 200, -110.0, 1},
    {"Pendulum-v1", 3, 0, 1, -2.0f, 2.0f, 200, -200.0, 0},
    {"MountainCarContinuous-v0", 2, 0, 1, -1.0f, 1.0f, 999, 90.0, 1},
};
#define NUM_CASES ((int)(sizeof cases / sizeof cases[0]))

/* ---- 1. the registry ------------------------------------------------------------------------ */

static void test_registry(void) {
    for (int k = 0; k < NUM_CASES; k++) {
        const classic_case *c = &cases[k];
        const cr_env_info *info = cr_env_find(c->id);
        CHECK_MSG(info, "%s: not found as a batch env", c->id);
        const cudarl_env_def *d = info->def;
        CHECK_MSG((info->caps & CR_ENV_BATCH) && info->batch == &cr_classic_batch,
                  "%s: caps %d, batch twin %p", c->id, info->caps, (const void *)info->batch);
        CHECK_MSG(d == cr_env_def_find(c->id) && cr_env_def_check(d) == CUDARL_OK, "%s", c->id);
        CHECK_MSG(info->obs_dim == c->obs_dim && d->obs_rank == 1 &&
                      d->obs_dtype == CUDARL_OBS_F32 && info->num_actions == c->num_actions &&
                      info->action_dim == c->action_dim &&
                      info->max_episode_steps == c->max_steps && info->solved_return == c->solved &&
                      d->state_check,
                  "%s: obs %d, actions %d, action_dim %d, limit %d, solved %g", c->id,
                  info->obs_dim, info->num_actions, info->action_dim, info->max_episode_steps,
                  info->solved_return);
        CHECK_MSG(c->action_dim == 0 ? d->step && !d->step_box
                                     : !d->step && d->step_box && d->action_low[0] == c->low &&
                                           d->action_high[0] == c->high,
                  "%s: step %p, step_box %p, box [%g, %g]", c->id, (void *)d->step,
                  (void *)d->step_box, d->action_low[0], d->action_high[0]);
        CHECK_MSG(cr_classic_kind(d) >= 0, "%s: not a classic kind", c->id);
    }
    printf("the four envs are registered with the batch and Gymnasium's spaces\n");
}

/* ---- 2. the batch against the pool ---------------------------------------------------------- */

/* A pool of the def and the env batch on a CPU context, with their buffers. */
typedef struct pair {
    const classic_case *c;
    const cr_env_info *info;
    cr_env_pool pool;
    float *pool_obs, *pool_final, *pool_reward;
    uint8_t *pool_term, *pool_trunc;
    cr_env_batch batch;
    void *block;
    float *obs, *final_obs, *reward;
    uint8_t *term, *trunc, *done;
    void *actions, *actions_copy; /* int32 (N) or float (N, K) */
} pair;

/* Zeroed host memory, 64-byte aligned. */
static void *alloc_or_die(size_t bytes) {
    size_t rounded = (bytes + 63) / 64 * 64;
    void *p = aligned_alloc(64, rounded);
    CHECK(p != NULL);
    memset(p, 0, rounded);
    return p;
}

static void pair_init(pair *p, const classic_case *c, cudarl_ctx *ctx) {
    memset(p, 0, sizeof *p);
    p->c = c;
    p->info = cr_env_find(c->id);
    const size_t D = (size_t)c->obs_dim, ab = cr_env_def_action_bytes(p->info->def);
    cr_env_pool_config cfg = {.num_envs = N, .num_threads = 3, .num_groups = 1};
    CHECK_OK(cr_env_pool_init(&p->pool, p->info->def, &cfg, NULL));
    float **f[] = {&p->pool_obs, &p->pool_final, &p->obs, &p->final_obs};
    for (int k = 0; k < 4; k++) *f[k] = alloc_or_die(N * D * sizeof(float));
    p->pool_reward = alloc_or_die(N * sizeof(float));
    p->reward = alloc_or_die(N * sizeof(float));
    uint8_t **u[] = {&p->pool_term, &p->pool_trunc, &p->term, &p->trunc, &p->done};
    for (int k = 0; k < 5; k++) *u[k] = alloc_or_die(N);
    p->actions = alloc_or_die(N * ab);
    p->actions_copy = alloc_or_die(N * ab);
    for (size_t k = 0; k < N * D; k++) p->pool_final[k] = p->final_obs[k] = SENTINEL;
    cr_env_pool_set_outputs(&p->pool, &(cr_env_pool_outputs){p->pool_obs, p->pool_reward,
                                                              p->pool_term, p->pool_trunc,
                                                              p->pool_final});
    p->block = alloc_or_die(cr_env_batch_bytes(p->info, N));
    cr_env_batch_init(&p->batch, p->info, N, p->block);
    CHECK(p->batch.mem == p->block && p->batch.bytes == cr_env_batch_bytes(p->info, N));
    cr_env_pool_reset(&p->pool, SEED);
    cr_env_batch_reset(ctx, &p->batch, SEED, p->obs);
}

static void pair_free(pair *p) {
    cr_env_pool_free(&p->pool);
    void *all[] = {p->pool_obs, p->pool_final, p->pool_reward, p->pool_term, p->pool_trunc,
                   p->block, p->obs, p->final_obs, p->reward, p->term, p->trunc, p->done,
                   p->actions, p->actions_copy};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) free(all[k]);
}

/* Even envs seek the goal from their observation (push along the velocity, beyond the box for
 * a continuous env), odd ones act at random; continuous random actions are uniform over 1.5
 * times the box, so a third fall outside it. */
static void choose_actions(pair *p, cr_philox_state *rng) {
    const classic_case *c = p->c;
    for (int i = 0; i < N; i++) {
        const float *o = p->obs + (size_t)i * (size_t)c->obs_dim;
        float u = cr_philox_uniform(rng);
        int seek = i % 2 == 0 && u < 0.8f;
        if (c->action_dim == 0) {
            float v = c->obs_dim == 6 ? o[5] : o[1]; /* Acrobot's joint speed, or the velocity */
            int32_t a = seek ? (v >= 0 ? 2 : 0) : (int32_t)(cr_philox_next_u32(rng) % 3u);
            ((int32_t *)p->actions)[i] = a;
        } else {
            float a = 1.5f * (2.0f * cr_philox_uniform(rng) - 1.0f) * c->high;
            if (seek) a = (o[c->obs_dim - 1] >= 0 ? 1.5f : -1.5f) * c->high;
            ((float *)p->actions)[i] = a;
        }
    }
}

/* Requires the pool's and the batch's outputs of this step, and their env states, equal. */
static void compare(pair *p, long t) {
    const size_t D = (size_t)p->c->obs_dim, sb = p->info->def->state_bytes;
    const char *id = p->c->id;
    CHECK_MSG(!memcmp(p->obs, p->pool_obs, N * D * sizeof(float)), "%s step %ld: obs differ",
              id, t);
    CHECK_MSG(!memcmp(p->reward, p->pool_reward, N * sizeof(float)), "%s step %ld: rewards "
              "differ", id, t);
    CHECK_MSG(!memcmp(p->term, p->pool_term, N) && !memcmp(p->trunc, p->pool_trunc, N),
              "%s step %ld: flags differ", id, t);
    CHECK_MSG(!memcmp(p->final_obs, p->pool_final, N * D * sizeof(float)), "%s step %ld: "
              "final_obs differ", id, t);
    _Alignas(16) unsigned char state[CR_CLASSIC_STATE_MAX];
    for (int i = 0; i < N; i++) {
        CHECK_MSG(p->done[i] == (p->term[i] | p->trunc[i]), "%s step %ld env %d: done %d", id, t,
                  i, p->done[i]);
        cr_classic_get_state(&p->batch.classic, p->batch.classic.states, i, state);
        CHECK_MSG(!memcmp(state, cr_env_pool_state(&p->pool, i), sb) &&
                      p->batch.classic.elapsed[i] == p->pool.elapsed[i],
                  "%s step %ld env %d: states differ (step counts %d, %d)", id, t, i,
                  p->batch.classic.elapsed[i], p->pool.elapsed[i]);
    }
    char why[256];
    int bad = 0, i = cr_env_pool_check_state(&p->pool, &bad, why, sizeof why);
    CHECK_MSG(i < 0, "%s step %ld: the pool's env %d fails its state check (%d): %s", id, t, i,
              bad, why);
    i = cr_env_batch_check_state(&p->batch, p->batch.mem, &bad, why, sizeof why);
    CHECK_MSG(i < 0, "%s step %ld: the batch's env %d fails its state check (%d): %s", id, t, i,
              bad, why);
}

static void test_batch_against_pool(cudarl_ctx *ctx) {
    for (int k = 0; k < NUM_CASES; k++) {
        const classic_case *c = &cases[k];
        pair p;
        pair_init(&p, c, ctx);
        compare(&p, 0);
        cr_philox_state rng;
        cr_philox_seed(&rng, SEED + 1, (uint64_t)k);
        const size_t ab = N * cr_env_def_action_bytes(p.info->def);
        const long steps = 2L * c->max_steps + 100;
        long terms = 0, truncs = 0, clipped = 0;
        for (long t = 1; t <= steps; t++) {
            choose_actions(&p, &rng);
            memcpy(p.actions_copy, p.actions, ab);
            cr_env_pool_step(&p.pool, p.actions);
            cr_env_batch_step(ctx, &p.batch, p.actions, p.obs, p.reward, p.term, p.trunc,
                              p.done, p.final_obs);
            CHECK_MSG(!memcmp(p.actions, p.actions_copy, ab), "%s: the batch changed the "
                      "caller's actions", c->id);
            compare(&p, t);
            for (int i = 0; i < N; i++) {
                terms += p.term[i], truncs += p.trunc[i];
                if (c->action_dim) {
                    float a = ((float *)p.actions)[i];
                    clipped += a < c->low || a > c->high;
                }
            }
        }
        printf("%s: batch = pool over %d envs x %ld steps (%ld terminated, %ld truncated, %ld "
               "actions clipped)\n", c->id, N, steps, terms, truncs, clipped);
        CHECK_MSG(truncs > 0 && (terms > 0) == c->terminates, "%s: %ld terminated, %ld truncated",
                  c->id, terms, truncs);
        CHECK_MSG(!c->action_dim || clipped > 0, "%s: no action was clipped", c->id);
        pair_free(&p);
    }
}

/* ---- 3. a bad discrete action ---------------------------------------------------------------- */

static void test_bad_action(cudarl_ctx *ctx) {
    int fds[2];
    CHECK(pipe(fds) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 2);
        pair p;
        pair_init(&p, &cases[0], ctx);
        memset(p.actions, 0, N * sizeof(int32_t));
        ((int32_t *)p.actions)[4] = 3;
        cr_env_batch_step(ctx, &p.batch, p.actions, p.obs, p.reward, p.term, p.trunc, p.done,
                          p.final_obs);
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
    CHECK_MSG(strstr(msg, "'Acrobot-v1': action 3 for env 4 is outside 0..2"), "message: %s",
              msg);
    printf("a discrete action out of range aborts the batch, naming it\n");
}

/* ---- 4. corners of the dynamics ------------------------------------------------------------- */

/* MountainCarContinuous after its first step computes in float32 and compares with the
 * constants rounded to float32 (numpy's rule for a float32 and a Python float): a car that lands
 * exactly on float32(0.45) (< 0.45) has reached the goal, and one that lands exactly on
 * float32(-1.2) stops at the wall. The start is moved along the float32 grid until the step
 * lands a few ulps short of the target, then one ulp at a time, so that the landing counted is
 * the first on the target, not a clip onto it. */
static void mcc_landing(const char *what, float velocity, float target, int want_term,
                        int want_stop) {
    const float a = 0.0f, dir = velocity > 0 ? INFINITY : -INFINITY; /* where the car moves */
    float near = target, start = target - (velocity > 0 ? 0.05f : -0.05f), obs[2], reward;
    for (int u = 0; u < 4; u++) near = nextafterf(near, -dir);
    int stepping = 0; /* the last move was one ulp, from a landing just short of the target */
    for (int k = 0; k < 1000; k++) {
        cr_mountain_car_continuous_state e = {.s = {start, velocity}};
        int term = cr_mountain_car_continuous_step(&e, &a, obs, &reward);
        if (obs[0] == target && stepping) {
            CHECK_MSG(term == want_term, "%s: landed on %.9g: terminated %d, expected %d", what,
                      (double)target, term, want_term);
            CHECK_MSG((obs[1] == 0.0f) == want_stop, "%s: landed on %.9g with velocity %.9g",
                      what, (double)target, (double)obs[1]);
            float want_reward = want_term ? 100.0f : 0.0f;
            CHECK_MSG(reward == want_reward, "%s: reward %.9g, expected %.9g", what,
                      (double)reward, (double)want_reward);
            return;
        }
        int short_of = velocity > 0 ? obs[0] < target : obs[0] > target;
        int close = velocity > 0 ? obs[0] >= near : obs[0] <= near;
        stepping = short_of && close;
        float jump = start + (near - obs[0]);
        start = stepping ? nextafterf(start, dir) : jump != start ? jump : nextafterf(start, -dir);
    }
    CHECK_MSG(0, "%s: no start on the float32 grid lands on %.9g", what, (double)target);
}

static void test_corners(void) {
    mcc_landing("goal", 0.01f, (float)CR_MCC_GOAL_POSITION, 1, 0);
    mcc_landing("left wall", -0.01f, (float)CR_MCC_MIN_POSITION, 0, 1);

    /* MountainCar: the wall stops the car, in float64 */
    cr_mountain_car_state m = {.s = {-1.19, -0.05}};
    float obs[3], reward;
    int term = cr_mountain_car_step(&m, 0, obs, &reward);
    CHECK_MSG(m.s[0] == -1.2 && m.s[1] == 0.0 && !term && reward == -1.0f,
              "MountainCar at the wall: position %.17g, velocity %.17g", m.s[0], m.s[1]);

    /* Pendulum and MountainCarContinuous clip the action: 5 acts (and costs) as 2, 3 as 1 */
    const cr_env_info *pd = cr_env_find("Pendulum-v1");
    const cr_env_info *mcc = cr_env_find("MountainCarContinuous-v0");
    const cr_env_info *infos[2] = {pd, mcc};
    const float big[2] = {5.0f, 3.0f};
    cudarl_ctx *ctx;
    CHECK_OK(cudarl_ctx_init(&ctx, CUDARL_DEVICE_CPU, 0));
    for (int k = 0; k < 2; k++) {
        const cr_env_info *info = infos[k];
        float o[2][3], f[2][3], r[2];
        uint8_t te[2], tr[2], dn[2];
        for (int side = 0; side < 2; side++) {
            cr_env_batch b;
            void *block = alloc_or_die(cr_env_batch_bytes(info, 1));
            cr_env_batch_init(&b, info, 1, block);
            cr_env_batch_reset(ctx, &b, 5, o[side]);
            float a = side == 0 ? big[k] : info->def->action_high[0];
            cr_env_batch_step(ctx, &b, &a, o[side], &r[side], &te[side], &tr[side], &dn[side],
                              f[side]);
            free(block);
        }
        CHECK_MSG(!memcmp(o[0], o[1], sizeof o[0]) && r[0] == r[1], "%s: action %g does not "
                  "act as %g (reward %.9g, %.9g)", info->id, big[k], info->def->action_high[0],
                  r[0], r[1]);
    }
    cudarl_ctx_free(ctx);
    printf("corners: MountainCarContinuous' float32 goal and wall, MountainCar's wall, clipped "
           "actions\n");
}

/* ---- 5. refusals ---------------------------------------------------------------------------- */

static void acrobot_theta(void *s) { ((cr_acrobot_state *)s)->s[0] = 4.0; }
static void acrobot_speed(void *s) { ((cr_acrobot_state *)s)->s[3] = NAN; }
static void acrobot_pad(void *s) { ((cr_acrobot_state *)s)->pad = 1; }
static void acrobot_rng(void *s) { ((cr_acrobot_state *)s)->rng.used = 9; }
static void mc_position(void *s) { ((cr_mountain_car_state *)s)->s[0] = 0.7; }
static void mc_velocity(void *s) { ((cr_mountain_car_state *)s)->s[1] = -0.08; }
static void pd_theta(void *s) { ((cr_pendulum_state *)s)->s[0] = 1e6; }
static void pd_speed(void *s) { ((cr_pendulum_state *)s)->s[1] = 8.5; }
static void mcc_fresh(void *s) { ((cr_mountain_car_continuous_state *)s)->fresh = 2; }
static void mcc_velocity(void *s) { ((cr_mountain_car_continuous_state *)s)->s[1] = INFINITY; }

static const struct {
    const char *id;
    void (*mutate)(void *);
    const char *needle;
} refusals[] = {
    {"Acrobot-v1", acrobot_theta, "theta1 is 4, expected a number in [-3.14159, 3.14159]"},
    {"Acrobot-v1", acrobot_speed, "dtheta2 is nan"},
    {"Acrobot-v1", acrobot_pad, "pad is 1, expected 0..0"},
    {"Acrobot-v1", acrobot_rng, "rng.used is 9, expected 0..4"},
    {"MountainCar-v0", mc_position, "position is 0.7, expected a number in [-1.2, 0.6]"},
    {"MountainCar-v0", mc_velocity, "velocity is -0.08, expected a number in [-0.07, 0.07]"},
    {"Pendulum-v1", pd_theta, "th is 1e+06"},
    {"Pendulum-v1", pd_speed, "thdot is 8.5, expected a number in [-8, 8]"},
    {"MountainCarContinuous-v0", mcc_fresh, "fresh is 2, expected 0..1"},
    {"MountainCarContinuous-v0", mcc_velocity, "velocity is inf"},
};

/* A block copy with env `i`'s state mutated (or its step count set to `elapsed` if >= 0) is
 * refused by the batch's check, naming env i and the field. */
static void expect_block_refused(const cr_env_batch *b, int i, void (*mutate)(void *),
                                 int32_t elapsed, int want_bad, const char *needle) {
    unsigned char *copy = alloc_or_die(b->bytes);
    memcpy(copy, b->mem, b->bytes);
    if (b->info->batch == &cr_classic_batch) {
        cr_classic view;
        cr_classic_init(&view, b->info->def, b->num_envs, copy);
        _Alignas(16) unsigned char state[CR_CLASSIC_STATE_MAX];
        cr_classic_get_state(&view, view.states, i, state);
        if (mutate) mutate(state);
        cr_classic_set_state(&view, i, state, elapsed >= 0 ? elapsed : view.elapsed[i]);
    } else { /* CartPole: x is the first of env i's four doubles */
        cr_cartpole view;
        cr_cartpole_init(&view, b->num_envs, copy);
        if (mutate) mutate(view.state + (size_t)i * CR_CARTPOLE_OBS_DIM);
        if (elapsed >= 0) view.elapsed[i] = elapsed;
    }
    char why[256] = "";
    int bad = 0, got = cr_env_batch_check_state(b, copy, &bad, why, sizeof why);
    CHECK_MSG(got == i && bad == want_bad && strstr(why, needle), "%s: expected env %d refused "
              "(%d) with '%s', got env %d (%d): %s", b->info->id, i, want_bad, needle, got, bad,
              why);
    free(copy);
}

static void cartpole_nan(void *s) { ((double *)s)[0] = NAN; }

static void test_refusals(cudarl_ctx *ctx) {
    for (size_t k = 0; k < sizeof refusals / sizeof refusals[0]; k++) {
        const cr_env_info *info = cr_env_find(refusals[k].id);
        const cudarl_env_def *d = info->def;
        _Alignas(16) unsigned char state[CR_CLASSIC_STATE_MAX] = {0};
        float obs[8];
        d->seed(state, 3, 0);
        d->reset(state, obs);
        char why[256] = "";
        CHECK_MSG(cr_env_check_state(d, state, 0, why, sizeof why) == 0, "%s: a reset state is "
                  "refused: %s", d->id, why);
        refusals[k].mutate(state);
        int bad = cr_env_check_state(d, state, 0, why, sizeof why);
        CHECK_MSG(bad == 1 && strstr(why, refusals[k].needle), "%s: expected '%s', got %d: %s",
                  d->id, refusals[k].needle, bad, why);

        cr_env_batch b;
        void *block = alloc_or_die(cr_env_batch_bytes(info, 5));
        cr_env_batch_init(&b, info, 5, block);
        float o[5 * 8];
        cr_env_batch_reset(ctx, &b, 3, o);
        int bad_env = (int)k % 5;
        CHECK(cr_env_batch_check_state(&b, block, &bad, why, sizeof why) == -1);
        expect_block_refused(&b, bad_env, refusals[k].mutate, -1, 1, refusals[k].needle);
        char limit[64];
        snprintf(limit, sizeof limit, "its step count is %d, expected 0..%d",
                 info->max_episode_steps, info->max_episode_steps - 1);
        expect_block_refused(&b, bad_env, NULL, info->max_episode_steps, 2, limit);
        free(block);
    }
    const cr_env_info *cp = cr_env_find("CartPole-v1");
    cr_env_batch b;
    void *block = alloc_or_die(cr_env_batch_bytes(cp, 4));
    cr_env_batch_init(&b, cp, 4, block);
    float o[16];
    cr_env_batch_reset(ctx, &b, 3, o);
    char why[256];
    int bad;
    CHECK(cr_env_batch_check_state(&b, block, &bad, why, sizeof why) == -1);
    expect_block_refused(&b, 2, cartpole_nan, -1, 1, "x is nan");
    expect_block_refused(&b, 1, NULL, 500, 2, "its step count is 500, expected 0..499");
    free(block);
    printf("a field out of range is refused, naming it, by each def and by the batch's check\n");
}

int main(void) {
    cudarl_ctx *ctx;
    CHECK_OK(cudarl_ctx_init(&ctx, CUDARL_DEVICE_CPU, 0));
    test_registry();
    test_batch_against_pool(ctx);
    test_bad_action(ctx);
    test_corners();
    test_refusals(ctx);
    cudarl_ctx_free(ctx);
    printf("test_classic: ok\n");
    return 0;
}
