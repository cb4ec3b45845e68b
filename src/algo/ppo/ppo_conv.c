/* PPO's convolutional policy (--policy minatar-cnn | nature-cnn): CleanRL ppo_atari.py's Agent,
 * one `network` trunk with `actor` and `critic` linear heads on its features (nn/convnet.h),
 * over uint8 (C, H, W) observations stepped by the env pool on CPU threads (ppo_pool.c).
 *
 * Where the CPU and CUDA part: the network is the only piece with two implementations. On a
 * CPU context it is cr_convnet_forward / cr_convnet_backward on the arena's host memory; on a
 * CUDA context its twin cr_convnet_cuda (nn/convnet_cuda.h) on device memory, declared for the
 * batch sizes the loop uses: the pool's group sizes (each rollout step's forward), N (the last
 * values of a rollout) and mb (the update). Everything around it - sampling, GAE, the gathers,
 * the PPO loss, the gradient clip and Adam over the one flat parameter buffer - is the
 * backend's ops, the same calls as the MLP's.
 *
 * --separate-critic: two networks of the same spec, the actor's (its logits) and the critic's (its
 * value), each backward given zeros for the head whose output it does not serve.
 *
 * Memory: the observations stay uint8 from the env to the network, which converts a batch to
 * float inside its cache (x / 255 for nature-cnn, a cast for MinAtar's 0/1 channels): the
 * rollout holds (T, N, C, H, W) bytes, a quarter of float storage. The network's cache (its
 * activations for max(mb, N) rows) and the CUDA twin's workspace are two items of the
 * trainer's arena, sized here before it is allocated; nothing is allocated in the loop. */
#include <string.h>

#include "algo/ppo/ppo_internal.h"
#include "nn/precision.h"

/* Rows one cache serves: the update's minibatch and the rollout's N envs. */
static int cache_rows(const cr_ppo *p) { return p->mb > p->N ? p->mb : p->N; }

static size_t line_up(size_t n) { return (n + 255) / 256 * 256; }

cudarl_status cr_ppo_conv_plan(cr_ppo *p) {
    const cudarl_env_def *def = p->env_info->def;
    cr_convnet_spec spec;
    CR_TRY(cr_convnet_spec_named(&spec, p->cfg.policy, def->obs_shape[0], def->obs_shape[1],
                                 def->obs_shape[2], CR_CONVNET_PPO, p->A));
    CR_TRY(cr_convnet_plan(&p->cnn.net, &spec));
    p->cnn.separate = p->cfg.separate_critic != 0;
    p->num_params = p->cnn.net.num_params * (p->cnn.separate ? 2 : 1);
    return CUDARL_OK;
}

cudarl_status cr_ppo_conv_init(cr_ppo *p) {
    /* groups are even splits of N: floor(N / G) or ceil(N / G) envs (env_pool.h) */
    const int G = cr_ppo_pool_group_count(p);
    const int batches[4] = {p->N / G, (p->N + G - 1) / G, p->N, p->mb};
    CR_TRY(cr_cnn_init(&p->cnn.actor, p->ctx, &p->cnn.net, batches, 4, p->cfg.precision));
    cr_ppo_start_part(p, "the policy's network: its plans, the libraries' handles");
    if (p->cnn.separate) { /* the critic's own network: its own workspace (im2col kept) */
        CR_TRY(cr_ctx_branch_open(p->ctx, &p->cnn.branch));
        cudarl_ctx *cc = cr_ctx_branch_of(p->ctx, &p->cnn.branch);
        if (cc != p->ctx) { /* the branch's products in the run's format too */
            int changed;
            CR_TRY(cr_precision_apply(cc, p->cfg.precision, &changed));
        }
        CR_TRY(cr_cnn_init(&p->cnn.critic, cc, &p->cnn.net, batches, 4, p->cfg.precision));
        cr_ppo_start_part(p, "the critic's network (--separate-critic)");
    }
    if (cr_cnn_on_gpu(&p->cnn.actor)) {
        CR_INFO("PPO: %s on the GPU, conv engine %s%s", p->cfg.policy,
                cr_cnn_engine_name(&p->cnn.actor),
                p->cnn.separate ? ", the critic on a network of its own" : "");
        CR_DEBUG("%s", cr_cnn_describe(&p->cnn.actor));
    }
    return CUDARL_OK;
}

void cr_ppo_conv_free(cr_ppo *p) {
    cr_cnn_free(&p->cnn.actor);
    cr_cnn_free(&p->cnn.critic);
    cr_ctx_branch_close(p->ctx, &p->cnn.branch);
}

/* --separate-critic's items after the two caches: spare_logits, spare_value, zero_dlogits,
 * zero_dvalue (bytes, in that order, each on its own 256-byte line). */
static void separate_items(const cr_ppo *p, size_t bytes[4]) {
    const size_t rows = (size_t)cache_rows(p), A = (size_t)p->A, mb = (size_t)p->mb;
    bytes[0] = line_up(rows * A * sizeof(float)), bytes[1] = line_up(rows * sizeof(float));
    bytes[2] = line_up(mb * A * sizeof(float)), bytes[3] = line_up(mb * sizeof(float));
}

size_t cr_ppo_conv_cache_bytes(const cr_ppo *p) {
    const size_t one = cr_cnn_cache_bytes(&p->cnn.actor, cache_rows(p));
    if (!p->cnn.separate) return one;
    size_t it[4];
    separate_items(p, it);
    return 2 * line_up(one) + it[0] + it[1] + it[2] + it[3];
}

size_t cr_ppo_conv_workspace_bytes(const cr_ppo *p) {
    const size_t actor = cr_cnn_workspace_bytes(&p->cnn.actor);
    if (!p->cnn.separate) return actor;
    return line_up(actor) + cr_cnn_workspace_bytes(&p->cnn.critic);
}

/* Points one network's cache (and its workspace) into the arena's items. */
static void carve_net(cr_ppo *p, cr_cnn *net, void *cache, void *workspace, cr_convnet_cache *c) {
    cr_cnn_cache_carve(net, cache, cache_rows(p), c);
    cr_cnn_set_workspace(net, workspace);
}

void cr_ppo_conv_carve(cr_ppo *p, void *cache, void *workspace) {
    carve_net(p, &p->cnn.actor, cache, workspace, &p->cnn.cache);
    if (!p->cnn.separate) return;
    char *c = (char *)cache + line_up(cr_cnn_cache_bytes(&p->cnn.actor, cache_rows(p)));
    char *w = workspace ? (char *)workspace + line_up(cr_cnn_workspace_bytes(&p->cnn.actor))
                        : NULL;
    carve_net(p, &p->cnn.critic, c, w, &p->cnn.cache_critic);
    c += line_up(cr_cnn_cache_bytes(&p->cnn.critic, cache_rows(p)));
    size_t it[4];
    separate_items(p, it);
    p->cnn.spare_logits = (float *)c, c += it[0];
    p->cnn.spare_value = (float *)c, c += it[1];
    p->cnn.zero_dlogits = (float *)c, c += it[2];
    p->cnn.zero_dvalue = (float *)c;
    p->ctx->ops->zero(p->ctx, p->cnn.zero_dlogits, it[2] + it[3]);
}

void cr_ppo_conv_init_params(const cr_ppo *p, float *params, cr_philox_state *rng) {
    cr_convnet_init_params(&p->cnn.net, params, rng);
    if (p->cnn.separate) /* the critic's network: its own draws, after the actor's */
        cr_convnet_init_params(&p->cnn.net, params + p->cnn.net.num_params, rng);
}

void cr_ppo_conv_forward(cr_ppo *p, const float *params, const uint8_t *obs, float *logits,
                         float *value, int B) {
    cr_ppo_conv *c = &p->cnn;
    if (!c->separate) {
        cr_cnn_forward(p->ctx, &c->actor, params, obs, logits, value, &c->cache, B);
        return;
    }
    /* the logits from the actor's network, the value from the critic's (on the branch) */
    cr_ctx_branch_fork(p->ctx, &c->branch);
    cr_cnn_forward(cr_ctx_branch_of(p->ctx, &c->branch), &c->critic, params + c->net.num_params,
                   obs, c->spare_logits, value, &c->cache_critic, B);
    cr_cnn_forward(p->ctx, &c->actor, params, obs, logits, c->spare_value, &c->cache, B);
    cr_ctx_branch_join(p->ctx, &c->branch);
}

void cr_ppo_conv_backward(cr_ppo *p, const float *params, const float *dlogits,
                          const float *dvalue, int B) {
    cr_ppo_conv *c = &p->cnn;
    if (!c->separate) {
        cr_cnn_backward(p->ctx, &c->actor, params, p->grads, dlogits, dvalue, &c->cache, B);
        return;
    }
    /* each network gets only its own head's gradient: zeros for the other head */
    CUDARL_ASSERT(B <= p->mb);
    cr_ctx_branch_fork(p->ctx, &c->branch);
    cr_cnn_backward(cr_ctx_branch_of(p->ctx, &c->branch), &c->critic, params + c->net.num_params,
                    p->grads + c->net.num_params, c->zero_dlogits, dvalue, &c->cache_critic, B);
    cr_cnn_backward(p->ctx, &c->actor, params, p->grads, dlogits, c->zero_dvalue, &c->cache,
                    B);
    cr_ctx_branch_join(p->ctx, &c->branch);
}

void cr_ppo_conv_warm_up(cr_ppo *p) {
    if (!cr_cnn_on_gpu(&p->cnn.actor)) return;
    const int G = cr_ppo_pool_group_count(p);
    const int small[3] = {p->N / G, (p->N + G - 1) / G, p->N};
    for (int k = 0; k < 3; k++) /* the rollout's batches, into its per-step outputs */
        cr_ppo_conv_forward(p, p->params, p->cnn.obs, p->logits, p->last_values, small[k]);
    cr_ppo_conv_forward(p, p->params, p->cnn.mb_obs, p->mb_logits, p->mb_value, p->mb);
    cr_ppo_conv_backward(p, p->params, p->mb_dlogits, p->mb_dvalue, p->mb);
    p->ctx->ops->sync(p->ctx);
}

void cr_ppo_conv_minibatch_grads(cr_ppo *p, const int32_t *idx) {
    cudarl_ctx *ctx = p->ctx;
    const cr_backend *o = ctx->ops;
    const int mb = p->mb;
    /* the observation rows on their own: a CUDA gather_rows spreads a wide row over threads */
    o->gather_rows(ctx, p->cnn.obs, idx, p->cnn.mb_obs, mb, (size_t)p->D);
    const cr_gather_item rows[5] = {
        {p->actions, p->mb_act, sizeof(int32_t)}, {p->logp, p->mb_logp, sizeof(float)},
        {p->adv, p->mb_adv, sizeof(float)},       {p->returns, p->mb_ret, sizeof(float)},
        {p->values, p->mb_val, sizeof(float)},
    };
    o->gather_rows_many(ctx, idx, mb, 5, rows);
    cr_ppo_loss_params lp = {(float)p->cfg.clip_coef, (float)p->cfg.ent_coef,
                             (float)p->cfg.vf_coef, p->cfg.clip_vloss, p->cfg.norm_adv};
    cr_ppo_conv_forward(p, p->params, p->cnn.mb_obs, p->mb_logits, p->mb_value, mb);
    o->ppo_loss(ctx, p->mb_logits, p->mb_act, p->mb_logp, p->mb_adv, p->mb_value, p->mb_val,
                p->mb_ret, &lp, p->mb_dlogits, p->mb_dvalue, p->acc, mb, p->A);
    cr_amp_scale(ctx, &p->amp, p->mb_dlogits, (size_t)mb * p->A); /* fp16: times the scale */
    cr_amp_scale(ctx, &p->amp, p->mb_dvalue, (size_t)mb);
    cr_ppo_conv_backward(p, p->params, p->mb_dlogits, p->mb_dvalue, mb);
}

/* ---- envs on the GPU (their image twin) ------------------------------------------------- */

size_t cr_ppo_conv_twin_bytes(const cr_ppo *p) {
    size_t bytes = 0;
    if (p->twin_envs) CUDARL_ASSERT(cr_image_twin_bytes(p->cfg.env_id, p->N, &bytes) == CUDARL_OK);
    return bytes;
}

int cr_ppo_conv_keeps_truncated(const cr_ppo *p) {
    const int limit = p->env_info->def->max_episode_steps;
    return p->conv && p->twin_envs && limit > 0 && p->T <= limit;
}

/* The pool's schedule with one group (ppo_pool.c: act, then the step's outputs), every op on the
 * device: the same uniforms, forwards of N rows and sampling, so the same seed gives the pool's
 * trajectories and weights. V(final obs) is needed only where an env was truncated (GAE masks
 * the other rows, which must only be finite). With a time limit no shorter than the rollout
 * (cr_ppo_conv_keeps_truncated: each env truncated at most once in it) the truncated envs' final
 * observations are kept in row i of kept_obs as the steps go, and valued by one forward of N rows
 * after the rollout: the same rows of a batch of N as a forward at their step, so the same values,
 * for one forward where there were T; the other rows of final_values are zeros. Otherwise (a
 * rollout longer than the time limit) every step's N final observations are valued; MinAtar's
 * episodes only terminate, so there is no such forward at all. */
void cr_ppo_conv_rollout_twin(cr_ppo *p) {
    cudarl_ctx *ctx = p->ctx;
    const cr_backend *o = ctx->ops;
    const size_t N = (size_t)p->N, D = (size_t)p->D;
    const int truncates = cr_image_twin_truncates(&p->twin);
    const int keep = truncates && cr_ppo_conv_keeps_truncated(p);
    if (keep) o->zero(ctx, p->final_values, (size_t)p->T * N * sizeof(float));
    for (int t = 0; t < p->T; t++) {
        const size_t r = (size_t)t * N;
        uint8_t *obs = p->cnn.obs + r * D;
        o->copy(ctx, obs, p->cnn.cur_obs, N * D);
        cr_ppo_part(p, CR_PART_FORWARD); /* --profile's marks: no-ops without it */
        cr_ppo_conv_forward(p, p->act_params, obs, p->logits, p->values + r, p->N);
        /* data parallel: this rank's envs' words of the job's draw (cr_ppo_sample's skips) */
        if (p->ranks > 1) cr_ppo_dist_skip(p, (int64_t)p->rank * p->N);
        o->uniform(ctx, p->sampler, p->u, p->N);
        if (p->ranks > 1) cr_ppo_dist_skip(p, (int64_t)(p->ranks - 1 - p->rank) * p->N);
        o->categorical_sample(ctx, p->logits, p->u, p->actions + r, p->logp + r, p->N, p->A);
        cr_ppo_part(p, CR_PART_ENV);
        cr_image_twin_step(ctx, &p->twin, p->actions + r, p->cnn.cur_obs, p->rewards + r,
                           p->terminated + r, p->truncated + r, p->done + r, p->cnn.final_obs);
        if (keep) {
            cr_ppo_part(p, CR_PART_NONE);
            o->keep_rows(ctx, p->cnn.final_obs, p->truncated + r, p->cnn.kept_obs,
                         p->cnn.kept_step, t + 1, p->N, D);
        } else if (truncates) { /* the logits serve as the actor's scratch (sampled from) */
            cr_ppo_part(p, CR_PART_FORWARD);
            cr_ppo_conv_forward(p, p->act_params, p->cnn.final_obs, p->logits,
                                p->final_values + r, p->N);
        }
        cr_ppo_part(p, CR_PART_NONE);
        o->episodes_record(ctx, p->rewards + r, p->done + r, p->ep_return, p->ep_length, p->log,
                           p->N);
        cr_ppo_count_rows(p, truncates && !keep ? 2 * p->N : p->N);
    }
    cr_ppo_part(p, CR_PART_FORWARD);
    cr_ppo_conv_forward(p, p->act_params, p->cnn.cur_obs, p->logits, p->last_values, p->N);
    if (keep) { /* rows never truncated give values nobody reads */
        cr_ppo_conv_forward(p, p->act_params, p->cnn.kept_obs, p->logits, p->cnn.kept_values,
                            p->N);
        cr_ppo_part(p, CR_PART_NONE);
        o->place_values(ctx, p->cnn.kept_values, p->cnn.kept_step, p->final_values, p->N);
    }
    cr_ppo_part(p, CR_PART_NONE);
    cr_ppo_count_rows(p, keep ? 2 * p->N : p->N);
}
