/* cudarl: the command-line tool. Checks the environment variables cudarl reads, then hands the
 * arguments after the verb to that command (cmd.h). Exit codes: 0 done, 1 failed, 2 bad usage,
 * 130 interrupted (a PPO checkpoint resumes it). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd.h"
#include "cudarl.h"

/* The first SIGINT asks the run to stop after its iteration (it writes its checkpoint); a second
 * one a second or more later ends the process at once. One within the second is the same
 * interrupt delivered twice: timeout(1) sends its signal to its command and then to its process
 * group, which holds the command too, and killing the run there lost its checkpoint. Only
 * async-signal-safe calls here: clock_gettime, signal, raise. */
static volatile sig_atomic_t sigint_seen;
static struct timespec sigint_first;

static void on_sigint(int sig) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (!sigint_seen) {
        sigint_seen = 1;
        sigint_first = now;
        cudarl_request_stop();
        return;
    }
    double since = (double)(now.tv_sec - sigint_first.tv_sec) +
                   (double)(now.tv_nsec - sigint_first.tv_nsec) * 1e-9;
    if (since < 1.0) return;
    signal(sig, SIG_DFL);
    raise(sig);
}

void cmd_catch_sigint(void) { signal(SIGINT, on_sigint); }

int cmd_fail(const char *what) {
    fprintf(stderr, "cudarl: error: %s: %s\n", what, cudarl_last_error());
    return EXIT_FAILURE;
}

int cmd_wants_help(int argc, char **argv) {
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
    return 0;
}

static void usage(FILE *f) {
    fprintf(f,
            "cudarl %s: reinforcement learning in C and CUDA\n\n"
            "usage:\n"
            "  cudarl train [flags]                  train PPO (CartPole-v1 by default)\n"
            "  cudarl train --resume PATH [flags]    continue a run from its checkpoint\n"
            "  cudarl train --algo dqn [flags]       DQN with the replay buffer (GPU or CPU)\n"
            "  cudarl eval PATH [--episodes N]       mean and std of the greedy policy's return\n"
            "  cudarl plan [flags]                   a replay buffer's memory plan, no training\n"
            "  cudarl export PATH --onnx FILE        the policy as an ONNX model (TensorRT, DLA)\n"
            "  cudarl render --out DIR [flags]       a pixel env's observations as PNG files\n"
            "  cudarl bench infer [flags]            how fast a deployed policy acts, per precision\n"
            "  cudarl info                           build options and devices\n"
            "  cudarl <command> --help               the flags of a command, with defaults\n",
            CUDARL_VERSION_STRING);
}

/* Refuses environment variables with values cudarl cannot use. */
static int check_environment(void) {
    const char *v = getenv("CUDARL_LOG");
    if (v && *v && strcmp(v, "error") && strcmp(v, "warn") && strcmp(v, "info") &&
        strcmp(v, "debug")) {
        fprintf(stderr, "cudarl: CUDARL_LOG='%s' is not a log level; set it to error, warn, info "
                        "or debug, or unset it\n", v);
        return -1;
    }
    static const char *const flags[] = {"CUDARL_SYNC_DEBUG", "CUDARL_FUSED"};
    for (int i = 0; i < 2; i++) {
        v = getenv(flags[i]);
        if (v && *v && strcmp(v, "0") && strcmp(v, "1")) {
            fprintf(stderr, "cudarl: %s='%s' is not 0 or 1; set it to 0 or 1, or unset it\n",
                    flags[i], v);
            return -1;
        }
    }
    return 0;
}

static const struct {
    const char *verb;
    int (*run)(int argc, char **argv);
} commands[] = {
    {"train", cmd_train},   {"eval", cmd_eval},     {"info", cmd_info},   {"plan", cmd_plan},
    {"export", cmd_export}, {"render", cmd_render}, {"bench", cmd_bench},
};

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (check_environment() != 0) return EXIT_USAGE;
    const char *cmd = argv[1];
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(cmd, commands[i].verb)) return commands[i].run(argc - 2, argv + 2);
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("cudarl %s\n", CUDARL_VERSION_STRING);
        return 0;
    }
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr,
            "cudarl: unknown command '%s'; commands: train, eval, plan, export, render, info, "
            "bench (cudarl --help)\n",
            cmd);
    return EXIT_USAGE;
}
