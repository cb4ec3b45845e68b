/* What the step headers of the classic-control envs (acrobot_step.h, mountain_car_step.h,
 * pendulum_step.h, mountain_car_continuous_step.h) share, CR_HD static inline for the CPU and
 * the CUDA twin: Gymnasium's uniform draw from the env's own Philox stream, the float64 and
 * float32 operations numpy does that C does not do by itself (libm's pow for x**2, float32
 * rounding, the float remainder, Python's clamps), the box clip, and the end of a step (count,
 * truncation, final observation) that the CPU batch and the CUDA twin run around each env's step.
 *
 * No fused multiply-add anywhere (env_fp.h). Where numpy calls libm (cos, sin, pow), the CPU
 * calls the same libm and agrees with Gymnasium bit for bit; CUDA's cos, sin and pow may differ
 * from glibc's in the last ulp. */
#ifndef CUDARL_CLASSIC_STEP_H
#define CUDARL_CLASSIC_STEP_H

#include <math.h>
#include <stdint.h>

#include "core/philox.h"
#include "env/env_fp.h"

#define CR_CLASSIC_PI 3.14159265358979323846 /* numpy.pi */

/* Gymnasium's np_random.uniform(low, high) = low + (high - low) * random(), random() uniform in
 * [0, 1) with 53 bits, drawn here from the env's own stream. */
CR_HD static inline double cr_classic_uniform(cr_philox_state *rng, double low, double high) {
    CR_NO_CONTRACT
    return CR_DADD(low, CR_DMUL(CR_DSUB(high, low), cr_philox_uniform_f64_hd(rng)));
}

/* x rounded to float32, as a double: numpy's float32 values and arithmetic. A float32 +, -, *
 * or / of float32 operands done in float64 and then rounded equals the float32 operation
 * (float64 has enough bits that the second rounding never changes the result). */
CR_HD static inline double cr_f32(double x) { return (double)(float)x; }

/* x**2 of a numpy float64 scalar: numpy calls libm's pow(x, 2), which glibc does not always
 * round as x * x. On the host the exponent is read from a volatile, so the compiler cannot
 * rewrite the call as x * x. */
CR_HD static inline double cr_np_square(double x) {
#ifdef __CUDA_ARCH__
    return pow(x, 2.0);
#else
    volatile double two = 2.0;
    return pow(x, two);
#endif
}

/* x**2 of a numpy float32 scalar: libm's powf(x, 2), for the same reason. */
CR_HD static inline float cr_np_squaref(float x) {
#ifdef __CUDA_ARCH__
    return powf(x, 2.0f);
#else
    volatile float two = 2.0f;
    return powf(x, two);
#endif
}

/* a % b of Python and numpy floats for b > 0: fmod (exact), plus b when it is negative; NaN
 * stays NaN. */
CR_HD static inline double cr_py_mod(double a, double b) {
    CR_NO_CONTRACT
    double m = fmod(a, b);
    if (m != 0.0) {
        if ((b < 0.0) != (m < 0.0)) m = CR_DADD(m, b);
    } else {
        m = copysign(0.0, b);
    }
    return m;
}

/* Python's min(max(x, lo), hi), Gymnasium's bound(): NaN stays NaN. np.clip of a scalar gives
 * the same value (they differ at most in the sign of a zero equal to a bound, which no classic
 * env's bounds are). */
CR_HD static inline double cr_py_clamp(double x, double lo, double hi) {
    double y = lo > x ? lo : x;
    return hi < y ? hi : y;
}

/* out (dim) = a (dim) clipped into [low, high] component-wise, as the pool's cr_env_clip_action
 * (Gymnasium's ClipAction): a NaN stays NaN. */
CR_HD static inline void cr_classic_clip(const float *a, const float *low, const float *high,
                                         int dim, float *out) {
    for (int k = 0; k < dim; k++) {
        float x = a[k];
        out[k] = x < low[k] ? low[k] : x > high[k] ? high[k] : x;
    }
}

/* The batch's part of one env's step, after the env's own step wrote obs (obs_dim) and said
 * whether it terminated (the pool's shard_step for one env): counts the step in *elapsed,
 * truncates at max_steps (0: never), writes terminated and truncated, and when the episode ended
 * copies obs to final_obs. Returns whether it ended; the caller then resets the env, which
 * writes the next episode's first observation into obs, and sets *elapsed to 0. */
CR_HD static inline int cr_classic_count_step(int term, int32_t *elapsed, int32_t max_steps,
                                              const float *obs, int obs_dim,
                                              uint8_t *terminated, uint8_t *truncated,
                                              float *final_obs) {
    int32_t e = *elapsed < INT32_MAX ? *elapsed + 1 : INT32_MAX;
    int trunc = max_steps > 0 && e >= max_steps;
    term = term != 0;
    *elapsed = e;
    *terminated = (uint8_t)term;
    *truncated = (uint8_t)trunc;
    if (!(term | trunc)) return 0;
    for (int j = 0; j < obs_dim; j++) final_obs[j] = obs[j];
    return 1;
}

#endif
