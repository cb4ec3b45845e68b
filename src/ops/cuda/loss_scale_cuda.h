/* Dynamic loss scaling on the device: the CUDA twin of ops/cpu/loss_scale.c, with the same semantics
 * (ops/loss_scale.h: torch.amp.GradScaler's) and results bit for bit. Includable from C and C++;
 * compiled only with the CUDA toolkit.
 *
 * The state (cr_loss_scale_state) lives in device memory and never comes to the host: unscale
 * sets its found_inf, adam_step_if reads it, update consumes it, each a launch on the context's
 * stream. Nothing allocates or waits, so a whole step (apply, backward, unscale, adam_step_if,
 * update) can be captured into a CUDA graph and replayed; a step that overflows is skipped by
 * the device itself, with no host round trip. */
#ifndef CUDARL_LOSS_SCALE_CUDA_H
#define CUDARL_LOSS_SCALE_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "cudarl.h"
#include "ops/loss_scale.h"

#ifdef __cplusplus
extern "C" {
#endif

/* dy (n, device) *= s->scale in float32 (s in device memory): cr_loss_scale_apply. */
void cr_cuda_loss_scale_apply(cudarl_ctx *ctx, const cr_loss_scale_state *s, float *dy, size_t n);
/* g (n, device) *= (float)(1 / (double)s->scale); s->found_inf = 1 when any g was inf or NaN
 * (left as it was otherwise): cr_loss_scale_unscale, without its return value. */
void cr_cuda_loss_scale_unscale(cudarl_ctx *ctx, cr_loss_scale_state *s, float *g, size_t n);
/* The backend's adam_step (same arguments, device memory, same results bit for bit) when
 * s->found_inf is 0; when it is not, every block returns before touching p, m, v, *t or the
 * context's scratch: cr_loss_scale_adam_step_if. The backend's adam_step is unchanged. */
void cr_cuda_adam_step_if(cudarl_ctx *ctx, const cr_loss_scale_state *s, float *p, const float *g,
                          float *m, float *v, size_t n, const float *lr, float b1, float b2,
                          float eps, int64_t *t);
/* torch's _amp_update_scale_ from s->found_inf, then found_inf = 0 (one thread):
 * cr_loss_scale_update. cfg is read on the host at the call (a captured graph keeps it). */
void cr_cuda_loss_scale_update(cudarl_ctx *ctx, cr_loss_scale_state *s,
                               const cr_loss_scale_config *cfg);

#ifdef __cplusplus
}
#endif
#endif
