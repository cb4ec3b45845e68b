/* The TOML subset of `cudarl train --config` (toml.h): a line-by-line parser. */
#include "toml.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct parser {
    const char *path;
    const char *p;   /* the current character of the current line */
    int line;
    char *err;
    size_t cap;
} parser;

/* Writes "PATH:LINE: what" into err; returns -1. */
static int fail(parser *ps, const char *fmt, ...) {
    int n = snprintf(ps->err, ps->cap, "%s:%d: ", ps->path, ps->line);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < ps->cap) vsnprintf(ps->err + n, ps->cap - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

const char *toml_type_name(toml_type t) {
    return t == TOML_STRING ? "a string" : t == TOML_INTEGER ? "an integer"
         : t == TOML_FLOAT  ? "a float"  : "a boolean";
}

const toml_entry *toml_find(const toml_doc *doc, const char *key) {
    for (int i = 0; i < doc->n; i++)
        if (!strcmp(doc->e[i].key, key)) return &doc->e[i];
    return NULL;
}

static void skip_ws(parser *ps) {
    while (*ps->p == ' ' || *ps->p == '\t') ps->p++;
}

static int bare_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '-'; }

/* After a value or a table header: only whitespace and a comment may follow. */
static int end_of_line(parser *ps, const char *after) {
    skip_ws(ps);
    if (*ps->p && *ps->p != '#')
        return fail(ps, "unexpected '%.20s' after %s; put one key = value on a line (a comment "
                    "starts with #)", ps->p, after);
    return 0;
}

/* Appends code point u as UTF-8 to out (cap bytes, *n used); -1 if it is not a scalar value. */
static int put_utf8(char *out, size_t cap, size_t *n, uint32_t u) {
    if (u > 0x10FFFF || (u >= 0xD800 && u <= 0xDFFF)) return -1;
    unsigned char b[4];
    int k = u < 0x80 ? 1 : u < 0x800 ? 2 : u < 0x10000 ? 3 : 4;
    if (k == 1) b[0] = (unsigned char)u;
    else {
        for (int i = k - 1; i > 0; i--) b[i] = (unsigned char)(0x80 | (u & 0x3F)), u >>= 6;
        b[0] = (unsigned char)((k == 2 ? 0xC0 : k == 3 ? 0xE0 : 0xF0) | u);
    }
    if (*n + (size_t)k >= cap) return -2;
    memcpy(out + *n, b, (size_t)k), *n += (size_t)k;
    return 0;
}

/* A basic ("...") or literal ('...') string at ps->p into out. */
static int parse_string(parser *ps, char *out, size_t cap) {
    const char q = *ps->p;
    if (ps->p[1] == q && ps->p[2] == q)
        return fail(ps, "multi-line strings (%c%c%c) are not supported; write the value on one "
                    "line", q, q, q);
    ps->p++;
    size_t n = 0;
    for (;;) {
        unsigned char c = (unsigned char)*ps->p;
        if (!c) return fail(ps, "the string has no closing %c on its line", q);
        if (c == (unsigned char)q) break;
        if ((c < 0x20 && c != '\t') || c == 0x7F)
            return fail(ps, "a string holds control character 0x%02x; escape it (\\t, \\n, "
                        "\\uXXXX) in a \"...\" string", c);
        if (c == '\\' && q == '"') {
            ps->p++;
            const char e = *ps->p;
            const char *simple = strchr("\"\\btnfr", e);
            if (e && simple) {
                static const char to[] = "\"\\\b\t\n\f\r";
                c = (unsigned char)to[simple - "\"\\btnfr"];
            } else if (e == 'u' || e == 'U') {
                int digits = e == 'u' ? 4 : 8;
                uint32_t u = 0;
                for (int i = 1; i <= digits; i++) {
                    char h = ps->p[i];
                    if (!isxdigit((unsigned char)h))
                        return fail(ps, "\\%c needs %d hexadecimal digits", e, digits);
                    u = u * 16 + (uint32_t)(isdigit((unsigned char)h) ? h - '0'
                                                                      : (tolower(h) - 'a' + 10));
                }
                int r = put_utf8(out, cap, &n, u);
                if (r == -1) return fail(ps, "\\%c%.*s is not a Unicode scalar value", e, digits,
                                         ps->p + 1);
                if (r == -2) return fail(ps, "the string is over %zu bytes", cap - 1);
                ps->p += digits + 1;
                continue;
            } else {
                return fail(ps, "unknown escape \\%c; TOML's are \\\" \\\\ \\b \\t \\n \\f \\r "
                            "\\uXXXX \\UXXXXXXXX (or use a '...' string)", e ? e : ' ');
            }
        }
        if (n + 1 >= cap) return fail(ps, "the string is over %zu bytes", cap - 1);
        out[n++] = (char)c;
        ps->p++;
    }
    ps->p++;
    out[n] = 0;
    return 0;
}

/* A decimal integer or float at ps->p: its text without underscores into out, its type. */
static int parse_number(parser *ps, char *out, size_t cap, toml_type *type) {
    const char *s = ps->p;
    size_t n = 0;
    if (*s == '+' || *s == '-') out[n++] = *s++;
    if (!strncmp(s, "inf", 3) || !strncmp(s, "nan", 3)) {
        memcpy(out + n, s, 3), n += 3, out[n] = 0;
        ps->p = s + 3;
        *type = TOML_FLOAT;
        return 0;
    }
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'o' || s[1] == 'b'))
        return fail(ps, "hexadecimal, octal and binary integers are not supported; write it in "
                    "decimal");
    int digits = 0, frac = 0, exp = 0;
    const char *start = s;
    for (;; s++) {
        char c = *s;
        if (isdigit((unsigned char)c)) {
            digits++;
        } else if (c == '_') {
            if (s == start || !isdigit((unsigned char)s[-1]) || !isdigit((unsigned char)s[1]))
                return fail(ps, "an underscore in a number must stand between two digits");
            continue;
        } else if (c == '.' && !frac && !exp) {
            if (!isdigit((unsigned char)s[1]) || !digits)
                return fail(ps, "a decimal point needs a digit on each side (write 0.5, 1.0)");
            frac = 1;
        } else if ((c == 'e' || c == 'E') && !exp && digits) {
            exp = 1;
            if (n + 1 >= cap) break;
            out[n++] = c;
            if (s[1] == '+' || s[1] == '-') out[n++] = *++s;
            if (!isdigit((unsigned char)s[1]))
                return fail(ps, "an exponent needs digits (write 1e-4)");
            continue;
        } else {
            break;
        }
        if (n + 1 >= cap) return fail(ps, "the number is over %zu characters", cap - 1);
        out[n++] = c;
    }
    out[n] = 0;
    if (!digits) return fail(ps, "expected a value: a \"string\", a number, true or false");
    const char *first = start;
    if (first[0] == '0' && isdigit((unsigned char)first[1]) && !strchr(out, 'e') &&
        !strchr(out, 'E') && !frac)
        return fail(ps, "an integer must not start with 0 (TOML has no octal 0755: write 755)");
    if (*s == '-' || *s == ':' || *s == 'T')
        return fail(ps, "dates and times are not supported; no flag takes one");
    ps->p = s;
    *type = frac || exp ? TOML_FLOAT : TOML_INTEGER;
    return 0;
}

static int parse_value(parser *ps, toml_entry *e) {
    const char c = *ps->p;
    if (c == '"' || c == '\'') {
        e->type = TOML_STRING;
        return parse_string(ps, e->text, sizeof e->text);
    }
    if (!strncmp(ps->p, "true", 4) && !bare_char(ps->p[4])) {
        e->type = TOML_BOOL, ps->p += 4;
        snprintf(e->text, sizeof e->text, "true");
        return 0;
    }
    if (!strncmp(ps->p, "false", 5) && !bare_char(ps->p[5])) {
        e->type = TOML_BOOL, ps->p += 5;
        snprintf(e->text, sizeof e->text, "false");
        return 0;
    }
    if (c == '[')
        return fail(ps, "arrays are not supported: every flag takes one value");
    if (c == '{')
        return fail(ps, "inline tables are not supported: write each key = value on a line");
    if (isdigit((unsigned char)c) || c == '+' || c == '-' || !strncmp(ps->p, "inf", 3) ||
        !strncmp(ps->p, "nan", 3))
        return parse_number(ps, e->text, sizeof e->text, &e->type);
    if (!c || c == '#') return fail(ps, "'%s =' has no value", e->key);
    return fail(ps, "expected a value: a \"string\" (in quotes), a number, true or false; got "
                "'%.20s'", ps->p);
}

/* A [table] header at ps->p: only [train]. */
static int parse_header(parser *ps) {
    if (ps->p[1] == '[')
        return fail(ps, "arrays of tables ([[...]]) are not supported; put the keys at the top "
                    "or under [train]");
    ps->p++;
    skip_ws(ps);
    const char *name = ps->p;
    while (bare_char(*ps->p)) ps->p++;
    size_t len = (size_t)(ps->p - name);
    skip_ws(ps);
    if (*ps->p != ']' || len == 0)
        return fail(ps, "a table header is [name]; the only table is [train]");
    if (len != 5 || strncmp(name, "train", 5))
        return fail(ps, "unknown table [%.*s]; put the keys at the top of the file or under "
                    "[train]", (int)len, name);
    ps->p++;
    return end_of_line(ps, "[train]");
}

static int parse_line(parser *ps, toml_doc *doc, int *tables) {
    skip_ws(ps);
    if (!*ps->p || *ps->p == '#') return 0;
    if (*ps->p == '[') {
        if (++*tables > 1) return fail(ps, "[train] comes once; give each key one line");
        return parse_header(ps);
    }
    if (*ps->p == '"' || *ps->p == '\'')
        return fail(ps, "quoted keys are not used: write the flag name bare (learning-rate = "
                    "0.001)");
    const char *key = ps->p;
    while (bare_char(*ps->p)) ps->p++;
    size_t len = (size_t)(ps->p - key);
    if (!len) return fail(ps, "expected key = value; got '%.20s'", key);
    if (len >= sizeof doc->e[0].key) return fail(ps, "the key '%.20s...' is too long", key);
    skip_ws(ps);
    if (*ps->p == '.')
        return fail(ps, "dotted keys (%.*s.) are not supported; the keys are the flag names of "
                    "cudarl train --help", (int)len, key);
    if (*ps->p != '=')
        return fail(ps, "expected '=' after the key '%.*s'", (int)len, key);
    ps->p++;
    skip_ws(ps);
    if (doc->n >= TOML_MAX_ENTRIES)
        return fail(ps, "more than %d keys; a config has one per flag", TOML_MAX_ENTRIES);
    toml_entry *e = &doc->e[doc->n];
    memset(e, 0, sizeof *e);
    memcpy(e->key, key, len);
    e->line = ps->line;
    const toml_entry *dup = toml_find(doc, e->key);
    if (dup)
        return fail(ps, "'%s' is set twice (line %d too); keep one", e->key, dup->line);
    if (parse_value(ps, e) != 0) return -1;
    if (end_of_line(ps, "the value") != 0) return -1;
    doc->n++;
    return 0;
}

/* Reads path whole into a NUL-terminated buffer (malloc'd) or writes why not into err. */
static char *read_file(const char *path, char *err, size_t cap) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, cap, "cannot read the config file '%s': %s; check the path given to "
                 "--config", path, strerror(errno));
        return NULL;
    }
    char *buf = malloc(TOML_MAX_FILE + 1);
    size_t n = buf ? fread(buf, 1, TOML_MAX_FILE + 1, f) : 0;
    int bad = !buf || ferror(f);
    int e = errno;
    fclose(f);
    if (bad) {
        snprintf(err, cap, "cannot read the config file '%s': %s", path,
                 buf ? strerror(e) : "out of memory");
        free(buf);
        return NULL;
    }
    if (n > TOML_MAX_FILE) {
        snprintf(err, cap, "the config file '%s' is over %d bytes; a config has one line per "
                 "flag", path, TOML_MAX_FILE);
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    if (memchr(buf, 0, n)) {
        snprintf(err, cap, "the config file '%s' holds a NUL byte: it is not a text file; pass a "
                 "TOML file", path);
        free(buf);
        return NULL;
    }
    return buf;
}

/* Whether s is valid UTF-8 (TOML files are). */
static int utf8_valid(const unsigned char *s, int *line) {
    *line = 1;
    while (*s) {
        if (*s == '\n') (*line)++;
        int k = *s < 0x80 ? 0 : (*s & 0xE0) == 0xC0 ? 1 : (*s & 0xF0) == 0xE0 ? 2
              : (*s & 0xF8) == 0xF0 ? 3 : -1;
        if (k < 0 || (k == 1 && *s < 0xC2)) return 0;
        for (int i = 1; i <= k; i++)
            if ((s[i] & 0xC0) != 0x80) return 0;
        s += k + 1;
    }
    return 1;
}

int toml_parse_file(const char *path, toml_doc *doc, char *err, size_t cap) {
    memset(doc, 0, sizeof *doc);
    char *buf = read_file(path, err, cap);
    if (!buf) return -1;
    parser ps = {path, buf, 1, err, cap};
    int line = 0;
    if (!utf8_valid((const unsigned char *)buf, &line)) {
        ps.line = line;
        fail(&ps, "not UTF-8; TOML files are UTF-8 text");
        free(buf);
        return -1;
    }
    int tables = 0, rc = 0;
    for (char *at = buf; at && rc == 0; ps.line++) {
        char *nl = strchr(at, '\n');
        if (nl) *nl = 0;
        size_t len = strlen(at);
        if (len && at[len - 1] == '\r') at[len - 1] = 0;
        if (strchr(at, '\r')) {
            rc = fail(&ps, "a carriage return inside the line; save the file with \\n or \\r\\n "
                      "line ends");
            break;
        }
        ps.p = at;
        rc = parse_line(&ps, doc, &tables);
        at = nl ? nl + 1 : NULL;
    }
    free(buf);
    return rc;
}
