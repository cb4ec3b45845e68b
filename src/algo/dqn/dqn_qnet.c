/* DQN's Q-network on the context (dqn_internal.h): dqn.py's MLP (cr_qnet, every backend) or a
 * convolutional network of dqn_atari.py's shape (cr_cnn: its CUDA twin on a CUDA context), on one
 * flat parameter buffer either way. */
#include "algo/dqn/dqn_internal.h"

/* Lays out the Q-network cfg.policy names (validated: the env's observations fit it). */
cudarl_status cr_dqn_qnet_layout(cr_dqn *d) {
    const cudarl_dqn_config *c = &d->cfg;
    cr_dqn_qnet *q = &d->net;
    q->conv = strcmp(c->policy, "mlp") != 0;
    if (!q->conv) {
        cr_qnet_layout_init(&q->mlp, d->D, c->hidden1, c->hidden2, d->A);
        q->num_params = q->mlp.num_params;
        return CUDARL_OK;
    }
    const cudarl_env_def *def = d->env_info->def;
    cr_convnet_spec spec;
    CR_TRY(cr_convnet_spec_named(&spec, c->policy, def->obs_shape[0], def->obs_shape[1],
                                 def->obs_shape[2], CR_CONVNET_DQN, d->A));
    CR_TRY(cr_convnet_plan(&q->cnn, &spec));
    q->num_params = q->cnn.num_params;
    return CUDARL_OK;
}

/* Makes the conv net laid out by qnet_layout for the act and learner batch sizes d->N and d->B
 * (data parallel: the rank's, so it runs after cr_dqn_dist_init); nothing for the MLP. */
cudarl_status cr_dqn_qnet_make(cr_dqn *d) {
    cr_dqn_qnet *q = &d->net;
    if (!q->conv) return CUDARL_OK;
    const int batches[2] = {d->N, d->B};
    CR_TRY(cr_cnn_init(&q->dev, d->ctx, &q->cnn, batches, 2, d->cfg.precision));
    if (cr_cnn_on_gpu(&q->dev)) {
        CR_INFO("DQN: %s on the GPU, conv engine %s", d->cfg.policy, cr_cnn_engine_name(&q->dev));
        CR_DEBUG("%s", cr_cnn_describe(&q->dev));
    }
    return CUDARL_OK;
}

/* Bytes of one forward's cache for d->rows rows. */
size_t cr_dqn_qnet_cache_bytes(const cr_dqn *d) {
    if (d->net.conv) return cr_cnn_cache_bytes(&d->net.dev, d->rows);
    return cr_mlp_cache_floats(d->rows, cr_qnet_widest(&d->net.mlp)) * 4;
}

/* Bytes of the conv net's workspace (0 for the MLP and on the CPU). */
size_t cr_dqn_qnet_workspace_bytes(const cr_dqn *d) {
    return d->net.conv ? cr_cnn_workspace_bytes(&d->net.dev) : 0;
}

cr_dqn_cache cr_dqn_qnet_cache_carve(const cr_dqn *d, void *mem) {
    cr_dqn_cache c;
    memset(&c, 0, sizeof c);
    if (d->net.conv) cr_cnn_cache_carve(&d->net.dev, mem, d->rows, &c.cnn);
    else c.mlp = cr_mlp_cache_carve(mem, d->rows, cr_qnet_widest(&d->net.mlp));
    return c;
}

/* The observations x (rows, D) of the env's dtype as the network reads them: the MLP floats (x
 * itself, or its cast into f), a convolutional network x as it is. */
const void *cr_dqn_qnet_input(cr_dqn *d, const void *x, float *f, int rows) {
    if (!d->cast) return x;
    d->o->u8_to_float(d->ctx, x, f, (size_t)rows * (size_t)d->D);
    return f;
}

/* out (rows, A) = Q(params; x), x from qnet_input with rows `stride` elements apart (D, or a
 * window batch's (K + 1) D / K: conv nets only); fills the cache c. */
void cr_dqn_qnet_forward_rows(cr_dqn *d, float *params, const void *x, size_t stride,
                              float *out, const cr_dqn_cache *c, int rows) {
    if (d->net.conv) {
        cr_cnn_forward_rows(d->ctx, &d->net.dev, params, x, stride, out, NULL, &c->cnn, rows);
        return;
    }
    CUDARL_ASSERT(stride == (size_t)d->D);
    cr_mlp_view v = cr_qnet_view(&d->net.mlp, params);
    cr_mlp_forward(d->ctx, &v, x, out, &c->mlp, rows);
}

/* qnet_forward_rows of rows packed D elements apart. */
void cr_dqn_qnet_forward(cr_dqn *d, float *params, const void *x, float *out,
                         const cr_dqn_cache *c, int rows) {
    cr_dqn_qnet_forward_rows(d, params, x, (size_t)d->D, out, c, rows);
}

/* grads (P) = d loss / d params from dout (rows, A), with the cache of the forward on x. */
void cr_dqn_qnet_backward(cr_dqn *d, float *params, float *grads, const void *x,
                          const float *dout, const cr_dqn_cache *c, int rows) {
    if (d->net.conv) {
        cr_cnn_backward(d->ctx, &d->net.dev, params, grads, dout, NULL, &c->cnn, rows);
        return;
    }
    cr_mlp_view v = cr_qnet_view(&d->net.mlp, params), g = cr_qnet_view(&d->net.mlp, grads);
    cr_mlp_backward(d->ctx, &v, &g, x, dout, &c->mlp, rows);
}

/* The CUDA conv net's first call of each batch size, outside any graph capture (cuDNN loads
 * its kernels on a plan's first call): forwards of N and B rows and a backward of B on the
 * zeroed minibatch buffers, into the double-DQN cache (unread until a forward fills it). The
 * gradients it writes are overwritten by every train step before Adam reads them. */
void cr_dqn_qnet_warm_up(cr_dqn *d) {
    if (!cr_cnn_on_gpu(&d->net.dev)) return;
    cr_dqn_qnet_forward(d, d->online, d->obs, d->q, &d->cache_o, d->N);
    cr_dqn_qnet_forward(d, d->online, d->b_obs, d->b_q, &d->cache_o, d->B);
    cr_dqn_qnet_backward(d, d->online, d->grads, d->b_obs, d->b_dq, &d->cache_o, d->B);
    d->o->sync(d->ctx);
}

/* PyTorch's default init of every layer (CleanRL's QNetwork calls no init), drawn from rng in
 * state_dict order. params (P, host). */
void cr_dqn_qnet_init_params(const cr_dqn *d, float *params, cr_philox_state *rng) {
    if (d->net.conv) cr_convnet_init_params(&d->net.cnn, params, rng);
    else cr_qnet_init_params(&d->net.mlp, params, rng);
}

/* The Q-network's tensors in state_dict order into t (CR_CONVNET_MAX_TENSORS); their count. */
int cr_dqn_qnet_tensors(const cr_dqn *d, cr_dqn_tensor *t) {
    const cr_dqn_qnet *q = &d->net;
    int n = q->conv ? q->cnn.ntensors : CR_QNET_NUM_TENSORS;
    for (int i = 0; i < n; i++) {
        memset(&t[i], 0, sizeof t[i]);
        if (q->conv) {
            const cr_convnet_tensor *c = &q->cnn.t[i];
            t[i].name = c->name, t[i].ndim = c->ndim, t[i].offset = c->offset;
            for (int k = 0; k < c->ndim; k++) t[i].shape[k] = c->shape[k];
        } else {
            const cr_param_tensor *p = &q->mlp.t[i];
            t[i].name = p->name, t[i].ndim = p->ndim, t[i].offset = p->offset;
            for (int k = 0; k < p->ndim; k++) t[i].shape[k] = p->shape[k];
        }
    }
    return n;
}
