/* The trainers' optimizer step under a precision (nn/precision.h's policy): where loss scaling
 * enters a training step, in one place for PPO and DQN.
 *
 *   cr_amp_scale(dy)   after the loss, before the backward: the loss's output gradients times
 *                      the scale (fp16; nothing otherwise)
 *   cr_amp_step(...)   after the backward: fp16: unscale the gradients (finding inf/NaN), clip
 *                      their norm, Adam unless an inf/NaN was found, update the scale
 *                      (GradScaler's scale / unscale_ / step / update, ops/loss_scale.h); other
 *                      precisions: clip and Adam as before
 *
 * The scaler's state lives in device memory inside the trainer's metrics block, so each report
 * brings the scale and the skipped-step count to the host with the other metrics, and a
 * checkpoint carries it. fp16 exists on the GPU only (cr_precision_check_training). */
#ifndef CUDARL_AMP_H
#define CUDARL_AMP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cudarl.h"
#include "ops/loss_scale.h"
#include "ops/backend.h"
#include "io/tensorboard.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cr_amp {
    int scaling;                /* fp16: dynamic loss scaling */
    cr_loss_scale_config cfg;   /* torch.amp.GradScaler's defaults */
    cr_loss_scale_state *state; /* (backend memory) the trainer's, in its metrics */
} cr_amp;

/* Sets a for precision p with its state at `state` (backend memory of ctx) and writes the
 * initial state there (scale 2^16, nothing skipped; for precisions without scaling a scale of
 * 1, never read). */
void cr_amp_init(cr_amp *a, cudarl_ctx *ctx, cudarl_precision p, cr_loss_scale_state *state);
/* The two amp columns of a metrics.csv row from the host copy `s` of the state: ",scale,skipped"
 * under scaling (also as TensorBoard's amp/loss_scale and amp/skipped_steps at `step`), else
 * ",," (blank); then the row's newline. */
void cr_amp_log(const cr_amp *a, const cr_loss_scale_state *s, FILE *csv, cr_tb_writer *tb,
                int64_t step);
/* dy (n, backend memory) *= the scale when a scales; nothing otherwise. */
void cr_amp_scale(cudarl_ctx *ctx, const cr_amp *a, float *dy, size_t n);
/* One optimizer step on grads (n): fp16: unscale, then clip_grad_norm to max_norm when clip
 * (the norm added to *grad_norm_sum), Adam unless the gradients held an inf or NaN, and the
 * scale's update; else clip (when clip) and Adam. Adam's arguments as the backend's adam_step. */
void cr_amp_step(cudarl_ctx *ctx, const cr_amp *a, float *params, float *grads, float *m,
                 float *v, size_t n, const float *lr, float b1, float b2, float eps, int64_t *t,
                 int clip, double max_norm, double *grad_norm_sum);

#ifdef __cplusplus
}
#endif
#endif
