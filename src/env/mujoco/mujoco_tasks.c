/* The four tasks with Gymnasium v5's defaults (gymnasium/envs/mujoco/<task>_v5.py): observations,
 * rewards and healthy checks, computed in float64 as Gymnasium does and cast at the end.
 *
 * Gymnasium's ctrl_cost is weight * np.sum(np.square(action)) on the float32 action: numpy
 * squares and sums in float32 (its pairwise sum) and multiplies by the weight as a float32, and
 * the sum of float32 and float64 terms is float64. sum_sq_f32 and sum_sq_f64 add in numpy's
 * order, so rewards match bit for bit. No contraction into fused multiply-adds (gcc's ISO C
 * mode does not contract; the pragma tells clang): Gymnasium's arithmetic has none. */
#include <math.h>
#include <string.h>

#include "env/mujoco/mujoco_task.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

/* ---- numpy's sums ----------------------------------------------------------------------- */

/* np.sum(np.square(x)) of n float32: numpy's pairwise sum (below 8 values one running sum; up
 * to 128, eight running sums over blocks of eight, combined as a tree, then the rest; above,
 * the halves at a multiple of 8). */
static float sum_sq_f32(const float *x, int n) {
    if (n < 8) {
        float r = 0.0f;
        for (int i = 0; i < n; i++) r += x[i] * x[i];
        return r;
    }
    if (n > 128) {
        int h = n / 2;
        h -= h % 8;
        return sum_sq_f32(x, h) + sum_sq_f32(x + h, n - h);
    }
    float r[8];
    for (int j = 0; j < 8; j++) r[j] = x[j] * x[j];
    int i = 8;
    for (; i < n - n % 8; i += 8)
        for (int j = 0; j < 8; j++) r[j] += x[i + j] * x[i + j];
    float s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; i++) s += x[i] * x[i];
    return s;
}

/* The same for float64. */
static double sum_sq_f64(const double *x, int n) {
    if (n < 8) {
        double r = 0.0;
        for (int i = 0; i < n; i++) r += x[i] * x[i];
        return r;
    }
    if (n > 128) {
        int h = n / 2;
        h -= h % 8;
        return sum_sq_f64(x, h) + sum_sq_f64(x + h, n - h);
    }
    double r[8];
    for (int j = 0; j < 8; j++) r[j] = x[j] * x[j];
    int i = 8;
    for (; i < n - n % 8; i += 8)
        for (int j = 0; j < 8; j++) r[j] += x[i + j] * x[i + j];
    double s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; i++) s += x[i] * x[i];
    return s;
}

/* np.clip(v, lo, hi): NaN stays NaN. */
static double clip(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Velocity of the tracked position along x over one env step, as Gymnasium divides it. */
static double x_velocity(const cr_mj_task *t, const mjData *d, const double before[2]) {
    double after = t->track_body >= 0 ? d->xpos[3 * t->track_body] : d->qpos[0];
    return (after - before[0]) / t->dt;
}

/* ---- HalfCheetah-v5 --------------------------------------------------------------------- */

#define CHEETAH_NQ 9
#define CHEETAH_NV 9
#define CHEETAH_NU 6
#define CHEETAH_OBS (CHEETAH_NQ - 1 + CHEETAH_NV)

/* qpos[1:], qvel. */
static void cheetah_observe(const mjData *d, float *obs) {
    for (int i = 1; i < CHEETAH_NQ; i++) *obs++ = (float)d->qpos[i];
    for (int i = 0; i < CHEETAH_NV; i++) *obs++ = (float)d->qvel[i];
}

/* forward_reward_weight 1 * x velocity - ctrl_cost_weight 0.1 * |action|^2; never ends. */
static void cheetah_score(const cr_mj_task *t, const mjData *d, const float *action,
                          const double before[2], float *reward, uint8_t *terminated) {
    double forward = 1.0 * x_velocity(t, d, before);
    float ctrl = 0.1f * sum_sq_f32(action, CHEETAH_NU);
    *reward = (float)(forward - (double)ctrl);
    *terminated = 0;
}

/* ---- Hopper-v5 and Walker2d-v5 ---------------------------------------------------------- */

#define HOPPER_NQ 6
#define HOPPER_NV 6
#define HOPPER_NU 3
#define HOPPER_OBS (HOPPER_NQ - 1 + HOPPER_NV)
#define WALKER_NQ 9
#define WALKER_NV 9
#define WALKER_NU 6
#define WALKER_OBS (WALKER_NQ - 1 + WALKER_NV)

/* qpos[1:], clip(qvel, -10, 10) (both tasks). */
static void planar_observe(const mjData *d, int nq, int nv, float *obs) {
    for (int i = 1; i < nq; i++) *obs++ = (float)d->qpos[i];
    for (int i = 0; i < nv; i++) *obs++ = (float)clip(d->qvel[i], -10.0, 10.0);
}

static void hopper_observe(const mjData *d, float *obs) {
    planar_observe(d, HOPPER_NQ, HOPPER_NV, obs);
}

static void walker_observe(const mjData *d, float *obs) {
    planar_observe(d, WALKER_NQ, WALKER_NV, obs);
}

/* forward_reward_weight 1 * x velocity + healthy_reward 1 (while healthy) - ctrl_cost_weight
 * 0.001 * |action|^2; terminated once unhealthy (terminate_when_unhealthy). */
static void planar_score(const cr_mj_task *t, const mjData *d, const float *action,
                         const double before[2], int healthy, float *reward,
                         uint8_t *terminated) {
    double forward = 1.0 * x_velocity(t, d, before);
    double rewards = forward + (healthy ? 1.0 : 0.0);
    float ctrl = 0.001f * sum_sq_f32(action, t->nu);
    *reward = (float)(rewards - (double)ctrl);
    *terminated = !healthy;
}

/* Hopper: every qpos[2:] and qvel within (-100, 100), z = qpos[1] in (0.7, inf), angle =
 * qpos[2] in (-0.2, 0.2), all open. */
static void hopper_score(const cr_mj_task *t, const mjData *d, const float *action,
                         const double before[2], float *reward, uint8_t *terminated) {
    int healthy = d->qpos[1] > 0.7 && d->qpos[1] < HUGE_VAL && d->qpos[2] > -0.2 &&
                  d->qpos[2] < 0.2;
    for (int i = 2; i < HOPPER_NQ; i++) healthy &= d->qpos[i] > -100.0 && d->qpos[i] < 100.0;
    for (int i = 0; i < HOPPER_NV; i++) healthy &= d->qvel[i] > -100.0 && d->qvel[i] < 100.0;
    planar_score(t, d, action, before, healthy, reward, terminated);
}

/* Walker2d: z = qpos[1] in (0.8, 2), angle = qpos[2] in (-1, 1), open. */
static void walker_score(const cr_mj_task *t, const mjData *d, const float *action,
                         const double before[2], float *reward, uint8_t *terminated) {
    int healthy = d->qpos[1] > 0.8 && d->qpos[1] < 2.0 && d->qpos[2] > -1.0 && d->qpos[2] < 1.0;
    planar_score(t, d, action, before, healthy, reward, terminated);
}

/* ---- Ant-v5 ----------------------------------------------------------------------------- */

#define ANT_NQ 15
#define ANT_NV 14
#define ANT_NU 8
#define ANT_NBODY 14
#define ANT_OBS (ANT_NQ - 2 + ANT_NV + (ANT_NBODY - 1) * 6)
#define ANT_TORSO 1 /* main_body */

/* qpos[2:], qvel, clip(cfrc_ext[1:], -1, 1) (include_cfrc_ext_in_observation). */
static void ant_observe(const mjData *d, float *obs) {
    for (int i = 2; i < ANT_NQ; i++) *obs++ = (float)d->qpos[i];
    for (int i = 0; i < ANT_NV; i++) *obs++ = (float)d->qvel[i];
    for (int i = 6; i < ANT_NBODY * 6; i++) *obs++ = (float)clip(d->cfrc_ext[i], -1.0, 1.0);
}

/* x velocity of the torso * forward_reward_weight 1 + healthy_reward 1 (while healthy) -
 * (ctrl_cost_weight 0.5 * |action|^2 + contact_cost_weight 5e-4 * |clip(cfrc_ext, -1, 1)|^2);
 * healthy: qpos and qvel finite and 0.2 <= qpos[2] <= 1; terminated once unhealthy. */
static void ant_score(const cr_mj_task *t, const mjData *d, const float *action,
                      const double before[2], float *reward, uint8_t *terminated) {
    int healthy = d->qpos[2] >= 0.2 && d->qpos[2] <= 1.0;
    for (int i = 0; i < ANT_NQ; i++) healthy &= isfinite(d->qpos[i]) != 0;
    for (int i = 0; i < ANT_NV; i++) healthy &= isfinite(d->qvel[i]) != 0;
    double contact[ANT_NBODY * 6];
    for (int i = 0; i < ANT_NBODY * 6; i++) contact[i] = clip(d->cfrc_ext[i], -1.0, 1.0);
    double forward = x_velocity(t, d, before) * 1.0;
    double rewards = forward + (healthy ? 1.0 : 0.0);
    float ctrl = 0.5f * sum_sq_f32(action, ANT_NU);
    double costs = (double)ctrl + 0.0005 * sum_sq_f64(contact, ANT_NBODY * 6);
    *reward = (float)(rewards - costs);
    *terminated = !healthy;
}

/* ---- the defs --------------------------------------------------------------------------- */

/* The action box: [-1, 1] on each actuator, every task's ctrlrange (checked at load). */
#define LOW3 -1.0f, -1.0f, -1.0f
#define HIGH3 1.0f, 1.0f, 1.0f
#define BOX3 .action_dim = 3, .action_low = {LOW3}, .action_high = {HIGH3}
#define BOX6 .action_dim = 6, .action_low = {LOW3, LOW3}, .action_high = {HIGH3, HIGH3}
#define BOX8                                                                                   \
    .action_dim = 8, .action_low = {LOW3, LOW3, -1.0f, -1.0f},                                 \
    .action_high = {HIGH3, HIGH3, 1.0f, 1.0f}

/* The def's functions of task `name` (cr_mj_*), each one line over the shared code. */
#define TASK_FUNCTIONS(name)                                                                   \
    static cr_mj_task name##_task;                                                             \
    static void name##_load(void) { cr_mj_load(&name##_task); }                               \
    static void name##_seed(void *s, uint64_t seed, uint64_t i) {                              \
        cr_mj_seed(&name##_task, s, seed, i);                                                  \
    }                                                                                          \
    static void name##_reset(void *s, void *obs) { cr_mj_reset(&name##_task, s, obs); }       \
    static void name##_step(void *s, const float *a, void *obs, float *r, uint8_t *term) {     \
        cr_mj_step(&name##_task, s, a, obs, r, term);                                          \
    }                                                                                          \
    static int name##_check(const void *s, char *why, size_t cap) {                            \
        return cr_mj_check(&name##_task, s, why, cap);                                         \
    }

/* The def's fields every task shares: Gymnasium's TimeLimit of 1000 steps. */
#define TASK_DEF(name, nq, nv, obs_dim)                                                        \
    .obs_rank = 1, .obs_shape = {(obs_dim), 1, 1}, .obs_dtype = CUDARL_OBS_F32,                \
    .max_episode_steps = 1000, .state_bytes = CR_MJ_STATE_BYTES(nq, nv), .seed = name##_seed,  \
    .reset = name##_reset, .step_box = name##_step, .state_check = name##_check

TASK_FUNCTIONS(cheetah)
TASK_FUNCTIONS(hopper)
TASK_FUNCTIONS(walker)
TASK_FUNCTIONS(ant)

/* solved_return: Gymnasium's reward_threshold; it has none for Walker2d, where cudarl counts a
 * mean of 3000 as solved (PPO's usual return after a million steps, far above a random
 * policy's few points). */
static const cudarl_env_def cheetah_def = {.id = "HalfCheetah-v5", .solved_return = 4800.0,
                                           BOX6,
                                           TASK_DEF(cheetah, CHEETAH_NQ, CHEETAH_NV, CHEETAH_OBS)};
static const cudarl_env_def hopper_def = {.id = "Hopper-v5", .solved_return = 3800.0,
                                          BOX3,
                                          TASK_DEF(hopper, HOPPER_NQ, HOPPER_NV, HOPPER_OBS)};
static const cudarl_env_def walker_def = {.id = "Walker2d-v5", .solved_return = 3000.0,
                                          BOX6,
                                          TASK_DEF(walker, WALKER_NQ, WALKER_NV, WALKER_OBS)};
static const cudarl_env_def ant_def = {.id = "Ant-v5", .solved_return = 6000.0,
                                       BOX8, TASK_DEF(ant, ANT_NQ, ANT_NV, ANT_OBS)};

/* frame_skip and reset noise: each task's defaults (reset_noise_scale; HalfCheetah and Ant draw
 * qvel from a normal, Hopper and Walker2d from a uniform). */
static cr_mj_task cheetah_task = {
    .xml = "half_cheetah.xml", .tag = 0x6d6a0001, .slot = 0, .frame_skip = 5, .nq = CHEETAH_NQ,
    .nv = CHEETAH_NV, .nu = CHEETAH_NU, .nbody = 8, .track_body = -1, .noise = 0.1,
    .qvel_normal = 1, .def = &cheetah_def, .load = cheetah_load, .observe = cheetah_observe,
    .score = cheetah_score, .once = PTHREAD_ONCE_INIT};
static cr_mj_task hopper_task = {
    .xml = "hopper.xml", .tag = 0x6d6a0002, .slot = 1, .frame_skip = 4, .nq = HOPPER_NQ,
    .nv = HOPPER_NV, .nu = HOPPER_NU, .nbody = 5, .track_body = -1, .noise = 5e-3,
    .def = &hopper_def, .load = hopper_load, .observe = hopper_observe, .score = hopper_score,
    .once = PTHREAD_ONCE_INIT};
static cr_mj_task walker_task = {
    .xml = "walker2d_v5.xml", .tag = 0x6d6a0003, .slot = 2, .frame_skip = 4, .nq = WALKER_NQ,
    .nv = WALKER_NV, .nu = WALKER_NU, .nbody = 8, .track_body = -1, .noise = 5e-3,
    .def = &walker_def, .load = walker_load, .observe = walker_observe, .score = walker_score,
    .once = PTHREAD_ONCE_INIT};
static cr_mj_task ant_task = {
    .xml = "ant.xml", .tag = 0x6d6a0004, .slot = 3, .frame_skip = 5, .nq = ANT_NQ, .nv = ANT_NV,
    .nu = ANT_NU, .nbody = ANT_NBODY, .track_body = ANT_TORSO, .contact_forces = 1, .noise = 0.1,
    .qvel_normal = 1, .def = &ant_def, .load = ant_load, .observe = ant_observe,
    .score = ant_score, .once = PTHREAD_ONCE_INIT};

cr_mj_task *const cr_mj_tasks[CR_MUJOCO_TASKS] = {&cheetah_task, &hopper_task, &walker_task,
                                                  &ant_task};

const cudarl_env_def *const cr_mujoco_defs[] = {&cheetah_def, &hopper_def, &walker_def, &ant_def,
                                                NULL};

int cr_mujoco_left_out(const char *id) { return 0; }
