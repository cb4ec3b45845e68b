/* The MuJoCo side of the tasks (mujoco_task.h): each model loaded once per process from its
 * embedded XML, one scratch mjData per thread and task, and the def's seed, reset, step and
 * state check over them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env/env_check.h"
#include "env/mujoco/mujoco_task.h"

/* ---- MuJoCo's warnings ------------------------------------------------------------------ */

/* Set on a thread while it compiles a model: the warnings of Gymnasium's XML files (a
 * deprecated attribute) are expected there, and only logged at debug level. */
static _Thread_local int compiling;

/* MuJoCo's warnings go to cudarl's log: its default writes MUJOCO_LOG.TXT into the working
 * folder and prints to stdout, where the CLI's output goes. */
static void log_warning(const char *msg) {
    cr_log(compiling ? CUDARL_LOG_DEBUG : CUDARL_LOG_WARN, "MuJoCo: %s", msg);
}

static pthread_once_t warning_once = PTHREAD_ONCE_INIT;

/* Installs log_warning unless the process set a handler of its own (as MuJoCo's Python
 * bindings do). */
static void warning_install(void) {
    if (!mju_user_warning) mju_user_warning = log_warning;
}

/* ---- loading ---------------------------------------------------------------------------- */

/* A model that does not fit its task: the embedded XML is not the one the task's code was
 * written for. Prints why and how to rebuild, and aborts. */
_Noreturn static void load_fail(const cr_mj_task *t, const char *what) {
    fprintf(stderr, "cudarl: %s (%s, embedded at build time from Gymnasium's assets): %s. This "
            "build does not fit the Gymnasium it was configured with; reconfigure and rebuild "
            "with Gymnasium 1.x installed (pip install gymnasium), or point "
            "-DCUDARL_MUJOCO_ASSETS at its envs/mujoco/assets\n", t->def->id, t->xml, what);
    cr_assert_fail("the MuJoCo model fits its task", __FILE__, __LINE__);
}

/* The model's sizes and action box against the task's: its code indexes qpos, qvel, ctrl and
 * cfrc_ext with them, and its def was registered with them. */
static void load_check(const cr_mj_task *t, const mjModel *m) {
    char what[200];
    if (m->nq != t->nq || m->nv != t->nv || m->nu != t->nu || m->nbody != t->nbody ||
        m->na != 0 || t->def->action_dim != t->nu) {
        snprintf(what, sizeof what, "the model has nq %d, nv %d, nu %d, nbody %d, na %d; the task "
                 "expects %d, %d, %d (action_dim %d), %d, 0", (int)m->nq, (int)m->nv, (int)m->nu,
                 (int)m->nbody, (int)m->na, t->nq, t->nv, t->nu, t->def->action_dim, t->nbody);
        load_fail(t, what);
    }
    if (mj_stateSize(m, CR_MJ_SPEC) != CR_MJ_PHYS(t->nq, t->nv)) {
        snprintf(what, sizeof what, "its state has %d numbers, expected %d (time, qpos, qvel, "
                 "warm start)", mj_stateSize(m, CR_MJ_SPEC), CR_MJ_PHYS(t->nq, t->nv));
        load_fail(t, what);
    }
    for (int k = 0; k < t->nu; k++) { /* Gymnasium's Box: ctrlrange as float32 */
        const double *range = m->actuator_ctrlrange + 2 * k;
        float lo = (float)range[0], hi = (float)range[1];
        if (lo != t->def->action_low[k] || hi != t->def->action_high[k]) {
            snprintf(what, sizeof what, "actuator %d's ctrlrange is [%g, %g], the action box "
                     "[%g, %g]", k, lo, hi, t->def->action_low[k], t->def->action_high[k]);
            load_fail(t, what);
        }
    }
}

void cr_mj_load(cr_mj_task *t) {
    if (mj_version() != mjVERSION_HEADER) {
        char what[160];
        snprintf(what, sizeof what, "libmujoco is version %d but was built against headers of "
                 "version %d; use the headers of the library it runs with", mj_version(),
                 mjVERSION_HEADER);
        load_fail(t, what);
    }
    pthread_once(&warning_once, warning_install);
    const cr_mj_asset *a = cr_mj_assets;
    while (a->name && strcmp(a->name, t->xml)) a++;
    if (!a->name) load_fail(t, "the file is not among the embedded ones");
    mjVFS vfs;
    mj_defaultVFS(&vfs);
    char err[1000] = "";
    mjModel *m = NULL;
    if (mj_addBufferVFS(&vfs, a->name, a->bytes, a->size) == 0) {
        compiling = 1;
        m = mj_loadXML(a->name, &vfs, err, sizeof err);
        compiling = 0;
    } else {
        snprintf(err, sizeof err, "MuJoCo's virtual file system did not take it");
    }
    mj_deleteVFS(&vfs);
    if (!m) load_fail(t, err);
    load_check(t, m);
    t->dt = m->opt.timestep * t->frame_skip;
    t->model = m; /* read after pthread_once returns, which orders it */
}

/* ---- scratch data ----------------------------------------------------------------------- */

/* A thread's scratch mjData of each task, made on its first use there, freed when the thread
 * ends. */
typedef struct thread_scratch {
    mjData *data[CR_MUJOCO_TASKS];
} thread_scratch;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_free(void *p) {
    thread_scratch *s = p;
    for (int i = 0; i < CR_MUJOCO_TASKS; i++)
        if (s->data[i]) mj_deleteData(s->data[i]);
    free(s);
}

static void scratch_key_make(void) {
    CUDARL_ASSERT(pthread_key_create(&scratch_key, scratch_free) == 0);
}

/* t's model, loaded on first use. */
static const mjModel *task_model(cr_mj_task *t) {
    pthread_once(&t->once, t->load);
    return t->model;
}

/* The calling thread's scratch data of t. */
static mjData *scratch(cr_mj_task *t) {
    const mjModel *m = task_model(t);
    pthread_once(&scratch_once, scratch_key_make);
    thread_scratch *s = pthread_getspecific(scratch_key);
    if (!s) {
        s = calloc(1, sizeof *s);
        CUDARL_ASSERT(s && pthread_setspecific(scratch_key, s) == 0);
    }
    if (!s->data[t->slot]) {
        s->data[t->slot] = mj_makeData(m);
        CUDARL_ASSERT(s->data[t->slot]);
    }
    return s->data[t->slot];
}

/* ---- the def's functions ---------------------------------------------------------------- */

/* Copies d's state into s, and the tracked position. */
static void state_save(const cr_mj_task *t, cr_mj_state *s, const mjData *d) {
    mj_getState(t->model, d, s->phys, CR_MJ_SPEC);
    if (t->track_body >= 0) {
        s->track_xy[0] = d->xpos[3 * t->track_body];
        s->track_xy[1] = d->xpos[3 * t->track_body + 1];
    }
}

/* Gymnasium's set_state (mj_forward) on d's qpos and qvel, after mj_resetData: the episode's
 * start, saved into s, and its first observation. */
static void episode_start(const cr_mj_task *t, cr_mj_state *s, mjData *d, void *obs) {
    mj_forward(t->model, d);
    state_save(t, s, d);
    t->observe(d, obs);
}

void cr_mj_seed(cr_mj_task *t, void *state, uint64_t seed, uint64_t index) {
    cr_mj_state *s = state;
    memset(s, 0, CR_MJ_STATE_BYTES(t->nq, t->nv));
    s->tag = t->tag;
    s->nphys = CR_MJ_PHYS(t->nq, t->nv);
    cr_philox_seed(&s->rng, seed, index);
}

/* Gymnasium's reset_model: qpos = init_qpos + U(-noise, noise) (nq draws), then qvel =
 * init_qvel + noise * N(0, 1) or + U(-noise, noise) (nv draws); init_qpos is the model's qpos0,
 * init_qvel zero. uniform(low, high) is low + (high - low) * u, as numpy draws it. */
void cr_mj_reset(cr_mj_task *t, void *state, void *obs) {
    cr_mj_state *s = state;
    mjData *d = scratch(t);
    const mjModel *m = t->model;
    const double lo = -t->noise, hi = t->noise;
    mj_resetData(m, d);
    for (int i = 0; i < t->nq; i++)
        d->qpos[i] = m->qpos0[i] + (lo + (hi - lo) * cr_philox_uniform_f64(&s->rng));
    for (int i = 0; i < t->nv; i++)
        d->qvel[i] = 0.0 + (t->qvel_normal ? t->noise * cr_philox_normal(&s->rng)
                                           : lo + (hi - lo) * cr_philox_uniform_f64(&s->rng));
    episode_start(t, s, d, obs);
}

/* Gymnasium's step: ctrl = action, mj_step frame_skip times (and mj_rnePostConstraint where
 * the task reads contact forces), then the task's observation, reward and termination. */
void cr_mj_step(cr_mj_task *t, void *state, const float *action, void *obs, float *reward,
                uint8_t *terminated) {
    cr_mj_state *s = state;
    mjData *d = scratch(t);
    const mjModel *m = t->model;
    mj_setState(m, d, s->phys, CR_MJ_SPEC);
    const double before[2] = {t->track_body >= 0 ? s->track_xy[0] : d->qpos[0], s->track_xy[1]};
    for (int k = 0; k < t->nu; k++) d->ctrl[k] = action[k];
    for (int f = 0; f < t->frame_skip; f++) mj_step(m, d);
    if (t->contact_forces) mj_rnePostConstraint(m, d);
    state_save(t, s, d);
    t->observe(d, obs);
    t->score(t, d, action, before, reward, terminated);
}

/* Names phys[i] of a task with nq, nv into buf: "time", "qpos[3]", "qvel[0]",
 * "qacc_warmstart[2]". */
static void phys_name(int nq, int nv, int i, char *buf, size_t cap) {
    if (i == 0)
        snprintf(buf, cap, "time");
    else if (i <= nq)
        snprintf(buf, cap, "qpos[%d]", i - 1);
    else if (i <= nq + nv)
        snprintf(buf, cap, "qvel[%d]", i - 1 - nq);
    else
        snprintf(buf, cap, "qacc_warmstart[%d]", i - 1 - nq - nv);
}

int cr_mj_check(const cr_mj_task *t, const void *state, char *why, size_t cap) {
    const cr_mj_state *s = state;
    if (s->tag != t->tag) {
        snprintf(why, cap, "its tag is 0x%08x, expected 0x%08x (a %s state)", s->tag, t->tag,
                 t->def->id);
        return 1;
    }
    const int n = CR_MJ_PHYS(t->nq, t->nv);
    if (cr_check_int(why, cap, "its MuJoCo state's size", s->nphys, n, n) ||
        cr_check_rng(why, cap, "rng", &s->rng) ||
        cr_check_real(why, cap, "time", s->phys[0], 0.0, HUGE_VAL) ||
        cr_check_real(why, cap, "track_xy[0]", s->track_xy[0], -HUGE_VAL, HUGE_VAL) ||
        cr_check_real(why, cap, "track_xy[1]", s->track_xy[1], -HUGE_VAL, HUGE_VAL))
        return 1;
    for (int i = 1; i < n; i++) {
        if (isfinite(s->phys[i])) continue;
        char name[40];
        phys_name(t->nq, t->nv, i, name, sizeof name);
        snprintf(why, cap, "%s is %g, expected a finite number", name, s->phys[i]);
        return 1;
    }
    return 0;
}

/* ---- for tests -------------------------------------------------------------------------- */

/* The task of a seeded state. */
static cr_mj_task *task_of(const void *state) {
    const cr_mj_state *s = state;
    for (int i = 0; i < CR_MUJOCO_TASKS; i++)
        if (cr_mj_tasks[i]->tag == s->tag) return cr_mj_tasks[i];
    cr_assert_fail("a state seeded by a MuJoCo task's def", __FILE__, __LINE__);
}

void cr_mujoco_view_state(const void *state, cr_mujoco_view *v) {
    cr_mj_task *t = task_of(state);
    const cr_mj_state *s = state;
    v->nq = t->nq, v->nv = t->nv;
    v->time = s->phys[0];
    v->qpos = s->phys + 1;
    v->qvel = s->phys + 1 + t->nq;
    v->warm = s->phys + 1 + t->nq + t->nv;
    v->qpos0 = task_model(t)->qpos0;
    v->noise = t->noise;
    v->qvel_normal = t->qvel_normal;
}

void cr_mujoco_start_at(void *state, const double *qpos, const double *qvel, void *obs) {
    cr_mj_task *t = task_of(state);
    mjData *d = scratch(t);
    mj_resetData(t->model, d);
    memcpy(d->qpos, qpos, (size_t)t->nq * sizeof(double));
    memcpy(d->qvel, qvel, (size_t)t->nv * sizeof(double));
    episode_start(t, state, d, obs);
}

const char *cr_mujoco_version(void) { return mj_versionString(); }
