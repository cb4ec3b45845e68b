/* DQN (CleanRL's dqn.py) with cudarl's replay buffer: epsilon-greedy rollout of N envs ->
 * replay -> TD update of the online Q-network -> target network update -> log. Extras:
 * --double-dqn, --prioritized replay, Huber loss, gradient clipping.
 *
 * Everything goes through the context's backend, so one loop runs on the CPU and on CUDA:
 *   - memory: one arena (ctx->ops->arena_alloc) holds the networks, Adam, the envs (batch), the
 *     replay buffer (its CPU twin in host memory, its CUDA twin, replay_cuda.h, in device
 *     memory), the minibatch, the RNG streams, the step counter and the metrics;
 *   - an iteration is one env step of every env (act: epsilon schedule, Q forward, uniforms,
 *     epsilon-greedy; env step; replay insert; episode sums) and the train steps and target
 *     update that follow it. Which train steps and target updates follow is a function of the
 *     global step alone, which the host knows, so an iteration is device work the host only
 *     enqueues: epsilon is computed on the device from the step counter there.
 *   - on CUDA with the envs' CUDA twin, once learning has started, K iterations (K a whole
 *     period of the train and target schedules, so every K-iteration block from then on is the
 *     same work) are captured into one CUDA graph and replayed: a block costs one launch.
 *     Metrics (episode log, loss sums, replay error bits) are copied into pinned slots behind
 *     each reported block and read when their event has passed, so the host never waits on the
 *     device per env step (only when every slot is still in flight). Prioritized replay's beta
 *     is computed on the device from the step counter (cr_replay_cuda_sample_prioritized_at),
 *     so that mode is captured too.
 *   - MinAtar on a CUDA context (--env-device cuda or auto): the games' CUDA twin
 *     (minatar_cuda.h) steps the envs, so those iterations are captured into graphs too;
 *   - envs on CPU threads (--env-device cpu, any registered env): the env pool (env_pool.h)
 *     steps them into pinned buffers, synchronously (one group): actions go to the host behind a
 *     CUDA event the threads wait on, outputs come back as asynchronous copies.
 *   - uint8 observations (MinAtar's 0/1 channels) are stored as uint8 in the replay and cast to
 *     float, value for value (no 1/255: the Q-network sees 0 and 1), before the network reads
 *     them, on the device.
 *   - the Q-network (--policy) is dqn.py's MLP, or a convolutional network (cr_convnet:
 *     minatar-cnn, nature-cnn with dqn_atari.py's `network.*` names; on CUDA its twin
 *     cr_convnet_cuda, whose workspace is one more piece of the arena), which reads the stored
 *     observations as its spec says; both behind the qnet_* functions below, on one flat
 *     parameter buffer.
 * On the CPU every op is the CPU reference and metrics are read after every iteration, which is
 * what this trainer computed before it ran through the backend, bit for bit.
 * Under mpirun -np R (dqn_dist.c, docs/multigpu.md) each rank steps N/R of the job's envs into
 * its own replay shard; d->N, d->B and d->buffer are this rank's, while the global step, the
 * schedules and the log count the job's world_N envs per iteration. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo/dqn/dqn_internal.h"
#include "ops/comm.h"
#include "ops/cpu/ops_cpu.h"


/* ---- setup ------------------------------------------------------------------------------ */

static cudarl_status envs_place(const cudarl_dqn_config *c, const cudarl_ctx *ctx,
                                cr_dqn_envs_where *w) {
    const int caps = cr_env_info_find(c->env_id)->caps;
    const int batch =
        (caps & (ctx->kind == CUDARL_DEVICE_CUDA ? CR_ENV_BATCH_CUDA : CR_ENV_BATCH)) != 0;
    const int twin = ctx->kind == CUDARL_DEVICE_CUDA && (caps & CR_ENV_IMAGE_TWIN);
    *w = c->env_device == CUDARL_DEVICE_CPU ? CR_DQN_ENVS_POOL
         : batch                            ? CR_DQN_ENVS_BATCH
         : twin                             ? CR_DQN_ENVS_TWIN
                                            : CR_DQN_ENVS_POOL;
    if (c->env_device == CUDARL_DEVICE_CUDA && *w == CR_DQN_ENVS_POOL)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "--env-device cuda: %s has no CUDA twin (CartPole, "
                       "CartPolePixels and the MinAtar games have); use --env-device cpu or auto",
                       c->env_id);
    return CUDARL_OK;
}

/* Device bytes of the envs' state for `where`. */
static size_t env_bytes(const cr_dqn *d, int where) {
    if (where == CR_DQN_ENVS_TWIN) {
        size_t b = 0;
        CUDARL_ASSERT(cr_image_twin_bytes(d->cfg.env_id, d->N, &b) == CUDARL_OK);
        return b;
    }
    return where == CR_DQN_ENVS_BATCH ? cr_env_batch_bytes(d->env_info, d->N) : 0;
}

static cr_replay_spec replay_spec(const cr_dqn *d) {
    cr_replay_spec s;
    memset(&s, 0, sizeof s);
    s.capacity = d->buffer / d->N * d->N; /* data parallel: this rank's shard */
    s.num_envs = d->N;
    s.frame_elems = d->D / d->K; /* a frame of each stack, or the whole observation */
    s.dtype = d->u8 ? CR_REPLAY_UINT8 : CR_REPLAY_FLOAT32;
    s.stack = d->K;
    s.insert_stride = d->K > 1 ? d->D : 0; /* the newest frame of each env's own stack */
    s.prioritized = d->cfg.prioritized;
    s.alpha = (float)d->cfg.prioritized_alpha;
    s.beta0 = (float)d->cfg.prioritized_beta;
    s.beta_steps = d->cfg.total_timesteps;
    return s;
}

/* ---- memory ----------------------------------------------------------------------------- */

static cudarl_status plan_memory(cr_dqn *d, cr_plan *pl) {
    size_t P = d->net.num_params * 4, N = (size_t)d->N, D = (size_t)d->D, A = (size_t)d->A;
    size_t B = (size_t)d->B, R = (size_t)d->rows, ob = d->obs_bytes;
    size_t cache = cr_dqn_qnet_cache_bytes(d);
    size_t cast = d->cast ? 4 * D : 0; /* the float copies of uint8 observations */
    const struct { const char *name; size_t bytes; } items[D_REPLAY] = {
        {"q.online", P}, {"q.target", P}, {"grads", P}, {"adam.m", P}, {"adam.v", P},
        {"env", env_bytes(d, d->where)}, {"obs", N * ob},
        {"next_obs", N * ob}, {"final_obs", N * ob}, {"obs.float", N * cast},
        {"q", R * A * 4}, {"u", 2 * N * 4}, {"rewards", N * 4}, {"actions", N * 4},
        {"terminated", N}, {"truncated", N}, {"done", N}, {"episode.return", N * 8},
        {"episode.length", N * 8}, {"metrics", sizeof(cr_dqn_metrics)},
        {"scalars", sizeof(cr_dqn_scalars)},
        {d->K > 1 ? "batch.window" : "batch.obs", B * d->b_stride * (d->u8 ? 1 : 4)},
        {"batch.next_obs", d->K > 1 ? 0 : B * ob},
        {"batch.obs.float", B * cast}, {"batch.next_obs.float", B * cast},
        {"batch.rewards", B * 4}, {"batch.weights", B * 4}, {"batch.actions", B * 4},
        {"batch.terminated", B}, {"batch.truncated", B}, {"batch.indices", B * 8},
        {"batch.q", B * A * 4}, {"batch.next_q_target", B * A * 4},
        {"batch.next_q_online", B * A * 4}, {"batch.dq", B * A * 4}, {"batch.td", B * 4},
        {"cache.q", cache}, {"cache.target", cache}, {"cache.next", cache},
        {"conv.workspace", cr_dqn_qnet_workspace_bytes(d)},
    };
    cr_plan_init(pl);
    for (int i = 0; i < D_REPLAY; i++) cr_plan_add(pl, items[i].name, items[i].bytes);
    cr_replay_spec rs = replay_spec(d);
    CR_TRY(cr_replay_spec_check(&rs));
    return cr_replay_buffer_plan(d->ctx, &rs, d->B, pl);
}

static cudarl_status carve(cr_dqn *d) {
    const cr_arena *a = &d->mem;
    d->online = cr_arena_get(a, D_ONLINE), d->target = cr_arena_get(a, D_TARGET);
    d->grads = cr_arena_get(a, D_GRADS), d->adam_m = cr_arena_get(a, D_M);
    d->adam_v = cr_arena_get(a, D_V);
    if (d->where == CR_DQN_ENVS_BATCH)
        cr_env_batch_init(&d->env, d->env_info, d->N, cr_arena_get(a, D_ENV));
    if (d->where == CR_DQN_ENVS_TWIN)
        CUDARL_ASSERT(cr_image_twin_init(&d->twin, d->cfg.env_id, d->N,
                                         cr_arena_get(a, D_ENV)) == CUDARL_OK);
    d->obs = cr_arena_get(a, D_OBS), d->next_obs = cr_arena_get(a, D_NEXT);
    d->final_obs = cr_arena_get(a, D_FINAL);
    d->obs_f = d->cast ? cr_arena_get(a, D_OBSF) : d->obs;
    d->q = cr_arena_get(a, D_Q), d->u = cr_arena_get(a, D_U), d->rewards = cr_arena_get(a, D_REW);
    d->actions = cr_arena_get(a, D_ACT), d->term = cr_arena_get(a, D_TERM);
    d->trunc = cr_arena_get(a, D_TRUNC), d->done = cr_arena_get(a, D_DONE);
    d->ep_return = cr_arena_get(a, D_EPRET), d->ep_length = cr_arena_get(a, D_EPLEN);
    d->m = cr_arena_get(a, D_METRICS), d->s = cr_arena_get(a, D_SCALARS);
    d->b_obs = cr_arena_get(a, D_BOBS), d->b_next = cr_arena_get(a, D_BNEXT);
    if (d->K > 1) d->b_next = (uint8_t *)d->b_obs + d->obs_bytes / (size_t)d->K; /* the view */
    d->b_obs_f = d->cast ? cr_arena_get(a, D_BOBSF) : d->b_obs;
    d->b_next_f = d->cast ? cr_arena_get(a, D_BNEXTF) : d->b_next;
    d->b_rewards = cr_arena_get(a, D_BREW), d->b_weights = cr_arena_get(a, D_BW);
    d->b_actions = cr_arena_get(a, D_BACT), d->b_term = cr_arena_get(a, D_BTERM);
    d->b_trunc = cr_arena_get(a, D_BTRUNC), d->b_indices = cr_arena_get(a, D_BIDX);
    d->b_q = cr_arena_get(a, D_BQ), d->b_next_t = cr_arena_get(a, D_BNT);
    d->b_next_o = cr_arena_get(a, D_BNO), d->b_dq = cr_arena_get(a, D_BDQ);
    d->b_td = cr_arena_get(a, D_BTD);
    d->cache_q = cr_dqn_qnet_cache_carve(d, cr_arena_get(a, D_CQ));
    d->cache_t = cr_dqn_qnet_cache_carve(d, cr_arena_get(a, D_CT));
    d->cache_o = cr_dqn_qnet_cache_carve(d, cr_arena_get(a, D_CO));
    cr_replay_spec rs = replay_spec(d);
    if (d->net.conv) cr_cnn_set_workspace(&d->net.dev, cr_arena_get(a, D_CWS));
    return cr_replay_buffer_init(&d->replay, d->ctx, &rs, d->B, a, D_REPLAY);
}

/* ---- the replay buffer ----------------------------------------------------------------- */

/* With K > 1 the newest frame of each env's stack goes in (rows obs_bytes apart). */
static void replay_insert(cr_dqn *d) {
    const size_t newest = d->obs_bytes / (size_t)d->K * (size_t)(d->K - 1);
    const uint8_t *obs = (const uint8_t *)d->obs + newest;
    const uint8_t *fin = (const uint8_t *)d->final_obs + newest;
    cr_replay_buffer_insert(&d->replay, obs, d->actions, d->rewards, d->term, d->trunc, fin);
}

/* ---- one iteration ---------------------------------------------------------------------- */

/* Epsilon-greedy actions for the current observations (d->actions). */
static void act(cr_dqn *d) {
    cudarl_ctx *ctx = d->ctx;
    const cr_backend *o = d->o;
    const cudarl_dqn_config *c = &d->cfg;
    o->epsilon_schedule(ctx, &d->m->step, d->world_N, c->start_e, c->end_e, d->duration,
                        &d->s->epsilon); /* the job's step */
    const void *x = cr_dqn_qnet_input(d, d->obs, d->obs_f, d->N);
    cr_dqn_qnet_forward(d, d->online, x, d->q, &d->cache_q, d->N);
    if (d->ranks == 1) {
        o->uniform(ctx, &d->s->explore, d->u, 2 * d->N);
    } else { /* data parallel: this rank's envs' words of the job's 2 world_N uniforms */
        const int64_t n = d->N, r = d->rank, R = d->ranks;
        cr_dqn_dist_skip(d, r * n);
        o->uniform(ctx, &d->s->explore, d->u, d->N);
        cr_dqn_dist_skip(d, (R - 1) * n);
        o->uniform(ctx, &d->s->explore, d->u + d->N, d->N);
        cr_dqn_dist_skip(d, (R - 1 - r) * n);
    }
    o->epsilon_greedy(ctx, d->q, d->u, d->u + d->N, &d->s->epsilon, d->actions, d->N, d->A);
}

/* One env step of every env with epsilon-greedy actions, stored in the replay buffer. */
static void act_and_store(cr_dqn *d) {
    cudarl_ctx *ctx = d->ctx;
    act(d);
    if (d->pool)
        cr_dqn_pool_step(d);
    else if (d->where == CR_DQN_ENVS_TWIN)
        cr_image_twin_step(ctx, &d->twin, d->actions, (uint8_t *)d->next_obs, d->rewards, d->term,
                           d->trunc, d->done, (uint8_t *)d->final_obs);
    else
        cr_env_batch_step(ctx, &d->env, d->actions, d->next_obs, d->rewards, d->term, d->trunc,
                          d->done, d->final_obs);
    replay_insert(d);
    d->o->episodes_record(ctx, d->rewards, d->done, d->ep_return, d->ep_length, &d->m->log, d->N);
    d->o->copy(ctx, d->obs, d->next_obs, (size_t)d->N * d->obs_bytes);
}

/* Without loss scaling Adam applies whatever the backward produced: a non-finite gradient norm
 * (the running sum of clip_grad_norm's, with --max-grad-norm) has reached the weights, and the
 * run stops before a checkpoint holds them. fp16's scaler skips such steps instead. */
static cudarl_status check_gradients(const cr_dqn *d, double grad_norm_sum, int64_t step) {
    if (d->amp.scaling || isfinite(grad_norm_sum)) return CUDARL_OK;
    return cr_fail(CUDARL_ERR_NUMERIC, "the gradient norm became %g by step %lld, and the update "
                   "has applied it to the weights; the run stops without a checkpoint of them; "
                   "lower --learning-rate or --max-grad-norm", grad_norm_sum, (long long)step);
}

/* One gradient step on a replay minibatch; `step` is the global step (prioritized beta). */
static cudarl_status train_step(cr_dqn *d, int64_t step) {
    cudarl_ctx *ctx = d->ctx;
    const cr_backend *o = d->o;
    const cudarl_dqn_config *c = &d->cfg;
    const int win = d->K > 1; /* a window batch: obs and next_obs are views of b_obs */
    cr_replay_batch out = {win ? NULL : d->b_obs, win ? NULL : d->b_next, d->b_actions,
                           d->b_rewards, d->b_term, d->b_trunc, d->b_indices, d->b_weights,
                           win ? d->b_obs : NULL};
    /* prioritized beta at `step`, which the device's step counter also holds (act has advanced
     * it past the iteration), so graphs can hold the sampler */
    CR_TRY(cr_replay_buffer_sample(&d->replay, &d->s->sample, d->B, step, &d->m->step, &out));
    const void *x = cr_dqn_qnet_input(d, d->b_obs, d->b_obs_f, d->B);
    const void *xn = cr_dqn_qnet_input(d, d->b_next, d->b_next_f, d->B);
    const size_t st = d->b_stride;
    cr_dqn_qnet_forward_rows(d, d->target, xn, st, d->b_next_t, &d->cache_t, d->B);
    if (c->double_dqn)
        cr_dqn_qnet_forward_rows(d, d->online, xn, st, d->b_next_o, &d->cache_o, d->B);
    cr_dqn_qnet_forward_rows(d, d->online, x, st, d->b_q, &d->cache_q, d->B);
    o->dqn_loss(ctx, d->b_q, d->b_actions, d->b_rewards, d->b_term, d->b_next_t,
                c->double_dqn ? d->b_next_o : NULL, c->prioritized ? d->b_weights : NULL,
                (float)c->gamma, c->double_dqn, c->huber, d->b_dq, d->b_td, &d->m->acc, d->B,
                d->A);
    cr_amp_scale(ctx, &d->amp, d->b_dq, (size_t)d->B * d->A); /* fp16: times the scale */
    cr_dqn_qnet_backward(d, d->online, d->grads, x, d->b_dq, &d->cache_q, d->B);
    if (d->ranks > 1) cr_dqn_dist_mean_grads(d); /* the job's gradient, the same on every rank */
    size_t P = d->net.num_params;
    cr_amp_step(ctx, &d->amp, d->online, d->grads, d->adam_m, d->adam_v, P, &d->s->lr, 0.9f,
                0.999f, 1e-8f, &d->s->adam_t, c->max_grad_norm > 0, c->max_grad_norm,
                &d->m->grad_norm_sum);
    if (c->prioritized)
        CR_TRY(cr_replay_buffer_update_priorities(&d->replay, d->b_indices, d->b_td, d->B,
                                                  (float)c->prioritized_eps));
    if (!d->on_device) { /* the CPU reports a non-finite loss at the step it happens */
        double loss = d->m->acc.last_loss;
        if (!isfinite(loss))
            return cr_fail(CUDARL_ERR_NUMERIC, "the TD loss became %g at step %lld; lower "
                           "--learning-rate or pass --huber / --max-grad-norm", loss,
                           (long long)step);
        CR_TRY(check_gradients(d, d->m->grad_norm_sum, step));
    }
    return CUDARL_OK;
}

/* Train steps that follow the iteration starting at global step `before` (N env steps). */
static int64_t train_steps_after(const cr_dqn *d, int64_t before) {
    const cudarl_dqn_config *c = &d->cfg;
    int64_t after = before + d->world_N; /* the job's steps */
    if (after <= c->learning_starts) return 0;
    return after / c->train_frequency - before / c->train_frequency;
}

static int target_update_after(const cr_dqn *d, int64_t before) {
    const cudarl_dqn_config *c = &d->cfg;
    int64_t after = before + d->world_N;
    return after > c->learning_starts &&
           after / c->target_network_frequency != before / c->target_network_frequency;
}

/* Enqueues one iteration starting at global step `before`: act, env step, store, then its
 * train steps and target update (every choice a function of `before`). */
static cudarl_status iteration(cr_dqn *d, int64_t before) {
    act_and_store(d);
    int64_t steps = train_steps_after(d, before);
    for (int64_t k = 0; k < steps; k++) CR_TRY(train_step(d, before + d->world_N));
    if (target_update_after(d, before))
        d->o->polyak(d->ctx, d->target, d->online, d->net.num_params, d->cfg.tau);
    return CUDARL_OK;
}

/* ---- graphs (CUDA) ---------------------------------------------------------------------- */

static int64_t gcd64(int64_t a, int64_t b) {
    while (b) {
        int64_t t = a % b;
        a = b, b = t;
    }
    return a;
}

/* Iterations after which the train and target schedules repeat: iteration i + P does what i
 * did once learning has started (i N and (i + P) N agree modulo both frequencies). */
static int64_t schedule_period(const cr_dqn *d) {
    int64_t N = d->N, F = d->cfg.train_frequency, T = d->cfg.target_network_frequency;
    int64_t pf = F / gcd64(N, F), pt = T / gcd64(N, T);
    if (pf > DQN_GRAPH_MAX_ITERS || pt > DQN_GRAPH_MAX_ITERS) return DQN_GRAPH_MAX_ITERS + 1;
    return pf / gcd64(pf, pt) * pt;
}

/* Whether blocks are captured, their length K, and the first block's start step: the first
 * iteration that trains. Only where every op of an iteration is device work with arguments
 * fixed at capture: CUDA and the envs' CUDA twin (not the pool on CPU threads); prioritized
 * replay reads its beta's step on the device. */
static void graph_plan(cr_dqn *d) {
    d->graph_iters = 0;
    if (!d->on_device || d->pool || !d->o->graph_begin) return;
    int64_t p = schedule_period(d);
    if (p > DQN_GRAPH_MAX_ITERS) {
        CR_INFO("DQN: the train and target schedules repeat only after more than %d iterations; "
                "launching op by op (a --target-network-frequency and --train-frequency that are "
                "multiples of --num-envs make the period one iteration)", DQN_GRAPH_MAX_ITERS);
        return;
    }
    int64_t k = p * ((DQN_GRAPH_MIN_ITERS + p - 1) / p);
    if (k > DQN_GRAPH_MAX_ITERS) k = p;
    d->graph_iters = (int)k;
    /* the first iteration that trains starts at the smallest multiple g of N with g + N > ls */
    d->graph_start = d->cfg.learning_starts / d->N * d->N;
}

/* Captures K iterations from global step `before` into d->graph (not run). */
static cudarl_status capture_block(cr_dqn *d, int64_t before) {
    cudarl_ctx *ctx = d->ctx;
    CR_TRY(d->o->graph_begin(ctx));
    cudarl_status s = CUDARL_OK;
    for (int k = 0; k < d->graph_iters && s == CUDARL_OK; k++)
        s = iteration(d, before + (int64_t)k * d->N);
    cudarl_status e = d->o->graph_end(ctx, &d->graph);
    return s != CUDARL_OK ? s : e;
}

/* ---- metrics ---------------------------------------------------------------------------- */

static const char *const dqn_csv_header =
    "global_step,iteration,charts/episodic_return,charts/episodic_length,charts/mean_return_100,"
    "charts/episodes,charts/epsilon,losses/td_loss,losses/q_values,charts/SPS,time/elapsed_s,"
    "amp/loss_scale,amp/skipped_steps\n";

/* One metrics row from d->h at global step `step`. */
static void log_row(cr_dqn *d, int64_t step, int64_t iteration) {
    if (d->rank != 0) return; /* data parallel: rank 0 writes the job's rows */
    const cr_episode_log *l = &d->h.log;
    const cr_dqn_stats_acc *acc = &d->h.acc;
    double elapsed = cr_time_now() - d->loop_start;
    double v[7] = {l->iter_episodes ? l->iter_return_sum / (double)l->iter_episodes : NAN,
                   l->iter_episodes ? l->iter_length_sum / (double)l->iter_episodes : NAN,
                   cr_episode_log_recent_mean(l), (double)l->episodes,
                   cr_linear_schedule(d->cfg.start_e, d->cfg.end_e, d->duration, (double)step),
                   acc->count > 0 ? acc->loss_sum / acc->count : NAN,
                   acc->count > 0 ? acc->q_sum / acc->count : NAN};
    fprintf(d->csv, "%lld,%lld", (long long)step, (long long)iteration);
    for (int i = 0; i < 7; i++) {
        if (isnan(v[i])) fputs(",", d->csv);
        else fprintf(d->csv, ",%.9g", v[i]);
    }
    double sps = elapsed > 0 ? (double)(step - d->start_step) / elapsed : 0;
    fprintf(d->csv, ",%.0f,%.6f", sps, elapsed);
    cr_amp_log(&d->amp, &d->h.scaler, d->csv, &d->tb, step); /* fp16: the scale as of this row */
    static const char *const tags[8] = {"charts/episodic_return", "charts/episodic_length",
        "charts/mean_return_100", "charts/episodes", "charts/epsilon", "losses/td_loss",
        "losses/q_values", "charts/SPS"};
    double tv[8] = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], sps};
    cr_tb_scalars(&d->tb, step, tags, tv, 8);
    cr_run_metrics_callback(d->cfg.on_metrics, d->cfg.on_metrics_user, step, iteration, tags,
                            tv, 8);
}

static void progress(cr_dqn *d, int64_t step, int final) {
    if (d->cfg.quiet || d->rank != 0) return;
    double now = cr_time_now(), elapsed = now - d->loop_start;
    if (!final && now - d->last_progress < (d->tty ? 0.1 : 1.0)) return;
    d->last_progress = now;
    double sps = elapsed > 0 ? (double)(step - d->start_step) / elapsed : 0;
    double m = cr_episode_log_recent_mean(&d->h.log);
    char ms[32] = "-";
    if (!isnan(m)) snprintf(ms, sizeof ms, "%.1f", m);
    fprintf(stderr, "%sstep %9lld/%lld  SPS %9.0f  return(100) %6s  ETA %5.1fs%s",
            d->tty ? "\r" : "", (long long)step, (long long)d->cfg.total_timesteps, sps,
            ms, sps > 0 ? (double)(d->cfg.total_timesteps - step) / sps : 0,
            d->tty ? (final ? "\n" : "") : "\n");
}

/* What the host does with the metrics of global step `step` in d->h: the device's errors, the
 * solve check, the metrics row (when `log`), the progress line. */
static cudarl_status report(cr_dqn *d, int64_t step, int64_t iteration, int log,
                            uint32_t replay_errors) {
    CR_TRY(cr_replay_buffer_error(replay_errors));
    if (!isfinite(d->h.acc.loss_sum))
        return cr_fail(CUDARL_ERR_NUMERIC, "the TD loss became non-finite (%g) by step %lld; "
                       "lower --learning-rate or pass --huber / --max-grad-norm",
                       d->h.acc.last_loss, (long long)step);
    CR_TRY(check_gradients(d, d->h.grad_norm_sum, step));
    /* device memory after setup: at the first report, or after the first block's capture */
    if (d->o->bytes_in_use && !d->bytes_after_setup && (!d->graph_iters || d->graph_failed))
        d->bytes_after_setup = d->o->bytes_in_use(d->ctx);
    double m = cr_episode_log_recent_mean(&d->h.log);
    if (d->solved_step < 0 && d->h.log.episodes >= CR_RECENT_EPISODES &&
        m >= d->env_info->solved_return) {
        d->solved_step = step;
        d->solved_seconds = cr_time_now() - d->loop_start;
        d->solved_unix = cr_time_unix();
    }
    if (log) log_row(d, step, iteration);
    progress(d, step, 0);
    return CUDARL_OK;
}

/* After a metrics copy of a log row: the device's per-row sums start again (stream order puts
 * this after the copy and before the next iteration). */
static void restart_row_sums(cr_dqn *d) {
    cudarl_ctx *ctx = d->ctx;
    d->o->zero(ctx, &d->m->acc, sizeof d->m->acc);
    d->o->zero(ctx, &d->m->log.iter_episodes,
               sizeof d->m->log - offsetof(cr_episode_log, iter_episodes));
}

static cudarl_status report_slot(void *arg, const void *slot, const cr_pipe_tag *tag) {
    cr_dqn *d = arg;
    const cr_dqn_slot *sl = slot;
    d->h = sl->m;
    return report(d, tag->step, tag->iteration, tag->log, sl->replay_errors);
}

/* A report point after the work enqueued so far (global step d->global_step): the metrics
 * copied (into a pinned slot behind the work, or read at once on the CPU) and, at a log row,
 * the row sums restarted after the copy. */
static cudarl_status report_point(cr_dqn *d, int log) {
    cudarl_ctx *ctx = d->ctx;
    const cr_backend *o = d->o;
    if (!d->pipe.on) {
        o->copy_to_host(ctx, &d->h, d->m, sizeof d->h);
        if (d->ranks > 1) { /* the job's metrics; at a log row the weights compared */
            cr_dqn_dist_combine(d, log);
            if (d->diverged) return cr_fail(CUDARL_ERR_NUMERIC, "%s", d->diverged_why);
        }
        uint32_t bits = 0;
        const uint32_t *eb = cr_replay_buffer_error_bits(&d->replay);
        if (eb) o->copy_to_host(ctx, &bits, eb, sizeof bits);
        cudarl_status s = report(d, d->global_step, d->iteration, log, bits);
        if (log) restart_row_sums(d);
        return s;
    }
    cr_dqn_slot *slot;
    CR_TRY(cr_pipe_reserve(&d->pipe, ctx, report_slot, d, (void **)&slot));
    o->copy_to_host_async(ctx, &slot->m, d->m, sizeof slot->m);
    const uint32_t *eb = cr_replay_buffer_error_bits(&d->replay);
    if (eb) o->copy_to_host_async(ctx, &slot->replay_errors, eb, sizeof(uint32_t));
    else slot->replay_errors = 0;
    const cr_pipe_tag tag = {d->global_step, d->iteration, log};
    cr_pipe_push(&d->pipe, ctx, &tag);
    if (log) restart_row_sums(d);
    return cr_pipe_drain(&d->pipe, ctx, 0, report_slot, d);
}

/* ---- the loop --------------------------------------------------------------------------- */

/* Whether a captured block starts at the current step: blocks start at graph_start plus whole
 * blocks, and must end by total_timesteps. */
static int block_here(const cr_dqn *d) {
    if (!d->graph_iters || d->graph_failed) return 0;
    int64_t g = d->global_step, span = (int64_t)d->graph_iters * d->N;
    return g >= d->graph_start && (g - d->graph_start) % span == 0 &&
           g + span <= d->cfg.total_timesteps;
}

/* Runs one captured block (capturing it on first use); returns 0 when capture is impossible
 * (the loop then launches op by op). */
static cudarl_status run_block(cr_dqn *d, int *ran) {
    *ran = 0;
    if (!d->graph) {
        cudarl_status s = capture_block(d, d->global_step);
        if (s != CUDARL_OK) {
            CR_WARN("DQN graph capture failed (%s); launching ops one by one", cudarl_last_error());
            d->graph = NULL;
            d->graph_failed = 1;
            return CUDARL_OK;
        }
    }
    CR_RANGE_PUSH("dqn block");
    d->o->graph_launch(d->ctx, d->graph);
    CR_RANGE_POP();
    if (d->o->bytes_in_use && !d->bytes_after_setup)
        d->bytes_after_setup = d->o->bytes_in_use(d->ctx);
    for (int k = 0; k < d->graph_iters; k++)
        d->train_steps += train_steps_after(d, d->global_step + (int64_t)k * d->N);
    d->global_step += (int64_t)d->graph_iters * d->N;
    d->iteration += d->graph_iters;
    *ran = 1;
    return CUDARL_OK;
}

static cudarl_status dqn_loop(cr_dqn *d) {
    const cudarl_dqn_config *c = &d->cfg;
    const int64_t W = d->world_N; /* the job's env steps per iteration */
    d->log_every = c->total_timesteps / 200 > W ? c->total_timesteps / 200 : W;
    d->next_log = (d->global_step / d->log_every + 1) * d->log_every; /* resume: the next row's */
    d->start_step = d->global_step;
    d->loop_start = cr_time_now();
    d->syncs_start = d->ctx->host_syncs;
    int64_t since_report = 0;
    while (d->global_step < c->total_timesteps &&
           !(d->ranks > 1 ? d->dist_stop : cr_stop_requested())) {
        int ran = 0;
        if (block_here(d)) CR_TRY(run_block(d, &ran));
        if (!ran) {
            int64_t before = d->global_step;
            CR_TRY(iteration(d, before));
            d->train_steps += train_steps_after(d, before);
            d->global_step += W;
            d->iteration++;
        }
        since_report++;
        int log = d->global_step >= d->next_log || d->global_step >= c->total_timesteps;
        while (d->next_log <= d->global_step) d->next_log += d->log_every;
        /* the CPU reads after every iteration (the solve check at its step); CUDA after each
         * block, each log row, and every DQN_REPORT_EVERY iterations launched op by op */
        if (!d->pipe.on || ran || log || since_report >= DQN_REPORT_EVERY) {
            CR_TRY(report_point(d, log));
            since_report = 0;
        }
    }
    if (d->pipe.on) CR_TRY(cr_pipe_drain(&d->pipe, d->ctx, 1, report_slot, d));
    return CUDARL_OK;
}

/* ---- init, checkpoint, train ------------------------------------------------------------ */

/* Weights, target, RNG streams, step counter, learning rate and env states from the seed,
 * written into backend memory. */
static cudarl_status seed_state(cr_dqn *d) {
    cudarl_ctx *ctx = d->ctx;
    const cudarl_dqn_config *cfg = &d->cfg;
    size_t P = d->net.num_params;
    float *h = malloc(P * sizeof(float));
    if (!h) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory for parameters");
    cr_philox_state init;
    cr_philox_seed(&init, cfg->seed, DQN_STREAM_INIT);
    const int threads = cr_cpu_threads(); /* all cores: as PPO's seed_state says */
    cr_cpu_set_threads(0);
    cr_dqn_qnet_init_params(d, h, &init);
    cr_cpu_set_threads(threads);
    d->o->copy_from_host(ctx, d->online, h, P * sizeof(float));
    d->o->copy(ctx, d->target, d->online, P * sizeof(float));
    cr_dqn_scalars s;
    memset(&s, 0, sizeof s);
    cr_rng_stream_seed(&s.explore, cfg->seed, DQN_STREAM_EXPLORE);
    cr_rng_stream_seed(&s.sample, cfg->seed, DQN_STREAM_REPLAY_OF(d->rank)); /* 0: 1 process's */
    s.lr = (float)cfg->learning_rate;
    d->o->copy_from_host(ctx, d->s, &s, sizeof s);
    if (d->pool) { /* env i: the job's env rank*N + i (the pool's first_env) */
        cr_env_pool_reset(&d->pool->pool, cfg->seed);
        d->o->copy_from_host(ctx, d->obs, d->pool->obs, (size_t)d->N * d->obs_bytes);
    } else if (d->where == CR_DQN_ENVS_TWIN) {
        cr_image_twin_reset(ctx, &d->twin, cfg->seed, d->obs);
    } else {
        d->env.first = (int64_t)d->rank * d->N; /* env i: the job's env rank*N + i */
        cr_env_batch_reset(ctx, &d->env, cfg->seed, d->obs);
    }
    d->o->sync(ctx); /* the pageable sources above are read by now */
    free(h);
    return CUDARL_OK;
}

static cudarl_status check_context(const cr_dqn *d, const cudarl_ctx *ctx) {
    const cudarl_dqn_config *c = &d->cfg;
    if (c->env_device == CUDARL_DEVICE_CUDA && ctx->kind != CUDARL_DEVICE_CUDA)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "--env-device cuda needs a CUDA device, and this "
                       "run is on the CPU; use --env-device cpu or auto");
    if (ctx->kind == CUDARL_DEVICE_CUDA && c->batch_size > 65535)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "--batch-size %d is over the GPU replay's limit of "
                       "65535; lower it", c->batch_size);
    return CUDARL_OK;
}

/* Refuses a plan over the memory budget before anything is allocated. */
static cudarl_status check_budget(cr_dqn *d, const cr_plan *pl) {
    int64_t budget = d->cfg.mem_budget;
    const char *source = NULL; /* --mem-budget, or (0) the host's available memory */
    if (budget == 0 && d->on_device) budget = cr_ctx_mem_budget(d->ctx, &source);
    if (budget < 0) budget = 0, source = NULL;
    cudarl_replay_request rq = {sizeof rq, d->buffer, d->N, d->D, d->u8, 1,
                                d->cfg.prioritized, (int64_t)pl->offsets[D_REPLAY], budget,
                                source};
    char report[2048];
    return cudarl_replay_plan_report(&rq, report, sizeof report);
}

static cudarl_status dqn_init(cr_dqn *d, cudarl_ctx *ctx, const cudarl_dqn_config *given) {
    CR_TRY(cr_dqn_config_take(given, &d->cfg, "cudarl_dqn_train"));
    const cudarl_dqn_config *cfg = &d->cfg;
    CR_TRY(cudarl_dqn_config_validate(cfg));
    d->ctx = ctx;
    d->o = ctx->ops;
    CR_TRY(check_context(d, ctx));
    d->on_device = ctx->kind == CUDARL_DEVICE_CUDA;
    d->env_info = cr_env_info_find(cfg->env_id);
    d->u8 = d->env_info->def->obs_dtype == CUDARL_OBS_U8;
    d->cast = d->u8 && !strcmp(cfg->policy, "mlp");
    d->obs_bytes = cr_env_def_obs_bytes(d->env_info->def);
    d->N = cfg->num_envs, d->D = d->env_info->obs_dim, d->A = d->env_info->num_actions;
    d->K = cfg->replay_frames && !d->cast && d->u8 && d->env_info->def->frame_stack > 1
               ? d->env_info->def->frame_stack : 1;
    d->b_stride = d->K > 1 ? (size_t)d->D / (size_t)d->K * (size_t)(d->K + 1) : (size_t)d->D;
    d->B = cfg->batch_size, d->rows = d->B > d->N ? d->B : d->N;
    d->duration = cfg->exploration_fraction * (double)cfg->total_timesteps;
    d->solved_step = -1, d->solved_seconds = -1;
    if (cfg->threads > 0) cr_cpu_set_threads(cfg->threads);
    CR_TRY(cr_dqn_qnet_layout(d));
    cr_dqn_envs_where where;
    CR_TRY(envs_place(cfg, ctx, &where));
    d->where = (int)where;
    CR_TRY(cr_dqn_dist_init(d)); /* ranks > 1: this rank's N, B and replay shard */
    CR_TRY(cr_dqn_qnet_make(d));                                   /* for this rank's N and B */
    if (d->where == CR_DQN_ENVS_POOL) CR_TRY(cr_dqn_pool_init(d)); /* this rank's N envs */
    cr_plan pl;
    CR_TRY(plan_memory(d, &pl));
    cr_plan_print(&pl, d->ranks > 1 ? "DQN (host, per rank)"
                       : d->on_device ? "DQN (device)" : "DQN (host)");
    CR_TRY(check_budget(d, &pl));
    CR_TRY(cr_precision_apply(ctx, cfg->precision, &d->precision_set)); /* the device is known */
    if (cfg->precision != CUDARL_PRECISION_FP32)
        CR_INFO("precision %s: %s", cudarl_precision_name(cfg->precision),
                cr_precision_training_summary(cfg->precision));
    CR_TRY(ctx->ops->arena_alloc(ctx, &d->mem, &pl));
    CR_TRY(carve(d));
    cr_amp_init(&d->amp, ctx, cfg->precision, &d->m->scaler);
    CR_TRY(seed_state(d));
    cr_dqn_qnet_warm_up(d);
    cr_pipe_init(&d->pipe, ctx, sizeof(cr_dqn_slot), 1);
    graph_plan(d);
    return CUDARL_OK;
}

static void dqn_free(cr_dqn *d) {
    cudarl_ctx *ctx = d->ctx;
    if (!ctx) return;
    if (d->mem.base) ctx->ops->sync(ctx); /* copies into pinned slots may be in flight */
    if (d->graph) ctx->ops->graph_free(d->graph);
    d->graph = NULL;
    cr_pipe_free(&d->pipe, ctx);
    cr_dqn_pool_free(d);
    cr_cnn_free(&d->net.dev);
    if (d->csv) fclose(d->csv);
    d->csv = NULL;
    cr_run_release(d->run_lock);
    d->run_lock = -1;
    cr_tb_close(&d->tb);
    cr_dqn_dist_free(d);
    if (d->mem.base) ctx->ops->arena_free(ctx, &d->mem);
    if (d->precision_set) cr_precision_restore(ctx);
    d->precision_set = 0;
}

static cudarl_status save(cr_dqn *d) {
    char path[600];
    snprintf(path, sizeof path, "%s/model.safetensors", d->run_dir);
    if (d->csv) fflush(d->csv);
    return cr_dqn_checkpoint_save(d, path); /* data parallel: a collective; rank 0 writes */
}

static void fill_summary(const cr_dqn *d, cudarl_train_summary *summary) {
    double secs = cr_time_now() - d->loop_start;
    memset(summary, 0, sizeof *summary);
    summary->global_step = d->global_step;
    summary->run_steps = d->global_step - d->start_step;
    summary->episodes = d->h.log.episodes;
    summary->mean_return_100 = cr_episode_log_recent_mean(&d->h.log);
    summary->train_seconds = secs;
    summary->sps = secs > 0 ? (double)summary->run_steps / secs : 0;
    summary->solved_step = d->solved_step;
    summary->solved_seconds = d->solved_seconds;
    summary->solved_unix_time = d->solved_unix;
    summary->arena_bytes = (int64_t)d->mem.plan.total;
    summary->device_bytes_after_setup = (int64_t)d->bytes_after_setup;
    summary->device_bytes_growth = (int64_t)d->bytes_at_end - (int64_t)d->bytes_after_setup;
    summary->host_syncs_per_iteration =
        d->iteration > 0 ? (double)(d->ctx->host_syncs - d->syncs_start) / (double)d->iteration : 0;
    summary->interrupted = d->global_step < d->cfg.total_timesteps;
    snprintf(summary->run_dir, sizeof summary->run_dir, "%s", d->run_dir);
}

/* The run: set up, load `resume_path` (NULL: a fresh run), claim the folder, train, save. */
static cudarl_status dqn_train(cudarl_ctx *ctx, const cudarl_dqn_config *cfg,
                               const char *resume_path, cudarl_train_summary *summary) {
    cr_dqn *d = calloc(1, sizeof *d);
    if (!d) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory");
    d->run_lock = -1;
    cudarl_status s = dqn_init(d, ctx, cfg);
    if (s == CUDARL_OK && resume_path) s = cr_dqn_checkpoint_load(d, resume_path);
    if (s == CUDARL_OK && d->rank == 0) /* data parallel: rank 0 writes the run folder */
        s = cr_run_open(d->cfg.runs_dir, d->cfg.run_name, sizeof d->cfg.run_name, d->cfg.env_id,
                        "dqn", d->cfg.seed, resume_path ? d->iteration : -1, dqn_csv_header,
                        d->run_dir, sizeof d->run_dir, &d->csv, &d->run_lock);
    if (s == CUDARL_OK && d->rank == 0) s = cr_tb_open(&d->tb, d->run_dir);
    if (s == CUDARL_OK && d->rank == 0 && d->cfg.config_toml)
        s = cr_run_save_config(d->run_dir, d->cfg.config_toml, &d->tb);
    d->tty = isatty(STDERR_FILENO);
    if (s == CUDARL_OK) {
        if (d->ranks > 1)
            CR_INFO("data parallel: rank %d of %d, envs %d..%d of %d, a replay shard of %lld, "
                    "minibatches of %d rows here", d->rank, d->ranks, d->rank * d->N,
                    (d->rank + 1) * d->N - 1, d->world_N, (long long)d->buffer / d->N * d->N,
                    d->B);
        CR_INFO("training DQN on %s: %d env(s), buffer %lld, batch %d, %zu parameters, %s%s, "
                "run %s", d->cfg.env_id, d->world_N,
                (long long)(d->buffer / d->N * d->N) * d->ranks, d->world_B,
                d->net.num_params, ctx->ops->name, d->pool ? " (envs on CPU threads)" : "",
                d->rank == 0 ? d->run_dir : "(rank 0 writes it)");
        if (d->graph_iters)
            CR_DEBUG("DQN: blocks of %d iterations captured as one graph from step %lld",
                     d->graph_iters, (long long)d->graph_start);
        s = dqn_loop(d);
        if (d->o->bytes_in_use) d->bytes_at_end = d->o->bytes_in_use(ctx);
        if (!d->bytes_after_setup) d->bytes_after_setup = d->bytes_at_end; /* no block ran */
        progress(d, d->global_step, 1);
        if (s == CUDARL_OK) s = save(d);
        if (summary) fill_summary(d, summary);
    }
    dqn_free(d);
    free(d);
    cr_stop_clear(); /* a request applies to one run; one made during setup still counts */
    return s;
}

cudarl_status cudarl_dqn_train(cudarl_ctx *ctx, const cudarl_dqn_config *cfg,
                               cudarl_train_summary *summary) {
    return dqn_train(ctx, cfg, NULL, summary);
}

cudarl_status cudarl_dqn_train_resume(cudarl_ctx *ctx, const cudarl_dqn_config *cfg,
                                      const char *resume_path, cudarl_train_summary *summary) {
    if (!resume_path || !resume_path[0])
        return cr_fail(CUDARL_ERR_INVALID_ARG, "cudarl_dqn_train_resume: no checkpoint path; "
                       "pass a model.safetensors of a DQN run, or call cudarl_dqn_train");
    return dqn_train(ctx, cfg, resume_path, summary);
}
