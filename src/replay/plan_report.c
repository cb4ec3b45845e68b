/* The replay buffer's memory plan as a person reads it, checked against a budget before
 * anything is allocated. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/abi.h"
#include "replay/replay.h"

#define RANGE(flag, field, type, lo, hi, lo_means) \
    {flag, lo, hi, lo_means, offsetof(cudarl_replay_request, field), CUDARL_FIELD_##type}

const cudarl_flag_range cr_replay_flag_ranges[] = {
    RANGE("buffer-size", buffer_size, I64, 4, (double)((int64_t)1 << 40), NULL),
    RANGE("num-envs", num_envs, INT, 1, 1 << 20, NULL),
    RANGE("frame-stack", frame_stack, INT, 1, CR_REPLAY_MAX_STACK, NULL),
    RANGE("mem-budget", mem_budget, I64, 0, (double)((int64_t)1 << 50), "available memory"),
    {NULL, 0, 0, NULL, 0, CUDARL_FIELD_INT},
};

static void append(char *buf, size_t cap, const char *fmt, const char *a, const char *b) {
    size_t n = strlen(buf);
    if (n < cap) snprintf(buf + n, cap - n, fmt, a, b);
}

cudarl_status cudarl_replay_plan_report(const cudarl_replay_request *request, char *report,
                                        size_t cap) {
    CR_REQUIRE(report && cap > 0, "cudarl_replay_plan_report: give a report buffer and its size");
    report[0] = 0;
    cudarl_replay_request full = {.struct_size = sizeof full};
    CR_TRY(cr_struct_read(&cr_abi_replay_request, &full, request, "cudarl_replay_plan_report"));
    const cudarl_replay_request *r = &full;
    CR_TRY(cr_flag_ranges_check(cr_replay_flag_ranges, r));
    const int64_t min_rows = cr_replay_min_rows(r->frame_stack);
    CR_REQUIRE(r->buffer_size / r->num_envs >= min_rows,
               "--buffer-size %lld is below the replay's minimum of %lld for --num-envs %d: it "
               "keeps at least %lld transitions per env (--frame-stack %d + 3); raise "
               "--buffer-size to %lld, or lower --num-envs", (long long)r->buffer_size,
               (long long)(min_rows * r->num_envs), r->num_envs, (long long)min_rows,
               r->frame_stack, (long long)(min_rows * r->num_envs));
    cr_replay_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.capacity = r->buffer_size / r->num_envs * r->num_envs;
    spec.num_envs = r->num_envs;
    spec.frame_elems = r->frame_elems;
    spec.dtype = r->uint8_frames ? CR_REPLAY_UINT8 : CR_REPLAY_FLOAT32;
    spec.stack = r->frame_stack;
    spec.prioritized = r->prioritized;
    spec.alpha = 0.6f, spec.beta0 = 0.4f, spec.beta_steps = 1;
    CR_TRY(cr_replay_spec_check(&spec));
    cr_plan pl;
    cr_plan_init(&pl);
    CR_TRY(cr_replay_plan(&spec, &pl));
    int64_t budget = r->mem_budget;
    const char *budget_from = r->mem_budget_source ? r->mem_budget_source : "--mem-budget";
    if (budget <= 0) budget = cr_host_available_bytes(0), budget_from = "available host memory";
    char a[32], b[32];
    snprintf(a, sizeof a, "%zu", cr_replay_bytes_per_transition(&spec));
    append(report, cap, "replay plan: %s bytes per transition (%s)\n", a,
           spec.stack > 1 ? "one frame stored once; stacks rebuilt at sample time"
                          : "one observation stored once; next = the following slot");
    for (int i = 0; i < pl.count; i++) {
        char line[128];
        snprintf(line, sizeof line, "  %-14s", pl.names[i]);
        append(report, cap, "%s %s\n", line, cudarl_format_bytes(pl.sizes[i], a, sizeof a));
    }
    int64_t total = (int64_t)pl.total + r->other_bytes;
    double naive = (double)spec.capacity * 2.0 * spec.stack * (double)spec.frame_elems * 4.0;
    snprintf(b, sizeof b, "%.2f GB", naive / 1e9);
    append(report, cap, "  (stored naively - obs and next_obs as float32 stacks - it would be %s%s)\n",
           b, "");
    snprintf(a, sizeof a, "%lld", (long long)spec.capacity);
    append(report, cap, "  transitions     %s%s\n", a, "");
    if (r->other_bytes > 0)
        append(report, cap, "  other buffers   %s%s\n",
               cudarl_format_bytes((size_t)r->other_bytes, a, sizeof a), "");
    append(report, cap, "  total           %s against a budget of %s\n",
           cudarl_format_bytes((size_t)total, a, sizeof a),
           budget > 0 ? cudarl_format_bytes((size_t)budget, b, sizeof b) : "(unknown)");
    if (budget > 0) append(report, cap, "  (the budget: %s%s)\n", budget_from, "");
    if (budget <= 0 || total <= budget) return CUDARL_OK;
    int64_t room = budget - r->other_bytes;
    int64_t fit = room > 0 ? cr_replay_max_capacity(&spec, (size_t)room) : 0;
    return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "the memory plan needs %s (replay: %lld transitions "
                   "x %zu bytes) but the budget (%s) is %s; the largest --buffer-size that fits "
                   "is %lld, or raise --mem-budget", cudarl_format_bytes((size_t)total, a, sizeof a),
                   (long long)spec.capacity, cr_replay_bytes_per_transition(&spec), budget_from,
                   cudarl_format_bytes((size_t)budget, b, sizeof b), (long long)fit);
}
