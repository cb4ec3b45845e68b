/* Camera frames to observations (cudarl_frames_*, cudarl_frame_convert; src/runtime/frames.c over
 * ops/frames.h).
 *
 *   test_frames cpu  PPO_MLP_CKPT   (label cpu)
 *   test_frames cuda PPO_MLP_CKPT   (label gpu: the same checks with the policies on the GPU)
 *
 * PPO_MLP_CKPT is the CartPole MLP checkpoint of tests/unit/policy_runtime.cmake's fixture (a
 * policy of float observations, which the frames refuse).
 *
 * Checks: each pixel format's conversion on tiny frames against values worked out by hand from
 * the formulas in cudarl.h (equal to OpenCV's cvtColor on the same bytes); the area resize on
 * integer and non-integer ratios, down and up, with crops and row padding; the stack order
 * (oldest first, as CartPolePixels-v1), the reset padding (the first frame in every slot), the
 * packing of cameras into rows, for gray and RGB frames; every refusal, each message naming the
 * problem; no allocation in 200 ticks (malloc and its kin counted by interposition, but for
 * libgomp's own teams of the CPU forward's parallel regions, which it frees at their end; the
 * heap in use unchanged, the one check under ASan and on CUDA); end to end, three cameras of three formats into a nature-cnn
 * policy: each tick's observations equal the batch built by hand from cudarl_frame_convert's
 * outputs, and its actions, values and logits equal cudarl_policy_act's on that batch, bit for
 * bit; the latency record counts every tick and its misses. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "netspecs.h"
#include "cudarl.h"

/* ---- allocation count --------------------------------------------------------------------- */

#if defined(__SANITIZE_ADDRESS__)
size_t __sanitizer_get_current_allocated_bytes(void); /* sanitizer/allocator_interface.h */
static size_t heap_in_use(void) { return __sanitizer_get_current_allocated_bytes(); }
static long allocs, gomp_allocs;
static int counting, interposed = 0;
#else
static size_t heap_in_use(void) { return mallinfo2().uordblks; }
/* glibc's allocator under its own names: the functions below count the calls made while
 * `counting` and hand them on. */
void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
void *__libc_memalign(size_t align, size_t n);
void __libc_free(void *p);
static long allocs, gomp_allocs;
static int counting, interposed = 1;
/* Counts a call from `caller`: libgomp's own (a team for each parallel region of the CPU ops,
 * freed at its end) apart from the rest. */
static void count(const void *caller) {
    Dl_info d;
    if (dladdr(caller, &d) && d.dli_fname && strstr(d.dli_fname, "libgomp")) gomp_allocs++;
    else allocs++;
}
void *malloc(size_t n) {
    if (counting) count(__builtin_return_address(0));
    return __libc_malloc(n);
}
void *calloc(size_t n, size_t size) {
    if (counting) count(__builtin_return_address(0));
    return __libc_calloc(n, size);
}
void *realloc(void *p, size_t n) {
    if (counting) count(__builtin_return_address(0));
    return __libc_realloc(p, n);
}
void *memalign(size_t align, size_t n) {
    if (counting) count(__builtin_return_address(0));
    return __libc_memalign(align, n);
}
void *aligned_alloc(size_t align, size_t n) {
    if (counting) count(__builtin_return_address(0));
    return __libc_memalign(align, n);
}
int posix_memalign(void **p, size_t align, size_t n) {
    if (counting) count(__builtin_return_address(0));
    *p = __libc_memalign(align, n);
    return *p ? 0 : 12; /* ENOMEM */
}
void free(void *p) { __libc_free(p); }
#endif

/* ---- helpers ------------------------------------------------------------------------------ */

static cudarl_device_kind device = CUDARL_DEVICE_CPU;

static cudarl_camera camera(int w, int h, cudarl_pixel_format f) {
    cudarl_camera c;
    CHECK_OK(cudarl_camera_default(&c));
    c.width = w, c.height = h, c.format = f;
    return c;
}

static void refused(cudarl_status got, cudarl_status want, const char *part) {
    CHECK_MSG(got == want, "status %s, want %s (%s)", cudarl_status_name(got),
              cudarl_status_name(want), cudarl_last_error());
    CHECK_MSG(strstr(cudarl_last_error(), part), "message \"%s\" lacks \"%s\"",
              cudarl_last_error(), part);
}

static void bytes_equal(const char *what, const uint8_t *got, const uint8_t *want, size_t n) {
    for (size_t i = 0; i < n; i++)
        CHECK_MSG(got[i] == want[i], "%s: byte %zu is %d, want %d", what, i, got[i], want[i]);
}

/* cudarl_frame_convert of `frame` to out_w x out_h x channels, held to `want`. */
static void convert_is(const char *what, const cudarl_camera *c, const void *frame, int out_w,
                       int out_h, int channels, const uint8_t *want) {
    uint8_t out[64];
    size_t n = (size_t)out_w * out_h * channels;
    CHECK(n <= sizeof out);
    memset(out, 0xA5, sizeof out);
    CHECK_OK(cudarl_frame_convert(c, frame, out_w, out_h, channels, out));
    bytes_equal(what, out, want, n);
}

/* A custom conv net in the text form: uint8 (C, H, W) scaled as `scale`, conv 4@3x3/1 + relu,
 * flatten, linear 8 + relu, PPO heads (3 actions). */
static void small_net(char *buf, size_t cap, int C, int H, int W, const char *scale) {
    snprintf(buf, cap,
             "{\"format\":\"cudarl-convnet\",\"version\":1,\"name\":\"custom\","
             "\"input\":{\"shape\":[%d,%d,%d],\"dtype\":\"u8\",\"scale\":\"%s\"},"
             "\"layers\":[{\"type\":\"conv\",\"out\":4,\"kernel\":[3,3],\"stride\":1,\"pad\":0},"
             "{\"type\":\"relu\"},{\"type\":\"flatten\"},{\"type\":\"linear\",\"out\":8},"
             "{\"type\":\"relu\"}],\"heads\":{\"type\":\"ppo\",\"actions\":3}}",
             C, H, W, scale);
}

static const char NATURE[] = NETSPEC_NATURE_PPO6;

static cudarl_policy *net_policy(const char *text, int max_batch, uint64_t seed) {
    size_t np = 0;
    CHECK_OK(cudarl_network_init_params(text, seed, NULL, 0, &np));
    float *params = malloc(np * sizeof(float));
    CHECK(params);
    CHECK_OK(cudarl_network_init_params(text, seed, params, np, &np));
    cudarl_policy_options o;
    CHECK_OK(cudarl_policy_options_default(&o));
    o.device = device, o.max_batch = max_batch;
    cudarl_policy *p = NULL;
    CHECK_OK(cudarl_policy_load_network(text, params, np, "test frames", CUDARL_CONV_ENGINE_AUTO,
                                        &o, &p));
    free(params);
    return p;
}

/* Deterministic bytes (xorshift), for frames. */
static uint32_t rng_state = 12345u;
static uint8_t rnd(void) {
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 17, rng_state ^= rng_state << 5;
    return (uint8_t)(rng_state >> 11);
}

/* ---- conversions on tiny frames ----------------------------------------------------------- */

static void test_formats(void) {
    /* GRAY8 2x2 to 1x1: (10 + 20 + 30 + 41 + 2) / 4 = 25 (25.25); 42: 25.5 rounds up to 26 */
    cudarl_camera c = camera(2, 2, CUDARL_PIXEL_GRAY8);
    const uint8_t g1[] = {10, 20, 30, 41}, g2[] = {10, 20, 30, 42};
    convert_is("gray 2x2 -> 1x1", &c, g1, 1, 1, 1, (const uint8_t[]){25});
    convert_is("gray 2x2 -> 1x1, half", &c, g2, 1, 1, 1, (const uint8_t[]){26});
    /* the same size: the frame itself; RGB from gray repeats it */
    convert_is("gray 2x2 -> 2x2", &c, g1, 2, 2, 1, g1);
    convert_is("gray 2x2 -> rgb", &c, g1, 2, 2, 3,
               (const uint8_t[]){10, 20, 30, 41, 10, 20, 30, 41, 10, 20, 30, 41});

    /* RGB8 and BGR8, 4x1: gray = (9798 R + 19235 G + 3735 B + 16384) >> 15 */
    const uint8_t px[] = {255, 0, 0, 0, 255, 0, 0, 0, 255, 200, 100, 50};
    c = camera(4, 1, CUDARL_PIXEL_RGB8);
    convert_is("rgb -> gray", &c, px, 4, 1, 1, (const uint8_t[]){76, 150, 29, 124});
    convert_is("rgb -> rgb", &c, px, 4, 1, 3,
               (const uint8_t[]){255, 0, 0, 200, 0, 255, 0, 100, 0, 0, 255, 50});
    c = camera(4, 1, CUDARL_PIXEL_BGR8);
    convert_is("bgr -> gray", &c, px, 4, 1, 1, (const uint8_t[]){29, 150, 76, 96});
    convert_is("bgr -> rgb", &c, px, 4, 1, 3,
               (const uint8_t[]){0, 0, 255, 50, 0, 255, 0, 100, 255, 0, 0, 200});

    /* YUYV 4x2 (Y0 U Y1 V): gray is Y; RGB by BT.601 with each pair's U, V */
    const uint8_t yuyv[] = {16, 128, 126, 255, 235, 0, 81, 64,
                            60, 90, 200, 180, 100, 255, 150, 128};
    c = camera(4, 2, CUDARL_PIXEL_YUYV);
    convert_is("yuyv -> gray", &c, yuyv, 4, 2, 1,
               (const uint8_t[]){16, 126, 235, 81, 60, 200, 100, 150});
    convert_is("yuyv -> rgb", &c, yuyv, 4, 2, 3,
               (const uint8_t[]){203, 255, 153, 0, 134, 255, 98, 156,  /* R */
                                 0, 25, 255, 178, 24, 187, 48, 106,    /* G */
                                 0, 128, 0, 0, 0, 137, 255, 255});     /* B */
    /* NV12 4x2: the Y plane, then one row U0 V0 U1 V1 for both rows */
    const uint8_t nv12[] = {16, 126, 235, 81, 60, 200, 100, 150, 128, 255, 0, 64};
    c = camera(4, 2, CUDARL_PIXEL_NV12);
    convert_is("nv12 -> gray", &c, nv12, 4, 2, 1,
               (const uint8_t[]){16, 126, 235, 81, 60, 200, 100, 150});
    convert_is("nv12 -> rgb", &c, nv12, 4, 2, 3,
               (const uint8_t[]){203, 255, 153, 0, 254, 255, 0, 54,
                                 0, 25, 255, 178, 0, 111, 200, 255,
                                 0, 128, 0, 0, 51, 214, 0, 0});
    /* NV12 to one pixel: the average of the converted pixels, not the conversion of averages:
     * R (203 + 255 + 153 + 0 + 254 + 255 + 0 + 54 + 4) / 8 = 147 (146.75) */
    convert_is("nv12 -> rgb 1x1", &c, nv12, 1, 1, 3, (const uint8_t[]){147, 128, 49});
    /* a crop at an odd x keeps each pixel's chroma of the whole frame: pixels 1..2 of row 0 */
    c.crop_x = 1, c.crop_y = 0, c.crop_width = 2, c.crop_height = 1;
    convert_is("nv12 odd crop", &c, nv12, 2, 1, 3,
               (const uint8_t[]){255, 153, 25, 255, 128, 0});
    printf("formats: gray, rgb, bgr, yuyv, nv12 by hand\n");
}

static void test_resize(void) {
    /* 3x1 -> 2x1: out 0 covers [0, 1.5): weights 2, 1 (halves); out 1 [1.5, 3): 1, 2.
     * (2 x 10 + 20 + 1) / 3 = 13; (20 + 2 x 40 + 1) / 3 = 33 */
    cudarl_camera c = camera(3, 1, CUDARL_PIXEL_GRAY8);
    const uint8_t a[] = {10, 20, 40};
    convert_is("3 -> 2", &c, a, 2, 1, 1, (const uint8_t[]){13, 33});
    /* up: 2x1 -> 3x1: out 1 covers [2/3, 4/3): half of each; (0 + 90 + 1) / 2 = 45 */
    c = camera(2, 1, CUDARL_PIXEL_GRAY8);
    convert_is("2 -> 3", &c, (const uint8_t[]){0, 90}, 3, 1, 1, (const uint8_t[]){0, 45, 90});
    /* both axes: 3x3 -> 2x2 of 0..8: out (0,0) weights (2,1) x (2,1) over 0 1 / 3 4:
     * (4x0 + 2x1 + 2x3 + 1x4 + 4) / 9 = 1 (1.33); out (1,1): (1x4 + 2x5 + 2x7 + 4x8 + 4) / 9 = 7 */
    c = camera(3, 3, CUDARL_PIXEL_GRAY8);
    const uint8_t n9[] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    convert_is("3x3 -> 2x2", &c, n9, 2, 2, 1, (const uint8_t[]){1, 3, 5, 7});
    /* a crop: the centre 2x2 of a 4x4 (5 6 9 10: 7.5 rounds to 8), rows padded to 7 bytes */
    uint8_t padded[4 * 7];
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 7; x++) padded[y * 7 + x] = x < 4 ? (uint8_t)(y * 4 + x) : 0xEE;
    c = camera(4, 4, CUDARL_PIXEL_GRAY8);
    c.pitch = 7;
    convert_is("pitch 7", &c, padded, 1, 1, 1, (const uint8_t[]){8}); /* (0+...+15 + 8) / 16 */
    c.crop_x = 1, c.crop_y = 1, c.crop_width = 2, c.crop_height = 2;
    convert_is("crop", &c, padded, 1, 1, 1, (const uint8_t[]){8});
    convert_is("crop 1:1", &c, padded, 2, 2, 1, (const uint8_t[]){5, 6, 9, 10});
    c.crop_x = 3, c.crop_y = 2, c.crop_width = 1, c.crop_height = 2; /* the last column */
    convert_is("crop edge", &c, padded, 1, 2, 1, (const uint8_t[]){11, 15});
    printf("resize: ratios 3:2, 2:3, 3x3:2x2, crops, pitch by hand\n");
}

/* ---- stacks ------------------------------------------------------------------------------- */

/* Two gray cameras of constant frames into a (4, 6, 6) policy: the stack order, the reset
 * padding, the rows. */
static void test_stack_gray(void) {
    char net[1024];
    small_net(net, sizeof net, 4, 6, 6, "1/255");
    cudarl_policy *p = net_policy(net, 2, 7);
    cudarl_camera cams[2] = {camera(12, 12, CUDARL_PIXEL_GRAY8), camera(6, 6, CUDARL_PIXEL_GRAY8)};
    cudarl_frames *f;
    CHECK_OK(cudarl_frames_create(p, cams, 2, NULL, &f));
    uint8_t obs[2 * 4 * 36], f0[144], f1[36];
    refused(cudarl_frames_observations(f, obs, sizeof obs), CUDARL_ERR_INVALID_ARG,
            "no tick has run yet");
    const void *frames[2] = {f0, f1};
    int32_t actions[2];
    /* tick t shows camera 0 the value 10 t, camera 1 the value 10 t + 1 */
    const int want[][4] = {{10, 10, 10, 10}, {10, 10, 10, 20}, {10, 10, 20, 30},
                           {10, 20, 30, 40}, {20, 30, 40, 50}, {30, 40, 50, 60},
                           {70, 70, 70, 70}, {70, 70, 70, 80}};
    for (int t = 0; t < 8; t++) {
        if (t == 6) CHECK_OK(cudarl_frames_reset(f));
        int v = 10 * (t + 1);
        memset(f0, v, sizeof f0), memset(f1, v + 1, sizeof f1);
        CHECK_OK(cudarl_frames_tick(f, frames, actions, NULL, NULL));
        CHECK_OK(cudarl_frames_observations(f, obs, sizeof obs));
        for (int cam = 0; cam < 2; cam++)
            for (int k = 0; k < 4; k++)
                for (int i = 0; i < 36; i++) {
                    int got = obs[(cam * 4 + k) * 36 + i], w = want[t][k] + cam;
                    CHECK_MSG(got == w, "tick %d camera %d frame %d pixel %d: %d, want %d", t, cam,
                              k, i, got, w);
                }
    }
    refused(cudarl_frames_observations(f, obs, sizeof obs - 1), CUDARL_ERR_INVALID_ARG,
            "the batch is 288");
    cudarl_frames_free(f);
    cudarl_policy_free(p);
    printf("stack (gray): oldest first, reset fills, rows by camera\n");
}

/* RGB frames: a (6, 4, 4) policy stacks two frames of R, G, B planes. */
static void test_stack_rgb(void) {
    char net[1024];
    small_net(net, sizeof net, 6, 4, 4, "1/255");
    cudarl_policy *p = net_policy(net, 1, 8);
    cudarl_camera cam = camera(8, 8, CUDARL_PIXEL_RGB8);
    cudarl_frames_options o;
    CHECK_OK(cudarl_frames_options_default(&o));
    o.channels = 3;
    cudarl_frames *f;
    CHECK_OK(cudarl_frames_create(p, &cam, 1, &o, &f));
    uint8_t frame[8 * 8 * 3], obs[6 * 16];
    const void *frames[1] = {frame};
    int32_t action;
    for (int t = 0; t < 3; t++) {
        for (int i = 0; i < 64; i++)
            frame[3 * i] = (uint8_t)(100 + t), frame[3 * i + 1] = (uint8_t)(150 + t),
            frame[3 * i + 2] = (uint8_t)(200 + t);
        CHECK_OK(cudarl_frames_tick(f, frames, &action, NULL, NULL));
    }
    CHECK_OK(cudarl_frames_observations(f, obs, sizeof obs));
    const int want[6] = {101, 151, 201, 102, 152, 202}; /* ticks 1 and 2: R G B, R G B */
    for (int ch = 0; ch < 6; ch++)
        for (int i = 0; i < 16; i++)
            CHECK_MSG(obs[ch * 16 + i] == want[ch], "channel %d pixel %d: %d, want %d", ch, i,
                      obs[ch * 16 + i], want[ch]);
    cudarl_frames_free(f);
    cudarl_policy_free(p);
    printf("stack (rgb): frames oldest first, planes R G B\n");
}

/* ---- refusals ----------------------------------------------------------------------------- */

static void test_refusals(const char *mlp_path) {
    char net[1024];
    small_net(net, sizeof net, 4, 6, 6, "1/255");
    cudarl_policy *p = net_policy(net, 2, 9);
    cudarl_frames *f = (cudarl_frames *)1;
    cudarl_camera c = camera(8, 8, CUDARL_PIXEL_GRAY8), bad;

    bad = c, bad.format = (cudarl_pixel_format)7;
    refused(cudarl_frames_create(p, &bad, 1, NULL, &f), CUDARL_ERR_INVALID_ARG,
            "cameras[0].format is 7, not a cudarl_pixel_format");
    CHECK(f == NULL);
    bad = camera(7, 8, CUDARL_PIXEL_NV12);
    refused(cudarl_frames_create(p, &bad, 1, NULL, &f), CUDARL_ERR_INVALID_ARG,
            "NV12 of odd width 7");
    bad = camera(8, 5, CUDARL_PIXEL_NV12);
    refused(cudarl_frames_create(p, &bad, 1, NULL, &f), CUDARL_ERR_INVALID_ARG, "odd height 5");
    bad = camera(5, 4, CUDARL_PIXEL_YUYV);
    refused(cudarl_frames_create(p, &bad, 1, NULL, &f), CUDARL_ERR_INVALID_ARG,
            "YUYV of odd width 5");
    bad = camera(0, 8, CUDARL_PIXEL_GRAY8);
    refused(cudarl_frames_create(p, &bad, 1, NULL, &f), CUDARL_ERR_INVALID_ARG, "0 x 8 pixels");
    bad = camera(8, 8, CUDARL_PIXEL_RGB8), bad.pitch = 23;
    refused(cudarl_frames_create(p, &bad, 1, NULL, &f), CUDARL_ERR_INVALID_ARG,
            "pitch is 23 bytes, less than a row of 8 CUDARL_PIXEL_RGB8 pixels (24 bytes)");
    bad = c, bad.crop_x = 4, bad.crop_width = 5, bad.crop_height = 2;
    refused(cudarl_frames_create(p, &bad, 1, NULL, &f), CUDARL_ERR_INVALID_ARG,
            "crop (x 4, y 0, 5 x 2) is not a rectangle inside its 8 x 8 frame");
    bad = c, bad.crop_x = -1, bad.crop_width = 2, bad.crop_height = 2;
    refused(cudarl_frames_create(p, &bad, 1, NULL, &f), CUDARL_ERR_INVALID_ARG,
            "not a rectangle inside");
    bad = c, bad.crop_x = 2; /* a crop without a size */
    refused(cudarl_frames_create(p, &bad, 1, NULL, &f), CUDARL_ERR_INVALID_ARG,
            "not a rectangle inside");
    bad = c, bad.struct_size = 0;
    refused(cudarl_frames_create(p, &bad, 1, NULL, &f), CUDARL_ERR_INVALID_ARG,
            "cudarl_camera.struct_size is 0");
    cudarl_camera two[2] = {c, camera(8, 8, (cudarl_pixel_format)-1)};
    refused(cudarl_frames_create(p, two, 2, NULL, &f), CUDARL_ERR_INVALID_ARG, "cameras[1].format");
    refused(cudarl_frames_create(p, &c, 3, NULL, &f), CUDARL_ERR_INVALID_ARG,
            "num_cameras is 3; the policy acts on 1 to 2 observations");
    refused(cudarl_frames_create(p, &c, 0, NULL, &f), CUDARL_ERR_INVALID_ARG, "num_cameras is 0");
    refused(cudarl_frames_create(p, NULL, 1, NULL, &f), CUDARL_ERR_INVALID_ARG, "cameras is NULL");
    refused(cudarl_frames_create(NULL, &c, 1, NULL, &f), CUDARL_ERR_INVALID_ARG, "policy is NULL");
    refused(cudarl_frames_create(p, &c, 1, NULL, NULL), CUDARL_ERR_INVALID_ARG, "out is NULL");

    cudarl_frames_options o;
    CHECK_OK(cudarl_frames_options_default(&o));
    o.channels = 3; /* 4 channels are not a stack of RGB frames */
    refused(cudarl_frames_create(p, &c, 1, &o, &f), CUDARL_ERR_INVALID_ARG,
            "takes 4 channels, not a stack of 3-channel frames; set channels to 1");
    o.channels = 2;
    refused(cudarl_frames_create(p, &c, 1, &o, &f), CUDARL_ERR_INVALID_ARG, "channels is 2");
    o.channels = 1, o.deadline_us = -1;
    refused(cudarl_frames_create(p, &c, 1, &o, &f), CUDARL_ERR_INVALID_ARG, "deadline_us is -1");
    o.deadline_us = 0, o.struct_size = sizeof o + 8;
    refused(cudarl_frames_create(p, &c, 1, &o, &f), CUDARL_ERR_INVALID_ARG, "newer cudarl.h");

    /* policies that do not take pixel stacks */
    cudarl_policy_options po;
    CHECK_OK(cudarl_policy_options_default(&po));
    po.device = device;
    cudarl_policy *mlp;
    CHECK_OK(cudarl_policy_load(mlp_path, &po, &mlp));
    refused(cudarl_frames_create(mlp, &c, 1, NULL, &f), CUDARL_ERR_INVALID_ARG,
            "takes float32 observations of 4 features (an MLP)");
    cudarl_policy_free(mlp);
    small_net(net, sizeof net, 4, 6, 6, "none");
    cudarl_policy *cast = net_policy(net, 1, 10);
    refused(cudarl_frames_create(cast, &c, 1, NULL, &f), CUDARL_ERR_INVALID_ARG,
            "casts its uint8 input unscaled");
    cudarl_policy_free(cast);

    /* ticks */
    cudarl_camera cams[2] = {c, c};
    CHECK_OK(cudarl_frames_create(p, cams, 2, NULL, &f));
    uint8_t frame[64] = {0};
    int32_t actions[2];
    const void *one_null[2] = {frame, NULL};
    refused(cudarl_frames_tick(f, NULL, actions, NULL, NULL), CUDARL_ERR_INVALID_ARG,
            "camera_frames is NULL; pass an array of 2 frame pointers");
    refused(cudarl_frames_tick(f, one_null, actions, NULL, NULL), CUDARL_ERR_INVALID_ARG,
            "camera_frames[1] is NULL; pass camera 1's frame of this tick (host memory, 64 bytes)");
    const void *both[2] = {frame, frame};
    refused(cudarl_frames_tick(f, both, NULL, NULL, NULL), CUDARL_ERR_INVALID_ARG,
            "actions is NULL");
    refused(cudarl_frames_tick(NULL, both, actions, NULL, NULL), CUDARL_ERR_INVALID_ARG,
            "frames is NULL");
    cudarl_latency_stats st;
    CHECK_OK(cudarl_frames_latency(f, &st));
    CHECK_MSG(st.count == 0, "refused ticks counted: %lld", (long long)st.count);
    uint8_t obs[2 * 4 * 36];
    refused(cudarl_frames_observations(f, obs, sizeof obs), CUDARL_ERR_INVALID_ARG,
            "no tick has run yet"); /* the refused ticks did not act */
    refused(cudarl_frames_reset(NULL), CUDARL_ERR_INVALID_ARG, "frames is NULL");
    refused(cudarl_frames_latency(f, NULL), CUDARL_ERR_INVALID_ARG, "stats is NULL");
    cudarl_frames_free(f);
    cudarl_frames_free(NULL);

    /* one frame */
    uint8_t out[64];
    refused(cudarl_frame_convert(&c, frame, 0, 4, 1, out), CUDARL_ERR_INVALID_ARG,
            "the output is 0 x 4");
    refused(cudarl_frame_convert(&c, frame, 4, 4, 2, out), CUDARL_ERR_INVALID_ARG,
            "channels is 2");
    refused(cudarl_frame_convert(&c, NULL, 4, 4, 1, out), CUDARL_ERR_INVALID_ARG,
            "frame is NULL");
    refused(cudarl_frame_convert(NULL, frame, 4, 4, 1, out), CUDARL_ERR_INVALID_ARG,
            "the cudarl_camera is NULL");
    bad = camera(9, 2, CUDARL_PIXEL_YUYV);
    refused(cudarl_frame_convert(&bad, frame, 4, 4, 1, out), CUDARL_ERR_INVALID_ARG,
            "cudarl_frame_convert: camera is CUDARL_PIXEL_YUYV of odd width 9");
    refused(cudarl_camera_default_sized(&c, 3), CUDARL_ERR_INVALID_ARG, "3 bytes");
    cudarl_policy_free(p);
    printf("refusals: each named\n");
}

/* ---- end to end --------------------------------------------------------------------------- */

#define E2E_CAMS 3
#define E2E_TICKS 6
#define OBS (84 * 84)

/* Bytes of a frame of camera c. */
static size_t frame_bytes(const cudarl_camera *c) {
    size_t bpp = c->format == CUDARL_PIXEL_RGB8 || c->format == CUDARL_PIXEL_BGR8 ? 3
                 : c->format == CUDARL_PIXEL_YUYV                                 ? 2
                                                                                  : 1;
    size_t pitch = c->pitch ? c->pitch : (size_t)c->width * bpp;
    size_t rows = (size_t)c->height + (c->format == CUDARL_PIXEL_NV12 ? (size_t)c->height / 2 : 0);
    return rows * pitch;
}

static void test_end_to_end(void) {
    cudarl_policy *p = net_policy(NATURE, 4, 11);
    cudarl_camera cams[E2E_CAMS] = {camera(320, 240, CUDARL_PIXEL_NV12),
                                    camera(200, 150, CUDARL_PIXEL_RGB8),
                                    camera(130, 90, CUDARL_PIXEL_YUYV)};
    cams[1].pitch = 640, cams[1].crop_x = 13, cams[1].crop_y = 7, cams[1].crop_width = 171;
    cams[1].crop_height = 131;
    cams[2].pitch = 272;
    uint8_t *frames[E2E_CAMS], *mine = calloc((size_t)E2E_CAMS * 4 * OBS, 1);
    uint8_t *theirs = malloc((size_t)E2E_CAMS * 4 * OBS), *conv = malloc(OBS);
    CHECK(mine && theirs && conv);
    for (int i = 0; i < E2E_CAMS; i++) CHECK((frames[i] = malloc(frame_bytes(&cams[i]))));
    cudarl_frames_options o;
    CHECK_OK(cudarl_frames_options_default(&o));
    o.deadline_us = 1e-3; /* every tick misses it */
    cudarl_frames *f;
    CHECK_OK(cudarl_frames_create(p, cams, E2E_CAMS, &o, &f));
    int32_t a_tick[E2E_CAMS], a_act[E2E_CAMS];
    float v_tick[E2E_CAMS], v_act[E2E_CAMS], l_tick[E2E_CAMS * 6], l_act[E2E_CAMS * 6];
    for (int t = 0; t < E2E_TICKS; t++) {
        for (int i = 0; i < E2E_CAMS; i++) {
            size_t n = frame_bytes(&cams[i]);
            for (size_t b = 0; b < n; b++) frames[i][b] = rnd();
            CHECK_OK(cudarl_frame_convert(&cams[i], frames[i], 84, 84, 1, conv));
            uint8_t *row = mine + (size_t)i * 4 * OBS;
            if (t == 0) /* the reset fills the stack */
                for (int k = 0; k < 4; k++) memcpy(row + (size_t)k * OBS, conv, OBS);
            else {
                memmove(row, row + OBS, 3 * OBS);
                memcpy(row + 3 * OBS, conv, OBS);
            }
        }
        CHECK_OK(cudarl_frames_tick(f, (const void *const *)frames, a_tick, v_tick, l_tick));
        CHECK_OK(cudarl_frames_observations(f, theirs, (size_t)E2E_CAMS * 4 * OBS));
        bytes_equal("tick's observations", theirs, mine, (size_t)E2E_CAMS * 4 * OBS);
        CHECK_OK(cudarl_policy_act(p, mine, CUDARL_OBS_U8, E2E_CAMS, a_act, v_act, l_act));
        for (int i = 0; i < E2E_CAMS; i++) {
            CHECK_MSG(a_tick[i] == a_act[i], "tick %d camera %d: action %d, act() %d", t, i,
                      a_tick[i], a_act[i]);
            CHECK_MSG(v_tick[i] == v_act[i], "tick %d camera %d: value %.9g, act() %.9g", t, i,
                      v_tick[i], v_act[i]);
        }
        CHECK(!memcmp(l_tick, l_act, sizeof l_tick));
    }
    cudarl_latency_stats st;
    CHECK_OK(cudarl_frames_latency(f, &st));
    CHECK_MSG(st.count == E2E_TICKS && st.window == E2E_TICKS && st.deadline_misses == E2E_TICKS,
              "latency: count %lld window %lld misses %lld", (long long)st.count,
              (long long)st.window, (long long)st.deadline_misses);
    CHECK(st.p50_us > 0 && st.p50_us <= st.p99_us && st.p99_us <= st.max_us);
    printf("end to end: %d ticks of nv12 320x240, rgb8 crop 171x131 of 200x150 (pitch 640), "
           "yuyv 130x90 (pitch 272) -> nature-cnn, as act() on the hand-built batch; "
           "tick p50 %.0f us, max %.0f us\n", E2E_TICKS, st.p50_us, st.max_us);

    /* no allocation in 200 ticks */
    size_t heap = heap_in_use();
    allocs = 0, gomp_allocs = 0, counting = 1;
    for (int t = 0; t < 200; t++)
        CHECK_OK(cudarl_frames_tick(f, (const void *const *)frames, a_tick, NULL, NULL));
    counting = 0;
    CHECK_MSG(heap_in_use() == heap, "heap in use %zu before 200 ticks, %zu after", heap,
              heap_in_use());
    if (interposed && device == CUDARL_DEVICE_CPU)
        CHECK_MSG(allocs == 0, "%ld allocations in 200 ticks", allocs);
    printf("200 ticks: %ld allocations%s (and %ld by libgomp, its teams of the CPU forward's "
           "parallel regions, each freed at its end), heap in use unchanged\n", allocs,
           interposed && device == CUDARL_DEVICE_CPU ? "" : " (not counted here)", gomp_allocs);

    cudarl_frames_free(f);
    for (int i = 0; i < E2E_CAMS; i++) free(frames[i]);
    free(mine), free(theirs), free(conv);
    cudarl_policy_free(p);
}

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[1], "cpu") && strcmp(argv[1], "cuda"))) {
        fprintf(stderr, "usage: test_frames cpu|cuda PPO_MLP_CHECKPOINT\n");
        return 2;
    }
    device = !strcmp(argv[1], "cuda") ? CUDARL_DEVICE_CUDA : CUDARL_DEVICE_CPU;
    cudarl_log_set_level(CUDARL_LOG_WARN);
    test_formats();
    test_resize();
    test_stack_gray();
    test_stack_rgb();
    test_refusals(argv[2]);
    test_end_to_end();
    printf("test_frames (%s): OK\n", argv[1]);
    return 0;
}
