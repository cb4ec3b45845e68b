/* The five MinAtar games on the GPU (minatar_cuda.cu) against their CPU defs stepped by the env
 * pool (the specification, held against the minatar package by test_minatar_ref). For each game,
 * N = 257 envs (not a multiple of any block size, so a partial block runs) get the same seed and
 * the same random actions on both sides for 2,600 steps (past Freeway's fixed 2,501-step
 * episodes, so every game ends and autoresets episodes), and at every step these must be the same
 * bytes: obs, reward, terminated, truncated, done, and the whole final_obs buffer (both start
 * from the same sentinel bytes, so rows of envs that did not end must stay untouched). After the
 * reset and at the end, every env's state struct (its Philox stream included) and step count
 * must be identical too. A second, shorter run per game with a time limit of 37 steps on both
 * sides exercises truncation (and both flags at once where an episode terminates on its 37th
 * step). The last 200 steps of each first run (Freeway's episode ends among them) replay one
 * step captured into a CUDA graph, the trainers' way, with the actions copied in before each
 * replay. There is no tolerance: the games are integer arithmetic and exact comparisons of exact
 * doubles. Needs a GPU (ctest label gpu) and fails saying so when there is none. */
#include <cuda_runtime_api.h>
#include <string.h>

#include "check.h"
#include "core/core.h"
#include "env/env.h"
#include "env/env_pool.h"
#include "env/minatar/minatar.h"
#include "env/minatar/minatar_cuda.h"
#include "ops/backend.h"

#define N 257
#define STEPS 2600       /* > 2501: Freeway's episodes end too */
#define LIMITED_STEPS 300
#define GRAPH_STEPS 200  /* the last steps of each game's first run replay a CUDA graph */
#define TIME_LIMIT 37
#define MAX_OBS 1000     /* bytes of the largest observation (Seaquest's 10 x 10 x 10) */
#define SENTINEL 0xA5    /* fills final_obs rows that must stay untouched */
#define NO_DONE 0xAB     /* fills done on the steps that pass done = NULL */

#define CHECK_CUDA(expr)                                                                      \
    do {                                                                                      \
        cudaError_t e_ = (expr);                                                              \
        CHECK_MSG(e_ == cudaSuccess, "%s: %s", cudaGetErrorName(e_), cudaGetErrorString(e_)); \
    } while (0)

static const char *const ids[] = {"MinAtar/Breakout-v1", "MinAtar/Asterix-v1",
                                  "MinAtar/Freeway-v1", "MinAtar/Seaquest-v1",
                                  "MinAtar/SpaceInvaders-v1"};
#define NUM_GAMES ((int)(sizeof ids / sizeof ids[0]))

/* Step outputs of one side: host memory for the CPU pool, device memory for the GPU, and a host
 * mirror the GPU's are copied into. */
typedef struct outputs {
    int32_t *actions;    /* (N) */
    uint8_t *obs;        /* (N, C, 10, 10) */
    float *reward;       /* (N) */
    uint8_t *terminated; /* (N) */
    uint8_t *truncated;  /* (N) */
    uint8_t *done;       /* (N), GPU only */
    uint8_t *final_obs;  /* (N, C, 10, 10) */
    int32_t *elapsed;    /* (N), host mirror only */
} outputs;

/* What one run saw. */
typedef struct tally {
    long terminated, truncated, both;
    double reward;
} tally;

/* Carves the outputs for observations of ob bytes out of one block of `plan`'s size at base. */
static void outputs_plan(cr_plan *p, size_t ob, int idx[8]) {
    cr_plan_init(p);
    idx[0] = cr_plan_add(p, "actions", N * sizeof(int32_t));
    idx[1] = cr_plan_add(p, "obs", N * ob);
    idx[2] = cr_plan_add(p, "reward", N * sizeof(float));
    idx[3] = cr_plan_add(p, "terminated", N);
    idx[4] = cr_plan_add(p, "truncated", N);
    idx[5] = cr_plan_add(p, "done", N);
    idx[6] = cr_plan_add(p, "final_obs", N * ob);
    idx[7] = cr_plan_add(p, "elapsed", N * sizeof(int32_t));
}

static void outputs_point(outputs *o, const cr_plan *p, const int idx[8], unsigned char *base) {
    o->actions = (int32_t *)(base + p->offsets[idx[0]]);
    o->obs = base + p->offsets[idx[1]];
    o->reward = (float *)(base + p->offsets[idx[2]]);
    o->terminated = base + p->offsets[idx[3]];
    o->truncated = base + p->offsets[idx[4]];
    o->done = base + p->offsets[idx[5]];
    o->final_obs = base + p->offsets[idx[6]];
    o->elapsed = (int32_t *)(base + p->offsets[idx[7]]);
}

static void fetch(void *dst, const void *src, size_t bytes, cudaStream_t st) {
    CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, st));
}

/* Copies the GPU's step outputs and step counts into the host mirror m and waits for them. */
static void mirror_fetch(outputs *m, const outputs *gpu, const cr_minatar_cuda *env, size_t ob,
                         cudaStream_t st) {
    fetch(m->obs, gpu->obs, N * ob, st);
    fetch(m->reward, gpu->reward, N * sizeof(float), st);
    fetch(m->terminated, gpu->terminated, N, st);
    fetch(m->truncated, gpu->truncated, N, st);
    fetch(m->done, gpu->done, N, st);
    fetch(m->final_obs, gpu->final_obs, N * ob, st);
    fetch(m->elapsed, env->elapsed, N * sizeof(int32_t), st);
    CHECK_CUDA(cudaStreamSynchronize(st));
}

/* Fails at the first byte where two observation buffers (N, C, 10, 10) differ, naming the env,
 * channel and cell. */
static void compare_obs(const char *id, const char *what, long step, const uint8_t *cpu,
                        const uint8_t *gpu, size_t ob) {
    if (!memcmp(cpu, gpu, N * ob)) return;
    size_t k = 0;
    while (cpu[k] == gpu[k]) k++;
    size_t in_row = k % ob;
    CHECK_MSG(cpu[k] == gpu[k], "%s step %ld: %s of env %zu differ at channel %zu, y %zu, x %zu: "
              "cpu %d, gpu %d", id, step, what, k / ob, in_row / 100, in_row % 100 / 10,
              in_row % 10, cpu[k], gpu[k]);
}

/* Every env's state struct and step count: the pool's against the GPU's. */
static void compare_states(const char *id, const char *when, cudarl_ctx *ctx, cr_env_pool *pool,
                           const cr_minatar_cuda *env, const outputs *m) {
    unsigned char gpu_state[4096];
    size_t bytes = env->def->state_bytes;
    CHECK(bytes <= sizeof gpu_state);
    for (int i = 0; i < N; i++) {
        cr_minatar_cuda_get_state(ctx, env, i, gpu_state);
        const unsigned char *cpu_state = cr_env_pool_state(pool, i);
        if (memcmp(cpu_state, gpu_state, bytes)) {
            size_t k = 0;
            while (cpu_state[k] == gpu_state[k]) k++;
            CHECK_MSG(cpu_state[k] == gpu_state[k], "%s %s: env %d's state differs at byte %zu of "
                      "%zu (word %zu): cpu 0x%02x, gpu 0x%02x", id, when, i, k, bytes, k / 4,
                      cpu_state[k], gpu_state[k]);
        }
        CHECK_MSG(pool->elapsed[i] == m->elapsed[i], "%s %s: env %d's step count: cpu %d, gpu %d",
                  id, when, i, pool->elapsed[i], m->elapsed[i]);
    }
}

/* One step on both sides with the same random actions, then every output compared. The GPU
 * steps by replaying `graph` (a captured step, done included) when it is not NULL. */
static void step_both(const char *id, long t, cudarl_ctx *ctx, cr_env_pool *pool,
                      const cr_minatar_cuda *env, outputs *cpu, outputs *gpu, outputs *m,
                      cr_philox_state *pick, void *graph, tally *tl) {
    cudaStream_t st = (cudaStream_t)ctx->stream;
    size_t ob = cr_env_def_obs_bytes(env->def);
    uint32_t num_actions = (uint32_t)env->def->num_actions;
    for (int i = 0; i < N; i++) cpu->actions[i] = (int32_t)(cr_philox_next_u32(pick) % num_actions);
    CHECK_CUDA(cudaMemcpyAsync(gpu->actions, cpu->actions, N * sizeof(int32_t),
                               cudaMemcpyHostToDevice, st));
    /* every third step passes done = NULL: it must stay untouched */
    int with_done = graph || t % 3 != 2;
    if (!with_done) CHECK_CUDA(cudaMemsetAsync(gpu->done, NO_DONE, N, st));
    if (graph)
        ctx->ops->graph_launch(ctx, graph);
    else
        cr_minatar_cuda_step(ctx, env, gpu->actions, gpu->obs, gpu->reward, gpu->terminated,
                             gpu->truncated, with_done ? gpu->done : NULL, gpu->final_obs);
    cr_env_pool_step(pool, cpu->actions);
    mirror_fetch(m, gpu, env, ob, st);
    for (int i = 0; i < N; i++) {
        CHECK_MSG(!memcmp(&cpu->reward[i], &m->reward[i], sizeof(float)),
                  "%s step %ld env %d reward: cpu %g, gpu %g", id, t, i, (double)cpu->reward[i],
                  (double)m->reward[i]);
        CHECK_MSG(cpu->terminated[i] == m->terminated[i] && cpu->truncated[i] == m->truncated[i],
                  "%s step %ld env %d terminated/truncated: cpu %d/%d, gpu %d/%d", id, t, i,
                  cpu->terminated[i], cpu->truncated[i], m->terminated[i], m->truncated[i]);
        int ended = cpu->terminated[i] | cpu->truncated[i];
        int want_done = with_done ? ended : NO_DONE;
        CHECK_MSG(m->done[i] == want_done, "%s step %ld env %d done: expected %d, gpu %d", id, t,
                  i, want_done, m->done[i]);
        CHECK_MSG(pool->elapsed[i] == m->elapsed[i], "%s step %ld env %d step count: cpu %d, "
                  "gpu %d", id, t, i, pool->elapsed[i], m->elapsed[i]);
        tl->terminated += cpu->terminated[i];
        tl->truncated += cpu->truncated[i];
        tl->both += cpu->terminated[i] & cpu->truncated[i];
        tl->reward += cpu->reward[i];
    }
    compare_obs(id, "obs", t, cpu->obs, m->obs, ob);
    compare_obs(id, "final_obs", t, cpu->final_obs, m->final_obs, ob);
}

/* Runs game `id` for `steps` steps on both sides with time limit max_steps (0: the def's none);
 * the GPU's last `graph_steps` steps replay one captured step. */
static tally run_game(cudarl_ctx *ctx, const char *id, int max_steps, long steps,
                      long graph_steps, uint64_t seed) {
    cudaStream_t st = (cudaStream_t)ctx->stream;
    const cudarl_env_def *base = cr_minatar_cuda_find(id), *registered = cr_env_def_find(id);
    CHECK_MSG(base != NULL && registered != NULL && base->step == registered->step &&
              base->state_bytes == registered->state_bytes, "%s: no CUDA twin, or not the "
              "registry's def", id);
    cudarl_env_def def = *base;
    def.max_episode_steps = max_steps;
    size_t ob = cr_env_def_obs_bytes(&def);
    CHECK(ob <= MAX_OBS);

    /* the CPU side: the pool, one thread (the caller), and host outputs */
    cr_env_pool pool;
    cr_env_pool_config cfg = {.num_envs = N, .num_threads = 1};
    CHECK_OK(cr_env_pool_init(&pool, &def, &cfg, NULL));
    cr_plan p;
    int idx[8];
    outputs_plan(&p, ob, idx);
    cr_arena host, mirror;
    CHECK_OK(cr_arena_alloc(&host, &p, CR_MEM_HOST));
    CHECK_OK(cr_arena_alloc(&mirror, &p, CR_MEM_HOST));
    outputs cpu, m, gpu;
    outputs_point(&cpu, &p, idx, host.base);
    outputs_point(&m, &p, idx, mirror.base);
    cr_env_pool_outputs pool_out = {cpu.obs, cpu.reward, cpu.terminated, cpu.truncated,
                                    cpu.final_obs};
    cr_env_pool_set_outputs(&pool, &pool_out);

    /* the GPU side: the env batch and its outputs in one device block */
    size_t env_bytes;
    CHECK_OK(cr_minatar_cuda_bytes(id, N, &env_bytes));
    int ienv = cr_plan_add(&p, "env", env_bytes);
    unsigned char *device_block;
    CHECK_CUDA(cudaMalloc((void **)&device_block, p.total));
    outputs_point(&gpu, &p, idx, device_block);
    cr_minatar_cuda env;
    CHECK_OK(cr_minatar_cuda_init(&env, id, N, device_block + p.offsets[ienv]));
    CHECK_MSG(env.max_episode_steps == 0, "%s: the twin took time limit %d from the def", id,
              env.max_episode_steps);
    env.max_episode_steps = max_steps;

    memset(cpu.final_obs, SENTINEL, N * ob);
    CHECK_CUDA(cudaMemcpyAsync(gpu.final_obs, cpu.final_obs, N * ob, cudaMemcpyHostToDevice, st));
    cr_env_pool_reset(&pool, seed);
    cr_minatar_cuda_reset(ctx, &env, seed, gpu.obs);
    mirror_fetch(&m, &gpu, &env, ob, st);
    compare_obs(id, "reset obs", 0, cpu.obs, m.obs, ob);
    compare_states(id, "after the reset", ctx, &pool, &env, &m);

    cr_philox_state pick;
    cr_philox_seed(&pick, seed + 1, 0);
    tally tl = {0};
    for (long t = 1; t <= steps - graph_steps; t++)
        step_both(id, t, ctx, &pool, &env, &cpu, &gpu, &m, &pick, NULL, &tl);
    if (graph_steps > 0) {
        void *graph;
        CHECK_OK(ctx->ops->graph_begin(ctx));
        cr_minatar_cuda_step(ctx, &env, gpu.actions, gpu.obs, gpu.reward, gpu.terminated,
                             gpu.truncated, gpu.done, gpu.final_obs);
        CHECK_OK(ctx->ops->graph_end(ctx, &graph));
        for (long t = steps - graph_steps + 1; t <= steps; t++)
            step_both(id, t, ctx, &pool, &env, &cpu, &gpu, &m, &pick, graph, &tl);
        ctx->ops->graph_free(graph);
    }
    compare_states(id, "at the end", ctx, &pool, &env, &m);

    CHECK_CUDA(cudaFree(device_block));
    cr_arena_free(&host);
    cr_arena_free(&mirror);
    cr_env_pool_free(&pool);
    return tl;
}

/* Lookups and the errors a caller can cause (no GPU work). */
static void test_lookup(void) {
    for (int g = 0; g < NUM_GAMES; g++) {
        const cudarl_env_def *d = cr_minatar_cuda_find(ids[g]);
        CHECK_MSG(d != NULL && !strcmp(d->id, ids[g]), "no CUDA twin of %s", ids[g]);
    }
    size_t bytes = 0;
    CHECK(cr_minatar_cuda_find("CartPole-v1") == NULL && cr_minatar_cuda_find(NULL) == NULL);
    CHECK(cr_minatar_cuda_bytes("MinAtar/Pong-v1", 8, &bytes) == CUDARL_ERR_INVALID_ARG);
    CHECK(strstr(cudarl_last_error(), "MinAtar/Breakout-v1") != NULL);
    CHECK(cr_minatar_cuda_bytes("MinAtar/Breakout-v1", 0, &bytes) == CUDARL_ERR_INVALID_ARG);
    CHECK_OK(cr_minatar_cuda_bytes("MinAtar/Seaquest-v1", 1000, &bytes));
    CHECK_MSG(bytes >= 1000 * (cr_minatar_seaquest_def.state_bytes + sizeof(int32_t)),
              "Seaquest: %zu bytes for 1000 envs", bytes);
}

int main(void) {
    cudarl_ctx *ctx;
    if (cudarl_ctx_init(&ctx, CUDARL_DEVICE_CUDA, 0) != CUDARL_OK) {
        fprintf(stderr, "FAIL: no usable CUDA device (%s); test_minatar_cuda compares the GPU "
                "MinAtar games with the CPU and needs a GPU. On a machine without one run "
                "`ctest -LE gpu`.\n", cudarl_last_error());
        return 1;
    }
    test_lookup();
    for (int g = 0; g < NUM_GAMES; g++) {
        uint64_t seed = 1000 + (uint64_t)g;
        tally a = run_game(ctx, ids[g], 0, STEPS, GRAPH_STEPS, seed);
        CHECK_MSG(a.terminated > 0, "%s: no episode ended in %d steps of %d envs", ids[g], STEPS,
                  N);
        CHECK_MSG(a.truncated == 0, "%s: %ld truncations without a time limit", ids[g],
                  a.truncated);
        tally b = run_game(ctx, ids[g], TIME_LIMIT, LIMITED_STEPS, 0, seed + 100);
        CHECK_MSG(b.truncated > 0, "%s: no truncation with a %d-step limit", ids[g], TIME_LIMIT);
        printf("test_minatar_cuda: %-25s %d envs x %d steps: %ld episodes terminated, return %.0f "
               "in all; with a %d-step limit x %d steps: %ld terminated, %ld truncated (%ld "
               "both): bit-identical\n", ids[g], N, STEPS, a.terminated, a.reward, TIME_LIMIT,
               LIMITED_STEPS, b.terminated, b.truncated, b.both);
    }
    cudarl_ctx_free(ctx);
    printf("test_minatar_cuda: ok\n");
    return 0;
}
