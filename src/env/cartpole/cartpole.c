/* CartPole-v1 on the CPU: the batch loops over the per-env code of cartpole_step.h (Gymnasium's
 * CartPoleEnv.step in float64, in Python's operation order, so that the states agree bit for bit,
 * plus TimeLimit(500) and same-step autoreset), which cartpole.cu runs on the GPU. */
#include "env/cartpole/cartpole.h"
#include "env/cartpole/cartpole_step.h"

/* Gymnasium's numpy code never fuses a*b+c; neither may we. GCC does not contract in ISO C mode
 * (-std=c11) and rejects this pragma, clang contracts by default and honours it. The inline
 * dynamics above carry the same pragma in each body (CR_NO_CONTRACT, env_fp.h). */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

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

void cr_cartpole_reset(cr_cartpole *env, uint64_t seed, float *obs) {
    cr_cartpole_reset_from(env, seed, 0, obs);
}

void cr_cartpole_reset_from(cr_cartpole *env, uint64_t seed, int64_t first, float *obs) {
    CUDARL_ASSERT(first >= 0);
    for (int i = 0; i < env->num_envs; i++) {
        size_t row = (size_t)i * CR_CARTPOLE_OBS_DIM;
        cr_philox_seed(&env->rng[i], seed, (uint64_t)(first + i));
        cr_cartpole_reset_one(env->state + row, &env->elapsed[i], &env->rng[i]);
        cr_cartpole_observe(env->state + row, obs + row);
    }
}

void cr_cartpole_step_range(cr_cartpole *env, int begin, int end, const int32_t *actions,
                            float *obs, float *reward, uint8_t *terminated, uint8_t *truncated,
                            float *final_obs) {
    CUDARL_ASSERT(0 <= begin && begin <= end && end <= env->num_envs);
    for (int i = begin; i < end; i++) {
        CUDARL_ASSERT(actions[i] == 0 || actions[i] == 1);
        size_t row = (size_t)i * CR_CARTPOLE_OBS_DIM;
        cr_cartpole_step_one(env->state + row, &env->elapsed[i], &env->rng[i], actions[i],
                             obs + row, &reward[i], &terminated[i], &truncated[i],
                             final_obs + row);
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
