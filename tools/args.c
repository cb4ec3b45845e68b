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

enum { BYTES_OK = 0, BYTES_MALFORMED, BYTES_NO_UNIT, BYTES_BELOW_ONE, BYTES_TOO_LARGE };

/* Parses a size with its unit into bytes, rounded down: "32GiB" or "32G" (K, M, G, T and KiB,
 * MiB, GiB, TiB: powers of 1024), "7.1GB" (KB, MB, GB, TB: powers of 1000), "4096B" (bytes).
 * "0" needs no unit. A number without a unit, or a size between 0 and one byte, is refused:
 * "--mem-budget 0.5" must not silently mean 0. Returns BYTES_OK or why not. */
static int parse_bytes(const char *s, int64_t *out) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || !(v >= 0) || !isfinite(v)) return BYTES_MALFORMED;
    while (isspace((unsigned char)*end)) end++;
    if (!*end) return v == 0 ? (*out = 0, BYTES_OK) : BYTES_NO_UNIT;
    static const struct { const char *suffix; double scale; } units[] = {
        {"B", 1}, {"K", 1024.0}, {"KiB", 1024.0}, {"M", 1048576.0}, {"MiB", 1048576.0},
        {"G", 1073741824.0}, {"GiB", 1073741824.0}, {"T", 1099511627776.0},
        {"TiB", 1099511627776.0}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(end, units[i].suffix)) {
            double b = v * units[i].scale;
            if (b > 9.0e18) return BYTES_TOO_LARGE;
            if (v > 0 && b < 1) return BYTES_BELOW_ONE;
            *out = (int64_t)b;
            return BYTES_OK;
        }
    return BYTES_MALFORMED;
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
    case ARG_BYTES: return "a size with its unit, such as 32GiB, 512M or 7.1GB";
    case ARG_PRECISION: return "fp32, tf32, bf16 or fp16";
    }
    return "a value";
}

/* The library's range of the flag `name` in `table` (a cudarl_flag_table), or NULL. */
static const cudarl_flag_range *library_range(int table, const char *name) {
    const cudarl_flag_range *r = NULL;
    if (table != ARGS_CLI_ONLY) r = cudarl_flag_ranges((cudarl_flag_table)table);
    for (; r && r->flag; r++)
        if (!strcmp(r->flag, name)) return r;
    return NULL;
}

/* Whether the number x of spec `s` is in range: the library's (its message, as its validators
 * give it) or the spec's own; prints the problem when it is not. `v` is the text given; an
 * integer flag's value is also `xi`, compared exactly with the spec's own bounds (a seed's reach
 * 1e18, past what a double holds exactly; the library's bounds are all below 2^53). */
static int in_range(const arg_spec *s, int table, double x, long long xi, const char *v,
                    const char *cmd) {
    const cudarl_flag_range *lib = library_range(table, s->name);
    if (lib) {
        if (cudarl_flag_check((cudarl_flag_table)table, s->name, x) == CUDARL_OK) return 1;
        fprintf(stderr, "cudarl %s: %s\n", cmd, cudarl_last_error());
        return 0;
    }
    if (s->lo == 0 && s->hi == 0) { /* LIB_RANGE, but the table has no such setting */
        fprintf(stderr, "cudarl %s: --%s has no range in the library's table (a bug in cudarl: "
                        "please report it)\n", cmd, s->name);
        return 0;
    }
    if (s->type == ARG_F64 ? x >= s->lo && x <= s->hi
                           : xi >= (long long)s->lo && xi <= (long long)s->hi)
        return 1;
    if (s->type == ARG_F64)
        fprintf(stderr, "cudarl %s: --%s must be between %g and %g, got %s\n", cmd, s->name,
                s->lo, s->hi, v);
    else
        fprintf(stderr, "cudarl %s: --%s must be between %.0f and %.0f, got %s\n", cmd, s->name,
                s->lo, s->hi, v);
    return 0;
}

/* Stores `v` into the field of spec `s`; prints the problem and returns -1 when it is bad. */
static int store(const arg_spec *s, int table, void *opts, const char *v, const char *cmd) {
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
        if (!in_range(s, table, (double)x, x, v, cmd)) return -1;
        if (s->type == ARG_INT) *(int *)field = (int)x;
        else if (s->type == ARG_I64) *(int64_t *)field = x;
        else *(uint64_t *)field = (uint64_t)x;
        return 0;
    }
    case ARG_F64: {
        double x = strtod(v, &end); /* an underflow (ERANGE) still reads as the tiny number */
        if (!*v || *end || !isfinite(x)) {
            fprintf(stderr, "cudarl %s: --%s expects a finite number, got '%s'\n", cmd, s->name, v);
            return -1;
        }
        if (!in_range(s, table, x, 0, v, cmd)) return -1;
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
        int64_t b = 0;
        const cudarl_flag_range *lib = library_range(table, s->name);
        const char *zero = lib && lib->lo_means ? lib->lo_means : "none";
        switch (parse_bytes(v, &b)) {
        case BYTES_OK: break;
        case BYTES_NO_UNIT:
            fprintf(stderr, "cudarl %s: --%s '%s' has no unit; write the size with one, such as "
                            "512M, 2G or 1.5GiB (K, M, G, T: powers of 1024; KB, MB, GB, TB: of "
                            "1000; B: bytes), or 0 for %s\n", cmd, s->name, v, zero);
            return -1;
        case BYTES_BELOW_ONE:
            fprintf(stderr, "cudarl %s: --%s '%s' is less than one byte; give at least 1B, or 0 "
                            "for %s\n", cmd, s->name, v, zero);
            return -1;
        case BYTES_TOO_LARGE:
            fprintf(stderr, "cudarl %s: --%s '%s' is over 9e18 bytes; give a smaller size\n", cmd,
                    s->name, v);
            return -1;
        default:
            fprintf(stderr, "cudarl %s: --%s expects %s, got '%s'\n", cmd, s->name,
                    type_word(s->type), v);
            return -1;
        }
        if (lib && !in_range(s, table, (double)b, b, v, cmd)) return -1;
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
               int table, int max_positional, arg_result *res) {
    memset(res, 0, sizeof *res);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0 || a[2] == 0) {
            if (res->npositional >= max_positional || res->npositional >= ARG_MAX_POSITIONAL) {
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
        if (store(s, table, opts, v, cmd) != 0) return -1;
        res->set[k] = 1;
    }
    return 0;
}

/* A bound as help prints it: an integer flag's in full, a real number's with a '.' or an
 * exponent ("0.0", "1e-12"), so that "range 0.0..1.0" reads as real numbers. */
static const char *format_bound(double x, arg_type t, char *buf, size_t cap) {
    if (t != ARG_F64) {
        snprintf(buf, cap, "%.0f", x);
        return buf;
    }
    snprintf(buf, cap, "%g", x);
    if (!strpbrk(buf, ".e")) snprintf(buf + strlen(buf), cap - strlen(buf), ".0");
    return buf;
}

void args_print_help(const arg_spec *specs, int n, const void *defaults, int table) {
    for (int i = 0; i < n; i++) {
        const arg_spec *s = &specs[i];
        const char *f = (const char *)defaults + s->offset;
        const cudarl_flag_range *lib = library_range(table, s->name);
        char def[160], range[96] = "";
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
            else snprintf(def, sizeof def, "0, %s", lib && lib->lo_means ? lib->lo_means : "none");
            snprintf(range, sizeof range, "; a size with its unit: 512M, 2G, 1.5GiB, 7.1GB");
            break;
        }
        }
        if (s->type == ARG_INT || s->type == ARG_I64 || s->type == ARG_U64 || s->type == ARG_F64) {
            char lo[32], hi[32];
            format_bound(lib ? lib->lo : s->lo, s->type, lo, sizeof lo);
            format_bound(lib ? lib->hi : s->hi, s->type, hi, sizeof hi);
            snprintf(range, sizeof range, ", range %s..%s", lo, hi);
        }
        char flag[64];
        snprintf(flag, sizeof flag, "--%s", s->name);
        if (s->type == ARG_BOOL) snprintf(flag, sizeof flag, "--[no-]%s", s->name);
        printf("  %-26s %s (default: %s%s)\n", flag, s->help, def, range);
    }
}

/* ---- config files ---------------------------------------------------------------------- */

/* What a TOML value of type t may be for spec type a: 1 when it fits. */
static int toml_fits(arg_type a, toml_type t) {
    switch (a) {
    case ARG_INT: case ARG_I64: case ARG_U64: return t == TOML_INTEGER;
    case ARG_F64: return t == TOML_INTEGER || t == TOML_FLOAT;
    case ARG_BOOL: return t == TOML_BOOL;
    case ARG_BYTES: return t == TOML_STRING || t == TOML_INTEGER;
    case ARG_STR: case ARG_DEVICE: case ARG_PRECISION: return t == TOML_STRING;
    }
    return 0;
}

/* How to write a value of spec type a, for the message that refuses another type. */
static const char *toml_fix(arg_type a, toml_type t) {
    if (a == ARG_INT || a == ARG_I64 || a == ARG_U64)
        return t == TOML_FLOAT ? "write a whole number, without a decimal point or exponent"
                               : "write a whole number, without quotes";
    if (a == ARG_F64) return "write the number without quotes";
    if (a == ARG_BOOL) return "write true or false, without quotes";
    return "put the value in double quotes";
}

static int apply_entry(const arg_spec *specs, int n, void *opts, const toml_entry *e,
                       const char *path, const char *const *not_in_file, const char *cmd,
                       int table, arg_result *res) {
    char where[600];
    snprintf(where, sizeof where, "%s: %s:%d", cmd, path, e->line);
    for (const char *const *k = not_in_file; k && *k; k++)
        if (!strcmp(*k, e->key)) {
            fprintf(stderr, "cudarl %s: '%s' cannot be set in a config file; pass --%s on the "
                            "command line\n", where, e->key, e->key);
            return -1;
        }
    int k = args_find(specs, n, e->key);
    if (k < 0) {
        const char *c = closest(specs, n, e->key);
        fprintf(stderr, "cudarl %s: unknown key '%s'%s%s%s (the keys are the flags of cudarl %s "
                        "--help, without the --)\n", where, e->key, c ? "; did you mean '" : "",
                c ? c : "", c ? "'?" : "", cmd);
        return -1;
    }
    const arg_spec *s = &specs[k];
    if (!toml_fits(s->type, e->type)) {
        fprintf(stderr, "cudarl %s: %s expects %s, got %s (%s%s%s); %s\n", where, s->name,
                type_word(s->type), toml_type_name(e->type), e->type == TOML_STRING ? "\"" : "",
                e->text, e->type == TOML_STRING ? "\"" : "", toml_fix(s->type, e->type));
        return -1;
    }
    if (store(s, table, opts, e->text, where) != 0) return -1;
    res->set[k] = 1;
    res->line[k] = e->line;
    return 0;
}

int args_parse_with_config(const arg_spec *specs, int n, void *opts, const toml_doc *doc,
                           const char *path, const char *const *not_in_file, int argc,
                           char **argv, const char *cmd, int table, int max_positional,
                           arg_result *res) {
    arg_result file;
    memset(&file, 0, sizeof file);
    for (int i = 0; doc && i < doc->n; i++)
        if (apply_entry(specs, n, opts, &doc->e[i], path, not_in_file, cmd, table, &file) != 0)
            return -1;
    if (args_parse(specs, n, opts, argc, argv, cmd, table, max_positional, res) != 0) return -1;
    for (int k = 0; k < n; k++)
        if (file.set[k] && !res->set[k]) res->set[k] = 1, res->line[k] = file.line[k];
    return 0;
}

/* x in the fewest significant digits (up to 17) that read back as x; a TOML float (with a '.'
 * or an exponent). */
static void format_real(double x, char *buf, size_t cap) {
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, cap, "%.*g", p, x);
        if (strtod(buf, NULL) == x) break;
    }
    if (!strpbrk(buf, ".eni")) snprintf(buf + strlen(buf), cap - strlen(buf), ".0");
}

/* s as a TOML basic string into buf (quotes, escapes). */
static void format_string(const char *s, char *buf, size_t cap) {
    size_t n = 0;
    buf[n++] = '"';
    for (; *s && n + 8 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') buf[n++] = '\\', buf[n++] = (char)c;
        else if (c < 0x20 || c == 0x7F) n += (size_t)snprintf(buf + n, cap - n, "\\u%04x", c);
        else buf[n++] = (char)c;
    }
    buf[n++] = '"';
    buf[n] = 0;
}

/* A byte count as the flag reads it: in the largest binary unit that divides it ("32GiB"). */
static void format_size(int64_t b, char *buf, size_t cap) {
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b && u < 4 && b % 1024 == 0) b /= 1024, u++;
    if (b == 0) snprintf(buf, cap, "0");
    else snprintf(buf, cap, "%lld%s", (long long)b, unit[u]);
}

int args_format_toml(const arg_spec *specs, int n, const void *opts, const char *const *skip,
                     const char *header, char *out, size_t cap) {
    size_t used = 0;
    int r = snprintf(out, cap, "%s", header ? header : "");
    if (r < 0 || (size_t)r >= cap) return -1;
    used = (size_t)r;
    for (int i = 0; i < n; i++) {
        const arg_spec *s = &specs[i];
        int skipped = 0;
        for (const char *const *k = skip; k && *k; k++) skipped |= !strcmp(*k, s->name);
        if (skipped) continue;
        const char *f = (const char *)opts + s->offset;
        char v[1200];
        switch (s->type) {
        case ARG_INT: snprintf(v, sizeof v, "%d", *(const int *)f); break;
        case ARG_I64: snprintf(v, sizeof v, "%lld", (long long)*(const int64_t *)f); break;
        case ARG_U64: snprintf(v, sizeof v, "%llu", (unsigned long long)*(const uint64_t *)f); break;
        case ARG_F64: format_real(*(const double *)f, v, sizeof v); break;
        case ARG_BOOL: snprintf(v, sizeof v, "%s", *(const int *)f ? "true" : "false"); break;
        case ARG_STR: format_string(f, v, sizeof v); break;
        case ARG_DEVICE: {
            cudarl_device_kind k = *(const cudarl_device_kind *)f;
            format_string(k == CUDARL_DEVICE_CPU ? "cpu" : k == CUDARL_DEVICE_CUDA ? "cuda" : "auto",
                          v, sizeof v);
            break;
        }
        case ARG_PRECISION:
            format_string(cudarl_precision_name(*(const cudarl_precision *)f), v, sizeof v);
            break;
        case ARG_BYTES: {
            char b[64];
            format_size(*(const int64_t *)f, b, sizeof b);
            format_string(b, v, sizeof v);
            break;
        }
        }
        if (s->type == ARG_STR && !*f) r = snprintf(out + used, cap - used, "# %s: not set\n", s->name);
        else r = snprintf(out + used, cap - used, "%s = %s\n", s->name, v);
        if (r < 0 || (size_t)r >= cap - used) return -1;
        used += (size_t)r;
    }
    return 0;
}
