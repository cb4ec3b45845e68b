/* Safetensors: a strict reader and an atomic writer (the format is described in safetensors.h). */
#include "io/safetensors.h"

#include "io/output_file.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ST_MAX_INT 9007199254740992.0 /* 2^53: larger JSON integers do not survive a double */

#define TRUNCATED_HINT "the file was cut short — re-copy it or use an earlier checkpoint"
#define CORRUPT_HINT "the file is corrupted — re-copy it or use an earlier checkpoint"
#define KNOWN_DTYPES "BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64"

static const struct {
    const char *name;
    size_t size;
} dtypes[CR_ST_DTYPE_COUNT] = {
    [CR_ST_BOOL] = {"BOOL", 1},   [CR_ST_U8] = {"U8", 1},     [CR_ST_I8] = {"I8", 1},
    [CR_ST_F8_E5M2] = {"F8_E5M2", 1}, [CR_ST_F8_E4M3] = {"F8_E4M3", 1},
    [CR_ST_I16] = {"I16", 2},     [CR_ST_U16] = {"U16", 2},   [CR_ST_F16] = {"F16", 2},
    [CR_ST_BF16] = {"BF16", 2},   [CR_ST_I32] = {"I32", 4},   [CR_ST_U32] = {"U32", 4},
    [CR_ST_F32] = {"F32", 4},     [CR_ST_F64] = {"F64", 8},   [CR_ST_I64] = {"I64", 8},
    [CR_ST_U64] = {"U64", 8},
};

const char *cr_st_dtype_name(cr_st_dtype dtype) {
    return (unsigned)dtype < CR_ST_DTYPE_COUNT ? dtypes[dtype].name : "?";
}

size_t cr_st_dtype_size(cr_st_dtype dtype) {
    return (unsigned)dtype < CR_ST_DTYPE_COUNT ? dtypes[dtype].size : 0;
}

/* Offset of the first byte of s[0, n) that cannot appear in UTF-8 JSON text (malformed UTF-8,
 * a surrogate, or a control character other than tab, newline and carriage return), or n. */
static size_t json_text_bad_at(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i], len, min;
        if (c < 0x80) {
            if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') return i;
            i++;
            continue;
        }
        if ((c & 0xE0) == 0xC0) len = 2, min = 0x80;
        else if ((c & 0xF0) == 0xE0) len = 3, min = 0x800;
        else if ((c & 0xF8) == 0xF0) len = 4, min = 0x10000;
        else return i;
        if (n - i < len) return i;
        uint32_t cp = c & (0x7Fu >> len);
        for (unsigned k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return i;
            cp = cp << 6 | (s[i + k] & 0x3Fu);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
        i += len;
    }
    return n;
}

/* Offset of the first fraction or exponent of a number in the JSON text h[0, n), or n: every
 * number of the format is an integer, and cJSON would read 1.0 or 1e0 as one. */
static size_t json_first_non_integer(const char *h, size_t n) {
    int in_string = 0;
    for (size_t i = 0; i < n; i++) {
        char c = h[i];
        if (in_string) {
            if (c == '\\') i++;
            else if (c == '"') in_string = 0;
        } else if (c == '"') {
            in_string = 1;
        } else if (c == '.' || ((c == 'e' || c == 'E') && i > 0 && h[i - 1] >= '0' &&
                                h[i - 1] <= '9')) {
            return i; /* outside strings, only numbers hold '.', and 'e' after a digit */
        }
    }
    return n;
}

/* "[64, 4]" into buf. */
static const char *shape_format(char *buf, size_t cap, int ndim, const int64_t *shape) {
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < ndim && used < cap; d++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (used < cap) snprintf(buf + used, cap - used, "]");
    return buf;
}

/* ---- writer ------------------------------------------------------------------------- */

void cr_st_writer_init(cr_st_writer *w) { memset(w, 0, sizeof *w); }

/* Copies `s` (len bytes and its NUL) into the writer's strings; returns its offset there. */
static uint32_t writer_intern(cr_st_writer *w, const char *s, size_t len) {
    uint32_t at = (uint32_t)w->strings_used;
    memcpy(w->strings + at, s, len + 1);
    w->strings_used += len + 1;
    return at;
}

/* Checks a name or key the writer is given: not empty, short enough, UTF-8. */
static cudarl_status writer_check_name(const char *what, const char *s) {
    if (!s || !*s) return cr_fail(CUDARL_ERR_INVALID_ARG, "safetensors: a %s must not be empty", what);
    size_t len = strlen(s);
    if (len >= CR_ST_MAX_NAME)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "safetensors: %s '%.40s...' is %zu bytes; at most %d "
                       "are allowed", what, s, len, CR_ST_MAX_NAME - 1);
    if (json_text_bad_at((const unsigned char *)s, len) < len)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "safetensors: %s '%s' is not valid UTF-8 text", what, s);
    return CUDARL_OK;
}

static cudarl_status writer_need_strings(const cr_st_writer *w, size_t bytes, const char *what) {
    if (bytes > sizeof w->strings - w->strings_used)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "safetensors: no room for %s: a writer holds %d bytes "
                       "of names and metadata in all; use shorter names or less metadata",
                       what, CR_ST_WRITER_STRINGS);
    return CUDARL_OK;
}

/* Remembers the first failed add of `w` for cr_st_write_atomic(); returns `s`. */
static cudarl_status writer_remember(cr_st_writer *w, cudarl_status s) {
    if (s != CUDARL_OK && w->status == CUDARL_OK) {
        w->status = s;
        snprintf(w->error, sizeof w->error, "%s", cudarl_last_error());
    }
    return s;
}

static cudarl_status writer_add_tensor(cr_st_writer *w, const char *name, cr_st_dtype dtype,
                                       int ndim, const int64_t *shape, const void *data) {
    CR_TRY(writer_check_name("tensor name", name));
    if (!strcmp(name, "__metadata__"))
        return cr_fail(CUDARL_ERR_INVALID_ARG, "safetensors: '__metadata__' is reserved for "
                       "metadata and cannot name a tensor; rename it");
    if (w->ntensors == CR_ST_MAX_TENSORS)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "safetensors: cannot add tensor '%s': a writer "
                       "holds at most %d tensors", name, CR_ST_MAX_TENSORS);
    if ((unsigned)dtype >= CR_ST_DTYPE_COUNT)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "safetensors: tensor '%s' has dtype %d, which is "
                       "not a cr_st_dtype", name, (int)dtype);
    if (ndim < 0 || ndim > CR_ST_MAX_DIMS || (ndim > 0 && !shape))
        return cr_fail(CUDARL_ERR_INVALID_ARG, "safetensors: tensor '%s' has %d dimensions%s; 0 to "
                       "%d are supported", name, ndim, ndim > 0 && !shape ? " and no shape" : "",
                       CR_ST_MAX_DIMS);
    double bytes = (double)dtypes[dtype].size;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0 || (double)shape[d] > ST_MAX_INT)
            return cr_fail(CUDARL_ERR_INVALID_ARG, "safetensors: dimension %d of tensor '%s' is "
                           "%lld; it must be in [0, 2^53]", d, name, (long long)shape[d]);
        bytes *= (double)shape[d];
    }
    if (bytes > ST_MAX_INT || bytes > (double)(SIZE_MAX / 2))
        return cr_fail(CUDARL_ERR_INVALID_ARG, "safetensors: tensor '%s' of shape %s is too large",
                       name, shape_format((char[128]){0}, 128, ndim, shape));
    size_t nbytes = dtypes[dtype].size;
    for (int d = 0; d < ndim; d++) nbytes *= (size_t)shape[d];
    if (nbytes > 0 && !data)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "safetensors: tensor '%s' has %zu bytes but its data "
                       "pointer is NULL", name, nbytes);
    for (int i = 0; i < w->ntensors; i++)
        if (!strcmp(w->strings + w->tensors[i].name, name))
            return cr_fail(CUDARL_ERR_INVALID_ARG, "safetensors: tensor '%s' was added twice; "
                           "tensor names must be unique", name);
    size_t len = strlen(name);
    CR_TRY(writer_need_strings(w, len + 1, name));
    cr_st_writer_tensor *t = &w->tensors[w->ntensors++];
    t->name = writer_intern(w, name, len);
    t->dtype = dtype;
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++) t->shape[d] = shape[d];
    t->data = data;
    t->nbytes = nbytes;
    return CUDARL_OK;
}

cudarl_status cr_st_add_tensor(cr_st_writer *w, const char *name, cr_st_dtype dtype, int ndim,
                               const int64_t *shape, const void *data) {
    return writer_remember(w, writer_add_tensor(w, name, dtype, ndim, shape, data));
}

static cudarl_status writer_add_meta(cr_st_writer *w, const char *key, const char *value) {
    CR_TRY(writer_check_name("metadata key", key));
    if (!value)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "safetensors: metadata '%s' has a NULL value", key);
    size_t klen = strlen(key), vlen = strlen(value);
    if (vlen >= CR_ST_MAX_VALUE)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "safetensors: metadata '%s' is %zu bytes; at most %d "
                       "are allowed", key, vlen, CR_ST_MAX_VALUE - 1);
    if (json_text_bad_at((const unsigned char *)value, vlen) < vlen)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "safetensors: metadata '%s' is not valid UTF-8 text",
                       key);
    if (w->nmeta == CR_ST_MAX_META)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "safetensors: cannot add metadata '%s': a writer "
                       "holds at most %d entries", key, CR_ST_MAX_META);
    for (int i = 0; i < w->nmeta; i++)
        if (!strcmp(w->strings + w->meta[i][0], key))
            return cr_fail(CUDARL_ERR_INVALID_ARG, "safetensors: metadata '%s' was added twice", key);
    CR_TRY(writer_need_strings(w, klen + vlen + 2, key));
    w->meta[w->nmeta][0] = writer_intern(w, key, klen);
    w->meta[w->nmeta][1] = writer_intern(w, value, vlen);
    w->nmeta++;
    return CUDARL_OK;
}

cudarl_status cr_st_add_meta(cr_st_writer *w, const char *key, const char *value) {
    return writer_remember(w, writer_add_meta(w, key, value));
}

/* Appends a JSON integer written exactly (cJSON would print large doubles as 1e+15). */
static int json_add_u64(cJSON *array, uint64_t v) {
    char text[24];
    snprintf(text, sizeof text, "%llu", (unsigned long long)v);
    cJSON *item = cJSON_CreateRaw(text);
    if (!item) return 0;
    if (!cJSON_AddItemToArray(array, item)) {
        cJSON_Delete(item);
        return 0;
    }
    return 1;
}

/* The header JSON padded with spaces to a multiple of 8 bytes (host, malloc; caller frees). */
static cudarl_status writer_header(const cr_st_writer *w, char **out, size_t *len) {
    cJSON *root = cJSON_CreateObject();
    int ok = root != NULL;
    if (ok && w->nmeta > 0) {
        cJSON *meta = cJSON_AddObjectToObject(root, "__metadata__");
        ok = meta != NULL;
        for (int i = 0; ok && i < w->nmeta; i++)
            ok = cJSON_AddStringToObject(meta, w->strings + w->meta[i][0],
                                         w->strings + w->meta[i][1]) != NULL;
    }
    uint64_t offset = 0;
    for (int i = 0; ok && i < w->ntensors; i++) {
        const cr_st_writer_tensor *t = &w->tensors[i];
        cJSON *entry = cJSON_AddObjectToObject(root, w->strings + t->name);
        ok = entry && cJSON_AddStringToObject(entry, "dtype", dtypes[t->dtype].name);
        cJSON *shape = ok ? cJSON_AddArrayToObject(entry, "shape") : NULL;
        ok = shape != NULL;
        for (int d = 0; ok && d < t->ndim; d++) ok = json_add_u64(shape, (uint64_t)t->shape[d]);
        cJSON *offsets = ok ? cJSON_AddArrayToObject(entry, "data_offsets") : NULL;
        ok = offsets && json_add_u64(offsets, offset) && json_add_u64(offsets, offset + t->nbytes);
        offset += t->nbytes;
    }
    if (ok && offset > (uint64_t)ST_MAX_INT) {
        cJSON_Delete(root);
        return cr_fail(CUDARL_ERR_INVALID_ARG, "safetensors: the tensors hold %llu bytes in all, "
                       "more than 2^53", (unsigned long long)offset);
    }
    char *json = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!json) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "safetensors: cannot allocate the header "
                              "for %d tensors", w->ntensors);
    size_t n = strlen(json), padded = (n + 7) / 8 * 8;
    *out = malloc(padded);
    if (*out) {
        memcpy(*out, json, n);
        memset(*out + n, ' ', padded - n);
    }
    cJSON_free(json);
    if (!*out) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "safetensors: cannot allocate the header");
    *len = padded;
    return CUDARL_OK;
}

static void writer_write_all(const cr_st_writer *w, cr_out_file *o, const char *header,
                             size_t len) {
    unsigned char prefix[8];
    for (int k = 0; k < 8; k++) prefix[k] = (unsigned char)((uint64_t)len >> (8 * k));
    cr_out_write(o, prefix, 8);
    cr_out_write(o, header, len);
    for (int i = 0; i < w->ntensors; i++) cr_out_write(o, w->tensors[i].data, w->tensors[i].nbytes);
}

cudarl_status cr_st_write_atomic(const cr_st_writer *w, const char *path) {
    if (w->status != CUDARL_OK)
        return cr_fail(w->status, "not writing checkpoint '%s': an earlier add failed: %s", path,
                       w->error);
    char *header = NULL;
    size_t len = 0;
    CR_TRY(writer_header(w, &header, &len));
    cr_out_file o;
    cudarl_status s = cr_out_open(&o, path, "checkpoint");
    if (s == CUDARL_OK) {
        writer_write_all(w, &o, header, len);
        s = cr_out_commit(&o);
    }
    free(header);
    return s;
}

/* ---- reader ------------------------------------------------------------------------- */

typedef struct cr_st_meta_entry {
    const char *key, *value;
} cr_st_meta_entry;

/* One allocation holds this struct, the tensor table, the metadata table and their strings;
 * a second one holds the file's bytes. */
struct cr_st_file {
    unsigned char *bytes; /* (host) the whole file, plus a terminating NUL */
    size_t size;          /* of the file */
    const char *path;
    int ntensors, nmeta;
    cr_st_tensor *tensors;    /* in name order */
    cr_st_meta_entry *meta;   /* in key order */
};

/* Reads all of `path` into *bytes (host, malloc, NUL-terminated); its size in *size. */
static cudarl_status file_read(const char *path, unsigned char **bytes, size_t *size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return cr_fail(CUDARL_ERR_IO, "cannot open checkpoint '%s': %s; check the path",
                       path, strerror(errno));
    struct stat st;
    int err = fstat(fd, &st) != 0 ? errno : 0;
    if (err || !S_ISREG(st.st_mode)) {
        close(fd);
        return cr_fail(CUDARL_ERR_IO, "cannot open checkpoint '%s': %s", path,
                       err ? strerror(err) : "it is not a regular file");
    }
    size_t want = (size_t)st.st_size, got = 0;
    unsigned char *b = (uint64_t)st.st_size < SIZE_MAX ? malloc(want + 1) : NULL;
    if (!b) {
        close(fd);
        char buf[32];
        return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "cannot allocate %s of host memory to read "
                       "checkpoint '%s'", cudarl_format_bytes(want, buf, sizeof buf), path);
    }
    while (got < want) {
        ssize_t r = read(fd, b + got, want - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            err = errno;
            close(fd);
            free(b);
            return cr_fail(CUDARL_ERR_IO, "cannot read checkpoint '%s': %s", path, strerror(err));
        }
        if (r == 0) break; /* shrank while reading: the checks below see what is there */
        got += (size_t)r;
    }
    close(fd);
    b[got] = 0;
    *bytes = b;
    *size = got;
    return CUDARL_OK;
}

/* *v = x when x is an integer in [0, 2^53]. */
static int json_get_u64(const cJSON *x, uint64_t *v) {
    if (!cJSON_IsNumber(x)) return 0;
    double d = x->valuedouble;
    if (!(d >= 0 && d <= ST_MAX_INT) || d != (double)(uint64_t)d) return 0;
    *v = (uint64_t)d;
    return 1;
}

/* Fills *t (all but data) from the header entry `e`, checking it on its own. */
static cudarl_status tensor_load(const char *path, const cJSON *e, cr_st_tensor *t) {
    const char *name = e->string;
    if (!cJSON_IsObject(e))
        return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s': entry '%s' is not an object with dtype, "
                       "shape and data_offsets; %s", path, name, CORRUPT_HINT);
    const cJSON *dtype = NULL, *shape = NULL, *offsets = NULL;
    for (const cJSON *k = e->child; k; k = k->next) {
        const cJSON **slot = !strcmp(k->string, "dtype")          ? &dtype
                             : !strcmp(k->string, "shape")        ? &shape
                             : !strcmp(k->string, "data_offsets") ? &offsets
                                                                  : NULL;
        if (!slot || *slot)
            return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s': tensor '%s' has %s field '%s'; %s",
                           path, name, slot ? "a second" : "an unknown", k->string, CORRUPT_HINT);
        *slot = k;
    }
    if (!dtype || !shape || !offsets)
        return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s': tensor '%s' has no '%s' field; %s", path,
                       name, !dtype ? "dtype" : !shape ? "shape" : "data_offsets", CORRUPT_HINT);

    int dt = 0;
    while (cJSON_IsString(dtype) && dt < CR_ST_DTYPE_COUNT && strcmp(dtype->valuestring, dtypes[dt].name))
        dt++;
    if (!cJSON_IsString(dtype)) dt = CR_ST_DTYPE_COUNT;
    if (dt == CR_ST_DTYPE_COUNT)
        return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s': tensor '%s' has unknown dtype '%s'; this "
                       "reader knows " KNOWN_DTYPES, path, name,
                       cJSON_IsString(dtype) ? dtype->valuestring : "(not a string)");
    t->name = name;
    t->dtype = (cr_st_dtype)dt;

    if (!cJSON_IsArray(shape))
        return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s': the shape of tensor '%s' is not an "
                       "array; %s", path, name, CORRUPT_HINT);
    int ndim = cJSON_GetArraySize(shape);
    if (ndim > CR_ST_MAX_DIMS)
        return cr_fail(CUDARL_ERR_UNSUPPORTED, "checkpoint '%s': tensor '%s' has %d dimensions; this "
                       "reader supports at most %d", path, name, ndim, CR_ST_MAX_DIMS);
    t->ndim = ndim;
    double bytes = (double)dtypes[dt].size;
    int d = 0;
    for (const cJSON *x = shape->child; x; x = x->next, d++) {
        uint64_t v;
        if (!json_get_u64(x, &v))
            return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s': dimension %d of tensor '%s' is not "
                           "an integer in [0, 2^53]; %s", path, d, name, CORRUPT_HINT);
        t->shape[d] = (int64_t)v;
        bytes *= (double)v;
    }
    char sbuf[160];
    shape_format(sbuf, sizeof sbuf, ndim, t->shape);
    if (bytes > ST_MAX_INT)
        return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s': tensor '%s' of shape %s is too large; %s",
                       path, name, sbuf, CORRUPT_HINT);
    t->count = 1;
    for (d = 0; d < ndim; d++) t->count *= (size_t)t->shape[d];
    t->nbytes = t->count * dtypes[dt].size;

    uint64_t begin, end;
    if (!cJSON_IsArray(offsets) || cJSON_GetArraySize(offsets) != 2 ||
        !json_get_u64(offsets->child, &begin) || !json_get_u64(offsets->child->next, &end) ||
        end < begin)
        return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s': data_offsets of tensor '%s' are not "
                       "[begin, end] with 0 <= begin <= end; %s", path, name, CORRUPT_HINT);
    if (end - begin != t->nbytes)
        return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s': tensor '%s' of shape %s and dtype %s "
                       "needs %zu bytes but its data_offsets [%llu, %llu] hold %llu; %s", path, name,
                       sbuf, dtypes[dt].name, t->nbytes, (unsigned long long)begin,
                       (unsigned long long)end, (unsigned long long)(end - begin), CORRUPT_HINT);
    t->offset = (size_t)begin;
    return CUDARL_OK;
}

static int tensor_cmp_name(const void *a, const void *b) {
    return strcmp(((const cr_st_tensor *)a)->name, ((const cr_st_tensor *)b)->name);
}

static int tensor_cmp_offset(const void *a, const void *b) {
    const cr_st_tensor *x = a, *y = b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    if (x->nbytes != y->nbytes) return x->nbytes < y->nbytes ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int meta_cmp_key(const void *a, const void *b) {
    return strcmp(((const cr_st_meta_entry *)a)->key, ((const cr_st_meta_entry *)b)->key);
}

/* Checks that the tensors tile [0, buffer) exactly; they come back in name order. */
static cudarl_status tensors_check_layout(const cr_st_file *f, size_t buffer) {
    const char *path = f->path;
    cr_st_tensor *t = f->tensors;
    int n = f->ntensors;
    qsort(t, (size_t)n, sizeof *t, tensor_cmp_name);
    for (int i = 1; i < n; i++)
        if (!strcmp(t[i - 1].name, t[i].name))
            return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s' has tensor '%s' twice; %s", path,
                           t[i].name, CORRUPT_HINT);
    qsort(t, (size_t)n, sizeof *t, tensor_cmp_offset);
    size_t end = 0;
    for (int i = 0; i < n; i++) {
        if (t[i].offset < end)
            return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s': tensors '%s' [%zu, %zu] and '%s' "
                           "[%zu, %zu] overlap; %s", path, t[i - 1].name, t[i - 1].offset,
                           t[i - 1].offset + t[i - 1].nbytes, t[i].name, t[i].offset,
                           t[i].offset + t[i].nbytes, CORRUPT_HINT);
        if (t[i].offset > end)
            return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s': a gap of %zu bytes lies before tensor "
                           "'%s' at buffer offset %zu; %s", path, t[i].offset - end, t[i].name, end,
                           CORRUPT_HINT);
        end = t[i].offset + t[i].nbytes;
    }
    if (end > buffer)
        return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s' is truncated: its tensors need %zu bytes "
                       "of data but the file holds %zu; " TRUNCATED_HINT, path, end, buffer);
    if (end < buffer)
        return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s' has %zu trailing bytes after the last "
                       "tensor's data; %s", path, buffer - end, CORRUPT_HINT);
    qsort(t, (size_t)n, sizeof *t, tensor_cmp_name);
    return CUDARL_OK;
}

/* Copies `s` to *pool and advances it. */
static const char *pool_copy(char **pool, const char *s) {
    size_t len = strlen(s) + 1;
    char *at = memcpy(*pool, s, len);
    *pool += len;
    return at;
}

/* Fills f's tables (not the data pointers) from the header `root`, copying strings to `pool`. */
static cudarl_status index_fill(cr_st_file *f, const cJSON *root, const cJSON *meta, char *pool) {
    f->path = pool_copy(&pool, f->path);
    int i = 0;
    for (const cJSON *e = root->child; e; e = e->next) {
        if (!strcmp(e->string, "__metadata__")) continue;
        CR_TRY(tensor_load(f->path, e, &f->tensors[i]));
        f->tensors[i++].name = pool_copy(&pool, e->string);
    }
    i = 0;
    for (const cJSON *m = meta ? meta->child : NULL; m; m = m->next, i++) {
        f->meta[i].key = pool_copy(&pool, m->string);
        f->meta[i].value = pool_copy(&pool, m->valuestring);
    }
    qsort(f->meta, (size_t)f->nmeta, sizeof *f->meta, meta_cmp_key);
    for (i = 1; i < f->nmeta; i++)
        if (!strcmp(f->meta[i - 1].key, f->meta[i].key))
            return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s' has metadata '%s' twice; %s", f->path,
                           f->meta[i].key, CORRUPT_HINT);
    return CUDARL_OK;
}

/* Builds *out from the parsed header `root`; bytes[data_start, size) is the tensor buffer.
 * Sizes everything first, then makes one allocation for the struct, tables and strings. */
static cudarl_status header_load(const char *path, const cJSON *root, unsigned char *bytes,
                                 size_t size, size_t data_start, cr_st_file **out) {
    int ntensors = 0, nmeta = 0;
    size_t strings = strlen(path) + 1;
    const cJSON *meta = NULL;
    for (const cJSON *e = root->child; e; e = e->next) {
        if (strcmp(e->string, "__metadata__") != 0) {
            ntensors++;
            strings += strlen(e->string) + 1;
            continue;
        }
        if (cJSON_IsNull(e) && !meta) continue; /* the reference reader takes null as none */
        if (meta || !cJSON_IsObject(e))
            return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s': __metadata__ is %s; %s", path,
                           meta ? "given twice" : "not an object of strings", CORRUPT_HINT);
        meta = e;
        for (const cJSON *m = e->child; m; m = m->next, nmeta++) {
            if (!cJSON_IsString(m))
                return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s': metadata '%s' is not a string; "
                               "%s", path, m->string, CORRUPT_HINT);
            strings += strlen(m->string) + strlen(m->valuestring) + 2;
        }
    }
    cr_st_file *f = malloc(sizeof *f + (size_t)ntensors * sizeof(cr_st_tensor) +
                           (size_t)nmeta * sizeof(cr_st_meta_entry) + strings);
    if (!f) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "cannot allocate the index of checkpoint '%s' "
                           "(%d tensors)", path, ntensors);
    f->bytes = bytes;
    f->size = size;
    f->path = path;
    f->ntensors = ntensors;
    f->nmeta = nmeta;
    f->tensors = (cr_st_tensor *)(f + 1);
    f->meta = (cr_st_meta_entry *)(f->tensors + ntensors);
    cudarl_status s = index_fill(f, root, meta, (char *)(f->meta + nmeta));
    if (s == CUDARL_OK) s = tensors_check_layout(f, size - data_start);
    if (s != CUDARL_OK) {
        free(f);
        return s;
    }
    for (int i = 0; i < ntensors; i++) f->tensors[i].data = bytes + data_start + f->tensors[i].offset;
    *out = f;
    return CUDARL_OK;
}

/* Checks the length prefix and the header text of bytes[0, size), then builds *out. */
static cudarl_status file_parse(const char *path, unsigned char *bytes, size_t size,
                                cr_st_file **out) {
    if (size < 8)
        return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s' is truncated: it has %zu bytes, fewer than "
                       "the 8-byte header length; " TRUNCATED_HINT, path, size);
    uint64_t n = 0;
    for (int k = 7; k >= 0; k--) n = n << 8 | bytes[k];
    if (n > CR_ST_MAX_HEADER)
        return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s' says its header is %llu bytes, over the "
                       "100 MB limit; it is not a safetensors file or its first 8 bytes are "
                       "corrupted", path, (unsigned long long)n);
    if (n > size - 8)
        return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s' is truncated: header says %llu bytes but "
                       "file has %zu after the 8-byte length; " TRUNCATED_HINT, path,
                       (unsigned long long)n, size - 8);
    const char *h = (const char *)bytes + 8;
    size_t bad = json_text_bad_at(bytes + 8, (size_t)n);
    if (bad < n)
        return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s': the header is not UTF-8 JSON text (byte "
                       "0x%02x at header offset %zu); %s", path, bytes[8 + bad], bad, CORRUPT_HINT);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(h, (size_t)n, &end, 0);
    if (!root)
        return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s': the header is not valid JSON (error at "
                       "header offset %zu of %llu); %s", path, end ? (size_t)(end - h) : 0,
                       (unsigned long long)n, CORRUPT_HINT);
    size_t used = (size_t)(end - h), odd = json_first_non_integer(h, used), extra = used;
    while (extra < n && (h[extra] == ' ' || h[extra] == '\t' || h[extra] == '\n' || h[extra] == '\r'))
        extra++;
    cudarl_status s = CUDARL_OK;
    if (!cJSON_IsObject(root))
        s = cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s': the header is not a JSON object; it is not "
                    "a safetensors file", path);
    else if (extra < n)
        s = cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s': the header has bytes after its JSON object "
                    "(at header offset %zu); %s", path, extra, CORRUPT_HINT);
    else if (odd < used)
        s = cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s': the header has a number that is not an "
                    "integer (at header offset %zu); %s", path, odd, CORRUPT_HINT);
    if (s == CUDARL_OK) s = header_load(path, root, bytes, size, 8 + (size_t)n, out);
    cJSON_Delete(root);
    return s;
}

cudarl_status cr_st_open(cr_st_file **out, const char *path) {
    CUDARL_ASSERT(out && path);
    *out = NULL;
    unsigned char *bytes = NULL;
    size_t size = 0;
    CR_TRY(file_read(path, &bytes, &size));
    cudarl_status s = file_parse(path, bytes, size, out);
    if (s != CUDARL_OK) free(bytes);
    return s;
}

void cr_st_close(cr_st_file *f) {
    if (!f) return;
    free(f->bytes);
    free(f);
}

int cr_st_count(const cr_st_file *f) { return f->ntensors; }

const cr_st_tensor *cr_st_at(const cr_st_file *f, int i) {
    CUDARL_ASSERT(i >= 0 && i < f->ntensors);
    return &f->tensors[i];
}

static int tensor_cmp_key(const void *key, const void *t) {
    return strcmp(key, ((const cr_st_tensor *)t)->name);
}

cudarl_status cr_st_find(const cr_st_file *f, const char *name, cr_st_tensor *out) {
    CUDARL_ASSERT(f && name && out);
    const cr_st_tensor *t = bsearch(name, f->tensors, (size_t)f->ntensors, sizeof *t, tensor_cmp_key);
    if (!t)
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s' has no tensor '%s'; it was written for "
                       "another model or by another version", f->path, name);
    *out = *t;
    return CUDARL_OK;
}

cudarl_status cr_st_read_f32(const cr_st_file *f, const char *name, float *dst,
                             size_t expected_count) {
    cr_st_tensor t;
    CR_TRY(cr_st_find(f, name, &t));
    char sbuf[160];
    shape_format(sbuf, sizeof sbuf, t.ndim, t.shape);
    if (t.dtype != CR_ST_F32 || t.count != expected_count)
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s': tensor '%s' is %s of shape %s (%zu "
                       "elements), expected F32 of %zu elements; it was written for another model",
                       f->path, name, dtypes[t.dtype].name, sbuf, t.count, expected_count);
    if (t.nbytes > 0) memcpy(dst, t.data, t.nbytes);
    return CUDARL_OK;
}

static int meta_cmp_key_str(const void *key, const void *m) {
    return strcmp(key, ((const cr_st_meta_entry *)m)->key);
}

const char *cr_st_meta(const cr_st_file *f, const char *key) {
    const cr_st_meta_entry *m = bsearch(key, f->meta, (size_t)f->nmeta, sizeof *m, meta_cmp_key_str);
    return m ? m->value : NULL;
}
