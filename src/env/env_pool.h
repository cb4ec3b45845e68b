/* A thread pool that steps N envs of one cudarl_env_def on the CPU, into caller-owned buffers.
 *
 * The pool batches the def: it keeps the N env states side by side in one host block (each
 * state_bytes rounded up to 64), counts each episode's steps, truncates at the def's
 * max_episode_steps (a step that also terminates sets both flags, as Gymnasium's TimeLimit),
 * and resets an env that ended in the same step (same-step autoreset, env.h): final_obs[i]
 * gets the episode's last observation and obs[i] the next episode's first. Env i is seeded
 * with (seed, first_env + i) (first_env 0 but for a rank's share of a data-parallel job), so a
 * run does not depend on the number of threads or groups.
 *
 * Envs are split into G groups (contiguous ranges), and every group into one shard per thread
 * (contiguous again, as even as possible; a group smaller than T leaves some threads idle). A
 * group is stepped with step_begin, which returns at once, and step_wait: the heterogeneous
 * split of DESIGN.md, where the CPU steps one group while the GPU runs the policy on the other:
 *
 *     loop:
 *       step_wait(A)       obs of A written; queue policy(A) -> actions of A, record event eA
 *       step_begin(A)      threads: before(A) waits for eA, then step A   (GPU: policy(A))
 *       step_wait(B)       obs of B written; queue policy(B), record eB    (CPU: stepping A)
 *       step_begin(B)      threads: wait for eB, then step B               (GPU: policy(B))
 *
 * Threads: T threads step envs. By default the calling thread is one of them: it steps shard 0
 * of a group inside step_wait (where it would otherwise only wait), and T-1 threads are spawned
 * (T = 1: everything runs inline in the caller, no thread). With caller_idle, T threads are
 * spawned and step_wait only waits. Dispatch takes no lock and allocates nothing: a C11 atomic
 * bit per (thread, group) and a countdown per group; a thread with nothing to do spins for
 * spin_us, then sleeps on a futex (Linux; elsewhere it yields), and is woken only when it slept.
 *
 * Threading contract: one thread drives a pool (begin, wait, step, reset, set_*); a group is
 * begun at most once before it is waited for; the pool struct must not move after init (the
 * workers point at it). Buffers passed to the pool are read and written by the workers between
 * step_begin and step_wait and must not be touched by the caller in between. */
#ifndef CUDARL_ENV_POOL_H
#define CUDARL_ENV_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

#define CR_ENV_POOL_MAX_GROUPS 31    /* one bit each in a thread's 32-bit to-do word */
#define CR_ENV_POOL_MAX_THREADS 1024
#define CR_ENV_POOL_SPIN_US 50       /* default spin before sleeping, microseconds */

/* Called by each thread with work in `group`, before it steps its shard, with the arg given to
 * cr_env_pool_set_hook; the actions are read only after it returns. The GPU path waits here for
 * the event that says the group's actions have landed (cudaEventSynchronize), so that workers
 * wait on the GPU, not by polling; record that event before step_begin (an event not recorded
 * yet counts as complete). May be called by several threads at once, the caller's among them
 * (in step_wait). Not called by cr_env_pool_reset. */
typedef void (*cr_env_pool_hook)(void *arg, int group);

typedef struct cr_env_pool_config {
    int num_envs;          /* N >= 1 */
    int num_threads;       /* T in 1 .. CR_ENV_POOL_MAX_THREADS, the caller included (above) */
    int num_groups;        /* G in 1 .. min(N, CR_ENV_POOL_MAX_GROUPS); 0 means 1 */
    const int *group_sizes; /* (G) envs per group, each >= 1, summing to N; NULL: even split */
    int caller_idle;       /* 1: spawn T threads; the caller never steps envs */
    int pin_threads;       /* 1: pin spawned thread k to the k-th CPU this process may run on
                            * (mod their count; the caller's lane 0 is not pinned). Off by
                            * default: pinning helps only on a machine the pool has to itself
                            * (a Jetson running nothing else), and hurts when cores are shared. */
    int spin_us;           /* spin before sleeping; 0: CR_ENV_POOL_SPIN_US, < 0: never spin */
    int64_t first_env;     /* env i is seeded as env first_env + i of a larger batch (a rank's
                            * share of a data-parallel job's envs, docs/multigpu.md); >= 0, and
                            * 0 for a vector env (which seeds itself whole) */
} cr_env_pool_config;

/* Where a step writes (host memory, typically pinned, possibly mapped for zero-copy). When an
 * episode ends the pool reads the obs row back to copy it to final_obs, so obs should not be
 * write-combined memory (cudaHostAllocWriteCombined), where reads are uncached. */
typedef struct cr_env_pool_outputs {
    void *obs;             /* (N, obs elems) of the def's dtype */
    float *reward;         /* (N) */
    uint8_t *terminated;   /* (N) 0 or 1 */
    uint8_t *truncated;    /* (N) 0 or 1 */
    void *final_obs;       /* (N, obs elems): rows of envs that ended this step; others untouched */
} cr_env_pool_outputs;

struct cr_env_pool_lane;
struct cr_env_pool_group;

typedef struct cr_env_pool {
    const cudarl_env_def *def;
    int num_envs, num_threads, num_groups;
    int64_t first_env;     /* as configured: env i is seeded with (seed, first_env + i) */
    int caller_idle;       /* as configured */
    int pin_threads;
    double spin_s;         /* spin before sleeping, seconds (0: none) */
    size_t state_stride;   /* def->state_bytes rounded up to 64 */
    size_t obs_bytes;      /* bytes of one observation */
    unsigned char *states; /* (N, state_stride) (host) */
    int32_t *elapsed;      /* (N) steps into the current episode */
    struct cr_env_pool_lane *lanes;   /* (T) one per thread stepping envs */
    struct cr_env_pool_group *groups; /* (G) */
    int threads_started;   /* spawned threads running */
    uint64_t next_seq;     /* dispatch order, so threads take groups oldest first */
    cr_env_pool_outputs out;
    float *vec_actions;    /* (N, action_dim) a continuous vector env's clipped actions */
    cr_arena arena;        /* the pool's block, when it allocated it itself */
} cr_env_pool;

/* Checks `cfg` against `def` (every field; the message names the bad one) and gives the bytes
 * of host memory the pool needs (states, step counts, per-thread and per-group records). */
cudarl_status cr_env_pool_plan(const cudarl_env_def *def, const cr_env_pool_config *cfg,
                               size_t *bytes);
/* Builds the pool in `mem` (cr_env_pool_plan bytes of host memory, 64-byte aligned, owned by
 * the caller and kept until cr_env_pool_free), or, with mem NULL, in one block it allocates
 * now and frees at cr_env_pool_free. Starts the threads; envs are not reset yet. */
cudarl_status cr_env_pool_init(cr_env_pool *pool, const cudarl_env_def *def,
                               const cr_env_pool_config *cfg, void *mem);
/* Stops and joins the threads, frees the block if the pool allocated it. No group in flight. */
void cr_env_pool_free(cr_env_pool *pool);

/* Sets the buffers every following reset and step write (all non-NULL). */
void cr_env_pool_set_outputs(cr_env_pool *pool, const cr_env_pool_outputs *out);
/* Sets the hook the threads call before stepping `group` (before NULL: none). */
void cr_env_pool_set_hook(cr_env_pool *pool, int group, cr_env_pool_hook before, void *arg);
/* Envs [*begin, *end) of `group`. */
void cr_env_pool_group_range(const cr_env_pool *pool, int group, int *begin, int *end);
/* Env i's state (host), for tests and debugging. */
void *cr_env_pool_state(cr_env_pool *pool, int i);
/* Checks every env's state and step count with cr_env_check_state (after a checkpoint was read
 * into them): -1 when all pass; else the first bad env, with *bad = 1 (its state) or 2 (its step
 * count) and what is wrong in why (cap bytes). */
int cr_env_pool_check_state(const cr_env_pool *pool, int *bad, char *why, size_t cap);

/* Seeds env i with (seed, first_env + i), starts its first episode, writes obs (N) rows; step
 * counts 0. Runs on the threads and returns when done. No hooks are called. */
void cr_env_pool_reset(cr_env_pool *pool, uint64_t seed);
/* Hands `group` to the threads and returns: they step each env i of the group with action i
 * of `actions` (host, N rows of which the group's are read): an int32 in 0 .. num_actions-1
 * (another value is a bug in the policy and aborts with a message), or for a continuous env
 * action_dim floats, clipped into the def's box before its step_box sees them. */
void cr_env_pool_step_begin(cr_env_pool *pool, int group, const void *actions);
/* Returns when `group`, begun before, has been stepped and its outputs written (the caller
 * steps its own shard here unless caller_idle). */
void cr_env_pool_step_wait(cr_env_pool *pool, int group);
/* Steps every group with actions (N) and returns when all are done. */
void cr_env_pool_step(cr_env_pool *pool, const void *actions);

#endif
