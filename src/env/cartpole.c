/* CartPole-v1 on the CPU: Gymnasium's CartPoleEnv.step (euler integrator) in float64, with the
 * operations in Python's order so that the states agree bit for bit, plus TimeLimit(500) and
 * same-step autoreset. */
#include <math.h>

#include "env/cartpole.h"

/* Gymnasium's numpy code never fuses a*b+c; neither may we. GCC does not contract in ISO C mode
 * (-std=c11) and rejects this pragma, clang contracts by default and honours it. */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

/* Constants of gymnasium/envs/classic_control/cartpole.py, derived ones computed as it does. */
#define CP_GRAVITY 9.8
#define CP_MASSCART 1.0
#define CP_MASSPOLE 0.1
#define CP_TOTAL_MASS (CP_MASSPOLE + CP_MASSCART)
#define CP_LENGTH 0.5 /* half the pole's length */
#define CP_POLEMASS_LENGTH (CP_MASSPOLE * CP_LENGTH)
#define CP_FORCE_MAG 10.0
#define CP_TAU 0.02 /* seconds per step */
#define CP_PI 3.14159265358979323846
#define CP_THETA_THRESHOLD (12 * 2 * CP_PI / 360)
#define CP_X_THRESHOLD 2.4
#define CP_RESET_LOW (-0.05)
#define CP_RESET_HIGH 0.05

/* The arena plan for n envs: state (N, 4) f64, elapsed (N) i32, rng (N), each 64-byte aligned. */
static void cartpole_plan(cr_plan *p, int num_envs) {
    size_t n = (size_t)num_envs;
    cr_plan_init(p);
    cr_plan_add(p, "cartpole.state", n * CR_CARTPOLE_OBS_DIM * sizeof(double));
    cr_plan_add(p, "cartpole.elapsed", n * sizeof(int32_t));
    cr_plan_add(p, "cartpole.rng", n * sizeof(cr_philox_state));
}

size_t cr_cartpole_bytes(int num_envs) {
    CUDARL_ASSERT(num_envs >= 1);
    cr_plan p;
    cartpole_plan(&p, num_envs);
    return p.total;
}

void cr_cartpole_init(cr_cartpole *env, int num_envs, void *mem) {
    CUDARL_ASSERT(num_envs >= 1 && mem && (uintptr_t)mem % CR_ARENA_ALIGN == 0);
    cr_plan p;
    cartpole_plan(&p, num_envs);
    unsigned char *base = mem;
    env->num_envs = num_envs;
    env->state = (double *)(base + p.offsets[0]);
    env->elapsed = (int32_t *)(base + p.offsets[1]);
    env->rng = (cr_philox_state *)(base + p.offsets[2]);
}

/* The float32 observation (4) of one float64 state (4), as np.array(state, dtype=np.float32). */
static void cartpole_observe(const double *s, float *obs) {
    for (int j = 0; j < CR_CARTPOLE_OBS_DIM; j++) obs[j] = (float)s[j];
}

/* A fresh episode for env i: each component uniform in [low, high) from the env's stream. */
static void cartpole_reset_one(cr_cartpole *env, int i) {
    double *s = env->state + (size_t)i * CR_CARTPOLE_OBS_DIM;
    for (int j = 0; j < CR_CARTPOLE_OBS_DIM; j++)
        s[j] = CP_RESET_LOW + (CP_RESET_HIGH - CP_RESET_LOW) * cr_philox_uniform_f64(&env->rng[i]);
    env->elapsed[i] = 0;
}

void cr_cartpole_reset(cr_cartpole *env, uint64_t seed, float *obs) {
    for (int i = 0; i < env->num_envs; i++) {
        cr_philox_seed(&env->rng[i], seed, (uint64_t)i);
        cartpole_reset_one(env, i);
        cartpole_observe(env->state + (size_t)i * CR_CARTPOLE_OBS_DIM,
                         obs + (size_t)i * CR_CARTPOLE_OBS_DIM);
    }
}

/* One euler step of tau seconds of state s (4) under action 0 (push left) or 1 (push right). */
static void cartpole_physics(double *s, int32_t action) {
    double x = s[0], x_dot = s[1], theta = s[2], theta_dot = s[3];
    double force = action == 1 ? CP_FORCE_MAG : -CP_FORCE_MAG;
    double costheta = cos(theta), sintheta = sin(theta);
    double temp = (force + CP_POLEMASS_LENGTH * (theta_dot * theta_dot) * sintheta) / CP_TOTAL_MASS;
    double denom = CP_LENGTH * (4.0 / 3.0 - CP_MASSPOLE * (costheta * costheta) / CP_TOTAL_MASS);
    double thetaacc = (CP_GRAVITY * sintheta - costheta * temp) / denom;
    double xacc = temp - CP_POLEMASS_LENGTH * thetaacc * costheta / CP_TOTAL_MASS;
    s[0] = x + CP_TAU * x_dot;
    s[1] = x_dot + CP_TAU * xacc;
    s[2] = theta + CP_TAU * theta_dot;
    s[3] = theta_dot + CP_TAU * thetaacc;
}

/* Whether state s (4) has left the track or the pole has fallen past 12 degrees. */
static int cartpole_terminated(const double *s) {
    return s[0] < -CP_X_THRESHOLD || s[0] > CP_X_THRESHOLD || s[2] < -CP_THETA_THRESHOLD ||
           s[2] > CP_THETA_THRESHOLD;
}

void cr_cartpole_step_range(cr_cartpole *env, int begin, int end, const int32_t *actions,
                            float *obs, float *reward, uint8_t *terminated, uint8_t *truncated,
                            float *final_obs) {
    CUDARL_ASSERT(0 <= begin && begin <= end && end <= env->num_envs);
    for (int i = begin; i < end; i++) {
        CUDARL_ASSERT(actions[i] == 0 || actions[i] == 1);
        double *s = env->state + (size_t)i * CR_CARTPOLE_OBS_DIM;
        cartpole_physics(s, actions[i]);
        env->elapsed[i]++;
        terminated[i] = (uint8_t)cartpole_terminated(s);
        truncated[i] = (uint8_t)(env->elapsed[i] >= CR_CARTPOLE_MAX_STEPS);
        reward[i] = 1.0f;
        if (terminated[i] || truncated[i]) {
            cartpole_observe(s, final_obs + (size_t)i * CR_CARTPOLE_OBS_DIM);
            cartpole_reset_one(env, i);
        }
        cartpole_observe(s, obs + (size_t)i * CR_CARTPOLE_OBS_DIM);
    }
}

void cr_cartpole_step(cr_cartpole *env, const int32_t *actions, float *obs, float *reward,
                      uint8_t *terminated, uint8_t *truncated, float *final_obs) {
    cr_cartpole_step_range(env, 0, env->num_envs, actions, obs, reward, terminated, truncated,
                           final_obs);
}

void cr_cartpole_set_state(cr_cartpole *env, int i, const double state[4], int32_t elapsed) {
    CUDARL_ASSERT(0 <= i && i < env->num_envs && 0 <= elapsed && elapsed < CR_CARTPOLE_MAX_STEPS);
    for (int j = 0; j < CR_CARTPOLE_OBS_DIM; j++)
        env->state[(size_t)i * CR_CARTPOLE_OBS_DIM + j] = state[j];
    env->elapsed[i] = elapsed;
}
