/* The trainers' metrics pipe: what the device computes about a run (losses, episodes, the loss
 * scale, error bits) reaches the host without stopping the device. At each report point the
 * trainer copies its metrics block into the next pinned slot behind the work queued so far and
 * pushes it (an event is recorded); slots are reported in push order once their events have
 * passed, and the host waits only when every slot is in flight. Where the backend cannot copy
 * asynchronously (the CPU) the pipe stays off and the trainer reads its metrics at once. */
#ifndef CUDARL_ALGO_METRICS_PIPE_H
#define CUDARL_ALGO_METRICS_PIPE_H

#include <stddef.h>
#include <stdint.h>

#include "ops/backend.h"

#define CR_PIPE_SLOTS 4

/* What the trainer says of a report point besides its metrics block. */
typedef struct cr_pipe_tag {
    int64_t step, iteration;
    int log; /* the point writes a metrics row (DQN; PPO writes one at every point) */
} cr_pipe_tag;

typedef struct cr_metrics_pipe {
    int on;
    size_t slot_bytes;
    unsigned char *slots;         /* (CR_PIPE_SLOTS, slot_bytes) pinned host memory */
    void *event[CR_PIPE_SLOTS];
    cr_pipe_tag tag[CR_PIPE_SLOTS];
    int64_t pushed, reported;     /* report points pushed, and reported of those */
} cr_metrics_pipe;

/* The report of one point, in push order: its slot (slot_bytes, host) and tag. */
typedef cudarl_status (*cr_pipe_report_fn)(void *arg, const void *slot, const cr_pipe_tag *tag);

/* Turns the pipe on where ctx's backend copies asynchronously and `want` (slots of slot_bytes);
 * off (m->on 0) otherwise, or when pinned memory or events cannot be had. */
void cr_pipe_init(cr_metrics_pipe *m, cudarl_ctx *ctx, size_t slot_bytes, int want);
void cr_pipe_free(cr_metrics_pipe *m, cudarl_ctx *ctx);
/* The slot the next push fills (host, pinned): reports points, waiting for the oldest, while
 * every slot is in flight. *slot is NULL when a report failed (its status is returned). */
cudarl_status cr_pipe_reserve(cr_metrics_pipe *m, cudarl_ctx *ctx, cr_pipe_report_fn report,
                              void *arg, void **slot);
/* The slot cr_pipe_reserve returned, until the push. */
void *cr_pipe_reserved(const cr_metrics_pipe *m);
/* Marks the reserved slot's copies (already queued on ctx's stream) as a report point. */
void cr_pipe_push(cr_metrics_pipe *m, cudarl_ctx *ctx, const cr_pipe_tag *tag);
/* Reports the points whose copies have landed, in order; all of them when `wait`. Stops at the
 * first report that fails and returns its status. */
cudarl_status cr_pipe_drain(cr_metrics_pipe *m, cudarl_ctx *ctx, int wait,
                            cr_pipe_report_fn report, void *arg);

#endif
