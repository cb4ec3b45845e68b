/* The classic-control envs' CUDA twin (classic_cuda.cu) against their CPU twin (the
 * specification, held to Gymnasium by test_classic_gym), both through the env batch
 * (cr_env_batch on a CUDA and on a CPU context). For each env, N = 1000 envs (not a multiple of
 * the block size, so a partial block runs) get the same seed and the same actions on both sides
 * (half the envs seek the goal from their observation, so episodes terminate as well as
 * truncate; continuous actions, some outside the box, clipped on both sides) for twice the time
 * limit and more.
 *
 * The reset must give the same block (states, Philox streams, step counts) byte for byte: it has
 * no transcendental. Each step then runs from the same state on both sides (the CPU's block is
 * copied over the GPU's first), since CUDA's cos, sin and pow may differ from glibc's in the
 * last ulp and Acrobot's chaos would grow that over an episode. After it: terminated, truncated
 * and done exactly (no state lies within an ulp of a threshold), observations, final observations
 * and rewards to one float32 ulp (a float64 one ulp away may round to the neighbouring float32),
 * the float64 state components to STATE_RTOL (one ulp of a sin, cos or pow moves a step's result
 * far less), and the rest of each state struct (its Philox stream, Acrobot's pad,
 * MountainCarContinuous' fresh flag) and the step counts byte for byte. The numbers of bit-exact
 * values are printed. final_obs rows of envs that did not end must stay untouched (both sides
 * start from the same sentinel), odd steps pass done = NULL (its sentinel must stay), and the
 * last GRAPH_STEPS steps replay the GPU step captured into a CUDA graph, the trainers' way. Needs
 * a GPU (ctest label gpu) and fails saying so when there is none. */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "env/classic/classic.h"
#include "env/env.h"
#include "ops/backend.h"

#define N 1000
#define GRAPH_STEPS 50
#define STATE_RTOL 1e-12
#define MAX_OBS 8
#define SENTINEL (-1234.5f) /* fills final_obs rows that must stay untouched */
#define NO_DONE 0xAB        /* fills done on the steps that pass done = NULL */

#define CHECK_CUDA(expr)                                                                      \
    do {                                                                                      \
        cudaError_t e_ = (expr);                                                              \
        CHECK_MSG(e_ == cudaSuccess, "%s: %s", cudaGetErrorName(e_), cudaGetErrorString(e_)); \
    } while (0)

/* Each env, how many float64 components lead its state struct, and whether the goal-seeking
 * policy reaches a terminal state. */
static const struct {
    const char *id;
    int doubles;
    int terminates;
} envs[] = {
    {"Acrobot-v1", 4, 1},
    {"MountainCar-v0", 2, 1},
    {"Pendulum-v1", 2, 0},
    {"MountainCarContinuous-v0", 2, 1},
};
#define NUM_ENVS ((int)(sizeof envs / sizeof envs[0]))

/* One side's step buffers (host for the CPU, device for the GPU, host for the GPU's mirror). */
typedef struct side {
    void *block;       /* the batch's state (b->bytes) */
    void *actions;     /* int32 (N) or float (N, K) */
    float *obs;        /* (N, D) */
    float *final_obs;  /* (N, D), SENTINEL until an env ends */
    float *reward;     /* (N) */
    uint8_t *term, *trunc, *done; /* (N) */
} side;

/* What a run saw. */
typedef struct tally {
    long terminated, truncated, values, bit_exact, states, states_exact;
    int max_ulps;
    double max_rel;
} tally;

/* The plan of one side's buffers, carved from `base` (host or device, 64-byte aligned). */
static size_t side_carve(side *s, unsigned char *base, size_t block, size_t D, size_t ab) {
    size_t off = 0, sizes[8] = {block, N * ab, N * D * 4, N * D * 4, N * 4, N, N, N};
    void **parts[8] = {&s->block, &s->actions, (void **)&s->obs, (void **)&s->final_obs,
                       (void **)&s->reward, (void **)&s->term, (void **)&s->trunc,
                       (void **)&s->done};
    for (int k = 0; k < 8; k++) {
        if (base) *parts[k] = base + off;
        off += (sizes[k] + 63) / 64 * 64;
    }
    return off;
}

/* Float32 ulps between a and b. */
static int ulps_apart(float a, float b) {
    int n = 0;
    while (a != b && n <= 64) a = nextafterf(a, b), n++;
    return n;
}

/* n floats of the GPU within one float32 ulp of the CPU's. */
static void compare_floats(const char *id, const char *what, long t, const float *cpu,
                           const float *gpu, size_t n, tally *tl) {
    for (size_t k = 0; k < n; k++) {
        int u = ulps_apart(cpu[k], gpu[k]);
        CHECK_MSG(u <= 1, "%s step %ld: %s[%zu]: cpu %.9g, gpu %.9g (%d float32 ulps)", id, t,
                  what, k, (double)cpu[k], (double)gpu[k], u);
        tl->values++;
        tl->bit_exact += u == 0;
        if (u > tl->max_ulps) tl->max_ulps = u;
    }
}

/* Byte offset of the batch's array p in its block. */
static size_t offset_in(const cr_env_batch *b, const void *p) {
    return (size_t)((const unsigned char *)p - (const unsigned char *)b->mem);
}

/* Every env's state struct and step count in the GPU's block (a host copy) against the CPU's
 * (b is the CPU's batch): the leading float64 components within STATE_RTOL, the rest byte for
 * byte. */
static void compare_blocks(const char *id, long t, const cr_env_batch *b, const void *cpu_block,
                           const void *gpu_block, int doubles, tally *tl) {
    const cr_classic *c = &b->classic;
    const size_t sb = c->def->state_bytes, lead = (size_t)doubles * sizeof(double);
    const size_t states = offset_in(b, c->states), counts = offset_in(b, c->elapsed);
    const unsigned char *cb = cpu_block, *gb = gpu_block;
    _Alignas(16) unsigned char sc[CR_CLASSIC_STATE_MAX], sg[CR_CLASSIC_STATE_MAX];
    for (int i = 0; i < N; i++) {
        cr_classic_get_state(c, (const uint32_t *)(cb + states), i, sc);
        cr_classic_get_state(c, (const uint32_t *)(gb + states), i, sg);
        for (int j = 0; j < doubles; j++) {
            double a, g;
            memcpy(&a, sc + 8 * j, 8), memcpy(&g, sg + 8 * j, 8);
            double rel = fabs(a - g) / fmax(1.0, fabs(a));
            CHECK_MSG(rel <= STATE_RTOL, "%s step %ld env %d: state[%d]: cpu "
                      "%.17g, gpu %.17g", id, t, i, j, a, g);
            tl->states++;
            tl->states_exact += a == g;
            if (rel > tl->max_rel) tl->max_rel = rel;
        }
        CHECK_MSG(!memcmp(sc + lead, sg + lead, sb - lead), "%s step %ld env %d: the state's "
                  "Philox stream or flags differ", id, t, i);
    }
    const int32_t *ec = (const int32_t *)(cb + counts), *eg = (const int32_t *)(gb + counts);
    for (int i = 0; i < N; i++)
        CHECK_MSG(ec[i] == eg[i], "%s step %ld env %d: step count cpu %d, gpu %d", id, t, i,
                  ec[i], eg[i]);
}

/* Even envs seek the goal from their observation, odd ones act at random; continuous random
 * actions are uniform over 1.5 times the box. */
static void choose_actions(const cudarl_env_def *d, const float *obs, void *actions,
                           cr_philox_state *rng) {
    const int D = d->obs_shape[0];
    for (int i = 0; i < N; i++) {
        const float *o = obs + (size_t)i * (size_t)D;
        int seek = i % 2 == 0 && cr_philox_uniform(rng) < 0.8f;
        if (d->action_dim == 0) {
            float v = D == 6 ? o[5] : o[1];
            ((int32_t *)actions)[i] = seek ? (v >= 0 ? 2 : 0)
                                           : (int32_t)(cr_philox_next_u32(rng) % 3u);
        } else {
            float hi = d->action_high[0];
            float a = 1.5f * (2.0f * cr_philox_uniform(rng) - 1.0f) * hi;
            ((float *)actions)[i] = seek ? (o[D - 1] >= 0 ? 1.5f : -1.5f) * hi : a;
        }
    }
}

static void fetch(void *dst, const void *src, size_t bytes, cudaStream_t st) {
    CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, st));
}

static void put(void *dst, const void *src, size_t bytes, cudaStream_t st) {
    CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, st));
}

static tally run_env(cudarl_ctx *cpu_ctx, cudarl_ctx *gpu_ctx, int e, uint64_t seed) {
    const char *id = envs[e].id;
    const cr_env_info *info = cr_env_find(id);
    CHECK_MSG(info && (info->caps & CR_ENV_BATCH), "%s has no batch twin", id);
    const cudarl_env_def *d = info->def;
    const size_t D = (size_t)info->obs_dim, ab = cr_env_def_action_bytes(d);
    const size_t block = cr_env_batch_bytes(info, N);
    side cpu, gpu, mir; /* mir: the GPU's, copied back */
    size_t bytes = side_carve(&cpu, NULL, block, D, ab);
    unsigned char *host = aligned_alloc(64, 2 * bytes), *dev;
    CHECK(host != NULL);
    memset(host, 0, 2 * bytes);
    side_carve(&cpu, host, block, D, ab);
    side_carve(&mir, host + bytes, block, D, ab);
    CHECK_CUDA(cudaMalloc((void **)&dev, bytes));
    CHECK_CUDA(cudaMemset(dev, 0, bytes)); /* the block's padding too, as the host's */
    side_carve(&gpu, dev, block, D, ab);
    cudaStream_t st = (cudaStream_t)gpu_ctx->stream;

    cr_env_batch cb, gb;
    cr_env_batch_init(&cb, info, N, cpu.block);
    cr_env_batch_init(&gb, info, N, gpu.block);
    CHECK(cb.bytes == block && gb.bytes == block);
    for (size_t k = 0; k < N * D; k++) cpu.final_obs[k] = SENTINEL;
    put(gpu.final_obs, cpu.final_obs, N * D * 4, st);
    cr_env_batch_reset(cpu_ctx, &cb, seed, cpu.obs);
    cr_env_batch_reset(gpu_ctx, &gb, seed, gpu.obs);
    fetch(mir.obs, gpu.obs, N * D * 4, st);
    fetch(mir.block, gpu.block, block, st);
    CHECK_CUDA(cudaStreamSynchronize(st));
    tally tl = {0};
    CHECK_MSG(!memcmp(cpu.block, mir.block, block), "%s: the reset blocks differ (they must be "
              "byte for byte equal)", id);
    compare_floats(id, "reset obs", 0, cpu.obs, mir.obs, N * D, &tl);

    cr_philox_state rng;
    cr_philox_seed(&rng, seed + 1, 0);
    const long steps = 2L * d->max_episode_steps + 100;
    void *graph = NULL;
    for (long t = 1; t <= steps; t++) {
        choose_actions(d, cpu.obs, cpu.actions, &rng);
        put(gpu.actions, cpu.actions, N * ab, st);
        put(gpu.block, cpu.block, block, st); /* this step from the CPU's state */
        const int in_graph = t > steps - GRAPH_STEPS, with_done = in_graph || t % 2 == 0;
        if (!with_done) CHECK_CUDA(cudaMemsetAsync(gpu.done, NO_DONE, N, st));
        if (in_graph && !graph) {
            CHECK_OK(gpu_ctx->ops->graph_begin(gpu_ctx));
            cr_env_batch_step(gpu_ctx, &gb, gpu.actions, gpu.obs, gpu.reward, gpu.term,
                              gpu.trunc, gpu.done, gpu.final_obs);
            CHECK_OK(gpu_ctx->ops->graph_end(gpu_ctx, &graph));
        }
        if (in_graph) gpu_ctx->ops->graph_launch(gpu_ctx, graph);
        else cr_env_batch_step(gpu_ctx, &gb, gpu.actions, gpu.obs, gpu.reward, gpu.term,
                               gpu.trunc, with_done ? gpu.done : NULL, gpu.final_obs);
        cr_env_batch_step(cpu_ctx, &cb, cpu.actions, cpu.obs, cpu.reward, cpu.term, cpu.trunc,
                          cpu.done, cpu.final_obs);
        fetch(mir.block, gpu.block, block, st);
        fetch(mir.obs, gpu.obs, N * D * 4, st);
        fetch(mir.final_obs, gpu.final_obs, N * D * 4, st);
        fetch(mir.reward, gpu.reward, N * 4, st);
        fetch(mir.term, gpu.term, N, st);
        fetch(mir.trunc, gpu.trunc, N, st);
        fetch(mir.done, gpu.done, N, st);
        CHECK_CUDA(cudaStreamSynchronize(st));
        for (int i = 0; i < N; i++) {
            CHECK_MSG(cpu.term[i] == mir.term[i] && cpu.trunc[i] == mir.trunc[i], "%s step %ld "
                      "env %d: terminated/truncated cpu %d/%d, gpu %d/%d", id, t, i, cpu.term[i],
                      cpu.trunc[i], mir.term[i], mir.trunc[i]);
            int want = with_done ? cpu.term[i] | cpu.trunc[i] : NO_DONE;
            CHECK_MSG(mir.done[i] == want && cpu.done[i] == (cpu.term[i] | cpu.trunc[i]),
                      "%s step %ld env %d: done gpu %d, expected %d (cpu %d)", id, t, i,
                      mir.done[i], want, cpu.done[i]);
            tl.terminated += cpu.term[i];
            tl.truncated += cpu.trunc[i];
        }
        compare_floats(id, "reward", t, cpu.reward, mir.reward, N, &tl);
        compare_floats(id, "obs", t, cpu.obs, mir.obs, N * D, &tl);
        compare_floats(id, "final_obs", t, cpu.final_obs, mir.final_obs, N * D, &tl);
        compare_blocks(id, t, &cb, cpu.block, mir.block, envs[e].doubles, &tl);
    }
    gpu_ctx->ops->graph_free(graph);
    CHECK_MSG(tl.truncated > 0 && (tl.terminated > 0) == envs[e].terminates, "%s: %ld "
              "terminated, %ld truncated", id, tl.terminated, tl.truncated);
    printf("test_classic_cuda: %-25s %d envs x %ld steps: %ld terminated, %ld truncated; %ld of "
           "%ld floats bit-exact (max %d ulp), %ld of %ld float64 state values bit-exact (max "
           "rel diff %.3g)\n", id, N, steps, tl.terminated, tl.truncated, tl.bit_exact,
           tl.values, tl.max_ulps, tl.states_exact, tl.states, tl.max_rel);
    CHECK_CUDA(cudaFree(dev));
    free(host);
    return tl;
}

int main(void) {
    cudarl_ctx *gpu_ctx, *cpu_ctx;
    if (cudarl_ctx_init(&gpu_ctx, CUDARL_DEVICE_CUDA, 0) != CUDARL_OK) {
        fprintf(stderr, "FAIL: no usable CUDA device (%s); test_classic_cuda compares the GPU "
                "classic-control envs with the CPU and needs a GPU. On a machine without one run "
                "`ctest -LE gpu`.\n", cudarl_last_error());
        return 1;
    }
    CHECK_OK(cudarl_ctx_init(&cpu_ctx, CUDARL_DEVICE_CPU, 0));
    for (int e = 0; e < NUM_ENVS; e++) run_env(cpu_ctx, gpu_ctx, e, 4242 + (uint64_t)e);
    cudarl_ctx_free(cpu_ctx);
    cudarl_ctx_free(gpu_ctx);
    printf("test_classic_cuda: ok\n");
    return 0;
}
