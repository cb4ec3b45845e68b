/* The env thread pool: CartPole-v1 steps/s for a grid of thread counts and env counts (random
 * actions, so episodes end and reset all the time), next to the single-threaded batch
 * (cr_cartpole_step) as the baseline; and, with --dispatch, the cost of handing a group to the
 * threads and getting it back (step_begin -> step_wait with one no-op env per thread), hot
 * (threads spinning) and cold (threads asleep on their futex).
 * Usage: bench_env_pool [--threads 1,2,4,8,16] [--envs 4096,16384,65536] [--groups G]
 *                       [--seconds S] [--dispatch] */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "env/cartpole/cartpole.h"
#include "env/env.h"
#include "env/env_pool.h"

#define MAX_LIST 16
#define ACTION_SETS 16 /* action arrays cycled through, drawn once before timing */

typedef struct options {
    int threads[MAX_LIST], num_threads;
    int envs[MAX_LIST], num_envs;
    int groups;
    double seconds;
    int dispatch;
} options;

static void die(const char *msg, const char *arg) {
    fprintf(stderr, "bench_env_pool: %s%s\n(--threads 1,2,4 --envs 4096,65536 --groups G "
            "--seconds S --dispatch)\n", msg, arg);
    exit(2);
}

/* "1,2,4" into list; returns the count. */
static int parse_list(const char *s, int *list) {
    int n = 0;
    for (char *end; *s; s = *end ? end + 1 : end) {
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > (1 << 24) || n == MAX_LIST || (*end && *end != ','))
            die("bad list: ", s);
        list[n++] = (int)v;
    }
    return n;
}

static options parse_options(int argc, char **argv) {
    options o = {{1, 2, 4, 8, 16}, 5, {4096, 8192, 16384, 32768, 65536}, 5, 1, 0.3, 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--dispatch")) {
            o.dispatch = 1;
            continue;
        }
        if (!v) die("missing value after ", a);
        if (!strcmp(a, "--threads")) o.num_threads = parse_list(v, o.threads);
        else if (!strcmp(a, "--envs")) o.num_envs = parse_list(v, o.envs);
        else if (!strcmp(a, "--groups")) o.groups = atoi(v);
        else if (!strcmp(a, "--seconds")) o.seconds = atof(v);
        else die("unknown flag ", a);
        i++;
    }
    if (o.groups < 1 || o.groups > CR_ENV_POOL_MAX_GROUPS || !(o.seconds > 0))
        die("--groups must be 1..31 and --seconds > 0", "");
    return o;
}

/* Outputs for n envs of obs_bytes each, and ACTION_SETS random action arrays. */
typedef struct buffers {
    void *obs, *final_obs;
    float *reward;
    uint8_t *terminated, *truncated;
    int32_t *actions; /* (ACTION_SETS, N) */
} buffers;

static void *alloc_or_die(size_t bytes) {
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) die("out of memory", "");
    memset(p, 0, bytes);
    return p;
}

static buffers buffers_alloc(int n, size_t obs_bytes, int num_actions) {
    size_t un = (size_t)n;
    buffers b = {alloc_or_die(un * obs_bytes), alloc_or_die(un * obs_bytes),
                 alloc_or_die(un * sizeof(float)), alloc_or_die(un), alloc_or_die(un),
                 alloc_or_die(ACTION_SETS * un * sizeof(int32_t))};
    cr_philox_state rng;
    cr_philox_seed(&rng, 1, 0);
    for (size_t k = 0; k < ACTION_SETS * un; k++)
        b.actions[k] = (int32_t)(cr_philox_next_u32(&rng) % (uint32_t)num_actions);
    return b;
}

static void buffers_free(buffers *b) {
    free(b->obs), free(b->final_obs), free(b->reward), free(b->terminated), free(b->truncated);
    free(b->actions);
}

static cr_env_pool *pool_open(const cudarl_env_def *def, cr_env_pool_config cfg, buffers *b) {
    static cr_env_pool pool;
    cudarl_status s = cr_env_pool_init(&pool, def, &cfg, NULL);
    if (s != CUDARL_OK) die(cudarl_last_error(), "");
    cr_env_pool_set_outputs(&pool, &(cr_env_pool_outputs){b->obs, b->reward, b->terminated,
                                                           b->truncated, b->final_obs});
    cr_env_pool_reset(&pool, 1);
    return &pool;
}

/* Steps/s of the pool: all groups begun, then all waited for, repeated for `seconds`. */
static double pool_steps_per_s(int n, int threads, int groups, double seconds) {
    buffers b = buffers_alloc(n, 16, 2);
    int g = groups < n ? groups : n;
    cr_env_pool_config cfg = {.num_envs = n, .num_threads = threads, .num_groups = g};
    cr_env_pool *pool = pool_open(&cr_cartpole_def, cfg, &b);
    long iters = 0;
    double t0 = cr_time_now(), t;
    do {
        for (int k = 0; k < 16; k++, iters++) {
            const int32_t *a = b.actions + (size_t)(iters % ACTION_SETS) * (size_t)n;
            for (int gi = 0; gi < g; gi++) cr_env_pool_step_begin(pool, gi, a);
            for (int gi = 0; gi < g; gi++) cr_env_pool_step_wait(pool, gi);
        }
    } while ((t = cr_time_now() - t0) < seconds);
    cr_env_pool_free(pool);
    buffers_free(&b);
    return (double)n * (double)iters / t;
}

/* Steps/s of the batch, one thread: the pool's baseline. */
static double batch_steps_per_s(int n, double seconds) {
    buffers b = buffers_alloc(n, 16, 2);
    void *mem = alloc_or_die(cr_cartpole_bytes(n));
    cr_cartpole env;
    cr_cartpole_init(&env, n, mem);
    cr_cartpole_reset(&env, 1, b.obs);
    long iters = 0;
    double t0 = cr_time_now(), t;
    do {
        for (int k = 0; k < 16; k++, iters++)
            cr_cartpole_step(&env, b.actions + (size_t)(iters % ACTION_SETS) * (size_t)n, b.obs,
                             b.reward, b.terminated, b.truncated, b.final_obs);
    } while ((t = cr_time_now() - t0) < seconds);
    free(mem);
    buffers_free(&b);
    return (double)n * (double)iters / t;
}

static void run_throughput(const options *o) {
    printf("CartPole-v1 env steps/s (millions), random actions, %d group%s; batch = "
           "cr_cartpole_step on 1 thread\n", o->groups, o->groups > 1 ? "s" : "");
    printf("%8s %9s", "envs", "batch");
    for (int t = 0; t < o->num_threads; t++) printf("  T=%-6d", o->threads[t]);
    printf("\n");
    for (int e = 0; e < o->num_envs; e++) {
        printf("%8d %9.2f", o->envs[e], batch_steps_per_s(o->envs[e], o->seconds) * 1e-6);
        fflush(stdout);
        for (int t = 0; t < o->num_threads; t++) {
            printf("  %8.2f",
                   pool_steps_per_s(o->envs[e], o->threads[t], o->groups, o->seconds) * 1e-6);
            fflush(stdout);
        }
        printf("\n");
    }
}

/* ---- dispatch overhead --------------------------------------------------------------------- */

typedef struct null_state {
    uint64_t steps;
} null_state;

static void null_seed(void *state, uint64_t seed, uint64_t index) {}
static void null_reset(void *state, void *obs) { *(float *)obs = 0.0f; }
static void null_step(void *state, int32_t action, void *obs, float *reward, uint8_t *term) {
    ((null_state *)state)->steps++;
    *(float *)obs = 1.0f;
    *reward = 0.0f;
    *term = 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median and 99th percentile, in microseconds, of `reps` begin->wait round trips of a pool of
 * one no-op env per thread; `gap_us` of idleness before each (long enough and the threads are
 * asleep when the group arrives). */
static void dispatch_case(const cudarl_env_def *def, int threads, int caller_idle, int spin_us,
                          double gap_us, const char *what) {
    enum { REPS = 2000 };
    static double sample[REPS];
    buffers b = buffers_alloc(threads, sizeof(float), 1);
    cr_env_pool *pool = pool_open(def, (cr_env_pool_config){threads, threads, 1, NULL,
                                                            caller_idle, 0, spin_us, 0}, &b);
    int reps = gap_us > 0 ? REPS / 4 : REPS;
    for (int r = -100; r < reps; r++) {
        if (gap_us > 0) {
            struct timespec ts = {0, (long)(gap_us * 1e3)};
            nanosleep(&ts, NULL);
        }
        double t0 = cr_time_now();
        cr_env_pool_step_begin(pool, 0, b.actions);
        cr_env_pool_step_wait(pool, 0);
        if (r >= 0) sample[r] = (cr_time_now() - t0) * 1e6;
    }
    qsort(sample, (size_t)reps, sizeof sample[0], cmp_double);
    printf("  T=%d %-38s median %7.2f us   p99 %7.2f us\n", threads, what, sample[reps / 2],
           sample[reps * 99 / 100]);
    cr_env_pool_free(pool);
    buffers_free(&b);
}

static void run_dispatch(const options *o) {
    static const cudarl_env_def null_def = {
        .struct_size = sizeof(cudarl_env_def),
        .id = "BenchNull-v0", .obs_rank = 1, .obs_shape = {1, 1, 1}, .num_actions = 1,
        .state_bytes = sizeof(null_state), .seed = null_seed, .reset = null_reset,
        .step = null_step,
    };
    if (cudarl_env_register(&null_def) != CUDARL_OK) die(cudarl_last_error(), "");
    const cudarl_env_def *def = cr_env_def_find("BenchNull-v0");
    printf("dispatch: step_begin -> step_wait of one group, one no-op env per thread\n");
    for (int t = 0; t < o->num_threads; t++) {
        int T = o->threads[t];
        dispatch_case(def, T, 0, 0, 0, "caller works, back to back (spinning)");
        dispatch_case(def, T, 0, 0, 500, "caller works, 500 us apart (asleep)");
        dispatch_case(def, T, 1, 0, 0, "caller idle, back to back (spinning)");
        dispatch_case(def, T, 1, 0, 500, "caller idle, 500 us apart (asleep)");
        dispatch_case(def, T, 1, -1, 0, "caller idle, no spin (futex each time)");
    }
}

int main(int argc, char **argv) {
    options o = parse_options(argc, argv);
    if (o.dispatch) run_dispatch(&o);
    else run_throughput(&o);
    return 0;
}
