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
 * integer and non-integer ratios, down and up, with crops and row padding; the column split
 * of the CUDA warps (cr_frame_box_part, in 1, 3, 32 and 64 parts) against cr_frame_box, over
 * every twin geometry, reading only the bytes the CUDA tick uploads (cr_frame_read_ranges); the
 * stack order (oldest first, as CartPolePixels-v1), the reset padding (the first frame in every
 * slot), the packing of cameras into rows, for gray and RGB frames; every refusal, each message naming the
 * problem; no allocation in 200 ticks (malloc and its kin counted by interposition, but for
 * libgomp's own teams of the CPU forward's parallel regions, which it frees at their end; the
 * heap in use unchanged, the one check under ASan and on CUDA); end to end, three cameras of three formats into a nature-cnn
 * policy: each tick's observations equal the batch built by hand from cudarl_frame_convert's
 * outputs, and its actions, values and logits equal cudarl_policy_act's on that batch, bit for
 * bit; the latency record counts every tick and its misses.
 *
 * cuda, beside the same checks with the policies and the frames on the GPU: the op table's CUDA
 * frame_to_obs against the CPU reference bit for bit (every format, gray and RGB, odd sizes,
 * crops at odd offsets, padded rows, up, down and mixed ratios, up to 3840x2160; a thread or, at
 * shrinks of 8 and more along x, a warp per output pixel); the device tick
 * of a CUDA policy against the CPU tick of a CPU policy of the same weights (three setups:
 * nature-cnn over five cameras of the five formats, RGB stacks of two over four, one-frame
 * stacks; and nature-cnn in bf16 over the five): the observations bit for bit over several ticks
 * and after a reset, the outputs (fp32) within float rounding of the CPU's, and bitwise act()'s on
 * the CPU's observations, with each camera's
 * frame in pageable, pinned, device and managed memory in turn, each kind alone alike, outputs
 * in device memory alike; 200 ticks without a device allocation (the backend's cudaMalloc count
 * and cudaMemGetInfo unchanged); device frames refused for a CPU policy; submit and wait with two
 * ticks in flight against a CPU policy's ticks one by one, frames pageable, pinned, device and
 * mixed, each frame buffer rewritten as soon as the wait covering it returns (a staging set or
 * frame read after its wait would show the next tick's bytes).
 *
 * Both: submit and wait with two ticks in flight, over many ticks and a reset, give the
 * observations of ticks one by one bit for bit and act()'s outputs on them; every misuse of the
 * pair (a wait with none in flight, a third submit, a tick or reset with ticks in flight, bad
 * frames or outputs) refused naming the fix; 200 pipelined ticks allocate nothing either. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "netspecs.h"
#include "cudarl.h"
#include "ops/backend.h"
#include "ops/frames.h"
#ifdef CUDARL_WITH_CUDA
#include <cuda_runtime.h>

#include "ops/cuda/cuda_backend.h"
#endif

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

/* The precision of the CUDA policies made (the CPU's stay fp32). */
static cudarl_precision gpu_precision = CUDARL_PRECISION_FP32;

static cudarl_policy *net_policy_on(const char *text, int max_batch, uint64_t seed,
                                    cudarl_device_kind dev) {
    size_t np = 0;
    CHECK_OK(cudarl_network_init_params(text, seed, NULL, 0, &np));
    float *params = malloc(np * sizeof(float));
    CHECK(params);
    CHECK_OK(cudarl_network_init_params(text, seed, params, np, &np));
    cudarl_policy_options o;
    CHECK_OK(cudarl_policy_options_default(&o));
    o.device = dev, o.max_batch = max_batch;
    if (dev == CUDARL_DEVICE_CUDA) o.precision = gpu_precision;
    cudarl_policy *p = NULL;
    CHECK_OK(cudarl_policy_load_network(text, params, np, "test frames", CUDARL_CONV_ENGINE_AUTO,
                                        &o, &p));
    free(params);
    return p;
}

/* A policy of `text` on the device under test. */
static cudarl_policy *net_policy(const char *text, int max_batch, uint64_t seed) {
    return net_policy_on(text, max_batch, seed, device);
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

/* The warp's arithmetic on the CPU: cr_frame_box_part's parts (32 as the CUDA warp's lanes, and
 * 1, 3, 64) add up to cr_frame_box's sums, so cr_frame_round of them gives its bytes, over every
 * format, gray and RGB, crops at odd offsets, padded rows, shrinks, stretches, one-row and
 * one-column boxes and boxes wider than 64 columns. */
static void parts_case(int format, int w, int h, size_t pad, int cx, int cy, int cw, int ch,
                       int ow, int oh, int channels) {
    cr_frame_geom g;
    memset(&g, 0, sizeof g);
    g.format = format, g.width = w, g.height = h;
    g.pitch = (size_t)w * (size_t)cr_frame_pixel_bytes(format) + pad;
    g.crop_x = cx, g.crop_y = cy, g.crop_w = cw ? cw : w, g.crop_h = ch ? ch : h;
    g.out_w = ow, g.out_h = oh, g.channels = channels;
    CHECK(g.crop_x + g.crop_w <= w && g.crop_y + g.crop_h <= h);
    const size_t fb = cr_frame_bytes(&g);
    uint8_t *frame = malloc(fb), *other = malloc(fb);
    CHECK(frame && other);
    for (size_t b = 0; b < fb; b++) frame[b] = rnd();
    /* `other`: the bytes cr_frame_read_ranges names (all the CUDA tick uploads), the rest other
     * random bytes: the parts summed over it must equal cr_frame_box over `frame` */
    for (size_t b = 0; b < fb; b++) other[b] = rnd();
    size_t off[2], len[2];
    const int ranges = cr_frame_read_ranges(&g, off, len);
    CHECK(ranges >= 1 && ranges <= 2);
    for (int r = 0; r < ranges; r++) {
        CHECK(off[r] + len[r] <= fb && (r == 0 || off[r] >= off[0] + len[0]));
        memcpy(other + off[r], frame + off[r], len[r]);
    }
    if (format == CUDARL_PIXEL_NV12 && channels == 1) /* the Y plane's crop rows alone */
        CHECK(ranges == 1 && len[0] == (size_t)g.crop_h * g.pitch);
    static const int PARTS[] = {1, 3, 32, 64};
    for (int oy = 0; oy < oh; oy++)
        for (int ox = 0; ox < ow; ox++) {
            uint8_t want[3] = {0, 0, 0}, thread[3] = {0, 0, 0};
            cr_frame_box(&g, frame, ox, oy, want);
            cr_frame_box(&g, other, ox, oy, thread); /* the CUDA thread's, on the uploads */
            for (int c = 0; c < channels; c++)
                CHECK_MSG(thread[c] == want[c], "read ranges: format %d %dx%d pitch %zu crop "
                          "(%d, %d, %d x %d) -> %dx%dx%d, pixel (%d, %d) channel %d: %d from "
                          "the uploaded bytes, %d from the whole frame", format, w, h, g.pitch,
                          g.crop_x, g.crop_y, g.crop_w, g.crop_h, ow, oh, channels, ox, oy, c,
                          thread[c], want[c]);
            uint64_t first[3] = {0, 0, 0};
            for (size_t k = 0; k < sizeof PARTS / sizeof PARTS[0]; k++) {
                uint64_t sum[3] = {0, 0, 0};
                for (int part = 0; part < PARTS[k]; part++)
                    cr_frame_box_part(&g, other, ox, oy, part, PARTS[k], sum);
                uint8_t got[3] = {0, 0, 0};
                cr_frame_round(&g, sum, got);
                if (k == 0) memcpy(first, sum, sizeof sum);
                for (int c = 0; c < channels; c++)
                    CHECK_MSG(got[c] == want[c] && sum[c] == first[c], "box parts: format %d "
                              "%dx%d pitch %zu crop (%d, %d, %d x %d) -> %dx%dx%d, pixel (%d, "
                              "%d) channel %d in %d parts: %d (sum %llu), cr_frame_box %d (sum "
                              "%llu in 1 part)", format, w, h, g.pitch, g.crop_x, g.crop_y,
                              g.crop_w, g.crop_h, ow, oh, channels, ox, oy, c, PARTS[k], got[c],
                              (unsigned long long)sum[c], want[c],
                              (unsigned long long)first[c]);
            }
        }
    free(frame), free(other);
}

static void test_box_parts(void) {
    int cases = 0;
    for (int f = CUDARL_PIXEL_GRAY8; f <= CUDARL_PIXEL_NV12; f++)
        for (int ch = 1; ch <= 3; ch += 2) {
            const int w = f == CUDARL_PIXEL_YUYV || f == CUDARL_PIXEL_NV12 ? 38 : 37;
            const int h = f == CUDARL_PIXEL_NV12 ? 24 : 23;
            parts_case(f, w, h, 0, 0, 0, 0, 0, 84, 84, ch);  /* up */
            parts_case(f, w, h, 13, 0, 0, 0, 0, 5, 3, ch);   /* down, padded rows */
            parts_case(f, w, h, 7, 3, 5, 17, 11, 7, 4, ch);  /* a crop at odd x, y */
            parts_case(f, w, h, 0, 1, 1, 17, 11, 17, 11, ch); /* 1:1 */
            parts_case(f, w, h, 0, 0, 0, 0, 0, 1, 1, ch);    /* one pixel */
            parts_case(f, w, h, 3, 5, 2, 9, 13, 20, 6, ch);  /* x up, y down */
            parts_case(f, w, h, 0, 0, 3, 0, 1, 4, 1, ch);    /* one-row boxes */
            parts_case(f, 400, 30, 9, 1, 1, 397, 27, 3, 2, ch); /* boxes of 133 columns */
            parts_case(f, w, h, 5, 3, 2, 33, 19, 4, 2, ch); /* the twin's by-warp crop */
            parts_case(f, 640, 480, 64, 0, 0, 0, 0, 84, 84, ch); /* the twin's 640x480 */
            parts_case(f, 640, 480, 64, 8, 6, 624, 468, 84, 84, ch); /* a crop of it */
            cases += 11;
        }
    /* the twin's camera-sized cases */
    parts_case(CUDARL_PIXEL_NV12, 3840, 2160, 0, 0, 0, 0, 0, 84, 84, 1);
    parts_case(CUDARL_PIXEL_NV12, 3840, 2160, 256, 0, 0, 0, 0, 84, 84, 3);
    parts_case(CUDARL_PIXEL_RGB8, 1920, 1080, 0, 101, 61, 1699, 1001, 84, 84, 3);
    parts_case(CUDARL_PIXEL_YUYV, 1280, 720, 128, 0, 0, 0, 0, 96, 54, 1);
    parts_case(CUDARL_PIXEL_YUYV, 1280, 720, 128, 3, 1, 1001, 613, 84, 84, 1);
    parts_case(CUDARL_PIXEL_NV12, 1280, 720, 0, 101, 33, 1001, 613, 84, 84, 3); /* U,V rows */
    cases += 6;
    printf("box parts: cr_frame_box_part's parts (1, 3, 32, 64) equal cr_frame_box in %d "
           "cases, reading only the bytes cr_frame_read_ranges names\n", cases);
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
            "camera_frames[1] is NULL; pass camera 1's frame of this tick (");
    refused(cudarl_frames_tick(f, one_null, actions, NULL, NULL), CUDARL_ERR_INVALID_ARG,
            device == CUDARL_DEVICE_CPU ? "(host memory, 64 bytes)"
                                        : "(host or device memory, 64 bytes)");
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

    /* no allocation in 200 ticks, then in 200 more pipelined (submit, submit, wait, ...) */
#ifdef CUDARL_WITH_CUDA
    const size_t dev_allocs = cr_cuda_alloc_count();
#endif
    size_t heap = heap_in_use();
    allocs = 0, gomp_allocs = 0, counting = 1;
    for (int t = 0; t < 200; t++)
        CHECK_OK(cudarl_frames_tick(f, (const void *const *)frames, a_tick, NULL, NULL));
    for (int t = 0; t <= 200; t++) {
        if (t < 200) CHECK_OK(cudarl_frames_submit(f, (const void *const *)frames));
        if (t > 0) CHECK_OK(cudarl_frames_wait(f, a_tick, v_tick, l_tick));
    }
    counting = 0;
    CHECK_MSG(heap_in_use() == heap, "heap in use %zu before 400 ticks, %zu after", heap,
              heap_in_use());
#ifdef CUDARL_WITH_CUDA
    CHECK_MSG(cr_cuda_alloc_count() == dev_allocs, "%zu device allocations in 400 ticks",
              cr_cuda_alloc_count() - dev_allocs);
#endif
    if (interposed && device == CUDARL_DEVICE_CPU)
        CHECK_MSG(allocs == 0, "%ld allocations in 400 ticks", allocs);
    printf("200 ticks and 200 pipelined: %ld allocations%s (and %ld by libgomp, its teams of the "
           "CPU forward's parallel regions, each freed at its end), heap in use unchanged\n",
           allocs, interposed && device == CUDARL_DEVICE_CPU ? "" : " (not counted here)",
           gomp_allocs);

    cudarl_frames_free(f);
    for (int i = 0; i < E2E_CAMS; i++) free(frames[i]);
    free(mine), free(theirs), free(conv);
    cudarl_policy_free(p);
}

/* ---- ticks in flight: submit, wait ------------------------------------------------------- */

/* Where the pipelined ticks' frames live (a CUDA policy's; a CPU policy's are pageable). */
enum { PIPE_PAGEABLE, PIPE_PINNED, PIPE_DEVICE, PIPE_MIXED };
static const char *const pipe_kind_name[] = {"pageable", "pinned", "device", "mixed"};

static void *pipe_alloc(int kind, size_t bytes) {
    void *m = NULL;
#ifdef CUDARL_WITH_CUDA
    if (kind == PIPE_PINNED)
        CHECK(cudaMallocHost(&m, bytes) == cudaSuccess);
    else if (kind == PIPE_DEVICE)
        CHECK(cudaMalloc(&m, bytes) == cudaSuccess);
    else
#endif
        m = malloc(bytes);
    CHECK_MSG(m || kind == PIPE_DEVICE, "no memory for a %s frame of %zu bytes",
              pipe_kind_name[kind], bytes);
    return m;
}

static void pipe_free(int kind, void *m) {
#ifdef CUDARL_WITH_CUDA
    if (kind == PIPE_PINNED) {
        CHECK(cudaFreeHost(m) == cudaSuccess);
        return;
    }
    if (kind == PIPE_DEVICE) {
        CHECK(cudaFree(m) == cudaSuccess);
        return;
    }
#endif
    (void)kind;
    free(m);
}

/* src (host) into dst of memory `kind`; a device frame complete on return (the tick does not
 * wait for the caller's streams). A host frame is written by the CPU as a capture would. */
static void pipe_write(int kind, void *dst, const void *src, size_t bytes) {
#ifdef CUDARL_WITH_CUDA
    if (kind == PIPE_DEVICE) {
        CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice) == cudaSuccess);
        CHECK(cudaDeviceSynchronize() == cudaSuccess);
        return;
    }
#endif
    (void)kind;
    memcpy(dst, src, bytes);
}

#define PIPE_MAX_CAMS 4
#define PIPE_MAX_TICKS 40
#define PIPE_MAX_ACTIONS 6

/* One pipelined run: reference frames `ref` (policy pr, host frames) tick by tick with
 * cudarl_frames_tick, the frames under test `pipe` (policy pp, frames in memory `kind`; mixed:
 * camera i's of tick t in kind (t + i) mod 3) as submit, submit, wait, submit, wait, ... with
 * two ticks in flight. Each camera has two frame buffers, tick t writing buffer t mod 2 right
 * after the wait for tick t-2, the earliest the API allows: a tick that still read its frame
 * or its staging after its wait would see the next tick's bytes. Every tick has new random
 * frames; a reset before tick reset_at (after waiting for the ticks in flight). Each wait's
 * observations equal the reference tick's bit for bit, its outputs equal act() of pp on them
 * (bitwise), and the latency ring counts every tick. */
static void pipeline_run(const char *what, cudarl_policy *pr, cudarl_policy *pp,
                         const cudarl_camera *cams, int n, int channels, size_t row_bytes,
                         int ticks, int reset_at, int kind) {
    CHECK(n <= PIPE_MAX_CAMS && ticks <= PIPE_MAX_TICKS);
    cudarl_policy_info info;
    cudarl_policy_get_info(pp, &info);
    const int A = info.num_actions;
    CHECK(A <= PIPE_MAX_ACTIONS);
    cudarl_frames_options o;
    CHECK_OK(cudarl_frames_options_default(&o));
    o.channels = channels;
    cudarl_frames *ref, *pipe;
    CHECK_OK(cudarl_frames_create(pr, cams, n, &o, &ref));
    CHECK_OK(cudarl_frames_create(pp, cams, n, &o, &pipe));
    const size_t obs_bytes = (size_t)n * row_bytes;
    uint8_t *obs_ref = malloc((size_t)ticks * obs_bytes), *obs = malloc(obs_bytes);
    CHECK(obs_ref && obs);
    uint8_t *host[PIPE_MAX_CAMS];
    void *buf[2][PIPE_MAX_CAMS];
    int buf_kind[2][PIPE_MAX_CAMS];
    size_t bytes[PIPE_MAX_CAMS];
    for (int i = 0; i < n; i++) {
        bytes[i] = frame_bytes(&cams[i]);
        CHECK((host[i] = malloc(bytes[i])));
        for (int b = 0; b < 2; b++) buf[b][i] = NULL, buf_kind[b][i] = -1;
    }
    struct {
        int32_t a[PIPE_MAX_CAMS];
        float v[PIPE_MAX_CAMS], l[PIPE_MAX_CAMS * PIPE_MAX_ACTIONS];
    } out, got[PIPE_MAX_TICKS];
    int waited = 0;
    for (int t = 0; t <= ticks; t++) {
        /* the wait for tick t-2 (and, before a reset or at the end, for every tick) */
        while ((t == ticks || t == reset_at ? waited < t : waited < t - 1)) {
            CHECK_OK(cudarl_frames_wait(pipe, got[waited].a, got[waited].v, got[waited].l));
            CHECK_OK(cudarl_frames_observations(pipe, obs, obs_bytes));
            for (size_t b = 0; b < obs_bytes; b++)
                CHECK_MSG(obs[b] == obs_ref[(size_t)waited * obs_bytes + b], "%s (%s frames): "
                          "tick %d's observation byte %zu (camera %zu) is %d, ticks one by one "
                          "%d", what, pipe_kind_name[kind], waited, b, b / row_bytes, obs[b],
                          obs_ref[(size_t)waited * obs_bytes + b]);
            waited++;
        }
        if (t == ticks) break;
        if (t == reset_at) {
            CHECK_OK(cudarl_frames_reset(ref));
            CHECK_OK(cudarl_frames_reset(pipe));
        }
        const void *frames_ref[PIPE_MAX_CAMS], *frames[PIPE_MAX_CAMS];
        for (int i = 0; i < n; i++) {
            for (size_t b = 0; b < bytes[i]; b++) host[i][b] = rnd();
            const int k = kind == PIPE_MIXED ? (t + i) % 3 : kind, b = t % 2;
            if (buf_kind[b][i] != k) { /* the kind this buffer holds changes */
                if (buf[b][i]) pipe_free(buf_kind[b][i], buf[b][i]);
                buf[b][i] = pipe_alloc(k, bytes[i]), buf_kind[b][i] = k;
            }
            pipe_write(k, buf[b][i], host[i], bytes[i]);
            frames_ref[i] = host[i], frames[i] = buf[b][i];
        }
        CHECK_OK(cudarl_frames_tick(ref, frames_ref, out.a, out.v, out.l));
        CHECK_OK(cudarl_frames_observations(ref, obs_ref + (size_t)t * obs_bytes, obs_bytes));
        CHECK_OK(cudarl_frames_submit(pipe, frames));
    }
    /* the outputs: act() of pp on each tick's observations, bit for bit (after the run: act()
     * shares the policy's input with the frames' graphs) */
    for (int t = 0; t < ticks; t++) {
        CHECK_OK(cudarl_policy_act(pp, obs_ref + (size_t)t * obs_bytes, CUDARL_OBS_U8, n, out.a,
                                   out.v, out.l));
        CHECK_MSG(!memcmp(out.a, got[t].a, (size_t)n * sizeof *out.a) &&
                      !memcmp(out.v, got[t].v, (size_t)n * sizeof *out.v) &&
                      !memcmp(out.l, got[t].l, (size_t)n * (size_t)A * sizeof *out.l),
                  "%s (%s frames): tick %d's outputs (action[0] %d, value[0] %.9g) differ from "
                  "act() on its observations (%d, %.9g)", what, pipe_kind_name[kind], t,
                  got[t].a[0], got[t].v[0], out.a[0], out.v[0]);
    }
    cudarl_latency_stats st;
    CHECK_OK(cudarl_frames_latency(pipe, &st));
    CHECK_MSG(st.count == ticks && st.p50_us > 0 && st.p50_us <= st.max_us,
              "%s: latency counts %lld ticks of %d, p50 %g max %g", what, (long long)st.count,
              ticks, st.p50_us, st.max_us);
    printf("pipelined (%s, %s frames): %d ticks, two in flight, reset before %d: observations "
           "as ticks one by one, outputs as act(); tick p50 %.0f us\n", what,
           pipe_kind_name[kind], ticks, reset_at, st.p50_us);
    cudarl_frames_free(ref), cudarl_frames_free(pipe);
    for (int i = 0; i < n; i++) {
        free(host[i]);
        for (int b = 0; b < 2; b++)
            if (buf[b][i]) pipe_free(buf_kind[b][i], buf[b][i]);
    }
    free(obs_ref), free(obs);
}

/* Submit and wait against ticks one by one on the device under test, for gray NV12 + RGB8 +
 * YUYV into nature-cnn and RGB frames into a small net; each misuse refused, naming the fix. */
static void test_pipeline(void) {
    cudarl_camera a[3] = {camera(320, 240, CUDARL_PIXEL_NV12), camera(200, 150, CUDARL_PIXEL_RGB8),
                          camera(130, 90, CUDARL_PIXEL_YUYV)};
    a[1].pitch = 640, a[1].crop_x = 13, a[1].crop_y = 7, a[1].crop_width = 171;
    a[1].crop_height = 131;
    cudarl_policy *p = net_policy(NATURE, 3, 41);
    pipeline_run("nature-cnn gray x3", p, p, a, 3, 1, 4 * OBS, 13, 7, PIPE_PAGEABLE);
    cudarl_policy_free(p);
    char net[1024];
    small_net(net, sizeof net, 6, 10, 14, "1/255");
    cudarl_camera b[2] = {camera(64, 48, CUDARL_PIXEL_BGR8), camera(30, 20, CUDARL_PIXEL_GRAY8)};
    b[0].crop_x = 3, b[0].crop_y = 5, b[0].crop_width = 41, b[0].crop_height = 33;
    p = net_policy(net, 2, 42);
    pipeline_run("rgb x2", p, p, b, 2, 3, 6 * 10 * 14, 9, 4, PIPE_PAGEABLE);
    cudarl_policy_free(p);

    /* misuse */
    small_net(net, sizeof net, 4, 6, 6, "1/255");
    p = net_policy(net, 1, 43);
    cudarl_camera c = camera(8, 8, CUDARL_PIXEL_GRAY8);
    cudarl_frames *f;
    CHECK_OK(cudarl_frames_create(p, &c, 1, NULL, &f));
    uint8_t frame[64] = {0}, obs[4 * 36];
    const void *frames[1] = {frame}, *none[1] = {NULL};
    int32_t action, action2;
    refused(cudarl_frames_wait(f, &action, NULL, NULL), CUDARL_ERR_INVALID_ARG,
            "no tick is in flight; call cudarl_frames_submit first");
    refused(cudarl_frames_submit(f, NULL), CUDARL_ERR_INVALID_ARG,
            "cudarl_frames_submit: camera_frames is NULL");
    refused(cudarl_frames_submit(f, none), CUDARL_ERR_INVALID_ARG,
            "cudarl_frames_submit: camera_frames[0] is NULL");
    refused(cudarl_frames_submit(NULL, frames), CUDARL_ERR_INVALID_ARG, "frames is NULL");
    refused(cudarl_frames_wait(NULL, &action, NULL, NULL), CUDARL_ERR_INVALID_ARG,
            "frames is NULL");
    refused(cudarl_frames_wait(f, &action, NULL, NULL), CUDARL_ERR_INVALID_ARG,
            "no tick is in flight"); /* the refused submits left none */
    CHECK_OK(cudarl_frames_submit(f, frames));
    refused(cudarl_frames_observations(f, obs, sizeof obs), CUDARL_ERR_INVALID_ARG,
            "no tick has run yet"); /* submitted, not waited for */
    CHECK_OK(cudarl_frames_submit(f, frames));
    refused(cudarl_frames_submit(f, frames), CUDARL_ERR_INVALID_ARG,
            "2 ticks are in flight, the most the frames hold; call cudarl_frames_wait");
    refused(cudarl_frames_tick(f, frames, &action, NULL, NULL), CUDARL_ERR_INVALID_ARG,
            "2 tick(s) submitted and not waited for, whose outputs come first; call "
            "cudarl_frames_wait");
    refused(cudarl_frames_reset(f), CUDARL_ERR_INVALID_ARG,
            "2 tick(s) submitted and not waited for would stack frames across the reset; call "
            "cudarl_frames_wait");
    refused(cudarl_frames_wait(f, NULL, NULL, NULL), CUDARL_ERR_INVALID_ARG, "actions is NULL");
    CHECK_OK(cudarl_frames_wait(f, &action, NULL, NULL)); /* the refused wait kept its tick */
    refused(cudarl_frames_tick(f, frames, &action, NULL, NULL), CUDARL_ERR_INVALID_ARG,
            "1 tick(s) submitted and not waited for");
    CHECK_OK(cudarl_frames_wait(f, &action2, NULL, NULL));
    refused(cudarl_frames_wait(f, &action, NULL, NULL), CUDARL_ERR_INVALID_ARG,
            "no tick is in flight");
    CHECK_OK(cudarl_frames_tick(f, frames, &action, NULL, NULL)); /* none in flight: a tick */
    CHECK_OK(cudarl_frames_reset(f));
    cudarl_latency_stats st;
    CHECK_OK(cudarl_frames_latency(f, &st));
    CHECK_MSG(st.count == 3, "latency: %lld ticks counted, 3 waited for", (long long)st.count);
    CHECK_OK(cudarl_frames_submit(f, frames)); /* freed with a tick in flight */
    cudarl_frames_free(f);
    cudarl_policy_free(p);
    printf("pipeline misuse: a wait with none in flight, a third submit, a tick or a reset with "
           "ticks in flight, bad frames and outputs: each refused, naming the fix\n");
}

/* ---- on the GPU ------------------------------------------------------------------------- */

#ifdef CUDARL_WITH_CUDA
#define CUDA_OK(expr)                                                                          \
    CHECK_MSG((expr) == cudaSuccess, "%s: %s", #expr, cudaGetErrorString(cudaGetLastError()))

static int twin_cases;

/* One geometry (crop 0 x 0: the whole frame; pad: bytes past each row) through the CPU reference
 * and the op table's CUDA frame_to_obs on the same random frame, bit for bit. */
static void twin_case(cudarl_ctx *gpu, int format, int w, int h, size_t pad, int cx, int cy,
                      int cw, int ch, int ow, int oh, int channels) {
    cr_frame_geom g;
    memset(&g, 0, sizeof g);
    g.format = format, g.width = w, g.height = h;
    g.pitch = (size_t)w * (size_t)cr_frame_pixel_bytes(format) + pad;
    g.crop_x = cx, g.crop_y = cy, g.crop_w = cw ? cw : w, g.crop_h = ch ? ch : h;
    g.out_w = ow, g.out_h = oh, g.channels = channels;
    CHECK(g.crop_x + g.crop_w <= w && g.crop_y + g.crop_h <= h);
    const size_t fb = cr_frame_bytes(&g), ob = (size_t)channels * (size_t)ow * (size_t)oh;
    uint8_t *frame = malloc(fb), *want = malloc(ob), *got = malloc(ob), *d_frame, *d_out;
    CHECK(frame && want && got);
    for (size_t b = 0; b < fb; b++) frame[b] = rnd();
    cr_cpu_frame_to_obs(&g, frame, want);
    CUDA_OK(cudaMalloc((void **)&d_frame, fb));
    CUDA_OK(cudaMalloc((void **)&d_out, ob));
    CUDA_OK(cudaMemcpy(d_frame, frame, fb, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(d_out, 0xA5, ob));
    /* the copy and the memset are on the legacy default stream, which the context's
     * non-blocking stream does not wait for: a pageable cudaMemcpy may return before its last
     * bytes land and cudaMemset returns at once, so without this the kernel could read a partly
     * copied frame and its output be overwritten by the 0xA5s after it (as 640x480 RGB8 once
     * was on an H200: byte 0 165 = 0xA5) */
    CUDA_OK(cudaDeviceSynchronize());
    gpu->ops->frame_to_obs(gpu, &g, d_frame, d_out);
    gpu->ops->sync(gpu);
    CUDA_OK(cudaMemcpy(got, d_out, ob, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < ob; i++)
        CHECK_MSG(got[i] == want[i], "frame_to_obs twin: format %d %dx%d pitch %zu crop (%d, %d, "
                  "%d x %d) -> %dx%dx%d: byte %zu is %d on CUDA, %d on the CPU", format, w, h,
                  g.pitch, g.crop_x, g.crop_y, g.crop_w, g.crop_h, ow, oh, channels, i, got[i],
                  want[i]);
    CUDA_OK(cudaFree(d_frame));
    CUDA_OK(cudaFree(d_out));
    free(frame), free(want), free(got);
    twin_cases++;
}

/* Every format and channel count over sizes, ratios (down, up, mixed, 1:1, one pixel), crops
 * at odd offsets and padded rows; then camera-sized frames. */
static void test_cuda_twin(void) {
    cudarl_ctx *gpu;
    CHECK_OK(cudarl_ctx_init(&gpu, CUDARL_DEVICE_CUDA, 0));
    for (int f = CUDARL_PIXEL_GRAY8; f <= CUDARL_PIXEL_NV12; f++)
        for (int ch = 1; ch <= 3; ch += 2) {
            const int w = f == CUDARL_PIXEL_YUYV || f == CUDARL_PIXEL_NV12 ? 38 : 37;
            const int h = f == CUDARL_PIXEL_NV12 ? 24 : 23;
            twin_case(gpu, f, w, h, 0, 0, 0, 0, 0, 84, 84, ch); /* up */
            twin_case(gpu, f, w, h, 13, 0, 0, 0, 0, 5, 3, ch);  /* down, padded rows */
            twin_case(gpu, f, w, h, 7, 3, 5, 17, 11, 7, 4, ch); /* a crop at odd x, y */
            twin_case(gpu, f, w, h, 0, 1, 1, 17, 11, 17, 11, ch); /* 1:1 */
            twin_case(gpu, f, w, h, 0, 0, 0, 0, 0, 1, 1, ch);   /* one pixel (by warp) */
            twin_case(gpu, f, w, h, 5, 3, 2, 33, 19, 4, 2, ch); /* by warp, a crop */
            twin_case(gpu, f, w, h, 3, 5, 2, 9, 13, 20, 6, ch); /* x up, y down */
            twin_case(gpu, f, 640, 480, 64, 0, 0, 0, 0, 84, 84, ch);
        }
    twin_case(gpu, CUDARL_PIXEL_NV12, 3840, 2160, 0, 0, 0, 0, 0, 84, 84, 1);
    twin_case(gpu, CUDARL_PIXEL_NV12, 3840, 2160, 256, 0, 0, 0, 0, 84, 84, 3);
    twin_case(gpu, CUDARL_PIXEL_RGB8, 1920, 1080, 0, 101, 61, 1699, 1001, 84, 84, 3);
    twin_case(gpu, CUDARL_PIXEL_YUYV, 1280, 720, 128, 0, 0, 0, 0, 96, 54, 1);
    cudarl_ctx_free(gpu);
    printf("cuda twin: frame_to_obs equals the CPU reference bit for bit in %d cases (5 formats, "
           "gray and RGB, crops, pitches, up and down, by thread and by warp, up to "
           "3840x2160)\n", twin_cases);
}

/* Where a tick's frames may live. */
enum { MEM_PAGEABLE, MEM_PINNED, MEM_DEVICE, MEM_MANAGED, MEM_KINDS };
static const char *const mem_name[MEM_KINDS] = {"pageable", "pinned", "device", "managed"};

/* One camera's frame in each kind of memory, the same bytes in all. */
typedef struct frame_copies {
    uint8_t *at[MEM_KINDS];
    size_t bytes;
} frame_copies;

static void copies_alloc(frame_copies *c, size_t bytes) {
    c->bytes = bytes;
    CHECK((c->at[MEM_PAGEABLE] = malloc(bytes)));
    CUDA_OK(cudaMallocHost((void **)&c->at[MEM_PINNED], bytes));
    CUDA_OK(cudaMalloc((void **)&c->at[MEM_DEVICE], bytes));
    CUDA_OK(cudaMallocManaged((void **)&c->at[MEM_MANAGED], bytes, cudaMemAttachGlobal));
}

static void copies_free(frame_copies *c) {
    free(c->at[MEM_PAGEABLE]);
    CUDA_OK(cudaFreeHost(c->at[MEM_PINNED]));
    CUDA_OK(cudaFree(c->at[MEM_DEVICE]));
    CUDA_OK(cudaFree(c->at[MEM_MANAGED]));
}

/* New random bytes in every copy. */
static void copies_fill(frame_copies *c) {
    for (size_t b = 0; b < c->bytes; b++) c->at[MEM_PAGEABLE][b] = rnd();
    memcpy(c->at[MEM_PINNED], c->at[MEM_PAGEABLE], c->bytes);
    CUDA_OK(cudaMemcpy(c->at[MEM_DEVICE], c->at[MEM_PAGEABLE], c->bytes, cudaMemcpyDefault));
    CUDA_OK(cudaMemcpy(c->at[MEM_MANAGED], c->at[MEM_PAGEABLE], c->bytes, cudaMemcpyDefault));
    /* device frames must be complete when the tick is called (it does not wait on the legacy
     * stream, and a pageable cudaMemcpy may return before its DMA ends) */
    CUDA_OK(cudaDeviceSynchronize());
}

#define TC_MAX 5
#define TC_ACTIONS 6

/* A tick's outputs. */
typedef struct tick_out {
    int32_t a[TC_MAX];
    float v[TC_MAX], l[TC_MAX * TC_ACTIONS];
} tick_out;

/* The same cameras into the same network on a CPU policy (frames on the CPU) and a CUDA policy
 * (frames on the GPU, each camera's frame in another kind of memory every tick). */
typedef struct tick_pair {
    const char *what;
    int n, channels, A;
    int half; /* the CUDA policy's forward in bf16 or fp16: its outputs only as act()'s */
    size_t obs_bytes;
    cudarl_policy *pc, *pg;
    cudarl_frames *fc, *fg;
    frame_copies copies[TC_MAX];
    uint8_t *obs_c, *obs_g;
} tick_pair;

static void pair_open(tick_pair *tp, const char *what, const char *net, int C, int H, int W,
                      int channels, const cudarl_camera *cams, int n, uint64_t seed) {
    CHECK(n <= TC_MAX);
    memset(tp, 0, sizeof *tp);
    tp->what = what, tp->n = n, tp->channels = channels;
    tp->half = gpu_precision == CUDARL_PRECISION_BF16 || gpu_precision == CUDARL_PRECISION_FP16;
    tp->pc = net_policy_on(net, n, seed, CUDARL_DEVICE_CPU);
    tp->pg = net_policy_on(net, n, seed, CUDARL_DEVICE_CUDA);
    cudarl_policy_info info;
    cudarl_policy_get_info(tp->pg, &info);
    tp->A = info.num_actions;
    CHECK(tp->A <= TC_ACTIONS);
    cudarl_frames_options o;
    CHECK_OK(cudarl_frames_options_default(&o));
    o.channels = channels;
    CHECK_OK(cudarl_frames_create(tp->pc, cams, n, &o, &tp->fc));
    CHECK_OK(cudarl_frames_create(tp->pg, cams, n, &o, &tp->fg));
    tp->obs_bytes = (size_t)n * (size_t)C * (size_t)H * (size_t)W;
    CHECK((tp->obs_c = malloc(tp->obs_bytes)) && (tp->obs_g = malloc(tp->obs_bytes)));
    for (int i = 0; i < n; i++) copies_alloc(&tp->copies[i], frame_bytes(&cams[i]));
}

static void pair_close(tick_pair *tp) {
    cudarl_frames_free(tp->fc), cudarl_frames_free(tp->fg);
    cudarl_policy_free(tp->pc), cudarl_policy_free(tp->pg);
    for (int i = 0; i < tp->n; i++) copies_free(&tp->copies[i]);
    free(tp->obs_c), free(tp->obs_g);
}

/* The CUDA tick with camera i's frame in memory kind[i]; its observations into obs_g. */
static void tick_gpu(tick_pair *tp, const int *kind, tick_out *o) {
    const void *frames[TC_MAX];
    for (int i = 0; i < tp->n; i++) frames[i] = tp->copies[i].at[kind[i]];
    CHECK_OK(cudarl_frames_tick(tp->fg, frames, o->a, o->v, o->l));
    CHECK_OK(cudarl_frames_observations(tp->fg, tp->obs_g, tp->obs_bytes));
}

/* The CUDA tick's outputs against the CPU tick's: logits and values to float rounding (the
 * GPU's forward sums in another order), actions equal where the CPU's top two logits are apart. */
static void outputs_close(const tick_pair *tp, int t, const tick_out *g, const tick_out *c) {
    for (int i = 0; i < tp->n; i++) {
        const float *lc = c->l + (size_t)i * tp->A, *lg = g->l + (size_t)i * tp->A;
        float top = -INFINITY, second = -INFINITY;
        for (int k = 0; k < tp->A; k++) {
            CHECK_MSG(fabsf(lg[k] - lc[k]) <= 1e-3f + 1e-3f * fabsf(lc[k]), "%s tick %d camera "
                      "%d logit %d: CUDA %.9g, CPU %.9g", tp->what, t, i, k, lg[k], lc[k]);
            if (lc[k] > top) second = top, top = lc[k];
            else if (lc[k] > second) second = lc[k];
        }
        CHECK_MSG(fabsf(g->v[i] - c->v[i]) <= 1e-3f + 1e-3f * fabsf(c->v[i]), "%s tick %d camera "
                  "%d value: CUDA %.9g, CPU %.9g", tp->what, t, i, g->v[i], c->v[i]);
        if (top - second > 1e-3f)
            CHECK_MSG(g->a[i] == c->a[i], "%s tick %d camera %d: action %d on CUDA, %d on the CPU",
                      tp->what, t, i, g->a[i], c->a[i]);
    }
}

/* The CUDA tick's outputs equal act() of its policy on the CPU tick's observations, bitwise
 * (the same forward on the same batch). */
static void outputs_equal_act(tick_pair *tp, int t, const tick_out *g) {
    tick_out r;
    CHECK_OK(cudarl_policy_act(tp->pg, tp->obs_c, CUDARL_OBS_U8, tp->n, r.a, r.v, r.l));
    CHECK_MSG(!memcmp(g->a, r.a, (size_t)tp->n * sizeof *r.a) &&
                  !memcmp(g->v, r.v, (size_t)tp->n * sizeof *r.v) &&
                  !memcmp(g->l, r.l, (size_t)tp->n * (size_t)tp->A * sizeof *r.l),
              "%s tick %d: the CUDA tick's outputs differ from act() on its observations",
              tp->what, t);
}

/* `ticks` ticks (a reset before tick reset_at): new frames each tick, camera i's in memory kind
 * (t + i) mod 4 on the GPU; then each kind alone after a reset, and device outputs; then 200
 * ticks that allocate nothing. */
static void pair_run(tick_pair *tp, int ticks, int reset_at) {
    tick_out c, g, g0;
    int kind[TC_MAX];
    for (int t = 0; t < ticks; t++) {
        if (t == reset_at) {
            CHECK_OK(cudarl_frames_reset(tp->fc));
            CHECK_OK(cudarl_frames_reset(tp->fg));
        }
        const void *frames[TC_MAX];
        for (int i = 0; i < tp->n; i++) {
            copies_fill(&tp->copies[i]);
            frames[i] = tp->copies[i].at[MEM_PAGEABLE];
            kind[i] = (t + i) % MEM_KINDS;
        }
        CHECK_OK(cudarl_frames_tick(tp->fc, frames, c.a, c.v, c.l));
        CHECK_OK(cudarl_frames_observations(tp->fc, tp->obs_c, tp->obs_bytes));
        tick_gpu(tp, kind, &g);
        for (size_t b = 0; b < tp->obs_bytes; b++)
            CHECK_MSG(tp->obs_g[b] == tp->obs_c[b], "%s tick %d: observation byte %zu (camera "
                      "%zu) is %d on CUDA, %d on the CPU", tp->what, t, b,
                      b / (tp->obs_bytes / (size_t)tp->n), tp->obs_g[b], tp->obs_c[b]);
        if (!tp->half) outputs_close(tp, t, &g, &c);
        outputs_equal_act(tp, t, &g);
    }
    /* each kind of memory alone, from a reset: the same observations and outputs */
    for (int k = 0; k < MEM_KINDS; k++) {
        CHECK_OK(cudarl_frames_reset(tp->fg));
        for (int i = 0; i < tp->n; i++) kind[i] = k;
        tick_gpu(tp, kind, k == 0 ? &g0 : &g);
        if (k == 0) {
            memcpy(tp->obs_c, tp->obs_g, tp->obs_bytes);
            continue;
        }
        CHECK_MSG(!memcmp(tp->obs_g, tp->obs_c, tp->obs_bytes) &&
                      !memcmp(g.a, g0.a, (size_t)tp->n * sizeof *g.a) &&
                      !memcmp(g.v, g0.v, (size_t)tp->n * sizeof *g.v) &&
                      !memcmp(g.l, g0.l, (size_t)tp->n * (size_t)tp->A * sizeof *g.l),
                  "%s: %s frames give other observations or outputs than pageable ones",
                  tp->what, mem_name[k]);
    }
    /* outputs in device memory */
    int32_t *d_a;
    float *d_v, *d_l;
    CUDA_OK(cudaMalloc((void **)&d_a, sizeof g.a));
    CUDA_OK(cudaMalloc((void **)&d_v, sizeof g.v));
    CUDA_OK(cudaMalloc((void **)&d_l, sizeof g.l));
    CHECK_OK(cudarl_frames_reset(tp->fg));
    const void *frames[TC_MAX];
    for (int i = 0; i < tp->n; i++) frames[i] = tp->copies[i].at[MEM_DEVICE];
    CHECK_OK(cudarl_frames_tick(tp->fg, frames, d_a, d_v, d_l));
    CUDA_OK(cudaMemcpy(g.a, d_a, (size_t)tp->n * sizeof *g.a, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(g.v, d_v, (size_t)tp->n * sizeof *g.v, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(g.l, d_l, (size_t)tp->n * (size_t)tp->A * sizeof *g.l,
                       cudaMemcpyDeviceToHost));
    CHECK_MSG(!memcmp(g.a, g0.a, (size_t)tp->n * sizeof *g.a) &&
                  !memcmp(g.v, g0.v, (size_t)tp->n * sizeof *g.v) &&
                  !memcmp(g.l, g0.l, (size_t)tp->n * (size_t)tp->A * sizeof *g.l),
              "%s: outputs written to device memory differ from host ones", tp->what);
    CUDA_OK(cudaFree(d_a));
    CUDA_OK(cudaFree(d_v));
    CUDA_OK(cudaFree(d_l));
    /* no allocation: the backend's cudaMalloc count and the device's free memory unchanged
     * (frames pageable, pinned and device: managed pages could migrate and move the free bytes) */
    size_t count = cr_cuda_alloc_count(), free0 = 0, free1 = 0, total = 0;
    CUDA_OK(cudaMemGetInfo(&free0, &total));
    for (int t = 0; t < 200; t++) {
        for (int i = 0; i < tp->n; i++) kind[i] = (t + i) % MEM_MANAGED;
        tick_gpu(tp, kind, &g);
    }
    CUDA_OK(cudaMemGetInfo(&free1, &total));
    CHECK_MSG(cr_cuda_alloc_count() == count, "%s: %zu device allocations in 200 ticks", tp->what,
              cr_cuda_alloc_count() - count);
    CHECK_MSG(free1 == free0, "%s: device memory free %zu before 200 ticks, %zu after", tp->what,
              free0, free1);
    cudarl_latency_stats st;
    CHECK_OK(cudarl_frames_latency(tp->fg, &st));
    CHECK_MSG(st.count == ticks + MEM_KINDS + 1 + 200, "%s: %lld ticks counted", tp->what,
              (long long)st.count);
    printf("cuda ticks (%s): %d ticks (reset before %d) equal the CPU's observations bit for "
           "bit, outputs as act(); pageable, pinned, device, managed frames alike; 200 ticks: no "
           "device allocation; p50 %.0f us, p99 %.0f us\n", tp->what, ticks, reset_at, st.p50_us,
           st.p99_us);
}

static void test_cuda_ticks(void) {
    tick_pair tp;
    /* nature-cnn, 4 gray frames a stack, the five formats (graph batch 8: rows past 5 zeroed) */
    cudarl_camera a[5] = {camera(1280, 720, CUDARL_PIXEL_NV12), camera(322, 242, CUDARL_PIXEL_YUYV),
                          camera(211, 157, CUDARL_PIXEL_RGB8), camera(160, 120, CUDARL_PIXEL_BGR8),
                          camera(97, 61, CUDARL_PIXEL_GRAY8)};
    a[0].crop_x = 101, a[0].crop_y = 33, a[0].crop_width = 1001, a[0].crop_height = 613;
    a[1].pitch = 700;
    a[3].pitch = 500, a[3].crop_x = 7, a[3].crop_y = 3, a[3].crop_width = 150;
    a[3].crop_height = 111;
    pair_open(&tp, "nature-cnn gray x5", NATURE, 4, 84, 84, 1, a, 5, 21);
    pair_run(&tp, 9, 5);
    pair_close(&tp);
    /* RGB: stacks of 2 frames of 3 planes, 10 x 14 */
    char net[1024];
    small_net(net, sizeof net, 6, 10, 14, "1/255");
    cudarl_camera b[4] = {camera(64, 48, CUDARL_PIXEL_NV12), camera(31, 17, CUDARL_PIXEL_BGR8),
                          camera(9, 7, CUDARL_PIXEL_GRAY8), camera(30, 20, CUDARL_PIXEL_YUYV)};
    b[0].crop_x = 3, b[0].crop_y = 5, b[0].crop_width = 41, b[0].crop_height = 33;
    b[1].pitch = 100;
    pair_open(&tp, "rgb x4", net, 6, 10, 14, 3, b, 4, 22);
    pair_run(&tp, 7, 3);
    pair_close(&tp);
    /* one frame a stack (nothing to shift) */
    small_net(net, sizeof net, 1, 9, 7, "1/255");
    cudarl_camera c = camera(33, 21, CUDARL_PIXEL_RGB8);
    pair_open(&tp, "gray depth 1", net, 1, 9, 7, 1, &c, 1, 23);
    pair_run(&tp, 4, 2);
    pair_close(&tp);
    /* the five formats into nature-cnn in bf16 (cudarl bench frames --precision bf16): the
     * observations bit for bit, the outputs act()'s on them */
    gpu_precision = CUDARL_PRECISION_BF16;
    pair_open(&tp, "nature-cnn bf16 gray x5", NATURE, 4, 84, 84, 1, a, 5, 24);
    pair_run(&tp, 5, 3);
    pair_close(&tp);
    gpu_precision = CUDARL_PRECISION_FP32;
}

/* Submit and wait on a CUDA policy against ticks one by one of a CPU policy of the same
 * weights: 4 cameras of 4 formats (1080p NV12, a 720p RGB8 crop, YUYV, GRAY8) into nature-cnn,
 * frames pageable, pinned, device (every frame read in place: the one-launch graph) and mixed,
 * each tick's frame buffers rewritten right after the wait that frees them; and one camera
 * (no early launch), pinned and device. */
static void test_cuda_pipeline(void) {
    cudarl_camera a[4] = {camera(1920, 1080, CUDARL_PIXEL_NV12),
                          camera(1280, 720, CUDARL_PIXEL_RGB8), camera(640, 480, CUDARL_PIXEL_YUYV),
                          camera(333, 211, CUDARL_PIXEL_GRAY8)};
    a[1].crop_x = 101, a[1].crop_y = 33, a[1].crop_width = 1001, a[1].crop_height = 613;
    a[2].pitch = 1408;
    cudarl_policy *pc = net_policy_on(NATURE, 4, 51, CUDARL_DEVICE_CPU);
    cudarl_policy *pg = net_policy_on(NATURE, 4, 51, CUDARL_DEVICE_CUDA);
    for (int kind = PIPE_PAGEABLE; kind <= PIPE_MIXED; kind++)
        pipeline_run("cuda nature-cnn x4", pc, pg, a, 4, 1, 4 * OBS, 12, 7, kind);
    cudarl_policy_free(pc), cudarl_policy_free(pg);
    char net[1024];
    small_net(net, sizeof net, 6, 10, 14, "1/255");
    cudarl_camera c = camera(1280, 720, CUDARL_PIXEL_NV12);
    pc = net_policy_on(net, 1, 52, CUDARL_DEVICE_CPU);
    pg = net_policy_on(net, 1, 52, CUDARL_DEVICE_CUDA);
    pipeline_run("cuda rgb x1", pc, pg, &c, 1, 3, 6 * 10 * 14, 10, 5, PIPE_PINNED);
    pipeline_run("cuda rgb x1", pc, pg, &c, 1, 3, 6 * 10 * 14, 10, 5, PIPE_DEVICE);
    cudarl_policy_free(pc), cudarl_policy_free(pg);
}

/* Device frames for a CPU policy are refused; a CUDA policy's messages name device memory. */
static void test_cuda_refusals(void) {
    char net[1024];
    small_net(net, sizeof net, 4, 6, 6, "1/255");
    cudarl_camera c = camera(8, 8, CUDARL_PIXEL_GRAY8);
    uint8_t *d_frame;
    CUDA_OK(cudaMalloc((void **)&d_frame, 64));
    CUDA_OK(cudaMemset(d_frame, 0, 64));
    const void *frames[1] = {d_frame};
    int32_t action;
    cudarl_policy *pc = net_policy_on(net, 1, 30, CUDARL_DEVICE_CPU);
    cudarl_frames *f;
    CHECK_OK(cudarl_frames_create(pc, &c, 1, NULL, &f));
    refused(cudarl_frames_tick(f, frames, &action, NULL, NULL), CUDARL_ERR_UNSUPPORTED,
            "camera_frames[0] is device memory (cuda:0), but the policy runs on the CPU");
    cudarl_frames_free(f);
    cudarl_policy_free(pc);
    cudarl_policy *pg = net_policy_on(net, 1, 30, CUDARL_DEVICE_CUDA);
    CHECK_OK(cudarl_frames_create(pg, &c, 1, NULL, &f));
    const void *none[1] = {NULL};
    refused(cudarl_frames_tick(f, none, &action, NULL, NULL), CUDARL_ERR_INVALID_ARG,
            "(host or device memory, 64 bytes)");
    CHECK_OK(cudarl_frames_tick(f, frames, &action, NULL, NULL)); /* read in place */
    cudarl_frames_free(f);
    cudarl_policy_free(pg);
    CUDA_OK(cudaFree(d_frame));
    printf("cuda refusals: device frames for a CPU policy, each named\n");
}
#endif

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[1], "cpu") && strcmp(argv[1], "cuda"))) {
        fprintf(stderr, "usage: test_frames cpu|cuda PPO_MLP_CHECKPOINT\n");
        return 2;
    }
    device = !strcmp(argv[1], "cuda") ? CUDARL_DEVICE_CUDA : CUDARL_DEVICE_CPU;
    cudarl_log_set_level(CUDARL_LOG_WARN);
    test_formats();
    test_resize();
    test_box_parts();
    test_stack_gray();
    test_stack_rgb();
    test_refusals(argv[2]);
    test_end_to_end();
    test_pipeline();
    if (device == CUDARL_DEVICE_CUDA) {
#ifdef CUDARL_WITH_CUDA
        test_cuda_twin();
        test_cuda_ticks();
        test_cuda_pipeline();
        test_cuda_refusals();
#else
        fprintf(stderr, "FAIL test_frames cuda: this build has no CUDA\n");
        return 1;
#endif
    }
    printf("test_frames (%s): OK\n", argv[1]);
    return 0;
}
