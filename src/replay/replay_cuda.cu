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
// over the envs (uint64, published by every insert), [4] blocks of a fused sample finished so
// far, [5] blocks of an insert finished so far, [6..7] the insert's running widest window (uint64,
// 1 between inserts), [8] leaves the insert touched so far
#define RC_MISC_WORDS 12
#define RC_MISC_WMAX 2
#define RC_MISC_DONE 4
#define RC_MISC_INSERTS 5
#define RC_MISC_WACC 6
#define RC_MISC_NTOUCHED 8

// ---- positions and validity (replay.c) ------------------------------------------------------

__device__ __forceinline__ int64_t rc_slot_of(const cr_replay &rb, int e, int64_t p) {
    return (int64_t)e * rb.rows + p % rb.rows;
}

__device__ __forceinline__ int64_t rc_window_lo(const cr_replay &rb, int64_t n) {
    return n <= rb.rows ? 0 : n - rb.rows + rb.spec.stack - 1;
}

// Position p of an env with head n is sampleable, given its slot's flags f (replay.c's valid_at).
__device__ __forceinline__ int rc_valid_given(const cr_replay &rb, int64_t p, int64_t n,
                                              uint8_t f) {
    if (p < rc_window_lo(rb, n) || p > n - 1 || (f & CR_REPLAY_FINAL)) return 0;
    return p <= n - 2 || (f & CR_REPLAY_TERMINATED);
}

__device__ int rc_valid_at(const cr_replay &rb, int e, int64_t p, int64_t n) {
    if (p < rc_window_lo(rb, n) || p > n - 1) return 0;
    return rc_valid_given(rb, p, n, rb.flags[rc_slot_of(rb, e, p)]);
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
// A thread keeps up to RC_REFRESH_HELD of its leaves in registers and, per level, loads every
// child pair before it stores a parent: the levels are a chain of dependent loads (21 for a 1M
// buffer), so each level should cost one round trip to L2, not one per leaf. Reads go through L2
// (__ldcg): leaves set by other blocks of the same launch (insert's last block) are read here.
#define RC_REFRESH_HELD 8
__device__ void rc_refresh(const cr_replay &rb, const int64_t *leaves, int count) {
    float *t = rb.tree;
    const int64_t L = rb.leaves;
    int64_t held[RC_REFRESH_HELD];
#pragma unroll
    for (int k = 0; k < RC_REFRESH_HELD; k++) {
        int i = threadIdx.x + k * blockDim.x;
        int64_t s = i < count ? __ldcg(leaves + i) : -1;
        held[k] = s >= 0 && s < rb.spec.capacity ? L + s : 0; // 0: no leaf
    }
    const int rest = RC_REFRESH_HELD * blockDim.x; // entries past the held ones: loop
    for (int64_t span = 2; span <= L; span *= 2) {
        __syncthreads();
        int lv = __ffsll((long long)span) - 1;
        float v[RC_REFRESH_HELD];
#pragma unroll
        for (int k = 0; k < RC_REFRESH_HELD; k++) {
            int64_t node = held[k] >> lv;
            v[k] = node ? __fadd_rn(__ldcg(t + 2 * node), __ldcg(t + 2 * node + 1)) : 0.0f;
        }
#pragma unroll
        for (int k = 0; k < RC_REFRESH_HELD; k++)
            if (held[k] >> lv) t[held[k] >> lv] = v[k];
        for (int i = rest + threadIdx.x; i < count; i += blockDim.x) {
            int64_t s = __ldcg(leaves + i);
            if (s < 0 || s >= rb.spec.capacity) continue;
            int64_t node = (L + s) >> lv;
            t[node] = __fadd_rn(__ldcg(t + 2 * node), __ldcg(t + 2 * node + 1));
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
static size_t copy_unit(size_t frame_bytes, const void *a, const void *b, const void *c,
                        const void *d = NULL) {
    const size_t units[2] = {16, 4};
    for (int i = 0; i < 2; i++) {
        size_t u = units[i];
        if (frame_bytes % u == 0 && aligned(a, u) && aligned(b, u) && aligned(c, u) &&
            aligned(d, u))
            return u;
    }
    return 1;
}

// ---- init -----------------------------------------------------------------------------------

__global__ void k_init_state(cr_replay_state *st, uint32_t *misc) {
    st->num_valid = 0;
    st->max_priority = 1.0f;
    *(unsigned long long *)(misc + RC_MISC_WMAX) = 1; // no env has a window yet: 1, as the draw's floor
    *(unsigned long long *)(misc + RC_MISC_WACC) = 1;
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

__global__ void k_set_window(uint32_t *misc, unsigned long long wmax) {
    *(unsigned long long *)(misc + RC_MISC_WMAX) = wmax;
}

extern "C" void cr_replay_cuda_set_window(cudarl_ctx *ctx, cr_replay_cuda *rc, int64_t wmax) {
    k_set_window<<<1, 1, 0, cr_stream(ctx)>>>(rc->misc, (unsigned long long)wmax);
    CR_CUDA_LAUNCHED(ctx);
}

// ---- launch shapes --------------------------------------------------------------------------

// Insert and the samplers run RC_THREADS-thread blocks, each owning `per` envs (insert) or rows
// (samplers) and, for small batches, a part (grid.y) of their frames. The work of one env or row
// starts with a chain of dependent loads on one thread (heads, flags; the draw); a block that
// owned one env or row and held its threads through that chain ran the kernel in several waves
// of such chains (as a block of 448 threads per env did). Here
// the chains of a block's envs run side by side on its first warps, every block fits in one wave
// for the benchmark's sizes, and then all the block's threads copy.
#define RC_THREADS 256
#define RC_PER_MAX (RC_THREADS / 32) // one warp per env or row for its chain
#ifndef RC_BLOCKS_TARGET
#define RC_BLOCKS_TARGET 256         // blocks a launch aims at: about two per SM
#endif
#define RC_CHUNK_UNITS 128           // fewest units a part of a row's frames (grid.y) copies

typedef struct rc_shape {
    unsigned blocks, parts; // grid (blocks, parts)
    int per;                // envs or rows per block
} rc_shape;

// n envs or rows of `units` copy units each; parts > 1 only with one per block.
static rc_shape rc_shape_of(int64_t n, int64_t units) {
    rc_shape sh;
    int64_t per = n / RC_BLOCKS_TARGET;
    sh.per = per < 1 ? 1 : per > RC_PER_MAX ? RC_PER_MAX : (int)per;
    int64_t blocks = (n + sh.per - 1) / sh.per;
    sh.blocks = (unsigned)(blocks < 65535 ? blocks : 65535); // kernels stride over the rest
    int64_t parts = 1;
    if (sh.per == 1) {
        parts = (RC_BLOCKS_TARGET + blocks - 1) / blocks;
        int64_t most = (units + RC_CHUNK_UNITS - 1) / RC_CHUNK_UNITS;
        if (parts > most) parts = most;
        if (parts < 1) parts = 1;
    }
    sh.parts = (unsigned)parts;
    return sh;
}

// ---- insert ---------------------------------------------------------------------------------

// One launch: block x owns envs [x per, x per + per) (then strides by the grid); warp i's lane 0
// does insert_env for env i of the block (replay.c's steps, the CPU's order within the env) and
// moves that env's head only after reading the old one into shared memory, where the block's
// copy of the frames (and final frames) reads it. Sums over envs go to global atomics
// (num_valid, the touched-leaf count, the widest window's accumulator); the last block to finish
// (a ticket) publishes the widest window, resets the accumulators and, with a tree, refreshes the
// touched leaves' ancestors.
template <typename U>
__global__ void __launch_bounds__(RC_THREADS)
k_insert(cr_replay rb, int64_t *touched, const U *__restrict__ obs,
         const U *__restrict__ final_obs, const int32_t *actions, const float *rewards,
         const uint8_t *term, const uint8_t *trunc, uint32_t *misc, int64_t units,
         int64_t src_units, int per) {
    __shared__ int64_t old_sh[RC_PER_MAX];
    __shared__ int end_sh[RC_PER_MAX];
    __shared__ int last;
    U *__restrict__ frames = (U *)rb.frames;
    const int E = rb.spec.num_envs;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    unsigned long long wm = 1;
    for (int base = blockIdx.x * per; base < E; base += gridDim.x * per) {
        const int here = E - base < per ? E - base : per;
        __syncthreads(); // the previous round's copy is done with old_sh
        const int e = base + warp;
        const int mine = lane == 0 && warp < here; // this thread runs env e's chain
        int64_t old = 0;
        int end = 0;
        if (mine) {
            old = rb.heads[e];
            end = trunc[e] && !term[e] && final_obs;
            old_sh[warp] = old, end_sh[warp] = end;
        }
        __syncthreads();
        if (mine) {
            float leafv = rb.tree ? (float)pow((double)rb.state->max_priority,
                                               (double)rb.spec.alpha)
                                  : 0.0f;
            int64_t tl[RC_TOUCH_PER_ENV];
            int nt = 0;
            long long my = 0;
            uint8_t f = (uint8_t)((term[e] ? CR_REPLAY_TERMINATED : 0) |
                                  (trunc[e] ? CR_REPLAY_TRUNCATED : 0));
            int64_t n = old + 1 + end;
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
                int was = p < old && rc_valid_at(rb, e, p, old); // slot p untouched above: R > 3
                int now = rc_valid_at(rb, e, p, n);
                if (now != was) {
                    int64_t s = rc_slot_of(rb, e, p);
                    my += now ? 1 : -1;
                    if (rb.tree) rb.tree[rb.leaves + s] = now ? leafv : 0.0f, tl[nt++] = s;
                }
            }
            if (my) atomicAdd((unsigned long long *)&rb.state->num_valid, (unsigned long long)my);
            if (nt) { // the order of the touched list varies, the refreshed tree does not
                int at = (int)atomicAdd(misc + RC_MISC_NTOUCHED, (uint32_t)nt);
                for (int k = 0; k < nt; k++) touched[at + k] = tl[k];
            }
            unsigned long long w = (unsigned long long)(n - rc_window_lo(rb, n));
            if (w > wm) wm = w;
        }
        // every thread: unit j of env i's frame (and final frame), all the block's envs at once
        const int64_t total = (int64_t)here * units;
        for (int64_t idx = threadIdx.x; idx < total; idx += blockDim.x) {
            const int i = (int)(idx / units);
            const int64_t j = idx - (int64_t)i * units, o = old_sh[i];
            const int64_t src = (int64_t)(base + i) * src_units + j;
            U a = obs[src];
            __stcs(frames + rc_slot_of(rb, base + i, o) * units + j, a);
            if (end_sh[i]) __stcs(frames + rc_slot_of(rb, base + i, o + 1) * units + j, final_obs[src]);
        }
    }
    if (lane == 0 && wm > 1) atomicMax((unsigned long long *)(misc + RC_MISC_WACC), wm);
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        last = atomicAdd(misc + RC_MISC_INSERTS, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    // every other block's leaves, touched list and atomics are visible (fence, then ticket)
    __threadfence();
    const int ntouched = (int)__ldcg(misc + RC_MISC_NTOUCHED);
    __syncthreads(); // every thread has read the count before thread 0 clears it
    if (threadIdx.x == 0) {
        unsigned long long *acc = (unsigned long long *)(misc + RC_MISC_WACC);
        *(unsigned long long *)(misc + RC_MISC_WMAX) = __ldcg(acc);
        *acc = 1; // the draw's floor, as k_init_state
        misc[RC_MISC_INSERTS] = 0;
        misc[RC_MISC_NTOUCHED] = 0;
    }
    if (rb.tree) rc_refresh(rb, touched, ntouched);
}

extern "C" void cr_replay_cuda_insert(cudarl_ctx *ctx, cr_replay_cuda *rc, const void *obs,
                                      const int32_t *actions, const float *rewards,
                                      const uint8_t *terminated, const uint8_t *truncated,
                                      const void *final_obs) {
    const cr_replay &rb = rc->rb;
    cudaStream_t st = cr_stream(ctx);
    const size_t stride = cr_replay_insert_stride_bytes(&rb.spec);
    size_t u = copy_unit(rb.frame_bytes, rb.frames, obs, final_obs);
    while (stride % u) u /= 4; // 16, 4, 1: the envs' rows start on units too
    int64_t units = (int64_t)(rb.frame_bytes / u), src_units = (int64_t)(stride / u);
    rc_shape sh = rc_shape_of(rb.spec.num_envs, units);
    if (u == 16)
        k_insert<uint4><<<sh.blocks, RC_THREADS, 0, st>>>(
            rb, rc->touched, (const uint4 *)obs, (const uint4 *)final_obs, actions, rewards,
            terminated, truncated, rc->misc, units, src_units, sh.per);
    else if (u == 4)
        k_insert<uint32_t><<<sh.blocks, RC_THREADS, 0, st>>>(
            rb, rc->touched, (const uint32_t *)obs, (const uint32_t *)final_obs, actions, rewards,
            terminated, truncated, rc->misc, units, src_units, sh.per);
    else
        k_insert<uint8_t><<<sh.blocks, RC_THREADS, 0, st>>>(
            rb, rc->touched, (const uint8_t *)obs, (const uint8_t *)final_obs, actions, rewards,
            terminated, truncated, rc->misc, units, src_units, sh.per);
    CR_CUDA_LAUNCHED(ctx);
}

// ---- gather (both samplers) -----------------------------------------------------------------

// What a sampled row's copy needs, kept in shared memory by the row's warp.
typedef struct rc_row {
    int64_t slot;                         // the sampled slot (position p)
    int64_t win[CR_REPLAY_MAX_STACK + 1]; // slots of positions p - K + 1 .. p + 1, clamped
    int zero_next;                        // terminated: next_obs is zeros
    int ok;                               // a slot was drawn
} rc_row;

// Lane j < K of a warp: the flags of env e's position p - j (0 before the env's first position):
// one round of loads gives a drawn position's validity (lane 0) and its stack's episode stops.
__device__ __forceinline__ uint8_t rc_lane_flags(const cr_replay &rb, int e, int64_t p) {
    const int lane = threadIdx.x % 32;
    return lane < rb.spec.stack && p - lane >= 0 ? rb.flags[rc_slot_of(rb, e, p - lane)] : 0;
}

// The frames of slot s (env e, position p; -1: none drawn) as cr_replay_gather's stack walk
// reads them, from the warp's rc_lane_flags f (every lane calls it with the same s, e, p). Both
// stacks are windows of one run of positions: obs takes p - K + 1 .. p and next_obs
// p - K + 2 .. p + 1, each clamped to the episode's first position, which is the same for both
// (p + 1 starts an episode only after a terminated p, whose next_obs is zeros). Lane j < K - 1
// knows whether p - j starts the episode (lane j + 1 holds the flags before it); a ballot gives
// how far back the stack reaches, so the K + 1 slots need no walk of dependent loads.
__device__ void rc_row_window(const cr_replay &rb, int64_t s, int e, int64_t p, uint8_t f,
                              rc_row *row) {
    const int K = rb.spec.stack, lane = threadIdx.x % 32;
    const uint8_t before = __shfl_down_sync(0xffffffffu, f, 1); // flags of p - lane - 1
    const int first = lane < K - 1 &&
                      (p - lane <= 0 || (before & (CR_REPLAY_TERMINATED | CR_REPLAY_FINAL)));
    const unsigned stops = __ballot_sync(0xffffffffu, first);
    if (s < 0) {
        if (lane == 0) row->ok = 0;
        return;
    }
    const int64_t lo = p - (stops ? __ffs((int)stops) - 1 : K - 1); // the earliest position used
    if (lane <= K) {
        int64_t q = p - K + 1 + lane;
        row->win[lane] = rc_slot_of(rb, e, q < lo ? lo : q);
    }
    if (lane == 0) row->slot = s, row->zero_next = (f & CR_REPLAY_TERMINATED) != 0, row->ok = 1;
}

// Unit j of row b's obs, next_obs and window (NULL: skipped) from its window: obs frame k is
// window entry k, next_obs frame k entry k + 1, and the window row (K + 1 frames) all of them,
// its last entry zeros where next_obs is. The loads of RC_STAGE + 1 entries are issued before
// any store (pointers restrict: the compiler need not order them behind the stores). Frames
// are read and the batch written evict-first (__ldcs, __stcs): neither is reused soon, and the
// flags and heads the next draws read stay in L2.
#define RC_STAGE 4
template <typename U>
__device__ __forceinline__ void rc_copy_unit(const U *__restrict__ frames, const rc_row *row,
                                             int K, int64_t units, int64_t j, U *__restrict__ o,
                                             U *__restrict__ x, U *__restrict__ w) {
    const int load_next = (x || w) && !row->zero_next;
    for (int k0 = 0; k0 < K; k0 += RC_STAGE) {
        U v[RC_STAGE + 1];
#pragma unroll
        for (int i = 0; i <= RC_STAGE; i++) {
            v[i] = rc_zero<U>();
            const int k = k0 + i; // obs needs entries < K, next_obs entries 1 .. K
            if (k <= K && (((o || w) && k < K) || (load_next && k > 0)))
                v[i] = __ldcs(frames + row->win[k] * units + j);
        }
#pragma unroll
        for (int i = 0; i < RC_STAGE; i++) {
            const int k = k0 + i;
            if (k >= K) break;
            const U next = load_next ? v[i + 1] : rc_zero<U>();
            if (o) __stcs(o + (int64_t)k * units + j, v[i]);
            if (x) __stcs(x + (int64_t)k * units + j, next);
            if (w) __stcs(w + (int64_t)k * units + j, v[i]);
            if (w && k == K - 1) __stcs(w + (int64_t)K * units + j, next);
        }
    }
}

// The block's part of rows [base, base + here): every thread copies units of every row. With
// K <= RC_STAGE a thread loads the windows of two units before it stores either (2 (K + 1) loads
// in flight: one unit's were too few to keep the memory system busy at B = 1,024).
template <typename U>
__device__ __forceinline__ void rc_copy_rows(const cr_replay &rb, const rc_row *rows, int base,
                                             int here, U *obs, U *next_obs, U *window,
                                             int64_t units) {
    const int K = rb.spec.stack;
    const int64_t per = (int64_t)K * units, wper = (int64_t)(K + 1) * units;
    const U *__restrict__ frames = (const U *)rb.frames;
    const int64_t j0 = units * blockIdx.y / gridDim.y, j1 = units * (blockIdx.y + 1) / gridDim.y;
    const int64_t len = j1 - j0, total = (int64_t)here * len;
    if (K > RC_STAGE) {
        for (int64_t idx = threadIdx.x; idx < total; idx += blockDim.x) {
            const int i = (int)(idx / len);
            if (!rows[i].ok) continue;
            const int64_t j = j0 + (idx - (int64_t)i * len), b = base + i;
            rc_copy_unit(frames, &rows[i], K, units, j, obs ? obs + b * per : NULL,
                         next_obs ? next_obs + b * per : NULL,
                         window ? window + b * wper : NULL);
        }
        return;
    }
    for (int64_t idx0 = threadIdx.x; idx0 < total; idx0 += 2 * (int64_t)blockDim.x) {
        U v[2][RC_STAGE + 1];
        const rc_row *r[2] = {NULL, NULL};
        int64_t j[2] = {0, 0}, b[2] = {0, 0};
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int64_t idx = idx0 + h * (int64_t)blockDim.x;
            if (idx >= total) break;
            const int i = (int)(idx / len);
            if (!rows[i].ok) continue;
            r[h] = &rows[i], j[h] = j0 + (idx - (int64_t)i * len), b[h] = base + i;
            const int load_next = (next_obs || window) && !r[h]->zero_next;
#pragma unroll
            for (int k = 0; k <= RC_STAGE; k++) {
                v[h][k] = rc_zero<U>();
                if (k <= K && (((obs || window) && k < K) || (load_next && k > 0)))
                    v[h][k] = __ldcs(frames + r[h]->win[k] * units + j[h]);
            }
        }
#pragma unroll
        for (int h = 0; h < 2; h++) {
            if (!r[h]) continue;
            U *__restrict__ o = obs ? obs + b[h] * per : NULL;
            U *__restrict__ x = next_obs ? next_obs + b[h] * per : NULL;
            U *__restrict__ w = window ? window + b[h] * wper : NULL;
            const int load_next = !r[h]->zero_next;
#pragma unroll
            for (int k = 0; k <= RC_STAGE; k++) {
                if (k > K) break;
                if (k < K && o) __stcs(o + (int64_t)k * units + j[h], v[h][k]);
                if (k < K && x)
                    __stcs(x + (int64_t)k * units + j[h], load_next ? v[h][k + 1] : rc_zero<U>());
                if (w) __stcs(w + (int64_t)k * units + j[h], k < K || load_next ? v[h][k] : rc_zero<U>());
            }
        }
    }
}

// Prioritized sampling's copy: rows whose slots k_prio_draw wrote; warp i of block x takes row
// x per + i (then the grid strides), blockIdx.y its part of the frames.
template <typename U>
__global__ void __launch_bounds__(RC_THREADS)
k_gather(cr_replay rb, const int64_t *slots, int B, U *obs, U *next_obs, U *window,
         int64_t units, int per) {
    __shared__ rc_row rows[RC_PER_MAX];
    const int warp = threadIdx.x / 32;
    for (int base = blockIdx.x * per; base < B; base += gridDim.x * per) {
        const int here = B - base < per ? B - base : per;
        __syncthreads();
        if (warp < here) {
            int64_t s = slots[base + warp], p = 0;
            int e = 0;
            uint8_t f = 0;
            if (s >= 0) {
                e = (int)(s / rb.rows);
                int64_t q = s % rb.rows, n = rb.heads[e];
                p = q + (n - 1 - q) / rb.rows * rb.rows;
                f = rc_lane_flags(rb, e, p);
            }
            rc_row_window(rb, s, e, p, f, &rows[warp]);
        }
        __syncthreads();
        rc_copy_rows(rb, rows, base, here, obs, next_obs, window, units);
    }
}

static void launch_gather(cudarl_ctx *ctx, const cr_replay_cuda *rc, int B,
                          const cr_replay_batch *out) {
    if (!out->obs && !out->next_obs && !out->window) return;
    const cr_replay &rb = rc->rb;
    size_t u = copy_unit(rb.frame_bytes, rb.frames, out->obs, out->next_obs, out->window);
    int64_t units = (int64_t)(rb.frame_bytes / u);
    rc_shape sh = rc_shape_of(B, units);
    dim3 grid(sh.blocks, sh.parts);
    cudaStream_t st = cr_stream(ctx);
    if (u == 16)
        k_gather<uint4><<<grid, RC_THREADS, 0, st>>>(
            rb, rc->slots, B, (uint4 *)out->obs, (uint4 *)out->next_obs,
            (uint4 *)out->window, units, sh.per);
    else if (u == 4)
        k_gather<uint32_t><<<grid, RC_THREADS, 0, st>>>(
            rb, rc->slots, B, (uint32_t *)out->obs, (uint32_t *)out->next_obs,
            (uint32_t *)out->window, units, sh.per);
    else
        k_gather<uint8_t><<<grid, RC_THREADS, 0, st>>>(
            rb, rc->slots, B, (uint8_t *)out->obs, (uint8_t *)out->next_obs,
            (uint8_t *)out->window, units, sh.per);
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

// The whole uniform sample in one launch (three launches cost more than the copies at 32 rows):
// warp i of block x takes row b = x per + i (then the grid strides); with one row per block,
// blocks (x, y) share the row, each copying part y of its frames.
//   lane 0 draws row b as the CPU's cr_replay_sample_uniform does (every part's block makes the
//   same loads and arithmetic, so they agree): attempts k = 0, 1, ... of word pairs
//   2 (k B + b) until a sampleable slot, over the widest window of the envs (read from misc,
//   kept by every insert, rather than a scan of every env's head); part 0 writes the scalars;
//   rc_row_window finds the row's K + 1 frames, rc_copy_rows copies the block's part;
//   the last block to finish (a ticket in misc) advances the stream by 2 B (1 + the most
//   attempts of any row), as the CPU does.
// The slots, scalars, frames and stream offset are the CPU's, bit for bit (test_replay_cuda).
template <typename U>
__global__ void __launch_bounds__(RC_THREADS)
k_uniform_sample(cr_replay rb, cr_rng_stream *sp, int B, int64_t *slots, uint32_t *misc,
                 cr_replay_batch out, U *obs, U *next_obs, U *window, int64_t units, int per) {
    __shared__ rc_row rows[RC_PER_MAX];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int lead = blockIdx.y == 0;
    const cr_rng_stream s = *sp;
    const int64_t num_valid = rb.state->num_valid;
    const uint64_t wmax = *(const unsigned long long *)(misc + RC_MISC_WMAX);
    uint32_t most = 0; // the most attempts of this warp's rows
    for (int base = blockIdx.x * per; base < B; base += gridDim.x * per) {
        const int here = B - base < per ? B - base : per;
        __syncthreads();
        if (warp < here) {
            const int b = base + warp;
            int64_t slot = -1, p = 0;
            int e = 0;
            uint8_t f = 0;
            if (num_valid != 0) { // attempt k: lane 0 draws, the warp loads its flags
                const uint64_t box = (uint64_t)rb.spec.num_envs * wmax;
                for (uint32_t k = 0;; k++) {
                    int64_t n = 0;
                    if (lane == 0) {
                        uint64_t w = s.offset + 2 * ((uint64_t)k * (uint64_t)B + (uint64_t)b);
                        uint64_t x = (uint64_t)rc_word(s, w) << 32 | rc_word(s, w + 1);
                        uint64_t idx = __umul64hi(x, box);
                        e = (int)(idx / wmax);
                        n = rb.heads[e];
                        p = rc_window_lo(rb, n) + (int64_t)(idx % wmax);
                    }
                    e = __shfl_sync(0xffffffffu, e, 0);
                    p = __shfl_sync(0xffffffffu, p, 0);
                    f = rc_lane_flags(rb, e, p);
                    if (__shfl_sync(0xffffffffu, lane == 0 && rc_valid_given(rb, p, n, f), 0)) {
                        slot = rc_slot_of(rb, e, p);
                        if (k > most) most = k;
                        break;
                    }
                }
            }
            rc_row_window(rb, slot, e, p, f, &rows[warp]);
            if (lane == 0 && lead && most) atomicMax(misc, most);
        }
        __syncthreads();
        // The block's last draw is done: its ticket now, before the copy (the ticket's fence
        // then waits for no frame stores). The last block advances the stream by 2 B (1 + the
        // most attempts of any row), as the CPU does; every block has read it by then.
        if (threadIdx.x == 0 && base + (int)gridDim.x * per >= B) {
            if (num_valid == 0 && blockIdx.x == 0 && lead)
                atomicOr(misc + 1, CR_REPLAY_CUDA_ERR_EMPTY);
            __threadfence();
            unsigned ticket = atomicAdd(misc + RC_MISC_DONE, 1u);
            if (ticket == gridDim.x * gridDim.y - 1) {
                __threadfence();
                uint32_t k = atomicExch(misc, 0u);
                misc[RC_MISC_DONE] = 0;
                if (num_valid != 0) sp->offset += 2 * (uint64_t)B * ((uint64_t)k + 1);
            }
        }
        rc_copy_rows(rb, rows, base, here, obs, next_obs, window, units);
        if (warp < here && lane == 0 && lead) { // after the copy: nothing waits for these
            const int b = base + warp;
            const int64_t slot = rows[warp].ok ? rows[warp].slot : -1;
            slots[b] = slot;
            if (slot >= 0) {
                rc_scalars(rb, slot, b, out);
                if (out.weights) out.weights[b] = 1.0f;
            }
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
    size_t u = copy_unit(rb.frame_bytes, rb.frames, out->obs, out->next_obs, out->window);
    int64_t units = (int64_t)(rb.frame_bytes / u);
    rc_shape sh = rc_shape_of(batch, units);
    if (!out->obs && !out->next_obs && !out->window) sh.parts = 1;
    dim3 grid(sh.blocks, sh.parts);
    if (u == 16)
        k_uniform_sample<uint4><<<grid, RC_THREADS, 0, st>>>(
            rc->rb, s, batch, rc->slots, rc->misc, *out, (uint4 *)out->obs,
            (uint4 *)out->next_obs, (uint4 *)out->window, units, sh.per);
    else if (u == 4)
        k_uniform_sample<uint32_t><<<grid, RC_THREADS, 0, st>>>(
            rc->rb, s, batch, rc->slots, rc->misc, *out, (uint32_t *)out->obs,
            (uint32_t *)out->next_obs, (uint32_t *)out->window, units, sh.per);
    else
        k_uniform_sample<uint8_t><<<grid, RC_THREADS, 0, st>>>(
            rc->rb, s, batch, rc->slots, rc->misc, *out, (uint8_t *)out->obs,
            (uint8_t *)out->next_obs, (uint8_t *)out->window, units, sh.per);
    CR_CUDA_LAUNCHED(ctx);
    return CUDARL_OK;
}

// ---- prioritized sampling -------------------------------------------------------------------

#define RC_DRAW_THREADS 256

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

// cr_replay_beta(spec, step) on the device: the same double operations, each rounded once.
__device__ float rc_beta(const cr_replay_spec &sp, int64_t step) {
    if (sp.beta_steps <= 0) return 1.0f;
    double f = __ddiv_rn((double)step, (double)sp.beta_steps);
    if (f > 1.0) f = 1.0;
    if (f < 0.0) f = 0.0;
    return (float)__dadd_rn((double)sp.beta0, __dmul_rn(__dsub_rn(1.0, (double)sp.beta0), f));
}

// One block: the batch's smallest leaf (only with weights, as the CPU), the weights
// (leaf / min)^-beta in double, and s->offset += B. beta is the argument, or with `step` (device)
// cr_replay_beta of *step, computed here.
__global__ void __launch_bounds__(RC_BLOCK)
k_prio_weights(cr_replay rb, cr_rng_stream *s, int B, const int64_t *slots, float beta,
               const int64_t *step, float *weights) {
    __shared__ float msh[RC_BLOCK];
    if (slots[0] < 0) return; // empty buffer: recorded by k_prio_draw, no advance
    if (step) beta = rc_beta(rb.spec, *step);
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

// Both prioritized samplers: beta from the host, or (step_dev) from the device's step counter.
static cudarl_status sample_prioritized(cudarl_ctx *ctx, cr_replay_cuda *rc, cr_rng_stream *s,
                                        int batch, float beta, const int64_t *step_dev,
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
    k_prio_weights<<<1, RC_BLOCK, 0, st>>>(rc->rb, s, batch, rc->slots, beta, step_dev,
                                           out->weights);
    CR_CUDA_LAUNCHED(ctx);
    return CUDARL_OK;
}

extern "C" cudarl_status cr_replay_cuda_sample_prioritized(cudarl_ctx *ctx, cr_replay_cuda *rc,
                                                           cr_rng_stream *s, int batch,
                                                           int64_t step,
                                                           const cr_replay_batch *out) {
    return sample_prioritized(ctx, rc, s, batch, cr_replay_beta(&rc->rb.spec, step), NULL, out);
}

extern "C" cudarl_status cr_replay_cuda_sample_prioritized_at(cudarl_ctx *ctx,
                                                              cr_replay_cuda *rc,
                                                              cr_rng_stream *s, int batch,
                                                              const int64_t *step,
                                                              const cr_replay_batch *out) {
    return sample_prioritized(ctx, rc, s, batch, 0.0f, step, out);
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
