/* The TOML that `cudarl train --config FILE` reads: a strict parser of the subset a flat config
 * needs, written here because Debian packages no C TOML library (tomlc99 and tomlc17 are not
 * packaged; bookworm has only the C++ cpptoml and toml++): docs/training.md says which subset.
 *
 * Accepted (TOML 1.0, the same meaning): `key = value` lines with bare keys (A-Z a-z 0-9 _ -),
 * basic strings "..." (escapes \" \\ \b \t \n \f \r \uXXXX \UXXXXXXXX) and literal strings
 * '...', decimal integers and floats (with _ between digits, exponents, inf and nan),
 * true and false, comments (#) and blank lines, and one optional [train] table: its keys are
 * the same as the top level's. Refused, each with the line and the fix: every other table,
 * arrays of tables, dotted and quoted keys, arrays, inline tables, multi-line strings, dates,
 * hexadecimal, octal and binary integers, a key given twice, and anything that is not TOML. */
#ifndef CUDARL_TOOLS_TOML_H
#define CUDARL_TOOLS_TOML_H

#include <stddef.h>

#define TOML_MAX_ENTRIES 128
#define TOML_MAX_FILE (1 << 20) /* bytes of a config file */

typedef enum toml_type { TOML_STRING, TOML_INTEGER, TOML_FLOAT, TOML_BOOL } toml_type;

typedef struct toml_entry {
    char key[64];
    toml_type type;
    char text[1024]; /* a string's characters; a number's digits without '_'; "true", "false" */
    int line;        /* 1-based */
} toml_entry;

typedef struct toml_doc {
    int n;
    toml_entry e[TOML_MAX_ENTRIES];
} toml_doc;

/* Reads and parses `path` into doc (host, the caller's; about 140 KB). On a missing or
 * unreadable file, or the first line that is not the subset above, writes one message naming
 * the file, the line and the fix into err (cap bytes) and returns -1; else 0. */
int toml_parse_file(const char *path, toml_doc *doc, char *err, size_t cap);
/* The entry of `key`, or NULL. */
const toml_entry *toml_find(const toml_doc *doc, const char *key);
/* "a string", "an integer", "a float", "a boolean". */
const char *toml_type_name(toml_type t);

#endif
