/* The CUDARL_* environment variables: each one's values, read and refused in one place. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

#define ENVVAR_MAX_VALUES 4

static const struct {
    const char *name;
    const char *what;                      /* what a value is, for the refusal */
    const char *values[ENVVAR_MAX_VALUES]; /* in the order core.h gives; NULL after the last */
    const char *listed;                    /* the values as the refusal lists them */
} envvars[CR_ENVVAR_COUNT] = {
    [CR_ENVVAR_LOG] = {"CUDARL_LOG", "a log level", {"error", "warn", "info", "debug"},
                       "error, warn, info or debug"},
    [CR_ENVVAR_SYNC_DEBUG] = {"CUDARL_SYNC_DEBUG", "0 or 1", {"0", "1"}, "0 or 1"},
    [CR_ENVVAR_FUSED] = {"CUDARL_FUSED", "0 or 1", {"0", "1"}, "0 or 1"},
    [CR_ENVVAR_CONV_ENGINE] = {"CUDARL_CONV_ENGINE", "a convolution engine", {"gemm", "cudnn"},
                               "gemm or cudnn"},
};

int cr_envvar_value(cr_envvar var) {
    CUDARL_ASSERT((unsigned)var < CR_ENVVAR_COUNT);
    const char *v = getenv(envvars[var].name);
    if (!v || !*v) return CR_ENVVAR_UNSET;
    for (int i = 0; i < ENVVAR_MAX_VALUES && envvars[var].values[i]; i++)
        if (!strcmp(v, envvars[var].values[i])) return i;
    return CR_ENVVAR_BAD;
}

void cr_envvar_refusal(cr_envvar var, char *buf, size_t cap) {
    CUDARL_ASSERT((unsigned)var < CR_ENVVAR_COUNT);
    const char *v = getenv(envvars[var].name);
    snprintf(buf, cap, "%s='%.64s' is not %s; set it to %s, or unset it", envvars[var].name,
             v ? v : "", envvars[var].what, envvars[var].listed);
}

cudarl_status cr_envvar_check(cr_envvar var) {
    if (cr_envvar_value(var) != CR_ENVVAR_BAD) return CUDARL_OK;
    char msg[256];
    cr_envvar_refusal(var, msg, sizeof msg);
    return cr_fail(CUDARL_ERR_INVALID_ARG, "%s", msg);
}

cudarl_status cudarl_check_environment(void) {
    for (int i = 0; i < CR_ENVVAR_COUNT; i++) CR_TRY(cr_envvar_check((cr_envvar)i));
    return CUDARL_OK;
}
