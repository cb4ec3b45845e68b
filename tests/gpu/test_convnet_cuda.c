/* The CUDA convolutional networks (src/nn/convnet_cuda.cu) against the CPU ones (the
 * specification, src/nn/convnet.c) on the same parameters and inputs, on every conv engine the
 * build has (gemm; cudnn where cuDNN is built in):
 *   nets    forward outputs and every gradient tensor of nature-cnn (batch 1 and 32 from one
 *           handle), minatar-cnn (batch 7), each with ppo and dqn heads on uint8 input; a small
 *           custom net with what those lack (float input, padding, non-square kernels, tanh
 *           after a conv and a linear, a conv without activation, batch 5); and a net whose
 *           trunk is a flatten alone (the heads read the input);
 *   repeat  a second forward + backward on poisoned outputs gives the same bits, and twenty
 *           more allocate nothing (backend cudaMalloc count and the device's free memory);
 *   graph   forward + backward captured into a CUDA graph after one eager call: one and two
 *           replays give the eager bits;
 *   bad     refusals with a status: no batch sizes, a batch of 0, an unknown
 *           CUDARL_CONV_ENGINE, a batch too large to index.
 * Every device output, the gradients, the cache and the workspace are poisoned (every byte
 * 0xFF, NaN) before a run, so an element a kernel forgets to write fails.
 *
 * Tolerance, normwise per tensor: ||got - want||_2 <= rtol ||want||_2, rtol 1e-4 for the
 * outputs and 5e-4 for the gradients. Why: both sides compute the same sums of products in fp32
 * (no TF32), each in its own order: the CPU in im2row + linear's blocked order, the GPU in
 * cuBLAS's (gemm engine; split along long reductions) or cuDNN's (cudnn engine) GEMM order, the
 * bias gradients in double on the GPU. A sum of T products of mixed sign rounds to about
 * u sqrt(T) of its size (u = 2^-24 = 6e-8) per side: ~3e-6 for the longest here (T = 3136 in
 * Nature-CNN's linear layer, 12,800 terms in conv1's weight gradient at batch 32 but of
 * one-signed pixels), and the five layers add their errors: ~1e-5 expected for the outputs. The
 * backward goes through those five layers again, and its ReLU masks are the forward's outputs:
 * an output within rounding of 0 can be masked on one side and not the other, which moves the
 * gradients downstream of it by one term each, ~1/T of their norm. rtol leaves a factor of
 * about 10 over the expected error; a wrong index, a dropped tap, image, bias or head is off
 * by a whole term in many elements at once, far above it. NaN never passes.
 *
 *   mixed   the bf16 and fp16 training handles (cr_convnet_cuda_init_training) on every case
 *           of nets against the CPU's fp32, to the formats' tolerance (test_mixed says why),
 *           repeatable bit for bit, and a backward after a forward on another cache rebuilding
 *           its im2col matrices (the same gradients);
 *   igemm   the igemm training handles (implicit-GEMM forward, cuDNN gradients) in bf16 and
 *           fp16 on the cases they take, to the mixed tolerance; AUTO's choice; repeat, no
 *           allocation, graph, another cache between, spread rows (test_igemm says more);
 * Usage: test_convnet_cuda [group]   group: nets repeat graph mixed igemm bad (all when
 * omitted).
 * Needs a GPU (ctest label gpu); without one it fails and says so. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/core.h"
#include "nn/convnet.h"
#include "nn/convnet_cuda.h"
#include "nn/precision.h"
#include "ops/backend.h"
#include "ops/cuda/cuda_backend.h"

#define RTOL_OUT 1e-4
#define RTOL_GRAD 5e-4

static cudarl_ctx gpu;
static cr_philox_state prng;
static char case_name[256]; /* the case being checked, for failure messages */

#define CASE(...) snprintf(case_name, sizeof case_name, __VA_ARGS__)
#define F(n) ((size_t)(n) * sizeof(float))

/* ---- buffers ------------------------------------------------------------------------------- */

/* Device buffers of the running case, freed together by end_case(). */
#define MAX_BUFS 64
static cr_arena dev_bufs[MAX_BUFS];
static int n_dev;

static void *dev(size_t bytes) {
    CHECK_MSG(n_dev < MAX_BUFS, "raise MAX_BUFS");
    cr_plan p;
    cr_plan_init(&p);
    cr_plan_add(&p, "test", bytes ? bytes : 1);
    CHECK_OK(gpu.ops->arena_alloc(&gpu, &dev_bufs[n_dev], &p));
    return dev_bufs[n_dev++].base;
}

static void end_case(void) {
    while (n_dev > 0) gpu.ops->arena_free(&gpu, &dev_bufs[--n_dev]);
}

static void up(void *d, const void *h, size_t bytes) { gpu.ops->copy_from_host(&gpu, d, h, bytes); }

static void *dev_copy(const void *h, size_t bytes) {
    void *d = dev(bytes);
    up(d, h, bytes);
    return d;
}

/* Every byte 0xFF: NaN as a float. */
static void poison(void *d, size_t bytes) {
    if (!d || !bytes) return;
    unsigned char *h = malloc(bytes);
    CHECK(h != NULL);
    memset(h, 0xFF, bytes);
    up(d, h, bytes);
    free(h);
}

/* A host copy (malloc, the caller frees) of n floats of device memory (waits for the stream). */
static float *fetch(const float *d, size_t n) {
    float *h = malloc(F(n ? n : 1));
    CHECK(h != NULL);
    gpu.ops->copy_to_host(&gpu, h, d, F(n));
    return h;
}

static float *host_floats(size_t n) {
    float *p = malloc(F(n ? n : 1));
    CHECK(p != NULL);
    return p;
}

/* ---- nets ---------------------------------------------------------------------------------- */

static void plan_named(cr_convnet *net, const char *name, int c, int h, int w,
                       cr_convnet_heads heads, int A) {
    cr_convnet_spec s;
    CHECK_OK(cr_convnet_spec_named(&s, name, c, h, w, heads, A));
    CHECK_OK(cr_convnet_plan(net, &s));
}

/* What the named nets do not have: float input, padding, non-square kernels, tanh after a conv
 * and after a linear, a conv with no activation, stride 2. */
static void plan_custom(cr_convnet *net, cr_convnet_heads heads) {
    cr_convnet_spec s;
    memset(&s, 0, sizeof s);
    snprintf(s.name, sizeof s.name, "custom");
    s.in_c = 3, s.in_h = 11, s.in_w = 9;
    s.dtype = CR_CONVNET_F32, s.scale = CR_CONVNET_SCALE_NONE;
    const cr_convnet_layer l[] = {
        {.op = CR_CONVNET_CONV, .out = 5, .kernel = {3, 2}, .stride = 2, .pad = 1},
        {.op = CR_CONVNET_TANH},
        {.op = CR_CONVNET_CONV, .out = 6, .kernel = {3, 3}, .stride = 1, .pad = 1},
        {.op = CR_CONVNET_CONV, .out = 4, .kernel = {2, 3}, .stride = 1, .pad = 0},
        {.op = CR_CONVNET_RELU},
        {.op = CR_CONVNET_FLATTEN},
        {.op = CR_CONVNET_LINEAR, .out = 10},
        {.op = CR_CONVNET_TANH},
    };
    s.num_layers = (int)(sizeof l / sizeof l[0]);
    memcpy(s.layers, l, sizeof l);
    s.heads = heads, s.num_actions = 3;
    CHECK_OK(cr_convnet_plan(net, &s));
}

/* A trunk of one flatten: the heads read the (float) input, and nothing has an input gradient. */
static void plan_flat(cr_convnet *net, cr_convnet_heads heads) {
    cr_convnet_spec s;
    memset(&s, 0, sizeof s);
    snprintf(s.name, sizeof s.name, "custom");
    s.in_c = 2, s.in_h = 3, s.in_w = 4;
    s.dtype = CR_CONVNET_F32, s.scale = CR_CONVNET_SCALE_NONE;
    s.layers[0].op = CR_CONVNET_FLATTEN;
    s.num_layers = 1;
    s.heads = heads, s.num_actions = 5;
    CHECK_OK(cr_convnet_plan(net, &s));
}

/* ---- one case: a net, its inputs, the CPU's results -------------------------------------- */

typedef struct net_case {
    char what[96];
    cr_convnet net;
    int batches[2], nbatches;
    float *params;       /* (num_params) host: every tensor uniform in +-1/sqrt(fan_in) */
    void *obs;           /* (max B, C H W) host: uint8 (pixels 0..255, MinAtar 0/1) or float */
    float *dout, *dvalue; /* (max B, A), (max B) host, uniform in [-1, 1) */
} net_case;

static int obs_u8(const cr_convnet *net) { return net->spec.dtype == CR_CONVNET_U8; }
static int is_ppo(const cr_convnet *net) { return net->spec.heads == CR_CONVNET_PPO; }

static void case_init(net_case *k, const char *what, int b0, int b1) {
    snprintf(k->what, sizeof k->what, "%s", what);
    k->batches[0] = b0, k->batches[1] = b1, k->nbatches = b1 > 0 ? 2 : 1;
    const cr_convnet *net = &k->net;
    const int maxB = b1 > b0 ? b1 : b0, A = net->spec.num_actions;
    k->params = host_floats(net->num_params);
    for (int i = 0; i < net->ntensors; i++) {
        const cr_convnet_tensor *t = &net->t[i];
        const double bound = 1.0 / sqrt((double)t->fan_in);
        for (size_t e = 0; e < t->count; e++)
            k->params[t->offset + e] =
                (float)((2.0 * cr_philox_uniform_f64(&prng) - 1.0) * bound);
    }
    const size_t n = (size_t)maxB * net->in_floats;
    if (obs_u8(net)) {
        uint8_t *u = malloc(n);
        CHECK(u != NULL);
        const int binary = net->spec.scale == CR_CONVNET_SCALE_NONE; /* MinAtar's 0/1 channels */
        for (size_t i = 0; i < n; i++) {
            uint32_t r = cr_philox_next_u32(&prng);
            u[i] = (uint8_t)(binary ? (r >> 7) & 1 : r >> 24);
        }
        k->obs = u;
    } else {
        float *x = host_floats(n);
        for (size_t i = 0; i < n; i++) x[i] = 2.0f * cr_philox_uniform(&prng) - 1.0f;
        k->obs = x;
    }
    k->dout = host_floats((size_t)maxB * A);
    for (size_t i = 0; i < (size_t)maxB * A; i++)
        k->dout[i] = 2.0f * cr_philox_uniform(&prng) - 1.0f;
    k->dvalue = host_floats((size_t)maxB);
    for (int i = 0; i < maxB; i++) k->dvalue[i] = 2.0f * cr_philox_uniform(&prng) - 1.0f;
}

static void case_free(net_case *k) {
    free(k->params), free(k->obs), free(k->dout), free(k->dvalue);
}

/* The results of one forward + backward. */
typedef struct results {
    float *out, *value, *grads; /* (B, A), (B) or NULL, (num_params) */
} results;

static void results_free(results *r) { free(r->out), free(r->value), free(r->grads); }

/* The CPU's forward and backward at B rows. */
static results cpu_run(const net_case *k, int B) {
    const cr_convnet *net = &k->net;
    const int A = net->spec.num_actions;
    void *mem = aligned_alloc(64, cr_convnet_cache_bytes(net, B));
    CHECK(mem != NULL);
    cr_convnet_cache c;
    cr_convnet_cache_carve(net, mem, B, &c);
    results r = {host_floats((size_t)B * A), is_ppo(net) ? host_floats((size_t)B) : NULL,
                 host_floats(net->num_params)};
    cr_convnet_forward(net, k->params, k->obs, r.out, r.value, &c, B);
    cr_convnet_backward(net, k->params, r.grads, k->dout, is_ppo(net) ? k->dvalue : NULL, &c, B);
    free(mem);
    return r;
}

/* ---- the GPU side -------------------------------------------------------------------------- */

/* A handle and the device buffers of one case. */
typedef struct gpu_net {
    cr_convnet_cuda *cn;
    float *params, *grads, *out, *value, *dout, *dvalue; /* device */
    void *obs, *cache_mem, *ws;                        /* device */
    size_t cache_bytes, ws_bytes;
    cr_convnet_cache cache;
} gpu_net;

/* A training handle in `prec` (fp32 and tf32: what cr_convnet_cuda_init makes). */
static void gpu_init_prec(gpu_net *g, const net_case *k, cr_convnet_engine engine,
                          cudarl_precision prec) {
    const cr_convnet *net = &k->net;
    const int maxB = k->batches[0] > k->batches[1] ? k->batches[0] : k->batches[1];
    const int A = net->spec.num_actions;
    memset(g, 0, sizeof *g);
    CHECK_OK(cr_convnet_cuda_init_training(&gpu, net, k->batches, k->nbatches, engine, prec,
                                           &g->cn));
    CHECK(cr_convnet_cuda_engine(g->cn) == engine && cr_convnet_cuda_precision(g->cn) == prec);
    g->params = dev_copy(k->params, F(net->num_params));
    g->grads = dev(F(net->num_params));
    g->obs = dev_copy(k->obs, (size_t)maxB * net->in_floats * (obs_u8(net) ? 1 : sizeof(float)));
    g->out = dev(F((size_t)maxB * A));
    g->value = is_ppo(net) ? dev(F(maxB)) : NULL;
    g->dout = dev_copy(k->dout, F((size_t)maxB * A));
    g->dvalue = is_ppo(net) ? dev_copy(k->dvalue, F(maxB)) : NULL;
    g->cache_bytes = cr_convnet_cuda_cache_bytes(net, maxB);
    g->cache_mem = dev(g->cache_bytes);
    cr_convnet_cuda_cache_carve(net, g->cache_mem, maxB, &g->cache);
    CHECK(g->cache.scratch == NULL && g->cache.max_rows == maxB);
    /* 4 bytes past the arena's 64-byte boundary: the handle must align its pieces itself */
    g->ws_bytes = cr_convnet_cuda_workspace_bytes(g->cn);
    g->ws = (char *)dev(g->ws_bytes + 4) + 4;
    cr_convnet_cuda_set_workspace(g->cn, g->ws);
}

static void gpu_init(gpu_net *g, const net_case *k, cr_convnet_engine engine) {
    gpu_init_prec(g, k, engine, CUDARL_PRECISION_FP32);
}

static void gpu_poison(gpu_net *g, const net_case *k, int B) {
    const cr_convnet *net = &k->net;
    poison(g->out, F((size_t)B * net->spec.num_actions));
    poison(g->value, g->value ? F(B) : 0);
    poison(g->grads, F(net->num_params));
    poison(g->cache_mem, g->cache_bytes);
    poison(g->ws, g->ws_bytes);
}

static void gpu_enqueue(gpu_net *g, const net_case *k, int B) {
    cr_convnet_cuda_forward(&gpu, g->cn, g->params, g->obs, g->out, g->value, &g->cache, B);
    cr_convnet_cuda_backward(&gpu, g->cn, g->params, g->grads, g->dout, g->dvalue, &g->cache, B);
}

static results gpu_fetch(const gpu_net *g, const net_case *k, int B) {
    const cr_convnet *net = &k->net;
    results r = {fetch(g->out, (size_t)B * net->spec.num_actions),
                 g->value ? fetch(g->value, (size_t)B) : NULL, fetch(g->grads, net->num_params)};
    return r;
}

/* Poisons, runs forward + backward at B rows, fetches. */
static results gpu_run(gpu_net *g, const net_case *k, int B) {
    gpu_poison(g, k, B);
    gpu_enqueue(g, k, B);
    return gpu_fetch(g, k, B);
}

static void gpu_free(gpu_net *g) {
    cr_convnet_cuda_free(g->cn);
    g->cn = NULL;
}

/* ---- comparisons --------------------------------------------------------------------------- */

/* got against want (n floats) normwise: ||got - want|| <= rtol ||want||, no NaN in got. */
static void compare_rel(const char *what, const float *got, const float *want, size_t n,
                        double rtol) {
    double err2 = 0, ref2 = 0, worst = -1;
    size_t worst_i = 0;
    for (size_t i = 0; i < n; i++) {
        CHECK_MSG(!isnan(got[i]) && !isnan(want[i]), "%s, %s[%zu]: expected %.9g, got %.9g "
                  "(NaN: an element not written, or a NaN produced)", case_name, what, i,
                  want[i], got[i]);
        double e = fabs((double)got[i] - (double)want[i]);
        err2 += e * e, ref2 += (double)want[i] * want[i];
        if (e > worst) worst = e, worst_i = i;
    }
    double err = sqrt(err2), ref = sqrt(ref2);
    CHECK_MSG(err <= rtol * ref, "%s, %s: ||got - want|| = %.3g > %g ||want|| = %.3g; worst "
              "element %zu: expected %.9g, got %.9g (tolerance: fp32 sums in cuBLAS's / cuDNN's "
              "order against the CPU's, see the top of the file)", case_name, what, err, rtol,
              rtol * ref, worst_i, (double)want[worst_i], (double)got[worst_i]);
}

/* The same bits. */
static void compare_exact(const char *what, const float *got, const float *want, size_t n) {
    for (size_t i = 0; i < n; i++)
        CHECK_MSG(memcmp(&got[i], &want[i], sizeof(float)) == 0, "%s, %s[%zu]: expected %.9g, "
                  "got %.9g (bitwise: the same ops on the same data)", case_name, what, i,
                  (double)want[i], (double)got[i]);
}

typedef void (*compare_fn)(const char *what, const float *got, const float *want, size_t n,
                           double rtol);

static void exact_adapter(const char *what, const float *got, const float *want, size_t n,
                          double rtol) {
    (void)rtol;
    compare_exact(what, got, want, n);
}

/* out, value and each gradient tensor of got against want. */
static double rtol_out = RTOL_OUT, rtol_grad = RTOL_GRAD; /* the mixed group widens them */

static void compare_results(const net_case *k, int B, const results *got, const results *want,
                            compare_fn cmp) {
    const cr_convnet *net = &k->net;
    cmp("out", got->out, want->out, (size_t)B * net->spec.num_actions, rtol_out);
    if (is_ppo(net)) cmp("value", got->value, want->value, (size_t)B, rtol_out);
    for (int i = 0; i < net->ntensors; i++) {
        const cr_convnet_tensor *t = &net->t[i];
        char what[64];
        snprintf(what, sizeof what, "grad %s", t->name);
        cmp(what, got->grads + t->offset, want->grads + t->offset, t->count, rtol_grad);
    }
}

/* ---- engines and cases --------------------------------------------------------------------- */

static const cr_convnet_engine engines[] = {
    CR_CONVNET_ENGINE_GEMM,
#ifdef CUDARL_WITH_CUDNN
    CR_CONVNET_ENGINE_CUDNN,
#endif
};
#define NUM_ENGINES ((int)(sizeof engines / sizeof engines[0]))

#define NUM_CASES 9

/* Case i of the nets group (0 <= i < NUM_CASES). */
static void make_case(net_case *k, int i) {
    memset(k, 0, sizeof *k);
    switch (i) {
    case 0:
        plan_named(&k->net, "nature-cnn", 4, 84, 84, CR_CONVNET_DQN, 6);
        case_init(k, "nature-cnn dqn", 1, 32);
        break;
    case 1:
        plan_named(&k->net, "nature-cnn", 4, 84, 84, CR_CONVNET_PPO, 6);
        case_init(k, "nature-cnn ppo", 1, 32);
        break;
    case 2:
        plan_named(&k->net, "minatar-cnn", 4, 10, 10, CR_CONVNET_DQN, 3);
        case_init(k, "minatar-cnn dqn (Breakout's 4 channels, 3 actions)", 7, 0);
        break;
    case 3:
        plan_named(&k->net, "minatar-cnn", 4, 10, 10, CR_CONVNET_PPO, 6);
        case_init(k, "minatar-cnn ppo", 7, 0);
        break;
    case 4:
        plan_named(&k->net, "minatar-cnn", 10, 10, 10, CR_CONVNET_DQN, 18);
        case_init(k, "minatar-cnn dqn (Seaquest's 10 channels, 18 actions)", 7, 0);
        break;
    case 5:
        plan_custom(&k->net, CR_CONVNET_PPO);
        case_init(k, "custom ppo (f32, pad, tanh)", 5, 0);
        break;
    case 6:
        plan_custom(&k->net, CR_CONVNET_DQN);
        case_init(k, "custom dqn (f32, pad, tanh)", 5, 2);
        break;
    case 7:
        plan_flat(&k->net, CR_CONVNET_PPO);
        case_init(k, "flatten-only trunk ppo", 3, 0);
        break;
    default:
        plan_flat(&k->net, CR_CONVNET_DQN);
        case_init(k, "flatten-only trunk dqn", 3, 0);
        break;
    }
}

static void test_nets(void) {
    for (int e = 0; e < NUM_ENGINES; e++)
        for (int i = 0; i < NUM_CASES; i++) {
            net_case k;
            make_case(&k, i);
            gpu_net g;
            gpu_init(&g, &k, engines[e]);
            if (i == 0) printf("%s", cr_convnet_cuda_describe(g.cn));
            for (int b = 0; b < k.nbatches; b++) {
                const int B = k.batches[b];
                CASE("%s, batch %d, engine %s", k.what, B,
                     cr_convnet_cuda_engine_name(engines[e]));
                results want = cpu_run(&k, B), got = gpu_run(&g, &k, B);
                compare_results(&k, B, &got, &want, compare_rel);
                results_free(&want), results_free(&got);
                printf("  ok %s\n", case_name);
            }
            gpu_free(&g);
            end_case();
            case_free(&k);
        }
}

/* A second run on poisoned buffers repeats the first bit for bit; more runs allocate nothing. */
static void test_repeat(void) {
    for (int e = 0; e < NUM_ENGINES; e++)
        for (int i = 0; i < 2; i++) {
            net_case k;
            make_case(&k, i == 0 ? 0 : 3); /* nature-cnn dqn at 32, minatar-cnn ppo at 7 */
            const int B = i == 0 ? 32 : 7;
            gpu_net g;
            gpu_init(&g, &k, engines[e]);
            CASE("%s, batch %d, engine %s, second run", k.what, B,
                 cr_convnet_cuda_engine_name(engines[e]));
            results first = gpu_run(&g, &k, B), again = gpu_run(&g, &k, B);
            compare_results(&k, B, &again, &first, exact_adapter);
            results_free(&first), results_free(&again);

            CASE("%s, batch %d, engine %s, 20 more runs", k.what, B,
                 cr_convnet_cuda_engine_name(engines[e]));
            size_t free0 = 0, free1 = 0, total = 0, allocs = cr_cuda_alloc_count();
            gpu.ops->sync(&gpu);
            CHECK_OK(cr_cuda_mem_info(&gpu, &free0, &total));
            for (int r = 0; r < 20; r++) gpu_enqueue(&g, &k, B);
            gpu.ops->sync(&gpu);
            CHECK_OK(cr_cuda_mem_info(&gpu, &free1, &total));
            CHECK_MSG(free1 == free0 && cr_cuda_alloc_count() == allocs,
                      "%s: device memory free before %zu, after %zu bytes; backend "
                      "allocations %zu more", case_name, free0, free1,
                      cr_cuda_alloc_count() - allocs);
            printf("  ok %s\n", case_name);
            gpu_free(&g);
            end_case();
            case_free(&k);
        }
}

/* forward + backward captured after one eager run: replays give the eager bits. */
static void test_graph(void) {
    for (int e = 0; e < NUM_ENGINES; e++)
        for (int i = 0; i < 2; i++) {
            net_case k;
            make_case(&k, i == 0 ? 1 : 2); /* nature-cnn ppo at 32, minatar-cnn dqn at 7 */
            const int B = i == 0 ? 32 : 7;
            gpu_net g;
            gpu_init(&g, &k, engines[e]);
            results eager = gpu_run(&g, &k, B);
            void *graph = NULL;
            gpu_poison(&g, &k, B);
            CHECK_OK(gpu.ops->graph_begin(&gpu));
            gpu_enqueue(&g, &k, B);
            CHECK_OK(gpu.ops->graph_end(&gpu, &graph));
            CHECK(graph != NULL);
            for (int n = 1; n <= 2; n++) {
                CASE("%s, batch %d, engine %s, graph replayed %d time%s", k.what, B,
                     cr_convnet_cuda_engine_name(engines[e]), n, n == 1 ? "" : "s");
                gpu.ops->graph_launch(&gpu, graph);
                results got = gpu_fetch(&g, &k, B);
                compare_results(&k, B, &got, &eager, exact_adapter);
                results_free(&got);
                printf("  ok %s\n", case_name);
            }
            gpu.ops->graph_free(graph);
            results_free(&eager);
            gpu_free(&g);
            end_case();
            case_free(&k);
        }
}

/* The training handles in bf16 and fp16 (the GEMM engine with the conv products' inputs in the
 * format) against the CPU's fp32, every case of the nets group at every batch. Tolerance: a conv
 * product with both inputs rounded errs by about 2u of its size (u the format's unit roundoff),
 * inside nn/precision.c's per-product "linear.y" bound, and the errors of products one after
 * another add (cr_precision_chain_rtol): the outputs went through the n conv products, a weight
 * gradient through at most 3n (the forward's, G's and the weights' rounding on the way back, and
 * its own product). Per product the table allows 4u: bf16 (u = 2^-8) with 3 convs, outputs 4.7%;
 * fp16 (u = 2^-11) 8x tighter. The gradients get one more term: a ReLU whose input lies within
 * the forward's rounding of 0 flips, and a flip adds or drops a whole term of every gradient
 * behind it (one unit of MinAtar's linear layer carries a whole image's conv gradient). With
 * about 4u of the inputs in that band and each flip worth one term, the gradients' norm moves by
 * about sqrt(16u): 25% for bf16, 8.8% for fp16 (the H200 measured 10.4% on MinAtar's conv weight
 * gradient at batch 7 in bf16, 2026-11-30). A wrong index or a product on the wrong matrix
 * leaves the gradients uncorrelated: off by 100% or more. Nets without a conv
 * run exactly fp32's code, and are held to fp32's tolerance. The handle must also differ from
 * fp32 somewhere when the net has a conv (else the format was never used). */
static void test_mixed(void) {
    static const cudarl_precision precs[2] = {CUDARL_PRECISION_BF16, CUDARL_PRECISION_FP16};
    for (int q = 0; q < 2; q++)
        for (int i = 0; i < NUM_CASES; i++) {
            net_case k;
            make_case(&k, i);
            int convs = 0;
            for (int s = 0; s < k.net.ntrunk; s++) convs += k.net.stage[s].op == CR_CONVNET_CONV;
            rtol_out = convs ? cr_precision_chain_rtol(precs[q], convs) : RTOL_OUT;
            const double u = precs[q] == CUDARL_PRECISION_BF16 ? 0x1p-8 : 0x1p-11;
            rtol_grad = convs ? cr_precision_chain_rtol(precs[q], 3 * convs) + sqrt(16 * u)
                              : RTOL_GRAD;
            gpu_net g, f;
            gpu_init_prec(&g, &k, CR_CONVNET_ENGINE_GEMM, precs[q]);
            gpu_init(&f, &k, CR_CONVNET_ENGINE_GEMM);
            if (i == 0) printf("%s", cr_convnet_cuda_describe(g.cn));
            for (int b = 0; b < k.nbatches; b++) {
                const int B = k.batches[b];
                CASE("%s, batch %d, %s training handle (rtol %.3g outputs, %.3g gradients)",
                     k.what, B, cudarl_precision_name(precs[q]), rtol_out, rtol_grad);
                results want = cpu_run(&k, B), got = gpu_run(&g, &k, B), f32 = gpu_run(&f, &k, B);
                compare_results(&k, B, &got, &want, compare_rel);
                const size_t n_out = (size_t)B * k.net.spec.num_actions;
                CHECK_MSG(!convs || memcmp(got.out, f32.out, n_out * sizeof(float)) != 0,
                          "%s: the outputs are fp32's bit for bit: the format was not used",
                          case_name);
                results_free(&want), results_free(&got), results_free(&f32);
                printf("  ok %s\n", case_name);
            }
            gpu_free(&g), gpu_free(&f);
            end_case();
            case_free(&k);
        }
    rtol_out = RTOL_OUT, rtol_grad = RTOL_GRAD;
    /* and repeatable: a second run gives the same bits */
    net_case k;
    make_case(&k, 1);
    gpu_net g;
    gpu_init_prec(&g, &k, CR_CONVNET_ENGINE_GEMM, CUDARL_PRECISION_BF16);
    CASE("%s, batch 32, bf16 training handle, second run", k.what);
    results first = gpu_run(&g, &k, 32), again = gpu_run(&g, &k, 32);
    compare_results(&k, 32, &again, &first, exact_adapter);
    results_free(&again);
    printf("  ok %s\n", case_name);
    /* The backward reads the im2col matrices its forward left; after a forward on another cache
     * (other observations) it rebuilds them from its own cache: the same gradients bit for
     * bit (matrices kept from the other forward would give other gradients). */
    CASE("%s, batch 32, bf16 training handle, a forward on another cache between", k.what);
    const size_t obs_bytes = (size_t)32 * k.net.in_floats;
    uint8_t *other = malloc(obs_bytes);
    CHECK(other != NULL);
    for (size_t i = 0; i < obs_bytes; i++) other[i] = (uint8_t)(cr_philox_next_u32(&prng) >> 24);
    void *other_obs = dev_copy(other, obs_bytes);
    free(other);
    void *mem2 = dev(g.cache_bytes);
    cr_convnet_cache c2;
    cr_convnet_cuda_cache_carve(&k.net, mem2, 32, &c2);
    gpu_poison(&g, &k, 32);
    cr_convnet_cuda_forward(&gpu, g.cn, g.params, g.obs, g.out, g.value, &g.cache, 32);
    cr_convnet_cuda_forward(&gpu, g.cn, g.params, other_obs, g.out, g.value, &c2, 32);
    cr_convnet_cuda_backward(&gpu, g.cn, g.params, g.grads, g.dout, g.dvalue, &g.cache, 32);
    float *grads = fetch(g.grads, k.net.num_params);
    compare_exact("gradients", grads, first.grads, k.net.num_params);
    free(grads);
    results_free(&first);
    printf("  ok %s\n", case_name);
    gpu_free(&g);
    end_case();
    case_free(&k);
}

/* The igemm training handles (the policy runtime's implicit-GEMM forward, cuDNN's gradients;
 * builds with cuDNN) against the CPU's fp32 on every case whose net they take (nature-cnn and
 * minatar-cnn, dqn and ppo heads), in bf16 and fp16, to test_mixed's tolerance: the same
 * rounding of every product's inputs, plus cuDNN's data and weight gradients rounded once to the
 * format (2^-9 of a gradient in bf16: inside the sqrt(16u) the flips already take). Then, on
 * nature-cnn ppo at 32: AUTO chooses igemm, minatar-cnn (whose one small conv is faster on gemm)
 * and a net with tanh stay on gemm (and igemm asked for the latter is refused, naming why); a second run repeats the bits, twenty more allocate nothing; a
 * captured forward + backward replays the eager bits; a forward on another cache between a
 * forward and its backward changes nothing (each cache remembers its observations); rows
 * farther apart than the observation (DQN's replay windows) give the packed rows' bits. */
static void test_igemm(void) {
#ifndef CUDARL_WITH_CUDNN
    printf("  skipped: the igemm training engine needs cuDNN, which this build lacks\n");
#else
    static const cudarl_precision precs[2] = {CUDARL_PRECISION_BF16, CUDARL_PRECISION_FP16};
    static const int fits[5] = {0, 1, 2, 3, 4};
    for (int q = 0; q < 2; q++)
        for (int j = 0; j < 5; j++) {
            net_case k;
            make_case(&k, fits[j]);
            int convs = 0;
            for (int s = 0; s < k.net.ntrunk; s++) convs += k.net.stage[s].op == CR_CONVNET_CONV;
            rtol_out = cr_precision_chain_rtol(precs[q], convs);
            const double u = precs[q] == CUDARL_PRECISION_BF16 ? 0x1p-8 : 0x1p-11;
            rtol_grad = cr_precision_chain_rtol(precs[q], 3 * convs) + sqrt(16 * u);
            gpu_net g;
            gpu_init_prec(&g, &k, CR_CONVNET_ENGINE_IGEMM, precs[q]);
            if (j == 1 && q == 0) printf("%s", cr_convnet_cuda_describe(g.cn));
            for (int b = 0; b < k.nbatches; b++) {
                const int B = k.batches[b];
                CASE("%s, batch %d, %s igemm training handle (rtol %.3g outputs, %.3g "
                     "gradients)", k.what, B, cudarl_precision_name(precs[q]), rtol_out,
                     rtol_grad);
                results want = cpu_run(&k, B), got = gpu_run(&g, &k, B);
                compare_results(&k, B, &got, &want, compare_rel);
                results_free(&want), results_free(&got);
                printf("  ok %s\n", case_name);
            }
            gpu_free(&g);
            end_case();
            case_free(&k);
        }
    rtol_out = RTOL_OUT, rtol_grad = RTOL_GRAD;

    net_case k;
    make_case(&k, 1); /* nature-cnn ppo, batches 1 and 32 */
    const cudarl_precision bf16 = CUDARL_PRECISION_BF16;
    cr_convnet_cuda *cn = NULL;
    CASE("engine choice");
    CHECK_OK(cr_convnet_cuda_init_training(&gpu, &k.net, k.batches, k.nbatches,
                                           CR_CONVNET_ENGINE_AUTO, bf16, &cn));
    CHECK_MSG(cr_convnet_cuda_engine(cn) == CR_CONVNET_ENGINE_IGEMM, "AUTO chose %s for %s",
              cr_convnet_cuda_engine_name(cr_convnet_cuda_engine(cn)), k.what);
    cr_convnet_cuda_free(cn);
    {
        net_case t;
        make_case(&t, 3); /* minatar-cnn: it fits, but its one small conv stays on gemm */
        CHECK_OK(cr_convnet_cuda_init_training(&gpu, &t.net, t.batches, t.nbatches,
                                               CR_CONVNET_ENGINE_AUTO, bf16, &cn));
        CHECK_MSG(cr_convnet_cuda_engine(cn) == CR_CONVNET_ENGINE_GEMM, "AUTO chose %s for %s",
                  cr_convnet_cuda_engine_name(cr_convnet_cuda_engine(cn)), t.what);
        cr_convnet_cuda_free(cn);
        case_free(&t);
    }
    {
        net_case t;
        make_case(&t, 5); /* tanh: the igemm backward masks ReLUs only */
        CHECK_OK(cr_convnet_cuda_init_training(&gpu, &t.net, t.batches, t.nbatches,
                                               CR_CONVNET_ENGINE_AUTO, bf16, &cn));
        CHECK(cr_convnet_cuda_engine(cn) == CR_CONVNET_ENGINE_GEMM);
        cr_convnet_cuda_free(cn);
        cn = (cr_convnet_cuda *)&t;
        CHECK(cr_convnet_cuda_init_training(&gpu, &t.net, t.batches, t.nbatches,
                                            CR_CONVNET_ENGINE_IGEMM, bf16, &cn) ==
              CUDARL_ERR_UNSUPPORTED);
        CHECK(cn == NULL && strstr(cudarl_last_error(), "activation") != NULL);
        printf("  refused igemm for %s: %s\n", t.what, cudarl_last_error());
        case_free(&t);
    }
    printf("  ok %s\n", case_name);

    gpu_net g;
    gpu_init_prec(&g, &k, CR_CONVNET_ENGINE_IGEMM, bf16);
    CASE("%s, batch 32, bf16 igemm, second run", k.what);
    results first = gpu_run(&g, &k, 32), again = gpu_run(&g, &k, 32);
    compare_results(&k, 32, &again, &first, exact_adapter);
    results_free(&again);
    printf("  ok %s\n", case_name);

    CASE("%s, batch 32, bf16 igemm, 20 more runs", k.what);
    size_t free0 = 0, free1 = 0, total = 0, allocs = cr_cuda_alloc_count();
    gpu.ops->sync(&gpu);
    CHECK_OK(cr_cuda_mem_info(&gpu, &free0, &total));
    for (int r = 0; r < 20; r++) gpu_enqueue(&g, &k, 32);
    gpu.ops->sync(&gpu);
    CHECK_OK(cr_cuda_mem_info(&gpu, &free1, &total));
    CHECK_MSG(free1 == free0 && cr_cuda_alloc_count() == allocs, "%s: free %zu -> %zu bytes, "
              "%zu more allocations", case_name, free0, free1, cr_cuda_alloc_count() - allocs);
    printf("  ok %s\n", case_name);

    CASE("%s, batch 32, bf16 igemm, captured and replayed", k.what);
    void *graph = NULL;
    gpu_poison(&g, &k, 32);
    CHECK_OK(gpu.ops->graph_begin(&gpu));
    gpu_enqueue(&g, &k, 32);
    CHECK_OK(gpu.ops->graph_end(&gpu, &graph));
    for (int n = 0; n < 2; n++) {
        gpu.ops->graph_launch(&gpu, graph);
        results got = gpu_fetch(&g, &k, 32);
        compare_results(&k, 32, &got, &first, exact_adapter);
        results_free(&got);
    }
    gpu.ops->graph_free(graph);
    printf("  ok %s\n", case_name);

    CASE("%s, batch 32, bf16 igemm, a forward on another cache between", k.what);
    const size_t obs_bytes = (size_t)32 * k.net.in_floats;
    uint8_t *other = malloc(obs_bytes);
    CHECK(other != NULL);
    for (size_t i = 0; i < obs_bytes; i++) other[i] = (uint8_t)(cr_philox_next_u32(&prng) >> 24);
    void *other_obs = dev_copy(other, obs_bytes);
    void *mem2 = dev(g.cache_bytes);
    cr_convnet_cache c2;
    cr_convnet_cuda_cache_carve(&k.net, mem2, 32, &c2);
    gpu_poison(&g, &k, 32);
    cr_convnet_cuda_forward(&gpu, g.cn, g.params, g.obs, g.out, g.value, &g.cache, 32);
    cr_convnet_cuda_forward(&gpu, g.cn, g.params, other_obs, g.out, g.value, &c2, 32);
    cr_convnet_cuda_backward(&gpu, g.cn, g.params, g.grads, g.dout, g.dvalue, &g.cache, 32);
    float *grads = fetch(g.grads, k.net.num_params);
    compare_exact("gradients", grads, first.grads, k.net.num_params);
    free(grads);
    printf("  ok %s\n", case_name);

    /* rows 8 bytes apart keep the 4-byte alignment of the s2d input's word loads; 5 bytes
     * apart they go through the shared-memory path */
    const size_t row = (size_t)k.net.in_floats;
    uint8_t *packed = malloc(obs_bytes);
    CHECK(packed != NULL);
    gpu.ops->copy_to_host(&gpu, packed, g.obs, obs_bytes);
    for (size_t gap = 8; gap >= 5; gap -= 3) {
        const size_t stride = row + gap;
        CASE("%s, batch 32, bf16 igemm, rows %zu bytes apart", k.what, stride);
        uint8_t *spread = calloc(32, stride);
        CHECK(spread != NULL);
        for (int b = 0; b < 32; b++) memcpy(spread + b * stride, packed + b * row, row);
        void *spread_obs = dev_copy(spread, 32 * stride);
        free(spread);
        gpu_poison(&g, &k, 32);
        cr_convnet_cuda_forward_rows(&gpu, g.cn, g.params, spread_obs, stride, g.out, g.value,
                                     &g.cache, 32);
        cr_convnet_cuda_backward(&gpu, g.cn, g.params, g.grads, g.dout, g.dvalue, &g.cache, 32);
        results got = gpu_fetch(&g, &k, 32);
        compare_results(&k, 32, &got, &first, exact_adapter);
        results_free(&got);
        printf("  ok %s\n", case_name);
    }
    free(packed), free(other);
    results_free(&first);
    gpu_free(&g);
    end_case();
    case_free(&k);
#endif
}

/* init with these arguments must fail with `want` and leave the handle NULL. */
static void expect_refused(const char *what, const cr_convnet *net, const int *batches,
                           int nbatches, cr_convnet_engine engine, cudarl_status want) {
    cr_convnet_cuda *cn = (cr_convnet_cuda *)net; /* not NULL: init must clear it */
    cudarl_status got = cr_convnet_cuda_init(&gpu, net, batches, nbatches, engine, &cn);
    CHECK_MSG(got == want, "%s: expected %s, got %s (%s)", what, cudarl_status_name(want),
              cudarl_status_name(got), cudarl_last_error());
    CHECK_MSG(cn == NULL, "%s: the handle is not NULL after a refusal", what);
    printf("  refused %s: %s\n", what, cudarl_last_error());
}

static void test_bad(void) {
    CASE("bad");
    cr_convnet net;
    plan_named(&net, "nature-cnn", 4, 84, 84, CR_CONVNET_DQN, 6);
    const int ok[1] = {32}, zero[1] = {0}, huge[1] = {1 << 20};
    const cr_convnet_engine gemm = CR_CONVNET_ENGINE_GEMM;
    expect_refused("no batch sizes", &net, ok, 0, gemm, CUDARL_ERR_INVALID_ARG);
    expect_refused("batch 0", &net, zero, 1, gemm, CUDARL_ERR_INVALID_ARG);
    expect_refused("batch 2^20 (2^20 x 28224 input elements)", &net, huge, 1, gemm,
                   CUDARL_ERR_INVALID_ARG);
    setenv("CUDARL_CONV_ENGINE", "winograd", 1);
    expect_refused("CUDARL_CONV_ENGINE=winograd", &net, ok, 1, CR_CONVNET_ENGINE_AUTO,
                   CUDARL_ERR_INVALID_ARG);
    cr_convnet_cuda *cn = NULL;
    setenv("CUDARL_CONV_ENGINE", "gemm", 1);
    CHECK_OK(cr_convnet_cuda_init(&gpu, &net, ok, 1, CR_CONVNET_ENGINE_AUTO, &cn));
    CHECK(cr_convnet_cuda_engine(cn) == CR_CONVNET_ENGINE_GEMM);
    cr_convnet_cuda_free(cn);
    unsetenv("CUDARL_CONV_ENGINE");
    CHECK_OK(cr_convnet_cuda_init(&gpu, &net, ok, 1, CR_CONVNET_ENGINE_AUTO, &cn));
    CHECK(cr_convnet_cuda_engine(cn) == CR_CONVNET_ENGINE_GEMM); /* the default */
    cr_convnet_cuda_free(cn);
#ifndef CUDARL_WITH_CUDNN
    expect_refused("the cudnn engine without cuDNN", &net, ok, 1, CR_CONVNET_ENGINE_CUDNN,
                   CUDARL_ERR_UNSUPPORTED);
#endif
    cr_convnet_cuda_free(NULL);
}

/* ---- main ---------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
    static const struct {
        const char *name;
        void (*run)(void);
    } tests[] = {{"nets", test_nets}, {"repeat", test_repeat}, {"graph", test_graph},
                 {"mixed", test_mixed}, {"igemm", test_igemm}, {"bad", test_bad}};
    int known = argc < 2;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0] && !known; i++)
        known = strcmp(argv[1], tests[i].name) == 0;
    CHECK_MSG(known, "unknown group '%s'", argv[1]);
    cudarl_status st = cr_cuda_ctx_init(&gpu, 0);
    if (st != CUDARL_OK) {
        fprintf(stderr, "FAIL test_convnet_cuda needs a CUDA GPU and could not open one: %s: %s\n",
                cudarl_status_name(st), cudarl_last_error());
        return 1;
    }
    cr_philox_seed(&prng, 2027, 0);
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (argc > 1 && strcmp(argv[1], tests[i].name) != 0) continue;
        tests[i].run();
        printf("ok %s\n", tests[i].name);
    }
    cr_cuda_ctx_free(&gpu);
    return 0;
}
