/* Two whole convolutional networks reproduced against PyTorch: conv_golden.safetensors,
 * written by golden_conv.py (float32 on the CPU, torch autograd).
 *
 *   nature   x / 255 -> conv 32@8x8/4 -> conv 64@4x4/2 -> conv 64@3x3/1 -> fc -> head, B = 2
 *   minatar  conv 16@3x3/1 -> fc -> head, B = 4, with the gradient w.r.t. the observation
 * (ReLU after every layer but the head; loss 0.5 mean((head - target)^2)).
 *
 * The forward runs from the observation through the C ops alone and each layer's output is
 * compared with torch's. The backward then runs through the C ops from d loss / d head, taking
 * each layer's input and ReLU output from torch's forward (what a training step saved from its own
 * forward): the ReLU masks are then torch's, so a pre-activation within rounding of 0 cannot flip
 * a mask and move a gradient by a whole term, and what is compared is the backward ops alone.
 *
 * Tolerance table (why each is what it is):
 *   obs / 255     bitwise        one float division, as torch's obs.float() / 255.0
 *   layer outputs |d| <= 1e-5 max|out| + 1e-5 |out|
 *                                sums of 256 to 3136 products (plus the bias) in another order
 *                                than torch's kernels, the error carried through up to five
 *                                layers: measured at most 1.1e-6 of the tensor's largest value
 *                                (a relative bound per element would fail on outputs near 0,
 *                                whose error is that of the large terms that cancelled)
 *   loss          rel 1e-5       a mean of 12 or 24 squares of the head, within the above
 *   gradients     rel 1e-5 of the norm, ‖g - g_torch‖ / ‖g_torch‖ per tensor, and
 *                 |d| <= 1e-4 max|g| per element:
 *                                sums over the batch and the pixels (up to 800 terms) and over
 *                                up to 64 outputs and 16 taps (dx), in another order than
 *                                torch's, from the same inputs: measured at most 5.5e-7 of the
 *                                norm (conv1's weights, four layers down) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops/cpu/ops_conv.h"
#include "ops/cpu/ops_cpu.h"
#include "ops/cpu/ops_dqn.h"
#include "io/safetensors.h"

#define OUT_TOL 1e-5
#define LOSS_TOL 1e-5
#define GRAD_NORM_TOL 1e-5
#define GRAD_MAX_TOL 1e-4

static cr_st_file *golden;

/* n floats (host, 64-byte aligned), NaN so unwritten outputs show. */
static float *floats(size_t n) {
    float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    CHECK(p != NULL);
    for (size_t i = 0; i < n; i++) p[i] = NAN;
    return p;
}

/* The golden tensor `name`, of exactly n floats, in a new buffer. */
static float *load(const char *name, size_t n) {
    float *p = floats(n);
    CHECK_OK(cr_st_read_f32(golden, name, p, n));
    return p;
}

static float *loadf(const char *net, const char *what, size_t n) {
    char name[CR_ST_MAX_NAME];
    CHECK((size_t)snprintf(name, sizeof name, "%s.%s", net, what) < sizeof name);
    return load(name, n);
}

static double max_abs(const float *p, size_t n) {
    double m = 0;
    /* `if (a > m)`, not fmax(): GCC 12.2 for aarch64 crashes (an internal compiler error) vectorizing
     * an fmax reduction over floats widened to double; the same for every input, NaN left out. */
    for (size_t i = 0; i < n; i++)
        if (fabs(p[i]) > m) m = fabs(p[i]);
    return m;
}

/* Every element within tol max|want| + tol |want|. */
static void check_out(const char *net, const char *what, const float *got, size_t n) {
    float *want = loadf(net, what, n);
    double scale = max_abs(want, n), worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]), tol = OUT_TOL * (scale + fabs(want[i]));
        CHECK_MSG(d <= tol, "%s.%s[%zu]: expected %.9g, got %.9g (tol %.3g)", net, what, i,
                  (double)want[i], (double)got[i], tol);
        worst = fmax(worst, d / scale);
    }
    printf("  %s.%-16s max |d| / max|want| %.2e\n", net, what, worst);
    free(want);
}

/* ‖got - want‖ <= GRAD_NORM_TOL ‖want‖ and every |d| <= GRAD_MAX_TOL max|want|. */
static void check_grad(const char *net, const char *what, const float *got, size_t n) {
    char name[64];
    CHECK((size_t)snprintf(name, sizeof name, "grad.%s", what) < sizeof name);
    float *want = loadf(net, name, n);
    double num = 0, den = 0, scale = max_abs(want, n);
    for (size_t i = 0; i < n; i++) {
        double d = (double)got[i] - want[i];
        CHECK_MSG(fabs(d) <= GRAD_MAX_TOL * scale, "%s.%s[%zu]: expected %.9g, got %.9g", net,
                  name, i, (double)want[i], (double)got[i]);
        num += d * d, den += (double)want[i] * want[i];
    }
    double rel = sqrt(num) / (sqrt(den) + 1e-30);
    CHECK_MSG(rel <= GRAD_NORM_TOL, "%s.%s: relative error %.3g > %.3g", net, name, rel,
              GRAD_NORM_TOL);
    printf("  %s.%-16s ‖d‖ / ‖want‖ %.2e\n", net, name, rel);
    free(want);
}

/* d loss / d head (B, A) for loss = 0.5 mean((head - target)^2); returns the loss. */
static double loss_grad(const float *head, const float *target, float *dhead, size_t n) {
    double loss = 0;
    for (size_t i = 0; i < n; i++) {
        float d = head[i] - target[i];
        loss += 0.5 * (double)d * d;
        dhead[i] = d / (float)n;
    }
    return loss / (double)n;
}

static int meta_int(const char *key) {
    const char *v = cr_st_meta(golden, key);
    CHECK_MSG(v != NULL, "metadata %s missing", key);
    return atoi(v);
}

static void check_loss(const char *net, double loss) {
    float *want = loadf(net, "loss", 1);
    CHECK_CLOSE(net, loss, want[0], 0, LOSS_TOL);
    free(want);
}

/* ---- nature ----------------------------------------------------------------------------------- */

static void test_nature(void) {
    const char *net = "nature";
    const int B = meta_int("B_nature"), F = meta_int("nature_fc"), A = meta_int("actions");
    cr_conv2d_shape c[3] = {
        {.N = B, .C = 4, .H = 84, .W = 84, .K = 32, .R = 8, .S = 8, .stride = 4},
        {.N = B, .C = 32, .H = 20, .W = 20, .K = 64, .R = 4, .S = 4, .stride = 2},
        {.N = B, .C = 64, .H = 9, .W = 9, .K = 64, .R = 3, .S = 3, .stride = 1},
    };
    static const char *names[3] = {"conv1", "conv2", "conv3"};
    size_t scratch_bytes = 0, in[3], out[3], wn[3];
    for (int l = 0; l < 3; l++) {
        CHECK_OK(cr_conv2d_shape_check(&c[l]));
        size_t b = cr_cpu_conv2d_scratch_bytes(&c[l]);
        scratch_bytes = b > scratch_bytes ? b : scratch_bytes;
        in[l] = (size_t)B * c[l].C * c[l].H * c[l].W;
        out[l] = (size_t)B * c[l].K * c[l].P * c[l].Q;
        wn[l] = (size_t)c[l].K * c[l].C * c[l].R * c[l].S;
    }
    const int I = c[2].K * c[2].P * c[2].Q; /* 3136: conv3's output read flat, no copy */
    void *scratch = floats(scratch_bytes / sizeof(float));

    cr_st_tensor t;
    CHECK_OK(cr_st_find(golden, "nature.obs", &t));
    CHECK(t.dtype == CR_ST_U8 && t.count == in[0]);
    uint8_t *obs = malloc(t.count);
    CHECK(obs != NULL);
    memcpy(obs, t.data, t.count);

    float *w[3], *b[3], *act[3], *torch_act[3];
    char name[64];
    for (int l = 0; l < 3; l++) {
        snprintf(name, sizeof name, "%s.weight", names[l]), w[l] = loadf(net, name, wn[l]);
        snprintf(name, sizeof name, "%s.bias", names[l]), b[l] = loadf(net, name, (size_t)c[l].K);
        snprintf(name, sizeof name, "%s.out", names[l]), torch_act[l] = loadf(net, name, out[l]);
        act[l] = floats(out[l]);
    }
    float *fw = loadf(net, "fc.weight", (size_t)F * I), *fb = loadf(net, "fc.bias", (size_t)F);
    float *hw = loadf(net, "head.weight", (size_t)A * F), *hb = loadf(net, "head.bias", (size_t)A);
    float *target = loadf(net, "target", (size_t)B * A);
    float *torch_fc = loadf(net, "fc.out", (size_t)B * F);
    float *torch_head = loadf(net, "head.out", (size_t)B * A);

    /* forward, from the frames, C ops only */
    float *x = floats(in[0]), *fc = floats((size_t)B * F), *head = floats((size_t)B * A);
    cr_cpu_scale_u8(obs, x, in[0]);
    for (size_t i = 0; i < in[0]; i++)
        CHECK_MSG(x[i] == (float)obs[i] / 255.0f, "obs / 255 [%zu]", i);
    for (int l = 0; l < 3; l++) {
        cr_cpu_conv2d_forward(&c[l], l ? act[l - 1] : x, w[l], b[l], act[l], 1, scratch);
        snprintf(name, sizeof name, "%s.out", names[l]);
        check_out(net, name, act[l], out[l]);
    }
    cr_cpu_linear_relu_forward(act[2], fw, fb, fc, B, I, F);
    check_out(net, "fc.out", fc, (size_t)B * F);
    cr_cpu_linear_forward(fc, hw, hb, head, B, F, A);
    check_out(net, "head.out", head, (size_t)B * A);
    float *dhead = floats((size_t)B * A);
    check_loss(net, loss_grad(head, target, dhead, (size_t)B * A));

    /* backward, from torch's head and activations (see the top of the file) */
    float *dfc = floats((size_t)B * F), *dw = floats(wn[2] > (size_t)F * I ? wn[2] : (size_t)F * I);
    float *db = floats(64), *dact[3];
    for (int l = 0; l < 3; l++) dact[l] = floats(out[l]);
    loss_grad(torch_head, target, dhead, (size_t)B * A);
    cr_cpu_linear_backward(dhead, torch_fc, hw, dfc, dw, db, B, F, A);
    check_grad(net, "head.weight", dw, (size_t)A * F), check_grad(net, "head.bias", db, (size_t)A);
    cr_cpu_relu_backward(torch_fc, dfc, dfc, (size_t)B * F);
    cr_cpu_linear_backward(dfc, torch_act[2], fw, dact[2], dw, db, B, I, F);
    check_grad(net, "fc.weight", dw, (size_t)F * I), check_grad(net, "fc.bias", db, (size_t)F);
    for (int l = 2; l >= 0; l--) {
        const float *xin = l ? torch_act[l - 1] : x;
        cr_cpu_conv2d_backward(&c[l], xin, w[l], torch_act[l], dact[l], l ? dact[l - 1] : NULL,
                               dw, db, scratch);
        snprintf(name, sizeof name, "%s.weight", names[l]), check_grad(net, name, dw, wn[l]);
        snprintf(name, sizeof name, "%s.bias", names[l]), check_grad(net, name, db, (size_t)c[l].K);
    }

    for (int l = 0; l < 3; l++) free(w[l]), free(b[l]), free(act[l]), free(torch_act[l]), free(dact[l]);
    free(obs), free(scratch), free(fw), free(fb), free(hw), free(hb), free(target), free(torch_fc),
        free(torch_head), free(x), free(fc), free(head), free(dhead), free(dfc), free(dw), free(db);
}

/* ---- minatar ---------------------------------------------------------------------------------- */

static void test_minatar(void) {
    const char *net = "minatar";
    const int B = meta_int("B_minatar"), F = meta_int("minatar_fc"), A = meta_int("actions");
    cr_conv2d_shape c = {.N = B, .C = meta_int("minatar_channels"), .H = 10, .W = 10, .K = 16,
                         .R = 3, .S = 3, .stride = 1};
    CHECK_OK(cr_conv2d_shape_check(&c));
    const size_t nx = (size_t)B * c.C * c.H * c.W, wn = (size_t)c.K * c.C * c.R * c.S;
    const int I = c.K * c.P * c.Q; /* 1024 */
    const size_t ny = (size_t)B * I;
    void *scratch = floats(cr_cpu_conv2d_scratch_bytes(&c) / sizeof(float));

    float *obs = loadf(net, "obs", nx), *w = loadf(net, "conv1.weight", wn);
    float *b = loadf(net, "conv1.bias", (size_t)c.K);
    float *fw = loadf(net, "fc.weight", (size_t)F * I), *fb = loadf(net, "fc.bias", (size_t)F);
    float *hw = loadf(net, "head.weight", (size_t)A * F), *hb = loadf(net, "head.bias", (size_t)A);
    float *target = loadf(net, "target", (size_t)B * A);
    float *torch_act = loadf(net, "conv1.out", ny), *torch_fc = loadf(net, "fc.out", (size_t)B * F);
    float *torch_head = loadf(net, "head.out", (size_t)B * A);

    float *act = floats(ny), *fc = floats((size_t)B * F), *head = floats((size_t)B * A);
    cr_cpu_conv2d_forward(&c, obs, w, b, act, 1, scratch);
    check_out(net, "conv1.out", act, ny);
    cr_cpu_linear_relu_forward(act, fw, fb, fc, B, I, F);
    check_out(net, "fc.out", fc, (size_t)B * F);
    cr_cpu_linear_forward(fc, hw, hb, head, B, F, A);
    check_out(net, "head.out", head, (size_t)B * A);
    float *dhead = floats((size_t)B * A);
    check_loss(net, loss_grad(head, target, dhead, (size_t)B * A));

    float *dfc = floats((size_t)B * F), *dact = floats(ny), *dx = floats(nx);
    float *dw = floats((size_t)F * I), *db = floats((size_t)F);
    loss_grad(torch_head, target, dhead, (size_t)B * A);
    cr_cpu_linear_backward(dhead, torch_fc, hw, dfc, dw, db, B, F, A);
    check_grad(net, "head.weight", dw, (size_t)A * F), check_grad(net, "head.bias", db, (size_t)A);
    cr_cpu_relu_backward(torch_fc, dfc, dfc, (size_t)B * F);
    cr_cpu_linear_backward(dfc, torch_act, fw, dact, dw, db, B, I, F);
    check_grad(net, "fc.weight", dw, (size_t)F * I), check_grad(net, "fc.bias", db, (size_t)F);
    cr_cpu_conv2d_backward(&c, obs, w, torch_act, dact, dx, dw, db, scratch);
    check_grad(net, "conv1.weight", dw, wn), check_grad(net, "conv1.bias", db, (size_t)c.K);
    check_grad(net, "obs", dx, nx);

    free(scratch), free(obs), free(w), free(b), free(fw), free(fb), free(hw), free(hb),
        free(target), free(torch_act), free(torch_fc), free(torch_head), free(act), free(fc),
        free(head), free(dhead), free(dfc), free(dact), free(dx), free(dw), free(db);
}

int main(void) {
    const char *dir = getenv("CUDARL_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/conv_golden.safetensors", dir ? dir : "tests/golden");
    CHECK_OK(cr_st_open(&golden, path));
    const char *format = cr_st_meta(golden, "format"), *version = cr_st_meta(golden, "version");
    CHECK_MSG(format && !strcmp(format, "cudarl-golden-conv"), "%s is not a conv golden file", path);
    CHECK_MSG(version && !strcmp(version, "1"), "%s: version %s, expected 1", path,
              version ? version : "(none)");
    cr_cpu_set_threads(1);
    test_nature();
    test_minatar();
    printf("test_conv_golden: forward, loss and every gradient of both networks match PyTorch %s\n",
           cr_st_meta(golden, "torch"));
    cr_st_close(golden);
    return 0;
}
