/* Table-driven command-line flags for the cudarl CLI. */
#include "args.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cudarl.h"

int args_find(const arg_spec *specs, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!strcmp(specs[i].name, name)) return i;
    return -1;
}

/* Levenshtein distance of two short strings, for "did you mean". */
static int edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return 99;
    int d[64][64];
    for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
            d[i][j] = c < del ? (c < ins ? c : ins) : (del < ins ? del : ins);
        }
    return d[la][lb];
}

/* Parses "32GiB", "32G" (binary), "32GB" (decimal), "7.5e9", ... into bytes; -1 if malformed. */
static int parse_bytes(const char *s, int64_t *out) {
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

static const char *closest(const arg_spec *specs, int n, const char *name) {
    const char *best = NULL;
    int best_d = 4;
    for (int i = 0; i < n; i++) {
        int d = edit_distance(name, specs[i].name);
        if (strstr(specs[i].name, name) && strlen(name) >= 2) d = d < 2 ? d : 2;
        if (d < best_d) best_d = d, best = specs[i].name;
    }
    return best;
}

static int parse_bool_word(const char *v, int *out) {
    if (!strcasecmp(v, "true") || !strcmp(v, "1") || !strcasecmp(v, "yes") || !strcasecmp(v, "on"))
        return *out = 1, 1;
    if (!strcasecmp(v, "false") || !strcmp(v, "0") || !strcasecmp(v, "no") || !strcasecmp(v, "off"))
        return *out = 0, 1;
    return 0;
}

static const char *type_word(arg_type t) {
    switch (t) {
    case ARG_INT: case ARG_I64: case ARG_U64: return "an integer";
    case ARG_F64: return "a number";
    case ARG_BOOL: return "true or false";
    case ARG_DEVICE: return "cpu, cuda or auto";
    case ARG_STR: return "a value";
    case ARG_BYTES: return "a size such as 32GiB, 512M or 7.1GB";
    case ARG_PRECISION: return "fp32, tf32, bf16 or fp16";
    }
    return "a value";
}

/* Stores `v` into the field of spec `s`; prints the problem and returns -1 when it is bad. */
static int store(const arg_spec *s, void *opts, const char *v, const char *cmd) {
    char *field = (char *)opts + s->offset;
    char *end = NULL;
    errno = 0;
    switch (s->type) {
    case ARG_INT: case ARG_I64: case ARG_U64: {
        long long x = strtoll(v, &end, 10);
        if (!*v || *end || errno) {
            fprintf(stderr, "cudarl %s: --%s expects %s, got '%s'\n", cmd, s->name,
                    type_word(s->type), v);
            return -1;
        }
        if ((double)x < s->lo || (double)x > s->hi) {
            fprintf(stderr, "cudarl %s: --%s must be between %.0f and %.0f, got %s\n", cmd,
                    s->name, s->lo, s->hi, v);
            return -1;
        }
        if (s->type == ARG_INT) *(int *)field = (int)x;
        else if (s->type == ARG_I64) *(int64_t *)field = x;
        else *(uint64_t *)field = (uint64_t)x;
        return 0;
    }
    case ARG_F64: {
        double x = strtod(v, &end);
        if (!*v || *end || errno || !isfinite(x)) {
            fprintf(stderr, "cudarl %s: --%s expects a finite number, got '%s'\n", cmd, s->name, v);
            return -1;
        }
        if (x < s->lo || x > s->hi) {
            fprintf(stderr, "cudarl %s: --%s must be between %g and %g, got %s\n", cmd, s->name,
                    s->lo, s->hi, v);
            return -1;
        }
        *(double *)field = x;
        return 0;
    }
    case ARG_BOOL: {
        int b;
        if (!parse_bool_word(v, &b)) {
            fprintf(stderr, "cudarl %s: --%s expects true or false, got '%s'\n", cmd, s->name, v);
            return -1;
        }
        *(int *)field = b;
        return 0;
    }
    case ARG_PRECISION: {
        cudarl_precision p;
        if (cudarl_precision_parse(v, &p) != CUDARL_OK) {
            fprintf(stderr, "cudarl %s: --%s expects fp32, tf32, bf16 or fp16, got '%s'\n", cmd,
                    s->name, v);
            return -1;
        }
        *(cudarl_precision *)field = p;
        return 0;
    }
    case ARG_DEVICE: {
        cudarl_device_kind k;
        if (!strcmp(v, "cpu")) k = CUDARL_DEVICE_CPU;
        else if (!strcmp(v, "cuda")) k = CUDARL_DEVICE_CUDA;
        else if (!strcmp(v, "auto")) k = CUDARL_DEVICE_AUTO;
        else {
            fprintf(stderr, "cudarl %s: --%s expects cpu, cuda or auto, got '%s'\n", cmd, s->name, v);
            return -1;
        }
        *(cudarl_device_kind *)field = k;
        return 0;
    }
    case ARG_BYTES: {
        int64_t b;
        if (parse_bytes(v, &b) != 0) {
            fprintf(stderr, "cudarl %s: --%s expects a size such as 32GiB, 512M or 7.1GB, got "
                            "'%s'\n", cmd, s->name, v);
            return -1;
        }
        *(int64_t *)field = b;
        return 0;
    }
    case ARG_STR:
        if (strlen(v) + 1 > s->size) {
            fprintf(stderr, "cudarl %s: --%s is too long (%zu characters, at most %zu)\n", cmd,
                    s->name, strlen(v), s->size - 1);
            return -1;
        }
        if (!*v) {
            fprintf(stderr, "cudarl %s: --%s must not be empty\n", cmd, s->name);
            return -1;
        }
        memcpy(field, v, strlen(v) + 1);
        return 0;
    }
    return -1;
}

int args_parse(const arg_spec *specs, int n, void *opts, int argc, char **argv, const char *cmd,
               int max_positional, arg_result *res) {
    memset(res, 0, sizeof *res);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0 || a[2] == 0) {
            if (res->npositional >= max_positional || res->npositional >= 4) {
                fprintf(stderr, "cudarl %s: unexpected argument '%s'; flags start with '--' "
                                "(cudarl %s --help lists them)\n", cmd, a, cmd);
                return -1;
            }
            res->positional[res->npositional++] = a;
            continue;
        }
        char name[128];
        const char *eq = strchr(a + 2, '=');
        size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        if (len >= sizeof name) len = sizeof name - 1;
        memcpy(name, a + 2, len);
        name[len] = 0;
        int k = args_find(specs, n, name), negated = 0;
        if (k < 0 && !strncmp(name, "no-", 3)) {
            k = args_find(specs, n, name + 3);
            if (k >= 0 && specs[k].type == ARG_BOOL && !eq) negated = 1;
            else k = -1;
        }
        if (k < 0) {
            const char *c = closest(specs, n, name);
            if (c)
                fprintf(stderr, "cudarl %s: unknown flag '--%s'; did you mean '--%s'? (cudarl %s "
                                "--help lists every flag)\n", cmd, name, c, cmd);
            else
                fprintf(stderr, "cudarl %s: unknown flag '--%s' (cudarl %s --help lists every "
                                "flag)\n", cmd, name, cmd);
            return -1;
        }
        const arg_spec *s = &specs[k];
        const char *v = eq ? eq + 1 : NULL;
        if (s->type == ARG_BOOL && !v) {
            int b;
            if (i + 1 < argc && parse_bool_word(argv[i + 1], &b)) v = argv[++i];
            else v = negated ? "false" : "true";
        } else if (!v) {
            if (i + 1 >= argc || (!strncmp(argv[i + 1], "--", 2) && argv[i + 1][2])) {
                fprintf(stderr, "cudarl %s: --%s needs a value (%s), e.g. --%s VALUE\n", cmd,
                        s->name, type_word(s->type), s->name);
                return -1;
            }
            v = argv[++i];
        }
        if (store(s, opts, v, cmd) != 0) return -1;
        res->set[k] = 1;
    }
    return 0;
}

void args_print_help(const arg_spec *specs, int n, const void *defaults) {
    for (int i = 0; i < n; i++) {
        const arg_spec *s = &specs[i];
        const char *f = (const char *)defaults + s->offset;
        char def[160];
        switch (s->type) {
        case ARG_INT: snprintf(def, sizeof def, "%d", *(const int *)f); break;
        case ARG_I64: snprintf(def, sizeof def, "%lld", (long long)*(const int64_t *)f); break;
        case ARG_U64: snprintf(def, sizeof def, "%llu", (unsigned long long)*(const uint64_t *)f); break;
        case ARG_F64: snprintf(def, sizeof def, "%g", *(const double *)f); break;
        case ARG_BOOL: snprintf(def, sizeof def, "%s", *(const int *)f ? "true" : "false"); break;
        case ARG_DEVICE: {
            cudarl_device_kind k = *(const cudarl_device_kind *)f;
            snprintf(def, sizeof def, "%s", k == CUDARL_DEVICE_CPU ? "cpu" : k == CUDARL_DEVICE_CUDA ? "cuda" : "auto");
            break;
        }
        case ARG_STR: snprintf(def, sizeof def, "%s", *f ? f : "(none)"); break;
        case ARG_PRECISION:
            snprintf(def, sizeof def, "%s", cudarl_precision_name(*(const cudarl_precision *)f));
            break;
        case ARG_BYTES: {
            int64_t b = *(const int64_t *)f;
            if (b) cudarl_format_bytes((size_t)b, def, sizeof def);
            else snprintf(def, sizeof def, "what the device can give");
            break;
        }
        }
        char flag[64];
        snprintf(flag, sizeof flag, "--%s%s", s->name, s->type == ARG_BOOL ? " / --no-" : "");
        if (s->type == ARG_BOOL) snprintf(flag, sizeof flag, "--[no-]%s", s->name);
        printf("  %-26s %s (default: %s)\n", flag, s->help, def);
    }
}
