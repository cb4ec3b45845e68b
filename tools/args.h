/* Table-driven command-line flags: parse "--name value", "--name=value", "--flag"/"--no-flag",
 * check types and ranges, and print help with defaults and ranges. A numeric flag of a library
 * setting takes its range from the library's table (cudarl_flag_ranges), so the CLI and the
 * library's validators refuse the same values with the same message; lo and hi in a spec are
 * only for the CLI's own flags (eval's --episodes, bench's --iters, ...). */
#ifndef CUDARL_ARGS_H
#define CUDARL_ARGS_H

#include <stddef.h>

#include "toml.h"

typedef enum arg_type { ARG_INT, ARG_I64, ARG_U64, ARG_F64, ARG_BOOL, ARG_STR, ARG_DEVICE, ARG_BYTES, ARG_PRECISION } arg_type;

typedef struct arg_spec {
    const char *name;   /* without the leading "--" */
    arg_type type;
    size_t offset;      /* of the field in the options struct */
    size_t size;        /* bytes of a string field */
    double lo, hi;      /* accepted range of a CLI-only numeric value; LIB_RANGE for a setting
                           of the library's table */
    const char *help;
} arg_spec;

/* lo, hi of a flag whose range is the library's: args_parse's table holds it. */
#define LIB_RANGE 0, 0
/* args_parse's table for a command without library settings. */
#define ARGS_CLI_ONLY (-1)

#define ARG_MAX_SPECS 64
#define ARG_MAX_POSITIONAL 64 /* `cudarl plot` takes one per run folder */

typedef struct arg_result {
    int set[ARG_MAX_SPECS]; /* which specs were given (a config file's keys count) */
    int line[ARG_MAX_SPECS]; /* the config file's line of a spec set there and not on the
                                command line, else 0 */
    const char *positional[ARG_MAX_POSITIONAL];
    int npositional;
} arg_result;

/* Parses argv[0..argc) into `opts` by `specs` (n of them). On a bad argument prints one line
 * naming the problem and the fix to stderr and returns -1; returns 0 on success. `cmd` names
 * the subcommand in messages; `table` (a cudarl_flag_table, or ARGS_CLI_ONLY) holds the ranges
 * of the specs with LIB_RANGE. */
int args_parse(const arg_spec *specs, int n, void *opts, int argc, char **argv, const char *cmd,
               int table, int max_positional, arg_result *res);
/* args_parse over a config file's entries (doc, read from `path`; NULL: none): each key is a
 * spec's name and its value of the type that spec takes, checked and stored as args_parse checks
 * and stores the flag (the same messages, after "PATH:LINE: "); then argv, whose flags win.
 * Keys named in `not_in_file` (NULL-terminated) are refused: they belong on the command line.
 * One line on stderr and -1 for the first bad key or flag; 0 on success. */
int args_parse_with_config(const arg_spec *specs, int n, void *opts, const toml_doc *doc,
                           const char *path, const char *const *not_in_file, int argc,
                           char **argv, const char *cmd, int table, int max_positional,
                           arg_result *res);
/* Writes `opts` as a config file args_parse_with_config reads back to the same values: the
 * `header` comment lines, then one `name = value` line per spec in table order but those in
 * `skip` (NULL-terminated); an empty string spec becomes a comment ("# run-name: not set").
 * Reals are written in the fewest digits that read back exactly. Returns 0, or -1 when cap
 * bytes are too few. */
int args_format_toml(const arg_spec *specs, int n, const void *opts, const char *const *skip,
                     const char *header, char *out, size_t cap);
/* Prints each flag, its help, its value in `defaults` (the options struct) and, for a number,
 * its range ("range 1..4194304"; a real number's bounds always with a '.' or an exponent). */
void args_print_help(const arg_spec *specs, int n, const void *defaults, int table);
/* Index of the spec named `name`, or -1. */
int args_find(const arg_spec *specs, int n, const char *name);

#endif
