/* What memory this machine can give: /proc/meminfo. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

/* The value in kB of /proc/meminfo's line `key`, or -1. */
static long long meminfo_kb(const char *key) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return -1;
    char line[256];
    long long v = -1;
    size_t n = strlen(key);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, n) && line[n] == ':') {
            v = strtoll(line + n + 1, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

int64_t cr_host_available_bytes(int include_swap) {
    long long avail = meminfo_kb("MemAvailable");
    if (avail < 0) return -1;
    long long swap = include_swap ? meminfo_kb("SwapFree") : 0;
    return (int64_t)(avail + (swap > 0 ? swap : 0)) * 1024;
}
