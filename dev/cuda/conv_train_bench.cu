// The training convolutions of the Nature-CNN, every engine we could run them on, per layer and
// pass, in one run (issue 26: which engine the bf16 update should use, chosen by measurement).
//
// Layers (pad 0): conv1 4->32 8x8/4 on 84x84 (-> 20x20), conv2 32->64 4x4/2 on 20x20 (-> 9x9),
// conv3 64->64 3x3/1 on 9x9 (-> 7x7), at batch 16,384 (a minibatch of the bf16 PPO update,
// bench/RESULTS.md "Pixels at scale") and 4,096. Passes: forward, backward data (dgrad; not for
// conv1, whose input is the observation) and backward filter (wgrad).
//
// What runs, per batch and layer, in this order (the most wanted first, so that a run cut short
// by --deadline still answers the main question):
//   1. cuDNN, bf16 tensors in NHWC (x, y and the filter, KRSC), CUDNN_TENSOR_OP_MATH, compute
//      type float: every candidate cudnnGetConvolution{Forward,BackwardData,BackwardFilter}
//      Algorithm_v7 lists for the pass (it lists each algorithm with its determinism flag and
//      math type, and the ones cuDNN does not support here with their status), each timed here:
//      2 untimed calls, then the median of --reps samples (fewer for calls over 10 ms), each
//      between two CUDA events on the handle's stream: one call, or for calls under 1 ms up to
//      20 back to back (about 1 ms), so that the host's enqueueing hides behind the GPU's work
//      as in a captured graph. Algorithms whose workspace query fails or whose workspace
//      exceeds --ws-cap-mb are listed as skipped, not run. (This is cuDNN's legacy API, which
//      maps its algorithm ids onto a subset of cuDNN's engines; PyTorch reaches the others
//      through the graph API: run_conv_train_bench.sh runs conv_train_torch.py on the same
//      shapes after this program, for that comparison.)
//   2. our op table's conv2d ops on the GEMM engine (ops/conv2d.h, src/ops/cuda/conv2d_gemm.cu:
//      im2col + cuBLAS, fp32 NCHW activations) with bf16 products, then fp32: the forward (bias
//      and ReLU fused, the im2col matrix left in the keep buffer), the backward with dx (dgrad +
//      wgrad + db, from the kept im2col) and without dx (wgrad + db): the op does both gradients
//      in one call, so its dgrad is the difference of the two (marked ~).
//   3. cuDNN fp32 NCHW with CUDNN_FMA_MATH (what our CUDNN engine runs), every candidate.
//   4. cuDNN bf16 NCHW, CUDNN_TENSOR_OP_MATH, every candidate.
//   and once, after the first batch's layers: the policy runtime's bf16 forward of the whole
//   network (uint8 frames /255, the three convs on the half-precision implicit GEMM, FC 512,
//   heads) through cudarl_policy_load_network + cudarl_policy_time_forward, at every batch.
//
// Numerics, per layer and pass: the fp32 reference is cuDNN fp32 NCHW FMA with fixed plain-sum
// algorithms (forward IMPLICIT_PRECOMP_GEMM, backward ALGO_1) on the same inputs; all inputs are
// drawn already rounded to bf16, so that every variant multiplies the same numbers and the
// differences are the sums' and the outputs' roundings only. It is itself checked against the
// GEMM engine in fp32 (an independent implementation: both should agree to ~1e-6). For each
// cuDNN variant the fastest deterministic candidate (and the fastest of any determinism, when it
// is another) is run twice: "max|d|" = max |got - ref| / max |ref| over the tensor, "l2" =
// ||got - ref|| / ||ref||, and whether the two runs gave the same bits. bf16 variants write
// their outputs in bf16 (a relative rounding of up to 2^-9 = 2e-3 on its own); the GEMM engine's
// outputs are fp32.
//
// The summary at the end: per batch, layer and pass the fastest deterministic bf16 option, and
// the sums over a learner step's convolutions (3 forwards, dgrad of conv2 and conv3, 3 wgrads)
// for our GEMM engine and the cuDNN variants, beside the 29.2 ms of one whole learner step at
// 16,384 rows on the GEMM engine in bf16 (bench/RESULTS.md). The cuDNN figures are bare
// convolutions; the GEMM engine's include the bias, the ReLU, the bias gradient and the layout
// transposes, which an engine built on cuDNN would still have to do in some kernel (not timed).
//
// Build and run: dev/cuda/run_conv_train_bench.sh [BUILD] (against BUILD's libcudarl.a, default
// build-gpu). Options: conv_train_bench [--batch N]... [--reps N] [--deadline S] [--ws-cap-mb M]
// [--no-half]. Exit 0 when every section ran, 1 on a CUDA failure (after the summary of what ran),
// 2 on bad usage, 3 when the deadline cut the run short.
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

extern "C" {
#include "cudarl.h"
#include "ops/backend.h"
#include "ops/cuda/cuda_backend.h"
}

#define MAXB 4        // batch sizes per run
#define MAXC 32       // candidates per pass
#define NLAYER 3
#define WARMUP 2
#define STEP_MS_16384 29.2 // one learner step at 16,384 rows, GEMM engine bf16 (bench/RESULTS.md)

enum { FWD, DGRAD, WGRAD, NPASS };
enum { V_NHWC_BF16, V_NCHW_BF16, V_NCHW_FP32, NV };
enum { G_BF16, G_FP32, NG };
enum { G_FWD, G_BWD, G_BWD_NODX, NGK };

static const char *PASS_NAME[NPASS] = {"fwd", "dgrad", "wgrad"};

struct variant {
    const char *name;
    cudnnDataType_t dt;
    cudnnTensorFormat_t fmt;
    cudnnMathType_t math;
    size_t esize;
};
static const variant VARIANTS[NV] = {
    {"cudnn NHWC bf16", CUDNN_DATA_BFLOAT16, CUDNN_TENSOR_NHWC, CUDNN_TENSOR_OP_MATH, 2},
    {"cudnn NCHW bf16", CUDNN_DATA_BFLOAT16, CUDNN_TENSOR_NCHW, CUDNN_TENSOR_OP_MATH, 2},
    {"cudnn NCHW fp32 FMA", CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, CUDNN_FMA_MATH, 4},
};
static const char *GEMM_NAME[NG] = {"ours GEMM bf16", "ours GEMM fp32"};

struct layer {
    const char *name;
    int C, H, W, K, R, S, stride, P, Q;
};
static const layer LAYERS[NLAYER] = {
    {"conv1 4->32 8x8/4 84x84", 4, 84, 84, 32, 8, 8, 4, 20, 20},
    {"conv2 32->64 4x4/2 20x20", 32, 20, 20, 64, 4, 4, 2, 9, 9},
    {"conv3 64->64 3x3/1 9x9", 64, 9, 9, 64, 3, 3, 1, 7, 7},
};

// ---- options, clock, results ----------------------------------------------------------------

static int g_batches[MAXB] = {16384, 4096}, g_nb = 2;
static int g_reps = 10;
static double g_deadline = 100;
static size_t g_ws_cap = (size_t)4096 << 20;
static int g_no_half = 0;
static double g_t0;
static int g_cut = 0; // the deadline skipped something

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static double elapsed(void) { return now_s() - g_t0; }
static int past_deadline(const char *what) {
    if (elapsed() < g_deadline) return 0;
    printf("  [deadline %.0f s passed at %.1f s: skipped %s]\n", g_deadline, elapsed(), what);
    fflush(stdout);
    g_cut = 1;
    return 1;
}

struct cres {
    int algo, math, det;
    size_t ws;
    double ms;
};
struct numres {
    int done, algo, repeat_same;
    double maxrel, l2;
};
struct sweep {
    int ran, n;
    cres c[MAXC];
    numres num_det; // the fastest deterministic candidate's numerics
};
static sweep g_sw[MAXB][NV][NLAYER][NPASS];
static double g_gemm[MAXB][NG][NLAYER][NGK]; // ms, NAN where not measured
static numres g_gemm_num[MAXB][NG][NLAYER][NPASS];
static double g_half[MAXB];                  // whole-network forward, ms (NAN: not measured)
static char g_half_engine[32] = "";

static double macs(int batch, int l) {
    const layer &L = LAYERS[l];
    return (double)batch * L.K * L.P * L.Q * (double)L.C * L.R * L.S;
}
static double tflops(int batch, int l, double ms) { return 2.0 * macs(batch, l) / ms / 1e9; }

static void print_summary(void);

// A failure that leaves the device in doubt: print, then the summary of what ran, exit 1.
static void fatal(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("FATAL: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
    print_summary();
    exit(1);
}

#define CUDA_OK(expr)                                                                         \
    do {                                                                                      \
        cudaError_t cuda_ok_e_ = (expr);                                                      \
        if (cuda_ok_e_ != cudaSuccess)                                                        \
            fatal("%s failed (line %d): %s", #expr, __LINE__, cudaGetErrorString(cuda_ok_e_)); \
    } while (0)
#define CUDNN_OK(expr)                                                                          \
    do {                                                                                        \
        cudnnStatus_t cudnn_ok_s_ = (expr);                                                     \
        if (cudnn_ok_s_ != CUDNN_STATUS_SUCCESS)                                                \
            fatal("%s failed (line %d): %s", #expr, __LINE__, cudnnGetErrorString(cudnn_ok_s_)); \
    } while (0)

// Device memory: NULL (and a line saying what) when cudaMalloc fails.
static void *dalloc(size_t bytes, const char *what) {
    void *p = NULL;
    if (bytes == 0) bytes = 256;
    cudaError_t e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess) {
        cudaGetLastError();
        printf("  [cudaMalloc of %.1f MB for %s failed: %s]\n", bytes / 1e6, what,
               cudaGetErrorString(e));
        return NULL;
    }
    return p;
}
static void dfree(void *p) {
    if (p) CUDA_OK(cudaFree(p));
}

// ---- kernels: inputs, layouts, comparisons ----------------------------------------------------

static __device__ __forceinline__ float unit_hash(uint64_t seed, uint64_t i) {
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + (i + 1) * 0xD1B54A32D192ED03ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)(z >> 40) * (1.0f / 16777216.0f); // [0, 1)
}

// p[i] = lo + (hi - lo) u, rounded to bf16 (and stored as float): every variant sees these values.
static __global__ void fill_kernel(float *p, size_t n, uint64_t seed, float lo, float hi) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = __bfloat162float(__float2bfloat16_rn(lo + (hi - lo) * unit_hash(seed, i)));
}

// NCHW float -> bf16 in NCHW or NHWC (for filters: KCRS -> KCRS or KRSC).
static __global__ void to_bf16_kernel(const float *src, __nv_bfloat16 *dst, size_t n, int C,
                                      int H, int W, int nhwc) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t j = i;
        if (nhwc) {
            const size_t w = i % W, h = (i / W) % H, c = (i / ((size_t)W * H)) % C,
                         nn = i / ((size_t)W * H * C);
            j = ((nn * H + h) * W + w) * C + c;
        }
        dst[j] = __float2bfloat16_rn(src[i]);
    }
}

struct cmp_stats {
    unsigned max_diff, max_ref; // float bits of non-negative floats (ordered as the floats)
    double ss_diff, ss_ref;
    unsigned long long nonfinite;
};

static __device__ __forceinline__ float as_float(float v) { return v; }
static __device__ __forceinline__ float as_float(__nv_bfloat16 v) { return __bfloat162float(v); }

// Statistics of got (NCHW or NHWC, float or bf16) against ref (NCHW float), n elements.
template <typename T>
static __global__ void compare_kernel(const T *got, const float *ref, size_t n, int C, int H,
                                      int W, int nhwc, cmp_stats *st) {
    float md = 0, mr = 0;
    double sd = 0, sr = 0;
    unsigned long long bad = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t j = i;
        if (nhwc) {
            const size_t w = i % W, h = (i / W) % H, c = (i / ((size_t)W * H)) % C,
                         nn = i / ((size_t)W * H * C);
            j = ((nn * H + h) * W + w) * C + c;
        }
        const float g = as_float(got[j]), r = ref[i];
        if (!isfinite(g)) {
            bad++;
            continue;
        }
        const float d = fabsf(g - r);
        md = fmaxf(md, d);
        mr = fmaxf(mr, fabsf(r));
        sd += (double)d * d;
        sr += (double)r * r;
    }
    for (int o = 16; o > 0; o >>= 1) {
        md = fmaxf(md, __shfl_down_sync(0xffffffffu, md, o));
        mr = fmaxf(mr, __shfl_down_sync(0xffffffffu, mr, o));
        sd += __shfl_down_sync(0xffffffffu, sd, o);
        sr += __shfl_down_sync(0xffffffffu, sr, o);
        bad += __shfl_down_sync(0xffffffffu, bad, o);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicMax(&st->max_diff, __float_as_uint(md));
        atomicMax(&st->max_ref, __float_as_uint(mr));
        atomicAdd(&st->ss_diff, sd);
        atomicAdd(&st->ss_ref, sr);
        atomicAdd(&st->nonfinite, bad);
    }
}

// Number of 16-bit words where a and b differ.
static __global__ void bits_kernel(const uint16_t *a, const uint16_t *b, size_t n,
                                   unsigned long long *count) {
    unsigned long long c = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        c += a[i] != b[i];
    for (int o = 16; o > 0; o >>= 1) c += __shfl_down_sync(0xffffffffu, c, o);
    if ((threadIdx.x & 31) == 0 && c) atomicAdd(count, c);
}

static const int GRID = 132 * 8, BLOCK = 256;
static cudaStream_t g_st;    // the cuDNN handle's stream; the kernels above run on it too
static cudnnHandle_t g_h;
static cudaEvent_t g_ev[2];
static cmp_stats *g_stats;   // device
static unsigned long long *g_count;

static void fill(float *p, size_t n, uint64_t seed, float lo, float hi) {
    fill_kernel<<<GRID, BLOCK, 0, g_st>>>(p, n, seed, lo, hi);
    CUDA_OK(cudaGetLastError());
}
static void to_bf16(const float *src, void *dst, size_t n, int C, int H, int W, int nhwc) {
    to_bf16_kernel<<<GRID, BLOCK, 0, g_st>>>(src, (__nv_bfloat16 *)dst, n, C, H, W, nhwc);
    CUDA_OK(cudaGetLastError());
}

// got (esize 2: bf16, 4: float; nhwc layout or NCHW) against ref (NCHW float, dims N C H W).
static numres compare(const void *got, size_t esize, int nhwc, const float *ref, size_t n, int C,
                      int H, int W) {
    CUDA_OK(cudaMemsetAsync(g_stats, 0, sizeof *g_stats, g_st));
    if (esize == 2)
        compare_kernel<<<GRID, BLOCK, 0, g_st>>>((const __nv_bfloat16 *)got, ref, n, C, H, W,
                                                 nhwc, g_stats);
    else
        compare_kernel<<<GRID, BLOCK, 0, g_st>>>((const float *)got, ref, n, C, H, W, nhwc,
                                                 g_stats);
    CUDA_OK(cudaGetLastError());
    cmp_stats h;
    CUDA_OK(cudaMemcpyAsync(&h, g_stats, sizeof h, cudaMemcpyDeviceToHost, g_st));
    CUDA_OK(cudaStreamSynchronize(g_st));
    numres r = {};
    r.done = 1;
    float md, mr;
    memcpy(&md, &h.max_diff, sizeof md);
    memcpy(&mr, &h.max_ref, sizeof mr);
    r.maxrel = h.nonfinite ? INFINITY : md / (mr > 0 ? mr : 1e-30f);
    r.l2 = h.nonfinite ? INFINITY : sqrt(h.ss_diff / (h.ss_ref > 0 ? h.ss_ref : 1e-300));
    if (h.nonfinite) printf("  [%llu non-finite outputs]\n", h.nonfinite);
    return r;
}

static unsigned long long bits_differ(const void *a, const void *b, size_t bytes) {
    CUDA_OK(cudaMemsetAsync(g_count, 0, sizeof *g_count, g_st));
    bits_kernel<<<GRID, BLOCK, 0, g_st>>>((const uint16_t *)a, (const uint16_t *)b, bytes / 2,
                                          g_count);
    CUDA_OK(cudaGetLastError());
    unsigned long long h = 0;
    CUDA_OK(cudaMemcpyAsync(&h, g_count, sizeof h, cudaMemcpyDeviceToHost, g_st));
    CUDA_OK(cudaStreamSynchronize(g_st));
    return h;
}

// ---- timing ---------------------------------------------------------------------------------

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

// Times f (enqueues one call on stream s, returns 0 when the call was refused): WARMUP untimed
// calls, one timed probe, then reps samples (fewer for calls over 10 ms), each `per` calls back
// to back between two CUDA events (per = 1 for calls of 1 ms or more, else up to 20 calls making
// about 1 ms, so that the host's time to enqueue a call hides behind the previous call's GPU
// time, as in a captured graph). Returns the median of the samples per call in ms, or -1 when a
// call was refused.
template <class F> static double time_ms(cudaStream_t s, F f, int *reps_used) {
    for (int i = 0; i < WARMUP; i++)
        if (!f()) return -1;
    CUDA_OK(cudaStreamSynchronize(s));
    float t[64];
    CUDA_OK(cudaEventRecord(g_ev[0], s));
    if (!f()) return -1;
    CUDA_OK(cudaEventRecord(g_ev[1], s));
    CUDA_OK(cudaEventSynchronize(g_ev[1]));
    CUDA_OK(cudaEventElapsedTime(&t[0], g_ev[0], g_ev[1]));
    const int reps = t[0] > 50 ? 3 : t[0] > 10 ? 5 : g_reps;
    const int per = t[0] >= 1 ? 1 : t[0] < 0.05f ? 20 : (int)ceilf(1.0f / t[0]);
    for (int r = 0; r < reps; r++) {
        CUDA_OK(cudaEventRecord(g_ev[0], s));
        for (int k = 0; k < per; k++)
            if (!f()) return -1;
        CUDA_OK(cudaEventRecord(g_ev[1], s));
        CUDA_OK(cudaEventSynchronize(g_ev[1]));
        CUDA_OK(cudaEventElapsedTime(&t[r], g_ev[0], g_ev[1]));
        t[r] /= (float)per;
    }
    qsort(t, (size_t)reps, sizeof t[0], cmp_float);
    if (reps_used) *reps_used = reps * per;
    return t[reps / 2];
}

// ---- cuDNN ----------------------------------------------------------------------------------

static const char *algo_name(int pass, int a) {
    static const char *fwd[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT",
                                "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
    static const char *bd[] = {"ALGO_0", "ALGO_1", "FFT", "FFT_TILING", "WINOGRAD",
                               "WINOGRAD_NONFUSED"};
    static const char *bf[] = {"ALGO_0", "ALGO_1", "FFT", "ALGO_3", "WINOGRAD",
                               "WINOGRAD_NONFUSED", "FFT_TILING"};
    const char **t = pass == FWD ? fwd : pass == DGRAD ? bd : bf;
    const int n = pass == FWD ? 8 : pass == DGRAD ? 6 : 7;
    return a >= 0 && a < n ? t[a] : "?";
}
static const char *math_name(int m) {
    switch (m) {
    case CUDNN_DEFAULT_MATH: return "DEFAULT";
    case CUDNN_TENSOR_OP_MATH: return "TENSOR_OP";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "TENSOR_OP_CONV";
    case CUDNN_FMA_MATH: return "FMA";
    default: return "?";
    }
}

// One layer's tensors in one variant's type and layout (device), and its descriptors.
struct vbufs {
    void *x, *w, *dy;     // inputs
    void *out, *out2;     // outputs of any pass (the largest of y, dx, dw), and a second copy
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
};

static void descs_make(vbufs *b, const variant &v, int N, const layer &L) {
    CUDNN_OK(cudnnCreateTensorDescriptor(&b->xd));
    CUDNN_OK(cudnnCreateTensorDescriptor(&b->yd));
    CUDNN_OK(cudnnCreateFilterDescriptor(&b->wd));
    CUDNN_OK(cudnnCreateConvolutionDescriptor(&b->cd));
    CUDNN_OK(cudnnSetTensor4dDescriptor(b->xd, v.fmt, v.dt, N, L.C, L.H, L.W));
    CUDNN_OK(cudnnSetTensor4dDescriptor(b->yd, v.fmt, v.dt, N, L.K, L.P, L.Q));
    CUDNN_OK(cudnnSetFilter4dDescriptor(b->wd, v.dt, v.fmt, L.K, L.C, L.R, L.S));
    CUDNN_OK(cudnnSetConvolution2dDescriptor(b->cd, 0, 0, L.stride, L.stride, 1, 1,
                                             CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CUDNN_OK(cudnnSetConvolutionMathType(b->cd, v.math));
    int n, c, h, w;
    CUDNN_OK(cudnnGetConvolution2dForwardOutputDim(b->cd, b->xd, b->wd, &n, &c, &h, &w));
    if (n != N || c != L.K || h != L.P || w != L.Q)
        fatal("%s %s: cuDNN's output is %dx%dx%dx%d, not %dx%dx%dx%d", v.name, L.name, n, c, h,
              w, N, L.K, L.P, L.Q);
}
static void descs_free(vbufs *b) {
    if (b->xd) CUDNN_OK(cudnnDestroyTensorDescriptor(b->xd));
    if (b->yd) CUDNN_OK(cudnnDestroyTensorDescriptor(b->yd));
    if (b->wd) CUDNN_OK(cudnnDestroyFilterDescriptor(b->wd));
    if (b->cd) CUDNN_OK(cudnnDestroyConvolutionDescriptor(b->cd));
    b->xd = NULL, b->yd = NULL, b->wd = NULL, b->cd = NULL;
}

struct cand {
    int algo, status, det, math;
    size_t mem;
};

// What cuDNN lists for the pass (Get_v7: every algorithm, ranked by its heuristics).
static int candidates(int pass, const vbufs *b, cand *out) {
    int n = 0;
    cudnnStatus_t s;
    if (pass == FWD) {
        cudnnConvolutionFwdAlgoPerf_t p[MAXC];
        s = cudnnGetConvolutionForwardAlgorithm_v7(g_h, b->xd, b->wd, b->cd, b->yd, MAXC, &n, p);
        for (int i = 0; s == CUDNN_STATUS_SUCCESS && i < n; i++)
            out[i] = {(int)p[i].algo, (int)p[i].status, p[i].determinism == CUDNN_DETERMINISTIC,
                      (int)p[i].mathType, p[i].memory};
    } else if (pass == DGRAD) {
        cudnnConvolutionBwdDataAlgoPerf_t p[MAXC];
        s = cudnnGetConvolutionBackwardDataAlgorithm_v7(g_h, b->wd, b->yd, b->cd, b->xd, MAXC, &n,
                                                        p);
        for (int i = 0; s == CUDNN_STATUS_SUCCESS && i < n; i++)
            out[i] = {(int)p[i].algo, (int)p[i].status, p[i].determinism == CUDNN_DETERMINISTIC,
                      (int)p[i].mathType, p[i].memory};
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t p[MAXC];
        s = cudnnGetConvolutionBackwardFilterAlgorithm_v7(g_h, b->xd, b->yd, b->cd, b->wd, MAXC,
                                                          &n, p);
        for (int i = 0; s == CUDNN_STATUS_SUCCESS && i < n; i++)
            out[i] = {(int)p[i].algo, (int)p[i].status, p[i].determinism == CUDNN_DETERMINISTIC,
                      (int)p[i].mathType, p[i].memory};
    }
    if (s != CUDNN_STATUS_SUCCESS) {
        printf("  cudnnGetConvolution*Algorithm_v7 (%s) failed: %s\n", PASS_NAME[pass],
               cudnnGetErrorString(s));
        return 0;
    }
    return n < 0 ? 0 : n > MAXC ? MAXC : n;
}

static cudnnStatus_t ws_size(int pass, const vbufs *b, int algo, size_t *bytes) {
    if (pass == FWD)
        return cudnnGetConvolutionForwardWorkspaceSize(g_h, b->xd, b->wd, b->cd, b->yd,
                                                       (cudnnConvolutionFwdAlgo_t)algo, bytes);
    if (pass == DGRAD)
        return cudnnGetConvolutionBackwardDataWorkspaceSize(
            g_h, b->wd, b->yd, b->cd, b->xd, (cudnnConvolutionBwdDataAlgo_t)algo, bytes);
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(
        g_h, b->xd, b->yd, b->cd, b->wd, (cudnnConvolutionBwdFilterAlgo_t)algo, bytes);
}

// One call of the pass with algo, output into out (beta 0).
static cudnnStatus_t run_pass(int pass, const vbufs *b, int algo, void *out, void *ws,
                              size_t wsb) {
    const float one = 1.0f, zero = 0.0f;
    if (pass == FWD)
        return cudnnConvolutionForward(g_h, &one, b->xd, b->x, b->wd, b->w, b->cd,
                                       (cudnnConvolutionFwdAlgo_t)algo, ws, wsb, &zero, b->yd,
                                       out);
    if (pass == DGRAD)
        return cudnnConvolutionBackwardData(g_h, &one, b->wd, b->w, b->yd, b->dy, b->cd,
                                            (cudnnConvolutionBwdDataAlgo_t)algo, ws, wsb, &zero,
                                            b->xd, out);
    return cudnnConvolutionBackwardFilter(g_h, &one, b->xd, b->x, b->yd, b->dy, b->cd,
                                          (cudnnConvolutionBwdFilterAlgo_t)algo, ws, wsb, &zero,
                                          b->wd, out);
}

// Output size (elements) of a pass and its dims as (N, C, H, W) of the NCHW reference.
static void out_dims(int pass, int N, const layer &L, int d[4]) {
    if (pass == FWD) d[0] = N, d[1] = L.K, d[2] = L.P, d[3] = L.Q;
    else if (pass == DGRAD) d[0] = N, d[1] = L.C, d[2] = L.H, d[3] = L.W;
    else d[0] = L.K, d[1] = L.C, d[2] = L.R, d[3] = L.S;
}
static size_t count4(const int d[4]) { return (size_t)d[0] * d[1] * d[2] * d[3]; }

// Sets the math type to run a candidate with: fp32 always FMA (no TF32); bf16 the candidate's.
static int set_math(const variant &v, const vbufs *b, int cand_math) {
    const int m = v.dt == CUDNN_DATA_FLOAT ? (int)CUDNN_FMA_MATH : cand_math;
    cudnnStatus_t s = cudnnSetConvolutionMathType(b->cd, (cudnnMathType_t)m);
    if (s != CUDNN_STATUS_SUCCESS) {
        printf("  cudnnSetConvolutionMathType(%s) failed: %s\n", math_name(m),
               cudnnGetErrorString(s));
        return -1;
    }
    return m;
}

// Runs algo twice into out and out2; the bits compared and out against ref.
static numres check_algo(int vi, const vbufs *b, int pass, int N, const layer &L, const cres &c,
                         const float *ref, const char *label) {
    numres r = {};
    const variant &v = VARIANTS[vi];
    if (set_math(v, b, c.math) < 0) return r;
    void *ws = c.ws ? dalloc(c.ws, "workspace") : NULL;
    if (c.ws && !ws) return r;
    int d[4];
    out_dims(pass, N, L, d);
    const size_t n = count4(d), bytes = n * v.esize;
    cudnnStatus_t s1 = run_pass(pass, b, c.algo, b->out, ws, c.ws);
    cudnnStatus_t s2 = run_pass(pass, b, c.algo, b->out2, ws, c.ws);
    CUDA_OK(cudaStreamSynchronize(g_st));
    if (s1 != CUDNN_STATUS_SUCCESS || s2 != CUDNN_STATUS_SUCCESS) {
        printf("  numerics of algo %d: the call failed: %s\n", c.algo,
               cudnnGetErrorString(s1 != CUDNN_STATUS_SUCCESS ? s1 : s2));
        dfree(ws);
        return r;
    }
    const unsigned long long diff = bits_differ(b->out, b->out2, bytes);
    r = compare(b->out, v.esize, v.fmt == CUDNN_TENSOR_NHWC, ref, n, d[1], d[2], d[3]);
    r.algo = c.algo;
    r.repeat_same = diff == 0;
    printf("  numerics, %s: algo %d %s (%s): vs fp32 ref max|d|/max|ref| %.2e, l2 %.2e; two runs: "
           "%s\n",
           label, c.algo, algo_name(pass, c.algo), c.det ? "DETERMINISTIC" : "NON_DETERMINISTIC",
           r.maxrel, r.l2,
           diff ? "DIFFERENT bits" : "identical bits");
    if (diff) printf("    (%llu of %zu 16-bit words differ)\n", diff, bytes / 2);
    fflush(stdout);
    dfree(ws);
    return r;
}

// Every candidate of one pass: timed, printed, kept in g_sw; then the numerics of the fastest
// deterministic one (and the fastest of any determinism when it is another).
static void sweep_pass(int bi, int vi, int l, int pass, vbufs *b, const float *ref) {
    const variant &v = VARIANTS[vi];
    const int N = g_batches[bi];
    const layer &L = LAYERS[l];
    sweep *sw = &g_sw[bi][vi][l][pass];
    char what[160];
    snprintf(what, sizeof what, "%s %s %s", v.name, L.name, PASS_NAME[pass]);
    if (past_deadline(what)) return;
    printf("\n%s, batch %d, %s, %s (%.1f GFLOP), t=%.1f s\n", v.name, N, L.name, PASS_NAME[pass],
           2.0 * macs(N, l) / 1e9, elapsed());
    if (cudnnSetConvolutionMathType(b->cd, v.math) != CUDNN_STATUS_SUCCESS) {
        printf("  cudnnSetConvolutionMathType(%s) failed\n", math_name(v.math));
        return;
    }
    cand c[MAXC];
    const int nc = candidates(pass, b, c);
    sw->ran = 1;
    printf("  %-4s %-2s %-22s %-14s %-17s %10s %9s %8s %5s\n", "rank", "id", "algo", "math",
           "determinism", "workspace", "ms", "TFLOP/s", "calls");
    for (int i = 0; i < nc; i++) {
        // the same (algo, math it would run with) twice in the list: time it once
        const int fp32 = v.dt == CUDNN_DATA_FLOAT;
        int dup = 0;
        for (int j = 0; j < i; j++)
            dup |= c[j].algo == c[i].algo && c[j].status == CUDNN_STATUS_SUCCESS &&
                   (fp32 || c[j].math == c[i].math);
        if (dup) continue;
        printf("  %-4d %-2d %-22s %-14s %-17s ", i, c[i].algo, algo_name(pass, c[i].algo),
               math_name(c[i].math), c[i].det ? "DETERMINISTIC" : "NON_DETERMINISTIC");
        if (c[i].status != CUDNN_STATUS_SUCCESS) {
            printf("not offered: %s\n", cudnnGetErrorString((cudnnStatus_t)c[i].status));
            continue;
        }
        if (elapsed() > g_deadline) {
            printf("skipped: past the deadline\n");
            g_cut = 1;
            continue;
        }
        const int m = set_math(v, b, c[i].math);
        if (m < 0) continue;
        size_t wsb = 0;
        cudnnStatus_t s = ws_size(pass, b, c[i].algo, &wsb);
        if (s != CUDNN_STATUS_SUCCESS) {
            printf("skipped: workspace query: %s\n", cudnnGetErrorString(s));
            continue;
        }
        if (wsb > g_ws_cap) {
            printf("%8.1f MB skipped: workspace over --ws-cap-mb %zu\n", wsb / 1e6,
                   g_ws_cap >> 20);
            continue;
        }
        void *ws = wsb ? dalloc(wsb, "workspace") : NULL;
        if (wsb && !ws) continue;
        cudnnStatus_t failed = CUDNN_STATUS_SUCCESS;
        int reps = 0;
        const double ms = time_ms(
            g_st,
            [&]() {
                cudnnStatus_t r = run_pass(pass, b, c[i].algo, b->out, ws, wsb);
                if (r != CUDNN_STATUS_SUCCESS) failed = r;
                return r == CUDNN_STATUS_SUCCESS;
            },
            &reps);
        // a refused call may have left a non-sticky error; a sticky one is fatal here
        cudaError_t e = cudaStreamSynchronize(g_st);
        if (e != cudaSuccess) fatal("algo %d of %s: %s", c[i].algo, what, cudaGetErrorString(e));
        cudaGetLastError();
        dfree(ws);
        if (ms < 0) {
            printf("%8.1f MB call failed: %s\n", wsb / 1e6, cudnnGetErrorString(failed));
            continue;
        }
        printf("%8.1f MB %9.3f %8.1f %5d\n", wsb / 1e6, ms, tflops(N, l, ms), reps);
        fflush(stdout);
        if (sw->n < MAXC) sw->c[sw->n++] = {c[i].algo, m, c[i].det, wsb, ms};
    }
    if (!ref) return;
    int best_det = -1, best_any = -1;
    for (int i = 0; i < sw->n; i++) {
        if (best_any < 0 || sw->c[i].ms < sw->c[best_any].ms) best_any = i;
        if (sw->c[i].det && (best_det < 0 || sw->c[i].ms < sw->c[best_det].ms)) best_det = i;
    }
    if (best_det >= 0)
        sw->num_det = check_algo(vi, b, pass, N, L, sw->c[best_det], ref, "fastest deterministic");
    if (best_any >= 0 && best_any != best_det)
        check_algo(vi, b, pass, N, L, sw->c[best_any], ref, "fastest of any determinism");
}

// The fp32 reference of a pass into ref: cuDNN fp32 NCHW FMA, fixed plain-sum algorithms.
static int reference(int pass, vbufs *b32, float *ref) {
    static const int first[NPASS] = {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                                     CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
                                     CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1};
    static const int second[NPASS] = {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                      CUDNN_CONVOLUTION_BWD_DATA_ALGO_0,
                                      CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0};
    CUDNN_OK(cudnnSetConvolutionMathType(b32->cd, CUDNN_FMA_MATH));
    for (int k = 0; k < 2; k++) {
        const int algo = k ? second[pass] : first[pass];
        size_t wsb = 0;
        if (ws_size(pass, b32, algo, &wsb) != CUDNN_STATUS_SUCCESS || wsb > g_ws_cap) continue;
        void *ws = wsb ? dalloc(wsb, "reference workspace") : NULL;
        if (wsb && !ws) continue;
        cudnnStatus_t s = run_pass(pass, b32, algo, ref, ws, wsb);
        CUDA_OK(cudaStreamSynchronize(g_st));
        dfree(ws);
        if (s == CUDNN_STATUS_SUCCESS) {
            printf("  fp32 reference of %s: cuDNN fp32 NCHW FMA algo %d %s\n", PASS_NAME[pass],
                   algo, algo_name(pass, algo));
            return 1;
        }
        printf("  fp32 reference of %s: algo %d failed: %s\n", PASS_NAME[pass], algo,
               cudnnGetErrorString(s));
    }
    printf("  fp32 reference of %s: none; its numerics are skipped\n", PASS_NAME[pass]);
    return 0;
}

// ---- our GEMM engine (the op table's conv2d ops) --------------------------------------------

static cudarl_ctx g_ctx;

struct gbufs {
    const float *x, *w, *dy32; // shared inputs (fp32 NCHW, bf16-representable)
    const float *ref[NPASS];   // NULL where the reference failed
};

// Times the op's forward and backward (ReLU, bias) and checks an identity plan's outputs.
static void gemm_layer(int bi, int gi, int l, const gbufs *in) {
    const int N = g_batches[bi];
    const layer &L = LAYERS[l];
    char what[160];
    snprintf(what, sizeof what, "%s %s", GEMM_NAME[gi], L.name);
    if (past_deadline(what)) return;
    printf("\n%s, batch %d, %s, t=%.1f s\n", GEMM_NAME[gi], N, L.name, elapsed());
    cr_conv2d_desc d;
    memset(&d, 0, sizeof d);
    d.shape.N = N, d.shape.C = L.C, d.shape.H = L.H, d.shape.W = L.W;
    d.shape.K = L.K, d.shape.R = L.R, d.shape.S = L.S, d.shape.stride = L.stride, d.shape.pad = 0;
    d.products = gi == G_BF16 ? CUDARL_PRECISION_BF16 : CUDARL_PRECISION_FP32;
    d.engine = CR_CONV2D_GEMM;
    d.no_dx = l == 0;
    const size_t ny = (size_t)N * L.K * L.P * L.Q, nx = (size_t)N * L.C * L.H * L.W,
                 nw = (size_t)L.K * L.C * L.R * L.S;
    for (int pass_act = 0; pass_act < 2; pass_act++) { // 0: ReLU, timed; 1: identity, numerics
        d.act = pass_act == 0 ? CR_CONV2D_RELU : CR_CONV2D_IDENTITY;
        cr_conv2d_plan *plan = NULL;
        if (g_ctx.ops->conv2d_plan_init(&g_ctx, &d, &plan) != CUDARL_OK) {
            printf("  conv2d_plan_init failed: %s\n", cudarl_last_error());
            return;
        }
        if (pass_act == 0)
            printf("  plan: %s; workspace %.1f MB, keep %.1f MB\n", plan->describe,
                   plan->workspace_bytes / 1e6, plan->keep_bytes / 1e6);
        void *ws = dalloc(plan->workspace_bytes, "GEMM workspace");
        void *keep = plan->keep_bytes ? dalloc(plan->keep_bytes, "GEMM keep") : NULL;
        float *y = (float *)dalloc(ny * 4, "GEMM y"), *dy = (float *)dalloc(ny * 4, "GEMM dy");
        float *dx = l ? (float *)dalloc(nx * 4, "GEMM dx") : NULL;
        float *dw = (float *)dalloc(nw * 4, "GEMM dw"), *bias = (float *)dalloc(L.K * 4, "b"),
              *db = (float *)dalloc(L.K * 4, "db");
        const int ok = ws && (keep || !plan->keep_bytes) && y && dy && (dx || !l) && dw && bias &&
                       db;
        if (ok) {
            cudaStream_t s = (cudaStream_t)g_ctx.stream;
            CUDA_OK(cudaMemsetAsync(bias, 0, L.K * 4, s));
            CUDA_OK(cudaMemcpyAsync(dy, in->dy32, ny * 4, cudaMemcpyDeviceToDevice, s));
            const int kept = keep != NULL;
            auto fwd = [&]() {
                g_ctx.ops->conv2d_forward(&g_ctx, plan, in->x, in->w, bias, y, ws, keep);
                return true;
            };
            auto bwd = [&](float *dxp) {
                g_ctx.ops->conv2d_backward(&g_ctx, plan, in->x, in->w, y, dy, dxp, dw, db, ws,
                                           keep, kept);
                return true;
            };
            if (pass_act == 0) {
                double *t = g_gemm[bi][gi][l];
                t[G_FWD] = time_ms(s, fwd, NULL);
                if (l) t[G_BWD] = time_ms(s, [&]() { return bwd(dx); }, NULL);
                t[G_BWD_NODX] = time_ms(s, [&]() { return bwd(NULL); }, NULL);
                CUDA_OK(cudaStreamSynchronize(s));
                printf("  fwd (conv + bias + ReLU, im2col kept)       %9.3f ms %8.1f TFLOP/s\n",
                       t[G_FWD], tflops(N, l, t[G_FWD]));
                if (l)
                    printf("  bwd with dx (dgrad + wgrad + db)            %9.3f ms %8.1f TFLOP/s\n",
                           t[G_BWD], 2 * tflops(N, l, t[G_BWD]));
                printf("  bwd without dx (wgrad + db)                 %9.3f ms %8.1f TFLOP/s\n",
                       t[G_BWD_NODX], tflops(N, l, t[G_BWD_NODX]));
                if (l)
                    printf("  ~dgrad (the difference)                     %9.3f ms %8.1f TFLOP/s\n",
                           t[G_BWD] - t[G_BWD_NODX], tflops(N, l, t[G_BWD] - t[G_BWD_NODX]));
            } else {
                // identity, bias 0: y = conv(x, w), dx and dw of dy itself
                fwd();
                bwd(dx);
                CUDA_OK(cudaStreamSynchronize(s));
                for (int p = 0; p < NPASS; p++) {
                    if ((p == DGRAD && !l) || !in->ref[p]) continue;
                    const float *got = p == FWD ? y : p == DGRAD ? dx : dw;
                    int dd[4];
                    out_dims(p, N, L, dd);
                    // the comparison runs on g_st: wait for the GEMM's stream first (synced)
                    numres r = compare(got, 4, 0, in->ref[p], count4(dd), dd[1], dd[2], dd[3]);
                    g_gemm_num[bi][gi][l][p] = r;
                    printf("  numerics, %s (fp32 outputs): vs fp32 ref max|d|/max|ref| %.2e, "
                           "l2 %.2e\n",
                           PASS_NAME[p], r.maxrel, r.l2);
                }
            }
        }
        CUDA_OK(cudaDeviceSynchronize());
        dfree(ws), dfree(keep), dfree(y), dfree(dy), dfree(dx), dfree(dw), dfree(bias), dfree(db);
        g_ctx.ops->conv2d_plan_free(plan);
        if (!ok) return;
    }
    fflush(stdout);
}

// ---- one batch and layer: inputs, every variant ----------------------------------------------

static void run_layer(int bi, int l) {
    const int N = g_batches[bi];
    const layer &L = LAYERS[l];
    if (past_deadline(L.name)) return;
    printf("\n======== batch %d, %s: %.1f GFLOP a pass, t=%.1f s\n", N, L.name,
           2.0 * macs(N, l) / 1e9, elapsed());
    fflush(stdout);
    const size_t nx = (size_t)N * L.C * L.H * L.W, ny = (size_t)N * L.K * L.P * L.Q,
                 nw = (size_t)L.K * L.C * L.R * L.S;
    size_t nout = ny > nw ? ny : nw;
    if (l && nx > nout) nout = nx;
    // fp32 NCHW inputs (bf16-representable): conv1's x as pixels in [0, 1), the others'
    // activations in [-0.5, 0.5); weights as PyTorch's default init, +-1/sqrt(fan_in)
    float *x32 = (float *)dalloc(nx * 4, "x fp32"), *w32 = (float *)dalloc(nw * 4, "w fp32"),
          *dy32 = (float *)dalloc(ny * 4, "dy fp32");
    // the references' buffers, and ref: the ones that hold a reference (NULL where it failed)
    float *ref_alloc[NPASS] = {(float *)dalloc(ny * 4, "y ref"),
                               l ? (float *)dalloc(nx * 4, "dx ref") : NULL,
                               (float *)dalloc(nw * 4, "dw ref")};
    float *ref[NPASS] = {ref_alloc[FWD], ref_alloc[DGRAD], ref_alloc[WGRAD]};
    vbufs vb[NV];
    memset(vb, 0, sizeof vb);
    int ok = x32 && w32 && dy32 && ref[FWD] && (ref[DGRAD] || !l) && ref[WGRAD];
    if (ok) {
        const float bound = 1.0f / sqrtf((float)(L.C * L.R * L.S));
        fill(x32, nx, 100 + l, l ? -0.5f : 0.0f, l ? 0.5f : 1.0f);
        fill(w32, nw, 200 + l, -bound, bound);
        fill(dy32, ny, 300 + l, -0.5f, 0.5f);
    }
    for (int v = 0; ok && v < NV; v++) {
        const variant &V = VARIANTS[v];
        descs_make(&vb[v], V, N, L);
        if (V.dt == CUDNN_DATA_FLOAT) {
            vb[v].x = x32, vb[v].w = w32, vb[v].dy = dy32;
        } else {
            const int nhwc = V.fmt == CUDNN_TENSOR_NHWC;
            vb[v].x = dalloc(nx * 2, "x bf16");
            vb[v].w = dalloc(nw * 2, "w bf16");
            vb[v].dy = dalloc(ny * 2, "dy bf16");
            ok = vb[v].x && vb[v].w && vb[v].dy;
            if (ok) {
                to_bf16(x32, vb[v].x, nx, L.C, L.H, L.W, nhwc);
                to_bf16(w32, vb[v].w, nw, L.C, L.R, L.S, nhwc);
                to_bf16(dy32, vb[v].dy, ny, L.K, L.P, L.Q, nhwc);
            }
        }
    }
    if (ok) {
        CUDA_OK(cudaStreamSynchronize(g_st));
        // the references first; below, each variant's outputs (out, out2) exist only while its
        // sweep runs
        printf("\n");
        for (int p = 0; p < NPASS; p++) {
            if (p == DGRAD && !l) continue;
            if (!reference(p, &vb[V_NCHW_FP32], ref[p])) ref[p] = NULL;
        }
    }
    static const int order[] = {V_NHWC_BF16, -1 - G_BF16, V_NCHW_FP32, -1 - G_FP32, V_NCHW_BF16};
    for (int k = 0; ok && k < 5; k++) {
        const int o = order[k];
        if (o < 0) {
            gbufs g = {x32, w32, dy32, {ref[FWD], ref[DGRAD], ref[WGRAD]}};
            gemm_layer(bi, -1 - o, l, &g);
            continue;
        }
        vbufs *b = &vb[o];
        const size_t es = VARIANTS[o].esize;
        b->out = dalloc(nout * es, "output");
        b->out2 = dalloc(nout * es, "output copy");
        if (b->out && b->out2)
            for (int p = 0; p < NPASS; p++)
                if (p != DGRAD || l) sweep_pass(bi, o, l, p, b, ref[p]);
        CUDA_OK(cudaStreamSynchronize(g_st));
        dfree(b->out), dfree(b->out2);
        b->out = b->out2 = NULL;
    }
    CUDA_OK(cudaDeviceSynchronize());
    for (int v = 0; v < NV; v++) {
        if (VARIANTS[v].dt != CUDNN_DATA_FLOAT) dfree(vb[v].x), dfree(vb[v].w), dfree(vb[v].dy);
        descs_free(&vb[v]);
    }
    for (int p = 0; p < NPASS; p++) dfree(ref_alloc[p]);
    dfree(x32), dfree(w32), dfree(dy32);
}

// ---- the policy runtime's bf16 forward ------------------------------------------------------

static const char NETWORK[] =
    "{\"format\":\"cudarl-convnet\",\"version\":1,\"name\":\"custom\","
    "\"input\":{\"shape\":[4,84,84],\"dtype\":\"u8\",\"scale\":\"1/255\"},"
    "\"layers\":[{\"type\":\"conv\",\"out\":32,\"kernel\":[8,8],\"stride\":4,\"pad\":0},"
    "{\"type\":\"relu\"},{\"type\":\"conv\",\"out\":64,\"kernel\":[4,4],\"stride\":2,\"pad\":0},"
    "{\"type\":\"relu\"},{\"type\":\"conv\",\"out\":64,\"kernel\":[3,3],\"stride\":1,\"pad\":0},"
    "{\"type\":\"relu\"},{\"type\":\"flatten\"},{\"type\":\"linear\",\"out\":512},"
    "{\"type\":\"relu\"}],\"heads\":{\"type\":\"ppo\",\"actions\":2}}";
#define HALF_ACTIONS 2
#define HALF_ITERS 20

// MACs of one row of NETWORK: the convs, FC 3136 -> 512, heads 512 -> 2 + 1.
static double half_macs_per_row(void) {
    double m = 0;
    for (int l = 0; l < NLAYER; l++) m += macs(1, l);
    return m + 3136.0 * 512 + 512.0 * (HALF_ACTIONS + 1);
}

static void half_forward(void) {
    if (past_deadline("the policy runtime's bf16 forward")) return;
    int maxb = 0;
    for (int i = 0; i < g_nb; i++) maxb = g_batches[i] > maxb ? g_batches[i] : maxb;
    printf("\n======== the policy runtime's bf16 forward of the whole network (u8 /255, 3 convs, "
           "FC 512, heads), max_batch %d, t=%.1f s\n", maxb, elapsed());
    fflush(stdout);
    size_t np = 0;
    if (cudarl_network_init_params(NETWORK, 1, NULL, 0, &np) != CUDARL_OK) {
        printf("  cudarl_network_init_params failed: %s\n", cudarl_last_error());
        return;
    }
    float *params = (float *)malloc(np * sizeof(float));
    const size_t obs_bytes = (size_t)maxb * 4 * 84 * 84;
    uint8_t *obs = (uint8_t *)malloc(obs_bytes);
    int32_t *actions = (int32_t *)malloc((size_t)maxb * sizeof(int32_t));
    float *ms = (float *)malloc(HALF_ITERS * sizeof(float));
    cudarl_policy *p = NULL;
    cudarl_policy_options o;
    cudarl_status s = CUDARL_ERR_OUT_OF_MEMORY;
    if (!params || !obs || !actions || !ms) {
        printf("  out of host memory\n");
        goto done;
    }
    if (cudarl_network_init_params(NETWORK, 1, params, np, &np) != CUDARL_OK) {
        printf("  cudarl_network_init_params failed: %s\n", cudarl_last_error());
        goto done;
    }
    {
        uint64_t z = 12345;
        for (size_t i = 0; i < obs_bytes; i++) {
            z = z * 6364136223846793005ull + 1442695040888963407ull;
            obs[i] = (uint8_t)(z >> 56);
        }
    }
    cudarl_policy_options_default(&o);
    o.device = CUDARL_DEVICE_CUDA, o.precision = CUDARL_PRECISION_BF16, o.max_batch = maxb;
    {
        const double t = now_s();
        s = cudarl_policy_load_network(NETWORK, params, np, "conv_train_bench",
                                       CUDARL_CONV_ENGINE_AUTO, &o, &p);
        if (s != CUDARL_OK) {
            printf("  cudarl_policy_load_network failed: %s\n", cudarl_last_error());
            goto done;
        }
        snprintf(g_half_engine, sizeof g_half_engine, "%s", cudarl_policy_conv_engine(p));
        printf("  loaded in %.1f s; conv engine \"%s\"\n", now_s() - t, g_half_engine);
    }
    s = cudarl_policy_act(p, obs, CUDARL_OBS_U8, maxb, actions, NULL, NULL);
    if (s != CUDARL_OK) {
        printf("  cudarl_policy_act failed: %s\n", cudarl_last_error());
        goto done;
    }
    for (int i = 0; i < g_nb; i++) {
        const int B = g_batches[i];
        s = cudarl_policy_time_forward(p, B, HALF_ITERS, ms);
        if (s != CUDARL_OK) {
            printf("  cudarl_policy_time_forward(%d) failed: %s\n", B, cudarl_last_error());
            continue;
        }
        qsort(ms, HALF_ITERS, sizeof ms[0], cmp_float);
        g_half[i] = ms[HALF_ITERS / 2];
        printf("  batch %6d: %.3f ms (median of %d graph launches), %.1f TFLOP/s over %.1f "
               "MFLOP a row (convs %.1f)\n",
               B, g_half[i], HALF_ITERS, 2.0 * half_macs_per_row() * B / g_half[i] / 1e9,
               2.0 * half_macs_per_row() / 1e6,
               2.0 * (macs(1, 0) + macs(1, 1) + macs(1, 2)) / 1e6);
    }
done:
    cudarl_policy_free(p);
    free(params), free(obs), free(actions), free(ms);
    fflush(stdout);
}

// ---- summary --------------------------------------------------------------------------------

// The fastest measured candidate of a sweep (deterministic ones only when det), or NULL.
static const cres *best(const sweep *sw, int det) {
    const cres *b = NULL;
    for (int i = 0; i < sw->n; i++)
        if ((!det || sw->c[i].det) && (!b || sw->c[i].ms < b->ms)) b = &sw->c[i];
    return b;
}

// The GEMM engine's time of one pass: fwd; wgrad = bwd without dx (with db); dgrad = bwd with
// dx minus without (derived).
static double gemm_pass_ms(int bi, int gi, int l, int p) {
    const double *t = g_gemm[bi][gi][l];
    if (p == FWD) return t[G_FWD];
    if (p == WGRAD) return t[G_BWD_NODX];
    return l ? t[G_BWD] - t[G_BWD_NODX] : NAN;
}

static void cell_best(char *s, size_t n, int bi, int v, int l, int p, int det) {
    const cres *b = best(&g_sw[bi][v][l][p], det);
    if (!b) snprintf(s, n, "%s", g_sw[bi][v][l][p].ran ? "none ran" : "not run");
    else
        snprintf(s, n, "%d %s%s %.3f (%.0f)", b->algo, math_name(b->math), b->det ? "" : " ND",
                 b->ms, tflops(g_batches[bi], l, b->ms));
}

static void print_summary(void) {
    static int printed = 0;
    if (printed) return;
    printed = 1;
    printf("\n\n================ SUMMARY (ms, TFLOP/s in brackets = 2 x MACs / time; ND = "
           "non-deterministic; algo ids: cuDNN's) ================\n");
    for (int bi = 0; bi < g_nb; bi++) {
        const int N = g_batches[bi];
        printf("\nbatch %d: per layer and pass, the fastest of each\n\n", N);
        printf("| layer | pass | ours GEMM bf16 | cuDNN NHWC bf16, deterministic | err vs fp32 "
               "(max, l2) | repeat | cuDNN NHWC bf16, any | cuDNN NCHW bf16, det. | cuDNN "
               "fp32 FMA, det. | ours GEMM fp32 |\n|---|---|---:|---|---|---|---|---|---|---:|\n");
        for (int l = 0; l < NLAYER; l++)
            for (int p = 0; p < NPASS; p++) {
                if (p == DGRAD && !l) continue;
                char g16[48], g32[48], a[64], b[64], c[64], d[64], e[48] = "-", r[24] = "-";
                const double t16 = gemm_pass_ms(bi, G_BF16, l, p),
                             t32 = gemm_pass_ms(bi, G_FP32, l, p);
                const char *approx = p == DGRAD ? "~" : "";
                if (isnan(t16)) snprintf(g16, sizeof g16, "-");
                else snprintf(g16, sizeof g16, "%s%.3f (%.0f)", approx, t16, tflops(N, l, t16));
                if (isnan(t32)) snprintf(g32, sizeof g32, "-");
                else snprintf(g32, sizeof g32, "%s%.3f (%.0f)", approx, t32, tflops(N, l, t32));
                cell_best(a, sizeof a, bi, V_NHWC_BF16, l, p, 1);
                cell_best(b, sizeof b, bi, V_NHWC_BF16, l, p, 0);
                cell_best(c, sizeof c, bi, V_NCHW_BF16, l, p, 1);
                cell_best(d, sizeof d, bi, V_NCHW_FP32, l, p, 1);
                const numres *nr = &g_sw[bi][V_NHWC_BF16][l][p].num_det;
                if (nr->done) {
                    snprintf(e, sizeof e, "%.1e, %.1e", nr->maxrel, nr->l2);
                    snprintf(r, sizeof r, "%s", nr->repeat_same ? "same bits" : "DIFFERENT");
                }
                printf("| conv%d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", l + 1,
                       PASS_NAME[p], g16, a, e, r, b, c, d, g32);
            }
        printf("\nbatch %d: GEMM engine bf16 error vs the fp32 reference (fp32 outputs), max / l2:",
               N);
        for (int l = 0; l < NLAYER; l++)
            for (int p = 0; p < NPASS; p++)
                if (g_gemm_num[bi][G_BF16][l][p].done)
                    printf(" conv%d %s %.1e / %.1e;", l + 1, PASS_NAME[p],
                           g_gemm_num[bi][G_BF16][l][p].maxrel, g_gemm_num[bi][G_BF16][l][p].l2);
        printf("\nbatch %d: check of the reference, GEMM engine fp32 vs cuDNN fp32 FMA, max:", N);
        for (int l = 0; l < NLAYER; l++)
            for (int p = 0; p < NPASS; p++)
                if (g_gemm_num[bi][G_FP32][l][p].done)
                    printf(" conv%d %s %.1e;", l + 1, PASS_NAME[p],
                           g_gemm_num[bi][G_FP32][l][p].maxrel);
        printf("\n\nbatch %d: the convolutions of one learner step (3 fwd + dgrad conv2, conv3 + "
               "3 wgrad):\n\n| option | fwd sum | bwd sum | step sum | TFLOP/s |\n"
               "|---|---:|---:|---:|---:|\n", N);
        double step_flops = 0;
        for (int l = 0; l < NLAYER; l++) step_flops += 2.0 * macs(N, l) * (l ? 3 : 2);
        double gemm16 = NAN;
        for (int gi = 0; gi < NG; gi++) {
            const double *t0 = g_gemm[bi][gi][0], *t1 = g_gemm[bi][gi][1],
                         *t2 = g_gemm[bi][gi][2];
            const double f = t0[G_FWD] + t1[G_FWD] + t2[G_FWD];
            const double b = t0[G_BWD_NODX] + t1[G_BWD] + t2[G_BWD];
            if (gi == G_BF16) gemm16 = f + b;
            if (isnan(f + b)) printf("| %s (op calls, with bias/ReLU/db) | incomplete | | | |\n",
                                     GEMM_NAME[gi]);
            else
                printf("| %s (op calls, with bias/ReLU/db) | %.3f | %.3f | %.3f | %.0f |\n",
                       GEMM_NAME[gi], f, b, f + b, step_flops / (f + b) / 1e9);
        }
        struct {
            const char *name;
            int v, det;
        } rows[] = {{"cuDNN NHWC bf16, deterministic", V_NHWC_BF16, 1},
                    {"cuDNN NHWC bf16, any determinism", V_NHWC_BF16, 0},
                    {"cuDNN NCHW bf16, deterministic", V_NCHW_BF16, 1},
                    {"cuDNN NCHW fp32 FMA, deterministic", V_NCHW_FP32, 1}};
        double nhwc_det = NAN;
        for (int k = 0; k < 4; k++) {
            double f = 0, b = 0;
            int missing = 0;
            for (int l = 0; l < NLAYER; l++)
                for (int p = 0; p < NPASS; p++) {
                    if (p == DGRAD && !l) continue;
                    const cres *c = best(&g_sw[bi][rows[k].v][l][p], rows[k].det);
                    if (!c) missing++;
                    else (p == FWD ? f : b) += c->ms;
                }
            if (missing) {
                printf("| %s | incomplete (%d of 8 passes missing) | | | |\n", rows[k].name,
                       missing);
                continue;
            }
            if (k == 0) nhwc_det = f + b;
            printf("| %s | %.3f | %.3f | %.3f | %.0f |\n", rows[k].name, f, b, f + b,
                   step_flops / (f + b) / 1e9);
        }
        if (!isnan(g_half[bi]))
            printf("| policy runtime bf16 forward, whole network (%s; u8, FC, heads included) | "
                   "%.3f | | | |\n", g_half_engine, g_half[bi]);
        if (N == 16384 && !isnan(gemm16)) {
            printf("\nbatch 16384: our GEMM bf16 convolutions take %.2f ms of the %.1f ms learner "
                   "step (bench/RESULTS.md): %.0f%%.",
                   gemm16, STEP_MS_16384, 100 * gemm16 / STEP_MS_16384);
            if (!isnan(nhwc_det))
                printf(" cuDNN NHWC bf16 (deterministic) would take %.2f ms: %.2f ms saved, the "
                       "step %.1f ms (%.2fx).",
                       nhwc_det, gemm16 - nhwc_det, STEP_MS_16384 - gemm16 + nhwc_det,
                       STEP_MS_16384 / (STEP_MS_16384 - gemm16 + nhwc_det));
            printf("\n");
        }
    }
    printf("\nNotes: cuDNN rows are bare convolutions (no bias, ReLU or bias gradient; bf16 in and "
           "out); the GEMM engine's include them and read/write fp32 NCHW. ~dgrad = its backward "
           "with dx minus without. err: the fastest deterministic algo's output against cuDNN "
           "fp32 FMA on the same bf16-representable inputs.\n");
    printf("total time %.1f s%s\n", elapsed(), g_cut ? " (the deadline cut the run short: "
                                                       "raise --deadline)" : "");
    fflush(stdout);
}

// ---- main -----------------------------------------------------------------------------------

static void usage(void) {
    fprintf(stderr,
            "usage: conv_train_bench [--batch N]... [--reps N] [--deadline "
            "S] [--ws-cap-mb M] [--no-half]\n"
            "  --batch N      a batch size, 1..65536 (repeatable, at most %d; default 16384 and "
            "4096)\n"
            "  --reps N       timed calls per median, 1..64 (default 10)\n"
            "  --deadline S   seconds after which the rest is skipped, > 0 (default 100)\n"
            "  --ws-cap-mb M  skip algorithms wanting more workspace, > 0 (default 4096)\n"
            "  --no-half      leave out the policy runtime's forward\n",
            MAXB);
    exit(2);
}

static long parse_num(const char *flag, const char *s, long lo, long hi) {
    char *end = NULL;
    if (!s) {
        fprintf(stderr, "conv_train_bench: %s needs a value\n", flag);
        usage();
    }
    const long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > hi) {
        fprintf(stderr, "conv_train_bench: %s %s: want an integer from %ld to %ld\n", flag, s, lo,
                hi);
        usage();
    }
    return v;
}

int main(int argc, char **argv) {
    int nb = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--batch")) {
            if (nb == MAXB) {
                fprintf(stderr, "conv_train_bench: more than %d --batch\n", MAXB);
                usage();
            }
            g_batches[nb++] = (int)parse_num(a, v, 1, 65536), i++;
        } else if (!strcmp(a, "--reps")) g_reps = (int)parse_num(a, v, 1, 64), i++;
        else if (!strcmp(a, "--deadline")) g_deadline = (double)parse_num(a, v, 1, 100000), i++;
        else if (!strcmp(a, "--ws-cap-mb"))
            g_ws_cap = (size_t)parse_num(a, v, 1, 1 << 20) << 20, i++;
        else if (!strcmp(a, "--no-half")) g_no_half = 1;
        else {
            fprintf(stderr, "conv_train_bench: unknown argument %s\n", a);
            usage();
        }
    }
    if (nb) g_nb = nb;
    for (int i = 0; i < MAXB; i++) g_half[i] = NAN;
    for (int b = 0; b < MAXB; b++)
        for (int g = 0; g < NG; g++)
            for (int l = 0; l < NLAYER; l++)
                for (int k = 0; k < NGK; k++) g_gemm[b][g][l][k] = NAN;
    setvbuf(stdout, NULL, _IOLBF, 0);
    g_t0 = now_s();

    if (cr_cuda_ctx_init(&g_ctx, 0) != CUDARL_OK) {
        printf("FATAL: cr_cuda_ctx_init: %s\n", cudarl_last_error());
        return 1;
    }
    cudaDeviceProp prop;
    CUDA_OK(cudaGetDeviceProperties(&prop, 0));
    int rt = 0, drv = 0;
    CUDA_OK(cudaRuntimeGetVersion(&rt));
    CUDA_OK(cudaDriverGetVersion(&drv));
    CUDA_OK(cudaStreamCreateWithFlags(&g_st, cudaStreamNonBlocking));
    CUDNN_OK(cudnnCreate(&g_h));
    CUDNN_OK(cudnnSetStream(g_h, g_st));
    CUDA_OK(cudaEventCreate(&g_ev[0]));
    CUDA_OK(cudaEventCreate(&g_ev[1]));
    CUDA_OK(cudaMalloc(&g_stats, sizeof *g_stats));
    CUDA_OK(cudaMalloc(&g_count, sizeof *g_count));
    printf("conv_train_bench: the Nature-CNN's training convolutions (dev/cuda/conv_train_bench.cu)"
           "\n%s (sm_%d%d, %d SMs), CUDA runtime %d, driver %d, cuDNN %zu (headers %d.%d.%d); "
           "batches",
           prop.name, prop.major, prop.minor, prop.multiProcessorCount, rt, drv,
           cudnnGetVersion(), CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL);
    for (int i = 0; i < g_nb; i++) printf(" %d", g_batches[i]);
    printf("; per call, the median of %d samples (3-5 for calls over 10 ms; a sample: calls "
           "back to back for about 1 ms) after %d warm-up calls; deadline %.0f s; workspace cap "
           "%zu MB\n",
           g_reps, WARMUP, g_deadline, g_ws_cap >> 20);
    if (g_ctx.ops->peaks) {
        cr_peaks pk;
        memset(&pk, 0, sizeof pk);
        g_ctx.ops->peaks(&g_ctx, CUDARL_PRECISION_BF16, &pk);
        printf("bf16 dense tensor-core peak %.1f TFLOP/s at %.0f MHz (the backend's peaks)\n",
               pk.flops / 1e12, pk.clock_hz / 1e6);
    }
    fflush(stdout);

    for (int bi = 0; bi < g_nb; bi++) {
        for (int l = 0; l < NLAYER; l++) run_layer(bi, l);
        if (bi == 0 && !g_no_half) half_forward();
    }
    print_summary();

    CUDA_OK(cudaFree(g_stats));
    CUDA_OK(cudaFree(g_count));
    CUDA_OK(cudaEventDestroy(g_ev[0]));
    CUDA_OK(cudaEventDestroy(g_ev[1]));
    CUDNN_OK(cudnnDestroy(g_h));
    CUDA_OK(cudaStreamDestroy(g_st));
    cr_cuda_ctx_free(&g_ctx);
    return g_cut ? 3 : 0;
}
