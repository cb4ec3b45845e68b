/* The CPU backend: the ops of src/ops/cpu behind the backend interface. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/backend.h"
#include "ops/cpu/ops_dqn.h"

static cudarl_status cpu_arena_alloc(cudarl_ctx *ctx, cr_arena *a, const cr_plan *p) {
    return cr_arena_alloc(a, p, CR_MEM_HOST);
}

static void cpu_arena_free(cudarl_ctx *ctx, cr_arena *a) { cr_arena_free(a); }

static void cpu_copy(cudarl_ctx *ctx, void *dst, const void *src, size_t bytes) {
    if (bytes) memmove(dst, src, bytes);
}

static void cpu_copy_to_host(cudarl_ctx *ctx, void *dst, const void *src, size_t bytes) {
    ctx->host_syncs++;
    if (bytes) memmove(dst, src, bytes);
}

static void cpu_zero(cudarl_ctx *ctx, void *dst, size_t bytes) {
    if (bytes) memset(dst, 0, bytes);
}

static void cpu_sync(cudarl_ctx *ctx) {}

static void cpu_linear_forward(cudarl_ctx *ctx, const float *x, const float *w, const float *b,
                               float *y, int B, int I, int O) {
    cr_cpu_linear_forward(x, w, b, y, B, I, O);
}

static void cpu_linear_tanh_forward(cudarl_ctx *ctx, const float *x, const float *w,
                                    const float *b, float *y, int B, int I, int O) {
    cr_cpu_linear_tanh_forward(x, w, b, y, B, I, O);
}

static void cpu_linear_backward(cudarl_ctx *ctx, const float *dy, const float *x, const float *w,
                                float *dx, float *dw, float *db, int B, int I, int O) {
    cr_cpu_linear_backward(dy, x, w, dx, dw, db, B, I, O);
}

static void cpu_tanh_backward(cudarl_ctx *ctx, const float *y, const float *dy, float *dx,
                              size_t n) {
    cr_cpu_tanh_backward(y, dy, dx, n);
}

static void cpu_linear_relu_forward(cudarl_ctx *ctx, const float *x, const float *w,
                                    const float *b, float *y, int B, int I, int O) {
    cr_cpu_linear_relu_forward(x, w, b, y, B, I, O);
}

static void cpu_relu_backward(cudarl_ctx *ctx, const float *y, const float *dy, float *dx,
                              size_t n) {
    cr_cpu_relu_backward(y, dy, dx, n);
}

static void cpu_uniform(cudarl_ctx *ctx, cr_rng_stream *s, float *u, int n) {
    cr_cpu_uniform(s, u, n);
}

static void cpu_rng_skip(cudarl_ctx *ctx, cr_rng_stream *s, uint64_t n) { s->offset += n; }

static void cpu_permutation(cudarl_ctx *ctx, cr_rng_stream *s, int32_t *perm, int n) {
    cr_cpu_permutation(s, perm, n);
}

static void cpu_episodes_record(cudarl_ctx *ctx, const float *reward, const uint8_t *done,
                                double *ep_return, int64_t *ep_length, cr_episode_log *log,
                                int N) {
    cr_cpu_episodes_record(reward, done, ep_return, ep_length, log, N);
}

static void cpu_categorical_sample(cudarl_ctx *ctx, const float *logits, const float *u,
                                   int32_t *action, float *logp, int B, int A) {
    cr_cpu_categorical_sample(logits, u, action, logp, B, A);
}

static void cpu_categorical_argmax(cudarl_ctx *ctx, const float *logits, int32_t *action, int B,
                                   int A) {
    cr_cpu_categorical_argmax(logits, action, B, A);
}

static void cpu_bootstrap_values(cudarl_ctx *ctx, const float *values, const float *final_values,
                                 const float *last_values, const uint8_t *done,
                                 float *next_values, int T, int N) {
    cr_cpu_bootstrap_values(values, final_values, last_values, done, next_values, T, N);
}

static void cpu_gae(cudarl_ctx *ctx, const float *rewards, const float *values,
                    const float *next_values, const uint8_t *terminated, const uint8_t *done,
                    float gamma, float lambda, float *adv, float *returns, int T, int N) {
    cr_cpu_gae(rewards, values, next_values, terminated, done, gamma, lambda, adv, returns, T, N);
}

static void cpu_value_stats(cudarl_ctx *ctx, const float *values, const float *returns, int n,
                            double *out) {
    cr_cpu_value_stats(values, returns, n, out);
}

static void cpu_gather_rows(cudarl_ctx *ctx, const void *src, const int32_t *idx, void *dst,
                            int rows, size_t row_bytes) {
    const unsigned char *s = src;
    unsigned char *d = dst;
    for (int r = 0; r < rows; r++) memcpy(d + (size_t)r * row_bytes, s + (size_t)idx[r] * row_bytes, row_bytes);
}

static void cpu_gather_rows_many(cudarl_ctx *ctx, const int32_t *idx, int rows, int count,
                                 const cr_gather_item *items) {
    CUDARL_ASSERT(0 <= count && count <= CR_GATHER_MAX);
    for (int k = 0; k < count; k++)
        cpu_gather_rows(ctx, items[k].src, idx, items[k].dst, rows, items[k].row_bytes);
}

static void cpu_keep_rows(cudarl_ctx *ctx, const void *src, const uint8_t *flag, void *dst,
                          int32_t *step, int32_t t, int rows, size_t row_bytes) {
    const unsigned char *s = src;
    unsigned char *d = dst;
    for (int i = 0; i < rows; i++)
        if (flag[i]) {
            memcpy(d + (size_t)i * row_bytes, s + (size_t)i * row_bytes, row_bytes);
            step[i] = t;
        }
}

static void cpu_place_values(cudarl_ctx *ctx, const float *v, int32_t *step, float *out,
                             int rows) {
    for (int i = 0; i < rows; i++)
        if (step[i] > 0) {
            out[(size_t)(step[i] - 1) * (size_t)rows + (size_t)i] = v[i];
            step[i] = 0;
        }
}

static void add_stats(cr_ppo_stats_acc *acc, const cr_ppo_loss_stats *s) {
    acc->sum[0] += s->loss, acc->sum[1] += s->pg_loss, acc->sum[2] += s->v_loss;
    acc->sum[3] += s->entropy, acc->sum[4] += s->old_approx_kl, acc->sum[5] += s->approx_kl;
    acc->sum[6] += s->clipfrac;
    acc->count += 1;
    acc->last_approx_kl = s->approx_kl;
}

static void cpu_ppo_loss(cudarl_ctx *ctx, const float *logits, const int32_t *action,
                         const float *old_logp, const float *adv, const float *value,
                         const float *old_value, const float *returns,
                         const cr_ppo_loss_params *p, float *dlogits, float *dvalue,
                         cr_ppo_stats_acc *acc, int B, int A) {
    cr_ppo_loss_stats s;
    cr_cpu_ppo_loss(logits, action, old_logp, adv, value, old_value, returns, p, dlogits, dvalue,
                    &s, B, A);
    add_stats(acc, &s);
}


static void cpu_gaussian_sample(cudarl_ctx *ctx, const float *mean, const float *logstd,
                                const float *u, float *action, float *logp, int B, int K) {
    (void)ctx;
    cr_cpu_gaussian_sample(mean, logstd, u, action, logp, B, K);
}

static void cpu_ppo_loss_gaussian(cudarl_ctx *ctx, const float *mean, const float *logstd,
                                  const float *action, const float *old_logp, const float *adv,
                                  const float *value, const float *old_value,
                                  const float *returns, const cr_ppo_loss_params *p,
                                  float *dmean, float *dlogstd, float *dvalue,
                                  cr_ppo_stats_acc *acc, int B, int K) {
    (void)ctx;
    cr_ppo_loss_stats s;
    cr_cpu_ppo_loss_gaussian(mean, logstd, action, old_logp, adv, value, old_value, returns, p,
                             dmean, dlogstd, dvalue, &s, B, K);
    add_stats(acc, &s);
}

static void cpu_clip_box(cudarl_ctx *ctx, const float *x, const cr_action_box *box, float *y,
                         int B) {
    (void)ctx;
    cr_cpu_clip_box(x, box, y, B);
}

static void cpu_running_stats_update(cudarl_ctx *ctx, double *mean, double *var, double *count,
                                     const float *x, int B, int D) {
    (void)ctx;
    cr_cpu_running_stats_update(mean, var, count, x, B, D);
}

static void cpu_normalize_obs(cudarl_ctx *ctx, const double *mean, const double *var,
                              const float *x, float *y, int B, int D, float clip) {
    (void)ctx;
    cr_cpu_normalize_obs(mean, var, x, y, B, D, clip);
}

static void cpu_normalize_reward(cudarl_ctx *ctx, double *mean, double *var, double *count,
                                 double *ret, const float *reward, const uint8_t *terminated,
                                 float *out, int N, float gamma, float clip) {
    (void)ctx;
    cr_cpu_normalize_reward(mean, var, count, ret, reward, terminated, out, N, gamma, clip);
}

static void cpu_clip_grad_norm(cudarl_ctx *ctx, float *g, size_t n, double max_norm,
                               double *norm_sum) {
    *norm_sum += cr_cpu_clip_grad_norm(g, n, max_norm);
}

static void cpu_adam_step(cudarl_ctx *ctx, float *p, const float *g, float *m, float *v, size_t n,
                          const float *lr, float b1, float b2, float eps, int64_t *t) {
    *t += 1;
    cr_cpu_adam_step(p, g, m, v, n, *lr, b1, b2, eps, *t);
}

static void cpu_dqn_loss(cudarl_ctx *ctx, const float *q, const int32_t *actions,
                         const float *rewards, const uint8_t *terminated,
                         const float *next_q_target, const float *next_q_online,
                         const float *weights, float gamma, int double_dqn, int huber, float *dq,
                         float *td_error, cr_dqn_stats_acc *acc, int B, int A) {
    cr_dqn_loss_stats s;
    cr_cpu_dqn_loss(q, actions, rewards, terminated, next_q_target, next_q_online, weights, gamma,
                    double_dqn, huber, dq, td_error, &s, B, A);
    acc->loss_sum += s.loss, acc->q_sum += s.q_mean, acc->td_abs_sum += s.td_abs_mean;
    acc->count += 1;
    acc->last_loss = s.loss;
}

static void cpu_epsilon_schedule(cudarl_ctx *ctx, int64_t *step, int64_t n, double start_e,
                                 double end_e, double duration, float *epsilon) {
    *epsilon = (float)cr_linear_schedule(start_e, end_e, duration, (double)*step);
    *step += n;
}

static void cpu_epsilon_greedy(cudarl_ctx *ctx, const float *q, const float *u_explore,
                               const float *u_action, const float *epsilon, int32_t *actions,
                               int B, int A) {
    cr_cpu_epsilon_greedy(q, u_explore, u_action, *epsilon, actions, B, A);
}

static void cpu_polyak(cudarl_ctx *ctx, float *target, const float *online, size_t n,
                       double tau) {
    cr_cpu_polyak(target, online, n, tau);
}

static void cpu_u8_to_float(cudarl_ctx *ctx, const uint8_t *x, float *y, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = (float)x[i];
}

static void cpu_loss_scale_apply(cudarl_ctx *ctx, const cr_loss_scale_state *s, float *dy,
                                 size_t n) {
    cr_loss_scale_apply(s, dy, n);
}

static void cpu_loss_scale_unscale(cudarl_ctx *ctx, cr_loss_scale_state *s, float *g, size_t n) {
    (void)cr_loss_scale_unscale(s, g, n);
}

static void cpu_adam_step_if(cudarl_ctx *ctx, const cr_loss_scale_state *s, float *p,
                             const float *g, float *m, float *v, size_t n, const float *lr,
                             float b1, float b2, float eps, int64_t *t) {
    (void)cr_loss_scale_adam_step_if(s, p, g, m, v, n, lr, b1, b2, eps, t);
}

static void cpu_loss_scale_update(cudarl_ctx *ctx, cr_loss_scale_state *s,
                                  const cr_loss_scale_config *cfg) {
    cr_loss_scale_update(s, cfg);
}

/* conv2d (ops/conv2d.h): the plan is the checked desc and the scratch of cr_cpu_conv2d_*. */
static cudarl_status cpu_conv2d_plan_init(cudarl_ctx *ctx, const cr_conv2d_desc *d,
                                          cr_conv2d_plan **out) {
    *out = NULL;
    cr_conv2d_desc desc = *d;
    CR_TRY(cr_conv2d_shape_check(&desc.shape));
    if (desc.products != CUDARL_PRECISION_FP32 && desc.products != CUDARL_PRECISION_TF32)
        return cr_fail(CUDARL_ERR_UNSUPPORTED, "conv2d on the CPU: products in %s; the CPU "
                       "computes convolutions in fp32 only (train in fp32, or on a GPU)",
                       cudarl_precision_name(desc.products));
    cr_conv2d_plan *p = (cr_conv2d_plan *)calloc(1, sizeof *p);
    if (!p) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "conv2d on the CPU: out of host memory");
    p->desc = desc;
    p->workspace_bytes = cr_cpu_conv2d_scratch_bytes(&desc.shape);
    snprintf(p->describe, sizeof p->describe, "im2col + matrix product per image, fp32");
    *out = p;
    return CUDARL_OK;
}

static void cpu_conv2d_plan_free(cr_conv2d_plan *p) { free(p); }

static void cpu_conv2d_forward(cudarl_ctx *ctx, const cr_conv2d_plan *p, const float *x,
                               const float *w, const float *b, float *y, void *workspace,
                               void *keep) {
    const cr_conv2d_shape *s = &p->desc.shape;
    cr_cpu_conv2d_forward(s, x, w, b, y, p->desc.act == CR_CONV2D_RELU, workspace);
    if (p->desc.act == CR_CONV2D_TANH)
        cr_cpu_tanh_forward(y, y, (size_t)s->N * s->K * s->P * s->Q);
}

static void cpu_conv2d_backward(cudarl_ctx *ctx, const cr_conv2d_plan *p, const float *x,
                                const float *w, const float *y, float *dy, float *dx, float *dw,
                                float *db, void *workspace, void *keep, int kept) {
    const cr_conv2d_shape *s = &p->desc.shape;
    if (p->desc.act == CR_CONV2D_TANH)
        cr_cpu_tanh_backward(y, dy, dy, (size_t)s->N * s->K * s->P * s->Q);
    cr_cpu_conv2d_backward(s, x, w, p->desc.act == CR_CONV2D_RELU ? y : NULL, dy, dx, dw, db,
                           workspace);
}

static void cpu_scale_u8(cudarl_ctx *ctx, const uint8_t *x, float *y, size_t n) {
    cr_cpu_scale_u8(x, y, n);
}

static void cpu_frame_to_obs(cudarl_ctx *ctx, const cr_frame_geom *g, const uint8_t *frame,
                             uint8_t *out) {
    cr_cpu_frame_to_obs(g, frame, out);
}

const cr_backend cr_backend_cpu = {
    .name = "cpu",
    .arena_alloc = cpu_arena_alloc,
    .arena_free = cpu_arena_free,
    .copy_to_host = cpu_copy_to_host,
    .copy_from_host = cpu_copy,
    .copy = cpu_copy,
    .zero = cpu_zero,
    .sync = cpu_sync,
    .linear_forward = cpu_linear_forward,
    .linear_tanh_forward = cpu_linear_tanh_forward,
    .linear_backward = cpu_linear_backward,
    .tanh_backward = cpu_tanh_backward,
    .linear_relu_forward = cpu_linear_relu_forward,
    .relu_backward = cpu_relu_backward,
    .uniform = cpu_uniform,
    .rng_skip = cpu_rng_skip,
    .permutation = cpu_permutation,
    .episodes_record = cpu_episodes_record,
    .categorical_sample = cpu_categorical_sample,
    .categorical_argmax = cpu_categorical_argmax,
    .bootstrap_values = cpu_bootstrap_values,
    .gae = cpu_gae,
    .value_stats = cpu_value_stats,
    .gather_rows = cpu_gather_rows,
    .gather_rows_many = cpu_gather_rows_many,
    .keep_rows = cpu_keep_rows,
    .place_values = cpu_place_values,
    .ppo_loss = cpu_ppo_loss,
    .gaussian_sample = cpu_gaussian_sample,
    .ppo_loss_gaussian = cpu_ppo_loss_gaussian,
    .clip_box = cpu_clip_box,
    .running_stats_update = cpu_running_stats_update,
    .normalize_obs = cpu_normalize_obs,
    .normalize_reward = cpu_normalize_reward,
    .clip_grad_norm = cpu_clip_grad_norm,
    .adam_step = cpu_adam_step,
    .loss_scale_apply = cpu_loss_scale_apply,
    .loss_scale_unscale = cpu_loss_scale_unscale,
    .adam_step_if = cpu_adam_step_if,
    .loss_scale_update = cpu_loss_scale_update,
    .dqn_loss = cpu_dqn_loss,
    .epsilon_schedule = cpu_epsilon_schedule,
    .epsilon_greedy = cpu_epsilon_greedy,
    .polyak = cpu_polyak,
    .u8_to_float = cpu_u8_to_float,
    .conv2d_plan_init = cpu_conv2d_plan_init,
    .conv2d_plan_free = cpu_conv2d_plan_free,
    .conv2d_forward = cpu_conv2d_forward,
    .conv2d_backward = cpu_conv2d_backward,
    .scale_u8 = cpu_scale_u8,
    .frame_to_obs = cpu_frame_to_obs,
};
