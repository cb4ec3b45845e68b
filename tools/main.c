/* cudarl: the command-line tool. Checks the environment variables cudarl reads (the library's
 * cudarl_check_environment), then hands the arguments after the verb to that command (cmd.h).
 * Exit codes: 0 done, 1 failed, 2 bad usage, 128 + the signal's number when a run stopped early
 * for SIGINT (130), SIGHUP (129) or SIGTERM (143): what a shell reports for a process that
 * signal ended, and its checkpoint resumes it (PPO). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd.h"
#include "cudarl.h"

/* The first SIGINT, SIGTERM or SIGHUP asks the run to stop after its iteration (it writes its
 * checkpoint); another one a second or more later ends the process at once, as that signal
 * does by default. One within the second is the same request delivered twice: timeout(1)
 * sends its signal to its command and then to its process group, which holds the command too,
 * and killing the run there lost its checkpoint. Only async-signal-safe calls here:
 * clock_gettime, sigaction, raise. */
static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};
static volatile sig_atomic_t stop_signal; /* the first one caught, 0 before */
static struct timespec stop_first;

static void on_stop_signal(int sig) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (!stop_signal) {
        stop_first = now;
        stop_signal = sig;
        cudarl_request_stop();
        return;
    }
    double since = (double)(now.tv_sec - stop_first.tv_sec) +
                   (double)(now.tv_nsec - stop_first.tv_nsec) * 1e-9;
    if (since < 1.0) return;
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    raise(sig); /* delivered when this handler returns: the signal is blocked until then */
}

void cmd_catch_stop_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = SA_RESTART; /* file writes and reads carry on; the loop sees the request */
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; i++) sigaddset(&sa.sa_mask, stop_signals[i]); /* one at a time */
    for (int i = 0; i < 3; i++) sigaction(stop_signals[i], &sa, NULL);
}

int cmd_stop_signal(void) { return stop_signal; }

const char *cmd_signal_name(int sig) {
    return sig == SIGINT    ? "SIGINT"
           : sig == SIGTERM ? "SIGTERM"
           : sig == SIGHUP  ? "SIGHUP"
                            : "a signal";
}

int cmd_interrupted_exit_code(void) { return 128 + (stop_signal ? stop_signal : SIGINT); }

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
            "  cudarl eval PATH --video out.gif      ... and a video of it playing (.gif, .mp4)\n"
            "  cudarl plot RUN... --out curves.png   return curves of runs, seeds as mean + band\n"
            "  cudarl plan [flags]                   a replay buffer's memory plan, no training\n"
            "  cudarl export PATH --onnx FILE        the policy as an ONNX model (TensorRT, DLA)\n"
            "  cudarl render --out DIR [flags]       a pixel env's observations as PNG files\n"
            "  cudarl bench infer [flags]            how fast a deployed policy acts, per precision\n"
            "  cudarl info                           build options and devices\n"
            "  cudarl <command> --help               the flags of a command, with defaults\n",
            CUDARL_VERSION_STRING);
}

static const struct {
    const char *verb;
    int (*run)(int argc, char **argv);
} commands[] = {
    {"train", cmd_train},   {"eval", cmd_eval},     {"info", cmd_info},   {"plan", cmd_plan},
    {"export", cmd_export}, {"render", cmd_render}, {"bench", cmd_bench},  {"plot", cmd_plot},
};

/* `cudarl train`, which `mpirun -np R cudarl train ...` runs on R ranks (docs/multigpu.md):
 * joins the MPI job when a launcher started this process (nothing for a plain run); a rank whose
 * run failed ends the whole job (MPI_Abort: mpirun ends the others, which would otherwise wait
 * for it in their next exchange). */
static int train_in_job(int argc, char **argv) {
    if (cudarl_dist_init() != CUDARL_OK) {
        fprintf(stderr, "cudarl train: %s\n", cudarl_last_error());
        return EXIT_FAILURE;
    }
    int rc = cmd_train(argc, argv);
    if (cudarl_dist_size() > 1 && rc != 0 && !cmd_stop_signal()) {
        fprintf(stderr, "cudarl: rank %d of %d failed (exit code %d); ending the job\n",
                cudarl_dist_rank(), cudarl_dist_size(), rc);
        cudarl_dist_abort(rc);
    }
    cudarl_dist_finalize();
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (cudarl_check_environment() != CUDARL_OK) {
        fprintf(stderr, "cudarl: %s\n", cudarl_last_error());
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "train")) return train_in_job(argc - 2, argv + 2);
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
            "bench, plot (cudarl --help)\n",
            cmd);
    return EXIT_USAGE;
}
