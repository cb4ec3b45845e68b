/* Videos of a policy (`cudarl eval --video`): the checkpoint's greedy policy through the policy
 * runtime, one env of its def stepped here (so that an episode's last state is drawn before any
 * reset), each state drawn by the env's renderer (env/render.h) into the encoder (io/video.h). */
#include <stdlib.h>
#include <string.h>

#include "algo/eval.h"
#include "core/abi.h"
#include "algo/run.h"
#include "env/env.h"
#include "env/render.h"
#include "io/video.h"

static void video_defaults(cudarl_video_options *opt) {
    memset(opt, 0, sizeof *opt);
    opt->struct_size = sizeof *opt;
    opt->episodes = 1;
    opt->seed = 12345;
    opt->device = CUDARL_DEVICE_CPU;
    opt->precision = CUDARL_PRECISION_FP32;
}

cudarl_status cudarl_video_options_default_sized(cudarl_video_options *opt, size_t struct_size) {
    CR_REQUIRE(opt, "cudarl_video_options_default: the options are NULL");
    CR_TRY(cr_struct_check(&cr_abi_video_options, struct_size, "cudarl_video_options_default"));
    cudarl_video_options full;
    video_defaults(&full);
    cr_struct_write(opt, &full, struct_size);
    return CUDARL_OK;
}

/* "A, B, C" of the registered envs that have a renderer, into buf (cap bytes). */
static void renderable_envs(char *buf, size_t cap) {
    buf[0] = 0;
    for (const char *const *n = cudarl_env_names(); *n; n++)
        if (cr_env_renderer_find(*n))
            snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", buf[0] ? ", " : "", *n);
}

/* The renderer of env `id`, or the refusal naming the envs that have one. */
static cudarl_status find_renderer(const char *id, const cr_env_renderer **r) {
    char list[1024];
    *r = cr_env_renderer_find(id);
    if (*r) return CUDARL_OK;
    renderable_envs(list, sizeof list);
    if (!cr_env_def_find(id))
        return cr_fail(CUDARL_ERR_INVALID_ARG, "no env '%s' is registered; envs that can be "
                       "drawn: %s", id ? id : "(null)", list);
    return cr_fail(CUDARL_ERR_UNSUPPORTED, "env '%s' cannot be drawn (it has no renderer), so "
                   "there is no video of it; envs that can be drawn: %s", id, list);
}

cudarl_status cudarl_env_render_info(const char *id, int *width, int *height, int *fps) {
    const cr_env_renderer *r;
    CR_TRY(find_renderer(id, &r));
    if (width) *width = r->width;
    if (height) *height = r->height;
    if (fps) *fps = r->fps;
    return CUDARL_OK;
}

cudarl_status cudarl_video_check(const char *video_path, int fps) {
    return cr_video_check(video_path, fps);
}

/* The play's buffers: one env's state, an observation, an action, a frame. */
typedef struct record_play {
    const cudarl_env_def *def;
    const cr_env_renderer *r;
    cudarl_policy *pol;
    cr_video *video;
    void *state;       /* def->state_bytes, 64-byte aligned */
    void *obs;         /* one observation */
    void *action;      /* int32, or float (action_dim) */
    uint8_t *rgb;      /* (height, width, 3) */
} record_play;

static cudarl_status draw(record_play *p) {
    if (cr_stop_requested())
        return cr_fail(CUDARL_ERR_IO, "stopped by a request (a signal) after %d frames; no "
                       "video was written", cr_video_frames(p->video));
    p->r->draw(p->def, p->state, p->obs, p->rgb);
    return cr_video_add(p->video, p->rgb);
}

/* Episode k of the evaluation seeded `seed`, one frame per state, into the video until it ends
 * or the video is full (*cut = 1); its length and return. */
static cudarl_status record_episode(record_play *p, uint64_t seed, int k, int64_t *length,
                                    double *ret, int *cut) {
    const cudarl_env_def *d = p->def;
    memset(p->state, 0, d->state_bytes);
    d->seed(p->state, seed, (uint64_t)k);
    d->reset(p->state, p->obs);
    *length = 0, *ret = 0, *cut = 0;
    CR_TRY(draw(p));
    for (;;) {
        if (cr_video_frames(p->video) >= CUDARL_VIDEO_MAX_FRAMES) return *cut = 1, CUDARL_OK;
        CR_TRY(cudarl_policy_act(p->pol, p->obs, d->obs_dtype, 1, p->action, NULL, NULL));
        float reward = 0;
        uint8_t term = 0;
        if (d->action_dim > 0) {
            float box[CUDARL_ACTION_DIM_MAX];
            cr_env_clip_action(d, p->action, box);
            d->step_box(p->state, box, p->obs, &reward, &term);
        } else {
            d->step(p->state, *(const int32_t *)p->action, p->obs, &reward, &term);
        }
        ++*length, *ret += reward;
        CR_TRY(draw(p));
        if (term || (d->max_episode_steps > 0 && *length >= d->max_episode_steps))
            return CUDARL_OK;
    }
}

static cudarl_status check_options(const cudarl_video_options *o) {
    CR_REQUIRE(o->episodes >= 1 && o->episodes <= CUDARL_VIDEO_MAX_EPISODES,
               "--video-episodes must be between 1 and %d, got %d", CUDARL_VIDEO_MAX_EPISODES,
               o->episodes);
    CR_REQUIRE(o->fps >= 0 && o->fps <= CUDARL_VIDEO_MAX_FPS, "--fps must be between 1 and %d "
               "(or 0: the env's own), got %d", CUDARL_VIDEO_MAX_FPS, o->fps);
    return CUDARL_OK;
}

/* Plays and encodes every episode into p->video; the summary's episodes. */
static cudarl_status record_all(record_play *p, const cudarl_video_options *o,
                                cudarl_video_summary *sum) {
    for (int k = 0; k < o->episodes && !sum->truncated; k++) {
        CR_TRY(record_episode(p, o->seed, k, &sum->lengths[k], &sum->returns[k],
                              &sum->truncated));
        sum->episodes = k + 1;
    }
    sum->frames = cr_video_frames(p->video);
    return CUDARL_OK;
}

cudarl_status cudarl_policy_record(const char *checkpoint, const char *video_path,
                                   const cudarl_video_options *opt,
                                   cudarl_video_summary *summary) {
    cudarl_video_options o;
    video_defaults(&o);
    if (opt) CR_TRY(cr_struct_read(&cr_abi_video_options, &o, opt, "cudarl_policy_record"));
    CR_REQUIRE(checkpoint && video_path, "cudarl_policy_record: the checkpoint and the video "
               "path must not be NULL");
    CR_TRY(check_options(&o));
    cr_video_format format = CR_VIDEO_GIF;
    CR_TRY(cr_video_format_of(video_path, &format));
    cudarl_policy_options po;
    cudarl_policy_options_default(&po);
    po.device = o.device, po.precision = o.precision, po.max_batch = 1;
    record_play p = {0};
    CR_TRY(cudarl_policy_load(checkpoint, &po, &p.pol));
    cudarl_status s = cr_eval_policy_env(checkpoint, p.pol, &p.def);
    if (s == CUDARL_OK) s = find_renderer(p.def->id, &p.r);
    if (s == CUDARL_OK) {
        if (!o.fps) o.fps = p.r->fps;
        s = cr_video_check(video_path, o.fps);
    }
    if (s == CUDARL_OK) {
        size_t state_bytes = (p.def->state_bytes + 63) / 64 * 64;
        p.state = aligned_alloc(64, state_bytes ? state_bytes : 64);
        p.obs = malloc(cr_env_def_obs_bytes(p.def));
        p.action = malloc(cr_env_def_action_bytes(p.def));
        p.rgb = malloc((size_t)p.r->width * (size_t)p.r->height * 3);
        if (!p.state || !p.obs || !p.action || !p.rgb)
            s = cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory for a video frame");
    }
    cudarl_video_summary sum;
    memset(&sum, 0, sizeof sum);
    if (s == CUDARL_OK) s = cr_video_open(&p.video, video_path, p.r->width, p.r->height, o.fps);
    if (s == CUDARL_OK) {
        sum.width = p.r->width, sum.height = p.r->height, sum.fps = o.fps;
        s = record_all(&p, &o, &sum);
        if (s == CUDARL_OK) s = cr_video_commit(p.video);
        else cr_video_abort(p.video);
    }
    free(p.state), free(p.obs), free(p.action), free(p.rgb);
    cudarl_policy_free(p.pol);
    if (s == CUDARL_OK && summary) *summary = sum;
    return s;
}
