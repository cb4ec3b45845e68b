/* DQN (CleanRL's dqn.py) with cudarl's replay buffer, on the CPU: epsilon-greedy rollout of N
 * envs -> replay -> TD update of the online Q-network -> target network update -> log. Extras:
 * --double-dqn, --prioritized replay, Huber loss, gradient clipping. The GPU half (the replay
 * buffer's CUDA twin) is a later issue. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo/run.h"
#include "env/env.h"
#include "nn/qnet.h"
#include "ops/cpu/ops_dqn.h"
#include "replay/replay.h"
#include "runtime/checkpoint.h"
#include "runtime/safetensors.h"
#include "runtime/tensorboard.h"

#define DQN_STREAM_EXPLORE (1ull << 40)
#define DQN_STREAM_REPLAY ((1ull << 40) + 1)
#define DQN_STREAM_INIT ((1ull << 40) + 2)

typedef struct cr_dqn {
    cudarl_ctx *ctx;
    cudarl_dqn_config cfg;
    const cr_env_info *env_info;
    cr_qnet_layout layout;
    int N, D, A, B, rows; /* envs, obs floats, actions, batch, max(N, B) */
    cr_arena mem;
    float *online, *target, *grads, *adam_m, *adam_v;  /* (P) */
    cr_env_batch env;
    float *obs, *next_obs, *final_obs, *q, *u;          /* (N, D) x3, (rows, A), (2N) */
    float *rewards;                                     /* (N) */
    int32_t *actions;                                   /* (N) */
    uint8_t *term, *trunc, *done;                       /* (N) */
    double *ep_return;                                  /* (N) */
    int64_t *ep_length;                                 /* (N) */
    cr_episode_log *log;
    float *b_obs, *b_next, *b_rewards, *b_weights;      /* (B, D), (B, D), (B), (B) */
    int32_t *b_actions;                                 /* (B) */
    uint8_t *b_term, *b_trunc;                          /* (B) */
    int64_t *b_indices;                                 /* (B) */
    float *b_q, *b_next_t, *b_next_o, *b_dq, *b_td;     /* (B, A) x4, (B) */
    cr_mlp_cache cache_q, cache_t, cache_o;
    cr_replay replay;
    cr_rng_stream explore, sample;
    int64_t global_step, train_steps, adam_t;
    /* logging */
    char run_dir[512];
    FILE *csv;
    cr_tb_writer tb;
    double loop_start, last_progress, loss_sum, q_sum;
    int64_t loss_count, solved_step, last_log_episodes;
    double solved_seconds, solved_unix;
    int tty;
} cr_dqn;

enum { D_ONLINE, D_TARGET, D_GRADS, D_M, D_V, D_ENV, D_OBS, D_NEXT, D_FINAL, D_Q, D_U, D_REW,
       D_ACT, D_TERM, D_TRUNC, D_DONE, D_EPRET, D_EPLEN, D_LOG, D_BOBS, D_BNEXT, D_BREW, D_BW,
       D_BACT, D_BTERM, D_BTRUNC, D_BIDX, D_BQ, D_BNT, D_BNO, D_BDQ, D_BTD, D_CQ, D_CT, D_CO,
       D_REPLAY };

static cr_replay_spec replay_spec(const cr_dqn *d) {
    cr_replay_spec s;
    memset(&s, 0, sizeof s);
    s.capacity = d->cfg.buffer_size / d->N * d->N;
    s.num_envs = d->N;
    s.frame_elems = d->D;
    s.dtype = CR_REPLAY_FLOAT32;
    s.stack = 1;
    s.prioritized = d->cfg.prioritized;
    s.alpha = (float)d->cfg.prioritized_alpha;
    s.beta0 = (float)d->cfg.prioritized_beta;
    s.beta_steps = d->cfg.total_timesteps;
    return s;
}

static cudarl_status plan_memory(cr_dqn *d, cr_plan *pl) {
    size_t P = d->layout.num_params * 4, N = (size_t)d->N, D = (size_t)d->D, A = (size_t)d->A;
    size_t B = (size_t)d->B, R = (size_t)d->rows;
    size_t cache = cr_mlp_cache_floats(d->rows, cr_qnet_widest(&d->layout)) * 4;
    const struct { const char *name; size_t bytes; } items[D_REPLAY] = {
        {"q.online", P}, {"q.target", P}, {"grads", P}, {"adam.m", P}, {"adam.v", P},
        {"env", cr_env_batch_bytes(d->env_info, d->N)}, {"obs", N * D * 4},
        {"next_obs", N * D * 4}, {"final_obs", N * D * 4}, {"q", R * A * 4}, {"u", 2 * N * 4},
        {"rewards", N * 4}, {"actions", N * 4}, {"terminated", N}, {"truncated", N},
        {"done", N}, {"episode.return", N * 8}, {"episode.length", N * 8},
        {"episode.log", sizeof(cr_episode_log)}, {"batch.obs", B * D * 4},
        {"batch.next_obs", B * D * 4}, {"batch.rewards", B * 4}, {"batch.weights", B * 4},
        {"batch.actions", B * 4}, {"batch.terminated", B}, {"batch.truncated", B},
        {"batch.indices", B * 8}, {"batch.q", B * A * 4}, {"batch.next_q_target", B * A * 4},
        {"batch.next_q_online", B * A * 4}, {"batch.dq", B * A * 4}, {"batch.td", B * 4},
        {"cache.q", cache}, {"cache.target", cache}, {"cache.next", cache},
    };
    cr_plan_init(pl);
    for (int i = 0; i < D_REPLAY; i++) cr_plan_add(pl, items[i].name, items[i].bytes);
    cr_replay_spec rs = replay_spec(d);
    CR_TRY(cr_replay_spec_check(&rs));
    return cr_replay_plan(&rs, pl);
}

static void carve(cr_dqn *d) {
    const cr_arena *a = &d->mem;
    int H = cr_qnet_widest(&d->layout);
    d->online = cr_arena_get(a, D_ONLINE), d->target = cr_arena_get(a, D_TARGET);
    d->grads = cr_arena_get(a, D_GRADS), d->adam_m = cr_arena_get(a, D_M);
    d->adam_v = cr_arena_get(a, D_V);
    cr_env_batch_init(&d->env, d->env_info, d->N, cr_arena_get(a, D_ENV));
    d->obs = cr_arena_get(a, D_OBS), d->next_obs = cr_arena_get(a, D_NEXT);
    d->final_obs = cr_arena_get(a, D_FINAL), d->q = cr_arena_get(a, D_Q);
    d->u = cr_arena_get(a, D_U), d->rewards = cr_arena_get(a, D_REW);
    d->actions = cr_arena_get(a, D_ACT), d->term = cr_arena_get(a, D_TERM);
    d->trunc = cr_arena_get(a, D_TRUNC), d->done = cr_arena_get(a, D_DONE);
    d->ep_return = cr_arena_get(a, D_EPRET), d->ep_length = cr_arena_get(a, D_EPLEN);
    d->log = cr_arena_get(a, D_LOG);
    d->b_obs = cr_arena_get(a, D_BOBS), d->b_next = cr_arena_get(a, D_BNEXT);
    d->b_rewards = cr_arena_get(a, D_BREW), d->b_weights = cr_arena_get(a, D_BW);
    d->b_actions = cr_arena_get(a, D_BACT), d->b_term = cr_arena_get(a, D_BTERM);
    d->b_trunc = cr_arena_get(a, D_BTRUNC), d->b_indices = cr_arena_get(a, D_BIDX);
    d->b_q = cr_arena_get(a, D_BQ), d->b_next_t = cr_arena_get(a, D_BNT);
    d->b_next_o = cr_arena_get(a, D_BNO), d->b_dq = cr_arena_get(a, D_BDQ);
    d->b_td = cr_arena_get(a, D_BTD);
    d->cache_q = cr_mlp_cache_carve(cr_arena_get(a, D_CQ), d->rows, H);
    d->cache_t = cr_mlp_cache_carve(cr_arena_get(a, D_CT), d->rows, H);
    d->cache_o = cr_mlp_cache_carve(cr_arena_get(a, D_CO), d->rows, H);
    cr_replay_spec rs = replay_spec(d);
    cr_replay_init(&d->replay, &rs, a, D_REPLAY);
}

static cudarl_status dqn_init(cr_dqn *d, cudarl_ctx *ctx, const cudarl_dqn_config *cfg) {
    memset(d, 0, sizeof *d);
    CR_TRY(cudarl_dqn_config_validate(cfg));
    if (ctx->kind != CUDARL_DEVICE_CPU)
        return cr_fail(CUDARL_ERR_UNSUPPORTED, "DQN trains on the CPU in this version (the replay "
                       "buffer's CUDA twin comes next); use --device cpu");
    d->ctx = ctx;
    d->cfg = *cfg;
    d->env_info = cr_env_find(cfg->env_id);
    d->N = cfg->num_envs, d->D = d->env_info->obs_dim, d->A = d->env_info->num_actions;
    d->B = cfg->batch_size, d->rows = d->B > d->N ? d->B : d->N;
    d->solved_step = -1, d->solved_seconds = -1;
    if (cfg->threads > 0) cr_cpu_set_threads(cfg->threads);
    cr_qnet_layout_init(&d->layout, d->D, cfg->hidden1, cfg->hidden2, d->A);
    cr_plan pl;
    CR_TRY(plan_memory(d, &pl));
    cr_plan_print(&pl, "DQN (host)");
    /* refuse a plan over the budget before allocating anything */
    cudarl_replay_request rq = {cfg->buffer_size, d->N, d->D, 0, 1, cfg->prioritized,
                                (int64_t)pl.offsets[D_REPLAY], cfg->mem_budget};
    char report[2048];
    CR_TRY(cudarl_replay_plan_report(&rq, report, sizeof report));
    CR_TRY(ctx->ops->arena_alloc(ctx, &d->mem, &pl));
    carve(d);
    cr_philox_state init;
    cr_philox_seed(&init, cfg->seed, DQN_STREAM_INIT);
    cr_qnet_init_params(&d->layout, d->online, &init);
    memcpy(d->target, d->online, d->layout.num_params * sizeof(float));
    cr_rng_stream_seed(&d->explore, cfg->seed, DQN_STREAM_EXPLORE);
    cr_rng_stream_seed(&d->sample, cfg->seed, DQN_STREAM_REPLAY);
    cr_env_batch_reset(ctx, &d->env, cfg->seed, d->obs);
    return CUDARL_OK;
}

/* One gradient step on a replay minibatch; returns the loss stats in d->loss_sum/q_sum. */
static cudarl_status train_step(cr_dqn *d) {
    cudarl_ctx *ctx = d->ctx;
    cr_replay_batch out = {d->b_obs, d->b_next, d->b_actions, d->b_rewards, d->b_term,
                           d->b_trunc, d->b_indices, d->b_weights};
    if (d->cfg.prioritized)
        CR_TRY(cr_replay_sample_prioritized(&d->replay, &d->sample, d->B, d->global_step, &out));
    else
        CR_TRY(cr_replay_sample_uniform(&d->replay, &d->sample, d->B, &out));
    cr_mlp_view online = cr_qnet_view(&d->layout, d->online);
    cr_mlp_view target = cr_qnet_view(&d->layout, d->target);
    cr_mlp_view grads = cr_qnet_view(&d->layout, d->grads);
    cr_mlp_forward(ctx, &target, d->b_next, d->b_next_t, &d->cache_t, d->B);
    if (d->cfg.double_dqn) cr_mlp_forward(ctx, &online, d->b_next, d->b_next_o, &d->cache_o, d->B);
    cr_mlp_forward(ctx, &online, d->b_obs, d->b_q, &d->cache_q, d->B);
    cr_dqn_loss_stats st;
    cr_cpu_dqn_loss(d->b_q, d->b_actions, d->b_rewards, d->b_term, d->b_next_t,
                    d->cfg.double_dqn ? d->b_next_o : NULL,
                    d->cfg.prioritized ? d->b_weights : NULL, (float)d->cfg.gamma,
                    d->cfg.double_dqn, d->cfg.huber, d->b_dq, d->b_td, &st, d->B, d->A);
    cr_mlp_backward(ctx, &online, &grads, d->b_obs, d->b_dq, &d->cache_q, d->B);
    size_t P = d->layout.num_params;
    if (d->cfg.max_grad_norm > 0) cr_cpu_clip_grad_norm(d->grads, P, d->cfg.max_grad_norm);
    d->adam_t++;
    cr_cpu_adam_step(d->online, d->grads, d->adam_m, d->adam_v, P, (float)d->cfg.learning_rate,
                     0.9f, 0.999f, 1e-8f, d->adam_t);
    if (d->cfg.prioritized)
        CR_TRY(cr_replay_update_priorities(&d->replay, d->b_indices, d->b_td, d->B,
                                           (float)d->cfg.prioritized_eps));
    if (!isfinite(st.loss))
        return cr_fail(CUDARL_ERR_NUMERIC, "the TD loss became %g at step %lld; lower "
                       "--learning-rate or pass --huber / --max-grad-norm", st.loss,
                       (long long)d->global_step);
    d->loss_sum += st.loss, d->q_sum += st.q_mean, d->loss_count++;
    d->train_steps++;
    return CUDARL_OK;
}

/* One env step of every env with epsilon-greedy actions, stored in the replay buffer. */
static void act_and_store(cr_dqn *d) {
    cudarl_ctx *ctx = d->ctx;
    double duration = d->cfg.exploration_fraction * (double)d->cfg.total_timesteps;
    float eps = (float)cr_linear_schedule(d->cfg.start_e, d->cfg.end_e, duration,
                                          (double)d->global_step);
    cr_mlp_view online = cr_qnet_view(&d->layout, d->online);
    cr_mlp_forward(ctx, &online, d->obs, d->q, &d->cache_q, d->N);
    cr_cpu_uniform(&d->explore, d->u, 2 * d->N);
    cr_cpu_epsilon_greedy(d->q, d->u, d->u + d->N, eps, d->actions, d->N, d->A);
    cr_env_batch_step(ctx, &d->env, d->actions, d->next_obs, d->rewards, d->term, d->trunc,
                      d->done, d->final_obs);
    cr_replay_insert(&d->replay, d->obs, d->actions, d->rewards, d->term, d->trunc, d->final_obs);
    cr_cpu_episodes_record(d->rewards, d->done, d->ep_return, d->ep_length, d->log, d->N);
    memcpy(d->obs, d->next_obs, (size_t)d->N * d->D * sizeof(float));
    d->global_step += d->N;
}

static const char *const dqn_csv_header =
    "global_step,iteration,charts/episodic_return,charts/episodic_length,charts/mean_return_100,"
    "charts/episodes,charts/epsilon,losses/td_loss,losses/q_values,charts/SPS,time/elapsed_s\n";

static void log_row(cr_dqn *d, int64_t iteration) {
    cr_episode_log *l = d->log;
    double elapsed = cr_time_now() - d->loop_start;
    double duration = d->cfg.exploration_fraction * (double)d->cfg.total_timesteps;
    double v[7] = {l->iter_episodes ? l->iter_return_sum / (double)l->iter_episodes : NAN,
                   l->iter_episodes ? l->iter_length_sum / (double)l->iter_episodes : NAN,
                   cr_episode_log_recent_mean(l), (double)l->episodes,
                   cr_linear_schedule(d->cfg.start_e, d->cfg.end_e, duration, (double)d->global_step),
                   d->loss_count ? d->loss_sum / (double)d->loss_count : NAN,
                   d->loss_count ? d->q_sum / (double)d->loss_count : NAN};
    fprintf(d->csv, "%lld,%lld", (long long)d->global_step, (long long)iteration);
    for (int i = 0; i < 7; i++) {
        if (isnan(v[i])) fputs(",", d->csv);
        else fprintf(d->csv, ",%.9g", v[i]);
    }
    double sps = elapsed > 0 ? (double)d->global_step / elapsed : 0;
    fprintf(d->csv, ",%.0f,%.6f\n", sps, elapsed);
    static const char *const tags[8] = {"charts/episodic_return", "charts/episodic_length",
        "charts/mean_return_100", "charts/episodes", "charts/epsilon", "losses/td_loss",
        "losses/q_values", "charts/SPS"};
    double tv[8] = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], sps};
    cr_tb_scalars(&d->tb, d->global_step, tags, tv, 8);
    l->iter_episodes = 0, l->iter_return_sum = 0, l->iter_length_sum = 0;
    d->loss_sum = d->q_sum = 0, d->loss_count = 0;
}

static void progress(cr_dqn *d, int final) {
    if (d->cfg.quiet) return;
    double now = cr_time_now(), elapsed = now - d->loop_start;
    if (!final && now - d->last_progress < (d->tty ? 0.1 : 1.0)) return;
    d->last_progress = now;
    double sps = elapsed > 0 ? (double)d->global_step / elapsed : 0, m = cr_episode_log_recent_mean(d->log);
    char ms[32] = "-";
    if (!isnan(m)) snprintf(ms, sizeof ms, "%.1f", m);
    fprintf(stderr, "%sstep %9lld/%lld  SPS %9.0f  return(100) %6s  ETA %5.1fs%s",
            d->tty ? "\r" : "", (long long)d->global_step, (long long)d->cfg.total_timesteps, sps,
            ms, sps > 0 ? (double)(d->cfg.total_timesteps - d->global_step) / sps : 0,
            d->tty ? (final ? "\n" : "") : "\n");
}

/* network.* (online), target_network.*, Adam's moments, and the hyperparameters. */
static cudarl_status save(cr_dqn *d) {
    char path[600];
    snprintf(path, sizeof path, "%s/model.safetensors", d->run_dir);
    cr_st_writer *w = malloc(sizeof *w);
    if (!w) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory writing '%s'", path);
    cr_st_writer_init(w);
    char b[64];
    const cudarl_dqn_config *c = &d->cfg;
    cr_st_add_meta(w, "format", CR_CHECKPOINT_FORMAT);
    snprintf(b, sizeof b, "%d", CR_CHECKPOINT_VERSION), cr_st_add_meta(w, "format_version", b);
    cr_st_add_meta(w, "cudarl_version", CUDARL_VERSION_STRING);
    cr_st_add_meta(w, "algo", "dqn");
    cr_st_add_meta(w, "policy", "qnet");
    cr_st_add_meta(w, "env_id", c->env_id);
    cr_st_add_meta(w, "run_name", c->run_name);
    struct { const char *k; double v; } m[] = {
        {"obs_dim", d->D}, {"num_actions", d->A}, {"hidden1", c->hidden1}, {"hidden2", c->hidden2},
        {"seed", (double)c->seed}, {"total_timesteps", (double)c->total_timesteps},
        {"learning_rate", c->learning_rate}, {"num_envs", c->num_envs},
        {"buffer_size", (double)c->buffer_size}, {"gamma", c->gamma}, {"tau", c->tau},
        {"target_network_frequency", (double)c->target_network_frequency},
        {"batch_size", c->batch_size}, {"start_e", c->start_e}, {"end_e", c->end_e},
        {"exploration_fraction", c->exploration_fraction},
        {"learning_starts", (double)c->learning_starts}, {"train_frequency", (double)c->train_frequency},
        {"double_dqn", c->double_dqn}, {"prioritized", c->prioritized}, {"huber", c->huber},
        {"max_grad_norm", c->max_grad_norm}, {"global_step", (double)d->global_step}};
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        snprintf(b, sizeof b, "%.17g", m[i].v);
        cr_st_add_meta(w, m[i].k, b);
    }
    const float *bufs[4] = {d->online, d->target, d->adam_m, d->adam_v};
    const char *prefix[4] = {"", "target_", "optimizer.exp_avg.", "optimizer.exp_avg_sq."};
    cudarl_status s = CUDARL_OK;
    for (int k = 0; k < 4 && s == CUDARL_OK; k++)
        for (int i = 0; i < CR_QNET_NUM_TENSORS && s == CUDARL_OK; i++) {
            const cr_param_tensor *t = &d->layout.t[i];
            int64_t shape[2] = {t->shape[0], t->shape[1]};
            char name[96];
            snprintf(name, sizeof name, "%s%s", prefix[k], t->name);
            s = cr_st_add_tensor(w, name, CR_ST_F32, t->ndim, shape, bufs[k] + t->offset);
        }
    if (s == CUDARL_OK) s = cr_st_write_atomic(w, path);
    free(w);
    return s;
}

static cudarl_status dqn_loop(cr_dqn *d) {
    const cudarl_dqn_config *c = &d->cfg;
    int64_t iteration = 0, log_every = c->total_timesteps / 200 > d->N ? c->total_timesteps / 200 : d->N;
    int64_t next_log = log_every;
    d->loop_start = cr_time_now();
    while (d->global_step < c->total_timesteps) {
        int64_t before = d->global_step;
        act_and_store(d);
        iteration++;
        if (d->global_step > c->learning_starts) {
            int64_t steps = d->global_step / c->train_frequency - before / c->train_frequency;
            for (int64_t k = 0; k < steps; k++) CR_TRY(train_step(d));
            if (d->global_step / c->target_network_frequency !=
                before / c->target_network_frequency)
                cr_cpu_polyak(d->target, d->online, d->layout.num_params, c->tau);
        }
        double m = cr_episode_log_recent_mean(d->log);
        if (d->solved_step < 0 && d->log->episodes >= CR_RECENT_EPISODES &&
            m >= d->env_info->solved_return) {
            d->solved_step = d->global_step;
            d->solved_seconds = cr_time_now() - d->loop_start;
            d->solved_unix = cr_time_unix();
        }
        if (d->global_step >= next_log || d->global_step >= c->total_timesteps) {
            log_row(d, iteration);
            next_log += log_every;
        }
        progress(d, 0);
    }
    return CUDARL_OK;
}

cudarl_status cudarl_dqn_train(cudarl_ctx *ctx, const cudarl_dqn_config *cfg,
                               cudarl_train_summary *summary) {
    cr_dqn *d = calloc(1, sizeof *d);
    if (!d) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory");
    cudarl_status s = dqn_init(d, ctx, cfg);
    if (s == CUDARL_OK)
        s = cr_run_open(d->cfg.runs_dir, d->cfg.run_name, sizeof d->cfg.run_name, d->cfg.env_id,
                        "dqn", d->cfg.seed, -1, dqn_csv_header, d->run_dir, sizeof d->run_dir,
                        &d->csv);
    if (s == CUDARL_OK) s = cr_tb_open(&d->tb, d->run_dir);
    d->tty = isatty(STDERR_FILENO);
    if (s == CUDARL_OK) {
        CR_INFO("training DQN on %s: %d env(s), buffer %lld, batch %d, %zu parameters, run %s",
                d->cfg.env_id, d->N, (long long)d->replay.spec.capacity, d->B,
                d->layout.num_params, d->run_dir);
        s = dqn_loop(d);
        progress(d, 1);
        if (s == CUDARL_OK) s = save(d);
        double secs = cr_time_now() - d->loop_start;
        if (summary) {
            memset(summary, 0, sizeof *summary);
            summary->global_step = summary->run_steps = d->global_step;
            summary->episodes = d->log->episodes;
            summary->mean_return_100 = cr_episode_log_recent_mean(d->log);
            summary->train_seconds = secs;
            summary->sps = secs > 0 ? (double)d->global_step / secs : 0;
            summary->solved_step = d->solved_step;
            summary->solved_seconds = d->solved_seconds;
            summary->solved_unix_time = d->solved_unix;
            summary->arena_bytes = (int64_t)d->mem.plan.total;
            snprintf(summary->run_dir, sizeof summary->run_dir, "%s", d->run_dir);
        }
    }
    if (d->csv) fclose(d->csv);
    cr_tb_close(&d->tb);
    if (d->mem.base) ctx->ops->arena_free(ctx, &d->mem);
    free(d);
    return s;
}
