/* cudarl eval: plays a checkpoint's greedy policy for some episodes and prints the mean and std
 * of their return; with --video, first records its first episodes as a GIF or MP4. */
#include <limits.h>
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
    char video[PATH_MAX];
    int video_episodes;
    int fps;
} eval_opts;

static const arg_spec eval_specs[] = {
    {"episodes", ARG_INT, offsetof(eval_opts, episodes), 0, 1, CUDARL_EVAL_MAX_EPISODES, "episodes to play"},
    {"seed", ARG_U64, offsetof(eval_opts, seed), 0, 0, FLAG_MAX, "seed of the evaluation envs"},
    {"device", ARG_DEVICE, offsetof(eval_opts, device), 0, 0, 0, "cpu, cuda or auto (cuda: conv policies only)"},
    {"precision", ARG_PRECISION, offsetof(eval_opts, precision), 0, 0, 0, "fp32, or on the GPU for conv policies tf32, bf16 or fp16 (as a deployed policy computes)"},
    {"video", ARG_STR, offsetof(eval_opts, video), PATH_MAX, 0, 0, "also write a video of the policy playing: a .gif, or an .mp4 (needs ffmpeg on PATH)"},
    {"video-episodes", ARG_INT, offsetof(eval_opts, video_episodes), 0, 1, CUDARL_VIDEO_MAX_EPISODES, "episodes in the video, one after another (the first ones eval plays)"},
    {"fps", ARG_INT, offsetof(eval_opts, fps), 0, 0, CUDARL_VIDEO_MAX_FPS, "frames a second of the video; 0: the env's own (CartPole 50; a GIF at most 50)"},
};

/* Records the video of --video (checked first); 0, or the exit code of the failure (said). */
static int record_video(const eval_opts *o, const char *checkpoint) {
    cudarl_video_options vo;
    cudarl_video_options_default(&vo);
    vo.episodes = o->video_episodes, vo.fps = o->fps, vo.seed = o->seed;
    vo.device = o->device, vo.precision = o->precision;
    cudarl_video_summary sum;
    cmd_catch_stop_signals();
    if (cudarl_policy_record(checkpoint, o->video, &vo, &sum) != CUDARL_OK) {
        if (cmd_stop_signal()) {
            fprintf(stderr, "cudarl eval: stopped by %s; no video written\n",
                    cmd_signal_name(cmd_stop_signal()));
            return cmd_interrupted_exit_code();
        }
        return cmd_fail("video failed");
    }
    printf("video %s: %d frames of %dx%d at %d fps, %d episode%s%s\n", o->video, sum.frames,
           sum.width, sum.height, sum.fps, sum.episodes, sum.episodes == 1 ? "" : "s",
           sum.truncated ? " (the last cut short: a video holds at most "
                           "CUDARL_VIDEO_MAX_FRAMES frames)" : "");
    for (int k = 0; k < sum.episodes; k++)
        printf("  episode %d: %lld steps, return %.2f\n", k + 1, (long long)sum.lengths[k],
               sum.returns[k]);
    return 0;
}

/* --video-episodes and --fps without --video, and a --video that cannot be written (its format,
 * encoder or path) are refused before anything runs; 0 or EXIT_USAGE (said). */
static int check_video_flags(const eval_opts *o, const arg_result *r, int n) {
    static const char *const needs_video[] = {"video-episodes", "fps"};
    for (int i = 0; i < 2; i++)
        if (!o->video[0] && r->set[args_find(eval_specs, n, needs_video[i])]) {
            fprintf(stderr, "cudarl eval: --%s applies to the video; add --video PATH (.gif or "
                            ".mp4) or drop --%s\n", needs_video[i], needs_video[i]);
            return EXIT_USAGE;
        }
    if (o->video[0] && cudarl_video_check(o->video, o->fps ? o->fps : 1) != CUDARL_OK) {
        fprintf(stderr, "cudarl eval: %s\n", cudarl_last_error());
        return EXIT_USAGE;
    }
    return 0;
}

int cmd_eval(int argc, char **argv) {
    eval_opts o = {100, 12345, CUDARL_DEVICE_CPU, CUDARL_PRECISION_FP32, "", 1, 0};
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
    int rc = check_video_flags(&o, &r, n);
    if (!rc && o.video[0]) rc = record_video(&o, r.positional[0]);
    if (rc) return rc;
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
