/* PPO's rollout with the envs on CPU threads (env_pool.h) and the policy wherever the context
 * computes: the heterogeneous split of DESIGN.md.
 *
 * The N envs are split into G groups. Each step, group by group, the host waits for the
 * group's envs (step_wait), queues on the stream: the copies of its outputs to the rollout
 * buffers, V(final obs) and the episode sums for the step just taken, then the copy of its
 * observations, the policy and value forward, sampling, the copy of its actions back, and an
 * event; then it hands the group to the threads (step_begin), whose hook waits for that event
 * (cudaEventSynchronize: the threads wait on the GPU, not by polling). While the threads step
 * group A, the stream runs the policy of group B: neither side idles when both take as long.
 *
 * Every host buffer the stream copies from or into is pinned. A copy queued before a group's
 * event has run when the threads pass the hook, so the threads never overwrite observations
 * or outputs before the stream has read them, and never read actions before they have landed.
 *
 * The sampler draws the words of group g at step t after those of the groups before it, so
 * every env gets word t N + n whatever G is: with the same ops, G groups give the trajectories
 * of one group, and one group those of the envs' CUDA twin (the synchronous schedule).
 *
 * Fused (p->fused_pool: CUDA, the fused rollout's network shapes, float observations): all of
 * the above for a group and step is one kernel (ppo_fused_cartpole.h's pool step) that reads the
 * threads' outputs and writes the actions in the pinned buffers themselves, mapped into the
 * device's address space (zero-copy: no copy launches, and on an integrated GPU such as Orin no
 * second copy of the data). It computes what the fused all-GPU rollout computes, bit for bit,
 * so there G groups give exactly the trajectories of the envs' CUDA twin.
 *
 * A convolutional policy (p->conv, ppo_conv.c) runs the op-by-op schedule with uint8
 * observations: the pinned buffers hold the env's bytes, which are copied as they are into the
 * rollout's uint8 rows, and one forward of the network gives a group's logits and values
 * together. V(final obs) needs a forward only where an env truncated (a terminated episode's
 * is multiplied by 0 in GAE, and rows of envs that did not end are not read): the host sees
 * the flags once it has waited for the group, so a step without truncations (every step of a
 * MinAtar game) costs no second forward. The final_values rows it skips keep earlier finite
 * values (the arena starts zeroed). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo/ppo/ppo_internal.h"
#include "core/nvtx.h"
#include "algo/ppo/ppo_fused_cartpole.h"

typedef struct cr_ppo_pool {
    cr_env_pool pool;
    const cudarl_env_def *def;
    int groups;
    /* pinned host buffers the threads write and the stream reads (or the reverse) */
    float *obs, *final_obs;          /* (N, D) of the env's dtype: floats, or (conv policy)
                                      * uint8, read through obs_u8() */
    float *reward;                   /* (N) */
    uint8_t *terminated, *truncated, *done; /* (N) */
    void *actions;                   /* (N) int32, or (N, K) floats */
    void *event[CR_ENV_POOL_MAX_GROUPS]; /* the group's actions are on the host (NULL: no events) */
    /* --profile, fused steps: timing events around a group's step kernel; busy[g] when a pair
     * is recorded and not yet added to prof.gpu_busy */
    void *t_start[CR_ENV_POOL_MAX_GROUPS], *t_end[CR_ENV_POOL_MAX_GROUPS];
    int busy[CR_ENV_POOL_MAX_GROUPS];
    /* fused steps: the pinned buffers above as the device addresses them (set once at init) */
    float *d_obs, *d_final_obs, *d_reward;
    uint8_t *d_terminated, *d_truncated;
    int32_t *d_actions;
    /* graphed steps: group g's work at step t of the schedule, graphs[t * groups + g], captured
     * before the first rollout (NULL: the ops are launched one by one) */
    void **graphs;
    int captured; /* capture_steps ran (whether or not it made graphs) */
    struct hook_arg { struct cr_ppo_pool *pp; cudarl_ctx *ctx; } hook_arg;
    _Atomic uint64_t thread_wait_ns; /* threads' time in the hook, summed */
} cr_ppo_pool;

/* The pinned observations as the bytes of a uint8 env (conv policy). */
static const uint8_t *obs_u8(const float *obs) { return (const uint8_t *)obs; }

int cr_ppo_pool_group_count(const cr_ppo *p) {
    int gpu = p->ctx->kind == CUDARL_DEVICE_CUDA && p->ctx->ops->event_create;
    if (cr_env_def_find(p->cfg.env_id)->vec_step) return 1; /* a vector env steps whole */
    return p->cfg.env_groups > 0 ? p->cfg.env_groups : (gpu && p->N >= 2 ? 2 : 1);
}

int cr_ppo_pool_wanted(const cr_ppo *p) {
    const cudarl_ppo_config *c = &p->cfg;
    if (c->env_device == CUDARL_DEVICE_CPU) return 1;
    if (c->env_device == CUDARL_DEVICE_CUDA) return 0;
    /* auto: the batch (and its CUDA twin) if it has one; a conv policy on the GPU steps an image
     * env's CUDA twin (MinAtar's games, CartPolePixels-v1); any other env steps on threads */
    const int caps = cr_env_info_find(c->env_id)->caps;
    if (caps & (p->ctx->kind == CUDARL_DEVICE_CUDA ? CR_ENV_BATCH_CUDA : CR_ENV_BATCH)) return 0;
    return !(p->conv && p->ctx->kind == CUDARL_DEVICE_CUDA && (caps & CR_ENV_IMAGE_TWIN));
}

static void before_step(void *arg, int group) {
    struct hook_arg *h = arg;
    double t0 = cr_time_now();
    h->ctx->ops->event_wait(h->ctx, h->pp->event[group]);
    uint64_t ns = (uint64_t)((cr_time_now() - t0) * 1e9);
    atomic_fetch_add_explicit(&h->pp->thread_wait_ns, ns, memory_order_relaxed);
}

void cr_ppo_pool_free(cr_ppo *p) {
    cr_ppo_pool *pp = p->pool;
    if (!pp) return;
    cudarl_ctx *ctx = p->ctx;
    if (pp->pool.lanes) cr_env_pool_free(&pp->pool);
    if (pp->graphs) {
        for (int i = 0; i < (p->T + 1) * pp->groups; i++)
            if (pp->graphs[i]) ctx->ops->graph_free(pp->graphs[i]);
        free(pp->graphs);
    }
    for (int g = 0; g < pp->groups; g++) {
        if (pp->event[g]) ctx->ops->event_free(ctx, pp->event[g]);
        if (pp->t_start[g]) ctx->ops->event_free(ctx, pp->t_start[g]);
        if (pp->t_end[g]) ctx->ops->event_free(ctx, pp->t_end[g]);
    }
    void *bufs[] = {pp->obs, pp->final_obs, pp->reward, pp->terminated, pp->truncated, pp->done,
                     pp->actions};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) cr_host_buffer_free(ctx, bufs[i]);
    free(pp);
    p->pool = NULL;
}

cudarl_status cr_ppo_pool_init(cr_ppo *p) {
    cudarl_ctx *ctx = p->ctx;
    const cudarl_ppo_config *c = &p->cfg;
    cr_ppo_pool *pp = calloc(1, sizeof *pp);
    if (!pp) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory for the env pool");
    p->pool = pp;
    pp->def = cr_env_def_find(c->env_id);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = c->env_threads > 0 ? c->env_threads : (int)(cores > 0 ? cores : 1);
    if (threads > p->N) threads = p->N; /* a thread beyond one per env would only idle */
    int gpu = ctx->kind == CUDARL_DEVICE_CUDA && ctx->ops->event_create;
    pp->groups = cr_ppo_pool_group_count(p);
    /* data parallel: env i is the job's env rank*N + i, seeded as one process seeds it */
    cr_env_pool_config pc = {.num_envs = p->N, .num_threads = threads, .num_groups = pp->groups,
                             .first_env = (int64_t)p->rank * p->N};
    size_t N = (size_t)p->N, ob = cr_env_def_obs_bytes(pp->def); /* D floats, or D bytes */
    cudarl_status s = cr_env_pool_init(&pp->pool, pp->def, &pc, NULL);
    if (s == CUDARL_OK) s = cr_host_buffer_alloc(ctx, (void **)&pp->obs, N * ob);
    if (s == CUDARL_OK) s = cr_host_buffer_alloc(ctx, (void **)&pp->final_obs, N * ob);
    if (s == CUDARL_OK) s = cr_host_buffer_alloc(ctx, (void **)&pp->reward, N * sizeof(float));
    if (s == CUDARL_OK) s = cr_host_buffer_alloc(ctx, (void **)&pp->terminated, N);
    if (s == CUDARL_OK) s = cr_host_buffer_alloc(ctx, (void **)&pp->truncated, N);
    if (s == CUDARL_OK) s = cr_host_buffer_alloc(ctx, (void **)&pp->done, N);
    if (s == CUDARL_OK) s = cr_host_buffer_alloc(ctx, &pp->actions, N * p->act_bytes);
    pp->hook_arg.pp = pp, pp->hook_arg.ctx = ctx;
    for (int g = 0; g < pp->groups && s == CUDARL_OK && gpu; g++) {
        s = ctx->ops->event_create(ctx, &pp->event[g]);
        if (s == CUDARL_OK && p->fused_pool && c->profile)
            s = cr_ctx_timing_event_create(p->ctx, &pp->t_start[g]);
        if (s == CUDARL_OK && p->fused_pool && c->profile)
            s = cr_ctx_timing_event_create(p->ctx, &pp->t_end[g]);
        if (s == CUDARL_OK) cr_env_pool_set_hook(&pp->pool, g, before_step, &pp->hook_arg);
    }
    if (s != CUDARL_OK) {
        cr_ppo_pool_free(p);
        return s;
    }
    cr_env_pool_outputs out = {pp->obs, pp->reward, pp->terminated, pp->truncated, pp->final_obs};
    cr_env_pool_set_outputs(&pp->pool, &out);
    if (p->fused_pool) {
        pp->d_obs = cr_ctx_host_device_ptr(p->ctx, pp->obs);
        pp->d_final_obs = cr_ctx_host_device_ptr(p->ctx, pp->final_obs);
        pp->d_reward = cr_ctx_host_device_ptr(p->ctx, pp->reward);
        pp->d_terminated = cr_ctx_host_device_ptr(p->ctx, pp->terminated);
        pp->d_truncated = cr_ctx_host_device_ptr(p->ctx, pp->truncated);
        pp->d_actions = cr_ctx_host_device_ptr(p->ctx, pp->actions);
    }
    CR_INFO("envs on the CPU: %d x %s on %d thread%s in %d group%s", p->N, pp->def->id,
            threads, threads == 1 ? "" : "s", pp->groups, pp->groups == 1 ? "" : "s");
    return CUDARL_OK;
}

void cr_ppo_pool_reset(cr_ppo *p) {
    cr_ppo_pool *pp = p->pool;
    cr_env_pool_reset(&pp->pool, p->cfg.seed);
    if (p->conv)
        p->ctx->ops->copy_from_host(p->ctx, p->cnn.cur_obs, pp->obs,
                                    (size_t)p->N * pp->pool.obs_bytes);
    else
        p->ctx->ops->copy_from_host(p->ctx, p->cur_obs, pp->obs,
                                    (size_t)p->N * (size_t)p->D * sizeof(float));
}

void cr_ppo_pool_set_obs(cr_ppo *p, const void *obs) {
    memcpy(p->pool->obs, obs, (size_t)p->N * p->pool->pool.obs_bytes);
}

void cr_ppo_pool_get_obs(const cr_ppo *p, void *obs) {
    memcpy(obs, p->pool->obs, (size_t)p->N * p->pool->pool.obs_bytes);
}

int cr_ppo_pool_threads(const cr_ppo *p) { return p->pool->pool.num_threads; }
int cr_ppo_pool_groups(const cr_ppo *p) { return p->pool->groups; }

double cr_ppo_pool_thread_wait(const cr_ppo *p) {
    return p->pool ? (double)atomic_load(&p->pool->thread_wait_ns) * 1e-9 : 0.0;
}

void cr_ppo_pool_state(cr_ppo *p, void **states, size_t *bytes, int32_t **elapsed) {
    cr_env_pool *pool = &p->pool->pool;
    *states = pool->states;
    *bytes = (size_t)pool->num_envs * pool->state_stride;
    *elapsed = pool->elapsed;
}

int cr_ppo_pool_check_state(const cr_ppo *p, int *bad, char *why, size_t cap) {
    return cr_env_pool_check_state(&p->pool->pool, bad, why, cap);
}

int cr_ppo_pool_check_rows(const cr_ppo *p, const void *states, const int32_t *elapsed, int n,
                           int *bad, char *why, size_t cap) {
    const cr_env_pool *pool = &p->pool->pool;
    for (int i = 0; i < n; i++) {
        *bad = cr_env_check_state(pool->def,
                                  (const unsigned char *)states + (size_t)i * pool->state_stride,
                                  elapsed[i], why, cap);
        if (*bad) return i;
    }
    return -1;
}

/* Waits for group g's envs, counting the wait as the device's idle time when the stream had
 * run dry by then (the last group's event done: nothing queued is left). */
static void wait_group(cr_ppo *p, int g, int last_g) {
    cr_ppo_pool *pp = p->pool;
    double t0 = cr_time_now();
    int idle = pp->event[last_g] && p->ctx->ops->event_done(p->ctx, pp->event[last_g]);
    cr_env_pool_step_wait(&pp->pool, g);
    double dt = cr_time_now() - t0;
    p->prof.env_wait += dt;
    if (idle) p->prof.gpu_wait_cpu += dt;
}

/* Conv policy: V(final obs) into rollout rows [r, r + n) of envs [b, b + n), where one of them
 * truncated (the flags are on the host); the group's logits rows serve as the actor's scratch
 * (act() has sampled from them, and rewrites them next). */
static void absorb_final_conv(cr_ppo *p, size_t r, int b, int n) {
    cr_ppo_pool *pp = p->pool;
    int truncated = 0;
    for (int i = b; i < b + n; i++) truncated |= pp->truncated[i];
    if (!truncated) return;
    size_t D = (size_t)p->D;
    uint8_t *final = p->cnn.final_obs + (size_t)b * D;
    p->ctx->ops->copy_from_host(p->ctx, final, obs_u8(pp->final_obs) + (size_t)b * D,
                                (size_t)n * D);
    cr_ppo_part(p, CR_PART_FORWARD); /* --profile's marks: no-ops without it */
    cr_ppo_conv_forward(p, p->act_params, final, p->logits + (size_t)b * (size_t)p->A,
                        p->final_values + r, n);
    cr_ppo_part(p, CR_PART_NONE);
    cr_ppo_count_rows(p, n);
}

/* Queues what follows step t of envs [b, b + n): their outputs into the rollout rows, done,
 * V(final obs) of the envs that ended, and the episode sums. */
static void absorb(cr_ppo *p, int t, int b, int n) {
    cr_ppo_pool *pp = p->pool;
    cudarl_ctx *ctx = p->ctx;
    const cr_backend *o = ctx->ops;
    size_t r = (size_t)t * (size_t)p->N + (size_t)b, D = (size_t)p->D;
    o->copy_from_host(ctx, p->rewards + r, pp->reward + b, (size_t)n * sizeof(float));
    o->copy_from_host(ctx, p->terminated + r, pp->terminated + b, (size_t)n);
    o->copy_from_host(ctx, p->truncated + r, pp->truncated + b, (size_t)n);
    o->copy_from_host(ctx, p->done + r, pp->done + b, (size_t)n);
    if (p->conv) {
        absorb_final_conv(p, r, b, n);
    } else {
        o->copy_from_host(ctx, p->final_obs + r * D, pp->final_obs + (size_t)b * D,
                          (size_t)n * D * sizeof(float));
        cr_ppo_norm_obs_apply(p, p->final_obs + r * D, n);
        cr_mlp_view critic = cr_ac_critic(&p->layout, p->act_params);
        cr_mlp_forward(ctx, &critic, p->final_obs + r * D, p->final_values + r,
                       &p->cache_critic, n);
    }
    o->episodes_record(ctx, p->rewards + r, p->done + r, p->ep_return + b, p->ep_length + b,
                       p->log, n); /* the env's rewards, before their normalization */
    cr_ppo_norm_reward(p, p->rewards + r, p->terminated + r, b, n);
}

/* Queues the policy of step t for envs [b, b + n) and the copy of their actions to the host. */
static void act(cr_ppo *p, int t, int b, int n) {
    cr_ppo_pool *pp = p->pool;
    cudarl_ctx *ctx = p->ctx;
    const cr_backend *o = ctx->ops;
    size_t r = (size_t)t * (size_t)p->N + (size_t)b, D = (size_t)p->D, A = (size_t)p->A;
    if (p->conv) { /* --profile's part: the forward and the sampling below */
        uint8_t *obs = p->cnn.obs + r * D;
        o->copy_from_host(ctx, obs, obs_u8(pp->obs) + (size_t)b * D, (size_t)n * D);
        cr_ppo_part(p, CR_PART_FORWARD);
        cr_ppo_conv_forward(p, p->act_params, obs, p->logits + (size_t)b * A, p->values + r, n);
        cr_ppo_count_rows(p, n);
    } else {
        float *obs = p->obs + r * D;
        o->copy_from_host(ctx, obs, pp->obs + (size_t)b * D, (size_t)n * D * sizeof(float));
        cr_ppo_norm_obs_take(p, obs, n);
        cr_mlp_view actor = cr_ac_actor(&p->layout, p->act_params);
        cr_mlp_view critic = cr_ac_critic(&p->layout, p->act_params);
        cr_mlp_forward(ctx, &actor, obs, p->logits + (size_t)b * A, &p->cache_actor, n);
        cr_mlp_forward(ctx, &critic, obs, p->values + r, &p->cache_critic, n);
    }
    const void *a = cr_ppo_sample(p, b, n, r);
    if (p->conv) cr_ppo_part(p, CR_PART_NONE);
    void *h = (unsigned char *)pp->actions + (size_t)b * p->act_bytes;
    if (o->copy_to_host_async) o->copy_to_host_async(ctx, h, a, (size_t)n * p->act_bytes);
    else o->copy_to_host(ctx, h, a, (size_t)n * p->act_bytes);
}

/* The fused pool step (ppo_fused_cartpole.h) of envs [b, b + n): the outputs of step t_absorb
 * and the policy of step t_act (-1: none; t_act -1 with `end` also sets the rollout's last
 * values and observations), reading and writing the pinned host buffers in place. */
static void fused_step(cr_ppo *p, int g, int t_absorb, int t_act, int b, int n, int end) {
    cr_ppo_pool *pp = p->pool;
    /* --profile: the group's previous step is done (its threads or the phase's device sync
     * waited for it): add its device time, then time this one */
    if (pp->t_start[g] && pp->busy[g])
        p->prof.gpu_busy += 1e-3 * cr_ctx_event_elapsed_ms(p->ctx, pp->t_start[g], pp->t_end[g]);
    if (pp->t_start[g]) p->ctx->ops->event_record(p->ctx, pp->t_start[g]);
    cr_ppo_pool_step_args a = {
        .actor = cr_ac_actor(&p->layout, p->act_params),
        .critic = cr_ac_critic(&p->layout, p->act_params),
        .sampler = p->sampler, .N = p->N, .b = b, .n = n, .t_absorb = t_absorb, .t_act = t_act,
        .h_obs = pp->d_obs, .h_final_obs = pp->d_final_obs, .h_reward = pp->d_reward,
        .h_terminated = pp->d_terminated, .h_truncated = pp->d_truncated,
        .h_actions = pp->d_actions,
        .obs = p->obs, .final_obs = p->final_obs, .actions = p->actions, .logp = p->logp,
        .values = p->values, .rewards = p->rewards, .final_values = p->final_values,
        .terminated = p->terminated, .truncated = p->truncated, .done = p->done,
        .ep_return = p->ep_return, .ep_length = p->ep_length, .fin_return = p->fin_return,
        .fin_length = p->fin_length, .last_values = end ? p->last_values : NULL,
        .cur_obs = end ? p->cur_obs : NULL};
    cr_ppo_pool_step_cuda(p->ctx, &a);
    if (pp->t_end[g]) p->ctx->ops->event_record(p->ctx, pp->t_end[g]), pp->busy[g] = 1;
}

/* The copies and ops of group g, envs [b, b + n), at step t of the schedule: take in the
 * outputs of step t - 1 (t > 0) and act on step t (t < T; t == T is the rollout's end). */
static void group_ops(cr_ppo *p, int t, int b, int n) {
    if (t > 0) absorb(p, t - 1, b, n);
    if (t < p->T) act(p, t, b, n);
}

/* Most graphs of graphed steps ((T + 1) x groups); a longer schedule launches op by op. */
#define MAX_STEP_GRAPHS 1024

/* Graphed steps: on a backend with graphs, an MLP policy (a conv policy's absorb reads host
 * flags to decide what to queue) and no --async (whose buffers swap), every group_ops of the
 * schedule is captured once, before the first rollout, while no env thread runs; the rollout
 * then launches one graph per group and step instead of ~40 copies and ops, whose launches
 * bound the step otherwise. The same kernels in the same order: the results are the same. */
static void capture_steps(cr_ppo *p) {
    cr_ppo_pool *pp = p->pool;
    cudarl_ctx *ctx = p->ctx;
    const cr_backend *o = ctx->ops;
    const int G = pp->groups, count = (p->T + 1) * G;
    if (!o->graph_begin || p->conv || p->learner || count > MAX_STEP_GRAPHS) return;
    pp->graphs = calloc((size_t)count, sizeof *pp->graphs);
    if (!pp->graphs) return; /* launched op by op */
    for (int t = 0; t <= p->T; t++)
        for (int g = 0; g < G; g++) {
            int b, e;
            cr_env_pool_group_range(&pp->pool, g, &b, &e);
            void **graph = &pp->graphs[t * G + g];
            cudarl_status s = o->graph_begin(ctx);
            if (s == CUDARL_OK) {
                group_ops(p, t, b, e - b);
                s = o->graph_end(ctx, graph);
            }
            if (s != CUDARL_OK) {
                CR_WARN("graph capture of the env pool's steps failed (%s); launching ops one "
                        "by one", cudarl_last_error());
                for (int i = 0; i < count; i++)
                    if (pp->graphs[i]) o->graph_free(pp->graphs[i]);
                free(pp->graphs);
                pp->graphs = NULL;
                return;
            }
        }
}

/* The device's work for group g, envs [b, b + n), at step t of the schedule: group_ops, as one
 * graph when the steps are graphed. Fused: one kernel (ppo_fused_cartpole.h's pool step)
 * instead of ~20 copies and ops. */
static void group_work(cr_ppo *p, int g, int t, int b, int n) {
    if (p->fused_pool) {
        fused_step(p, g, t - 1, t < p->T ? t : -1, b, n, t == p->T);
        return;
    }
    cr_ppo_pool *pp = p->pool;
    if (t > 0) /* on the host, before the copy of done that absorb queues */
        for (int i = b; i < b + n; i++) pp->done[i] = pp->terminated[i] | pp->truncated[i];
    if (pp->graphs) p->ctx->ops->graph_launch(p->ctx, pp->graphs[t * pp->groups + g]);
    else group_ops(p, t, b, n);
}

void cr_ppo_pool_rollout_steps(cr_ppo *p) {
    cr_ppo_pool *pp = p->pool;
    cudarl_ctx *ctx = p->ctx;
    const int G = pp->groups;
    if (!p->fused_pool && !pp->graphs && !pp->captured) {
        capture_steps(p);
        pp->captured = 1;
    }
    for (int t = 0; t <= p->T; t++) {
        for (int g = 0; g < G; g++) {
            int b, e;
            cr_env_pool_group_range(&pp->pool, g, &b, &e);
            if (t > 0) wait_group(p, g, (g + G - 1) % G);
            group_work(p, g, t, b, e - b);
            if (t == p->T) continue; /* the end: nothing more to step */
            if (pp->event[g]) ctx->ops->event_record(ctx, pp->event[g]);
            CR_RANGE_PUSH("env group step");
            cr_env_pool_step_begin(&pp->pool, g, pp->actions);
            CR_RANGE_POP();
        }
    }
    if (p->fused_pool) { /* last values and observations are the last kernels' */
        cr_ppo_pool_rollout_cuda_end(ctx, p->sampler, p->T, p->N, p->done, p->fin_return,
                                     p->fin_length, p->log);
        return;
    }
    if (p->conv) { /* the logits are the forward's scratch here */
        ctx->ops->copy_from_host(ctx, p->cnn.cur_obs, pp->obs, (size_t)p->N * (size_t)p->D);
        cr_ppo_part(p, CR_PART_FORWARD);
        cr_ppo_conv_forward(p, p->act_params, p->cnn.cur_obs, p->logits, p->last_values, p->N);
        cr_ppo_part(p, CR_PART_NONE);
        cr_ppo_count_rows(p, p->N);
        return;
    }
    ctx->ops->copy_from_host(ctx, p->cur_obs, pp->obs, (size_t)p->N * (size_t)p->D * sizeof(float));
    /* normalized, not taken in: the next rollout's first step takes them in */
    cr_ppo_norm_obs_apply(p, p->cur_obs, p->N);
    cr_mlp_view critic = cr_ac_critic(&p->layout, p->act_params);
    cr_mlp_forward(ctx, &critic, p->cur_obs, p->last_values, &p->cache_critic, p->N);
}
