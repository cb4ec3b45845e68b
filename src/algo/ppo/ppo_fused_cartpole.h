/* PPO's rollout on CartPole-v1 as ONE CUDA kernel (ppo_fused_cartpole.cu): for T steps, per env,
 * policy and value forward, sampling, the env step, the bootstrap value of a finished episode's
 * last observation and the episode sums, with the weights in shared memory and the env's state
 * in registers. It computes what ppo.c's unfused rollout computes with the backend's ops (that
 * composition, on the CPU backend, is its reference; tests/gpu/test_ppo_rollout_cuda.c holds them
 * together). */
#ifndef CUDARL_PPO_FUSED_CARTPOLE_H
#define CUDARL_PPO_FUSED_CARTPOLE_H

#include <stdint.h>

#include "env/cartpole/cartpole.h"
#include "ops/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Everything the fused rollout reads and writes; every pointer is device memory. */
typedef struct cr_ppo_rollout_args {
    cr_mlp_view actor, critic;       /* tanh 4 -> 64 -> 64 -> 2 and 4 -> 64 -> 64 -> 1 */
    cr_cartpole env;                 /* N envs: state, elapsed, rng (carved from device memory) */
    float *cur_obs;                  /* (N, 4) in: the current observations; out: after T steps */
    cr_rng_stream *sampler;          /* the action sampler's stream; advanced by T N words */
    int T, N;
    float *obs, *final_obs;          /* (T, N, 4); final_obs rows only where done */
    int32_t *actions;                /* (T, N) */
    float *logp, *values, *rewards;  /* (T, N) */
    float *final_values;             /* (T, N) V(final_obs) where truncated and not terminated
                                      * (the only rows GAE bootstraps from), else 0 */
    uint8_t *terminated, *truncated, *done; /* (T, N) */
    float *last_values;              /* (N) V(cur_obs) after the last step */
    double *ep_return;               /* (N) running episode returns, carried across calls */
    int64_t *ep_length;              /* (N) */
    double *fin_return;              /* (T, N) scratch: the return of the episode ending there */
    int32_t *fin_length;             /* (T, N) scratch: its length */
    cr_episode_log *log;             /* finished episodes are pushed here, in (t, n) order */
} cr_ppo_rollout_args;

/* One step of a group of envs stepped on CPU threads (ppo_pool.c) as one kernel: takes in the
 * outputs of step t_absorb the threads wrote (rewards, flags, episode sums, V(final obs) of
 * truncations), then the policy of step t_act on the observations they wrote, with the action
 * written both to the rollout and to the host buffer the threads read. The host buffers are
 * pinned and mapped (the device reads and writes them in place, no copies); all are rows
 * [b, b + n) of N. Every value is what the fused rollout computes for the same env and step
 * (the same device code and stream words: word offset + t N + n, the offset advanced only by
 * cr_ppo_pool_rollout_cuda_end). */
typedef struct cr_ppo_pool_step_args {
    cr_mlp_view actor, critic;       /* as cr_ppo_rollout_args */
    const cr_rng_stream *sampler;    /* read, not advanced */
    int N, b, n;                     /* envs [b, b + n) of N */
    int t_absorb;                    /* step whose outputs to take in; -1: none */
    int t_act;                       /* step to act on; -1: none (then, with last_values, the
                                      * rollout's end: last_values and cur_obs rows are set) */
    /* host buffers, as the device addresses them (mapped pinned memory), (N, 4) or (N) */
    const float *h_obs, *h_final_obs, *h_reward;
    const uint8_t *h_terminated, *h_truncated;
    int32_t *h_actions;
    /* device: (T, N) rollout rows as cr_ppo_rollout_args, (N) running sums and end values */
    float *obs, *final_obs;
    int32_t *actions;
    float *logp, *values, *rewards, *final_values;
    uint8_t *terminated, *truncated, *done;
    double *ep_return;
    int64_t *ep_length;
    double *fin_return;
    int32_t *fin_length;
    float *last_values, *cur_obs;    /* (N) and (N, 4), or NULL */
} cr_ppo_pool_step_args;

/* Queues one pool step (graph-capturable, allocates nothing). */
void cr_ppo_pool_step_cuda(cudarl_ctx *ctx, const cr_ppo_pool_step_args *a);
/* After a rollout's steps: advances the sampler by T N words and logs the finished episodes in
 * (t, n) order, as the fused rollout does. */
void cr_ppo_pool_rollout_cuda_end(cudarl_ctx *ctx, cr_rng_stream *sampler, int T, int N,
                                  const uint8_t *done, const double *fin_return,
                                  const int32_t *fin_length, cr_episode_log *log);

/* Whether the fused rollout takes these networks (the shapes of cr_ppo_fused_shape_ok, 4 obs). */
int cr_ppo_rollout_cuda_shape_ok(const cr_mlp_view *actor, const cr_mlp_view *critic);
/* Queues the rollout on the context's stream (graph-capturable, allocates nothing). */
void cr_ppo_rollout_cuda(cudarl_ctx *ctx, const cr_ppo_rollout_args *a);

#ifdef __cplusplus
}
#endif
#endif
