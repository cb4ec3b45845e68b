/* The MLP actor-critic: parameter layout, CleanRL init, forward and backward. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nn/actor_critic.h"

static void add_tensor(cr_ac_layout *l, int *k, const char *net, int layer, int out, int in,
                       double gain) {
    cr_param_tensor *w = &l->t[(*k)++], *b = &l->t[(*k)++];
    snprintf(w->name, sizeof w->name, "%s.%d.weight", net, layer);
    w->ndim = 2, w->shape[0] = out, w->shape[1] = in;
    w->offset = l->num_params, w->count = (size_t)out * in, w->init_gain = gain;
    l->num_params += w->count;
    snprintf(b->name, sizeof b->name, "%s.%d.bias", net, layer);
    b->ndim = 1, b->shape[0] = out, b->shape[1] = 0;
    b->offset = l->num_params, b->count = (size_t)out, b->init_gain = 0;
    l->num_params += b->count;
}

static void layout_mlps(cr_ac_layout *l, int obs_dim, int hidden, int num_actions);

void cr_ac_layout_init(cr_ac_layout *l, int obs_dim, int hidden, int num_actions) {
    memset(l, 0, sizeof *l);
    layout_mlps(l, obs_dim, hidden, num_actions);
}

static void layout_mlps(cr_ac_layout *l, int obs_dim, int hidden, int num_actions) {
    l->obs_dim = obs_dim, l->hidden = hidden, l->num_actions = num_actions;
    int k = 0;
    const double s2 = sqrt(2.0);
    add_tensor(l, &k, "critic", 0, hidden, obs_dim, s2);
    add_tensor(l, &k, "critic", 2, hidden, hidden, s2);
    add_tensor(l, &k, "critic", 4, 1, hidden, 1.0);
    const char *actor = l->gaussian ? "actor_mean" : "actor";
    add_tensor(l, &k, actor, 0, hidden, obs_dim, s2);
    add_tensor(l, &k, actor, 2, hidden, hidden, s2);
    add_tensor(l, &k, actor, 4, num_actions, hidden, 0.01);
    CUDARL_ASSERT(k == CR_AC_NUM_TENSORS);
    l->num_tensors = k;
}

void cr_ac_layout_init_gaussian(cr_ac_layout *l, int obs_dim, int hidden, int action_dim) {
    memset(l, 0, sizeof *l);
    l->gaussian = 1;
    layout_mlps(l, obs_dim, hidden, action_dim);
    cr_param_tensor *t = &l->t[l->num_tensors++];
    snprintf(t->name, sizeof t->name, "actor_logstd");
    t->ndim = 2, t->shape[0] = 1, t->shape[1] = action_dim;
    t->offset = l->num_params, t->count = (size_t)action_dim, t->init_gain = 0;
    l->num_params += t->count;
}

float *cr_ac_logstd(const cr_ac_layout *l, float *buf) {
    return l->gaussian ? buf + l->t[CR_AC_NUM_TENSORS].offset : NULL;
}

static cr_mlp_view view_at(const cr_ac_layout *l, float *buf, int first, int out) {
    cr_mlp_view v;
    for (int j = 0; j < 3; j++) {
        v.w[j] = buf + l->t[first + 2 * j].offset;
        v.b[j] = buf + l->t[first + 2 * j + 1].offset;
    }
    v.dims[0] = l->obs_dim, v.dims[1] = l->hidden, v.dims[2] = l->hidden, v.dims[3] = out;
    v.act = CR_ACT_TANH;
    return v;
}

cr_mlp_view cr_ac_critic(const cr_ac_layout *l, float *buf) { return view_at(l, buf, 0, 1); }
cr_mlp_view cr_ac_actor(const cr_ac_layout *l, float *buf) {
    return view_at(l, buf, 6, l->num_actions);
}

void cr_ac_init_params(const cr_ac_layout *l, float *params, cr_philox_state *rng) {
    for (int i = 0; i < l->num_tensors; i++) {
        const cr_param_tensor *t = &l->t[i];
        if (t->init_gain != 0)
            cr_cpu_orthogonal_init(params + t->offset, t->shape[0], t->shape[1], t->init_gain, rng);
        else
            memset(params + t->offset, 0, t->count * sizeof(float));
    }
}

size_t cr_mlp_cache_floats(int max_rows, int hidden) { return (size_t)4 * max_rows * hidden; }

cr_mlp_cache cr_mlp_cache_carve(float *mem, int max_rows, int hidden) {
    size_t n = (size_t)max_rows * hidden;
    cr_mlp_cache c = {mem, mem + n, mem + 2 * n, mem + 3 * n};
    return c;
}

void cr_mlp_forward(cudarl_ctx *ctx, const cr_mlp_view *m, const float *x, float *out,
                    const cr_mlp_cache *c, int B) {
    const int *d = m->dims;
    if (m->act == CR_ACT_RELU) {
        ctx->ops->linear_relu_forward(ctx, x, m->w[0], m->b[0], c->h1, B, d[0], d[1]);
        ctx->ops->linear_relu_forward(ctx, c->h1, m->w[1], m->b[1], c->h2, B, d[1], d[2]);
    } else {
        ctx->ops->linear_tanh_forward(ctx, x, m->w[0], m->b[0], c->h1, B, d[0], d[1]);
        ctx->ops->linear_tanh_forward(ctx, c->h1, m->w[1], m->b[1], c->h2, B, d[1], d[2]);
    }
    ctx->ops->linear_forward(ctx, c->h2, m->w[2], m->b[2], out, B, d[2], d[3]);
}

/* dx = dy * act'(y) where y = act(z) is the layer's output. */
static void act_backward(cudarl_ctx *ctx, cr_activation act, const float *y, float *d,
                         size_t n) {
    if (act == CR_ACT_RELU) ctx->ops->relu_backward(ctx, y, d, d, n);
    else ctx->ops->tanh_backward(ctx, y, d, d, n);
}

void cr_mlp_backward(cudarl_ctx *ctx, const cr_mlp_view *m, const cr_mlp_view *g, const float *x,
                     const float *dout, const cr_mlp_cache *c, int B) {
    const int *d = m->dims;
    ctx->ops->linear_backward(ctx, dout, c->h2, m->w[2], c->d2, g->w[2], g->b[2], B, d[2], d[3]);
    act_backward(ctx, m->act, c->h2, c->d2, (size_t)B * d[2]);
    ctx->ops->linear_backward(ctx, c->d2, c->h1, m->w[1], c->d1, g->w[1], g->b[1], B, d[1], d[2]);
    act_backward(ctx, m->act, c->h1, c->d1, (size_t)B * d[1]);
    ctx->ops->linear_backward(ctx, c->d1, x, m->w[0], NULL, g->w[0], g->b[0], B, d[0], d[1]);
}
