/* The PPO trainer's state, shared by the training loop and its checkpoint code. */
#ifndef CUDARL_PPO_INTERNAL_H
#define CUDARL_PPO_INTERNAL_H

#include <pthread.h>
#include <stdio.h>

#include "algo/amp.h"
#include "env/env.h"
#include "env/env_pool.h"
#include "env/image_twin.h"
#include "nn/actor_critic.h"
#include "nn/cnn.h"
#include "nn/convnet.h"
#include "ops/backend.h"
#include "io/tensorboard.h"

/* Streams of the seed's Philox key: envs use 0 .. N-1, these sit far above. */
#define CR_STREAM_SAMPLER (1ull << 40)
#define CR_STREAM_SHUFFLE ((1ull << 40) + 1)
#define CR_STREAM_INIT ((1ull << 40) + 2)
/* Data parallel: rank r's shuffle stream (rank 0's is CR_STREAM_SHUFFLE; none meets another) */
#define CR_STREAM_SHUFFLE_OF(r) (CR_STREAM_SHUFFLE + ((uint64_t)(r) << 20))
#define CR_PPO_START_PARTS 8 /* --profile: most parts of the setup timed */

/* What the host reads each iteration, in one copy (backend memory). */
typedef struct cr_ppo_metrics {
    cr_ppo_stats_acc acc;  /* loss statistics of this iteration's update */
    double value_stats[5]; /* explained-variance sums of this iteration's rollout */
    cr_episode_log log;    /* finished episodes; iter_* fields cover this iteration */
    cr_loss_scale_state scaler; /* fp16's loss scale and skipped steps (algo/amp.h) */
} cr_ppo_metrics;

enum { CR_PHASE_ROLLOUT, CR_PHASE_UPDATE, CR_PHASE_METRICS, CR_PHASE_LOG, CR_PHASE_CHECKPOINT,
       CR_PHASE_COUNT };

/* --profile, a conv policy: the parts of its rollout that are timed (cr_ppo_part). */
enum { CR_PART_NONE = -1, CR_PART_ENV, CR_PART_FORWARD, CR_PART_COUNT };

/* --profile: wall time per phase (the device is synchronised at each phase boundary). */
typedef struct cr_ppo_profile {
    double seconds[CR_PHASE_COUNT];
    double sync_wait[CR_PHASE_COUNT]; /* of which the host waited in the boundary's sync */
    double part_seconds[CR_PART_COUNT]; /* conv policy: the rollout's env steps (the image
                                         * twin's; the pool's are env_wait) and its policy
                                         * forwards with their sampling */
    int64_t rollout_rows;  /* conv policy: rows through the network in the rollouts */
    double gpu_wait_cpu;   /* CPU envs: seconds the device sat idle while the host waited for
                            * an env group (an idle stream at the start of the wait) */
    double cpu_wait_gpu;   /* CPU envs: seconds env threads waited for actions, summed over
                            * threads (read from cr_ppo_pool at the end) */
    double env_wait;       /* CPU envs: seconds the host waited for env groups in all */
    double gpu_busy;       /* CPU envs, fused steps: seconds of device time of the group steps
                            * (timing events around each), the rollout's device work */
    double mark;           /* time of the last phase boundary */
    int64_t iterations;
    uint64_t syncs_start;  /* ctx->host_syncs when the loop began */
} cr_ppo_profile;

/* --profile, a conv policy: marks in its rollout, each beginning a part (CR_PART_*, NONE: an
 * untimed stretch) and ending the one before. On a device with timing events a mark is an event
 * recorded on the stream (the part's time is device time); on the CPU, whose ops run on the
 * calling thread, the host clock. Read and summed into prof.part_seconds at the rollout phase's
 * end, after its device sync (cr_ppo_phase_end). Host memory; cap 0 without --profile. */
typedef struct cr_ppo_parts {
    void **ev;   /* (cap) timing events, or NULL: the host clock */
    double *at;  /* (cap) host clock marks (when ev is NULL) */
    int *part;   /* (cap) the part mark i begins */
    int cap, n;
} cr_ppo_parts;

/* One rollout's buffers, swapped with --async's second set (cr_ppo's fields of the same names). */
typedef struct cr_ppo_rollout_bufs {
    float *obs, *final_obs;
    int32_t *actions;
    float *logp, *rewards, *values, *final_values, *next_values, *adv, *returns;
    uint8_t *terminated, *truncated, *done;
    double *fin_return;
    int32_t *fin_length;
} cr_ppo_rollout_bufs;

/* The convolutional policy (cfg.policy minatar-cnn or nature-cnn; ppo_conv.c): ppo_atari.py's
 * Agent, one trunk with actor and critic heads (or with --separate-critic two such networks),
 * over uint8 (C, H, W) observations, which are
 * stored as uint8 and converted by the network as its spec says (x / 255, or cast). Its envs
 * step on CPU threads (ppo_pool.c). Parameters are cr_ppo's flat buffers in the net's
 * state_dict order. Backend memory, carved from cr_ppo's arena (the items of the MLP's float
 * observations and caches, sized for these instead). */
typedef struct cr_ppo_conv {
    cr_convnet net;                   /* the planned spec (host, plain data) */
    cr_cnn actor;                     /* the network on the context (its CUDA twin on CUDA) */
    cr_convnet_cache cache;           /* one forward's activations, max(mb, N) rows */
    uint8_t *obs;                     /* (T, N, C, H, W) the rollout's observations */
    uint8_t *cur_obs;                 /* (N, C, H, W) the observations the next step acts on */
    uint8_t *final_obs;               /* (N, C, H, W) one step's final observations (rows of
                                       * envs that truncated; the others stale) */
    uint8_t *mb_obs;                  /* (mb, C, H, W) */
    /* envs on the twin whose episodes can be truncated (cr_ppo_conv_keeps_truncated): row i of
     * kept_obs the final observation of env i's truncation in this rollout, kept_step[i] its
     * step + 1 (0: none), kept_values the values of those rows; NULL otherwise */
    uint8_t *kept_obs;
    int32_t *kept_step;
    float *kept_values;
    /* --separate-critic: a second network of the same spec (`critic`) whose critic head gives
     * the value, its parameters after the actor's in the flat buffers (offset net.num_params);
     * the actor's critic head and the critic's actor head are never trained (their gradient is
     * zero). NULL / 0 without. On a GPU the critic's network runs on a branch of the context
     * (its own stream and handles), forked and joined around each forward and backward, so the
     * two networks' kernels overlap; on the CPU, in order on the context. */
    int separate;
    cr_cnn critic;
    cr_ctx_branch branch;
    cr_convnet_cache cache_critic;
    float *spare_logits, *spare_value; /* (rows, A), (rows): the outputs each net discards */
    float *zero_dlogits, *zero_dvalue; /* (mb, A), (mb) zeros: the heads each net leaves alone */
} cr_ppo_conv;

typedef struct cr_ppo {
    cudarl_ctx *ctx;
    cudarl_ppo_config cfg;
    const cr_env_info *env_info;
    cr_ac_layout layout;   /* the MLPs' (policy mlp; zeros with a conv policy) */
    int conv;              /* the policy is the convolutional network `cnn`, not the MLPs */
    cr_ppo_conv cnn;
    size_t num_params;     /* P: floats of the parameters, whichever the policy */
    int T, N, D, A;        /* steps, envs, obs elements, actions (the actor's outputs: the K
                            * means of a continuous env's Gaussian) */
    int K;                 /* floats per continuous action; 0: discrete actions */
    size_t act_bytes;      /* bytes of one stored action: an int32, or K floats */
    int batch, mb;         /* T*N, rows per minibatch (this rank's: docs/multigpu.md) */
    /* data parallel (ppo_dist.c, docs/multigpu.md): this process is rank `rank` of `ranks`, its
     * N envs are the job's [rank*N, (rank+1)*N) of world_N, its minibatches mb of the job's
     * mb*ranks rows; one process: rank 0 of 1, world_N = N, world_batch = batch */
    int rank, ranks, world_N, world_batch;
    int dist_local_N;      /* a resume's local N while load_state reads the job's (ppo_checkpoint.c) */
    cr_env_batch *dist_env; /* ... and the job's env batch (host) that it reads the block into */
    cr_image_twin *dist_twin; /* ... or the job's image twin's layout over a host block */
    cr_episode_log world_log; /* ranks > 1: the job's finished episodes (rank 0's rows report it) */
    float *dist_grads;     /* ranks > 1 or dev_comm: every rank's gradient (ranks x P), the
                            * context's memory (host: malloc'd; a GPU's: in the arena) */
    int dev_comm;          /* a GPU context in a job (mpirun -np R > 1, or --num-gpus): the
                            * gradients are averaged over its device communicator (NCCL) */
    int dist_stop;         /* ranks > 1: some rank was asked to stop (the loop ends on all) */
    float *dist_obs, *dist_rew; /* ranks > 1, --norm-obs / --norm-reward: the job's step (host) */
    uint8_t *dist_term;
    int64_t num_iterations, iteration, global_step;
    int64_t start_iteration; /* iteration this process started at (resume) */
    int64_t rep_iteration, rep_step; /* the iteration being reported (metrics may trail) */
    int diverged;          /* a report saw a non-finite loss or gradient (no loss scaling) */
    char diverged_why[1024]; /* what it saw: the run's failure message */

    /* backend memory (device memory on CUDA): everything the loop touches */
    cr_arena mem;
    float *params, *grads, *adam_m, *adam_v;      /* (P) each */
    /* with a conv policy obs, final_obs, cur_obs, mb_obs and the two MLP caches are NULL, and
     * `cnn` holds the observations (uint8) and the network's cache instead */
    float *act_params;    /* (P) the weights the rollout acts with: params, or with --async a
                           * snapshot taken before the update that runs beside the rollout */
    int64_t *adam_t;                              /* Adam's step count */
    float *lr;                                    /* this iteration's learning rate */
    cr_env_batch env;                             /* env states and their RNG streams */
    float *obs, *final_obs;                       /* (T, N, D) */
    float *cur_obs;                               /* (N, D) */
    int32_t *actions;                             /* (T, N), or (T, N, K) floats: act_f */
    float *act_f, *mb_act_f;                      /* continuous: actions, mb_act as floats */
    float *logp, *rewards, *values, *final_values, *next_values, *adv, *returns; /* (T, N) */
    uint8_t *terminated, *truncated, *done;       /* (T, N) */
    float *last_values;                           /* (N) */
    float *logits, *u;                            /* (N, A), (N) or (N, 2K) */
    /* --norm-obs, --norm-reward (backend memory; NULL without): the running statistics of the
     * observations (D) and of the discounted returns (1) as mean, var, count, and each env's
     * discounted return */
    double *norm;          /* the statistics' block: the fields below point into it */
    double *obs_mean, *obs_var, *obs_count;
    double *ret_mean, *ret_var, *ret_count, *ret_acc;
    int32_t *mb_idx;                              /* (batch) a permutation of the rows */
    float *mb_obs, *mb_logp, *mb_adv, *mb_ret, *mb_val; /* (mb, D), (mb) ... */
    int32_t *mb_act;                              /* (mb) */
    float *mb_logits, *mb_value, *mb_dlogits, *mb_dvalue; /* (mb, A), (mb), (mb, A), (mb) */
    cr_mlp_cache cache_actor, cache_critic;       /* max(mb, N) rows */
    int fused;                                    /* the backend's ppo_minibatch_grads is used */
    void *fused_scratch;                          /* its scratch (NULL when not fused) */
    int fused_rollout;                            /* the rollout is one kernel (CUDA, CartPole) */
    int fused_pool;                               /* a pool step is one kernel (CUDA, ppo_pool.c) */
    double *fin_return;                           /* (T, N) their episode returns (else NULL) */
    int32_t *fin_length;                          /* (T, N) */
    cr_ppo_metrics *metrics;
    cr_ppo_stats_acc *acc;                        /* &metrics->acc */
    cr_episode_log *log;                          /* &metrics->log */
    cr_rng_stream *sampler, *shuffler;
    double *ep_return;                            /* (N) running episode return */
    int64_t *ep_length;                           /* (N) */

    cr_ppo_metrics h_metrics;                     /* the latest copy of *metrics */
    cr_episode_log h_log;                         /* = h_metrics.log */

    /* outputs */
    char run_dir[512];
    FILE *csv;
    int run_lock;          /* the run folder's claim (cr_run_open), -1 before it is taken */
    cr_tb_writer tb;
    double loop_start, last_progress;
    size_t bytes_after_setup, bytes_at_end; /* device memory in use (CUDA) */
    cr_ppo_profile prof;
    struct {               /* --profile: the time from the process's start to the loop */
        double before;     /* the process's age when PPO's setup began (-1: unknown) */
        double setup;      /* cr_ppo_init: plans, memory, the networks' handles, warm-up */
        double rest;       /* the checkpoint's load on a resume, the run directory */
        int resumed;
        double at;         /* the time the last part of the setup ended */
        int nparts;        /* the setup's parts, in order (cr_ppo_start_part) */
        struct {
            const char *what;
            double secs;
        } part[CR_PPO_START_PARTS];
    } start;
    /* a conv policy's initial weights (host), computed on a thread of their own from the
     * network's plan on, while the GPU's setup runs (cr_ppo_init; seed_state joins it) */
    struct {
        pthread_t thread;
        int running;       /* started and not yet joined */
        float *params;     /* (num_params) */
    } init_job;
    cr_ppo_parts parts;    /* --profile, a conv policy: its rollout's marks */

    /* envs on CPU threads (env_pool mode, ppo_pool.c); NULL otherwise */
    struct cr_ppo_pool *pool;
    /* a conv policy's envs on the GPU (--env-device cuda: their image twin, ppo_conv.c) */
    int twin_envs;
    int precision_set;     /* cfg.precision changed ctx's math mode (restored at free) */
    cr_amp amp;            /* the optimizer step under cfg.precision (its state: metrics) */
    cr_image_twin twin;

    /* --async: the learner's own context (its stream, scratch and cuBLAS handle) on the same
     * device, the rollout buffers the update reads while the next rollout fills the others,
     * and the events that order the two streams (NULL/0 without --async) */
    cudarl_ctx *learner;
    cr_ppo_rollout_bufs alt;
    void *ev_rollout, *ev_snapshot, *ev_update;
    int64_t solved_step;
    double solved_seconds, solved_unix;
    int tty;
} cr_ppo;

/* *c (this build's size, the defaults under what the caller set) from the caller's config
 * `given` of any size cr_abi_ppo_config accepts; `where` names the public function. */
cudarl_status cr_ppo_config_take(const cudarl_ppo_config *given, cudarl_ppo_config *c,
                                 const char *where);
/* Plans, allocates and seeds a trainer for `cfg` on `ctx` (weights, envs, RNG streams). */
cudarl_status cr_ppo_init(cr_ppo *p, cudarl_ctx *ctx, const cudarl_ppo_config *cfg);
void cr_ppo_free(cr_ppo *p);
/* One rollout: T steps of every env into the rollout buffers, then GAE and value statistics;
 * the episode log's per-iteration fields restart. Fused into one kernel when p->fused_rollout. */
void cr_ppo_rollout(cr_ppo *p);
/* Envs on CPU threads (ppo_pool.c): whether cfg asks for them on ctx; set up (pool, pinned
 * buffers, events) and reset from the seed into p->cur_obs; the rollout's T steps through it;
 * the threads' total wait for the device (seconds); teardown. */
int cr_ppo_pool_wanted(const cr_ppo *p);
cudarl_status cr_ppo_pool_init(cr_ppo *p);
void cr_ppo_pool_reset(cr_ppo *p);
void cr_ppo_pool_rollout_steps(cr_ppo *p);
double cr_ppo_pool_thread_wait(const cr_ppo *p);
int cr_ppo_pool_threads(const cr_ppo *p);
int cr_ppo_pool_groups(const cr_ppo *p);
/* Sets the current observations (N, D) of the env's dtype the next step starts from (a resumed
 * checkpoint's). */
void cr_ppo_pool_set_obs(cr_ppo *p, const void *obs);
/* The current observations as the envs wrote them (before --norm-obs), for a checkpoint. */
void cr_ppo_pool_get_obs(const cr_ppo *p, void *obs);
/* How many groups the pool splits the envs into for cfg on p->ctx (what cr_ppo_pool_init
 * uses; known before the pool exists). */
int cr_ppo_pool_group_count(const cr_ppo *p);
void cr_ppo_pool_free(cr_ppo *p);
/* The env states as bytes for a checkpoint: states (N, stride) and elapsed (N). */
void cr_ppo_pool_state(cr_ppo *p, void **states, size_t *bytes, int32_t **elapsed);
/* cr_env_pool_check_state of the pool's envs (after a checkpoint was read into them). */
int cr_ppo_pool_check_state(const cr_ppo *p, int *bad, char *why, size_t cap);
/* The same check of n envs' states (n rows of the pool's stride) and step counts held elsewhere:
 * a data-parallel resume's job's rows, before a rank takes its own. */
int cr_ppo_pool_check_rows(const cr_ppo *p, const void *states, const int32_t *elapsed, int n,
                           int *bad, char *why, size_t cap);

/* Samples the actions of envs [b, b + n) from the policy's outputs in p->logits rows b.. (the
 * categorical's logits, or the Gaussian's means with the log-std of act_params) into rollout row
 * `row` onwards of actions and logp; returns where the actions are (int32 or float rows). */
const void *cr_ppo_sample(cr_ppo *p, int b, int n, size_t row);
/* Doubles of the normalization statistics (p->norm: obs_* then ret_*), 0 without the flags. */
size_t cr_ppo_norm_doubles(const cr_ppo *p);
/* --norm-obs: obs (n, D, backend memory) are new observations: the statistics take them in, then
 * they are normalized in place (no-op without the flag). _apply only normalizes (final
 * observations, which the statistics took in as they came). */
void cr_ppo_norm_obs_take(cr_ppo *p, float *obs, int n);
void cr_ppo_norm_obs_apply(cr_ppo *p, float *obs, int n);
/* --norm-reward: the rewards (n) of envs [b, b + n) with their terminated flags, normalized in
 * place (after the episode sums have read them). */
void cr_ppo_norm_reward(cr_ppo *p, float *reward, const uint8_t *terminated, int b, int n);

/* One minibatch step on rollout rows idx (mb of them, backend memory): gather, forward, loss,
 * backward (the MLP's or the conv policy's), the gradients' mean over the ranks (data parallel),
 * clip, Adam at the learning rate in p->lr. Stats accumulate into p->acc. */
void cr_ppo_update_minibatch(cr_ppo *p, const int32_t *idx);
/* The update of one rollout: update_epochs epochs of shuffled minibatches (stopping early on
 * --target-kl); p->acc restarts. */
void cr_ppo_update(cr_ppo *p);

/* ---- the convolutional policy (ppo_conv.c) ---- */

/* Plans p->cnn.net for cfg.policy and the env and sets p->num_params: before
 * cr_ppo_dist_init, which sizes the ranks' gradients by it. */
cudarl_status cr_ppo_conv_plan(cr_ppo *p);
/* Makes the network (on a CUDA context its twin, whose engines plan per batch size) for the
 * batch sizes the loop uses: the pool's group sizes, N and mb, this rank's (after
 * cr_ppo_dist_init). */
cudarl_status cr_ppo_conv_init(cr_ppo *p);
/* Bytes of the conv cache and of the CUDA twin's workspace (0 on the CPU), for the plan. */
size_t cr_ppo_conv_cache_bytes(const cr_ppo *p);
size_t cr_ppo_conv_workspace_bytes(const cr_ppo *p);
/* Points the cache (and the twin's workspace) into the arena's pieces. */
void cr_ppo_conv_carve(cr_ppo *p, void *cache, void *workspace);
/* CleanRL's init of the network into params (host, P floats), drawn from rng. */
void cr_ppo_conv_init_params(const cr_ppo *p, float *params, cr_philox_state *rng);
/* The CUDA twin's first call of every batch size, outside graph capture; a no-op on the CPU.
 * Writes only buffers the loop overwrites before reading (logits, last values, minibatch). */
void cr_ppo_conv_warm_up(cr_ppo *p);
/* --profile: the setup's part that ends now, `what` (a literal) since the last part ended. */
void cr_ppo_start_part(cr_ppo *p, const char *what);
/* logits (B, A) and value (B) of obs (B, C, H, W) uint8 under params; fills the cache. */
void cr_ppo_conv_forward(cr_ppo *p, const float *params, const uint8_t *obs, float *logits,
                         float *value, int B);
/* p->grads = d loss / d params from dlogits (B, A) and dvalue (B), with the cache of the
 * forward on the same rows. */
void cr_ppo_conv_backward(cr_ppo *p, const float *params, const float *dlogits,
                          const float *dvalue, int B);
/* Bytes of the conv policy's envs on the GPU (their image twin) for N envs; 0 without. */
size_t cr_ppo_conv_twin_bytes(const cr_ppo *p);
/* Whether the twin rollout keeps its truncated envs' final observations and values them in one
 * forward after the rollout, instead of a forward of every env's final observation at every
 * step: envs on the twin whose episodes have a time limit no shorter than the rollout, so that
 * an env is truncated at most once per rollout. */
int cr_ppo_conv_keeps_truncated(const cr_ppo *p);
/* The rollout's T steps with the envs' image twin on the device (p->twin_envs): the same ops
 * as the pool's schedule with one group, the env step a kernel instead of CPU threads. */
void cr_ppo_conv_rollout_twin(cr_ppo *p);
/* The conv policy's part of cr_ppo_update_minibatch: gather, forward, loss and backward into
 * p->grads (the stats into p->acc); the gradients' mean over the ranks, the clip and Adam are
 * cr_ppo_update_minibatch's, the MLP's and the conv policy's alike. */
void cr_ppo_conv_minibatch_grads(cr_ppo *p, const int32_t *idx);
void cr_ppo_conv_free(cr_ppo *p);

/* ---- --profile (ppo_profile.c) ---- */

/* Ends the current phase (CR_PHASE_*): pops its NVTX range and, with --profile, waits for the
 * device and charges the time since the last boundary to it. */
void cr_ppo_phase_end(cr_ppo *p, int phase);
/* With --profile: time per phase, host syncs per iteration, the CPU envs' waits, the MLP's
 * achieved FLOP/s and GB/s, or the conv policy's rollout split and achieved FLOP/s (stderr). */
void cr_ppo_profile_print(const cr_ppo *p);
/* With --profile and a conv policy: makes p->parts, room for every mark of one rollout;
 * otherwise nothing (p->parts.cap stays 0). cr_ppo_parts_free releases them. */
cudarl_status cr_ppo_parts_init(cr_ppo *p);
void cr_ppo_parts_free(cr_ppo *p);
/* A mark in the rollout: `part` (CR_PART_*) begins now, the part before ends; a no-op without
 * --profile. Never inside graph capture (an event there is no timing point). */
void cr_ppo_part_mark(cr_ppo *p, int part);
static inline void cr_ppo_part(cr_ppo *p, int part) {
    if (p->parts.cap) cr_ppo_part_mark(p, part);
}
/* --profile: `rows` rows went through the conv policy's network in the rollout. */
static inline void cr_ppo_count_rows(cr_ppo *p, int rows) {
    if (p->cfg.profile) p->prof.rollout_rows += rows;
}

/* Writes the whole training state to `path` atomically (safetensors). */
cudarl_status cr_ppo_checkpoint_save(cr_ppo *p, const char *path);
/* Restores the training state from `path` into an initialised trainer of the same shapes. */
cudarl_status cr_ppo_checkpoint_load(cr_ppo *p, const char *path);

/* ---- data parallel (ppo_dist.c, docs/multigpu.md) ---- */

/* Takes this process's rank and the job's rank count (ops/comm.h), refuses a config that the
 * data-parallel path does not run yet (ranks > 1), and makes N, batch and mb this rank's share.
 * After p->conv and the config's check; before the memory plan. */
cudarl_status cr_ppo_dist_init(cr_ppo *p);
void cr_ppo_dist_free(cr_ppo *p);
/* ranks > 1: moves the sampler past `before` of the job's uniforms of a draw (the lower ranks'
 * envs') or `after` them (the higher ranks'). */
void cr_ppo_dist_skip(cr_ppo *p, int64_t words);
/* ranks > 1 or dev_comm: grads = the mean of every rank's grads, summed in rank order (identical on every
 * rank whatever MPI does). */
void cr_ppo_dist_mean_grads(cr_ppo *p);
/* ranks > 1, once per reported iteration: h_metrics becomes the job's (losses, value sums,
 * episodes: the world log), the ranks' weights are compared (a difference: p->diverged with the
 * reason), and a stop asked of any rank is p->dist_stop on all. */
void cr_ppo_dist_combine(cr_ppo *p);
/* ranks > 1: the mean of every rank's v, summed in rank order (the same on every rank). */
double cr_ppo_dist_mean(cr_ppo *p, double v);
/* ranks > 1, --norm-obs: the statistics updated with the job's N observations (every rank's
 * obs, n rows each, gathered in env order), as one process updates them. */
void cr_ppo_dist_obs_stats(cr_ppo *p, const float *obs);
/* ranks > 1, --norm-reward: reward (n) normalized as one process normalizes the job's N rewards,
 * with the job's per-env discounted returns (every rank holds all N). */
void cr_ppo_dist_norm_reward(cr_ppo *p, float *reward, const uint8_t *terminated, float clip);
/* Whether the loop stops after this iteration: cr_stop_requested(), or with ranks > 1 any rank's. */
int cr_ppo_dist_stop_requested(const cr_ppo *p);

#endif
