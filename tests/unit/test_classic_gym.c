/* The classic-control envs against Gymnasium: replays a trace written by
 * tests/unit/gym_classic_trace.py through the env's CPU batch (one env, the def's per-env code
 * with the batch's step count, truncation, autoreset and clip of continuous actions).
 *
 * Every step is replayed from Gymnasium's own state before it (the env forced to it, with the
 * episode's step count), and obs (final_obs on the episode's last step), reward, terminated,
 * truncated and, but on the last step, the float64 state after it are compared with Gymnasium's;
 * then, where the comparison is exact, each episode again open-loop from its reset state to its
 * end (a state cudarl carries wrongly from step to step shows there).
 *
 * Exact: MountainCar-v0 and MountainCarContinuous-v0 call no transcendental but math.cos,
 * libm's, as cudarl does, so they agree bit for bit. Acrobot-v1 and Pendulum-v1 call numpy's
 * cos, sin and x**2, which numpy may compute otherwise than libm in the last ulp: bit for bit
 * too where the trace says numpy's are libm's (numpy_is_libm, checked on a sample when it was
 * recorded), else the state to STATE_RTOL (an ulp of a sin or cos moves one step's state far
 * less), obs and reward to one float32 ulp (a float64 an ulp away may round to the neighbouring
 * float32), flags exactly (no state of the trace lies within an ulp of a threshold), step by step
 * only (Acrobot's chaos and Pendulum's drift would grow any ulp open-loop). Always: Acrobot's
 * reset observation, the cos and sin of a float32 state, which Gymnasium computes in float32
 * with numpy's own routines and cudarl in float64 rounded once, to RESET_OBS_ULPS. The counts of
 * bit-exact values are printed.
 *
 * Usage: test_classic_gym TRACE_DIR ENV_ID (TRACE_DIR/ENV_ID.bin) */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "env/classic/acrobot_step.h"
#include "env/classic/classic.h"
#include "env/classic/mountain_car_continuous_step.h"
#include "env/classic/mountain_car_step.h"
#include "env/classic/pendulum_step.h"
#include "env/env.h"

#define TRACE_MAGIC "CRCLGYM\0"
#define TRACE_VERSION 1u
#define TRACE_HEADER_BYTES 88 /* magic[8], 6 u32, steps u64, env_id[32], gymnasium[16] */
#define MAX_DIM 8
#define STATE_RTOL 1e-12
#define RESET_OBS_ULPS 2

/* How the test builds and reads one env's def state from Gymnasium's. */
typedef struct env_case {
    const char *id;
    int exact;      /* libm transcendentals only: bit for bit, open-loop too */
    int reset_ulps; /* the reset observation's float32 ulps, even where exact */
    void (*observe)(const double *s, float *obs); /* the step header's observation of s */
    /* The def state (zeroed by the caller) of Gymnasium's state s; first: no step taken since
     * the reset that made it. */
    void (*make)(void *state, const double *s, int first);
    const double *(*values)(const void *state); /* its float64 components, Gymnasium's order */
} env_case;

static void acrobot_make(void *p, const double *s, int first) {
    memcpy(((cr_acrobot_state *)p)->s, s, 4 * sizeof(double));
}
static const double *acrobot_values(const void *p) { return ((const cr_acrobot_state *)p)->s; }
static void mc_make(void *p, const double *s, int first) {
    memcpy(((cr_mountain_car_state *)p)->s, s, 2 * sizeof(double));
}
static const double *mc_values(const void *p) { return ((const cr_mountain_car_state *)p)->s; }
static void pendulum_make(void *p, const double *s, int first) {
    memcpy(((cr_pendulum_state *)p)->s, s, 2 * sizeof(double));
}
static const double *pendulum_values(const void *p) {
    return ((const cr_pendulum_state *)p)->s;
}
static void mcc_make(void *p, const double *s, int first) {
    cr_mountain_car_continuous_state *e = p;
    memcpy(e->s, s, 2 * sizeof(double));
    e->fresh = first;
}
static const double *mcc_values(const void *p) {
    return ((const cr_mountain_car_continuous_state *)p)->s;
}

static const env_case cases[] = {
    {"Acrobot-v1", 0, RESET_OBS_ULPS, cr_acrobot_observe, acrobot_make, acrobot_values},
    {"MountainCar-v0", 1, 0, cr_mountain_car_observe, mc_make, mc_values},
    {"Pendulum-v1", 0, 0, cr_pendulum_observe, pendulum_make, pendulum_values},
    {"MountainCarContinuous-v0", 1, 0, cr_mountain_car_continuous_observe, mcc_make, mcc_values},
};

/* One step of the trace. */
typedef struct trace_step {
    int32_t action;
    float box[MAX_DIM];
    double state[MAX_DIM];
    float obs[MAX_DIM];
    double reward;
    uint8_t terminated, truncated;
} trace_step;

/* One episode of the trace. */
typedef struct episode {
    uint32_t steps;
    double state[MAX_DIM];
    float obs[MAX_DIM];
    trace_step *step; /* (steps) */
} episode;

/* The env replaying the trace, and what the comparison has seen so far. */
typedef struct replay {
    const char *path;
    FILE *f;
    const env_case *c;
    const cudarl_env_def *def;
    uint32_t S, D, K; /* state, obs and action dims */
    int exact;        /* bit for bit: an exact env, or numpy's transcendentals are libm's */
    cr_classic batch;
    cr_arena arena;
    float obs[MAX_DIM], final_obs[MAX_DIM];
    const char *mode;
    long episode, step, steps, terminated, truncated, bit_exact, values;
    double max_state_rel;
    int max_ulps;
} replay;

static void read_bytes(replay *r, void *buf, size_t n, const char *what) {
    CHECK_MSG(fread(buf, 1, n, r->f) == n, "%s: trace ends inside %s (episode %ld)", r->path,
              what, r->episode);
}

/* Float32 ulps between a and b (both finite). */
static int ulps_apart(float a, float b) {
    int n = 0;
    while (a != b && n <= 64) a = nextafterf(a, b), n++;
    return n;
}

/* Opens the trace and checks its header against the env; returns the episode count. */
static uint32_t trace_open(replay *r, uint64_t *steps) {
    r->f = fopen(r->path, "rb");
    CHECK_MSG(r->f, "cannot open Gymnasium trace '%s': %s; it is written by "
              "tests/unit/gym_classic_trace.py (ctest runs it first as test gym_classic_trace)",
              r->path, strerror(errno));
    unsigned char h[TRACE_HEADER_BYTES];
    uint32_t u[6];
    read_bytes(r, h, sizeof h, "the header");
    CHECK_MSG(!memcmp(h, TRACE_MAGIC, 8), "%s is not a cudarl classic-control trace", r->path);
    memcpy(u, h + 8, sizeof u);
    memcpy(steps, h + 32, 8);
    CHECK_MSG(u[0] == TRACE_VERSION, "%s: trace version %u, this test reads %u", r->path, u[0],
              TRACE_VERSION);
    CHECK_MSG(!strncmp((const char *)h + 40, r->c->id, 32), "%s holds %.32s, expected %s",
              r->path, (const char *)h + 40, r->c->id);
    r->S = u[1], r->D = u[2], r->K = u[3];
    r->exact = r->c->exact || u[5] == 1;
    CHECK_MSG(r->S <= MAX_DIM && r->D == (uint32_t)r->def->obs_shape[0] &&
                  r->K == (uint32_t)r->def->action_dim,
              "%s: dims (state %u, obs %u, action %u) do not fit %s", r->path, r->S, r->D, r->K,
              r->c->id);
    printf("test_classic_gym: %s: trace of gymnasium %.16s: %u episodes, %llu steps; compared "
           "%s\n", r->c->id, (const char *)h + 72, u[4], (unsigned long long)*steps,
           r->exact ? "bit for bit" : "within the stated tolerances (numpy's cos, sin or x**2 "
           "are not libm's)");
    return u[4];
}

static void read_episode(replay *r, episode *e) {
    read_bytes(r, &e->steps, 4, "an episode header");
    read_bytes(r, e->state, r->S * 8, "an episode header");
    read_bytes(r, e->obs, r->D * 4, "an episode header");
    e->step = calloc(e->steps, sizeof *e->step);
    CHECK(e->step != NULL);
    for (uint32_t k = 0; k < e->steps; k++) {
        trace_step *s = &e->step[k];
        if (r->K) read_bytes(r, s->box, r->K * 4, "a step");
        else read_bytes(r, &s->action, 4, "a step");
        read_bytes(r, s->state, r->S * 8, "a step");
        read_bytes(r, s->obs, r->D * 4, "a step");
        read_bytes(r, &s->reward, 8, "a step");
        read_bytes(r, &s->terminated, 1, "a step");
        read_bytes(r, &s->truncated, 1, "a step");
    }
}

/* Floats within max_ulps float32 ulps (0: bit for bit). */
static void compare_floats(replay *r, const char *field, const float *want, const float *got,
                           int n, int max_ulps) {
    for (int j = 0; j < n; j++) {
        int u = ulps_apart(want[j], got[j]);
        CHECK_MSG(u <= max_ulps, "%s %s: episode %ld step %ld: %s[%d]: "
                  "expected %.9g, got %.9g (%d float32 ulps)", r->c->id, r->mode, r->episode,
                  r->step, field, j, want[j], got[j], u);
        r->bit_exact += u == 0;
        r->values++;
        if (u > r->max_ulps) r->max_ulps = u;
    }
}

/* The env's float64 state against Gymnasium's s (S). */
static void compare_state(replay *r, const double *want) {
    _Alignas(16) unsigned char state[CR_CLASSIC_STATE_MAX];
    cr_classic_get_state(&r->batch, r->batch.states, 0, state);
    const double *got = r->c->values(state);
    for (uint32_t j = 0; j < r->S; j++) {
        double rel = fabs(got[j] - want[j]) / fmax(1.0, fabs(want[j]));
        CHECK_MSG(r->exact ? got[j] == want[j] : rel <= STATE_RTOL, "%s %s: episode %ld step "
                  "%ld: state[%u]: expected %.17g, got %.17g", r->c->id, r->mode, r->episode,
                  r->step, j, want[j], got[j]);
        r->bit_exact += got[j] == want[j];
        r->values++;
        if (rel > r->max_state_rel) r->max_state_rel = rel;
    }
}

/* Forces env 0 to Gymnasium's state s with step count `elapsed`. */
static void force_state(replay *r, const double *s, int32_t elapsed) {
    _Alignas(16) unsigned char state[CR_CLASSIC_STATE_MAX];
    memset(state, 0, sizeof state);
    r->def->seed(state, 99, 0); /* its stream: drawn from only by the reset after an end */
    r->c->make(state, s, elapsed == 0);
    cr_classic_set_state(&r->batch, 0, state, elapsed);
}

/* Steps env 0 with the step's action and compares what Gymnasium returned. */
static void replay_step(replay *r, const trace_step *want, int last) {
    float reward;
    uint8_t term, trunc, done;
    const void *action = r->K ? (const void *)want->box : (const void *)&want->action;
    cr_classic_step(&r->batch, action, r->obs, &reward, &term, &trunc, &done, r->final_obs);
    const int ulps = r->exact ? 0 : 1;
    compare_floats(r, term || trunc ? "final_obs" : "obs", want->obs,
                   term || trunc ? r->final_obs : r->obs, (int)r->D, ulps);
    float want_reward = (float)want->reward;
    compare_floats(r, "reward", &want_reward, &reward, 1, ulps);
    CHECK_MSG(term == want->terminated && trunc == want->truncated, "%s %s: episode %ld step "
              "%ld: terminated/truncated: expected %d/%d, got %d/%d", r->c->id, r->mode,
              r->episode, r->step, want->terminated, want->truncated, term, trunc);
    CHECK_MSG(last == (term || trunc), "%s: episode %ld step %ld: the trace's episode has %s "
              "here", r->c->id, r->episode, r->step,
              last ? "its last step but no end flag" : "an end flag early");
    if (!last) compare_state(r, want->state);
}

/* Step by step, from Gymnasium's state before each step; then, where exact, open-loop. */
static void replay_episode(replay *r, const episode *e) {
    float got[MAX_DIM];
    r->mode = "reset";
    r->step = 0;
    force_state(r, e->state, 0);
    r->c->observe(e->state, got);
    const int ulps = r->exact ? 0 : 1;
    compare_floats(r, "reset obs", e->obs, got, (int)r->D,
                   r->c->reset_ulps > ulps ? r->c->reset_ulps : ulps);
    r->mode = "step by step";
    for (uint32_t k = 0; k < e->steps; k++) {
        r->step = (long)k + 1;
        force_state(r, k == 0 ? e->state : e->step[k - 1].state, (int32_t)k);
        replay_step(r, &e->step[k], k + 1 == e->steps);
    }
    r->steps += e->steps;
    r->terminated += e->step[e->steps - 1].terminated;
    r->truncated += e->step[e->steps - 1].truncated;
    if (!r->exact) return;
    r->mode = "open-loop";
    force_state(r, e->state, 0);
    for (uint32_t k = 0; k < e->steps; k++) {
        r->step = (long)k + 1;
        replay_step(r, &e->step[k], k + 1 == e->steps);
    }
}

int main(int argc, char **argv) {
    CHECK_MSG(argc == 3, "usage: test_classic_gym TRACE_DIR ENV_ID (the trace written by "
              "tests/unit/gym_classic_trace.py)");
    replay r = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (!strcmp(cases[i].id, argv[2])) r.c = &cases[i];
    CHECK_MSG(r.c, "no classic env '%s'; use Acrobot-v1, MountainCar-v0, Pendulum-v1 or "
              "MountainCarContinuous-v0", argv[2]);
    r.def = cr_env_def_find(r.c->id);
    CHECK_MSG(r.def, "%s is not registered", r.c->id);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.bin", argv[1], r.c->id);
    r.path = path;
    uint64_t steps;
    uint32_t episodes = trace_open(&r, &steps);
    cr_plan p;
    cr_plan_init(&p);
    int mem = cr_plan_add(&p, "classic", cr_classic_bytes(r.def, 1));
    CHECK_OK(cr_arena_alloc(&r.arena, &p, CR_MEM_HOST));
    cr_classic_init(&r.batch, r.def, 1, cr_arena_get(&r.arena, mem));
    for (r.episode = 0; r.episode < (long)episodes; r.episode++) {
        episode e;
        read_episode(&r, &e);
        replay_episode(&r, &e);
        free(e.step);
    }
    CHECK_MSG(fgetc(r.f) == EOF, "%s: bytes after the last episode", r.path);
    CHECK_MSG((uint64_t)r.steps == steps, "trace header says %llu steps, episodes hold %ld",
              (unsigned long long)steps, r.steps);
    fclose(r.f);
    cr_arena_free(&r.arena);
    printf("test_classic_gym: %s: ok: %ld steps in %ld episodes (%ld terminated, %ld truncated)"
           "; %ld of %ld values bit-exact, max %d float32 ulps, max state rel diff %.3g\n",
           r.c->id, r.steps, r.episode, r.terminated, r.truncated, r.bit_exact, r.values,
           r.max_ulps, r.max_state_rel);
    return 0;
}
