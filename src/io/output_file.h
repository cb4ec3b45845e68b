/* Output files: every file cudarl writes goes through here, so none can destroy what it should
 * not. A file written whole (a checkpoint, an ONNX model, a JSON report, a PNG) is written to
 * `<path>.tmp.<pid>` beside its target, fsynced and renamed over it, and its directory fsynced:
 * a reader sees the old file or the new one, never a part. A file appended to while a run goes
 * (metrics.csv, a TensorBoard event file) is opened in place, never through a link.
 *
 * Targets: a missing path or an existing regular file. Everything else is refused with the path,
 * what it is and the fix: a directory, a FIFO, a device, a socket, and a symbolic link whatever
 * it points to (renaming over a link replaces the link, not its target, and writing through one
 * writes where the path does not say). The check runs when the file is opened and again just
 * before the rename; cr_out_check runs it alone, before long work, so that a bad path fails at
 * once rather than after an hour of training. Temp files are removed on every failure path; one
 * left by a process killed while writing (SIGKILL, a power cut) is removed when its run folder
 * is next claimed (cr_out_remove_temps). One writer per target at a time. */
#ifndef CUDARL_IO_OUTPUT_FILE_H
#define CUDARL_IO_OUTPUT_FILE_H

#include <stdio.h>

#include "core/core.h"

#define CR_OUT_PATH_MAX 4096 /* bytes of a target's path with its temp suffix and NUL */

/* One file being written. Caller-owned (stack or host), about 8 KB. */
typedef struct cr_out_file {
    FILE *f;                    /* the temp file, open for writing; NULL once committed/aborted */
    int err;                    /* errno of the first failed cr_out_write, else 0 */
    char what[64];              /* what the file is, for messages: "checkpoint", "ONNX model" */
    char path[CR_OUT_PATH_MAX]; /* the target */
    char tmp[CR_OUT_PATH_MAX];  /* <path>.tmp.<pid> */
} cr_out_file;

/* Whether `path` can be written, before any work: its directory exists and is writable, and
 * `path` is missing or a regular file (see above). `what` names the file in the message. */
cudarl_status cr_out_check(const char *path, const char *what);

/* Checks `path` and creates its temp file, open for writing in o->f (write with cr_out_write or
 * stdio on o->f). Then exactly one of cr_out_commit or cr_out_abort. */
cudarl_status cr_out_open(cr_out_file *o, const char *path, const char *what);
/* Appends bytes[0, n) to the temp file; a failure is remembered for cr_out_commit's message. */
void cr_out_write(cr_out_file *o, const void *bytes, size_t n);
/* Flushes and fsyncs the temp file, checks the target again, renames the temp file over it and
 * fsyncs the directory. On failure (a write failed, the disk is full, the target became a
 * non-regular file) the temp file is removed and the target is as it was. */
cudarl_status cr_out_commit(cr_out_file *o);
/* Closes and removes the temp file (the target is untouched); a closed `o` is fine. */
void cr_out_abort(cr_out_file *o);

/* Opens `path` for a file written while a run goes, into *f: appended to (truncate 0) or
 * emptied (truncate 1), created when missing. Refuses what cr_out_check refuses, and opens with
 * O_NOFOLLOW and O_NONBLOCK and checks the open file again, so that a link or a FIFO put there
 * meanwhile is refused rather than followed or waited on. */
cudarl_status cr_out_open_append(const char *path, const char *what, int truncate, FILE **f);

/* Removes the temp files of target `path` (`<path>.tmp.<digits>`, regular files) left by
 * processes killed while writing it; only for a path no other process writes meanwhile, such as
 * a file of a claimed run folder. Returns how many were removed. */
int cr_out_remove_temps(const char *path);

#endif
