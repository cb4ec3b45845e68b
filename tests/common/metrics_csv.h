/* Reading a run's metrics.csv in tests: the last row's value of one column. */
#ifndef CUDARL_TEST_METRICS_CSV_H
#define CUDARL_TEST_METRICS_CSV_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* Field k (0-based) of a comma-separated line and its length, or NULL past the last one. */
static inline const char *csv_field(const char *line, int k, size_t *len) {
    for (int i = 0; i < k; i++) {
        const char *comma = strchr(line, ',');
        if (!comma) return NULL;
        line = comma + 1;
    }
    *len = strcspn(line, ",\n");
    return line;
}

/* Column `name` of the last row of run_dir/metrics.csv into buf (empty if the field is blank);
 * fails the test when the file, the column or a row is missing. Fields hold no commas. */
static inline void metrics_last_field(const char *run_dir, const char *name, char *buf,
                                      size_t cap) {
    char path[700], line[4096], header[4096] = "", last[4096] = "";
    snprintf(path, sizeof path, "%s/metrics.csv", run_dir);
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "cannot read %s", path);
    while (fgets(line, sizeof line, f)) {
        if (!header[0]) snprintf(header, sizeof header, "%s", line);
        else snprintf(last, sizeof last, "%s", line);
    }
    fclose(f);
    int col = -1;
    size_t n = 0;
    const char *h;
    for (int k = 0; col < 0 && (h = csv_field(header, k, &n)) != NULL; k++)
        if (n == strlen(name) && !strncmp(h, name, n)) col = k;
    const char *v = col >= 0 && last[0] ? csv_field(last, col, &n) : NULL;
    CHECK_MSG(v != NULL, "%s: no column %s, or no row with it", path, name);
    if (n >= cap) n = cap - 1;
    memcpy(buf, v, n);
    buf[n] = 0;
}

/* A run's amp/loss_scale and amp/skipped_steps in its last row: blank unless `fp16`; under fp16 GradScaler's 2^16
 * halved once per skipped step (the runs here are shorter than its 2,000-step growth interval)
 * and fewer than 8 skips (a few at the start are its usual way to find the scale; many are a
 * bug). The scale is printed. */
static inline void check_amp_columns(const char *run_dir, int fp16) {
    char scale[64], skipped[64];
    metrics_last_field(run_dir, "amp/loss_scale", scale, sizeof scale);
    metrics_last_field(run_dir, "amp/skipped_steps", skipped, sizeof skipped);
    printf("  %s: loss scale '%s', skipped steps '%s'\n", run_dir, scale, skipped);
    if (!fp16) {
        CHECK_MSG(!scale[0] && !skipped[0], "%s: a loss scale '%s' without fp16", run_dir, scale);
        return;
    }
    const long skips = strtol(skipped, NULL, 10);
    CHECK_MSG(scale[0] && skipped[0] && skips < 8 &&
                  ldexp(strtod(scale, NULL), (int)skips) == 65536.0,
              "%s: loss scale '%s', skipped '%s' (expected 2^16 halved per skip, fewer than 8 "
              "skips)", run_dir, scale, skipped);
}

#endif
