// CartPolePixels-v1's renderer on the GPU: one block per frame, its threads striding over the
// frame's pixels, each pixel from cr_cartpole_pixels_shade of cartpole_pixels_render.h, the
// function the CPU renderer (cartpole_pixels.c) calls. That function is integer arithmetic after
// two exact conversions (see its header), so the bytes match the CPU's whatever -fmad says.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/core.h"
#include "env/cartpole_pixels/cartpole_pixels.h"
#include "env/cartpole/cartpole_step.h"

#define RENDER_THREADS 256

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

static int sync_debug(void) {
    static int on = -1;
    if (on < 0) {
        on = cr_envvar_value(CR_ENVVAR_SYNC_DEBUG) == 1; // "1"
    }
    return on;
}

// Frame blockIdx.x: frames (N, 84, 84) of states (N, 4); x and theta read once per thread.
__global__ void cartpole_pixels_render_kernel(const double *state, uint8_t *frames) {
    size_t f = blockIdx.x;
    cr_cartpole_pixels_pose pose = cr_cartpole_pixels_pose_of(state[f * 4 + 0], state[f * 4 + 2]);
    uint8_t *frame = frames + f * CR_CARTPOLE_PIXELS_FRAME_BYTES;
    for (int i = threadIdx.x; i < CR_CARTPOLE_PIXELS_FRAME_BYTES; i += blockDim.x)
        frame[i] = cr_cartpole_pixels_shade(&pose, i / CR_CARTPOLE_PIXELS_SIDE,
                                            i % CR_CARTPOLE_PIXELS_SIDE);
}

extern "C" void cr_cartpole_pixels_cuda_render(const double *state, uint8_t *frames, int N,
                                               void *stream) {
    if (N < 0) { // a bug in the caller, as a failed launch would be
        fprintf(stderr, "cudarl: cr_cartpole_pixels_cuda_render: N = %d frames\n", N);
        abort();
    }
    if (N == 0) return;
    cudaStream_t st = (cudaStream_t)stream;
    cartpole_pixels_render_kernel<<<(unsigned)N, RENDER_THREADS, 0, st>>>(state, frames);
    CUDA_CHECK(cudaGetLastError());
    if (sync_debug()) CUDA_CHECK(cudaStreamSynchronize(st));
}

// ---- the env's twin -----------------------------------------------------------------------

#define TWIN_THREADS 256
#define FRAME CR_CARTPOLE_PIXELS_FRAME_BYTES
#define STACK CR_CARTPOLE_PIXELS_STACK

static size_t align64(size_t n) { return (n + 63) / 64 * 64; }

extern "C" size_t cr_cartpole_pixels_cuda_bytes(int n) {
    return align64((size_t)n * sizeof(cr_cartpole_pixels_state)) + align64((size_t)n * 4);
}

extern "C" void cr_cartpole_pixels_cuda_init(cr_cartpole_pixels_cuda *env, int n, void *mem) {
    env->num_envs = n, env->first = 0;
    env->states = (cr_cartpole_pixels_state *)mem;
    env->elapsed = (int32_t *)((unsigned char *)mem +
                               align64((size_t)n * sizeof(cr_cartpole_pixels_state)));
}

// The block draws the frame of (x, theta) into ring slot `slot` of c (every thread a part).
__device__ static void twin_render(cr_cartpole_pixels_state *c, int slot, double x, double theta) {
    cr_cartpole_pixels_pose pose = cr_cartpole_pixels_pose_of(x, theta);
    uint8_t *frame = c->frames[slot];
    for (int i = threadIdx.x; i < FRAME; i += blockDim.x)
        frame[i] = cr_cartpole_pixels_shade(&pose, i / CR_CARTPOLE_PIXELS_SIDE,
                                            i % CR_CARTPOLE_PIXELS_SIDE);
}

// obs (4, 84, 84) = c's ring, oldest frame first (write_obs of cartpole_pixels.c), 4 bytes a
// thread (the ring sits at a 4-byte offset of the state struct; FRAME is a multiple of 4).
__device__ static void twin_write_obs(const cr_cartpole_pixels_state *c, int newest,
                                      uint8_t *obs) {
    for (int i = threadIdx.x; i < STACK * FRAME / 4; i += blockDim.x) {
        int k = i / (FRAME / 4), j = i % (FRAME / 4);
        int slot = (newest + 1 + k) % STACK;
        ((uint32_t *)obs)[i] = ((const uint32_t *)c->frames[slot])[j];
    }
}

// pixels_reset of cartpole_pixels.c on block env: thread 0 draws, then the frame in all slots.
__device__ static void twin_reset_one(cr_cartpole_pixels_state *c, uint8_t *obs) {
    __shared__ double sx, stheta;
    if (threadIdx.x == 0) {
        cr_cartpole_reset_one(c->s, &c->elapsed, &c->rng);
        c->newest = 0;
        sx = c->s[0], stheta = c->s[2];
    }
    __syncthreads();
    for (int k = 0; k < STACK; k++) twin_render(c, k, sx, stheta);
    __syncthreads();
    twin_write_obs(c, 0, obs);
}

__global__ void pixels_twin_reset_kernel(cr_cartpole_pixels_state *states, int32_t *elapsed,
                                         uint64_t seed, uint64_t first, uint8_t *obs) {
    const int i = blockIdx.x;
    cr_cartpole_pixels_state *c = states + i;
    if (threadIdx.x == 0) { // the pool zeroes the state, seeds it, then resets
        memset(c, 0, sizeof *c);
        cr_philox_seed_hd(&c->rng, seed, first + (uint64_t)i);
        elapsed[i] = 0;
    }
    __syncthreads();
    twin_reset_one(c, obs + (size_t)i * STACK * FRAME);
}

// shard_step of env_pool.c for env blockIdx.x: pixels_step, the pool's step count and
// truncation, the final observation and the same-step reset.
__global__ void pixels_twin_step_kernel(cr_cartpole_pixels_state *states, int32_t *elapsed,
                                        const int32_t *actions, uint8_t *obs, float *reward,
                                        uint8_t *terminated, uint8_t *truncated, uint8_t *done,
                                        uint8_t *final_obs) {
    __shared__ double sx, stheta;
    __shared__ int newest, ended;
    const int i = blockIdx.x;
    cr_cartpole_pixels_state *c = states + i;
    uint8_t *o = obs + (size_t)i * STACK * FRAME;
    if (threadIdx.x == 0) {
        int32_t a = actions[i];
        if (a < 0 || a >= CR_CARTPOLE_NUM_ACTIONS) __trap(); // the pool aborts on it too
        cr_cartpole_physics(c->s, a);
        c->elapsed++;
        uint8_t term = (uint8_t)cr_cartpole_is_terminated(c->s);
        c->newest = (c->newest + 1) % STACK;
        int32_t e = elapsed[i] < INT32_MAX ? elapsed[i] + 1 : INT32_MAX;
        uint8_t trunc = e >= CR_CARTPOLE_MAX_STEPS;
        reward[i] = 1.0f;
        terminated[i] = term, truncated[i] = trunc;
        if (done) done[i] = term | trunc;
        elapsed[i] = term | trunc ? 0 : e;
        sx = c->s[0], stheta = c->s[2], newest = c->newest, ended = term | trunc;
    }
    __syncthreads();
    twin_render(c, newest, sx, stheta);
    __syncthreads();
    if (!ended) {
        twin_write_obs(c, newest, o);
        return;
    }
    twin_write_obs(c, newest, final_obs + (size_t)i * STACK * FRAME);
    __syncthreads(); // every thread has read the ring before thread 0 resets it
    twin_reset_one(c, o);
}

extern "C" void cr_cartpole_pixels_cuda_reset(const cr_cartpole_pixels_cuda *env, uint64_t seed,
                                              uint8_t *obs, void *stream) {
    if (env->num_envs < 1) return;
    cudaStream_t st = (cudaStream_t)stream;
    pixels_twin_reset_kernel<<<(unsigned)env->num_envs, TWIN_THREADS, 0, st>>>(
        env->states, env->elapsed, seed, (uint64_t)env->first, obs);
    CUDA_CHECK(cudaGetLastError());
    if (sync_debug()) CUDA_CHECK(cudaStreamSynchronize(st));
}

extern "C" void cr_cartpole_pixels_cuda_step(const cr_cartpole_pixels_cuda *env,
                                             const int32_t *actions, uint8_t *obs, float *reward,
                                             uint8_t *terminated, uint8_t *truncated,
                                             uint8_t *done, uint8_t *final_obs, void *stream) {
    if (env->num_envs < 1) return;
    cudaStream_t st = (cudaStream_t)stream;
    pixels_twin_step_kernel<<<(unsigned)env->num_envs, TWIN_THREADS, 0, st>>>(
        env->states, env->elapsed, actions, obs, reward, terminated, truncated, done, final_obs);
    CUDA_CHECK(cudaGetLastError());
    if (sync_debug()) CUDA_CHECK(cudaStreamSynchronize(st));
}
