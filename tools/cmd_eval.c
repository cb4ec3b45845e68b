/* cudarl eval: plays a checkpoint's greedy policy for some episodes and prints the mean and std
 * of their return. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cmd.h"
#include "cudarl.h"

typedef struct eval_opts {
    int episodes;
    uint64_t seed;
    cudarl_device_kind device;
    cudarl_precision precision;
} eval_opts;

static const arg_spec eval_specs[] = {
    {"episodes", ARG_INT, offsetof(eval_opts, episodes), 0, 1, CUDARL_EVAL_MAX_EPISODES, "episodes to play"},
    {"seed", ARG_U64, offsetof(eval_opts, seed), 0, 0, FLAG_MAX, "seed of the evaluation envs"},
    {"device", ARG_DEVICE, offsetof(eval_opts, device), 0, 0, 0, "cpu, cuda or auto (cuda: conv policies only)"},
    {"precision", ARG_PRECISION, offsetof(eval_opts, precision), 0, 0, 0, "fp32, or on the GPU for conv policies tf32, bf16 or fp16 (as a deployed policy computes)"},
};

int cmd_eval(int argc, char **argv) {
    eval_opts o = {100, 12345, CUDARL_DEVICE_CPU, CUDARL_PRECISION_FP32};
    int n = (int)(sizeof eval_specs / sizeof eval_specs[0]);
    if (cmd_wants_help(argc, argv)) {
        printf("usage: cudarl eval CHECKPOINT [flags]\n\nflags:\n");
        args_print_help(eval_specs, n, &o, ARGS_CLI_ONLY);
        return 0;
    }
    arg_result r;
    if (args_parse(eval_specs, n, &o, argc, argv, "eval", ARGS_CLI_ONLY, 1, &r) != 0)
        return EXIT_USAGE;
    if (r.npositional != 1) {
        fprintf(stderr, "cudarl eval: which checkpoint? usage: cudarl eval "
                        "runs/<run>/model.safetensors [--episodes N]\n");
        return EXIT_USAGE;
    }
    cudarl_ctx *ctx;
    if (cudarl_ctx_init(&ctx, o.device, 0) != CUDARL_OK) return cmd_fail("no device");
    double mean = 0, std = 0;
    cudarl_status s = cudarl_policy_eval_precision(ctx, r.positional[0], o.episodes, o.seed,
                                                   o.precision, &mean, &std);
    cudarl_ctx_free(ctx);
    if (s != CUDARL_OK) return cmd_fail("evaluation failed");
    printf("episodes %d  mean return %.2f  std %.2f\n", o.episodes, mean, std);
    return 0;
}
