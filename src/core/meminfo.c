/* What memory this machine can give: /proc/meminfo, and budgets written by people. */
#include <ctype.h>
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

int cr_parse_bytes(const char *s, int64_t *out) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || !(v >= 0)) return -1;
    while (isspace((unsigned char)*end)) end++;
    static const struct { const char *suffix; double scale; } units[] = {
        {"", 1}, {"B", 1}, {"K", 1024.0}, {"KiB", 1024.0}, {"M", 1048576.0}, {"MiB", 1048576.0},
        {"G", 1073741824.0}, {"GiB", 1073741824.0}, {"T", 1099511627776.0},
        {"TiB", 1099511627776.0}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(end, units[i].suffix)) {
            double b = v * units[i].scale;
            if (b > 9.0e18) return -1;
            *out = (int64_t)b;
            return 0;
        }
    return -1;
}
