/* The latency ring (runtime/latency.h). */
#include <math.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "runtime/latency.h"

_Static_assert((CUDARL_LATENCY_WINDOW & (CUDARL_LATENCY_WINDOW - 1)) == 0,
               "the latency ring is indexed by count mod a power of two");

uint64_t cr_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void cr_latency_init(cr_latency *l, uint32_t *ring, double deadline_us) {
    memset(l, 0, sizeof *l);
    l->ring_ns = ring;
    l->deadline_us = deadline_us;
    l->deadline_ns = (uint64_t)llround(deadline_us * 1e3);
}

void cr_latency_record(cr_latency *l, uint64_t ns) {
    l->ring_ns[(uint64_t)l->count & (CUDARL_LATENCY_WINDOW - 1)] =
        ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
    l->count++;
    if (l->deadline_ns && ns > l->deadline_ns) l->misses++;
}

/* Byte by byte from the top: count the values that share the prefix chosen so far by their next
 * byte, and descend into the byte where rank k falls. Four passes over v. */
uint32_t cr_select_kth_u32(const uint32_t *v, int64_t n, int64_t k) {
    CUDARL_ASSERT(n > 0 && k >= 0 && k < n);
    uint32_t prefix = 0, mask = 0;
    for (int shift = 24; shift >= 0; shift -= 8) {
        int64_t hist[256] = {0};
        for (int64_t i = 0; i < n; i++)
            if ((v[i] & mask) == prefix) hist[(v[i] >> shift) & 255u]++;
        unsigned b = 0;
        while (k >= hist[b]) k -= hist[b++];
        prefix |= (uint32_t)b << shift;
        mask |= 255u << shift;
    }
    return prefix;
}

void cr_latency_stats_fill(const cr_latency *l, cudarl_latency_stats *st) {
    memset(st, 0, sizeof *st);
    st->count = l->count;
    st->deadline_us = l->deadline_us;
    st->deadline_misses = l->misses;
    int64_t w = l->count < CUDARL_LATENCY_WINDOW ? l->count : CUDARL_LATENCY_WINDOW;
    st->window = w;
    if (w == 0) return;
    uint32_t mx = 0;
    for (int64_t i = 0; i < w; i++) mx = l->ring_ns[i] > mx ? l->ring_ns[i] : mx;
    /* nearest rank: the ceil(q w)-th smallest */
    st->p50_us = 1e-3 * cr_select_kth_u32(l->ring_ns, w, (w + 1) / 2 - 1);
    st->p99_us = 1e-3 * cr_select_kth_u32(l->ring_ns, w, (99 * w + 99) / 100 - 1);
    st->max_us = 1e-3 * mx;
}
