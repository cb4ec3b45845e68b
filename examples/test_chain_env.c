/* Chain-v0 registered through the public API: found by id and listed, its functions called
 * directly, and a pool of it on several threads and groups against the rules of chain_env.h
 * at every step (moves of one cell, rewards and termination at the ends, truncation at 50,
 * final_obs, reset to the start), the same on 1 thread as on 3, walking right earning the
 * solve threshold where a random walk does not, and the state check. */
#include <string.h>

#include "chain_env.h"
#include "check.h"
#include "env/env.h"
#include "env/env_pool.h"

/* The cell of one-hot row obs (CHAIN_LENGTH); fails unless exactly one 1 and zeros. */
static int cell_of(const float *obs, const char *what, int step, int env) {
    int cell = -1;
    for (int j = 0; j < CHAIN_LENGTH; j++) {
        CHECK_MSG(obs[j] == 0.0f || obs[j] == 1.0f, "%s of env %d at step %d: element %d is %g",
                  what, env, step, j, (double)obs[j]);
        if (obs[j] == 1.0f) {
            CHECK_MSG(cell < 0, "%s of env %d at step %d: two ones", what, env, step);
            cell = j;
        }
    }
    CHECK_MSG(cell >= 0, "%s of env %d at step %d: no one", what, env, step);
    return cell;
}

static void test_registered(void) {
    CHECK_OK(cudarl_env_register(&chain_env_def));
    const cudarl_env_def *d = cr_env_def_find(CHAIN_ID);
    CHECK(d && !strcmp(d->id, CHAIN_ID) && d->num_actions == 2 && d->step == chain_env_def.step);
    CHECK(cr_env_def_obs_elems(d) == CHAIN_LENGTH && d->max_episode_steps == CHAIN_MAX_STEPS);
    int listed = 0;
    for (const char *const *n = cudarl_env_names(); *n; n++) listed += !strcmp(*n, CHAIN_ID);
    CHECK_MSG(listed == 1, "%s listed %d times by cudarl_env_names", CHAIN_ID, listed);
    CHECK(cudarl_env_register(&chain_env_def) == CUDARL_ERR_INVALID_ARG);
}

/* The functions alone: reset at the start; right from the start moves to 3 or (slip) to 1. */
static void test_functions(void) {
    chain_state c;
    float obs[CHAIN_LENGTH], reward;
    uint8_t term;
    int moved_right = 0;
    for (uint64_t i = 0; i < 200; i++) {
        chain_env_def.seed(&c, 5, i);
        chain_env_def.reset(&c, obs);
        CHECK(cell_of(obs, "reset obs", 0, (int)i) == CHAIN_START);
        chain_env_def.step(&c, 1, obs, &reward, &term);
        int cell = cell_of(obs, "obs", 1, (int)i);
        CHECK(cell == CHAIN_START + 1 || cell == CHAIN_START - 1);
        CHECK(reward == 0.0f && !term);
        moved_right += cell == CHAIN_START + 1;
    }
    CHECK_MSG(moved_right > 160 && moved_right < 200, "%d of 200 envs moved right (slip 0.1)",
              moved_right);
}

typedef struct chain_pool {
    cr_env_pool pool;
    float *obs, *final_obs, *reward;
    uint8_t *terminated, *truncated;
} chain_pool;

static void chain_pool_init(chain_pool *p, int n, int threads, int groups) {
    size_t un = (size_t)n;
    cr_env_pool_config cfg = {.num_envs = n, .num_threads = threads, .num_groups = groups};
    CHECK_OK(cr_env_pool_init(&p->pool, cr_env_def_find(CHAIN_ID), &cfg, NULL));
    p->obs = calloc(un * CHAIN_LENGTH, sizeof(float));
    p->final_obs = calloc(un * CHAIN_LENGTH, sizeof(float));
    p->reward = calloc(un, sizeof(float));
    p->terminated = calloc(un, 1);
    p->truncated = calloc(un, 1);
    CHECK(p->obs && p->final_obs && p->reward && p->terminated && p->truncated);
    cr_env_pool_set_outputs(&p->pool, &(cr_env_pool_outputs){p->obs, p->reward, p->terminated,
                                                              p->truncated, p->final_obs});
    cr_env_pool_reset(&p->pool, 11);
}

static void chain_pool_free(chain_pool *p) {
    cr_env_pool_free(&p->pool);
    free(p->obs), free(p->final_obs), free(p->reward), free(p->terminated), free(p->truncated);
}

/* Checks env i's step from `cell` against the rules; returns its cell after the step. */
static int check_transition(const chain_pool *p, int i, int cell, int *elapsed, int step) {
    const float *o = p->obs + (size_t)i * CHAIN_LENGTH;
    int ended = p->terminated[i] || p->truncated[i];
    int next = cell_of(ended ? p->final_obs + (size_t)i * CHAIN_LENGTH : o, "last obs", step, i);
    CHECK_MSG(next == cell + 1 || next == cell - 1, "env %d at step %d moved from %d to %d", i,
              step, cell, next);
    int end = next == 0 || next == CHAIN_LENGTH - 1;
    float want = next == 0 ? CHAIN_NEAR_REWARD : next == CHAIN_LENGTH - 1 ? 1.0f : 0.0f;
    ++*elapsed;
    CHECK_MSG(p->reward[i] == want && p->terminated[i] == end &&
              p->truncated[i] == (*elapsed == CHAIN_MAX_STEPS), "env %d at step %d (cell %d, "
              "episode step %d): reward %g terminated %d truncated %d", i, step, next, *elapsed,
              (double)p->reward[i], p->terminated[i], p->truncated[i]);
    if (!ended) return next;
    *elapsed = 0;
    CHECK(cell_of(o, "first obs", step, i) == CHAIN_START);
    return CHAIN_START;
}

/* 3000 random steps of 37 envs on 3 threads in 2 groups, each step checked; a pool on 1
 * thread equal bit for bit. */
static void test_pool(void) {
    enum { N = 37, STEPS = 3000 };
    chain_pool a, b;
    chain_pool_init(&a, N, 3, 2);
    chain_pool_init(&b, N, 1, 1);
    int cell[N], elapsed[N] = {0}, truncations = 0;
    int32_t actions[N];
    for (int i = 0; i < N; i++) cell[i] = cell_of(a.obs + i * CHAIN_LENGTH, "reset obs", 0, i);
    cr_philox_state rng;
    cr_philox_seed(&rng, 3, 0);
    for (int s = 1; s <= STEPS; s++) {
        for (int i = 0; i < N; i++) /* mostly right, so that some episodes run out of time */
            actions[i] = cr_philox_next_u32(&rng) % 100 < 52;
        cr_env_pool_step(&a.pool, actions);
        cr_env_pool_step(&b.pool, actions);
        for (int i = 0; i < N; i++) {
            cell[i] = check_transition(&a, i, cell[i], &elapsed[i], s);
            truncations += a.truncated[i];
        }
        CHECK_MSG(!memcmp(a.obs, b.obs, sizeof(float) * N * CHAIN_LENGTH) &&
                  !memcmp(a.final_obs, b.final_obs, sizeof(float) * N * CHAIN_LENGTH) &&
                  !memcmp(a.reward, b.reward, sizeof(float) * N) &&
                  !memcmp(a.terminated, b.terminated, N) && !memcmp(a.truncated, b.truncated, N),
                  "3 threads and 1 thread differ at step %d", s);
    }
    CHECK_MSG(truncations > 0, "no episode reached the %d-step limit", CHAIN_MAX_STEPS);
    chain_pool_free(&a);
    chain_pool_free(&b);
}

/* Mean return over the episodes that end in 2000 steps of 64 envs under a fixed policy. */
static double policy_return(int always_right) {
    enum { N = 64 };
    chain_pool p;
    chain_pool_init(&p, N, 2, 1);
    double ret[N] = {0}, total = 0;
    int episodes = 0;
    int32_t actions[N];
    cr_philox_state rng;
    cr_philox_seed(&rng, 4, 0);
    for (int s = 0; s < 2000; s++) {
        for (int i = 0; i < N; i++)
            actions[i] = always_right ? 1 : (int32_t)(cr_philox_next_u32(&rng) & 1);
        cr_env_pool_step(&p.pool, actions);
        for (int i = 0; i < N; i++) {
            ret[i] += p.reward[i];
            if (p.terminated[i] || p.truncated[i]) total += ret[i], episodes++, ret[i] = 0;
        }
    }
    chain_pool_free(&p);
    return total / episodes;
}

static void test_learnable(void) {
    double right = policy_return(1), random = policy_return(0);
    CHECK_MSG(right >= chain_env_def.solved_return, "walking right earns %.3f < %.2f", right,
              chain_env_def.solved_return);
    CHECK_MSG(random < 0.5, "a random walk earns %.3f: the task would be too easy", random);
}

/* The state check: every state a pool reaches passes; a cell outside the corridor and a step
 * count past the time limit are refused, saying which. */
static void test_state_check(void) {
    const cudarl_env_def *d = cr_env_def_find(CHAIN_ID);
    chain_state c;
    float obs[CHAIN_LENGTH];
    char why[128];
    d->seed(&c, 3, 0);
    d->reset(&c, obs);
    CHECK(cr_env_check_state(d, &c, 0, why, sizeof why) == 0);
    c.pos = CHAIN_LENGTH;
    CHECK(cr_env_check_state(d, &c, 0, why, sizeof why) == 1);
    CHECK_MSG(strstr(why, "pos is 10, expected 0..9"), "why: %s", why);
    c.pos = CHAIN_START;
    CHECK(cr_env_check_state(d, &c, CHAIN_MAX_STEPS, why, sizeof why) == 2);
    CHECK_MSG(strstr(why, "step count is 50, expected 0..49"), "why: %s", why);
}

int main(void) {
    test_registered();
    test_functions();
    test_pool();
    test_learnable();
    test_state_check();
    printf("test_chain_env: ok\n");
    return 0;
}
