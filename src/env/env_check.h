/* Range checks for the built-in envs' state_check (cudarl_env_def): each returns 0 when the
 * value is in range, else 1 with "<name> is <value>, expected <range>" in why (cap bytes), so
 * that a state check reads as one chain of ||. Host code only (the CUDA twins never check). */
#ifndef CUDARL_ENV_CHECK_H
#define CUDARL_ENV_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/philox.h"

/* lo <= v <= hi. */
static inline int cr_check_int(char *why, size_t cap, const char *name, long long v, long long lo,
                               long long hi) {
    if (v >= lo && v <= hi) return 0;
    snprintf(why, cap, "%s is %lld, expected %lld..%lld", name, v, lo, hi);
    return 1;
}

/* lo <= v <= hi, which NaN never is. */
static inline int cr_check_real(char *why, size_t cap, const char *name, double v, double lo,
                                double hi) {
    if (v >= lo && v <= hi) return 0;
    snprintf(why, cap, "%s is %g, expected a number in [%g, %g]", name, v, lo, hi);
    return 1;
}

/* A Philox stream's buffered-word count (it indexes its 4-word buffer). */
static inline int cr_check_rng(char *why, size_t cap, const char *name, const cr_philox_state *r) {
    if (r->used >= 0 && r->used <= 4) return 0;
    snprintf(why, cap, "%s.used is %d, expected 0..4", name, r->used);
    return 1;
}

/* A 10 x 10 grid of cells ([y][x]) holds only 0 and 1, and 1 only in rows first..last. */
static inline int cr_check_cells(char *why, size_t cap, const char *name, const uint8_t *grid,
                                 int first, int last) {
    for (int y = 0; y < 10; y++)
        for (int x = 0; x < 10; x++) {
            int v = grid[y * 10 + x];
            if (v == 0 || (v == 1 && y >= first && y <= last)) continue;
            if (v == 1)
                snprintf(why, cap, "%s[%d][%d] is 1, expected 0 outside rows %d..%d", name, y, x,
                         first, last);
            else
                snprintf(why, cap, "%s[%d][%d] is %d, expected 0 or 1", name, y, x, v);
            return 1;
        }
    return 0;
}

#endif
