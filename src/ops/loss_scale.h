/* Dynamic loss scaling with torch.amp.GradScaler's rules (the fp16 policy, nn/precision.h).
 *
 * One training step under loss scaling:
 *   cr_loss_scale_apply(s, dy)            the loss's gradient times the scale (scaler.scale(loss))
 *   ... backward ...                      gradients of loss * scale
 *   cr_loss_scale_unscale(s, g)           g *= 1/scale in float32; found_inf = any inf/NaN in g
 *   cr_loss_scale_adam_step_if(s, ...)    Adam, or nothing at all when found_inf (scaler.step)
 *   cr_loss_scale_update(s, cfg)          back off, or count a clean step and grow (scaler.update)
 *
 * Semantics, those of torch 2.x (torch/amp/grad_scaler.py and _amp_update_scale_'s CPU and CUDA
 * kernels, which agree):
 * - unscale: inv_scale = (float)(1 / (double)scale) ("scale.double().reciprocal().float()"), then
 *   every element g = g * inv_scale in float32 (left as it is when inv_scale == 1), inf and NaN
 *   included; found_inf is set if any element was not finite before the multiplication.
 * - step: with found_inf, optimizer.step() is not called: weights, Adam's m and v and its step
 *   count stay as they were.
 * - update: found_inf: scale = (float)(scale * backoff_factor) (the product in double, as
 *   float * double is in C++), growth_tracker = 0. Else growth_tracker + 1 == growth_interval:
 *   new = (float)(scale * growth_factor), taken only if finite (the scale never becomes inf),
 *   growth_tracker = 0; else growth_tracker += 1. The scale may back off towards 0 without
 *   bound, as torch's does.
 * cudarl's additions: found_inf is kept in the state (torch keeps it per optimizer), set by
 * unscale (OR-ed over calls, so several gradient buffers may be unscaled before one step) and
 * cleared by update; skipped_steps counts the steps found_inf skipped.
 *
 * The state is plain data that lives in backend memory (host for the CPU, device for the CUDA
 * twin in src/ops/cuda/loss_scale.cu), so the device reads and writes it without the host. */
#ifndef CUDARL_OPS_LOSS_SCALE_H
#define CUDARL_OPS_LOSS_SCALE_H

#include <stddef.h>
#include <stdint.h>

#include "cudarl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* GradScaler's constructor arguments (host memory; passed by value to the device). */
typedef struct cr_loss_scale_config {
    double init_scale;      /* 2^16 */
    double growth_factor;   /* 2.0, > 1 */
    double backoff_factor;  /* 0.5, in (0, 1) */
    int32_t growth_interval; /* 2000 clean steps between growths, >= 1 */
} cr_loss_scale_config;

/* The scaler's state: torch's _scale (float32), _growth_tracker (int32) and found_inf (float32,
 * 1 or 0), and a count of skipped steps. 24 bytes of backend memory. */
typedef struct cr_loss_scale_state {
    float scale;
    float found_inf;        /* set by unscale, cleared by update */
    int32_t growth_tracker; /* clean steps since the scale last changed */
    int32_t pad_;
    int64_t skipped_steps;  /* steps skipped for inf/NaN gradients, ever */
} cr_loss_scale_state;

/* torch.amp.GradScaler's defaults: 2^16, 2.0, 0.5, 2000. */
void cr_loss_scale_config_default(cr_loss_scale_config *cfg);
/* Checks each field; the message names the field, its value and the accepted range. */
cudarl_status cr_loss_scale_config_validate(const cr_loss_scale_config *cfg);
/* scale = (float)init_scale, the tracker, found_inf and the count 0. Host memory. */
void cr_loss_scale_init(cr_loss_scale_state *s, const cr_loss_scale_config *cfg);

/* dy (n) *= scale in float32: the gradient of loss * scale from that of the loss. */
void cr_loss_scale_apply(const cr_loss_scale_state *s, float *dy, size_t n);
/* g (n) *= 1/scale as above; sets s->found_inf when any g was inf or NaN. Returns whether this
 * call found one. */
int cr_loss_scale_unscale(cr_loss_scale_state *s, float *g, size_t n);
/* Adam's step (cr_cpu_adam_step at *t + 1, then *t += 1, as the backend's adam_step) unless
 * s->found_inf, in which case p, m, v and *t are untouched. Returns whether it stepped. */
int cr_loss_scale_adam_step_if(const cr_loss_scale_state *s, float *p, const float *g, float *m,
                               float *v, size_t n, const float *lr, float b1, float b2, float eps,
                               int64_t *t);
/* torch's _amp_update_scale_ from s->found_inf; then found_inf = 0 and skipped_steps counted. */
void cr_loss_scale_update(cr_loss_scale_state *s, const cr_loss_scale_config *cfg);

#ifdef __cplusplus
}
#endif
#endif
