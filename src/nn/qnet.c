/* CleanRL's DQN Q-network: layout, PyTorch's default init, views. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nn/qnet.h"

void cr_qnet_layout_init(cr_qnet_layout *l, int obs_dim, int h1, int h2, int num_actions) {
    memset(l, 0, sizeof *l);
    l->obs_dim = obs_dim, l->h1 = h1, l->h2 = h2, l->num_actions = num_actions;
    const int dims[4] = {obs_dim, h1, h2, num_actions};
    for (int k = 0; k < 3; k++) {
        cr_param_tensor *w = &l->t[2 * k], *b = &l->t[2 * k + 1];
        snprintf(w->name, sizeof w->name, "network.%d.weight", 2 * k);
        w->ndim = 2, w->shape[0] = dims[k + 1], w->shape[1] = dims[k];
        w->offset = l->num_params, w->count = (size_t)dims[k + 1] * dims[k];
        l->num_params += w->count;
        snprintf(b->name, sizeof b->name, "network.%d.bias", 2 * k);
        b->ndim = 1, b->shape[0] = dims[k + 1];
        b->offset = l->num_params, b->count = (size_t)dims[k + 1];
        l->num_params += b->count;
    }
}

cr_mlp_view cr_qnet_view(const cr_qnet_layout *l, float *buf) {
    cr_mlp_view v;
    for (int k = 0; k < 3; k++) {
        v.w[k] = buf + l->t[2 * k].offset;
        v.b[k] = buf + l->t[2 * k + 1].offset;
    }
    v.dims[0] = l->obs_dim, v.dims[1] = l->h1, v.dims[2] = l->h2, v.dims[3] = l->num_actions;
    v.act = CR_ACT_RELU;
    return v;
}

void cr_qnet_init_params(const cr_qnet_layout *l, float *params, cr_philox_state *rng) {
    for (int k = 0; k < 3; k++) {
        const cr_param_tensor *w = &l->t[2 * k], *b = &l->t[2 * k + 1];
        double bound = 1.0 / sqrt((double)w->shape[1]);
        for (size_t i = 0; i < w->count; i++)
            params[w->offset + i] = (float)((2.0 * cr_philox_uniform_f64(rng) - 1.0) * bound);
        for (size_t i = 0; i < b->count; i++)
            params[b->offset + i] = (float)((2.0 * cr_philox_uniform_f64(rng) - 1.0) * bound);
    }
}

int cr_qnet_widest(const cr_qnet_layout *l) { return l->h1 > l->h2 ? l->h1 : l->h2; }
