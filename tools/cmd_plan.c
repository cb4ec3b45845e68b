/* cudarl plan: a replay buffer's memory plan, printed without allocating or training. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cmd.h"
#include "cudarl.h"

typedef struct plan_opts {
    int64_t buffer_size, mem_budget;
    int num_envs, frame_stack, prioritized;
    char obs_shape[64], obs_dtype[16];
} plan_opts;

static const arg_spec plan_specs[] = {
    {"buffer-size", ARG_I64, offsetof(plan_opts, buffer_size), 0, LIB_RANGE, "replay capacity (transitions)"},
    {"num-envs", ARG_INT, offsetof(plan_opts, num_envs), 0, LIB_RANGE, "envs inserting per step"},
    {"obs-shape", ARG_STR, offsetof(plan_opts, obs_shape), 64, 0, 0, "one stored observation (one frame when stacking), e.g. 84x84 or 4"},
    {"obs-dtype", ARG_STR, offsetof(plan_opts, obs_dtype), 16, 0, 0, "uint8 or float32"},
    {"frame-stack", ARG_INT, offsetof(plan_opts, frame_stack), 0, LIB_RANGE, "frames per observation"},
    {"prioritized", ARG_BOOL, offsetof(plan_opts, prioritized), 0, 0, 1, "with a priority sum tree"},
    {"mem-budget", ARG_BYTES, offsetof(plan_opts, mem_budget), 0, LIB_RANGE, "the budget to check against"},
};

/* Elements of "84x84" / "4" / "3,84,84"; -1 if malformed. */
static int64_t shape_elems(const char *s) {
    int64_t n = 1;
    const char *p = s;
    while (*p) {
        char *end;
        long long d = strtoll(p, &end, 10);
        if (end == p || d < 1 || d > (1 << 24)) return -1;
        n *= d;
        if (n > ((int64_t)1 << 40)) return -1;
        p = end;
        if (*p == 'x' || *p == ',') p++;
        else if (*p) return -1;
    }
    return p == s ? -1 : n;
}

int cmd_plan(int argc, char **argv) {
    plan_opts o = {1000000, 0, 1, 4, 0, "84x84", "uint8"};
    int n = (int)(sizeof plan_specs / sizeof plan_specs[0]);
    if (cmd_wants_help(argc, argv)) {
        printf("usage: cudarl plan [flags]: the replay buffer's memory plan, without training\n"
               "(one process's; a DQN job of R ranks plans each rank's shard: pass --buffer-size\n"
               "and --num-envs divided by R, and --mem-budget is each rank's)\n"
               "\nflags:\n");
        args_print_help(plan_specs, n, &o, CUDARL_FLAGS_REPLAY);
        return 0;
    }
    arg_result r;
    if (args_parse(plan_specs, n, &o, argc, argv, "plan", CUDARL_FLAGS_REPLAY, 0, &r) != 0)
        return EXIT_USAGE;
    int64_t elems = shape_elems(o.obs_shape);
    if (elems < 0) {
        fprintf(stderr, "cudarl plan: --obs-shape '%s' is not a shape; write it as 84x84 or 4\n",
                o.obs_shape);
        return EXIT_USAGE;
    }
    int u8 = !strcmp(o.obs_dtype, "uint8");
    if (!u8 && strcmp(o.obs_dtype, "float32")) {
        fprintf(stderr, "cudarl plan: --obs-dtype '%s' is not uint8 or float32\n", o.obs_dtype);
        return EXIT_USAGE;
    }
    cudarl_replay_request rq = {sizeof rq, o.buffer_size, o.num_envs, elems, u8,
                                o.frame_stack, o.prioritized, 0, o.mem_budget, NULL};
    char report[4096];
    cudarl_status s = cudarl_replay_plan_report(&rq, report, sizeof report);
    fputs(report, stdout);
    if (s != CUDARL_OK) {
        fprintf(stderr, "cudarl plan: %s\n", cudarl_last_error());
        return s == CUDARL_ERR_OUT_OF_MEMORY ? EXIT_FAILURE : EXIT_USAGE;
    }
    printf("fits\n");
    printf("(one process's plan; under mpirun -np R each DQN rank holds a shard: plan it with "
           "--buffer-size and --num-envs divided by R, against each rank's --mem-budget)\n");
    return 0;
}
