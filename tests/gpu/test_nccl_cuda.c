/* The GPU's gradient mean over NCCL (ops/cuda/comm_nccl.cu; docs/multigpu.md), on one GPU:
 *   sum    the rank-order summing kernel against its CPU twin cr_comm_sum_ranks_f32, bit for bit,
 *          for 1..8 ranks' vectors whose sums depend on their order (checked: the reverse order
 *          gives other bits), lengths past one grid's stride included;
 *   mean   --num-gpus 1's communicator (cr_comm_local_gpus(1), cr_comm_dev_open): the mean of one
 *          rank's vector is that vector bit for bit, launched plainly and replayed from a CUDA
 *          graph that captured the NCCL exchange, as the trainer's update graph does.
 * Usage: test_nccl_cuda [sum|mean]   (both when omitted). Needs a GPU (label gpu). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops/backend.h"
#include "ops/comm.h"
#include "ops/cuda/cuda_backend.h"

static cr_philox_state prng;

/* Values of exponents from 2^-20 to 2^20, both signs: float sums of them depend on the order. */
static float wild(void) {
    float u = (float)(cr_philox_next_u32(&prng) >> 8) * (1.0f / 16777216.0f) - 0.5f;
    int e = (int)(cr_philox_next_u32(&prng) % 41) - 20;
    return ldexpf(u, e);
}

static void *dev_alloc(cudarl_ctx *ctx, cr_arena *a, size_t bytes) {
    cr_plan pl;
    cr_plan_init(&pl);
    cr_plan_add(&pl, "buf", bytes);
    CHECK_OK(ctx->ops->arena_alloc(ctx, a, &pl));
    return cr_arena_get(a, 0);
}

static void test_sum(cudarl_ctx *ctx) {
    static const int ranks[] = {1, 2, 3, 5, 8};
    static const size_t lens[] = {1, 1000, ((size_t)1 << 20) + 7 + 4096 * 256};
    int order_matters = 0;
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        for (size_t ri = 0; ri < sizeof ranks / sizeof ranks[0]; ri++) {
            const int R = ranks[ri];
            const size_t n = lens[li], all_bytes = (size_t)R * n * sizeof(float);
            float *all = malloc(all_bytes), *want = malloc(n * sizeof(float));
            float *got = malloc(n * sizeof(float));
            CHECK(all && want && got);
            for (size_t i = 0; i < (size_t)R * n; i++) all[i] = wild();
            cr_comm_sum_ranks_f32(all, want, n, R);
            if (R >= 3)
                for (size_t i = 0; i < n && !order_matters; i++) {
                    float s = all[(size_t)(R - 1) * n + i];
                    for (int r = R - 2; r >= 0; r--) s += all[(size_t)r * n + i];
                    s *= 1.0f / (float)R;
                    if (memcmp(&s, &want[i], sizeof s) != 0) order_matters = 1;
                }
            cr_arena a_all, a_out;
            float *d_all = dev_alloc(ctx, &a_all, all_bytes);
            float *d_out = dev_alloc(ctx, &a_out, n * sizeof(float));
            ctx->ops->copy_from_host(ctx, d_all, all, all_bytes);
            cr_cuda_sum_ranks_f32(ctx, d_all, d_out, n, R);
            memset(got, 0xFF, n * sizeof(float));
            ctx->ops->copy_to_host(ctx, got, d_out, n * sizeof(float));
            ctx->ops->sync(ctx);
            for (size_t i = 0; i < n; i++)
                CHECK_MSG(memcmp(&got[i], &want[i], sizeof(float)) == 0,
                          "%d ranks, n %zu: element %zu is %.9g on the GPU, %.9g on the CPU", R,
                          n, i, (double)got[i], (double)want[i]);
            ctx->ops->arena_free(ctx, &a_all);
            ctx->ops->arena_free(ctx, &a_out);
            free(all), free(want), free(got);
        }
    }
    CHECK_MSG(order_matters, "the test's vectors sum to the same bits in either order: it could "
                             "not tell a kernel that sums in another order");
    printf("sum: the GPU's rank-order sum equals cr_comm_sum_ranks_f32 bit for bit (1..8 ranks, "
           "up to %zu floats)\n", lens[2]);
}

static void test_mean(cudarl_ctx *ctx) {
    const size_t n = 9000; /* about CartPole's MLP actor-critic */
    float *h = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
    CHECK(h && got);
    for (size_t i = 0; i < n; i++) h[i] = wild();
    cr_arena a_buf, a_scratch;
    float *buf = dev_alloc(ctx, &a_buf, n * sizeof(float));
    float *scratch = dev_alloc(ctx, &a_scratch, n * sizeof(float)); /* 1 rank x n */
    CHECK_OK(cr_comm_dev_open(ctx, scratch, n));
    CHECK(ctx->comm != NULL);
    ctx->ops->copy_from_host(ctx, buf, h, n * sizeof(float));
    cr_comm_dev_mean_f32(ctx, buf, scratch, n);
    memset(got, 0xFF, n * sizeof(float));
    ctx->ops->copy_to_host(ctx, got, buf, n * sizeof(float));
    ctx->ops->sync(ctx);
    CHECK_MSG(memcmp(got, h, n * sizeof(float)) == 0, "the mean of one rank's vector is not it");
    /* captured into a graph (the trainer's update graph holds the exchange), then replayed */
    void *graph = NULL;
    CHECK(ctx->ops->graph_begin);
    CHECK_OK(ctx->ops->graph_begin(ctx));
    cr_comm_dev_mean_f32(ctx, buf, scratch, n);
    CHECK_OK(ctx->ops->graph_end(ctx, &graph));
    for (size_t i = 0; i < n; i++) h[i] = wild();
    ctx->ops->copy_from_host(ctx, buf, h, n * sizeof(float));
    ctx->ops->zero(ctx, scratch, n * sizeof(float));
    ctx->ops->graph_launch(ctx, graph);
    memset(got, 0xFF, n * sizeof(float));
    ctx->ops->copy_to_host(ctx, got, buf, n * sizeof(float));
    ctx->ops->sync(ctx);
    CHECK_MSG(memcmp(got, h, n * sizeof(float)) == 0,
              "the graph-replayed mean of one rank's vector is not it");
    ctx->ops->graph_free(graph);
    cr_comm_dev_close(ctx);
    CHECK(ctx->comm == NULL);
    ctx->ops->arena_free(ctx, &a_buf);
    ctx->ops->arena_free(ctx, &a_scratch);
    free(h), free(got);
    printf("mean: --num-gpus 1's NCCL mean returns the vector bit for bit, plain and from a "
           "CUDA graph\n");
}

int main(int argc, char **argv) {
    const char *only = argc > 1 ? argv[1] : NULL;
    if (only && strcmp(only, "sum") && strcmp(only, "mean")) {
        fprintf(stderr, "usage: test_nccl_cuda [sum|mean]\n");
        return 2;
    }
    cr_philox_seed(&prng, 28, 0);
    CHECK_MSG(cr_comm_nccl_built(), "this build has no NCCL: the test is registered with it only");
    CHECK_OK(cr_comm_local_gpus(1));
    cudarl_ctx *ctx;
    CHECK_MSG(cudarl_ctx_init(&ctx, CUDARL_DEVICE_CUDA, 0) == CUDARL_OK, "no GPU: %s",
              cudarl_last_error());
    if (!only || !strcmp(only, "sum")) test_sum(ctx);
    if (!only || !strcmp(only, "mean")) test_mean(ctx);
    cudarl_ctx_free(ctx);
    return 0;
}
