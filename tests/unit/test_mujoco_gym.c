/* Gymnasium's MuJoCo tasks against cudarl's: replays a trace of tests/unit/gym_mujoco_trace.py.
 *
 * For each task one env is seeded, then started at each of Gymnasium's reset states
 * (cr_mujoco_start_at) and stepped with Gymnasium's actions. Everything must agree bit for bit:
 * qpos and qvel after every step, every observation (Gymnasium's float64 cast to float32, as
 * cudarl's observations are), the reward (Gymnasium's float64 cast to float32) and terminated.
 * Bitwise is the tolerance because both sides run the same libmujoco on the same XML with the
 * same double arithmetic: a difference anywhere (a missing piece of the state such as the solver's
 * warm start, an operation order in a reward) shows at once. Usage: test_mujoco_gym TRACE */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "env/env.h"
#include "env/mujoco/mujoco_env.h"

#define TRACE_MAGIC "CRMJGYM\0"
#define TRACE_VERSION 1u
#define HEADER_BYTES 64 /* magic[8] version u32 tasks u32 gymnasium[16] mujoco[16] numpy[16] */
#define TASK_BYTES 52   /* id[32] nq nv nu obs_dim records (u32) */
#define MAX_DIM 128     /* qpos, qvel, obs and action sizes of these tasks, at most */

/* One task's replay and what it has compared. */
typedef struct replay {
    FILE *f;
    const char *path;
    char id[33];
    uint32_t nq, nv, nu, obs_dim;
    const cudarl_env_def *def;
    void *state;
    long record, steps, resets, terminated, values;
} replay;

static void read_bytes(replay *r, void *buf, size_t n, const char *what) {
    CHECK_MSG(fread(buf, 1, n, r->f) == n, "%s: the trace ends inside %s (%s, record %ld)",
              r->path, what, r->id, r->record);
}

static void read_f64(replay *r, double *v, uint32_t n, const char *what) {
    read_bytes(r, v, n * sizeof(double), what);
}

/* Every element of got (n) equal to want's: the same bits, or both NaN. */
static void compare_f64(replay *r, const char *what, const double *want, const double *got,
                        uint32_t n) {
    for (uint32_t j = 0; j < n; j++, r->values++)
        CHECK_MSG(memcmp(&want[j], &got[j], sizeof(double)) == 0 || (want[j] != want[j] &&
                  got[j] != got[j]), "%s record %ld (step %ld): %s[%u]: expected %.17g, got "
                  "%.17g", r->id, r->record, r->steps, what, j, want[j], got[j]);
}

/* cudarl's float32 observation against Gymnasium's float64 one, cast. */
static void compare_obs(replay *r, const double *want, const float *got) {
    for (uint32_t j = 0; j < r->obs_dim; j++, r->values++) {
        float w = (float)want[j];
        CHECK_MSG(memcmp(&w, &got[j], sizeof w) == 0 || (w != w && got[j] != got[j]),
                  "%s record %ld (step %ld): obs[%u]: expected %.9g (%.17g as float64), got "
                  "%.9g", r->id, r->record, r->steps, j, w, want[j], got[j]);
    }
}

/* The env's qpos and qvel against Gymnasium's data after the same record. */
static void compare_state(replay *r, const double *qpos, const double *qvel) {
    cr_mujoco_view v;
    cr_mujoco_view_state(r->state, &v);
    CHECK(v.nq == (int)r->nq && v.nv == (int)r->nv);
    compare_f64(r, "qpos", qpos, v.qpos, r->nq);
    compare_f64(r, "qvel", qvel, v.qvel, r->nv);
}

/* A reset: the env started at Gymnasium's qpos and qvel gives its first observation. */
static void replay_reset(replay *r) {
    double qpos[MAX_DIM], qvel[MAX_DIM], obs[MAX_DIM];
    float got[MAX_DIM];
    read_f64(r, qpos, r->nq, "a reset's qpos");
    read_f64(r, qvel, r->nv, "a reset's qvel");
    read_f64(r, obs, r->obs_dim, "a reset's observation");
    cr_mujoco_start_at(r->state, qpos, qvel, got);
    compare_state(r, qpos, qvel);
    compare_obs(r, obs, got);
    r->resets++;
}

/* A step of Gymnasium's action: state, observation, reward and terminated. */
static void replay_step(replay *r) {
    float action[MAX_DIM], got[MAX_DIM], reward;
    double obs[MAX_DIM], qpos[MAX_DIM], qvel[MAX_DIM], want_reward;
    uint8_t flags[2], term;
    read_bytes(r, action, r->nu * sizeof(float), "a step's action");
    read_f64(r, obs, r->obs_dim, "a step's observation");
    read_f64(r, &want_reward, 1, "a step's reward");
    read_bytes(r, flags, 2, "a step's flags");
    read_f64(r, qpos, r->nq, "a step's qpos");
    read_f64(r, qvel, r->nv, "a step's qvel");
    r->steps++;
    r->def->step_box(r->state, action, got, &reward, &term);
    compare_state(r, qpos, qvel);
    compare_obs(r, obs, got);
    float want = (float)want_reward;
    CHECK_MSG(memcmp(&want, &reward, sizeof want) == 0, "%s step %ld: reward: expected %.9g "
              "(%.17g as float64), got %.9g", r->id, r->steps, want, want_reward, reward);
    CHECK_MSG(term == flags[0], "%s step %ld: terminated: expected %d, got %d", r->id, r->steps,
              flags[0], term);
    r->terminated += term;
}

/* One task: its header, then its records. */
static void replay_task(replay *r) {
    unsigned char h[TASK_BYTES];
    uint32_t records;
    read_bytes(r, h, sizeof h, "a task header");
    memcpy(r->id, h, 32);
    r->id[32] = 0;
    memcpy(&r->nq, h + 32, 4), memcpy(&r->nv, h + 36, 4), memcpy(&r->nu, h + 40, 4);
    memcpy(&r->obs_dim, h + 44, 4), memcpy(&records, h + 48, 4);
    r->def = cr_env_def_find(r->id);
    CHECK_MSG(r->def, "%s is not registered", r->id);
    CHECK_MSG(r->nq <= MAX_DIM && r->nv <= MAX_DIM && r->obs_dim <= MAX_DIM, "%s: sizes",
              r->id);
    CHECK_MSG((int)r->obs_dim == r->def->obs_shape[0] && (int)r->nu == r->def->action_dim,
              "%s: Gymnasium's observations have %u values and actions %u, cudarl's def %d and "
              "%d", r->id, r->obs_dim, r->nu, r->def->obs_shape[0], r->def->action_dim);
    r->state = aligned_alloc(64, (r->def->state_bytes + 63) / 64 * 64);
    CHECK(r->state);
    r->def->seed(r->state, 1, 0);
    r->steps = r->resets = r->terminated = r->values = 0;
    for (r->record = 0; r->record < (long)records; r->record++) {
        uint8_t kind;
        read_bytes(r, &kind, 1, "a record's kind");
        CHECK_MSG(kind <= 1 && (kind == 0 || r->record > 0), "%s record %ld: kind %d", r->id,
                  r->record, kind);
        if (kind == 0)
            replay_reset(r);
        else
            replay_step(r);
    }
    free(r->state);
    printf("test_mujoco_gym: %s: ok: %ld steps from %ld resets (%ld terminated), %ld values "
           "bit-exact\n", r->id, r->steps, r->resets, r->terminated, r->values);
}

int main(int argc, char **argv) {
    CHECK_MSG(argc == 2, "usage: test_mujoco_gym TRACE (written by "
              "tests/unit/gym_mujoco_trace.py)");
    replay r = {.path = argv[1]};
    r.f = fopen(r.path, "rb");
    CHECK_MSG(r.f, "cannot open the Gymnasium trace '%s': %s; it is written by "
              "tests/unit/gym_mujoco_trace.py (ctest runs it first as test gym_mujoco_trace)",
              r.path, strerror(errno));
    unsigned char h[HEADER_BYTES];
    uint32_t version, tasks;
    read_bytes(&r, h, sizeof h, "the header");
    CHECK_MSG(!memcmp(h, TRACE_MAGIC, 8), "%s is not a cudarl MuJoCo Gymnasium trace", r.path);
    memcpy(&version, h + 8, 4), memcpy(&tasks, h + 12, 4);
    CHECK_MSG(version == TRACE_VERSION, "%s: trace version %u, this test reads %u", r.path,
              version, TRACE_VERSION);
    printf("test_mujoco_gym: trace of gymnasium %.16s, mujoco %.16s, numpy %.16s; cudarl runs "
           "mujoco %s\n", (const char *)h + 16, (const char *)h + 32, (const char *)h + 48,
           cr_mujoco_version());
    for (uint32_t t = 0; t < tasks; t++) replay_task(&r);
    CHECK_MSG(fgetc(r.f) == EOF, "%s: bytes after the last task", r.path);
    fclose(r.f);
    return 0;
}
