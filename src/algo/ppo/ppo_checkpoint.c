/* PPO checkpoints: the whole training state in one standard safetensors file.
 *
 * Tensors: the parameters under their PyTorch state_dict names (CleanRL's Agent loads them as
 * they are: ppo.py's 12 MLP tensors, or for a conv policy ppo_atari.py's network.<i>.*,
 * actor.*, critic.*), Adam's moments as optimizer.exp_avg.<name> / optimizer.exp_avg_sq.<name>,
 * and state.* (env states, RNG streams, episode statistics, counters; the current observations
 * as float32, or uint8 for a conv policy) so a resumed run continues exactly where it stopped.
 * The env states are CartPole's arrays (state.env, state.env_elapsed, state.env_rng), the env
 * batch's block byte for byte for its other envs (state.env_batch), the pool's states, or the
 * image twin's device state.
 * __metadata__ holds the format, its version, the model shape, every hyperparameter as
 * strings, the policy's name and, for a conv policy, the network's spec text under "network"
 * (cr_convnet_spec_parse rebuilds the net from it). A resume checks every number of state.*
 * before using any (check_state). */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/ppo/ppo_internal.h"
#include "env/env_check.h"
#include "runtime/mlp_check.h"
#include "io/safetensors.h"
#include "ops/comm.h"

_Static_assert(sizeof(cr_philox_state) == 11 * sizeof(uint32_t), "philox state is 11 words");

enum { C_ITERATION, C_GLOBAL_STEP, C_ADAM_T, C_SOLVED_STEP, C_COUNT };

/* Host copies of the training state that lives in backend memory. */
typedef struct host_state {
    float *params, *m, *v;
    void *obs;                /* (N, D) floats, or uint8 with a conv policy */
    double *env, *ep_return;
    int64_t *ep_length;
    int32_t *elapsed;
    cr_philox_state *env_rng;
    cr_rng_stream sampler, shuffler;
    cr_episode_log log;
    int64_t counters[C_COUNT];
    cr_arena arena;
    void *block;         /* data parallel: the job's env batch block (save_world), or NULL */
    size_t block_bytes;
    /* data parallel, envs on CPU threads: the job's pool states (N, stride) and step counts
     * (N), gathered by save_world or read by a resume (the pool holds a rank's share); NULL
     * otherwise (the pool's own are used) */
    void *pool_states;
    int32_t *pool_elapsed;
    size_t pool_bytes;
} host_state;

/* Bytes of one env's current observation as stored: D floats, or D uint8 (conv policy). */
static size_t obs_row_bytes(const cr_ppo *p) {
    return (size_t)p->D * (p->conv ? 1 : sizeof(float));
}

/* Bytes of the current observations (N, D) as stored. */
static size_t obs_bytes(const cr_ppo *p) { return (size_t)p->N * obs_row_bytes(p); }

static cudarl_status host_state_alloc(host_state *h, const cr_ppo *p) {
    size_t P = p->num_params, N = (size_t)p->N;
    cr_plan pl;
    cr_plan_init(&pl);
    cr_plan_add(&pl, "params", P * 4), cr_plan_add(&pl, "m", P * 4), cr_plan_add(&pl, "v", P * 4);
    cr_plan_add(&pl, "obs", obs_bytes(p)), cr_plan_add(&pl, "env", N * 4 * 8);
    cr_plan_add(&pl, "ep_return", N * 8), cr_plan_add(&pl, "ep_length", N * 8);
    cr_plan_add(&pl, "elapsed", N * 4), cr_plan_add(&pl, "env_rng", N * sizeof(cr_philox_state));
    CR_TRY(cr_arena_alloc(&h->arena, &pl, CR_MEM_HOST));
    h->params = cr_arena_get(&h->arena, 0), h->m = cr_arena_get(&h->arena, 1);
    h->v = cr_arena_get(&h->arena, 2), h->obs = cr_arena_get(&h->arena, 3);
    h->env = cr_arena_get(&h->arena, 4), h->ep_return = cr_arena_get(&h->arena, 5);
    h->ep_length = cr_arena_get(&h->arena, 6), h->elapsed = cr_arena_get(&h->arena, 7);
    h->env_rng = cr_arena_get(&h->arena, 8);
    h->block = NULL, h->block_bytes = 0;
    h->pool_states = NULL, h->pool_elapsed = NULL, h->pool_bytes = 0;
    return CUDARL_OK;
}

/* Whether the envs step in the env batch as one block saved whole (state.env_batch): every batch
 * env but CartPole-v1, whose arrays have tensors of their own. */
static int batch_block(const cr_ppo *p) {
    return !p->pool && !p->twin_envs && p->env_info->batch != &cr_cartpole_batch;
}

/* Moves every piece of state between backend memory and `h` (to_host: 1 = save, 0 = load). */
static void host_state_transfer(host_state *h, cr_ppo *p, int to_host) {
    cudarl_ctx *ctx = p->ctx;
    size_t P = p->num_params * 4, N = (size_t)p->N;
    const cr_cartpole *e = &p->env.cartpole;
    void *cur_obs = p->conv ? (void *)p->cnn.cur_obs : (void *)p->cur_obs;
    /* envs on CPU threads keep their state in the pool, an image twin and the batch of another
     * env than CartPole in their own blocks */
    size_t batch = p->pool || p->twin_envs || batch_block(p) ? 0 : N;
    struct { void *dev; void *host; size_t bytes; } t[] = {
        {p->params, h->params, P}, {p->adam_m, h->m, P}, {p->adam_v, h->v, P},
        {cur_obs, h->obs, obs_bytes(p)}, {e->state, h->env, batch * 4 * 8},
        {p->ep_return, h->ep_return, N * 8}, {p->ep_length, h->ep_length, N * 8},
        {e->elapsed, h->elapsed, batch * 4}, {e->rng, h->env_rng, batch * sizeof(cr_philox_state)},
        {p->sampler, &h->sampler, sizeof h->sampler}, {p->shuffler, &h->shuffler, sizeof h->shuffler},
        {p->log, &h->log, sizeof h->log}, {p->adam_t, &h->counters[C_ADAM_T], 8},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        if (to_host) ctx->ops->copy_to_host(ctx, t[i].host, t[i].dev, t[i].bytes);
        else ctx->ops->copy_from_host(ctx, t[i].dev, t[i].host, t[i].bytes);
    }
    ctx->ops->sync(ctx);
}

static void meta_int(cr_st_writer *w, const char *key, long long v) {
    char b[32];
    snprintf(b, sizeof b, "%lld", v);
    cr_st_add_meta(w, key, b);
}

static void meta_num(cr_st_writer *w, const char *key, double v) {
    char b[48];
    snprintf(b, sizeof b, "%.17g", v);
    cr_st_add_meta(w, key, b);
}

/* Where the envs step, as the checkpoint's env_device says it. */
static const char *where_of(const cr_ppo *p) {
    return p->pool ? "cpu" : p->twin_envs ? "cuda-twin" : "cuda-batch";
}

/* The envs' state kept as one block of backend memory, the image twin's or the env batch's
 * (batch_block), and its tensor's name; 0 when the envs' state is not such a block. */
static size_t env_block(const cr_ppo *p, void **mem, const char **name) {
    if (p->twin_envs) { /* a resume on ranks reads the job's twin block (host) */
        const cr_image_twin *t = p->dist_twin ? p->dist_twin : &p->twin;
        return *mem = t->mem, *name = "state.twin", t->bytes;
    }
    const cr_env_batch *b = p->dist_env ? p->dist_env : &p->env; /* a resume's job batch */
    if (batch_block(p)) return *mem = b->mem, *name = "state.env_batch", b->bytes;
    return *mem = NULL, *name = NULL, 0;
}

/* env_block's bytes on the host (malloc'd; NULL and 0 without such a block). */
static void *env_block_to_host(cr_ppo *p, size_t *bytes) {
    void *mem;
    const char *name;
    *bytes = 0;
    size_t n = env_block(p, &mem, &name);
    if (!n) return NULL;
    void *h = malloc(n);
    if (!h) return NULL;
    p->ctx->ops->copy_to_host(p->ctx, h, mem, n);
    p->ctx->ops->sync(p->ctx);
    *bytes = n;
    return h;
}

static void add_config_meta(cr_st_writer *w, const cr_ppo *p) {
    const cudarl_ppo_config *c = &p->cfg;
    cr_st_add_meta(w, "format", CR_CHECKPOINT_FORMAT);
    meta_int(w, "format_version", CR_CHECKPOINT_VERSION);
    cr_st_add_meta(w, "cudarl_version", CUDARL_VERSION_STRING);
    cr_st_add_meta(w, "algo", "ppo");
    cr_st_add_meta(w, "policy", c->policy);
    cr_st_add_meta(w, "env_id", c->env_id);
    cr_st_add_meta(w, "env_device", where_of(p));
    cr_st_add_meta(w, "precision", cudarl_precision_name(c->precision));
    cr_st_add_meta(w, "run_name", c->run_name);
    meta_int(w, "obs_dim", p->D);
    meta_int(w, "num_actions", p->A);
    meta_int(w, "hidden", c->hidden);
    meta_int(w, "seed", (long long)c->seed);
    meta_int(w, "total_timesteps", c->total_timesteps);
    meta_num(w, "learning_rate", c->learning_rate);
    meta_int(w, "num_envs", c->num_envs);
    meta_int(w, "num_steps", c->num_steps);
    meta_int(w, "anneal_lr", c->anneal_lr);
    meta_num(w, "gamma", c->gamma);
    meta_num(w, "gae_lambda", c->gae_lambda);
    meta_int(w, "num_minibatches", c->num_minibatches);
    meta_int(w, "update_epochs", c->update_epochs);
    meta_int(w, "norm_adv", c->norm_adv);
    meta_num(w, "clip_coef", c->clip_coef);
    meta_int(w, "clip_vloss", c->clip_vloss);
    meta_int(w, "separate_critic", c->separate_critic);
    meta_num(w, "ent_coef", c->ent_coef);
    meta_num(w, "vf_coef", c->vf_coef);
    meta_num(w, "max_grad_norm", c->max_grad_norm);
    meta_num(w, "target_kl", c->target_kl);
    meta_int(w, "global_step", p->global_step);
    meta_int(w, "iteration", p->iteration);
    meta_int(w, "norm_obs", c->norm_obs);
    meta_int(w, "norm_reward", c->norm_reward);
    if (p->K > 0) { /* a Gaussian policy: its actions' box, which eval and the runtime clip to */
        const cudarl_env_def *d = p->env_info->def;
        char lo[CUDARL_ACTION_DIM_MAX * 18], hi[sizeof lo];
        size_t nl = 0, nh = 0;
        for (int k = 0; k < p->K; k++) {
            nl += (size_t)snprintf(lo + nl, sizeof lo - nl, "%s%.9g", k ? "," : "",
                                   (double)d->action_low[k]);
            nh += (size_t)snprintf(hi + nh, sizeof hi - nh, "%s%.9g", k ? "," : "",
                                   (double)d->action_high[k]);
        }
        meta_int(w, "action_dim", p->K);
        cr_st_add_meta(w, "action_low", lo);
        cr_st_add_meta(w, "action_high", hi);
    }
}

/* --norm-obs / --norm-reward: the statistics as the checkpoint holds them (host, doubles):
 * obs_rms.mean (D), obs_rms.var (D), obs_rms.count (1) (read by eval and the runtime), and the
 * returns' state.return_rms (mean, var, count) and state.return_acc (N). */
typedef struct norm_host {
    double *all;        /* the arena item's doubles, in its order */
    size_t n;
} norm_host;

static cudarl_status norm_to_host(cr_ppo *p, norm_host *h) {
    h->n = cr_ppo_norm_doubles(p);
    h->all = NULL;
    if (!h->n) return CUDARL_OK;
    h->all = malloc(h->n * 8);
    if (!h->all) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory");
    p->ctx->ops->copy_to_host(p->ctx, h->all, p->norm, h->n * 8);
    return CUDARL_OK;
}

static cudarl_status norm_add_tensors(cr_st_writer *w, const cr_ppo *p, const norm_host *h) {
    const double *at = h->all;
    int64_t s_d[1] = {p->D}, s_1[1] = {1}, s_3[1] = {3}, s_n[1] = {p->N};
    cudarl_status s = CUDARL_OK;
    if (p->cfg.norm_obs) {
        s = cr_st_add_tensor(w, "obs_rms.mean", CR_ST_F64, 1, s_d, at);
        if (s == CUDARL_OK) s = cr_st_add_tensor(w, "obs_rms.var", CR_ST_F64, 1, s_d, at + p->D);
        if (s == CUDARL_OK)
            s = cr_st_add_tensor(w, "obs_rms.count", CR_ST_F64, 1, s_1, at + 2 * p->D);
        at += 2 * (size_t)p->D + 1;
    }
    if (p->cfg.norm_reward && s == CUDARL_OK) {
        s = cr_st_add_tensor(w, "state.return_rms", CR_ST_F64, 1, s_3, at);
        if (s == CUDARL_OK) s = cr_st_add_tensor(w, "state.return_acc", CR_ST_F64, 1, s_n, at + 3);
    }
    return s;
}


/* One parameter tensor, as the checkpoint names and shapes it. */
typedef struct param_desc {
    const char *name;
    char own[48]; /* the name when it is made here (a separate critic's prefix) */
    int ndim;
    int64_t shape[4];
    size_t offset, count;
} param_desc;

/* Tensors of the largest layout: a conv net twice (--separate-critic). */
#define PPO_MAX_TENSORS (2 * CR_CONVNET_MAX_TENSORS)
/* --separate-critic: the critic's network's tensors are the same state_dict under this prefix
 * (its unused actor head included, so that the layout is the spec's twice). */
#define CRITIC_PREFIX "critic_network."

/* The policy's tensors in state_dict order into t (PPO_MAX_TENSORS); their count. */
static int param_tensors(const cr_ppo *p, param_desc *t) {
    const int per = p->conv ? p->cnn.net.ntensors : p->layout.num_tensors;
    const int n = p->conv && p->cnn.separate ? 2 * per : per;
    for (int i = 0; i < n; i++) {
        memset(&t[i], 0, sizeof t[i]);
        if (p->conv) {
            const cr_convnet_tensor *c = &p->cnn.net.t[i % per];
            t[i].name = c->name, t[i].ndim = c->ndim, t[i].offset = c->offset;
            t[i].count = c->count;
            for (int d = 0; d < c->ndim; d++) t[i].shape[d] = c->shape[d];
            if (i >= per) {
                snprintf(t[i].own, sizeof t[i].own, CRITIC_PREFIX "%s", c->name);
                t[i].name = t[i].own, t[i].offset += p->cnn.net.num_params;
            }
        } else {
            const cr_param_tensor *m = &p->layout.t[i];
            t[i].name = m->name, t[i].ndim = m->ndim, t[i].offset = m->offset;
            t[i].count = m->count;
            for (int d = 0; d < m->ndim; d++) t[i].shape[d] = m->shape[d];
        }
    }
    return n;
}

/* Writes the checkpoint of this process's state, or (`given`, data parallel) of the job's state
 * gathered into `given` (p->N the job's while it runs). */
static cudarl_status save_file(cr_ppo *p, const char *path, const host_state *given) {
    host_state h;
    char spec[CR_CONVNET_TEXT_MAX];
    if (p->conv) CR_TRY(cr_convnet_spec_to_text(&p->cnn.net.spec, spec, sizeof spec));
    if (given) h = *given;
    else CR_TRY(host_state_alloc(&h, p));
    cr_st_writer *w = malloc(sizeof *w);
    if (!w) {
        if (!given) cr_arena_free(&h.arena);
        return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory writing '%s'", path);
    }
    if (!given) host_state_transfer(&h, p, 1);
    /* CPU envs: the observations the next step takes (the pool's, which --norm-obs has not
     * normalized; the same as cur_obs otherwise); save_world's are gathered from them */
    if (p->pool && !given) cr_ppo_pool_get_obs(p, h.obs);
    h.counters[C_ITERATION] = p->iteration, h.counters[C_GLOBAL_STEP] = p->global_step;
    h.counters[C_SOLVED_STEP] = p->solved_step;

    int64_t N = p->N;
    int64_t s_n4[2] = {N, 4}, s_n[1] = {N}, s_rec[1] = {CR_RECENT_EPISODES};
    int64_t s_cnt[1] = {C_COUNT}, s_rng[2] = {N, 11}, s_st[1] = {sizeof(cr_rng_stream) / 4};
    int64_t s_obs[2] = {N, p->D}, s_ep[1] = {3};
    double ep_sums[3] = {(double)h.log.episodes, h.log.iter_return_sum, h.log.iter_length_sum};
    cr_st_writer_init(w);
    add_config_meta(w, p);
    if (p->conv) {
        cr_st_add_meta(w, CR_CONVNET_META_KEY, spec);
        /* MinAtar's 0/1 channels reach the network cast to float, not divided by 255 */
        if (p->cnn.net.spec.scale == CR_CONVNET_SCALE_NONE)
            cr_st_add_meta(w, "obs_input", "uint8 cast to float32, unscaled");
    }
    /* 8-byte types first, so every tensor stays aligned */
    void *pool_states = NULL;
    int32_t *pool_elapsed = NULL;
    size_t pool_bytes = 0;
    if (p->pool && given) /* the job's, gathered */
        pool_states = given->pool_states, pool_bytes = given->pool_bytes,
        pool_elapsed = given->pool_elapsed;
    else if (p->pool)
        cr_ppo_pool_state(p, &pool_states, &pool_bytes, &pool_elapsed);
    int64_t s_pool[1] = {(int64_t)pool_bytes};
    size_t twin_bytes = 0;
    const int given_block = given && given->block; /* the job's, gathered (save_world) */
    void *twin_state = given_block ? given->block : env_block_to_host(p, &twin_bytes), *block_mem;
    if (given_block) twin_bytes = given->block_bytes;
    const char *block_name;
    if (env_block(p, &block_mem, &block_name) && !twin_state) {
        free(w);
        if (!given) cr_arena_free(&h.arena);
        return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory for the envs' state");
    }
    int64_t s_twin[1] = {(int64_t)twin_bytes};
    const int arrays = !p->pool && !p->twin_envs && !batch_block(p); /* CartPole's */
    if (arrays) cr_st_add_tensor(w, "state.env", CR_ST_F64, 2, s_n4, h.env);
    cr_st_add_tensor(w, "state.episode_return", CR_ST_F64, 1, s_n, h.ep_return);
    cr_st_add_tensor(w, "state.episode_length", CR_ST_I64, 1, s_n, h.ep_length);
    cr_st_add_tensor(w, "state.recent_returns", CR_ST_F64, 1, s_rec, h.log.recent);
    cr_st_add_tensor(w, "state.episode_sums", CR_ST_F64, 1, s_ep, ep_sums);
    cr_st_add_tensor(w, "state.counters", CR_ST_I64, 1, s_cnt, h.counters);
    norm_host nh;
    cudarl_status ns = norm_to_host(p, &nh);
    if (ns == CUDARL_OK) ns = norm_add_tensors(w, p, &nh);
    if (ns != CUDARL_OK) {
        free(nh.all), free(w);
        if (!given_block) free(twin_state);
        if (!given) cr_arena_free(&h.arena);
        return ns;
    }
    param_desc pt[PPO_MAX_TENSORS];
    const int ntensors = param_tensors(p, pt);
    for (int i = 0; i < ntensors; i++) {
        const param_desc *t = &pt[i];
        char name[96];
        cr_st_add_tensor(w, t->name, CR_ST_F32, t->ndim, t->shape, h.params + t->offset);
        snprintf(name, sizeof name, "optimizer.exp_avg.%s", t->name);
        cr_st_add_tensor(w, name, CR_ST_F32, t->ndim, t->shape, h.m + t->offset);
        snprintf(name, sizeof name, "optimizer.exp_avg_sq.%s", t->name);
        cr_st_add_tensor(w, name, CR_ST_F32, t->ndim, t->shape, h.v + t->offset);
    }
    if (!p->conv) cr_st_add_tensor(w, "state.obs", CR_ST_F32, 2, s_obs, h.obs);
    if (p->pool) { /* the pool's env states, byte for byte (a def's state has no pointers) */
        cr_st_add_tensor(w, "state.pool_elapsed", CR_ST_I32, 1, s_n, pool_elapsed);
        cr_st_add_tensor(w, "state.pool_states", CR_ST_U8, 1, s_pool, pool_states);
    } else if (arrays) {
        cr_st_add_tensor(w, "state.env_elapsed", CR_ST_I32, 1, s_n, h.elapsed);
        cr_st_add_tensor(w, "state.env_rng", CR_ST_U32, 2, s_rng, h.env_rng);
    }
    cr_st_add_tensor(w, "state.rng_sampler", CR_ST_U32, 1, s_st, &h.sampler);
    cudarl_status s = cr_st_add_tensor(w, "state.rng_shuffle", CR_ST_U32, 1, s_st, &h.shuffler);
    if (s == CUDARL_OK && p->conv) /* bytes, so last */
        s = cr_st_add_tensor(w, "state.obs", CR_ST_U8, 2, s_obs, h.obs);
    if (s == CUDARL_OK && twin_state) /* the twin's or the batch's block, byte for byte */
        s = cr_st_add_tensor(w, block_name, CR_ST_U8, 1, s_twin, twin_state);
    cr_loss_scale_state scaler; /* fp16: the loss scaler's state, byte for byte */
    int64_t s_scaler[1] = {(int64_t)sizeof scaler};
    if (s == CUDARL_OK && p->amp.scaling) {
        p->ctx->ops->copy_to_host(p->ctx, &scaler, p->amp.state, sizeof scaler);
        s = cr_st_add_tensor(w, "state.loss_scale", CR_ST_U8, 1, s_scaler, &scaler);
    }
    if (s == CUDARL_OK) s = cr_st_write_atomic(w, path);
    free(nh.all);
    if (!given_block) free(twin_state);
    free(w);
    if (!given) cr_arena_free(&h.arena);
    return s;
}

/* Host memory for the gathered state, or the job ends (ops/comm.h). */
static void *host_block(size_t bytes) { return cr_comm_host_alloc(bytes, "data parallel PPO checkpoint"); }

/* 64-byte aligned host memory for an image twin's block (its layout wants the device's
 * alignment), zeroed as the device arena is (the layout's padding between its pieces is written
 * to the file as it is), or the job ends; free() releases it. */
static void *twin_host_block(size_t bytes) {
    const size_t rounded = (bytes + 63) / 64 * 64;
    void *b = aligned_alloc(64, rounded);
    if (!b) {
        fprintf(stderr, "cudarl: out of host memory for an image twin's state (%zu bytes) in a "
                "data parallel PPO checkpoint\n", bytes);
        cr_comm_abort(1);
    }
    memset(b, 0, rounded);
    return b;
}

/* Data parallel: every rank's envs gathered into rank 0's host state in the job's env order
 * (rank r's are envs r*N .. (r+1)*N-1), with the weights, Adam's moments and the streams of
 * rank 0 (every rank's are the same: the sampler's position is the job's, the shuffle streams
 * differ by their stream number only) and the job's episode log; rank 0 writes the file in the
 * one-process format, and every rank returns its status. A collective: every rank calls it. */
static cudarl_status save_world(cr_ppo *p, const char *path) {
    host_state hl, hw;
    cudarl_status s = host_state_alloc(&hl, p);
    CUDARL_ASSERT(s == CUDARL_OK); /* a few KiB; a failure would leave the others waiting */
    host_state_transfer(&hl, p, 1);
    if (p->pool) cr_ppo_pool_get_obs(p, hl.obs); /* the pool's, as save_file takes them */
    const int local = p->N, root = p->rank == 0;
    if (root) {
        p->N = p->world_N;
        s = host_state_alloc(&hw, p);
        p->N = local;
        if (s != CUDARL_OK) cr_comm_abort(1); /* the others wait in the gather */
    }
    const size_t n = (size_t)local;
    struct { const void *mine; void *all; size_t bytes; } g[] = {
        {hl.obs, root ? hw.obs : NULL, n * obs_row_bytes(p)},
        {hl.env, root ? hw.env : NULL, n * 4 * 8},
        {hl.ep_return, root ? hw.ep_return : NULL, n * 8},
        {hl.ep_length, root ? hw.ep_length : NULL, n * 8},
        {hl.elapsed, root ? hw.elapsed : NULL, n * 4},
        {hl.env_rng, root ? hw.env_rng : NULL, n * sizeof(cr_philox_state)},
    };
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) cr_comm_gather0(g[i].mine, g[i].all, g[i].bytes);
    /* the env pool's states and step counts: rows of a fixed stride, so the ranks' blocks in
     * rank order are one process's block of the job's envs */
    if (p->pool) {
        void *states;
        int32_t *elapsed;
        size_t bytes;
        cr_ppo_pool_state(p, &states, &bytes, &elapsed);
        if (root) {
            hw.pool_bytes = bytes * (size_t)p->ranks;
            hw.pool_states = host_block(hw.pool_bytes);
            hw.pool_elapsed = host_block((size_t)p->world_N * sizeof(int32_t));
        }
        cr_comm_gather0(states, root ? hw.pool_states : NULL, bytes);
        cr_comm_gather0(elapsed, root ? hw.pool_elapsed : NULL, n * sizeof(int32_t));
    }
    /* the env batch's block (every batch env but CartPole-v1): each rank's to rank 0, which
     * copies the envs one by one into the job's batch (a block is carved by its env count) */
    void *world_block = NULL;
    if (batch_block(p)) {
        const size_t lb = p->env.bytes;
        unsigned char *all = root ? host_block(lb * (size_t)p->ranks) : NULL;
        cr_comm_gather0(p->env.mem, all, lb); /* the CPU batch: host memory */
        if (root) {
            cr_env_batch wb, lv;
            world_block = host_block(cr_env_batch_bytes(p->env_info, p->world_N));
            cr_env_batch_init(&wb, p->env_info, p->world_N, world_block);
            void *one = host_block(lb);
            for (int r = 0; r < p->ranks; r++) {
                memcpy(one, all + (size_t)r * lb, lb);
                cr_env_batch_init(&lv, p->env_info, local, one);
                for (int j = 0; j < local; j++) cr_env_batch_copy_env(&wb, r * local + j, &lv, j);
            }
            free(one);
            free(all);
            hw.block = world_block, hw.block_bytes = wb.bytes;
        }
    }
    /* the image twin's device block, carved by its env count as the batch's: each rank's to
     * rank 0, which copies the envs one by one into the job's block */
    if (p->twin_envs) {
        size_t lb = 0;
        void *mine = env_block_to_host(p, &lb);
        if (!mine) cr_comm_abort(1); /* a twin's state: a few MiB; the others wait for it */
        unsigned char *all = root ? host_block(lb * (size_t)p->ranks) : NULL;
        cr_comm_gather0(mine, all, lb);
        free(mine);
        if (root) {
            cr_image_twin wt, lv;
            size_t wbytes = 0;
            CUDARL_ASSERT(cr_image_twin_bytes(p->cfg.env_id, p->world_N, &wbytes) == CUDARL_OK);
            world_block = twin_host_block(wbytes);
            CUDARL_ASSERT(cr_image_twin_init(&wt, p->cfg.env_id, p->world_N, world_block) ==
                          CUDARL_OK);
            void *one = twin_host_block(lb);
            for (int r = 0; r < p->ranks; r++) {
                memcpy(one, all + (size_t)r * lb, lb);
                CUDARL_ASSERT(cr_image_twin_init(&lv, p->cfg.env_id, local, one) == CUDARL_OK);
                for (int j = 0; j < local; j++)
                    cr_image_twin_copy_env(&wt, world_block, r * local + j, &lv, one, j);
            }
            free(one);
            free(all);
            hw.block = world_block, hw.block_bytes = wt.bytes;
        }
    }
    if (root) {
        const size_t P = p->num_params * sizeof(float);
        memcpy(hw.params, hl.params, P), memcpy(hw.m, hl.m, P), memcpy(hw.v, hl.v, P);
        hw.sampler = hl.sampler, hw.shuffler = hl.shuffler;
        hw.shuffler.stream[0] = (uint32_t)CR_STREAM_SHUFFLE; /* rank 0's: one process's */
        hw.shuffler.stream[1] = (uint32_t)(CR_STREAM_SHUFFLE >> 32);
        hw.log = p->world_log;
        hw.counters[C_ADAM_T] = hl.counters[C_ADAM_T];
        p->N = p->world_N;
        s = save_file(p, path, &hw);
        p->N = local;
        cr_arena_free(&hw.arena);
        free(world_block);
        free(hw.pool_states), free(hw.pool_elapsed);
    }
    cr_arena_free(&hl.arena);
    int32_t st = (int32_t)s; /* every rank fails with rank 0, so that none waits for it */
    cr_comm_bcast0(&st, sizeof st);
    if (!root && st != CUDARL_OK)
        return cr_fail((cudarl_status)st, "rank 0 could not write the checkpoint '%s' (its "
                       "message says why)", path);
    return s;
}

cudarl_status cr_ppo_checkpoint_save(cr_ppo *p, const char *path) {
    return p->ranks > 1 ? save_world(p, path) : save_file(p, path, NULL);
}

/* Copies tensor `name` of exactly `bytes` bytes and `dtype` into dst. */
static cudarl_status read_raw(const cr_st_file *f, const char *path, const char *name,
                              cr_st_dtype dtype, void *dst, size_t bytes) {
    cr_st_tensor t;
    CR_TRY(cr_st_find(f, name, &t));
    if (t.dtype != dtype || t.nbytes != bytes)
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s': tensor '%s' is %s with %zu bytes, "
                       "expected %s with %zu bytes; the file was written by another version or "
                       "for another configuration", path, name, cr_st_dtype_name(t.dtype),
                       t.nbytes, cr_st_dtype_name(dtype), bytes);
    memcpy(dst, t.data, bytes);
    return CUDARL_OK;
}

/* ---- what a resumed run may trust ---------------------------------------------------------- */

/* Refuses state tensor `name` of the checkpoint at `path`: what is wrong, then what to do. */
static cudarl_status bad_state(const char *path, const char *name, const char *fmt, ...) {
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s': tensor '%s': %s; the file was altered or "
                   "damaged: resume from a model.safetensors written by cudarl train", path, name,
                   what);
}

/* a * b for a, b >= 0, or INT64_MAX where that would overflow. */
static int64_t mul_sat(int64_t a, int64_t b) {
    return b > 0 && a > INT64_MAX / b ? INT64_MAX : a * b;
}

/* Adam steps `iterations` iterations can take, whatever epochs and minibatches they had (the C
 * API may resume with others): at most 1000 epochs (--update-epochs' limit) of minibatches of
 * one row or more. */
static int64_t max_adam_steps(const cr_ppo *p, int64_t iterations) {
    return mul_sat(iterations, mul_sat(1000, p->batch));
}

/* The counters: the step count is the iterations' steps, no more Adam steps than they took, and
 * a solve step among the steps taken. */
static cudarl_status check_counters(const cr_ppo *p, const char *path, const int64_t *c) {
    const char *name = "state.counters";
    const long long it = c[C_ITERATION], step = c[C_GLOBAL_STEP], t = c[C_ADAM_T];
    const long long solved = c[C_SOLVED_STEP], max_it = INT64_MAX / p->batch;
    if (it < 0 || it > max_it)
        return bad_state(path, name, "the iteration (element 0) is %lld, expected 0..%lld", it,
                         max_it);
    if (step != it * p->batch)
        return bad_state(path, name, "the global step (element 1) is %lld, expected %lld "
                         "(%lld iterations of %d steps)", step, it * p->batch, it, p->batch);
    const long long max_t = max_adam_steps(p, it);
    if (t < 0 || t > max_t)
        return bad_state(path, name, "the Adam step count (element 2) is %lld, expected 0..%lld "
                         "(at most 1000 epochs of %d minibatches in each of %lld iterations)", t,
                         max_t, p->batch, it);
    if (solved != -1 && (solved < 1 || solved > step))
        return bad_state(path, name, "the solve step (element 3) is %lld, expected -1 (not "
                         "solved) or 1..%lld (a step taken)", solved, step);
    return CUDARL_OK;
}

/* Whether v is a whole number in 0..hi. */
static int whole_in(double v, double hi) { return v >= 0 && v <= hi && v == floor(v); }

/* Episode statistics: finite returns, lengths and counts no larger than the steps taken (every
 * env took global_step / N of them, and an episode ends after one step at least). */
static cudarl_status check_episodes(const cr_ppo *p, const char *path, const host_state *h,
                                    const double *ep_sums) {
    const int64_t steps = h->counters[C_GLOBAL_STEP], per_env = steps / p->N;
    for (int i = 0; i < p->N; i++) {
        if (!isfinite(h->ep_return[i]))
            return bad_state(path, "state.episode_return", "env %d's return is %g, expected a "
                             "finite number", i, h->ep_return[i]);
        if (h->ep_length[i] < 0 || h->ep_length[i] > per_env)
            return bad_state(path, "state.episode_length", "env %d's episode length is %lld, "
                             "expected 0..%lld (the steps each env took)", i,
                             (long long)h->ep_length[i], (long long)per_env);
    }
    for (int i = 0; i < CR_RECENT_EPISODES; i++)
        if (!isfinite(h->log.recent[i]))
            return bad_state(path, "state.recent_returns", "element %d is %g, expected a finite "
                             "number", i, h->log.recent[i]);
    if (!whole_in(ep_sums[0], (double)steps))
        return bad_state(path, "state.episode_sums", "the episode count (element 0) is %g, "
                         "expected a whole number in 0..%lld (the steps taken)", ep_sums[0],
                         (long long)steps);
    if (!isfinite(ep_sums[1]))
        return bad_state(path, "state.episode_sums", "the return sum (element 1) is %g, expected "
                         "a finite number", ep_sums[1]);
    if (!whole_in(ep_sums[2], (double)steps))
        return bad_state(path, "state.episode_sums", "the length sum (element 2) is %g, expected "
                         "a whole number in 0..%lld (the steps taken)", ep_sums[2],
                         (long long)steps);
    return CUDARL_OK;
}

/* Every env's state and step count, where the envs step: CartPole's arrays in the env batch (its
 * own ranges), the batch's block of another env, the pool or the image twin (the env def's state
 * check). */
static cudarl_status check_envs(const cr_ppo *p, const char *path, const host_state *h,
                                const void *twin_state) {
    char why[256];
    int bad = 0, i;
    if (p->pool) { /* the pool's own, or (a resume on ranks) the job's read into h */
        i = h->pool_states ? cr_ppo_pool_check_rows(p, h->pool_states, h->pool_elapsed, p->N,
                                                     &bad, why, sizeof why)
                           : cr_ppo_pool_check_state(p, &bad, why, sizeof why);
        if (i >= 0)
            return bad_state(path, bad == 1 ? "state.pool_states" : "state.pool_elapsed",
                             "env %d: %s", i, why);
        return CUDARL_OK;
    }
    if (p->twin_envs) {
        const cr_image_twin *t = p->dist_twin ? p->dist_twin : &p->twin; /* a resume's job's */
        if ((i = cr_image_twin_check_state(t, twin_state, &bad, why, sizeof why)) >= 0)
            return bad_state(path, "state.twin", "env %d: %s", i, why);
        return CUDARL_OK;
    }
    if (batch_block(p)) {
        const cr_env_batch *b = p->dist_env ? p->dist_env : &p->env; /* a resume's job batch */
        if ((i = cr_env_batch_check_state(b, twin_state, &bad, why, sizeof why)) >= 0)
            return bad_state(path, "state.env_batch", "env %d: %s", i, why);
        return CUDARL_OK;
    }
    for (i = 0; i < p->N; i++) {
        if (cr_cartpole_check_state(h->env + (size_t)i * 4, why, sizeof why))
            return bad_state(path, "state.env", "env %d: %s", i, why);
        if (cr_check_int(why, sizeof why, "its step count", h->elapsed[i], 0,
                         CR_CARTPOLE_MAX_STEPS - 1))
            return bad_state(path, "state.env_elapsed", "env %d: %s", i, why);
        if (cr_check_rng(why, sizeof why, "its rng", &h->env_rng[i]))
            return bad_state(path, "state.env_rng", "env %d: %s", i, why);
    }
    return CUDARL_OK;
}

/* The sampler's and the shuffle's streams are the ones the run seeds (their key and position
 * may be anything: every key and every position is a stream's). */
static cudarl_status check_streams(const char *path, const host_state *h) {
    struct { const char *name; const cr_rng_stream *s; uint64_t stream; } k[] = {
        {"state.rng_sampler", &h->sampler, CR_STREAM_SAMPLER},
        {"state.rng_shuffle", &h->shuffler, CR_STREAM_SHUFFLE}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        uint64_t got = (uint64_t)k[i].s->stream[0] | (uint64_t)k[i].s->stream[1] << 32;
        if (got != k[i].stream)
            return bad_state(path, k[i].name, "its stream number (words 2 and 3) is %llu, "
                             "expected %llu", (unsigned long long)got,
                             (unsigned long long)k[i].stream);
    }
    return CUDARL_OK;
}

/* fp16's loss scaler: a finite scale, a found-inf flag, a growth tracker under the interval, and
 * no more skipped steps than optimizer steps. */
static cudarl_status check_scaler(const cr_ppo *p, const char *path,
                                  const cr_loss_scale_state *sc, int64_t iterations) {
    const char *name = "state.loss_scale";
    const long long max_skipped = max_adam_steps(p, iterations);
    if (!isfinite(sc->scale) || sc->scale < 0)
        return bad_state(path, name, "the scale is %g, expected a finite number >= 0", sc->scale);
    if (sc->found_inf != 0 && sc->found_inf != 1)
        return bad_state(path, name, "found_inf is %g, expected 0 or 1", sc->found_inf);
    if (sc->growth_tracker < 0 || sc->growth_tracker >= p->amp.cfg.growth_interval)
        return bad_state(path, name, "the growth tracker is %d, expected 0..%d", sc->growth_tracker,
                         p->amp.cfg.growth_interval - 1);
    if (sc->skipped_steps < 0 || sc->skipped_steps > max_skipped)
        return bad_state(path, name, "the skipped-step count is %lld, expected 0..%lld (the "
                         "optimizer steps of the iterations taken)", (long long)sc->skipped_steps,
                         max_skipped);
    return CUDARL_OK;
}

/* Every number of the training state read from the checkpoint, before any of it is used. */
static cudarl_status check_state(const cr_ppo *p, const char *path, const host_state *h,
                                 const double *ep_sums, const cr_loss_scale_state *scaler,
                                 const void *twin_state) {
    CR_TRY(check_counters(p, path, h->counters));
    CR_TRY(check_episodes(p, path, h, ep_sums));
    CR_TRY(check_envs(p, path, h, twin_state));
    CR_TRY(check_streams(path, h));
    if (p->amp.scaling) CR_TRY(check_scaler(p, path, scaler, h->counters[C_ITERATION]));
    return CUDARL_OK;
}

typedef struct norm_item {
    const char *name;
    size_t n;
} norm_item;

/* Reads the statistics into h (cr_ppo_norm_doubles doubles) and checks them: finite, variances >= 0,
 * counts > 0. */
static cudarl_status norm_read(const cr_st_file *f, const char *path, const cr_ppo *p,
                               double *all) {
    double *at = all;
    norm_item t[5];
    int k = 0;
    if (p->cfg.norm_obs) {
        t[k++] = (norm_item){"obs_rms.mean", (size_t)p->D};
        t[k++] = (norm_item){"obs_rms.var", (size_t)p->D};
        t[k++] = (norm_item){"obs_rms.count", 1};
    }
    if (p->cfg.norm_reward) {
        t[k++] = (norm_item){"state.return_rms", 3};
        t[k++] = (norm_item){"state.return_acc", (size_t)p->N};
    }
    for (int i = 0; i < k; i++) {
        CR_TRY(read_raw(f, path, t[i].name, CR_ST_F64, at, t[i].n * 8));
        for (size_t j = 0; j < t[i].n; j++) {
            int var = !strcmp(t[i].name, "obs_rms.var") ||
                      (!strcmp(t[i].name, "state.return_rms") && j == 1);
            int count = !strcmp(t[i].name, "obs_rms.count") ||
                        (!strcmp(t[i].name, "state.return_rms") && j == 2);
            if (!isfinite(at[j]) || (var && at[j] < 0) || (count && at[j] <= 0))
                return bad_state(path, t[i].name, "element %zu is %g, expected a finite %s", j,
                                 at[j], var ? "variance >= 0" : count ? "count > 0" : "number");
        }
        at += t[i].n;
    }
    return CUDARL_OK;
}

/* Data parallel (load_state): rows rank*N .. (rank+1)*N-1 of the job's per-env state to the
 * front of h, and p->N this rank's again for the transfer. */
static void take_slice(cr_ppo *p, host_state *h) {
    const size_t n = (size_t)p->dist_local_N, first = (size_t)p->rank * n;
    const size_t ob = obs_row_bytes(p);
    p->N = p->dist_local_N, p->batch = p->T * p->N;
    memmove(h->obs, (unsigned char *)h->obs + first * ob, n * ob);
    memmove(h->env, h->env + first * 4, n * 4 * 8);
    memmove(h->ep_return, h->ep_return + first, n * 8);
    memmove(h->ep_length, h->ep_length + first, n * 8);
    memmove(h->elapsed, h->elapsed + first, n * 4);
    memmove(h->env_rng, h->env_rng + first, n * sizeof(cr_philox_state));
    const uint64_t stream = CR_STREAM_SHUFFLE_OF(p->rank);
    h->shuffler.stream[0] = (uint32_t)stream, h->shuffler.stream[1] = (uint32_t)(stream >> 32);
    p->world_log = h->log; /* the job's; this rank's own starts empty */
    memset(&h->log, 0, sizeof h->log);
    if (h->pool_states) { /* the pool's rows of this rank's envs */
        void *states;
        int32_t *elapsed;
        size_t bytes;
        cr_ppo_pool_state(p, &states, &bytes, &elapsed);
        memcpy(states, (unsigned char *)h->pool_states + first * (bytes / n), bytes);
        memcpy(elapsed, h->pool_elapsed + first, n * sizeof(int32_t));
    }
}

static cudarl_status load_state_of(cr_ppo *p, const cr_st_file *f, const char *path) {
    host_state h;
    CR_TRY(host_state_alloc(&h, p));
    size_t P = p->num_params, N = (size_t)p->N;
    cudarl_status s = CUDARL_OK;
    param_desc pt[PPO_MAX_TENSORS];
    const int ntensors = param_tensors(p, pt);
    for (int i = 0; i < ntensors && s == CUDARL_OK; i++) {
        const param_desc *t = &pt[i];
        char name[96];
        s = cr_st_read_f32(f, t->name, h.params + t->offset, t->count);
        snprintf(name, sizeof name, "optimizer.exp_avg.%s", t->name);
        if (s == CUDARL_OK) s = cr_st_read_f32(f, name, h.m + t->offset, t->count);
        snprintf(name, sizeof name, "optimizer.exp_avg_sq.%s", t->name);
        if (s == CUDARL_OK) s = cr_st_read_f32(f, name, h.v + t->offset, t->count);
    }
    (void)P;
    double ep_sums[3];
    memset(&h.log, 0, sizeof h.log);
    void *pool_states = NULL;
    int32_t *pool_elapsed = NULL;
    size_t pool_bytes = 0;
    if (p->pool) cr_ppo_pool_state(p, &pool_states, &pool_bytes, &pool_elapsed);
    if (p->pool && p->ranks > 1) { /* the job's rows (p->N the job's), this rank's taken later */
        pool_bytes = pool_bytes / (size_t)p->dist_local_N * N;
        h.pool_bytes = pool_bytes;
        pool_states = h.pool_states = malloc(pool_bytes);
        pool_elapsed = h.pool_elapsed = malloc(N * sizeof(int32_t));
        if ((!h.pool_states || !h.pool_elapsed) && s == CUDARL_OK)
            s = cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory for the envs' state");
    }
    size_t batch = p->pool || p->twin_envs || batch_block(p) ? 0 : N;
    void *block_mem;
    const char *block_name;
    size_t twin_bytes = env_block(p, &block_mem, &block_name);
    void *twin_state = NULL;
    if (twin_bytes) {
        twin_state = malloc(twin_bytes);
        if (!twin_state && s == CUDARL_OK)
            s = cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory for the envs' state");
    }
    cr_loss_scale_state scaler;
    struct { const char *name; cr_st_dtype dtype; void *dst; size_t bytes; } t[] = {
        {"state.counters", CR_ST_I64, h.counters, sizeof h.counters},
        {p->pool ? "state.pool_states" : "state.env", p->pool ? CR_ST_U8 : CR_ST_F64,
         p->pool ? pool_states : h.env, p->pool ? pool_bytes : batch * 4 * 8},
        {p->pool ? "state.pool_elapsed" : "state.env_elapsed", CR_ST_I32,
         p->pool ? (void *)pool_elapsed : (void *)h.elapsed, p->pool || batch ? N * 4 : 0},
        {twin_bytes ? block_name : "state.twin", CR_ST_U8, twin_state, twin_bytes},
        {"state.env_rng", CR_ST_U32, h.env_rng, batch * sizeof(cr_philox_state)},
        {"state.obs", p->conv ? CR_ST_U8 : CR_ST_F32, h.obs, obs_bytes(p)},
        {"state.episode_return", CR_ST_F64, h.ep_return, N * 8},
        {"state.episode_length", CR_ST_I64, h.ep_length, N * 8},
        {"state.recent_returns", CR_ST_F64, h.log.recent, sizeof h.log.recent},
        {"state.episode_sums", CR_ST_F64, ep_sums, sizeof ep_sums},
        {"state.rng_sampler", CR_ST_U32, &h.sampler, sizeof h.sampler},
        {"state.rng_shuffle", CR_ST_U32, &h.shuffler, sizeof h.shuffler},
        {"state.loss_scale", CR_ST_U8, &scaler, p->amp.scaling ? sizeof scaler : 0},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0] && s == CUDARL_OK; i++)
        if (t[i].bytes) s = read_raw(f, path, t[i].name, t[i].dtype, t[i].dst, t[i].bytes);
    if (s == CUDARL_OK) s = check_state(p, path, &h, ep_sums, &scaler, twin_state);
    double *norm = NULL;
    const size_t nn = cr_ppo_norm_doubles(p);
    if (s == CUDARL_OK && nn) {
        norm = malloc(nn * 8);
        s = norm ? norm_read(f, path, p, norm)
                 : cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory");
        if (s == CUDARL_OK) p->ctx->ops->copy_from_host(p->ctx, p->norm, norm, nn * 8);
    }
    free(norm);
    if (s == CUDARL_OK && twin_bytes && p->dist_twin) /* the job's block, host memory */
        memcpy(block_mem, twin_state, twin_bytes);
    else if (s == CUDARL_OK && twin_bytes)
        p->ctx->ops->copy_from_host(p->ctx, block_mem, twin_state, twin_bytes);
    free(twin_state);
    if (s == CUDARL_OK && p->amp.scaling)
        p->ctx->ops->copy_from_host(p->ctx, p->amp.state, &scaler, sizeof scaler);
    if (s == CUDARL_OK) {
        h.log.episodes = (int64_t)ep_sums[0];
        h.log.iter_return_sum = ep_sums[1], h.log.iter_length_sum = ep_sums[2];
        if (p->ranks > 1) take_slice(p, &h);
        if (p->pool) cr_ppo_pool_set_obs(p, h.obs); /* this rank's rows */
        host_state_transfer(&h, p, 0);
        p->iteration = h.counters[C_ITERATION], p->global_step = h.counters[C_GLOBAL_STEP];
        p->solved_step = h.counters[C_SOLVED_STEP];
        p->h_log = p->ranks > 1 ? p->world_log : h.log;
    }
    free(h.pool_states), free(h.pool_elapsed);
    cr_arena_free(&h.arena);
    return s;
}

/* Data parallel: a resume reads and checks the job's state (p->N, p->batch the job's), then
 * this rank keeps its envs' rows (rank*N ..), its own shuffle stream at the file's position,
 * and a fresh log of its own: the file's episode log is the job's (world_log). */
static cudarl_status load_state(cr_ppo *p, const cr_st_file *f, const char *path) {
    if (p->ranks == 1) return load_state_of(p, f, path);
    const int local = p->N, local_batch = p->batch;
    cr_env_batch wb; /* the job's batch, where the file's block is read and checked */
    cr_image_twin wt; /* or the job's image twin's */
    void *world_block = NULL;
    if (batch_block(p)) {
        world_block = host_block(cr_env_batch_bytes(p->env_info, p->world_N));
        cr_env_batch_init(&wb, p->env_info, p->world_N, world_block);
        p->dist_env = &wb;
    }
    if (p->twin_envs) {
        size_t wbytes = 0;
        CUDARL_ASSERT(cr_image_twin_bytes(p->cfg.env_id, p->world_N, &wbytes) == CUDARL_OK);
        world_block = twin_host_block(wbytes);
        CUDARL_ASSERT(cr_image_twin_init(&wt, p->cfg.env_id, p->world_N, world_block) ==
                      CUDARL_OK);
        p->dist_twin = &wt;
    }
    p->dist_local_N = local;
    p->N = p->world_N, p->batch = p->world_batch;
    cudarl_status s = load_state_of(p, f, path);
    p->N = local, p->batch = local_batch;
    p->dist_env = NULL, p->dist_twin = NULL;
    if (s == CUDARL_OK && world_block && !p->twin_envs) /* this rank's envs: the job's rank*N .. */
        for (int j = 0; j < local; j++) cr_env_batch_copy_env(&p->env, j, &wb, p->rank * local + j);
    if (s == CUDARL_OK && p->twin_envs) { /* into a block of this rank's layout, to the device */
        cr_image_twin lt;
        void *mine = twin_host_block(p->twin.bytes);
        CUDARL_ASSERT(cr_image_twin_init(&lt, p->cfg.env_id, local, mine) == CUDARL_OK);
        for (int j = 0; j < local; j++)
            cr_image_twin_copy_env(&lt, mine, j, &wt, world_block, p->rank * local + j);
        p->ctx->ops->copy_from_host(p->ctx, p->twin.mem, mine, p->twin.bytes);
        p->ctx->ops->sync(p->ctx);
        free(mine);
    }
    free(world_block);
    return s;
}

/* Conv policy: every parameter tensor and Adam moment of the layout has the layout's dtype and
 * shape in the file (a transposed or resized weight must not load because its element count
 * fits). */
static cudarl_status check_conv_tensors(const cr_ppo *p, const cr_st_file *f, const char *path) {
    static const char *const prefix[3] = {"", "optimizer.exp_avg.", "optimizer.exp_avg_sq."};
    param_desc pt[PPO_MAX_TENSORS];
    const int n = param_tensors(p, pt);
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < n; i++) {
            char name[96];
            snprintf(name, sizeof name, "%s%s", prefix[k], pt[i].name);
            CR_TRY(cr_checkpoint_expect_f32(f, path, name, pt[i].ndim, pt[i].shape,
                                            "its network spec gives"));
        }
    return CUDARL_OK;
}

/* Refuses a checkpoint whose policy is not this run's: a conv policy's must be a cudarl PPO
 * checkpoint (format, version and algo checked here: cr_checkpoint_check_format refuses every
 * convolutional network, which eval and export do not read yet) whose network spec text is
 * this run's, with every tensor of that network's shape. */
static cudarl_status check_policy(const cr_ppo *p, const cr_st_file *f, const char *path) {
    const char *pol = cr_st_meta(f, "policy"), *net = cr_st_meta(f, CR_CONVNET_META_KEY);
    if (!net && !p->conv) return cr_checkpoint_check_format(f, path, "ppo");
    const char *fmt = cr_st_meta(f, "format"), *ver = cr_st_meta(f, "format_version");
    const char *algo = cr_st_meta(f, "algo");
    long v = ver ? strtol(ver, NULL, 10) : 0;
    if (!fmt || strcmp(fmt, CR_CHECKPOINT_FORMAT) || v < 1 || v > CR_CHECKPOINT_VERSION)
        return cr_fail(CUDARL_ERR_FORMAT, "'%s' is not a cudarl checkpoint this build reads "
                       "(format %s, version %s; this build reads %s 1 to %d); pass a "
                       "model.safetensors written by cudarl train", path, fmt ? fmt : "missing",
                       ver ? ver : "missing", CR_CHECKPOINT_FORMAT, CR_CHECKPOINT_VERSION);
    if (!algo || strcmp(algo, "ppo"))
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s' was trained with algo '%s', not ppo",
                       path, algo ? algo : "(missing)");
    CR_TRY(cr_checkpoint_check_finite(f, path));
    const char *theirs = net ? (pol ? pol : "(unnamed)") : "mlp";
    if (!net || !p->conv || strcmp(theirs, p->cfg.policy))
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s' holds policy %s but this run's is "
                       "%s; resume with --policy %s", path, theirs, p->cfg.policy, theirs);
    char source[700], want[CR_CONVNET_TEXT_MAX], got[CR_CONVNET_TEXT_MAX];
    snprintf(source, sizeof source, "checkpoint '%s' metadata \"%s\"", path, CR_CONVNET_META_KEY);
    cr_convnet_spec spec;
    CR_TRY(cr_convnet_spec_parse(&spec, net, source));
    CR_TRY(cr_convnet_spec_to_text(&spec, got, sizeof got));
    CR_TRY(cr_convnet_spec_to_text(&p->cnn.net.spec, want, sizeof want));
    if (strcmp(got, want))
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s' holds the network %s, but this run "
                       "(--policy %s on %s) builds %s; resume it with the env and policy it was "
                       "trained on", path, got, p->cfg.policy, p->cfg.env_id, want);
    const int theirs_sep = cr_checkpoint_separate_critic(f);
    if (theirs_sep != p->cnn.separate)
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s' was trained %s --separate-critic, "
                       "this run %s; resume it %s --separate-critic", path,
                       theirs_sep ? "with" : "without", p->cnn.separate ? "has it" : "has not",
                       theirs_sep ? "with" : "without");
    return check_conv_tensors(p, f, path);
}

static const char *where_words(const char *where) {
    return !strcmp(where, "cpu")         ? "on CPU threads"
           : !strcmp(where, "cuda-twin") ? "by their CUDA twin"
                                         : "by the env batch";
}

/* Refuses a checkpoint whose model or env batch differs from this run's. */
static cudarl_status check_shape(const cr_ppo *p, const cr_st_file *f, const char *path) {
    CR_TRY(check_policy(p, f, path));
    const char *env = cr_st_meta(f, "env_id"), *where = cr_st_meta(f, "env_device");
    const char *here = where_of(p);
    if (!where) where = "cuda-batch"; /* written before envs could step on CPU threads */
    if (strcmp(where, here))
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s' has its envs stepped %s but this "
                       "run steps them %s; resume with --env-device %s", path,
                       where_words(where), where_words(here),
                       strcmp(where, "cpu") ? "cuda (and the device the run had)" : "cpu");
    if (!env || strcmp(env, p->cfg.env_id))
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s' is for env '%s' but this run is %s; "
                       "pass --env-id %s", path, env ? env : "?", p->cfg.env_id, env ? env : "?");
    /* absent before --precision existed: fp32 */
    CR_TRY(cr_checkpoint_check_precision(f, path, p->cfg.precision, CUDARL_PRECISION_FP32));
    struct { const char *key; long long want; const char *flag; } k[] = {
        {"obs_dim", p->D, "--env-id"}, {"num_actions", p->A, "--env-id"},
        {"hidden", p->cfg.hidden, "--hidden"}, {"num_envs", p->cfg.num_envs, "--num-envs"},
        {"num_steps", p->cfg.num_steps, "--num-steps"}, {"action_dim", p->K, "--env-id"},
        {"norm_obs", p->cfg.norm_obs, "--norm-obs"},
        {"norm_reward", p->cfg.norm_reward, "--norm-reward"}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        if (p->conv && !strcmp(k[i].key, "hidden")) continue; /* the MLP's width */
        const char *v = cr_st_meta(f, k[i].key);
        /* absent from files of before continuous actions and normalization: 0 */
        int zero_ok = !strcmp(k[i].key, "action_dim") || !strncmp(k[i].key, "norm_", 5);
        if (!v && zero_ok && k[i].want == 0) continue;
        if (!v || strtoll(v, NULL, 10) != k[i].want)
            return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s' has %s = %s but this run has %lld; "
                           "a resumed run must keep the checkpoint's %s", path, k[i].key,
                           v ? v : "(missing)", k[i].want, k[i].flag);
    }
    return CUDARL_OK;
}

cudarl_status cr_ppo_checkpoint_load(cr_ppo *p, const char *path) {
    cr_st_file *f;
    CR_TRY(cr_st_open(&f, path));
    cudarl_status s = check_shape(p, f, path);
    if (s == CUDARL_OK) s = load_state(p, f, path);
    cr_st_close(f);
    if (s == CUDARL_OK && p->iteration >= p->num_iterations)
        s = cr_fail(CUDARL_ERR_INVALID_ARG, "checkpoint '%s' is already at step %lld of "
                    "--total-timesteps %lld; raise --total-timesteps to train further", path,
                    (long long)p->global_step, (long long)p->cfg.total_timesteps);
    if (s == CUDARL_OK)
        CR_INFO("resuming from %s at step %lld (iteration %lld)", path,
                (long long)p->global_step, (long long)p->iteration);
    return s;
}
