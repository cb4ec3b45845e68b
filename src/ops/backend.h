/* The backend interface: what the algorithms call, implemented once per device kind.
 *
 * Algorithm code (src/algo) never touches a buffer directly: buffers live where the context's
 * backend keeps them (host memory for CPU, device memory for CUDA) and are read back only
 * through copy_to_host. Every op is asynchronous with respect to the host on the CUDA backend
 * (enqueued on the context's stream) and synchronous on the CPU backend. */
#ifndef CUDARL_BACKEND_H
#define CUDARL_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "ops/conv2d.h"
#include "ops/frames.h"
#include "ops/cpu/ops_cpu.h"
#include "ops/loss_scale.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cr_backend cr_backend;

/* A device's theoretical peaks (the backend's `peaks`), derived from what the runtime reports:
 * flops = sms x flops_per_sm_clock x clock_hz, the dense rate of the units that products in the
 * asked precision run on (fp32: the CUDA cores' FMAs; tf32, bf16, fp16: the tensor cores with
 * fp32 accumulation); bytes_per_s = 2 (DDR) x memory clock x bus width. A field the runtime or
 * the table (cr_peak_flops_per_sm_clock) cannot give is 0. */
typedef struct cr_peaks {
    double flops;              /* FLOP/s (0: unknown, or the device has no such units) */
    double bytes_per_s;        /* memory bandwidth (0: unknown) */
    int sms, sm_major, sm_minor;
    int flops_per_sm_clock;    /* per SM and clock, dense (an FMA is 2) */
    double clock_hz;           /* the SM clock the runtime reports: its maximum boost clock */
    const char *units;         /* "CUDA cores" or "tensor cores" */
} cr_peaks;

/* Dense FLOPs per SM and clock of compute capability major.minor for products in `precision`
 * (per-SM rates of NVIDIA's architecture whitepapers; the tensor cores' with fp32 accumulation at
 * the full rate of the data-centre and Jetson parts: GeForce boards of sm_86, sm_89 and sm_120
 * accumulate fp32 at half of it); 0 for an architecture not in the table or a format its units
 * lack (tf32 and bf16 before sm_80). */
int cr_peak_flops_per_sm_clock(int major, int minor, cudarl_precision precision);

struct cudarl_ctx {
    cudarl_device_kind kind;
    int device_index;
    int threads;             /* CPU worker threads in use */
    const cr_backend *ops;
    void *stream;            /* the CUDA stream every op of this context is enqueued on */
    void *impl;              /* backend-private (library handles, graphs) */
    uint64_t host_syncs;     /* copies to the host so far: each waits for the device */
    void *comm;              /* the device communicator a data-parallel run opened on this
                              * GPU context (ncclComm_t; ops/comm.h), or NULL */
};

typedef enum cr_activation { CR_ACT_TANH = 0, CR_ACT_RELU } cr_activation;

/* One MLP's view into a parameter (or gradient) buffer: layers 0, 1, 2 (nn/actor_critic.h
 * makes them; defined here because ppo_minibatch_grads takes them). */
typedef struct cr_mlp_view {
    float *w[3], *b[3];
    int dims[4];       /* in, hidden 1, hidden 2, out */
    cr_activation act; /* after layers 0 and 1 */
} cr_mlp_view;

/* One array of a gather_rows_many: rows of row_bytes bytes from src to dst (backend memory). */
#define CR_GATHER_MAX 8
typedef struct cr_gather_item {
    const void *src;
    void *dst;
    size_t row_bytes;
} cr_gather_item;

/* Sums the PPO loss statistics of the minibatches of one iteration (backend memory). */
typedef struct cr_ppo_stats_acc {
    double sum[7];   /* loss, pg_loss, v_loss, entropy, old_approx_kl, approx_kl, clipfrac */
    double count;    /* minibatches added */
    double grad_norm_sum;
    double last_approx_kl; /* of the latest minibatch, for --target-kl */
} cr_ppo_stats_acc;

/* Sums the DQN loss statistics of the minibatches since it was last zeroed (backend memory):
 * each minibatch adds its three means (cr_dqn_loss_stats of ops/cpu/ops_dqn.h). */
typedef struct cr_dqn_stats_acc {
    double loss_sum, q_sum, td_abs_sum;
    double count;     /* minibatches added */
    double last_loss; /* of the latest minibatch, for the trainer's finiteness check */
} cr_dqn_stats_acc;

struct cr_backend {
    const char *name;
    /* memory */
    cudarl_status (*arena_alloc)(cudarl_ctx *ctx, cr_arena *a, const cr_plan *p);
    void (*arena_free)(cudarl_ctx *ctx, cr_arena *a);
    void (*copy_to_host)(cudarl_ctx *ctx, void *dst, const void *src, size_t bytes);
    void (*copy_from_host)(cudarl_ctx *ctx, void *dst, const void *src, size_t bytes);
    void (*copy)(cudarl_ctx *ctx, void *dst, const void *src, size_t bytes); /* no overlap */
    void (*zero)(cudarl_ctx *ctx, void *dst, size_t bytes);
    void (*sync)(cudarl_ctx *ctx);
    /* layers */
    void (*linear_forward)(cudarl_ctx *ctx, const float *x, const float *w, const float *b,
                           float *y, int B, int I, int O);
    void (*linear_tanh_forward)(cudarl_ctx *ctx, const float *x, const float *w, const float *b,
                                float *y, int B, int I, int O);
    void (*linear_backward)(cudarl_ctx *ctx, const float *dy, const float *x, const float *w,
                            float *dx, float *dw, float *db, int B, int I, int O);
    void (*tanh_backward)(cudarl_ctx *ctx, const float *y, const float *dy, float *dx, size_t n);
    /* DQN's Q-network: y = max(0, x w^T + b), and dx = y <= 0 ? 0 : dy */
    void (*linear_relu_forward)(cudarl_ctx *ctx, const float *x, const float *w, const float *b,
                                float *y, int B, int I, int O);
    void (*relu_backward)(cudarl_ctx *ctx, const float *y, const float *dy, float *dx, size_t n);
    /* random numbers: the stream's position lives in backend memory and advances by n */
    void (*uniform)(cudarl_ctx *ctx, cr_rng_stream *s, float *u, int n);
    /* the stream's position moves past n words unread (data parallel: the other ranks' envs'
     * words of a draw, docs/multigpu.md) */
    void (*rng_skip)(cudarl_ctx *ctx, cr_rng_stream *s, uint64_t n);
    /* perm (n) = a pseudo-random permutation of 0..n-1 (core/shuffle.h), keyed by the stream's
     * next CR_SHUFFLE_ROUNDS words */
    void (*permutation)(cudarl_ctx *ctx, cr_rng_stream *s, int32_t *perm, int n);
    /* policy */
    void (*categorical_sample)(cudarl_ctx *ctx, const float *logits, const float *u,
                               int32_t *action, float *logp, int B, int A);
    void (*categorical_argmax)(cudarl_ctx *ctx, const float *logits, int32_t *action, int B, int A);
    /* episodes: adds each env's reward (N) to its running return and length; for envs with
     * done set, in index order, pushes the return to the log and restarts the env's sums */
    void (*episodes_record)(cudarl_ctx *ctx, const float *reward, const uint8_t *done,
                            double *ep_return, int64_t *ep_length, cr_episode_log *log, int N);
    /* PPO */
    void (*bootstrap_values)(cudarl_ctx *ctx, const float *values, const float *final_values,
                             const float *last_values, const uint8_t *done, float *next_values,
                             int T, int N);
    void (*gae)(cudarl_ctx *ctx, const float *rewards, const float *values,
                const float *next_values, const uint8_t *terminated, const uint8_t *done,
                float gamma, float lambda, float *adv, float *returns, int T, int N);
    /* out[0..5) += n, sum y, sum y^2, sum d, sum d^2 with y = returns, d = returns - values
     * (n of each): what explained variance needs; out in backend memory */
    void (*value_stats)(cudarl_ctx *ctx, const float *values, const float *returns, int n,
                        double *out);
    void (*gather_rows)(cudarl_ctx *ctx, const void *src, const int32_t *idx, void *dst,
                        int rows, size_t row_bytes);
    /* gather_rows for `count` (<= CR_GATHER_MAX) arrays at once over the same idx (rows): one
     * pass (one launch on CUDA) instead of count */
    void (*gather_rows_many)(cudarl_ctx *ctx, const int32_t *idx, int rows, int count,
                             const cr_gather_item *items);
    /* For every row i < rows whose flag[i] is set: dst row i = src row i (row_bytes bytes) and
     * step[i] = t (t >= 1); other rows untouched. What a rollout keeps of the envs that were
     * truncated at its step t - 1, so that their final observations' values are one forward after
     * the rollout (keep_rows, then a forward of the kept rows, then place_values). */
    void (*keep_rows)(cudarl_ctx *ctx, const void *src, const uint8_t *flag, void *dst,
                      int32_t *step, int32_t t, int rows, size_t row_bytes);
    /* For every row i < rows whose step[i] is k >= 1: out[(k - 1) * rows + i] = v[i], then
     * step[i] = 0 (ready for the next rollout); rows with step 0 untouched. */
    void (*place_values)(cudarl_ctx *ctx, const float *v, int32_t *step, float *out, int rows);
    void (*ppo_loss)(cudarl_ctx *ctx, const float *logits, const int32_t *action,
                     const float *old_logp, const float *adv, const float *value,
                     const float *old_value, const float *returns, const cr_ppo_loss_params *p,
                     float *dlogits, float *dvalue, cr_ppo_stats_acc *acc, int B, int A);
    /* continuous actions (ops/cpu/ops_cpu.h's cr_cpu_gaussian_sample and
     * cr_cpu_ppo_loss_gaussian, K <= CR_GAUSSIAN_MAX_K; the loss adds its stats into acc as
     * ppo_loss does; dlogstd (K) is overwritten) */
    void (*gaussian_sample)(cudarl_ctx *ctx, const float *mean, const float *logstd,
                            const float *u, float *action, float *logp, int B, int K);
    void (*ppo_loss_gaussian)(cudarl_ctx *ctx, const float *mean, const float *logstd,
                              const float *action, const float *old_logp, const float *adv,
                              const float *value, const float *old_value, const float *returns,
                              const cr_ppo_loss_params *p, float *dmean, float *dlogstd,
                              float *dvalue, cr_ppo_stats_acc *acc, int B, int K);
    /* cr_cpu_clip_box: the box passed by value (a captured graph keeps it) */
    void (*clip_box)(cudarl_ctx *ctx, const float *x, const cr_action_box *box, float *y, int B);
    /* running normalization (cr_cpu_running_stats_update, cr_cpu_normalize_obs,
     * cr_cpu_normalize_reward), every array in backend memory */
    void (*running_stats_update)(cudarl_ctx *ctx, double *mean, double *var, double *count,
                                 const float *x, int B, int D);
    void (*normalize_obs)(cudarl_ctx *ctx, const double *mean, const double *var,
                          const float *x, float *y, int B, int D, float clip);
    void (*normalize_reward)(cudarl_ctx *ctx, double *mean, double *var, double *count,
                             double *ret, const float *reward, const uint8_t *terminated,
                             float *out, int N, float gamma, float clip);
    /* torch's clip_grad_norm_ of g (n); the norm is added to *norm_sum (backend memory) */
    void (*clip_grad_norm)(cudarl_ctx *ctx, float *g, size_t n, double max_norm,
                           double *norm_sum);
    /* Adam with the learning rate and step count in backend memory: *t += 1, then the step */
    void (*adam_step)(cudarl_ctx *ctx, float *p, const float *g, float *m, float *v, size_t n,
                      const float *lr, float b1, float b2, float eps, int64_t *t);
    /* dynamic loss scaling (ops/loss_scale.h: torch.amp.GradScaler's rules), the state s in
     * backend memory: dy *= scale; g *= 1/scale, setting s->found_inf on an inf or NaN; adam_step
     * unless s->found_inf (nothing touched when it is set); the scale's update from found_inf,
     * which it clears (cfg read on the host at the call) */
    void (*loss_scale_apply)(cudarl_ctx *ctx, const cr_loss_scale_state *s, float *dy, size_t n);
    void (*loss_scale_unscale)(cudarl_ctx *ctx, cr_loss_scale_state *s, float *g, size_t n);
    void (*adam_step_if)(cudarl_ctx *ctx, const cr_loss_scale_state *s, float *p, const float *g,
                         float *m, float *v, size_t n, const float *lr, float b1, float b2,
                         float eps, int64_t *t);
    void (*loss_scale_update)(cudarl_ctx *ctx, cr_loss_scale_state *s,
                              const cr_loss_scale_config *cfg);
    /* optional (NULL where unsupported): record the ops enqueued between graph_begin and
     * graph_end into a graph that graph_launch replays with the same buffers */
    cudarl_status (*graph_begin)(cudarl_ctx *ctx);
    cudarl_status (*graph_end)(cudarl_ctx *ctx, void **graph);
    void (*graph_launch)(cudarl_ctx *ctx, void *graph);
    void (*graph_free)(void *graph);
    /* optional: device bytes in use (total - free), to check that memory stays flat */
    size_t (*bytes_in_use)(cudarl_ctx *ctx);
    /* optional: results reach the host without stopping the device. pinned_* is page-locked
     * host memory; copy_to_host_async copies into it in stream order and returns at once;
     * events mark a point of the stream: event_done asks without waiting, event_wait blocks
     * (and counts as a host sync) */
    cudarl_status (*pinned_alloc)(cudarl_ctx *ctx, void **p, size_t bytes);
    void (*pinned_free)(cudarl_ctx *ctx, void *p);
    void (*copy_to_host_async)(cudarl_ctx *ctx, void *dst_pinned, const void *src, size_t bytes);
    cudarl_status (*event_create)(cudarl_ctx *ctx, void **event);
    void (*event_free)(cudarl_ctx *ctx, void *event);
    void (*event_record)(cudarl_ctx *ctx, void *event);
    int (*event_done)(cudarl_ctx *ctx, void *event);
    void (*event_wait)(cudarl_ctx *ctx, void *event);
    /* optional (NULL on the CPU, which has one address space and no device to switch; the
     * cr_ctx_* wrappers below call them where present): make ctx's GPU the calling thread's
     * current device; let kernels on `from`'s GPU reach `to`'s memory; make ctx's later work
     * wait on the device for an event of any context of the same device; the device address of
     * pinned host memory (zero-copy); an event that records time and the milliseconds between
     * two such completed events; what a run on ctx's device may allocate (-1: unknown) */
    void (*make_current)(const cudarl_ctx *ctx);
    cudarl_status (*enable_peer)(const cudarl_ctx *from, const cudarl_ctx *to);
    void (*stream_wait_event)(cudarl_ctx *ctx, void *event);
    void *(*host_device_ptr)(void *host);
    cudarl_status (*timing_event_create)(void **event);
    float (*event_elapsed_ms)(void *start, void *end);
    int64_t (*mem_budget)(cudarl_ctx *ctx, const char **source);
    /* optional: the device's theoretical peaks (cr_peaks) for products in `precision`: fp32 on
     * the CUDA cores, tf32 / bf16 / fp16 on the tensor cores */
    void (*peaks)(cudarl_ctx *ctx, cudarl_precision precision, cr_peaks *out);
    /* optional (NULL where absent; the CUDA backend drops it when CUDARL_FUSED=0 at context
     * init): one PPO minibatch's gradients in fused kernels. Computes exactly what
     *   mlp_forward(actor), mlp_forward(critic), ppo_loss, mlp_backward(actor, critic)
     * computes (within float rounding): g_actor and g_critic overwritten (not accumulated), and
     * the 7 loss statistics, count and last_approx_kl added into acc as ppo_loss adds them.
     * obs (B, D), action, old_logp, adv, old_value, returns (B); B >= 1, A = actor->dims[3].
     * Only for the shapes cr_ppo_fused_supported accepts; scratch: ppo_minibatch_scratch_bytes
     * (B, num_params) bytes of backend memory (num_params: both MLPs' parameters together).
     * Asynchronous, allocates nothing, graph-capturable, bitwise repeatable. */
    void (*ppo_minibatch_grads)(cudarl_ctx *ctx, const cr_mlp_view *actor,
                                const cr_mlp_view *critic, const cr_mlp_view *g_actor,
                                const cr_mlp_view *g_critic, const float *obs,
                                const int32_t *action, const float *old_logp, const float *adv,
                                const float *old_value, const float *returns,
                                const cr_ppo_loss_params *p, cr_ppo_stats_acc *acc,
                                void *scratch, int B, int A);
    size_t (*ppo_minibatch_scratch_bytes)(int B, size_t num_params);
    /* optional, with ppo_minibatch_grads: the same for the Gaussian policy of continuous actions
     * (K = actor->dims[3] means, logstd (K) a parameter of its own): exactly what
     *   mlp_forward(actor), mlp_forward(critic), ppo_loss_gaussian, mlp_backward(actor, critic)
     * computes (within float rounding), g_logstd (K) overwritten too; action (B, K) floats.
     * Only for the shapes cr_ppo_fused_gaussian_supported accepts; scratch as above (num_params:
     * both MLPs' parameters and the log-std). */
    void (*ppo_minibatch_grads_gaussian)(cudarl_ctx *ctx, const cr_mlp_view *actor,
                                         const cr_mlp_view *critic, const float *logstd,
                                         const cr_mlp_view *g_actor, const cr_mlp_view *g_critic,
                                         float *g_logstd, const float *obs, const float *action,
                                         const float *old_logp, const float *adv,
                                         const float *old_value, const float *returns,
                                         const cr_ppo_loss_params *p, cr_ppo_stats_acc *acc,
                                         void *scratch, int B);
    /* DQN (the CPU references are in ops/cpu/ops_dqn.h; src/algo/dqn/dqn.c calls these) */
    /* cr_cpu_dqn_loss on one minibatch: dq (B, A), td_error (B) unless NULL, and the
     * minibatch's three means added into acc (backend memory) */
    void (*dqn_loss)(cudarl_ctx *ctx, const float *q, const int32_t *actions,
                     const float *rewards, const uint8_t *terminated, const float *next_q_target,
                     const float *next_q_online, const float *weights, float gamma,
                     int double_dqn, int huber, float *dq, float *td_error,
                     cr_dqn_stats_acc *acc, int B, int A);
    /* *epsilon = (float)cr_linear_schedule(start_e, end_e, duration, (double)*step), then
     * *step += n: the exploration rate of the env step about to be taken, and the step counter
     * moved past it (both backend memory, so a captured graph reads them at every replay) */
    void (*epsilon_schedule)(cudarl_ctx *ctx, int64_t *step, int64_t n, double start_e,
                             double end_e, double duration, float *epsilon);
    /* cr_cpu_epsilon_greedy with epsilon read from backend memory */
    void (*epsilon_greedy)(cudarl_ctx *ctx, const float *q, const float *u_explore,
                           const float *u_action, const float *epsilon, int32_t *actions, int B,
                           int A);
    /* cr_cpu_polyak: target = tau online + (1 - tau) target (n), a copy when tau == 1 */
    void (*polyak)(cudarl_ctx *ctx, float *target, const float *online, size_t n, double tau);
    /* y = (float)x, n elements: uint8 observations as the values they are (MinAtar's 0/1
     * channels stay 0/1; no scaling) for the Q-network's float input */
    void (*u8_to_float)(cudarl_ctx *ctx, const uint8_t *x, float *y, size_t n);
    /* convolutions: a plan per layer and batch size, made at setup (ops/conv2d.h has the
     * contract), and the scaling of pixel observations */
    cudarl_status (*conv2d_plan_init)(cudarl_ctx *ctx, const cr_conv2d_desc *d,
                                      cr_conv2d_plan **plan);
    void (*conv2d_plan_free)(cr_conv2d_plan *plan);
    void (*conv2d_forward)(cudarl_ctx *ctx, const cr_conv2d_plan *plan, const float *x,
                           const float *w, const float *b, float *y, void *workspace, void *keep);
    void (*conv2d_backward)(cudarl_ctx *ctx, const cr_conv2d_plan *plan, const float *x,
                            const float *w, const float *y, float *dy, float *dx, float *dw,
                            float *db, void *workspace, void *keep, int kept);
    void (*scale_u8)(cudarl_ctx *ctx, const uint8_t *x, float *y, size_t n);
    /* one camera frame (backend memory, cr_frame_bytes(g)) converted, cropped and area-resized
     * into out (backend memory, uint8 (g->channels, g->out_h, g->out_w)), as ops/frames.h
     * defines it; the CUDA twin (ops/cuda/frames.cu) equals the CPU's bit for bit */
    void (*frame_to_obs)(cudarl_ctx *ctx, const cr_frame_geom *g, const uint8_t *frame,
                         uint8_t *out);
};

/* Shapes the fused PPO kernels are built for: tanh MLPs with hidden width 64 (both layers),
 * 1 <= obs_dim <= 32, the same obs_dim for both, 1 value out of the critic, and out of the actor
 * 2 actions (categorical) or 1 <= K <= 8 means (Gaussian). */
#define CR_FUSED_HIDDEN 64
#define CR_FUSED_MAX_OBS 32
#define CR_FUSED_MAX_GAUSS_K 8
static inline int cr_ppo_fused_mlps_ok(const cr_mlp_view *actor, const cr_mlp_view *critic) {
    const int *a = actor->dims, *c = critic->dims;
    return actor->act == CR_ACT_TANH && critic->act == CR_ACT_TANH && a[0] >= 1 &&
           a[0] <= CR_FUSED_MAX_OBS && c[0] == a[0] && a[1] == CR_FUSED_HIDDEN &&
           a[2] == CR_FUSED_HIDDEN && c[1] == CR_FUSED_HIDDEN && c[2] == CR_FUSED_HIDDEN &&
           c[3] == 1;
}
static inline int cr_ppo_fused_shape_ok(const cr_mlp_view *actor, const cr_mlp_view *critic) {
    return cr_ppo_fused_mlps_ok(actor, critic) && actor->dims[3] == 2;
}
static inline int cr_ppo_fused_gaussian_shape_ok(const cr_mlp_view *actor,
                                                 const cr_mlp_view *critic) {
    return cr_ppo_fused_mlps_ok(actor, critic) && actor->dims[3] >= 1 &&
           actor->dims[3] <= CR_FUSED_MAX_GAUSS_K;
}

/* Whether the backend has the fused op and it takes these shapes (else: the unfused ops). */
static inline int cr_ppo_fused_supported(const cr_backend *o, const cr_mlp_view *actor,
                                         const cr_mlp_view *critic) {
    return o->ppo_minibatch_grads != NULL && o->ppo_minibatch_scratch_bytes != NULL &&
           cr_ppo_fused_shape_ok(actor, critic);
}
static inline int cr_ppo_fused_gaussian_supported(const cr_backend *o, const cr_mlp_view *actor,
                                                  const cr_mlp_view *critic) {
    return o->ppo_minibatch_grads_gaussian != NULL && o->ppo_minibatch_scratch_bytes != NULL &&
           cr_ppo_fused_gaussian_shape_ok(actor, critic);
}

/* A host buffer the device copies from or into: pinned where the backend has pinned memory
 * (pinned_alloc), plain malloc elsewhere; free it with cr_host_buffer_free on the same ctx. */
cudarl_status cr_host_buffer_alloc(cudarl_ctx *ctx, void **p, size_t bytes);
void cr_host_buffer_free(cudarl_ctx *ctx, void *p);

/* The optional device-context ops above, for any context: on the CPU make_current,
 * stream_wait_event do nothing (its ops run in order on the calling thread), host_device_ptr
 * is the host pointer itself, mem_budget is -1 and the timing event is NULL (no device time to
 * measure); enable_peer is CUDARL_ERR_UNSUPPORTED there. */
void cr_ctx_make_current(const cudarl_ctx *ctx);
cudarl_status cr_ctx_enable_peer(const cudarl_ctx *from, const cudarl_ctx *to);
void cr_ctx_stream_wait_event(cudarl_ctx *ctx, void *event);
void *cr_ctx_host_device_ptr(const cudarl_ctx *ctx, void *host);
cudarl_status cr_ctx_timing_event_create(const cudarl_ctx *ctx, void **event);
float cr_ctx_event_elapsed_ms(const cudarl_ctx *ctx, void *start, void *end);
int64_t cr_ctx_mem_budget(cudarl_ctx *ctx, const char **source);

/* A branch of work beside ctx's on the same device: a context of its own (a stream, library
 * handles, scratch) that forks from ctx's stream and joins back, so that two independent pieces
 * of work overlap; inside a graph capture the fork and the join make a branch of the graph.
 * Results are the same bits as running the two pieces in order: nothing they share is written.
 * On the CPU (its ops run in order on the calling thread) there is no branch: b->ctx is NULL,
 * cr_ctx_branch_of gives ctx, and the fork and the join do nothing. */
typedef struct cr_ctx_branch {
    cudarl_ctx *ctx;   /* the branch's context; NULL where ctx has no streams */
    void *fork, *join; /* events recorded on ctx's stream and on the branch's */
} cr_ctx_branch;
cudarl_status cr_ctx_branch_open(cudarl_ctx *ctx, cr_ctx_branch *b);
void cr_ctx_branch_close(cudarl_ctx *ctx, cr_ctx_branch *b);
cudarl_ctx *cr_ctx_branch_of(cudarl_ctx *ctx, const cr_ctx_branch *b);
/* The branch's stream waits for the work queued on ctx so far / ctx's for the branch's. */
void cr_ctx_branch_fork(cudarl_ctx *ctx, const cr_ctx_branch *b);
void cr_ctx_branch_join(cudarl_ctx *ctx, const cr_ctx_branch *b);

/* The CPU backend (always built). */
extern const cr_backend cr_backend_cpu;

#ifdef __cplusplus
}
#endif

#endif
