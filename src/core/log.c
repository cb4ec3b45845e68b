/* Levelled logging to stderr; $CUDARL_LOG=error|warn|info|debug sets the initial level. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

static int log_level = -1;

static int log_level_from_env(void) {
    const char *v = getenv("CUDARL_LOG");
    if (!v || !*v) return CUDARL_LOG_INFO;
    if (!strcmp(v, "error")) return CUDARL_LOG_ERROR;
    if (!strcmp(v, "warn")) return CUDARL_LOG_WARN;
    if (!strcmp(v, "info")) return CUDARL_LOG_INFO;
    if (!strcmp(v, "debug")) return CUDARL_LOG_DEBUG;
    fprintf(stderr, "cudarl: warning: CUDARL_LOG='%s' is not a level; use error, warn, info or "
                    "debug (using info)\n", v);
    return CUDARL_LOG_INFO;
}

void cudarl_log_set_level(cudarl_log_level level) { log_level = (int)level; }

int cr_log_enabled(cudarl_log_level level) {
    if (log_level < 0) log_level = log_level_from_env();
    return (int)level <= log_level;
}

void cr_log(cudarl_log_level level, const char *fmt, ...) {
    static const char *const prefix[] = {"error: ", "warning: ", "", "debug: "};
    if (!cr_log_enabled(level)) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "cudarl: %s", prefix[level]);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
