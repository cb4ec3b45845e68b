/* The latency ring of the runtime's real-time calls (cudarl_policy_act, cudarl_frames_tick):
 * each successful call's duration (CLOCK_MONOTONIC, entry to return) into a ring of the last
 * CUDARL_LATENCY_WINDOW, deadline misses counted over every call; cudarl_latency_stats from it.
 * The ring lives in its owner's host arena; recording allocates nothing. */
#ifndef CUDARL_RUNTIME_LATENCY_H
#define CUDARL_RUNTIME_LATENCY_H

#include <stdint.h>

#include "cudarl.h"

typedef struct cr_latency {
    uint32_t *ring_ns;     /* (host) CUDARL_LATENCY_WINDOW durations, ns, saturated */
    int64_t count, misses; /* calls recorded, and those longer than the deadline */
    double deadline_us;    /* 0: none */
    uint64_t deadline_ns;
} cr_latency;

/* The monotonic clock in ns. */
uint64_t cr_now_ns(void);
/* An empty record over `ring` (CUDARL_LATENCY_WINDOW uint32, the owner's). */
void cr_latency_init(cr_latency *l, uint32_t *ring, double deadline_us);
/* Records one call of `ns` nanoseconds. */
void cr_latency_record(cr_latency *l, uint64_t ns);
/* *st from the record: percentiles (nearest rank) and max over the ring, misses over all. */
void cr_latency_stats_fill(const cr_latency *l, cudarl_latency_stats *st);
/* The k-th smallest (0-based) of v[0..n), 0 <= k < n, by a radix select (no allocation, v
 * unchanged). */
uint32_t cr_select_kth_u32(const uint32_t *v, int64_t n, int64_t k);

#endif
