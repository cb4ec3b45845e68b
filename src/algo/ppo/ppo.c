/* PPO (CleanRL's ppo.py) for discrete actions: rollout -> GAE -> clipped update -> log ->
 * checkpoint. Everything here goes through the context's backend, so the same loop runs on any
 * device the backend supports. The policy is ppo.py's two MLPs over float features, or with
 * --policy minatar-cnn | nature-cnn ppo_atari.py's convolutional Agent over uint8 frames
 * (ppo_conv.c), whose envs step on CPU threads (ppo_pool.c); the loop, the memory plan and the
 * checkpoint are shared. */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "algo/metrics_pipe.h"
#include "algo/ppo/ppo_internal.h"
#include "algo/run.h"
#include "io/tensorboard.h"
#include "core/nvtx.h"
#include "algo/ppo/ppo_fused_cartpole.h"
#include "nn/precision.h"
#include "ops/comm.h"
#include "ops/parallel.h"
#include "ops/cpu/ops_cpu.h"

/* ---- memory plan ------------------------------------------------------------------------ */

enum { M_PARAMS, M_GRADS, M_ADAM_M, M_ADAM_V, M_ADAM_T, M_LR, M_ENV, M_OBS, M_FINAL_OBS, M_CUR_OBS,
       M_ACTIONS, M_LOGP, M_REWARDS, M_VALUES, M_FINAL_VALUES, M_NEXT_VALUES, M_ADV, M_RETURNS,
       M_TERM, M_TRUNC, M_DONE, M_LAST_VALUES, M_LOGITS, M_U, M_MB_IDX, M_MB_OBS,
       M_MB_LOGP, M_MB_ADV, M_MB_RET, M_MB_VAL, M_MB_ACT, M_MB_LOGITS, M_MB_VALUE, M_MB_DLOGITS,
       M_MB_DVALUE, M_CACHE_A, M_CACHE_C, M_METRICS, M_SAMPLER, M_SHUFFLER, M_EP_RETURN,
       M_EP_LENGTH, M_FUSED_SCRATCH, M_FIN_RETURN, M_FIN_LENGTH, M_ACT_PARAMS, M_ALT_OBS,
       M_ALT_FINAL_OBS, M_ALT_ACTIONS, M_ALT_LOGP, M_ALT_REWARDS, M_ALT_VALUES,
       M_ALT_FINAL_VALUES, M_ALT_NEXT_VALUES, M_ALT_ADV, M_ALT_RETURNS, M_ALT_TERM, M_ALT_TRUNC,
       M_ALT_DONE, M_NORM, M_KEPT_OBS, M_KEPT_STEP, M_KEPT_VALUES, M_DIST_GRADS, M_COUNT };

size_t cr_ppo_norm_doubles(const cr_ppo *p) {
    return (p->cfg.norm_obs ? 2 * (size_t)p->D + 1 : 0) +
           (p->cfg.norm_reward ? 3 + (size_t)p->world_N : 0); /* every env's return: the job's */
}

/* Views with the MLPs' shapes only (no buffer), for the shape checks of the fused kernels. */
static void shape_views(const cr_ppo *p, cr_mlp_view *a, cr_mlp_view *c) {
    const cr_ac_layout *l = &p->layout;
    memset(a, 0, sizeof *a);
    memset(c, 0, sizeof *c);
    a->dims[0] = c->dims[0] = l->obs_dim;
    a->dims[1] = a->dims[2] = c->dims[1] = c->dims[2] = l->hidden;
    a->dims[3] = l->num_actions, c->dims[3] = 1;
    a->act = c->act = CR_ACT_TANH;
}

/* Whether the update's minibatches go through the backend's fused op (ppo_minibatch_grads):
 * the backend has it (the CUDA backend unless CUDARL_FUSED=0) and the MLPs' shapes are its. */
static int fused_update(const cr_ppo *p, const cudarl_ctx *ctx) {
    /* the fused kernels compute in fp32 (tf32 leaves them so); bf16 and fp16 run op by op,
     * their products through cuBLAS in the format */
    if (p->conv || p->cfg.precision == CUDARL_PRECISION_BF16 ||
        p->cfg.precision == CUDARL_PRECISION_FP16)
        return 0;
    cr_mlp_view a, c;
    shape_views(p, &a, &c);
    return p->K > 0 ? cr_ppo_fused_gaussian_supported(ctx->ops, &a, &c)
                    : cr_ppo_fused_supported(ctx->ops, &a, &c);
}

/* Whether ppo_fused_cartpole.cu's device code computes the policy's steps: CUDA, an MLP policy of
 * the fused rollout's shapes (4 float observations, 2 actions, the 64-wide tanh MLPs), and
 * CUDARL_FUSED not 0 (the same switch as the fused update). */
static int fused_policy_steps(const cr_ppo *p, const cudarl_ctx *ctx) {
    if (p->conv || p->K > 0 || p->cfg.norm_obs || p->cfg.norm_reward ||
        ctx->kind != CUDARL_DEVICE_CUDA || !fused_update(p, ctx) ||
        p->env_info->def->obs_dtype != CUDARL_OBS_F32)
        return 0;
    cr_mlp_view a, c;
    shape_views(p, &a, &c);
    return cr_ppo_rollout_cuda_shape_ok(&a, &c);
}

/* Whether the whole rollout is one kernel (env included: CartPole's batch on the device). */
static int fused_rollout(const cr_ppo *p, const cudarl_ctx *ctx) {
    /* data parallel: the kernel draws every env's uniforms of the stream, not a rank's share */
    return fused_policy_steps(p, ctx) && !cr_ppo_pool_wanted(p) && p->ranks == 1 &&
           p->env_info->batch == &cr_cartpole_batch; /* the kernel steps CartPole itself */
}

/* Whether the CPU-env pool's steps run as one kernel each (ppo_fused_cartpole.cu's pool step). */
static int fused_pool(const cr_ppo *p, const cudarl_ctx *ctx) {
    return fused_policy_steps(p, ctx) && cr_ppo_pool_wanted(p);
}

/* The plan of the trainer's arena. A conv policy takes the MLP's observation and cache items
 * for its own: uint8 observations (its final_obs one step's, N rows), the network's cache in
 * cache.actor's and the CUDA twin's workspace in cache.critic's. */
static void plan_memory(const cr_ppo *p, const cudarl_ctx *ctx, cr_plan *pl) {
    size_t P = p->num_params, TN = (size_t)p->batch, F = sizeof(float);
    size_t N = (size_t)p->N, D = (size_t)p->D, A = (size_t)p->A, mb = (size_t)p->mb;
    size_t cache = cr_mlp_cache_floats(p->mb > p->N ? p->mb : p->N, p->layout.hidden) * F;
    size_t A2 = p->cfg.async ? 1 : 0; /* the --async items' sizes are 0 otherwise */
    const size_t AB = p->act_bytes, U = p->K > 0 ? 2 * (size_t)p->K : 1; /* uniforms per env */
    const int cv = p->conv;
    const size_t OB = cv ? 1 : F; /* bytes of an observation element as stored */
    const struct { const char *name; size_t bytes; } items[M_COUNT] = {
        {"params", P * F}, {"grads", P * F}, {"adam.m", P * F}, {"adam.v", P * F},
        {"adam.t", 8}, {"lr", F},
        {"env", cr_ppo_pool_wanted(p) ? 0
                : cv                  ? cr_ppo_conv_twin_bytes(p)
                                      : cr_env_batch_bytes(p->env_info, p->N)},
        {"rollout.obs", TN * D * OB}, {"rollout.final_obs", (cv ? N : TN) * D * OB},
        {"obs", N * D * OB},
        {"rollout.actions", TN * AB}, {"rollout.logp", TN * F}, {"rollout.rewards", TN * F},
        {"rollout.values", TN * F}, {"rollout.final_values", TN * F},
        {"rollout.next_values", TN * F}, {"rollout.adv", TN * F}, {"rollout.returns", TN * F},
        {"rollout.terminated", TN}, {"rollout.truncated", TN}, {"rollout.done", TN},
        {"last_values", N * F}, {"logits", N * A * F}, {"u", N * U * F}, {"mb.idx", TN * 4},
        {"mb.obs", mb * D * OB},
        {"mb.logp", mb * F}, {"mb.adv", mb * F}, {"mb.ret", mb * F}, {"mb.val", mb * F},
        {"mb.act", mb * AB}, {"mb.logits", mb * A * F}, {"mb.value", mb * F},
        {"mb.dlogits", mb * A * F}, {"mb.dvalue", mb * F},
        {cv ? "conv.cache" : "cache.actor", cv ? cr_ppo_conv_cache_bytes(p) : cache},
        {cv ? "conv.workspace" : "cache.critic", cv ? cr_ppo_conv_workspace_bytes(p) : cache},
        {"metrics", sizeof(cr_ppo_metrics)},
        {"rng.sampler", sizeof(cr_rng_stream)}, {"rng.shuffle", sizeof(cr_rng_stream)},
        {"episode.return", N * 8}, {"episode.length", N * 8},
        {"fused.scratch",
         fused_update(p, ctx) ? ctx->ops->ppo_minibatch_scratch_bytes(p->mb, P) : 0},
        {"rollout.fin_return", fused_rollout(p, ctx) || fused_pool(p, ctx) ? TN * 8 : 0},
        {"rollout.fin_length", fused_rollout(p, ctx) || fused_pool(p, ctx) ? TN * 4 : 0},
        /* --async: the actor's weights and a second set of rollout buffers */
        {"async.act_params", A2 * P * F}, {"async.obs", A2 * TN * D * F},
        {"async.final_obs", A2 * TN * D * F}, {"async.actions", A2 * TN * AB},
        {"async.logp", A2 * TN * F}, {"async.rewards", A2 * TN * F},
        {"async.values", A2 * TN * F}, {"async.final_values", A2 * TN * F},
        {"async.next_values", A2 * TN * F}, {"async.adv", A2 * TN * F},
        {"async.returns", A2 * TN * F}, {"async.terminated", A2 * TN},
        {"async.truncated", A2 * TN}, {"async.done", A2 * TN},
        {"norm.stats", cr_ppo_norm_doubles(p) * 8},
        /* the twin's truncated envs' final observations, kept for one forward after the
         * rollout (ppo_conv.c, cr_ppo_conv_keeps_truncated) */
        {"rollout.kept_obs", cr_ppo_conv_keeps_truncated(p) ? N * D : 0},
        {"rollout.kept_step", cr_ppo_conv_keeps_truncated(p) ? N * 4 : 0},
        {"rollout.kept_values", cr_ppo_conv_keeps_truncated(p) ? N * F : 0},
        /* data parallel on a GPU: every rank's gradient, gathered by NCCL (ppo_dist.c) */
        {"dist.grads", p->dev_comm ? (size_t)p->ranks * P * F : 0},
    };
    cr_plan_init(pl);
    for (int i = 0; i < M_COUNT; i++) cr_plan_add(pl, items[i].name, items[i].bytes);
}

static void carve_memory(cr_ppo *p) {
    const cr_arena *a = &p->mem;
    int rows = p->mb > p->N ? p->mb : p->N;
    if (p->conv) { /* the observation and cache items hold the conv policy's (plan_memory) */
        p->cnn.obs = cr_arena_get(a, M_OBS), p->cnn.final_obs = cr_arena_get(a, M_FINAL_OBS);
        p->cnn.cur_obs = cr_arena_get(a, M_CUR_OBS), p->cnn.mb_obs = cr_arena_get(a, M_MB_OBS);
        cr_ppo_conv_carve(p, cr_arena_get(a, M_CACHE_A), cr_arena_get(a, M_CACHE_C));
        p->cnn.kept_obs = cr_arena_get(a, M_KEPT_OBS);
        p->cnn.kept_step = cr_arena_get(a, M_KEPT_STEP);
        p->cnn.kept_values = cr_arena_get(a, M_KEPT_VALUES);
    }
    p->params = cr_arena_get(a, M_PARAMS), p->grads = cr_arena_get(a, M_GRADS);
    if (p->dev_comm) p->dist_grads = cr_arena_get(a, M_DIST_GRADS);
    p->adam_m = cr_arena_get(a, M_ADAM_M), p->adam_v = cr_arena_get(a, M_ADAM_V);
    p->adam_t = cr_arena_get(a, M_ADAM_T), p->lr = cr_arena_get(a, M_LR);
    if (p->twin_envs) {
        CUDARL_ASSERT(cr_image_twin_init(&p->twin, p->cfg.env_id, p->N,
                                         cr_arena_get(a, M_ENV)) == CUDARL_OK);
    } else if (!cr_ppo_pool_wanted(p)) {
        cr_env_batch_init(&p->env, p->env_info, p->N, cr_arena_get(a, M_ENV));
    }
    if (!p->conv) {
        p->obs = cr_arena_get(a, M_OBS), p->final_obs = cr_arena_get(a, M_FINAL_OBS);
        p->cur_obs = cr_arena_get(a, M_CUR_OBS);
    }
    p->actions = cr_arena_get(a, M_ACTIONS);
    if (p->K > 0) p->act_f = cr_arena_get(a, M_ACTIONS), p->mb_act_f = cr_arena_get(a, M_MB_ACT);
    double *ns = cr_arena_get(a, M_NORM);
    p->norm = cr_ppo_norm_doubles(p) ? ns : NULL;
    if (p->cfg.norm_obs) {
        p->obs_mean = ns, p->obs_var = ns + p->D, p->obs_count = ns + 2 * p->D;
        ns += 2 * (size_t)p->D + 1;
    }
    if (p->cfg.norm_reward)
        p->ret_mean = ns, p->ret_var = ns + 1, p->ret_count = ns + 2, p->ret_acc = ns + 3;
    p->logp = cr_arena_get(a, M_LOGP), p->rewards = cr_arena_get(a, M_REWARDS);
    p->values = cr_arena_get(a, M_VALUES), p->final_values = cr_arena_get(a, M_FINAL_VALUES);
    p->next_values = cr_arena_get(a, M_NEXT_VALUES), p->adv = cr_arena_get(a, M_ADV);
    p->returns = cr_arena_get(a, M_RETURNS), p->terminated = cr_arena_get(a, M_TERM);
    p->truncated = cr_arena_get(a, M_TRUNC), p->done = cr_arena_get(a, M_DONE);
    p->last_values = cr_arena_get(a, M_LAST_VALUES), p->logits = cr_arena_get(a, M_LOGITS);
    p->u = cr_arena_get(a, M_U), p->mb_idx = cr_arena_get(a, M_MB_IDX);
    if (!p->conv) p->mb_obs = cr_arena_get(a, M_MB_OBS);
    p->mb_logp = cr_arena_get(a, M_MB_LOGP);
    p->mb_adv = cr_arena_get(a, M_MB_ADV), p->mb_ret = cr_arena_get(a, M_MB_RET);
    p->mb_val = cr_arena_get(a, M_MB_VAL), p->mb_act = cr_arena_get(a, M_MB_ACT);
    p->mb_logits = cr_arena_get(a, M_MB_LOGITS), p->mb_value = cr_arena_get(a, M_MB_VALUE);
    p->mb_dlogits = cr_arena_get(a, M_MB_DLOGITS), p->mb_dvalue = cr_arena_get(a, M_MB_DVALUE);
    if (!p->conv) {
        p->cache_actor = cr_mlp_cache_carve(cr_arena_get(a, M_CACHE_A), rows, p->layout.hidden);
        p->cache_critic = cr_mlp_cache_carve(cr_arena_get(a, M_CACHE_C), rows, p->layout.hidden);
    }
    p->metrics = cr_arena_get(a, M_METRICS);
    p->acc = &p->metrics->acc, p->log = &p->metrics->log;
    p->sampler = cr_arena_get(a, M_SAMPLER), p->shuffler = cr_arena_get(a, M_SHUFFLER);
    p->ep_return = cr_arena_get(a, M_EP_RETURN), p->ep_length = cr_arena_get(a, M_EP_LENGTH);
    p->fused = fused_update(p, p->ctx);
    p->fused_scratch = p->fused ? cr_arena_get(a, M_FUSED_SCRATCH) : NULL;
    p->fused_rollout = fused_rollout(p, p->ctx);
    p->fused_pool = fused_pool(p, p->ctx);
    p->fin_return = p->fused_rollout || p->fused_pool ? cr_arena_get(a, M_FIN_RETURN) : NULL;
    p->fin_length = p->fused_rollout || p->fused_pool ? cr_arena_get(a, M_FIN_LENGTH) : NULL;
    p->act_params = p->cfg.async ? cr_arena_get(a, M_ACT_PARAMS) : p->params;
    if (p->cfg.async) {
        cr_ppo_rollout_bufs *b = &p->alt;
        memset(b, 0, sizeof *b);
        b->obs = cr_arena_get(a, M_ALT_OBS), b->final_obs = cr_arena_get(a, M_ALT_FINAL_OBS);
        b->actions = cr_arena_get(a, M_ALT_ACTIONS), b->logp = cr_arena_get(a, M_ALT_LOGP);
        b->rewards = cr_arena_get(a, M_ALT_REWARDS), b->values = cr_arena_get(a, M_ALT_VALUES);
        b->final_values = cr_arena_get(a, M_ALT_FINAL_VALUES);
        b->next_values = cr_arena_get(a, M_ALT_NEXT_VALUES), b->adv = cr_arena_get(a, M_ALT_ADV);
        b->returns = cr_arena_get(a, M_ALT_RETURNS), b->terminated = cr_arena_get(a, M_ALT_TERM);
        b->truncated = cr_arena_get(a, M_ALT_TRUNC), b->done = cr_arena_get(a, M_ALT_DONE);
        /* one set: scratch of a rollout's episode sums, read by its end on the same stream */
        b->fin_return = p->fin_return, b->fin_length = p->fin_length;
    }
}

/* --async: exchanges the rollout buffers with the second set. */
static void swap_rollout_bufs(cr_ppo *p) {
    cr_ppo_rollout_bufs *b = &p->alt, t = *b;
#define SWAP_FIELD(f) (b->f = p->f, p->f = t.f)
    SWAP_FIELD(obs), SWAP_FIELD(final_obs), SWAP_FIELD(actions), SWAP_FIELD(logp);
    SWAP_FIELD(rewards), SWAP_FIELD(values), SWAP_FIELD(final_values), SWAP_FIELD(next_values);
    SWAP_FIELD(adv), SWAP_FIELD(returns), SWAP_FIELD(terminated), SWAP_FIELD(truncated);
    SWAP_FIELD(done), SWAP_FIELD(fin_return), SWAP_FIELD(fin_length);
#undef SWAP_FIELD
}

/* ---- normalization (--norm-obs, --norm-reward) ------------------------------------------ */

#define CR_NORM_CLIP 10.0f /* CleanRL's TransformObservation / TransformReward clip */

void cr_ppo_norm_obs_take(cr_ppo *p, float *obs, int n) {
    if (!p->cfg.norm_obs) return;
    cudarl_ctx *ctx = p->ctx;
    if (p->ranks > 1) cr_ppo_dist_obs_stats(p, obs); /* the job's rows, as one process */
    else ctx->ops->running_stats_update(ctx, p->obs_mean, p->obs_var, p->obs_count, obs, n, p->D);
    ctx->ops->normalize_obs(ctx, p->obs_mean, p->obs_var, obs, obs, n, p->D, CR_NORM_CLIP);
}

void cr_ppo_norm_obs_apply(cr_ppo *p, float *obs, int n) {
    if (!p->cfg.norm_obs) return;
    cudarl_ctx *ctx = p->ctx;
    ctx->ops->normalize_obs(ctx, p->obs_mean, p->obs_var, obs, obs, n, p->D, CR_NORM_CLIP);
}

void cr_ppo_norm_reward(cr_ppo *p, float *reward, const uint8_t *terminated, int b, int n) {
    if (!p->cfg.norm_reward) return;
    cudarl_ctx *ctx = p->ctx;
    if (p->ranks > 1) {
        CUDARL_ASSERT(b == 0 && n == p->N);
        cr_ppo_dist_norm_reward(p, reward, terminated, CR_NORM_CLIP);
        return;
    }
    ctx->ops->normalize_reward(ctx, p->ret_mean, p->ret_var, p->ret_count, p->ret_acc + b, reward,
                               terminated, reward, n, (float)p->cfg.gamma, CR_NORM_CLIP);
}

/* The statistics' start (RunningMeanStd(epsilon=1e-4): mean 0, var 1, count 1e-4) and every
 * env's discounted return 0. */
static cudarl_status norm_init(cr_ppo *p) {
    size_t n = cr_ppo_norm_doubles(p);
    if (n == 0) return CUDARL_OK;
    double *h = calloc(n, sizeof *h), *at = h;
    if (!h) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory");
    if (p->cfg.norm_obs) {
        for (int d = 0; d < p->D; d++) at[p->D + d] = 1.0;
        at[2 * p->D] = 1e-4;
        at += 2 * (size_t)p->D + 1;
    }
    if (p->cfg.norm_reward) at[1] = 1.0, at[2] = 1e-4;
    p->ctx->ops->copy_from_host(p->ctx, p->norm, h, n * 8);
    free(h);
    return CUDARL_OK;
}

/* ---- setup ------------------------------------------------------------------------------ */

/* The initial weights into h (num_params), from the run's seed, on the host's cores: a
 * Nature-CNN's orthogonal init takes most of a second on one, and its bits do not depend on the
 * count. The calling thread's OpenMP team size is restored. */
static void init_weights(const cr_ppo *p, float *h, int spare) {
    cr_philox_state init;
    cr_philox_seed(&init, p->cfg.seed, CR_STREAM_INIT);
    const int threads = cr_cpu_threads(), cores = omp_get_num_procs();
    /* spare: cores left to the thread that runs the setup meanwhile (a team's barriers wait
     * for its slowest thread, so one that shares a core slows them all) */
    cr_cpu_set_threads(cores - spare > 0 ? cores - spare : 1);
    if (p->conv) cr_ppo_conv_init_params(p, h, &init);
    else cr_ac_init_params(&p->layout, h, &init);
    cr_cpu_set_threads(threads);
}

/* init_job's thread: it reads the config and the planned network, which nothing writes while
 * it runs, and writes only its buffer. */
static void *init_job_run(void *arg) {
    cr_ppo *p = arg;
    init_weights(p, p->init_job.params, 1);
    return NULL;
}

/* Starts a conv policy's weight init on a host thread (the plans, the handles and the warm-up
 * run meanwhile); where a thread cannot start, seed_state computes them itself. */
static void init_job_start(cr_ppo *p) {
    if (!p->conv) return; /* an MLP's init takes microseconds */
    p->init_job.params = malloc(p->num_params * sizeof(float));
    if (p->init_job.params &&
        pthread_create(&p->init_job.thread, NULL, init_job_run, p) == 0)
        p->init_job.running = 1;
}

/* Joins the init thread if it runs and drops its weights (a setup that fails before
 * seed_state, cr_ppo_free). */
static void init_job_drop(cr_ppo *p) {
    if (p->init_job.running) pthread_join(p->init_job.thread, NULL);
    free(p->init_job.params);
    p->init_job.params = NULL, p->init_job.running = 0;
}

/* The initial weights, the init thread's if one ran (joined here); NULL if out of memory. The
 * caller frees them. */
static float *init_job_take(cr_ppo *p) {
    const int ran = p->init_job.running;
    if (ran) pthread_join(p->init_job.thread, NULL); /* before the buffer's pointer is touched */
    float *h = p->init_job.params;
    p->init_job.params = NULL, p->init_job.running = 0;
    if (ran) return h;
    if (!h) h = malloc(p->num_params * sizeof(float));
    if (h) init_weights(p, h, 0);
    return h;
}

/* Weights, env states and RNG streams, all from the seed; written into backend memory. */
static cudarl_status seed_state(cr_ppo *p) {
    cudarl_ctx *ctx = p->ctx;
    float *h_params = init_job_take(p);
    if (!h_params) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory for parameters");
    ctx->ops->copy_from_host(ctx, p->params, h_params, p->num_params * sizeof(float));
    free(h_params);
    cr_rng_stream sampler, shuffler;
    cr_rng_stream_seed(&sampler, p->cfg.seed, CR_STREAM_SAMPLER);
    cr_rng_stream_seed(&shuffler, p->cfg.seed, CR_STREAM_SHUFFLE_OF(p->rank)); /* rank 0: 1 process's */
    ctx->ops->copy_from_host(ctx, p->sampler, &sampler, sizeof sampler);
    ctx->ops->copy_from_host(ctx, p->shuffler, &shuffler, sizeof shuffler);
    if (p->act_params != p->params)
        ctx->ops->copy(ctx, p->act_params, p->params, p->num_params * sizeof(float));
    CR_TRY(norm_init(p));
    if (p->pool) {
        cr_ppo_pool_reset(p); /* its observations are taken in as the first step acts */
    } else if (p->twin_envs) {
        p->twin.first = (int64_t)p->rank * p->N; /* env i: the job's env rank*N + i */
        cr_image_twin_reset(ctx, &p->twin, p->cfg.seed, p->cnn.cur_obs);
    } else {
        p->env.first = (int64_t)p->rank * p->N; /* env i: the job's env rank*N + i */
        cr_env_batch_reset(ctx, &p->env, p->cfg.seed, p->cur_obs);
        cr_ppo_norm_obs_take(p, p->cur_obs, p->N);
    }
    ctx->ops->sync(ctx);
    return CUDARL_OK;
}

/* --async: the learner's context on the trainer's device and the three ordering events. */
static cudarl_status async_init(cr_ppo *p) {
    cudarl_ctx *ctx = p->ctx;
    if (ctx->kind != CUDARL_DEVICE_CUDA || !p->pool)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "--async needs a CUDA device and --env-device cpu");
    const int where = p->cfg.learner_device >= 0 ? p->cfg.learner_device : ctx->device_index;
    cudarl_status s = cudarl_ctx_init(&p->learner, CUDARL_DEVICE_CUDA, where);
    cr_ctx_make_current(ctx); /* opening a context makes its GPU current */
    CR_TRY(s);
    cudarl_ctx *l = p->learner;
    /* another GPU: its kernels read and write the actor's arena through peer access; events
     * belong to the GPU whose stream records them (the rollout's: the actor's) */
    CR_TRY(cr_ctx_enable_peer(l, ctx));
    CR_TRY(ctx->ops->event_create(ctx, &p->ev_rollout));
    cr_ctx_make_current(l);
    int changed; /* freed with the learner's context: nothing to restore */
    s = cr_precision_apply(l, p->cfg.precision, &changed);
    if (s == CUDARL_OK) s = l->ops->event_create(l, &p->ev_snapshot);
    if (s == CUDARL_OK) s = l->ops->event_create(l, &p->ev_update);
    cr_ctx_make_current(ctx);
    CR_TRY(s);
    if (l->device_index == ctx->device_index)
        CR_INFO("--async: the learner updates on a second stream while the next rollout runs");
    else
        CR_INFO("--async: the learner updates on cuda:%d (peer access to cuda:%d's buffers) "
                "while the next rollout runs on cuda:%d", l->device_index, ctx->device_index,
                ctx->device_index);
    return CUDARL_OK;
}

void cr_ppo_start_part(cr_ppo *p, const char *what) {
    const double now = cr_time_now();
    CUDARL_ASSERT(p->start.nparts < CR_PPO_START_PARTS);
    p->start.part[p->start.nparts].what = what;
    p->start.part[p->start.nparts++].secs = now - p->start.at;
    p->start.at = now;
}

cudarl_status cr_ppo_init(cr_ppo *p, cudarl_ctx *ctx, const cudarl_ppo_config *given) {
    memset(p, 0, sizeof *p);
    p->start.at = cr_time_now();
    p->run_lock = -1;
    CR_TRY(cr_ppo_config_take(given, &p->cfg, "cudarl_ppo_train"));
    const cudarl_ppo_config *cfg = &p->cfg;
    CR_TRY(cudarl_ppo_config_validate(cfg));
    p->ctx = ctx;
    p->env_info = cr_env_info_find(cfg->env_id);
    if (cfg->env_device == CUDARL_DEVICE_CUDA && ctx->kind != CUDARL_DEVICE_CUDA)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "--env-device cuda needs a CUDA device, and this "
                       "run is on the CPU; use --env-device cpu or auto");
    if ((cfg->actor_device >= 0 || cfg->learner_device >= 0) && ctx->kind != CUDARL_DEVICE_CUDA)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "--actor-device / --learner-device pick GPUs, and "
                       "this run is on the CPU; use --device cuda");
    if (cfg->actor_device >= 0 && cfg->actor_device != ctx->device_index)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "--actor-device %d, but the trainer's context is "
                       "on cuda:%d; open the context on cuda:%d (the CLI does)",
                       cfg->actor_device, ctx->device_index, cfg->actor_device);
    if (cfg->learner_device >= 0 && cfg->learner_device != ctx->device_index && !cfg->async)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "--learner-device %d is another GPU than the "
                       "actor's (cuda:%d), which needs --async; add --async --env-device cpu",
                       cfg->learner_device, ctx->device_index);
    p->T = cfg->num_steps, p->N = cfg->num_envs;
    p->D = p->env_info->obs_dim, p->K = p->env_info->action_dim;
    p->A = p->K > 0 ? p->K : p->env_info->num_actions;
    p->act_bytes = cr_env_def_action_bytes(p->env_info->def);
    p->batch = p->T * p->N;
    p->mb = p->batch / cfg->num_minibatches;
    p->solved_step = -1, p->solved_seconds = -1;
    if (cfg->threads > 0) cr_cpu_set_threads(cfg->threads);
    p->conv = strcmp(cfg->policy, "mlp") != 0;
    p->twin_envs = p->conv && !cr_ppo_pool_wanted(p); /* validated: --env-device cuda, a twin */
    if (p->conv) {
        CR_TRY(cr_ppo_conv_plan(p)); /* the network's spec and size; its engines below */
        init_job_start(p);           /* its weights on a host thread meanwhile */
    } else {
        if (p->K > 0) cr_ac_layout_init_gaussian(&p->layout, p->D, cfg->hidden, p->K);
        else cr_ac_layout_init(&p->layout, p->D, cfg->hidden, p->A);
        p->num_params = p->layout.num_params;
    }
    if (!p->conv) cr_ppo_start_part(p, "the network's layout");
    cudarl_status ds = cr_ppo_dist_init(p); /* ranks > 1: this rank's N, batch and mb */
    /* the conv network for this rank's batch sizes (the CUDA engines plan per size) */
    if (ds == CUDARL_OK && p->conv) ds = cr_ppo_conv_init(p);
    if (ds != CUDARL_OK) {
        init_job_drop(p); /* joined before p goes */
        cr_ppo_dist_free(p);
        cr_ppo_conv_free(p);
        return ds;
    }
    p->num_iterations = cfg->total_timesteps / p->world_batch;

    cr_plan pl;
    plan_memory(p, ctx, &pl);
    cr_plan_print(&pl, ctx->kind == CUDARL_DEVICE_CUDA ? "device" : "training (host)");
    cudarl_status s = ctx->ops->arena_alloc(ctx, &p->mem, &pl);
    if (s != CUDARL_OK) {
        cr_ppo_free(p);
        return s;
    }
    carve_memory(p);
    cr_ppo_start_part(p, "the ranks, the memory plan and its arena");
    s = cr_precision_apply(ctx, cfg->precision, &p->precision_set); /* the device is known now */
    if (s == CUDARL_OK && cfg->precision != CUDARL_PRECISION_FP32)
        CR_INFO("precision %s: %s", cudarl_precision_name(cfg->precision),
                cr_precision_training_summary(cfg->precision));
    if (s == CUDARL_OK) cr_amp_init(&p->amp, ctx, cfg->precision, &p->metrics->scaler);
    if (s == CUDARL_OK) s = cr_ppo_pool_wanted(p) ? cr_ppo_pool_init(p) : CUDARL_OK;
    if (s == CUDARL_OK && cfg->async) s = async_init(p);
    if (s == CUDARL_OK) s = cr_ppo_parts_init(p);
    /* a GPU in a job: its NCCL communicator, made by every rank together */
    if (s == CUDARL_OK && p->dev_comm) s = cr_comm_dev_open(ctx, p->dist_grads, p->num_params);
    if (s != CUDARL_OK) {
        cr_ppo_free(p);
        return s;
    }
    cr_ppo_start_part(p, "precision, the env pool, the optimizer's parts, communicators");
    if (p->conv) { /* on zeroed weights, while the init thread computes the real ones */
        ctx->ops->zero(ctx, p->params, p->num_params * sizeof(float));
        cr_ppo_conv_warm_up(p);
        cr_ppo_start_part(p, "a conv policy's warm-up calls (the libraries' first calls)");
    }
    s = seed_state(p);
    if (s != CUDARL_OK) {
        cr_ppo_free(p);
        return s;
    }
    cr_ppo_start_part(p, p->conv ? "the first state: the rest of the weights' thread, seeds, "
                                   "the envs' reset"
                                 : "the first state: the weights, seeds, the envs' reset");
    return CUDARL_OK;
}

void cr_ppo_free(cr_ppo *p) {
    init_job_drop(p);
    cr_ppo_dist_free(p);
    cr_ppo_pool_free(p);
    cr_ppo_parts_free(p);
    if (p->precision_set) cr_precision_restore(p->ctx);
    p->precision_set = 0;
    if (p->learner) {
        if (p->ev_rollout) p->ctx->ops->event_free(p->ctx, p->ev_rollout);
        cr_ctx_make_current(p->learner);
        void *ev[2] = {p->ev_snapshot, p->ev_update};
        for (int i = 0; i < 2; i++)
            if (ev[i]) p->learner->ops->event_free(p->learner, ev[i]);
        cudarl_ctx_free(p->learner);
        p->learner = NULL;
        cr_ctx_make_current(p->ctx);
    }
    if (p->csv) fclose(p->csv);
    p->csv = NULL;
    cr_run_release(p->run_lock);
    p->run_lock = -1;
    cr_tb_close(&p->tb);
    if (p->ctx && p->mem.base) p->ctx->ops->arena_free(p->ctx, &p->mem);
    cr_ppo_conv_free(p);
}

/* ---- rollout ---------------------------------------------------------------------------- */

/* The T steps of env, policy, sampling and episode sums as one kernel (ppo_fused_cartpole.cu). */
static void rollout_steps_fused(cr_ppo *p) {
    cr_ppo_rollout_args a = {
        .actor = cr_ac_actor(&p->layout, p->act_params),
        .critic = cr_ac_critic(&p->layout, p->act_params),
        .env = p->env.cartpole, .cur_obs = p->cur_obs, .sampler = p->sampler, .T = p->T,
        .N = p->N, .obs = p->obs, .final_obs = p->final_obs, .actions = p->actions,
        .logp = p->logp, .values = p->values, .rewards = p->rewards,
        .final_values = p->final_values, .terminated = p->terminated, .truncated = p->truncated,
        .done = p->done, .last_values = p->last_values, .ep_return = p->ep_return,
        .ep_length = p->ep_length, .fin_return = p->fin_return, .fin_length = p->fin_length,
        .log = p->log};
    cr_ppo_rollout_cuda(p->ctx, &a);
}

const void *cr_ppo_sample(cr_ppo *p, int b, int n, size_t row) {
    cudarl_ctx *ctx = p->ctx;
    const cr_backend *o = ctx->ops;
    const size_t A = (size_t)p->A;
    /* data parallel: this rank's envs' words of the job's draw (docs/multigpu.md). A step's
     * envs are drawn in order, all at once or group by group (the env pool, ppo_pool.c): the
     * lower ranks' envs' words are skipped before the step's first env, the higher ranks' after
     * its last, so env i of rank r draws the words of the job's env r*N + i */
    const int64_t per_env = p->K > 0 ? 2 * p->K : 1, share = per_env * p->N;
    const int64_t before = b == 0 ? share * p->rank : 0;
    const int64_t after = b + n == p->N ? share * (p->ranks - 1 - p->rank) : 0;
    if (p->ranks > 1) cr_ppo_dist_skip(p, before);
    if (p->K == 0) {
        o->uniform(ctx, p->sampler, p->u + b, n);
        if (p->ranks > 1) cr_ppo_dist_skip(p, after);
        o->categorical_sample(ctx, p->logits + (size_t)b * A, p->u + b, p->actions + row,
                              p->logp + row, n, p->A);
        return p->actions + row;
    }
    const size_t K = (size_t)p->K;
    float *u = p->u + 2 * K * (size_t)b, *a = p->act_f + row * K;
    o->uniform(ctx, p->sampler, u, 2 * p->K * n);
    if (p->ranks > 1) cr_ppo_dist_skip(p, after);
    o->gaussian_sample(ctx, p->logits + (size_t)b * A, cr_ac_logstd(&p->layout, p->act_params), u,
                       a, p->logp + row, n, p->K);
    return a;
}

/* The T steps with the backend's ops, one op at a time: the reference of the fused kernel.
 * The MLP policy only (a conv policy's envs step in the pool). */
static void rollout_steps(cr_ppo *p) {
    CUDARL_ASSERT(!p->conv);
    cudarl_ctx *ctx = p->ctx;
    const cr_backend *o = ctx->ops;
    const size_t N = (size_t)p->N, D = (size_t)p->D;
    cr_mlp_view actor = cr_ac_actor(&p->layout, p->act_params);
    cr_mlp_view critic = cr_ac_critic(&p->layout, p->act_params);
    for (int t = 0; t < p->T; t++) {
        size_t row = (size_t)t * N;
        float *obs_t = p->obs + row * D, *final_t = p->final_obs + row * D;
        o->copy(ctx, obs_t, p->cur_obs, N * D * sizeof(float));
        cr_mlp_forward(ctx, &actor, obs_t, p->logits, &p->cache_actor, p->N);
        cr_mlp_forward(ctx, &critic, obs_t, p->values + row, &p->cache_critic, p->N);
        const void *act = cr_ppo_sample(p, 0, p->N, row);
        cr_env_batch_step(ctx, &p->env, act, p->cur_obs, p->rewards + row,
                          p->terminated + row, p->truncated + row, p->done + row, final_t);
        cr_ppo_norm_obs_take(p, p->cur_obs, p->N);
        cr_ppo_norm_obs_apply(p, final_t, p->N);
        /* V(final obs) bootstraps truncated episodes; rows of envs that did not end are masked */
        cr_mlp_forward(ctx, &critic, final_t, p->final_values + row, &p->cache_critic, p->N);
        o->episodes_record(ctx, p->rewards + row, p->done + row, p->ep_return, p->ep_length,
                           p->log, p->N); /* the env's rewards, before their normalization */
        cr_ppo_norm_reward(p, p->rewards + row, p->terminated + row, 0, p->N);
    }
    cr_mlp_forward(ctx, &critic, p->cur_obs, p->last_values, &p->cache_critic, p->N);
}

void cr_ppo_rollout(cr_ppo *p) {
    cudarl_ctx *ctx = p->ctx;
    const cr_backend *o = ctx->ops;
    o->zero(ctx, &p->log->iter_episodes, sizeof *p->log - offsetof(cr_episode_log, iter_episodes));
    o->zero(ctx, p->metrics->value_stats, sizeof p->metrics->value_stats);
    if (p->fused_rollout)
        rollout_steps_fused(p);
    else
    if (p->pool)
        cr_ppo_pool_rollout_steps(p);
    else if (p->twin_envs)
        cr_ppo_conv_rollout_twin(p);
    else
        rollout_steps(p);
    o->bootstrap_values(ctx, p->values, p->final_values, p->last_values, p->done, p->next_values,
                        p->T, p->N);
    o->gae(ctx, p->rewards, p->values, p->next_values, p->terminated, p->done,
           (float)p->cfg.gamma, (float)p->cfg.gae_lambda, p->adv, p->returns, p->T, p->N);
    o->value_stats(ctx, p->values, p->returns, p->batch, p->metrics->value_stats);
}

/* ---- update ----------------------------------------------------------------------------- */

/* The MLP policy's minibatch gradient into p->grads (the stats into p->acc). */
static void mlp_minibatch_grads(cr_ppo *p, const int32_t *idx) {
    cudarl_ctx *ctx = p->ctx;
    const cr_backend *o = ctx->ops;
    int mb = p->mb;
    const cr_gather_item rows[6] = {
        {p->obs, p->mb_obs, (size_t)p->D * sizeof(float)}, {p->actions, p->mb_act, p->act_bytes},
        {p->logp, p->mb_logp, sizeof(float)},               {p->adv, p->mb_adv, sizeof(float)},
        {p->returns, p->mb_ret, sizeof(float)},             {p->values, p->mb_val, sizeof(float)},
    };
    o->gather_rows_many(ctx, idx, mb, 6, rows);

    cr_mlp_view actor = cr_ac_actor(&p->layout, p->params);
    cr_mlp_view critic = cr_ac_critic(&p->layout, p->params);
    cr_mlp_view g_actor = cr_ac_actor(&p->layout, p->grads);
    cr_mlp_view g_critic = cr_ac_critic(&p->layout, p->grads);
    cr_ppo_loss_params lp = {(float)p->cfg.clip_coef, (float)p->cfg.ent_coef,
                             (float)p->cfg.vf_coef, p->cfg.clip_vloss, p->cfg.norm_adv};
    if (p->fused && p->K > 0) {
        /* the same for the Gaussian policy, its log-std's gradient too */
        o->ppo_minibatch_grads_gaussian(ctx, &actor, &critic, cr_ac_logstd(&p->layout, p->params),
                                        &g_actor, &g_critic, cr_ac_logstd(&p->layout, p->grads),
                                        p->mb_obs, p->mb_act_f, p->mb_logp, p->mb_adv, p->mb_val,
                                        p->mb_ret, &lp, p->acc, p->fused_scratch, mb);
    } else if (p->fused) {
        /* forward, loss and backward of both MLPs in the backend's fused kernels */
        o->ppo_minibatch_grads(ctx, &actor, &critic, &g_actor, &g_critic, p->mb_obs, p->mb_act,
                               p->mb_logp, p->mb_adv, p->mb_val, p->mb_ret, &lp, p->acc,
                               p->fused_scratch, mb, p->A);
    } else {
        cr_mlp_forward(ctx, &actor, p->mb_obs, p->mb_logits, &p->cache_actor, mb);
        cr_mlp_forward(ctx, &critic, p->mb_obs, p->mb_value, &p->cache_critic, mb);
        if (p->K > 0) { /* the Gaussian's means and log-std; its gradient straight into grads */
            float *g_logstd = cr_ac_logstd(&p->layout, p->grads);
            o->ppo_loss_gaussian(ctx, p->mb_logits, cr_ac_logstd(&p->layout, p->params),
                                 p->mb_act_f, p->mb_logp, p->mb_adv, p->mb_value, p->mb_val,
                                 p->mb_ret, &lp, p->mb_dlogits, g_logstd, p->mb_dvalue, p->acc,
                                 mb, p->K);
            cr_amp_scale(ctx, &p->amp, g_logstd, (size_t)p->K);
        } else {
            o->ppo_loss(ctx, p->mb_logits, p->mb_act, p->mb_logp, p->mb_adv, p->mb_value,
                        p->mb_val, p->mb_ret, &lp, p->mb_dlogits, p->mb_dvalue, p->acc, mb, p->A);
        }
        cr_amp_scale(ctx, &p->amp, p->mb_dlogits, (size_t)mb * p->A); /* fp16: times the scale */
        cr_amp_scale(ctx, &p->amp, p->mb_dvalue, (size_t)mb);
        cr_mlp_backward(ctx, &actor, &g_actor, p->mb_obs, p->mb_dlogits, &p->cache_actor, mb);
        cr_mlp_backward(ctx, &critic, &g_critic, p->mb_obs, p->mb_dvalue, &p->cache_critic, mb);
    }
}

void cr_ppo_update_minibatch(cr_ppo *p, const int32_t *idx) {
    cudarl_ctx *ctx = p->ctx;
    if (p->conv) cr_ppo_conv_minibatch_grads(p, idx);
    else mlp_minibatch_grads(p, idx);
    if (p->ranks > 1 || p->dev_comm)
        cr_ppo_dist_mean_grads(p); /* the job's gradient, the same on every rank */
    cr_amp_step(ctx, &p->amp, p->params, p->grads, p->adam_m, p->adam_v, p->num_params, p->lr,
                0.9f, 0.999f, 1e-5f, p->adam_t, 1, p->cfg.max_grad_norm,
                &p->acc->grad_norm_sum);
}

/* The learning rate of iteration `it` (1-based). */
static float lr_of(const cr_ppo *p, int64_t it) {
    if (!p->cfg.anneal_lr) return (float)p->cfg.learning_rate;
    double frac = 1.0 - (double)(it - 1) / (double)p->num_iterations;
    return (float)(frac * p->cfg.learning_rate);
}

static float current_lr(const cr_ppo *p) { return lr_of(p, p->iteration); }

/* One epoch of the update: a permutation of the batch (its stream advanced on the device) and
 * its minibatches. */
static void update_epoch(cr_ppo *p) {
    p->ctx->ops->permutation(p->ctx, p->shuffler, p->mb_idx, p->batch);
    for (int start = 0; start < p->batch; start += p->mb)
        cr_ppo_update_minibatch(p, p->mb_idx + start);
}

void cr_ppo_update(cr_ppo *p) {
    cudarl_ctx *ctx = p->ctx;
    ctx->ops->zero(ctx, p->acc, sizeof *p->acc);
    for (int epoch = 0; epoch < p->cfg.update_epochs; epoch++) {
        update_epoch(p);
        if (p->cfg.target_kl > 0) {
            cr_ppo_stats_acc acc;
            ctx->ops->copy_to_host(ctx, &acc, p->acc, sizeof acc);
            /* data parallel: the job's last minibatch's KL, so that every rank stops together */
            if (p->ranks > 1) acc.last_approx_kl = cr_ppo_dist_mean(p, acc.last_approx_kl);
            if (acc.last_approx_kl > p->cfg.target_kl) break;
        }
    }
}

/* ---- logging ---------------------------------------------------------------------------- */

static const char *const csv_header =
    "global_step,iteration,charts/episodic_return,charts/episodic_length,charts/mean_return_100,"
    "charts/episodes,charts/learning_rate,losses/value_loss,losses/policy_loss,losses/entropy,"
    "losses/old_approx_kl,losses/approx_kl,losses/clipfrac,losses/explained_variance,"
    "losses/grad_norm,charts/SPS,time/elapsed_s,amp/loss_scale,amp/skipped_steps\n";

/* 1 - Var(returns - values) / Var(returns) over the iteration's batch; NaN if returns are flat. */
static double explained_variance(const double *v) {
    double n = v[0];
    if (n < 1) return NAN;
    double var_y = v[2] / n - (v[1] / n) * (v[1] / n), var_d = v[4] / n - (v[3] / n) * (v[3] / n);
    return var_y <= 0 ? NAN : 1.0 - var_d / var_y;
}

static void fmt_num(char *b, size_t cap, double v) {
    if (isnan(v)) b[0] = 0;
    else snprintf(b, cap, "%.9g", v);
}

static void log_iteration(cr_ppo *p, float lr, double elapsed) {
    if (!p->csv) return; /* data parallel: rank 0 writes the job's rows */
    const cr_ppo_stats_acc acc = p->h_metrics.acc;
    double c = acc.count > 0 ? acc.count : 1;
    const cr_episode_log *l = &p->h_log;
    double ep_ret = l->iter_episodes ? l->iter_return_sum / (double)l->iter_episodes : NAN;
    double ep_len = l->iter_episodes ? l->iter_length_sum / (double)l->iter_episodes : NAN;
    double vals[] = {ep_ret, ep_len, cr_episode_log_recent_mean(&p->h_log), (double)l->episodes, lr,
                     acc.sum[2] / c, acc.sum[1] / c, acc.sum[3] / c, acc.sum[4] / c,
                     acc.sum[5] / c, acc.sum[6] / c, explained_variance(p->h_metrics.value_stats),
                     acc.grad_norm_sum / c};
    fprintf(p->csv, "%lld,%lld", (long long)p->rep_step, (long long)p->rep_iteration);
    char b[64];
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        fmt_num(b, sizeof b, vals[i]);
        fprintf(p->csv, ",%s", b);
    }
    double sps = elapsed > 0 ? (double)((p->rep_iteration - p->start_iteration) * p->world_batch) / elapsed : 0;
    fprintf(p->csv, ",%.0f,%.6f", sps, elapsed);
    /* fp16: the scale after this iteration's steps, steps skipped ever */
    cr_amp_log(&p->amp, &p->h_metrics.scaler, p->csv, &p->tb, p->rep_step);
    static const char *const tags[14] = {"charts/episodic_return", "charts/episodic_length",
        "charts/mean_return_100", "charts/episodes", "charts/learning_rate", "losses/value_loss",
        "losses/policy_loss", "losses/entropy", "losses/old_approx_kl", "losses/approx_kl",
        "losses/clipfrac", "losses/explained_variance", "losses/grad_norm", "charts/SPS"};
    double tv[14];
    memcpy(tv, vals, sizeof vals);
    tv[13] = sps;
    cr_tb_scalars(&p->tb, p->rep_step, tags, tv, 14);
    cr_run_metrics_callback(p->cfg.on_metrics, p->cfg.on_metrics_user, p->rep_step,
                            p->rep_iteration, tags, tv, 14);
}

static void progress(cr_ppo *p, double elapsed, int final) {
    if (p->cfg.quiet || p->rank != 0) return;
    double now = cr_time_now();
    int64_t every = p->num_iterations / 10 > 0 ? p->num_iterations / 10 : 1;
    if (!final) {
        if (p->tty && now - p->last_progress < 0.1) return;
        if (!p->tty && p->rep_iteration % every != 0) return;
    }
    p->last_progress = now;
    int64_t done_steps = (p->rep_iteration - p->start_iteration) * p->world_batch;
    double sps = elapsed > 0 ? (double)done_steps / elapsed : 0;
    double remaining = sps > 0 ? (double)(p->num_iterations - p->rep_iteration) * p->world_batch / sps : 0;
    double mean = cr_episode_log_recent_mean(&p->h_log);
    char m[32];
    if (isnan(mean)) snprintf(m, sizeof m, "-");
    else snprintf(m, sizeof m, "%.1f", mean);
    fprintf(stderr, "%sstep %9lld/%lld  %5.1f%%  SPS %9.0f  return(100) %6s  ETA %5.1fs%s",
            p->tty ? "\r" : "", (long long)p->rep_step,
            (long long)(p->num_iterations * p->world_batch),
            100.0 * (double)p->rep_iteration / (double)p->num_iterations, sps, m, remaining,
            p->tty ? (final ? "\n" : "") : "\n");
    fflush(stderr);
}

/* ---- run directory ---------------------------------------------------------------------- */

static cudarl_status open_run_dir(cr_ppo *p, int resuming) {
    if (p->rank != 0) return CUDARL_OK; /* data parallel: rank 0 writes the run folder */
    CR_TRY(cr_run_open(p->cfg.runs_dir, p->cfg.run_name, sizeof p->cfg.run_name, p->cfg.env_id,
                       "ppo", p->cfg.seed, resuming ? p->iteration : -1, csv_header, p->run_dir,
                       sizeof p->run_dir, &p->csv, &p->run_lock));
    CR_TRY(cr_tb_open(&p->tb, p->run_dir)); /* a resumed run adds a file; TensorBoard merges */
    return p->cfg.config_toml ? cr_run_save_config(p->run_dir, p->cfg.config_toml, &p->tb)
                              : CUDARL_OK;
}

static cudarl_status save_checkpoint(cr_ppo *p) {
    char path[600];
    snprintf(path, sizeof path, "%s/model.safetensors", p->run_dir);
    if (p->csv) fflush(p->csv);
    return cr_ppo_checkpoint_save(p, path); /* data parallel: a collective; rank 0 writes */
}

/* ---- the loop --------------------------------------------------------------------------- */

/* Reads this iteration's metrics (losses, episodes, value sums), waiting for the device. */
static void read_metrics(cr_ppo *p) {
    cudarl_ctx *ctx = p->ctx;
    ctx->ops->copy_to_host(ctx, &p->h_metrics, p->metrics, sizeof p->h_metrics);
}

static void free_graphs(cudarl_ctx *ctx, void *a, void *b) {
    if (a) ctx->ops->graph_free(a);
    if (b) ctx->ops->graph_free(b);
}

/* Runs `phase` as a graph where the backend has graphs: captured on first use, replayed after
 * (the buffers are fixed, so one capture serves every iteration). Elsewhere runs it directly. */
static void run_phase(cr_ppo *p, void (*phase)(cr_ppo *), void **graph) {
    cudarl_ctx *ctx = p->ctx;
    const cr_backend *o = ctx->ops;
    if (!o->graph_begin) {
        phase(p);
        return;
    }
    if (!*graph) {
        if (o->graph_begin(ctx) != CUDARL_OK) {
            CR_WARN("graph capture unavailable (%s); launching ops one by one", cudarl_last_error());
            phase(p);
            return;
        }
        phase(p);
        if (o->graph_end(ctx, graph) != CUDARL_OK) {
            CR_WARN("graph capture failed (%s); launching ops one by one", cudarl_last_error());
            *graph = NULL;
            phase(p);
            return;
        }
    }
    o->graph_launch(ctx, *graph);
}


/* Without loss scaling (fp32, tf32, bf16) Adam applies whatever the backward produced, so a
 * non-finite loss or gradient norm in the update of `iteration` has reached the weights: the run
 * must stop before a checkpoint holds them. Read from metrics the host has anyway (no extra wait
 * for the device). fp16's scaler skips such steps instead (ops/loss_scale.h). */
static void check_update(cr_ppo *p, const cr_ppo_stats_acc *acc, int64_t iteration,
                         int64_t step) {
    static const char *const names[4] = {"loss", "policy loss", "value loss", "entropy"};
    if (p->amp.scaling || p->diverged) return;
    const char *what = NULL;
    double v = 0;
    if (!isfinite(acc->grad_norm_sum)) what = "gradient norm", v = acc->grad_norm_sum;
    for (int k = 0; k < 4 && !what; k++)
        if (!isfinite(acc->sum[k])) what = names[k], v = acc->sum[k];
    if (!what) return;
    p->diverged = 1;
    snprintf(p->diverged_why, sizeof p->diverged_why, "training diverged: the %s of iteration "
             "%lld's update (step %lld) is %g, and the update has applied it to the weights; the "
             "run stops without a checkpoint of them (%s/model.safetensors keeps the last good "
             "one, if the run wrote one); lower --learning-rate or --max-grad-norm", what,
             (long long)iteration, (long long)step, v, p->run_dir);
}

static cudarl_status diverged(const cr_ppo *p) {
    return cr_fail(CUDARL_ERR_NUMERIC, "%s", p->diverged_why);
}

/* Everything the host does with one iteration's metrics (in iteration order): the divergence
 * check, the solve check, metrics.csv, the progress line. */
static void report_iteration(cr_ppo *p, int64_t iteration, int64_t step, float lr) {
    cudarl_ctx *ctx = p->ctx;
    p->rep_iteration = iteration, p->rep_step = step;
    if (p->ranks > 1) cr_ppo_dist_combine(p); /* the job's metrics; the weights compared */
    check_update(p, &p->h_metrics.acc, iteration, step);
    p->h_log = p->h_metrics.log;
    if (ctx->ops->bytes_in_use && iteration == p->start_iteration + 1)
        p->bytes_after_setup = ctx->ops->bytes_in_use(ctx);
    double elapsed = cr_time_now() - p->loop_start;
    double mean = cr_episode_log_recent_mean(&p->h_log);
    if (p->solved_step < 0 && p->h_log.episodes >= CR_RECENT_EPISODES &&
        mean >= p->env_info->solved_return) {
        p->solved_step = step;
        p->solved_seconds = elapsed;
        p->solved_unix = cr_time_unix();
    }
    log_iteration(p, lr, elapsed);
    progress(p, elapsed, 0);
    p->prof.iterations++;
}

/* A pinned slot of the metrics pipe (metrics_pipe.h): the iteration's metrics, and its learning
 * rate, which the device reads from here. */
typedef struct cr_ppo_slot {
    cr_ppo_metrics m;
    float lr;
} cr_ppo_slot;

static cudarl_status report_slot(void *arg, const void *slot, const cr_pipe_tag *tag) {
    cr_ppo *p = arg;
    const cr_ppo_slot *sl = slot;
    p->h_metrics = sl->m;
    report_iteration(p, tag->iteration, tag->step, sl->lr);
    return CUDARL_OK;
}

/* The update as graphs: the statistics zeroed, then one epoch's graph launched once per epoch.
 * Everything an epoch reads that changes between epochs lives on the device (the shuffle's
 * stream, Adam's step count, the loss scale), so each launch is the next epoch, the same work
 * as cr_ppo_update's; the first iteration captures one epoch instead of all of them. */
static void update_captured(cr_ppo *p, void **g_epoch) {
    p->ctx->ops->zero(p->ctx, p->acc, sizeof *p->acc);
    for (int epoch = 0; epoch < p->cfg.update_epochs; epoch++) run_phase(p, update_epoch, g_epoch);
}

/* One iteration's device work: learning rate in, rollout, update. */
static void iterate(cr_ppo *p, cr_metrics_pipe *m, float lr, void **g_rollout, void **g_update) {
    cudarl_ctx *ctx = p->ctx;
    int capture_update = p->cfg.target_kl <= 0; /* --target-kl reads a statistic between epochs */
    if (p->cfg.profile) ctx->ops->sync(ctx), p->prof.mark = cr_time_now();
    CR_RANGE_PUSH("rollout");
    if (m->on) { /* the learning rate from its pinned slot, which outlives the copy */
        cr_ppo_slot *slot;
        cudarl_status s = cr_pipe_reserve(m, ctx, report_slot, p, (void **)&slot);
        CUDARL_ASSERT(s == CUDARL_OK); /* report_slot cannot fail */
        slot->lr = lr;
        ctx->ops->copy_from_host(ctx, p->lr, &slot->lr, sizeof lr);
    } else {
        ctx->ops->copy_from_host(ctx, p->lr, &lr, sizeof lr);
    }
    if (p->pool) /* the host takes part in every step: nothing to capture */
        cr_ppo_rollout(p);
    else if (p->parts.cap) /* --profile's marks in a conv rollout: events outside any graph */
        cr_ppo_rollout(p);
    else
        run_phase(p, cr_ppo_rollout, g_rollout);
    p->global_step += p->world_batch;
    cr_ppo_phase_end(p, CR_PHASE_ROLLOUT);
    CR_RANGE_PUSH("update");
    /* a conv policy's update graph is tens of thousands of nodes, whose capture the first
     * iteration pays: one epoch's instead; an MLP's is small, and one launch an update less */
    if (capture_update && p->conv) update_captured(p, g_update);
    else if (capture_update) run_phase(p, cr_ppo_update, g_update);
    else cr_ppo_update(p);
    cr_ppo_phase_end(p, CR_PHASE_UPDATE);
}

/* --async, learner side: the update of iteration `it`'s rollout (the buffers p points at now),
 * queued on the learner's stream once that rollout is complete; the actor's weights are
 * snapshotted first, so the rollout that runs beside this update acts one update stale. */
static void async_learn(cr_ppo *p, int64_t it, void **g_update) {
    cudarl_ctx *actor = p->ctx, *l = p->learner;
    cr_ctx_make_current(l); /* its GPU may be another (--learner-device) */
    cr_ctx_stream_wait_event(l, p->ev_rollout);
    float lr = lr_of(p, it);
    l->ops->copy_from_host(l, p->lr, &lr, sizeof lr);
    l->ops->copy(l, p->act_params, p->params, p->num_params * sizeof(float));
    l->ops->event_record(l, p->ev_snapshot);
    p->ctx = l; /* the update's ops run on the learner's stream, scratch and handles */
    if (p->cfg.target_kl <= 0) run_phase(p, cr_ppo_update, &g_update[it & 1]);
    else cr_ppo_update(p);
    p->ctx = actor;
    l->ops->event_record(l, p->ev_update);
    cr_ctx_make_current(actor);
}

/* --async, one iteration: the update of the previous rollout on the learner's stream, and this
 * iteration's rollout (envs on CPU threads, policy on the actor's stream) beside it, into the
 * other set of buffers. The host waits for the update at the end, before the metrics. */
static void iterate_async(cr_ppo *p, void **g_update) {
    cudarl_ctx *actor = p->ctx;
    if (p->cfg.profile) actor->ops->sync(actor), p->prof.mark = cr_time_now();
    int learn = p->iteration > p->start_iteration + 1;
    if (learn) {
        async_learn(p, p->iteration - 1, g_update);
        cr_ctx_stream_wait_event(actor, p->ev_snapshot);
    }
    swap_rollout_bufs(p);
    CR_RANGE_PUSH("rollout (beside the update)");
    cr_ppo_rollout(p);
    actor->ops->event_record(actor, p->ev_rollout);
    p->global_step += p->world_batch;
    if (learn) p->learner->ops->event_wait(p->learner, p->ev_update);
    cr_ppo_phase_end(p, CR_PHASE_ROLLOUT);
}

static cudarl_status train_loop(cr_ppo *p) {
    cudarl_ctx *ctx = p->ctx;
    void *g_rollout = NULL, *g_update = NULL;
    void *g_update_async[2] = {NULL, NULL}; /* --async: one update graph per set of buffers */
    cudarl_status s = CUDARL_OK;
    p->loop_start = cr_time_now();
    p->start_iteration = p->iteration;
    memset(&p->prof, 0, sizeof p->prof);
    p->prof.syncs_start = ctx->host_syncs;
    cr_metrics_pipe m; /* not with --profile, whose phase timing synchronises anyway, nor with
                        * --async, whose metrics are read after the host waits for the update */
    cr_pipe_init(&m, ctx, sizeof(cr_ppo_slot), !p->cfg.profile && !p->learner &&
                 p->ranks == 1); /* ranks > 1: the weights are hashed as the iteration ends */
    while (p->iteration < p->num_iterations && !cr_ppo_dist_stop_requested(p) && s == CUDARL_OK) {
        p->iteration++;
        float lr = current_lr(p);
        if (p->learner)
            iterate_async(p, g_update_async);
        else
            iterate(p, &m, lr, &g_rollout, &g_update);
        CR_RANGE_PUSH("metrics");
        if (m.on) { /* into the slot iterate reserved */
            cr_ppo_slot *slot = cr_pipe_reserved(&m);
            ctx->ops->copy_to_host_async(ctx, &slot->m, p->metrics, sizeof slot->m);
            const cr_pipe_tag tag = {p->global_step, p->iteration, 1};
            cr_pipe_push(&m, ctx, &tag);
            cr_pipe_drain(&m, ctx, 0, report_slot, p);
            CR_RANGE_POP();
        } else {
            read_metrics(p);
            cr_ppo_phase_end(p, CR_PHASE_METRICS);
            CR_RANGE_PUSH("log");
            report_iteration(p, p->iteration, p->global_step, lr);
            cr_ppo_phase_end(p, CR_PHASE_LOG);
        }
        if (p->diverged) s = diverged(p);
        if (s == CUDARL_OK && p->cfg.checkpoint_every > 0 &&
            p->iteration % p->cfg.checkpoint_every == 0) {
            if (m.on) cr_pipe_drain(&m, ctx, 1, report_slot, p); /* every update checked */
            CR_RANGE_PUSH("checkpoint");
            s = p->diverged ? diverged(p) : save_checkpoint(p);
            cr_ppo_phase_end(p, CR_PHASE_CHECKPOINT);
        }
    }
    if (m.on) cr_pipe_drain(&m, ctx, 1, report_slot, p);
    if (s == CUDARL_OK && p->diverged) s = diverged(p);
    if (p->learner && p->iteration > p->start_iteration && s == CUDARL_OK) {
        /* the last rollout's update, so that every rollout is learned once; no report reads its
         * metrics, so the divergence check does */
        async_learn(p, p->iteration, g_update_async);
        p->learner->ops->event_wait(p->learner, p->ev_update);
        cr_ppo_stats_acc acc;
        ctx->ops->copy_to_host(ctx, &acc, p->acc, sizeof acc); /* as read_metrics reads it */
        check_update(p, &acc, p->iteration, p->global_step);
        if (p->diverged) s = diverged(p);
    }
    if (p->learner) free_graphs(p->learner, g_update_async[0], g_update_async[1]);
    if (ctx->ops->bytes_in_use) p->bytes_at_end = ctx->ops->bytes_in_use(ctx);
    cr_pipe_free(&m, ctx);
    free_graphs(ctx, g_rollout, g_update);
    return s;
}

cudarl_status cudarl_ppo_train(cudarl_ctx *ctx, const cudarl_ppo_config *cfg,
                               const char *resume_path, cudarl_train_summary *summary) {
    cr_ppo p;
    const double age0 = cr_process_age(), t0 = cr_time_now();
    cudarl_status s = cr_ppo_init(&p, ctx, cfg);
    const double t1 = cr_time_now();
    if (s == CUDARL_OK && resume_path) s = cr_ppo_checkpoint_load(&p, resume_path);
    if (s == CUDARL_OK && resume_path && p.act_params != p.params) /* --async's snapshot */
        ctx->ops->copy(ctx, p.act_params, p.params, p.num_params * sizeof(float));
    if (s == CUDARL_OK) s = open_run_dir(&p, resume_path != NULL);
    if (s == CUDARL_OK)
        p.start.before = age0, p.start.setup = t1 - t0, p.start.rest = cr_time_now() - t1,
        p.start.resumed = resume_path != NULL;
    p.tty = isatty(STDERR_FILENO);
    if (s == CUDARL_OK) {
        char over[64] = "";
        if (p.dev_comm)
            snprintf(over, sizeof over, ", gradients averaged over NCCL on cuda:%d",
                     ctx->device_index);
        if (p.ranks > 1 || p.dev_comm)
            CR_INFO("data parallel: rank %d of %d, envs %d..%d of %d, minibatches of %d rows "
                    "here%s", p.rank, p.ranks, p.rank * p.N, (p.rank + 1) * p.N - 1, p.world_N,
                    p.mb, over);
        CR_INFO("training PPO on %s: %d envs x %d steps (%s), %lld iterations, policy %s, %zu "
                "parameters, %s, run %s", p.cfg.env_id, p.world_N, p.T,
                p.pool ? "stepped on CPU threads" : p.twin_envs ? "stepped by their CUDA twin"
                : ctx->kind == CUDARL_DEVICE_CUDA ? "stepped by the CUDA env batch"
                                                  : "stepped by the env batch",
                (long long)p.num_iterations, p.cfg.policy, p.num_params, ctx->ops->name,
                p.rank == 0 ? p.run_dir : "(rank 0 writes it)");
        int64_t start_step = p.global_step;
        s = train_loop(&p);
        double secs = cr_time_now() - p.loop_start;
        progress(&p, secs, 1);
        cr_ppo_profile_print(&p);
        if (s == CUDARL_OK) s = save_checkpoint(&p);
        if (summary) {
            summary->global_step = p.global_step;
            summary->run_steps = p.global_step - start_step;
            summary->episodes = p.h_log.episodes;
            summary->mean_return_100 = cr_episode_log_recent_mean(&p.h_log);
            summary->train_seconds = secs;
            summary->sps = secs > 0 ? (double)(p.global_step - start_step) / secs : 0;
            summary->solved_step = p.solved_step;
            summary->solved_seconds = p.solved_seconds;
            summary->interrupted = p.iteration < p.num_iterations;
            summary->device_bytes_after_setup = (int64_t)p.bytes_after_setup;
            summary->arena_bytes = (int64_t)p.mem.plan.total;
            summary->solved_unix_time = p.solved_unix;
            int64_t iters = p.iteration - p.start_iteration;
            summary->host_syncs_per_iteration =
                iters > 0 ? (double)(ctx->host_syncs - p.prof.syncs_start) / (double)iters : 0;
            summary->device_bytes_growth = (int64_t)p.bytes_at_end - (int64_t)p.bytes_after_setup;
            snprintf(summary->run_dir, sizeof summary->run_dir, "%s", p.run_dir);
        }
    }
    cr_ppo_free(&p);
    cr_stop_clear(); /* a request applies to one run; one made during setup still counts */
    return s;
}
