/* Dynamic loss scaling on the host (loss_scale.h): the specification the CUDA twin
 * (src/ops/cuda/loss_scale.cu) is held to. */
#include "ops/loss_scale.h"

#include <math.h>

#include "core/core.h"
#include "ops/cpu/ops_cpu.h"

void cr_loss_scale_config_default(cr_loss_scale_config *cfg) {
    cfg->init_scale = 65536.0;
    cfg->growth_factor = 2.0;
    cfg->backoff_factor = 0.5;
    cfg->growth_interval = 2000;
}

cudarl_status cr_loss_scale_config_validate(const cr_loss_scale_config *cfg) {
    if (!(isfinite(cfg->init_scale) && cfg->init_scale > 0 && cfg->init_scale <= 0x1p127))
        return cr_fail(CUDARL_ERR_INVALID_ARG,
                       "loss scale init_scale %g: must be finite, > 0 and <= 2^127 (a float32; "
                       "GradScaler's default 65536)",
                       cfg->init_scale);
    if (!(cfg->growth_factor > 1.0 && isfinite(cfg->growth_factor)))
        return cr_fail(CUDARL_ERR_INVALID_ARG,
                       "loss scale growth_factor %g: must be finite and > 1 (default 2)",
                       cfg->growth_factor);
    if (!(cfg->backoff_factor > 0.0 && cfg->backoff_factor < 1.0))
        return cr_fail(CUDARL_ERR_INVALID_ARG,
                       "loss scale backoff_factor %g: must be in (0, 1) (default 0.5)",
                       cfg->backoff_factor);
    if (cfg->growth_interval < 1)
        return cr_fail(CUDARL_ERR_INVALID_ARG,
                       "loss scale growth_interval %d: must be >= 1 (default 2000)",
                       (int)cfg->growth_interval);
    return CUDARL_OK;
}

void cr_loss_scale_init(cr_loss_scale_state *s, const cr_loss_scale_config *cfg) {
    s->scale = (float)cfg->init_scale;
    s->found_inf = 0.0f;
    s->growth_tracker = 0;
    s->pad_ = 0;
    s->skipped_steps = 0;
}

void cr_loss_scale_apply(const cr_loss_scale_state *s, float *dy, size_t n) {
    const float scale = s->scale;
    for (size_t i = 0; i < n; i++) dy[i] *= scale;
}

int cr_loss_scale_unscale(cr_loss_scale_state *s, float *g, size_t n) {
    /* torch: scale.double().reciprocal().float(), "FP32 division can be imprecise for certain
     * compile options, so we carry out the reciprocal in FP64". */
    const float inv_scale = (float)(1.0 / (double)s->scale);
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        float x = g[i];
        found |= !isfinite(x);
        g[i] = inv_scale == 1.0f ? x : x * inv_scale;
    }
    if (found) s->found_inf = 1.0f;
    return found;
}

int cr_loss_scale_adam_step_if(const cr_loss_scale_state *s, float *p, const float *g, float *m,
                               float *v, size_t n, const float *lr, float b1, float b2, float eps,
                               int64_t *t) {
    if (s->found_inf != 0.0f) return 0; /* GradScaler.step skips optimizer.step() */
    *t += 1;
    cr_cpu_adam_step(p, g, m, v, n, *lr, b1, b2, eps, *t);
    return 1;
}

void cr_loss_scale_update(cr_loss_scale_state *s, const cr_loss_scale_config *cfg) {
    /* aten/src/ATen/native/cpu/AmpGradScalerKernels.cpp, _amp_update_scale_cpu_kernel: float
     * times double is a double product, stored back into the float. */
    if (s->found_inf != 0.0f) {
        s->scale = (float)((double)s->scale * cfg->backoff_factor);
        s->growth_tracker = 0;
        s->skipped_steps += 1;
    } else {
        int32_t successful = s->growth_tracker + 1;
        if (successful == cfg->growth_interval) {
            float grown = (float)((double)s->scale * cfg->growth_factor);
            if (isfinite(grown)) s->scale = grown; /* never grows past float32 to inf */
            s->growth_tracker = 0;
        } else {
            s->growth_tracker = successful;
        }
    }
    s->found_inf = 0.0f;
}
