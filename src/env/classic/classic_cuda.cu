// The classic-control envs on the GPU (classic.h's CUDA twin): one thread per env, each running
// the per-env code of the env's step header that the CPU def runs, with the CPU batch's step
// count, truncation and same-step autoreset (classic_step.h's cr_classic_count_step) around it.
//
// Determinism: the step headers do their float64 arithmetic through env_fp.h's __dmul_rn-style
// intrinsics, never fused into an FMA, and their float32 roundings as explicit conversions, so
// the device rounds as the CPU does; only CUDA's cos, sin and pow may differ from glibc's in the
// last ulp.
//
// Per step a thread copies its env's state struct out of the transposed block (word k of a warp's
// 32 envs is 128 contiguous bytes), steps it in registers, and writes it back the same way.
#include <stdio.h>
#include <string.h>

#include "env/classic/acrobot_step.h"
#include "env/classic/classic.h"
#include "env/classic/classic_step.h"
#include "env/classic/mountain_car_continuous_step.h"
#include "env/classic/mountain_car_step.h"
#include "env/classic/pendulum_step.h"
#include "ops/cuda/cuda_common.cuh"

#define CLASSIC_THREADS 128

// What a step kernel reads and writes (all device memory but the scalars and the box).
struct step_args {
    uint32_t *states; // (W, N) transposed states
    int32_t *elapsed; // (N)
    int n;
    int max_steps; // truncation; 0: none
    const void *actions; // int32 (N), or float (N, action_dim)
    float low[CUDARL_ACTION_DIM_MAX], high[CUDARL_ACTION_DIM_MAX]; // the def's box
    float *obs;        // (N, D)
    float *reward;     // (N)
    uint8_t *terminated, *truncated, *done; // (N); done may be NULL
    float *final_obs;  // (N, D)
};

// The env's action for env i out of a.actions, as the CPU batch takes it: an int32 in
// 0 .. ACTIONS-1 (another traps, the CPU's abort), or DIM floats clipped into the box.
__device__ __forceinline__ int32_t discrete_action(const step_args &a, int i, int actions,
                                                   const char *id) {
    int32_t action = static_cast<const int32_t *>(a.actions)[i];
    if (action < 0 || action >= actions) {
        printf("cudarl: env batch '%s' (CUDA): action %d for env %d is outside 0..%d: the "
               "policy produced an invalid action (a bug in its sampler or its action count)\n",
               id, (int)action, i, actions - 1);
        __trap();
    }
    return action;
}

// ---- the envs: state type, observation size and the per-env functions ------------------------

#define CLASSIC_ENV_COMMON(prefix, game_id, obs_dim)                                         \
    typedef cr_##prefix##_state state;                                                      \
    static constexpr int OBS = obs_dim;                                                     \
    static __device__ const char *id() { return game_id; }                                  \
    static __device__ void seed(state *s, uint64_t seed, uint64_t index) {                  \
        cr_##prefix##_seed(s, seed, index);                                                 \
    }                                                                                       \
    static __device__ void reset(state *s, float *obs) { cr_##prefix##_reset(s, obs); }

// An env of `actions` discrete actions.
#define CLASSIC_DISCRETE(type, prefix, game_id, obs_dim, actions)                           \
    struct type {                                                                           \
        CLASSIC_ENV_COMMON(prefix, game_id, obs_dim)                                        \
        static constexpr int ACTIONS = actions, DIM = 0;                                    \
        static __device__ int step(state *s, const step_args &a, int i, float *obs,         \
                                   float *reward) {                                         \
            int32_t action = discrete_action(a, i, ACTIONS, id());                          \
            return cr_##prefix##_step(s, action, obs, reward);                              \
        }                                                                                   \
    }

// An env of continuous actions of `dim` floats.
#define CLASSIC_BOX(type, prefix, game_id, obs_dim, dim)                                    \
    struct type {                                                                           \
        CLASSIC_ENV_COMMON(prefix, game_id, obs_dim)                                        \
        static constexpr int ACTIONS = 0, DIM = dim;                                        \
        static __device__ int step(state *s, const step_args &a, int i, float *obs,         \
                                   float *reward) {                                         \
            float u[DIM];                                                                   \
            const float *row = static_cast<const float *>(a.actions) + (size_t)i * DIM;     \
            cr_classic_clip(row, a.low, a.high, DIM, u);                                    \
            return cr_##prefix##_step(s, u, obs, reward);                                   \
        }                                                                                   \
    }

CLASSIC_DISCRETE(acrobot_env, acrobot, "Acrobot-v1", CR_ACROBOT_OBS_DIM,
                 CR_ACROBOT_NUM_ACTIONS);
CLASSIC_DISCRETE(mountain_car_env, mountain_car, "MountainCar-v0", CR_MOUNTAIN_CAR_OBS_DIM,
                 CR_MOUNTAIN_CAR_NUM_ACTIONS);
CLASSIC_BOX(pendulum_env, pendulum, "Pendulum-v1", CR_PENDULUM_OBS_DIM, 1);
CLASSIC_BOX(mountain_car_continuous_env, mountain_car_continuous, "MountainCarContinuous-v0",
            CR_MOUNTAIN_CAR_CONTINUOUS_OBS_DIM, 1);

// ---- kernels ----------------------------------------------------------------------------------

template <typename E> struct words {
    static constexpr int N = (int)(sizeof(typename E::state) / 4);
    static_assert(sizeof(typename E::state) % 4 == 0, "states are moved in 4-byte words");
};

// s = env i's state: word k from states[k * n + i].
template <typename E>
__device__ __forceinline__ void load_state(typename E::state *s, const uint32_t *states, int i,
                                           int n) {
    uint32_t *w = reinterpret_cast<uint32_t *>(s);
#pragma unroll
    for (int k = 0; k < words<E>::N; k++) w[k] = states[(size_t)k * n + i];
}

// env i's state = s.
template <typename E>
__device__ __forceinline__ void store_state(const typename E::state *s, uint32_t *states, int i,
                                            int n) {
    const uint32_t *w = reinterpret_cast<const uint32_t *>(s);
#pragma unroll
    for (int k = 0; k < words<E>::N; k++) states[(size_t)k * n + i] = w[k];
}

// Zeroes env i's state, seeds it with (seed, i) and starts its first episode (cr_classic_reset);
// writes obs (N, D).
template <typename E>
__global__ void __launch_bounds__(CLASSIC_THREADS)
    classic_reset_kernel(uint32_t *states, int32_t *elapsed, int n, uint64_t seed, int64_t first,
                         float *obs) {
    int i = blockIdx.x * CLASSIC_THREADS + threadIdx.x;
    if (i >= n) return;
    typename E::state s;
    uint32_t *w = reinterpret_cast<uint32_t *>(&s);
    for (int k = 0; k < words<E>::N; k++) w[k] = 0;
    E::seed(&s, seed, (uint64_t)(first + i));
    E::reset(&s, obs + (size_t)i * E::OBS);
    store_state<E>(&s, states, i, n);
    elapsed[i] = 0;
}

// Steps env i with its action (cr_classic_step for one env): the env's step, the step count and
// truncation, and on the episode's end its final observation and a reset.
template <typename E>
__global__ void __launch_bounds__(CLASSIC_THREADS) classic_step_kernel(step_args a) {
    int i = blockIdx.x * CLASSIC_THREADS + threadIdx.x;
    if (i >= a.n) return;
    float *obs = a.obs + (size_t)i * E::OBS;
    typename E::state s;
    load_state<E>(&s, a.states, i, a.n);
    float reward = 0.0f;
    int term = E::step(&s, a, i, obs, &reward);
    a.reward[i] = reward;
    int32_t elapsed = a.elapsed[i];
    int ended = cr_classic_count_step(term, &elapsed, a.max_steps, obs, E::OBS, &a.terminated[i],
                                      &a.truncated[i], a.final_obs + (size_t)i * E::OBS);
    if (ended) {
        E::reset(&s, obs);
        elapsed = 0;
    }
    if (a.done) a.done[i] = (uint8_t)ended;
    a.elapsed[i] = elapsed;
    store_state<E>(&s, a.states, i, a.n);
}

// ---- host side --------------------------------------------------------------------------------

static unsigned blocks_of(int n) {
    return (unsigned)((n + CLASSIC_THREADS - 1) / CLASSIC_THREADS);
}

template <typename E>
static void launch_reset(cudarl_ctx *ctx, const cr_classic *c, uint64_t seed, int64_t first,
                         float *obs) {
    CUDARL_ASSERT(sizeof(typename E::state) == c->def->state_bytes);
    CUDARL_ASSERT(E::OBS == c->def->obs_shape[0] && E::ACTIONS == c->def->num_actions);
    CUDARL_ASSERT(E::DIM == c->def->action_dim);
    classic_reset_kernel<E><<<blocks_of(c->num_envs), CLASSIC_THREADS, 0, cr_stream(ctx)>>>(
        c->states, c->elapsed, c->num_envs, seed, first, obs);
    CR_CUDA_LAUNCHED(ctx);
}

template <typename E> static void launch_step(cudarl_ctx *ctx, const step_args &a) {
    classic_step_kernel<E><<<blocks_of(a.n), CLASSIC_THREADS, 0, cr_stream(ctx)>>>(a);
    CR_CUDA_LAUNCHED(ctx);
}

extern "C" void cr_classic_cuda_reset(cudarl_ctx *ctx, const cr_classic *c, uint64_t seed,
                                      int64_t first, float *obs) {
    CUDARL_ASSERT(ctx->kind == CUDARL_DEVICE_CUDA && obs != NULL);
    switch (c->kind) {
    case CR_CLASSIC_ACROBOT: launch_reset<acrobot_env>(ctx, c, seed, first, obs); break;
    case CR_CLASSIC_MOUNTAIN_CAR: launch_reset<mountain_car_env>(ctx, c, seed, first, obs); break;
    case CR_CLASSIC_PENDULUM: launch_reset<pendulum_env>(ctx, c, seed, first, obs); break;
    case CR_CLASSIC_MOUNTAIN_CAR_CONTINUOUS:
        launch_reset<mountain_car_continuous_env>(ctx, c, seed, first, obs);
        break;
    default: CUDARL_ASSERT(!"cr_classic_cuda_reset: unknown classic env");
    }
}

extern "C" void cr_classic_cuda_step(cudarl_ctx *ctx, const cr_classic *c, const void *actions,
                                     float *obs, float *reward, uint8_t *terminated,
                                     uint8_t *truncated, uint8_t *done, float *final_obs) {
    CUDARL_ASSERT(ctx->kind == CUDARL_DEVICE_CUDA);
    CUDARL_ASSERT(actions && obs && reward && terminated && truncated && final_obs);
    const cudarl_env_def *d = c->def;
    step_args a;
    memset(&a, 0, sizeof a);
    a.states = c->states, a.elapsed = c->elapsed, a.n = c->num_envs;
    a.max_steps = d->max_episode_steps, a.actions = actions;
    for (int k = 0; k < d->action_dim; k++) {
        a.low[k] = d->action_low[k];
        a.high[k] = d->action_high[k];
    }
    a.obs = obs, a.reward = reward, a.terminated = terminated, a.truncated = truncated;
    a.done = done, a.final_obs = final_obs;
    switch (c->kind) {
    case CR_CLASSIC_ACROBOT: launch_step<acrobot_env>(ctx, a); break;
    case CR_CLASSIC_MOUNTAIN_CAR: launch_step<mountain_car_env>(ctx, a); break;
    case CR_CLASSIC_PENDULUM: launch_step<pendulum_env>(ctx, a); break;
    case CR_CLASSIC_MOUNTAIN_CAR_CONTINUOUS:
        launch_step<mountain_car_continuous_env>(ctx, a);
        break;
    default: CUDARL_ASSERT(!"cr_classic_cuda_step: unknown classic env");
    }
}
