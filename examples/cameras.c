/* Four cameras into a pixel policy at a fixed rate, through the public API only (docs/cameras.md):
 * four synthetic 3840x2160 NV12 streams (moving test patterns: a gradient and a checkerboard
 * that shift every frame, where a robot would dequeue its cameras' buffers), handed each period
 * to cudarl_frames_tick, which converts them to gray, area-resizes them to the policy's 84x84,
 * pushes them onto each camera's 4-frame stack and runs the policy on the four stacks. The loop
 * sleeps to each period's start with clock_nanosleep(TIMER_ABSTIME); at the end it prints the
 * ticks' latency (cudarl_frames_latency: p50, p99, max), the ticks over the deadline (the
 * period) and the periods missed (a tick that ended after the next period began).
 *
 * Usage: example_cameras CHECKPOINT|--in-memory [--hz 30] [--seconds 2] [--device auto|cpu|cuda]
 * CHECKPOINT: a pixel policy taking 4x84x84 uint8 gray stacks (a nature-cnn PPO checkpoint of
 * `cudarl train --policy nature-cnn`, say); --in-memory builds CleanRL's Nature-CNN Agent (6
 * actions) with random weights instead. The frames live in pinned host memory where there is a
 * GPU (cudaHostAlloc: the copy to the device is a DMA at the bus's speed), else in malloc'd
 * memory; a capture driver's buffers (V4L2 mmap, NvBufSurface) go the same way.
 * Exits 0 when every tick succeeded, 1 when one failed, 2 on bad usage. Missed deadlines are
 * reported, not failures: how many there are is a property of the machine. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cudarl.h"

#ifdef CUDARL_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

#define CAMERAS 4
#define WIDTH 3840
#define HEIGHT 2160
#define FRAME_BYTES ((size_t)WIDTH * HEIGHT * 3 / 2) /* NV12: Y, then U,V at half height */
#define PHASES 3                                     /* frames per camera, used in turn */

/* CleanRL ppo_atari.py's Agent: nature-cnn on 4x84x84 pixels / 255, 6 actions. */
static const char NATURE_CNN[] =
    "{\"format\":\"cudarl-convnet\",\"version\":1,\"name\":\"nature-cnn\","
    "\"input\":{\"shape\":[4,84,84],\"dtype\":\"u8\",\"scale\":\"1/255\"},"
    "\"layers\":[{\"type\":\"conv\",\"out\":32,\"kernel\":[8,8],\"stride\":4,\"pad\":0},"
    "{\"type\":\"relu\"},{\"type\":\"conv\",\"out\":64,\"kernel\":[4,4],\"stride\":2,\"pad\":0},"
    "{\"type\":\"relu\"},{\"type\":\"conv\",\"out\":64,\"kernel\":[3,3],\"stride\":1,\"pad\":0},"
    "{\"type\":\"relu\"},{\"type\":\"flatten\"},{\"type\":\"linear\",\"out\":512},"
    "{\"type\":\"relu\"}],\"heads\":{\"type\":\"ppo\",\"actions\":6}}";

typedef struct cam_args {
    const char *checkpoint; /* NULL: --in-memory */
    double hz, seconds;
    cudarl_device_kind device;
} cam_args;

static int usage(const char *why) {
    fprintf(stderr, "example_cameras: %s\nusage: example_cameras CHECKPOINT|--in-memory "
            "[--hz 30] [--seconds 2] [--device auto|cpu|cuda]\n", why);
    return 2;
}

static int parse(int argc, char **argv, cam_args *a) {
    *a = (cam_args){NULL, 30, 2, CUDARL_DEVICE_AUTO};
    int in_memory = 0;
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(k, "--hz") || !strcmp(k, "--seconds")) {
            char *end;
            double x = v ? strtod(v, &end) : NAN;
            if (!v || !*v || *end || !(x >= 1e-3 && x <= 1e6))
                return usage("--hz and --seconds take a number from 0.001 to 1e6");
            *(!strcmp(k, "--hz") ? &a->hz : &a->seconds) = x, i++;
        } else if (!strcmp(k, "--device")) {
            if (v && !strcmp(v, "auto")) a->device = CUDARL_DEVICE_AUTO;
            else if (v && !strcmp(v, "cpu")) a->device = CUDARL_DEVICE_CPU;
            else if (v && !strcmp(v, "cuda")) a->device = CUDARL_DEVICE_CUDA;
            else return usage("--device takes auto, cpu or cuda");
            i++;
        } else if (!strcmp(k, "--in-memory") && !a->checkpoint && !in_memory) {
            in_memory = 1;
        } else if (k[0] == '-' || a->checkpoint || in_memory) {
            char why[200];
            snprintf(why, sizeof why, "unexpected argument '%.100s' (one CHECKPOINT or "
                     "--in-memory, then flags)", k);
            return usage(why);
        } else {
            a->checkpoint = k;
        }
    }
    return a->checkpoint || in_memory ? 0 : usage("which policy? give a checkpoint's path or "
                                                  "--in-memory");
}

/* Camera c's frame of phase p: the Y plane a diagonal gradient crossed by a 64-pixel
 * checkerboard, both moving with p, then the U,V plane (half height) slow ramps. */
static void synthesize(uint8_t *f, int c, int p) {
    int s = 8 * p + 100 * c;
    for (int y = 0; y < HEIGHT; y++)
        for (int x = 0; x < WIDTH; x++)
            f[(size_t)y * WIDTH + x] = (uint8_t)(((x + y / 2 + s) & 255) ^
                                                 ((((x + 2 * s) / 64 + y / 64) & 1) ? 128 : 0));
    uint8_t *uv = f + (size_t)WIDTH * HEIGHT;
    for (int y = 0; y < HEIGHT / 2; y++)
        for (int x = 0; x < WIDTH; x += 2) {
            uv[(size_t)y * WIDTH + x] = (uint8_t)(x / 2 + s);     /* U */
            uv[(size_t)y * WIDTH + x + 1] = (uint8_t)(y + s);     /* V */
        }
}

/* Memory for one frame: pinned where a GPU is (and this cudarl has CUDA), else malloc'd. */
static void *frame_alloc(int *pinned) {
#ifdef CUDARL_WITH_CUDA
    void *m = NULL;
    if (cudarl_cuda_device_count() > 0 && cudaHostAlloc(&m, FRAME_BYTES, cudaHostAllocDefault) ==
                                              cudaSuccess) {
        *pinned = 1;
        return m;
    }
#endif
    *pinned = 0;
    return malloc(FRAME_BYTES);
}

static void frame_free(void *m, int pinned) {
#ifdef CUDARL_WITH_CUDA
    if (pinned) {
        cudaFreeHost(m);
        return;
    }
#endif
    (void)pinned;
    free(m);
}

static int64_t ns_of(const struct timespec *t) {
    return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

static void add_ns(struct timespec *t, int64_t ns) {
    int64_t v = ns_of(t) + ns;
    t->tv_sec = (time_t)(v / 1000000000), t->tv_nsec = (long)(v % 1000000000);
}

static cudarl_status load(const cam_args *a, cudarl_policy **p) {
    cudarl_policy_options o;
    cudarl_policy_options_default(&o);
    o.device = a->device, o.max_batch = CAMERAS; /* one row per camera */
    if (a->checkpoint) return cudarl_policy_load(a->checkpoint, &o, p);
    size_t n = 0;
    cudarl_status s = cudarl_network_init_params(NATURE_CNN, 1, NULL, 0, &n);
    float *w = s == CUDARL_OK ? malloc(n * sizeof *w) : NULL;
    if (s == CUDARL_OK && !w) {
        fprintf(stderr, "example_cameras: out of memory\n");
        return CUDARL_ERR_OUT_OF_MEMORY;
    }
    if (s == CUDARL_OK) s = cudarl_network_init_params(NATURE_CNN, 1, w, n, &n);
    if (s == CUDARL_OK)
        s = cudarl_policy_load_network(NATURE_CNN, w, n, "example_cameras (in memory)",
                                       CUDARL_CONV_ENGINE_AUTO, &o, p);
    free(w); /* loading copied the weights */
    return s;
}

static int run(const cam_args *a) {
    cudarl_policy *pi = NULL;
    cudarl_frames *fr = NULL;
    void *frames[CAMERAS][PHASES] = {{0}};
    int pinned[CAMERAS][PHASES] = {{0}}, status = 1;
    if (load(a, &pi) != CUDARL_OK) {
        fprintf(stderr, "example_cameras: %s\n", cudarl_last_error());
        return 1;
    }
    cudarl_policy_info in;
    cudarl_policy_get_info(pi, &in);
    if (in.action_dim > 0) {
        fprintf(stderr, "example_cameras: the policy's actions are continuous (%d floats); this "
                "example sends discrete ones: pass a discrete-action pixel policy\n",
                in.action_dim);
        goto done;
    }
    /* The cameras, described once: 4K NV12, rows without padding, the whole frame. */
    cudarl_camera cams[CAMERAS];
    for (int c = 0; c < CAMERAS; c++) {
        cudarl_camera_default(&cams[c]);
        cams[c].width = WIDTH, cams[c].height = HEIGHT, cams[c].format = CUDARL_PIXEL_NV12;
    }
    cudarl_frames_options fo;
    cudarl_frames_options_default(&fo); /* gray frames */
    fo.deadline_us = 1e6 / a->hz;       /* a tick longer than the period is a miss */
    if (cudarl_frames_create(pi, cams, CAMERAS, &fo, &fr) != CUDARL_OK) {
        fprintf(stderr, "example_cameras: %s\n", cudarl_last_error());
        goto done;
    }
    for (int c = 0; c < CAMERAS; c++)
        for (int p = 0; p < PHASES; p++) {
            if (!(frames[c][p] = frame_alloc(&pinned[c][p]))) {
                fprintf(stderr, "example_cameras: out of memory for the frames\n");
                goto done;
            }
            synthesize(frames[c][p], c, p);
        }
    const int64_t period = (int64_t)llround(1e9 / a->hz);
    const int64_t ticks = (int64_t)llround(a->seconds * a->hz);
    int64_t missed = 0;
    int32_t actions[CAMERAS] = {0};
    struct timespec next, now;
    clock_gettime(CLOCK_MONOTONIC, &next);
    status = 0;
    for (int64_t t = 0; t < ticks && !status; t++) {
        const void *now_frames[CAMERAS]; /* each camera's newest frame */
        for (int c = 0; c < CAMERAS; c++) now_frames[c] = frames[c][t % PHASES];
        if (cudarl_frames_tick(fr, now_frames, actions, NULL, NULL) != CUDARL_OK) {
            fprintf(stderr, "example_cameras: tick %lld: %s\n", (long long)t,
                    cudarl_last_error());
            status = 1;
            break;
        }
        /* ... actions[c] is the policy's action for camera c's stack: send it on ... */
        add_ns(&next, period);
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (ns_of(&now) > ns_of(&next)) { /* late: skip the periods already begun */
            int64_t late = (ns_of(&now) - ns_of(&next)) / period + 1;
            missed += late;
            add_ns(&next, late * period);
        }
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR) {
        }
    }
    cudarl_latency_stats st;
    cudarl_frames_latency(fr, &st);
    printf("example_cameras: %d cameras, %dx%d NV12 from %s memory, %lld ticks at %g Hz on %s\n"
           "tick latency: p50 %.3f ms, p99 %.3f ms, max %.3f ms\n"
           "deadline %.3f ms: %lld ticks over it; periods missed: %lld\n"
           "last actions: %d %d %d %d\n", CAMERAS, WIDTH, HEIGHT,
           pinned[0][0] ? "pinned host" : "host", (long long)st.count, a->hz,
           in.device == CUDARL_DEVICE_CUDA ? "cuda" : "cpu", st.p50_us / 1e3, st.p99_us / 1e3,
           st.max_us / 1e3, st.deadline_us / 1e3, (long long)st.deadline_misses,
           (long long)missed, actions[0], actions[1], actions[2], actions[3]);
done:
    cudarl_frames_free(fr);
    for (int c = 0; c < CAMERAS; c++)
        for (int p = 0; p < PHASES; p++)
            if (frames[c][p]) frame_free(frames[c][p], pinned[c][p]);
    cudarl_policy_free(pi);
    return status;
}

int main(int argc, char **argv) {
    cam_args a;
    int rc = parse(argc, argv, &a);
    return rc ? rc : run(&a);
}
