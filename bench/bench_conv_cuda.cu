// Nature-CNN conv trunk on the device (cuDNN through src/ops/cuda/conv2d_cudnn.cu): GPU time of each
// layer's forward (ReLU fused) and backward (ReLU mask applied; conv1 without dx, as a training
// step) and of the whole trunk forward + backward, at batch 32 (a DQN minibatch) and 256 (a PPO
// minibatch). Each figure is the median of `reps` cudaEvent-timed calls on the context's stream
// (one call, or the trunk's sequence, between two events: GPU time incl. the gaps between its
// kernels), after 5 untimed ones; GFLOP/s counts a multiply-add as 2 flops.
// Usage: bench_conv_cuda [reps]     (default 50)
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>
#include <cudnn.h>

extern "C" {
#include "ops/backend.h"
#include "ops/cuda/cuda_backend.h"
}
#include "ops/cuda/conv2d_cuda.h"

#include "bench_check.cuh"

#define LAYERS 3
#define WARMUP 5

// N, C, H, W, K, R, S, stride (batch set per run): 84x84x4 -> 32@8x8/4 -> 64@4x4/2 -> 64@3x3/1.
static const int trunk[LAYERS][8] = {{0, 4, 84, 84, 32, 8, 8, 4},
                                     {0, 32, 20, 20, 64, 4, 4, 2},
                                     {0, 64, 9, 9, 64, 3, 3, 1}};

struct net {
    cr_conv2d_shape s[LAYERS];
    cr_cuda_conv2d_plan *plan[LAYERS];
    // act[0] = x, act[l + 1] = layer l's output; grad[l] = dy of layer l (grad[0] NULL)
    float *act[LAYERS + 1], *grad[LAYERS + 1], *w[LAYERS], *b[LAYERS], *dw[LAYERS], *db[LAYERS];
    void *ws;
    cr_arena arena;
};

enum { FWD, BWD, BOTH };

static void run_layer(cudarl_ctx *ctx, net *n, int l, int dir) {
    if (dir == FWD)
        cr_cuda_conv2d_forward(ctx, n->plan[l], n->act[l], n->w[l], n->b[l], n->act[l + 1], 1,
                               n->ws);
    else
        cr_cuda_conv2d_backward(ctx, n->plan[l], n->act[l], n->w[l], n->act[l + 1],
                                n->grad[l + 1], l > 0 ? n->grad[l] : NULL, n->dw[l], n->db[l],
                                n->ws);
}

// The trunk's forwards (FWD), backwards (BWD) or both, in training order.
static void run_trunk(cudarl_ctx *ctx, net *n, int dir) {
    if (dir != BWD)
        for (int l = 0; l < LAYERS; l++) run_layer(ctx, n, l, FWD);
    if (dir != FWD)
        for (int l = LAYERS - 1; l >= 0; l--) run_layer(ctx, n, l, BWD);
}

static int by_value(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

// Median milliseconds of layer l in direction dir (FWD or BWD), or of the trunk when l < 0.
static double median_ms(cudarl_ctx *ctx, net *n, int l, int dir, int reps) {
    cudaStream_t st = (cudaStream_t)ctx->stream;
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    float *t = (float *)malloc(sizeof(float) * (size_t)reps);
    if (!t) exit(1);
    for (int r = 0; r < reps + WARMUP; r++) {
        CK(cudaEventRecord(a, st));
        if (l < 0) run_trunk(ctx, n, dir);
        else run_layer(ctx, n, l, dir);
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

// Multiply-adds x 2 of layer s's forward (one product over the batch); the backward does it
// once for dw and once more for dx.
static double flops(const cr_conv2d_shape *s) {
    return 2.0 * s->N * s->K * s->P * s->Q * (double)s->C * s->R * s->S;
}

static void net_init(cudarl_ctx *ctx, net *n, int batch) {
    cr_plan p;
    cr_plan_init(&p);
    int i_act[LAYERS + 1], i_grad[LAYERS + 1], i_w[LAYERS], i_b[LAYERS], i_dw[LAYERS],
        i_db[LAYERS];
    size_t ws = 0;
    for (int l = 0; l < LAYERS; l++) {
        const int *a = trunk[l];
        cr_conv2d_shape s = {};
        s.N = batch, s.C = a[1], s.H = a[2], s.W = a[3], s.K = a[4], s.R = a[5], s.S = a[6];
        s.stride = a[7], s.pad = 0;
        n->s[l] = s;
        OK(cr_cuda_conv2d_plan_init(ctx, &n->s[l], &n->plan[l]));
        n->s[l] = *cr_cuda_conv2d_plan_shape(n->plan[l]);
        size_t b = cr_cuda_conv2d_workspace_bytes(n->plan[l]);
        ws = b > ws ? b : ws;
    }
    for (int l = 0; l < LAYERS; l++) {
        const cr_conv2d_shape *s = &n->s[l];
        size_t x = (size_t)s->N * s->C * s->H * s->W, y = (size_t)s->N * s->K * s->P * s->Q;
        size_t w = (size_t)s->K * s->C * s->R * s->S;
        if (l == 0) i_act[0] = cr_plan_add(&p, "x", x * sizeof(float));
        i_grad[l] = l > 0 ? cr_plan_add(&p, "dx", x * sizeof(float)) : -1; // conv1: no dx
        i_act[l + 1] = cr_plan_add(&p, "y", y * sizeof(float));
        if (l == LAYERS - 1) i_grad[LAYERS] = cr_plan_add(&p, "dy", y * sizeof(float));
        i_w[l] = cr_plan_add(&p, "w", w * sizeof(float));
        i_dw[l] = cr_plan_add(&p, "dw", w * sizeof(float));
        i_b[l] = cr_plan_add(&p, "b", (size_t)s->K * sizeof(float));
        i_db[l] = cr_plan_add(&p, "db", (size_t)s->K * sizeof(float));
    }
    int i_ws = cr_plan_add(&p, "workspace", ws);
    OK(ctx->ops->arena_alloc(ctx, &n->arena, &p));
    for (int l = 0; l <= LAYERS; l++) {
        n->act[l] = (float *)cr_arena_get(&n->arena, i_act[l]);
        n->grad[l] = i_grad[l] >= 0 ? (float *)cr_arena_get(&n->arena, i_grad[l]) : NULL;
    }
    for (int l = 0; l < LAYERS; l++) {
        n->w[l] = (float *)cr_arena_get(&n->arena, i_w[l]);
        n->b[l] = (float *)cr_arena_get(&n->arena, i_b[l]);
        n->dw[l] = (float *)cr_arena_get(&n->arena, i_dw[l]);
        n->db[l] = (float *)cr_arena_get(&n->arena, i_db[l]);
    }
    n->ws = cr_arena_get(&n->arena, i_ws);
    // Inputs: x, weights, biases and the trunk's output gradient, uniform in [-0.5, 0.5).
    cr_philox_state rng;
    cr_philox_seed(&rng, 7, 0);
    float *in[] = {n->act[0], n->grad[LAYERS], n->w[0], n->w[1], n->w[2], n->b[0], n->b[1],
                   n->b[2]};
    int items[] = {i_act[0], i_grad[LAYERS], i_w[0], i_w[1], i_w[2], i_b[0], i_b[1], i_b[2]};
    for (int i = 0; i < 8; i++) {
        size_t count = p.sizes[items[i]] / sizeof(float);
        float *h = (float *)malloc(count * sizeof(float));
        if (!h) exit(1);
        for (size_t j = 0; j < count; j++) h[j] = cr_philox_uniform(&rng) - 0.5f;
        ctx->ops->copy_from_host(ctx, in[i], h, count * sizeof(float));
        free(h);
    }
}

static void net_free(cudarl_ctx *ctx, net *n) {
    for (int l = 0; l < LAYERS; l++) cr_cuda_conv2d_plan_free(n->plan[l]);
    ctx->ops->arena_free(ctx, &n->arena);
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 50;
    if (reps < 1) {
        fprintf(stderr, "usage: bench_conv_cuda [reps >= 1]\n");
        return 2;
    }
    cudarl_ctx ctx = {};
    OK(cr_cuda_ctx_init(&ctx, 0));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("Nature-CNN conv trunk, cuDNN %zu, %s, median of %d\n\n", cudnnGetVersion(), prop.name,
           reps);
    static const int batches[] = {32, 256};
    for (int bi = 0; bi < 2; bi++) {
        net n;
        net_init(&ctx, &n, batches[bi]);
        for (int l = 0; l < LAYERS; l++) printf("%s\n", cr_cuda_conv2d_plan_describe(n.plan[l]));
        printf("\n| batch | layer | forward ms | backward ms | fwd+bwd ms | GFLOP/s fwd+bwd |\n"
               "|---:|---|---:|---:|---:|---:|\n");
        double total = 0; // flops of the trunk's forward and backward
        for (int l = 0; l < LAYERS; l++) {
            double f = median_ms(&ctx, &n, l, FWD, reps), b = median_ms(&ctx, &n, l, BWD, reps);
            double fl = flops(&n.s[l]) * (l > 0 ? 3 : 2); // forward, dw, and dx after conv1
            total += fl;
            printf("| %d | conv%d | %.3f | %.3f | %.3f (sum) | %.0f |\n", batches[bi], l + 1, f,
                   b, f + b, fl / (f + b) / 1e6);
        }
        double f = median_ms(&ctx, &n, -1, FWD, reps), b = median_ms(&ctx, &n, -1, BWD, reps);
        double t = median_ms(&ctx, &n, -1, BOTH, reps);
        printf("| %d | trunk | %.3f | %.3f | %.3f | %.0f |\n\n", batches[bi], f, b, t,
               total / t / 1e6);
        net_free(&ctx, &n);
    }
    cr_cuda_ctx_free(&ctx);
    return 0;
}
