/* DQN's trainer state, shared by its loop (dqn.c), its Q-network on the context (dqn_qnet.c)
 * and its envs on CPU threads (dqn_pool.c). */
#ifndef CUDARL_DQN_INTERNAL_H
#define CUDARL_DQN_INTERNAL_H

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo/metrics_pipe.h"
#include "algo/run.h"
#include "core/nvtx.h"
#include "env/env.h"
#include "env/env_pool.h"
#include "env/image_twin.h"
#include "nn/cnn.h"
#include "nn/convnet.h"
#include "algo/amp.h"
#include "nn/precision.h"
#include "nn/qnet.h"
#include "ops/cpu/ops_dqn.h"
#include "replay/replay_buffer.h"
#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "io/tensorboard.h"

#define DQN_STREAM_EXPLORE (1ull << 40)
#define DQN_STREAM_REPLAY ((1ull << 40) + 1)
#define DQN_STREAM_INIT ((1ull << 40) + 2)

/* Iterations a captured block may hold; a longer schedule period runs op by op. */
#define DQN_GRAPH_MAX_ITERS 1024
/* Iterations a captured block holds at least (whole periods), to amortise the launch. */
#define DQN_GRAPH_MIN_ITERS 8
/* Iterations between reports when launching op by op (CUDA). */
#define DQN_REPORT_EVERY 64

/* Where the envs step: the env batch (CartPole, the classic-control envs; its CUDA twin on a
 * CUDA context), an image twin (MinAtar's games, CartPolePixels-v1: a CUDA context and
 * --env-device cuda or auto), or the env pool on CPU threads (--env-device cpu, or auto for an
 * env with neither). */
typedef enum { CR_DQN_ENVS_BATCH, CR_DQN_ENVS_TWIN, CR_DQN_ENVS_POOL } cr_dqn_envs_where;

/* What the host reads (backend memory), in one copy. */
typedef struct cr_dqn_metrics {
    cr_dqn_stats_acc acc; /* losses since the last log row */
    cr_episode_log log;   /* finished episodes; iter_* since the last log row */
    int64_t step;         /* env steps taken (the epsilon schedule's t) */
    cr_loss_scale_state scaler; /* fp16's loss scale and skipped steps (algo/amp.h) */
    double grad_norm_sum;  /* clip_grad_norm's norms since the start (--max-grad-norm > 0) */
} cr_dqn_metrics;

/* Scalars the device ops keep (backend memory); the host never reads them in the loop. */
typedef struct cr_dqn_scalars {
    cr_rng_stream explore, sample;
    int64_t adam_t;
    float lr, epsilon;
} cr_dqn_scalars;

/* A pinned metrics slot: the metrics and the replay's error bits as of one report. */
typedef struct cr_dqn_slot {
    cr_dqn_metrics m;
    uint32_t replay_errors;
} cr_dqn_slot;

/* Envs on CPU threads: the pool and the pinned buffers it writes (or reads: actions). */
typedef struct cr_dqn_pool {
    cr_env_pool pool;
    void *obs, *final_obs;           /* (N, D) of the env's dtype */
    float *reward;                   /* (N) */
    uint8_t *terminated, *truncated, *done; /* (N) */
    int32_t *actions;                /* (N) */
    void *event;                     /* the actions are on the host (NULL on the CPU) */
    cudarl_ctx *ctx;
} cr_dqn_pool;

/* The Q-network: dqn.py's MLP (cr_qnet, every backend) or a convolutional network of
 * dqn_atari.py's shape (cr_convnet on the context, cr_cnn: its CUDA twin on CUDA).
 * Either way its parameters are one flat buffer of num_params floats, network.* tensors in
 * state_dict order, which Adam, the polyak update and the checkpoint treat alike. */
typedef struct cr_dqn_qnet {
    int conv;              /* 0: the MLP */
    cr_qnet_layout mlp;
    cr_convnet cnn;
    size_t num_params;
    cr_cnn dev;            /* the conv net on the context (batches N and B) */
} cr_dqn_qnet;

/* What a backward needs from its forward, for max(B, N) rows (backend memory). */
typedef struct cr_dqn_cache {
    cr_mlp_cache mlp;
    cr_convnet_cache cnn;
} cr_dqn_cache;

typedef struct cr_dqn {
    cudarl_ctx *ctx;
    const cr_backend *o;
    cudarl_dqn_config cfg;
    const cr_env_info *env_info;
    cr_dqn_qnet net;
    int N, D, A, B, rows;  /* envs, obs elements, actions, batch, max(N, B) */
    int u8;                /* observations are uint8 (stored so) */
    int cast;              /* the MLP reads uint8 observations cast to float (the convolutional
                              networks read them as they are, converting per their spec) */
    size_t obs_bytes;      /* bytes of one observation */
    int K;                 /* frames per stack the replay rebuilds (replay_frames with a frame-
                            * stacked env and a conv net), else 1: whole observations stored */
    size_t b_stride;       /* elements from one minibatch row to the next: D, or with K > 1
                            * (K + 1) D / K (b_obs is then a window batch, b_next its second
                            * frame onwards: replay.h's two views) */
    int on_device;         /* CUDA context: device-side error bits, pinned metrics, graphs */
    int where;             /* envs_where: the env batch, an image twin or the pool */
    double duration;       /* epsilon's annealing steps */
    /* backend memory */
    cr_arena mem;
    float *online, *target, *grads, *adam_m, *adam_v; /* (P) */
    cr_env_batch env;
    void *obs, *next_obs, *final_obs;   /* (N, D) of the env's dtype */
    float *obs_f;                       /* (N, D) obs as float (= obs when float) */
    float *q, *u, *rewards;             /* (rows, A), (2N), (N) */
    int32_t *actions;                   /* (N) */
    uint8_t *term, *trunc, *done;       /* (N) */
    double *ep_return;                  /* (N) */
    int64_t *ep_length;                 /* (N) */
    cr_dqn_metrics *m;
    cr_dqn_scalars *s;
    void *b_obs, *b_next;               /* (B, D) of the env's dtype */
    float *b_obs_f, *b_next_f;          /* (B, D) as float (= b_obs, b_next when float) */
    float *b_rewards, *b_weights;       /* (B) */
    int32_t *b_actions;                 /* (B) */
    uint8_t *b_term, *b_trunc;          /* (B) */
    int64_t *b_indices;                 /* (B) */
    float *b_q, *b_next_t, *b_next_o, *b_dq, *b_td; /* (B, A) x4, (B) */
    cr_dqn_cache cache_q, cache_t, cache_o;
    cr_replay_buffer replay;            /* on the context's device */
    cr_dqn_pool *pool;                  /* envs on CPU threads, or NULL */
    cr_image_twin twin;                 /* where == ENVS_TWIN: the env's image twin */
    /* the loop */
    int64_t global_step, train_steps, iteration;
    int64_t start_step;                 /* global_step when this call's loop started (resume) */
    cr_dqn_metrics h;                   /* the latest host copy of *m */
    cr_metrics_pipe pipe;               /* metrics in flight (CUDA) */
    /* graphs */
    void *graph;
    int graph_iters;                    /* K (0: no graph) */
    int64_t graph_start;                /* the first iteration start step of a block */
    int graph_failed;
    size_t bytes_after_setup, bytes_at_end;
    uint64_t syncs_start;
    /* logging */
    char run_dir[512];
    FILE *csv;
    int run_lock;          /* the run folder's claim (cr_run_open), -1 before it is taken */
    cr_tb_writer tb;
    double loop_start, last_progress;
    int64_t solved_step, next_log, log_every;
    double solved_seconds, solved_unix;
    int tty;
    int precision_set;     /* cfg.precision changed ctx's math mode (restored at free) */
    cr_amp amp;            /* the optimizer step under cfg.precision (its state: metrics) */
    /* data parallel (dqn_dist.c, docs/multigpu.md): this rank of `ranks`; N, B and `buffer`
     * are this rank's shares of the job's world_N envs, world_B rows and buffer_size */
    int rank, ranks, world_N, world_B;
    int64_t buffer;            /* this rank's replay shard's --buffer-size */
    float *dist_grads;         /* (ranks, P): every rank's gradient */
    cr_episode_log world_log;  /* the job's episodes (ranks > 1) */
    int64_t dist_seen;         /* this rank's episodes already sent to the job's log */
    int dist_stop, diverged;
    char diverged_why[512];
} cr_dqn;

/* ---- data parallel (dqn_dist.c) ---- */

/* The sampling stream of rank r: rank 0's is one process's. */
#define DQN_STREAM_REPLAY_OF(r) (DQN_STREAM_REPLAY + ((uint64_t)(r) << 20))
/* rank, ranks, and for ranks > 1 this rank's N, B and buffer (refusing what R ranks do not
 * run); ranks == 1 leaves them one process's. */
cudarl_status cr_dqn_dist_init(cr_dqn *d);
void cr_dqn_dist_free(cr_dqn *d);
/* Advances the explore stream by `words` (the other ranks' uniforms). */
void cr_dqn_dist_skip(cr_dqn *d, int64_t words);
/* d->grads = the mean of every rank's, summed in rank order (the same bits on every rank). */
void cr_dqn_dist_mean_grads(cr_dqn *d);
/* d->h (this rank's host copy) becomes the job's metrics; at a log row (`log`) the weights
 * are compared across ranks (d->diverged). A collective. */
void cr_dqn_dist_combine(cr_dqn *d, int log);


enum { D_ONLINE, D_TARGET, D_GRADS, D_M, D_V, D_ENV, D_OBS, D_NEXT, D_FINAL, D_OBSF, D_Q, D_U,
       D_REW, D_ACT, D_TERM, D_TRUNC, D_DONE, D_EPRET, D_EPLEN, D_METRICS, D_SCALARS, D_BOBS,
       D_BNEXT, D_BOBSF, D_BNEXTF, D_BREW, D_BW, D_BACT, D_BTERM, D_BTRUNC, D_BIDX, D_BQ, D_BNT,
       D_BNO, D_BDQ, D_BTD, D_CQ, D_CT, D_CO, D_CWS, D_REPLAY };

/* One parameter tensor of the Q-network, as the checkpoint names it. */
typedef struct cr_dqn_tensor {
    const char *name;
    int ndim;
    int64_t shape[4];
    size_t offset;
} cr_dqn_tensor;

/* ---- the config (dqn_config.c) ---- */

/* *c (this build's size, the defaults under what the caller set) from the caller's config
 * `given` of any size cr_abi_dqn_config accepts; `where` names the public function. */
cudarl_status cr_dqn_config_take(const cudarl_dqn_config *given, cudarl_dqn_config *c,
                                 const char *where);

/* ---- the Q-network on the context (dqn_qnet.c) ---- */

/* Lays out the Q-network cfg.policy names (its parameters: net.num_params); then makes it on
 * the context for batches N and B (a conv net's CUDA twin on a CUDA context), after
 * cr_dqn_dist_init has made N and B the rank's. */
cudarl_status cr_dqn_qnet_layout(cr_dqn *d);
cudarl_status cr_dqn_qnet_make(cr_dqn *d);
/* Bytes of one forward's cache for d->rows rows; of a conv net's workspace (0 for the MLP and
 * on the CPU). */
size_t cr_dqn_qnet_cache_bytes(const cr_dqn *d);
size_t cr_dqn_qnet_workspace_bytes(const cr_dqn *d);
/* A cache for d->rows rows at mem (cr_dqn_qnet_cache_bytes, backend memory). */
cr_dqn_cache cr_dqn_qnet_cache_carve(const cr_dqn *d, void *mem);
/* The observations x (rows, D) of the env's dtype as the network reads them: the MLP floats (x
 * itself, or its cast into f), a convolutional network x as it is. */
const void *cr_dqn_qnet_input(cr_dqn *d, const void *x, float *f, int rows);
/* out (rows, A) = Q(params; x), x from cr_dqn_qnet_input with rows `stride` elements apart (D,
 * or a window batch's (K + 1) D / K: conv nets only); fills the cache c. */
void cr_dqn_qnet_forward_rows(cr_dqn *d, float *params, const void *x, size_t stride,
                              float *out, const cr_dqn_cache *c, int rows);
/* cr_dqn_qnet_forward_rows of rows packed D elements apart. */
void cr_dqn_qnet_forward(cr_dqn *d, float *params, const void *x, float *out,
                         const cr_dqn_cache *c, int rows);
/* grads (P) = d loss / d params from dout (rows, A), with the cache of the forward on x. */
void cr_dqn_qnet_backward(cr_dqn *d, float *params, float *grads, const void *x,
                          const float *dout, const cr_dqn_cache *c, int rows);
/* A conv net's CUDA twin's first call of each batch size, outside any graph capture. */
void cr_dqn_qnet_warm_up(cr_dqn *d);
/* PyTorch's default init of every layer, drawn from rng in state_dict order (host). */
void cr_dqn_qnet_init_params(const cr_dqn *d, float *params, cr_philox_state *rng);
/* The Q-network's tensors in state_dict order into t (CR_CONVNET_MAX_TENSORS); their count. */
int cr_dqn_qnet_tensors(const cr_dqn *d, cr_dqn_tensor *t);

/* ---- checkpoints (dqn_checkpoint.c) ---- */

/* Writes the whole training state to `path` atomically (safetensors; the work enqueued so far). */
cudarl_status cr_dqn_checkpoint_save(cr_dqn *d, const char *path);
/* Refuses a checkpoint whose env, Q-network, env placement, replay or precision differ from the
 * run's (CUDARL_ERR_MISMATCH naming the flag), checks every number of its state (a bad one is
 * CUDARL_ERR_FORMAT naming the tensor) and loads it into the run set up by dqn_init. */
cudarl_status cr_dqn_checkpoint_load(cr_dqn *d, const char *path);

/* ---- envs on CPU threads (dqn_pool.c) ---- */

/* The pool of N envs on env_threads threads (one group: the synchronous schedule) and its
 * pinned buffers; their release (a no-op without a pool). */
cudarl_status cr_dqn_pool_init(cr_dqn *d);
void cr_dqn_pool_free(cr_dqn *d);
/* Steps every env of the pool with the actions on the device into next_obs, rewards, term,
 * trunc, done and final_obs (backend memory). */
void cr_dqn_pool_step(cr_dqn *d);

#endif
