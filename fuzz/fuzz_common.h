/* What the fuzz harnesses share: the input written to a file in a folder of this process's own
 * (the public API reads checkpoints from paths), quiet logs, and a CPU context. */
#ifndef CUDARL_FUZZ_COMMON_H
#define CUDARL_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cudarl.h"

/* The folder (created on first use, under $TMPDIR or /tmp) and a path inside it. */
static const char *fuzz_dir(void) {
    static char dir[256];
    if (!dir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/cudarl-fuzz-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(dir)) {
            perror("fuzz: mkdtemp");
            abort();
        }
        cudarl_log_set_level(CUDARL_LOG_ERROR);
    }
    return dir;
}

/* Writes data to <fuzz_dir>/<rel> (its folders made first) and returns the path (static). */
static const char *fuzz_write(const char *rel, const uint8_t *data, size_t size) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", fuzz_dir(), rel);
    for (char *s = path + strlen(fuzz_dir()) + 1; (s = strchr(s, '/')); s++) {
        *s = 0;
        if (access(path, F_OK) != 0 && mkdir(path, 0700) != 0) {
            perror("fuzz: mkdir");
            abort();
        }
        *s = '/';
    }
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        perror("fuzz: write");
        abort();
    }
    return path;
}

#endif
