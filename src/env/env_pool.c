/* The env thread pool (env_pool.h): N states of one def in one block, stepped in shards by T
 * threads, dispatched per group without locks.
 *
 * Dispatch. Each thread ("lane") has a 32-bit to-do word: bit g set means group g is waiting
 * for it, bit 31 means stop. step_begin sets the group's countdown to the number of spawned
 * lanes with a non-empty shard, then sets bit g in each of their words. A lane takes its whole
 * word with one exchange, steps the pending group begun first, and counts the group down; the
 * lane that reaches 0 wakes the waiter. Everything the caller wrote before step_begin (actions,
 * job) is published by the release of the bit, and everything the lanes wrote (outputs) by the
 * release of their countdown.
 *
 * Sleeping. A lane or a waiter spins for spin_s (yielding the core between rounds after the
 * first microsecond), then raises its `sleeping` flag and sleeps on the futex of the word it
 * waits on, re-checking the word first; the other side changes the word and then reads the
 * flag (all sequentially consistent), so either it sees the flag and wakes the sleeper, or the
 * sleeper sees the change: no wake-up is lost, and none is a system call when nobody sleeps. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "env/env.h"
#include "env/env_pool.h"

#define STOP_BIT (1u << 31)

enum pool_job { JOB_STEP = 0, JOB_RESET = 1 };

typedef struct cr_env_pool_lane {
    _Alignas(CR_ARENA_ALIGN) atomic_uint todo; /* bit g: group g to step; STOP_BIT: exit */
    atomic_int sleeping;                       /* 1 while waiting on the futex of todo */
    cr_env_pool *pool;
    int index;
    pthread_t thread;
} pool_lane;

typedef struct cr_env_pool_group {
    int begin, end;         /* envs [begin, end) */
    int busy_lanes;         /* spawned lanes with a non-empty shard of this group */
    int in_flight;          /* begun, not yet waited for (the caller's own bookkeeping) */
    cr_env_pool_hook before;
    void *before_arg;
    /* written by the caller before dispatch, read by the lanes */
    int job;
    const void *actions;    /* (N) int32, or (N, action_dim) floats */
    uint64_t seed;          /* JOB_RESET */
    uint64_t seq;           /* dispatch order */
    _Alignas(CR_ARENA_ALIGN) atomic_uint remaining; /* lanes still stepping */
    atomic_int waiter_sleeping;
} pool_group;

/* ---- waiting ------------------------------------------------------------------------------ */

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    __asm__ __volatile__("yield");
#endif
}

/* Sleeps while *word == expected (a spurious return is fine: callers re-check). */
static void word_sleep(atomic_uint *word, unsigned expected) {
#ifdef __linux__
    syscall(SYS_futex, (void *)word, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
#else
    (void)word, (void)expected;
    sched_yield();
#endif
}

static void word_wake(atomic_uint *word) {
#ifdef __linux__
    syscall(SYS_futex, (void *)word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
#else
    (void)word;
#endif
}

/* Spins up to spin_s seconds while (*word == 0) == while_zero; returns the value seen last.
 * After the first SPIN_HOT_S it also yields between rounds of pauses: on a machine with fewer
 * free cores than threads the thread being waited for then runs on this core at once, instead
 * of after this one's time slice (a far slower hand-off); with a core each, a yield returns at
 * once. */
#define SPIN_HOT_S 1e-6
static unsigned word_spin(atomic_uint *word, int while_zero, double spin_s) {
    unsigned v = atomic_load_explicit(word, memory_order_relaxed);
    if ((v == 0) != while_zero || spin_s <= 0) return v;
    double start = cr_time_now(), now;
    for (;;) {
        for (int k = 0; k < 16; k++) {
            v = atomic_load_explicit(word, memory_order_relaxed);
            if ((v == 0) != while_zero) return v;
            cpu_relax();
        }
        if ((now = cr_time_now() - start) > spin_s) return v;
        if (now > SPIN_HOT_S) sched_yield();
    }
}

/* Takes the lane's to-do bits, waiting for at least one. */
static unsigned lane_take(pool_lane *l, double spin_s) {
    word_spin(&l->todo, 1, spin_s);
    unsigned bits = atomic_exchange(&l->todo, 0);
    if (bits) return bits;
    atomic_store(&l->sleeping, 1);
    while (!(bits = atomic_exchange(&l->todo, 0))) word_sleep(&l->todo, 0);
    atomic_store(&l->sleeping, 0);
    return bits;
}

static void lane_give(pool_lane *l, unsigned bits) {
    atomic_fetch_or(&l->todo, bits);
    if (atomic_load(&l->sleeping)) word_wake(&l->todo);
}

/* A lane is done with group g. */
static void group_count_down(pool_group *g) {
    if (atomic_fetch_sub(&g->remaining, 1) == 1 && atomic_load(&g->waiter_sleeping))
        word_wake(&g->remaining);
}

/* Waits until every spawned lane is done with g (acquires their outputs). */
static void group_wait_lanes(pool_group *g, double spin_s) {
    word_spin(&g->remaining, 0, spin_s);
    unsigned v = atomic_load(&g->remaining);
    if (v == 0) return;
    atomic_store(&g->waiter_sleeping, 1);
    while ((v = atomic_load(&g->remaining)) != 0) word_sleep(&g->remaining, v);
    atomic_store(&g->waiter_sleeping, 0);
}

/* ---- stepping a shard ---------------------------------------------------------------------- */

_Noreturn static void bad_action(const cr_env_pool *p, int env, int32_t action) {
    fprintf(stderr, "cudarl: env pool '%s': action %d for env %d is outside 0..%d: the policy "
            "produced an invalid action (a bug in its sampler or its action count)\n",
            p->def->id, (int)action, env, p->def->num_actions - 1);
    cr_assert_fail("0 <= action && action < num_actions", __FILE__, __LINE__);
}

/* Envs [begin, end) of `lane` in group g (as even as possible over the lanes). */
static void shard_range(const cr_env_pool *p, const pool_group *g, int lane, int *begin,
                        int *end) {
    int64_t n = g->end - g->begin, t = p->num_threads;
    *begin = g->begin + (int)(n * lane / t);
    *end = g->begin + (int)(n * (lane + 1) / t);
}

static void shard_step(cr_env_pool *p, const pool_group *g, int begin, int end) {
    const cudarl_env_def *d = p->def;
    const int32_t *actions = g->actions;
    const float *box = g->actions; /* continuous: (N, action_dim) */
    const cr_env_pool_outputs *out = &p->out;
    size_t ob = p->obs_bytes, stride = p->state_stride;
    int32_t max_steps = d->max_episode_steps;
    const int K = d->action_dim;
    float clipped[CUDARL_ACTION_DIM_MAX];
    for (int i = begin; i < end; i++) {
        void *state = p->states + (size_t)i * stride;
        unsigned char *obs = (unsigned char *)out->obs + (size_t)i * ob;
        float reward = 0.0f;
        uint8_t term = 0;
        if (K > 0) {
            cr_env_clip_action(d, box + (size_t)i * K, clipped);
            d->step_box(state, clipped, obs, &reward, &term);
        } else {
            int32_t a = actions[i];
            if (a < 0 || a >= d->num_actions) bad_action(p, i, a);
            d->step(state, a, obs, &reward, &term);
        }
        int32_t elapsed = p->elapsed[i] < INT32_MAX ? p->elapsed[i] + 1 : INT32_MAX;
        uint8_t trunc = max_steps > 0 && elapsed >= max_steps;
        term = term != 0;
        out->reward[i] = reward;
        out->terminated[i] = term;
        out->truncated[i] = trunc;
        if (term | trunc) {
            memcpy((unsigned char *)out->final_obs + (size_t)i * ob, obs, ob);
            d->reset(state, obs);
            elapsed = 0;
        }
        p->elapsed[i] = elapsed;
    }
}

static void shard_reset(cr_env_pool *p, const pool_group *g, int begin, int end) {
    const cudarl_env_def *d = p->def;
    for (int i = begin; i < end; i++) {
        void *state = p->states + (size_t)i * p->state_stride;
        memset(state, 0, d->state_bytes);
        d->seed(state, g->seed, (uint64_t)(p->first_env + i));
        d->reset(state, (unsigned char *)p->out.obs + (size_t)i * p->obs_bytes);
        p->elapsed[i] = 0;
    }
}

/* Lane `lane`'s part of group `gi`'s current job. */
static void lane_run(cr_env_pool *p, int lane, int gi) {
    pool_group *g = &p->groups[gi];
    int begin, end;
    shard_range(p, g, lane, &begin, &end);
    if (begin == end) return;
    if (g->job == JOB_RESET) {
        shard_reset(p, g, begin, end);
        return;
    }
    if (g->before) g->before(g->before_arg, gi);
    shard_step(p, g, begin, end);
}

/* The pending group (a bit of `bits`) begun first. */
static int oldest_group(const cr_env_pool *p, unsigned bits) {
    int best = -1;
    for (int gi = 0; gi < p->num_groups; gi++)
        if ((bits >> gi & 1u) && (best < 0 || p->groups[gi].seq < p->groups[best].seq)) best = gi;
    return best;
}

static void *lane_main(void *arg) {
    pool_lane *l = arg;
    cr_env_pool *p = l->pool;
    unsigned pending = 0;
    for (;;) {
        pending |= pending ? atomic_exchange(&l->todo, 0) : lane_take(l, p->spin_s);
        if (pending & STOP_BIT) return NULL;
        int gi = oldest_group(p, pending);
        pending &= ~(1u << gi);
        lane_run(p, l->index, gi);
        group_count_down(&p->groups[gi]);
    }
}

/* ---- dispatch ------------------------------------------------------------------------------ */

/* Index of the first spawned lane: lane 0 is the caller's unless caller_idle. */
static int first_spawned(const cr_env_pool *p) { return p->caller_idle ? 0 : 1; }

static void group_dispatch(cr_env_pool *p, int gi) {
    pool_group *g = &p->groups[gi];
    CUDARL_ASSERT(!g->in_flight); /* begun twice without a wait */
    g->in_flight = 1;
    g->seq = p->next_seq++;
    atomic_store(&g->remaining, (unsigned)g->busy_lanes);
    for (int k = first_spawned(p); k < p->num_threads; k++) {
        int begin, end;
        shard_range(p, g, k, &begin, &end);
        if (begin < end) lane_give(&p->lanes[k], 1u << gi);
    }
}

static void group_finish(cr_env_pool *p, int gi) {
    pool_group *g = &p->groups[gi];
    CUDARL_ASSERT(g->in_flight); /* waited for without a begin */
    if (!p->caller_idle) lane_run(p, 0, gi);
    group_wait_lanes(g, p->spin_s);
    g->in_flight = 0;
}

/* A vector env (def->vec_step): one group, no threads; the whole batch is stepped by the def's
 * vec_step in step_wait, on the driving thread, after the group's hook. */
static void vec_step(cr_env_pool *p) {
    pool_group *g = &p->groups[0];
    const cudarl_env_def *d = p->def;
    const void *actions = g->actions;
    if (d->action_dim > 0) { /* clipped into the pool's copy; the caller's stays as sampled */
        const float *a = g->actions;
        for (int i = 0; i < p->num_envs; i++)
            cr_env_clip_action(d, a + (size_t)i * d->action_dim,
                               p->vec_actions + (size_t)i * d->action_dim);
        actions = p->vec_actions;
    } else {
        const int32_t *a = g->actions;
        for (int i = 0; i < p->num_envs; i++)
            if (a[i] < 0 || a[i] >= d->num_actions) bad_action(p, i, a[i]);
    }
    if (g->before) g->before(g->before_arg, 0);
    d->vec_step(d->vec_user, p->num_envs, actions, p->out.obs, p->out.reward,
                p->out.terminated, p->out.truncated, p->out.final_obs);
}

void cr_env_pool_step_begin(cr_env_pool *p, int group, const void *actions) {
    CUDARL_ASSERT(group >= 0 && group < p->num_groups && actions && p->out.obs);
    pool_group *g = &p->groups[group];
    g->job = JOB_STEP;
    g->actions = actions;
    if (p->def->vec_step) {
        g->in_flight = 1;
        return;
    }
    group_dispatch(p, group);
}

void cr_env_pool_step_wait(cr_env_pool *p, int group) {
    CUDARL_ASSERT(group >= 0 && group < p->num_groups);
    if (p->def->vec_step) {
        vec_step(p);
        p->groups[group].in_flight = 0;
        return;
    }
    group_finish(p, group);
}

void cr_env_pool_step(cr_env_pool *p, const void *actions) {
    for (int gi = 0; gi < p->num_groups; gi++) cr_env_pool_step_begin(p, gi, actions);
    for (int gi = 0; gi < p->num_groups; gi++) cr_env_pool_step_wait(p, gi);
}

void cr_env_pool_reset(cr_env_pool *p, uint64_t seed) {
    CUDARL_ASSERT(p->out.obs);
    if (p->def->vec_step) {
        p->def->vec_reset(p->def->vec_user, p->num_envs, seed, p->out.obs);
        return;
    }
    for (int gi = 0; gi < p->num_groups; gi++) {
        p->groups[gi].job = JOB_RESET;
        p->groups[gi].seed = seed;
        group_dispatch(p, gi);
    }
    for (int gi = 0; gi < p->num_groups; gi++) group_finish(p, gi);
}

/* ---- set-up ---------------------------------------------------------------------------------- */

static int config_groups(const cr_env_pool_config *c) {
    return c->num_groups == 0 ? 1 : c->num_groups;
}

static cudarl_status check_config(const cudarl_env_def *def, const cr_env_pool_config *c) {
    CR_REQUIRE(def, "env pool: def is NULL; look the env up with cr_env_def_find");
    if (cr_env_def_check(def) != CUDARL_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", cudarl_last_error());
        return cr_fail(CUDARL_ERR_INVALID_ARG, "env pool: %s", why);
    }
    CR_REQUIRE(c->num_envs >= 1, "env pool '%s': num_envs is %d; use at least 1", def->id,
               c->num_envs);
    CR_REQUIRE(c->num_threads >= 1 && c->num_threads <= CR_ENV_POOL_MAX_THREADS,
               "env pool '%s': num_threads is %d; use 1 .. %d", def->id, c->num_threads,
               CR_ENV_POOL_MAX_THREADS);
    int groups = config_groups(c);
    CR_REQUIRE(!def->vec_step || (c->num_envs == def->vec_num_envs && groups == 1),
               "env pool '%s': a vector env of %d envs steps as one batch; use %d envs in 1 "
               "group, not %d in %d", def->id, def->vec_num_envs, def->vec_num_envs,
               c->num_envs, groups);
    CR_REQUIRE(c->first_env >= 0 && (!def->vec_step || c->first_env == 0),
               "env pool '%s': first_env is %lld; use 0%s", def->id, (long long)c->first_env,
               def->vec_step ? " (a vector env seeds its envs as a whole)" : " or more");
    int max_groups = c->num_envs < CR_ENV_POOL_MAX_GROUPS ? c->num_envs : CR_ENV_POOL_MAX_GROUPS;
    CR_REQUIRE(groups >= 1 && groups <= max_groups, "env pool '%s': num_groups is %d; use 1 .. %d "
               "(at most one group per env and %d groups)", def->id, groups, max_groups,
               CR_ENV_POOL_MAX_GROUPS);
    if (c->group_sizes) {
        int64_t sum = 0;
        for (int gi = 0; gi < groups; gi++) {
            CR_REQUIRE(c->group_sizes[gi] >= 1, "env pool '%s': group_sizes[%d] is %d; every group "
                       "needs at least 1 env", def->id, gi, c->group_sizes[gi]);
            sum += c->group_sizes[gi];
        }
        CR_REQUIRE(sum == c->num_envs, "env pool '%s': group_sizes sum to %lld but num_envs is %d; "
                   "make them add up", def->id, (long long)sum, c->num_envs);
    }
    return CUDARL_OK;
}

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

/* The block: states (N, stride), step counts (N), lanes (T), groups (G). */
static void pool_plan(cr_plan *p, const cudarl_env_def *def, const cr_env_pool_config *c) {
    size_t n = (size_t)c->num_envs;
    cr_plan_init(p);
    cr_plan_add(p, "env_pool.states", n * round_up(def->state_bytes, CR_ARENA_ALIGN));
    cr_plan_add(p, "env_pool.elapsed", n * sizeof(int32_t));
    cr_plan_add(p, "env_pool.lanes", (size_t)c->num_threads * sizeof(pool_lane));
    cr_plan_add(p, "env_pool.groups", (size_t)config_groups(c) * sizeof(pool_group));
    cr_plan_add(p, "env_pool.vec_actions", /* a continuous vector env's clipped actions */
                def->vec_step && def->action_dim > 0 ? n * cr_env_def_action_bytes(def) : 0);
}

cudarl_status cr_env_pool_plan(const cudarl_env_def *def, const cr_env_pool_config *cfg,
                               size_t *bytes) {
    CR_TRY(check_config(def, cfg));
    cr_plan p;
    pool_plan(&p, def, cfg);
    *bytes = p.total;
    return CUDARL_OK;
}

static void groups_init(cr_env_pool *p, const cr_env_pool_config *c) {
    int begin = 0;
    for (int gi = 0; gi < p->num_groups; gi++) {
        pool_group *g = &p->groups[gi];
        int size = c->group_sizes
                       ? c->group_sizes[gi]
                       : (int)((int64_t)p->num_envs * (gi + 1) / p->num_groups) - begin;
        memset(g, 0, sizeof *g);
        g->begin = begin;
        g->end = begin + size;
        begin = g->end;
        atomic_init(&g->remaining, 0);
        atomic_init(&g->waiter_sleeping, 0);
        for (int k = first_spawned(p); k < p->num_threads; k++) {
            int b, e;
            shard_range(p, g, k, &b, &e);
            g->busy_lanes += b < e;
        }
    }
    CUDARL_ASSERT(begin == p->num_envs);
}

/* Pins the thread of lane k to the k-th CPU of this process's affinity mask (best effort). */
static void lane_pin(pool_lane *l) {
#ifdef __linux__
    cpu_set_t allowed, one;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
    int count = CPU_COUNT(&allowed), want = l->index % (count > 0 ? count : 1), seen = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (!CPU_ISSET(cpu, &allowed) || seen++ != want) continue;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        int err = pthread_setaffinity_np(l->thread, sizeof one, &one);
        if (err) CR_WARN("env pool: cannot pin thread %d to CPU %d: %s", l->index, cpu,
                         strerror(err));
        return;
    }
#else
    (void)l;
#endif
}

static cudarl_status lanes_start(cr_env_pool *p) {
    for (int k = 0; k < p->num_threads; k++) {
        pool_lane *l = &p->lanes[k];
        memset(l, 0, sizeof *l);
        atomic_init(&l->todo, 0);
        atomic_init(&l->sleeping, 0);
        l->pool = p;
        l->index = k;
    }
    for (int k = first_spawned(p); k < p->num_threads; k++) {
        pool_lane *l = &p->lanes[k];
        int err = pthread_create(&l->thread, NULL, lane_main, l);
        if (err)
            return cr_fail(CUDARL_ERR_UNSUPPORTED, "env pool '%s': cannot start thread %d of %d: "
                           "%s; use fewer threads", p->def->id, k + 1, p->num_threads,
                           strerror(err));
        p->threads_started++;
        if (p->pin_threads) lane_pin(l);
    }
    return CUDARL_OK;
}

static void lanes_stop(cr_env_pool *p) {
    int first = first_spawned(p);
    for (int k = first; k < first + p->threads_started; k++) lane_give(&p->lanes[k], STOP_BIT);
    for (int k = first; k < first + p->threads_started; k++) pthread_join(p->lanes[k].thread, NULL);
    p->threads_started = 0;
}

cudarl_status cr_env_pool_init(cr_env_pool *p, const cudarl_env_def *def,
                               const cr_env_pool_config *cfg, void *mem) {
    memset(p, 0, sizeof *p);
    CR_TRY(check_config(def, cfg));
    cr_plan plan;
    pool_plan(&plan, def, cfg);
    if (!mem) {
        CR_TRY(cr_arena_alloc(&p->arena, &plan, CR_MEM_HOST));
        mem = p->arena.base;
    }
    CUDARL_ASSERT((uintptr_t)mem % CR_ARENA_ALIGN == 0);
    unsigned char *base = mem;
    p->def = def;
    p->num_envs = cfg->num_envs;
    p->num_threads = def->vec_step ? 1 : cfg->num_threads; /* a vector env steps itself */
    p->num_groups = config_groups(cfg);
    p->first_env = cfg->first_env;
    p->caller_idle = cfg->caller_idle != 0 && !def->vec_step;
    p->pin_threads = cfg->pin_threads != 0;
    p->spin_s = cfg->spin_us < 0 ? 0 : (cfg->spin_us ? cfg->spin_us : CR_ENV_POOL_SPIN_US) * 1e-6;
    p->state_stride = round_up(def->state_bytes, CR_ARENA_ALIGN);
    p->obs_bytes = cr_env_def_obs_bytes(def);
    p->states = base + plan.offsets[0];
    p->elapsed = (int32_t *)(base + plan.offsets[1]);
    p->lanes = (pool_lane *)(base + plan.offsets[2]);
    p->groups = (pool_group *)(base + plan.offsets[3]);
    p->vec_actions = plan.sizes[4] ? (float *)(base + plan.offsets[4]) : NULL;
    memset(p->states, 0, plan.sizes[0]);
    memset(p->elapsed, 0, plan.sizes[1]);
    groups_init(p, cfg);
    cudarl_status s = lanes_start(p);
    if (s != CUDARL_OK) {
        lanes_stop(p);
        cr_arena_free(&p->arena);
        p->lanes = NULL;
    }
    return s;
}

void cr_env_pool_free(cr_env_pool *p) {
    if (!p->lanes) return;
    for (int gi = 0; gi < p->num_groups; gi++)
        CUDARL_ASSERT(!p->groups[gi].in_flight); /* freed with a step in flight */
    lanes_stop(p);
    cr_arena_free(&p->arena);
    p->lanes = NULL;
}

void cr_env_pool_set_outputs(cr_env_pool *p, const cr_env_pool_outputs *out) {
    CUDARL_ASSERT(out && out->obs && out->reward && out->terminated && out->truncated &&
                  out->final_obs);
    for (int gi = 0; gi < p->num_groups; gi++) CUDARL_ASSERT(!p->groups[gi].in_flight);
    p->out = *out;
}

void cr_env_pool_set_hook(cr_env_pool *p, int group, cr_env_pool_hook before, void *arg) {
    CUDARL_ASSERT(group >= 0 && group < p->num_groups && !p->groups[group].in_flight);
    p->groups[group].before = before;
    p->groups[group].before_arg = arg;
}

void cr_env_pool_group_range(const cr_env_pool *p, int group, int *begin, int *end) {
    CUDARL_ASSERT(group >= 0 && group < p->num_groups);
    *begin = p->groups[group].begin;
    *end = p->groups[group].end;
}

void *cr_env_pool_state(cr_env_pool *p, int i) {
    CUDARL_ASSERT(i >= 0 && i < p->num_envs);
    return p->states + (size_t)i * p->state_stride;
}

int cr_env_pool_check_state(const cr_env_pool *p, int *bad, char *why, size_t cap) {
    for (int i = 0; i < p->num_envs; i++) {
        *bad = cr_env_check_state(p->def, p->states + (size_t)i * p->state_stride,
                                  p->elapsed[i], why, cap);
        if (*bad) return i;
    }
    return -1;
}
