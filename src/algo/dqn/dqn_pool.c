/* DQN's envs on CPU threads (dqn_internal.h): the env pool stepping synchronously into pinned
 * buffers, actions to the host behind an event, outputs back as asynchronous copies. */
#include "algo/dqn/dqn_internal.h"

/* Pool hook: the threads wait for the event after which the actions are on the host. */
static void pool_before_step(void *arg, int group) {
    cr_dqn_pool *p = arg;
    p->ctx->ops->event_wait(p->ctx, p->event);
}

void cr_dqn_pool_free(cr_dqn *d) {
    cr_dqn_pool *p = d->pool;
    if (!p) return;
    cudarl_ctx *ctx = d->ctx;
    if (p->pool.lanes) cr_env_pool_free(&p->pool);
    if (p->event) ctx->ops->event_free(ctx, p->event);
    void *bufs[] = {p->obs, p->final_obs, p->reward, p->terminated, p->truncated, p->done,
                     p->actions};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) cr_host_buffer_free(ctx, bufs[i]);
    free(p);
    d->pool = NULL;
}

/* The pool of N envs on env_threads threads (one group: the synchronous schedule) and its
 * pinned buffers. */
cudarl_status cr_dqn_pool_init(cr_dqn *d) {
    cudarl_ctx *ctx = d->ctx;
    cr_dqn_pool *p = calloc(1, sizeof *p);
    if (!p) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory for the env pool");
    d->pool = p;
    p->ctx = ctx;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = d->cfg.env_threads > 0 ? d->cfg.env_threads : (int)(cores > 0 ? cores : 1);
    if (threads > d->N) threads = d->N; /* a thread beyond one per env would only idle */
    /* data parallel: env i is the job's env rank*N + i, seeded as one process seeds it */
    cr_env_pool_config pc = {.num_envs = d->N, .num_threads = threads, .num_groups = 1,
                             .first_env = (int64_t)d->rank * d->N};
    size_t N = (size_t)d->N, ob = d->obs_bytes;
    cudarl_status s = cr_env_pool_init(&p->pool, d->env_info->def, &pc, NULL);
    if (s == CUDARL_OK) s = cr_host_buffer_alloc(ctx, &p->obs, N * ob);
    if (s == CUDARL_OK) s = cr_host_buffer_alloc(ctx, &p->final_obs, N * ob);
    if (s == CUDARL_OK) s = cr_host_buffer_alloc(ctx, (void **)&p->reward, N * sizeof(float));
    if (s == CUDARL_OK) s = cr_host_buffer_alloc(ctx, (void **)&p->terminated, N);
    if (s == CUDARL_OK) s = cr_host_buffer_alloc(ctx, (void **)&p->truncated, N);
    if (s == CUDARL_OK) s = cr_host_buffer_alloc(ctx, (void **)&p->done, N);
    if (s == CUDARL_OK) s = cr_host_buffer_alloc(ctx, (void **)&p->actions, N * sizeof(int32_t));
    if (s == CUDARL_OK && ctx->ops->event_create) {
        s = ctx->ops->event_create(ctx, &p->event);
        if (s == CUDARL_OK) cr_env_pool_set_hook(&p->pool, 0, pool_before_step, p);
    }
    if (s != CUDARL_OK) return s; /* dqn_free releases what was made */
    cr_env_pool_outputs out = {p->obs, p->reward, p->terminated, p->truncated, p->final_obs};
    cr_env_pool_set_outputs(&p->pool, &out);
    CR_INFO("envs on the CPU: %d x %s on %d thread%s", d->N, d->env_info->id, threads,
            threads == 1 ? "" : "s");
    return CUDARL_OK;
}

/* Steps every env of the pool with the actions on the device: the actions to the host (behind
 * an event the threads wait for), the step, then the outputs back, in next_obs, rewards, term,
 * trunc, done, final_obs (asynchronous copies from pinned memory: the next step's threads wait
 * for an event recorded after them). */
void cr_dqn_pool_step(cr_dqn *d) {
    cr_dqn_pool *p = d->pool;
    cudarl_ctx *ctx = d->ctx;
    const cr_backend *o = d->o;
    size_t N = (size_t)d->N;
    if (o->copy_to_host_async) o->copy_to_host_async(ctx, p->actions, d->actions, N * 4);
    else o->copy_to_host(ctx, p->actions, d->actions, N * 4);
    if (p->event) o->event_record(ctx, p->event);
    CR_RANGE_PUSH("env pool step");
    cr_env_pool_step(&p->pool, p->actions);
    CR_RANGE_POP();
    for (size_t i = 0; i < N; i++) p->done[i] = p->terminated[i] | p->truncated[i];
    o->copy_from_host(ctx, d->next_obs, p->obs, N * d->obs_bytes);
    o->copy_from_host(ctx, d->rewards, p->reward, N * sizeof(float));
    o->copy_from_host(ctx, d->term, p->terminated, N);
    o->copy_from_host(ctx, d->trunc, p->truncated, N);
    o->copy_from_host(ctx, d->done, p->done, N);
    o->copy_from_host(ctx, d->final_obs, p->final_obs, N * d->obs_bytes);
}
