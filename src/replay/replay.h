/* Replay buffer (CPU twin): a preallocated ring of transitions whose observations are stored
 * once, with uniform and prioritized (proportional, sum-tree) sampling.
 *
 * Storage. Each of the E envs owns a sub-ring of R = capacity / E slots; env e's absolute slot
 * position p (0, 1, 2, ... counted since init) lives in slot s = e * R + p % R, so an env's
 * consecutive observations are one slot apart and the envs never interleave inside a stack.
 * heads[e] = n_e is how many slots env e has written. A slot holds one observation (a "frame":
 * frame_elems elements of float32 or uint8) plus the action, reward and flags of the transition
 * taken from it. next_obs is never stored twice: the next observation of the transition in
 * slot p is the observation in slot p + 1. The only observation that is nobody's obs is the
 * final observation of an episode, which same-step autoreset hands over separately; it is kept
 * only where the learner needs it:
 *   - truncated (and not terminated): the final observation is written into an extra FINAL slot
 *     right after the transition (flags CR_REPLAY_FINAL, never sampled), so "next = slot p + 1"
 *     still holds. The ring therefore holds capacity - (truncations in it) transitions.
 *   - terminated: nothing is stored; the TD target masks next_obs with (1 - terminated), and the
 *     sampler writes next_obs as zeros. Terminations (Atari life losses included) cost no slot.
 * Why a FINAL slot and not a side pool of final observations: memory stays exactly one
 * observation per slot with no second capacity to size, no final is ever evicted before its
 * transition, and next_obs needs the same index math as obs (+1).
 *
 * Frame stacks (stack K > 1, for pixels). Slots hold single frames (H, W); the stacked
 * observation of slot p is frames p-K+1 .. p of the same env (oldest first), and its next
 * observation the stack of slot p + 1. Episode starts are padded by repeating the episode's first
 * frame, as Gymnasium's FrameStackObservation (padding "reset") and the Atari FrameStack wrappers
 * do after reset, so a rebuilt stack equals what a FrameStack-wrapped env showed the agent.
 * Slot q starts an episode when q == 0 or slot q-1 is a terminated transition or a FINAL slot.
 * K = 1 is the plain mode: any observation shape, stored and returned whole.
 *
 * Validity. Transition p of env e (n = heads[e]) may be sampled iff
 *     lo(n) <= p <= n - 1,  slot p is not FINAL,  and (p <= n - 2 or p is terminated)
 * with lo(n) = 0 while n <= R (nothing overwritten) and lo(n) = n - R + K - 1 after: the oldest
 * kept slot is n - R, and a stack reaches back at most K - 1 slots, so no stack (or the
 * episode-start test, which reads slot q - 1) touches an overwritten slot. A non-terminated
 * transition becomes sampleable when its next observation arrives with the next insert.
 *
 * Random numbers come from cr_rng_stream words at fixed positions (see each sampler), so a GPU
 * twin draws the same samples. All memory is host memory carved from a cr_arena the caller
 * allocates from cr_replay_plan; nothing is allocated after cr_replay_init. */
#ifndef CUDARL_REPLAY_H
#define CUDARL_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CR_REPLAY_MAX_STACK 16

/* Slot flags (one byte per slot). */
#define CR_REPLAY_TERMINATED 1u
#define CR_REPLAY_TRUNCATED 2u
#define CR_REPLAY_FINAL 4u /* the final observation of a truncated episode; not a transition */

typedef enum cr_replay_dtype { CR_REPLAY_UINT8 = 0, CR_REPLAY_FLOAT32 } cr_replay_dtype;

typedef struct cr_replay_spec {
    int64_t capacity;      /* slots over all envs, a multiple of num_envs */
    int num_envs;          /* E: envs inserting one transition each per cr_replay_insert */
    int64_t frame_elems;   /* elements of one stored observation (one frame when stack > 1) */
    cr_replay_dtype dtype;
    int stack;             /* K: frames per stacked observation; 1 = plain observations */
    int prioritized;       /* keep a sum tree for cr_replay_sample_prioritized */
    float alpha;           /* priority exponent (prioritized) */
    float beta0;           /* importance-sampling exponent at step 0, annealed linearly to 1 */
    int64_t beta_steps;    /* steps over which beta reaches 1 */
    int64_t insert_stride; /* elements from one env's observation to the next in the obs and
                            * final_obs that cr_replay_insert reads: 0 means frame_elems (packed).
                            * A frame-stacked env's own (K, frame) observations go in as they
                            * are: obs + (K - 1) frame_elems (the newest frame) with stride
                            * K frame_elems, the frames stored once. */
} cr_replay_spec;

/* Counters kept with the buffers (in the arena, where a GPU twin keeps them on the device). */
typedef struct cr_replay_state {
    int64_t num_valid;     /* sampleable transitions */
    float max_priority;    /* largest |td| + eps seen so far (1 at init) */
} cr_replay_state;

typedef struct cr_replay {
    cr_replay_spec spec;
    int64_t rows;          /* R: slots per env */
    int64_t leaves;        /* L: sum-tree leaves, the power of two >= capacity (prioritized) */
    size_t frame_bytes;
    uint8_t *frames;       /* (capacity, frame_bytes) */
    int32_t *actions;      /* (capacity) */
    float *rewards;        /* (capacity) */
    uint8_t *flags;        /* (capacity) CR_REPLAY_* bits */
    int64_t *heads;        /* (E) slots written per env since init */
    float *tree;           /* (2L) tree[1] = root, tree[L + s] = priority^alpha of slot s (0 if
                              not sampleable), tree[i] = tree[2i] + tree[2i+1]; NULL if uniform */
    cr_replay_state *state;
} cr_replay;

/* Where a sampled minibatch goes: caller-owned learner buffers; a NULL field is skipped. */
typedef struct cr_replay_batch {
    void *obs;             /* (B, K, frame_elems) of the spec's dtype */
    void *next_obs;        /* (B, K, frame_elems); zeros where terminated */
    int32_t *actions;      /* (B) */
    float *rewards;        /* (B) */
    uint8_t *terminated;   /* (B) 0/1: the TD target's done mask */
    uint8_t *truncated;    /* (B) 0/1 (such transitions bootstrap from next_obs) */
    int64_t *indices;      /* (B) slots, for cr_replay_update_priorities */
    float *weights;        /* (B) importance weights (1 for uniform sampling) */
    void *window;          /* (B, K + 1, frame_elems): both stacks in one row, frames p - K + 1
                            * .. p + 1 (the last zeros where terminated): obs is entries 0 .. K-1
                            * and next_obs entries 1 .. K, read as two views with a row stride
                            * of K + 1 frames. K + 1 frames written per row instead of 2 K (with
                            * K = 4, 1,024 rows of 84x84 move 72 MB instead of 94); next_obs's
                            * entries 1 .. K-1 of a terminated row are obs's, not zeros, which the
                            * TD target's (1 - terminated) mask ignores as it ignores zeros. */
} cr_replay_batch;

/* ---- memory plan ------------------------------------------------------------------------- */

/* The fewest slots per env a replay of `stack`-frame observations may have: stack + 3. A spec's
 * capacity is at least num_envs times this (cr_replay_spec_check), and the trainers refuse a
 * --buffer-size below it before planning. */
int64_t cr_replay_min_rows(int stack);
/* Checks a spec; a bad value returns CUDARL_ERR_INVALID_ARG naming it. */
cudarl_status cr_replay_spec_check(const cr_replay_spec *spec);
/* The ranges of cudarl_replay_request's settings (cudarl_flag_ranges(CUDARL_FLAGS_REPLAY)),
 * ended by a NULL flag. */
extern const cudarl_flag_range cr_replay_flag_ranges[];
/* Bytes per slot: frame_bytes + 4 (action) + 4 (reward) + 1 (flags), + 8 with a sum tree (two
 * floats per leaf when capacity is a power of two). */
size_t cr_replay_bytes_per_transition(const cr_replay_spec *spec);
/* Bytes from one env's observation to the next in cr_replay_insert's input (insert_stride). */
size_t cr_replay_insert_stride_bytes(const cr_replay_spec *spec);
/* Appends the buffers to `plan` as consecutive items starting at plan->count (the index to give
 * cr_replay_init): frames, actions, rewards, flags, heads, state, and tree if prioritized. Total:
 *   capacity * bytes_per_transition + 8 E + sizeof(cr_replay_state)
 *   + (prioritized) 8 (L - capacity) + 64-byte alignment of each item. */
cudarl_status cr_replay_plan(const cr_replay_spec *spec, cr_plan *plan);
/* Bytes a plan of this spec alone needs (what cr_arena_alloc allocates for it). */
size_t cr_replay_plan_bytes(const cr_replay_spec *spec);
/* Largest capacity (a multiple of num_envs) whose plan fits in budget_bytes; 0 if none does. */
int64_t cr_replay_max_capacity(const cr_replay_spec *spec, size_t budget_bytes);

/* ---- lifetime, insert, sample ------------------------------------------------------------ */

/* Points rb into `arena` (host) at the items cr_replay_plan(spec) added from `first_item`, and
 * empties the buffer. rb is a host struct; it owns nothing, the arena's owner frees the memory. */
void cr_replay_init(cr_replay *rb, const cr_replay_spec *spec, const cr_arena *arena,
                    int first_item);
/* Stores one step of every env (scatter, host): obs (E, frame_elems) the observation each action
 * was taken from (the newest frame when stacking), actions (E), rewards (E), terminated (E),
 * truncated (E), final_obs (E, frame_elems) read only on rows with truncated && !terminated
 * (same-step autoreset: obs of the next call is the next episode's first observation). */
void cr_replay_insert(cr_replay *rb, const void *obs, const int32_t *actions,
                      const float *rewards, const uint8_t *terminated, const uint8_t *truncated,
                      const void *final_obs);
/* Sampleable transitions now. */
int64_t cr_replay_num_sampleable(const cr_replay *rb);
/* 1 if slot s holds a sampleable transition now (the validity rule above), else 0. */
int cr_replay_slot_valid(const cr_replay *rb, int64_t s);
/* Draws `batch` transitions uniformly, with replacement, from the sampleable ones and writes them
 * into out (gather, host). Attempt k of draw b reads stream words offset + 2 (k B + b) + {0, 1}
 * as x = w0 << 32 | w1, picks index = (x * E * Wmax) >> 64 in the box of E envs times Wmax = the
 * widest window n_e - lo(n_e), i.e. env index / Wmax at position lo(n_e) + index % Wmax, and
 * rejects it unless sampleable; the stream then advances by 2 B (1 + the most attempts any draw
 * needed). Each env adds one transition and at most one FINAL slot per step, so about half the
 * box or more is sampleable once every env has a few steps: under two attempts per draw on
 * average. Fails (INVALID_ARG) if nothing is sampleable yet or batch < 1. */
cudarl_status cr_replay_sample_uniform(const cr_replay *rb, cr_rng_stream *s, int batch,
                                       const cr_replay_batch *out);
/* Writes transition `slot` (must be sampleable) as row b of out: the gather both samplers use. */
void cr_replay_gather(const cr_replay *rb, int64_t slot, int b, const cr_replay_batch *out);

/* ---- prioritized replay (Schaul et al. 2016, proportional) -------------------------------- */

/* beta(step) = beta0 + (1 - beta0) min(1, step / beta_steps) (1 when beta_steps <= 0). */
float cr_replay_beta(const cr_replay_spec *spec, int64_t step);
/* Draws `batch` transitions with P(i) = p_i^alpha / sum_j p_j^alpha, stratified: draw b takes
 * x = ((float)b + u_b) * (root / B) in float, u_b = (stream word offset + b) >> 8, times 2^-24;
 * descends the tree (left if x < left sum, else right with x -= left sum, unless the right sum
 * is 0); the stream advances by B. Weights w_b = (N P(b))^-beta / max over the batch of the same,
 * computed as (leaf_b / min leaf in batch)^-beta in double (N and the root cancel), beta =
 * cr_replay_beta(step). Fails (INVALID_ARG) without a tree, with nothing sampleable, batch < 1. */
cudarl_status cr_replay_sample_prioritized(const cr_replay *rb, cr_rng_stream *s, int batch,
                                           int64_t step, const cr_replay_batch *out);
/* Sets the priority of slots indices (n) to p = |td_errors| + eps (leaf p^alpha, in double,
 * rounded to float) and raises max_priority; slots no longer sampleable (overwritten since they
 * were drawn) are skipped. Non-finite td errors return CUDARL_ERR_NUMERIC, eps <= 0 or no tree
 * CUDARL_ERR_INVALID_ARG, both before anything changes. */
cudarl_status cr_replay_update_priorities(cr_replay *rb, const int64_t *indices,
                                          const float *td_errors, int n, float eps);
/* Sets leaf `s` of the sum tree to v and refreshes its ancestors (host). */
void cr_replay_tree_set(cr_replay *rb, int64_t s, float v);

/* ---- checkpoints ----------------------------------------------------------------------- */

/* What a checkpoint holds of a buffer, piece by piece (cr_replay_pieces' order): frames
 * (capacity, frame_elems) of the spec's dtype, actions (capacity) int32, rewards (capacity)
 * float32, flags (capacity) uint8, heads (E) int64, num_valid (1) int64, max_priority (1)
 * float32 and, with a sum tree, its leaves (capacity) float32 (the inner nodes are sums of the
 * leaves, rebuilt on restore). Slots never written hold zeros (the arena starts zeroed), so the
 * bytes are a function of what was inserted: two runs that inserted the same transitions save
 * the same bytes. Everything the buffer holds is saved: capacity x bytes_per_transition. */
#define CR_REPLAY_PIECES 8

typedef enum cr_replay_elem {
    CR_REPLAY_ELEM_U8 = 0,
    CR_REPLAY_ELEM_I32,
    CR_REPLAY_ELEM_I64,
    CR_REPLAY_ELEM_F32,
} cr_replay_elem;

typedef struct cr_replay_piece {
    const char *name;    /* "frames", "actions", "rewards", "flags", "heads", "num_valid",
                          * "max_priority", "leaves" */
    cr_replay_elem elem;
    int64_t count;       /* elements */
    size_t bytes;
    void *data;          /* host memory: what is saved, or what a checkpoint held */
} cr_replay_piece;

/* The pieces of rb's layout into pieces (CR_REPLAY_PIECES; data NULL); returns how many: 7, or 8
 * with a sum tree. rb may be a twin's layout whose pointers are device memory: none is read. */
int cr_replay_pieces(const cr_replay *rb, cr_replay_piece *pieces);
/* Checks pieces read from a checkpoint (host, in cr_replay_pieces' order and sizes) against rb's
 * layout before any of it is used: every head between steps and 2 steps (an env's step writes
 * its transition and, when it was truncated, a FINAL slot), flags of the known combinations,
 * actions in 0 .. num_actions - 1, finite rewards (and frames, when float32), num_valid equal
 * to the sampleable slots its heads and flags give (a sampler draws until it finds one),
 * max_priority finite and >= 1, leaves finite and >= 0, and 0 wherever no transition is
 * sampleable. Returns -1 when all pass; else the index of the first bad piece, with what is
 * wrong in why (cap bytes). Reads only. */
int cr_replay_check_pieces(const cr_replay *rb, const cr_replay_piece *pieces, int64_t steps,
                           int num_actions, char *why, size_t cap);
/* Sets every inner node of tree (2 leaves floats, host) to the sum of its children, from the
 * leaves tree[leaves ..] up: what inserts and priority updates leave there, bit for bit. */
void cr_replay_tree_build(float *tree, int64_t leaves);
/* The widest sampling window over the envs with `heads` (E int64, host, any alignment: a
 * checkpoint's bytes) written slots, at least 1: the box the uniform sampler draws from
 * (cr_replay_sample_uniform's Wmax). */
int64_t cr_replay_widest_window(const cr_replay *rb, const void *heads);

#ifdef __cplusplus
}
#endif

#endif
