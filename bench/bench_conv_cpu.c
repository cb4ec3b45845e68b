/* Microbenchmark of the CPU convolution ops at the Nature-CNN's shapes (84x84x4 frames, conv
 * 32@8x8/4, 64@4x4/2, 64@3x3/1, then fc 3136 -> 512 for comparison), per layer and for the conv
 * trunk: milliseconds per call and GFLOP/s (a multiply-add counts as 2 flops). The first layer's
 * backward skips dx, as a training step does; every layer has its ReLU fused.
 * Usage: bench_conv_cpu [batch [threads]]   (default: 32 1) */
#include <stdio.h>
#include <stdlib.h>

#include "core/core.h"
#include "ops/cpu/ops_conv.h"
#include "ops/cpu/ops_cpu.h"
#include "ops/cpu/ops_dqn.h"

#define LAYERS 3

typedef struct layer {
    cr_conv2d_shape s;
    float *x, *w, *b, *y, *dy, *dx, *dw, *db; /* x (N,C,H,W), w (K,C,R,S), b (K), y (N,K,P,Q) */
} layer;

/* n uniform floats in [0, 1), 64-byte aligned like the arenas' buffers. */
static float *random_floats(cr_philox_state *rng, size_t n) {
    float *p = aligned_alloc(64, (n * sizeof *p + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "bench_conv_cpu: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) p[i] = cr_philox_uniform(rng);
    return p;
}

static void run(layer *l, int backward, void *scratch) {
    if (backward)
        cr_cpu_conv2d_backward(&l->s, l->x, l->w, l->y, l->dy, l->dx, l->dw, l->db, scratch);
    else
        cr_cpu_conv2d_forward(&l->s, l->x, l->w, l->b, l->y, 1, scratch);
}

/* Best-of-5 seconds per call of layers [l0, l1), each sample >= 50 ms. */
static double time_layers(layer *L, int l0, int l1, int backward, void *scratch) {
    int reps = 1;
    double best = 1e30;
    for (;;) {
        double t0 = cr_time_now();
        for (int r = 0; r < reps; r++)
            for (int l = l0; l < l1; l++) run(&L[l], backward, scratch);
        if (cr_time_now() - t0 >= 0.05) break;
        reps *= 2;
    }
    for (int k = 0; k < 5; k++) {
        double t0 = cr_time_now();
        for (int r = 0; r < reps; r++)
            for (int l = l0; l < l1; l++) run(&L[l], backward, scratch);
        double t = (cr_time_now() - t0) / reps;
        best = t < best ? t : best;
    }
    return best;
}

/* The fully connected layer after the trunk, y = relu(x w^T + b), x (N, 3136), w (512, 3136). */
static void bench_fc(int N, cr_philox_state *rng) {
    enum { I = 3136, O = 512 };
    float *x = random_floats(rng, (size_t)N * I), *w = random_floats(rng, (size_t)O * I);
    float *b = random_floats(rng, O), *y = random_floats(rng, (size_t)N * O);
    float *dy = random_floats(rng, (size_t)N * O), *dx = random_floats(rng, (size_t)N * I);
    float *dw = random_floats(rng, (size_t)O * I), *db = random_floats(rng, O);
    for (int bwd = 0; bwd < 2; bwd++) {
        int reps = 1;
        double best = 1e30;
        for (int k = 0; k < 6; k++) {
            double t0 = cr_time_now();
            for (int r = 0; r < reps; r++) {
                if (bwd) {
                    cr_cpu_relu_backward(y, dy, dy, (size_t)N * O);
                    cr_cpu_linear_backward(dy, x, w, dx, dw, db, N, I, O);
                } else {
                    cr_cpu_linear_relu_forward(x, w, b, y, N, I, O);
                }
            }
            double t = (cr_time_now() - t0) / reps;
            if (k == 0) reps = t < 0.05 ? (int)(0.05 / t) + 1 : 1; /* the first run sizes reps */
            else best = t < best ? t : best;
        }
        double macs = (double)N * I * O * (bwd ? 2 : 1);
        printf("%-14s %-8s %8.2f ms  %7.1f GFLOP/s\n", "fc 3136->512", bwd ? "backward" : "forward",
               best * 1e3, 2 * macs / best * 1e-9);
    }
    free(x), free(w), free(b), free(y), free(dy), free(dx), free(dw), free(db);
}

static double layer_macs(const cr_conv2d_shape *s) {
    return (double)s->N * s->K * s->P * s->Q * s->C * s->R * s->S;
}

int main(int argc, char **argv) {
    int N = argc > 1 ? atoi(argv[1]) : 32, threads = argc > 2 ? atoi(argv[2]) : 1;
    static const int dims[LAYERS][6] = {{4, 84, 32, 8, 4}, {32, 20, 64, 4, 2}, {64, 9, 64, 3, 1}};
    cr_philox_state rng;
    cr_philox_seed(&rng, 1, 0);
    layer L[LAYERS];
    size_t scratch_bytes = 0;
    for (int i = 0; i < LAYERS; i++) {
        cr_conv2d_shape s = {.N = N, .C = dims[i][0], .H = dims[i][1], .W = dims[i][1],
                             .K = dims[i][2], .R = dims[i][3], .S = dims[i][3],
                             .stride = dims[i][4]};
        if (cr_conv2d_shape_check(&s) != CUDARL_OK) {
            fprintf(stderr, "bench_conv_cpu: %s\n", cudarl_last_error());
            return 1;
        }
        size_t nx = (size_t)N * s.C * s.H * s.W, ny = (size_t)N * s.K * s.P * s.Q;
        size_t nw = (size_t)s.K * s.C * s.R * s.S;
        L[i] = (layer){s,
                       random_floats(&rng, nx),
                       random_floats(&rng, nw),
                       random_floats(&rng, (size_t)s.K),
                       random_floats(&rng, ny),
                       random_floats(&rng, ny),
                       i ? random_floats(&rng, nx) : NULL,
                       random_floats(&rng, nw),
                       random_floats(&rng, (size_t)s.K)};
        size_t b = cr_cpu_conv2d_scratch_bytes(&s);
        scratch_bytes = b > scratch_bytes ? b : scratch_bytes;
    }
    void *scratch = random_floats(&rng, scratch_bytes / sizeof(float));
    cr_cpu_set_threads(threads);
    printf("Nature-CNN convolutions, N=%d, threads=%d, scratch %.2f MB\n", N, threads,
           scratch_bytes / 1e6);
    double total[2] = {0, 0}, total_macs[2] = {0, 0};
    for (int i = 0; i <= LAYERS; i++) {
        int l0 = i < LAYERS ? i : 0, l1 = i < LAYERS ? i + 1 : LAYERS;
        for (int bwd = 0; bwd < 2; bwd++) {
            double macs = 0;
            for (int l = l0; l < l1; l++)
                macs += layer_macs(&L[l].s) * (bwd ? (L[l].dx ? 2 : 1) : 1);
            double t = time_layers(L, l0, l1, bwd, scratch);
            if (i < LAYERS) total[bwd] += t, total_macs[bwd] += macs;
            char name[32];
            if (i < LAYERS)
                snprintf(name, sizeof name, "conv%d %dx%d/%d", i + 1, L[i].s.R, L[i].s.S,
                         L[i].s.stride);
            else
                snprintf(name, sizeof name, "trunk");
            printf("%-14s %-8s %8.2f ms  %7.1f GFLOP/s\n", name, bwd ? "backward" : "forward",
                   t * 1e3, 2 * macs / t * 1e-9);
        }
    }
    bench_fc(N, &rng);
    for (int i = 0; i < LAYERS; i++)
        free(L[i].x), free(L[i].w), free(L[i].b), free(L[i].y), free(L[i].dy), free(L[i].dx),
            free(L[i].dw), free(L[i].db);
    free(scratch);
    return 0;
}
