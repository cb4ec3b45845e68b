/* cr_metrics_pipe (metrics_pipe.h). */
#include "algo/metrics_pipe.h"

#include <string.h>

void cr_pipe_init(cr_metrics_pipe *m, cudarl_ctx *ctx, size_t slot_bytes, int want) {
    const cr_backend *o = ctx->ops;
    memset(m, 0, sizeof *m);
    if (!want || !o->event_create || !o->copy_to_host_async || !o->pinned_alloc) return;
    if (o->pinned_alloc(ctx, (void **)&m->slots, CR_PIPE_SLOTS * slot_bytes) != CUDARL_OK) {
        m->slots = NULL;
        return;
    }
    for (int k = 0; k < CR_PIPE_SLOTS; k++)
        if (o->event_create(ctx, &m->event[k]) != CUDARL_OK) {
            m->event[k] = NULL;
            cr_pipe_free(m, ctx);
            return;
        }
    m->slot_bytes = slot_bytes;
    m->on = 1;
}

void cr_pipe_free(cr_metrics_pipe *m, cudarl_ctx *ctx) {
    for (int k = 0; k < CR_PIPE_SLOTS; k++)
        if (m->event[k]) ctx->ops->event_free(ctx, m->event[k]);
    if (m->slots) ctx->ops->pinned_free(ctx, m->slots);
    memset(m, 0, sizeof *m);
}

cudarl_status cr_pipe_reserve(cr_metrics_pipe *m, cudarl_ctx *ctx, cr_pipe_report_fn report,
                              void *arg, void **slot) {
    *slot = NULL;
    while (m->pushed - m->reported >= CR_PIPE_SLOTS) { /* every slot in flight */
        ctx->ops->event_wait(ctx, m->event[m->reported % CR_PIPE_SLOTS]);
        CR_TRY(cr_pipe_drain(m, ctx, 0, report, arg));
    }
    *slot = cr_pipe_reserved(m);
    return CUDARL_OK;
}

void *cr_pipe_reserved(const cr_metrics_pipe *m) {
    return m->slots + (size_t)(m->pushed % CR_PIPE_SLOTS) * m->slot_bytes;
}

void cr_pipe_push(cr_metrics_pipe *m, cudarl_ctx *ctx, const cr_pipe_tag *tag) {
    const int k = (int)(m->pushed % CR_PIPE_SLOTS);
    ctx->ops->event_record(ctx, m->event[k]);
    m->tag[k] = *tag;
    m->pushed++;
}

cudarl_status cr_pipe_drain(cr_metrics_pipe *m, cudarl_ctx *ctx, int wait,
                            cr_pipe_report_fn report, void *arg) {
    while (m->reported < m->pushed) {
        const int k = (int)(m->reported % CR_PIPE_SLOTS);
        if (!ctx->ops->event_done(ctx, m->event[k])) {
            if (!wait) return CUDARL_OK;
            ctx->ops->event_wait(ctx, m->event[k]);
        }
        m->reported++;
        CR_TRY(report(arg, m->slots + (size_t)k * m->slot_bytes, &m->tag[k]));
    }
    return CUDARL_OK;
}
