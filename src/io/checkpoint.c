/* What every cudarl checkpoint shares: the format tag, its version and the algo, checked before
 * anything else is trusted, finite numbers only, and the readers of its metadata values. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/checkpoint.h"

/* Reads integer metadata `key` into *out; a missing or malformed value is a format error. */
cudarl_status cr_checkpoint_meta_ll(const cr_st_file *f, const char *path, const char *key,
                                    long long *out) {
    const char *v = cr_st_meta(f, key);
    char *end;
    errno = 0;
    long long x = v ? strtoll(v, &end, 10) : 0;
    if (!v || errno || *end || end == v)
        return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s': metadata '%s' is %s, expected an "
                       "integer; the file is damaged", path, key, v ? v : "missing");
    *out = x;
    return CUDARL_OK;
}

cudarl_status cr_checkpoint_meta_precision(const cr_st_file *f, const char *path,
                                           cudarl_precision *out) {
    const char *v = cr_st_meta(f, "precision");
    if (v && cudarl_precision_parse(v, out) != CUDARL_OK)
        return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s' has precision '%s', which this build "
                       "does not know", path, v);
    return CUDARL_OK;
}

cudarl_status cr_checkpoint_check_precision(const cr_st_file *f, const char *path,
                                            cudarl_precision run, int absent) {
    const char *v = cr_st_meta(f, "precision"), *mine = cudarl_precision_name(run);
    if (!v && absent >= 0) v = cudarl_precision_name((cudarl_precision)absent);
    if (!v || strcmp(v, mine))
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s' was trained in precision %s but this "
                       "run's is %s; resume with --precision %s", path, v ? v : "?", mine,
                       v ? v : "?");
    return CUDARL_OK;
}

cudarl_status cr_checkpoint_meta_double(const cr_st_file *f, const char *path, const char *key,
                                       double *out) {
    const char *v = cr_st_meta(f, key);
    char *end;
    double x = v ? strtod(v, &end) : 0;
    if (!v || *end || end == v)
        return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s': metadata '%s' is %s, expected a "
                       "number; the file is damaged", path, key, v ? v : "missing");
    *out = x;
    return CUDARL_OK;
}

/* A positive integer of the checkpoint's metadata (at most 2^20). */
cudarl_status cr_checkpoint_meta_int(const cr_st_file *f, const char *path, const char *key,
                                     int *out) {
    const char *v = cr_st_meta(f, key);
    char *end = NULL;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || errno || *end || end == v || x < 1 || x > 1 << 20)
        return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s': metadata '%s' is %.32s, expected a "
                       "positive integer; the file is damaged", path, key, v ? v : "missing");
    *out = (int)x;
    return CUDARL_OK;
}

const char *cr_checkpoint_shape_text(char *b, size_t cap, int ndim, const int64_t *shape) {
    int n = snprintf(b, cap, "[");
    for (int d = 0; d < ndim && n > 0 && (size_t)n < cap; d++)
        n += snprintf(b + n, cap - (size_t)n, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (n > 0 && (size_t)n < cap) snprintf(b + n, cap - (size_t)n, "]");
    return b;
}

cudarl_status cr_checkpoint_expect_f32(const cr_st_file *f, const char *path, const char *name,
                                       int ndim, const int64_t *shape, const char *expected) {
    cr_st_tensor t;
    CR_TRY(cr_st_find(f, name, &t));
    int same = t.dtype == CR_ST_F32 && t.ndim == ndim;
    for (int d = 0; same && d < t.ndim; d++) same = t.shape[d] == shape[d];
    if (same) return CUDARL_OK;
    char got[160], want[96];
    return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s': tensor '%s' is %s of shape %s, but %s "
                   "F32 of shape %s; the file was altered or damaged: use a model.safetensors "
                   "written by cudarl train", path, name, cr_st_dtype_name(t.dtype),
                   cr_checkpoint_shape_text(got, sizeof got, t.ndim, t.shape), expected,
                   cr_checkpoint_shape_text(want, sizeof want, ndim, shape));
}

/* Index of the first element of t whose exponent bits are all set (an inf or a NaN), or -1;
 * *nan and *neg say which. Reads bytes (the data may be unaligned). */
static int64_t first_non_finite(const cr_st_tensor *t, int *nan, int *neg) {
    const unsigned char *b = t->data;
    for (size_t i = 0; i < t->count; i++) {
        uint64_t exp_mask, man_mask, sign_mask, v = 0;
        switch (t->dtype) {
        case CR_ST_F16: {
            uint16_t h;
            memcpy(&h, b + 2 * i, 2);
            v = h, exp_mask = 0x7C00, man_mask = 0x03FF, sign_mask = 0x8000;
            break;
        }
        case CR_ST_BF16: {
            uint16_t h;
            memcpy(&h, b + 2 * i, 2);
            v = h, exp_mask = 0x7F80, man_mask = 0x007F, sign_mask = 0x8000;
            break;
        }
        case CR_ST_F32: {
            uint32_t w;
            memcpy(&w, b + 4 * i, 4);
            v = w, exp_mask = 0x7F800000u, man_mask = 0x007FFFFFu, sign_mask = 0x80000000u;
            break;
        }
        case CR_ST_F64:
            memcpy(&v, b + 8 * i, 8);
            exp_mask = 0x7FF0000000000000ull, man_mask = 0x000FFFFFFFFFFFFFull;
            sign_mask = 0x8000000000000000ull;
            break;
        default:
            return -1;
        }
        if ((v & exp_mask) != exp_mask) continue;
        *nan = (v & man_mask) != 0, *neg = (v & sign_mask) != 0;
        return (int64_t)i;
    }
    return -1;
}

cudarl_status cr_checkpoint_check_finite(const cr_st_file *f, const char *path) {
    for (int k = 0; k < cr_st_count(f); k++) {
        const cr_st_tensor *t = cr_st_at(f, k);
        int nan = 0, neg = 0;
        int64_t i = first_non_finite(t, &nan, &neg);
        if (i < 0) continue;
        char shape[160];
        return cr_fail(CUDARL_ERR_NUMERIC, "checkpoint '%s': tensor '%s' %s holds %s at element "
                       "%lld; a checkpoint holds finite numbers only: the file is damaged, or the "
                       "run that wrote it had diverged: use an earlier checkpoint", path, t->name,
                       cr_checkpoint_shape_text(shape, sizeof shape, t->ndim, t->shape),
                       nan ? "NaN" : neg ? "-inf" : "inf", (long long)i);
    }
    return CUDARL_OK;
}

cudarl_status cr_checkpoint_check_header(const cr_st_file *f, const char *path, const char *algo) {
    const char *fmt = cr_st_meta(f, "format");
    if (!fmt || strcmp(fmt, CR_CHECKPOINT_FORMAT))
        return cr_fail(CUDARL_ERR_FORMAT, "'%s' is a safetensors file but not a cudarl checkpoint "
                       "(metadata 'format' is %s); pass a model.safetensors written by cudarl "
                       "train", path, fmt ? fmt : "missing");
    const char *ver = cr_st_meta(f, "format_version");
    long v = ver ? strtol(ver, NULL, 10) : 0;
    if (v < 1 || v > CR_CHECKPOINT_VERSION)
        return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s' has format version %s; this cudarl "
                       "reads version 1 to %d; use the cudarl version that wrote it", path,
                       ver ? ver : "(missing)", CR_CHECKPOINT_VERSION);
    const char *a = cr_st_meta(f, "algo");
    if (!a || strcmp(a, algo))
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s' was trained with algo '%s', not %s",
                       path, a ? a : "(missing)", algo);
    return cr_checkpoint_check_finite(f, path);
}

int cr_checkpoint_separate_critic(const cr_st_file *f) {
    const char *sc = cr_st_meta(f, "separate_critic");
    return sc && strcmp(sc, "0") != 0;
}

cudarl_status cudarl_checkpoint_algo(const char *path, char *algo, size_t cap) {
    cr_st_file *f;
    CR_TRY(cr_st_open(&f, path));
    const char *fmt = cr_st_meta(f, "format"), *a = cr_st_meta(f, "algo");
    cudarl_status s = CUDARL_OK;
    if (!fmt || strcmp(fmt, CR_CHECKPOINT_FORMAT) || !a)
        s = cr_fail(CUDARL_ERR_FORMAT, "'%s' is not a cudarl checkpoint (its metadata has no "
                    "format %s and algo); pass a model.safetensors written by cudarl train", path,
                    CR_CHECKPOINT_FORMAT);
    else if (cap) snprintf(algo, cap, "%s", a);
    cr_st_close(f);
    return s;
}
