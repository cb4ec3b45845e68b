/* Safetensors checkpoints: a strict reader and an atomic writer.
 *
 * Format: 8-byte little-endian header length N, N bytes of UTF-8 JSON (padded with spaces),
 * then the byte buffer. The JSON maps each tensor name to {"dtype", "shape", "data_offsets":
 * [begin, end]} (offsets relative to the buffer) and may hold "__metadata__": {str: str}.
 * Tensors tile the buffer exactly, without gaps or overlaps. Files are readable by the
 * `safetensors` Python package (numpy, PyTorch) as they are, and its files are readable here.
 *
 * Writing: cr_st_writer_init() a writer (on the stack or host), cr_st_add_tensor() and
 * cr_st_add_meta(), then cr_st_write_atomic(). Reading: cr_st_open(), cr_st_find() or
 * cr_st_read_f32(), cr_st_meta(), cr_st_close(). Bad files never abort: each problem returns
 * CUDARL_ERR_IO, _FORMAT or _MISMATCH with a message naming the file, the problem and the fix. */
#ifndef CUDARL_IO_SAFETENSORS_H
#define CUDARL_IO_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

#define CR_ST_MAX_TENSORS 256          /* tensors one writer holds */
#define CR_ST_MAX_META 64              /* metadata entries one writer holds */
#define CR_ST_MAX_DIMS 8               /* dimensions of a tensor (reader and writer) */
#define CR_ST_MAX_NAME 256             /* bytes of a tensor name or metadata key, with the NUL */
#define CR_ST_MAX_VALUE 16384          /* bytes of a metadata value, with the NUL */
#define CR_ST_WRITER_STRINGS 32768     /* bytes of all names, keys and values of one writer */
#define CR_ST_MAX_HEADER (100u << 20)  /* header length a reader accepts: 100 MB */

/* The element types of the format, one byte or more each (no sub-byte types). */
typedef enum cr_st_dtype {
    CR_ST_BOOL = 0, /* one byte, 0 or 1 */
    CR_ST_U8,
    CR_ST_I8,
    CR_ST_F8_E5M2,
    CR_ST_F8_E4M3,
    CR_ST_I16,
    CR_ST_U16,
    CR_ST_F16,
    CR_ST_BF16,
    CR_ST_I32,
    CR_ST_U32,
    CR_ST_F32,
    CR_ST_F64,
    CR_ST_I64,
    CR_ST_U64,
    CR_ST_DTYPE_COUNT
} cr_st_dtype;

/* The format's name of `dtype` ("F32"), or "?" for a value out of range; static storage. */
const char *cr_st_dtype_name(cr_st_dtype dtype);
/* Bytes per element of `dtype`; 0 for a value out of range. */
size_t cr_st_dtype_size(cr_st_dtype dtype);

/* ---- writer ------------------------------------------------------------------------- */

typedef struct cr_st_writer_tensor {
    uint32_t name;                  /* offset into strings */
    cr_st_dtype dtype;
    int ndim;
    int64_t shape[CR_ST_MAX_DIMS];
    const void *data;               /* (host) the caller's; read only by cr_st_write_atomic */
    size_t nbytes;
} cr_st_writer_tensor;

/* Names, shapes and metadata are copied in; tensor data is not. About 60 KB. A failed add is
 * remembered, and cr_st_write_atomic() then refuses to write: checking each add is optional. */
typedef struct cr_st_writer {
    cudarl_status status;  /* of the first failed add */
    char error[256];       /* its message */
    int ntensors, nmeta;
    size_t strings_used;
    cr_st_writer_tensor tensors[CR_ST_MAX_TENSORS];
    uint32_t meta[CR_ST_MAX_META][2]; /* key, value: offsets into strings */
    char strings[CR_ST_WRITER_STRINGS];
} cr_st_writer;

/* Empties `w` (caller-owned memory: stack or host). */
void cr_st_writer_init(cr_st_writer *w);
/* Appends tensor `name` of `ndim` dims `shape` (ndim 0: a scalar); `data` (host, row-major,
 * may be NULL when the tensor is empty) must stay valid until cr_st_write_atomic(). Data is
 * laid out in the order added: add wider dtypes first to keep every tensor aligned. */
cudarl_status cr_st_add_tensor(cr_st_writer *w, const char *name, cr_st_dtype dtype, int ndim,
                               const int64_t *shape, const void *data);
/* Appends metadata `key` = `value` (both UTF-8, copied into the writer). */
cudarl_status cr_st_add_meta(cr_st_writer *w, const char *key, const char *value);
/* Writes `path` atomically through io/output_file.h: `<path>.tmp.<pid>` in the same directory,
 * fsync, rename over `path`, fsync the directory; `path` must be missing or a regular file (not
 * a directory, FIFO, device or symbolic link). On failure (or after a failed add) the temp file
 * is removed and `path` is untouched. */
cudarl_status cr_st_write_atomic(const cr_st_writer *w, const char *path);

/* ---- reader ------------------------------------------------------------------------- */

/* A view of one tensor of an open file; valid until cr_st_close(). */
typedef struct cr_st_tensor {
    const char *name;
    cr_st_dtype dtype;
    int ndim;
    int64_t shape[CR_ST_MAX_DIMS];
    size_t count;      /* elements: product of shape, 1 for a scalar */
    size_t nbytes;
    size_t offset;     /* of the data in the file's byte buffer (data_offsets[0]) */
    const void *data;  /* (host) inside the file's allocation; may be unaligned: memcpy it */
} cr_st_tensor;

typedef struct cr_st_file cr_st_file;

/* Reads and validates all of `path` into one host allocation; *out owns it (cr_st_close). */
cudarl_status cr_st_open(cr_st_file **out, const char *path);
/* Frees the file and every view into it (NULL is fine). */
void cr_st_close(cr_st_file *f);
/* Number of tensors in the file. */
int cr_st_count(const cr_st_file *f);
/* Tensor `i` (0 <= i < cr_st_count) in name order; the view lives in the file's memory. */
const cr_st_tensor *cr_st_at(const cr_st_file *f, int i);
/* Copies the view of tensor `name` to *out; CUDARL_ERR_MISMATCH naming it when it is absent. */
cudarl_status cr_st_find(const cr_st_file *f, const char *name, cr_st_tensor *out);
/* Copies F32 tensor `name` of exactly `expected_count` elements to `dst` (host); a missing
 * tensor, another dtype or another count is CUDARL_ERR_MISMATCH. */
cudarl_status cr_st_read_f32(const cr_st_file *f, const char *name, float *dst,
                             size_t expected_count);
/* The metadata value of `key` (in the file's memory), or NULL when absent. */
const char *cr_st_meta(const cr_st_file *f, const char *key);

#endif
