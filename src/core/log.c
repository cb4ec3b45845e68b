/* Levelled logging to stderr; $CUDARL_LOG=error|warn|info|debug sets the initial level. */
#include <stdarg.h>
#include <stdio.h>

#include "core.h"

static int log_level = -1;

/* $CUDARL_LOG's level; info when unset, or (with a warning) when it is no level: the library
 * refuses that value where it opens a context (cudarl_check_environment). */
static int log_level_from_env(void) {
    int v = cr_envvar_value(CR_ENVVAR_LOG);
    if (v == CR_ENVVAR_BAD) {
        char msg[256];
        cr_envvar_refusal(CR_ENVVAR_LOG, msg, sizeof msg);
        fprintf(stderr, "cudarl: warning: %s (using info)\n", msg);
    }
    return v >= 0 ? v : CUDARL_LOG_INFO;
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
