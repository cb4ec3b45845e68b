/* DQN data parallel over the communicator (ops/comm.h; docs/multigpu.md): R ranks, each with
 * num_envs / R of the job's envs, a replay shard of buffer_size / R rows and a replica of the
 * networks. A rank's envs are seeded as the same envs of one process and its epsilon-greedy
 * draws are their uniforms of the one-process stream, so until the first train step every
 * rank's transitions are its slice of one process's. A train step samples batch_size / R rows
 * of the rank's own shard (its own sampling stream; rank 0's is one process's); the gradients
 * are averaged across ranks in rank order before Adam, so the weights stay identical on every
 * rank (compared at every log row). The CPU path only: the MLP or a conv Q-network
 * (minatar-cnn, nature-cnn on uint8 frames), on the CPU env batch or the env pool (CPU threads:
 * rank r's pool steps the job's envs r*N .., its first_env), uniform replay, fp32. */
#include <stdlib.h>
#include <string.h>

#include "algo/dqn/dqn_internal.h"
#include "ops/comm.h"

/* What every rank sends after every iteration. */
typedef struct dist_part {
    cr_dqn_stats_acc acc;
    int64_t new_episodes, recent_count; /* episodes ended since the last combine; of them sent */
    double iter_return_sum, iter_length_sum; /* since the last log row */
    int64_t iter_episodes;
    double recent[CR_RECENT_EPISODES];  /* the newest recent_count returns, oldest first */
    uint64_t weights_hash;
    int32_t stop;
    int32_t pad;
} dist_part;

static cudarl_status refuse(const cr_dqn *d, const char *what) {
    return cr_fail(CUDARL_ERR_UNSUPPORTED, "%s, and this run is one of %d ranks (mpirun): "
                   "data-parallel DQN runs on the CPU (--device cpu: the MLP or a conv "
                   "Q-network, on the env batch or the env pool) with uniform replay in fp32 "
                   "for now (docs/multigpu.md); run it as one process, or drop the setting", what,
                   d->ranks);
}

cudarl_status cr_dqn_dist_init(cr_dqn *d) {
    const cudarl_dqn_config *c = &d->cfg;
    d->rank = cr_comm_rank(), d->ranks = cr_comm_size();
    d->world_N = d->N, d->world_B = d->B, d->buffer = c->buffer_size;
    if (d->ranks == 1) return CUDARL_OK;
    const int R = d->ranks;
    if (d->ctx->kind != CUDARL_DEVICE_CPU)
        return refuse(d, "the context is a GPU (data parallel on GPUs, over NCCL, is the next "
                         "step; use --device cpu)");
    if (d->where == CR_DQN_ENVS_POOL && d->env_info->def->vec_step)
        return refuse(d, "the env is a vector env (it seeds and steps its envs as a whole, not "
                         "a rank's share)");
    if (c->prioritized) return refuse(d, "--prioritized is set");
    if (c->precision != CUDARL_PRECISION_FP32) return refuse(d, "--precision is not fp32");
    if (c->num_envs % R != 0)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "--num-envs %d is the job's total, which its %d "
                       "ranks share equally, and %d does not divide it; pick a multiple of %d "
                       "(e.g. %d) or another rank count", c->num_envs, R, R, R,
                       (c->num_envs / R + 1) * R);
    if (c->batch_size % R != 0)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "--batch-size %d is the job's minibatch, which "
                       "its %d ranks sample equally from their replay shards, and %d does not "
                       "divide it; pick a multiple of %d (e.g. %d) or another rank count",
                       c->batch_size, R, R, R, (c->batch_size / R + 1) * R);
    if (c->buffer_size % R != 0)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "--buffer-size %lld is the job's replay, which "
                       "its %d ranks hold in equal shards, and %d does not divide it; pick a "
                       "multiple of %d (e.g. %lld) or another rank count",
                       (long long)c->buffer_size, R, R, R,
                       (long long)((c->buffer_size / R + 1) * R));
    d->N = c->num_envs / R;
    d->B = c->batch_size / R;
    d->rows = d->B > d->N ? d->B : d->N;
    d->buffer = c->buffer_size / R;
    if (d->buffer < d->N)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "--buffer-size %lld gives each of the %d ranks a "
                       "shard of %lld rows, fewer than its %d envs; raise --buffer-size to at "
                       "least %lld", (long long)c->buffer_size, R, (long long)d->buffer, d->N,
                       (long long)c->num_envs);
    d->dist_grads = malloc((size_t)R * d->net.num_params * sizeof(float));
    if (!d->dist_grads) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory for the "
                                       "ranks' gradients (%d x %zu floats)", R, d->net.num_params);
    memset(&d->world_log, 0, sizeof d->world_log);
    d->dist_seen = 0;
    return CUDARL_OK;
}

void cr_dqn_dist_free(cr_dqn *d) {
    free(d->dist_grads);
    d->dist_grads = NULL;
}

void cr_dqn_dist_skip(cr_dqn *d, int64_t words) {
    CUDARL_ASSERT(d->ctx->kind == CUDARL_DEVICE_CPU && words >= 0); /* host memory */
    d->s->explore.offset += (uint64_t)words;
}

void cr_dqn_dist_mean_grads(cr_dqn *d) {
    cr_comm_mean_f32(d->grads, d->dist_grads, d->net.num_params);
}

/* FNV-1a over the bytes of the weights, the target and Adam's moments. */
static uint64_t weights_hash(const cr_dqn *d) {
    uint64_t h = CR_COMM_FNV1A_START;
    const float *arr[4] = {d->online, d->target, d->adam_m, d->adam_v};
    for (int k = 0; k < 4; k++) h = cr_comm_fnv1a(h, arr[k], d->net.num_params * sizeof(float));
    return h;
}

void cr_dqn_dist_combine(cr_dqn *d, int log) {
    const int R = d->ranks;
    const cr_episode_log *l = &d->h.log; /* this rank's */
    dist_part mine;
    memset(&mine, 0, sizeof mine);
    mine.acc = d->h.acc;
    mine.new_episodes = l->episodes - d->dist_seen;
    int64_t k = mine.new_episodes < CR_RECENT_EPISODES ? mine.new_episodes : CR_RECENT_EPISODES;
    mine.recent_count = k;
    for (int64_t j = 0; j < k; j++)
        mine.recent[j] = l->recent[(l->episodes - k + j) % CR_RECENT_EPISODES];
    d->dist_seen = l->episodes;
    mine.iter_episodes = l->iter_episodes;
    mine.iter_return_sum = l->iter_return_sum, mine.iter_length_sum = l->iter_length_sum;
    mine.weights_hash = log ? weights_hash(d) : 0;
    mine.stop = cr_stop_requested();
    dist_part *all = malloc((size_t)R * sizeof *all);
    CUDARL_ASSERT(all); /* a few KiB a rank */
    cr_comm_allgather(&mine, all, sizeof mine);

    cr_dqn_stats_acc *acc = &d->h.acc;
    memset(acc, 0, sizeof *acc);
    cr_episode_log *w = &d->world_log;
    w->iter_episodes = 0, w->iter_return_sum = 0, w->iter_length_sum = 0;
    int differ = -1;
    for (int r = 0; r < R; r++) { /* in rank order: the same sums on every rank */
        const dist_part *p = &all[r];
        /* each rank's loss is the mean of its B / R rows: the job's is the mean of theirs */
        acc->loss_sum += p->acc.loss_sum / R, acc->q_sum += p->acc.q_sum / R;
        acc->td_abs_sum += p->acc.td_abs_sum / R;
        acc->last_loss += p->acc.last_loss / R;
        acc->count = p->acc.count; /* the same on every rank */
        w->iter_episodes += p->iter_episodes;
        w->iter_return_sum += p->iter_return_sum, w->iter_length_sum += p->iter_length_sum;
        /* episodes of one step end in env order, which is rank order: the job's window */
        w->episodes += p->new_episodes - p->recent_count;
        for (int64_t j = 0; j < p->recent_count; j++)
            w->recent[w->episodes++ % CR_RECENT_EPISODES] = p->recent[j];
        if (log && p->weights_hash != all[0].weights_hash && differ < 0) differ = r;
        if (p->stop) d->dist_stop = 1;
    }
    d->h.log = *w;
    if (differ >= 0 && !d->diverged) {
        d->diverged = 1;
        snprintf(d->diverged_why, sizeof d->diverged_why, "data parallel: at step %lld rank "
                 "%d's weights, target and Adam moments differ from rank 0's (hashes %016llx "
                 "and %016llx), which the same averaged gradients cannot cause: a rank ran "
                 "another build or config, or its memory was corrupted; the run stops without "
                 "a checkpoint of them; run every rank from the same cudarl and flags",
                 (long long)d->global_step, differ,
                 (unsigned long long)all[differ].weights_hash,
                 (unsigned long long)all[0].weights_hash);
    }
    free(all);
}
