/* The commands of the cudarl CLI: main.c dispatches `cudarl <verb> ...` to cmd_<verb>(), one
 * tools/cmd_<verb>.c each. A command gets the arguments after its verb (argv[0] is the first)
 * and returns the process's exit code: EXIT_SUCCESS, EXIT_FAILURE, EXIT_USAGE or, stopped early
 * by a signal, cmd_interrupted_exit_code(). */
#ifndef CUDARL_TOOLS_CMD_H
#define CUDARL_TOOLS_CMD_H

#include <stdint.h>
#include <stdio.h>

enum { EXIT_USAGE = 2 };

/* Upper bound of a CLI-only integer flag with no natural limit (a seed); the library's settings
 * have their ranges in cudarl_flag_ranges. */
#define FLAG_MAX 1e18

int cmd_train(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_render(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_bench(int argc, char **argv);
/* `cudarl bench frames` (tools/bench_frames.c), dispatched by cmd_bench. */
int cmd_bench_frames(int argc, char **argv);
int cmd_info(int argc, char **argv);

/* The benchmarks' clock and order statistics (tools/cmd_bench.c): CLOCK_MONOTONIC in seconds;
 * qsort's comparison of doubles; the nearest-rank q-quantile of v (n values, sorted). */
double cmd_now_s(void);
int cmd_cmp_double(const void *a, const void *b);
double cmd_quantile(const double *v, int64_t n, double q);
/* The benchmarks' JSON (tools/cmd_bench.c): s as a JSON string (quotes, backslashes and control
 * characters escaped); a number, or null for NAN or inf. */
void cmd_json_string(FILE *f, const char *s);
void cmd_json_number(FILE *f, double v);

/* Whether argv[0..argc) asks for help (--help or -h anywhere). */
int cmd_wants_help(int argc, char **argv);
/* Prints "cudarl: error: <what>: <the library's last error>" to stderr; EXIT_FAILURE. */
int cmd_fail(const char *what);
/* Catches SIGINT, SIGTERM and SIGHUP for a long command (main.c): the first asks a run to stop
 * after its iteration (cudarl_request_stop), another one a second or more later ends the
 * process; one within the second is ignored (the same request delivered twice). */
void cmd_catch_stop_signals(void);
/* The first of those signals caught (SIGINT, SIGTERM, SIGHUP), or 0. */
int cmd_stop_signal(void);
/* "SIGTERM" for SIGTERM, and so on; static storage. */
const char *cmd_signal_name(int sig);
/* The exit code of a command that stopped early for a signal: 128 + its number (130 for
 * SIGINT, 143 for SIGTERM, 129 for SIGHUP), as a shell reports a process that signal ended. */
int cmd_interrupted_exit_code(void);

#endif
