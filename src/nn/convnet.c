/* Convolutional policies on the CPU: plan (checks and state_dict layout), init, forward and
 * backward. The spec's names and text form are in convnet_text.c.
 *
 * The net runs as stages: each conv or linear of the trunk with the one activation that may
 * follow it (a flatten between them changes nothing: an NCHW tensor already is its flattened
 * matrix, ops_conv.h). A conv with its ReLU is one fused op; a linear with its ReLU or tanh is
 * cr_cpu_linear_relu_forward / cr_cpu_linear_tanh_forward. Each stage keeps its output (after the
 * activation) in the cache: the next stage's input, and the select of the activation's
 * backward. The backward walks the stages in reverse with two gradient buffers in turn. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nn/convnet.h"
#include "ops/cpu/ops_cpu.h"
#include "ops/cpu/ops_dqn.h"

const char *cr_convnet_op_name(cr_convnet_op op) {
    static const char *const names[] = {"conv", "relu", "tanh", "flatten", "linear", "identity"};
    return (unsigned)op < sizeof names / sizeof names[0] ? names[op] : "?";
}

/* ---- plan ----------------------------------------------------------------------------------- */

static int add_tensor(cr_convnet *net, const char *name, int ndim, const int *shape, int fan_in,
                      double gain) {
    CUDARL_ASSERT(net->ntensors < CR_CONVNET_MAX_TENSORS);
    cr_convnet_tensor *t = &net->t[net->ntensors];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ndim = ndim;
    t->count = 1;
    for (int d = 0; d < ndim; d++) t->shape[d] = shape[d], t->count *= (size_t)shape[d];
    t->offset = net->num_params;
    t->fan_in = fan_in;
    t->gain = gain;
    net->num_params += t->count;
    return net->ntensors++;
}

/* Adds the weight and bias of `prefix` ("network.3", "actor") to st: wshape (ndim) and out. */
static void add_layer_tensors(cr_convnet *net, cr_convnet_stage *st, const char *prefix,
                              int ndim, const int *wshape, int fan_in, double gain) {
    char name[32];
    snprintf(name, sizeof name, "%s.weight", prefix);
    st->weight = add_tensor(net, name, ndim, wshape, fan_in, gain);
    snprintf(name, sizeof name, "%s.bias", prefix);
    st->bias = add_tensor(net, name, 1, wshape, fan_in, 0.0);
}

static cudarl_status bad_layer(int i, cr_convnet_op op, const char *what) {
    return cr_fail(CUDARL_ERR_INVALID_ARG, "network spec: layer %d (%s): %s", i,
                   cr_convnet_op_name(op), what);
}

static int in_range(int v, int lo) { return v >= lo && v <= CR_CONVNET_DIM_MAX; }

/* Appends stage `st` for conv layer i on input (c, h, w), which becomes (K, P, Q). */
static cudarl_status plan_conv(cr_convnet *net, int i, const cr_convnet_layer *l, int *c, int *h,
                               int *w, double gain) {
    if (!in_range(l->out, 1) || !in_range(l->kernel[0], 1) || !in_range(l->kernel[1], 1) ||
        !in_range(l->stride, 1) || !in_range(l->pad, 0))
        return bad_layer(i, l->op, "out, kernel and stride must be 1 to 65536, pad 0 to 65536");
    cr_convnet_stage *st = &net->stage[net->nstages];
    st->op = CR_CONVNET_CONV, st->act = CR_CONVNET_IDENTITY;
    st->conv = (cr_conv2d_shape){.N = 1, .C = *c, .H = *h, .W = *w, .K = l->out,
                                 .R = l->kernel[0], .S = l->kernel[1], .stride = l->stride,
                                 .pad = l->pad};
    if (cr_conv2d_shape_check(&st->conv) != CUDARL_OK) {
        char why[256];
        snprintf(why, sizeof why, "%s", cudarl_last_error());
        return bad_layer(i, l->op, why);
    }
    const cr_conv2d_shape *s = &st->conv;
    st->in = s->C * s->H * s->W, st->out = s->K * s->P * s->Q;
    char prefix[24];
    snprintf(prefix, sizeof prefix, "network.%d", i);
    const int fan_in = s->C * s->R * s->S, shape[4] = {s->K, s->C, s->R, s->S};
    add_layer_tensors(net, st, prefix, 4, shape, fan_in, gain);
    size_t scratch = cr_cpu_conv2d_scratch_bytes(s);
    if (scratch > net->conv_scratch) net->conv_scratch = scratch;
    *c = s->K, *h = s->P, *w = s->Q;
    net->nstages++;
    return CUDARL_OK;
}

/* Appends a linear stage (in -> out) named `prefix`. */
static cudarl_status plan_linear(cr_convnet *net, int i, const char *prefix, int in, int out,
                                 double gain) {
    if (!in_range(out, 1)) return bad_layer(i, CR_CONVNET_LINEAR, "out must be 1 to 65536");
    if ((int64_t)in * out > INT_MAX)
        return bad_layer(i, CR_CONVNET_LINEAR, "its weight has more than 2^31 elements");
    cr_convnet_stage *st = &net->stage[net->nstages++];
    st->op = CR_CONVNET_LINEAR, st->act = CR_CONVNET_IDENTITY;
    st->in = in, st->out = out;
    const int shape[2] = {out, in};
    add_layer_tensors(net, st, prefix, 2, shape, in, gain);
    return CUDARL_OK;
}

static cudarl_status check_input(const cr_convnet_spec *s) {
    if (!in_range(s->in_c, 1) || !in_range(s->in_h, 1) || !in_range(s->in_w, 1) ||
        (int64_t)s->in_c * s->in_h * s->in_w > INT_MAX)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "network spec: input shape (%d, %d, %d) is out of "
                       "range: each of C, H, W must be 1 to 65536 and C H W below 2^31",
                       s->in_c, s->in_h, s->in_w);
    if ((unsigned)s->dtype > CR_CONVNET_F32 || (unsigned)s->scale > CR_CONVNET_SCALE_255 ||
        (unsigned)s->heads > CR_CONVNET_DQN)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "network spec: unknown dtype, scale or heads value");
    if (s->scale == CR_CONVNET_SCALE_255 && s->dtype != CR_CONVNET_U8)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "network spec: scale 1/255 is for uint8 pixels; "
                       "a float input takes scale none");
    if (s->num_layers < 0 || s->num_layers > CR_CONVNET_MAX_LAYERS)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "network spec: %d layers; at most %d", s->num_layers,
                       CR_CONVNET_MAX_LAYERS);
    if (!in_range(s->num_actions, 1))
        return cr_fail(CUDARL_ERR_INVALID_ARG, "network spec: %d actions; must be 1 to 65536",
                       s->num_actions);
    return CUDARL_OK;
}

/* The trunk: stages, tensors network.<i>.*, and net->features. */
static cudarl_status plan_trunk(cr_convnet *net) {
    const cr_convnet_spec *s = &net->spec;
    const double gain = s->heads == CR_CONVNET_PPO ? sqrt(2.0) : 0.0;
    int c = s->in_c, h = s->in_h, w = s->in_w, flat = 0;
    int open = -1; /* the stage an activation may still attach to */
    for (int i = 0; i < s->num_layers; i++) {
        const cr_convnet_layer *l = &s->layers[i];
        char prefix[24];
        switch (l->op) {
        case CR_CONVNET_CONV:
            if (flat) return bad_layer(i, l->op, "comes after flatten; a convolution needs a "
                                       "(C, H, W) input");
            CR_TRY(plan_conv(net, i, l, &c, &h, &w, gain));
            open = net->nstages - 1;
            break;
        case CR_CONVNET_LINEAR:
            if (!flat) return bad_layer(i, l->op, "needs a flatten before it (a linear layer "
                                        "reads a flat row)");
            snprintf(prefix, sizeof prefix, "network.%d", i);
            CR_TRY(plan_linear(net, i, prefix, c, l->out, gain));
            c = l->out;
            open = net->nstages - 1;
            break;
        case CR_CONVNET_RELU:
        case CR_CONVNET_TANH:
            if (open < 0) return bad_layer(i, l->op, "an activation must follow a conv or linear "
                                           "layer (a flatten may sit between), one per layer");
            net->stage[open].act = l->op;
            open = -1;
            break;
        case CR_CONVNET_FLATTEN:
            if (flat) return bad_layer(i, l->op, "the input is flat already");
            c = c * h * w, h = w = 1, flat = 1;
            break;
        default:
            return cr_fail(CUDARL_ERR_INVALID_ARG, "network spec: layer %d has unknown type %d", i,
                           (int)l->op);
        }
    }
    if (!flat)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "network spec: the trunk must end flat: add a "
                       "flatten layer (the heads are linear layers)");
    net->features = c;
    net->ntrunk = net->nstages;
    return CUDARL_OK;
}

static cudarl_status plan_heads(cr_convnet *net) {
    const cr_convnet_spec *s = &net->spec;
    const int F = net->features, A = s->num_actions;
    net->actor_w = net->actor_b = net->critic_w = net->critic_b = -1;
    if (s->heads == CR_CONVNET_DQN) {
        char prefix[24];
        snprintf(prefix, sizeof prefix, "network.%d", s->num_layers);
        return plan_linear(net, s->num_layers, prefix, F, A, 0.0);
    }
    if ((int64_t)F * A > INT_MAX)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "network spec: the actor head (%d x %d) is too "
                       "large", A, F);
    const int a_shape[2] = {A, F}, c_shape[2] = {1, F};
    net->actor_w = add_tensor(net, "actor.weight", 2, a_shape, F, 0.01);
    net->actor_b = add_tensor(net, "actor.bias", 1, a_shape, F, 0.0);
    net->critic_w = add_tensor(net, "critic.weight", 2, c_shape, F, 1.0);
    net->critic_b = add_tensor(net, "critic.bias", 1, c_shape, F, 0.0);
    return CUDARL_OK;
}

cudarl_status cr_convnet_plan(cr_convnet *net, const cr_convnet_spec *spec) {
    memset(net, 0, sizeof *net);
    net->spec = *spec;
    net->spec.name[sizeof net->spec.name - 1] = '\0';
    CR_TRY(check_input(&net->spec));
    CR_TRY(cr_convnet_check_name(&net->spec));
    CR_TRY(plan_trunk(net));
    CR_TRY(plan_heads(net));
    net->in_floats = spec->in_c * spec->in_h * spec->in_w;
    net->widest = net->features;
    for (int i = 0; i < net->ntrunk; i++)
        if (net->stage[i].out > net->widest) net->widest = net->stage[i].out;
    return CUDARL_OK;
}

int cr_convnet_find(const cr_convnet *net, const char *name) {
    for (int i = 0; i < net->ntensors; i++)
        if (!strcmp(net->t[i].name, name)) return i;
    return -1;
}

/* Multiply-adds of one row through stage st. */
static double stage_macs(const cr_convnet_stage *st) {
    if (st->op != CR_CONVNET_CONV) return (double)st->in * st->out;
    const cr_conv2d_shape *s = &st->conv;
    return (double)s->K * s->P * s->Q * ((double)s->C * s->R * s->S);
}

void cr_convnet_flops(const cr_convnet *net, double *fwd, double *bwd) {
    double macs = 0, first = 0; /* all of them; the first product's, which needs no dx */
    for (int i = 0; i < net->nstages; i++) { /* the trunk's stages, and dqn's Q head */
        const double m = stage_macs(&net->stage[i]);
        if (i == 0) first = m;
        macs += m;
    }
    if (net->spec.heads == CR_CONVNET_PPO) {
        const double heads = (double)net->features * (net->spec.num_actions + 1);
        if (net->nstages == 0) first = heads; /* the heads read the input itself */
        macs += heads;
    }
    *fwd = 2 * macs;
    *bwd = 2 * (2 * macs - first);
}

/* ---- cache ---------------------------------------------------------------------------------- */

static size_t lines(size_t bytes) { return (bytes + 63) / 64 * 64; }

/* mem + *at (NULL while only sizing), then *at moves past `bytes` rounded up to 64-byte lines. */
static void *take(unsigned char *mem, size_t *at, size_t bytes) {
    void *p = mem ? mem + *at : NULL;
    *at += lines(bytes);
    return p;
}

/* Points *c into mem (or, with mem NULL, only sizes the cache); returns its bytes. */
static size_t carve(const cr_convnet *net, unsigned char *mem, int max_rows, cr_convnet_cache *c) {
    const size_t B = (size_t)max_rows, F = sizeof(float);
    size_t at = 0;
    memset(c, 0, sizeof *c);
    c->max_rows = max_rows;
    c->x = take(mem, &at, B * (size_t)net->in_floats * F);
    for (int i = 0; i < net->ntrunk; i++)
        c->act[i] = take(mem, &at, B * (size_t)net->stage[i].out * F);
    for (int k = 0; k < 2; k++) c->d[k] = take(mem, &at, B * (size_t)net->widest * F);
    c->scratch = take(mem, &at, net->conv_scratch);
    return at;
}

size_t cr_convnet_cache_bytes(const cr_convnet *net, int max_rows) {
    CUDARL_ASSERT(max_rows >= 1);
    cr_convnet_cache sizing;
    return carve(net, NULL, max_rows, &sizing);
}

void cr_convnet_cache_carve(const cr_convnet *net, void *mem, int max_rows, cr_convnet_cache *c) {
    CUDARL_ASSERT(max_rows >= 1 && mem != NULL && ((uintptr_t)mem & 63) == 0);
    carve(net, mem, max_rows, c);
}

/* ---- init ----------------------------------------------------------------------------------- */

void cr_convnet_init_params(const cr_convnet *net, float *params, cr_philox_state *rng) {
    const int dqn = net->spec.heads == CR_CONVNET_DQN;
    for (int i = 0; i < net->ntensors; i++) {
        const cr_convnet_tensor *t = &net->t[i];
        float *p = params + t->offset;
        if (dqn) {
            const double bound = 1.0 / sqrt((double)t->fan_in);
            for (size_t e = 0; e < t->count; e++)
                p[e] = (float)((2.0 * cr_philox_uniform_f64(rng) - 1.0) * bound);
        } else if (t->ndim > 1) {
            cr_cpu_orthogonal_init(p, t->shape[0], t->fan_in, t->gain, rng);
        } else {
            memset(p, 0, t->count * sizeof *p);
        }
    }
}

/* ---- forward -------------------------------------------------------------------------------- */

/* x (n) = obs (n) as float, scaled as the spec says. */
/* x (B, n) from B rows of n elements, `stride` elements apart, as the spec converts them. */
static void input_to_float(const cr_convnet_spec *s, const void *obs, size_t stride, float *x,
                           size_t n, int B) {
    for (int b = 0; b < B; b++, x += n) {
        if (s->dtype == CR_CONVNET_F32) {
            memcpy(x, (const float *)obs + (size_t)b * stride, n * sizeof *x);
            continue;
        }
        const uint8_t *u = (const uint8_t *)obs + (size_t)b * stride;
        if (s->scale == CR_CONVNET_SCALE_255) cr_cpu_scale_u8(u, x, n);
        else for (size_t i = 0; i < n; i++) x[i] = (float)u[i];
    }
}

/* y (B, out) = stage st of x (B, in), its activation included. */
static void stage_forward(const cr_convnet_stage *st, const float *params,
                          const cr_convnet_tensor *t, const float *x, float *y, void *scratch,
                          int B) {
    const float *w = params + t[st->weight].offset, *b = params + t[st->bias].offset;
    if (st->op == CR_CONVNET_CONV) {
        cr_conv2d_shape s = st->conv;
        s.N = B;
        cr_cpu_conv2d_forward(&s, x, w, b, y, st->act == CR_CONVNET_RELU, scratch);
        if (st->act == CR_CONVNET_TANH) cr_cpu_tanh_forward(y, y, (size_t)B * st->out);
    } else if (st->act == CR_CONVNET_RELU) {
        cr_cpu_linear_relu_forward(x, w, b, y, B, st->in, st->out);
    } else if (st->act == CR_CONVNET_TANH) {
        cr_cpu_linear_tanh_forward(x, w, b, y, B, st->in, st->out);
    } else {
        cr_cpu_linear_forward(x, w, b, y, B, st->in, st->out);
    }
}

void cr_convnet_forward(const cr_convnet *net, const float *params, const void *obs, float *out,
                        float *value, const cr_convnet_cache *c, int B) {
    cr_convnet_forward_rows(net, params, obs, (size_t)net->in_floats, out, value, c, B);
}

void cr_convnet_forward_rows(const cr_convnet *net, const float *params, const void *obs,
                             size_t obs_stride, float *out, float *value,
                             const cr_convnet_cache *c, int B) {
    const int ppo = net->spec.heads == CR_CONVNET_PPO;
    CUDARL_ASSERT(B >= 1 && B <= c->max_rows && (value != NULL) == ppo &&
                  obs_stride >= (size_t)net->in_floats);
    input_to_float(&net->spec, obs, obs_stride, c->x, (size_t)net->in_floats, B);
    const float *h = c->x;
    for (int i = 0; i < net->ntrunk; i++) {
        stage_forward(&net->stage[i], params, net->t, h, c->act[i], c->scratch, B);
        h = c->act[i];
    }
    if (!ppo) {
        stage_forward(&net->stage[net->ntrunk], params, net->t, h, out, c->scratch, B);
        return;
    }
    const cr_convnet_tensor *t = net->t;
    const int F = net->features, A = net->spec.num_actions;
    cr_cpu_linear_forward(h, params + t[net->actor_w].offset, params + t[net->actor_b].offset, out,
                          B, F, A);
    cr_cpu_linear_forward(h, params + t[net->critic_w].offset, params + t[net->critic_b].offset,
                          value, B, F, 1);
}

/* ---- backward ------------------------------------------------------------------------------- */

/* Gradients of stage st given dy (B, out) w.r.t. its output y (after the activation; dy may be
 * overwritten), x (B, in) its input; dx (B, in) unless NULL. */
static void stage_backward(const cr_convnet_stage *st, const float *params, float *grads,
                           const cr_convnet_tensor *t, const float *x, const float *y, float *dy,
                           float *dx, void *scratch, int B) {
    const float *w = params + t[st->weight].offset;
    float *dw = grads + t[st->weight].offset, *db = grads + t[st->bias].offset;
    const size_t n = (size_t)B * st->out;
    if (st->act == CR_CONVNET_TANH) cr_cpu_tanh_backward(y, dy, dy, n);
    if (st->op == CR_CONVNET_CONV) {
        cr_conv2d_shape s = st->conv;
        s.N = B;
        cr_cpu_conv2d_backward(&s, x, w, st->act == CR_CONVNET_RELU ? y : NULL, dy, dx, dw, db,
                               scratch);
        return;
    }
    if (st->act == CR_CONVNET_RELU) cr_cpu_relu_backward(y, dy, dy, n);
    cr_cpu_linear_backward(dy, x, w, dx, dw, db, B, st->in, st->out);
}

/* d[0] (B, F) = d loss / d features from the heads, their gradients written. dx NULL (and d[0]
 * untouched) when the trunk has no stage: the features are then the input. */
static void heads_backward(const cr_convnet *net, const float *params, float *grads,
                           const float *dout, const float *dvalue, const cr_convnet_cache *c,
                           int B) {
    const cr_convnet_tensor *t = net->t;
    const float *h = net->ntrunk ? c->act[net->ntrunk - 1] : c->x;
    float *dh = net->ntrunk ? c->d[0] : NULL;
    const int F = net->features, A = net->spec.num_actions;
    if (net->spec.heads == CR_CONVNET_DQN) {
        const cr_convnet_stage *q = &net->stage[net->ntrunk];
        cr_cpu_linear_backward(dout, h, params + t[q->weight].offset, dh,
                               grads + t[q->weight].offset, grads + t[q->bias].offset, B, F, A);
        return;
    }
    float *dh2 = net->ntrunk ? c->d[1] : NULL;
    cr_cpu_linear_backward(dout, h, params + t[net->actor_w].offset, dh,
                           grads + t[net->actor_w].offset, grads + t[net->actor_b].offset, B, F,
                           A);
    cr_cpu_linear_backward(dvalue, h, params + t[net->critic_w].offset, dh2,
                           grads + t[net->critic_w].offset, grads + t[net->critic_b].offset, B,
                           F, 1);
    if (dh)
        for (size_t i = 0; i < (size_t)B * F; i++) dh[i] += dh2[i];
}

void cr_convnet_backward(const cr_convnet *net, const float *params, float *grads,
                         const float *dout, const float *dvalue, const cr_convnet_cache *c, int B) {
    const int ppo = net->spec.heads == CR_CONVNET_PPO;
    CUDARL_ASSERT(B >= 1 && B <= c->max_rows && (dvalue != NULL) == ppo);
    heads_backward(net, params, grads, dout, dvalue, c, B);
    int cur = 0; /* c->d[cur] holds d loss / d (output of stage i) */
    for (int i = net->ntrunk - 1; i >= 0; i--) {
        const float *x = i ? c->act[i - 1] : c->x;
        float *dx = i ? c->d[1 - cur] : NULL;
        stage_backward(&net->stage[i], params, grads, net->t, x, c->act[i], c->d[cur], dx,
                       c->scratch, B);
        cur = 1 - cur;
    }
}
