/* Microbenchmark of the CPU linear ops: GFLOP/s of forward, fused forward + tanh and backward
 * at the PPO MLP's shapes (B = 256 rows of a minibatch, 64-64 hidden layers, the 4-input first
 * layer and the 2- and 1-output heads).
 * Usage: bench_ops_cpu [threads ...]   (default: 1 and 2) */
#include <stdio.h>
#include <stdlib.h>

#include "core/core.h"
#include "ops/cpu/ops_cpu.h"

typedef struct shape {
    int B, I, O;
} shape;

typedef struct bufs {
    float *x, *w, *b, *y, *dy, *dx, *dw, *db;
} bufs;

/* n uniform floats in [-1, 1), 64-byte aligned like the arenas' buffers. */
static float *random_floats(cr_philox_state *rng, size_t n) {
    float *p = aligned_alloc(64, (n * sizeof *p + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "bench_ops_cpu: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) p[i] = 2.0f * cr_philox_uniform(rng) - 1.0f;
    return p;
}

enum { OP_FORWARD, OP_FORWARD_TANH, OP_BACKWARD, OP_BACKWARD_NO_DX, OP_COUNT };
static const char *op_names[OP_COUNT] = {"forward", "forward+tanh", "backward", "backward(no dx)"};

static void run_op(int op, const bufs *m, shape s) {
    switch (op) {
    case OP_FORWARD: cr_cpu_linear_forward(m->x, m->w, m->b, m->y, s.B, s.I, s.O); break;
    case OP_FORWARD_TANH: cr_cpu_linear_tanh_forward(m->x, m->w, m->b, m->y, s.B, s.I, s.O); break;
    case OP_BACKWARD:
        cr_cpu_linear_backward(m->dy, m->x, m->w, m->dx, m->dw, m->db, s.B, s.I, s.O);
        break;
    default: cr_cpu_linear_backward(m->dy, m->x, m->w, NULL, m->dw, m->db, s.B, s.I, s.O); break;
    }
}

/* Best-of-5 seconds per call, each sample long enough (>= 20 ms) to swamp the timer. */
static double time_op(int op, const bufs *m, shape s) {
    int reps = 1;
    double best = 1e30;
    for (;;) {
        double t0 = cr_time_now();
        for (int r = 0; r < reps; r++) run_op(op, m, s);
        if (cr_time_now() - t0 >= 0.02) break;
        reps *= 2;
    }
    for (int k = 0; k < 5; k++) {
        double t0 = cr_time_now();
        for (int r = 0; r < reps; r++) run_op(op, m, s);
        double t = (cr_time_now() - t0) / reps;
        best = t < best ? t : best;
    }
    return best;
}

static void bench_shape(shape s, int threads, cr_philox_state *rng) {
    bufs m = {
        random_floats(rng, (size_t)s.B * s.I), random_floats(rng, (size_t)s.O * s.I),
        random_floats(rng, (size_t)s.O),       random_floats(rng, (size_t)s.B * s.O),
        random_floats(rng, (size_t)s.B * s.O), random_floats(rng, (size_t)s.B * s.I),
        random_floats(rng, (size_t)s.O * s.I), random_floats(rng, (size_t)s.O),
    };
    cr_cpu_set_threads(threads);
    for (int op = 0; op < OP_COUNT; op++) {
        double t = time_op(op, &m, s);
        double macs = (double)s.B * s.I * s.O;
        double flops = 2.0 * macs * (op == OP_BACKWARD ? 2 : 1);
        printf("B=%4d I=%4d O=%4d threads=%d  %-16s %8.2f us  %7.2f GFLOP/s\n", s.B, s.I, s.O,
               threads, op_names[op], t * 1e6, flops / t * 1e-9);
    }
    free(m.x), free(m.w), free(m.b), free(m.y), free(m.dy), free(m.dx), free(m.dw), free(m.db);
}

int main(int argc, char **argv) {
    int threads[8] = {1, 2}, nthreads = 2;
    if (argc > 1) {
        nthreads = argc - 1 < 8 ? argc - 1 : 8;
        for (int i = 0; i < nthreads; i++) threads[i] = atoi(argv[i + 1]);
    }
    const shape shapes[] = {{256, 64, 64}, {256, 4, 64}, {256, 64, 2}, {256, 64, 1},
                            {64, 64, 64},  {1024, 64, 64}, {256, 512, 512}};
    cr_philox_state rng;
    cr_philox_seed(&rng, 1, 0);
    for (int t = 0; t < nthreads; t++) {
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
            bench_shape(shapes[i], threads[t], &rng);
        printf("\n");
    }
    return 0;
}
