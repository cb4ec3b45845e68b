/* Whole convolutional policies against PyTorch: convnet_golden.safetensors, written by
 * golden_convnet.py from CleanRL's own modules (ppo_atari.py's Agent, dqn_atari.py's
 * QNetwork, and the same layouts on MinAtar's network), float32 on the CPU, torch autograd.
 *
 * For each case the spec text torch's modules were read into (metadata CASE.network) is parsed
 * with cr_convnet_spec_parse, must be byte for byte what cr_convnet_spec_to_text writes and what
 * the named spec gives, and its layout must be torch's state_dict (CASE.state_dict: names, order,
 * shapes). Then cr_convnet_forward runs from the stored uint8 observations and
 * cr_convnet_backward from its own cache with torch's dout and dvalue, so the whole path a
 * trainer runs is compared: input scaling, every stage, the heads, and every gradient. The
 * script drew inputs that keep every ReLU pre-activation at least 1e-5 of its layer's largest
 * away from 0, so rounding in another order cannot flip a ReLU.
 *
 * Tolerance table (why each is what it is; "seen" = torch 2.15 on an x86-64 CPU):
 *   features, outputs  |d| <= 1e-5 (max|want| + |want|) per element: sums of up to 3136 products
 *                      (plus the bias) in another order than torch's kernels through up to five
 *                      layers, whose error scales with the tensor's large values, not with an
 *                      element that cancelled to near 0 (seen <= 1.1e-6 of max|want|)
 *   gradients          ‖g - g_torch‖ <= 1e-5 ‖g_torch‖ per tensor and |d| <= 1e-4 max|g_torch|
 *                      per element: sums over the batch, the pixels and up to 512 outputs in
 *                      another order, from our own forward's activations (seen <= 1.5e-6 of the
 *                      norm)
 *   nature's 3136x512  the weight is recreated from its seed bit for bit (its first 16 values
 *   weight             are compared exactly); its gradient's 4096 sampled entries take the
 *                      per-element bound above (max over the samples), and its norm rel 1e-5. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "nn/convnet.h"
#include "ops/cpu/ops_cpu.h"
#include "io/safetensors.h"

#define OUT_TOL 1e-5
#define GRAD_NORM_TOL 1e-5
#define GRAD_MAX_TOL 1e-4

static cr_st_file *golden;
static double worst_out, worst_grad;

static float *floats(size_t n) {
    float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    CHECK(p != NULL);
    for (size_t i = 0; i < n; i++) p[i] = NAN;
    return p;
}

static const char *meta(const char *c, const char *key) {
    char name[CR_ST_MAX_NAME];
    snprintf(name, sizeof name, "%s.%s", c, key);
    const char *v = cr_st_meta(golden, name);
    CHECK_MSG(v != NULL, "metadata %s missing", name);
    return v;
}

/* Golden tensor "<c>.<what>" of exactly n floats into dst. */
static void load(const char *c, const char *what, float *dst, size_t n) {
    char name[CR_ST_MAX_NAME];
    snprintf(name, sizeof name, "%s.%s", c, what);
    CHECK_OK(cr_st_read_f32(golden, name, dst, n));
}

static double max_abs(const float *p, size_t n) {
    double m = 0;
    /* `if (a > m)`, not fmax(): GCC 12.2 for aarch64 crashes (an internal compiler error) vectorizing
     * an fmax reduction over floats widened to double; the same for every input, NaN left out. */
    for (size_t i = 0; i < n; i++)
        if (fabs(p[i]) > m) m = fabs(p[i]);
    return m;
}

static void check_out(const char *c, const char *what, const float *got, size_t n) {
    float *want = floats(n);
    load(c, what, want, n);
    double scale = max_abs(want, n), worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]), tol = OUT_TOL * (scale + fabs(want[i]));
        CHECK_MSG(d <= tol, "%s.%s[%zu]: expected %.9g, got %.9g (tol %.3g)", c, what, i,
                  (double)want[i], (double)got[i], tol);
        worst = fmax(worst, d / scale);
    }
    printf("  %s.%-22s max |d| / max|want| %.2e\n", c, what, worst);
    worst_out = fmax(worst_out, worst);
    free(want);
}

static void check_grad(const char *c, const char *name, const float *got, size_t n) {
    char what[64];
    snprintf(what, sizeof what, "grad.%s", name);
    float *want = floats(n);
    load(c, what, want, n);
    double num = 0, den = 0, scale = max_abs(want, n);
    for (size_t i = 0; i < n; i++) {
        double d = (double)got[i] - want[i];
        CHECK_MSG(fabs(d) <= GRAD_MAX_TOL * scale, "%s.%s[%zu]: expected %.9g, got %.9g", c,
                  what, i, (double)want[i], (double)got[i]);
        num += d * d, den += (double)want[i] * want[i];
    }
    double rel = sqrt(num) / (sqrt(den) + 1e-30);
    CHECK_MSG(rel <= GRAD_NORM_TOL, "%s.%s: relative error %.3g > %.3g", c, what, rel,
              GRAD_NORM_TOL);
    printf("  %s.%-22s ‖d‖ / ‖want‖ %.2e\n", c, what, rel);
    worst_grad = fmax(worst_grad, rel);
    free(want);
}

/* The seeded weight's gradient: sampled entries and the norm. */
static void check_grad_sampled(const char *c, const char *name, const float *got, size_t n) {
    char what[80];
    cr_st_tensor idx;
    snprintf(what, sizeof what, "%s.grad.%s.idx", c, name);
    CHECK_OK(cr_st_find(golden, what, &idx));
    CHECK(idx.dtype == CR_ST_I32);
    int32_t *ix = malloc(idx.nbytes);
    float *val = floats(idx.count), norm;
    CHECK(ix != NULL);
    memcpy(ix, idx.data, idx.nbytes);
    snprintf(what, sizeof what, "grad.%s.val", name), load(c, what, val, idx.count);
    snprintf(what, sizeof what, "grad.%s.norm", name), load(c, what, &norm, 1);
    double scale = max_abs(val, idx.count), sum = 0;
    for (size_t k = 0; k < idx.count; k++) {
        CHECK(ix[k] >= 0 && (size_t)ix[k] < n);
        double d = fabs((double)got[ix[k]] - val[k]);
        CHECK_MSG(d <= GRAD_MAX_TOL * scale, "%s.grad.%s[%d]: expected %.9g, got %.9g", c, name,
                  ix[k], (double)val[k], (double)got[ix[k]]);
    }
    for (size_t i = 0; i < n; i++) sum += (double)got[i] * got[i];
    CHECK_CLOSE("seeded gradient norm", sqrt(sum), norm, 0, GRAD_NORM_TOL);
    printf("  %s.grad.%s: %zu samples and the norm agree\n", c, name, idx.count);
    free(ix), free(val);
}

/* The spec of metadata <c>.network: parsed, planned, written back identically, and the named
 * spec it claims to be. */
static void check_spec(const char *c, cr_convnet *net) {
    const char *text = meta(c, "network");
    cr_convnet_spec spec, named;
    CHECK_OK(cr_convnet_spec_parse(&spec, text, c));
    CHECK_OK(cr_convnet_plan(net, &spec));
    char back[CR_CONVNET_TEXT_MAX], again[CR_CONVNET_TEXT_MAX];
    CHECK_OK(cr_convnet_spec_to_text(&spec, back, sizeof back));
    CHECK_MSG(!strcmp(text, back), "%s: spec text differs from torch's:\n  %s\n  %s", c, text,
              back);
    CHECK_OK(cr_convnet_spec_named(&named, spec.name, spec.in_c, spec.in_h, spec.in_w,
                                   spec.heads, spec.num_actions));
    CHECK_OK(cr_convnet_spec_to_text(&named, again, sizeof again));
    CHECK_MSG(!strcmp(text, again), "%s: %s's named spec is not torch's:\n  %s\n  %s", c,
              spec.name, text, again);
}

/* The layout must be torch's state_dict: names in order, shapes, contiguous offsets. */
static void check_layout(const char *c, const cr_convnet *net) {
    cJSON *sd = cJSON_Parse(meta(c, "state_dict"));
    CHECK(sd != NULL && cJSON_IsArray(sd));
    CHECK_MSG(cJSON_GetArraySize(sd) == net->ntensors, "%s: torch has %d tensors, we %d", c,
              cJSON_GetArraySize(sd), net->ntensors);
    size_t offset = 0;
    int i = 0;
    for (const cJSON *e = sd->child; e; e = e->next, i++) {
        const cr_convnet_tensor *t = &net->t[i];
        const cJSON *name = cJSON_GetArrayItem(e, 0), *shape = cJSON_GetArrayItem(e, 1);
        CHECK_MSG(!strcmp(name->valuestring, t->name), "%s: tensor %d is %s in torch, %s here", c,
                  i, name->valuestring, t->name);
        CHECK_MSG(cJSON_GetArraySize(shape) == t->ndim, "%s: %s ndim", c, t->name);
        for (int d = 0; d < t->ndim; d++)
            CHECK_MSG(cJSON_GetArrayItem(shape, d)->valueint == t->shape[d], "%s: %s dim %d", c,
                      t->name, d);
        CHECK(t->offset == offset);
        offset += t->count;
    }
    CHECK(offset == net->num_params);
    cJSON_Delete(sd);
    printf("  %s: %d tensors, %zu parameters, names and shapes as torch's state_dict\n", c,
           net->ntensors, net->num_params);
}

/* The seeded weight, as the script draws it (its docstring). */
static void recreate_seeded(const char *c, const cr_convnet_tensor *t, float *w) {
    cr_philox_state rng;
    cr_philox_seed(&rng, (uint64_t)atoll(cr_st_meta(golden, "seeded_seed")),
                   (uint64_t)atoll(cr_st_meta(golden, "seeded_stream")));
    const double bound = 1.0 / sqrt((double)t->fan_in);
    for (size_t e = 0; e < t->count; e++)
        w[e] = (float)((2.0 * cr_philox_uniform_f64(&rng) - 1.0) * bound);
    float head[16];
    load(c, "seeded_head", head, 16);
    for (int e = 0; e < 16; e++)
        CHECK_MSG(head[e] == w[e], "%s: seeded %s[%d]: expected %.9g, got %.9g", c, t->name, e,
                  (double)head[e], (double)w[e]);
}

static void run_case(const char *c) {
    printf("%s\n", c);
    cr_convnet net;
    check_spec(c, &net);
    check_layout(c, &net);
    const int ppo = net.spec.heads == CR_CONVNET_PPO, A = net.spec.num_actions;
    char name[CR_ST_MAX_NAME];
    snprintf(name, sizeof name, "%s.obs", c);
    cr_st_tensor obs;
    CHECK_OK(cr_st_find(golden, name, &obs));
    CHECK(obs.dtype == CR_ST_U8 && obs.count % (size_t)net.in_floats == 0);
    const int B = (int)(obs.count / (size_t)net.in_floats);

    float *params = floats(net.num_params), *grads = floats(net.num_params);
    const char *seeded = NULL;
    for (int i = 0; i < net.ntensors; i++) {
        const cr_convnet_tensor *t = &net.t[i];
        snprintf(name, sizeof name, "%s.params.%s", c, t->name);
        cr_st_tensor view;
        if (cr_st_find(golden, name, &view) == CUDARL_OK) {
            CHECK_OK(cr_st_read_f32(golden, name, params + t->offset, t->count));
        } else {
            recreate_seeded(c, t, params + t->offset);
            seeded = t->name;
        }
    }
    uint8_t *x = malloc(obs.count);
    CHECK(x != NULL);
    memcpy(x, obs.data, obs.count);
    float *dout = floats((size_t)B * A), *dvalue = ppo ? floats((size_t)B) : NULL;
    float *out = floats((size_t)B * A), *value = ppo ? floats((size_t)B) : NULL;
    load(c, "dout", dout, (size_t)B * A);
    if (ppo) load(c, "dvalue", dvalue, (size_t)B);

    void *mem = aligned_alloc(64, cr_convnet_cache_bytes(&net, B));
    CHECK(mem != NULL);
    cr_convnet_cache cache;
    cr_convnet_cache_carve(&net, mem, B, &cache);
    cr_convnet_forward(&net, params, x, out, value, &cache, B);
    check_out(c, "features", cache.act[net.ntrunk - 1], (size_t)B * net.features);
    check_out(c, "out", out, (size_t)B * A);
    if (ppo) check_out(c, "value", value, (size_t)B);
    cr_convnet_backward(&net, params, grads, dout, dvalue, &cache, B);
    for (int i = 0; i < net.ntensors; i++) {
        const cr_convnet_tensor *t = &net.t[i];
        if (seeded && !strcmp(t->name, seeded))
            check_grad_sampled(c, t->name, grads + t->offset, t->count);
        else
            check_grad(c, t->name, grads + t->offset, t->count);
    }
    free(params), free(grads), free(x), free(dout), free(dvalue), free(out), free(value),
        free(mem);
}

int main(void) {
    const char *dir = getenv("CUDARL_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/convnet_golden.safetensors", dir ? dir : "tests/golden");
    CHECK_OK(cr_st_open(&golden, path));
    const char *format = cr_st_meta(golden, "format"), *version = cr_st_meta(golden, "version");
    CHECK_MSG(format && !strcmp(format, "cudarl-golden-convnet"), "%s is not a convnet golden "
              "file", path);
    CHECK_MSG(version && !strcmp(version, "1"), "%s: version %s, expected 1", path,
              version ? version : "(none)");
    cr_cpu_set_threads(1);
    static const char *const cases[] = {"minatar_ppo", "minatar_dqn", "nature_ppo"};
    for (int i = 0; i < 3; i++) run_case(cases[i]);
    printf("nature_dqn (layout only)\n");
    cr_convnet net;
    check_spec("nature_dqn", &net);
    check_layout("nature_dqn", &net);
    printf("test_convnet_golden: 3 networks' forward and gradients match PyTorch %s (worst: "
           "outputs %.2e of max, gradients %.2e of the norm); 4 layouts are its state_dicts\n",
           cr_st_meta(golden, "torch"), worst_out, worst_grad);
    cr_st_close(golden);
    return 0;
}
