/* Status codes and the thread-local last-error message. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core.h"

static _Thread_local char last_error[1024];

const char *cudarl_status_name(cudarl_status s) {
    switch (s) {
    case CUDARL_OK: return "CUDARL_OK";
    case CUDARL_ERR_INVALID_ARG: return "CUDARL_ERR_INVALID_ARG";
    case CUDARL_ERR_OUT_OF_MEMORY: return "CUDARL_ERR_OUT_OF_MEMORY";
    case CUDARL_ERR_IO: return "CUDARL_ERR_IO";
    case CUDARL_ERR_FORMAT: return "CUDARL_ERR_FORMAT";
    case CUDARL_ERR_MISMATCH: return "CUDARL_ERR_MISMATCH";
    case CUDARL_ERR_UNSUPPORTED: return "CUDARL_ERR_UNSUPPORTED";
    case CUDARL_ERR_CUDA: return "CUDARL_ERR_CUDA";
    case CUDARL_ERR_NUMERIC: return "CUDARL_ERR_NUMERIC";
    }
    return "CUDARL_ERR_UNKNOWN";
}

const char *cudarl_last_error(void) { return last_error; }

cudarl_status cr_fail(cudarl_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return s;
}

_Noreturn void cr_assert_fail(const char *expr, const char *file, int line) {
    fprintf(stderr, "cudarl: internal error: assertion '%s' failed at %s:%d\n", expr, file, line);
    fflush(stderr);
    abort();
}
