/* cr_replay_buffer (replay_buffer.h): each call goes to the twin of the buffer's context. */
#include "replay/replay_buffer.h"

#include <stdlib.h>
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

/* The twin's layout (its pointers are backend memory). */
static const cr_replay *layout(const cr_replay_buffer *rb) {
    return rb->on_device ? &rb->gpu.rb : &rb->cpu;
}

int cr_replay_buffer_pieces(const cr_replay_buffer *rb, cr_replay_piece *pieces) {
    return cr_replay_pieces(layout(rb), pieces);
}

/* Where each piece lives in the buffer (backend memory), in cr_replay_pieces' order. */
static void piece_sources(const cr_replay *r, void **src) {
    void *t[CR_REPLAY_PIECES] = {r->frames, r->actions, r->rewards, r->flags, r->heads,
                                 &r->state->num_valid, &r->state->max_priority,
                                 r->tree ? r->tree + r->leaves : NULL};
    memcpy(src, t, sizeof t);
}

cudarl_status cr_replay_buffer_save(cr_replay_buffer *rb, cr_replay_piece *pieces, int *n,
                                    void **block) {
    const cr_replay *r = layout(rb);
    void *src[CR_REPLAY_PIECES];
    *n = cr_replay_pieces(r, pieces);
    *block = NULL;
    piece_sources(r, src);
    if (!rb->on_device) {
        rb->ctx->ops->sync(rb->ctx);
        for (int i = 0; i < *n; i++) pieces[i].data = src[i];
        return CUDARL_OK;
    }
    size_t total = 0;
    for (int i = 0; i < *n; i++) total += (pieces[i].bytes + 63) / 64 * 64;
    uint8_t *h = malloc(total ? total : 1);
    if (!h) {
        char b[32];
        return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory: the replay buffer's %s "
                       "are copied to the host for the checkpoint", cudarl_format_bytes(total, b,
                       sizeof b));
    }
    for (int i = 0; i < *n; i++) {
        pieces[i].data = h;
        rb->ctx->ops->copy_to_host(rb->ctx, h, src[i], pieces[i].bytes);
        h += (pieces[i].bytes + 63) / 64 * 64;
    }
    rb->ctx->ops->sync(rb->ctx);
    *block = pieces[0].data;
    return CUDARL_OK;
}

cudarl_status cr_replay_buffer_restore(cr_replay_buffer *rb, const cr_replay_piece *pieces,
                                       int64_t steps, int num_actions, int *bad_piece, char *why,
                                       size_t cap) {
    const cr_replay *r = layout(rb);
    cudarl_ctx *ctx = rb->ctx;
    *bad_piece = cr_replay_check_pieces(r, pieces, steps, num_actions, why, cap);
    if (*bad_piece >= 0) return CUDARL_ERR_FORMAT;
    cr_replay_piece lay[CR_REPLAY_PIECES];
    const int n = cr_replay_pieces(r, lay);
    void *dst[CR_REPLAY_PIECES];
    piece_sources(r, dst);
    float *tree = NULL; /* the whole tree, built on the host for the device */
    if (r->tree && rb->on_device) {
        tree = calloc(2 * (size_t)r->leaves, sizeof(float));
        if (!tree)
            return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory for the replay's sum "
                           "tree");
    }
    for (int i = 0; i < n; i++) {
        if (tree && i == n - 1) { /* the leaves, into the host tree */
            memcpy(tree + r->leaves, pieces[i].data, pieces[i].bytes);
            cr_replay_tree_build(tree, r->leaves);
            ctx->ops->copy_from_host(ctx, r->tree, tree, 2 * (size_t)r->leaves * sizeof(float));
            continue;
        }
        ctx->ops->copy_from_host(ctx, dst[i], pieces[i].data, pieces[i].bytes);
    }
    if (r->tree && !rb->on_device) cr_replay_tree_build(r->tree, r->leaves);
#ifdef CUDARL_WITH_CUDA
    if (rb->on_device)
        cr_replay_cuda_set_window(ctx, &rb->gpu, cr_replay_widest_window(r, pieces[4].data));
#endif
    ctx->ops->sync(ctx); /* the host sources are read by now */
    free(tree);
    return CUDARL_OK;
}
