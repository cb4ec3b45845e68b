/* DQN checkpoints: the whole training state in one safetensors file, so that a run stopped at
 * step N and resumed ends with the bytes of a run that went straight through.
 *
 * Tensors: the online Q-network under its PyTorch state_dict names (dqn.py's q_network.*
 * layout: network.*), the target network (target_network.*), Adam's moments
 * (optimizer.exp_avg.* / optimizer.exp_avg_sq.*), and state.*: the counters, the episode and
 * loss sums of the current metrics row, the explore and replay-sampling RNG streams, the current
 * observations, each env's running return and length, the envs' state (the env batch's or the
 * image twin's block byte for byte, or the pool's states and step counts), fp16's loss scaler,
 * and the replay buffer whole (state.replay.*: every slot's frame, action, reward and flags, the
 * heads, the sampleable count, the largest priority and the sum tree's leaves; replay.h). The
 * epsilon schedule's position is the step counter (epsilon is a function of it). __metadata__
 * holds the format, the hyperparameters, the env, where its envs stepped, and a conv net's spec.
 * A resume checks the run's shapes against the file, then every number of state.* (check_state,
 * cr_replay_buffer_restore) before any of it is used. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/dqn/dqn_internal.h"
#include "core/abi.h"
#include "env/env_check.h"
#include "nn/precision.h"
#include "ops/comm.h"

/* state.counters */
enum { K_ITERATION, K_GLOBAL_STEP, K_TRAIN_STEPS, K_ADAM_T, K_SOLVED_STEP, K_METRICS_STEP,
       K_EPISODES, K_ITER_EPISODES, K_COUNT };
/* state.sums: the metrics row's sums since the last row, and clip_grad_norm's running sum */
enum { S_ITER_RETURN, S_ITER_LENGTH, S_LOSS, S_Q, S_TD_ABS, S_COUNT, S_LAST_LOSS, S_GRAD_NORM,
       S_NUM };

#define REPLAY_PREFIX "state.replay."
/* Data parallel: a rank's row sums (state.rank_sums): the loss, Q and |TD| sums, the count,
 * the last loss, the episodes' return and length sums and their count. */
#define RANK_SUMS 8

static const char *where_name(int where) {
    return where == CR_DQN_ENVS_POOL ? "cpu" : where == CR_DQN_ENVS_TWIN ? "cuda-twin" : "batch";
}

static const char *where_words(const char *where) {
    return !strcmp(where, "cpu")         ? "on CPU threads (--env-device cpu)"
           : !strcmp(where, "cuda-twin") ? "by their CUDA twin (--env-device cuda)"
                                         : "by the env batch";
}

static cr_st_dtype elem_dtype(cr_replay_elem e) {
    return e == CR_REPLAY_ELEM_U8 ? CR_ST_U8 : e == CR_REPLAY_ELEM_I32 ? CR_ST_I32
         : e == CR_REPLAY_ELEM_I64 ? CR_ST_I64 : CR_ST_F32;
}

/* The envs' state kept as one block of backend memory (the env batch's or the image twin's), its
 * tensor's name and bytes; 0 for the pool, whose states are host memory of its own. */
static size_t env_block(const cr_dqn *d, void **mem, const char **name) {
    if (d->where == CR_DQN_ENVS_TWIN) return *mem = d->twin.mem, *name = "state.twin", d->twin.bytes;
    if (d->where == CR_DQN_ENVS_BATCH)
        return *mem = d->env.mem, *name = "state.env_batch", d->env.bytes;
    return *mem = NULL, *name = NULL, 0;
}

/* Host copies of the state in backend memory (one block, freed whole). */
typedef struct host_state {
    float *params;                  /* (4 P): online, target, exp_avg, exp_avg_sq */
    void *obs;                      /* (N, obs_bytes) */
    double *ep_return;              /* (N) */
    int64_t *ep_length;             /* (N) */
    void *env;                      /* the env block (env_block's bytes), or NULL */
    /* data parallel, envs on CPU threads: the job's pool states (N, state_stride) and step
     * counts (N), gathered by save_world or read by a resume (the pool holds a rank's share);
     * NULL otherwise (the pool's own are used). Allocated apart from block. */
    unsigned char *pool_states;
    int32_t *pool_elapsed;
    cr_dqn_metrics m;
    cr_dqn_scalars s;
    int64_t counters[K_COUNT];
    double sums[S_NUM];
    void *block;
} host_state;

static cudarl_status host_state_alloc(host_state *h, const cr_dqn *d, size_t env_bytes) {
    size_t P = d->net.num_params, N = (size_t)d->N;
    size_t sizes[5] = {4 * P * 4, N * d->obs_bytes, N * 8, N * 8, env_bytes}, total = 0;
    for (int i = 0; i < 5; i++) total += (sizes[i] + 63) / 64 * 64;
    memset(h, 0, sizeof *h);
    h->block = malloc(total);
    if (!h->block) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory for the "
                                  "training state");
    uint8_t *at = h->block;
    void **dst[5] = {(void **)&h->params, &h->obs, (void **)&h->ep_return,
                     (void **)&h->ep_length, &h->env};
    for (int i = 0; i < 5; i++) *dst[i] = at, at += (sizes[i] + 63) / 64 * 64;
    if (!env_bytes) h->env = NULL;
    return CUDARL_OK;
}

/* Moves the state between backend memory and h (to_host: 1 = save, 0 = load). */
static void host_state_transfer(host_state *h, cr_dqn *d, int to_host) {
    cudarl_ctx *ctx = d->ctx;
    size_t P = d->net.num_params * 4, N = (size_t)d->N;
    void *env_mem;
    const char *env_name;
    size_t env_bytes = env_block(d, &env_mem, &env_name);
    struct { void *dev, *host; size_t bytes; } t[] = {
        {d->online, h->params, P}, {d->target, h->params + d->net.num_params, P},
        {d->adam_m, h->params + 2 * d->net.num_params, P},
        {d->adam_v, h->params + 3 * d->net.num_params, P},
        {d->obs, h->obs, N * d->obs_bytes}, {d->ep_return, h->ep_return, N * 8},
        {d->ep_length, h->ep_length, N * 8}, {env_mem, h->env, env_bytes},
        {d->m, &h->m, sizeof h->m}, {d->s, &h->s, sizeof h->s},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        if (!t[i].bytes) continue;
        if (to_host) ctx->ops->copy_to_host(ctx, t[i].host, t[i].dev, t[i].bytes);
        else ctx->ops->copy_from_host(ctx, t[i].dev, t[i].host, t[i].bytes);
    }
    ctx->ops->sync(ctx);
}

static void meta_num(cr_st_writer *w, const char *key, double v) {
    char b[48];
    snprintf(b, sizeof b, "%.17g", v);
    cr_st_add_meta(w, key, b);
}

/* The hyperparameters, the model's shape and where the envs stepped. */
static void add_meta(cr_st_writer *w, const cr_dqn *d, const char *spec) {
    const cudarl_dqn_config *c = &d->cfg;
    char b[64];
    cr_st_add_meta(w, "format", CR_CHECKPOINT_FORMAT);
    snprintf(b, sizeof b, "%d", CR_CHECKPOINT_VERSION), cr_st_add_meta(w, "format_version", b);
    cr_st_add_meta(w, "cudarl_version", CUDARL_VERSION_STRING);
    cr_st_add_meta(w, "algo", "dqn");
    cr_st_add_meta(w, "policy", d->net.conv ? c->policy : "qnet");
    if (d->net.conv) cr_st_add_meta(w, CR_CONVNET_META_KEY, spec);
    cr_st_add_meta(w, "env_id", c->env_id);
    cr_st_add_meta(w, "env_device", where_name(d->where));
    cr_st_add_meta(w, "run_name", c->run_name);
    cr_st_add_meta(w, "precision", cudarl_precision_name(c->precision));
    /* uint8 observations reach the network cast to float, 0/1 as 0/1 (no division by 255) */
    if (d->u8 && (!d->net.conv || d->net.cnn.spec.scale == CR_CONVNET_SCALE_NONE))
        cr_st_add_meta(w, "obs_input", "uint8 cast to float32, unscaled");
    struct { const char *k; long long v; } ints[] = {
        {"obs_dim", d->D}, {"num_actions", d->A}, {"hidden1", c->hidden1}, {"hidden2", c->hidden2},
        {"total_timesteps", c->total_timesteps}, {"num_envs", c->num_envs},
        {"buffer_size", c->buffer_size},
        {"target_network_frequency", c->target_network_frequency},
        {"batch_size", c->batch_size}, {"learning_starts", c->learning_starts},
        {"train_frequency", c->train_frequency}, {"double_dqn", c->double_dqn},
        {"prioritized", c->prioritized}, {"huber", c->huber},
        {"replay_frames", c->replay_frames}, {"global_step", d->global_step},
        {"iteration", d->iteration}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        if (d->net.conv && !strncmp(ints[i].k, "hidden", 6)) continue; /* the MLP's widths */
        snprintf(b, sizeof b, "%lld", ints[i].v);
        cr_st_add_meta(w, ints[i].k, b);
    }
    snprintf(b, sizeof b, "%llu", (unsigned long long)c->seed), cr_st_add_meta(w, "seed", b);
    struct { const char *k; double v; } reals[] = {
        {"learning_rate", c->learning_rate}, {"gamma", c->gamma}, {"tau", c->tau},
        {"start_e", c->start_e}, {"end_e", c->end_e},
        {"exploration_fraction", c->exploration_fraction}, {"max_grad_norm", c->max_grad_norm},
        {"prioritized_alpha", c->prioritized_alpha}, {"prioritized_beta", c->prioritized_beta},
        {"prioritized_eps", c->prioritized_eps}};
    for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++) meta_num(w, reals[i].k, reals[i].v);
}

/* Writes the file from the host state h (d->N envs, env_bytes of env block) and the replay
 * pieces of `ranks` shards (ranks x CR_REPLAY_PIECES, nrp each; data parallel: rank r's named
 * state.replay.rank<r>.*, with their per-rank row sums in rank_sums (ranks x RANK_SUMS)). */
static cudarl_status write_file(cr_dqn *d, const char *path, host_state *hp, size_t env_bytes,
                                const cr_replay_piece *rps, int nrp, int ranks,
                                const double *rank_sums, const cr_rng_stream *rank_samples) {
    char spec[CR_CONVNET_TEXT_MAX];
    if (d->net.conv) CR_TRY(cr_convnet_spec_to_text(&d->net.cnn.spec, spec, sizeof spec));
    void *env_mem;
    const char *env_name;
    (void)env_block(d, &env_mem, &env_name);
    host_state h = *hp;
    cr_st_writer *w = malloc(sizeof *w);
    if (!w) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory writing '%s'", path);
    cudarl_status s;
    const cr_dqn_metrics *m = &h.m;
    int64_t k[K_COUNT] = {d->iteration, d->global_step, d->train_steps, h.s.adam_t,
                          d->solved_step, m->step, m->log.episodes, m->log.iter_episodes};
    double sums[S_NUM] = {m->log.iter_return_sum, m->log.iter_length_sum, m->acc.loss_sum,
                          m->acc.q_sum, m->acc.td_abs_sum, m->acc.count, m->acc.last_loss,
                          m->grad_norm_sum};
    cr_st_writer_init(w);
    add_meta(w, d, spec);
    char rb[24];
    if (ranks > 1) snprintf(rb, sizeof rb, "%d", ranks), cr_st_add_meta(w, "ranks", rb);
    const int64_t s_rs[2] = {ranks, RANK_SUMS};
    if (ranks > 1) cr_st_add_tensor(w, "state.rank_sums", CR_ST_F64, 2, s_rs, rank_sums);
    const int64_t s_rng[2] = {ranks, sizeof(cr_rng_stream) / 4};
    if (ranks > 1) /* the replay's rejection sampling moves each rank's stream its own way */
        cr_st_add_tensor(w, "state.rank_rng_sample", CR_ST_U32, 2, s_rng, rank_samples);
    const int64_t N = d->N, s_n[1] = {N}, s_k[1] = {K_COUNT}, s_s[1] = {S_NUM};
    const int64_t s_rec[1] = {CR_RECENT_EPISODES}, s_st[1] = {sizeof(cr_rng_stream) / 4};
    const int64_t s_obs[2] = {N, d->D}, s_env[1] = {(int64_t)env_bytes};
    /* 8-byte types first, then 4, then 1, so that every tensor stays aligned */
    cr_st_add_tensor(w, "state.counters", CR_ST_I64, 1, s_k, k);
    cr_st_add_tensor(w, "state.sums", CR_ST_F64, 1, s_s, sums);
    cr_st_add_tensor(w, "state.recent_returns", CR_ST_F64, 1, s_rec, m->log.recent);
    cr_st_add_tensor(w, "state.episode_return", CR_ST_F64, 1, s_n, h.ep_return);
    cr_st_add_tensor(w, "state.episode_length", CR_ST_I64, 1, s_n, h.ep_length);
    char name[128];
    for (int pass = 0; pass < 3; pass++) /* the replay's pieces by width: 8, 4, 1 bytes */
        for (int r = 0; r < ranks; r++)
            for (int i = 0; i < nrp; i++) {
                const cr_replay_piece *rp = rps + (size_t)r * CR_REPLAY_PIECES;
                int wide = rp[i].elem == CR_REPLAY_ELEM_I64 ? 0
                           : rp[i].elem == CR_REPLAY_ELEM_U8 ? 2 : 1;
                if (wide != pass) continue;
                const int64_t frame = d->D / d->K; /* a slot's frame */
                const int64_t shape[2] = {rp[i].count / (i == 0 ? frame : 1), frame};
                if (ranks > 1) snprintf(name, sizeof name, REPLAY_PREFIX "rank%d.%s", r, rp[i].name);
                else snprintf(name, sizeof name, REPLAY_PREFIX "%s", rp[i].name);
                cr_st_add_tensor(w, name, elem_dtype(rp[i].elem), i == 0 ? 2 : 1, shape,
                                 rp[i].data);
            }
    const char *prefix[4] = {"", "target_", "optimizer.exp_avg.", "optimizer.exp_avg_sq."};
    cr_dqn_tensor t[CR_CONVNET_MAX_TENSORS];
    const int n = cr_dqn_qnet_tensors(d, t);
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < n; i++) {
            snprintf(name, sizeof name, "%s%s", prefix[j], t[i].name);
            cr_st_add_tensor(w, name, CR_ST_F32, t[i].ndim, t[i].shape,
                             h.params + (size_t)j * d->net.num_params + t[i].offset);
        }
    cr_st_add_tensor(w, "state.rng_explore", CR_ST_U32, 1, s_st, &h.s.explore);
    cr_st_add_tensor(w, "state.rng_sample", CR_ST_U32, 1, s_st, &h.s.sample);
    if (d->pool) { /* the pool's env states, byte for byte (a def's state has no pointers) */
        const cr_env_pool *pool = &d->pool->pool;
        const int64_t s_pool[1] = {(int64_t)((size_t)N * pool->state_stride)};
        cr_st_add_tensor(w, "state.pool_elapsed", CR_ST_I32, 1, s_n,
                         h.pool_elapsed ? h.pool_elapsed : pool->elapsed);
        cr_st_add_tensor(w, "state.pool_states", CR_ST_U8, 1, s_pool,
                         h.pool_states ? h.pool_states : pool->states);
    }
    if (!d->u8) cr_st_add_tensor(w, "state.obs", CR_ST_F32, 2, s_obs, h.obs);
    else cr_st_add_tensor(w, "state.obs", CR_ST_U8, 2, s_obs, h.obs);
    if (env_bytes) cr_st_add_tensor(w, env_name, CR_ST_U8, 1, s_env, h.env);
    const int64_t s_scaler[1] = {(int64_t)sizeof m->scaler};
    if (d->amp.scaling) /* fp16: the loss scaler's state, byte for byte */
        cr_st_add_tensor(w, "state.loss_scale", CR_ST_U8, 1, s_scaler, &m->scaler);
    s = cr_st_write_atomic(w, path);
    free(w);
    return s;
}

static cudarl_status save_one(cr_dqn *d, const char *path) {
    void *env_mem;
    const char *env_name;
    const size_t env_bytes = env_block(d, &env_mem, &env_name);
    host_state h;
    CR_TRY(host_state_alloc(&h, d, env_bytes));
    cr_replay_piece rp[CR_REPLAY_PIECES];
    int nrp = 0;
    void *replay_block = NULL;
    cudarl_status s = cr_replay_buffer_save(&d->replay, rp, &nrp, &replay_block);
    if (s == CUDARL_OK) {
        host_state_transfer(&h, d, 1);
        s = write_file(d, path, &h, env_bytes, rp, nrp, 1, NULL, NULL);
    }
    free(replay_block);
    free(h.block);
    return s;
}

/* Host memory for the gathered state, or the job ends (ops/comm.h). */
static void *host_block(size_t bytes) { return cr_comm_host_alloc(bytes, "data parallel DQN checkpoint"); }

/* Data parallel: every rank's envs gathered into rank 0's host state in the job's env order
 * (rank r's are envs r*N .. (r+1)*N-1), every rank's replay shard (state.replay.rank<r>.*)
 * and its row sums (state.rank_sums), with rank 0's weights, Adam moments and streams (every
 * rank's are the same but for the sampling stream's number) and the job's episode log; rank 0
 * writes the file and every rank returns its status. A collective: every rank calls it. */
static cudarl_status save_world(cr_dqn *d, const char *path) {
    void *env_mem;
    const char *env_name;
    const size_t lb = env_block(d, &env_mem, &env_name); /* the CPU batch: host memory */
    const int local = d->N, R = d->ranks, root = d->rank == 0;
    host_state hl, hw;
    cudarl_status s = host_state_alloc(&hl, d, lb);
    if (s != CUDARL_OK) cr_comm_abort(1); /* the others would wait in the gathers */
    host_state_transfer(&hl, d, 1);
    const double mine[RANK_SUMS] = {hl.m.acc.loss_sum, hl.m.acc.q_sum, hl.m.acc.td_abs_sum,
                                    hl.m.acc.count, hl.m.acc.last_loss,
                                    hl.m.log.iter_return_sum, hl.m.log.iter_length_sum,
                                    (double)hl.m.log.iter_episodes};
    double *rank_sums = root ? host_block((size_t)R * sizeof mine) : NULL;
    cr_comm_gather0(mine, rank_sums, sizeof mine);
    cr_rng_stream *rank_samples = root ? host_block((size_t)R * sizeof hl.s.sample) : NULL;
    cr_comm_gather0(&hl.s.sample, rank_samples, sizeof hl.s.sample);
    const size_t wbytes = d->pool ? 0 : cr_env_batch_bytes(d->env_info, d->world_N);
    if (root) {
        d->N = d->world_N;
        s = host_state_alloc(&hw, d, wbytes);
        d->N = local;
        if (s != CUDARL_OK) cr_comm_abort(1);
    }
    const size_t n = (size_t)local;
    struct { const void *mine; void *all; size_t bytes; } g[] = {
        {hl.obs, root ? hw.obs : NULL, n * d->obs_bytes},
        {hl.ep_return, root ? hw.ep_return : NULL, n * 8},
        {hl.ep_length, root ? hw.ep_length : NULL, n * 8},
    };
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++)
        cr_comm_gather0(g[i].mine, g[i].all, g[i].bytes);
    void *world_block = NULL;
    if (d->pool) { /* the pool's states and step counts: rows of a fixed stride, in env order */
        const cr_env_pool *pool = &d->pool->pool;
        const size_t bytes = n * pool->state_stride;
        if (root) {
            hw.pool_states = host_block(bytes * (size_t)R);
            hw.pool_elapsed = host_block((size_t)d->world_N * sizeof(int32_t));
        }
        cr_comm_gather0(pool->states, root ? hw.pool_states : NULL, bytes);
        cr_comm_gather0(pool->elapsed, root ? hw.pool_elapsed : NULL, n * sizeof(int32_t));
    }
    /* the env batch's block: each rank's to rank 0, which copies the envs one by one into the
     * job's batch (a block is carved by its env count) */
    unsigned char *all = root && !d->pool ? host_block(lb * (size_t)R) : NULL;
    if (!d->pool) cr_comm_gather0(env_mem, all, lb);
    if (root && !d->pool) {
        cr_env_batch wb, lv;
        world_block = host_block(wbytes);
        memset(world_block, 0, wbytes); /* the padding between the carved arrays too */
        cr_env_batch_init(&wb, d->env_info, d->world_N, world_block);
        void *one = host_block(lb);
        for (int r = 0; r < R; r++) {
            memcpy(one, all + (size_t)r * lb, lb);
            cr_env_batch_init(&lv, d->env_info, local, one);
            for (int j = 0; j < local; j++) cr_env_batch_copy_env(&wb, r * local + j, &lv, j);
        }
        free(one);
        memcpy(hw.env, world_block, wbytes);
    }
    free(all);
    /* the replay shards, piece by piece (every rank's pieces have the same sizes) */
    cr_replay_piece rp[CR_REPLAY_PIECES];
    int nrp = 0;
    void *replay_block = NULL;
    s = cr_replay_buffer_save(&d->replay, rp, &nrp, &replay_block); /* the CPU: views */
    CUDARL_ASSERT(s == CUDARL_OK);
    cr_replay_piece *rps = root ? host_block((size_t)R * CR_REPLAY_PIECES * sizeof *rps) : NULL;
    unsigned char *shards[CR_REPLAY_PIECES] = {0};
    for (int i = 0; i < nrp; i++) {
        shards[i] = root ? host_block(rp[i].bytes * (size_t)R) : NULL;
        cr_comm_gather0(rp[i].data, shards[i], rp[i].bytes);
        for (int r = 0; root && r < R; r++) {
            rps[(size_t)r * CR_REPLAY_PIECES + i] = rp[i];
            rps[(size_t)r * CR_REPLAY_PIECES + i].data = shards[i] + (size_t)r * rp[i].bytes;
        }
    }
    if (root) {
        hw.params = hl.params, hw.s = hl.s; /* rank 0's sampling stream: one process's */
        hw.m = hl.m;
        hw.m.log = d->world_log; /* the job's episodes; its row sums: every rank's, in order */
        hw.m.log.iter_return_sum = 0, hw.m.log.iter_length_sum = 0, hw.m.log.iter_episodes = 0;
        memset(&hw.m.acc, 0, sizeof hw.m.acc);
        for (int r = 0; r < R; r++) { /* as cr_dqn_dist_combine sums them */
            const double *x = rank_sums + (size_t)r * RANK_SUMS;
            hw.m.acc.loss_sum += x[0] / R, hw.m.acc.q_sum += x[1] / R;
            hw.m.acc.td_abs_sum += x[2] / R, hw.m.acc.count = x[3];
            hw.m.acc.last_loss += x[4] / R;
            hw.m.log.iter_return_sum += x[5], hw.m.log.iter_length_sum += x[6];
            hw.m.log.iter_episodes += (int64_t)x[7];
        }
        d->N = d->world_N;
        s = write_file(d, path, &hw, wbytes, rps, nrp, R, rank_sums, rank_samples);
        d->N = local;
        free(hw.pool_states), free(hw.pool_elapsed), free(hw.block);
    }
    for (int i = 0; i < nrp; i++) free(shards[i]);
    free(rps), free(rank_sums), free(rank_samples), free(world_block), free(replay_block), free(hl.block);
    int32_t st = (int32_t)s; /* every rank fails with rank 0, so that none waits for it */
    cr_comm_bcast0(&st, sizeof st);
    if (!root && st != CUDARL_OK)
        return cr_fail((cudarl_status)st, "rank 0 could not write the checkpoint '%s' (its "
                       "message says why)", path);
    return s;
}

cudarl_status cr_dqn_checkpoint_save(cr_dqn *d, const char *path) {
    return d->ranks > 1 ? save_world(d, path) : save_one(d, path);
}

/* ---- resume: the run's shape against the file ---------------------------------------------- */

/* Refuses a checkpoint whose model, envs or replay differ from this run's, each with the flag that
 * makes them agree. */
static cudarl_status check_shape(const cr_dqn *d, const cr_st_file *f, const char *path) {
    const cudarl_dqn_config *c = &d->cfg;
    CR_TRY(cr_checkpoint_check_header(f, path, "dqn"));
    const char *env = cr_st_meta(f, "env_id"), *where = cr_st_meta(f, "env_device");
    if (!env || strcmp(env, c->env_id))
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s' is for env '%s' but this run is %s; "
                       "pass --env-id %s", path, env ? env : "?", c->env_id, env ? env : "?");
    if (!where || !cr_st_meta(f, "iteration"))
        return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s' holds a DQN policy without its "
                       "training state (written before DQN runs could resume); it serves cudarl "
                       "eval and export: start a new run to train further", path);
    const char *here = where_name(d->where);
    if (strcmp(where, here))
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s' has its envs stepped %s but this "
                       "run steps them %s; resume with the --env-device (and --device) it had",
                       path, where_words(where), where_words(here));
    const char *pol = cr_st_meta(f, "policy"), *net = cr_st_meta(f, CR_CONVNET_META_KEY);
    const char *theirs = net ? (pol ? pol : "(unnamed)") : "mlp";
    if (!!net != d->net.conv || (net && strcmp(theirs, c->policy)))
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s' holds Q-network %s but this run's "
                       "is %s; resume with --policy %s", path, theirs, c->policy, theirs);
    if (net) {
        char want[CR_CONVNET_TEXT_MAX];
        CR_TRY(cr_convnet_spec_to_text(&d->net.cnn.spec, want, sizeof want));
        if (strcmp(net, want))
            return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s' holds the network %s, but this "
                           "run (--policy %s on %s) builds %s; resume it with the env and policy "
                           "it was trained on", path, net, c->policy, c->env_id, want);
    }
    CR_TRY(cr_checkpoint_check_precision(f, path, c->precision, -1));
    struct { const char *key; long long want; const char *flag; } k[] = {
        {"obs_dim", d->D, "--env-id"}, {"num_actions", d->A, "--env-id"},
        {"hidden1", c->hidden1, "--hidden1"}, {"hidden2", c->hidden2, "--hidden2"},
        {"num_envs", c->num_envs, "--num-envs"}, {"buffer_size", c->buffer_size, "--buffer-size"},
        {"prioritized", c->prioritized, "--prioritized"},
        {"replay_frames", c->replay_frames, "--replay-frames"}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        if (d->net.conv && !strncmp(k[i].key, "hidden", 6)) continue; /* the MLP's widths */
        long long v;
        CR_TRY(cr_checkpoint_meta_ll(f, path, k[i].key, &v));
        if (v != k[i].want)
            return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s' has %s = %lld but this run has "
                           "%lld; a resumed run must keep the checkpoint's %s", path, k[i].key, v,
                           k[i].want, k[i].flag);
    }
    long long ranks = 1;
    if (cr_st_meta(f, "ranks")) CR_TRY(cr_checkpoint_meta_ll(f, path, "ranks", &ranks));
    if (ranks != d->ranks)
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s' was written by a DQN job of %lld "
                       "rank(s), each with its own replay shard and sampling stream, and this run "
                       "is %d; the shards cannot be redistributed exactly, so resume it on %lld "
                       "rank(s) (%s)", path, ranks, d->ranks, ranks,
                       ranks > 1 ? "mpirun -np with that count" : "without mpirun");
    /* every parameter tensor and Adam moment of this run's layout, in the file's dtype and shape */
    static const char *const prefix[4] = {"", "target_", "optimizer.exp_avg.",
                                          "optimizer.exp_avg_sq."};
    cr_dqn_tensor t[CR_CONVNET_MAX_TENSORS];
    const int n = cr_dqn_qnet_tensors(d, t);
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < n; i++) {
            char name[128];
            snprintf(name, sizeof name, "%s%s", prefix[j], t[i].name);
            CR_TRY(cr_checkpoint_expect_f32(f, path, name, t[i].ndim, t[i].shape,
                                            "this run's Q-network has"));
        }
    return CUDARL_OK;
}

/* ---- resume: what the state may hold --------------------------------------------------------- */

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
    if (bytes) memcpy(dst, t.data, bytes);
    return CUDARL_OK;
}

/* Train steps the iterations up to global step g took: those of every iteration that ends past
 * learning_starts (dqn.c's train_steps_after, summed). */
static int64_t train_steps_until(const cr_dqn *d, int64_t g) {
    const int64_t W = d->world_N; /* the job's envs */
    int64_t first = d->cfg.learning_starts / W * W; /* the first training iteration */
    return g > first ? g / d->cfg.train_frequency - first / d->cfg.train_frequency : 0;
}

static int whole_in(double v, double hi) { return v >= 0 && v <= hi && v == floor(v); }

/* The counters, episode statistics, metric sums and RNG streams. */
static cudarl_status check_counters(const cr_dqn *d, const char *path, const int64_t *k,
                                    const double *sums, const host_state *h) {
    const char *name = "state.counters";
    const long long it = k[K_ITERATION], step = k[K_GLOBAL_STEP], max_it = INT64_MAX / 2 / d->N;
    if (it < 0 || it > max_it)
        return bad_state(path, name, "the iteration (element 0) is %lld, expected 0..%lld", it,
                         max_it);
    if (step != it * d->N)
        return bad_state(path, name, "the global step (element 1) is %lld, expected %lld (%lld "
                         "iterations of %d envs)", step, it * d->N, it, d->N);
    const long long ts = train_steps_until(d, step);
    if (k[K_TRAIN_STEPS] != ts)
        return bad_state(path, name, "the train step count (element 2) is %lld, expected %lld "
                         "(the schedule's to step %lld)", (long long)k[K_TRAIN_STEPS], ts, step);
    if (k[K_ADAM_T] < 0 || k[K_ADAM_T] > ts)
        return bad_state(path, name, "the Adam step count (element 3) is %lld, expected 0..%lld",
                         (long long)k[K_ADAM_T], ts);
    if (k[K_SOLVED_STEP] != -1 && (k[K_SOLVED_STEP] < 1 || k[K_SOLVED_STEP] > step))
        return bad_state(path, name, "the solve step (element 4) is %lld, expected -1 (not "
                         "solved) or 1..%lld", (long long)k[K_SOLVED_STEP], step);
    if (k[K_METRICS_STEP] != step)
        return bad_state(path, name, "the epsilon schedule's step (element 5) is %lld, expected "
                         "the global step %lld", (long long)k[K_METRICS_STEP], step);
    if (k[K_EPISODES] < 0 || k[K_EPISODES] > step)
        return bad_state(path, name, "the episode count (element 6) is %lld, expected 0..%lld",
                         (long long)k[K_EPISODES], step);
    if (k[K_ITER_EPISODES] < 0 || k[K_ITER_EPISODES] > k[K_EPISODES])
        return bad_state(path, name, "the row's episode count (element 7) is %lld, expected "
                         "0..%lld", (long long)k[K_ITER_EPISODES], (long long)k[K_EPISODES]);
    for (int i = 0; i < S_NUM; i++)
        if (!isfinite(sums[i]) || (i == S_ITER_LENGTH && !whole_in(sums[i], (double)step)) ||
            (i == S_COUNT && !whole_in(sums[i], (double)ts)) || (i == S_GRAD_NORM && sums[i] < 0))
            return bad_state(path, "state.sums", "element %d is %g, expected a finite %s", i,
                             sums[i], i == S_ITER_LENGTH ? "whole number of steps"
                             : i == S_COUNT ? "whole number of train steps"
                             : i == S_GRAD_NORM ? "number >= 0" : "number");
    const int64_t per_env = step / d->N;
    for (int i = 0; i < d->N; i++) {
        if (!isfinite(h->ep_return[i]))
            return bad_state(path, "state.episode_return", "env %d's return is %g, expected a "
                             "finite number", i, h->ep_return[i]);
        if (h->ep_length[i] < 0 || h->ep_length[i] > per_env)
            return bad_state(path, "state.episode_length", "env %d's episode length is %lld, "
                             "expected 0..%lld (the steps each env took)", i,
                             (long long)h->ep_length[i], (long long)per_env);
    }
    for (int i = 0; i < CR_RECENT_EPISODES; i++)
        if (!isfinite(h->m.log.recent[i]))
            return bad_state(path, "state.recent_returns", "element %d is %g, expected a finite "
                             "number", i, h->m.log.recent[i]);
    struct { const char *name; const cr_rng_stream *s; uint64_t stream; } r[] = {
        {"state.rng_explore", &h->s.explore, DQN_STREAM_EXPLORE},
        {"state.rng_sample", &h->s.sample, DQN_STREAM_REPLAY}};
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) {
        uint64_t got = (uint64_t)r[i].s->stream[0] | (uint64_t)r[i].s->stream[1] << 32;
        if (got != r[i].stream)
            return bad_state(path, r[i].name, "its stream number (words 2 and 3) is %llu, "
                             "expected %llu", (unsigned long long)got,
                             (unsigned long long)r[i].stream);
    }
    return CUDARL_OK;
}

/* fp16's loss scaler: a finite scale, a found-inf flag, a growth tracker under the interval, and
 * no more skipped steps than train steps. */
static cudarl_status check_scaler(const cr_dqn *d, const char *path,
                                  const cr_loss_scale_state *sc, int64_t train_steps) {
    const char *name = "state.loss_scale";
    if (!isfinite(sc->scale) || sc->scale < 0)
        return bad_state(path, name, "the scale is %g, expected a finite number >= 0", sc->scale);
    if (sc->found_inf != 0 && sc->found_inf != 1)
        return bad_state(path, name, "found_inf is %g, expected 0 or 1", sc->found_inf);
    if (sc->growth_tracker < 0 || sc->growth_tracker >= d->amp.cfg.growth_interval)
        return bad_state(path, name, "the growth tracker is %d, expected 0..%d", sc->growth_tracker,
                         d->amp.cfg.growth_interval - 1);
    if (sc->skipped_steps < 0 || sc->skipped_steps > train_steps)
        return bad_state(path, name, "the skipped-step count is %lld, expected 0..%lld",
                         (long long)sc->skipped_steps, (long long)train_steps);
    return CUDARL_OK;
}

/* Every env's state and step count where the envs step. */
static cudarl_status check_envs(const cr_dqn *d, const char *path, const void *block) {
    char why[256];
    int bad = 0, i;
    if (d->pool) {
        if ((i = cr_env_pool_check_state(&d->pool->pool, &bad, why, sizeof why)) >= 0)
            return bad_state(path, bad == 1 ? "state.pool_states" : "state.pool_elapsed",
                             "env %d: %s", i, why);
    } else if (d->where == CR_DQN_ENVS_TWIN) {
        if ((i = cr_image_twin_check_state(&d->twin, block, &bad, why, sizeof why)) >= 0)
            return bad_state(path, "state.twin", "env %d: %s", i, why);
    } else if ((i = cr_env_batch_check_state(&d->env, block, &bad, why, sizeof why)) >= 0) {
        return bad_state(path, "state.env_batch", "env %d: %s", i, why);
    }
    return CUDARL_OK;
}

/* The replay's pieces from the file (views into it), checked and written into the buffer. */
static cudarl_status load_replay(cr_dqn *d, const cr_st_file *f, const char *path) {
    cr_replay_piece rp[CR_REPLAY_PIECES];
    const int n = cr_replay_buffer_pieces(&d->replay, rp);
    for (int i = 0; i < n; i++) {
        char name[128];
        if (d->ranks > 1)
            snprintf(name, sizeof name, REPLAY_PREFIX "rank%d.%s", d->rank, rp[i].name);
        else snprintf(name, sizeof name, REPLAY_PREFIX "%s", rp[i].name);
        cr_st_tensor t;
        CR_TRY(cr_st_find(f, name, &t));
        if (t.dtype != elem_dtype(rp[i].elem) || t.nbytes != rp[i].bytes)
            return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s': tensor '%s' is %s with %zu "
                           "bytes, expected %s with %zu bytes (the replay of --buffer-size %lld "
                           "over --num-envs %d); the file was altered or damaged", path, name,
                           cr_st_dtype_name(t.dtype), t.nbytes,
                           cr_st_dtype_name(elem_dtype(rp[i].elem)), rp[i].bytes,
                           (long long)d->cfg.buffer_size, d->N);
        rp[i].data = (void *)t.data;
    }
    int bad = -1;
    char why[300];
    cudarl_status s = cr_replay_buffer_restore(&d->replay, rp, d->global_step / d->world_N, d->A, &bad,
                                               why, sizeof why);
    if (s == CUDARL_ERR_FORMAT && bad >= 0) {
        char name[128];
        if (d->ranks > 1)
            snprintf(name, sizeof name, REPLAY_PREFIX "rank%d.%s", d->rank, rp[bad].name);
        else snprintf(name, sizeof name, REPLAY_PREFIX "%s", rp[bad].name);
        /* the leaves and the count disagree with where the heads and flags put the sampleable
         * transitions: any of the three may be the altered one */
        const int derived = !strcmp(rp[bad].name, "leaves") || !strcmp(rp[bad].name, "num_valid");
        return bad_state(path, name, "%s%s", why, derived ? " ('" REPLAY_PREFIX "heads' and '"
                         REPLAY_PREFIX "flags' say which slots hold sampleable transitions)" : "");
    }
    return s;
}

/* Data parallel (load_state): the job's envs in h (world_N, checked) become this rank's: rows
 * rank*N .. (rank+1)*N-1 to the front of h, its envs' states into the batch's block layout of
 * N envs (h->env) or into the pool (its rows of h->pool_states), the sampling stream its own,
 * and the job's episode log into d->world_log, this rank's own log and row sums from
 * state.rank_sums. */
static cudarl_status take_slice(cr_dqn *d, const cr_st_file *f, const char *path, host_state *h,
                                int local, double *mine) {
    const size_t n = (size_t)local, first = (size_t)d->rank * n;
    const int R = d->ranks;
    double sums[64 * RANK_SUMS], *rs = R <= 64 ? sums : malloc((size_t)R * RANK_SUMS * 8);
    if (!rs) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory");
    cudarl_status s = read_raw(f, path, "state.rank_sums", CR_ST_F64, rs,
                               (size_t)R * RANK_SUMS * 8);
    const double *x = rs + (size_t)d->rank * RANK_SUMS;
    for (int i = 0; s == CUDARL_OK && i < RANK_SUMS; i++)
        if (!isfinite(x[i]) || ((i == 3 || i >= 6) && !whole_in(x[i], 1e18)))
            s = bad_state(path, "state.rank_sums", "rank %d's element %d is %g, expected a "
                          "finite%s number", d->rank, i, x[i], i == 3 || i >= 6 ? " whole" : "");
    if (s == CUDARL_OK) {
        memmove(h->obs, (uint8_t *)h->obs + first * d->obs_bytes, n * d->obs_bytes);
        memmove(h->ep_return, h->ep_return + first, n * 8);
        memmove(h->ep_length, h->ep_length + first, n * 8);
    }
    if (s == CUDARL_OK && d->pool) { /* the pool's rows of this rank's envs */
        cr_env_pool *pool = &d->pool->pool;
        memcpy(pool->states, h->pool_states + first * pool->state_stride, n * pool->state_stride);
        memcpy(pool->elapsed, h->pool_elapsed + first, n * sizeof(int32_t));
    } else if (s == CUDARL_OK) {
        cr_env_batch wb, lv;
        const size_t wbytes = cr_env_batch_bytes(d->env_info, d->world_N);
        void *wblock = aligned_alloc(CR_ARENA_ALIGN, (wbytes + CR_ARENA_ALIGN - 1) /
                                     CR_ARENA_ALIGN * CR_ARENA_ALIGN);
        void *lblock = aligned_alloc(CR_ARENA_ALIGN, (d->env.bytes + CR_ARENA_ALIGN - 1) /
                                     CR_ARENA_ALIGN * CR_ARENA_ALIGN);
        if (!wblock || !lblock) s = cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory");
        if (s == CUDARL_OK) {
            memcpy(wblock, h->env, wbytes);
            memcpy(lblock, d->env.mem, d->env.bytes); /* this rank's padding as it is */
            cr_env_batch_init(&wb, d->env_info, d->world_N, wblock);
            cr_env_batch_init(&lv, d->env_info, local, lblock);
            for (int j = 0; j < local; j++) cr_env_batch_copy_env(&lv, j, &wb, (int)first + j);
            memcpy(h->env, lblock, d->env.bytes);
        }
        free(wblock), free(lblock);
    }
    if (s == CUDARL_OK) { /* this rank's sampling stream, at its own position */
        const size_t sb = sizeof(cr_rng_stream);
        unsigned char *all = malloc((size_t)R * sb);
        if (!all) s = cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory");
        if (s == CUDARL_OK)
            s = read_raw(f, path, "state.rank_rng_sample", CR_ST_U32, all, (size_t)R * sb);
        if (s == CUDARL_OK) {
            cr_rng_stream mine_s;
            memcpy(&mine_s, all + (size_t)d->rank * sb, sb);
            const uint64_t want = DQN_STREAM_REPLAY_OF(d->rank);
            uint64_t got = (uint64_t)mine_s.stream[0] | (uint64_t)mine_s.stream[1] << 32;
            if (got != want)
                s = bad_state(path, "state.rank_rng_sample", "rank %d's stream number is %llu, "
                              "expected %llu", d->rank, (unsigned long long)got,
                              (unsigned long long)want);
            else h->s.sample = mine_s;
        }
        free(all);
    }
    if (s == CUDARL_OK) memcpy(mine, x, RANK_SUMS * sizeof *x);
    if (rs != sums) free(rs);
    return s;
}

static cudarl_status load_state(cr_dqn *d, const cr_st_file *f, const char *path) {
    void *env_mem;
    const char *env_name;
    const int local = d->N;
    size_t env_bytes = env_block(d, &env_mem, &env_name);
    if (d->ranks > 1) { /* the file holds the job's envs: read and checked whole */
        d->N = d->world_N;
        if (!d->pool) env_bytes = cr_env_batch_bytes(d->env_info, d->world_N);
    }
    host_state h;
    double mine[RANK_SUMS] = {0}; /* data parallel: this rank's row sums */
    cudarl_status hs = host_state_alloc(&h, d, env_bytes);
    if (hs != CUDARL_OK) {
        d->N = local;
        return hs;
    }
    const size_t P = d->net.num_params, N = (size_t)d->N;
    cudarl_status s = CUDARL_OK;
    static const char *const prefix[4] = {"", "target_", "optimizer.exp_avg.",
                                          "optimizer.exp_avg_sq."};
    cr_dqn_tensor t[CR_CONVNET_MAX_TENSORS];
    const int nt = cr_dqn_qnet_tensors(d, t);
    for (int j = 0; j < 4 && s == CUDARL_OK; j++)
        for (int i = 0; i < nt && s == CUDARL_OK; i++) {
            char name[128];
            size_t count = 1;
            for (int a = 0; a < t[i].ndim; a++) count *= (size_t)t[i].shape[a];
            snprintf(name, sizeof name, "%s%s", prefix[j], t[i].name);
            s = cr_st_read_f32(f, name, h.params + j * P + t[i].offset, count);
        }
    int64_t k[K_COUNT];
    double sums[S_NUM];
    memset(&h.m, 0, sizeof h.m), memset(&h.s, 0, sizeof h.s);
    cr_env_pool *pool = d->pool ? &d->pool->pool : NULL;
    void *pool_states = pool ? pool->states : NULL, *pool_elapsed = pool ? pool->elapsed : NULL;
    if (pool && d->ranks > 1) { /* the job's rows, read apart: the pool holds this rank's */
        pool_states = h.pool_states = malloc(N * pool->state_stride);
        pool_elapsed = h.pool_elapsed = malloc(N * sizeof(int32_t));
        if (!h.pool_states || !h.pool_elapsed)
            s = cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory for the job's env states");
    }
    struct { const char *name; cr_st_dtype dtype; void *dst; size_t bytes; } r[] = {
        {"state.counters", CR_ST_I64, k, sizeof k},
        {"state.sums", CR_ST_F64, sums, sizeof sums},
        {"state.recent_returns", CR_ST_F64, h.m.log.recent, sizeof h.m.log.recent},
        {"state.episode_return", CR_ST_F64, h.ep_return, N * 8},
        {"state.episode_length", CR_ST_I64, h.ep_length, N * 8},
        {"state.rng_explore", CR_ST_U32, &h.s.explore, sizeof h.s.explore},
        {"state.rng_sample", CR_ST_U32, &h.s.sample, sizeof h.s.sample},
        {"state.obs", d->u8 ? CR_ST_U8 : CR_ST_F32, h.obs, N * d->obs_bytes},
        {env_name ? env_name : "state.env_batch", CR_ST_U8, h.env, env_bytes},
        {"state.pool_elapsed", CR_ST_I32, pool_elapsed, pool ? N * 4 : 0},
        {"state.pool_states", CR_ST_U8, pool_states, pool ? N * pool->state_stride : 0},
        {"state.loss_scale", CR_ST_U8, &h.m.scaler, d->amp.scaling ? sizeof h.m.scaler : 0},
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0] && s == CUDARL_OK; i++)
        if (r[i].bytes) s = read_raw(f, path, r[i].name, r[i].dtype, r[i].dst, r[i].bytes);
    if (s == CUDARL_OK) s = check_counters(d, path, k, sums, &h);
    if (s == CUDARL_OK && d->amp.scaling) s = check_scaler(d, path, &h.m.scaler, k[K_TRAIN_STEPS]);
    if (s == CUDARL_OK && d->ranks > 1 && pool) { /* the job's envs, checked row by row */
        char why[256];
        for (int i = 0; i < d->world_N && s == CUDARL_OK; i++) {
            int bad = cr_env_check_state(pool->def, h.pool_states + (size_t)i * pool->state_stride,
                                         h.pool_elapsed[i], why, sizeof why);
            if (bad)
                s = bad_state(path, bad == 1 ? "state.pool_states" : "state.pool_elapsed",
                              "env %d: %s", i, why);
        }
        d->N = local;
        if (s == CUDARL_OK) s = take_slice(d, f, path, &h, local, mine);
    } else if (s == CUDARL_OK && d->ranks > 1) { /* the job's envs, checked as one batch */
        cr_env_batch wb;
        char why[256];
        int bad = 0, i;
        void *wblock = aligned_alloc(CR_ARENA_ALIGN, (env_bytes + CR_ARENA_ALIGN - 1) /
                                     CR_ARENA_ALIGN * CR_ARENA_ALIGN);
        if (!wblock) s = cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory");
        if (s == CUDARL_OK) {
            memcpy(wblock, h.env, env_bytes);
            cr_env_batch_init(&wb, d->env_info, d->world_N, wblock);
            if ((i = cr_env_batch_check_state(&wb, h.env, &bad, why, sizeof why)) >= 0)
                s = bad_state(path, "state.env_batch", "env %d: %s", i, why);
        }
        free(wblock);
        d->N = local;
        if (s == CUDARL_OK) s = take_slice(d, f, path, &h, local, mine);
    } else if (s == CUDARL_OK) {
        s = check_envs(d, path, h.env);
    }
    d->N = local;
    if (s == CUDARL_OK) {
        d->iteration = k[K_ITERATION], d->global_step = k[K_GLOBAL_STEP];
        d->train_steps = k[K_TRAIN_STEPS], d->solved_step = k[K_SOLVED_STEP];
        s = load_replay(d, f, path);
    }
    if (s == CUDARL_OK) {
        cr_dqn_metrics *m = &h.m;
        m->step = k[K_METRICS_STEP], m->log.episodes = k[K_EPISODES];
        m->log.iter_episodes = k[K_ITER_EPISODES];
        m->log.iter_return_sum = sums[S_ITER_RETURN], m->log.iter_length_sum = sums[S_ITER_LENGTH];
        m->acc.loss_sum = sums[S_LOSS], m->acc.q_sum = sums[S_Q], m->acc.td_abs_sum = sums[S_TD_ABS];
        m->acc.count = sums[S_COUNT], m->acc.last_loss = sums[S_LAST_LOSS];
        m->grad_norm_sum = sums[S_GRAD_NORM];
        if (d->ranks > 1) { /* the job's log aside; this rank's own: its row sums */
            d->world_log = m->log;
            memset(&m->log, 0, sizeof m->log);
            m->acc.loss_sum = mine[0], m->acc.q_sum = mine[1], m->acc.td_abs_sum = mine[2];
            m->acc.count = mine[3], m->acc.last_loss = mine[4];
            m->log.iter_return_sum = mine[5], m->log.iter_length_sum = mine[6];
            m->log.iter_episodes = (int64_t)mine[7];
            d->dist_seen = 0;
        }
        if (!d->amp.scaling) d->ctx->ops->copy_to_host(d->ctx, &m->scaler, &d->m->scaler,
                                                       sizeof m->scaler);
        h.s.adam_t = k[K_ADAM_T];
        h.s.lr = (float)d->cfg.learning_rate, h.s.epsilon = 0; /* act() computes epsilon */
        host_state_transfer(&h, d, 0);
        d->h = h.m;
        if (d->ranks > 1) d->h.log = d->world_log;
    }
    free(h.pool_states), free(h.pool_elapsed), free(h.block);
    return s;
}

cudarl_status cr_dqn_checkpoint_load(cr_dqn *d, const char *path) {
    cr_st_file *f;
    CR_TRY(cr_st_open(&f, path));
    cudarl_status s = check_shape(d, f, path);
    if (s == CUDARL_OK) s = load_state(d, f, path);
    cr_st_close(f);
    if (s == CUDARL_OK && d->global_step >= d->cfg.total_timesteps)
        s = cr_fail(CUDARL_ERR_INVALID_ARG, "checkpoint '%s' is already at step %lld of "
                    "--total-timesteps %lld; raise --total-timesteps to train further", path,
                    (long long)d->global_step, (long long)d->cfg.total_timesteps);
    if (s == CUDARL_OK)
        CR_INFO("resuming from %s at step %lld (iteration %lld)", path,
                (long long)d->global_step, (long long)d->iteration);
    return s;
}

/* ---- the hyperparameters of a checkpoint ------------------------------------------------------ */

static cudarl_status config_load(const char *path, cudarl_dqn_config *c) {
    cr_st_file *f;
    CR_TRY(cr_st_open(&f, path));
    cudarl_status s = cr_checkpoint_check_header(f, path, "dqn");
    const char *env = s == CUDARL_OK ? cr_st_meta(f, "env_id") : NULL;
    if (s == CUDARL_OK && !env)
        s = cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s' has no env_id; pass a model.safetensors "
                    "written by cudarl train", path);
    if (s == CUDARL_OK) {
        cudarl_dqn_config_default(c, env);
        const char *run = cr_st_meta(f, "run_name"), *pol = cr_st_meta(f, "policy");
        const char *where = cr_st_meta(f, "env_device");
        if (run) snprintf(c->run_name, sizeof c->run_name, "%s", run);
        if (pol && strcmp(pol, "qnet")) snprintf(c->policy, sizeof c->policy, "%s", pol);
        s = cr_checkpoint_meta_precision(f, path, &c->precision);
        if (where && !strcmp(where, "cpu")) c->env_device = CUDARL_DEVICE_CPU;
        if (where && !strcmp(where, "cuda-twin")) c->env_device = CUDARL_DEVICE_CUDA;
    }
    struct { const char *k; int64_t *i64; int *i; double *d; int optional; } m[] = {
        {"seed", NULL, NULL, NULL, 0}, {"total_timesteps", &c->total_timesteps, NULL, NULL, 0},
        {"learning_rate", NULL, NULL, &c->learning_rate, 0}, {"num_envs", NULL, &c->num_envs, NULL, 0},
        {"buffer_size", &c->buffer_size, NULL, NULL, 0}, {"gamma", NULL, NULL, &c->gamma, 0},
        {"tau", NULL, NULL, &c->tau, 0},
        {"target_network_frequency", &c->target_network_frequency, NULL, NULL, 0},
        {"batch_size", NULL, &c->batch_size, NULL, 0}, {"start_e", NULL, NULL, &c->start_e, 0},
        {"end_e", NULL, NULL, &c->end_e, 0},
        {"exploration_fraction", NULL, NULL, &c->exploration_fraction, 0},
        {"learning_starts", &c->learning_starts, NULL, NULL, 0},
        {"train_frequency", &c->train_frequency, NULL, NULL, 0},
        {"double_dqn", NULL, &c->double_dqn, NULL, 0}, {"prioritized", NULL, &c->prioritized, NULL, 0},
        {"huber", NULL, &c->huber, NULL, 0}, {"max_grad_norm", NULL, NULL, &c->max_grad_norm, 0},
        {"hidden1", NULL, &c->hidden1, NULL, 1}, {"hidden2", NULL, &c->hidden2, NULL, 1},
        {"prioritized_alpha", NULL, NULL, &c->prioritized_alpha, 1},
        {"prioritized_beta", NULL, NULL, &c->prioritized_beta, 1},
        {"prioritized_eps", NULL, NULL, &c->prioritized_eps, 1},
        {"replay_frames", NULL, &c->replay_frames, NULL, 1}};
    for (size_t i = 0; i < sizeof m / sizeof m[0] && s == CUDARL_OK; i++) {
        if (m[i].optional && !cr_st_meta(f, m[i].k)) continue; /* conv nets; older files */
        long long v = 0;
        if (m[i].d) {
            s = cr_checkpoint_meta_double(f, path, m[i].k, m[i].d);
            continue;
        }
        s = cr_checkpoint_meta_ll(f, path, m[i].k, &v);
        if (s != CUDARL_OK) break;
        if (!strcmp(m[i].k, "seed")) c->seed = (uint64_t)v;
        else if (m[i].i64) *m[i].i64 = v;
        else if (v < INT32_MIN || v > INT32_MAX)
            s = cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s' has %s = %lld, out of range", path,
                        m[i].k, v);
        else *m[i].i = (int)v;
    }
    cr_st_close(f);
    if (s == CUDARL_OK && cudarl_dqn_config_validate(c) != CUDARL_OK)
        s = cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s' holds invalid hyperparameters (%s)", path,
                    cudarl_last_error());
    return s;
}

cudarl_status cudarl_dqn_config_load_sized(const char *path, cudarl_dqn_config *cfg,
                                           size_t struct_size) {
    CR_REQUIRE(path && cfg, "cudarl_dqn_config_load: the path and the config must not be NULL");
    CR_TRY(cr_struct_check(&cr_abi_dqn_config, struct_size, "cudarl_dqn_config_load"));
    cudarl_dqn_config full;
    CR_TRY(config_load(path, &full));
    cr_struct_write(cfg, &full, struct_size);
    return CUDARL_OK;
}
