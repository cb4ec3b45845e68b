/* cudarl bench infer (and the dispatch of `cudarl bench frames`, tools/bench_frames.c): the
 * deployment latency table. Builds a pixel policy in memory - input
 * 4x256x256 uint8 scaled by 1/255, conv 32@8x8/4, 64@4x4/2, 64@3x3/1 (ReLU after each), flatten,
 * FC 512 ReLU, CleanRL ppo_atari heads actor FC 7 and critic FC 1, PyTorch's default init
 * (uniform in +-1/sqrt(fan_in)) from a fixed seed - and runs it through the policy runtime
 * (cudarl_policy_load_network: the same loader, plan and graphs as cudarl_policy_load) at batch
 * 128 and batch 1, for every precision and conv engine the runtime runs here (fp32 on each engine
 * built, tf32 on gemm, bf16 and fp16 on igemm, the half-precision implicit GEMM); a precision it
 * refuses (every one but fp32 on the CPU) is listed under the table with the runtime's reason.
 *
 * Columns, per row (the peer script bench/peers/infer_peers.py measures the same ones):
 *   GPU time     one launch of the forward's CUDA graph (observations already on the device,
 *                uint8 -> float inside, actions and outputs left there) between two CUDA events
 *                (cudarl_policy_time_forward); median and p99 of --iters launches
 *   end to end   cudarl_policy_act from host uint8 observations (ordinary malloc'd memory) to
 *                host int32 actions, CLOCK_MONOTONIC around each call; median and p99
 *   end to end, pinned input (CUDA rows; a table of its own below the main one): the same
 *                calls with the observations already in the policy's own pinned buffer
 *                (cudarl_policy_obs_buffer), where a control loop's sensor code can write them:
 *                act() then skips its copy into its staging
 *   obs/s        batch x calls / the calls' total end-to-end time (back to back)
 *   memory       what the runtime allocated on the device: its arena (weights: fp32, or at
 *                bf16 / fp16 only their converted copy; input, forward cache, conv workspace,
 *                outputs) plus its context's cuBLAS workspace and scratch (cudarl_policy_info
 *                device_bytes + context_bytes); the host arena on the CPU
 *   max rel err  max |y - y_ref| over the row's logits / max |y_ref| over the logits of all 128
 *                observations, and likewise for the values (the larger of the two), y_ref the
 *                fp32 forward of the CPU runtime (the specification) on the
 *                same weights and observations (batch 1: the first of them)
 * Exit codes as the other commands: 0 done, 1 failed, 2 bad usage. */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"
#include "cmd.h"
#include "cudarl.h"

#define HW 256
#define ACTIONS 7
#define OBS_BYTES (4 * HW * HW) /* one observation */
#define MAX_BATCH 128
#define MAX_ROWS 16
#define LABEL "bench infer (in memory)"

/* The network above in the text form of a checkpoint's "network" metadata. */
static const char NETWORK[] =
    "{\"format\":\"cudarl-convnet\",\"version\":1,\"name\":\"custom\","
    "\"input\":{\"shape\":[4,256,256],\"dtype\":\"u8\",\"scale\":\"1/255\"},"
    "\"layers\":[{\"type\":\"conv\",\"out\":32,\"kernel\":[8,8],\"stride\":4,\"pad\":0},"
    "{\"type\":\"relu\"},{\"type\":\"conv\",\"out\":64,\"kernel\":[4,4],\"stride\":2,\"pad\":0},"
    "{\"type\":\"relu\"},{\"type\":\"conv\",\"out\":64,\"kernel\":[3,3],\"stride\":1,\"pad\":0},"
    "{\"type\":\"relu\"},{\"type\":\"flatten\"},{\"type\":\"linear\",\"out\":512},"
    "{\"type\":\"relu\"}],\"heads\":{\"type\":\"ppo\",\"actions\":7}}";

/* Returns a status other than CUDARL_OK from the calling function. */
#define TRY(expr)                                  \
    do {                                           \
        cudarl_status try_s_ = (expr);             \
        if (try_s_ != CUDARL_OK) return try_s_;    \
    } while (0)

typedef struct infer_opts {
    int iters, warmup, batch;
    cudarl_device_kind device;
    char engine[16];
    char json[PATH_MAX];
} infer_opts;

static const arg_spec infer_specs[] = {
    {"iters", ARG_INT, offsetof(infer_opts, iters), 0, 0, 1000000, "timed calls per row (0: 1000 on a GPU, 10 on the CPU)"},
    {"warmup", ARG_INT, offsetof(infer_opts, warmup), 0, -1, 1000000, "untimed calls before them (-1: 100 on a GPU, 2 on the CPU)"},
    {"device", ARG_DEVICE, offsetof(infer_opts, device), 0, 0, 0, "cuda, cpu or auto (the GPU if there is one)"},
    {"engine", ARG_STR, offsetof(infer_opts, engine), 16, 0, 0, "conv engine on CUDA: gemm, cudnn, or all (each one built)"},
    {"json", ARG_STR, offsetof(infer_opts, json), PATH_MAX, 0, 0, "also write the rows to this file as JSON"},
    {"batch", ARG_INT, offsetof(infer_opts, batch), 0, 0, MAX_BATCH, "only this batch size's rows (0: the table's, 128 and 1)"},
};
#define N_INFER_SPECS ((int)(sizeof infer_specs / sizeof infer_specs[0]))

/* One row of the table. Times in ms; NAN where a column does not apply (GPU time on the CPU). */
typedef struct infer_row {
    char variant[16];  /* the conv engine ("gemm", "cudnn", "igemm") or "cpu" */
    cudarl_precision precision;
    int batch;
    double gpu_p50, gpu_p99, e2e_p50, e2e_p99, obs_per_s;
    double pin_p50, pin_p99; /* end to end from the policy's pinned buffer (NAN on the CPU) */
    size_t mem_bytes;
    double max_rel_err;
} infer_row;

/* A precision the runtime refused here, and why. */
typedef struct infer_skip {
    cudarl_precision precision;
    char why[512];
} infer_skip;

/* What every row shares. */
typedef struct infer_bench {
    infer_opts o;
    cudarl_device_kind kind;  /* where the rows run (AUTO resolved) */
    size_t num_params;
    float *params;            /* (host) num_params */
    uint8_t *obs;             /* (host) MAX_BATCH observations */
    float *ref_logits;        /* (host) (MAX_BATCH, ACTIONS) the CPU fp32 forward */
    float *ref_values;        /* (host) (MAX_BATCH) */
    double *times;            /* (host) iters seconds */
    float *gpu_ms;            /* (host) iters */
    infer_row rows[MAX_ROWS];
    int nrows;
    infer_skip skips[CUDARL_PRECISION_COUNT];
    int nskips;
    char device_name[256];
} infer_bench;

/* ---- measuring --------------------------------------------------------------------------- */

double cmd_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int cmd_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double cmd_quantile(const double *v, int64_t n, double q) {
    int64_t k = (int64_t)ceil(q * (double)n) - 1;
    return v[k < 0 ? 0 : k >= n ? n - 1 : k];
}

/* max |got - want| over n values / max |want| over all `all` (>= n) reference values: the scale
 * of the whole reference batch, so that batch 1's one value is not its own scale. */
static double rel_err(const float *got, const float *want, int n, int all) {
    double e = 0, m = 1e-30;
    for (int i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        e = isnan(d) ? INFINITY : fmax(e, d);
    }
    /* `if (a > m)`, not fmax(): GCC 12.2 for aarch64 crashes (an internal compiler error) vectorizing
     * an fmax reduction over floats widened to double; the same for every input, NaN left out. */
    for (int i = 0; i < all; i++) {
        double a = fabs((double)want[i]);
        if (a > m) m = a;
    }
    return e / m;
}

static cudarl_status load(const infer_bench *b, cudarl_device_kind dev, cudarl_precision prec,
                          cudarl_conv_engine engine, int batch, cudarl_policy **p) {
    cudarl_policy_options o;
    cudarl_policy_options_default(&o);
    o.device = dev, o.precision = prec, o.max_batch = batch;
    return cudarl_policy_load_network(NETWORK, b->params, b->num_params, LABEL, engine, &o, p);
}

/* y_ref: the CPU runtime's fp32 forward of all MAX_BATCH observations. */
static int reference(infer_bench *b) {
    fprintf(stderr, "cudarl bench infer: the fp32 reference on the CPU (%d observations)...\n",
            MAX_BATCH);
    cudarl_policy *p = NULL;
    int32_t actions[MAX_BATCH];
    cudarl_status s = load(b, CUDARL_DEVICE_CPU, CUDARL_PRECISION_FP32, CUDARL_CONV_ENGINE_AUTO,
                           MAX_BATCH, &p);
    if (s == CUDARL_OK)
        s = cudarl_policy_act(p, b->obs, CUDARL_OBS_U8, MAX_BATCH, actions, b->ref_values,
                              b->ref_logits);
    cudarl_policy_free(p);
    if (s != CUDARL_OK) {
        fprintf(stderr, "cudarl bench infer: the CPU reference failed: %s\n", cudarl_last_error());
        return -1;
    }
    return 0;
}

/* Warm-up calls, then iters timed calls of act() on obs (host memory): p50 and p99 in ms, and
 * the calls' total in s. */
static cudarl_status time_acts(infer_bench *b, cudarl_policy *p, const void *obs, int batch,
                               double *p50, double *p99, double *total) {
    int32_t actions[MAX_BATCH];
    for (int i = 0; i < b->o.warmup; i++)
        TRY(cudarl_policy_act(p, obs, CUDARL_OBS_U8, batch, actions, NULL, NULL));
    *total = 0;
    for (int i = 0; i < b->o.iters; i++) {
        double t0 = cmd_now_s();
        TRY(cudarl_policy_act(p, obs, CUDARL_OBS_U8, batch, actions, NULL, NULL));
        b->times[i] = cmd_now_s() - t0;
        *total += b->times[i];
    }
    qsort(b->times, (size_t)b->o.iters, sizeof *b->times, cmd_cmp_double);
    *p50 = 1e3 * cmd_quantile(b->times, b->o.iters, 0.5);
    *p99 = 1e3 * cmd_quantile(b->times, b->o.iters, 0.99);
    return CUDARL_OK;
}

/* End to end from host memory of ours (the observations copied by act()). */
static cudarl_status time_e2e(infer_bench *b, cudarl_policy *p, int batch, infer_row *row) {
    double total;
    TRY(time_acts(b, p, b->obs, batch, &row->e2e_p50, &row->e2e_p99, &total));
    row->obs_per_s = (double)batch * b->o.iters / total;
    return CUDARL_OK;
}

/* End to end from the policy's own pinned buffer (cudarl_policy_obs_buffer; CUDA only, NAN
 * elsewhere): the observations are written there once, as a sensor would each step. */
static cudarl_status time_e2e_pinned(infer_bench *b, cudarl_policy *p, int batch, infer_row *row) {
    row->pin_p50 = row->pin_p99 = NAN;
    if (b->kind != CUDARL_DEVICE_CUDA) return CUDARL_OK;
    void *buf = NULL;
    size_t bytes = 0, need = (size_t)batch * OBS_BYTES;
    TRY(cudarl_policy_obs_buffer(p, &buf, &bytes));
    if (bytes < need) { /* it holds max_batch (= batch) rows: a bug in cudarl if not */
        fprintf(stderr, "cudarl bench infer: the policy's observation buffer holds %zu bytes, "
                        "not the %zu of %d observations\n", bytes, need, batch);
        abort();
    }
    memcpy(buf, b->obs, need);
    double total;
    return time_acts(b, p, buf, batch, &row->pin_p50, &row->pin_p99, &total);
}

/* GPU time of the forward graph (CUDA only; NAN elsewhere). */
static cudarl_status time_gpu(infer_bench *b, cudarl_policy *p, int batch, infer_row *row) {
    row->gpu_p50 = row->gpu_p99 = NAN;
    if (b->kind != CUDARL_DEVICE_CUDA) return CUDARL_OK;
    TRY(cudarl_policy_time_forward(p, batch, b->o.iters, b->gpu_ms));
    for (int i = 0; i < b->o.iters; i++) b->times[i] = b->gpu_ms[i];
    qsort(b->times, (size_t)b->o.iters, sizeof *b->times, cmd_cmp_double);
    row->gpu_p50 = cmd_quantile(b->times, b->o.iters, 0.5);
    row->gpu_p99 = cmd_quantile(b->times, b->o.iters, 0.99);
    return CUDARL_OK;
}

/* The outputs of the first `batch` observations against the reference. */
static cudarl_status error_vs_ref(const infer_bench *b, cudarl_policy *p, int batch,
                                  infer_row *row) {
    int32_t actions[MAX_BATCH];
    float logits[MAX_BATCH * ACTIONS], values[MAX_BATCH];
    TRY(cudarl_policy_act(p, b->obs, CUDARL_OBS_U8, batch, actions, values, logits));
    row->max_rel_err = fmax(rel_err(logits, b->ref_logits, batch * ACTIONS, MAX_BATCH * ACTIONS),
                            rel_err(values, b->ref_values, batch, MAX_BATCH));
    return CUDARL_OK;
}

static void add_skip(infer_bench *b, cudarl_precision prec) {
    for (int i = 0; i < b->nskips; i++)
        if (b->skips[i].precision == prec) return;
    infer_skip *s = &b->skips[b->nskips++];
    s->precision = prec;
    snprintf(s->why, sizeof s->why, "%s", cudarl_last_error());
}

/* One row: load, measure, free. 0 done, 1 refused (a precision other than fp32: added to the
 * skips), -1 failed. */
static int run_row(infer_bench *b, cudarl_precision prec, cudarl_conv_engine engine, int batch) {
    cudarl_policy *p = NULL;
    cudarl_status s = load(b, b->o.device, prec, engine, batch, &p);
    if (s == CUDARL_ERR_UNSUPPORTED && prec != CUDARL_PRECISION_FP32) { /* fp32 always runs */
        add_skip(b, prec);
        return 1;
    }
    infer_row *row = &b->rows[b->nrows];
    memset(row, 0, sizeof *row);
    row->precision = prec, row->batch = batch;
    if (s == CUDARL_OK) {
        cudarl_policy_info info;
        cudarl_policy_get_info(p, &info);
        b->kind = info.device;
        row->mem_bytes = info.device == CUDARL_DEVICE_CUDA ? info.device_bytes + info.context_bytes
                                                           : info.host_bytes;
        /* the conv engine on CUDA ("gemm", "cudnn", "igemm"), or "cpu" */
        snprintf(row->variant, sizeof row->variant, "%s", cudarl_policy_conv_engine(p));
        fprintf(stderr, "cudarl bench infer: %s %s, batch %d...\n", row->variant,
                cudarl_precision_name(prec), batch);
        s = time_e2e(b, p, batch, row);
    }
    if (s == CUDARL_OK) s = time_e2e_pinned(b, p, batch, row);
    if (s == CUDARL_OK) s = time_gpu(b, p, batch, row);
    if (s == CUDARL_OK) s = error_vs_ref(b, p, batch, row);
    cudarl_policy_free(p);
    if (s != CUDARL_OK) {
        fprintf(stderr, "cudarl bench infer: %s, batch %d: %s\n", cudarl_precision_name(prec),
                batch, cudarl_last_error());
        return -1;
    }
    b->nrows++;
    return 0;
}

/* ---- output ------------------------------------------------------------------------------ */

static void device_name(infer_bench *b) {
    if (b->kind != CUDARL_DEVICE_CUDA ||
        cudarl_cuda_device_name(0, b->device_name, sizeof b->device_name) != CUDARL_OK)
        snprintf(b->device_name, sizeof b->device_name, "cpu");
}

/* "1.234" or "-" for NAN, into buf. */
static const char *ms_text(char *buf, size_t cap, double ms) {
    if (isnan(ms)) snprintf(buf, cap, "-");
    else snprintf(buf, cap, "%.4f", ms);
    return buf;
}

static void print_table(const infer_bench *b) {
    printf("\ncudarl bench infer: %s; input 4x%dx%d uint8 / 255, conv 32@8x8/4, 64@4x4/2, "
           "64@3x3/1, FC 512, actor %d + critic 1 (%zu parameters); %d timed calls per row after "
           "%d\n\n", b->device_name, HW, HW, ACTIONS, b->num_params, b->o.iters, b->o.warmup);
    printf("| runtime | precision | batch | GPU time p50 ms | GPU time p99 ms | end to end p50 ms "
           "| end to end p99 ms | obs/s | %s memory MiB | max rel. error vs fp32 |\n"
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
           b->kind == CUDARL_DEVICE_CUDA ? "peak device" : "host");
    for (int i = 0; i < b->nrows; i++) {
        const infer_row *r = &b->rows[i];
        char g50[24], g99[24];
        printf("| cudarl (%s) | %s | %d | %s | %s | %.4f | %.4f | %.0f | %.1f | %.2e |\n",
               r->variant, cudarl_precision_name(r->precision), r->batch,
               ms_text(g50, sizeof g50, r->gpu_p50), ms_text(g99, sizeof g99, r->gpu_p99),
               r->e2e_p50, r->e2e_p99, r->obs_per_s, (double)r->mem_bytes / 1048576.0,
               r->max_rel_err);
    }
    printf("\nGPU time: the forward graph (observations on the device), CUDA events; end to end: "
           "act() from host uint8\nobservations to host actions; memory: the runtime's arena and "
           "its context's cuBLAS workspace;\nerror: max |y - y_ref| / max |y_ref| of the "
           "128 observations, logits and values, y_ref the CPU fp32 forward.\n");
    if (b->kind == CUDARL_DEVICE_CUDA) {
        printf("\nEnd to end with the observations already in the policy's pinned buffer "
               "(cudarl_policy_obs_buffer: act() skips its copy):\n\n| runtime | precision | "
               "batch | end to end p50 ms | end to end p99 ms | p50 against the copy |\n"
               "|---|---|---:|---:|---:|---:|\n");
        for (int i = 0; i < b->nrows; i++) {
            const infer_row *r = &b->rows[i];
            printf("| cudarl (%s) | %s | %d | %.4f | %.4f | %.2fx |\n", r->variant,
                   cudarl_precision_name(r->precision), r->batch, r->pin_p50, r->pin_p99,
                   r->pin_p50 / r->e2e_p50);
        }
    }
    for (int i = 0; i < b->nskips; i++)
        printf("not run: %s: %s\n", cudarl_precision_name(b->skips[i].precision),
               b->skips[i].why);
}

/* s as a JSON string (quotes, backslashes and control characters escaped). */
void cmd_json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

/* A number, or null for NAN. */
void cmd_json_number(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, "%.9g", v);
    else fputs("null", f);
}

/* Writes the rows to --json (cudarl_output: a temp file renamed over it, none left on failure);
 * 0, or prints why and returns -1. */
static int write_json(const infer_bench *b) {
    cudarl_output *out;
    FILE *f;
    if (cudarl_output_open(&out, b->o.json, "JSON file", &f) != CUDARL_OK) {
        fprintf(stderr, "cudarl bench infer: %s\n", cudarl_last_error());
        return -1;
    }
    fprintf(f, "{\"bench\": \"infer\", \"runtime\": \"cudarl %s\", \"device\": ",
            CUDARL_VERSION_STRING);
    cmd_json_string(f, b->device_name);
    fprintf(f, ", \"input\": [4, %d, %d], \"actions\": %d, \"params\": %zu, \"iters\": %d, "
            "\"warmup\": %d, \"rows\": [", HW, HW, ACTIONS, b->num_params, b->o.iters,
            b->o.warmup);
    for (int i = 0; i < b->nrows; i++) {
        const infer_row *r = &b->rows[i];
        fprintf(f, "%s\n  {\"name\": \"cudarl (%s)\", \"runtime\": \"cudarl\", \"variant\": "
                "\"%s\", \"precision\": \"%s\", \"batch\": %d, \"gpu_ms_p50\": ", i ? "," : "",
                r->variant, r->variant, cudarl_precision_name(r->precision), r->batch);
        cmd_json_number(f, r->gpu_p50);
        fputs(", \"gpu_ms_p99\": ", f), cmd_json_number(f, r->gpu_p99);
        fputs(", \"e2e_ms_p50\": ", f), cmd_json_number(f, r->e2e_p50);
        fputs(", \"e2e_ms_p99\": ", f), cmd_json_number(f, r->e2e_p99);
        fputs(", \"e2e_pinned_ms_p50\": ", f), cmd_json_number(f, r->pin_p50);
        fputs(", \"e2e_pinned_ms_p99\": ", f), cmd_json_number(f, r->pin_p99);
        fputs(", \"obs_per_s\": ", f), cmd_json_number(f, r->obs_per_s);
        fprintf(f, ", \"peak_mem_bytes\": %zu, \"max_rel_err\": ", r->mem_bytes);
        cmd_json_number(f, r->max_rel_err);
        fputc('}', f);
    }
    fputs("],\n \"skipped\": [", f);
    for (int i = 0; i < b->nskips; i++) {
        fprintf(f, "%s{\"precision\": \"%s\", \"why\": ", i ? ", " : "",
                cudarl_precision_name(b->skips[i].precision));
        cmd_json_string(f, b->skips[i].why);
        fputc('}', f);
    }
    fputs("]}\n", f);
    if (cudarl_output_commit(out) != CUDARL_OK) {
        fprintf(stderr, "cudarl bench infer: %s\n", cudarl_last_error());
        return -1;
    }
    return 0;
}

/* ---- the command ------------------------------------------------------------------------- */

/* Engines of the --engine value into e (n of them); -1 for an unknown or unbuilt one. */
static int engines_of(const char *v, cudarl_conv_engine *e) {
    const int cudnn = cudarl_conv_engine_built(CUDARL_CONV_ENGINE_CUDNN);
    if (!strcmp(v, "gemm")) return e[0] = CUDARL_CONV_ENGINE_GEMM, 1;
    if (!strcmp(v, "cudnn") && cudnn) return e[0] = CUDARL_CONV_ENGINE_CUDNN, 1;
    if (!strcmp(v, "all")) {
        e[0] = CUDARL_CONV_ENGINE_GEMM, e[1] = CUDARL_CONV_ENGINE_CUDNN;
        return 1 + cudnn;
    }
    fprintf(stderr, "cudarl bench infer: --engine '%s' is not %s; choose gemm%s or all\n", v,
            !strcmp(v, "cudnn") ? "in this build (cuDNN was not found when cudarl was "
                                  "configured)" : "an engine",
            cudnn ? ", cudnn" : "");
    return -1;
}

/* The device the rows run on (AUTO: the GPU if there is one), for the defaults. */
static cudarl_device_kind resolve_device(cudarl_device_kind d) {
    if (d != CUDARL_DEVICE_AUTO) return d;
    return cudarl_cuda_device_count() > 0 ? CUDARL_DEVICE_CUDA : CUDARL_DEVICE_CPU;
}

/* Buffers, weights, observations and the reference. */
static int setup(infer_bench *b) {
    if (cudarl_network_init_params(NETWORK, 1, NULL, 0, &b->num_params) != CUDARL_OK) {
        fprintf(stderr, "cudarl bench infer: %s\n", cudarl_last_error());
        return -1;
    }
    size_t obs_bytes = (size_t)MAX_BATCH * OBS_BYTES;
    b->params = malloc(b->num_params * sizeof(float));
    b->obs = malloc(obs_bytes);
    b->ref_logits = malloc((size_t)MAX_BATCH * ACTIONS * sizeof(float));
    b->ref_values = malloc((size_t)MAX_BATCH * sizeof(float));
    b->times = malloc((size_t)b->o.iters * sizeof(double));
    b->gpu_ms = malloc((size_t)b->o.iters * sizeof(float));
    if (!b->params || !b->obs || !b->ref_logits || !b->ref_values || !b->times || !b->gpu_ms) {
        fprintf(stderr, "cudarl bench infer: out of host memory\n");
        return -1;
    }
    /* weights from Philox stream 0 of seed 1, observations the low bytes of stream 0 of seed 2 */
    cudarl_network_init_params(NETWORK, 1, b->params, b->num_params, &b->num_params);
    uint32_t words[4096];
    for (size_t i = 0; i < obs_bytes; i += 4096) {
        size_t n = obs_bytes - i < 4096 ? obs_bytes - i : 4096;
        cudarl_random_u32(2, 0, i, words, n);
        for (size_t k = 0; k < n; k++) b->obs[i + k] = (uint8_t)(words[k] & 255u);
    }
    return reference(b);
}

static void teardown(infer_bench *b) {
    free(b->params), free(b->obs), free(b->ref_logits), free(b->ref_values), free(b->times);
    free(b->gpu_ms);
}

static int cmd_infer(int argc, char **argv) {
    infer_bench *b = calloc(1, sizeof *b);
    if (!b) {
        fprintf(stderr, "cudarl bench infer: out of host memory\n");
        return EXIT_FAILURE;
    }
    b->o = (infer_opts){0, -1, 0, CUDARL_DEVICE_AUTO, "all", ""};
    if (cmd_wants_help(argc, argv)) {
        printf("usage: cudarl bench infer [flags]: how fast a deployed pixel policy acts "
               "(cudarl_policy_act):\na network built in memory with random weights (4x256x256 "
               "uint8, 3 convs, FC 512,\n7 actions + value), at batch 128 and 1, per precision "
               "and conv engine\n\nflags:\n");
        args_print_help(infer_specs, N_INFER_SPECS, &b->o, ARGS_CLI_ONLY);
        free(b);
        return 0;
    }
    arg_result r;
    cudarl_conv_engine engines[2];
    int nengines = 0, rc = 0;
    if (args_parse(infer_specs, N_INFER_SPECS, &b->o, argc, argv, "bench infer", ARGS_CLI_ONLY, 0,
                   &r) != 0 ||
        (nengines = engines_of(b->o.engine, engines)) < 0) {
        free(b);
        return EXIT_USAGE;
    }
    /* a path that cannot be written fails now, not after the benchmark */
    if (b->o.json[0] && cudarl_output_check(b->o.json, "JSON file") != CUDARL_OK) {
        fprintf(stderr, "cudarl bench infer: --json: %s\n", cudarl_last_error());
        free(b);
        return EXIT_USAGE;
    }
    if (!getenv("CUDARL_LOG")) cudarl_log_set_level(CUDARL_LOG_WARN); /* no per-load info lines */
    b->kind = resolve_device(b->o.device);
    int gpu = b->kind == CUDARL_DEVICE_CUDA;
    if (!b->o.iters) b->o.iters = gpu ? 1000 : 10;
    if (b->o.warmup < 0) b->o.warmup = gpu ? 100 : 2;
    if (!gpu) nengines = 1; /* the CPU has one convolution */
    cudarl_ctx *probe = NULL; /* --device cuda without a GPU fails here, not after setup */
    if (b->o.device == CUDARL_DEVICE_CUDA && cudarl_ctx_init(&probe, b->o.device, 0) != CUDARL_OK) {
        fprintf(stderr, "cudarl bench infer: %s\n", cudarl_last_error());
        rc = EXIT_FAILURE;
    }
    cudarl_ctx_free(probe);
    if (!rc && setup(b) != 0) rc = EXIT_FAILURE;
    int batches[2] = {MAX_BATCH, 1}, nbatches = 2;
    if (b->o.batch) batches[0] = b->o.batch, nbatches = 1;
    for (int bi = 0; bi < nbatches && !rc; bi++)
        for (int pr = 0; pr < CUDARL_PRECISION_COUNT && !rc; pr++)
            for (int e = 0; e < nengines && !rc; e++) {
                int k = run_row(b, (cudarl_precision)pr, engines[e], batches[bi]);
                if (k < 0) rc = EXIT_FAILURE;
                /* one engine each: TF32 runs on gemm, BF16 and FP16 on igemm */
                if (k != 0 || pr != CUDARL_PRECISION_FP32) break;
            }
    if (!rc) {
        device_name(b);
        print_table(b);
        if (b->o.json[0] && write_json(b) != 0) rc = EXIT_FAILURE;
    }
    teardown(b);
    free(b);
    return rc;
}

int cmd_bench(int argc, char **argv) {
    if (argc >= 1 && !strcmp(argv[0], "infer")) return cmd_infer(argc - 1, argv + 1);
    if (argc >= 1 && !strcmp(argv[0], "frames")) return cmd_bench_frames(argc - 1, argv + 1);
    if (argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
        printf("usage: cudarl bench infer [flags]    how fast a deployed policy acts (cudarl "
               "bench infer --help)\n"
               "       cudarl bench frames [flags]   camera frames to actions "
               "(cudarl bench frames --help)\n");
        return 0;
    }
    if (argc)
        fprintf(stderr, "cudarl bench: unknown benchmark '%s'; benchmarks: infer, frames "
                        "(cudarl bench BENCHMARK --help)\n", argv[0]);
    else
        fprintf(stderr, "cudarl bench: which benchmark? usage: cudarl bench infer|frames "
                        "[flags]\n");
    return EXIT_USAGE;
}
