// CartPole-v1 on the GPU, one thread per env: the kernels call the per-env code of
// cartpole_step.h that the CPU batch (cartpole.c) calls, so the two step the same dynamics.
// The dynamics go through __dmul_rn/__dadd_rn/__dsub_rn/__ddiv_rn there (never fused into an
// FMA), so this file needs no -fmad=false; only sin/cos may differ from glibc's in the last ulp.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/core.h"
#include "env/cartpole/cartpole.h"
#include "env/cartpole/cartpole_step.h"

#define CARTPOLE_THREADS 256

// A failed CUDA call is a bug here: print the call, the error, file:line, and abort.
#define CUDA_CHECK(expr)                                                              \
    do {                                                                              \
        cudaError_t cuda_check_e_ = (expr);                                           \
        if (cuda_check_e_ != cudaSuccess)                                             \
            cuda_check_fail(#expr, cuda_check_e_, __FILE__, __LINE__);                \
    } while (0)

static void cuda_check_fail(const char *expr, cudaError_t e, const char *file, int line) {
    fprintf(stderr, "cudarl: CUDA error at %s:%d: %s: %s (%s)\n", file, line, expr,
            cudaGetErrorString(e), cudaGetErrorName(e));
    fflush(stderr);
    abort();
}

// Checks the launch just queued on `stream`; with CUDARL_SYNC_DEBUG=1 also waits for it, so an
// error inside the kernel is reported at this launch.
#define CUDA_CHECK_LAUNCH(stream)                                          \
    do {                                                                   \
        CUDA_CHECK(cudaGetLastError());                                    \
        if (sync_debug()) CUDA_CHECK(cudaStreamSynchronize(stream));       \
    } while (0)

static int sync_debug(void) {
    static int on = -1;
    if (on < 0) {
        on = cr_envvar_value(CR_ENVVAR_SYNC_DEBUG) == 1; // "1"
    }
    return on;
}

static unsigned cartpole_blocks(const cr_cartpole *env) {
    return (unsigned)((env->num_envs + CARTPOLE_THREADS - 1) / CARTPOLE_THREADS);
}

// Seeds env i with stream first + i of seed, draws its first state and writes obs (N, 4).
__global__ void cartpole_reset_kernel(cr_cartpole env, uint64_t seed, int64_t first, float *obs) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= env.num_envs) return;
    size_t row = (size_t)i * CR_CARTPOLE_OBS_DIM;
    cr_philox_state rng;
    cr_philox_seed_hd(&rng, seed, (uint64_t)(first + i));
    double s[CR_CARTPOLE_OBS_DIM];
    int32_t elapsed;
    cr_cartpole_reset_one(s, &elapsed, &rng);
    for (int j = 0; j < CR_CARTPOLE_OBS_DIM; j++) env.state[row + j] = s[j];
    env.elapsed[i] = elapsed;
    env.rng[i] = rng;
    cr_cartpole_observe(s, obs + row);
}

// Steps env i with actions[i]; the state lives in registers for the step, the rng stays in
// global memory (touched only on reset).
__global__ void cartpole_step_kernel(cr_cartpole env, const int32_t *actions, float *obs,
                                     float *reward, uint8_t *terminated, uint8_t *truncated,
                                     uint8_t *done, float *final_obs) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= env.num_envs) return;
    int32_t action = actions[i];
    if (action != 0 && action != 1) {  // the CPU path's CUDARL_ASSERT
        printf("cudarl: cartpole env %d got action %d, expected 0 or 1\n", i, (int)action);
        __trap();
    }
    size_t row = (size_t)i * CR_CARTPOLE_OBS_DIM;
    double s[CR_CARTPOLE_OBS_DIM];
    for (int j = 0; j < CR_CARTPOLE_OBS_DIM; j++) s[j] = env.state[row + j];
    int32_t elapsed = env.elapsed[i];
    int ended = cr_cartpole_step_one(s, &elapsed, &env.rng[i], action, obs + row, &reward[i],
                                     &terminated[i], &truncated[i], final_obs + row);
    for (int j = 0; j < CR_CARTPOLE_OBS_DIM; j++) env.state[row + j] = s[j];
    env.elapsed[i] = elapsed;
    if (done) done[i] = (uint8_t)ended;
}

extern "C" void cr_cartpole_cuda_reset(cr_cartpole *env, uint64_t seed, int64_t first, float *obs,
                                       void *stream) {
    cudaStream_t st = (cudaStream_t)stream;
    cartpole_reset_kernel<<<cartpole_blocks(env), CARTPOLE_THREADS, 0, st>>>(*env, seed, first,
                                                                             obs);
    CUDA_CHECK_LAUNCH(st);
}

extern "C" void cr_cartpole_cuda_step(cr_cartpole *env, const int32_t *actions, float *obs,
                                      float *reward, uint8_t *terminated, uint8_t *truncated,
                                      uint8_t *done, float *final_obs, void *stream) {
    cudaStream_t st = (cudaStream_t)stream;
    cartpole_step_kernel<<<cartpole_blocks(env), CARTPOLE_THREADS, 0, st>>>(
        *env, actions, obs, reward, terminated, truncated, done, final_obs);
    CUDA_CHECK_LAUNCH(st);
}
