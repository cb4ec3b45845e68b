/* Monotonic wall-clock timer. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core.h"

double cr_time_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double cr_time_unix(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double cr_process_age(void) {
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f) return -1.0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* fields after the command's closing parenthesis: 3 (state) ... 22 (starttime, in clock
     * ticks since boot) */
    const char *at = strrchr(buf, ')');
    unsigned long long start = 0;
    if (!at) return -1.0;
    at++;
    for (int field = 3; field < 22 && at; field++) {
        at = strchr(at + 1, ' ');
    }
    if (!at || sscanf(at, " %llu", &start) != 1) return -1.0;
    double up = 0;
    f = fopen("/proc/uptime", "r");
    if (!f) return -1.0;
    const int got = fscanf(f, "%lf", &up);
    fclose(f);
    const long hz = sysconf(_SC_CLK_TCK);
    if (got != 1 || hz <= 0) return -1.0;
    const double age = up - (double)start / (double)hz;
    return age >= 0 ? age : -1.0;
}
