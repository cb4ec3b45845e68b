// Replay buffer, CUDA twin: the CPU twin (replay.c, replay_prio.c) transcribed kernel by kernel.
// Layout, validity rule, random-number positions and float operations are the CPU's; products and
// quotients of the float paths use __fmul_rn/__fdiv_rn so that nvcc cannot contract them into an
// FMA the CPU does not do. Inner tree nodes are a pure function of the leaves, so refreshing them
// level by level from the touched leaves (duplicates included) gives the CPU's bits.
#include <math.h>
#include <string.h>

#include "core/philox.h"
#include "ops/cuda/cuda_common.cuh"

extern "C" {
#include "replay/replay_cuda.h"
}

#define RC_TOUCH_PER_ENV 24 // leaves one env's insert may set: K + 1 retired + 3 admitted
#define RC_BLOCK 1024       // the single-block kernels (insert bookkeeping, weights, updates)
// rc->misc: [0] most attempts of a uniform draw, [1] error bits, [2..3] the widest sampling window
// over the envs (uint64, kept by every insert), [4] blocks of a fused sample finished so far
#define RC_MISC_WORDS 8
#define RC_MISC_WMAX 2
#define RC_MISC_DONE 4

// ---- positions and validity (replay.c) ------------------------------------------------------

__device__ __forceinline__ int64_t rc_slot_of(const cr_replay &rb, int e, int64_t p) {
    return (int64_t)e * rb.rows + p % rb.rows;
}

__device__ __forceinline__ int64_t rc_window_lo(const cr_replay &rb, int64_t n) {
    return n <= rb.rows ? 0 : n - rb.rows + rb.spec.stack - 1;
}

__device__ int rc_valid_at(const cr_replay &rb, int e, int64_t p, int64_t n) {
    if (p < rc_window_lo(rb, n) || p > n - 1) return 0;
    uint8_t f = rb.flags[rc_slot_of(rb, e, p)];
    if (f & CR_REPLAY_FINAL) return 0;
    return p <= n - 2 || (f & CR_REPLAY_TERMINATED);
}

__device__ int rc_slot_valid(const cr_replay &rb, int64_t s) {
    if (s < 0 || s >= rb.spec.capacity) return 0;
    int e = (int)(s / rb.rows);
    int64_t q = s % rb.rows, n = rb.heads[e];
    if (q > n - 1) return 0;
    int64_t p = q + (n - 1 - q) / rb.rows * rb.rows;
    return rc_valid_at(rb, e, p, n);
}

__device__ __forceinline__ int rc_episode_first(const cr_replay &rb, int e, int64_t q) {
    return q == 0 ||
           (rb.flags[rc_slot_of(rb, e, q - 1)] & (CR_REPLAY_TERMINATED | CR_REPLAY_FINAL));
}

// Word w of the stream (rng_stream.c).
__device__ __forceinline__ uint32_t rc_word(const cr_rng_stream &s, uint64_t w) {
    uint64_t block = w / 4;
    uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), s.stream[0], s.stream[1]};
    uint32_t out[4];
    cr_philox4x32_10_hd(ctr, s.key, out);
    const int k = (int)(w % 4); // a select, not an indexed load: out stays in registers
    return k == 0 ? out[0] : k == 1 ? out[1] : k == 2 ? out[2] : out[3];
}

// Refreshes the ancestors of leaves[0..count) level by level (every thread of the block calls
// it; entries outside [0, capacity) are skipped). Threads writing one node write the same value.
__device__ void rc_refresh(const cr_replay &rb, const int64_t *leaves, int count) {
    float *t = rb.tree;
    const int64_t L = rb.leaves;
    for (int64_t span = 2; span <= L; span *= 2) {
        __syncthreads();
        int lv = __ffsll((long long)span) - 1;
        for (int i = threadIdx.x; i < count; i += blockDim.x) {
            int64_t s = leaves[i];
            if (s < 0 || s >= rb.spec.capacity) continue;
            int64_t node = (L + s) >> lv;
            t[node] = __fadd_rn(t[2 * node], t[2 * node + 1]);
        }
    }
    __syncthreads();
}

// ---- copy units -----------------------------------------------------------------------------

template <typename U> __device__ __forceinline__ U rc_zero();
template <> __device__ __forceinline__ uint4 rc_zero<uint4>() { return make_uint4(0, 0, 0, 0); }
template <> __device__ __forceinline__ uint32_t rc_zero<uint32_t>() { return 0u; }
template <> __device__ __forceinline__ uint8_t rc_zero<uint8_t>() { return 0; }

static int aligned(const void *p, size_t a) { return ((uintptr_t)p % a) == 0; }

// The widest copy unit (16, 4 or 1 bytes) that divides frame_bytes and aligns every pointer.
static size_t copy_unit(size_t frame_bytes, const void *a, const void *b, const void *c) {
    const size_t units[2] = {16, 4};
    for (int i = 0; i < 2; i++) {
        size_t u = units[i];
        if (frame_bytes % u == 0 && aligned(a, u) && aligned(b, u) && aligned(c, u)) return u;
    }
    return 1;
}

// ---- init -----------------------------------------------------------------------------------

__global__ void k_init_state(cr_replay_state *st, uint32_t *misc) {
    st->num_valid = 0;
    st->max_priority = 1.0f;
    *(unsigned long long *)(misc + RC_MISC_WMAX) = 1; // no env has a window yet: 1, as the draw's floor
}

static size_t align_up(size_t n) { return (n + CR_ARENA_ALIGN - 1) / CR_ARENA_ALIGN * CR_ARENA_ALIGN; }

static size_t scratch_bytes(const cr_replay_spec *sp, int max_batch) {
    return align_up((size_t)max_batch * sizeof(int64_t)) +
           align_up((size_t)sp->num_envs * RC_TOUCH_PER_ENV * sizeof(int64_t)) +
           RC_MISC_WORDS * sizeof(uint32_t);
}

extern "C" cudarl_status cr_replay_cuda_plan(const cr_replay_spec *spec, int max_batch,
                                             cr_plan *plan) {
    if (max_batch < 1 || max_batch > 65535)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "replay (cuda): max batch %d must be in [1, 65535]",
                       max_batch);
    CR_TRY(cr_replay_plan(spec, plan));
    cr_plan_add(plan, "replay.cuda_scratch", scratch_bytes(spec, max_batch));
    return CUDARL_OK;
}

extern "C" cudarl_status cr_replay_cuda_init(cudarl_ctx *ctx, cr_replay_cuda *rc,
                                             const cr_replay_spec *sp, int max_batch,
                                             const cr_arena *arena, int first_item) {
    CR_TRY(cr_replay_spec_check(sp));
    if (max_batch < 1 || max_batch > 65535)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "replay (cuda): max batch %d must be in [1, 65535]",
                       max_batch);
    if (arena->kind != CR_MEM_DEVICE)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "replay (cuda): the arena must be device memory");
    cr_replay *rb = &rc->rb;
    memset(rc, 0, sizeof *rc);
    rb->spec = *sp;
    rb->rows = sp->capacity / sp->num_envs;
    int64_t L = 1;
    while (L < sp->capacity) L *= 2;
    rb->leaves = L;
    rb->frame_bytes = (size_t)sp->frame_elems * (sp->dtype == CR_REPLAY_FLOAT32 ? 4 : 1);
    int i = first_item;
    rb->frames = (uint8_t *)cr_arena_get(arena, i++);
    rb->actions = (int32_t *)cr_arena_get(arena, i++);
    rb->rewards = (float *)cr_arena_get(arena, i++);
    rb->flags = (uint8_t *)cr_arena_get(arena, i++);
    rb->heads = (int64_t *)cr_arena_get(arena, i++);
    rb->state = (cr_replay_state *)cr_arena_get(arena, i++);
    if (sp->prioritized) rb->tree = (float *)cr_arena_get(arena, i++);
    uint8_t *scratch = (uint8_t *)cr_arena_get(arena, i++);
    rc->max_batch = max_batch;
    rc->slots = (int64_t *)scratch;
    scratch += align_up((size_t)max_batch * sizeof(int64_t));
    rc->touched = (int64_t *)scratch;
    scratch += align_up((size_t)sp->num_envs * RC_TOUCH_PER_ENV * sizeof(int64_t));
    rc->misc = (uint32_t *)scratch;
    cudaStream_t st = cr_stream(ctx);
    if (rb->tree) CUDA_CHECK(cudaMemsetAsync(rb->tree, 0, 2 * (size_t)L * sizeof(float), st));
    CUDA_CHECK(cudaMemsetAsync(rb->heads, 0, (size_t)sp->num_envs * sizeof(int64_t), st));
    CUDA_CHECK(cudaMemsetAsync(rb->flags, 0, (size_t)sp->capacity, st));
    CUDA_CHECK(cudaMemsetAsync(rc->misc, 0, RC_MISC_WORDS * sizeof(uint32_t), st));
    CUDA_CHECK(cudaMemsetAsync(rb->state, 0, sizeof(cr_replay_state), st)); // padding too
    k_init_state<<<1, 1, 0, st>>>(rb->state, rc->misc);
    CR_CUDA_LAUNCHED(ctx);
    return CUDARL_OK;
}

// ---- insert ---------------------------------------------------------------------------------

// Frames: grid.y over envs, grid.x over the frame's units. Reads heads before k_insert_meta
// advances them.
template <typename U>
__global__ void k_insert_frames(cr_replay rb, const U *obs, const U *final_obs,
                                const uint8_t *term, const uint8_t *trunc, int64_t units) {
    U *frames = (U *)rb.frames;
    for (int e = blockIdx.y; e < rb.spec.num_envs; e += gridDim.y) {
        int64_t old = rb.heads[e];
        int end = trunc[e] && !term[e] && final_obs;
        U *d0 = frames + rc_slot_of(rb, e, old) * units;
        U *d1 = frames + rc_slot_of(rb, e, old + 1) * units;
        const U *s0 = obs + (int64_t)e * units, *s1 = end ? final_obs + (int64_t)e * units : s0;
        for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < units;
             j += (int64_t)gridDim.x * blockDim.x) {
            d0[j] = s0[j];
            if (end) d1[j] = s1[j];
        }
    }
}

// Everything but the frames, one block: insert_env of every env (one thread per env, the CPU's
// order within it), the count of sampleable transitions, then the touched leaves' ancestors.
__global__ void __launch_bounds__(RC_BLOCK)
k_insert_meta(cr_replay rb, int64_t *touched, const int32_t *actions, const float *rewards,
              const uint8_t *term, const uint8_t *trunc, uint32_t *misc) {
    __shared__ unsigned long long dvalid;
    __shared__ int ntouched;
    if (threadIdx.x == 0) dvalid = 0, ntouched = 0;
    __syncthreads();
    float leafv = rb.tree ? (float)pow((double)rb.state->max_priority, (double)rb.spec.alpha) : 0.0f;
    long long my = 0;
    for (int e = threadIdx.x; e < rb.spec.num_envs; e += blockDim.x) {
        int64_t tl[RC_TOUCH_PER_ENV];
        int nt = 0;
        uint8_t f = (uint8_t)((term[e] ? CR_REPLAY_TERMINATED : 0) |
                              (trunc[e] ? CR_REPLAY_TRUNCATED : 0));
        int end = (f & CR_REPLAY_TRUNCATED) && !(f & CR_REPLAY_TERMINATED);
        int64_t old = rb.heads[e], n = old + 1 + end;
        int64_t lo_new = rc_window_lo(rb, n);
        for (int64_t p = rc_window_lo(rb, old); p < lo_new && p < old; p++)
            if (rc_valid_at(rb, e, p, old)) {
                int64_t s = rc_slot_of(rb, e, p);
                my--;
                if (rb.tree) rb.tree[rb.leaves + s] = 0.0f, tl[nt++] = s;
            }
        int64_t s0 = rc_slot_of(rb, e, old);
        rb.actions[s0] = actions[e];
        rb.rewards[s0] = rewards[e];
        rb.flags[s0] = f;
        if (end) {
            int64_t s1 = rc_slot_of(rb, e, old + 1);
            rb.actions[s1] = 0;
            rb.rewards[s1] = 0.0f;
            rb.flags[s1] = CR_REPLAY_FINAL;
        }
        rb.heads[e] = n;
        for (int64_t p = old - 1 > lo_new ? old - 1 : lo_new; p < n; p++) {
            int was = p < old && rc_valid_at(rb, e, p, old);
            int now = rc_valid_at(rb, e, p, n);
            if (now != was) {
                int64_t s = rc_slot_of(rb, e, p);
                my += now ? 1 : -1;
                if (rb.tree) rb.tree[rb.leaves + s] = now ? leafv : 0.0f, tl[nt++] = s;
            }
        }
        if (nt) {
            int at = atomicAdd(&ntouched, nt); // order varies, the refreshed tree does not
            for (int k = 0; k < nt; k++) touched[at + k] = tl[k];
        }
    }
    atomicAdd(&dvalid, (unsigned long long)my);
    __syncthreads();
    if (threadIdx.x == 0) rb.state->num_valid += (int64_t)dvalid;
    // the widest window over the envs' new heads (at least 1), for the uniform draw
    __shared__ unsigned long long wmax;
    if (threadIdx.x == 0) wmax = 1;
    __syncthreads();
    unsigned long long wm = 1;
    for (int e = threadIdx.x; e < rb.spec.num_envs; e += blockDim.x) {
        int64_t n = rb.heads[e], w = n - rc_window_lo(rb, n);
        if (w > (int64_t)wm) wm = (unsigned long long)w;
    }
    atomicMax(&wmax, wm);
    __syncthreads();
    if (threadIdx.x == 0) *(unsigned long long *)(misc + RC_MISC_WMAX) = wmax;
    if (rb.tree) rc_refresh(rb, touched, ntouched);
}

extern "C" void cr_replay_cuda_insert(cudarl_ctx *ctx, cr_replay_cuda *rc, const void *obs,
                                      const int32_t *actions, const float *rewards,
                                      const uint8_t *terminated, const uint8_t *truncated,
                                      const void *final_obs) {
    const cr_replay &rb = rc->rb;
    cudaStream_t st = cr_stream(ctx);
    size_t u = copy_unit(rb.frame_bytes, rb.frames, obs, final_obs);
    int64_t units = (int64_t)(rb.frame_bytes / u);
    unsigned bx = cr_cuda_blocks((size_t)units, CR_CUDA_THREADS);
    if (bx > 64) bx = 64;
    int E = rb.spec.num_envs;
    dim3 grid(bx, E < 65535 ? (unsigned)E : 65535u);
    if (u == 16)
        k_insert_frames<uint4><<<grid, CR_CUDA_THREADS, 0, st>>>(
            rb, (const uint4 *)obs, (const uint4 *)final_obs, terminated, truncated, units);
    else if (u == 4)
        k_insert_frames<uint32_t><<<grid, CR_CUDA_THREADS, 0, st>>>(
            rb, (const uint32_t *)obs, (const uint32_t *)final_obs, terminated, truncated, units);
    else
        k_insert_frames<uint8_t><<<grid, CR_CUDA_THREADS, 0, st>>>(
            rb, (const uint8_t *)obs, (const uint8_t *)final_obs, terminated, truncated, units);
    CR_CUDA_LAUNCHED(ctx);
    int threads = E < RC_BLOCK ? (E + 31) / 32 * 32 : RC_BLOCK;
    k_insert_meta<<<1, threads, 0, st>>>(rb, rc->touched, actions, rewards, terminated, truncated,
                                         rc->misc);
    CR_CUDA_LAUNCHED(ctx);
}

// ---- gather (both samplers) -----------------------------------------------------------------

// Row b = blockIdx.y of obs (blockIdx.z 0) or next_obs (1): thread 0 walks the stack's source
// slots (gather_stack), then the block copies K frames of `units` units each.
template <typename U>
__global__ void k_gather(cr_replay rb, const int64_t *slots, U *obs, U *next_obs, int64_t units) {
    __shared__ int64_t src[CR_REPLAY_MAX_STACK];
    __shared__ int zero;
    U *out = blockIdx.z == 0 ? obs : next_obs;
    int b = blockIdx.y;
    int64_t s = slots[b];
    if (!out || s < 0) return;
    const int K = rb.spec.stack;
    if (threadIdx.x == 0) {
        int e = (int)(s / rb.rows);
        int64_t q = s % rb.rows, n = rb.heads[e];
        int64_t p = q + (n - 1 - q) / rb.rows * rb.rows;
        zero = blockIdx.z == 1 && (rb.flags[s] & CR_REPLAY_TERMINATED);
        int64_t pos = p + blockIdx.z;
        for (int k = K - 1; k >= 0; k--) {
            src[k] = rc_slot_of(rb, e, pos);
            if (k > 0 && !rc_episode_first(rb, e, pos)) pos--;
        }
    }
    __syncthreads();
    const U *frames = (const U *)rb.frames;
    U *dst = out + (int64_t)b * K * units;
    for (int k = 0; k < K; k++) {
        const U *from = frames + src[k] * units;
        U *to = dst + (int64_t)k * units;
        for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < units;
             j += (int64_t)gridDim.x * blockDim.x)
            to[j] = zero ? rc_zero<U>() : from[j];
    }
}

static void launch_gather(cudarl_ctx *ctx, const cr_replay_cuda *rc, int B,
                          const cr_replay_batch *out) {
    if (!out->obs && !out->next_obs) return;
    const cr_replay &rb = rc->rb;
    size_t u = copy_unit(rb.frame_bytes, rb.frames, out->obs, out->next_obs);
    int64_t units = (int64_t)(rb.frame_bytes / u);
    unsigned bx = cr_cuda_blocks((size_t)units, CR_CUDA_THREADS);
    if (bx > 64) bx = 64;
    dim3 grid(bx, (unsigned)B, 2);
    cudaStream_t st = cr_stream(ctx);
    if (u == 16)
        k_gather<uint4><<<grid, CR_CUDA_THREADS, 0, st>>>(rb, rc->slots, (uint4 *)out->obs,
                                                          (uint4 *)out->next_obs, units);
    else if (u == 4)
        k_gather<uint32_t><<<grid, CR_CUDA_THREADS, 0, st>>>(
            rb, rc->slots, (uint32_t *)out->obs, (uint32_t *)out->next_obs, units);
    else
        k_gather<uint8_t><<<grid, CR_CUDA_THREADS, 0, st>>>(
            rb, rc->slots, (uint8_t *)out->obs, (uint8_t *)out->next_obs, units);
    CR_CUDA_LAUNCHED(ctx);
}

// The scalar fields of row b (cr_replay_gather's), slot s.
__device__ __forceinline__ void rc_scalars(const cr_replay &rb, int64_t s, int b,
                                           const cr_replay_batch &out) {
    uint8_t f = rb.flags[s];
    if (out.actions) out.actions[b] = rb.actions[s];
    if (out.rewards) out.rewards[b] = rb.rewards[s];
    if (out.terminated) out.terminated[b] = (f & CR_REPLAY_TERMINATED) ? 1 : 0;
    if (out.truncated) out.truncated[b] = (f & CR_REPLAY_TRUNCATED) ? 1 : 0;
    if (out.indices) out.indices[b] = s;
}

// ---- uniform sampling -----------------------------------------------------------------------

#define RC_DRAW_THREADS 256
#define RC_SAMPLE_THREADS 256

// The whole uniform sample in one launch, a block per row b of the batch (three launches - a
// draw kernel, k_gather and a one-thread stream advance - made 32 rows cost 18 us on an H200,
// most of it launch gaps and one thread walking each stack's slots through dependent loads):
//   thread 0 draws row b as the CPU's cr_replay_sample_uniform does: attempts k = 0, 1, ... of
//   word pairs 2 (k B + b) until a sampleable slot, over the widest window of the envs (read
//   from misc, kept by every insert, rather than a scan of every env's head);
//   lanes of warps 0 and 1 test in parallel whether each of the K - 1 positions behind the obs
//   and next_obs ends its episode's run (a ballot gives how far back the stack may reach), so
//   the stack's K source slots come from one round of loads;
//   the block copies the 2 K frames;
//   the last block to finish (a ticket in misc) advances the stream by 2 B (1 + the most
//   attempts of any row), as the CPU does.
// The slots, scalars, frames and stream offset are the CPU's, bit for bit (test_replay_cuda).
template <typename U>
__global__ void __launch_bounds__(RC_SAMPLE_THREADS)
k_uniform_sample(cr_replay rb, cr_rng_stream *sp, int B, int64_t *slots, uint32_t *misc,
                 cr_replay_batch out, U *obs, U *next_obs, int64_t units) {
    __shared__ int64_t slot_sh;
    __shared__ int64_t src[2][CR_REPLAY_MAX_STACK];
    __shared__ int zero_next;
    const int b = blockIdx.x, K = rb.spec.stack;
    const cr_rng_stream s = *sp;
    if (threadIdx.x == 0) {
        int64_t slot = -1;
        if (rb.state->num_valid == 0) {
            if (b == 0) atomicOr(misc + 1, CR_REPLAY_CUDA_ERR_EMPTY);
        } else {
            const uint64_t wmax = *(const unsigned long long *)(misc + RC_MISC_WMAX);
            const uint64_t box = (uint64_t)rb.spec.num_envs * wmax;
            uint64_t k = 0;
            for (;; k++) {
                uint64_t w = s.offset + 2 * (k * (uint64_t)B + (uint64_t)b);
                uint64_t x = (uint64_t)rc_word(s, w) << 32 | rc_word(s, w + 1);
                uint64_t idx = __umul64hi(x, box);
                int e = (int)(idx / wmax);
                int64_t n = rb.heads[e], p = rc_window_lo(rb, n) + (int64_t)(idx % wmax);
                if (rc_valid_at(rb, e, p, n)) {
                    slot = rc_slot_of(rb, e, p);
                    break;
                }
            }
            atomicMax(misc, (uint32_t)k);
            rc_scalars(rb, slot, b, out);
            if (out.weights) out.weights[b] = 1.0f;
        }
        slots[b] = slot;
        slot_sh = slot;
        zero_next = slot >= 0 && (rb.flags[slot] & CR_REPLAY_TERMINATED);
    }
    __syncthreads();
    const int64_t slot = slot_sh;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (slot >= 0 && warp < 2) { // warp z: the stack of obs (z 0) or next_obs (z 1)
        const int e = (int)(slot / rb.rows);
        const int64_t q = slot % rb.rows, n = rb.heads[e];
        const int64_t pos0 = q + (n - 1 - q) / rb.rows * rb.rows + warp;
        // lane j < K - 1: does position pos0 - j start its episode (the walk stops there)?
        int first = 0;
        if (lane < K - 1) first = pos0 - lane <= 0 || rc_episode_first(rb, e, pos0 - lane);
        unsigned stops = __ballot_sync(0xffffffffu, first);
        int back = stops ? __ffs((int)stops) - 1 : K - 1; // how far back the stack reaches
        if (lane < K) {
            int j = K - 1 - lane; // src[lane] sits j positions behind pos0, clamped at the stop
            src[warp][lane] = rc_slot_of(rb, e, pos0 - (j < back ? j : back));
        }
    }
    __syncthreads();
    if (slot >= 0) {
        const U *frames = (const U *)rb.frames;
        const int64_t per = (int64_t)K * units;
        for (int z = 0; z < 2; z++) {
            U *dst = z == 0 ? obs : next_obs;
            if (!dst) continue;
            dst += (int64_t)b * per;
            const int zero = z == 1 && zero_next;
            for (int k = 0; k < K; k++) {
                const U *from = frames + src[z][k] * units;
                U *to = dst + (int64_t)k * units;
                for (int64_t j = threadIdx.x; j < units; j += blockDim.x)
                    to[j] = zero ? rc_zero<U>() : from[j];
            }
        }
    }
    if (threadIdx.x == 0) {
        __threadfence();
        unsigned ticket = atomicAdd(misc + RC_MISC_DONE, 1u);
        if (ticket == (unsigned)B - 1) { // every block has read the stream and drawn
            __threadfence();
            uint32_t k = atomicExch(misc, 0u);
            misc[RC_MISC_DONE] = 0;
            if (rb.state->num_valid != 0) sp->offset += 2 * (uint64_t)B * ((uint64_t)k + 1);
        }
    }
}

extern "C" cudarl_status cr_replay_cuda_sample_uniform(cudarl_ctx *ctx, cr_replay_cuda *rc,
                                                       cr_rng_stream *s, int batch,
                                                       const cr_replay_batch *out) {
    if (batch < 1 || batch > rc->max_batch)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "replay (cuda): batch size %d must be in [1, %d]",
                       batch, rc->max_batch);
    cudaStream_t st = cr_stream(ctx);
    const cr_replay &rb = rc->rb;
    size_t u = copy_unit(rb.frame_bytes, rb.frames, out->obs, out->next_obs);
    int64_t units = (int64_t)(rb.frame_bytes / u);
    if (u == 16)
        k_uniform_sample<uint4><<<batch, RC_SAMPLE_THREADS, 0, st>>>(
            rc->rb, s, batch, rc->slots, rc->misc, *out, (uint4 *)out->obs,
            (uint4 *)out->next_obs, units);
    else if (u == 4)
        k_uniform_sample<uint32_t><<<batch, RC_SAMPLE_THREADS, 0, st>>>(
            rc->rb, s, batch, rc->slots, rc->misc, *out, (uint32_t *)out->obs,
            (uint32_t *)out->next_obs, units);
    else
        k_uniform_sample<uint8_t><<<batch, RC_SAMPLE_THREADS, 0, st>>>(
            rc->rb, s, batch, rc->slots, rc->misc, *out, (uint8_t *)out->obs,
            (uint8_t *)out->next_obs, units);
    CR_CUDA_LAUNCHED(ctx);
    return CUDARL_OK;
}

// ---- prioritized sampling -------------------------------------------------------------------

// One thread per draw: prio_draw and tree_find of replay_prio.c.
__global__ void k_prio_draw(cr_replay rb, const cr_rng_stream *sp, int B, int64_t *slots,
                            uint32_t *misc, cr_replay_batch out) {
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= B) return;
    if (rb.state->num_valid == 0) {
        slots[b] = -1;
        if (b == 0) atomicOr(misc + 1, CR_REPLAY_CUDA_ERR_EMPTY);
        return;
    }
    const float *t = rb.tree;
    float seg = __fdiv_rn(t[1], (float)B);
    uint32_t w = rc_word(*sp, sp->offset + (uint64_t)b);
    float u = __fmul_rn((float)(w >> 8), 1.0f / 16777216.0f);
    float x = __fmul_rn(__fadd_rn((float)b, u), seg);
    int64_t i = 1;
    while (i < rb.leaves) {
        float left = t[2 * i];
        if (x < left) i = 2 * i;
        else if (t[2 * i + 1] > 0.0f) {
            x = __fsub_rn(x, left);
            i = 2 * i + 1;
        } else {
            i = 2 * i;
        }
    }
    int64_t slot = i - rb.leaves;
    slots[b] = slot;
    rc_scalars(rb, slot, b, out);
}

// One block: the batch's smallest leaf (only with weights, as the CPU), the weights
// (leaf / min)^-beta in double, and s->offset += B.
__global__ void __launch_bounds__(RC_BLOCK)
k_prio_weights(cr_replay rb, cr_rng_stream *s, int B, const int64_t *slots, float beta,
               float *weights) {
    __shared__ float msh[RC_BLOCK];
    if (slots[0] < 0) return; // empty buffer: recorded by k_prio_draw, no advance
    const float *leaf = rb.tree + rb.leaves;
    if (weights) {
        float m = INFINITY;
        for (int b = threadIdx.x; b < B; b += blockDim.x) {
            float l = leaf[slots[b]];
            if (l < m) m = l;
        }
        msh[threadIdx.x] = m;
        __syncthreads();
        for (int h = RC_BLOCK / 2; h > 0; h >>= 1) {
            if ((int)threadIdx.x < h && msh[threadIdx.x + h] < msh[threadIdx.x])
                msh[threadIdx.x] = msh[threadIdx.x + h];
            __syncthreads();
        }
        double min_leaf = (double)msh[0], nb = -(double)beta;
        for (int b = threadIdx.x; b < B; b += blockDim.x)
            weights[b] = (float)pow((double)leaf[slots[b]] / min_leaf, nb);
    }
    if (threadIdx.x == 0) s->offset += (uint64_t)B;
}

extern "C" cudarl_status cr_replay_cuda_sample_prioritized(cudarl_ctx *ctx, cr_replay_cuda *rc,
                                                           cr_rng_stream *s, int batch,
                                                           int64_t step,
                                                           const cr_replay_batch *out) {
    if (!rc->rb.tree)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "replay (cuda): prioritized sampling needs a "
                       "buffer planned with prioritized = 1");
    if (batch < 1 || batch > rc->max_batch)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "replay (cuda): batch size %d must be in [1, %d]",
                       batch, rc->max_batch);
    cudaStream_t st = cr_stream(ctx);
    unsigned blocks = (unsigned)((batch + RC_DRAW_THREADS - 1) / RC_DRAW_THREADS);
    k_prio_draw<<<blocks, RC_DRAW_THREADS, 0, st>>>(rc->rb, s, batch, rc->slots, rc->misc, *out);
    CR_CUDA_LAUNCHED(ctx);
    launch_gather(ctx, rc, batch, out);
    float beta = cr_replay_beta(&rc->rb.spec, step);
    k_prio_weights<<<1, RC_BLOCK, 0, st>>>(rc->rb, s, batch, rc->slots, beta, out->weights);
    CR_CUDA_LAUNCHED(ctx);
    return CUDARL_OK;
}

// ---- priority updates -----------------------------------------------------------------------

// One block: refuse non-finite errors, set the leaves of sampleable slots (a later duplicate
// wins, as in the CPU's loop), refresh their ancestors, raise max_priority.
__global__ void __launch_bounds__(RC_BLOCK)
k_update_priorities(cr_replay rb, const int64_t *idx, const float *td, int n, float eps,
                    uint32_t *misc) {
    __shared__ float msh[RC_BLOCK];
    int bad = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        if (!isfinite(td[i])) bad = 1;
    if (__syncthreads_or(bad)) {
        if (threadIdx.x == 0) atomicOr(misc + 1, CR_REPLAY_CUDA_ERR_NONFINITE);
        return;
    }
    float m = rb.state->max_priority;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        int64_t s = idx[i];
        if (!rc_slot_valid(rb, s)) continue;
        float p = __fadd_rn(fabsf(td[i]), eps);
        if (p > m) m = p;
        int later = 0;
        for (int j = i + 1; j < n && !later; j++) later = idx[j] == s;
        if (!later) rb.tree[rb.leaves + s] = (float)pow((double)p, (double)rb.spec.alpha);
    }
    msh[threadIdx.x] = m;
    __syncthreads();
    for (int h = RC_BLOCK / 2; h > 0; h >>= 1) {
        if ((int)threadIdx.x < h && msh[threadIdx.x + h] > msh[threadIdx.x])
            msh[threadIdx.x] = msh[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0) rb.state->max_priority = msh[0];
    rc_refresh(rb, idx, n);
}

extern "C" cudarl_status cr_replay_cuda_update_priorities(cudarl_ctx *ctx, cr_replay_cuda *rc,
                                                          const int64_t *indices,
                                                          const float *td_errors, int n,
                                                          float eps) {
    if (!rc->rb.tree)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "replay (cuda): priority update on a buffer "
                       "planned without prioritized = 1");
    if (!(eps > 0.0f))
        return cr_fail(CUDARL_ERR_INVALID_ARG, "replay (cuda): priority eps %g must be > 0",
                       (double)eps);
    if (n < 1) return CUDARL_OK;
    k_update_priorities<<<1, RC_BLOCK, 0, cr_stream(ctx)>>>(rc->rb, indices, td_errors, n, eps,
                                                            rc->misc);
    CR_CUDA_LAUNCHED(ctx);
    return CUDARL_OK;
}

extern "C" uint32_t cr_replay_cuda_errors(cudarl_ctx *ctx, cr_replay_cuda *rc) {
    uint32_t bits = 0;
    ctx->ops->copy_to_host(ctx, &bits, rc->misc + 1, sizeof bits);
    CUDA_CHECK(cudaMemsetAsync(rc->misc + 1, 0, sizeof(uint32_t), cr_stream(ctx)));
    return bits;
}
