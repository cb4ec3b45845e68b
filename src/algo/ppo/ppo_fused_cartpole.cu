// PPO's rollout on CartPole-v1 in one kernel: two threads per env (one evaluates the actor, the
// other the critic) run all T steps with the env's state in registers and both networks'
// weights in shared memory.
//
// Why: the unfused rollout is ~15 launches a step (three GEMMs and their epilogues per network
// evaluation, three evaluations, sampling, the env, three episode passes), each of which writes
// its 64-wide activations to memory for the next to read back. Here the activations never leave
// registers: h1 (64) stays in registers while h2 is produced four units at a time and folded
// straight into the output layer, so a step costs its FLOPs (~9 K FMA and 256 tanh per env) and
// ~60 bytes of stores. Four independent accumulators per thread keep the FMA pipe busy even when
// a small N puts only a few warps on each SM.
//
// What it computes is ppo.c's unfused rollout (the backend ops composed), with these
// differences, all within rounding: sums are taken in another order than cuBLAS's (fp32 FMA
// chains of length 4 and 64), the tanh is cr_tanhf_fast_device (the same bits as the ops' tanh),
// and the sampling, env step and uniform draws are the very same code and words (the sampler's
// word t N + n feeds env n at step t, as ops->uniform does). The episode log is filled by one
// pass over the (T, N) flags afterwards, in (t, n) order: what T calls of episodes_record do.
#include "ops/cuda/cuda_common.cuh"
#include "ops/cuda/categorical_device.cuh"
#include "ops/cuda/tanh_device.cuh"

extern "C" {
#include "algo/ppo/ppo_fused_cartpole.h"
}
#include "env/cartpole/cartpole_step.h"

namespace {

constexpr int I = CR_CARTPOLE_OBS_DIM, H = CR_FUSED_HIDDEN, A = 2;
constexpr int ENVS_PER_BLOCK = 32, THREADS = 2 * ENVS_PER_BLOCK; // an actor and a critic warp
// Blocks an SM must hold: 4 lets ptxas keep everything in registers (~165); 6 or 8 blocks with
// inlined networks spill, and 8 blocks with the networks as calls are slower too (bench/RESULTS.md,
// GPU PPO).
constexpr int MIN_BLOCKS = 4;

// Shared-memory layout (floats) of one MLP I -> H -> H -> O; W1 first so its rows are 16-byte
// aligned for float4 loads.
template <int O> struct Mlp {
    static constexpr int W1 = 0, W0 = W1 + H * H, B0 = W0 + H * I, B1 = B0 + H, W2 = B1 + H,
                         B2 = W2 + O * H, size = (B2 + O + 3) / 4 * 4;
};
constexpr int ACTOR = 0, CRITIC = Mlp<A>::size, SMEM_FLOATS = CRITIC + Mlp<1>::size;

// dst[0..n) = src[0..n) by the block, LOADS loads in flight per thread: a loop that stored each
// value before loading the next waited for L2 once per value (144 times per thread for the
// actor and critic with 64 threads), a cost the pool's step kernel, launched per group and step,
// cannot amortise over T steps as the rollout kernel does.
__device__ __forceinline__ void copy_to_shared(float *__restrict__ dst,
                                               const float *__restrict__ src, int n) {
    constexpr int LOADS = 8;
    for (int k0 = threadIdx.x; k0 < n; k0 += LOADS * blockDim.x) {
        float v[LOADS];
#pragma unroll
        for (int u = 0; u < LOADS; u++) {
            const int k = k0 + u * blockDim.x;
            v[u] = k < n ? __ldg(src + k) : 0.0f;
        }
#pragma unroll
        for (int u = 0; u < LOADS; u++) {
            const int k = k0 + u * blockDim.x;
            if (k < n) dst[k] = v[u];
        }
    }
}

template <int O> __device__ void load_mlp(float *sm, const cr_mlp_view &m) {
    using L = Mlp<O>;
    copy_to_shared(sm + L::W1, m.w[1], H * H);
    copy_to_shared(sm + L::W0, m.w[0], H * I);
    copy_to_shared(sm + L::B0, m.b[0], H);
    copy_to_shared(sm + L::B1, m.b[1], H);
    copy_to_shared(sm + L::W2, m.w[2], O * H);
    copy_to_shared(sm + L::B2, m.b[2], O);
}

// out (O) = the MLP at sm (layout Mlp<O>) applied to x (I).
template <int O>
__device__ __forceinline__ void mlp_forward(const float *sm, const float (&x)[I], float (&out)[O]) {
    using L = Mlp<O>;
    float h1[H];
#pragma unroll
    for (int j = 0; j < H; j++) {
        float acc = 0.0f;
#pragma unroll
        for (int k = 0; k < I; k++) acc = fmaf(x[k], sm[L::W0 + j * I + k], acc);
        h1[j] = cr_tanhf_fast_device(__fadd_rn(acc, sm[L::B0 + j]));
    }
#pragma unroll
    for (int o = 0; o < O; o++) out[o] = 0.0f;
#pragma unroll 1
    for (int j = 0; j < H; j += 4) { // four units of h2 at a time, each folded into out
        float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int k = 0; k < H; k += 4) {
#pragma unroll
            for (int q = 0; q < 4; q++) {
                float4 w = *reinterpret_cast<const float4 *>(sm + L::W1 + (j + q) * H + k);
                acc[q] = fmaf(h1[k], w.x, acc[q]);
                acc[q] = fmaf(h1[k + 1], w.y, acc[q]);
                acc[q] = fmaf(h1[k + 2], w.z, acc[q]);
                acc[q] = fmaf(h1[k + 3], w.w, acc[q]);
            }
        }
#pragma unroll
        for (int q = 0; q < 4; q++) {
            float h2 = cr_tanhf_fast_device(__fadd_rn(acc[q], sm[L::B1 + j + q]));
#pragma unroll
            for (int o = 0; o < O; o++) out[o] = fmaf(h2, sm[L::W2 + o * H + j + q], out[o]);
        }
    }
#pragma unroll
    for (int o = 0; o < O; o++) out[o] = __fadd_rn(out[o], sm[L::B2 + o]);
}

__device__ __forceinline__ float critic_value(const float *sm, const float (&x)[I]) {
    float v[1];
    mlp_forward<1>(sm + CRITIC, x, v);
    return v[0];
}

// Word w of the stream as ops->uniform turns it into a float in [0, 1).
__device__ __forceinline__ float stream_uniform(const cr_rng_stream &s, uint64_t w) {
    uint64_t block = w / 4;
    uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), s.stream[0], s.stream[1]};
    uint32_t key[2] = {s.key[0], s.key[1]};
    uint32_t out[4];
    cr_philox4x32_10_hd(ctr, key, out);
    return (float)(out[w % 4] >> 8) * (1.0f / 16777216.0f);
}

// Block b: envs 32 b .. 32 b + 31, lane l of both warps on env 32 b + l. Warp 0 evaluates the
// actor, warp 1 the critic (and V of final observations), so each thread runs one network a
// step and twice as many warps hide each other's latency; the logits cross over through shared
// memory (double-buffered by step parity: one barrier a step suffices, since a warp cannot
// write a buffer again before the other has passed the barrier after reading it). Both warps
// then sample and step the env, each on its own copy of the env's state: the same code on the
// same inputs, so the copies never differ; warp 0 writes the env's outputs, warp 1 the values.
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
rollout_kernel(const cr_ppo_rollout_args a) {
    __shared__ __align__(16) float sm[SMEM_FLOATS];
    __shared__ float logits_sm[2][ENVS_PER_BLOCK][A];
    load_mlp<A>(sm + ACTOR, a.actor);
    load_mlp<1>(sm + CRITIC, a.critic);
    __syncthreads();
    const int lane = threadIdx.x % ENVS_PER_BLOCK;
    const bool actor = threadIdx.x < ENVS_PER_BLOCK; // warp-uniform
    const int n = blockIdx.x * ENVS_PER_BLOCK + lane;
    const int N = a.N;
    const bool live = n < N; // dead lanes still meet every barrier

    const cr_rng_stream sampler = *a.sampler;
    double s[I] = {0.0, 0.0, 0.0, 0.0};
    int32_t elapsed = 0;
    cr_philox_state rng = {};
    float x[I] = {0.0f, 0.0f, 0.0f, 0.0f};
    double ep_ret = 0.0;
    int64_t ep_len = 0;
    if (live) {
        for (int k = 0; k < I; k++) s[k] = a.env.state[(size_t)n * I + k];
        elapsed = a.env.elapsed[n];
        rng = a.env.rng[n];
        for (int k = 0; k < I; k++) x[k] = a.cur_obs[(size_t)n * I + k];
        ep_ret = a.ep_return[n];
        ep_len = a.ep_length[n];
    }

    for (int t = 0; t < a.T; t++) {
        const size_t r = (size_t)t * N + n;
        float (&lg)[A] = logits_sm[t & 1][lane];
        if (actor) {
            float l[A];
            mlp_forward<A>(sm + ACTOR, x, l);
            for (int j = 0; j < A; j++) lg[j] = l[j];
            if (live)
                *reinterpret_cast<float4 *>(a.obs + r * I) = make_float4(x[0], x[1], x[2], x[3]);
        } else if (live) {
            a.values[r] = critic_value(sm, x);
        }
        __syncthreads();
        if (!live) continue;
        float l[A], logp;
        for (int j = 0; j < A; j++) l[j] = lg[j];
        int32_t action = cr_row_sample(l, A, stream_uniform(sampler, sampler.offset + r), &logp);
        float next[I], fin[I], reward;
        uint8_t term, trunc;
        int ended = cr_cartpole_step_one(s, &elapsed, &rng, action, next, &reward, &term, &trunc,
                                         fin);
        ep_ret += (double)reward; // the order of episodes_record: return, then length
        ep_len += 1;
        if (actor) {
            a.actions[r] = action;
            a.logp[r] = logp;
            a.rewards[r] = reward;
            a.terminated[r] = term, a.truncated[r] = trunc, a.done[r] = (uint8_t)ended;
            if (ended) {
                *reinterpret_cast<float4 *>(a.final_obs + r * I) =
                    make_float4(fin[0], fin[1], fin[2], fin[3]);
                a.fin_return[r] = ep_ret, a.fin_length[r] = (int32_t)ep_len;
            }
        } else {
            // V(final obs) only bootstraps a truncation: GAE selects 0 for a terminated step
            // whatever next_values holds, so terminated rows get 0 and skip the evaluation.
            a.final_values[r] = trunc && !term ? critic_value(sm, fin) : 0.0f;
        }
        if (ended) ep_ret = 0.0, ep_len = 0;
        for (int k = 0; k < I; k++) x[k] = next[k];
    }
    if (!live) return;
    if (!actor) {
        a.last_values[n] = critic_value(sm, x);
        return;
    }
    for (int k = 0; k < I; k++) {
        a.env.state[(size_t)n * I + k] = s[k];
        a.cur_obs[(size_t)n * I + k] = x[k];
    }
    a.env.elapsed[n] = elapsed;
    a.env.rng[n] = rng;
    a.ep_return[n] = ep_ret, a.ep_length[n] = ep_len;
}

// The pool's step for envs [b, b + n) of N (cr_ppo_pool_step_args), laid out as the rollout
// kernel: block x takes envs b + 32 x .. + 31, warp 0 the actor's work and warp 1 the critic's,
// lane l of both on one env. Every value it writes is the rollout kernel's for the same env and
// step (the same device functions on the same inputs and stream words), so a pool stepping
// CartPole's def on the CPU fills the rollout buffers with the fused batch's bits.
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
pool_step_kernel(const cr_ppo_pool_step_args a) {
    __shared__ __align__(16) float sm[SMEM_FLOATS];
    load_mlp<A>(sm + ACTOR, a.actor);
    load_mlp<1>(sm + CRITIC, a.critic);
    __syncthreads();
    const int lane = threadIdx.x % ENVS_PER_BLOCK;
    const bool actor = threadIdx.x < ENVS_PER_BLOCK; // warp-uniform
    const int n = a.b + blockIdx.x * ENVS_PER_BLOCK + lane;
    if (n >= a.b + a.n) return; // no barrier follows
    const size_t N = (size_t)a.N;
    if (a.t_absorb >= 0) { // the outputs of step t_absorb, which the threads wrote
        const size_t r = (size_t)a.t_absorb * N + n;
        const uint8_t term = a.h_terminated[n], trunc = a.h_truncated[n];
        const int ended = term || trunc;
        if (actor) {
            const float reward = a.h_reward[n];
            double ep_ret = a.ep_return[n] + (double)reward; // episodes_record's order
            int64_t ep_len = a.ep_length[n] + 1;
            a.rewards[r] = reward;
            a.terminated[r] = term, a.truncated[r] = trunc, a.done[r] = (uint8_t)ended;
            if (ended) {
                *reinterpret_cast<float4 *>(a.final_obs + r * I) =
                    reinterpret_cast<const float4 *>(a.h_final_obs)[n];
                a.fin_return[r] = ep_ret, a.fin_length[r] = (int32_t)ep_len;
                ep_ret = 0.0, ep_len = 0;
            }
            a.ep_return[n] = ep_ret, a.ep_length[n] = ep_len;
        } else {
            float fin[I] = {0.0f, 0.0f, 0.0f, 0.0f};
            if (trunc && !term) {
                const float4 f4 = reinterpret_cast<const float4 *>(a.h_final_obs)[n];
                fin[0] = f4.x, fin[1] = f4.y, fin[2] = f4.z, fin[3] = f4.w;
            }
            a.final_values[r] = trunc && !term ? critic_value(sm, fin) : 0.0f;
        }
    }
    const float4 o4 = reinterpret_cast<const float4 *>(a.h_obs)[n]; // one read over the bus
    float x[I] = {o4.x, o4.y, o4.z, o4.w};
    if (a.t_act >= 0) {
        const size_t r = (size_t)a.t_act * N + n;
        if (actor) {
            float l[A], logp;
            mlp_forward<A>(sm + ACTOR, x, l);
            const cr_rng_stream sampler = *a.sampler;
            int32_t action = cr_row_sample(l, A, stream_uniform(sampler, sampler.offset + r), &logp);
            *reinterpret_cast<float4 *>(a.obs + r * I) = make_float4(x[0], x[1], x[2], x[3]);
            a.actions[r] = action;
            a.logp[r] = logp;
            a.h_actions[n] = action;
        } else {
            a.values[r] = critic_value(sm, x);
        }
    } else if (a.last_values) { // the rollout's end: V(obs) and the observations carried on
        if (actor)
            for (int k = 0; k < I; k++) a.cur_obs[(size_t)n * I + k] = x[k];
        else
            a.last_values[n] = critic_value(sm, x);
    }
}

} // namespace

void cr_ppo_pool_step_cuda(cudarl_ctx *ctx, const cr_ppo_pool_step_args *a) {
    CUDARL_ASSERT(cr_ppo_rollout_cuda_shape_ok(&a->actor, &a->critic) && a->n >= 1 &&
                  a->b >= 0 && a->b + a->n <= a->N);
    unsigned blocks = (unsigned)((a->n + ENVS_PER_BLOCK - 1) / ENVS_PER_BLOCK);
    pool_step_kernel<<<blocks, THREADS, 0, cr_stream(ctx)>>>(*a);
    CR_CUDA_LAUNCHED(ctx);
}

void cr_ppo_pool_rollout_cuda_end(cudarl_ctx *ctx, cr_rng_stream *sampler, int T, int N,
                                  const uint8_t *done, const double *fin_return,
                                  const int32_t *fin_length, cr_episode_log *log) {
    cr_cuda_rng_advance(ctx, sampler, (uint64_t)T * (uint64_t)N);
    cr_cuda_episodes_log_finished(ctx, done, fin_return, fin_length, log, T * N);
}

int cr_ppo_rollout_cuda_shape_ok(const cr_mlp_view *actor, const cr_mlp_view *critic) {
    return cr_ppo_fused_shape_ok(actor, critic) && actor->dims[0] == I;
}

void cr_ppo_rollout_cuda(cudarl_ctx *ctx, const cr_ppo_rollout_args *a) {
    CUDARL_ASSERT(cr_ppo_rollout_cuda_shape_ok(&a->actor, &a->critic) && a->T >= 1 && a->N >= 1);
    unsigned blocks = (unsigned)((a->N + ENVS_PER_BLOCK - 1) / ENVS_PER_BLOCK);
    rollout_kernel<<<blocks, THREADS, 0, cr_stream(ctx)>>>(*a);
    CR_CUDA_LAUNCHED(ctx);
    cr_cuda_rng_advance(ctx, a->sampler, (uint64_t)a->T * (uint64_t)a->N);
    cr_cuda_episodes_log_finished(ctx, a->done, a->fin_return, a->fin_length, a->log,
                                  a->T * a->N);
}
