/* CartPole-v1 against Gymnasium: replays a trace written by tests/unit/gym_cartpole_trace.py.
 *
 * For each episode env 0 is forced to Gymnasium's reset state, then stepped with Gymnasium's
 * actions; every observation must agree to 1e-5 (on the last step Gymnasium's observation is
 * compared with final_obs), reward and flags exactly. The trace ends with episodes that run the
 * full 500 steps: replayed open-loop the pole amplifies a difference about e^4 per simulated
 * second, so those agree only if the float64 arithmetic (sin, cos, operation order, no fused
 * multiply-add) is Gymnasium's bit for bit. Usage: test_cartpole_gym TRACE */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "env/cartpole/cartpole.h"

#define TRACE_MAGIC "CRCPGYM\0"
#define TRACE_VERSION 1u
#define TRACE_HEADER_BYTES 40 /* magic[8] version u32 episodes u32 steps u64 gymnasium[16] */
#define TRACE_EPISODE_BYTES 52 /* steps u32, state f64[4], obs f32[4] */
#define TRACE_STEP_BYTES 30    /* action i32, obs f32[4], reward f64, terminated u8, truncated u8 */
#define OBS_ATOL 1e-5

typedef struct trace_step {
    int32_t action;
    float obs[CR_CARTPOLE_OBS_DIM];
    double reward;
    uint8_t terminated, truncated;
} trace_step;

/* One env replaying the trace, and what the comparison has seen so far. */
typedef struct replay {
    FILE *f;
    const char *path;
    cr_cartpole env;
    cr_arena arena;
    long episode, step, steps, terminated, truncated, exact;
    double max_diff;
} replay;

/* Reads n bytes or fails saying where the trace ended. */
static void read_bytes(replay *r, void *buf, size_t n, const char *what) {
    CHECK_MSG(fread(buf, 1, n, r->f) == n, "%s: trace ends inside %s (episode %ld)", r->path,
              what, r->episode);
}

/* Opens the trace and checks its header; returns the episode count (steps into *steps). */
static uint32_t trace_open(replay *r, uint64_t *steps) {
    r->f = fopen(r->path, "rb");
    CHECK_MSG(r->f, "cannot open Gymnasium trace '%s': %s; it is written by "
              "tests/unit/gym_cartpole_trace.py (ctest runs it first as test gym_cartpole_trace)",
              r->path, strerror(errno));
    unsigned char h[TRACE_HEADER_BYTES];
    uint32_t version, episodes;
    read_bytes(r, h, sizeof h, "the header");
    CHECK_MSG(!memcmp(h, TRACE_MAGIC, 8), "%s is not a cudarl CartPole Gymnasium trace", r->path);
    memcpy(&version, h + 8, 4);
    memcpy(&episodes, h + 12, 4);
    memcpy(steps, h + 16, 8);
    CHECK_MSG(version == TRACE_VERSION, "%s: trace version %u, this test reads %u", r->path,
              version, TRACE_VERSION);
    printf("test_cartpole_gym: trace of gymnasium %.16s: %u episodes, %llu steps\n",
           (const char *)h + 24, episodes, (unsigned long long)*steps);
    return episodes;
}

static void trace_read_step(replay *r, trace_step *s) {
    unsigned char b[TRACE_STEP_BYTES];
    read_bytes(r, b, sizeof b, "a step");
    memcpy(&s->action, b, 4);
    memcpy(s->obs, b + 4, 16);
    memcpy(&s->reward, b + 20, 8);
    s->terminated = b[28];
    s->truncated = b[29];
}

/* Fails at the first observation component further than OBS_ATOL from Gymnasium's. */
static void compare_obs(replay *r, const char *field, const float *want, const float *got) {
    for (int j = 0; j < CR_CARTPOLE_OBS_DIM; j++) {
        double d = fabs((double)got[j] - (double)want[j]);
        CHECK_MSG(d <= OBS_ATOL, "episode %ld step %ld (trace step %ld): %s[%d]: expected %.9g, "
                  "got %.9g", r->episode, r->step, r->steps + 1, field, j, want[j], got[j]);
        r->exact += got[j] == want[j];
        if (d > r->max_diff) r->max_diff = d;
    }
}

/* Steps env 0 with the trace's action and compares everything Gymnasium returned. */
static void replay_step(replay *r, const trace_step *want, int last) {
    float obs[CR_CARTPOLE_OBS_DIM], final_obs[CR_CARTPOLE_OBS_DIM], reward;
    uint8_t term, trunc;
    cr_cartpole_step(&r->env, &want->action, obs, &reward, &term, &trunc, final_obs);
    compare_obs(r, term || trunc ? "final_obs" : "obs", want->obs, term || trunc ? final_obs : obs);
    CHECK_MSG((double)reward == want->reward, "episode %ld step %ld: reward: expected %g, got %g",
              r->episode, r->step, want->reward, (double)reward);
    CHECK_MSG(term == want->terminated, "episode %ld step %ld: terminated: expected %d, got %d",
              r->episode, r->step, want->terminated, term);
    CHECK_MSG(trunc == want->truncated, "episode %ld step %ld: truncated: expected %d, got %d",
              r->episode, r->step, want->truncated, trunc);
    CHECK_MSG(last == (term || trunc), "episode %ld step %ld: trace episode has %s here",
              r->episode, r->step, last ? "its last step but no end flag" : "an end flag early");
    r->terminated += term;
    r->truncated += trunc;
}

/* Forces env 0 to the episode's reset state and replays its steps. */
static void replay_episode(replay *r) {
    unsigned char b[TRACE_EPISODE_BYTES];
    uint32_t n;
    double state[CR_CARTPOLE_OBS_DIM];
    float want[CR_CARTPOLE_OBS_DIM], got[CR_CARTPOLE_OBS_DIM];
    read_bytes(r, b, sizeof b, "an episode header");
    memcpy(&n, b, 4);
    memcpy(state, b + 4, 32);
    memcpy(want, b + 36, 16);
    for (int j = 0; j < CR_CARTPOLE_OBS_DIM; j++) got[j] = (float)state[j];
    r->step = 0;
    compare_obs(r, "reset obs", want, got);
    cr_cartpole_set_state(&r->env, 0, state, 0);
    for (uint32_t k = 0; k < n; k++, r->steps++) {
        trace_step s;
        trace_read_step(r, &s);
        r->step = (long)k + 1;
        replay_step(r, &s, k + 1 == n);
    }
}

int main(int argc, char **argv) {
    CHECK_MSG(argc == 2,
              "usage: test_cartpole_gym TRACE (written by tests/unit/gym_cartpole_trace.py)");
    replay r = {.path = argv[1]};
    uint64_t steps;
    uint32_t episodes = trace_open(&r, &steps);
    cr_plan p;
    cr_plan_init(&p);
    int env_mem = cr_plan_add(&p, "cartpole", cr_cartpole_bytes(1));
    CHECK_OK(cr_arena_alloc(&r.arena, &p, CR_MEM_HOST));
    cr_cartpole_init(&r.env, 1, cr_arena_get(&r.arena, env_mem));
    cr_cartpole_reset(&r.env, 0, (float[CR_CARTPOLE_OBS_DIM]){0});
    for (r.episode = 0; r.episode < (long)episodes; r.episode++) replay_episode(&r);
    CHECK_MSG(fgetc(r.f) == EOF, "%s: bytes after the last episode", r.path);
    CHECK_MSG((uint64_t)r.steps == steps, "trace header says %llu steps, episodes hold %ld",
              (unsigned long long)steps, r.steps);
    fclose(r.f);
    cr_arena_free(&r.arena);
    long comps = (r.steps + r.episode) * CR_CARTPOLE_OBS_DIM;
    printf("test_cartpole_gym: ok: %ld steps in %ld episodes compared (%ld terminated, %ld "
           "truncated); %ld of %ld observation components bit-exact, max |diff| %.3g\n",
           r.steps, r.episode, r.terminated, r.truncated, r.exact, comps, r.max_diff);
    return 0;
}
