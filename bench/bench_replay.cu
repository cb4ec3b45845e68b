// Replay buffer, CUDA twin: GPU time of insert (1,024 envs, one 84x84 uint8 frame each) and of
// sampling 32 and 1,024 stacked transitions (stack 4), uniform and prioritized, in a full
// 1M-capacity buffer. Two ways, median of many repetitions each:
//   call   one call between two cudaEvents on the context's stream (GPU time incl. the gaps
//          between its kernels and the launch latency, as bench/peers/replay_peers.py measures);
//   graph  GRAPH_CALLS calls captured in one CUDA graph, the graph's launch between two events,
//          divided by GRAPH_CALLS: the GPU time of a call inside a captured learner step (DQN
//          captures its steps so), without the launch latency.
// Usage: bench_replay [capacity] [reps]     (defaults 1048576 200; capacity a multiple of 1024)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

extern "C" {
#include "ops/backend.h"
#include "ops/cuda/cuda_backend.h"
#include "replay/replay_cuda.h"
}

#include "bench_check.cuh"

static const int E = 1024, FE = 84 * 84, K = 4, MAXB = 1024;

static const int GRAPH_CALLS = 20;

// Median over `reps` rounds (after `warm` untimed ones) of the GPU time between two events
// around launch(), in microseconds.
template <typename F> static double median_event_us(cudaStream_t st, int reps, int warm, F launch) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<float> t;
    for (int r = 0; r < reps + warm; r++) {
        CK(cudaEventRecord(a, st));
        launch();
        CK(cudaEventRecord(b, st));
        CK(cudaEventSynchronize(b));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, a, b));
        if (r >= warm) t.push_back(ms);
    }
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    std::sort(t.begin(), t.end());
    return 1000.0 * t[t.size() / 2];
}

// One call of f between the events.
template <typename F> static double median_us(cudaStream_t st, int reps, F f) {
    return median_event_us(st, reps, 5, f);
}

// GRAPH_CALLS calls of f captured in one graph; the graph's launch between the events, per call.
template <typename F> static double graph_us(cudaStream_t st, int reps, F f) {
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < GRAPH_CALLS; i++) f();
    CK(cudaStreamEndCapture(st, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    double us = median_event_us(st, reps / 4, 3, [&] { CK(cudaGraphLaunch(ge, st)); });
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
    return us / GRAPH_CALLS;
}

static void run(cudarl_ctx *ctx, int64_t capacity, int prio, int reps) {
    cr_replay_spec sp = {};
    sp.capacity = capacity, sp.num_envs = E, sp.frame_elems = FE, sp.dtype = CR_REPLAY_UINT8;
    sp.stack = K, sp.prioritized = prio, sp.alpha = 0.6f, sp.beta0 = 0.4f, sp.beta_steps = 100000;
    cr_plan plan;
    cr_plan_init(&plan);
    int i_obs = cr_plan_add(&plan, "obs", (size_t)E * FE);
    int i_fin = cr_plan_add(&plan, "fin", (size_t)E * FE);
    int i_term = cr_plan_add(&plan, "term", E);
    int i_trunc = cr_plan_add(&plan, "trunc", E);
    int i_act = cr_plan_add(&plan, "act", E * 4);
    int i_rew = cr_plan_add(&plan, "rew", E * 4);
    int i_bo = cr_plan_add(&plan, "b.obs", (size_t)MAXB * K * FE);
    int i_bn = cr_plan_add(&plan, "b.next", (size_t)MAXB * K * FE);
    int i_bwin = cr_plan_add(&plan, "b.window", (size_t)MAXB * (K + 1) * FE);
    int i_ba = cr_plan_add(&plan, "b.act", MAXB * 4);
    int i_br = cr_plan_add(&plan, "b.rew", MAXB * 4);
    int i_bt = cr_plan_add(&plan, "b.term", MAXB);
    int i_bu = cr_plan_add(&plan, "b.trunc", MAXB);
    int i_bi = cr_plan_add(&plan, "b.idx", MAXB * 8);
    int i_bw = cr_plan_add(&plan, "b.w", MAXB * 4);
    int i_td = cr_plan_add(&plan, "td", MAXB * 4);
    int i_s = cr_plan_add(&plan, "stream", sizeof(cr_rng_stream));
    int first = plan.count;
    OK(cr_replay_cuda_plan(&sp, MAXB, &plan));
    size_t replay_bytes = 0;
    for (int i = first; i < plan.count; i++) replay_bytes += plan.sizes[i];
    cr_arena arena;
    OK(ctx->ops->arena_alloc(ctx, &arena, &plan));
    cr_replay_cuda rc;
    OK(cr_replay_cuda_init(ctx, &rc, &sp, MAXB, &arena, first));
    auto G = [&](int i) { return cr_arena_get(&arena, i); };
    cudaStream_t st = (cudaStream_t)ctx->stream;
    CK(cudaMemsetAsync(G(i_obs), 77, (size_t)E * FE, st));
    CK(cudaMemsetAsync(G(i_fin), 99, (size_t)E * FE, st));
    cr_rng_stream s;
    cr_rng_stream_seed(&s, 1, 2);
    ctx->ops->copy_from_host(ctx, G(i_s), &s, sizeof s);
    std::vector<uint8_t> term(E), trunc(E);
    // Fill the ring (and wrap it once) with episodes of varied lengths.
    int64_t steps = capacity / E + 64;
    for (int64_t t = 0; t < steps; t++) {
        for (int e = 0; e < E; e++) {
            int64_t c = (t + e * 7) % (50 + e % 37);
            term[e] = c == 0;
            trunc[e] = c == 1 && e % 5 == 0;
        }
        ctx->ops->copy_from_host(ctx, G(i_term), term.data(), E);
        ctx->ops->copy_from_host(ctx, G(i_trunc), trunc.data(), E);
        cr_replay_cuda_insert(ctx, &rc, G(i_obs), (int32_t *)G(i_act), (float *)G(i_rew),
                              (uint8_t *)G(i_term), (uint8_t *)G(i_trunc), G(i_fin));
    }
    CK(cudaMemsetAsync(G(i_term), 0, E, st));
    CK(cudaMemsetAsync(G(i_trunc), 0, E, st));
    CK(cudaStreamSynchronize(st));
    auto insert = [&] {
        cr_replay_cuda_insert(ctx, &rc, G(i_obs), (int32_t *)G(i_act), (float *)G(i_rew),
                              (uint8_t *)G(i_term), (uint8_t *)G(i_trunc), G(i_fin));
    };
    double ins[2] = {median_us(st, reps, insert), graph_us(st, reps, insert)};
    cr_replay_batch out = {G(i_bo), G(i_bn), (int32_t *)G(i_ba), (float *)G(i_br),
                           (uint8_t *)G(i_bt), (uint8_t *)G(i_bu), (int64_t *)G(i_bi),
                           (float *)G(i_bw), NULL};
    // the window layout: obs and next_obs as two views of one (B, K + 1) row (replay.h)
    cr_replay_batch win = out;
    win.obs = win.next_obs = NULL, win.window = G(i_bwin);
    cr_rng_stream *ds = (cr_rng_stream *)G(i_s);
    // [way][batch]: way 0 one call, 1 in a graph
    double su[2][2], sw[2][2], sprio[2][2] = {{0, 0}, {0, 0}}, upd[2] = {0, 0};
    int Bs[2] = {32, 1024};
    for (int j = 0; j < 2; j++) {
        int B = Bs[j];
        auto uni = [&] { OK(cr_replay_cuda_sample_uniform(ctx, &rc, ds, B, &out)); };
        auto pri = [&] { OK(cr_replay_cuda_sample_prioritized(ctx, &rc, ds, B, 1000, &out)); };
        auto uw = [&] { OK(cr_replay_cuda_sample_uniform(ctx, &rc, ds, B, &win)); };
        su[0][j] = median_us(st, reps, uni), su[1][j] = graph_us(st, reps, uni);
        sw[0][j] = median_us(st, reps, uw), sw[1][j] = graph_us(st, reps, uw);
        if (prio) sprio[0][j] = median_us(st, reps, pri), sprio[1][j] = graph_us(st, reps, pri);
    }
    if (prio) {
        CK(cudaMemsetAsync(G(i_td), 0, MAXB * 4, st));
        auto up = [&] {
            OK(cr_replay_cuda_update_priorities(ctx, &rc, (int64_t *)G(i_bi), (float *)G(i_td),
                                                MAXB, 1e-3f));
        };
        upd[0] = median_us(st, reps, up), upd[1] = graph_us(st, reps, up);
    }
    if (cr_replay_cuda_errors(ctx, &rc)) fprintf(stderr, "device error bits set\n");
    for (int way = 0; way < 2; way++) {
        char p32[32] = "-", p1k[32] = "-", pu[32] = "-";
        if (prio) {
            snprintf(p32, sizeof p32, "%.1f", sprio[way][0]);
            snprintf(p1k, sizeof p1k, "%.1f", sprio[way][1]);
            snprintf(pu, sizeof pu, "%.1f", upd[way]);
        }
        printf("| %s | %s | %lld | %.2f GB | %.1f us (%.1fM/s) | %.1f | %.1f | %.1f | %.1f | %s | "
               "%s | %s |\n",
               prio ? "prioritized" : "uniform", way ? "graph" : "call", (long long)capacity,
               replay_bytes / 1e9, ins[way], E / ins[way], su[way][0], su[way][1], sw[way][0],
               sw[way][1], p32, p1k, pu);
    }
    fflush(stdout);
    ctx->ops->arena_free(ctx, &arena);
}

int main(int argc, char **argv) {
    int64_t capacity = argc > 1 ? atoll(argv[1]) : 1048576;
    int reps = argc > 2 ? atoi(argv[2]) : 200;
    cudarl_ctx ctx;
    if (cr_cuda_ctx_init(&ctx, 0) != CUDARL_OK) {
        fprintf(stderr, "bench_replay needs a CUDA GPU: %s\n", cudarl_last_error());
        return 1;
    }
    printf("replay buffer (CUDA): %d envs, 84x84 uint8 frames, stack %d; GPU time, median of %d "
           "(call: one call between events; graph: per call of %d captured in a graph); "
           "uniform: obs and next_obs (B, K) each; window: one (B, K + 1) row per sample, read "
           "as both (replay.h)\n\n",
           E, K, reps, GRAPH_CALLS);
    printf("| buffer | timed | capacity | device bytes | insert 1,024 | uniform 32 (us) | "
           "uniform 1,024 (us) | window 32 (us) | window 1,024 (us) | prio 32 (us) | prio 1,024 (us) | update "
           "1,024 (us) |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    run(&ctx, capacity, 0, reps);
    run(&ctx, capacity, 1, reps);
    printf("\ntargets (issue 5): insert >= 50M transitions/s (<= 20.5 us per 1,024); sample 32 "
           "<= 10 us; 1,024 <= 30 us\n");
    cr_cuda_ctx_free(&ctx);
    return 0;
}
