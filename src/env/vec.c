/* cudarl_vec (cudarl.h): a batch for an outside learner. On a GPU's context, the env batch's
 * CUDA twin (CR_ENV_BATCH_CUDA) or the env's image twin (CR_ENV_IMAGE_TWIN: MinAtar's games,
 * CartPolePixels-v1) stepping device memory where the env has one; else the env pool on CPU
 * threads into host buffers of the context. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "env/env.h"
#include "env/env_pool.h"
#include "env/image_twin.h"

struct cudarl_vec {
    cudarl_ctx *ctx;
    const cr_env_info *info;
    int n;
    int on_device;          /* the env batch in backend memory of a CUDA context */
    int on_twin;            /* the image twin in backend memory of a CUDA context */
    cr_env_batch batch;     /* on_device */
    cr_image_twin twin;     /* on_twin */
    cr_env_pool pool;       /* otherwise */
    int pool_ready;
    cr_arena arena;         /* on_device, on_twin: state and every array; else host buffers */
    void *host[7];          /* the pool's buffers: obs, reward, terminated, truncated,
                               final_obs, actions, done */
    cudarl_vec_buffers b;
    uint8_t *done;          /* the batch's done flags (on_device, on_twin) */
};

void cudarl_vec_free(cudarl_vec *v) {
    if (!v) return;
    if (v->pool_ready) cr_env_pool_free(&v->pool);
    for (int i = 0; i < 7; i++)
        if (v->host[i]) cr_host_buffer_free(v->ctx, v->host[i]);
    if (v->arena.base) v->ctx->ops->arena_free(v->ctx, &v->arena);
    free(v);
}

/* The batch on the device (the env batch's CUDA twin, or with on_twin the image twin): one arena
 * of the state and every array. */
static cudarl_status init_device(cudarl_vec *v) {
    const size_t n = (size_t)v->n, ob = cr_env_def_obs_bytes(v->info->def);
    size_t state_bytes = 0;
    if (v->on_twin) CR_TRY(cr_image_twin_bytes(v->info->id, v->n, &state_bytes));
    else state_bytes = cr_env_batch_bytes(v->info, v->n);
    cr_plan p;
    cr_plan_init(&p);
    cr_plan_add(&p, "vec.state", state_bytes);
    cr_plan_add(&p, "vec.obs", n * ob);
    cr_plan_add(&p, "vec.final_obs", n * ob);
    cr_plan_add(&p, "vec.reward", n * sizeof(float));
    cr_plan_add(&p, "vec.actions", n * cr_env_def_action_bytes(v->info->def));
    cr_plan_add(&p, "vec.terminated", n);
    cr_plan_add(&p, "vec.truncated", n);
    cr_plan_add(&p, "vec.done", n);
    CR_TRY(v->ctx->ops->arena_alloc(v->ctx, &v->arena, &p));
    if (v->on_twin)
        CR_TRY(cr_image_twin_init(&v->twin, v->info->id, v->n, cr_arena_get(&v->arena, 0)));
    else
        cr_env_batch_init(&v->batch, v->info, v->n, cr_arena_get(&v->arena, 0));
    v->b.obs = cr_arena_get(&v->arena, 1);
    v->b.final_obs = cr_arena_get(&v->arena, 2);
    v->b.reward = cr_arena_get(&v->arena, 3);
    v->b.actions = cr_arena_get(&v->arena, 4);
    v->b.terminated = cr_arena_get(&v->arena, 5);
    v->b.truncated = cr_arena_get(&v->arena, 6);
    v->done = cr_arena_get(&v->arena, 7);
    v->b.device = v->ctx->device_index;
    return CUDARL_OK;
}

/* The pool on CPU threads, its buffers host memory of the context (pinned on a GPU's). */
static cudarl_status init_pool(cudarl_vec *v, int threads) {
    const cudarl_env_def *def = v->info->def;
    const size_t n = (size_t)v->n, ob = cr_env_def_obs_bytes(def);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (threads <= 0) threads = cores > 0 ? (int)cores : 1;
    if (threads > v->n) threads = v->n;
    cr_env_pool_config pc = {.num_envs = v->n, .num_threads = threads, .num_groups = 1};
    CR_TRY(cr_env_pool_init(&v->pool, def, &pc, NULL));
    v->pool_ready = 1;
    const size_t bytes[7] = {n * ob, n * sizeof(float), n, n, n * ob,
                             n * cr_env_def_action_bytes(def), n};
    for (int i = 0; i < 7; i++) {
        CR_TRY(cr_host_buffer_alloc(v->ctx, &v->host[i], bytes[i]));
        memset(v->host[i], 0, bytes[i]);
    }
    v->b.obs = v->host[0], v->b.reward = v->host[1], v->b.terminated = v->host[2];
    v->b.truncated = v->host[3], v->b.final_obs = v->host[4], v->b.actions = v->host[5];
    v->b.device = -1;
    const cr_env_pool_outputs out = {v->b.obs, v->b.reward, v->b.terminated, v->b.truncated,
                                     v->b.final_obs};
    cr_env_pool_set_outputs(&v->pool, &out);
    return CUDARL_OK;
}

cudarl_status cudarl_vec_create(cudarl_ctx *ctx, const char *id, int num_envs, int threads,
                                cudarl_vec **out) {
    CR_REQUIRE(ctx && out, "cudarl_vec_create: ctx and out must not be NULL");
    *out = NULL;
    const cr_env_info *info = id ? cr_env_info_find(id) : NULL;
    CR_TRY(cr_env_check_built(id, "cudarl_vec_create: "));
    CR_REQUIRE(info, "cudarl_vec_create: no env '%.64s' is registered; `cudarl info` lists them",
               id ? id : "(null)");
    CR_REQUIRE(!info->def->vec_step, "cudarl_vec_create: '%s' is a vector env, which steps "
               "itself; step it directly", id);
    CR_REQUIRE(num_envs >= 1 && num_envs <= (1 << 20), "cudarl_vec_create: num_envs is %d; use "
               "1 .. 1048576", num_envs);
    CR_REQUIRE(threads >= 0 && threads <= 1024, "cudarl_vec_create: threads is %d; use 0 (all "
               "cores) .. 1024", threads);
    cudarl_vec *v = calloc(1, sizeof *v);
    if (!v) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "cudarl_vec_create: out of host memory");
    v->ctx = ctx, v->info = info, v->n = num_envs;
    const int gpu = ctx->kind == CUDARL_DEVICE_CUDA;
    v->on_device = gpu && (info->caps & CR_ENV_BATCH_CUDA);
    v->on_twin = gpu && !v->on_device && (info->caps & CR_ENV_IMAGE_TWIN);
    cudarl_status s = v->on_device || v->on_twin ? init_device(v) : init_pool(v, threads);
    if (s != CUDARL_OK) {
        cudarl_vec_free(v);
        return s;
    }
    *out = v;
    return CUDARL_OK;
}

void cudarl_vec_get_buffers(const cudarl_vec *v, cudarl_vec_buffers *b) { *b = v->b; }

cudarl_status cudarl_vec_reset(cudarl_vec *v, uint64_t seed) {
    if (v->on_twin) {
        cr_image_twin_reset(v->ctx, &v->twin, seed, v->b.obs);
        v->ctx->ops->sync(v->ctx);
    } else if (v->on_device) {
        cr_env_batch_reset(v->ctx, &v->batch, seed, v->b.obs);
        v->ctx->ops->sync(v->ctx);
    } else {
        cr_env_pool_reset(&v->pool, seed);
    }
    return CUDARL_OK;
}

cudarl_status cudarl_vec_step(cudarl_vec *v) {
    if (v->on_twin) {
        cr_image_twin_step(v->ctx, &v->twin, v->b.actions, v->b.obs, v->b.reward,
                           v->b.terminated, v->b.truncated, v->done, v->b.final_obs);
        v->ctx->ops->sync(v->ctx);
        return CUDARL_OK;
    }
    if (v->on_device) {
        cr_env_batch_step(v->ctx, &v->batch, v->b.actions, v->b.obs, v->b.reward,
                          v->b.terminated, v->b.truncated, v->done, v->b.final_obs);
        v->ctx->ops->sync(v->ctx);
        return CUDARL_OK;
    }
    const int K = v->info->action_dim;
    if (K > 0) { /* clipped into the box by the pool; a NaN has no place in it */
        const float *a = v->b.actions;
        for (size_t i = 0; i < (size_t)v->n * (size_t)K; i++)
            CR_REQUIRE(a[i] == a[i], "cudarl_vec_step: dim %zu of env %zu's action is NaN; "
                       "write numbers (they are clipped into the env's box)", i % (size_t)K,
                       i / (size_t)K);
    } else {
        const int32_t *a = v->b.actions;
        for (int i = 0; i < v->n; i++)
            CR_REQUIRE(a[i] >= 0 && a[i] < v->info->num_actions, "cudarl_vec_step: action %d of "
                       "env %d is outside 0 .. %d", (int)a[i], i, v->info->num_actions - 1);
    }
    cr_env_pool_step(&v->pool, v->b.actions);
    return CUDARL_OK;
}
