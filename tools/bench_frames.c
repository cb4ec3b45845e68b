/* cudarl bench frames: camera frames to a pixel policy's actions (cudarl_frames_*), timed tick by
 * tick at a fixed rate. N synthetic cameras (3840x2160 by default) send moving test patterns (a
 * diagonal gradient crossed by a checkerboard, both shifted by the frame's phase, so that every
 * camera's frame differs from its previous one and from the other cameras'); each tick hands the
 * cameras' frames to cudarl_frames_tick, which converts, resizes, stacks and runs the policy.
 *
 * The frames: a pool of N + 7 frames of distinct phases, written once before the timing, in the
 * memory --source names (pageable malloc, pinned cudaHostAlloc, or cudaMalloc); at tick t camera
 * i reads pool[(t + i) % (N + 7)]. The pattern, for pixel (x, y) of phase p:
 *   v = ((x + 4p + y / 2) & 255) ^ (((x + 16p) / 64 + y / 64) & 1 ? 128 : 0)
 * gray8: v; rgb8: R = v, G = v + 85, B = 255 - v (mod 256); bgr8 the same bytes reversed;
 * nv12: Y = v, then U = (2 cx + 2p) & 255, V = (2 cy + 3p) & 255 at chroma sample (cx, cy);
 * yuyv: Y0 = v(x), U = (x + 2p) & 255, Y1 = v(x + 1), V = (y + 3p) & 255 (x even).
 * bench/frames.py writes the same frames for its peers.
 *
 * The policy: --policy PATH (a checkpoint, cudarl_policy_load) or nature-cnn (built in memory:
 * CleanRL ppo_atari.py's Agent on 4x84x84 gray stacks, 6 actions, PyTorch's default init from a
 * fixed seed), max_batch = the number of cameras.
 *
 * What it prints: the tick's latency as cudarl_frames_latency reports it (p50, p99 over the
 * window, max, deadline misses against 1 / rate), the same over the timed ticks only (the
 * warm-up ticks left out), the frames' bytes per tick, and on a CUDA build with a GPU the pinned
 * host-to-device bandwidth measured here (cudaMemcpyAsync of one tick's frames from pinned memory
 * into device memory, the median of 20) and the copy floor (bytes / bandwidth) with p99's ratio
 * to it. --find-max searches the largest number of cameras whose timed p99 stays within the
 * period (1 / rate): 1, 2, 4, ... until one fails or --max-cameras, then bisection.
 * --pipeline runs the ticks back to back as cudarl_frames_submit / _wait with one tick in flight
 * ahead (submit t+1, then wait for t) and prints, beside their latency (submit to wait), the
 * period they reach against a tick's copy time (the upload floor) and compute time (a tick of
 * the same frames from device memory, on a second handle of the same policy, the median of
 * REF_TICKS) and a tick one by one (the same frames, the median of REF_TICKS).
 * Exit codes as the other commands: 0 done, 1 failed, 2 bad usage. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"
#include "cmd.h"
#include "cudarl.h"

#ifdef CUDARL_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

#define CMD "cudarl bench frames"
#define POOL_EXTRA 7 /* frames in the pool beyond one per camera */
#define MAX_CAMERAS 256
#define BW_REPS 20
#define REF_TICKS 20 /* --pipeline: ticks one by one timed for the copy and compute times */

/* CleanRL ppo_atari.py's Agent: nature-cnn on 4x84x84 pixels / 255, 6 actions; with --channels 3
 * the same layers on 4 RGB frames (12x84x84, a custom spec). The "%d" is the input channels. */
#define NET_SPEC(name, c)                                                                        \
    "{\"format\":\"cudarl-convnet\",\"version\":1,\"name\":\"" name "\","                      \
    "\"input\":{\"shape\":[" c ",84,84],\"dtype\":\"u8\",\"scale\":\"1/255\"},"                \
    "\"layers\":[{\"type\":\"conv\",\"out\":32,\"kernel\":[8,8],\"stride\":4,\"pad\":0},"       \
    "{\"type\":\"relu\"},{\"type\":\"conv\",\"out\":64,\"kernel\":[4,4],\"stride\":2,\"pad\":0},"  \
    "{\"type\":\"relu\"},{\"type\":\"conv\",\"out\":64,\"kernel\":[3,3],\"stride\":1,\"pad\":0},"  \
    "{\"type\":\"relu\"},{\"type\":\"flatten\"},{\"type\":\"linear\",\"out\":512},"             \
    "{\"type\":\"relu\"}],\"heads\":{\"type\":\"ppo\",\"actions\":6}}"
static const char NATURE_CNN_GRAY[] = NET_SPEC("nature-cnn", "4");
static const char NATURE_CNN_RGB[] = NET_SPEC("custom", "12");

typedef enum source_kind { SRC_AUTO, SRC_PAGEABLE, SRC_PINNED, SRC_DEVICE } source_kind;
static const char *const SOURCE_NAMES[] = {"auto", "pageable", "pinned", "device"};

typedef struct frames_opts {
    int cameras, width, height, channels, warmup, max_cameras, find_max, pipeline;
    double rate, seconds;
    cudarl_device_kind device;
    cudarl_precision precision;
    char format[16], source[16];
    char policy[PATH_MAX];
    char json[PATH_MAX];
} frames_opts;

static const arg_spec frames_specs[] = {
    {"cameras", ARG_INT, offsetof(frames_opts, cameras), 0, 1, MAX_CAMERAS, "cameras ticking together (with --find-max: ignored)"},
    {"format", ARG_STR, offsetof(frames_opts, format), 16, 0, 0, "the cameras' pixel format: nv12, yuyv, rgb8, bgr8 or gray8"},
    {"width", ARG_INT, offsetof(frames_opts, width), 0, 2, CUDARL_FRAME_MAX_SIDE, "frame width in pixels (even for nv12 and yuyv)"},
    {"height", ARG_INT, offsetof(frames_opts, height), 0, 2, CUDARL_FRAME_MAX_SIDE, "frame height in pixels (even for nv12)"},
    {"rate", ARG_F64, offsetof(frames_opts, rate), 0, 0, 100000, "ticks a second (Hz), paced by clock_nanosleep; the deadline is 1 / rate (0: back to back, no deadline)"},
    {"seconds", ARG_F64, offsetof(frames_opts, seconds), 0, 0.001, 86400, "how long the timed ticks run (each trial of --find-max too)"},
    {"warmup", ARG_INT, offsetof(frames_opts, warmup), 0, 0, 100000, "untimed ticks first, back to back (in the library's p50/p99/max, not in the timed ones)"},
    {"policy", ARG_STR, offsetof(frames_opts, policy), PATH_MAX, 0, 0, "a pixel policy's checkpoint, or nature-cnn: built in memory, random weights (4x84x84: 4 gray frames; with --channels 3, 12x84x84: 4 RGB frames)"},
    {"channels", ARG_INT, offsetof(frames_opts, channels), 0, 1, 3, "per frame: 1 gray or 3 RGB (the policy's input channels a multiple of it)"},
    {"device", ARG_DEVICE, offsetof(frames_opts, device), 0, 0, 0, "the policy's device: cuda, cpu or auto (the GPU if there is one)"},
    {"precision", ARG_PRECISION, offsetof(frames_opts, precision), 0, 0, 0, "the policy's arithmetic (cudarl_policy_options.precision; bf16 and fp16 need a GPU)"},
    {"source", ARG_STR, offsetof(frames_opts, source), 16, 0, 0, "where the frames are: pageable, pinned (host), device, or auto (pinned with a GPU, else pageable)"},
    {"find-max", ARG_BOOL, offsetof(frames_opts, find_max), 0, 0, 0, "find the most cameras whose timed p99 stays within 1 / rate"},
    {"max-cameras", ARG_INT, offsetof(frames_opts, max_cameras), 0, 1, MAX_CAMERAS, "--find-max's upper bound"},
    {"pipeline", ARG_BOOL, offsetof(frames_opts, pipeline), 0, 0, 0, "run the ticks back to back as cudarl_frames_submit / _wait, one tick in flight ahead (needs --rate 0): their latency and period against a tick's copy and compute times"},
    {"json", ARG_STR, offsetof(frames_opts, json), PATH_MAX, 0, 0, "also write the results to this file as JSON"},
};
#define N_FRAMES_SPECS ((int)(sizeof frames_specs / sizeof frames_specs[0]))

/* One run of n cameras. Times in ms. */
typedef struct frames_run {
    int cameras;
    int64_t ticks, timed_ticks;
    cudarl_latency_stats lib;   /* cudarl_frames_latency at the end */
    int64_t timed_misses;       /* deadline misses of the timed ticks */
    int64_t late_periods;       /* timed ticks that began after their period's start */
    double timed_p50, timed_p99, timed_max;
    double bytes_per_tick;
    double upload_per_tick;     /* of them, what a CUDA tick copies from host memory */
    double h2d_gbps, floor_ms;  /* NAN without a GPU */
    double upload_floor_ms;     /* upload_per_tick / bandwidth */
    int ok;                     /* p99 within the period (--find-max) */
    double period_ms;           /* --pipeline: timed wall time / timed ticks */
    double one_by_one_ms;       /* --pipeline: a tick one by one (median of REF_TICKS) */
    double compute_ms;          /* --pipeline: a tick of device frames (median of REF_TICKS) */
    double copy_ms;             /* --pipeline: the upload floor (0 for device frames, CPU) */
    int checked;                /* the last observations were checked against the reference */
} frames_run;

typedef struct frames_bench {
    frames_opts o;
    cudarl_pixel_format format;
    source_kind source;
    cudarl_device_kind kind;    /* the policy's device, AUTO resolved */
    size_t frame_bytes;
    int builtin;
    const char *net;            /* the in-memory policy's spec */
    float *params;
    size_t num_params;
    void **pool;                /* pool_n frames in the source's memory */
    int pool_n;
    uint8_t *scratch;           /* one host frame (device source: written, then copied) */
    double *times;              /* timed tick durations, s */
    int64_t times_cap;
    frames_run runs[64];
    int nruns;
    int best;                   /* --find-max: the most cameras that passed (0: none) */
    float actions[MAX_CAMERAS * CUDARL_ACTION_DIM_MAX]; /* int32 discrete, or float Gaussian */
    char device_name[256];
} frames_bench;

/* ---- the frames -------------------------------------------------------------------------- */

static int format_of(const char *s, cudarl_pixel_format *f) {
    static const struct { const char *name; cudarl_pixel_format f; } t[] = {
        {"nv12", CUDARL_PIXEL_NV12}, {"yuyv", CUDARL_PIXEL_YUYV}, {"rgb8", CUDARL_PIXEL_RGB8},
        {"bgr8", CUDARL_PIXEL_BGR8}, {"gray8", CUDARL_PIXEL_GRAY8}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(s, t[i].name)) return *f = t[i].f, 0;
    return -1;
}

static size_t bytes_of(cudarl_pixel_format f, int w, int h) {
    size_t px = (size_t)w * (size_t)h;
    switch (f) {
    case CUDARL_PIXEL_NV12: return px * 3 / 2;
    case CUDARL_PIXEL_YUYV: return px * 2;
    case CUDARL_PIXEL_RGB8:
    case CUDARL_PIXEL_BGR8: return px * 3;
    default: return px;
    }
}

static inline uint8_t pattern(int x, int y, int p) {
    unsigned v = (unsigned)(x + 4 * p + y / 2) & 255u;
    return (uint8_t)(v ^ ((((x + 16 * p) / 64 + y / 64) & 1) ? 128u : 0u));
}

/* Phase p's frame (tight rows) into dst (host). */
static void fill_frame(cudarl_pixel_format f, int w, int h, int p, uint8_t *dst) {
    for (int y = 0; y < h; y++) {
        uint8_t *row;
        switch (f) {
        case CUDARL_PIXEL_GRAY8:
        case CUDARL_PIXEL_NV12:
            row = dst + (size_t)y * w;
            for (int x = 0; x < w; x++) row[x] = pattern(x, y, p);
            break;
        case CUDARL_PIXEL_RGB8:
        case CUDARL_PIXEL_BGR8: {
            row = dst + (size_t)y * w * 3;
            int r = f == CUDARL_PIXEL_RGB8 ? 0 : 2, b = 2 - r;
            for (int x = 0; x < w; x++) {
                uint8_t v = pattern(x, y, p);
                row[3 * x + r] = v, row[3 * x + 1] = (uint8_t)(v + 85);
                row[3 * x + b] = (uint8_t)(255 - v);
            }
            break;
        }
        case CUDARL_PIXEL_YUYV:
            row = dst + (size_t)y * w * 2;
            for (int x = 0; x < w; x += 2) {
                row[2 * x] = pattern(x, y, p), row[2 * x + 1] = (uint8_t)(x + 2 * p);
                row[2 * x + 2] = pattern(x + 1, y, p), row[2 * x + 3] = (uint8_t)(y + 3 * p);
            }
            break;
        }
    }
    if (f == CUDARL_PIXEL_NV12) { /* the U,V plane, h / 2 rows of w bytes */
        uint8_t *uv = dst + (size_t)w * h;
        for (int cy = 0; cy < h / 2; cy++)
            for (int cx = 0; cx < w / 2; cx++) {
                uv[(size_t)cy * w + 2 * cx] = (uint8_t)(2 * cx + 2 * p);
                uv[(size_t)cy * w + 2 * cx + 1] = (uint8_t)(2 * cy + 3 * p);
            }
    }
}

/* Memory of the source's kind; NULL (and a message) on failure. */
static void *alloc_frame(const frames_bench *b, size_t bytes) {
    if (b->source == SRC_PAGEABLE) {
        void *m = malloc(bytes);
        if (!m)
            fprintf(stderr, CMD ": out of host memory for the frames (%zu bytes each)\n", bytes);
        return m;
    }
#ifdef CUDARL_WITH_CUDA
    void *m = NULL;
    cudaError_t e = b->source == SRC_PINNED ? cudaHostAlloc(&m, bytes, cudaHostAllocDefault)
                                            : cudaMalloc(&m, bytes);
    if (e != cudaSuccess) {
        fprintf(stderr, CMD ": %s of %zu bytes for a frame failed: %s\n",
                b->source == SRC_PINNED ? "cudaHostAlloc" : "cudaMalloc", bytes,
                cudaGetErrorString(e));
        return NULL;
    }
    return m;
#else
    return NULL; /* refused when the flags were read */
#endif
}

static void free_frame(const frames_bench *b, void *m) {
    if (!m) return;
    if (b->source == SRC_PAGEABLE) {
        free(m);
        return;
    }
#ifdef CUDARL_WITH_CUDA
    if (b->source == SRC_PINNED) cudaFreeHost(m);
    else cudaFree(m);
#endif
}

/* Grows the pool to n frames, each written with its phase; 0, or -1 with a message. */
static int ensure_pool(frames_bench *b, int n) {
    if (n <= b->pool_n) return 0;
    void **p = realloc(b->pool, (size_t)n * sizeof *p);
    if (!p) {
        fprintf(stderr, CMD ": out of host memory\n");
        return -1;
    }
    b->pool = p;
    for (; b->pool_n < n; b->pool_n++) {
        void *m = alloc_frame(b, b->frame_bytes);
        if (!m) return -1;
        b->pool[b->pool_n] = m;
        if (b->source == SRC_DEVICE) {
            fill_frame(b->format, b->o.width, b->o.height, b->pool_n, b->scratch);
#ifdef CUDARL_WITH_CUDA
            cudaError_t e = cudaMemcpy(m, b->scratch, b->frame_bytes, cudaMemcpyHostToDevice);
            if (e != cudaSuccess) {
                fprintf(stderr, CMD ": copying a frame to the device failed: %s\n",
                        cudaGetErrorString(e));
                b->pool_n++;
                return -1;
            }
#endif
        } else {
            fill_frame(b->format, b->o.width, b->o.height, b->pool_n, m);
        }
    }
#ifdef CUDARL_WITH_CUDA
    /* device frames complete before a tick (a pageable cudaMemcpy may return before its DMA
     * ends, and the tick does not wait on the legacy stream) */
    if (b->source == SRC_DEVICE && cudaDeviceSynchronize() != cudaSuccess) {
        fprintf(stderr, CMD ": copying the frames to the device failed: %s\n",
                cudaGetErrorString(cudaGetLastError()));
        return -1;
    }
#endif
    return 0;
}

/* ---- bandwidth --------------------------------------------------------------------------- */

/* The pinned host-to-device bandwidth in GB/s (1e9 bytes) of n copies of frame_bytes each, one
 * stream, the median of BW_REPS; NAN for a CPU policy (no copy to a device) or on the CPU build. */
static double h2d_bandwidth(const frames_bench *b, int n) {
#ifdef CUDARL_WITH_CUDA
    if (b->kind != CUDARL_DEVICE_CUDA || cudarl_cuda_device_count() <= 0) return NAN;
    size_t bytes = b->frame_bytes * (size_t)n;
    void *h = NULL, *d = NULL;
    cudaStream_t st = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    double gbps = NAN;
    float ms[BW_REPS];
    if (cudaHostAlloc(&h, bytes, cudaHostAllocDefault) != cudaSuccess ||
        cudaMalloc(&d, bytes) != cudaSuccess ||
        cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess ||
        cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess) {
        fprintf(stderr, CMD ": measuring the bandwidth: %s (left out)\n",
                cudaGetErrorString(cudaGetLastError()));
        goto done;
    }
    memset(h, 1, bytes);
    for (int r = -2; r < BW_REPS; r++) { /* two untimed */
        cudaEventRecord(e0, st);
        for (int i = 0; i < n; i++)
            cudaMemcpyAsync((char *)d + (size_t)i * b->frame_bytes,
                            (char *)h + (size_t)i * b->frame_bytes, b->frame_bytes,
                            cudaMemcpyHostToDevice, st);
        cudaEventRecord(e1, st);
        if (cudaEventSynchronize(e1) != cudaSuccess) goto done;
        if (r >= 0) cudaEventElapsedTime(&ms[r], e0, e1);
    }
    double t[BW_REPS];
    for (int r = 0; r < BW_REPS; r++) t[r] = ms[r];
    qsort(t, BW_REPS, sizeof *t, cmd_cmp_double);
    gbps = (double)bytes / (cmd_quantile(t, BW_REPS, 0.5) * 1e-3) / 1e9;
done:
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (st) cudaStreamDestroy(st);
    if (d) cudaFree(d);
    if (h) cudaFreeHost(h);
    return gbps;
#else
    (void)b, (void)n;
    return NAN;
#endif
}

/* ---- one run ----------------------------------------------------------------------------- */

static cudarl_status load_policy(const frames_bench *b, int n, cudarl_policy **p) {
    cudarl_policy_options po;
    cudarl_policy_options_default(&po);
    po.device = b->o.device, po.precision = b->o.precision, po.max_batch = n;
    if (b->builtin)
        return cudarl_policy_load_network(b->net, b->params, b->num_params,
                                          "bench frames (in memory)", CUDARL_CONV_ENGINE_AUTO,
                                          &po, p);
    return cudarl_policy_load(b->o.policy, &po, p);
}

static void sleep_until(double t) {
    struct timespec ts;
    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

/* The built-in policy's last observations (tick t) against the CPU reference: each camera's
 * newest frame (the last `channels` planes of its row) must equal cudarl_frame_convert of the
 * frame it was handed. 0, or -1 after printing why. */
static int check_last_tick(frames_bench *b, cudarl_frames *fr, const cudarl_camera *cams, int n,
                           int64_t t) {
    const int ch = b->o.channels, C = 4 * ch, plane = 84 * 84;
    size_t bytes = (size_t)n * C * plane;
    uint8_t *obs = malloc(bytes), *ref = malloc((size_t)ch * plane);
    int rc = -1;
    if (!obs || !ref) {
        fprintf(stderr, CMD ": out of host memory\n");
        goto done;
    }
    if (cudarl_frames_observations(fr, obs, bytes) != CUDARL_OK) {
        fprintf(stderr, CMD ": %s\n", cudarl_last_error());
        goto done;
    }
    for (int i = 0; i < n; i++) {
        int phase = (int)((t + i) % (n + POOL_EXTRA)); /* the pool frame's index is its phase */
        fill_frame(b->format, b->o.width, b->o.height, phase, b->scratch);
        if (cudarl_frame_convert(&cams[i], b->scratch, 84, 84, ch, ref) != CUDARL_OK) {
            fprintf(stderr, CMD ": %s\n", cudarl_last_error());
            goto done;
        }
        const uint8_t *got = obs + ((size_t)i * C + (size_t)(C - ch)) * plane;
        for (int k = 0; k < ch * plane; k++)
            if (got[k] != ref[k]) {
                fprintf(stderr, CMD ": camera %d's last observation differs from the CPU "
                        "reference (cudarl_frame_convert) at byte %d: %d, not %d; a bug in "
                        "cudarl's frames\n", i, k, got[k], ref[k]);
                goto done;
            }
    }
    rc = 0;
done:
    free(obs), free(ref);
    return rc;
}

/* --pipeline's ticks on fr, back to back: the warm-up, then the timed ticks for --seconds, each
 * submitted before the wait for the one before it; each tick's latency (submit to wait) into
 * b->times, the period into r. *t: ticks run, *k: timed ones; *warm: the latency after the
 * warm-up. */
static cudarl_status run_pipelined(frames_bench *b, cudarl_frames *fr, int n, int64_t cap,
                                   int64_t *t, int64_t *k, cudarl_latency_stats *warm,
                                   frames_run *r) {
    const int pool = n + POOL_EXTRA;
    const void *frames[MAX_CAMERAS];
    double submitted[2] = {0, 0};
    for (int pass = 0; pass < 2; pass++) { /* 0: the warm-up (untimed), 1: the timed ticks */
        const double start = cmd_now_s();
        int64_t j = 0;
        for (;; j++, (*t)++) {
            const int more = pass == 0 ? j < b->o.warmup
                                       : j < cap && cmd_now_s() - start < b->o.seconds;
            if (more) {
                for (int i = 0; i < n; i++) frames[i] = b->pool[(*t + i) % pool];
                submitted[j % 2] = cmd_now_s();
                cudarl_status st = cudarl_frames_submit(fr, frames);
                if (st != CUDARL_OK) return st;
            }
            if (j > 0) { /* the tick before this one */
                cudarl_status st = cudarl_frames_wait(fr, b->actions, NULL, NULL);
                if (st != CUDARL_OK) return st;
                if (pass == 1) b->times[j - 1] = cmd_now_s() - submitted[(j - 1) % 2];
            }
            if (!more) break;
        }
        if (pass == 0) cudarl_frames_latency(fr, warm);
        else *k = j, r->period_ms = j ? 1e3 * (cmd_now_s() - start) / (double)j : NAN;
    }
    return CUDARL_OK;
}

/* --pipeline's yardsticks on a second handle of policy pi, REF_TICKS ticks one by one each
 * (medians into r, ms): from the pool's frames (a tick one by one), and on a CUDA build with the
 * policy on the GPU from copies of them in device memory (compute: nothing to upload); the copy
 * time is the upload floor. 0, or -1 after printing why. */
static int reference_ticks(frames_bench *b, cudarl_policy *pi, const cudarl_camera *cams, int n,
                           const cudarl_frames_options *fo, frames_run *r) {
    const int pool = n + POOL_EXTRA;
    const void *frames[MAX_CAMERAS];
    void *dev[MAX_CAMERAS] = {NULL};
    double ms[2][REF_TICKS];
    cudarl_frames *fr = NULL;
    int rc = -1;
    const int on_gpu = !isnan(r->h2d_gbps);
    r->copy_ms = on_gpu && b->source != SRC_DEVICE ? r->upload_floor_ms : 0;
    if (cudarl_frames_create(pi, cams, n, fo, &fr) != CUDARL_OK) goto done;
#ifdef CUDARL_WITH_CUDA
    for (int i = 0; on_gpu && b->source != SRC_DEVICE && i < n; i++) {
        cudaError_t e = cudaMalloc(&dev[i], b->frame_bytes);
        if (e == cudaSuccess)
            e = cudaMemcpy(dev[i], b->pool[i], b->frame_bytes, cudaMemcpyDefault);
        if (e != cudaSuccess) {
            fprintf(stderr, CMD ": device copies of the frames: %s\n", cudaGetErrorString(e));
            goto done;
        }
    }
#endif
    for (int pass = 0; pass < 1 + on_gpu; pass++) /* 0: the pool's frames; 1: device copies */
        for (int j = -2; j < REF_TICKS; j++) { /* two untimed */
            for (int i = 0; i < n; i++)
                frames[i] = pass && dev[i] ? dev[i] : b->pool[(j + 2 + i) % pool];
            const double t0 = cmd_now_s();
            if (cudarl_frames_tick(fr, frames, b->actions, NULL, NULL) != CUDARL_OK) goto done;
            if (j >= 0) ms[pass][j] = 1e3 * (cmd_now_s() - t0);
        }
    for (int pass = 0; pass < 1 + on_gpu; pass++)
        qsort(ms[pass], REF_TICKS, sizeof(double), cmd_cmp_double);
    r->one_by_one_ms = cmd_quantile(ms[0], REF_TICKS, 0.5);
    r->compute_ms = on_gpu ? cmd_quantile(ms[1], REF_TICKS, 0.5) : r->one_by_one_ms;
    rc = 0;
done:
    if (rc) fprintf(stderr, CMD ": the ticks one by one: %s\n", cudarl_last_error());
    cudarl_frames_free(fr);
#ifdef CUDARL_WITH_CUDA
    for (int i = 0; i < n; i++)
        if (dev[i]) cudaFree(dev[i]);
#endif
    return rc;
}

/* n cameras for --seconds at --rate; fills *r. 0, or -1 after printing why. */
static int run_cameras(frames_bench *b, int n, frames_run *r) {
    memset(r, 0, sizeof *r);
    r->cameras = n;
    r->period_ms = r->one_by_one_ms = r->compute_ms = r->copy_ms = NAN; /* --pipeline's */
    r->bytes_per_tick = (double)b->frame_bytes * n;
    /* the bytes the conversion reads (cr_frame_read_ranges; these cameras are uncropped): NV12
     * into gray reads the Y plane alone */
    r->upload_per_tick = b->source == SRC_DEVICE ? NAN /* read in place */
                         : strcmp(b->o.format, "nv12") == 0 && b->o.channels == 1
                             ? (double)b->o.width * b->o.height * n
                             : r->bytes_per_tick;
    int pool = n + POOL_EXTRA;
    if (ensure_pool(b, pool) != 0) return -1;
    double period = b->o.rate > 0 ? 1.0 / b->o.rate : 0;
    int64_t want = b->o.rate > 0 ? (int64_t)ceil(b->o.seconds * b->o.rate) : 0;
    int64_t cap = want ? want : 1 << 20; /* back to back: at most 2^20 timed ticks */
    if (cap > b->times_cap) {
        double *t = realloc(b->times, (size_t)cap * sizeof *t);
        if (!t) {
            fprintf(stderr, CMD ": out of host memory\n");
            return -1;
        }
        b->times = t, b->times_cap = cap;
    }
    cudarl_policy *pi = NULL;
    cudarl_frames *fr = NULL;
    cudarl_camera cams[MAX_CAMERAS];
    for (int i = 0; i < n; i++) {
        cudarl_camera_default(&cams[i]);
        cams[i].width = b->o.width, cams[i].height = b->o.height, cams[i].format = b->format;
    }
    cudarl_frames_options fo;
    cudarl_frames_options_default(&fo);
    fo.channels = b->o.channels;
    fo.deadline_us = period * 1e6;
    const void *frames[MAX_CAMERAS];
    cudarl_latency_stats warm;
    int rc = -1;
    const char *what = "loading the policy";
    if (load_policy(b, n, &pi) != CUDARL_OK) goto fail;
    what = NULL; /* the library's messages name their function */
    if (cudarl_frames_create(pi, cams, n, &fo, &fr) != CUDARL_OK) goto fail;
    fprintf(stderr, CMD ": %d camera%s, %s %dx%d, %g Hz, %g s...\n", n, n == 1 ? "" : "s",
            b->o.format, b->o.width, b->o.height, b->o.rate, b->o.seconds);
    int64_t t = 0, k = 0;
    if (b->o.pipeline) {
        if (run_pipelined(b, fr, n, cap, &t, &k, &warm, r) != CUDARL_OK) goto fail;
        goto timed;
    }
    for (int w = 0; w < b->o.warmup; w++, t++) {
        for (int i = 0; i < n; i++) frames[i] = b->pool[(t + i) % pool];
        if (cudarl_frames_tick(fr, frames, b->actions, NULL, NULL) != CUDARL_OK) goto fail;
    }
    cudarl_frames_latency(fr, &warm);
    double start = cmd_now_s(), next = start;
    for (; want ? k < want : (k < cap && cmd_now_s() - start < b->o.seconds); k++, t++) {
        if (period > 0) {
            double now = cmd_now_s();
            if (now > next + 1e-4) r->late_periods++;
            else sleep_until(next);
            next += period;
            if (now > next) next = now; /* over a period behind: start over from now */
        }
        for (int i = 0; i < n; i++) frames[i] = b->pool[(t + i) % pool];
        double t0 = cmd_now_s();
        if (cudarl_frames_tick(fr, frames, b->actions, NULL, NULL) != CUDARL_OK) goto fail;
        b->times[k] = cmd_now_s() - t0;
    }
timed:
    r->ticks = t, r->timed_ticks = k;
    if (b->builtin && t > 0) {
        if (check_last_tick(b, fr, cams, n, t - 1) != 0) {
            what = "";
            goto fail;
        }
        r->checked = 1;
    }
    cudarl_frames_latency(fr, &r->lib);
    r->timed_misses = r->lib.deadline_misses - warm.deadline_misses;
    qsort(b->times, (size_t)k, sizeof *b->times, cmd_cmp_double);
    r->timed_p50 = k ? 1e3 * cmd_quantile(b->times, k, 0.5) : NAN;
    r->timed_p99 = k ? 1e3 * cmd_quantile(b->times, k, 0.99) : NAN;
    r->timed_max = k ? 1e3 * b->times[k - 1] : NAN;
    r->h2d_gbps = h2d_bandwidth(b, n);
    r->floor_ms = r->bytes_per_tick / (r->h2d_gbps * 1e9) * 1e3;
    r->upload_floor_ms = r->upload_per_tick / (r->h2d_gbps * 1e9) * 1e3;
    if (b->o.pipeline && reference_ticks(b, pi, cams, n, &fo, r) != 0) {
        what = "";
        goto fail;
    }
    r->ok = k > 0 && (period <= 0 || r->timed_p99 <= period * 1e3);
    rc = 0;
fail:
    if (rc && !(what && !*what)) /* "": printed already */
        fprintf(stderr, CMD ": %s%s%s\n", what ? what : "", what ? ": " : "",
                cudarl_last_error());
    cudarl_frames_free(fr);
    cudarl_policy_free(pi);
    return rc;
}

/* ---- output ------------------------------------------------------------------------------ */

static void print_run(const frames_bench *b, const frames_run *r) {
    printf("\n" CMD ": %s; %d camera%s, %s %dx%d from %s memory, %g Hz, policy %s on %s, %s\n",
           b->device_name, r->cameras, r->cameras == 1 ? "" : "s", b->o.format, b->o.width,
           b->o.height, SOURCE_NAMES[b->source], b->o.rate,
           b->builtin ? "nature-cnn (in memory)" : b->o.policy,
           b->kind == CUDARL_DEVICE_CUDA ? "cuda" : "cpu", cudarl_precision_name(b->o.precision));
    printf("ticks: %lld (%d warm-up, back to back, then %lld timed)\n", (long long)r->ticks,
           b->o.warmup, (long long)r->timed_ticks);
    printf("bytes per tick: %.0f (%.2f MB)\n", r->bytes_per_tick, r->bytes_per_tick / 1e6);
    printf("latency (cudarl_frames_latency, all %lld ticks): p50 %.3f ms, p99 %.3f ms, max %.3f "
           "ms; deadline %s: %lld misses\n", (long long)r->lib.count, r->lib.p50_us / 1e3,
           r->lib.p99_us / 1e3, r->lib.max_us / 1e3,
           r->lib.deadline_us > 0 ? "1 / rate" : "none", (long long)r->lib.deadline_misses);
    printf("latency (the %lld timed ticks): p50 %.3f ms, p99 %.3f ms, max %.3f ms; %lld deadline "
           "misses, %lld ticks began late\n", (long long)r->timed_ticks, r->timed_p50,
           r->timed_p99, r->timed_max, (long long)r->timed_misses, (long long)r->late_periods);
    if (r->checked)
        printf("the last tick's observations: equal to the CPU reference (cudarl_frame_convert)\n");
    if (isnan(r->h2d_gbps))
        printf("pinned host-to-device bandwidth: not measured (the policy is on the CPU)\n");
    else
        printf("pinned host-to-device bandwidth: %.2f GB/s; copy floor %.3f ms; timed p99 / "
               "floor: %.2fx\n", r->h2d_gbps, r->floor_ms, r->timed_p99 / r->floor_ms);
    if (!isnan(r->h2d_gbps) && r->upload_per_tick < r->bytes_per_tick) /* NAN: device frames */
        printf("uploaded per tick: %.0f bytes (%.2f MB: the bytes the conversion reads, NV12 into "
               "gray its Y planes); their copy floor %.3f ms; timed p99 / upload floor: %.2fx\n",
               r->upload_per_tick, r->upload_per_tick / 1e6, r->upload_floor_ms,
               r->timed_p99 / r->upload_floor_ms);
    if (b->o.pipeline) {
        const double sum = r->copy_ms + r->compute_ms;
        const double most = r->copy_ms > r->compute_ms ? r->copy_ms : r->compute_ms;
        printf("pipelined (submit t+1, then wait for t; back to back): period %.3f ms a tick "
               "(%.0f ticks/s); a tick's latency, submit to wait, as above\n", r->period_ms,
               1e3 / r->period_ms);
        printf("a tick one by one: %.3f ms; copy %.3f ms (the upload floor), compute %.3f ms (%s): "
               "sum %.3f ms, max %.3f ms (medians of %d)\n", r->one_by_one_ms, r->copy_ms,
               r->compute_ms, isnan(r->h2d_gbps) ? "the CPU's tick, nothing to copy"
                                                  : "a tick of device frames",
               sum, most, REF_TICKS);
        printf("period / max(copy, compute): %.2fx; period / sum: %.2fx; period / a tick one by "
               "one: %.2fx\n", r->period_ms / most, r->period_ms / sum,
               r->period_ms / r->one_by_one_ms);
    }
}


static void json_run(FILE *f, const frames_run *r) {
    fprintf(f, "{\"cameras\": %d, \"ticks\": %lld, \"timed_ticks\": %lld, \"bytes_per_tick\": ",
            r->cameras, (long long)r->ticks, (long long)r->timed_ticks);
    cmd_json_number(f, r->bytes_per_tick);
    fputs(", \"p50_ms\": ", f), cmd_json_number(f, r->lib.p50_us / 1e3);
    fputs(", \"p99_ms\": ", f), cmd_json_number(f, r->lib.p99_us / 1e3);
    fputs(", \"max_ms\": ", f), cmd_json_number(f, r->lib.max_us / 1e3);
    fprintf(f, ", \"deadline_misses\": %lld, \"timed_deadline_misses\": %lld, "
            "\"late_ticks\": %lld", (long long)r->lib.deadline_misses,
            (long long)r->timed_misses, (long long)r->late_periods);
    fputs(", \"timed_p50_ms\": ", f), cmd_json_number(f, r->timed_p50);
    fputs(", \"timed_p99_ms\": ", f), cmd_json_number(f, r->timed_p99);
    fputs(", \"timed_max_ms\": ", f), cmd_json_number(f, r->timed_max);
    fputs(", \"h2d_gbps\": ", f), cmd_json_number(f, r->h2d_gbps);
    fputs(", \"copy_floor_ms\": ", f), cmd_json_number(f, r->floor_ms);
    fputs(", \"p99_over_floor\": ", f), cmd_json_number(f, r->timed_p99 / r->floor_ms);
    fputs(", \"uploaded_bytes_per_tick\": ", f), cmd_json_number(f, r->upload_per_tick);
    fputs(", \"upload_floor_ms\": ", f), cmd_json_number(f, r->upload_floor_ms);
    fputs(", \"p99_over_upload_floor\": ", f),
        cmd_json_number(f, r->timed_p99 / r->upload_floor_ms);
    fputs(", \"period_ms\": ", f), cmd_json_number(f, r->period_ms);
    fputs(", \"one_by_one_ms\": ", f), cmd_json_number(f, r->one_by_one_ms);
    fputs(", \"copy_ms\": ", f), cmd_json_number(f, r->copy_ms);
    fputs(", \"compute_ms\": ", f), cmd_json_number(f, r->compute_ms);
    fprintf(f, ", \"within_period\": %s}", r->ok ? "true" : "false");
}

static int write_json(const frames_bench *b) {
    cudarl_output *out;
    FILE *f;
    if (cudarl_output_open(&out, b->o.json, "JSON file", &f) != CUDARL_OK) {
        fprintf(stderr, CMD ": %s\n", cudarl_last_error());
        return -1;
    }
    fprintf(f, "{\"bench\": \"frames\", \"runtime\": \"cudarl %s\", \"device\": ",
            CUDARL_VERSION_STRING);
    cmd_json_string(f, b->device_name);
    fprintf(f, ", \"policy_device\": \"%s\", \"format\": \"%s\", \"width\": %d, \"height\": %d, "
            "\"channels\": %d, \"source\": \"%s\", \"rate_hz\": ",
            b->kind == CUDARL_DEVICE_CUDA ? "cuda" : "cpu", b->o.format, b->o.width,
            b->o.height, b->o.channels, SOURCE_NAMES[b->source]);
    cmd_json_number(f, b->o.rate);
    fputs(", \"seconds\": ", f), cmd_json_number(f, b->o.seconds);
    fprintf(f, ", \"warmup\": %d, \"policy\": ", b->o.warmup);
    cmd_json_string(f, b->builtin ? "nature-cnn (in memory)" : b->o.policy);
    fprintf(f, ", \"precision\": \"%s\", \"pipeline\": %s",
            cudarl_precision_name(b->o.precision), b->o.pipeline ? "true" : "false");
    if (b->o.find_max) fprintf(f, ", \"find_max\": true, \"max_cameras_sustained\": %d", b->best);
    fputs(", \"runs\": [", f);
    for (int i = 0; i < b->nruns; i++) {
        fputs(i ? ",\n  " : "\n  ", f);
        json_run(f, &b->runs[i]);
    }
    fputs("]}\n", f);
    if (cudarl_output_commit(out) != CUDARL_OK) {
        fprintf(stderr, CMD ": %s\n", cudarl_last_error());
        return -1;
    }
    return 0;
}

/* ---- the command ------------------------------------------------------------------------- */

/* Checks what args_parse cannot; 0, or prints why and returns -1. */
static int validate(frames_bench *b, const arg_result *r) {
    frames_opts *o = &b->o;
    if (format_of(o->format, &b->format) != 0) {
        fprintf(stderr, CMD ": --format '%s' is not a pixel format; choose nv12, yuyv, rgb8, "
                        "bgr8 or gray8\n", o->format);
        return -1;
    }
    if ((b->format == CUDARL_PIXEL_NV12 || b->format == CUDARL_PIXEL_YUYV) && o->width % 2) {
        fprintf(stderr, CMD ": --width %d is odd; %s needs an even width (a U,V pair per two "
                        "pixels)\n", o->width, o->format);
        return -1;
    }
    if (b->format == CUDARL_PIXEL_NV12 && o->height % 2) {
        fprintf(stderr, CMD ": --height %d is odd; nv12 needs an even height (a U,V row per two "
                        "rows)\n", o->height);
        return -1;
    }
    if (o->channels == 2) {
        fprintf(stderr, CMD ": --channels 2: choose 1 (gray frames) or 3 (RGB)\n");
        return -1;
    }
    int s = -1;
    for (int i = 0; i < 4; i++)
        if (!strcmp(o->source, SOURCE_NAMES[i])) s = i;
    if (s < 0) {
        fprintf(stderr, CMD ": --source '%s' is not a memory; choose pageable, pinned, device or "
                        "auto\n", o->source);
        return -1;
    }
    b->source = (source_kind)s;
#ifndef CUDARL_WITH_CUDA
    if (b->source == SRC_PINNED || b->source == SRC_DEVICE) {
        fprintf(stderr, CMD ": --source %s needs the CUDA build of cudarl (this one is CPU "
                        "only); use --source pageable\n", o->source);
        return -1;
    }
#endif
    if (!o->policy[0]) {
        fprintf(stderr, CMD ": --policy is empty; pass a checkpoint or nature-cnn\n");
        return -1;
    }
    b->builtin = !strcmp(o->policy, "nature-cnn");
    if (o->find_max && o->rate <= 0) {
        fprintf(stderr, CMD ": --find-max needs a rate (its test is p99 <= 1 / rate); pass "
                        "--rate 30, say\n");
        return -1;
    }
    if (o->pipeline && (o->rate > 0 || o->find_max)) {
        fprintf(stderr, CMD ": --pipeline runs the ticks back to back (it measures the period "
                        "they reach): %s\n", o->find_max ? "drop --find-max" : "add --rate 0");
        return -1;
    }
    int mc = args_find(frames_specs, N_FRAMES_SPECS, "max-cameras");
    if (!o->find_max && r->set[mc]) {
        fprintf(stderr, CMD ": --max-cameras is --find-max's bound; add --find-max or drop it\n");
        return -1;
    }
    if (o->json[0] && cudarl_output_check(o->json, "JSON file") != CUDARL_OK) {
        fprintf(stderr, CMD ": --json: %s\n", cudarl_last_error());
        return -1;
    }
    return 0;
}

/* The device, weights and one host frame; 0, or -1 after printing why. */
static int setup(frames_bench *b) {
    b->kind = b->o.device;
    if (b->kind == CUDARL_DEVICE_AUTO)
        b->kind = cudarl_cuda_device_count() > 0 ? CUDARL_DEVICE_CUDA : CUDARL_DEVICE_CPU;
    if (b->o.device == CUDARL_DEVICE_CUDA || b->source == SRC_PINNED || b->source == SRC_DEVICE) {
        cudarl_ctx *probe = NULL; /* no GPU: fails here, not after the frames are written */
        cudarl_status st = cudarl_ctx_init(&probe, CUDARL_DEVICE_CUDA, 0);
        cudarl_ctx_free(probe);
        if (st != CUDARL_OK && b->o.device == CUDARL_DEVICE_CUDA) {
            fprintf(stderr, CMD ": %s\n", cudarl_last_error());
            return -1;
        }
        if (st != CUDARL_OK) {
            fprintf(stderr, CMD ": --source %s needs a GPU, and there is none usable here (%s); "
                    "use --source pageable\n", b->o.source, cudarl_last_error());
            return -1;
        }
    }
    if (b->source == SRC_AUTO)
        b->source = cudarl_cuda_device_count() > 0 ? SRC_PINNED : SRC_PAGEABLE;
#ifndef CUDARL_WITH_CUDA
    b->source = SRC_PAGEABLE;
#endif
    if (b->kind != CUDARL_DEVICE_CUDA ||
        cudarl_cuda_device_name(0, b->device_name, sizeof b->device_name) != CUDARL_OK)
        snprintf(b->device_name, sizeof b->device_name, "cpu");
    b->frame_bytes = bytes_of(b->format, b->o.width, b->o.height);
    b->scratch = malloc(b->frame_bytes);
    if (!b->scratch) {
        fprintf(stderr, CMD ": out of host memory for a frame (%zu bytes)\n", b->frame_bytes);
        return -1;
    }
    if (b->builtin) {
        b->net = b->o.channels == 3 ? NATURE_CNN_RGB : NATURE_CNN_GRAY;
        if (cudarl_network_init_params(b->net, 1, NULL, 0, &b->num_params) != CUDARL_OK ||
            !(b->params = malloc(b->num_params * sizeof(float))) ||
            cudarl_network_init_params(b->net, 1, b->params, b->num_params,
                                       &b->num_params) != CUDARL_OK) {
            fprintf(stderr, CMD ": the in-memory policy: %s\n",
                    b->params ? cudarl_last_error() : "out of host memory");
            return -1;
        }
    }
    return 0;
}

static void teardown(frames_bench *b) {
    for (int i = 0; i < b->pool_n; i++) free_frame(b, b->pool[i]);
    free(b->pool), free(b->scratch), free(b->params), free(b->times);
}

/* --find-max: 1, 2, 4, ... cameras until one run's p99 exceeds the period or --max-cameras,
 * then bisection between the last that held and the first that did not. */
static int find_max(frames_bench *b) {
    int lo = 0, hi = -1; /* lo held (0: none yet), hi failed (-1: none yet) */
    for (int n = 1;; n = n * 2 > b->o.max_cameras ? b->o.max_cameras : n * 2) {
        frames_run *r = &b->runs[b->nruns];
        if (run_cameras(b, n, r) != 0) return -1;
        b->nruns++;
        fprintf(stderr, CMD ": %d cameras: timed p99 %.3f ms: %s\n", n, r->timed_p99,
                r->ok ? "within the period" : "over it");
        if (!r->ok) {
            hi = n;
            break;
        }
        lo = n;
        if (n == b->o.max_cameras) break;
    }
    while (hi > 0 && hi - lo > 1 && b->nruns < 64) {
        int n = lo + (hi - lo) / 2;
        frames_run *r = &b->runs[b->nruns];
        if (run_cameras(b, n, r) != 0) return -1;
        b->nruns++;
        fprintf(stderr, CMD ": %d cameras: timed p99 %.3f ms: %s\n", n, r->timed_p99,
                r->ok ? "within the period" : "over it");
        if (r->ok) lo = n;
        else hi = n;
    }
    b->best = lo;
    return 0;
}

int cmd_bench_frames(int argc, char **argv) {
    frames_bench *b = calloc(1, sizeof *b);
    if (!b) {
        fprintf(stderr, CMD ": out of host memory\n");
        return EXIT_FAILURE;
    }
    b->o = (frames_opts){.cameras = 4, .width = 3840, .height = 2160, .channels = 1,
                         .warmup = 10, .max_cameras = 64, .rate = 30, .seconds = 5,
                         .device = CUDARL_DEVICE_AUTO, .precision = CUDARL_PRECISION_FP32,
                         .format = "nv12", .source = "auto",
                         .policy = "nature-cnn"};
    if (cmd_wants_help(argc, argv)) {
        printf("usage: cudarl bench frames [flags]: camera frames to a pixel policy's actions "
               "(cudarl_frames_tick),\nN synthetic cameras of moving test patterns at a fixed "
               "rate: the tick's latency p50, p99, max\nand deadline misses, the frames' bytes "
               "per tick, the pinned host-to-device bandwidth and the\ncopy floor; --find-max: "
               "the most cameras whose p99 stays within 1 / rate; --pipeline: ticks as\n"
               "submit / wait, one in flight ahead, their period against copy and compute\n"
               "\nflags:\n");
        args_print_help(frames_specs, N_FRAMES_SPECS, &b->o, ARGS_CLI_ONLY);
        free(b);
        return 0;
    }
    arg_result r;
    if (args_parse(frames_specs, N_FRAMES_SPECS, &b->o, argc, argv, "bench frames",
                   ARGS_CLI_ONLY, 0, &r) != 0 ||
        validate(b, &r) != 0) {
        free(b);
        return EXIT_USAGE;
    }
    if (!getenv("CUDARL_LOG")) cudarl_log_set_level(CUDARL_LOG_WARN);
    int rc = setup(b) != 0 ? EXIT_FAILURE : 0;
    if (!rc && b->o.find_max) {
        if (find_max(b) != 0) rc = EXIT_FAILURE;
    } else if (!rc) {
        if (run_cameras(b, b->o.cameras, &b->runs[0]) != 0) rc = EXIT_FAILURE;
        else b->nruns = 1;
    }
    for (int i = 0; i < b->nruns; i++) print_run(b, &b->runs[i]);
    if (!rc && b->o.find_max)
        printf("\nthe most %dx%d %s cameras sustained at %g Hz with p99 <= %.3f ms: %d%s\n",
               b->o.width, b->o.height, b->o.format, b->o.rate, 1e3 / b->o.rate, b->best,
               b->best == b->o.max_cameras ? " (--max-cameras: raise it to look further)" : "");
    if (!rc && b->o.json[0] && write_json(b) != 0) rc = EXIT_FAILURE;
    teardown(b);
    free(b);
    return rc;
}
