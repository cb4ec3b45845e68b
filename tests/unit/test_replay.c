/* Replay buffer (CPU): round trips against a naive reference that stores every stacked obs and
 * next_obs in full, uniform and prioritized sampling distributions (chi-square), importance
 * weights and the beta schedule, priority updates, and the memory plan.
 * Usage: test_replay roundtrip|uniform|prioritized|plan */
#include <string.h>

#include "check.h"
#include "replay/replay.h"

/* ---- helpers ------------------------------------------------------------------------------ */

/* A buffer and its arena; a dummy item goes first so the replay's items do not start at 0. */
typedef struct owned_replay {
    cr_arena arena;
    cr_replay rb;
} owned_replay;

static void owned_init(owned_replay *o, const cr_replay_spec *sp) {
    cr_plan plan;
    cr_plan_init(&plan);
    cr_plan_add(&plan, "other", 100);
    int first = plan.count;
    CHECK_OK(cr_replay_plan(sp, &plan));
    CHECK_OK(cr_arena_alloc(&o->arena, &plan, CR_MEM_HOST));
    cr_replay_init(&o->rb, sp, &o->arena, first);
}

static uint32_t rnd(cr_philox_state *g, uint32_t n) {
    return (uint32_t)(((uint64_t)cr_philox_next_u32(g) * n) >> 32);
}

/* Upper 0.1% point of chi-square with df degrees of freedom (Wilson-Hilferty, z = 3.0902): within
 * 0.2% of the exact quantile for df >= 30 (df 63: 103.51 vs 103.44), a little lenient. */
static double chi2_crit_p001(int df) {
    double a = 2.0 / (9.0 * df), c = 1.0 - a + 3.0902 * sqrt(a);
    return df * c * c * c;
}

/* Chi-square of counts (n) against expected (n); fails on a count where nothing is expected. */
static double chi2_stat(const int64_t *counts, const double *expected, int n) {
    double x = 0;
    for (int i = 0; i < n; i++) {
        if (expected[i] == 0) {
            CHECK_MSG(counts[i] == 0, "bin %d expects nothing, got %lld", i, (long long)counts[i]);
            continue;
        }
        double d = (double)counts[i] - expected[i];
        x += d * d / expected[i];
    }
    return x;
}

/* ---- the naive reference ------------------------------------------------------------------- */

#define MAX_EP 256

/* Every transition in full: obs and next_obs stacks (next zeros when terminated), built from the
 * episode's frame list, not from slots; plus where the buffer's rule says it lives. */
typedef struct ref_model {
    int E, K, R, min_len, max_len;
    size_t fb;                 /* frame bytes */
    int64_t count, cap;        /* transitions recorded */
    uint8_t *obs, *next;       /* (cap, K, fb) */
    float *reward;
    uint8_t *term, *trunc;
    int *env, *t_in_ep;
    int64_t *pos;              /* slot position in its env */
    int64_t *nslots;           /* (E) slots each env has written */
    int64_t *at;               /* (E, R) transition id in slot, -1 for FINAL or empty */
    uint8_t *ep_frames;        /* (E, MAX_EP + 1, fb) current episode's frames */
    int *t, *len;              /* (E) step within episode, episode length */
    int float_obs;
    cr_philox_state g;
} ref_model;

static void random_frame(ref_model *m, uint8_t *dst) {
    if (m->float_obs)
        for (size_t i = 0; i < m->fb / 4; i++) {
            float v = cr_philox_uniform(&m->g) * 2.0f - 1.0f;
            memcpy(dst + 4 * i, &v, 4);
        }
    else
        for (size_t i = 0; i < m->fb; i++) dst[i] = (uint8_t)cr_philox_next_u32(&m->g);
}

static uint8_t *ep_frame(ref_model *m, int e, int i) {
    return m->ep_frames + ((size_t)e * (MAX_EP + 1) + (size_t)i) * m->fb;
}

static void start_episode(ref_model *m, int e) {
    m->t[e] = 0;
    m->len[e] = m->min_len + (int)rnd(&m->g, (uint32_t)(m->max_len - m->min_len + 1));
    random_frame(m, ep_frame(m, e, 0));
}

static void ref_init(ref_model *m, const cr_replay_spec *sp, int steps, int min_len, int max_len,
                     uint64_t seed) {
    memset(m, 0, sizeof *m);
    m->E = sp->num_envs, m->K = sp->stack, m->R = (int)(sp->capacity / sp->num_envs);
    m->min_len = min_len, m->max_len = max_len;
    CHECK(max_len <= MAX_EP);
    m->float_obs = sp->dtype == CR_REPLAY_FLOAT32;
    m->fb = (size_t)sp->frame_elems * (m->float_obs ? 4 : 1);
    m->cap = (int64_t)steps * m->E;
    size_t stack = (size_t)m->K * m->fb;
    m->obs = calloc((size_t)m->cap, stack), m->next = calloc((size_t)m->cap, stack);
    m->reward = calloc((size_t)m->cap, 4);
    m->term = calloc((size_t)m->cap, 1), m->trunc = calloc((size_t)m->cap, 1);
    m->env = calloc((size_t)m->cap, sizeof(int)), m->t_in_ep = calloc((size_t)m->cap, sizeof(int));
    m->pos = calloc((size_t)m->cap, 8);
    m->nslots = calloc((size_t)m->E, 8), m->at = malloc((size_t)m->E * m->R * 8);
    m->ep_frames = calloc((size_t)m->E * (MAX_EP + 1), m->fb);
    m->t = calloc((size_t)m->E, sizeof(int)), m->len = calloc((size_t)m->E, sizeof(int));
    for (int64_t i = 0; i < (int64_t)m->E * m->R; i++) m->at[i] = -1;
    cr_philox_seed(&m->g, seed, 0);
    for (int e = 0; e < m->E; e++) start_episode(m, e);
}

static void ref_free(ref_model *m) {
    free(m->obs), free(m->next), free(m->reward), free(m->term), free(m->trunc);
    free(m->env), free(m->t_in_ep), free(m->pos), free(m->nslots), free(m->at);
    free(m->ep_frames), free(m->t), free(m->len);
}

/* The stack ending at episode frame i (frames before 0 repeat frame 0). */
static void ref_stack(ref_model *m, int e, int i, uint8_t *dst) {
    for (int k = 0; k < m->K; k++) {
        int j = i - (m->K - 1 - k);
        memcpy(dst + (size_t)k * m->fb, ep_frame(m, e, j < 0 ? 0 : j), m->fb);
    }
}

/* One step of env e: records the transition and fills its row of the insert arrays. */
static void ref_step_env(ref_model *m, int e, uint8_t *obs, int32_t *action, float *reward,
                         uint8_t *term, uint8_t *trunc, uint8_t *final_obs) {
    int64_t id = m->count++;
    CHECK(id < m->cap);
    int t = m->t[e], done = t == m->len[e] - 1;
    uint32_t kind = rnd(&m->g, 10); /* at an end: 0-4 terminated, 5-8 truncated, 9 both */
    uint8_t te = done && (kind < 5 || kind == 9), tr = done && kind >= 5;
    memcpy(obs, ep_frame(m, e, t), m->fb);
    random_frame(m, ep_frame(m, e, t + 1)); /* the next obs, or the final obs if done */
    memcpy(final_obs, ep_frame(m, e, t + 1), m->fb);
    size_t stack = (size_t)m->K * m->fb;
    ref_stack(m, e, t, m->obs + id * stack);
    if (te) memset(m->next + id * stack, 0, stack);
    else ref_stack(m, e, t + 1, m->next + id * stack);
    *action = (int32_t)id, *term = te, *trunc = tr;
    *reward = m->reward[id] = cr_philox_uniform(&m->g);
    m->term[id] = te, m->trunc[id] = tr, m->env[id] = e, m->t_in_ep[id] = t;
    int64_t p = m->nslots[e];
    m->pos[id] = p;
    m->at[(int64_t)e * m->R + p % m->R] = id;
    m->nslots[e] = p + 1;
    if (tr && !te) m->at[(int64_t)e * m->R + (p + 1) % m->R] = -1, m->nslots[e] = p + 2;
    if (done) start_episode(m, e);
    else m->t[e] = t + 1;
}

/* The reference's validity rule for transition id (the rule stated in replay.h). */
static int ref_valid(const ref_model *m, int64_t id) {
    int64_t n = m->nslots[m->env[id]], p = m->pos[id];
    int64_t lo = n <= m->R ? 0 : n - m->R + m->K - 1;
    return p >= lo && (p <= n - 2 || m->term[id]);
}

/* Transition held by slot s per the reference, or -1. */
static int64_t ref_slot(const ref_model *m, int64_t s) {
    int64_t id = m->at[s];
    if (id < 0) return -1;
    return ref_valid(m, id) ? id : -1;
}

/* ---- round trips --------------------------------------------------------------------------- */

typedef struct sample_bufs {
    uint8_t *obs, *next, *window;
    int32_t *actions;
    float *rewards, *weights;
    uint8_t *term, *trunc;
    int64_t *idx;
    cr_replay_batch batch;
} sample_bufs;

static void bufs_init(sample_bufs *b, const ref_model *m, int B) {
    size_t stack = (size_t)m->K * m->fb;
    b->obs = malloc(B * stack), b->next = malloc(B * stack);
    b->window = malloc(B * (stack + m->fb));
    b->actions = malloc(B * 4), b->rewards = malloc(B * 4), b->weights = malloc(B * 4);
    b->term = malloc(B), b->trunc = malloc(B), b->idx = malloc(B * 8);
    b->batch = (cr_replay_batch){b->obs, b->next, b->actions, b->rewards, b->term, b->trunc,
                                 b->idx, b->weights, b->window};
}

static void bufs_free(sample_bufs *b) {
    free(b->obs), free(b->next), free(b->window), free(b->actions), free(b->rewards), free(b->weights);
    free(b->term), free(b->trunc), free(b->idx);
}

/* What the round trip has seen, so the test can insist the hard cases were exercised. */
typedef struct coverage {
    int64_t checked, padded, wrapped, next_wrapped, terminated, truncated;
} coverage;

/* Row b of a sample must equal the reference's transition (found by its action = id). */
static void check_row(const ref_model *m, const sample_bufs *sb, int b, coverage *cov) {
    int64_t id = sb->actions[b];
    CHECK_MSG(id >= 0 && id < m->count, "row %d: action %lld is no transition id", b,
              (long long)id);
    int e = m->env[id];
    int64_t p = m->pos[id], s = sb->idx[b];
    CHECK_MSG(s == (int64_t)e * m->R + p % m->R, "id %lld: index %lld, expected %lld",
              (long long)id, (long long)s, (long long)((int64_t)e * m->R + p % m->R));
    CHECK_MSG(ref_valid(m, id), "id %lld (env %d, position %lld, %lld slots) is not sampleable",
              (long long)id, e, (long long)p, (long long)m->nslots[e]);
    size_t stack = (size_t)m->K * m->fb;
    CHECK_MSG(memcmp(sb->obs + b * stack, m->obs + id * stack, stack) == 0,
              "id %lld (step %d of its episode, slot %lld): obs stack differs", (long long)id,
              m->t_in_ep[id], (long long)s);
    CHECK_MSG(memcmp(sb->next + b * stack, m->next + id * stack, stack) == 0,
              "id %lld (step %d, term %d trunc %d): next_obs stack differs", (long long)id,
              m->t_in_ep[id], m->term[id], m->trunc[id]);
    /* the window row: obs's stack, then next_obs's newest frame (zeros where terminated), so
     * entries 1 .. K are next_obs except a terminated row's entries 1 .. K-1 (obs's) */
    const uint8_t *w = sb->window + b * (stack + m->fb);
    CHECK_MSG(memcmp(w, m->obs + id * stack, stack) == 0, "id %lld: window's obs differs",
              (long long)id);
    CHECK_MSG(memcmp(w + stack, m->next + id * stack + stack - m->fb, m->fb) == 0,
              "id %lld (term %d): window's last frame differs from next_obs's newest",
              (long long)id, m->term[id]);
    CHECK_MSG(m->term[id] || memcmp(w + m->fb, m->next + id * stack, stack) == 0,
              "id %lld: window entries 1 .. K differ from next_obs", (long long)id);
    CHECK_MSG(sb->rewards[b] == m->reward[id], "id %lld: reward %g, expected %g", (long long)id,
              (double)sb->rewards[b], (double)m->reward[id]);
    CHECK_MSG(sb->term[b] == m->term[id] && sb->trunc[b] == m->trunc[id],
              "id %lld: flags %d/%d, expected %d/%d", (long long)id, sb->term[b], sb->trunc[b],
              m->term[id], m->trunc[id]);
    int reach = m->t_in_ep[id] < m->K - 1 ? m->t_in_ep[id] : m->K - 1; /* frames looked back */
    cov->checked++;
    cov->padded += m->t_in_ep[id] < m->K - 1;
    cov->wrapped += p % m->R < reach;
    cov->next_wrapped += !m->term[id] && (p + 1) % m->R == 0;
    cov->terminated += m->term[id], cov->truncated += m->trunc[id];
}

/* Every slot: validity equals the reference's, and each valid one gathers its transition. */
static void check_all_slots(const cr_replay *rb, const ref_model *m, sample_bufs *sb,
                            coverage *cov) {
    int64_t valid = 0;
    for (int64_t s = 0; s < rb->spec.capacity; s++) {
        int64_t id = ref_slot(m, s);
        int v = cr_replay_slot_valid(rb, s);
        CHECK_MSG(v == (id >= 0), "slot %lld: valid %d, reference says %d", (long long)s, v,
                  id >= 0);
        if (rb->tree)
            CHECK_MSG((rb->tree[rb->leaves + s] > 0) == v, "slot %lld: leaf %g but valid %d",
                      (long long)s, (double)rb->tree[rb->leaves + s], v);
        if (!v) continue;
        valid++;
        cr_replay_gather(rb, s, 0, &sb->batch);
        check_row(m, sb, 0, cov);
    }
    CHECK_MSG(valid == cr_replay_num_sampleable(rb), "%lld valid slots, buffer counts %lld",
              (long long)valid, (long long)cr_replay_num_sampleable(rb));
}

/* Every inner node of the tree is exactly left + right. */
static void check_tree(const cr_replay *rb) {
    for (int64_t i = 1; i < rb->leaves; i++)
        CHECK_MSG(rb->tree[i] == rb->tree[2 * i] + rb->tree[2 * i + 1],
                  "tree node %lld is %g, children sum to %g", (long long)i, (double)rb->tree[i],
                  (double)(rb->tree[2 * i] + rb->tree[2 * i + 1]));
}

/* Draws uniform (and prioritized) batches and checks every row; updates some priorities. */
static void sample_and_check(cr_replay *rb, const ref_model *m, sample_bufs *sb, int B,
                             cr_rng_stream *rs, cr_philox_state *g, coverage *cov) {
    CHECK_OK(cr_replay_sample_uniform(rb, rs, B, &sb->batch));
    for (int b = 0; b < B; b++) check_row(m, sb, b, cov);
    if (!rb->tree) return;
    CHECK_OK(cr_replay_sample_prioritized(rb, rs, B, 10, &sb->batch));
    for (int b = 0; b < B; b++) check_row(m, sb, b, cov);
    float td[64];
    for (int b = 0; b < B; b++) td[b] = cr_philox_uniform(g) * 4.0f - 2.0f;
    CHECK_OK(cr_replay_update_priorities(rb, sb->idx, td, B, 1e-3f));
}

static void roundtrip(int E, int K, int R, int elems, cr_replay_dtype dt, int prio, int steps,
                      int min_len, int max_len, uint64_t seed) {
    cr_replay_spec sp = {.capacity = (int64_t)E * R, .num_envs = E, .frame_elems = elems,
                         .dtype = dt, .stack = K, .prioritized = prio, .alpha = 0.6f,
                         .beta0 = 0.4f, .beta_steps = 1000};
    owned_replay o;
    owned_init(&o, &sp);
    ref_model m;
    ref_init(&m, &sp, steps, min_len, max_len, seed);
    sample_bufs sb;
    const int B = 16;
    bufs_init(&sb, &m, B);
    uint8_t *obs = malloc((size_t)E * m.fb), *fin = malloc((size_t)E * m.fb);
    int32_t *act = malloc((size_t)E * 4);
    float *rew = malloc((size_t)E * 4);
    uint8_t *te = malloc((size_t)E), *tr = malloc((size_t)E);
    cr_rng_stream rs;
    cr_rng_stream_seed(&rs, seed, 7);
    coverage cov = {0};
    for (int step = 0; step < steps; step++) {
        for (int e = 0; e < E; e++)
            ref_step_env(&m, e, obs + e * m.fb, act + e, rew + e, te + e, tr + e, fin + e * m.fb);
        cr_replay_insert(&o.rb, obs, act, rew, te, tr, fin);
        check_all_slots(&o.rb, &m, &sb, &cov);
        if (cr_replay_num_sampleable(&o.rb) > 0)
            sample_and_check(&o.rb, &m, &sb, B, &rs, &m.g, &cov);
        if (prio && step % 37 == 0) check_tree(&o.rb);
    }
    printf("  E=%d K=%d R=%d %s%s: %lld rows checked (padded %lld, stack across the wrap %lld, "
           "next across the wrap %lld, terminated %lld, truncated %lld), ring wrapped %lld times\n",
           E, K, R, dt == CR_REPLAY_UINT8 ? "uint8" : "float32", prio ? " prioritized" : "",
           (long long)cov.checked, (long long)cov.padded, (long long)cov.wrapped,
           (long long)cov.next_wrapped, (long long)cov.terminated, (long long)cov.truncated,
           (long long)(m.nslots[0] / R));
    CHECK(m.nslots[0] / R >= 3);
    CHECK(cov.next_wrapped > 0 && cov.terminated > 0 && cov.truncated > 0);
    if (K > 1) CHECK(cov.padded > 0 && cov.wrapped > 0);
    free(obs), free(fin), free(act), free(rew), free(te), free(tr);
    bufs_free(&sb);
    ref_free(&m);
    cr_arena_free(&o.arena);
}

static void test_roundtrip(void) {
    roundtrip(3, 4, 40, 12, CR_REPLAY_UINT8, 1, 1500, 1, 12, 1);  /* pixels, prioritized */
    roundtrip(1, 4, 7, 12, CR_REPLAY_UINT8, 0, 600, 1, 12, 2);    /* smallest ring: K + 3 */
    roundtrip(4, 1, 23, 3, CR_REPLAY_FLOAT32, 0, 800, 1, 12, 3);  /* plain float obs */
    roundtrip(2, 2, 17, 5, CR_REPLAY_UINT8, 1, 800, 1, 3, 4);     /* very short episodes */
    roundtrip(5, 3, 50, 7, CR_REPLAY_FLOAT32, 1, 700, 4, 16, 5);  /* stacked float */
}

/* ---- uniform sampling ---------------------------------------------------------------------- */

/* Fills a buffer with `steps` steps of random episodes from the reference. */
static void fill(cr_replay *rb, ref_model *m, int steps) {
    int E = m->E;
    uint8_t *obs = malloc((size_t)E * m->fb), *fin = malloc((size_t)E * m->fb);
    int32_t *act = malloc((size_t)E * 4);
    float *rew = malloc((size_t)E * 4);
    uint8_t *te = malloc((size_t)E), *tr = malloc((size_t)E);
    for (int step = 0; step < steps; step++) {
        for (int e = 0; e < E; e++)
            ref_step_env(m, e, obs + e * m->fb, act + e, rew + e, te + e, tr + e, fin + e * m->fb);
        cr_replay_insert(rb, obs, act, rew, te, tr, fin);
    }
    free(obs), free(fin), free(act), free(rew), free(te), free(tr);
}

/* Draw `draws` uniform samples in batches of B: every one valid, counts uniform over the valid
 * slots (chi-square at p = 0.001 over the valid slots, df = valid - 1). */
static void uniform_chi2(cr_replay *rb, int draws, int B, uint64_t seed) {
    int64_t C = rb->spec.capacity, nv = cr_replay_num_sampleable(rb);
    int64_t *counts = calloc((size_t)C, 8), idx[256];
    double *expected = calloc((size_t)C, sizeof(double));
    for (int64_t s = 0; s < C; s++)
        expected[s] = cr_replay_slot_valid(rb, s) ? (double)draws / (double)nv : 0;
    cr_replay_batch out = {.indices = idx};
    cr_rng_stream rs;
    cr_rng_stream_seed(&rs, seed, 0);
    for (int d = 0; d < draws; d += B) {
        uint64_t before = rs.offset;
        CHECK_OK(cr_replay_sample_uniform(rb, &rs, B, &out));
        CHECK((rs.offset - before) % (2 * (uint64_t)B) == 0 && rs.offset > before);
        for (int b = 0; b < B; b++) counts[idx[b]]++;
    }
    double x = chi2_stat(counts, expected, (int)C), crit = chi2_crit_p001((int)nv - 1);
    printf("  uniform: %lld valid of %lld slots, %d draws, chi2 %.1f (df %lld, p=0.001 "
           "threshold %.1f)\n", (long long)nv, (long long)C, draws, x, (long long)nv - 1, crit);
    CHECK_MSG(x < crit, "uniform chi2 %.1f >= %.1f", x, crit);
    free(counts), free(expected);
}

/* The documented word rule, re-derived with a 128-bit product: attempt k of draw b reads words
 * offset + 2 (k B + b) + {0, 1}. */
static void check_uniform_words(cr_replay *rb) {
    int B = 32, E = rb->spec.num_envs;
    int64_t idx[32], wmax = 1;
    for (int e = 0; e < E; e++) {
        int64_t n = rb->heads[e], lo = n <= rb->rows ? 0 : n - rb->rows + rb->spec.stack - 1;
        if (n - lo > wmax) wmax = n - lo;
    }
    cr_rng_stream rs, rs0;
    cr_rng_stream_seed(&rs, 99, 3);
    rs.offset = 12345;
    rs0 = rs;
    cr_replay_batch out = {.indices = idx};
    CHECK_OK(cr_replay_sample_uniform(rb, &rs, B, &out));
    uint64_t kmax = 0;
    for (int b = 0; b < B; b++) {
        for (uint64_t k = 0;; k++) {
            uint64_t w = rs0.offset + 2 * (k * B + b);
            uint64_t x = (uint64_t)cr_rng_stream_word(&rs0, w) << 32;
            x |= cr_rng_stream_word(&rs0, w + 1);
            uint64_t i = (uint64_t)(((unsigned __int128)x * ((uint64_t)E * wmax)) >> 64);
            int e = (int)(i / wmax);
            int64_t n = rb->heads[e], lo = n <= rb->rows ? 0 : n - rb->rows + rb->spec.stack - 1;
            int64_t s = (int64_t)e * rb->rows + (lo + (int64_t)(i % wmax)) % rb->rows;
            if (lo + (int64_t)(i % wmax) > n - 1 || !cr_replay_slot_valid(rb, s)) continue;
            CHECK_MSG(idx[b] == s, "draw %d: slot %lld, the word rule gives %lld", b,
                      (long long)idx[b], (long long)s);
            if (k > kmax) kmax = k;
            break;
        }
    }
    uint64_t want = rs0.offset + 2 * (uint64_t)B * (kmax + 1);
    CHECK_MSG(rs.offset == want, "stream at %llu, expected %llu", (unsigned long long)rs.offset,
              (unsigned long long)want);
}

static void test_uniform(void) {
    /* Before the ring wraps, with unequal env windows and FINAL slots in them, then after. */
    cr_replay_spec sp = {.capacity = 3 * 120, .num_envs = 3, .frame_elems = 4,
                         .dtype = CR_REPLAY_UINT8, .stack = 2};
    owned_replay o;
    owned_init(&o, &sp);
    ref_model m;
    ref_init(&m, &sp, 400, 1, 6, 11);
    fill(&o.rb, &m, 70);
    CHECK(o.rb.heads[0] != o.rb.heads[1] || o.rb.heads[1] != o.rb.heads[2]);
    check_uniform_words(&o.rb);
    uniform_chi2(&o.rb, 200000, 50, 1);
    fill(&o.rb, &m, 300);
    check_uniform_words(&o.rb);
    uniform_chi2(&o.rb, 200000, 64, 2);
    /* Nothing to sample: a clear error, not a hang. */
    cr_replay_init(&o.rb, &sp, &o.arena, 1);
    int64_t idx[4];
    cr_replay_batch out = {.indices = idx};
    cr_rng_stream rs;
    cr_rng_stream_seed(&rs, 1, 0);
    CHECK(cr_replay_sample_uniform(&o.rb, &rs, 4, &out) == CUDARL_ERR_INVALID_ARG);
    ref_free(&m);
    cr_arena_free(&o.arena);
}

/* ---- prioritized sampling ------------------------------------------------------------------ */

/* A prioritized buffer of exactly 64 sampleable transitions: one env, 65 slots, no episode end
 * (the newest slot waits for its next observation). */
static void fill_64(owned_replay *o, ref_model *m, const cr_replay_spec *sp) {
    owned_init(o, sp);
    ref_init(m, sp, 300, 250, 250, 21);
    fill(&o->rb, m, 200);
    CHECK(cr_replay_num_sampleable(&o->rb) == 64);
}

/* The 64 valid slots (in slot order) into valid. */
static void valid_slots(const cr_replay *rb, int64_t *valid) {
    int n = 0;
    for (int64_t s = 0; s < rb->spec.capacity; s++)
        if (cr_replay_slot_valid(rb, s)) valid[n++] = s;
    CHECK(n == 64);
}

/* draws samples in batches of B; chi-square of the counts of the 64 valid slots against
 * P(i) = prio_i^alpha / sum (computed here in double). */
static void prio_chi2(const cr_replay *rb, const int64_t *valid, const double *prio, int draws,
                      int B, uint64_t seed) {
    int64_t counts[64] = {0}, idx[64];
    double expected[64], sum = 0;
    for (int i = 0; i < 64; i++) sum += pow(prio[i], rb->spec.alpha);
    for (int i = 0; i < 64; i++) expected[i] = draws * pow(prio[i], rb->spec.alpha) / sum;
    cr_replay_batch out = {.indices = idx};
    cr_rng_stream rs;
    cr_rng_stream_seed(&rs, seed, 5);
    for (int d = 0; d < draws; d += B) {
        CHECK_OK(cr_replay_sample_prioritized(rb, &rs, B, 0, &out));
        for (int b = 0; b < B; b++) {
            int i = 0;
            while (i < 64 && valid[i] != idx[b]) i++;
            CHECK_MSG(i < 64, "drew slot %lld, which is not sampleable", (long long)idx[b]);
            counts[i]++;
        }
    }
    /* 64 bins, df 63: exact 0.1% point 103.44. With B > 1 the draws are stratified, which makes
     * counts less dispersed than multinomial, so the same threshold is conservative there. */
    double x = chi2_stat(counts, expected, 64), crit = chi2_crit_p001(63);
    printf("  prioritized: %d draws in batches of %d, chi2 %.1f (df 63, p=0.001 threshold %.1f)\n",
           draws, B, x, crit);
    CHECK_MSG(x < crit, "prioritized chi2 %.1f >= %.1f", x, crit);
}

/* Weights against (N P(i))^-beta / max over the batch, from the priorities in double. */
static void check_weights(const cr_replay *rb, const int64_t *valid, const double *prio,
                          int64_t step) {
    enum { B = 32 };
    int64_t idx[B];
    float w[B];
    cr_replay_batch out = {.indices = idx, .weights = w};
    cr_rng_stream rs;
    cr_rng_stream_seed(&rs, 5, 5);
    CHECK_OK(cr_replay_sample_prioritized(rb, &rs, B, step, &out));
    double sum = 0, N = (double)cr_replay_num_sampleable(rb), want[B], wmax = 0;
    double beta = rb->spec.beta0 + (1.0 - rb->spec.beta0) *
                  fmin(1.0, (double)step / (double)rb->spec.beta_steps);
    for (int i = 0; i < 64; i++) sum += pow(prio[i], rb->spec.alpha);
    for (int b = 0; b < B; b++) {
        int i = 0;
        while (valid[i] != idx[b]) i++;
        want[b] = pow(N * pow(prio[i], rb->spec.alpha) / sum, -beta);
        if (want[b] > wmax) wmax = want[b];
    }
    for (int b = 0; b < B; b++) CHECK_CLOSE("importance weight", w[b], want[b] / wmax, 0, 2e-5);
}

static void test_beta(void) {
    cr_replay_spec sp = {.beta0 = 0.4f, .beta_steps = 1000};
    CHECK_CLOSE("beta(0)", cr_replay_beta(&sp, 0), 0.4, 0, 1e-7);
    CHECK_CLOSE("beta(250)", cr_replay_beta(&sp, 250), 0.55, 0, 1e-6);
    CHECK_CLOSE("beta(500)", cr_replay_beta(&sp, 500), 0.7, 0, 1e-6);
    CHECK_CLOSE("beta(1000)", cr_replay_beta(&sp, 1000), 1.0, 0, 0);
    CHECK_CLOSE("beta(5000)", cr_replay_beta(&sp, 5000), 1.0, 0, 0);
}

/* One slot raised far above the rest takes its share; a new transition gets the max priority;
 * stale indices and bad inputs change nothing. */
static void check_update(owned_replay *o, ref_model *m, int64_t *valid, double *prio) {
    cr_replay *rb = &o->rb;
    float td = 50.0f, eps = 1e-2f;
    CHECK_OK(cr_replay_update_priorities(rb, &valid[10], &td, 1, eps));
    prio[10] = 50.0 + 1e-2;
    prio_chi2(rb, valid, prio, 200000, 1, 31);
    float nan = NAN, root = rb->tree[1];
    CHECK(cr_replay_update_priorities(rb, &valid[3], &nan, 1, eps) == CUDARL_ERR_NUMERIC);
    CHECK(cr_replay_update_priorities(rb, &valid[3], &td, 1, 0.0f) == CUDARL_ERR_INVALID_ARG);
    CHECK(rb->tree[1] == root);
    int64_t oldest = (rb->heads[0] - rb->rows) % rb->rows, newest_before = -1; /* K = 1 */
    CHECK(cr_replay_slot_valid(rb, oldest));
    fill(rb, m, 1); /* retires the oldest slot, admits the one whose next obs just arrived */
    CHECK(!cr_replay_slot_valid(rb, oldest) && rb->tree[rb->leaves + oldest] == 0);
    float td_small = 0.5f;
    CHECK_OK(cr_replay_update_priorities(rb, &oldest, &td_small, 1, eps)); /* stale: skipped */
    CHECK(rb->tree[rb->leaves + oldest] == 0 && cr_replay_num_sampleable(rb) == 64);
    for (int64_t s = 0; s < rb->spec.capacity; s++) {
        int known = 0;
        for (int i = 0; i < 64; i++) known |= valid[i] == s;
        if (cr_replay_slot_valid(rb, s) && !known) newest_before = s;
    }
    CHECK(newest_before >= 0);
    float want = (float)pow(50.0f + 1e-2f, rb->spec.alpha);
    CHECK_CLOSE("leaf of a new transition (max priority ^ alpha)",
                rb->tree[rb->leaves + newest_before], want, 0, 1e-6);
}

static void test_prioritized(void) {
    test_beta();
    cr_replay_spec sp = {.capacity = 65, .num_envs = 1, .frame_elems = 2,
                         .dtype = CR_REPLAY_UINT8, .stack = 1, .prioritized = 1, .alpha = 0.6f,
                         .beta0 = 0.4f, .beta_steps = 1000};
    owned_replay o;
    ref_model m;
    fill_64(&o, &m, &sp);
    int64_t valid[64];
    valid_slots(&o.rb, valid);
    float td[64];
    double prio[64];
    cr_philox_state g;
    cr_philox_seed(&g, 77, 0);
    for (int i = 0; i < 64; i++) { /* priorities spread over two decades */
        td[i] = (float)exp(cr_philox_uniform(&g) * 4.6) * (i % 2 ? 1.0f : -1.0f) * 0.05f;
        prio[i] = fabs((double)td[i]) + (double)1e-3f;
    }
    CHECK_OK(cr_replay_update_priorities(&o.rb, valid, td, 64, 1e-3f));
    check_tree(&o.rb);
    prio_chi2(&o.rb, valid, prio, 200000, 1, 1);
    prio_chi2(&o.rb, valid, prio, 200000, 64, 2);
    check_weights(&o.rb, valid, prio, 0);
    check_weights(&o.rb, valid, prio, 300);
    check_weights(&o.rb, valid, prio, 2000);
    check_update(&o, &m, valid, prio);
    check_tree(&o.rb);
    ref_free(&m);
    cr_arena_free(&o.arena);
}

/* ---- memory plan ------------------------------------------------------------------------- */

/* max_capacity(budget) fits and one more row per env does not. */
static void check_max_capacity(cr_replay_spec sp, size_t budget) {
    int64_t c = cr_replay_max_capacity(&sp, budget);
    CHECK_MSG(c > 0 && c % sp.num_envs == 0, "max capacity %lld", (long long)c);
    sp.capacity = c;
    size_t fit = cr_replay_plan_bytes(&sp);
    sp.capacity = c + sp.num_envs;
    size_t over = cr_replay_plan_bytes(&sp);
    CHECK_MSG(fit <= budget && over > budget, "capacity %lld needs %zu, +%d needs %zu, budget %zu",
              (long long)c, fit, sp.num_envs, over, budget);
}

#define GB7_1 ((size_t)7100000000ull) /* the acceptance bound, 7.1e9 bytes */

static void test_plan(void) {
    cr_replay_spec atari = {.capacity = 1000000, .num_envs = 1, .frame_elems = 84 * 84,
                            .dtype = CR_REPLAY_UINT8, .stack = 4, .alpha = 0.6f, .beta0 = 0.4f};
    CHECK(cr_replay_bytes_per_transition(&atari) == 7056 + 4 + 4 + 1);
    size_t bytes = cr_replay_plan_bytes(&atari);
    printf("  1M Atari transitions (84x84 uint8, stack 4): %zu bytes (%zu per transition)\n",
           bytes, cr_replay_bytes_per_transition(&atari));
    CHECK_MSG(bytes <= GB7_1, "1M Atari transitions need %zu bytes > 7.1 GB", bytes);
    CHECK(bytes - (size_t)1000000 * 7065 < 1024); /* heads, state and alignment only */
    atari.prioritized = 1;
    CHECK(cr_replay_bytes_per_transition(&atari) == 7065 + 8);
    bytes = cr_replay_plan_bytes(&atari);
    printf("  the same, prioritized: %zu bytes (tree of 2^21 floats)\n", bytes);
    CHECK(bytes <= GB7_1 && bytes - (size_t)1000000 * 7065 - (size_t)8 * 1048576 < 1024);
    atari.prioritized = 0;
    check_max_capacity(atari, GB7_1);
    printf("  largest Atari buffer in 7.1 GB: %lld slots\n",
           (long long)cr_replay_max_capacity(&atari, GB7_1));
    atari.prioritized = 1;
    check_max_capacity(atari, GB7_1);
    check_max_capacity(atari, (size_t)32 << 30);
    cr_replay_spec cartpole = {.capacity = 8, .num_envs = 8, .frame_elems = 4,
                               .dtype = CR_REPLAY_FLOAT32, .stack = 1};
    CHECK(cr_replay_bytes_per_transition(&cartpole) == 16 + 9);
    check_max_capacity(cartpole, 1000000);
    check_max_capacity(cartpole, 12345678);
    cartpole.prioritized = 1, cartpole.alpha = 0.6f;
    for (size_t budget = 5000; budget < 3000000; budget = budget * 3 / 2 + 7)
        check_max_capacity(cartpole, budget);
    CHECK(cr_replay_max_capacity(&cartpole, 100) == 0); /* nothing fits */
    cartpole.capacity = 12; /* not a multiple of num_envs */
    CHECK(cr_replay_plan_bytes(&cartpole) == 0);
    cr_plan p;
    cr_plan_init(&p);
    CHECK(cr_replay_plan(&cartpole, &p) == CUDARL_ERR_INVALID_ARG && p.count == 0);
    cartpole.capacity = 8 * 3; /* fewer than stack + 3 slots per env */
    CHECK(cr_replay_plan(&cartpole, &p) == CUDARL_ERR_INVALID_ARG);
}

/* An env's own K-frame stacks inserted as they are (insert_stride K frames, from the newest
 * frame) store exactly what the packed newest frames store; a bad stride is refused. */
static void test_insert_stride(void) {
    enum { E = 3, K = 4, FE = 10, STEPS = 40 };
    cr_replay_spec packed = {.capacity = E * 16, .num_envs = E, .frame_elems = FE,
                             .dtype = CR_REPLAY_UINT8, .stack = K};
    cr_replay_spec strided = packed;
    strided.insert_stride = K * FE;
    owned_replay a, b;
    owned_init(&a, &packed);
    owned_init(&b, &strided);
    uint8_t stacks[E][K][FE], fin[E][K][FE], newest[E][FE], fin_newest[E][FE];
    int32_t act[E];
    float rew[E];
    uint8_t term[E], trunc[E];
    uint32_t x = 12345;
    for (int t = 0; t < STEPS; t++) {
        for (int e = 0; e < E; e++) {
            for (int k = 0; k < K; k++)
                for (int i = 0; i < FE; i++) {
                    stacks[e][k][i] = (uint8_t)((x = x * 1664525u + 1013904223u) >> 24);
                    fin[e][k][i] = (uint8_t)(x >> 16);
                }
            memcpy(newest[e], stacks[e][K - 1], FE), memcpy(fin_newest[e], fin[e][K - 1], FE);
            act[e] = t, rew[e] = (float)e;
            term[e] = (t + e) % 7 == 6, trunc[e] = (t + 2 * e) % 9 == 8;
        }
        cr_replay_insert(&a.rb, newest, act, rew, term, trunc, fin_newest);
        cr_replay_insert(&b.rb, &stacks[0][K - 1][0], act, rew, term, trunc, &fin[0][K - 1][0]);
    }
    CHECK(memcmp(a.rb.frames, b.rb.frames, (size_t)packed.capacity * FE) == 0);
    CHECK(memcmp(a.rb.flags, b.rb.flags, (size_t)packed.capacity) == 0);
    CHECK(memcmp(a.rb.heads, b.rb.heads, sizeof(int64_t) * E) == 0);
    CHECK(cr_replay_insert_stride_bytes(&strided) == K * FE);
    CHECK(cr_replay_insert_stride_bytes(&packed) == FE);
    strided.insert_stride = FE - 1; /* rows would overlap */
    CHECK(cr_replay_spec_check(&strided) == CUDARL_ERR_INVALID_ARG);
    CHECK_MSG(strstr(cudarl_last_error(), "insert stride") != NULL, "message: %s",
              cudarl_last_error());
    cr_arena_free(&a.arena);
    cr_arena_free(&b.arena);
}

int main(int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "all";
    int all = strcmp(what, "all") == 0, ran = 0;
    if (all || !strcmp(what, "roundtrip")) test_roundtrip(), ran = 1;
    if (all || !strcmp(what, "uniform")) test_uniform(), ran = 1;
    if (all || !strcmp(what, "prioritized")) test_prioritized(), ran = 1;
    if (all || !strcmp(what, "plan")) test_plan(), ran = 1;
    if (all || !strcmp(what, "stride")) test_insert_stride(), ran = 1;
    CHECK_MSG(ran, "unknown group '%s' (roundtrip, uniform, prioritized, plan, stride)", what);
    printf("test_replay %s: ok\n", what);
    return 0;
}
