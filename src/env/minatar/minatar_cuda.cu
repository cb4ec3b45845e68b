// The five MinAtar games on the GPU (minatar_cuda.h): one thread per env, each running the
// per-env code of minatar_<game>_step.h that the CPU env defs run, with the env pool's step
// counting and same-step autoreset (env_pool.c's shard_step) around it.
//
// Determinism: the games compute in integers; the only floating point is the Philox draw turned
// into a double (an exact conversion and a multiply by 2^-53, also exact) compared against
// constants, and the int reward converted to float. Nothing can be contracted into an FMA or
// rounded differently, so the device follows the CPU bit for bit without -fmad=false.
//
// Per step, a thread copies its env's state from the transposed layout into a local struct
// (coalesced: word k of a warp's 32 envs is 128 contiguous bytes), steps it, and writes it back.
// It writes its observation into its own slot of the block's shared memory; the block then
// copies its contiguous rows of obs to global memory with coalesced 4-byte stores. The slots are
// an odd number of words apart, so the byte stores of a warp's threads into their slots fall in
// different banks. Only the rows of envs that ended are copied to final_obs, by their thread.
#include <stdio.h>
#include <string.h>

#include "env/minatar/minatar.h"
#include "env/minatar/minatar_asterix_step.h"
#include "env/minatar/minatar_breakout_step.h"
#include "env/minatar/minatar_cuda.h"
#include "env/minatar/minatar_freeway_step.h"
#include "env/minatar/minatar_seaquest_step.h"
#include "env/minatar/minatar_space_invaders_step.h"
#include "ops/cuda/cuda_common.cuh"

// ---- the games: state type, shapes, block size and the per-env functions ----------------------

// One game's traits. THREADS (threads per block, one env each) keeps the block's observation
// slots (THREADS x ~C * 100 bytes) under the 48 KiB of static shared memory: 64 for the games of
// <= 7 channels, 32 for Seaquest's 10.
#define MINATAR_GAME(type, prefix, game_id, channels, actions, threads)                          \
    struct type {                                                                               \
        typedef cr_minatar_##prefix##_state state;                                              \
        static constexpr int CHANNELS = channels;                                               \
        static constexpr int ACTIONS = actions;                                                 \
        static constexpr int THREADS = threads;                                                 \
        static __device__ const char *id() { return game_id; }                                  \
        static __device__ void seed(state *s, uint64_t seed, uint64_t index) {                  \
            cr_minatar_##prefix##_seed(s, seed, index);                                         \
        }                                                                                       \
        static __device__ void reset(state *s, uint8_t *obs) {                                  \
            cr_minatar_##prefix##_reset(s, obs);                                                \
        }                                                                                       \
        static __device__ void step(state *s, int32_t a, uint8_t *obs, float *reward,           \
                                    uint8_t *terminated) {                                      \
            cr_minatar_##prefix##_step(s, a, obs, reward, terminated);                          \
        }                                                                                       \
    }

MINATAR_GAME(breakout_game, breakout, "MinAtar/Breakout-v1", CR_BREAKOUT_CHANNELS,
             CR_BREAKOUT_NUM_ACTIONS, 64);
MINATAR_GAME(asterix_game, asterix, "MinAtar/Asterix-v1", CR_ASTERIX_CHANNELS,
             CR_ASTERIX_NUM_ACTIONS, 64);
MINATAR_GAME(freeway_game, freeway, "MinAtar/Freeway-v1", CR_FREEWAY_CHANNELS,
             CR_FREEWAY_NUM_ACTIONS, 64);
MINATAR_GAME(seaquest_game, seaquest, "MinAtar/Seaquest-v1", CR_SEAQUEST_CHANNELS,
             CR_SEAQUEST_NUM_ACTIONS, 32);
MINATAR_GAME(space_invaders_game, space_invaders, "MinAtar/SpaceInvaders-v1",
             CR_SPACE_INVADERS_CHANNELS, CR_SPACE_INVADERS_NUM_ACTIONS, 64);

// The games with a twin, in the order of the `game` index (the switch in dispatch below).
enum { BREAKOUT, ASTERIX, FREEWAY, SEAQUEST, SPACE_INVADERS, NUM_GAMES };
static const cudarl_env_def *const game_defs[NUM_GAMES] = {
    &cr_minatar_breakout_def, &cr_minatar_asterix_def, &cr_minatar_freeway_def,
    &cr_minatar_seaquest_def, &cr_minatar_space_invaders_def,
};

// Sizes derived from a game's traits.
template <typename G> struct layout {
    static constexpr int OBS_BYTES = G::CHANNELS * CR_MINATAR_CELLS; // one row of obs
    static constexpr int OBS_WORDS = OBS_BYTES / 4;
    static constexpr int SLOT_WORDS = OBS_WORDS | 1; // odd: a warp's slots start in distinct banks
    static constexpr int STATE_WORDS = (int)(sizeof(typename G::state) / 4);
    static_assert(OBS_BYTES % 4 == 0, "obs rows are copied in 4-byte words");
    static_assert(sizeof(typename G::state) % 4 == 0, "states are moved in 4-byte words");
    static_assert(G::THREADS * SLOT_WORDS * 4 <= 48 * 1024, "slots exceed static shared memory");
};

// ---- kernels ----------------------------------------------------------------------------------

// What a step kernel reads and writes (all device memory but the scalars).
struct step_args {
    uint32_t *states; // (W, N) transposed states
    int32_t *elapsed; // (N)
    int n;
    int max_steps; // truncation; 0: none
    const int32_t *actions;
    uint8_t *obs;       // (N, C, 10, 10)
    float *reward;      // (N)
    uint8_t *terminated, *truncated, *done; // (N); done may be NULL
    uint8_t *final_obs; // (N, C, 10, 10)
};

// s = env i's state: word k from states[k * n + i].
template <typename G>
__device__ __forceinline__ void load_state(typename G::state *s, const uint32_t *states, int i,
                                           int n) {
    uint32_t *w = reinterpret_cast<uint32_t *>(s);
    const uint32_t *src = states + i;
#pragma unroll 4
    for (int k = 0; k < layout<G>::STATE_WORDS; k++, src += n) w[k] = *src;
}

// env i's state = s.
template <typename G>
__device__ __forceinline__ void store_state(const typename G::state *s, uint32_t *states, int i,
                                            int n) {
    const uint32_t *w = reinterpret_cast<const uint32_t *>(s);
    uint32_t *dst = states + i;
#pragma unroll 4
    for (int k = 0; k < layout<G>::STATE_WORDS; k++, dst += n) *dst = w[k];
}

// Copies the observation rows of this block's envs from their slots to out (N, C, 10, 10), the
// block's threads striding over the rows' words. Every thread of the block calls it, after a
// __syncthreads that follows the slots' last writes.
template <typename G>
__device__ __forceinline__ void write_block_rows(const uint32_t *slots, uint8_t *out, int n) {
    typedef layout<G> L;
    int first = blockIdx.x * G::THREADS;
    int rows = n - first < G::THREADS ? n - first : G::THREADS;
    uint32_t *dst = reinterpret_cast<uint32_t *>(out + (size_t)first * L::OBS_BYTES);
    for (int w = threadIdx.x; w < rows * L::OBS_WORDS; w += G::THREADS) {
        int r = w / L::OBS_WORDS;
        dst[w] = slots[r * L::SLOT_WORDS + (w - r * L::OBS_WORDS)];
    }
}

// Zeroes env i's state, seeds it with (seed, first + i) and starts its first episode (cr_env_pool_reset's
// shard_reset); writes obs (N, C, 10, 10).
template <typename G>
__global__ void __launch_bounds__(G::THREADS)
    minatar_reset_kernel(uint32_t *states, int32_t *elapsed, int n, uint64_t seed, uint64_t first,
                         uint8_t *obs) {
    typedef layout<G> L;
    __shared__ uint32_t slots[G::THREADS * L::SLOT_WORDS];
    int i = blockIdx.x * G::THREADS + threadIdx.x;
    if (i < n) {
        typename G::state s;
        uint32_t *w = reinterpret_cast<uint32_t *>(&s);
        for (int k = 0; k < L::STATE_WORDS; k++) w[k] = 0;
        G::seed(&s, seed, first + (uint64_t)i);
        G::reset(&s, reinterpret_cast<uint8_t *>(slots + threadIdx.x * L::SLOT_WORDS));
        store_state<G>(&s, states, i, n);
        elapsed[i] = 0;
    }
    __syncthreads();
    write_block_rows<G>(slots, obs, n);
}

// Steps env i with actions[i] (env_pool.c's shard_step for one env): the def's step, the step
// count and truncation, and on the episode's end its final observation and a reset.
template <typename G>
__global__ void __launch_bounds__(G::THREADS) minatar_step_kernel(step_args a) {
    typedef layout<G> L;
    __shared__ uint32_t slots[G::THREADS * L::SLOT_WORDS];
    uint32_t *slot = slots + threadIdx.x * L::SLOT_WORDS;
    int i = blockIdx.x * G::THREADS + threadIdx.x;
    if (i < a.n) {
        int32_t action = a.actions[i];
        if (action < 0 || action >= G::ACTIONS) { // the pool's bad_action
            printf("cudarl: %s (CUDA): action %d for env %d is outside 0..%d: the policy produced "
                   "an invalid action (a bug in its sampler or its action count)\n",
                   G::id(), (int)action, i, G::ACTIONS - 1);
            __trap();
        }
        typename G::state s;
        load_state<G>(&s, a.states, i, a.n);
        float reward = 0.0f;
        uint8_t term = 0;
        G::step(&s, action, reinterpret_cast<uint8_t *>(slot), &reward, &term);
        int32_t elapsed = a.elapsed[i] < INT32_MAX ? a.elapsed[i] + 1 : INT32_MAX;
        uint8_t trunc = a.max_steps > 0 && elapsed >= a.max_steps;
        term = term != 0;
        a.reward[i] = reward;
        a.terminated[i] = term;
        a.truncated[i] = trunc;
        if (a.done) a.done[i] = term | trunc;
        if (term | trunc) {
            uint32_t *fin = reinterpret_cast<uint32_t *>(a.final_obs + (size_t)i * L::OBS_BYTES);
            for (int k = 0; k < L::OBS_WORDS; k++) fin[k] = slot[k];
            G::reset(&s, reinterpret_cast<uint8_t *>(slot));
            elapsed = 0;
        }
        a.elapsed[i] = elapsed;
        store_state<G>(&s, a.states, i, a.n);
    }
    __syncthreads();
    write_block_rows<G>(slots, a.obs, a.n);
}

// ---- host side --------------------------------------------------------------------------------

static size_t align64(size_t bytes) { return (bytes + 63) & ~(size_t)63; }

static int game_index(const char *id) {
    if (!id) return -1;
    for (int g = 0; g < NUM_GAMES; g++)
        if (!strcmp(game_defs[g]->id, id)) return g;
    return -1;
}

// The game of `id` into *game, or INVALID_ARG naming what is wrong.
static cudarl_status check_request(const char *id, int num_envs, int *game) {
    *game = game_index(id);
    if (*game < 0)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "env '%s' has no CUDA twin; the envs that step on "
                       "the GPU this way are MinAtar/Breakout-v1, MinAtar/Asterix-v1, "
                       "MinAtar/Freeway-v1, MinAtar/Seaquest-v1 and MinAtar/SpaceInvaders-v1 "
                       "(other envs step on CPU threads)", id ? id : "(null)");
    if (num_envs < 1)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "%s on the GPU: num_envs is %d; use at least 1 env",
                       id, num_envs);
    return CUDARL_OK;
}

static size_t states_bytes(const cudarl_env_def *def, int num_envs) {
    return align64(def->state_bytes * (size_t)num_envs);
}

extern "C" const cudarl_env_def *cr_minatar_cuda_find(const char *id) {
    int g = game_index(id);
    return g < 0 ? NULL : game_defs[g];
}

extern "C" cudarl_status cr_minatar_cuda_bytes(const char *id, int num_envs, size_t *bytes) {
    int g;
    CR_TRY(check_request(id, num_envs, &g));
    *bytes = states_bytes(game_defs[g], num_envs) + align64(sizeof(int32_t) * (size_t)num_envs);
    return CUDARL_OK;
}

extern "C" cudarl_status cr_minatar_cuda_init(cr_minatar_cuda *env, const char *id, int num_envs,
                                              void *mem) {
    int g;
    CR_TRY(check_request(id, num_envs, &g));
    CUDARL_ASSERT(mem != NULL && ((uintptr_t)mem & 63) == 0);
    const cudarl_env_def *def = game_defs[g];
    CUDARL_ASSERT(def->state_bytes % 4 == 0);
    env->def = def;
    env->game = g;
    env->num_envs = num_envs;
    env->state_words = (int)(def->state_bytes / 4);
    env->max_episode_steps = def->max_episode_steps;
    env->first = 0;
    env->states = (uint32_t *)mem;
    env->elapsed = (int32_t *)((unsigned char *)mem + states_bytes(def, num_envs));
    return CUDARL_OK;
}

static unsigned blocks_of(int n, int threads) { return (unsigned)((n + threads - 1) / threads); }

template <typename G>
static void launch_reset(cudarl_ctx *ctx, const cr_minatar_cuda *env, uint64_t seed,
                         uint8_t *obs) {
    CUDARL_ASSERT(sizeof(typename G::state) == env->def->state_bytes);
    unsigned blocks = blocks_of(env->num_envs, G::THREADS);
    minatar_reset_kernel<G><<<blocks, G::THREADS, 0, cr_stream(ctx)>>>(
        env->states, env->elapsed, env->num_envs, seed, (uint64_t)env->first, obs);
    CR_CUDA_LAUNCHED(ctx);
}

template <typename G> static void launch_step(cudarl_ctx *ctx, const step_args &a) {
    minatar_step_kernel<G><<<blocks_of(a.n, G::THREADS), G::THREADS, 0, cr_stream(ctx)>>>(a);
    CR_CUDA_LAUNCHED(ctx);
}

// Rows are moved in 4-byte words: obs buffers must be 4-byte aligned (an arena's are 64).
static int aligned4(const void *p) { return ((uintptr_t)p & 3) == 0; }

extern "C" void cr_minatar_cuda_reset(cudarl_ctx *ctx, const cr_minatar_cuda *env, uint64_t seed,
                                      uint8_t *obs) {
    CUDARL_ASSERT(ctx->kind == CUDARL_DEVICE_CUDA && obs != NULL && aligned4(obs));
    switch (env->game) {
    case BREAKOUT: launch_reset<breakout_game>(ctx, env, seed, obs); break;
    case ASTERIX: launch_reset<asterix_game>(ctx, env, seed, obs); break;
    case FREEWAY: launch_reset<freeway_game>(ctx, env, seed, obs); break;
    case SEAQUEST: launch_reset<seaquest_game>(ctx, env, seed, obs); break;
    case SPACE_INVADERS: launch_reset<space_invaders_game>(ctx, env, seed, obs); break;
    default: CUDARL_ASSERT(!"cr_minatar_cuda: unknown game index");
    }
}

extern "C" void cr_minatar_cuda_step(cudarl_ctx *ctx, const cr_minatar_cuda *env,
                                     const int32_t *actions, uint8_t *obs, float *reward,
                                     uint8_t *terminated, uint8_t *truncated, uint8_t *done,
                                     uint8_t *final_obs) {
    CUDARL_ASSERT(ctx->kind == CUDARL_DEVICE_CUDA);
    CUDARL_ASSERT(actions && obs && reward && terminated && truncated && final_obs);
    CUDARL_ASSERT(aligned4(obs) && aligned4(final_obs));
    step_args a = {env->states, env->elapsed, env->num_envs, env->max_episode_steps, actions,
                   obs, reward, terminated, truncated, done, final_obs};
    switch (env->game) {
    case BREAKOUT: launch_step<breakout_game>(ctx, a); break;
    case ASTERIX: launch_step<asterix_game>(ctx, a); break;
    case FREEWAY: launch_step<freeway_game>(ctx, a); break;
    case SEAQUEST: launch_step<seaquest_game>(ctx, a); break;
    case SPACE_INVADERS: launch_step<space_invaders_game>(ctx, a); break;
    default: CUDARL_ASSERT(!"cr_minatar_cuda: unknown game index");
    }
}

extern "C" void cr_minatar_cuda_get_state(cudarl_ctx *ctx, const cr_minatar_cuda *env, int i,
                                          void *state) {
    CUDARL_ASSERT(ctx->kind == CUDARL_DEVICE_CUDA && i >= 0 && i < env->num_envs);
    if (cr_cuda_refuse_in_capture(ctx, "cr_minatar_cuda_get_state")) return;
    ctx->host_syncs++;
    size_t pitch = sizeof(uint32_t) * (size_t)env->num_envs;
    CUDA_CHECK(cudaMemcpy2DAsync(state, sizeof(uint32_t), env->states + i, pitch,
                                 sizeof(uint32_t), (size_t)env->state_words,
                                 cudaMemcpyDeviceToHost, cr_stream(ctx)));
    CUDA_CHECK(cudaStreamSynchronize(cr_stream(ctx)));
}
