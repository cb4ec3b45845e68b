/* PPO data parallel over the communicator (ops/comm.h; docs/multigpu.md): R ranks, each with
 * num_envs / R of the job's envs and a replica of the networks. A rank's envs are seeded as the
 * same envs of one process and its sampler draws their uniforms of the one-process stream, so
 * until the first update every rank's rollout is its slice of the one-process rollout. Each
 * rank shuffles its own T*N/R rows (its own shuffle stream; rank 0's is one process's) into
 * minibatches of mb/R rows; the gradients are averaged across ranks in rank order before the
 * clip and Adam, so the weights stay identical on every rank (checked every iteration). The
 * running normalizations take the job's rows of each step, gathered, as one process does.
 * On the CPU, over MPI: the MLP policy on the CPU env batch (CartPole-v1, the classic-control
 * envs) or on the env pool (envs on CPU threads: rank r's pool steps the job's envs r*N ..), and
 * the conv policies (minatar-cnn, nature-cnn, --separate-critic) on the env pool; their
 * gradients are averaged by the same call (cr_ppo_update_minibatch). On a GPU (dev_comm): the
 * MLP policy on CartPole-v1's CUDA batch, and the conv policies on the image envs' CUDA twins
 * (rank r's twin seeds the job's envs r*N .., its rollout skips the other ranks' words, the
 * network planned for the rank's batch sizes), the gradients averaged on the device over NCCL
 * (ops/comm.h hides which); --num-gpus 1 runs that exchange in a job of one rank, bit for bit a
 * plain run. */
#include <stdlib.h>
#include <string.h>

#include "algo/ppo/ppo_internal.h"
#include "algo/run.h"
#include "ops/comm.h"

/* What every rank sends once per reported iteration. */
typedef struct dist_part {
    cr_ppo_stats_acc acc;
    double value_stats[5];
    int64_t iter_episodes, recent_count; /* episodes ended this iteration; of them in recent */
    double iter_return_sum, iter_length_sum;
    double recent[CR_RECENT_EPISODES];   /* the newest recent_count returns, oldest first */
    uint64_t weights_hash;
    int32_t stop;
    int32_t pad;
} dist_part;

static cudarl_status refuse(const cr_ppo *p, const char *what) {
    if (p->dev_comm)
        return cr_fail(CUDARL_ERR_UNSUPPORTED, "%s, and this run is data parallel on GPUs (%s): "
                       "on a GPU it runs PPO with --policy mlp on CartPole-v1's CUDA env batch "
                       "or a conv policy (minatar-cnn, nature-cnn) on an image env's CUDA twin "
                       "(MinAtar's games, CartPolePixels-v1), not fp16, for now (docs/multigpu.md); "
                       "run it as one plain process, or drop the setting", what,
                       cr_comm_local_gpu_count() ? "--num-gpus" : "mpirun on --device cuda");
    return cr_fail(CUDARL_ERR_UNSUPPORTED, "%s, and this run is one of %d ranks (mpirun): "
                   "data-parallel training runs PPO on the CPU (--device cpu: the MLP policy on "
                   "the env batch or the env pool, the conv policies on the env pool) or on "
                   "GPUs over NCCL (--device cuda: --policy mlp on CartPole-v1's CUDA batch, "
                   "the conv policies on the image envs' CUDA twins) for now "
                   "(docs/multigpu.md); run it as one process, or drop the setting", what,
                   p->ranks);
}

cudarl_status cr_ppo_dist_init(cr_ppo *p) {
    const cudarl_ppo_config *c = &p->cfg;
    p->rank = cr_comm_rank(), p->ranks = cr_comm_size();
    p->world_N = p->N, p->world_batch = p->batch;
    p->dev_comm = p->ctx->kind == CUDARL_DEVICE_CUDA && cr_comm_dev_wanted();
    if (p->ranks == 1 && !p->dev_comm) return CUDARL_OK;
    const int R = p->ranks;
    if (p->dev_comm) { /* what the GPU path does not split yet */
        if (c->norm_obs || c->norm_reward)
            return refuse(p, "--norm-obs or --norm-reward is set (the job's statistics are "
                             "gathered on the host: the CPU path's)");
        if (!p->conv && !cr_ppo_pool_wanted(p) && p->env_info->batch != &cr_cartpole_batch)
            return refuse(p, "the env is not CartPole-v1 (another env's batch block is "
                             "gathered from host memory for the checkpoint)");
        if (p->cfg.learner_device >= 0 && p->cfg.learner_device != p->ctx->device_index)
            return refuse(p, "--learner-device names another GPU");
        /* the CPU runs this (below); a GPU's pool steps are not split and tested yet (a conv
         * policy on the GPU runs on its env's CUDA twin: p->twin_envs) */
        if (cr_ppo_pool_wanted(p))
            return refuse(p, "the envs step on CPU threads (--env-device cpu or an env without "
                             "a CUDA batch)");
    }
    if (cr_ppo_pool_wanted(p)) { /* the pool: a rank's share, seeded as one process's envs */
        if (cr_env_def_find(c->env_id)->vec_step)
            return refuse(p, "the env is a vector env (it seeds and steps its envs as a whole, "
                             "not a rank's share)");
        /* the normalizations gather the job's rows of a step at once (ppo_dist.c) */
        if ((c->norm_obs || c->norm_reward) && cr_ppo_pool_group_count(p) > 1)
            return cr_fail(CUDARL_ERR_INVALID_ARG, "--norm-obs / --norm-reward with --env-groups "
                           "%d on %d ranks: the ranks gather the job's observations and rewards "
                           "of a whole step, and the env pool's groups step apart; use "
                           "--env-groups 1 (the CPU's default)", cr_ppo_pool_group_count(p), R);
    }
    if (c->async) return refuse(p, "--async is set");
    /* on GPUs tf32 and bf16 change only the products (the gradients, their mean and Adam stay
     * fp32); fp16's loss scale skips steps, which would have to be the job's decision */
    if (c->precision == CUDARL_PRECISION_FP16 && p->dev_comm)
        return refuse(p, "--precision fp16 is set (its loss scale skips steps rank by rank)");
    if (c->precision != CUDARL_PRECISION_FP32 && !p->dev_comm)
        return refuse(p, "--precision is not fp32");
    if (c->num_envs % R != 0)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "--num-envs %d is the job's total, which its %d "
                       "ranks share equally, and %d does not divide it; pick a multiple of %d "
                       "(e.g. %d) or another rank count", c->num_envs, R, R, R,
                       (c->num_envs / R + 1) * R);
    const int64_t mb = (int64_t)p->batch / c->num_minibatches; /* the job's minibatch */
    if (mb % R != 0)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "the minibatch of %lld rows (--num-envs %d x "
                       "--num-steps %d / --num-minibatches %d) is split equally among %d ranks, "
                       "and %d does not divide it; pick --num-minibatches so that it does (the "
                       "rows per rank: num-envs x num-steps / (num-minibatches x %d))",
                       (long long)mb, c->num_envs, c->num_steps, c->num_minibatches, R, R, R);
    p->N = c->num_envs / R;
    p->batch = p->T * p->N;
    p->mb = p->batch / c->num_minibatches;
    if (p->dev_comm) return CUDARL_OK; /* dist_grads: in the arena (device memory) */
    p->dist_grads = malloc((size_t)R * p->num_params * sizeof(float));
    if (!p->dist_grads) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory for the "
                                       "ranks' gradients (%d x %zu floats)", R, p->num_params);
    memset(&p->world_log, 0, sizeof p->world_log);
    const size_t W = (size_t)c->num_envs;
    if (c->norm_obs) p->dist_obs = malloc(W * (size_t)p->D * sizeof(float));
    if (c->norm_reward) {
        p->dist_rew = malloc(2 * W * sizeof(float));
        p->dist_term = malloc(W);
    }
    if ((c->norm_obs && !p->dist_obs) || (c->norm_reward && (!p->dist_rew || !p->dist_term)))
        return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory for the job's observations "
                       "and rewards (--norm-obs, --norm-reward)");
    return CUDARL_OK;
}

void cr_ppo_dist_free(cr_ppo *p) {
    if (p->dev_comm) {
        cr_comm_dev_close(p->ctx);
        p->dist_grads = NULL; /* the arena's */
    }
    free(p->dist_grads), free(p->dist_obs), free(p->dist_rew), free(p->dist_term);
    p->dist_grads = p->dist_obs = p->dist_rew = NULL, p->dist_term = NULL;
}

void cr_ppo_dist_skip(cr_ppo *p, int64_t words) {
    CUDARL_ASSERT(words >= 0);
    if (words) p->ctx->ops->rng_skip(p->ctx, p->sampler, (uint64_t)words);
}

void cr_ppo_dist_mean_grads(cr_ppo *p) {
    cr_comm_dev_mean_f32(p->ctx, p->grads, p->dist_grads, p->num_params);
}

void cr_ppo_dist_obs_stats(cr_ppo *p, const float *obs) {
    cudarl_ctx *ctx = p->ctx; /* the CPU: obs and the statistics are host memory */
    cr_comm_allgather(obs, p->dist_obs, (size_t)p->N * (size_t)p->D * sizeof(float));
    ctx->ops->running_stats_update(ctx, p->obs_mean, p->obs_var, p->obs_count, p->dist_obs,
                                   p->world_N, p->D);
}

void cr_ppo_dist_norm_reward(cr_ppo *p, float *reward, const uint8_t *terminated, float clip) {
    cudarl_ctx *ctx = p->ctx;
    const size_t n = (size_t)p->N, W = (size_t)p->world_N;
    float *all = p->dist_rew, *out = p->dist_rew + W;
    cr_comm_allgather(reward, all, n * sizeof(float));
    cr_comm_allgather(terminated, p->dist_term, n);
    ctx->ops->normalize_reward(ctx, p->ret_mean, p->ret_var, p->ret_count, p->ret_acc, all,
                               p->dist_term, out, p->world_N, (float)p->cfg.gamma, clip);
    memcpy(reward, out + (size_t)p->rank * n, n * sizeof(float));
}

/* FNV-1a over 8-byte words of the weights and Adam's moments (a GPU's: copied to the host once per
 * reported iteration, the metrics pipe off, so that every rank hashes the same iteration's). */
static uint64_t weights_hash(cr_ppo *p) {
    uint64_t h = CR_COMM_FNV1A_START;
    const size_t bytes = p->num_params * sizeof(float);
    const float *arr[3] = {p->params, p->adam_m, p->adam_v};
    cudarl_ctx *ctx = p->ctx;
    float *host = ctx->kind == CUDARL_DEVICE_CPU ? NULL : cr_comm_host_alloc(bytes, "the weights' hash");
    for (int k = 0; k < 3; k++) {
        const float *a = arr[k];
        if (host) ctx->ops->copy_to_host(ctx, host, a, bytes), a = host;
        h = cr_comm_fnv1a_words(h, a, bytes);
    }
    free(host);
    return h;
}

void cr_ppo_dist_combine(cr_ppo *p) {
    const int R = p->ranks;
    const cr_episode_log *l = &p->h_metrics.log; /* this rank's */
    dist_part mine;
    memset(&mine, 0, sizeof mine);
    mine.acc = p->h_metrics.acc;
    memcpy(mine.value_stats, p->h_metrics.value_stats, sizeof mine.value_stats);
    mine.iter_episodes = l->iter_episodes;
    mine.iter_return_sum = l->iter_return_sum, mine.iter_length_sum = l->iter_length_sum;
    int64_t k = l->iter_episodes < CR_RECENT_EPISODES ? l->iter_episodes : CR_RECENT_EPISODES;
    mine.recent_count = k;
    for (int64_t j = 0; j < k; j++)
        mine.recent[j] = l->recent[(l->episodes - k + j) % CR_RECENT_EPISODES];
    mine.weights_hash = weights_hash(p);
    mine.stop = cr_stop_requested();
    dist_part *all = malloc((size_t)R * sizeof *all);
    CUDARL_ASSERT(all); /* a few KiB a rank */
    cr_comm_allgather(&mine, all, sizeof mine);

    cr_ppo_metrics *m = &p->h_metrics;
    memset(&m->acc, 0, sizeof m->acc);
    memset(m->value_stats, 0, sizeof m->value_stats);
    cr_episode_log *w = &p->world_log;
    w->iter_episodes = 0, w->iter_return_sum = 0, w->iter_length_sum = 0;
    int differ = -1;
    for (int r = 0; r < R; r++) { /* in rank order: the same sums on every rank */
        const dist_part *d = &all[r];
        for (int i = 0; i < 7; i++) m->acc.sum[i] += d->acc.sum[i];
        m->acc.count += d->acc.count;
        m->acc.grad_norm_sum += d->acc.grad_norm_sum; /* the same on every rank; so is count */
        m->acc.last_approx_kl += d->acc.last_approx_kl / R; /* the job's last minibatch's */
        for (int i = 0; i < 5; i++) m->value_stats[i] += d->value_stats[i];
        w->iter_episodes += d->iter_episodes;
        w->iter_return_sum += d->iter_return_sum, w->iter_length_sum += d->iter_length_sum;
        /* the returns that fell out of this rank's window were pushed before its newest ones,
         * so they are out of the job's window too: count them, push the newest */
        w->episodes += d->iter_episodes - d->recent_count;
        for (int64_t j = 0; j < d->recent_count; j++)
            w->recent[w->episodes++ % CR_RECENT_EPISODES] = d->recent[j];
        if (d->weights_hash != all[0].weights_hash && differ < 0) differ = r;
        if (d->stop) p->dist_stop = 1;
    }
    m->log = *w;
    if (differ >= 0 && !p->diverged) {
        p->diverged = 1;
        snprintf(p->diverged_why, sizeof p->diverged_why, "data parallel: after iteration %lld "
                 "rank %d's weights and Adam moments differ from rank 0's (hashes %016llx and "
                 "%016llx), which the same averaged gradients cannot cause: a rank ran another "
                 "build or config, or its memory was corrupted; the run stops without a "
                 "checkpoint of them; run every rank from the same cudarl and flags",
                 (long long)p->iteration, differ, (unsigned long long)all[differ].weights_hash,
                 (unsigned long long)all[0].weights_hash);
    }
    free(all);
}

double cr_ppo_dist_mean(cr_ppo *p, double v) {
    double all[64], *a = p->ranks <= 64 ? all : malloc((size_t)p->ranks * sizeof *a);
    CUDARL_ASSERT(a);
    cr_comm_allgather(&v, a, sizeof v);
    double s = 0;
    for (int r = 0; r < p->ranks; r++) s += a[r];
    if (a != all) free(a);
    return s / p->ranks;
}

int cr_ppo_dist_stop_requested(const cr_ppo *p) {
    return p->ranks > 1 ? p->dist_stop : cr_stop_requested();
}
