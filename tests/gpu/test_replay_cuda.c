/* Replay buffer, CUDA twin against the CPU twin (the specification): both get the same steps
 * (several envs, random episode lengths, terminations, truncations with final observations, ring
 * wrap-arounds), then their storage (frames, actions, rewards, flags, heads, state, tree) must be
 * the same bytes, batches drawn with the same stream must be the same bytes (outputs poisoned with
 * 0xFF first, so a field a kernel forgets fails), stream offsets must agree, and after priority
 * updates (duplicates and stale indices included) the trees must be the same bits. The graph group
 * captures insert + both samplers + an update into a CUDA graph and replays it against the CPU.
 *
 * Usage: test_replay_cuda [storage|uniform|prioritized|graph]   (all when omitted)
 * Needs a GPU (ctest label gpu); without one it fails and says so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops/backend.h"
#include "ops/cuda/cuda_backend.h"
#include "replay/replay_cuda.h"

static cudarl_ctx gpu;
static cr_philox_state prng;

static uint32_t rnd(uint32_t n) { return (uint32_t)(((uint64_t)cr_philox_next_u32(&prng) * n) >> 32); }

#define MAXB 64

/* A CPU and a GPU buffer of one spec, the step inputs and batch outputs of both. */
typedef struct twin {
    cr_replay_spec sp;
    cr_arena harena, darena;
    cr_replay cpu;
    cr_replay_cuda gpu;
    size_t fb;
    int *ep_left; /* steps left in each env's episode */
    /* host step inputs */
    uint8_t *obs, *fin, *term, *trunc;
    int32_t *act;
    float *rew;
    /* device step inputs */
    uint8_t *d_obs, *d_fin, *d_term, *d_trunc;
    int32_t *d_act;
    float *d_rew;
    /* batch outputs, host (CPU twin) and device */
    cr_replay_batch hb, db;
    size_t obs_bytes;
    size_t ib;             /* bytes from one env's insert input to the next (insert_stride) */
    cr_rng_stream hs, *ds;
    int64_t *d_idx;
    float *d_td;
    int64_t *d_step;       /* the step, on the device, for the _at sampler */
} twin;

static void twin_init(twin *t, const cr_replay_spec *sp) {
    memset(t, 0, sizeof *t);
    t->sp = *sp;
    int E = sp->num_envs;
    cr_plan hp, dp;
    cr_plan_init(&hp);
    cr_plan_add(&hp, "other", 100);
    int hfirst = hp.count;
    CHECK_OK(cr_replay_plan(sp, &hp));
    CHECK_OK(cr_arena_alloc(&t->harena, &hp, CR_MEM_HOST));
    cr_replay_init(&t->cpu, sp, &t->harena, hfirst);
    t->fb = t->cpu.frame_bytes;
    t->obs_bytes = (size_t)sp->stack * t->fb;
    t->ib = cr_replay_insert_stride_bytes(sp);

    cr_plan_init(&dp);
    int i_obs = cr_plan_add(&dp, "obs", E * t->ib);
    int i_fin = cr_plan_add(&dp, "fin", E * t->ib);
    int i_term = cr_plan_add(&dp, "term", (size_t)E);
    int i_trunc = cr_plan_add(&dp, "trunc", (size_t)E);
    int i_act = cr_plan_add(&dp, "act", (size_t)E * 4);
    int i_rew = cr_plan_add(&dp, "rew", (size_t)E * 4);
    int i_bobs = cr_plan_add(&dp, "b.obs", MAXB * t->obs_bytes);
    int i_bnext = cr_plan_add(&dp, "b.next", MAXB * t->obs_bytes);
    int i_bact = cr_plan_add(&dp, "b.act", MAXB * 4);
    int i_brew = cr_plan_add(&dp, "b.rew", MAXB * 4);
    int i_bterm = cr_plan_add(&dp, "b.term", MAXB);
    int i_btrunc = cr_plan_add(&dp, "b.trunc", MAXB);
    int i_bidx = cr_plan_add(&dp, "b.idx", MAXB * 8);
    int i_bw = cr_plan_add(&dp, "b.w", MAXB * 4);
    int i_bwin = cr_plan_add(&dp, "b.window", MAXB * (t->obs_bytes + t->fb));
    int i_s = cr_plan_add(&dp, "stream", sizeof(cr_rng_stream));
    int i_uidx = cr_plan_add(&dp, "u.idx", MAXB * 8);
    int i_utd = cr_plan_add(&dp, "u.td", MAXB * 4);
    int i_step = cr_plan_add(&dp, "step", sizeof(int64_t));
    int dfirst = dp.count;
    CHECK_OK(cr_replay_cuda_plan(sp, MAXB, &dp));
    CHECK_OK(gpu.ops->arena_alloc(&gpu, &t->darena, &dp));
    CHECK_OK(cr_replay_cuda_init(&gpu, &t->gpu, sp, MAXB, &t->darena, dfirst));
#define DG(i) cr_arena_get(&t->darena, (i))
    t->d_obs = DG(i_obs), t->d_fin = DG(i_fin), t->d_term = DG(i_term), t->d_trunc = DG(i_trunc);
    t->d_act = DG(i_act), t->d_rew = DG(i_rew);
    t->db = (cr_replay_batch){DG(i_bobs), DG(i_bnext), DG(i_bact), DG(i_brew), DG(i_bterm),
                              DG(i_btrunc), DG(i_bidx), DG(i_bw), DG(i_bwin)};
    t->ds = DG(i_s);
    t->d_idx = DG(i_uidx), t->d_td = DG(i_utd), t->d_step = DG(i_step);
#undef DG
    t->hb = (cr_replay_batch){malloc(MAXB * t->obs_bytes), malloc(MAXB * t->obs_bytes),
                              malloc(MAXB * 4), malloc(MAXB * 4), malloc(MAXB), malloc(MAXB),
                              malloc(MAXB * 8), malloc(MAXB * 4),
                              malloc(MAXB * (t->obs_bytes + t->fb))};
    t->obs = malloc(E * t->ib), t->fin = malloc(E * t->ib);
    t->term = malloc((size_t)E), t->trunc = malloc((size_t)E);
    t->act = malloc((size_t)E * 4), t->rew = malloc((size_t)E * 4);
    t->ep_left = malloc((size_t)E * sizeof(int));
    for (int e = 0; e < E; e++) t->ep_left[e] = 1 + (int)rnd(9);
    cr_rng_stream_seed(&t->hs, 1234 + (uint64_t)E, 7);
    gpu.ops->copy_from_host(&gpu, t->ds, &t->hs, sizeof t->hs);
}

static void twin_free(twin *t) {
    gpu.ops->arena_free(&gpu, &t->darena);
    cr_arena_free(&t->harena);
    void *hp[] = {t->hb.obs, t->hb.next_obs, t->hb.actions, t->hb.rewards, t->hb.terminated,
                  t->hb.truncated, t->hb.indices, t->hb.weights, t->hb.window, t->obs, t->fin,
                  t->term, t->trunc, t->act, t->rew, t->ep_left};
    for (size_t i = 0; i < sizeof hp / sizeof hp[0]; i++) free(hp[i]);
}

static void random_bytes(uint8_t *p, size_t n, int is_float) {
    if (is_float) {
        float *f = (float *)p;
        for (size_t i = 0; i < n / 4; i++) f[i] = (float)rnd(100000) * 0.01f - 500.0f;
    } else {
        for (size_t i = 0; i < n; i++) p[i] = (uint8_t)rnd(256);
    }
}

/* Draws the next step's inputs (host). */
static void make_step(twin *t) {
    int E = t->sp.num_envs, fl = t->sp.dtype == CR_REPLAY_FLOAT32;
    random_bytes(t->obs, E * t->ib, fl);
    random_bytes(t->fin, E * t->ib, fl);
    for (int e = 0; e < E; e++) {
        t->act[e] = (int32_t)rnd(18);
        t->rew[e] = (float)rnd(2001) * 0.5f - 500.0f;
        t->term[e] = t->trunc[e] = 0;
        if (--t->ep_left[e] <= 0) {
            uint32_t r = rnd(4); /* terminated, truncated, both, terminated */
            t->term[e] = r != 1;
            t->trunc[e] = r == 1 || r == 2;
            t->ep_left[e] = 1 + (int)rnd(12);
        }
    }
}

/* Copies the step's inputs to the device (before a capture, or before a plain insert). */
static void upload_step(twin *t) {
    int E = t->sp.num_envs;
    gpu.ops->copy_from_host(&gpu, t->d_obs, t->obs, E * t->ib);
    gpu.ops->copy_from_host(&gpu, t->d_fin, t->fin, E * t->ib);
    gpu.ops->copy_from_host(&gpu, t->d_term, t->term, (size_t)E);
    gpu.ops->copy_from_host(&gpu, t->d_trunc, t->trunc, (size_t)E);
    gpu.ops->copy_from_host(&gpu, t->d_act, t->act, (size_t)E * 4);
    gpu.ops->copy_from_host(&gpu, t->d_rew, t->rew, (size_t)E * 4);
}

static void step_both(twin *t) {
    make_step(t);
    cr_replay_insert(&t->cpu, t->obs, t->act, t->rew, t->term, t->trunc, t->fin);
    upload_step(t);
    cr_replay_cuda_insert(&gpu, &t->gpu, t->d_obs, t->d_act, t->d_rew, t->d_term, t->d_trunc,
                          t->d_fin);
}

static void cmp_dev(const char *what, const void *host, const void *dev, size_t bytes) {
    uint8_t *g = malloc(bytes ? bytes : 1);
    gpu.ops->copy_to_host(&gpu, g, dev, bytes);
    const uint8_t *h = host;
    for (size_t i = 0; i < bytes; i++)
        CHECK_MSG(h[i] == g[i], "%s: byte %zu of %zu: cpu 0x%02x, gpu 0x%02x", what, i, bytes,
                  h[i], g[i]);
    free(g);
}

static void check_storage(twin *t, const char *when) {
    const cr_replay *c = &t->cpu, *d = &t->gpu.rb;
    size_t C = (size_t)t->sp.capacity;
    char w[160];
#define CMP(name, field, bytes)                                   \
    snprintf(w, sizeof w, "%s: %s", when, name);                  \
    cmp_dev(w, c->field, d->field, bytes)
    CMP("frames", frames, C * t->fb);
    CMP("actions", actions, C * 4);
    CMP("rewards", rewards, C * 4);
    CMP("flags", flags, C);
    CMP("heads", heads, (size_t)t->sp.num_envs * 8);
    CMP("state", state, sizeof(cr_replay_state));
    if (c->tree) { CMP("tree", tree, 2 * (size_t)c->leaves * 4); }
#undef CMP
}

static void poison(twin *t) {
    const cr_replay_batch *h = &t->hb, *d = &t->db;
    size_t sz[9] = {MAXB * t->obs_bytes, MAXB * t->obs_bytes, MAXB * 4, MAXB * 4, MAXB, MAXB,
                    MAXB * 8, MAXB * 4, MAXB * (t->obs_bytes + t->fb)};
    void *hp[9] = {h->obs, h->next_obs, h->actions, h->rewards, h->terminated, h->truncated,
                   h->indices, h->weights, h->window};
    void *dp[9] = {d->obs, d->next_obs, d->actions, d->rewards, d->terminated, d->truncated,
                   d->indices, d->weights, d->window};
    uint8_t *ff = malloc(sz[8]);
    memset(ff, 0xFF, sz[8]);
    for (int i = 0; i < 9; i++) {
        memset(hp[i], 0xFF, sz[i]);
        gpu.ops->copy_from_host(&gpu, dp[i], ff, sz[i]);
    }
    free(ff);
}

static void check_batch(twin *t, int B, const char *what) {
    const cr_replay_batch *h = &t->hb, *d = &t->db;
    char w[160];
#define CB(name, field, bytes)                                    \
    snprintf(w, sizeof w, "%s batch %d: %s", what, B, name);      \
    cmp_dev(w, h->field, d->field, bytes)
    CB("obs", obs, MAXB * t->obs_bytes);
    CB("next_obs", next_obs, MAXB * t->obs_bytes);
    CB("actions", actions, MAXB * 4);
    CB("rewards", rewards, MAXB * 4);
    CB("terminated", terminated, MAXB);
    CB("truncated", truncated, MAXB);
    CB("indices", indices, MAXB * 8);
    CB("weights", weights, MAXB * 4);
    CB("window", window, MAXB * (t->obs_bytes + t->fb));
#undef CB
    cr_rng_stream g;
    gpu.ops->copy_to_host(&gpu, &g, t->ds, sizeof g);
    CHECK_MSG(g.offset == t->hs.offset, "%s batch %d: stream offset cpu %llu, gpu %llu", what, B,
              (unsigned long long)t->hs.offset, (unsigned long long)g.offset);
    CHECK_MSG(cr_replay_cuda_errors(&gpu, &t->gpu) == 0, "%s batch %d: device error bits", what, B);
}

/* Every other call draws the window alone (obs and next_obs NULL, as a learner reading the two
 * views asks): the kernel's loads then serve one output. Unwritten outputs stay poisoned on
 * both sides. */
static void sample_uniform_both(twin *t, int B) {
    static int calls;
    cr_replay_batch hb = t->hb, db = t->db;
    if (calls++ % 2) hb.obs = hb.next_obs = db.obs = db.next_obs = NULL;
    poison(t);
    CHECK_OK(cr_replay_sample_uniform(&t->cpu, &t->hs, B, &hb));
    CHECK_OK(cr_replay_cuda_sample_uniform(&gpu, &t->gpu, t->ds, B, &db));
    check_batch(t, B, "uniform");
}

/* Every other call the GPU reads the step from device memory (the _at sampler, as DQN's graphs
 * do): the same beta, so the same weights, bit for bit. */
static void sample_prio_both(twin *t, int B, int64_t step) {
    static int calls;
    poison(t);
    CHECK_OK(cr_replay_sample_prioritized(&t->cpu, &t->hs, B, step, &t->hb));
    if (calls++ % 2) {
        gpu.ops->copy_from_host(&gpu, t->d_step, &step, sizeof step);
        CHECK_OK(cr_replay_cuda_sample_prioritized_at(&gpu, &t->gpu, t->ds, B, t->d_step,
                                                      &t->db));
    } else {
        CHECK_OK(cr_replay_cuda_sample_prioritized(&gpu, &t->gpu, t->ds, B, step, &t->db));
    }
    check_batch(t, B, "prioritized");
}

/* Priority updates for the batch just drawn (with duplicates as drawn), plus stale and
 * out-of-range indices. */
static void update_both(twin *t, int B) {
    int64_t idx[MAXB];
    float td[MAXB];
    int n = B < MAXB - 3 ? B + 3 : B;
    memcpy(idx, t->hb.indices, (size_t)B * 8);
    for (int i = B; i < n; i++) idx[i] = (int64_t)rnd((uint32_t)t->sp.capacity + 5) - 2;
    for (int i = 0; i < n; i++) td[i] = ((float)rnd(20001) - 10000.0f) * 1e-3f;
    if (n > 2) idx[n - 1] = idx[0]; /* a later duplicate wins */
    CHECK_OK(cr_replay_update_priorities(&t->cpu, idx, td, n, 1e-3f));
    gpu.ops->copy_from_host(&gpu, t->d_idx, idx, (size_t)n * 8);
    gpu.ops->copy_from_host(&gpu, t->d_td, td, (size_t)n * 4);
    CHECK_OK(cr_replay_cuda_update_priorities(&gpu, &t->gpu, t->d_idx, t->d_td, n, 1e-3f));
}

/* The configurations: float plain observations (4-byte copies), uint8 frame stacks with 16-byte
 * copies (12x12) and byte copies (13x13); small rings so every run wraps many times. */
#define SPECS 6 /* spec_of's shapes */

static cr_replay_spec spec_of(int which, int prio) {
    cr_replay_spec sp = {0};
    sp.prioritized = prio;
    sp.alpha = 0.6f;
    sp.beta0 = 0.4f;
    sp.beta_steps = 1000;
    switch (which) {
    case 0: sp.num_envs = 3, sp.capacity = 3 * 23, sp.frame_elems = 5, sp.dtype = CR_REPLAY_FLOAT32, sp.stack = 1; break;
    case 1: sp.num_envs = 4, sp.capacity = 4 * 29, sp.frame_elems = 144, sp.dtype = CR_REPLAY_UINT8, sp.stack = 4; break;
    case 2: sp.num_envs = 5, sp.capacity = 5 * 16, sp.frame_elems = 169, sp.dtype = CR_REPLAY_UINT8, sp.stack = 4; break;
    /* deeper than the gather's register stage (RC_STAGE 4): two rounds of loads per unit */
    case 3: sp.num_envs = 2, sp.capacity = 2 * 40, sp.frame_elems = 48, sp.dtype = CR_REPLAY_UINT8, sp.stack = 6; break;
    /* an env's own 4-frame stacks inserted as they are (insert_stride: the newest frame of each
     * row of 4, 16-byte units) */
    case 4: sp.num_envs = 3, sp.capacity = 3 * 21, sp.frame_elems = 144, sp.dtype = CR_REPLAY_UINT8, sp.stack = 4, sp.insert_stride = 4 * 144; break;
    /* many insert blocks finishing in any order (the last one publishes and refreshes) */
    default: sp.num_envs = 300, sp.capacity = 300 * 12, sp.frame_elems = 16, sp.dtype = CR_REPLAY_UINT8, sp.stack = 2; break;
    }
    return sp;
}

static void test_storage(void) {
    for (int which = 0; which < SPECS; which++)
        for (int prio = 0; prio < 2; prio++) {
            cr_replay_spec sp = spec_of(which, prio);
            twin t;
            twin_init(&t, &sp);
            check_storage(&t, "after init");
            for (int step = 0; step < 150; step++) {
                step_both(&t);
                char w[80];
                snprintf(w, sizeof w, "config %d prio %d step %d", which, prio, step);
                check_storage(&t, w);
            }
            twin_free(&t);
        }
    printf("storage: ok\n");
}

static void test_uniform(void) {
    for (int which = 0; which < SPECS; which++) {
        cr_replay_spec sp = spec_of(which, which == 1);
        twin t;
        twin_init(&t, &sp);
        for (int step = 0; step < 120; step++) {
            step_both(&t);
            if (cr_replay_num_sampleable(&t.cpu) == 0) continue;
            sample_uniform_both(&t, 1 + (int)rnd(MAXB));
            if (step % 7 == 0) sample_uniform_both(&t, MAXB);
        }
        twin_free(&t);
    }
    printf("uniform: ok\n");
}

static void test_prioritized(void) {
    for (int which = 0; which < SPECS; which++) {
        cr_replay_spec sp = spec_of(which, 1);
        twin t;
        twin_init(&t, &sp);
        for (int step = 0; step < 120; step++) {
            step_both(&t);
            if (cr_replay_num_sampleable(&t.cpu) == 0) continue;
            int B = 1 + (int)rnd(MAXB - 3);
            sample_prio_both(&t, B, step * 10);
            update_both(&t, B);
            check_storage(&t, "after update");
            if (step % 5 == 0) sample_uniform_both(&t, B); /* the stream is shared: odd offsets */
        }
        twin_free(&t);
    }
    printf("prioritized: ok\n");
}

/* insert + uniform + prioritized + update captured once, replayed per step with new inputs. */
static void test_graph(void) {
    cr_replay_spec sp = spec_of(1, 1);
    twin t;
    twin_init(&t, &sp);
    const int B = 32;
    for (int step = 0; step < 10; step++) step_both(&t); /* something to sample */
    size_t allocs = cr_cuda_alloc_count();
    void *graph = NULL;
    int64_t idx[MAXB];
    float td[MAXB];
    CHECK_OK(cr_cuda_graph_begin(&gpu));
    cr_replay_cuda_insert(&gpu, &t.gpu, t.d_obs, t.d_act, t.d_rew, t.d_term, t.d_trunc, t.d_fin);
    CHECK_OK(cr_replay_cuda_sample_uniform(&gpu, &t.gpu, t.ds, B, &t.db));
    /* beta's step read on the device, changed between replays as a trainer's counter is */
    CHECK_OK(cr_replay_cuda_sample_prioritized_at(&gpu, &t.gpu, t.ds, B, t.d_step, &t.db));
    CHECK_OK(cr_replay_cuda_update_priorities(&gpu, &t.gpu, t.d_idx, t.d_td, B, 1e-3f));
    CHECK_OK(cr_cuda_graph_end(&gpu, &graph));
    for (int step = 0; step < 60; step++) {
        int64_t beta_step = 400 + 10 * step; /* spec_of's beta_steps is 1000: beta moves */
        gpu.ops->copy_from_host(&gpu, t.d_step, &beta_step, sizeof beta_step);
        make_step(&t);
        upload_step(&t);
        for (int i = 0; i < B; i++) td[i] = ((float)rnd(20001) - 10000.0f) * 1e-3f;
        gpu.ops->copy_from_host(&gpu, t.d_td, td, (size_t)B * 4);
        cr_replay_insert(&t.cpu, t.obs, t.act, t.rew, t.term, t.trunc, t.fin);
        poison(&t);
        CHECK_OK(cr_replay_sample_uniform(&t.cpu, &t.hs, B, &t.hb));
        CHECK_OK(cr_replay_sample_prioritized(&t.cpu, &t.hs, B, beta_step, &t.hb));
        /* the graph's update reads d_idx, which the previous replay's host code filled */
        gpu.ops->copy_to_host(&gpu, idx, t.d_idx, (size_t)B * 8);
        cr_cuda_graph_launch(&gpu, graph);
        check_batch(&t, B, "graph");
        CHECK_OK(cr_replay_update_priorities(&t.cpu, idx, td, B, 1e-3f));
        check_storage(&t, "graph replay");
        /* next replay's update uses this batch's indices */
        gpu.ops->copy(&gpu, t.d_idx, t.db.indices, (size_t)B * 8);
    }
    CHECK_MSG(cr_cuda_alloc_count() == allocs, "%zu device allocations during the replays",
              cr_cuda_alloc_count() - allocs);
    cr_cuda_graph_free(graph);
    twin_free(&t);
    printf("graph: ok\n");
}

int main(int argc, char **argv) {
    cudarl_status st = cr_cuda_ctx_init(&gpu, 0);
    if (st != CUDARL_OK) {
        fprintf(stderr, "FAIL: test_replay_cuda needs a CUDA GPU: %s\n", cudarl_last_error());
        return 1;
    }
    cr_philox_seed(&prng, 2024, 5);
    const char *g = argc > 1 ? argv[1] : "all";
    int all = !strcmp(g, "all"), ran = 0;
    if (all || !strcmp(g, "storage")) test_storage(), ran = 1;
    if (all || !strcmp(g, "uniform")) test_uniform(), ran = 1;
    if (all || !strcmp(g, "prioritized")) test_prioritized(), ran = 1;
    if (all || !strcmp(g, "graph")) test_graph(), ran = 1;
    CHECK_MSG(ran, "unknown group %s", g);
    cr_cuda_ctx_free(&gpu);
    return 0;
}
