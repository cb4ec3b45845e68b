/* Dynamic loss scaling on the device (src/ops/cuda/loss_scale.cu) against the CPU
 * (src/ops/cpu/loss_scale.c). An inf or NaN injected into a device gradient makes unscale +
 * adam_step_if + update leave every weight and Adam's m, v and t as they were and halve the
 * scale; a clean step matches the CPU step bit for bit (gradients, scaler state, m, v, t) and the
 * backend's own adam_step bit for bit (p too; p against the CPU to adam.p's 1e-6 of
 * tests/gpu/test_ops_cuda.c: the step size comes through the device's pow); a 60-step sequence with
 * random overflows and growth keeps the device state equal to the CPU's at every step; the step
 * captured into a CUDA graph skips and steps by itself on replay.
 *
 * Usage: test_loss_scale_cuda   (needs a GPU: ctest label gpu) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops/loss_scale.h"
#include "ops/backend.h"
#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/loss_scale_cuda.h"

static cudarl_ctx gpu;
static cr_philox_state prng;

#define F(n) ((size_t)(n) * sizeof(float))

/* ---- buffers: a host model and its device twin ------------------------------------------- */

typedef struct model {
    size_t n;
    float *p, *m, *v, *c, *g; /* host (CPU reference) */
    int64_t t;
    float lr;
    cr_loss_scale_state s;
    cr_arena arena; /* device: the same fields */
    float *d_p, *d_m, *d_v, *d_c, *d_g, *d_lr;
    int64_t *d_t;
    cr_loss_scale_state *d_s;
} model;

static float *host_floats(size_t n, float lo, float hi) {
    float *p = malloc(F(n ? n : 1));
    CHECK(p != NULL);
    for (size_t i = 0; i < n; i++) p[i] = lo + (hi - lo) * cr_philox_uniform(&prng);
    return p;
}

static void up(void *d, const void *h, size_t bytes) { gpu.ops->copy_from_host(&gpu, d, h, bytes); }
static void down(void *h, const void *d, size_t bytes) { gpu.ops->copy_to_host(&gpu, h, d, bytes); }

static void model_init(model *md, size_t n, const cr_loss_scale_config *cfg) {
    md->n = n;
    md->p = host_floats(n, -1, 1), md->m = host_floats(n, -0.01f, 0.01f);
    md->v = host_floats(n, 0, 1e-4f), md->c = host_floats(n, -1, 1), md->g = host_floats(n, 0, 0);
    md->t = 3, md->lr = 1e-3f;
    cr_loss_scale_init(&md->s, cfg);
    cr_plan pl;
    cr_plan_init(&pl);
    int ip = cr_plan_add(&pl, "p", F(n)), im = cr_plan_add(&pl, "m", F(n));
    int iv = cr_plan_add(&pl, "v", F(n)), ic = cr_plan_add(&pl, "c", F(n));
    int ig = cr_plan_add(&pl, "g", F(n)), il = cr_plan_add(&pl, "lr", F(1));
    int it = cr_plan_add(&pl, "t", 8), is = cr_plan_add(&pl, "s", sizeof(cr_loss_scale_state));
    CHECK_OK(gpu.ops->arena_alloc(&gpu, &md->arena, &pl));
    md->d_p = cr_arena_get(&md->arena, ip), md->d_m = cr_arena_get(&md->arena, im);
    md->d_v = cr_arena_get(&md->arena, iv), md->d_c = cr_arena_get(&md->arena, ic);
    md->d_g = cr_arena_get(&md->arena, ig), md->d_lr = cr_arena_get(&md->arena, il);
    md->d_t = cr_arena_get(&md->arena, it), md->d_s = cr_arena_get(&md->arena, is);
    up(md->d_p, md->p, F(n)), up(md->d_m, md->m, F(n)), up(md->d_v, md->v, F(n));
    up(md->d_c, md->c, F(n)), up(md->d_lr, &md->lr, F(1)), up(md->d_t, &md->t, 8);
    up(md->d_s, &md->s, sizeof md->s);
}

static void model_free(model *md) {
    gpu.ops->arena_free(&gpu, &md->arena);
    free(md->p), free(md->m), free(md->v), free(md->c), free(md->g);
}

/* The scaled gradient on both sides (c times the scale), `poison` at `at` when it is not 0. */
static void backward(model *md, float poison, size_t at) {
    memcpy(md->g, md->c, F(md->n));
    cr_loss_scale_apply(&md->s, md->g, md->n);
    gpu.ops->copy(&gpu, md->d_g, md->d_c, F(md->n));
    cr_cuda_loss_scale_apply(&gpu, md->d_s, md->d_g, md->n);
    if (poison != 0.0f) {
        md->g[at] = poison;
        up(md->d_g + at, &poison, F(1));
    }
}

/* unscale, adam_step_if, update on both sides. */
static void finish_step(model *md, const cr_loss_scale_config *cfg) {
    cr_loss_scale_unscale(&md->s, md->g, md->n);
    cr_loss_scale_adam_step_if(&md->s, md->p, md->g, md->m, md->v, md->n, &md->lr, 0.9f, 0.999f,
                               1e-8f, &md->t);
    cr_loss_scale_update(&md->s, cfg);
    cr_cuda_loss_scale_unscale(&gpu, md->d_s, md->d_g, md->n);
    cr_cuda_adam_step_if(&gpu, md->d_s, md->d_p, md->d_g, md->d_m, md->d_v, md->n, md->d_lr, 0.9f,
                         0.999f, 1e-8f, md->d_t);
    cr_cuda_loss_scale_update(&gpu, md->d_s, cfg);
}

/* ---- comparisons -------------------------------------------------------------------------- */

/* Bitwise, NaN matching NaN. */
static void same_floats(const char *what, const float *got, const float *want, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (isnan(got[i]) && isnan(want[i])) continue;
        CHECK_MSG(memcmp(&got[i], &want[i], 4) == 0, "%s[%zu]: device %a, expected %a", what, i,
                  (double)got[i], (double)want[i]);
    }
}

static float *fetch(const float *d, size_t n) {
    float *h = malloc(F(n ? n : 1));
    CHECK(h != NULL);
    down(h, d, F(n));
    return h;
}

static void same_device(const char *what, const float *d, const float *want, size_t n) {
    float *h = fetch(d, n);
    same_floats(what, h, want, n);
    free(h);
}

static void same_state(const char *what, const model *md) {
    cr_loss_scale_state s;
    int64_t t;
    down(&s, md->d_s, sizeof s);
    down(&t, md->d_t, 8);
    CHECK_MSG(memcmp(&s, &md->s, sizeof s) == 0,
              "%s: device scale %a tracker %d found %g skipped %lld, CPU %a %d %g %lld", what,
              (double)s.scale, (int)s.growth_tracker, (double)s.found_inf,
              (long long)s.skipped_steps, (double)md->s.scale, (int)md->s.growth_tracker,
              (double)md->s.found_inf, (long long)md->s.skipped_steps);
    CHECK_MSG(t == md->t, "%s: device Adam t %lld, CPU %lld", what, (long long)t,
              (long long)md->t);
}

/* p against the CPU's at adam.p's tolerance; returns how many differ in any bit. */
static size_t close_p(const char *what, const model *md) {
    float *h = fetch(md->d_p, md->n);
    size_t differ = 0;
    for (size_t i = 0; i < md->n; i++) {
        differ += memcmp(&h[i], &md->p[i], 4) != 0;
        CHECK_CLOSE(what, h[i], md->p[i], 1e-6, 0);
    }
    free(h);
    return differ;
}

/* ---- the cases ---------------------------------------------------------------------------- */

/* An inf or NaN in one device gradient element: nothing of the model moves, the scale halves. */
static void overflow_case(size_t n, float poison, size_t at) {
    cr_loss_scale_config cfg;
    cr_loss_scale_config_default(&cfg);
    model md;
    model_init(&md, n, &cfg);
    float *p0 = fetch(md.d_p, n), *m0 = fetch(md.d_m, n), *v0 = fetch(md.d_v, n);
    backward(&md, poison, at);
    finish_step(&md, &cfg);
    char what[96];
    snprintf(what, sizeof what, "overflow n=%zu %g at %zu", n, (double)poison, at);
    same_device("weights after a skipped step", md.d_p, p0, n);
    same_device("Adam m after a skipped step", md.d_m, m0, n);
    same_device("Adam v after a skipped step", md.d_v, v0, n);
    same_state(what, &md);
    CHECK_MSG(md.s.scale == 32768.0f && md.s.skipped_steps == 1 && md.t == 3,
              "the CPU reference did not skip");
    same_device("unscaled gradient", md.d_g, md.g, n);
    free(p0), free(m0), free(v0);
    model_free(&md);
}

/* A clean step: bitwise the CPU's but for p, and p bitwise the backend's adam_step. */
static void clean_case(size_t n) {
    cr_loss_scale_config cfg;
    cr_loss_scale_config_default(&cfg);
    model md;
    model_init(&md, n, &cfg);
    /* The backend's adam_step on a copy, from the same unscaled gradient. */
    cr_plan pl;
    cr_plan_init(&pl);
    int ip = cr_plan_add(&pl, "p", F(n)), im = cr_plan_add(&pl, "m", F(n));
    int iv = cr_plan_add(&pl, "v", F(n)), it = cr_plan_add(&pl, "t", 8);
    cr_arena ref;
    CHECK_OK(gpu.ops->arena_alloc(&gpu, &ref, &pl));
    float *r_p = cr_arena_get(&ref, ip), *r_m = cr_arena_get(&ref, im);
    float *r_v = cr_arena_get(&ref, iv);
    int64_t *r_t = cr_arena_get(&ref, it);
    gpu.ops->copy(&gpu, r_p, md.d_p, F(n)), gpu.ops->copy(&gpu, r_m, md.d_m, F(n));
    gpu.ops->copy(&gpu, r_v, md.d_v, F(n)), gpu.ops->copy(&gpu, r_t, md.d_t, 8);
    size_t differ = 0;
    for (int k = 0; k < 3; k++) {
        backward(&md, 0.0f, 0);
        finish_step(&md, &cfg);
        gpu.ops->adam_step(&gpu, r_p, md.d_g, r_m, r_v, n, md.d_lr, 0.9f, 0.999f, 1e-8f, r_t);
        char what[64];
        snprintf(what, sizeof what, "clean n=%zu step %d", n, k);
        same_device("unscaled gradient", md.d_g, md.g, n);
        same_state(what, &md);
        same_device("Adam m vs CPU", md.d_m, md.m, n);
        same_device("Adam v vs CPU", md.d_v, md.v, n);
        differ += close_p("p vs CPU (adam.p: 1e-6)", &md);
        float *rp = fetch(r_p, n), *rm = fetch(r_m, n), *rv = fetch(r_v, n);
        same_device("p vs adam_step", md.d_p, rp, n);
        same_device("m vs adam_step", md.d_m, rm, n);
        same_device("v vs adam_step", md.d_v, rv, n);
        int64_t rt;
        down(&rt, r_t, 8);
        CHECK_MSG(rt == md.t, "adam_step's t %lld, adam_step_if's %lld", (long long)rt,
                  (long long)md.t);
        free(rp), free(rm), free(rv);
    }
    printf("  clean n=%zu: 3 steps bitwise the CPU's (g, state, m, v, t) and adam_step's; "
           "%zu of %zu weights differ from the CPU in some bit\n", n, differ, 3 * n);
    gpu.ops->arena_free(&gpu, &ref);
    model_free(&md);
}

/* n = 0: adam_step counts the step; adam_step_if only when clean. */
static void empty_case(void) {
    cr_loss_scale_config cfg;
    cr_loss_scale_config_default(&cfg);
    model md;
    model_init(&md, 0, &cfg);
    finish_step(&md, &cfg); /* clean: t 3 -> 4 */
    same_state("n=0 clean", &md);
    CHECK(md.t == 4);
    md.s.found_inf = 1.0f;
    up(md.d_s, &md.s, sizeof md.s);
    finish_step(&md, &cfg); /* found_inf set beforehand: t stays, the scale halves */
    same_state("n=0 skipped", &md);
    CHECK(md.t == 4 && md.s.scale == 32768.0f);
    model_free(&md);
}

/* 60 steps, growth_interval 4, an overflow (inf or NaN, anywhere) with probability 0.2. */
static void sequence_case(size_t n) {
    cr_loss_scale_config cfg = {1024.0, 2.0, 0.5, 4};
    model md;
    model_init(&md, n, &cfg);
    for (int k = 0; k < 60; k++) {
        float u = cr_philox_uniform(&prng);
        float poison = u < 0.1f ? INFINITY : u < 0.2f ? NAN : 0.0f;
        size_t at = (size_t)(cr_philox_uniform(&prng) * (float)n) % n;
        backward(&md, poison, at);
        finish_step(&md, &cfg);
        char what[64];
        snprintf(what, sizeof what, "sequence n=%zu step %d", n, k);
        same_state(what, &md);
        same_device("sequence m", md.d_m, md.m, n);
        same_device("sequence v", md.d_v, md.v, n);
        close_p(what, &md);
    }
    printf("  sequence n=%zu: 60 steps, %lld skipped, final scale %g, equal to the CPU's\n", n,
           (long long)md.s.skipped_steps, (double)md.s.scale);
    model_free(&md);
}

/* unscale + adam_step_if + update captured once; replays skip or step with no host decision. */
static void graph_case(size_t n) {
    cr_loss_scale_config cfg;
    cr_loss_scale_config_default(&cfg);
    model md;
    model_init(&md, n, &cfg);
    CHECK_OK(cr_cuda_graph_begin(&gpu));
    cr_cuda_loss_scale_unscale(&gpu, md.d_s, md.d_g, n);
    cr_cuda_adam_step_if(&gpu, md.d_s, md.d_p, md.d_g, md.d_m, md.d_v, n, md.d_lr, 0.9f, 0.999f,
                         1e-8f, md.d_t);
    cr_cuda_loss_scale_update(&gpu, md.d_s, &cfg);
    void *graph = NULL;
    CHECK_OK(cr_cuda_graph_end(&gpu, &graph));
    static const float poisons[] = {0.0f, INFINITY, 0.0f, NAN, NAN, 0.0f};
    for (size_t k = 0; k < sizeof poisons / sizeof poisons[0]; k++) {
        backward(&md, poisons[k], (k * 7919) % n);
        cr_loss_scale_unscale(&md.s, md.g, n);
        cr_loss_scale_adam_step_if(&md.s, md.p, md.g, md.m, md.v, n, &md.lr, 0.9f, 0.999f, 1e-8f,
                                   &md.t);
        cr_loss_scale_update(&md.s, &cfg);
        cr_cuda_graph_launch(&gpu, graph);
        char what[64];
        snprintf(what, sizeof what, "graph n=%zu replay %zu", n, k);
        same_state(what, &md);
        same_device("graph m", md.d_m, md.m, n);
        same_device("graph v", md.d_v, md.v, n);
        close_p(what, &md);
    }
    CHECK(md.s.skipped_steps == 3 && md.t == 6);
    cr_cuda_graph_free(graph);
    model_free(&md);
}

int main(void) {
    cudarl_status st = cr_cuda_ctx_init(&gpu, 0);
    if (st != CUDARL_OK) {
        fprintf(stderr,
                "FAIL test_loss_scale_cuda needs a CUDA GPU and could not open one: %s: %s\n",
                cudarl_status_name(st), cudarl_last_error());
        return 1;
    }
    cr_philox_seed(&prng, 2025, 0);
    static const size_t sizes[] = {1, 1000, 65537, ((size_t)3 << 20) + 5}; /* > 8192 blocks */
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        overflow_case(n, INFINITY, n - 1);
        overflow_case(n, -INFINITY, n / 2);
        overflow_case(n, NAN, 0);
        clean_case(n);
    }
    printf("ok overflow, clean\n");
    empty_case();
    printf("ok empty\n");
    sequence_case(1000);
    sequence_case(70001);
    printf("ok sequence\n");
    graph_case(9000);
    printf("ok graph\n");
    cr_cuda_ctx_free(&gpu);
    return 0;
}
