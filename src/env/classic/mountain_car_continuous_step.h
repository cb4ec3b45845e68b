/* MountainCarContinuous-v0 for one env, the single definition that the def
 * (mountain_car_continuous.c, stepped by the pool and by the CPU batch) and the CUDA twin
 * (classic_cuda.cu) both call: gymnasium/envs/classic_control/continuous_mountain_car.py behind
 * ClipAction (the batch and the pool clip the force into [-1, 1] first, so the reward's action
 * penalty is the clipped action's), with numpy's types. reset() leaves a float64 state and step()
 * stores a float32 one, and numpy computes with the type it finds: the first step after a reset
 * in float64, every later one in float32 (3 * position, the velocity and position updates, and
 * the comparisons with the constants, which numpy rounds to float32), around a float64 math.cos.
 * Reward 100 on reaching position 0.45 with a velocity >= 0 (terminated), minus 0.1 * force**2
 * every step. The TimeLimit (999) is the batch's and the pool's. */
#ifndef CUDARL_MOUNTAIN_CAR_CONTINUOUS_STEP_H
#define CUDARL_MOUNTAIN_CAR_CONTINUOUS_STEP_H

#include "env/classic/classic_step.h"

#define CR_MOUNTAIN_CAR_CONTINUOUS_OBS_DIM 2
#define CR_MOUNTAIN_CAR_CONTINUOUS_MAX_STEPS 999

/* Constants of continuous_mountain_car.py. */
#define CR_MCC_MIN_ACTION (-1.0f) /* the action box is [-1, 1] */
#define CR_MCC_MAX_ACTION 1.0f
#define CR_MCC_MIN_POSITION (-1.2)
#define CR_MCC_MAX_POSITION 0.6
#define CR_MCC_MAX_SPEED 0.07
#define CR_MCC_GOAL_POSITION 0.45
#define CR_MCC_POWER 0.0015
#define CR_MCC_GRAVITY 0.0025 /* the literal 0.0025 of step() */
#define CR_MCC_RESET_LOW (-0.6)
#define CR_MCC_RESET_HIGH (-0.4)

/* One MountainCarContinuous env. No implicit padding: the CUDA twin moves it as 32-bit words. */
typedef struct cr_mountain_car_continuous_state {
    double s[2];         /* position, velocity (within [-1.2, 0.6] and [-0.07, 0.07] as float32) */
    cr_philox_state rng; /* stream `index` of the batch's seed */
    int32_t fresh;       /* 1 from a reset to the first step (s is Gymnasium's float64 reset
                          * state), 0 after (s holds float32 values) */
} cr_mountain_car_continuous_state;

/* The float32 observation obs (2) of state s (2). */
CR_HD static inline void cr_mountain_car_continuous_observe(const double *s, float *obs) {
    obs[0] = (float)s[0];
    obs[1] = (float)s[1];
}

CR_HD static inline void cr_mountain_car_continuous_seed(cr_mountain_car_continuous_state *e,
                                                         uint64_t seed, uint64_t index) {
    cr_philox_seed_hd(&e->rng, seed, index);
}

/* A fresh episode: position uniform in [-0.6, -0.4), velocity 0, in float64; writes obs (2). */
CR_HD static inline void cr_mountain_car_continuous_reset(cr_mountain_car_continuous_state *e,
                                                          float *obs) {
    e->s[0] = cr_classic_uniform(&e->rng, CR_MCC_RESET_LOW, CR_MCC_RESET_HIGH);
    e->s[1] = 0.0;
    e->fresh = 1;
    cr_mountain_car_continuous_observe(e->s, obs);
}

/* x as numpy holds it in this step: x itself in a float64 step, rounded to float32 in a float32
 * one (a result, or a constant compared with or assigned to a float32 value). */
CR_HD static inline double cr_mcc_as(int f32, double x) { return f32 ? cr_f32(x) : x; }

/* Continuous_MountainCarEnv.step with the force action (1) in [-1, 1] (the caller clips it):
 * writes obs (2) and reward and returns whether the episode terminated. */
CR_HD static inline int cr_mountain_car_continuous_step(cr_mountain_car_continuous_state *e,
                                                        const float *action, float *obs,
                                                        float *reward) {
    CR_NO_CONTRACT
    const int f32 = !e->fresh;
    const double force = (double)action[0]; /* min(max(action[0], -1.0), 1.0): in range */
    double position = e->s[0], velocity = e->s[1];
    /* velocity += force * power - 0.0025 * math.cos(3 * position): force * power is float32
     * (a float32 times a Python float), so is the difference; the sum is the state's type */
    double push = cr_f32(CR_DMUL(force, (double)(float)CR_MCC_POWER));
    double pull = CR_DMUL(CR_MCC_GRAVITY, cos(cr_mcc_as(f32, CR_DMUL(3.0, position))));
    velocity = cr_mcc_as(f32, CR_DADD(velocity, cr_f32(CR_DSUB(push, cr_f32(pull)))));
    const double max_speed = cr_mcc_as(f32, CR_MCC_MAX_SPEED);
    if (velocity > max_speed) velocity = max_speed;
    if (velocity < -max_speed) velocity = -max_speed;
    position = cr_mcc_as(f32, CR_DADD(position, velocity));
    const double max_position = cr_mcc_as(f32, CR_MCC_MAX_POSITION);
    const double min_position = cr_mcc_as(f32, CR_MCC_MIN_POSITION);
    if (position > max_position) position = max_position;
    if (position < min_position) position = min_position;
    if (position == min_position && velocity < 0) velocity = 0.0;
    int term = position >= cr_mcc_as(f32, CR_MCC_GOAL_POSITION) && velocity >= 0;
    /* reward = (100.0 if terminated else 0) - math.pow(action[0], 2) * 0.1; the square of a
     * float32 is exact in float64, so math.pow's is force * force */
    double r = CR_DSUB(term ? 100.0 : 0.0, CR_DMUL(CR_DMUL(force, force), 0.1));
    *reward = (float)r;
    e->s[0] = cr_f32(position); /* np.array([position, velocity], dtype=np.float32) */
    e->s[1] = cr_f32(velocity);
    e->fresh = 0;
    cr_mountain_car_continuous_observe(e->s, obs);
    return term;
}

#endif
