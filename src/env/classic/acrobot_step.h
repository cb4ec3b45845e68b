/* Acrobot-v1 for one env, the single definition that the def (acrobot.c, stepped by the pool and
 * by the CPU batch) and the CUDA twin (classic_cuda.cu) both call: gymnasium/envs/
 * classic_control/acrobot.py with its book dynamics, integrated by its rk4 over dt = 0.2 s in
 * float64 with the operations in Python's order (no FMA), then wrap() and bound(). Reward -1 a
 * step, 0 on the step that reaches the goal height (terminated). The TimeLimit (500) is the
 * batch's and the pool's.
 *
 * Where this differs from Gymnasium: reset() stores the state as float32 and Gymnasium computes
 * the first observation's cos and sin in float32 with numpy's own routines; here they are the
 * float64 libm results rounded to float32, which may differ in the last float32 bit. Every later
 * observation is float64 libm cos/sin rounded to float32, as in Gymnasium. */
#ifndef CUDARL_ACROBOT_STEP_H
#define CUDARL_ACROBOT_STEP_H

#include "env/classic/classic_step.h"

#define CR_ACROBOT_OBS_DIM 6
#define CR_ACROBOT_NUM_ACTIONS 3 /* torque -1, 0, +1 on the joint between the links */
#define CR_ACROBOT_MAX_STEPS 500

/* Constants of acrobot.py; derived ones computed as Python computes them (exactly: products of
 * 0.5, 1 and 2, except the two that use g and pi, which fold to the same rounded double). */
#define CR_AB_DT 0.2
#define CR_AB_L1 1.0  /* LINK_LENGTH_1 */
#define CR_AB_M1 1.0  /* LINK_MASS_1 */
#define CR_AB_M2 1.0  /* LINK_MASS_2 */
#define CR_AB_LC1 0.5 /* LINK_COM_POS_1 */
#define CR_AB_LC2 0.5 /* LINK_COM_POS_2 */
#define CR_AB_I1 1.0  /* LINK_MOI */
#define CR_AB_I2 1.0
#define CR_AB_G 9.8
#define CR_AB_MAX_VEL_1 (4 * CR_CLASSIC_PI)
#define CR_AB_MAX_VEL_2 (9 * CR_CLASSIC_PI)
#define CR_AB_RESET_LOW (-0.1)
#define CR_AB_RESET_HIGH 0.1

/* One Acrobot env. No implicit padding: the CUDA twin moves it as 32-bit words. */
typedef struct cr_acrobot_state {
    double s[4];         /* theta1, theta2 (rad, in [-pi, pi]), dtheta1, dtheta2 (rad/s) */
    cr_philox_state rng; /* stream `index` of the batch's seed */
    uint32_t pad;        /* 0 */
} cr_acrobot_state;

/* The float32 observation obs (6) of state s (4): cos and sin of both angles, the velocities. */
CR_HD static inline void cr_acrobot_observe(const double *s, float *obs) {
    obs[0] = (float)cos(s[0]);
    obs[1] = (float)sin(s[0]);
    obs[2] = (float)cos(s[1]);
    obs[3] = (float)sin(s[1]);
    obs[4] = (float)s[2];
    obs[5] = (float)s[3];
}

CR_HD static inline void cr_acrobot_seed(cr_acrobot_state *e, uint64_t seed, uint64_t index) {
    cr_philox_seed_hd(&e->rng, seed, index);
}

/* A fresh episode: each of the 4 components uniform in [-0.1, 0.1), rounded to float32
 * (.astype(np.float32)); writes the first observation obs (6). */
CR_HD static inline void cr_acrobot_reset(cr_acrobot_state *e, float *obs) {
    for (int j = 0; j < 4; j++)
        e->s[j] = cr_f32(cr_classic_uniform(&e->rng, CR_AB_RESET_LOW, CR_AB_RESET_HIGH));
    cr_acrobot_observe(e->s, obs);
}

/* AcrobotEnv._dsdt (book): the derivative dy (4) of y (4) under torque a. */
CR_HD static inline void cr_acrobot_dsdt(const double *y, double a, double *dy) {
    CR_NO_CONTRACT
    const double theta1 = y[0], theta2 = y[1], dtheta1 = y[2], dtheta2 = y[3];
    const double cos2 = cos(theta2), sin2 = sin(theta2);
    /* d1 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * cos(theta2)) + I1 + I2 */
    double d1 = CR_DMUL(CR_AB_M2, CR_DADD(CR_AB_L1 * CR_AB_L1 + CR_AB_LC2 * CR_AB_LC2,
                                          CR_DMUL(2 * CR_AB_L1 * CR_AB_LC2, cos2)));
    d1 = CR_DADD(CR_DADD(CR_DADD(CR_AB_M1 * (CR_AB_LC1 * CR_AB_LC1), d1), CR_AB_I1), CR_AB_I2);
    /* d2 = m2 * (lc2**2 + l1 * lc2 * cos(theta2)) + I2 */
    double d2 = CR_DADD(CR_DMUL(CR_AB_M2, CR_DADD(CR_AB_LC2 * CR_AB_LC2,
                                                  CR_DMUL(CR_AB_L1 * CR_AB_LC2, cos2))),
                        CR_AB_I2);
    /* phi2 = m2 * lc2 * g * cos(theta1 + theta2 - pi / 2.0) */
    double phi2 = CR_DMUL(CR_AB_M2 * CR_AB_LC2 * CR_AB_G,
                          cos(CR_DSUB(CR_DADD(theta1, theta2), CR_CLASSIC_PI / 2.0)));
    /* phi1 = -m2 * l1 * lc2 * dtheta2**2 * sin(theta2)
     *        - 2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * sin(theta2)
     *        + (m1 * lc1 + m2 * l1) * g * cos(theta1 - pi / 2) + phi2 */
    double t1 = CR_DMUL(CR_DMUL(-CR_AB_M2 * CR_AB_L1 * CR_AB_LC2, cr_np_square(dtheta2)), sin2);
    double t2 = CR_DMUL(CR_DMUL(CR_DMUL(2 * CR_AB_M2 * CR_AB_L1 * CR_AB_LC2, dtheta2), dtheta1),
                        sin2);
    double t3 = CR_DMUL((CR_AB_M1 * CR_AB_LC1 + CR_AB_M2 * CR_AB_L1) * CR_AB_G,
                        cos(CR_DSUB(theta1, CR_CLASSIC_PI / 2)));
    double phi1 = CR_DADD(CR_DADD(CR_DSUB(t1, t2), t3), phi2);
    /* ddtheta2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * dtheta1**2 * sin(theta2) - phi2)
     *            / (m2 * lc2**2 + I2 - d2**2 / d1) */
    double num = CR_DADD(a, CR_DMUL(CR_DDIV(d2, d1), phi1));
    num = CR_DSUB(num, CR_DMUL(CR_DMUL(CR_AB_M2 * CR_AB_L1 * CR_AB_LC2, cr_np_square(dtheta1)),
                               sin2));
    num = CR_DSUB(num, phi2);
    double den = CR_DSUB(CR_AB_M2 * (CR_AB_LC2 * CR_AB_LC2) + CR_AB_I2,
                         CR_DDIV(cr_np_square(d2), d1));
    double ddtheta2 = CR_DDIV(num, den);
    /* ddtheta1 = -(d2 * ddtheta2 + phi1) / d1 */
    double ddtheta1 = CR_DDIV(-CR_DADD(CR_DMUL(d2, ddtheta2), phi1), d1);
    dy[0] = dtheta1;
    dy[1] = dtheta2;
    dy[2] = ddtheta1;
    dy[3] = ddtheta2;
}

/* acrobot.py's rk4(_dsdt, s + [a], [0, dt]): one classical Runge-Kutta step of s (4) in place.
 * The torque's own derivative is 0, so it stays a through the stages. */
CR_HD static inline void cr_acrobot_rk4(double *s, double a) {
    CR_NO_CONTRACT
    const double dt = CR_AB_DT, dt2 = CR_AB_DT / 2.0;
    double k1[4], k2[4], k3[4], k4[4], y[4];
    cr_acrobot_dsdt(s, a, k1);
    for (int j = 0; j < 4; j++) y[j] = CR_DADD(s[j], CR_DMUL(dt2, k1[j]));
    cr_acrobot_dsdt(y, a, k2);
    for (int j = 0; j < 4; j++) y[j] = CR_DADD(s[j], CR_DMUL(dt2, k2[j]));
    cr_acrobot_dsdt(y, a, k3);
    for (int j = 0; j < 4; j++) y[j] = CR_DADD(s[j], CR_DMUL(dt, k3[j]));
    cr_acrobot_dsdt(y, a, k4);
    /* y0 + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4) */
    for (int j = 0; j < 4; j++) {
        double k = CR_DADD(CR_DADD(k1[j], CR_DMUL(2.0, k2[j])), CR_DMUL(2.0, k3[j]));
        k = CR_DADD(k, k4[j]);
        s[j] = CR_DADD(s[j], CR_DMUL(dt / 6.0, k));
    }
}

/* acrobot.py's wrap(x, -pi, pi): steps of 2 pi until x is within [-pi, pi]. x is finite (a step
 * moves an angle by less than 2 pi, and the state check refuses a non-finite one). */
CR_HD static inline double cr_acrobot_wrap(double x) {
    CR_NO_CONTRACT
    const double m = -CR_CLASSIC_PI, M = CR_CLASSIC_PI, diff = M - m;
    while (x > M) x = CR_DSUB(x, diff);
    while (x < m) x = CR_DADD(x, diff);
    return x;
}

/* Whether state s (4) has the free end above the goal: -cos(theta1) - cos(theta2 + theta1) > 1. */
CR_HD static inline int cr_acrobot_is_terminal(const double *s) {
    CR_NO_CONTRACT
    return CR_DSUB(-cos(s[0]), cos(CR_DADD(s[1], s[0]))) > 1.0;
}

/* AcrobotEnv.step with action 0, 1 or 2 (the caller checks it): writes obs (6) and reward and
 * returns whether the episode terminated. */
CR_HD static inline int cr_acrobot_step(cr_acrobot_state *e, int32_t action, float *obs,
                                        float *reward) {
    const double torque = action == 0 ? -1.0 : action == 1 ? 0.0 : 1.0; /* AVAIL_TORQUE */
    double *s = e->s;
    cr_acrobot_rk4(s, torque);
    s[0] = cr_acrobot_wrap(s[0]);
    s[1] = cr_acrobot_wrap(s[1]);
    s[2] = cr_py_clamp(s[2], -CR_AB_MAX_VEL_1, CR_AB_MAX_VEL_1);
    s[3] = cr_py_clamp(s[3], -CR_AB_MAX_VEL_2, CR_AB_MAX_VEL_2);
    int term = cr_acrobot_is_terminal(s);
    *reward = term ? 0.0f : -1.0f;
    cr_acrobot_observe(s, obs);
    return term;
}

#endif
