// The five MinAtar games: env steps/s of the CUDA twin (src/env/minatar/minatar_cuda.cu) at 4,096 and
// 65,536 envs, next to the CPU def stepped by the env pool on one thread (4,096 envs), printed
// as a markdown table. A step is one env taking one action, with everything the trainers get:
// the observation (uint8, C x 10 x 10), reward, flags, and on an episode's end its final
// observation and the autoreset. Actions are uniformly random, drawn once into 16 arrays
// (device memory for the GPU) that the steps cycle through, so episodes end all the time.
// GPU figures: cudaEvent time over S back-to-back step launches on the context's stream after
// 10 untimed ones, S chosen to last about `seconds`; CPU: wall time of whole pool steps.
// Usage: bench_minatar_cuda [seconds]      (default 0.3 per measurement)
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

extern "C" {
#include "core/core.h"
#include "env/env.h"
#include "env/env_pool.h"
#include "env/minatar/minatar.h"
#include "ops/backend.h"
}
#include "env/minatar/minatar_cuda.h"

#include "bench_check.cuh"

#define ACTION_SETS 16
#define WARMUP 10
#define CPU_ENVS 4096
#define NUM_SIZES 2

static const char *const ids[] = {"MinAtar/Breakout-v1", "MinAtar/Asterix-v1",
                                  "MinAtar/Freeway-v1", "MinAtar/Seaquest-v1",
                                  "MinAtar/SpaceInvaders-v1"};
#define NUM_GAMES ((int)(sizeof ids / sizeof ids[0]))
static const int gpu_envs[NUM_SIZES] = {4096, 65536};

// actions (ACTION_SETS, n) uniformly random in 0 .. num_actions-1 (host).
static void draw_actions(int32_t *actions, int n, int num_actions, uint64_t seed) {
    cr_philox_state rng;
    cr_philox_seed(&rng, seed, 0);
    for (size_t k = 0; k < (size_t)ACTION_SETS * n; k++)
        actions[k] = (int32_t)(cr_philox_next_u32(&rng) % (uint32_t)num_actions);
}

// One GPU batch being timed: the env, its outputs and the action arrays (device).
struct gpu_batch {
    cudarl_ctx *ctx;
    cr_minatar_cuda env;
    int32_t *actions; // (ACTION_SETS, n)
    uint8_t *obs, *final_obs; // (n, C, 10, 10)
    float *reward;
    uint8_t *term, *trunc, *done;
    long steps; // taken so far: picks the next action array
    cudaEvent_t t0, t1;
};

// GPU milliseconds of `count` back-to-back steps of b.
static double time_steps(gpu_batch *b, long count) {
    cudaStream_t st = (cudaStream_t)b->ctx->stream;
    int n = b->env.num_envs;
    CK(cudaEventRecord(b->t0, st));
    for (long k = 0; k < count; k++, b->steps++)
        cr_minatar_cuda_step(b->ctx, &b->env, b->actions + (size_t)(b->steps % ACTION_SETS) * n,
                             b->obs, b->reward, b->term, b->trunc, b->done, b->final_obs);
    CK(cudaEventRecord(b->t1, st));
    CK(cudaEventSynchronize(b->t1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, b->t0, b->t1));
    return (double)ms;
}

// GPU steps/s of game `id` at n envs.
static double gpu_rate(cudarl_ctx *ctx, const char *id, int n, double seconds) {
    const cudarl_env_def *def = cr_minatar_cuda_find(id);
    size_t ob = cr_env_def_obs_bytes(def), env_bytes;
    OK(cr_minatar_cuda_bytes(id, n, &env_bytes));
    cr_plan p;
    cr_plan_init(&p);
    int ienv = cr_plan_add(&p, "env", env_bytes);
    int iact = cr_plan_add(&p, "actions", (size_t)ACTION_SETS * n * sizeof(int32_t));
    int iobs = cr_plan_add(&p, "obs", (size_t)n * ob);
    int irew = cr_plan_add(&p, "reward", (size_t)n * sizeof(float));
    int iterm = cr_plan_add(&p, "terminated", (size_t)n);
    int itrunc = cr_plan_add(&p, "truncated", (size_t)n);
    int idone = cr_plan_add(&p, "done", (size_t)n);
    int ifin = cr_plan_add(&p, "final_obs", (size_t)n * ob);
    unsigned char *base;
    CK(cudaMalloc((void **)&base, p.total));
    gpu_batch b;
    b.ctx = ctx;
    OK(cr_minatar_cuda_init(&b.env, id, n, base + p.offsets[ienv]));
    b.actions = (int32_t *)(base + p.offsets[iact]);
    b.obs = base + p.offsets[iobs];
    b.final_obs = base + p.offsets[ifin];
    b.reward = (float *)(base + p.offsets[irew]);
    b.term = base + p.offsets[iterm];
    b.trunc = base + p.offsets[itrunc];
    b.done = base + p.offsets[idone];
    b.steps = 0;
    int32_t *host_actions = (int32_t *)malloc((size_t)ACTION_SETS * n * sizeof(int32_t));
    if (!host_actions) exit(1);
    draw_actions(host_actions, n, def->num_actions, 7);
    CK(cudaMemcpy(b.actions, host_actions, (size_t)ACTION_SETS * n * sizeof(int32_t),
                  cudaMemcpyHostToDevice));
    free(host_actions);
    CK(cudaEventCreate(&b.t0));
    CK(cudaEventCreate(&b.t1));

    cr_minatar_cuda_reset(ctx, &b.env, 1, b.obs);
    double per_step_ms = time_steps(&b, WARMUP) / WARMUP;
    long count = (long)(seconds * 1e3 / (per_step_ms > 1e-6 ? per_step_ms : 1e-6));
    count = count < 20 ? 20 : count > 100000 ? 100000 : count;
    double ms = time_steps(&b, count);
    CK(cudaGetLastError());
    CK(cudaEventDestroy(b.t0));
    CK(cudaEventDestroy(b.t1));
    CK(cudaFree(base));
    return (double)n * (double)count / (ms * 1e-3);
}

// CPU steps/s of game `id`'s def on the env pool, one thread, CPU_ENVS envs.
static double cpu_rate(const char *id, double seconds) {
    const cudarl_env_def *def = cr_env_def_find(id);
    size_t ob = cr_env_def_obs_bytes(def);
    cr_env_pool pool;
    cr_env_pool_config cfg = {};
    cfg.num_envs = CPU_ENVS;
    cfg.num_threads = 1;
    OK(cr_env_pool_init(&pool, def, &cfg, NULL));
    cr_plan p;
    cr_plan_init(&p);
    int iact = cr_plan_add(&p, "actions", (size_t)ACTION_SETS * CPU_ENVS * sizeof(int32_t));
    int iobs = cr_plan_add(&p, "obs", CPU_ENVS * ob);
    int irew = cr_plan_add(&p, "reward", CPU_ENVS * sizeof(float));
    int iterm = cr_plan_add(&p, "terminated", CPU_ENVS);
    int itrunc = cr_plan_add(&p, "truncated", CPU_ENVS);
    int ifin = cr_plan_add(&p, "final_obs", CPU_ENVS * ob);
    cr_arena a;
    OK(cr_arena_alloc(&a, &p, CR_MEM_HOST));
    int32_t *actions = (int32_t *)cr_arena_get(&a, iact);
    draw_actions(actions, CPU_ENVS, def->num_actions, 7);
    cr_env_pool_outputs out = {cr_arena_get(&a, iobs), (float *)cr_arena_get(&a, irew),
                               (uint8_t *)cr_arena_get(&a, iterm),
                               (uint8_t *)cr_arena_get(&a, itrunc), cr_arena_get(&a, ifin)};
    cr_env_pool_set_outputs(&pool, &out);
    cr_env_pool_reset(&pool, 1);
    for (long s = 0; s < WARMUP; s++)
        cr_env_pool_step(&pool, actions + (size_t)(s % ACTION_SETS) * CPU_ENVS);
    long steps = 0;
    double start = cr_time_now(), elapsed;
    do {
        cr_env_pool_step(&pool, actions + (size_t)(steps % ACTION_SETS) * CPU_ENVS);
        steps++;
        elapsed = cr_time_now() - start;
    } while (elapsed < seconds);
    cr_arena_free(&a);
    cr_env_pool_free(&pool);
    return (double)CPU_ENVS * (double)steps / elapsed;
}

// "12.3 M" style: steps/s with a unit.
static const char *format_rate(double r, char *buf, size_t cap) {
    if (r >= 1e9) snprintf(buf, cap, "%.2f G", r / 1e9);
    else if (r >= 1e6) snprintf(buf, cap, "%.1f M", r / 1e6);
    else snprintf(buf, cap, "%.0f k", r / 1e3);
    return buf;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 0.3;
    if (!(seconds > 0)) {
        fprintf(stderr, "usage: bench_minatar_cuda [seconds per measurement, > 0]\n");
        return 2;
    }
    cudarl_ctx *ctx;
    OK(cudarl_ctx_init(&ctx, CUDARL_DEVICE_CUDA, 0));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, ctx->device_index));
    printf("MinAtar env steps/s: CUDA twin on %s (%d SMs) vs the CPU def on the env pool, 1 "
           "thread, %d envs; random actions, autoreset included\n\n",
           prop.name, prop.multiProcessorCount, CPU_ENVS);
    printf("| game | CPU, 1 thread | GPU, 4,096 envs | GPU, 65,536 envs | GPU 65,536 / CPU |\n");
    printf("|---|---:|---:|---:|---:|\n");
    for (int g = 0; g < NUM_GAMES; g++) {
        double cpu = cpu_rate(ids[g], seconds), gpu[NUM_SIZES];
        for (int k = 0; k < NUM_SIZES; k++) gpu[k] = gpu_rate(ctx, ids[g], gpu_envs[k], seconds);
        char a[32], b[32], c[32];
        printf("| %s | %s | %s | %s | %.0fx |\n", ids[g], format_rate(cpu, a, sizeof a),
               format_rate(gpu[0], b, sizeof b), format_rate(gpu[1], c, sizeof c),
               gpu[1] / cpu);
        fflush(stdout);
    }
    cudarl_ctx_free(ctx);
    return 0;
}
