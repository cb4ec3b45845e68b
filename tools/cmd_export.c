/* cudarl export: a checkpoint's policy as an ONNX model, for onnxruntime and TensorRT (GPU or
 * DLA). Parses, then runs; exit codes as the other commands: 0 done, 1 failed, 2 bad usage. */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cmd.h"
#include "cudarl.h"

typedef struct export_opts {
    char onnx[PATH_MAX];
    char batch[24];
    char input[16];
    int action;
} export_opts;

static const arg_spec export_specs[] = {
    {"onnx", ARG_STR, offsetof(export_opts, onnx), PATH_MAX, 0, 0, "the ONNX file to write (required)"},
    {"batch", ARG_STR, offsetof(export_opts, batch), 24, 0, 0, "rows of the input: dynamic, or a fixed N (TensorRT on DLA needs one)"},
    {"input", ARG_STR, offsetof(export_opts, input), 16, 0, 0, "float32, or uint8: the env's observations, converted in the graph as cudarl converts them"},
    {"action", ARG_BOOL, offsetof(export_opts, action), 0, 0, 1, "add output 'action': int64 argmax of logits or q_values"},
};
#define N_EXPORT_SPECS ((int)(sizeof export_specs / sizeof export_specs[0]))

#define EXPORT_EXAMPLE "cudarl export runs/<run>/model.safetensors --onnx policy.onnx"

/* --batch: "dynamic" is 0, else an integer in [1, CUDARL_ONNX_MAX_BATCH]; -1 if neither. */
static int64_t parse_batch(const char *s) {
    if (!strcmp(s, "dynamic")) return 0;
    char *end;
    long long n = strtoll(s, &end, 10);
    if (end == s || *end || n < 1 || n > CUDARL_ONNX_MAX_BATCH) return -1;
    return n;
}

/* Fills `o` from the parsed flags; prints the problem and returns -1 for a bad value. */
static int export_options(const export_opts *e, cudarl_onnx_options *o) {
    cudarl_onnx_options_default(o);
    o->batch = parse_batch(e->batch);
    if (o->batch < 0) {
        fprintf(stderr, "cudarl export: --batch %s is not a batch size; give an integer from 1 "
                        "to %d for a fixed batch, or leave --batch out for a dynamic one\n",
                e->batch, CUDARL_ONNX_MAX_BATCH);
        return -1;
    }
    if (!strcmp(e->input, "uint8")) o->input_dtype = CUDARL_OBS_U8;
    else if (strcmp(e->input, "float32")) {
        fprintf(stderr, "cudarl export: --input '%s' is not float32 or uint8\n", e->input);
        return -1;
    }
    o->argmax_action = e->action;
    return 0;
}

int cmd_export(int argc, char **argv) {
    export_opts e;
    memset(&e, 0, sizeof e);
    snprintf(e.batch, sizeof e.batch, "dynamic");
    snprintf(e.input, sizeof e.input, "float32");
    if (cmd_wants_help(argc, argv)) {
        printf("usage: cudarl export CHECKPOINT --onnx FILE [flags]\n\n"
               "Writes the policy of CHECKPOINT as an ONNX model (opset %d): input obs\n"
               "[batch, obs_dim] (or [batch, C, H, W] for a conv policy); outputs logits\n"
               "and value (PPO) or q_values (DQN).\n\n"
               "flags:\n", CUDARL_ONNX_OPSET);
        args_print_help(export_specs, N_EXPORT_SPECS, &e, ARGS_CLI_ONLY);
        return 0;
    }
    arg_result r;
    if (args_parse(export_specs, N_EXPORT_SPECS, &e, argc, argv, "export", ARGS_CLI_ONLY, 1,
                   &r) != 0)
        return EXIT_USAGE;
    if (r.npositional != 1) {
        fprintf(stderr, "cudarl export: which checkpoint? usage: " EXPORT_EXAMPLE "\n");
        return EXIT_USAGE;
    }
    if (!e.onnx[0]) {
        fprintf(stderr, "cudarl export: where to? --onnx FILE is required, e.g. " EXPORT_EXAMPLE
                        "\n");
        return EXIT_USAGE;
    }
    cudarl_onnx_options o;
    if (export_options(&e, &o) != 0) return EXIT_USAGE;
    cudarl_status s = cudarl_policy_export_onnx(r.positional[0], e.onnx, &o);
    if (s != CUDARL_OK) {
        fprintf(stderr, "cudarl: error: export failed: %s\n", cudarl_last_error());
        return s == CUDARL_ERR_INVALID_ARG ? EXIT_USAGE : EXIT_FAILURE;
    }
    char batch[32] = "batch";
    if (o.batch) snprintf(batch, sizeof batch, "%lld", (long long)o.batch);
    printf("cudarl: wrote %s: ONNX opset %d, input obs %s [%s, obs_dim or C, H, W]%s; run it with "
           "onnxruntime, or build a TensorRT engine with trtexec --onnx=%s\n", e.onnx,
           CUDARL_ONNX_OPSET, o.input_dtype == CUDARL_OBS_U8 ? "uint8" : "float32", batch,
           o.argmax_action ? ", with output action" : "", e.onnx);
    return 0;
}
