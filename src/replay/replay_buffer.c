/* cr_replay_buffer (replay_buffer.h): each call goes to the twin of the buffer's context. */
#include "replay/replay_buffer.h"

#include <string.h>

cudarl_status cr_replay_buffer_plan(const cudarl_ctx *ctx, const cr_replay_spec *spec,
                                    int max_batch, cr_plan *plan) {
#ifdef CUDARL_WITH_CUDA
    if (ctx->kind == CUDARL_DEVICE_CUDA) return cr_replay_cuda_plan(spec, max_batch, plan);
#endif
    (void)ctx, (void)max_batch;
    return cr_replay_plan(spec, plan);
}

cudarl_status cr_replay_buffer_init(cr_replay_buffer *rb, cudarl_ctx *ctx,
                                    const cr_replay_spec *spec, int max_batch,
                                    const cr_arena *arena, int first_item) {
    memset(rb, 0, sizeof *rb);
    rb->ctx = ctx;
    rb->on_device = ctx->kind == CUDARL_DEVICE_CUDA;
#ifdef CUDARL_WITH_CUDA
    if (rb->on_device) return cr_replay_cuda_init(ctx, &rb->gpu, spec, max_batch, arena, first_item);
#endif
    (void)max_batch;
    cr_replay_init(&rb->cpu, spec, arena, first_item);
    return CUDARL_OK;
}

void cr_replay_buffer_insert(cr_replay_buffer *rb, const void *obs, const int32_t *actions,
                             const float *rewards, const uint8_t *terminated,
                             const uint8_t *truncated, const void *final_obs) {
#ifdef CUDARL_WITH_CUDA
    if (rb->on_device) {
        cr_replay_cuda_insert(rb->ctx, &rb->gpu, obs, actions, rewards, terminated, truncated,
                              final_obs);
        return;
    }
#endif
    cr_replay_insert(&rb->cpu, obs, actions, rewards, terminated, truncated, final_obs);
}

cudarl_status cr_replay_buffer_sample(cr_replay_buffer *rb, cr_rng_stream *s, int batch,
                                      int64_t step, const int64_t *d_step,
                                      const cr_replay_batch *out) {
#ifdef CUDARL_WITH_CUDA
    if (rb->on_device)
        return rb->gpu.rb.spec.prioritized
                   ? cr_replay_cuda_sample_prioritized_at(rb->ctx, &rb->gpu, s, batch, d_step, out)
                   : cr_replay_cuda_sample_uniform(rb->ctx, &rb->gpu, s, batch, out);
#endif
    (void)d_step;
    return rb->cpu.spec.prioritized
               ? cr_replay_sample_prioritized(&rb->cpu, s, batch, step, out)
               : cr_replay_sample_uniform(&rb->cpu, s, batch, out);
}

cudarl_status cr_replay_buffer_update_priorities(cr_replay_buffer *rb, const int64_t *indices,
                                                 const float *td_errors, int n, float eps) {
#ifdef CUDARL_WITH_CUDA
    if (rb->on_device)
        return cr_replay_cuda_update_priorities(rb->ctx, &rb->gpu, indices, td_errors, n, eps);
#endif
    return cr_replay_update_priorities(&rb->cpu, indices, td_errors, n, eps);
}

const uint32_t *cr_replay_buffer_error_bits(const cr_replay_buffer *rb) {
    return rb->on_device ? rb->gpu.misc + 1 : NULL;
}

cudarl_status cr_replay_buffer_error(uint32_t bits) {
    if (bits & CR_REPLAY_CUDA_ERR_EMPTY)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "replay: nothing to sample yet; start learning "
                       "after at least one full transition (--learning-starts)");
    if (bits & CR_REPLAY_CUDA_ERR_NONFINITE)
        return cr_fail(CUDARL_ERR_NUMERIC, "replay: a td error became non-finite; priorities "
                       "must be finite: lower --learning-rate or pass --huber / --max-grad-norm");
    return bits ? cr_fail(CUDARL_ERR_CUDA, "replay: error bits %#x", bits) : CUDARL_OK;
}
