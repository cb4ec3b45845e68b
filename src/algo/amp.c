/* cr_amp (amp.h): the trainers' step under loss scaling. */
#include "algo/amp.h"

#include "nn/precision.h"

void cr_amp_init(cr_amp *a, cudarl_ctx *ctx, cudarl_precision p, cr_loss_scale_state *state) {
    a->scaling = cr_precision_policy_of(p)->loss_scaling;
    a->state = state;
    cr_loss_scale_config_default(&a->cfg);
    cr_loss_scale_state s;
    cr_loss_scale_init(&s, &a->cfg);
    if (!a->scaling) s.scale = 1.0f;
    ctx->ops->copy_from_host(ctx, state, &s, sizeof s);
}

void cr_amp_log(const cr_amp *a, const cr_loss_scale_state *s, FILE *csv, cr_tb_writer *tb,
                int64_t step) {
    if (!a->scaling) {
        fputs(",,\n", csv);
        return;
    }
    fprintf(csv, ",%.9g,%lld\n", (double)s->scale, (long long)s->skipped_steps);
    static const char *const tags[2] = {"amp/loss_scale", "amp/skipped_steps"};
    const double v[2] = {s->scale, (double)s->skipped_steps};
    cr_tb_scalars(tb, step, tags, v, 2);
}

void cr_amp_scale(cudarl_ctx *ctx, const cr_amp *a, float *dy, size_t n) {
    if (a->scaling) ctx->ops->loss_scale_apply(ctx, a->state, dy, n);
}

void cr_amp_step(cudarl_ctx *ctx, const cr_amp *a, float *params, float *grads, float *m,
                 float *v, size_t n, const float *lr, float b1, float b2, float eps, int64_t *t,
                 int clip, double max_norm, double *grad_norm_sum) {
    const cr_backend *o = ctx->ops;
    if (!a->scaling) {
        if (clip) o->clip_grad_norm(ctx, grads, n, max_norm, grad_norm_sum);
        o->adam_step(ctx, params, grads, m, v, n, lr, b1, b2, eps, t);
        return;
    }
    o->loss_scale_unscale(ctx, a->state, grads, n);
    /* an overflowed step's norm is inf or NaN, and so are its clipped gradients: Adam skips */
    if (clip) o->clip_grad_norm(ctx, grads, n, max_norm, grad_norm_sum);
    o->adam_step_if(ctx, a->state, params, grads, m, v, n, lr, b1, b2, eps, t);
    o->loss_scale_update(ctx, a->state, &a->cfg);
}
