/* Dynamic loss scaling on the CPU (src/ops/cpu/loss_scale.c) against GradScaler's rules: forced
 * overflows (inf, -inf, NaN in one gradient element) halve the scale and skip the step with the
 * weights and Adam's m, v and t bitwise unchanged; 2,000 clean steps double it, exactly at the
 * growth_interval boundary; the scale never grows to inf; a sequence matches a table worked out
 * by hand from torch's rules; and every step of tests/golden/loss_scale_golden.json (torch's own
 * GradScaler, tests/golden/golden_loss_scale.py) is reproduced exactly.
 *
 * Usage: test_loss_scale [group]   group: overflow growth boundary no_inf table config golden */
#include <cjson/cJSON.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/core.h"
#include "ops/loss_scale.h"

#define N_PARAMS 1000

/* A small model's optimizer state and the unscaled gradient ("c") its backward would give. */
typedef struct model {
    float p[N_PARAMS], m[N_PARAMS], v[N_PARAMS], c[N_PARAMS], g[N_PARAMS];
    int64_t t;
    float lr;
} model;

static void model_init(model *md, uint64_t seed) {
    cr_philox_state rng;
    cr_philox_seed(&rng, seed, 0);
    for (int i = 0; i < N_PARAMS; i++) {
        md->p[i] = 2.0f * cr_philox_uniform(&rng) - 1.0f;
        md->m[i] = 0.01f * (cr_philox_uniform(&rng) - 0.5f);
        md->v[i] = 1e-4f * cr_philox_uniform(&rng);
        md->c[i] = 2.0f * cr_philox_uniform(&rng) - 1.0f;
    }
    md->t = 5;
    md->lr = 1e-3f;
}

/* One training step: the scaled gradient (c times the scale, what backward gives for loss times
 * the scale), `poison` written into element `at` when it is not 0, unscale, Adam if clean,
 * update. Returns whether Adam stepped. */
static int train_step(model *md, cr_loss_scale_state *s, const cr_loss_scale_config *cfg,
                      float poison, int at) {
    memcpy(md->g, md->c, sizeof md->g);
    cr_loss_scale_apply(s, md->g, N_PARAMS);
    if (poison != 0.0f) md->g[at] = poison;
    int found = cr_loss_scale_unscale(s, md->g, N_PARAMS);
    CHECK_MSG(found == (poison != 0.0f), "unscale found %d, poisoned %d", found, poison != 0.0f);
    CHECK(s->found_inf == (float)found);
    int stepped = cr_loss_scale_adam_step_if(s, md->p, md->g, md->m, md->v, N_PARAMS, &md->lr, 0.9f,
                                             0.999f, 1e-8f, &md->t);
    CHECK(stepped == !found);
    cr_loss_scale_update(s, cfg);
    CHECK(s->found_inf == 0.0f);
    return stepped;
}

static void check_state(const char *what, const cr_loss_scale_state *s, float scale,
                        int32_t tracker, int64_t skipped) {
    CHECK_MSG(s->scale == scale && s->growth_tracker == tracker && s->skipped_steps == skipped,
              "%s: scale %.9g tracker %d skipped %lld, expected %.9g %d %lld", what,
              (double)s->scale, (int)s->growth_tracker, (long long)s->skipped_steps,
              (double)scale, (int)tracker, (long long)skipped);
}

/* ---- overflow ------------------------------------------------------------------------------ */

static void test_overflow(void) {
    const float poisons[] = {INFINITY, -INFINITY, NAN};
    cr_loss_scale_config cfg;
    cr_loss_scale_config_default(&cfg);
    cr_loss_scale_state s;
    cr_loss_scale_init(&s, &cfg);
    check_state("init", &s, 65536.0f, 0, 0);
    static model md, before;
    model_init(&md, 7);
    /* Some clean steps first, so the tracker is not 0 when the overflow comes. */
    for (int k = 0; k < 5; k++) CHECK(train_step(&md, &s, &cfg, 0.0f, 0));
    check_state("5 clean steps", &s, 65536.0f, 5, 0);
    CHECK(md.t == 10);
    float scale = 65536.0f;
    for (int k = 0; k < 3; k++) {
        before = md;
        int at = 17 + 300 * k;
        CHECK(!train_step(&md, &s, &cfg, poisons[k], at));
        scale *= 0.5f;
        check_state("after an overflow", &s, scale, 0, k + 1);
        CHECK_MSG(memcmp(md.p, before.p, sizeof md.p) == 0, "weights moved on a skipped step");
        CHECK_MSG(memcmp(md.m, before.m, sizeof md.m) == 0, "Adam m moved on a skipped step");
        CHECK_MSG(memcmp(md.v, before.v, sizeof md.v) == 0, "Adam v moved on a skipped step");
        CHECK_MSG(md.t == before.t, "Adam t %lld, expected %lld", (long long)md.t,
                  (long long)before.t);
        /* torch unscales every element, the poisoned one too: inf stays inf, NaN NaN. */
        CHECK(isnan(poisons[k]) ? isnan(md.g[at]) : md.g[at] == poisons[k]);
        for (int i = 0; i < N_PARAMS; i++) /* a power-of-two scale unscales exactly */
            if (i != at) CHECK_MSG(md.g[i] == md.c[i], "g[%d] %.9g, c %.9g", i, (double)md.g[i],
                                   (double)md.c[i]);
    }
    /* A clean step after the overflows moves everything and counts from 0 again. */
    before = md;
    CHECK(train_step(&md, &s, &cfg, 0.0f, 0));
    check_state("clean after overflows", &s, 8192.0f, 1, 3);
    CHECK(md.t == before.t + 1 && memcmp(md.p, before.p, sizeof md.p) != 0);
}

/* ---- growth -------------------------------------------------------------------------------- */

static void test_growth(void) {
    cr_loss_scale_config cfg;
    cr_loss_scale_config_default(&cfg);
    cr_loss_scale_state s;
    cr_loss_scale_init(&s, &cfg);
    static model md;
    model_init(&md, 8);
    for (int k = 1; k <= 1999; k++) {
        CHECK(train_step(&md, &s, &cfg, 0.0f, 0));
        CHECK_MSG(s.scale == 65536.0f && s.growth_tracker == k, "step %d: scale %g tracker %d", k,
                  (double)s.scale, (int)s.growth_tracker);
    }
    CHECK(train_step(&md, &s, &cfg, 0.0f, 0)); /* the 2,000th clean step */
    check_state("2000 clean steps", &s, 131072.0f, 0, 0);
    CHECK(md.t == 5 + 2000);
    for (int k = 0; k < 2000; k++) CHECK(train_step(&md, &s, &cfg, 0.0f, 0));
    check_state("4000 clean steps", &s, 262144.0f, 0, 0);
}

/* ---- the growth_interval boundary ---------------------------------------------------------- */

static void test_boundary(void) {
    cr_loss_scale_config cfg;
    cr_loss_scale_config_default(&cfg);
    cr_loss_scale_state s;
    cr_loss_scale_init(&s, &cfg);
    static model md;
    model_init(&md, 9);
    /* 1,999 clean steps, then an overflow: backs off, and the 1,999 count for nothing. */
    for (int k = 0; k < 1999; k++) train_step(&md, &s, &cfg, 0.0f, 0);
    check_state("1999 clean", &s, 65536.0f, 1999, 0);
    train_step(&md, &s, &cfg, INFINITY, 3);
    check_state("overflow at 1999", &s, 32768.0f, 0, 1);
    for (int k = 0; k < 1999; k++) train_step(&md, &s, &cfg, 0.0f, 0);
    check_state("1999 clean again", &s, 32768.0f, 1999, 1);
    train_step(&md, &s, &cfg, 0.0f, 0);
    check_state("the 2000th", &s, 65536.0f, 0, 1);

    /* growth_interval 1: every clean step grows; update alone, as torch's kernel. */
    cfg.growth_interval = 1;
    cr_loss_scale_init(&s, &cfg);
    for (int k = 1; k <= 3; k++) {
        cr_loss_scale_update(&s, &cfg);
        check_state("interval 1", &s, 65536.0f * (float)(1 << k), 0, 0);
    }
}

/* ---- the scale never becomes inf ----------------------------------------------------------- */

static void test_no_inf(void) {
    cr_loss_scale_config cfg;
    cr_loss_scale_config_default(&cfg);
    cfg.growth_interval = 3;
    cfg.init_scale = 0x1p126;
    cr_loss_scale_state s;
    cr_loss_scale_init(&s, &cfg);
    for (int k = 0; k < 3; k++) cr_loss_scale_update(&s, &cfg);
    check_state("2^126 grown", &s, 0x1p127f, 0, 0);
    for (int round = 0; round < 4; round++) { /* 2^128 is inf: refused, the tracker restarts */
        for (int k = 1; k <= 2; k++) {
            cr_loss_scale_update(&s, &cfg);
            check_state("counting at 2^127", &s, 0x1p127f, k, 0);
        }
        cr_loss_scale_update(&s, &cfg);
        check_state("refused growth to inf", &s, 0x1p127f, 0, 0);
    }
    /* Not a power of two: FLT_MAX * 2 is inf in float, finite in double; refused too. */
    cfg.init_scale = FLT_MAX;
    cfg.growth_interval = 1;
    cr_loss_scale_init(&s, &cfg);
    cr_loss_scale_update(&s, &cfg);
    check_state("FLT_MAX", &s, FLT_MAX, 0, 0);
    /* A growth factor that takes 2^127 to just below FLT_MAX is taken. */
    cfg.init_scale = 0x1p127;
    cfg.growth_factor = 1.5;
    cr_loss_scale_init(&s, &cfg);
    cr_loss_scale_update(&s, &cfg);
    check_state("2^127 * 1.5", &s, 0x1.8p127f, 0, 0);
    cr_loss_scale_update(&s, &cfg); /* 2.25 2^127 > FLT_MAX */
    check_state("2^127 * 1.5 refused", &s, 0x1.8p127f, 0, 0);
}

/* ---- a sequence worked out by hand --------------------------------------------------------- */

/* GradScaler's rules by hand, growth_interval 3, from 2^16:
 *   clean: tracker + 1; at 3, scale x2 and tracker 0.   inf: scale x0.5, tracker 0.
 * Adam's t counts the clean steps only. The second half uses factors whose products round:
 * growth 1.7, backoff 0.3 from 1000 (float(double(s) * f) each time):
 *   1000 -> 1700 (1.7 is 1.69999999999999996 as a double; the product rounds to 1700)
 *   -> 510 (x0.3) -> 867 (x1.7) -> 260.100006103515625 (867 x 0.3 = 260.0999999999999659 in
 *   double; the nearest float) -> 442.170013427734375 (260.100006103515625 x 1.7 =
 *   442.1700103759765739 in double; the nearest float). */
static void test_table(void) {
    static const struct {
        char event;
        float scale;
        int32_t tracker;
        int64_t t;
    } rows[] = {
        {'.', 65536, 1, 1},  {'.', 65536, 2, 2}, {'.', 131072, 0, 3}, {'i', 65536, 0, 3},
        {'.', 65536, 1, 4},  {'.', 65536, 2, 5}, {'n', 32768, 0, 5},  {'i', 16384, 0, 5},
        {'.', 16384, 1, 6},  {'.', 16384, 2, 7}, {'.', 32768, 0, 8},  {'.', 32768, 1, 9},
    };
    static const struct {
        char event;
        float scale;
        int32_t tracker;
    } odd[] = {
        {'.', 1000.0f, 1}, {'.', 1700.0f, 0}, {'i', 510.0f, 0}, {'.', 510.0f, 1},
        {'.', 867.0f, 0},  {'i', 260.100006103515625f, 0},     {'.', 260.100006103515625f, 1},
        {'.', 442.170013427734375f, 0},
    };
    cr_loss_scale_config cfg;
    cr_loss_scale_config_default(&cfg);
    cfg.growth_interval = 3;
    cr_loss_scale_state s;
    cr_loss_scale_init(&s, &cfg);
    static model md;
    model_init(&md, 10);
    md.t = 0;
    int64_t skipped = 0;
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
        float poison = rows[k].event == 'i' ? INFINITY : rows[k].event == 'n' ? NAN : 0.0f;
        train_step(&md, &s, &cfg, poison, (int)k);
        skipped += poison != 0.0f;
        char what[32];
        snprintf(what, sizeof what, "hand row %zu", k);
        check_state(what, &s, rows[k].scale, rows[k].tracker, skipped);
        CHECK_MSG(md.t == rows[k].t, "hand row %zu: t %lld, expected %lld", k, (long long)md.t,
                  (long long)rows[k].t);
    }
    cfg = (cr_loss_scale_config){1000.0, 1.7, 0.3, 2};
    CHECK_OK(cr_loss_scale_config_validate(&cfg));
    cr_loss_scale_init(&s, &cfg);
    skipped = 0;
    for (size_t k = 0; k < sizeof odd / sizeof odd[0]; k++) {
        s.found_inf = odd[k].event == 'i' ? 1.0f : 0.0f;
        skipped += odd[k].event == 'i';
        cr_loss_scale_update(&s, &cfg);
        char what[32];
        snprintf(what, sizeof what, "odd-factor row %zu", k);
        check_state(what, &s, odd[k].scale, odd[k].tracker, skipped);
    }
    /* 1/1000 is inexact: unscale multiplies by float(1/1000.0), not by 1/1000.0f computed in
     * float (the same here) and not divides by the scale (not the same for every g). */
    const float inv = (float)(1.0 / 1000.0);
    float g[2] = {3.0f, 7.0f};
    cr_loss_scale_init(&s, &cfg);
    cr_loss_scale_unscale(&s, g, 2);
    CHECK(g[0] == 3.0f * inv && g[1] == 7.0f * inv);
}

/* ---- config -------------------------------------------------------------------------------- */

static void test_config(void) {
    cr_loss_scale_config cfg;
    cr_loss_scale_config_default(&cfg);
    CHECK(cfg.init_scale == 65536.0 && cfg.growth_factor == 2.0 && cfg.backoff_factor == 0.5 &&
          cfg.growth_interval == 2000);
    CHECK_OK(cr_loss_scale_config_validate(&cfg));
    const cr_loss_scale_config bad[] = {
        {0.0, 2.0, 0.5, 2000}, {INFINITY, 2.0, 0.5, 2000}, {1e39, 2.0, 0.5, 2000},
        {65536, 1.0, 0.5, 2000}, {65536, 2.0, 1.0, 2000}, {65536, 2.0, 0.0, 2000},
        {65536, 2.0, 0.5, 0}, {NAN, 2.0, 0.5, 2000}, {65536, NAN, 0.5, 2000},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cudarl_status st = cr_loss_scale_config_validate(&bad[i]);
        CHECK_MSG(st == CUDARL_ERR_INVALID_ARG, "bad config %zu accepted", i);
        CHECK(strstr(cudarl_last_error(), "loss scale") != NULL);
    }
}

/* ---- torch's GradScaler, replayed ---------------------------------------------------------- */

static cJSON *load_json(const char *name) {
    const char *dir = getenv("CUDARL_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir ? dir : "tests/golden", name);
    FILE *f = fopen(path, "rb");
    CHECK_MSG(f != NULL, "cannot open %s (set CUDARL_TEST_DATA)", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)len + 1);
    CHECK(text != NULL && fread(text, 1, (size_t)len, f) == (size_t)len);
    text[len] = 0;
    fclose(f);
    cJSON *root = cJSON_Parse(text);
    free(text);
    CHECK_MSG(root != NULL, "%s is not JSON", path);
    return root;
}

static const cJSON *field(const cJSON *o, const char *name) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, name);
    CHECK_MSG(x != NULL, "golden file: no field '%s'", name);
    return x;
}

static double at_num(const cJSON *arr, int i) {
    const cJSON *x = cJSON_GetArrayItem(arr, i);
    CHECK_MSG(cJSON_IsNumber(x), "golden file: element %d is not a number", i);
    return x->valuedouble;
}

static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static void replay_sequence(const cJSON *seq) {
    const char *name = field(seq, "name")->valuestring;
    cr_loss_scale_config cfg = {field(seq, "init_scale")->valuedouble,
                                field(seq, "growth_factor")->valuedouble,
                                field(seq, "backoff_factor")->valuedouble,
                                (int32_t)field(seq, "growth_interval")->valueint};
    CHECK_OK(cr_loss_scale_config_validate(&cfg));
    const cJSON *c = field(seq, "c"), *scale = field(seq, "scale");
    const cJSON *tracker = field(seq, "growth_tracker"), *found = field(seq, "found_inf");
    const cJSON *steps = field(seq, "optimizer_steps");
    const cJSON *grads = cJSON_GetObjectItemCaseSensitive(seq, "unscaled_grad_bits");
    const char *events = field(seq, "events")->valuestring;
    int n = cJSON_GetArraySize(c), inject = field(seq, "inject")->valueint;
    CHECK(n > 0 && n <= 16 && inject < n);
    float cf[16], p[16] = {0}, m[16] = {0}, v[16] = {0}, g[16];
    for (int i = 0; i < n; i++) cf[i] = (float)at_num(c, i); /* float32 values, exact */
    cr_loss_scale_state s;
    cr_loss_scale_init(&s, &cfg);
    int64_t t = 0;
    const float lr = 1e-3f;
    int len = (int)strlen(events);
    CHECK(cJSON_GetArraySize(scale) == len);
    for (int k = 0; k < len; k++) {
        memcpy(g, cf, sizeof g);
        cr_loss_scale_apply(&s, g, (size_t)n);
        if (events[k] == 'i') g[inject] = INFINITY;
        if (events[k] == 'n') g[inject] = NAN;
        int got_found = cr_loss_scale_unscale(&s, g, (size_t)n);
        CHECK_MSG(got_found == (int)at_num(found, k), "%s step %d: found_inf %d, torch %d", name,
                  k, got_found, (int)at_num(found, k));
        if (grads) {
            const cJSON *row = cJSON_GetArrayItem(grads, k);
            for (int i = 0; i < n; i++) {
                float want = bits_f32((uint32_t)at_num(row, i));
                int same = isnan(want) ? isnan(g[i]) : memcmp(&want, &g[i], 4) == 0;
                CHECK_MSG(same, "%s step %d: unscaled g[%d] %a, torch %a", name, k, i,
                          (double)g[i], (double)want);
            }
        }
        cr_loss_scale_adam_step_if(&s, p, g, m, v, (size_t)n, &lr, 0.9f, 0.999f, 1e-8f, &t);
        cr_loss_scale_update(&s, &cfg);
        float want_scale = (float)at_num(scale, k);
        CHECK_MSG(s.scale == want_scale && (double)want_scale == at_num(scale, k),
                  "%s step %d: scale %a, torch %a", name, k, (double)s.scale, at_num(scale, k));
        CHECK_MSG(s.growth_tracker == (int32_t)at_num(tracker, k),
                  "%s step %d: growth tracker %d, torch %d", name, k, (int)s.growth_tracker,
                  (int)at_num(tracker, k));
        CHECK_MSG(t == (int64_t)at_num(steps, k), "%s step %d: Adam steps %lld, torch %lld", name,
                  k, (long long)t, (long long)at_num(steps, k));
    }
    printf("  %s: %d steps match torch (%lld skipped, final scale %.9g)\n", name, len,
           (long long)s.skipped_steps, (double)s.scale);
}

static void test_golden(void) {
    cJSON *root = load_json("loss_scale_golden.json");
    const cJSON *fmt = field(root, "format");
    CHECK_MSG(cJSON_IsString(fmt) && strcmp(fmt->valuestring, "cudarl-golden-loss-scale") == 0,
              "not a loss-scale golden file");
    CHECK_MSG(field(root, "version")->valueint == 1, "golden file version %d, expected 1",
              field(root, "version")->valueint);
    const cJSON *seqs = field(root, "sequences"), *seq;
    CHECK(cJSON_GetArraySize(seqs) >= 5);
    cJSON_ArrayForEach(seq, seqs) replay_sequence(seq);
    cJSON_Delete(root);
}

int main(int argc, char **argv) {
    static const struct {
        const char *name;
        void (*run)(void);
    } tests[] = {
        {"overflow", test_overflow}, {"growth", test_growth}, {"boundary", test_boundary},
        {"no_inf", test_no_inf},     {"table", test_table},   {"config", test_config},
        {"golden", test_golden},
    };
    int known = argc < 2;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0] && !known; i++)
        known = strcmp(argv[1], tests[i].name) == 0;
    CHECK_MSG(known, "unknown group '%s'", argv[1]);
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (argc > 1 && strcmp(argv[1], tests[i].name) != 0) continue;
        tests[i].run();
        printf("ok %s\n", tests[i].name);
    }
    return 0;
}
