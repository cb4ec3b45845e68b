/* Convolutional policies (src/nn/convnet.h): layouts and parameter counts of the named specs
 * (PyTorch's, computed by hand below), the spec text's round trip and refusals, the two inits,
 * finite-difference gradients of whole networks, the uint8 input paths, thread-count
 * independence, and a checkpoint that rebuilds its network from the file alone.
 *
 * Parameter counts (weights K C R S or O I, plus biases K or O; A actions, C MinAtar channels):
 *   nature-cnn trunk, 84x84x4 -> 32x20x20 -> 64x9x9 -> 64x7x7 = 3136 -> 512:
 *     conv 32@8x8/4   32*4*8*8   =     8192 + 32  =     8224
 *     conv 64@4x4/2   64*32*4*4  =    32768 + 64  =    32832
 *     conv 64@3x3/1   64*64*3*3  =    36864 + 64  =    36928
 *     linear 512      512*3136   =  1605632 + 512 =  1606144
 *     trunk                                          1684128
 *   ppo heads: actor 512 A + A, critic 512 + 1: (A + 1) * 513; dqn head 512 A + A = 513 A
 *     A = 6:  ppo 1684128 + 3591 = 1687719,  dqn 1684128 + 3078 = 1687206
 *   minatar-cnn trunk, 10x10xC -> 16x8x8 = 1024 -> 128:
 *     conv 16@3x3/1   16*C*3*3 + 16 = 144 C + 16;  linear 128   128*1024 + 128 = 131200
 *     C = 4: 592 + 131200 = 131792
 *   ppo heads (A + 1) * 129, dqn head 129 A:
 *     C = 4, A = 6: ppo 131792 + 903 = 132695, dqn 131792 + 774 = 132566
 *     C = 10, A = 18: trunk 1456 + 131200 = 132656; ppo + 2451 = 135107, dqn + 2322 = 134978
 *
 * Finite differences: the loss is L = sum(g_out * out) + sum(g_value * value) with fixed random
 * g, in double from the float outputs; d L / d p by central differences against
 * cr_convnet_backward given dout = g_out, dvalue = g_value. A ReLU network is piecewise linear
 * in any one parameter, so the central difference is exact up to float rounding unless the step
 * moves a ReLU across its kink. That is detected by comparing every ReLU's on/off pattern at
 * p +- h with the base forward's; the step then shrinks (h = eps, eps / 10, eps / 100) and a
 * parameter whose smallest step still crosses a kink is skipped and counted (at most 2%).
 * Tolerance per parameter:
 *   |fd - grad| <= noise * S / h + 1e-3 |grad|,  S = sum |g_out * out| + sum |g_value * value|
 * the first term the float rounding of L (a multiple of S) divided by the step, the second the
 * tanh net's curvature (eps^2, below 1e-6 here) with room. noise is 1e-6 for minatar-cnn and the
 * custom net (sums of at most 1024 products; seen <= 2.6e-7) and 1e-5 for nature-cnn (sums of
 * 256 to 3136 products through five layers; seen 1.9e-6). A smaller step would cross fewer kinks
 * but drown the slope in that rounding: 1e-2 (1e-3 for the tanh net) balances them. */
#define _DEFAULT_SOURCE /* mkdtemp */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "nn/convnet.h"
#include "ops/cpu/ops_cpu.h"
#include "io/safetensors.h"

#define FD_NOISE_SMALL 1e-6
#define FD_NOISE_NATURE 1e-5
#define FD_RTOL 1e-3
#define FD_MAX_SKIPPED 0.02

static float *floats(size_t n) {
    float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64 + 64);
    CHECK(p != NULL);
    for (size_t i = 0; i < n; i++) p[i] = NAN;
    return p;
}

static void *cache_alloc(const cr_convnet *net, int B, cr_convnet_cache *c) {
    void *mem = aligned_alloc(64, cr_convnet_cache_bytes(net, B));
    CHECK(mem != NULL);
    cr_convnet_cache_carve(net, mem, B, c);
    return mem;
}

static void plan_named(cr_convnet *net, const char *name, int c, int h, int w,
                       cr_convnet_heads heads, int A) {
    cr_convnet_spec s;
    CHECK_OK(cr_convnet_spec_named(&s, name, c, h, w, heads, A));
    CHECK_OK(cr_convnet_plan(net, &s));
}

/* ---- layouts -------------------------------------------------------------------------------- */

static void check_tensor(const cr_convnet *net, int i, const char *name, int ndim, int d0, int d1,
                         int d2, int d3) {
    const cr_convnet_tensor *t = &net->t[i];
    const int want[4] = {d0, d1, d2, d3};
    CHECK_MSG(!strcmp(t->name, name), "tensor %d: expected %s, got %s", i, name, t->name);
    CHECK_MSG(t->ndim == ndim, "%s: ndim %d", name, t->ndim);
    size_t count = 1;
    for (int d = 0; d < ndim; d++) {
        CHECK_MSG(t->shape[d] == want[d], "%s dim %d: expected %d, got %d", name, d, want[d],
                  t->shape[d]);
        count *= (size_t)want[d];
    }
    CHECK(t->count == count);
    CHECK(i == 0 ? t->offset == 0 : t->offset == net->t[i - 1].offset + net->t[i - 1].count);
    CHECK(cr_convnet_find(net, name) == i);
}

static void test_layouts(void) {
    cr_convnet n;
    plan_named(&n, "nature-cnn", 4, 84, 84, CR_CONVNET_PPO, 6);
    CHECK(n.ntensors == 12 && n.num_params == 1687719 && n.features == 512);
    check_tensor(&n, 0, "network.0.weight", 4, 32, 4, 8, 8);
    check_tensor(&n, 1, "network.0.bias", 1, 32, 0, 0, 0);
    check_tensor(&n, 2, "network.2.weight", 4, 64, 32, 4, 4);
    check_tensor(&n, 3, "network.2.bias", 1, 64, 0, 0, 0);
    check_tensor(&n, 4, "network.4.weight", 4, 64, 64, 3, 3);
    check_tensor(&n, 5, "network.4.bias", 1, 64, 0, 0, 0);
    check_tensor(&n, 6, "network.7.weight", 2, 512, 3136, 0, 0);
    check_tensor(&n, 7, "network.7.bias", 1, 512, 0, 0, 0);
    check_tensor(&n, 8, "actor.weight", 2, 6, 512, 0, 0);
    check_tensor(&n, 9, "actor.bias", 1, 6, 0, 0, 0);
    check_tensor(&n, 10, "critic.weight", 2, 1, 512, 0, 0);
    check_tensor(&n, 11, "critic.bias", 1, 1, 0, 0, 0);
    CHECK(n.ntrunk == 4 && n.nstages == 4 && n.stage[3].in == 3136);
    CHECK(n.stage[0].conv.P == 20 && n.stage[1].conv.P == 9 && n.stage[2].conv.P == 7);
    CHECK(n.widest == 32 * 20 * 20 && n.in_floats == 4 * 84 * 84 && n.conv_scratch > 0);
    CHECK(cr_convnet_cache_bytes(&n, 2) > cr_convnet_cache_bytes(&n, 1));

    plan_named(&n, "nature-cnn", 4, 84, 84, CR_CONVNET_DQN, 6);
    CHECK(n.ntensors == 10 && n.num_params == 1687206 && n.ntrunk == 4 && n.nstages == 5);
    check_tensor(&n, 6, "network.7.weight", 2, 512, 3136, 0, 0);
    check_tensor(&n, 8, "network.9.weight", 2, 6, 512, 0, 0);
    check_tensor(&n, 9, "network.9.bias", 1, 6, 0, 0, 0);
    CHECK(n.actor_w == -1 && n.critic_b == -1);

    plan_named(&n, "minatar-cnn", 4, 10, 10, CR_CONVNET_PPO, 6);
    CHECK(n.num_params == 132695 && n.features == 128 && n.stage[1].in == 1024);
    check_tensor(&n, 0, "network.0.weight", 4, 16, 4, 3, 3);
    check_tensor(&n, 2, "network.3.weight", 2, 128, 1024, 0, 0);
    check_tensor(&n, 4, "actor.weight", 2, 6, 128, 0, 0);
    check_tensor(&n, 7, "critic.bias", 1, 1, 0, 0, 0);
    plan_named(&n, "minatar-cnn", 4, 10, 10, CR_CONVNET_DQN, 6);
    CHECK(n.num_params == 132566);
    check_tensor(&n, 4, "network.5.weight", 2, 6, 128, 0, 0);
    plan_named(&n, "minatar-cnn", 10, 10, 10, CR_CONVNET_PPO, 18);
    CHECK(n.num_params == 135107);
    plan_named(&n, "minatar-cnn", 10, 10, 10, CR_CONVNET_DQN, 18);
    CHECK(n.num_params == 134978);
    printf("layouts: nature-cnn 1687719 (ppo, A 6) / 1687206 (dqn), minatar-cnn 132695 / 132566 "
           "(C 4, A 6), CleanRL's state_dict names\n");
}

/* ---- spec text ------------------------------------------------------------------------------ */

static void round_trip(const cr_convnet_spec *s) {
    char a[CR_CONVNET_TEXT_MAX], b[CR_CONVNET_TEXT_MAX];
    CHECK_OK(cr_convnet_spec_to_text(s, a, sizeof a));
    cr_convnet_spec p;
    CHECK_OK(cr_convnet_spec_parse(&p, a, "round trip"));
    CHECK_OK(cr_convnet_spec_to_text(&p, b, sizeof b));
    CHECK_MSG(!strcmp(a, b), "round trip changed the text:\n  %s\n  %s", a, b);
    cr_convnet x, y;
    CHECK_OK(cr_convnet_plan(&x, s));
    CHECK_OK(cr_convnet_plan(&y, &p));
    CHECK(x.num_params == y.num_params && x.ntensors == y.ntensors);
    CHECK(!strcmp(p.name, s->name) && p.in_c == s->in_c && p.in_h == s->in_h &&
          p.in_w == s->in_w && p.dtype == s->dtype && p.scale == s->scale &&
          p.heads == s->heads && p.num_actions == s->num_actions &&
          p.num_layers == s->num_layers);
    for (int i = 0; i < s->num_layers; i++) {
        const cr_convnet_layer *u = &s->layers[i], *v = &p.layers[i];
        CHECK(u->op == v->op && u->out == v->out && u->kernel[0] == v->kernel[0] &&
              u->kernel[1] == v->kernel[1] && u->stride == v->stride && u->pad == v->pad);
    }
}

/* A small custom net that uses what the named ones do not: float input, padding, a
 * non-square kernel, tanh after a conv and after a linear. */
static void custom_spec(cr_convnet_spec *s, cr_convnet_heads heads) {
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "custom");
    s->in_c = 3, s->in_h = 9, s->in_w = 7;
    s->dtype = CR_CONVNET_F32, s->scale = CR_CONVNET_SCALE_NONE;
    const cr_convnet_layer l[] = {
        {.op = CR_CONVNET_CONV, .out = 5, .kernel = {3, 2}, .stride = 2, .pad = 1},
        {.op = CR_CONVNET_TANH},
        {.op = CR_CONVNET_CONV, .out = 4, .kernel = {2, 3}, .stride = 1, .pad = 0},
        {.op = CR_CONVNET_RELU},
        {.op = CR_CONVNET_FLATTEN},
        {.op = CR_CONVNET_LINEAR, .out = 10},
        {.op = CR_CONVNET_TANH},
        {.op = CR_CONVNET_LINEAR, .out = 7},
        {.op = CR_CONVNET_RELU},
    };
    s->num_layers = (int)(sizeof l / sizeof l[0]);
    memcpy(s->layers, l, sizeof l);
    s->heads = heads, s->num_actions = 3;
}

static int refusals;

/* text must be refused with CUDARL_ERR_FORMAT and a message containing `part`. */
static void refused(const char *text, const char *part) {
    cr_convnet_spec s;
    refusals++;
    cudarl_status st = cr_convnet_spec_parse(&s, text, "test spec");
    CHECK_MSG(st == CUDARL_ERR_FORMAT, "accepted (or wrong status %s): %s",
              cudarl_status_name(st), text);
    const char *msg = cudarl_last_error();
    CHECK_MSG(strstr(msg, part) != NULL && strstr(msg, "test spec") == msg,
              "message \"%s\" lacks \"%s\" (for %s)", msg, part, text);
}


/* Spec texts built from pieces: HEAD + name + input, then layers, then heads. */
#define HEAD "{\"format\":\"cudarl-convnet\",\"version\":1,"
#define IN_U8 "\"input\":{\"shape\":[4,12,12],\"dtype\":\"u8\",\"scale\":\"1/255\"},"
#define CUSTOM HEAD "\"name\":\"custom\"," IN_U8
#define LAYERS(...) "\"layers\":[" __VA_ARGS__ "],"
#define CONV3 "{\"type\":\"conv\",\"out\":8,\"kernel\":[3,3],\"stride\":1,\"pad\":0}"
#define RELU "{\"type\":\"relu\"}"
#define FLAT "{\"type\":\"flatten\"}"
#define LIN "{\"type\":\"linear\",\"out\":8}"
#define HEADS "\"heads\":{\"type\":\"ppo\",\"actions\":4}}"
#define GOOD CUSTOM LAYERS(CONV3 "," RELU "," FLAT "," LIN "," RELU) HEADS

static void test_refusals(void) {
    cr_convnet_spec s;
    CHECK_OK(cr_convnet_spec_parse(&s, GOOD, "test spec"));
    refused(NULL, "missing");
    refused("", "not valid JSON");
    refused("{\"format\":", "not valid JSON");
    refused(GOOD " x", "not valid JSON");
    refused("[1,2]", "the spec must be a JSON object");
    refused("{\"format\":\"cudarl-mlp\",\"version\":1}", "format is \"cudarl-mlp\"");
    refused(HEAD "\"format\":\"cudarl-convnet\"}", "field \"format\" twice");
    refused("{\"format\":\"cudarl-convnet\",\"version\":2}", "version 2; this cudarl reads "
            "version 1 to 1");
    refused("{\"format\":\"cudarl-convnet\",\"version\":1.5}", "version 1.5");
    refused(CUSTOM HEADS, "lacks field \"layers\"");
    refused(CUSTOM "\"extra\":1," LAYERS(FLAT) HEADS, "unknown field \"extra\"");
    refused(CUSTOM "\"layers\":{}," HEADS, "\"layers\" must be an array");
    refused(CUSTOM LAYERS("{\"type\":\"dropout\"}") HEADS, "layer 0 has unknown type \"dropout\"");
    refused(CUSTOM LAYERS("7") HEADS, "layer 0 must be a JSON object");
    refused(CUSTOM LAYERS("{\"type\":\"conv\",\"out\":8,\"kernel\":[3,3],\"stride\":1}") HEADS,
            "layer 0 lacks field \"pad\"");
    refused(CUSTOM LAYERS("{\"type\":\"conv\",\"out\":8,\"kernel\":[3,3],\"stride\":1,\"pad\":0,"
                          "\"dilation\":2}") HEADS, "layer 0 has unknown field \"dilation\"");
    refused(CUSTOM LAYERS(FLAT ",{\"type\":\"relu\",\"out\":3}") HEADS,
            "layer 1 has unknown field \"out\"");
    refused(CUSTOM LAYERS("{\"type\":\"conv\",\"out\":8,\"kernel\":[3,3],\"stride\":0,\"pad\":0}")
            HEADS, "layer 0 field \"stride\" must be an integer from 1 to 65536");
    refused(CUSTOM LAYERS(FLAT ",{\"type\":\"linear\",\"out\":3.5}") HEADS,
            "field \"out\" must be an integer");
    refused(CUSTOM LAYERS(FLAT ",{\"type\":\"linear\",\"out\":\"8\"}") HEADS,
            "field \"out\" must be an integer");
    refused(CUSTOM LAYERS("{\"type\":\"conv\",\"out\":8,\"kernel\":[3],\"stride\":1,\"pad\":0}")
            HEADS, "\"kernel\" must be an array of 2 integers");
    refused(HEAD "\"name\":\"custom\",\"input\":{\"shape\":[4,12,12],\"dtype\":\"f16\","
            "\"scale\":\"none\"}," LAYERS(FLAT) HEADS, "unknown input dtype \"f16\"");
    refused(HEAD "\"name\":\"custom\",\"input\":{\"shape\":[4,12,12],\"dtype\":\"u8\","
            "\"scale\":\"1/256\"}," LAYERS(FLAT) HEADS, "unknown input scale \"1/256\"");
    refused(HEAD "\"name\":\"custom\",\"input\":{\"shape\":[4,12,12],\"dtype\":\"f32\","
            "\"scale\":\"1/255\"}," LAYERS(FLAT) HEADS, "scale 1/255 is for uint8");
    refused(HEAD "\"name\":\"custom\",\"input\":{\"shape\":[0,12,12],\"dtype\":\"u8\","
            "\"scale\":\"none\"}," LAYERS(FLAT) HEADS, "\"shape\" must be an integer from 1");
    refused(HEAD "\"name\":\"custom\",\"input\":[4,12,12]," LAYERS(FLAT) HEADS,
            "\"input\" must be a JSON object");
    refused(CUSTOM LAYERS(FLAT) "\"heads\":{\"type\":\"sac\",\"actions\":4}}",
            "unknown heads type \"sac\"");
    refused(CUSTOM LAYERS(FLAT) "\"heads\":{\"type\":\"dqn\",\"actions\":0}}",
            "\"actions\" must be an integer from 1");
    refused(HEAD "\"name\":\"resnet\"," IN_U8 LAYERS(FLAT) HEADS, "unknown name 'resnet'");
    refused(HEAD "\"name\":\"nature-cnn-and-then-some-more-words\"," IN_U8 LAYERS(FLAT) HEADS,
            "is too long");
    refused(HEAD "\"name\":\"minatar-cnn\"," IN_U8 LAYERS(FLAT) HEADS,
            "named 'minatar-cnn' but its input dtype or scale");
    refused(HEAD "\"name\":\"nature-cnn\"," IN_U8 LAYERS(CONV3 "," RELU "," FLAT) HEADS,
            "named 'nature-cnn' but layer 0 is conv 8@3x3/1 pad 0 where nature-cnn has "
            "conv 32@8x8/4 pad 0");
    refused(HEAD "\"name\":\"custom\",\"input\":{\"shape\":[4,2,2],\"dtype\":\"u8\","
            "\"scale\":\"none\"}," LAYERS(CONV3 "," FLAT) HEADS,
            "layer 0 (conv): conv2d: a 3x3 kernel does not fit a 2x2 input");
    refused(CUSTOM LAYERS(LIN "," FLAT) HEADS, "layer 0 (linear): needs a flatten before it");
    refused(CUSTOM LAYERS(FLAT "," CONV3) HEADS, "layer 1 (conv): comes after flatten");
    refused(CUSTOM LAYERS(CONV3 "," RELU) HEADS, "the trunk must end flat");
    refused(CUSTOM LAYERS(CONV3 "," RELU "," RELU "," FLAT) HEADS,
            "layer 2 (relu): an activation must follow a conv or linear");
    refused(CUSTOM LAYERS(RELU "," FLAT) HEADS, "layer 0 (relu): an activation must follow");
    refused(CUSTOM LAYERS(FLAT "," FLAT) HEADS, "layer 1 (flatten): the input is flat already");
    refused(CUSTOM LAYERS(FLAT "," LIN "," LIN "," LIN "," LIN "," LIN "," LIN "," LIN "," LIN
                          "," LIN "," LIN "," LIN "," LIN "," LIN "," LIN "," LIN "," LIN) HEADS,
            "17 layers; at most 16");
    cr_convnet n; /* the most tensors a spec can have: 15 linear layers and the PPO heads */
    CHECK_OK(cr_convnet_spec_parse(&s, CUSTOM LAYERS(FLAT "," LIN "," LIN "," LIN "," LIN "," LIN
                                   "," LIN "," LIN "," LIN "," LIN "," LIN "," LIN "," LIN "," LIN
                                   "," LIN "," LIN) HEADS, "test spec"));
    CHECK_OK(cr_convnet_plan(&n, &s));
    CHECK(n.ntensors == 34 && n.ntensors <= CR_CONVNET_MAX_TENSORS);
    s.heads = CR_CONVNET_DQN;
    CHECK_OK(cr_convnet_plan(&n, &s));
    CHECK(n.ntensors == 32 && n.nstages == 16);
    s.layers[1].op = (cr_convnet_op)99;
    CHECK(cr_convnet_plan(&n, &s) == CUDARL_ERR_INVALID_ARG);
    CHECK(cr_convnet_spec_to_text(&s, (char[CR_CONVNET_TEXT_MAX]){0}, CR_CONVNET_TEXT_MAX) ==
          CUDARL_ERR_INVALID_ARG);
    printf("spec text: round trips; %d malformed or unknown specs refused with their reason\n",
           refusals);
}

static void test_text(void) {
    cr_convnet_spec s;
    char text[CR_CONVNET_TEXT_MAX];
    static const char *const names[] = {"nature-cnn", "minatar-cnn"};
    for (int k = 0; k < 2; k++)
        for (int h = 0; h < 2; h++) {
            CHECK_OK(cr_convnet_spec_named(&s, names[k], k ? 6 : 4, k ? 10 : 84, k ? 10 : 84,
                                           (cr_convnet_heads)h, 5));
            round_trip(&s);
        }
    custom_spec(&s, CR_CONVNET_DQN);
    round_trip(&s);
    CHECK_OK(cr_convnet_spec_named(&s, "nature-cnn", 4, 84, 84, CR_CONVNET_PPO, 6));
    CHECK_OK(cr_convnet_spec_to_text(&s, text, sizeof text));
    printf("nature-cnn spec text (%zu bytes): %s\n", strlen(text), text);
    CHECK(cr_convnet_spec_to_text(&s, text, 40) == CUDARL_ERR_INVALID_ARG);
    CHECK(cr_convnet_spec_named(&s, "resnet", 4, 84, 84, CR_CONVNET_PPO, 6) ==
          CUDARL_ERR_INVALID_ARG);
    CHECK(strstr(cudarl_last_error(), "nature-cnn, minatar-cnn") != NULL);
    test_refusals();
}

/* ---- init ----------------------------------------------------------------------------------- */

/* Rows [0, rows) of w (O, I), O <= I, orthonormal times gain: max |<w_i, w_j> - gain^2 d_ij|. */
static double orthogonality(const float *w, int rows, int I, double gain) {
    double worst = 0;
    for (int i = 0; i < rows; i++)
        for (int j = 0; j <= i; j++) {
            double d = 0;
            for (int e = 0; e < I; e++) d += (double)w[(size_t)i * I + e] * w[(size_t)j * I + e];
            worst = fmax(worst, fabs(d - (i == j ? gain * gain : 0.0)) / (gain * gain));
        }
    return worst;
}

static void test_init(void) {
    cr_convnet n;
    cr_philox_state rng;
    /* minatar-cnn: nature-cnn's 512 x 3136 orthogonal init alone takes over a second */
    plan_named(&n, "minatar-cnn", 6, 10, 10, CR_CONVNET_PPO, 5);
    float *p = floats(n.num_params), *q;
    cr_philox_seed(&rng, 1, 0);
    cr_convnet_init_params(&n, p, &rng);
    double worst = 0;
    for (int i = 0; i < n.ntensors; i++) {
        const cr_convnet_tensor *t = &n.t[i];
        const float *w = p + t->offset;
        if (t->ndim == 1) {
            for (size_t e = 0; e < t->count; e++) CHECK_MSG(w[e] == 0.0f, "%s not 0", t->name);
            continue;
        }
        const double gain = !strcmp(t->name, "actor.weight")    ? 0.01
                            : !strcmp(t->name, "critic.weight") ? 1.0
                                                                : sqrt(2.0);
        CHECK(t->shape[0] <= t->fan_in && t->gain == gain);
        double o = orthogonality(w, t->shape[0], t->fan_in, gain);
        CHECK_MSG(o < 1e-5, "%s: rows not orthonormal x %g (%.3g)", t->name, gain, o);
        worst = fmax(worst, o);
    }
    printf("init ppo: orthogonal rows x gain (sqrt 2, actor 0.01, critic 1) within %.1e, zero "
           "biases\n", worst);

    free(p);
    plan_named(&n, "nature-cnn", 4, 84, 84, CR_CONVNET_DQN, 6);
    p = floats(n.num_params), q = floats(n.num_params);
    cr_philox_seed(&rng, 2, 0);
    cr_convnet_init_params(&n, p, &rng);
    cr_philox_seed(&rng, 2, 0);
    cr_convnet_init_params(&n, q, &rng);
    CHECK(memcmp(p, q, n.num_params * sizeof *p) == 0);
    for (int i = 0; i < n.ntensors; i++) {
        const cr_convnet_tensor *t = &n.t[i];
        const double bound = 1.0 / sqrt((double)t->fan_in);
        double sum = 0, sq = 0;
        for (size_t e = 0; e < t->count; e++) {
            double v = p[t->offset + e];
            CHECK_MSG(fabs(v) <= bound, "%s[%zu] = %g outside +-%g", t->name, e, v, bound);
            sum += v, sq += v * v;
        }
        if (t->count < 10000) continue;
        /* uniform(-b, b): mean 0, variance b^2 / 3; 6 standard errors */
        double mean = sum / t->count, var = sq / t->count, m = (double)t->count;
        CHECK_MSG(fabs(mean) < 6 * bound / sqrt(3 * m), "%s mean %g", t->name, mean);
        CHECK_MSG(fabs(var / (bound * bound / 3) - 1) < 6 * sqrt(0.8 / m), "%s variance %g",
                  t->name, var);
    }
    printf("init dqn: PyTorch's default bounds 1/sqrt(fan_in), uniform moments, repeatable\n");
    free(p), free(q);
}

/* ---- finite differences --------------------------------------------------------------------- */

typedef struct fd {
    cr_convnet net;
    int B;
    const void *obs;
    float *params, *grads, *g_out, *g_val, *out, *val;
    float *base[CR_CONVNET_MAX_LAYERS]; /* the base forward's ReLU outputs */
    cr_convnet_cache c;
    void *mem;
} fd;

static float normal(cr_philox_state *r) { return (float)cr_philox_normal(r); }

/* He-uniform weights (activations keep their scale through the layers) and biases uniform in
 * +-0.1: no exact zeros before a ReLU. */
static void random_params(const cr_convnet *n, float *p, cr_philox_state *r) {
    for (int i = 0; i < n->ntensors; i++) {
        const cr_convnet_tensor *t = &n->t[i];
        double b = t->ndim == 1 ? 0.1 : sqrt(6.0 / t->fan_in);
        for (size_t e = 0; e < t->count; e++)
            p[t->offset + e] = (float)((2 * cr_philox_uniform_f64(r) - 1) * b);
    }
}

static void fd_init(fd *f, const cr_convnet_spec *s, int B, const void *obs, uint64_t seed) {
    memset(f, 0, sizeof *f);
    CHECK_OK(cr_convnet_plan(&f->net, s));
    const int A = s->num_actions, ppo = s->heads == CR_CONVNET_PPO;
    f->B = B, f->obs = obs;
    f->params = floats(f->net.num_params), f->grads = floats(f->net.num_params);
    f->g_out = floats((size_t)B * A), f->out = floats((size_t)B * A);
    f->g_val = ppo ? floats((size_t)B) : NULL, f->val = ppo ? floats((size_t)B) : NULL;
    cr_philox_state r;
    cr_philox_seed(&r, seed, 1);
    random_params(&f->net, f->params, &r);
    for (int i = 0; i < B * A; i++) f->g_out[i] = normal(&r);
    for (int i = 0; ppo && i < B; i++) f->g_val[i] = normal(&r);
    f->mem = cache_alloc(&f->net, B, &f->c);
    for (int i = 0; i < f->net.ntrunk; i++)
        f->base[i] = floats((size_t)B * f->net.stage[i].out);
}

static void fd_free(fd *f) {
    for (int i = 0; i < f->net.ntrunk; i++) free(f->base[i]);
    free(f->params), free(f->grads), free(f->g_out), free(f->out), free(f->g_val), free(f->val),
        free(f->mem);
}

static double fd_loss(fd *f) {
    cr_convnet_forward(&f->net, f->params, f->obs, f->out, f->val, &f->c, f->B);
    double L = 0;
    for (int i = 0; i < f->B * f->net.spec.num_actions; i++) L += (double)f->g_out[i] * f->out[i];
    for (int i = 0; f->val && i < f->B; i++) L += (double)f->g_val[i] * f->val[i];
    return L;
}

/* Whether every ReLU is on or off as in the base forward. */
static int fd_same_relus(const fd *f) {
    for (int i = 0; i < f->net.ntrunk; i++) {
        if (f->net.stage[i].act != CR_CONVNET_RELU) continue;
        const float *a = f->c.act[i], *b = f->base[i];
        for (size_t e = 0; e < (size_t)f->B * f->net.stage[i].out; e++)
            if ((a[e] > 0) != (b[e] > 0)) return 0;
    }
    return 1;
}

/* d L / d p by central differences, with the step eps, eps / 10 or eps / 100: the first that
 * crosses no ReLU kink (*used); 0 and *used = 0 when all do. */
static double fd_slope(fd *f, float *p, double eps, double *used) {
    const float p0 = *p;
    for (int k = 0; k < 3; k++, eps /= 10) {
        const float hi = (float)(p0 + eps), lo = (float)(p0 - eps);
        *p = hi;
        double Lp = fd_loss(f);
        int same = fd_same_relus(f);
        *p = lo;
        double Lm = fd_loss(f);
        same = same && fd_same_relus(f);
        *p = p0;
        if (same) {
            *used = (double)hi - lo;
            return (Lp - Lm) / *used;
        }
    }
    *used = 0;
    return 0;
}

/* Checks up to per_tensor entries of every tensor (all of a smaller one), from the step eps. */
static void fd_check(fd *f, int per_tensor, double eps, double noise_tol, const char *label) {
    const double t0 = cr_time_now();
    fd_loss(f);
    double S = 0; /* sum |g * out|: the scale of L's rounding error */
    for (int i = 0; i < f->B * f->net.spec.num_actions; i++)
        S += fabs((double)f->g_out[i] * f->out[i]);
    for (int i = 0; f->val && i < f->B; i++) S += fabs((double)f->g_val[i] * f->val[i]);
    for (int i = 0; i < f->net.ntrunk; i++)
        memcpy(f->base[i], f->c.act[i], (size_t)f->B * f->net.stage[i].out * sizeof(float));
    cr_convnet_backward(&f->net, f->params, f->grads, f->g_out, f->g_val, &f->c, f->B);
    cr_philox_state r;
    cr_philox_seed(&r, 99, 2);
    int checked = 0, skipped = 0, smaller = 0;
    double worst = 0;
    for (int ti = 0; ti < f->net.ntensors; ti++) {
        const cr_convnet_tensor *t = &f->net.t[ti];
        const float *g = f->grads + t->offset;
        const size_t n = t->count <= (size_t)per_tensor ? t->count : (size_t)per_tensor;
        for (size_t k = 0; k < n; k++, checked++) {
            size_t e = n == t->count ? k : cr_philox_next_u32(&r) % t->count;
            double h, num = fd_slope(f, f->params + t->offset + e, eps, &h);
            if (h == 0) {
                skipped++;
                continue;
            }
            smaller += h < 1.5 * eps;
            double d = fabs(num - g[e]), noise = S / h;
            double tol = noise_tol * noise + FD_RTOL * fabs(g[e]);
            CHECK_MSG(d <= tol, "%s %s[%zu]: backward %.7g, finite difference %.7g (step %.1e, "
                      "tol %.3g)", label, t->name, e, (double)g[e], num, h, tol);
            worst = fmax(worst, d / noise);
        }
    }
    CHECK_MSG(skipped <= FD_MAX_SKIPPED * checked, "%s: %d of %d steps crossed a ReLU kink",
              label, skipped, checked);
    printf("finite differences %-22s %5d parameters (%d on a smaller step, %d skipped: a ReLU "
           "kink); worst |fd - grad| %.1e S/step; %.2f s\n", label, checked - skipped, smaller,
           skipped, worst, cr_time_now() - t0);
}

static uint8_t *random_u8(size_t n, int binary, uint64_t seed) {
    uint8_t *x = malloc(n);
    CHECK(x != NULL);
    cr_philox_state r;
    cr_philox_seed(&r, seed, 3);
    for (size_t i = 0; i < n; i++) {
        uint32_t u = cr_philox_next_u32(&r);
        x[i] = binary ? (uint8_t)(u % 10 < 3) : (uint8_t)(u >> 24);
    }
    return x;
}

static void test_gradients(void) {
    cr_convnet_spec s;
    fd f;
    uint8_t *mobs = random_u8(3 * 4 * 10 * 10, 1, 5);
    for (int h = 0; h < 2; h++) {
        CHECK_OK(cr_convnet_spec_named(&s, "minatar-cnn", 4, 10, 10, (cr_convnet_heads)h, 5));
        fd_init(&f, &s, 3, mobs, 10 + (uint64_t)h);
        fd_check(&f, 150, 1e-2, FD_NOISE_SMALL,
                 h ? "minatar-cnn dqn B=3" : "minatar-cnn ppo B=3");
        fd_free(&f);
    }
    custom_spec(&s, CR_CONVNET_PPO);
    float *cobs = floats(2 * 3 * 9 * 7);
    cr_philox_state r;
    cr_philox_seed(&r, 6, 0);
    for (int i = 0; i < 2 * 3 * 9 * 7; i++) cobs[i] = normal(&r);
    fd_init(&f, &s, 2, cobs, 12);
    fd_check(&f, 1000, 1e-3, FD_NOISE_SMALL, "custom (tanh, pad) B=2");
    fd_free(&f);
    uint8_t *nobs = random_u8(4 * 84 * 84, 0, 7);
    CHECK_OK(cr_convnet_spec_named(&s, "nature-cnn", 4, 84, 84, CR_CONVNET_PPO, 6));
    fd_init(&f, &s, 1, nobs, 13);
    fd_check(&f, 20, 1e-2, FD_NOISE_NATURE, "nature-cnn ppo B=1");
    fd_free(&f);
    free(mobs), free(cobs), free(nobs);
}

/* ---- input paths, threads ------------------------------------------------------------------- */

/* out and value of spec s (random params of seed) on obs, B rows; returns B * (A + 1) floats. */
static float *run_forward(const cr_convnet_spec *s, const void *obs, int B, uint64_t seed) {
    cr_convnet n;
    CHECK_OK(cr_convnet_plan(&n, s));
    const int A = s->num_actions;
    float *p = floats(n.num_params), *res = floats((size_t)B * (A + 1));
    cr_philox_state r;
    cr_philox_seed(&r, seed, 1);
    random_params(&n, p, &r);
    cr_convnet_cache c;
    void *mem = cache_alloc(&n, B, &c);
    cr_convnet_forward(&n, p, obs, res, res + (size_t)B * A, &c, B);
    free(p), free(mem);
    return res;
}

/* The uint8 paths are the float net fed x (minatar-cnn) or x / 255.0f (nature-cnn), bitwise. */
static void test_inputs(void) {
    static const struct {
        const char *name;
        int c, hw, scaled;
    } cases[] = {{"minatar-cnn", 6, 10, 0}, {"nature-cnn", 4, 84, 1}};
    const int B = 2;
    for (int k = 0; k < 2; k++) {
        cr_convnet_spec s, f;
        CHECK_OK(cr_convnet_spec_named(&s, cases[k].name, cases[k].c, cases[k].hw, cases[k].hw,
                                       CR_CONVNET_PPO, 4));
        f = s;
        snprintf(f.name, sizeof f.name, "custom");
        f.dtype = CR_CONVNET_F32, f.scale = CR_CONVNET_SCALE_NONE;
        const size_t n = (size_t)B * s.in_c * s.in_h * s.in_w;
        uint8_t *x = random_u8(n, !cases[k].scaled, 20 + (uint64_t)k);
        float *xf = floats(n);
        for (size_t i = 0; i < n; i++) xf[i] = cases[k].scaled ? (float)x[i] / 255.0f : x[i];
        float *a = run_forward(&s, x, B, 30), *b = run_forward(&f, xf, B, 30);
        CHECK_MSG(memcmp(a, b, (size_t)B * 5 * sizeof(float)) == 0, "%s: the u8 input path "
                  "differs from the float net", cases[k].name);
        free(x), free(xf), free(a), free(b);
    }
    printf("inputs: minatar-cnn's u8 (unscaled) and nature-cnn's u8 / 255 equal the float net\n");
}

/* Forward and backward are bitwise the same on 1 and 2 threads. */
static void test_threads(void) {
    cr_convnet_spec s;
    CHECK_OK(cr_convnet_spec_named(&s, "nature-cnn", 4, 84, 84, CR_CONVNET_PPO, 6));
    uint8_t *x = random_u8(2 * 4 * 84 * 84, 0, 40);
    fd a, b;
    fd_init(&a, &s, 2, x, 41);
    fd_init(&b, &s, 2, x, 41);
    cr_cpu_set_threads(1);
    fd_loss(&a);
    cr_convnet_backward(&a.net, a.params, a.grads, a.g_out, a.g_val, &a.c, 2);
    cr_cpu_set_threads(2);
    fd_loss(&b);
    cr_convnet_backward(&b.net, b.params, b.grads, b.g_out, b.g_val, &b.c, 2);
    cr_cpu_set_threads(1);
    CHECK(memcmp(a.out, b.out, 2 * 6 * sizeof(float)) == 0);
    CHECK(memcmp(a.val, b.val, 2 * sizeof(float)) == 0);
    CHECK(memcmp(a.grads, b.grads, a.net.num_params * sizeof(float)) == 0);
    fd_free(&a), fd_free(&b), free(x);
    printf("threads: nature-cnn forward and backward bitwise equal on 1 and 2 threads\n");
}

/* ---- checkpoint ----------------------------------------------------------------------------- */

static cr_st_writer writer; /* about 60 KB: not on the stack */

/* Writes net's params and spec text to path. */
static void write_checkpoint(const cr_convnet *net, const float *params, const char *text,
                             const char *path) {
    cr_st_writer_init(&writer);
    for (int i = 0; i < net->ntensors; i++) {
        const cr_convnet_tensor *t = &net->t[i];
        int64_t shape[4];
        for (int d = 0; d < t->ndim; d++) shape[d] = t->shape[d];
        CHECK_OK(cr_st_add_tensor(&writer, t->name, CR_ST_F32, t->ndim, shape,
                                  params + t->offset));
    }
    CHECK_OK(cr_st_add_meta(&writer, CR_CONVNET_META_KEY, text));
    CHECK_OK(cr_st_write_atomic(&writer, path));
}

/* Rebuilds the net of checkpoint path from its metadata alone and loads its tensors. */
static cudarl_status load_checkpoint(const char *path, cr_convnet *net, float **params) {
    cr_st_file *f;
    CR_TRY(cr_st_open(&f, path));
    char source[600];
    snprintf(source, sizeof source, "checkpoint '%s' metadata \"%s\"", path, CR_CONVNET_META_KEY);
    cr_convnet_spec s;
    cudarl_status st = cr_convnet_spec_parse(&s, cr_st_meta(f, CR_CONVNET_META_KEY), source);
    if (st == CUDARL_OK) st = cr_convnet_plan(net, &s);
    if (st == CUDARL_OK) *params = floats(net->num_params);
    for (int i = 0; st == CUDARL_OK && i < net->ntensors; i++)
        st = cr_st_read_f32(f, net->t[i].name, *params + net->t[i].offset, net->t[i].count);
    cr_st_close(f);
    return st;
}

static void test_checkpoint(void) {
    const char *base = getenv("TMPDIR");
    char dir[256], path[512];
    snprintf(dir, sizeof dir, "%s/cudarl_convnet_XXXXXX", base && *base ? base : "/tmp");
    CHECK_MSG(mkdtemp(dir) != NULL, "cannot create a temporary directory %s", dir);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);

    cr_convnet_spec s;
    CHECK_OK(cr_convnet_spec_named(&s, "minatar-cnn", 4, 10, 10, CR_CONVNET_DQN, 6));
    cr_convnet net, back;
    CHECK_OK(cr_convnet_plan(&net, &s));
    float *params = floats(net.num_params), *loaded = NULL;
    cr_philox_state rng;
    cr_philox_seed(&rng, 50, 0);
    cr_convnet_init_params(&net, params, &rng);
    char text[CR_CONVNET_TEXT_MAX];
    CHECK_OK(cr_convnet_spec_to_text(&s, text, sizeof text));
    write_checkpoint(&net, params, text, path);
    CHECK_OK(load_checkpoint(path, &back, &loaded));
    CHECK(back.num_params == net.num_params &&
          memcmp(params, loaded, net.num_params * sizeof(float)) == 0);
    uint8_t *x = random_u8(4 * 4 * 10 * 10, 1, 51);
    float *a = floats(4 * 6), *b = floats(4 * 6);
    cr_convnet_cache c;
    void *mem = cache_alloc(&net, 4, &c);
    cr_convnet_forward(&net, params, x, a, NULL, &c, 4);
    cr_convnet_forward(&back, loaded, x, b, NULL, &c, 4);
    CHECK(memcmp(a, b, 4 * 6 * sizeof(float)) == 0);
    free(loaded), loaded = NULL;

    /* an altered named spec, a spec that does not describe the file's tensors, a damaged one */
    char *p = strstr(text, "\"out\":128");
    CHECK(p != NULL);
    memcpy(p, "\"out\":129", 9);
    write_checkpoint(&net, params, text, path);
    CHECK(load_checkpoint(path, &back, &loaded) == CUDARL_ERR_FORMAT);
    CHECK(strstr(cudarl_last_error(), "named 'minatar-cnn' but layer 3 is linear 129") != NULL);
    cr_convnet_spec other = s;
    snprintf(other.name, sizeof other.name, "custom");
    other.layers[3].out = 129;
    CHECK_OK(cr_convnet_spec_to_text(&other, text, sizeof text));
    write_checkpoint(&net, params, text, path);
    CHECK(load_checkpoint(path, &back, &loaded) == CUDARL_ERR_MISMATCH);
    CHECK(strstr(cudarl_last_error(), "network.3.weight") != NULL);
    free(loaded), loaded = NULL;
    write_checkpoint(&net, params, "{\"format\":\"cudarl-convnet\",\"version\":1,\"name\"", path);
    CHECK(load_checkpoint(path, &back, &loaded) == CUDARL_ERR_FORMAT);
    CHECK(strstr(cudarl_last_error(), "metadata \"network\": network spec: not valid JSON"));
    CHECK(unlink(path) == 0 && rmdir(dir) == 0);
    free(params), free(x), free(a), free(b), free(mem);
    printf("checkpoint: minatar-cnn dqn rebuilt from its file alone, same outputs; a spec that "
           "does not fit the tensors, or is damaged, refused\n");
}

int main(void) {
    double t0 = cr_time_now();
    cr_cpu_set_threads(1);
    test_layouts();
    test_text();
    test_init();
    test_gradients();
    test_inputs();
    test_threads();
    test_checkpoint();
    printf("test_convnet: all checks passed in %.1f s\n", cr_time_now() - t0);
    return 0;
}
