// One learner step of a convolutional policy on the device: forward (uint8 observations in),
// backward from a given output gradient, and Adam on the flat parameters - what a DQN or PPO
// update does around its loss - through src/nn/convnet_cuda.h and the backend's adam_step.
// The networks are CleanRL's: dqn_atari.py's QNetwork and ppo_atari.py's Agent (nature-cnn,
// 4x84x84 pixels / 255, 6 actions) at batch 32 (a DQN minibatch) and 256 (a PPO minibatch), and
// the MinAtar Q-network (minatar-cnn) on Breakout's 4x10x10 0/1 channels, 3 actions, batch 32.
//
// Each step is timed two ways on the context's stream, GPU time between two CUDA events
// (so the host's enqueueing shows as gaps between kernels when it is slower than the device):
//   eager  the step's ops enqueued one by one (the host's cost of ~40 launches included);
//   graph  the step captured once into a CUDA graph (after a warm-up), then replayed: one launch.
// Each figure is the median of `reps` steps after WARMUP untimed ones. TFLOP/s counts a
// multiply-add as 2 flops over the forward and the backward products (the first conv has no
// input gradient). bench/peers/convnet_peer.py times PyTorch on the same step the same way and,
// given --json's file, prints the two side by side.
//
// Usage: bench_convnet_cuda [--reps N] [--engine gemm|cudnn|igemm|all]
//                           [--precision fp32|tf32|bf16|fp16|all] [--case K] [--batch N]
//                           [--json FILE]
// --case K: only the K-th of the cases below (0-based; for a profiler).
// --batch N: every case at batch N instead of its own (a PPO update's minibatch at scale: 16384).
// --precision: the trainers' --precision (cr_precision_apply on the context, the training handle
// of cr_convnet_cuda_init_training): fp32, tf32 (cuBLAS's products on TF32 tensor cores), bf16
// and fp16 (the conv products in the format on the GEMM engine, linear layers in TF32; fp16's
// step with loss scaling as the trainers take it), or all (default), one row each.
// --engine igemm: bf16 and fp16 only, the training engine of the policy runtime's
// implicit-GEMM forward with cuDNN's gradients (nn/convnet_half_train.cu; builds with cuDNN).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

extern "C" {
#include "ops/backend.h"
#include "ops/cuda/cuda_backend.h"
}
#include "nn/convnet_cuda.h"
#include "nn/precision.h"
#include "algo/amp.h"

#include "bench_check.cuh"

#define WARMUP 10

// The cases: spec name, input (C, H, W), heads, actions, batch, CleanRL's Adam (lr, eps).
struct bench_case {
    const char *name, *module;
    int c, h, w;
    cr_convnet_heads heads;
    int actions, batch;
    float lr, eps;
};

static const bench_case cases[] = {
    {"nature-cnn", "QNetwork", 4, 84, 84, CR_CONVNET_DQN, 6, 32, 1e-4f, 1e-8f},
    {"nature-cnn", "QNetwork", 4, 84, 84, CR_CONVNET_DQN, 6, 256, 1e-4f, 1e-8f},
    {"nature-cnn", "Agent", 4, 84, 84, CR_CONVNET_PPO, 6, 32, 2.5e-4f, 1e-5f},
    {"nature-cnn", "Agent", 4, 84, 84, CR_CONVNET_PPO, 6, 256, 2.5e-4f, 1e-5f},
    {"minatar-cnn", "QNetwork", 4, 10, 10, CR_CONVNET_DQN, 3, 32, 1e-4f, 1e-8f},
};
#define NUM_CASES ((int)(sizeof cases / sizeof cases[0]))

// The device buffers of one case.
struct step_bufs {
    cr_convnet net;
    cr_convnet_cuda *cn;
    cr_arena arena;
    float *params, *grads, *m, *v, *out, *value, *dout, *dvalue, *lr;
    float *dout_s, *dvalue_s; // fp16: the output gradients times the loss scale
    int64_t *t;
    uint8_t *obs;
    cr_convnet_cache cache;
    cr_amp amp; // fp16: GradScaler's steps (algo/amp.h), as the trainers take them
    float adam_eps;
    int B;
};

enum { I_PARAMS, I_GRADS, I_M, I_V, I_OUT, I_VALUE, I_DOUT, I_DVALUE, I_LR, I_T, I_OBS, I_CACHE,
       I_WS, I_DOUT_S, I_DVALUE_S, I_SCALER, I_COUNT };

static float *host_uniform(cr_philox_state *rng, size_t n, float scale) {
    float *h = (float *)malloc(n * sizeof(float) + 4);
    if (!h) exit(1);
    for (size_t i = 0; i < n; i++) h[i] = (2.0f * cr_philox_uniform(rng) - 1.0f) * scale;
    return h;
}

static void bufs_init(cudarl_ctx *ctx, step_bufs *s, const bench_case *k,
                      cr_convnet_engine engine, cudarl_precision prec) {
    memset(s, 0, sizeof *s);
    cr_convnet_spec spec;
    OK(cr_convnet_spec_named(&spec, k->name, k->c, k->h, k->w, k->heads, k->actions));
    OK(cr_convnet_plan(&s->net, &spec));
    s->B = k->batch, s->adam_eps = k->eps;
    const int batches[1] = {k->batch};
    OK(cr_convnet_cuda_init_training(ctx, &s->net, batches, 1, engine, prec, &s->cn));
    const size_t P = s->net.num_params, B = (size_t)k->batch, A = (size_t)k->actions;
    cr_plan p;
    cr_plan_init(&p);
    const size_t sizes[I_COUNT] = {P * 4, P * 4, P * 4, P * 4, B * A * 4, B * 4, B * A * 4, B * 4,
                                   4, 8, B * (size_t)s->net.in_floats,
                                   cr_convnet_cuda_cache_bytes(&s->net, k->batch),
                                   cr_convnet_cuda_workspace_bytes(s->cn), B * A * 4, B * 4,
                                   sizeof(cr_loss_scale_state)};
    static const char *const names[I_COUNT] = {"params", "grads", "adam.m", "adam.v", "out",
                                               "value", "dout", "dvalue", "lr", "t", "obs",
                                               "cache", "workspace", "dout.scaled",
                                               "dvalue.scaled", "scaler"};
    for (int i = 0; i < I_COUNT; i++) cr_plan_add(&p, names[i], sizes[i]);
    OK(ctx->ops->arena_alloc(ctx, &s->arena, &p)); // zeroed: Adam's moments and t start at 0
    s->params = (float *)cr_arena_get(&s->arena, I_PARAMS);
    s->grads = (float *)cr_arena_get(&s->arena, I_GRADS);
    s->m = (float *)cr_arena_get(&s->arena, I_M);
    s->v = (float *)cr_arena_get(&s->arena, I_V);
    s->out = (float *)cr_arena_get(&s->arena, I_OUT);
    s->value = k->heads == CR_CONVNET_PPO ? (float *)cr_arena_get(&s->arena, I_VALUE) : NULL;
    s->dout = (float *)cr_arena_get(&s->arena, I_DOUT);
    s->dvalue = k->heads == CR_CONVNET_PPO ? (float *)cr_arena_get(&s->arena, I_DVALUE) : NULL;
    s->lr = (float *)cr_arena_get(&s->arena, I_LR);
    s->t = (int64_t *)cr_arena_get(&s->arena, I_T);
    s->obs = (uint8_t *)cr_arena_get(&s->arena, I_OBS);
    cr_convnet_cuda_cache_carve(&s->net, cr_arena_get(&s->arena, I_CACHE), k->batch, &s->cache);
    cr_convnet_cuda_set_workspace(s->cn, cr_arena_get(&s->arena, I_WS));
    s->dout_s = (float *)cr_arena_get(&s->arena, I_DOUT_S);
    s->dvalue_s = (float *)cr_arena_get(&s->arena, I_DVALUE_S);
    cr_amp_init(&s->amp, ctx, prec, (cr_loss_scale_state *)cr_arena_get(&s->arena, I_SCALER));

    // PyTorch's default init ranges (uniform +-1/sqrt(fan_in)) for every tensor, random pixels
    // (MinAtar: 0/1 channels), and output gradients of a loss averaged over the batch.
    cr_philox_state rng;
    cr_philox_seed(&rng, 11, 0);
    float *h = (float *)malloc(P * sizeof(float));
    if (!h) exit(1);
    for (int i = 0; i < s->net.ntensors; i++) {
        const cr_convnet_tensor *t = &s->net.t[i];
        const float bound = 1.0f / sqrtf((float)t->fan_in);
        for (size_t e = 0; e < t->count; e++)
            h[t->offset + e] = (2.0f * cr_philox_uniform(&rng) - 1.0f) * bound;
    }
    ctx->ops->copy_from_host(ctx, s->params, h, P * sizeof(float));
    free(h);
    const size_t n_obs = B * (size_t)s->net.in_floats;
    uint8_t *u = (uint8_t *)malloc(n_obs);
    if (!u) exit(1);
    const int binary = spec.scale == CR_CONVNET_SCALE_NONE;
    for (size_t i = 0; i < n_obs; i++) {
        uint32_t r = cr_philox_next_u32(&rng);
        u[i] = (uint8_t)(binary ? (r >> 9) & 1 : r >> 24);
    }
    ctx->ops->copy_from_host(ctx, s->obs, u, n_obs);
    free(u);
    float *d = host_uniform(&rng, B * A, 1.0f / (float)B);
    ctx->ops->copy_from_host(ctx, s->dout, d, B * A * sizeof(float));
    free(d);
    if (s->dvalue) {
        d = host_uniform(&rng, B, 1.0f / (float)B);
        ctx->ops->copy_from_host(ctx, s->dvalue, d, B * sizeof(float));
        free(d);
    }
    ctx->ops->copy_from_host(ctx, s->lr, &k->lr, sizeof(float));
    ctx->ops->sync(ctx);
}

static void bufs_free(cudarl_ctx *ctx, step_bufs *s) {
    cr_convnet_cuda_free(s->cn);
    ctx->ops->arena_free(ctx, &s->arena);
}

// The learner step: forward, backward, Adam; under fp16 with GradScaler's steps around them
// (the output gradients scaled into their own buffers, unscale, Adam unless inf, update).
static void step(cudarl_ctx *ctx, step_bufs *s) {
    cr_convnet_cuda_forward(ctx, s->cn, s->params, s->obs, s->out, s->value, &s->cache, s->B);
    const float *dout = s->dout, *dvalue = s->dvalue;
    if (s->amp.scaling) {
        const size_t n = (size_t)s->B * s->net.spec.num_actions;
        ctx->ops->copy(ctx, s->dout_s, s->dout, n * sizeof(float));
        cr_amp_scale(ctx, &s->amp, s->dout_s, n);
        dout = s->dout_s;
        if (s->dvalue) {
            ctx->ops->copy(ctx, s->dvalue_s, s->dvalue, (size_t)s->B * sizeof(float));
            cr_amp_scale(ctx, &s->amp, s->dvalue_s, (size_t)s->B);
            dvalue = s->dvalue_s;
        }
    }
    cr_convnet_cuda_backward(ctx, s->cn, s->params, s->grads, dout, dvalue, &s->cache, s->B);
    cr_amp_step(ctx, &s->amp, s->params, s->grads, s->m, s->v, s->net.num_params, s->lr, 0.9f,
                0.999f, s->adam_eps, s->t, 0, 0.0, NULL);
}

static int by_value(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

// Median GPU milliseconds of one step, enqueued eagerly (graph NULL) or replayed from graph.
static double median_ms(cudarl_ctx *ctx, step_bufs *s, void *graph, int reps) {
    cudaStream_t st = (cudaStream_t)ctx->stream;
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    float *t = (float *)malloc(sizeof(float) * (size_t)reps);
    if (!t) exit(1);
    for (int r = 0; r < reps + WARMUP; r++) {
        CK(cudaEventRecord(a, st));
        if (graph) ctx->ops->graph_launch(ctx, graph);
        else step(ctx, s);
        CK(cudaEventRecord(b, st));
        CK(cudaEventSynchronize(b));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, a, b));
        if (r >= WARMUP) t[r - WARMUP] = ms;
    }
    qsort(t, (size_t)reps, sizeof *t, by_value);
    double m = t[reps / 2];
    free(t);
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return m;
}

// Multiply-adds x 2 of the step's products: forward, weight gradients, input gradients (not of
// the first stage, whose input is the observation).
static double step_flops(const cr_convnet *net, int B) {
    double fwd = 0, dx = 0;
    for (int i = 0; i < net->nstages; i++) {
        const cr_convnet_stage *st = &net->stage[i];
        double f = st->op == CR_CONVNET_CONV
                       ? 2.0 * B * st->out * (double)st->conv.C * st->conv.R * st->conv.S
                       : 2.0 * B * (double)st->in * st->out;
        fwd += f;
        if (i > 0) dx += f;
    }
    if (net->spec.heads == CR_CONVNET_PPO) { // actor and critic on the features
        const double f = 2.0 * B * net->features * (net->spec.num_actions + 1);
        fwd += f, dx += f;
    }
    return 2.0 * fwd + dx; // forward, dW (as many as forward), dx
}

static void usage(void) {
    fprintf(stderr, "usage: bench_convnet_cuda [--reps N >= 1] [--engine gemm|cudnn|igemm|all] "
                    "[--precision fp32|tf32|bf16|fp16|all] [--case K] [--batch N >= 1] "
                    "[--json FILE]\n");
    exit(2);
}

int main(int argc, char **argv) {
    int reps = 200;
    const char *json = NULL, *engine_arg = "all", *precision_arg = "all";
    int only_case = -1; // --case K: the K-th case of `cases` only (a profiler's run)
    int batch = 0;      // --batch N: every case at batch N (0: the case's own)
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
        else if (!strcmp(argv[i], "--engine") && i + 1 < argc) engine_arg = argv[++i];
        else if (!strcmp(argv[i], "--case") && i + 1 < argc) only_case = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) {
            batch = atoi(argv[++i]);
            if (batch < 1) usage();
        }
        else if (!strcmp(argv[i], "--precision") && i + 1 < argc) precision_arg = argv[++i];
        else usage();
    }
    if (reps < 1 || only_case >= NUM_CASES) usage();
    cr_convnet_engine engines[3];
    int n_engines = 0;
    if (!strcmp(engine_arg, "gemm") || !strcmp(engine_arg, "all"))
        engines[n_engines++] = CR_CONVNET_ENGINE_GEMM;
#ifdef CUDARL_WITH_CUDNN
    if (!strcmp(engine_arg, "cudnn") || !strcmp(engine_arg, "all"))
        engines[n_engines++] = CR_CONVNET_ENGINE_CUDNN;
    if (!strcmp(engine_arg, "igemm") || !strcmp(engine_arg, "all"))
        engines[n_engines++] = CR_CONVNET_ENGINE_IGEMM;
#endif
    if (!n_engines) usage();
    cudarl_precision precisions[CUDARL_PRECISION_COUNT];
    int n_precisions = 0;
    for (int q = 0; q < CUDARL_PRECISION_COUNT; q++)
        if (!strcmp(precision_arg, "all") ||
            !strcmp(precision_arg, cudarl_precision_name((cudarl_precision)q)))
            precisions[n_precisions++] = (cudarl_precision)q;
    if (!n_precisions) usage();

    cudarl_ctx ctx = {};
    OK(cr_cuda_ctx_init(&ctx, 0));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("Convolutional learner step (forward + backward + Adam), %s, median of %d\n\n",
           prop.name, reps);
    FILE *jf = json ? fopen(json, "w") : NULL;
    if (json && !jf) {
        fprintf(stderr, "cannot write %s\n", json);
        return 1;
    }
    if (jf) fprintf(jf, "{\"device\": \"%s\", \"reps\": %d, \"rows\": [", prop.name, reps);
    static char table[8192];
    size_t used = 0;
    int rows = 0;
    for (int k = 0; k < NUM_CASES; k++)
        for (int e = 0; e < n_engines && (only_case < 0 || k == only_case); e++)
            for (int q = 0; q < n_precisions; q++) {
                bench_case one = cases[k];
                if (batch) one.batch = batch;
                const bench_case *c = &one;
                const cudarl_precision pq = precisions[q];
                const int half = pq == CUDARL_PRECISION_BF16 || pq == CUDARL_PRECISION_FP16;
                if (half && engines[e] == CR_CONVNET_ENGINE_CUDNN) continue; // gemm or igemm
                if (!half && engines[e] == CR_CONVNET_ENGINE_IGEMM) continue; // bf16, fp16 only
                int changed = 0;
                OK(cr_precision_apply(&ctx, pq, &changed));
                step_bufs s;
                bufs_init(&ctx, &s, c, engines[e], pq);
                if ((k == 0 || k == NUM_CASES - 1) && q == 0)
                    printf("%s\n", cr_convnet_cuda_describe(s.cn));
                double eager = median_ms(&ctx, &s, NULL, reps);
                void *graph = NULL;
                OK(ctx.ops->graph_begin(&ctx));
                step(&ctx, &s);
                OK(ctx.ops->graph_end(&ctx, &graph));
                double replay = median_ms(&ctx, &s, graph, reps);
                ctx.ops->graph_free(graph);
                const double fl = step_flops(&s.net, c->batch);
                const char *eng = cr_convnet_cuda_engine_name(engines[e]);
                const char *prec = cudarl_precision_name(precisions[q]);
                used += (size_t)snprintf(table + used, sizeof table - used,
                                         "| %s %s | %d | %s | %s | %.3f | %.3f | %.2f |\n",
                                         c->name, c->module, c->batch, eng, prec, eager, replay,
                                         fl / (replay * 1e-3) / 1e12);
                if (used >= sizeof table) used = sizeof table - 1;
                if (jf)
                    fprintf(jf, "%s\n  {\"net\": \"%s\", \"module\": \"%s\", \"batch\": %d, "
                            "\"engine\": \"%s\", \"precision\": \"%s\", \"params\": %zu, "
                            "\"eager_ms\": %.6f, \"graph_ms\": %.6f, \"gflop\": %.6f}",
                            rows ? "," : "", c->name, c->module, c->batch, eng, prec,
                            s.net.num_params, eager, replay, fl / 1e9);
                rows++;
                bufs_free(&ctx, &s);
                if (changed) cr_precision_restore(&ctx);
            }
    printf("| network | batch | conv engine | precision | eager step ms | graph step ms "
           "| TFLOP/s (graph) |\n|---|---:|---|---|---:|---:|---:|\n%s\n", table);
    if (jf) {
        fprintf(jf, "\n]}\n");
        fclose(jf);
    }
    cr_cuda_ctx_free(&ctx);
    return 0;
}
