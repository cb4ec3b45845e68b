/* The commands of the cudarl CLI: main.c dispatches `cudarl <verb> ...` to cmd_<verb>(), one
 * tools/cmd_<verb>.c each. A command gets the arguments after its verb (argv[0] is the first)
 * and returns the process's exit code: EXIT_SUCCESS, EXIT_FAILURE, EXIT_USAGE or
 * EXIT_INTERRUPTED. */
#ifndef CUDARL_TOOLS_CMD_H
#define CUDARL_TOOLS_CMD_H

enum { EXIT_USAGE = 2, EXIT_INTERRUPTED = 130 };

/* Upper bound of an integer flag with no natural limit. */
#define FLAG_MAX 1e18

int cmd_train(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_render(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_info(int argc, char **argv);

/* Whether argv[0..argc) asks for help (--help or -h anywhere). */
int cmd_wants_help(int argc, char **argv);
/* Prints "cudarl: error: <what>: <the library's last error>" to stderr; EXIT_FAILURE. */
int cmd_fail(const char *what);
/* Catches SIGINT for a training run (main.c): the first asks the run to stop after its
 * iteration, a second one a second or more later ends the process. */
void cmd_catch_sigint(void);

#endif
