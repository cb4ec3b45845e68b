/* MountainCar-v0 for one env, the single definition that the def (mountain_car.c, stepped by the
 * pool and by the CPU batch) and the CUDA twin (classic_cuda.cu) both call: gymnasium/envs/
 * classic_control/mountain_car.py, whose state stays float64 (a tuple of numpy float64) and whose
 * only transcendental is math.cos (libm). Reward -1 a step; terminated when the car reaches
 * position 0.5 with a velocity >= 0. The TimeLimit (200) is the batch's and the pool's. */
#ifndef CUDARL_MOUNTAIN_CAR_STEP_H
#define CUDARL_MOUNTAIN_CAR_STEP_H

#include "env/classic/classic_step.h"

#define CR_MOUNTAIN_CAR_OBS_DIM 2
#define CR_MOUNTAIN_CAR_NUM_ACTIONS 3 /* accelerate left, none, right */
#define CR_MOUNTAIN_CAR_MAX_STEPS 200

/* Constants of mountain_car.py. */
#define CR_MC_MIN_POSITION (-1.2)
#define CR_MC_MAX_POSITION 0.6
#define CR_MC_MAX_SPEED 0.07
#define CR_MC_GOAL_POSITION 0.5
#define CR_MC_FORCE 0.001
#define CR_MC_GRAVITY 0.0025
#define CR_MC_RESET_LOW (-0.6)
#define CR_MC_RESET_HIGH (-0.4)

/* One MountainCar env. No implicit padding: the CUDA twin moves it as 32-bit words. */
typedef struct cr_mountain_car_state {
    double s[2];         /* position in [-1.2, 0.6], velocity in [-0.07, 0.07] */
    cr_philox_state rng; /* stream `index` of the batch's seed */
    uint32_t pad;        /* 0 */
} cr_mountain_car_state;

/* The float32 observation obs (2) of state s (2). */
CR_HD static inline void cr_mountain_car_observe(const double *s, float *obs) {
    obs[0] = (float)s[0];
    obs[1] = (float)s[1];
}

CR_HD static inline void cr_mountain_car_seed(cr_mountain_car_state *e, uint64_t seed,
                                              uint64_t index) {
    cr_philox_seed_hd(&e->rng, seed, index);
}

/* A fresh episode: position uniform in [-0.6, -0.4), velocity 0; writes obs (2). */
CR_HD static inline void cr_mountain_car_reset(cr_mountain_car_state *e, float *obs) {
    e->s[0] = cr_classic_uniform(&e->rng, CR_MC_RESET_LOW, CR_MC_RESET_HIGH);
    e->s[1] = 0.0;
    cr_mountain_car_observe(e->s, obs);
}

/* MountainCarEnv.step with action 0, 1 or 2 (the caller checks it): writes obs (2) and reward
 * and returns whether the episode terminated. */
CR_HD static inline int cr_mountain_car_step(cr_mountain_car_state *e, int32_t action,
                                             float *obs, float *reward) {
    CR_NO_CONTRACT
    double position = e->s[0], velocity = e->s[1];
    /* velocity += (action - 1) * force + math.cos(3 * position) * (-gravity) */
    double push = CR_DMUL((double)(action - 1), CR_MC_FORCE);
    double pull = CR_DMUL(cos(CR_DMUL(3.0, position)), -CR_MC_GRAVITY);
    velocity = CR_DADD(velocity, CR_DADD(push, pull));
    velocity = cr_py_clamp(velocity, -CR_MC_MAX_SPEED, CR_MC_MAX_SPEED);
    position = CR_DADD(position, velocity);
    position = cr_py_clamp(position, CR_MC_MIN_POSITION, CR_MC_MAX_POSITION);
    if (position == CR_MC_MIN_POSITION && velocity < 0) velocity = 0.0;
    int term = position >= CR_MC_GOAL_POSITION && velocity >= 0;
    e->s[0] = position;
    e->s[1] = velocity;
    *reward = -1.0f;
    cr_mountain_car_observe(e->s, obs);
    return term;
}

#endif
