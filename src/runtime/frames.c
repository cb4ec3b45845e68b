/* Camera frames to a policy's observations (cudarl_frames_* and cudarl_frame_convert in
 * cudarl.h; docs/cameras.md): the checks of the cameras, options and policy, one host arena per
 * handle, and the tick. For a CPU policy: each frame through the op table's frame_to_obs
 * (ops/frames.h defines the arithmetic) into its camera's stack, the stacks packed into the
 * batch, then cudarl_policy_act. For a CUDA policy the same on its GPU, frames uploaded or read
 * in place and the device work one CUDA graph (frames_cuda.cu). A tick is a submit (the frames
 * checked; a CUDA policy's uploads and graph enqueued) and a wait (the outputs; a CPU policy's
 * work), up to CR_FRAMES_SLOTS ticks in flight between them; cudarl_frames_tick is the two in
 * turn. runtime/frames.h has the handle and its memory. */
#include <math.h>
#include <string.h>

#include "core/abi.h"
#include "core/core.h"
#include "ops/frames.h"
#include "runtime/frames.h"
#include "runtime/latency.h"
#include "runtime/policy.h"

#define MAX_DEADLINE_US 1e9 /* 1000 s: longer is a mistake in units */

static const char *format_name(int f) {
    switch (f) {
    case CUDARL_PIXEL_GRAY8: return "CUDARL_PIXEL_GRAY8";
    case CUDARL_PIXEL_RGB8: return "CUDARL_PIXEL_RGB8";
    case CUDARL_PIXEL_BGR8: return "CUDARL_PIXEL_BGR8";
    case CUDARL_PIXEL_YUYV: return "CUDARL_PIXEL_YUYV";
    case CUDARL_PIXEL_NV12: return "CUDARL_PIXEL_NV12";
    }
    return "?";
}

/* ---- defaults ---------------------------------------------------------------------------- */

static void camera_defaults(cudarl_camera *c) {
    memset(c, 0, sizeof *c);
    c->struct_size = sizeof *c;
    c->format = CUDARL_PIXEL_GRAY8;
}

static void options_defaults(cudarl_frames_options *o) {
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    o->channels = 1;
}

cudarl_status cudarl_camera_default_sized(cudarl_camera *cam, size_t struct_size) {
    CR_REQUIRE(cam, "cudarl_camera_default: the camera is NULL");
    CR_TRY(cr_struct_check(&cr_abi_camera, struct_size, "cudarl_camera_default"));
    cudarl_camera full;
    camera_defaults(&full);
    cr_struct_write(cam, &full, struct_size);
    return CUDARL_OK;
}

cudarl_status cudarl_frames_options_default_sized(cudarl_frames_options *opt,
                                                  size_t struct_size) {
    CR_REQUIRE(opt, "cudarl_frames_options_default: the options are NULL");
    CR_TRY(cr_struct_check(&cr_abi_frames_options, struct_size,
                           "cudarl_frames_options_default"));
    cudarl_frames_options full;
    options_defaults(&full);
    cr_struct_write(opt, &full, struct_size);
    return CUDARL_OK;
}

/* ---- checks ------------------------------------------------------------------------------ */

/* The camera `src` (the caller's, of any struct_size this library reads) checked into g's frame
 * and crop fields; `where` names the function, `which` the camera ("camera", "cameras[2]"). */
static cudarl_status camera_take(const cudarl_camera *src, const char *where, const char *which,
                                 cr_frame_geom *g) {
    cudarl_camera c;
    camera_defaults(&c);
    CR_TRY(cr_struct_read(&cr_abi_camera, &c, src, where));
    const int f = (int)c.format;
    if (f < CUDARL_PIXEL_GRAY8 || f > CUDARL_PIXEL_NV12)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "%s: %s.format is %d, not a cudarl_pixel_format; "
                       "use CUDARL_PIXEL_GRAY8, _RGB8, _BGR8, _YUYV or _NV12", where, which, f);
    if (c.width < 1 || c.width > CUDARL_FRAME_MAX_SIDE || c.height < 1 ||
        c.height > CUDARL_FRAME_MAX_SIDE)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "%s: %s is %d x %d pixels; width and height go "
                       "from 1 to %d (CUDARL_FRAME_MAX_SIDE): set them to the frames' size", where,
                       which, c.width, c.height, CUDARL_FRAME_MAX_SIDE);
    if ((f == CUDARL_PIXEL_NV12 || f == CUDARL_PIXEL_YUYV) && c.width % 2)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "%s: %s is %s of odd width %d; its chroma comes "
                       "in pairs of pixels, so the width must be even: describe the frame as the "
                       "camera delivers it", where, which, format_name(f), c.width);
    if (f == CUDARL_PIXEL_NV12 && c.height % 2)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "%s: %s is NV12 of odd height %d; its chroma plane "
                       "has one row for two, so the height must be even", where, which, c.height);
    const size_t tight = (size_t)c.width * (size_t)cr_frame_pixel_bytes(f);
    if (c.pitch != 0 && c.pitch < tight)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "%s: %s.pitch is %zu bytes, less than a row of "
                       "%d %s pixels (%zu bytes); pass the bytes from one row to the next, or 0 "
                       "for rows without padding", where, which, c.pitch, c.width, format_name(f),
                       tight);
    const int any_crop = c.crop_x || c.crop_y || c.crop_width || c.crop_height;
    if (any_crop && (c.crop_x < 0 || c.crop_y < 0 || c.crop_width < 1 || c.crop_height < 1 ||
                     c.crop_width > c.width - c.crop_x || c.crop_height > c.height - c.crop_y))
        return cr_fail(CUDARL_ERR_INVALID_ARG, "%s: %s's crop (x %d, y %d, %d x %d) is not a "
                       "rectangle inside its %d x %d frame; give crop_x, crop_y >= 0 and "
                       "crop_width, crop_height >= 1 that end inside the frame, or all four 0 "
                       "for the whole frame", where, which, c.crop_x, c.crop_y, c.crop_width,
                       c.crop_height, c.width, c.height);
    memset(g, 0, sizeof *g);
    g->format = f;
    g->width = c.width, g->height = c.height;
    g->pitch = c.pitch ? c.pitch : tight;
    g->crop_x = any_crop ? c.crop_x : 0, g->crop_y = any_crop ? c.crop_y : 0;
    g->crop_w = any_crop ? c.crop_width : c.width, g->crop_h = any_crop ? c.crop_height : c.height;
    return CUDARL_OK;
}

/* The policy takes pixel stacks: a conv net whose uint8 input is scaled by 1/255. */
static cudarl_status policy_check(const cudarl_policy *p) {
    if (!p)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "cudarl_frames_create: policy is NULL; load a pixel "
                       "policy with cudarl_policy_load first");
    const cr_policy_net *n = &p->net;
    if (!n->is_conv || n->obs_dtype != CUDARL_OBS_U8)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "cudarl_frames_create: the policy of env '%s' "
                       "takes %s observations of %d %s; camera frames need a policy of uint8 "
                       "(C, H, W) images: load a convolutional pixel policy (nature-cnn, e.g. "
                       "trained on CartPolePixels-v1)", n->env_id,
                       n->obs_dtype == CUDARL_OBS_U8 ? "uint8" : "float32", n->obs_dim,
                       n->is_conv ? "elements" : "features (an MLP)");
    if (!n->u8_scaled)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "cudarl_frames_create: the policy of env '%s' "
                       "casts its uint8 input unscaled (channels of 0/1, as MinAtar's), not "
                       "pixels; camera frames need a policy whose input is scaled by 1/255 "
                       "(nature-cnn, or a custom spec with \"scale\":\"1/255\")", n->env_id);
    return CUDARL_OK;
}

/* ---- create, free ------------------------------------------------------------------------ */

enum { A_SELF, A_GEOM, A_STACKS, A_BATCH, A_RING, A_SLOT_FRAMES, A_STAGING, A_BYTES, A_SOURCE,
       A_PTRS };

cudarl_status cudarl_frames_create(cudarl_policy *policy, const cudarl_camera *cameras,
                                   int num_cameras, const cudarl_frames_options *opt,
                                   cudarl_frames **out) {
    const char *where = "cudarl_frames_create";
    CR_REQUIRE(out, "%s: out is NULL; pass the address of a cudarl_frames pointer", where);
    *out = NULL;
    CR_TRY(policy_check(policy));
    cudarl_frames_options o;
    options_defaults(&o);
    if (opt) CR_TRY(cr_struct_read(&cr_abi_frames_options, &o, opt, where));
    if (o.channels != 1 && o.channels != 3)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "%s: channels is %d; a frame becomes 1 channel "
                       "(gray) or 3 (R, G, B)", where, o.channels);
    if (!(o.deadline_us >= 0 && o.deadline_us <= MAX_DEADLINE_US))
        return cr_fail(CUDARL_ERR_INVALID_ARG, "%s: deadline_us is %g; give microseconds from 0 "
                       "(none) to %g", where, o.deadline_us, MAX_DEADLINE_US);
    const cr_convnet_spec *s = &policy->net.cnn.spec;
    if (s->in_c % o.channels)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "%s: the policy of env '%s' takes %d channels, "
                       "not a stack of %d-channel frames; set channels to %s", where,
                       policy->net.env_id, s->in_c, o.channels,
                       o.channels == 3 ? "1 (gray frames)" : "what its frames have");
    if (num_cameras < 1 || num_cameras > policy->opt.max_batch)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "%s: num_cameras is %d; the policy acts on 1 to "
                       "%d observations a call (its max_batch): load it with "
                       "cudarl_policy_options.max_batch >= the number of cameras", where,
                       num_cameras, policy->opt.max_batch);
    CR_REQUIRE(cameras, "%s: cameras is NULL; pass num_cameras cudarl_camera", where);
    cr_frame_geom g0;
    for (int i = 0; i < num_cameras; i++) {
        char which[32];
        snprintf(which, sizeof which, "cameras[%d]", i);
        /* a camera of another struct_size is read at the caller's stride: the array is theirs */
        const cudarl_camera *ci =
            (const cudarl_camera *)((const unsigned char *)cameras +
                                    (size_t)i * (cameras->struct_size ? cameras->struct_size
                                                                      : sizeof *cameras));
        if (i > 0 && ci->struct_size != cameras->struct_size)
            return cr_fail(CUDARL_ERR_INVALID_ARG, "%s: cameras[%d].struct_size %zu differs from "
                           "cameras[0]'s %zu; fill every camera with cudarl_camera_default", where,
                           i, ci->struct_size, cameras->struct_size);
        CR_TRY(camera_take(ci, where, which, &g0));
    }
    const int depth = s->in_c / o.channels;
    const size_t slot = (size_t)o.channels * (size_t)s->in_h * (size_t)s->in_w;
    const size_t row = (size_t)s->in_c * (size_t)s->in_h * (size_t)s->in_w;
    const int on_device = policy->ctx->kind == CUDARL_DEVICE_CUDA;
    const size_t cams = (size_t)num_cameras, on_host = on_device ? 0 : 1;
    cr_plan pl;
    cr_plan_init(&pl);
    cr_plan_add(&pl, "frames", sizeof(cudarl_frames));
    cr_plan_add(&pl, "cameras", cams * sizeof(cr_frame_geom));
    cr_plan_add(&pl, "stacks", on_host * cams * (size_t)depth * slot);
    cr_plan_add(&pl, "batch", on_host * cams * row);
    cr_plan_add(&pl, "latency ring", (size_t)CUDARL_LATENCY_WINDOW * sizeof(uint32_t));
    cr_plan_add(&pl, "frames in flight", CR_FRAMES_SLOTS * cams * sizeof(const void *));
    cr_plan_add(&pl, "staging pointers",
                (1 - on_host) * CR_FRAMES_SLOTS * cams * sizeof(uint8_t *));
    cr_plan_add(&pl, "frame bytes", (1 - on_host) * cams * sizeof(size_t));
    cr_plan_add(&pl, "frame sources", (1 - on_host) * cams * sizeof(int));
    cr_plan_add(&pl, "pointers seen",
                (1 - on_host) * (size_t)cr_frames_ptr_cap(num_cameras) * sizeof(cr_frames_ptr));
    cr_arena a;
    CR_TRY(cr_arena_alloc(&a, &pl, CR_MEM_HOST));
    cudarl_frames *f = cr_arena_get(&a, A_SELF);
    f->host = a;
    f->policy = policy;
    f->num_cameras = num_cameras;
    f->channels = o.channels, f->depth = depth;
    f->C = s->in_c, f->H = s->in_h, f->W = s->in_w;
    f->slot_bytes = slot, f->row_bytes = row;
    f->geom = cr_arena_get(&a, A_GEOM);
    f->stacks = on_device ? NULL : cr_arena_get(&a, A_STACKS);
    f->batch = on_device ? NULL : cr_arena_get(&a, A_BATCH);
    f->on_device = on_device;
    f->slot_frames = cr_arena_get(&a, A_SLOT_FRAMES);
    f->fill = 1;
    for (int i = 0; i < num_cameras; i++) {
        const cudarl_camera *ci =
            (const cudarl_camera *)((const unsigned char *)cameras + (size_t)i *
                                                                      cameras->struct_size);
        CR_TRY(camera_take(ci, where, "camera", &f->geom[i])); /* checked above */
        f->geom[i].out_w = f->W, f->geom[i].out_h = f->H, f->geom[i].channels = f->channels;
    }
    cr_latency_init(&f->lat, cr_arena_get(&a, A_RING), o.deadline_us);
#ifdef CUDARL_WITH_CUDA
    f->check_device_ptrs = !on_device && cr_policy_cuda_devices() > 0;
    if (on_device) {
        f->cuda.staging = cr_arena_get(&a, A_STAGING);
        f->cuda.frame_bytes = cr_arena_get(&a, A_BYTES);
        f->cuda.source = cr_arena_get(&a, A_SOURCE);
        f->cuda.ptrs = cr_arena_get(&a, A_PTRS);
        f->cuda.ptr_cap = cr_frames_ptr_cap(num_cameras);
        cudarl_status st = cr_frames_cuda_init(f);
        if (st != CUDARL_OK) {
            cr_arena_free(&a);
            return st;
        }
    }
#endif
    CR_DEBUG("frames: %d camera(s) -> (%d, %d, %d) stacks of %d %s frame(s) on the %s, %zu host "
             "bytes", num_cameras, f->C, f->H, f->W, depth, o.channels == 3 ? "RGB" : "gray",
             on_device ? "GPU" : "CPU", pl.total);
    *out = f;
    return CUDARL_OK;
}

void cudarl_frames_free(cudarl_frames *f) {
    if (!f) return;
#ifdef CUDARL_WITH_CUDA
    if (f->on_device) cr_frames_cuda_free(f);
#endif
    cr_arena host = f->host; /* the handle lives in it */
    cr_arena_free(&host);
}

cudarl_status cudarl_frames_reset(cudarl_frames *f) {
    CR_REQUIRE(f, "cudarl_frames_reset: frames is NULL; make them with cudarl_frames_create");
    CR_REQUIRE(!f->in_flight, "cudarl_frames_reset: %d tick(s) submitted and not waited for "
               "would stack frames across the reset; call cudarl_frames_wait for each first",
               f->in_flight);
    f->fill = 1;
#ifdef CUDARL_WITH_CUDA
    if (f->on_device) cr_frames_cuda_forget_pointers(f); /* their kinds are looked up again */
#endif
    return CUDARL_OK;
}

/* ---- tick: submit, wait ------------------------------------------------------------------ */

/* The frames of a tick: none NULL; for a CPU policy none in device memory. `where` names the
 * function. */
static cudarl_status frames_check(const cudarl_frames *f, const char *where,
                                  const void *const *frames) {
    CR_REQUIRE(f, "%s: frames is NULL; make them with cudarl_frames_create", where);
    CR_REQUIRE(frames, "%s: camera_frames is NULL; pass an array of %d frame pointers, one a "
               "camera", where, f->num_cameras);
    for (int i = 0; i < f->num_cameras; i++) {
        CR_REQUIRE(frames[i], "%s: camera_frames[%d] is NULL; pass camera %d's frame of this tick "
                   "(%s, %zu bytes)", where, i, i,
                   f->on_device ? "host or device memory" : "host memory",
                   cr_frame_bytes(&f->geom[i]));
#ifdef CUDARL_WITH_CUDA
        int dev = f->check_device_ptrs ? cr_policy_pointer_device(frames[i]) : -1;
        if (dev >= 0)
            return cr_fail(CUDARL_ERR_UNSUPPORTED, "%s: camera_frames[%d] is device memory "
                           "(cuda:%d), but the policy runs on the CPU, which preprocesses frames "
                           "in host memory: pass host frames, or load the policy on CUDA "
                           "(cudarl_policy_options.device) to read device frames in place", where,
                           i, dev);
#endif
    }
    return CUDARL_OK;
}

/* The outputs of a tick, as act() takes them for num_cameras rows (and on the policy's GPU). */
static cudarl_status outputs_check(cudarl_frames *f, const void *actions,
                                   const float *values, const float *logits) {
    /* obs: the batch of a CPU policy; a CUDA policy's is on the device (checked not NULL) */
    CR_TRY(cr_policy_act_check(f->policy, f->on_device ? (const void *)f : f->batch,
                               CUDARL_OBS_U8, f->num_cameras, actions, values, logits));
#ifdef CUDARL_WITH_CUDA
    if (f->on_device) CR_TRY(cr_frames_cuda_outputs_check(f, actions, values, logits));
#endif
    return CUDARL_OK;
}

/* The CPU policy's tick: each frame into its stack's newest slot, the stacks into the batch,
 * then act(). */
static cudarl_status tick_host(cudarl_frames *f, const void *const *frames, void *actions,
                               float *values, float *logits) {
    const int K = f->depth;
    cudarl_ctx *ctx = f->policy->ctx;
    f->newest = f->fill ? 0 : (f->newest + 1) % K;
    for (int i = 0; i < f->num_cameras; i++) {
        uint8_t *ring = f->stacks + (size_t)i * (size_t)K * f->slot_bytes;
        uint8_t *slot = ring + (size_t)f->newest * f->slot_bytes;
        ctx->ops->frame_to_obs(ctx, &f->geom[i], frames[i], slot);
        if (f->fill) /* Gymnasium's reset: the first frame in every slot */
            for (int k = 1; k < K; k++)
                memcpy(ring + (size_t)k * f->slot_bytes, ring, f->slot_bytes);
        uint8_t *obs = f->batch + (size_t)i * f->row_bytes;
        for (int k = 0; k < K; k++) /* oldest first: the slot after the newest, around */
            memcpy(obs + (size_t)k * f->slot_bytes,
                   ring + (size_t)((f->newest + 1 + k) % K) * f->slot_bytes, f->slot_bytes);
    }
    f->fill = 0;
    return cudarl_policy_act(f->policy, f->batch, CUDARL_OBS_U8, f->num_cameras, actions, values,
                             logits);
}

/* submit without the check of a tick in flight's place (`where`: the caller's name). */
static cudarl_status submit(cudarl_frames *f, const char *where, const void *const *frames,
                            uint64_t t0) {
    CR_TRY(frames_check(f, where, frames));
    const int slot = (f->oldest + f->in_flight) % CR_FRAMES_SLOTS;
#ifdef CUDARL_WITH_CUDA
    if (f->on_device) { /* the ring advances at submit: the ticks' graphs run in order */
        const int newest = f->fill ? 0 : (f->newest + 1) % f->depth;
        CR_TRY(cr_frames_cuda_submit(f, where, slot, newest, frames));
        f->newest = newest;
        f->fill = 0;
    }
#endif
    if (!f->on_device) /* the CPU's tick runs in its wait */
        memcpy(f->slot_frames + (size_t)slot * (size_t)f->num_cameras, frames,
               (size_t)f->num_cameras * sizeof *frames);
    f->submitted_ns[slot] = t0;
    f->in_flight++;
    return CUDARL_OK;
}

cudarl_status cudarl_frames_submit(cudarl_frames *f, const void *const *frames) {
    const uint64_t t0 = cr_now_ns();
    CR_REQUIRE(f, "cudarl_frames_submit: frames is NULL; make them with cudarl_frames_create");
    CR_REQUIRE(f->in_flight < CR_FRAMES_SLOTS, "cudarl_frames_submit: %d ticks are in flight, "
               "the most the frames hold; call cudarl_frames_wait for the oldest first",
               f->in_flight);
    return submit(f, "cudarl_frames_submit", frames, t0);
}

cudarl_status cudarl_frames_wait(cudarl_frames *f, void *actions, float *values, float *logits) {
    CR_REQUIRE(f, "cudarl_frames_wait: frames is NULL; make them with cudarl_frames_create");
    CR_REQUIRE(f->in_flight > 0, "cudarl_frames_wait: no tick is in flight; call "
               "cudarl_frames_submit first (or cudarl_frames_tick for a tick that waits)");
    CR_TRY(outputs_check(f, actions, values, logits)); /* refused: the tick stays in flight */
    const int slot = f->oldest;
    f->oldest = (f->oldest + 1) % CR_FRAMES_SLOTS, f->in_flight--;
    cudarl_status st = CUDARL_OK;
#ifdef CUDARL_WITH_CUDA
    if (f->on_device) st = cr_frames_cuda_wait(f, slot, actions, values, logits);
#endif
    if (!f->on_device)
        st = tick_host(f, f->slot_frames + (size_t)slot * (size_t)f->num_cameras, actions, values,
                       logits);
    if (st != CUDARL_OK) return st;
    f->acted = 1;
    cr_latency_record(&f->lat, cr_now_ns() - f->submitted_ns[slot]);
    return CUDARL_OK;
}

cudarl_status cudarl_frames_tick(cudarl_frames *f, const void *const *frames, void *actions,
                                 float *values, float *logits) {
    const uint64_t t0 = cr_now_ns();
    CR_REQUIRE(f, "cudarl_frames_tick: frames is NULL; make them with cudarl_frames_create");
    CR_REQUIRE(!f->in_flight, "cudarl_frames_tick: %d tick(s) submitted and not waited for, "
               "whose outputs come first; call cudarl_frames_wait for each before a tick",
               f->in_flight);
    CR_TRY(outputs_check(f, actions, values, logits)); /* before submit: the wait cannot refuse */
    CR_TRY(submit(f, "cudarl_frames_tick", frames, t0));
    return cudarl_frames_wait(f, actions, values, logits);
}

cudarl_status cudarl_frames_observations(const cudarl_frames *f, void *out, size_t bytes) {
    CR_REQUIRE(f && out, "cudarl_frames_observations: %s is NULL; pass the frames and room for "
               "their observation batch", f ? "out" : "frames");
    const size_t need = (size_t)f->num_cameras * f->row_bytes;
    CR_REQUIRE(bytes >= need, "cudarl_frames_observations: out holds %zu bytes; the batch is %zu "
               "(%d cameras x %d x %d x %d uint8)", bytes, need, f->num_cameras, f->C, f->H, f->W);
    CR_REQUIRE(f->acted, "cudarl_frames_observations: no tick has run yet; call "
               "cudarl_frames_tick (or cudarl_frames_submit and cudarl_frames_wait) first");
#ifdef CUDARL_WITH_CUDA
    if (f->on_device) return cr_frames_cuda_observations(f, out);
#endif
    memcpy(out, f->batch, need);
    return CUDARL_OK;
}

cudarl_status cudarl_frames_latency(const cudarl_frames *f, cudarl_latency_stats *st) {
    CR_REQUIRE(f && st, "cudarl_frames_latency: %s is NULL; pass the frames and a "
               "cudarl_latency_stats to fill", f ? "stats" : "frames");
    cr_latency_stats_fill(&f->lat, st);
    return CUDARL_OK;
}

/* ---- one frame --------------------------------------------------------------------------- */

cudarl_status cudarl_frame_convert(const cudarl_camera *cam, const void *frame, int out_width,
                                   int out_height, int channels, uint8_t *out) {
    const char *where = "cudarl_frame_convert";
    cr_frame_geom g;
    CR_TRY(camera_take(cam, where, "camera", &g));
    CR_REQUIRE(frame && out, "%s: %s is NULL; pass the frame (host) and room for channels x "
               "out_height x out_width bytes", where, frame ? "out" : "frame");
    CR_REQUIRE(channels == 1 || channels == 3, "%s: channels is %d; a frame becomes 1 channel "
               "(gray) or 3 (R, G, B)", where, channels);
    CR_REQUIRE(out_width >= 1 && out_width <= CUDARL_FRAME_MAX_SIDE && out_height >= 1 &&
                   out_height <= CUDARL_FRAME_MAX_SIDE,
               "%s: the output is %d x %d; width and height go from 1 to %d", where, out_width,
               out_height, CUDARL_FRAME_MAX_SIDE);
    g.out_w = out_width, g.out_h = out_height, g.channels = channels;
    cr_cpu_frame_to_obs(&g, frame, out);
    return CUDARL_OK;
}
