/* Safetensors: round trip, atomic writes, writer arguments, corrupted and mismatching files.
 *
 *   test_safetensors               the unit tests, in a fresh temporary directory
 *   test_safetensors --write PATH  writes the file that `safetensors_check.py --check` loads
 *   test_safetensors --read PATH   checks the file that `safetensors_check.py --write` wrote */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "io/safetensors.h"

static char tmpdir[256];

/* tmpdir/name into buf (512 bytes). */
static const char *tmp_path(char buf[static 512], const char *name) {
    snprintf(buf, 512, "%s/%s", tmpdir, name);
    return buf;
}

/* ---- the interop file: what --write writes and safetensors_check.py --check expects ---- */

static const double c_scalar = -2.5;                                  /* () */
static const float c_weights[6] = {-1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 1.5f}; /* (2, 3) */
static const int64_t c_i64[4] = {-(INT64_C(1) << 62), -1, 0, INT64_C(1) << 40};
static const uint8_t c_mask[5] = {1, 0, 1, 1, 0};
static const uint8_t c_bytes[2] = {0, 255};
static const float c_unaligned[3] = {1.25f, -3.0f, 1e-8f}; /* lands at buffer offset 71 */
static const int32_t c_i32[4] = {-7, 0, 7, INT32_MAX};     /* (2, 2) */
static const uint32_t c_u32[3] = {0, 1, UINT32_MAX};
static const char *const c_note = "quote \" backslash \\ newline \n tab \t unicode é ✓";

static void interop_fill(cr_st_writer *w) {
    cr_st_writer_init(w);
    CHECK_OK(cr_st_add_tensor(w, "scalar_f64", CR_ST_F64, 0, NULL, &c_scalar));
    CHECK_OK(cr_st_add_tensor(w, "actor/0.weight", CR_ST_F32, 2, (int64_t[]){2, 3}, c_weights));
    CHECK_OK(cr_st_add_tensor(w, "i64", CR_ST_I64, 1, (int64_t[]){4}, c_i64));
    CHECK_OK(cr_st_add_tensor(w, "mask", CR_ST_BOOL, 1, (int64_t[]){5}, c_mask));
    CHECK_OK(cr_st_add_tensor(w, "bytes", CR_ST_U8, 1, (int64_t[]){2}, c_bytes));
    CHECK_OK(cr_st_add_tensor(w, "unaligned.é", CR_ST_F32, 1, (int64_t[]){3}, c_unaligned));
    CHECK_OK(cr_st_add_tensor(w, "i32", CR_ST_I32, 2, (int64_t[]){2, 2}, c_i32));
    CHECK_OK(cr_st_add_tensor(w, "u32", CR_ST_U32, 1, (int64_t[]){3}, c_u32));
    CHECK_OK(cr_st_add_tensor(w, "empty", CR_ST_F32, 2, (int64_t[]){0, 4}, NULL));
    CHECK_OK(cr_st_add_meta(w, "format", "cudarl"));
    CHECK_OK(cr_st_add_meta(w, "step", "12345"));
    CHECK_OK(cr_st_add_meta(w, "note", c_note));
}

/* Checks tensor `name` has `dtype`, shape `shape` and bytes `want`. */
static void check_tensor(const cr_st_file *f, const char *name, cr_st_dtype dtype, int ndim,
                         const int64_t *shape, const void *want) {
    cr_st_tensor t;
    CHECK_OK(cr_st_find(f, name, &t));
    CHECK_MSG(!strcmp(t.name, name), "expected name '%s', got '%s'", name, t.name);
    CHECK_MSG(t.dtype == dtype, "%s: expected dtype %s, got %s", name, cr_st_dtype_name(dtype),
              cr_st_dtype_name(t.dtype));
    CHECK_MSG(t.ndim == ndim, "%s: expected %d dims, got %d", name, ndim, t.ndim);
    size_t count = 1;
    for (int d = 0; d < ndim; d++) {
        CHECK_MSG(t.shape[d] == shape[d], "%s: dim %d: expected %lld, got %lld", name, d,
                  (long long)shape[d], (long long)t.shape[d]);
        count *= (size_t)shape[d];
    }
    CHECK_MSG(t.count == count, "%s: expected %zu elements, got %zu", name, count, t.count);
    CHECK_MSG(t.nbytes == count * cr_st_dtype_size(dtype), "%s: nbytes %zu", name, t.nbytes);
    CHECK_MSG(t.nbytes == 0 || !memcmp(t.data, want, t.nbytes), "%s: data differs", name);
}

static void check_meta(const cr_st_file *f, const char *key, const char *want) {
    const char *got = cr_st_meta(f, key);
    CHECK_MSG(got && !strcmp(got, want), "metadata '%s': expected '%s', got '%s'", key, want,
              got ? got : "(absent)");
}

static void interop_check_c_file(const char *path) {
    cr_st_file *f;
    CHECK_OK(cr_st_open(&f, path));
    CHECK_MSG(cr_st_count(f) == 9, "expected 9 tensors, got %d", cr_st_count(f));
    for (int i = 1; i < cr_st_count(f); i++)
        CHECK(strcmp(cr_st_at(f, i - 1)->name, cr_st_at(f, i)->name) < 0);
    check_tensor(f, "scalar_f64", CR_ST_F64, 0, NULL, &c_scalar);
    check_tensor(f, "actor/0.weight", CR_ST_F32, 2, (int64_t[]){2, 3}, c_weights);
    check_tensor(f, "i64", CR_ST_I64, 1, (int64_t[]){4}, c_i64);
    check_tensor(f, "mask", CR_ST_BOOL, 1, (int64_t[]){5}, c_mask);
    check_tensor(f, "bytes", CR_ST_U8, 1, (int64_t[]){2}, c_bytes);
    check_tensor(f, "unaligned.é", CR_ST_F32, 1, (int64_t[]){3}, c_unaligned);
    check_tensor(f, "i32", CR_ST_I32, 2, (int64_t[]){2, 2}, c_i32);
    check_tensor(f, "u32", CR_ST_U32, 1, (int64_t[]){3}, c_u32);
    check_tensor(f, "empty", CR_ST_F32, 2, (int64_t[]){0, 4}, NULL);
    cr_st_tensor t;
    CHECK_OK(cr_st_find(f, "unaligned.é", &t));
    CHECK_MSG(t.offset == 71, "expected offset 71, got %zu", t.offset);
    float w[6], u[3];
    CHECK_OK(cr_st_read_f32(f, "actor/0.weight", w, 6));
    CHECK_OK(cr_st_read_f32(f, "unaligned.é", u, 3));
    CHECK_OK(cr_st_read_f32(f, "empty", NULL, 0));
    for (int i = 0; i < 6; i++) CHECK_CLOSE("actor/0.weight", w[i], c_weights[i], 0, 0);
    for (int i = 0; i < 3; i++) CHECK_CLOSE("unaligned.é", u[i], c_unaligned[i], 0, 0);
    check_meta(f, "format", "cudarl");
    check_meta(f, "step", "12345");
    check_meta(f, "note", c_note);
    CHECK(cr_st_meta(f, "absent") == NULL);
    cr_st_close(f);
}

/* The file safetensors_check.py --write makes with safetensors.numpy.save_file. */
static void interop_check_py_file(const char *path) {
    static const float a[6] = {-0.5f, -0.25f, 0.0f, 0.25f, 0.5f, 0.75f};
    static const double b = 1.5;
    static const int64_t c[3] = {-5, INT64_C(1) << 50, -(INT64_C(1) << 62)};
    static const int32_t d[4] = {1, -2, 3, -4};
    static const uint8_t e[3] = {0, 200, 255}, bools[3] = {1, 0, 1};
    static const uint16_t g[2] = {0x3C00, 0xC000}; /* float16 1.0, -2.0 */
    cr_st_file *f;
    CHECK_OK(cr_st_open(&f, path));
    CHECK_MSG(cr_st_count(f) == 8, "expected 8 tensors, got %d", cr_st_count(f));
    check_tensor(f, "a_f32", CR_ST_F32, 2, (int64_t[]){2, 3}, a);
    check_tensor(f, "b_f64_scalar", CR_ST_F64, 0, NULL, &b);
    check_tensor(f, "c_i64", CR_ST_I64, 1, (int64_t[]){3}, c);
    check_tensor(f, "d_i32", CR_ST_I32, 2, (int64_t[]){2, 2}, d);
    check_tensor(f, "e_u8", CR_ST_U8, 1, (int64_t[]){3}, e);
    check_tensor(f, "f_bool", CR_ST_BOOL, 1, (int64_t[]){3}, bools);
    check_tensor(f, "g_f16", CR_ST_F16, 1, (int64_t[]){2}, g);
    check_tensor(f, "h_empty", CR_ST_F32, 2, (int64_t[]){0, 3}, NULL);
    float got[6];
    CHECK_OK(cr_st_read_f32(f, "a_f32", got, 6));
    for (int i = 0; i < 6; i++) CHECK_CLOSE("a_f32", got[i], a[i], 0, 0);
    check_meta(f, "source", "safetensors.numpy");
    check_meta(f, "note", "quote \" backslash \\ é");
    cr_st_close(f);
}

/* ---- unit tests ----------------------------------------------------------------------- */

/* Entries of tmpdir whose name contains `part`. */
static int tmp_count(const char *part) {
    DIR *d = opendir(tmpdir);
    CHECK(d != NULL);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += strstr(e->d_name, part) != NULL;
    closedir(d);
    return n;
}

static void check_error(cudarl_status got, cudarl_status want, const char *what, const char *part) {
    CHECK_MSG(got == want, "%s: expected %s, got %s (%s)", what, cudarl_status_name(want),
              cudarl_status_name(got), cudarl_last_error());
    CHECK_MSG(strstr(cudarl_last_error(), part), "%s: message '%s' lacks '%s'", what,
              cudarl_last_error(), part);
}

/* Opening `path` fails with `want`; the message names the path and contains `part`. */
static void expect_open_fail(const char *path, cudarl_status want, const char *part) {
    cr_st_file *f = (cr_st_file *)&f;
    check_error(cr_st_open(&f, path), want, path, part);
    CHECK_MSG(f == NULL, "%s: failed open left a handle", path);
    CHECK_MSG(strstr(cudarl_last_error(), path), "message '%s' does not name '%s'",
              cudarl_last_error(), path);
}

static void file_write(const char *path, const void *bytes, size_t n) {
    FILE *fp = fopen(path, "wb");
    CHECK_MSG(fp && fwrite(bytes, 1, n, fp) == n && fclose(fp) == 0, "cannot write %s", path);
}

/* Writes a file of header length `prefix`, header text `json` and `data` zero bytes. */
static void raw_write(const char *path, uint64_t prefix, const char *json, size_t data) {
    size_t n = strlen(json);
    unsigned char *b = calloc(8 + n + data, 1);
    CHECK(b != NULL);
    for (int k = 0; k < 8; k++) b[k] = (unsigned char)(prefix >> (8 * k));
    memcpy(b + 8, json, n);
    file_write(path, b, 8 + n + data);
    free(b);
}

/* A file of header `json` followed by `data` zero bytes fails to open with `want`/`part`. */
static void expect_header_fail(const char *json, size_t data, cudarl_status want, const char *part) {
    char p[512];
    raw_write(tmp_path(p, "raw.safetensors"), strlen(json), json, data);
    expect_open_fail(p, want, part);
}

static void test_round_trip(void) {
    char p[512];
    cr_st_writer w;
    interop_fill(&w);
    CHECK_OK(cr_st_write_atomic(&w, tmp_path(p, "model.safetensors")));
    interop_check_c_file(p);

    struct stat st;
    CHECK(stat(p, &st) == 0);
    FILE *fp = fopen(p, "rb");
    unsigned char prefix[8];
    CHECK(fp && fread(prefix, 1, 8, fp) == 8);
    fclose(fp);
    uint64_t n = 0;
    for (int k = 7; k >= 0; k--) n = n << 8 | prefix[k];
    CHECK_MSG(n % 8 == 0, "header length %llu is not padded to 8", (unsigned long long)n);
    size_t data = 8 + 24 + 32 + 5 + 2 + 12 + 16 + 12;
    CHECK_MSG((uint64_t)st.st_size == 8 + n + data, "file size %lld, header %llu",
              (long long)st.st_size, (unsigned long long)n);

    /* An empty writer makes a valid empty file. */
    cr_st_writer_init(&w);
    CHECK_OK(cr_st_write_atomic(&w, tmp_path(p, "empty.safetensors")));
    cr_st_file *f;
    CHECK_OK(cr_st_open(&f, p));
    CHECK(cr_st_count(f) == 0 && cr_st_meta(f, "format") == NULL);
    cr_st_close(f);
    cr_st_close(NULL);
}

static void test_atomic(void) {
    char p[512], dir[512];
    cr_st_writer w;
    interop_fill(&w);
    CHECK_OK(cr_st_write_atomic(&w, tmp_path(p, "atomic.safetensors")));
    float v = 42.0f;
    cr_st_writer_init(&w);
    CHECK_OK(cr_st_add_tensor(&w, "v", CR_ST_F32, 0, NULL, &v));
    CHECK_OK(cr_st_write_atomic(&w, p)); /* replaces the first file */
    cr_st_file *f;
    CHECK_OK(cr_st_open(&f, p));
    CHECK(cr_st_count(f) == 1);
    float got = 0;
    CHECK_OK(cr_st_read_f32(f, "v", &got, 1));
    CHECK_CLOSE("v", got, 42.0f, 0, 0);
    cr_st_close(f);
    CHECK_MSG(tmp_count(".tmp.") == 0, "a temp file was left behind");

    /* A directory is refused, not replaced, and no temp file is left. */
    CHECK(mkdir(tmp_path(dir, "a_directory"), 0700) == 0);
    check_error(cr_st_write_atomic(&w, dir), CUDARL_ERR_IO, "write over a directory",
                "is a directory");
    CHECK_MSG(tmp_count(".tmp.") == 0, "a failed write left its temp file");
    expect_open_fail(dir, CUDARL_ERR_IO, "is not a regular file");
}

static void test_missing_dir(void) {
    char p[512];
    cr_st_writer w;
    interop_fill(&w);
    tmp_path(p, "no/such/dir/model.safetensors");
    check_error(cr_st_write_atomic(&w, p), CUDARL_ERR_IO, "missing directory",
                "does not exist");
    CHECK(strstr(cudarl_last_error(), p));
    CHECK(strstr(cudarl_last_error(), "create it (mkdir -p"));
    expect_open_fail(p, CUDARL_ERR_IO, "cannot open checkpoint");
    CHECK(strstr(cudarl_last_error(), "No such file or directory"));
}

static void test_writer_args(void) {
    static cr_st_writer w; /* static: keep the big struct off this frame twice over */
    float x[2] = {0};
    int64_t one = 1, neg = -3;
    cudarl_status bad = CUDARL_ERR_INVALID_ARG;
    cr_st_writer_init(&w);
    check_error(cr_st_add_tensor(&w, "", CR_ST_F32, 1, &one, x), bad, "empty name", "empty");
    check_error(cr_st_add_tensor(&w, "__metadata__", CR_ST_F32, 1, &one, x), bad, "reserved",
                "reserved");
    check_error(cr_st_add_tensor(&w, "n", CR_ST_F32, 1, &neg, x), bad, "negative dim", "-3");
    check_error(cr_st_add_tensor(&w, "n", CR_ST_F32, 9, (int64_t[9]){1}, x), bad, "9 dims",
                "9 dimensions");
    check_error(cr_st_add_tensor(&w, "n", CR_ST_DTYPE_COUNT, 1, &one, x), bad, "dtype", "dtype");
    check_error(cr_st_add_tensor(&w, "n", CR_ST_F32, 1, &one, NULL), bad, "NULL data", "NULL");
    check_error(cr_st_add_tensor(&w, "bad\xff", CR_ST_F32, 1, &one, x), bad, "utf-8", "UTF-8");
    char long_name[CR_ST_MAX_NAME + 1];
    memset(long_name, 'a', CR_ST_MAX_NAME);
    long_name[CR_ST_MAX_NAME] = 0;
    check_error(cr_st_add_tensor(&w, long_name, CR_ST_F32, 1, &one, x), bad, "long name",
                "at most 255");
    CHECK_OK(cr_st_add_tensor(&w, "x", CR_ST_F32, 1, &one, x));
    check_error(cr_st_add_tensor(&w, "x", CR_ST_F32, 1, &one, x), bad, "duplicate", "twice");
    CHECK_OK(cr_st_add_meta(&w, "k", "v"));
    check_error(cr_st_add_meta(&w, "k", "w"), bad, "duplicate meta", "twice");
    check_error(cr_st_add_meta(&w, "k2", NULL), bad, "NULL value", "NULL");
    for (int i = 1; i < CR_ST_MAX_TENSORS; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%d", i);
        CHECK_OK(cr_st_add_tensor(&w, name, CR_ST_F32, 1, &one, x));
    }
    check_error(cr_st_add_tensor(&w, "one_more", CR_ST_F32, 1, &one, x), bad, "too many",
                "at most 256 tensors");
    CHECK(w.ntensors == CR_ST_MAX_TENSORS && w.nmeta == 1);

    /* The first failed add is remembered: the write is refused and nothing is written. */
    char p[512];
    check_error(cr_st_write_atomic(&w, tmp_path(p, "refused.safetensors")), bad, "sticky",
                "an earlier add failed: safetensors: a tensor name must not be empty");
    CHECK(access(p, F_OK) != 0 && tmp_count(".tmp.") == 0);
}

static void test_truncated(void) {
    char p[512], q[512];
    cr_st_writer w;
    interop_fill(&w);
    CHECK_OK(cr_st_write_atomic(&w, tmp_path(p, "whole.safetensors")));
    struct stat st;
    CHECK(stat(p, &st) == 0);
    size_t size = (size_t)st.st_size;
    unsigned char *b = malloc(size + 1);
    FILE *fp = fopen(p, "rb");
    CHECK(b && fp && fread(b, 1, size, fp) == size);
    fclose(fp);
    size_t n = (size_t)b[0] | (size_t)b[1] << 8; /* the header is shorter than 64 KiB */
    const struct {
        size_t keep;
        const char *part;
    } cuts[] = {
        {0, "fewer than the 8-byte header length"},
        {3, "fewer than the 8-byte header length"},
        {7, "truncated"},
        {8, "header says"},
        {8 + n / 2, "header says"},
        {8 + n - 1, "header says"},
        {8 + n, "tensors need"},
        {8 + n + 10, "tensors need"},
        {size - 1, "tensors need"},
    };
    tmp_path(q, "cut.safetensors");
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        file_write(q, b, cuts[i].keep);
        expect_open_fail(q, CUDARL_ERR_FORMAT, cuts[i].part);
        CHECK(strstr(cudarl_last_error(), "truncated"));
        CHECK(strstr(cudarl_last_error(), "re-copy it or use an earlier checkpoint"));
    }
    b[size] = 0;
    file_write(q, b, size + 1);
    expect_open_fail(q, CUDARL_ERR_FORMAT, "1 trailing bytes");
    free(b);
}

static void test_corrupt_headers(void) {
    char p[512];
    const cudarl_status fmt = CUDARL_ERR_FORMAT;
    raw_write(tmp_path(p, "huge.safetensors"), UINT64_C(1) << 40, "{}", 0);
    expect_open_fail(p, fmt, "over the 100 MB limit");
    raw_write(p, 0, "", 0);
    expect_open_fail(p, fmt, "not valid JSON");

    expect_header_fail("{\"a\": {\"dtype\": \"F32\",", 0, fmt, "not valid JSON");
    expect_header_fail("[1, 2]", 0, fmt, "not a JSON object");
    expect_header_fail("{} x", 0, fmt, "after its JSON object");
    expect_header_fail("{\"\xff\": 1}", 0, fmt, "not UTF-8");
    expect_header_fail("{\"a\": 5}", 0, fmt, "entry 'a' is not an object");
    expect_header_fail("{\"a\": {\"dtype\": \"F17\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 4,
                       fmt, "unknown dtype 'F17'");
    expect_header_fail("{\"a\": {\"dtype\": 7, \"shape\": [1], \"data_offsets\": [0, 4]}}", 4, fmt,
                       "unknown dtype");
    expect_header_fail("{\"a\": {\"dtype\": \"F32\", \"shape\": [2, 3], \"data_offsets\": [0, 20]}}",
                       20, fmt, "needs 24 bytes but its data_offsets [0, 20] hold 20");
    expect_header_fail("{\"a\": {\"dtype\": \"U8\", \"shape\": [8], \"data_offsets\": [0, 8]},"
                       " \"b\": {\"dtype\": \"U8\", \"shape\": [8], \"data_offsets\": [4, 12]}}",
                       12, fmt, "'a' [0, 8] and 'b' [4, 12] overlap");
    expect_header_fail("{\"a\": {\"dtype\": \"U8\", \"shape\": [4], \"data_offsets\": [0, 4]},"
                       " \"b\": {\"dtype\": \"U8\", \"shape\": [4], \"data_offsets\": [8, 12]}}",
                       12, fmt, "gap of 4 bytes lies before tensor 'b'");
    expect_header_fail("{\"a\": {\"dtype\": \"U8\", \"shape\": [4], \"data_offsets\": [0, 4]},"
                       " \"a\": {\"dtype\": \"U8\", \"shape\": [4], \"data_offsets\": [4, 8]}}",
                       8, fmt, "tensor 'a' twice");
    expect_header_fail("{\"a\": {\"dtype\": \"U8\", \"shape\": [-1], \"data_offsets\": [0, 0]}}", 0,
                       fmt, "dimension 0 of tensor 'a'");
    expect_header_fail("{\"a\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0.5, 1]}}", 1,
                       fmt, "number that is not an integer (at header offset 54)");
    expect_header_fail("{\"a\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1e0]}}", 1,
                       fmt, "number that is not an integer");
    expect_header_fail("{\"a\": {\"dtype\": \"U8\", \"shape\": [1.0], \"data_offsets\": [0, 1]}}", 1,
                       fmt, "number that is not an integer");
    expect_header_fail("{\"a\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [1, 0]}}", 1,
                       fmt, "data_offsets of tensor 'a'");
    expect_header_fail("{\"a\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1, 2]}}", 1,
                       fmt, "data_offsets of tensor 'a'");
    expect_header_fail("{\"a\": {\"dtpye\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1]}}", 1,
                       fmt, "unknown field 'dtpye'");
    expect_header_fail("{\"a\": {\"dtype\": \"U8\", \"data_offsets\": [0, 1]}}", 1, fmt,
                       "no 'shape' field");
    expect_header_fail("{\"a\": {\"dtype\": \"U8\", \"shape\": [1, 1, 1, 1, 1, 1, 1, 1, 1], "
                       "\"data_offsets\": [0, 1]}}", 1, CUDARL_ERR_UNSUPPORTED, "9 dimensions");
    expect_header_fail("{\"__metadata__\": {\"k\": 1}}", 0, fmt, "metadata 'k' is not a string");
    expect_header_fail("{\"__metadata__\": [\"k\"]}", 0, fmt, "__metadata__ is not an object");
    expect_header_fail("{\"__metadata__\": {\"k\": \"v\", \"k\": \"w\"}}", 0, fmt,
                       "metadata 'k' twice");

    /* Valid by hand: whitespace, null metadata, any order, zero-size tensors sharing an offset. */
    const char *valid = " {\"b\": {\"dtype\": \"U8\", \"shape\": [2], \"data_offsets\": [2, 4]},"
                        " \"__metadata__\": null,"
                        " \"z1e5.\\\"\": {\"dtype\": \"F32\", \"shape\": [0], \"data_offsets\": [2, 2]},"
                        " \"a\": {\"dtype\": \"I16\", \"shape\": [], \"data_offsets\": [0, 2]}}   ";
    raw_write(p, strlen(valid), valid, 4);
    cr_st_file *f;
    CHECK_OK(cr_st_open(&f, p));
    CHECK(cr_st_count(f) == 3 && !strcmp(cr_st_at(f, 0)->name, "a"));
    CHECK(!strcmp(cr_st_at(f, 1)->name, "b") && !strcmp(cr_st_at(f, 2)->name, "z1e5.\""));
    CHECK(cr_st_at(f, 2)->count == 0 && cr_st_at(f, 2)->offset == 2);
    cr_st_close(f);
}

static void test_mismatch(void) {
    char p[512];
    cr_st_writer w;
    interop_fill(&w);
    CHECK_OK(cr_st_write_atomic(&w, tmp_path(p, "mismatch.safetensors")));
    cr_st_file *f;
    CHECK_OK(cr_st_open(&f, p));
    cr_st_tensor t;
    float buf[8];
    const cudarl_status mm = CUDARL_ERR_MISMATCH;
    check_error(cr_st_find(f, "critic/0.weight", &t), mm, "find", "no tensor 'critic/0.weight'");
    check_error(cr_st_read_f32(f, "critic/0.weight", buf, 6), mm, "read", "no tensor");
    check_error(cr_st_read_f32(f, "actor/0.weight", buf, 7), mm, "count",
                "tensor 'actor/0.weight' is F32 of shape [2, 3] (6 elements), expected F32 of 7");
    check_error(cr_st_read_f32(f, "i64", buf, 4), mm, "dtype", "is I64 of shape [4]");
    check_error(cr_st_read_f32(f, "scalar_f64", buf, 1), mm, "scalar", "is F64 of shape []");
    CHECK(strstr(cudarl_last_error(), p));
    cr_st_close(f);
}

static void tmp_remove_all(void) {
    DIR *d = opendir(tmpdir);
    CHECK(d != NULL);
    for (struct dirent *e; (e = readdir(d));) {
        char p[512];
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        tmp_path(p, e->d_name);
        CHECK_MSG(unlink(p) == 0 || rmdir(p) == 0, "cannot remove %s", p);
    }
    closedir(d);
    CHECK(rmdir(tmpdir) == 0);
}

static int run_unit_tests(void) {
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/cudarl_st_XXXXXX", base && *base ? base : "/tmp");
    CHECK_MSG(mkdtemp(tmpdir) != NULL, "cannot create a temporary directory under %s", tmpdir);
    test_round_trip();
    test_atomic();
    test_missing_dir();
    test_writer_args();
    test_truncated();
    test_corrupt_headers();
    test_mismatch();
    tmp_remove_all();
    printf("test_safetensors: ok\n");
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 1) return run_unit_tests();
    if (argc == 3 && !strcmp(argv[1], "--write")) {
        cr_st_writer w;
        interop_fill(&w);
        CHECK_OK(cr_st_write_atomic(&w, argv[2]));
        interop_check_c_file(argv[2]);
        printf("test_safetensors: wrote %s\n", argv[2]);
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "--read")) {
        interop_check_py_file(argv[2]);
        printf("test_safetensors: read %s: ok\n", argv[2]);
        return 0;
    }
    fprintf(stderr, "usage: %s [--write PATH | --read PATH]\n", argv[0]);
    return 2;
}
