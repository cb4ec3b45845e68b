/* CartPole-v1 for one env, the single definition that the CPU batch (cartpole.c) and the CUDA
 * kernels (cartpole.cu, one thread per env) both call, so the two cannot drift: Gymnasium's
 * CartPoleEnv.step (euler integrator) in float64 with the operations in Python's order, the
 * TimeLimit(500) truncation and same-step autoreset.
 *
 * No fused multiply-add: Gymnasium's numpy code never fuses a*b+c, and a fused step drifts from
 * it within one long episode. Every double operation that could pair into an FMA goes through
 * env_fp.h's CR_DMUL/CR_DADD/CR_DSUB/CR_DDIV, and each function that does arithmetic opens with
 * CR_NO_CONTRACT (env_fp.h says why that suffices on the host and on the device). */
#ifndef CUDARL_CARTPOLE_STEP_H
#define CUDARL_CARTPOLE_STEP_H

#include <math.h>
#include <stdint.h>

#include "core/philox.h"
#include "env/cartpole/cartpole.h"
#include "env/env_fp.h"

/* Constants of gymnasium/envs/classic_control/cartpole.py, derived ones computed as it does
 * (folded at compile time, exactly as Python computes them at run time). */
#define CR_CP_GRAVITY 9.8
#define CR_CP_MASSCART 1.0
#define CR_CP_MASSPOLE 0.1
#define CR_CP_TOTAL_MASS (CR_CP_MASSPOLE + CR_CP_MASSCART)
#define CR_CP_LENGTH 0.5 /* half the pole's length */
#define CR_CP_POLEMASS_LENGTH (CR_CP_MASSPOLE * CR_CP_LENGTH)
#define CR_CP_FORCE_MAG 10.0
#define CR_CP_TAU 0.02 /* seconds per step */
#define CR_CP_PI 3.14159265358979323846
#define CR_CP_THETA_THRESHOLD (12 * 2 * CR_CP_PI / 360)
#define CR_CP_X_THRESHOLD 2.4
#define CR_CP_RESET_LOW (-0.05)
#define CR_CP_RESET_HIGH 0.05

/* The float32 observation obs (4) of float64 state s (4), as np.array(state, dtype=np.float32). */
CR_HD static inline void cr_cartpole_observe(const double *s, float *obs) {
    for (int j = 0; j < CR_CARTPOLE_OBS_DIM; j++) obs[j] = (float)s[j];
}

/* A fresh episode: each component of s (4) uniform in [-0.05, 0.05) from rng, as Gymnasium's
 * np_random.uniform(low, high) = low + (high - low) * random(); elapsed = 0. */
CR_HD static inline void cr_cartpole_reset_one(double *s, int32_t *elapsed, cr_philox_state *rng) {
    CR_NO_CONTRACT
    for (int j = 0; j < CR_CARTPOLE_OBS_DIM; j++)
        s[j] = CR_DADD(CR_CP_RESET_LOW, CR_DMUL(CR_CP_RESET_HIGH - CR_CP_RESET_LOW,
                                                cr_philox_uniform_f64_hd(rng)));
    *elapsed = 0;
}

/* One euler step of tau seconds of state s (4) under action 1 (push right) or else push left. */
CR_HD static inline void cr_cartpole_physics(double *s, int32_t action) {
    CR_NO_CONTRACT
    double x = s[0], x_dot = s[1], theta = s[2], theta_dot = s[3];
    double force = action == 1 ? CR_CP_FORCE_MAG : -CR_CP_FORCE_MAG;
    double costheta = cos(theta), sintheta = sin(theta);
    /* temp = (force + polemass_length * theta_dot**2 * sintheta) / total_mass */
    double temp = CR_DDIV(CR_DADD(force, CR_DMUL(CR_DMUL(CR_CP_POLEMASS_LENGTH,
                                                         CR_DMUL(theta_dot, theta_dot)),
                                                 sintheta)),
                          CR_CP_TOTAL_MASS);
    /* denom = length * (4/3 - masspole * costheta**2 / total_mass) */
    double denom = CR_DMUL(CR_CP_LENGTH,
                           CR_DSUB(4.0 / 3.0, CR_DDIV(CR_DMUL(CR_CP_MASSPOLE,
                                                              CR_DMUL(costheta, costheta)),
                                                      CR_CP_TOTAL_MASS)));
    /* thetaacc = (gravity * sintheta - costheta * temp) / denom */
    double thetaacc = CR_DDIV(CR_DSUB(CR_DMUL(CR_CP_GRAVITY, sintheta), CR_DMUL(costheta, temp)),
                              denom);
    /* xacc = temp - polemass_length * thetaacc * costheta / total_mass */
    double xacc = CR_DSUB(temp, CR_DDIV(CR_DMUL(CR_DMUL(CR_CP_POLEMASS_LENGTH, thetaacc),
                                                costheta),
                                        CR_CP_TOTAL_MASS));
    s[0] = CR_DADD(x, CR_DMUL(CR_CP_TAU, x_dot));
    s[1] = CR_DADD(x_dot, CR_DMUL(CR_CP_TAU, xacc));
    s[2] = CR_DADD(theta, CR_DMUL(CR_CP_TAU, theta_dot));
    s[3] = CR_DADD(theta_dot, CR_DMUL(CR_CP_TAU, thetaacc));
}

/* Whether state s (4) has left the track or the pole has fallen past 12 degrees. */
CR_HD static inline int cr_cartpole_is_terminated(const double *s) {
    return s[0] < -CR_CP_X_THRESHOLD || s[0] > CR_CP_X_THRESHOLD || s[2] < -CR_CP_THETA_THRESHOLD ||
           s[2] > CR_CP_THETA_THRESHOLD;
}

/* Steps one env (state s (4), its elapsed-step count and its rng) with `action`, and writes its
 * obs (4), reward, terminated and truncated. When the episode ends the pre-reset observation
 * goes to final_obs (4), the env resets from its rng and obs is the new episode's first one;
 * otherwise final_obs is untouched. Returns whether the episode ended (terminated or truncated).
 * The caller checks that action is 0 or 1. */
CR_HD static inline int cr_cartpole_step_one(double *s, int32_t *elapsed, cr_philox_state *rng,
                                             int32_t action, float *obs, float *reward,
                                             uint8_t *terminated, uint8_t *truncated,
                                             float *final_obs) {
    cr_cartpole_physics(s, action);
    *elapsed += 1;
    int term = cr_cartpole_is_terminated(s);
    int trunc = *elapsed >= CR_CARTPOLE_MAX_STEPS;
    *terminated = (uint8_t)term;
    *truncated = (uint8_t)trunc;
    *reward = 1.0f;
    if (term || trunc) {
        cr_cartpole_observe(s, final_obs);
        cr_cartpole_reset_one(s, elapsed, rng);
    }
    cr_cartpole_observe(s, obs);
    return term || trunc;
}

#endif
