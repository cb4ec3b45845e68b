/* Numeric settings against their ranges (cudarl_flag_range): the one message every validator and
 * the CLI give for a value out of range. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

/* A value as the messages show it: an integer below 2^53 in full, any other number in the
 * fewest digits that read back as it (1.0000000000000002 is not shown as 1). */
static const char *format_value(double v, char *buf, size_t cap) {
    if (v == floor(v) && fabs(v) < 9007199254740992.0) {
        snprintf(buf, cap, "%.0f", v);
        return buf;
    }
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, cap, "%.*g", digits, v);
        if (strtod(buf, NULL) == v) break;
    }
    return buf;
}

cudarl_status cr_flag_range_check(const cudarl_flag_range *r, double value) {
    if (isfinite(value) && value >= r->lo && value <= r->hi) return CUDARL_OK;
    char lo[32], hi[32], got[32];
    format_value(r->lo, lo, sizeof lo), format_value(r->hi, hi, sizeof hi);
    format_value(value, got, sizeof got);
    if (r->lo_means)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "--%s must be between %s (%s) and %s, got %s",
                       r->flag, lo, r->lo_means, hi, got);
    return cr_fail(CUDARL_ERR_INVALID_ARG, "--%s must be between %s and %s, got %s", r->flag, lo,
                   hi, got);
}

/* The field of `r` in `config`, as a double. */
static double field_value(const cudarl_flag_range *r, const void *config) {
    const char *f = (const char *)config + r->offset;
    switch (r->type) {
    case CUDARL_FIELD_INT: return (double)*(const int *)f;
    case CUDARL_FIELD_I64: return (double)*(const int64_t *)f;
    case CUDARL_FIELD_F64: return *(const double *)f;
    }
    cr_assert_fail("r->type is a cudarl_field_type", __FILE__, __LINE__);
}

cudarl_status cr_flag_ranges_check(const cudarl_flag_range *table, const void *config) {
    for (const cudarl_flag_range *r = table; r->flag; r++)
        CR_TRY(cr_flag_range_check(r, field_value(r, config)));
    return CUDARL_OK;
}

const cudarl_flag_range *cr_flag_range_find(const cudarl_flag_range *table, const char *flag) {
    for (const cudarl_flag_range *r = table; flag && r->flag; r++)
        if (!strcmp(r->flag, flag)) return r;
    return NULL;
}
