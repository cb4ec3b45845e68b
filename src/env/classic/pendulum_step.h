/* Pendulum-v1 for one env, the single definition that the def (pendulum.c, stepped by the pool
 * and by the CPU batch) and the CUDA twin (classic_cuda.cu) both call: gymnasium/envs/
 * classic_control/pendulum.py with numpy's types: the state is float64, the torque float32, so
 * u**2, 0.001 * u**2 and 3.0 * u are float32 operations (u**2 by powf) added into float64 sums.
 * Reward -(angle_normalize(th)**2 + 0.1 * thdot**2 + 0.001 * u**2), computed before the step; no
 * termination. The TimeLimit (200) is the batch's and the pool's. */
#ifndef CUDARL_PENDULUM_STEP_H
#define CUDARL_PENDULUM_STEP_H

#include "env/classic/classic_step.h"

#define CR_PENDULUM_OBS_DIM 3
#define CR_PENDULUM_MAX_STEPS 200

/* Constants of pendulum.py. */
#define CR_PD_MAX_SPEED 8.0
#define CR_PD_MAX_TORQUE 2.0f /* the action box is [-2, 2] */
#define CR_PD_DT 0.05
#define CR_PD_G 10.0
#define CR_PD_M 1.0
#define CR_PD_L 1.0
#define CR_PD_RESET_THETA CR_CLASSIC_PI /* DEFAULT_X: theta uniform in [-pi, pi) */
#define CR_PD_RESET_THETADOT 1.0        /* DEFAULT_Y: thdot uniform in [-1, 1) */
/* |theta| never exceeds this: it starts within pi and moves by at most max_speed * dt a step for
 * the 200 steps of an episode. */
#define CR_PD_MAX_THETA (CR_CLASSIC_PI + CR_PENDULUM_MAX_STEPS * CR_PD_MAX_SPEED * CR_PD_DT)

/* One Pendulum env. No implicit padding: the CUDA twin moves it as 32-bit words. */
typedef struct cr_pendulum_state {
    double s[2];         /* th (rad, not wrapped), thdot (rad/s, in [-8, 8]) */
    cr_philox_state rng; /* stream `index` of the batch's seed */
    uint32_t pad;        /* 0 */
} cr_pendulum_state;

/* The float32 observation obs (3) of state s (2): cos th, sin th, thdot. */
CR_HD static inline void cr_pendulum_observe(const double *s, float *obs) {
    obs[0] = (float)cos(s[0]);
    obs[1] = (float)sin(s[0]);
    obs[2] = (float)s[1];
}

CR_HD static inline void cr_pendulum_seed(cr_pendulum_state *e, uint64_t seed, uint64_t index) {
    cr_philox_seed_hd(&e->rng, seed, index);
}

/* A fresh episode: th uniform in [-pi, pi), then thdot uniform in [-1, 1) (the order of
 * np_random.uniform(low=-high, high=high) over high = [pi, 1]); writes obs (3). */
CR_HD static inline void cr_pendulum_reset(cr_pendulum_state *e, float *obs) {
    e->s[0] = cr_classic_uniform(&e->rng, -CR_PD_RESET_THETA, CR_PD_RESET_THETA);
    e->s[1] = cr_classic_uniform(&e->rng, -CR_PD_RESET_THETADOT, CR_PD_RESET_THETADOT);
    cr_pendulum_observe(e->s, obs);
}

/* pendulum.py's angle_normalize(x) = ((x + pi) % (2 * pi)) - pi. */
CR_HD static inline double cr_pendulum_angle_normalize(double x) {
    CR_NO_CONTRACT
    return CR_DSUB(cr_py_mod(CR_DADD(x, CR_CLASSIC_PI), 2 * CR_CLASSIC_PI), CR_CLASSIC_PI);
}

/* PendulumEnv.step with the torque action (1), which Gymnasium clips into [-2, 2] itself (the
 * batch has done so already): writes obs (3) and reward; never terminates (returns 0). */
CR_HD static inline int cr_pendulum_step(cr_pendulum_state *e, const float *action, float *obs,
                                         float *reward) {
    CR_NO_CONTRACT
    const double th = e->s[0], thdot = e->s[1];
    const float u = (float)cr_py_clamp(action[0], -CR_PD_MAX_TORQUE, CR_PD_MAX_TORQUE);
    /* costs = angle_normalize(th)**2 + 0.1 * thdot**2 + 0.001 * (u**2), the last in float32 */
    double costs = CR_DADD(cr_np_square(cr_pendulum_angle_normalize(th)),
                           CR_DMUL(0.1, cr_np_square(thdot)));
    costs = CR_DADD(costs, cr_f32(CR_DMUL((double)0.001f, (double)cr_np_squaref(u))));
    /* newthdot = thdot + (3 * g / (2 * l) * np.sin(th) + 3.0 / (m * l**2) * u) * dt, the
     * product with u in float32 */
    double accel = CR_DADD(CR_DMUL(3 * CR_PD_G / (2 * CR_PD_L), sin(th)),
                           cr_f32(CR_DMUL(3.0 / (CR_PD_M * (CR_PD_L * CR_PD_L)), (double)u)));
    double newthdot = CR_DADD(thdot, CR_DMUL(accel, CR_PD_DT));
    newthdot = cr_py_clamp(newthdot, -CR_PD_MAX_SPEED, CR_PD_MAX_SPEED);
    e->s[0] = CR_DADD(th, CR_DMUL(newthdot, CR_PD_DT));
    e->s[1] = newthdot;
    *reward = (float)-costs;
    cr_pendulum_observe(e->s, obs);
    return 0;
}

#endif
