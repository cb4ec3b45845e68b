/* Buffers for the op tests: NaN-poisoned outputs and Philox-filled inputs. Each test program
 * that includes this has one random stream, `rng`, seeded by its main(). */
#ifndef CUDARL_TEST_OP_BUFFERS_H
#define CUDARL_TEST_OP_BUFFERS_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/core.h"

static cr_philox_state rng;

/* n floats, 64-byte aligned like arena buffers, filled with NaN so unwritten outputs show. */
static float *floats(size_t n) {
    size_t bytes = ((n * sizeof(float) + 63) / 64) * 64;
    float *p = aligned_alloc(64, bytes ? bytes : 64);
    CHECK(p != NULL);
    for (size_t i = 0; i < n; i++) p[i] = NAN;
    return p;
}

static double *doubles(size_t n) {
    double *p = malloc((n ? n : 1) * sizeof *p);
    CHECK(p != NULL);
    return p;
}

static void fill_uniform(float *p, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++) p[i] = lo + (hi - lo) * cr_philox_uniform(&rng);
}

static float *uniform_floats(size_t n, float lo, float hi) {
    float *p = floats(n);
    fill_uniform(p, n, lo, hi);
    return p;
}

static int bits_equal(const float *a, const float *b, size_t n) {
    return memcmp(a, b, n * sizeof *a) == 0;
}

#endif
