// nvcc -O3 -arch=sm_90 -lineinfo dev/cuda/fc_half_forward.cu -o /tmp/fc_half_forward -lcublas
// (dev/cuda/run_half_forward.sh builds and runs it with conv_half_forward.cu)
//
// Kernel lab: the half-precision inference forward's linear stage at small batches (the winner
// lives in src/nn/convnet_half.cu): y (B, O) fp32 = x (B, I) w^T, x and w (O, I) in fp16 or
// bf16, fp32 sums, B <= 8. Default: the bench network's FC, I = 64 x 28 x 28 = 50,176, O = 512
// (51 MB of fp16 weights: the product is a stream of w). The number in brackets is the kernel
// level each version was in src/ before issue 21 (bench/RESULTS.md's figures).
//   v1 [<= 9]  cublasGemmEx, CUBLAS_COMPUTE_32F: at these shapes a split-K GEMM and its reduce,
//              two kernels.
//   v2 [10]    fc_stream_kernel: one kernel, block (x, y) computes 4 outputs over the y-th of up
//              to 8 slices of I, the slices' blocks one cluster whose block 0 sums the others'
//              sums from their shared memory in rank order: no second kernel, and the weights'
//              first loads go before the wait for x.
//   v3 [11]    two slices at most and two register sets in turn (the next step's weights load
//              before this step's products): the blocks are one wave, two per SM, that streams
//              without stopping, where v2's ~4 waves each paid the loads' latency. src/'s.
// Each version's y is checked against a plain-C reference in double on the same values
// (normalized L2 error; the sums are fp32 in each version's own fixed order, so the versions
// round differently from each other), then timed (launches back to back on one stream; src/
// launches v3 with programmatic dependent launch inside a graph).
//
// Usage: fc_half_forward [VERSION] [--batch N] [--in I] [--out O] [--bf16] [--reps N]
// (VERSION 1..3, default all; batch 1 (at most 8); reps 500). Needs compute capability 9.0
// (clusters). Exit 1 if a check fails, 2 on a CUDA or cuBLAS error.
#include <cooperative_groups.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmath>
#include <vector>

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(2);                                                                           \
        }                                                                                      \
    } while (0)
#define CUBLAS_CK(x)                                                                           \
    do {                                                                                       \
        cublasStatus_t s_ = (x);                                                               \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                     \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,                         \
                    cublasGetStatusString(s_));                                                \
            exit(2);                                                                           \
        }                                                                                      \
    } while (0)

template <typename T> __host__ __device__ __forceinline__ T to_fmt(float x);
template <> __host__ __device__ __forceinline__ __half to_fmt<__half>(float x) {
    return __float2half_rn(x);
}
template <> __host__ __device__ __forceinline__ __nv_bfloat16 to_fmt<__nv_bfloat16>(float x) {
    return __float2bfloat16_rn(x);
}
__host__ __device__ __forceinline__ float from_fmt(__half x) { return __half2float(x); }
__host__ __device__ __forceinline__ float from_fmt(__nv_bfloat16 x) { return __bfloat162float(x); }

// Programmatic dependent launch: no-ops here (src/ launches with the attribute).
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_release() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// ---- fc_stream_kernel (v2: DB false, up to 8 slices; v3: DB true, up to 2) ------------------

// Block (x, y) computes outputs FC_ROWS x .. + FC_ROWS - 1 of every row of x over the y-th of CL
// slices of I. Its threads stride over the slice in 8-value vectors, FC_U steps' loads issued
// before their products, the first weights' before the wait for x, and sum the products in fp32
// in a fixed order; the block sums its threads' (warp shuffles, then the warps in order). The CL
// slices' blocks are one cluster: block 0 sums the others' sums from their shared memory in rank
// order, so the bits do not depend on which block ends first. (A first version of v2, one block
// per output group and two steps in flight, streamed at ~1.4 TB/s: slower than cuBLAS.)
#define FC_ROWS 4
#define FC_MAXB 8
#define FC_THREADS 256
#define FC_MAXCL 8 // the portable cluster size
template <typename T, int NB, int CL, bool DB>
static __global__ void __launch_bounds__(FC_THREADS) fc_stream_kernel(const T *__restrict__ w,
                                                                      const T *__restrict__ x,
                                                                      float *__restrict__ y, int I,
                                                                      int O) {
    // steps in flight (registers); DB: two sets, the next step's loads go before this one's
    // products
    constexpr int FC_U = DB ? (NB <= 2 ? 2 : 1) : NB <= 2 ? 4 : NB <= 4 ? 2 : 1;
    constexpr int STEP = FC_U * FC_THREADS;
    __shared__ float part[FC_THREADS / 32][FC_ROWS * NB];
    __shared__ float sum[FC_ROWS * NB];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int o0 = blockIdx.x * FC_ROWS, V = I / 8, VS = (V + CL - 1) / CL;
    const int beg = blockIdx.y * VS, end = beg + VS < V ? beg + VS : V;
    float acc[FC_ROWS][NB];
#pragma unroll
    for (int r = 0; r < FC_ROWS; r++)
#pragma unroll
        for (int b = 0; b < NB; b++) acc[r][b] = 0.0f;
    const uint4 *w4 = (const uint4 *)w, *x4 = (const uint4 *)x;
    uint4 wv[FC_U][FC_ROWS], wn[FC_U][FC_ROWS]; // wn: DB's second set (unused otherwise)
    auto load_w = [&](uint4(&dst)[FC_U][FC_ROWS], int v0) {
#pragma unroll
        for (int u = 0; u < FC_U; u++) {
            const int v = v0 + u * FC_THREADS;
#pragma unroll
            for (int r = 0; r < FC_ROWS; r++)
                dst[u][r] = v < end && o0 + r < O ? __ldcs(w4 + (size_t)(o0 + r) * V + v)
                                                  : make_uint4(0, 0, 0, 0);
        }
    };
    // the products of the step at v0 with its weights cur (a step past the slice adds 0 x 0:
    // +0, no change)
    auto products = [&](const uint4(&cur)[FC_U][FC_ROWS], int v0) {
        uint4 xv[FC_U][NB];
#pragma unroll
        for (int u = 0; u < FC_U; u++) {
            const int v = v0 + u * FC_THREADS;
#pragma unroll
            for (int b = 0; b < NB; b++)
                xv[u][b] = v < end ? __ldg(x4 + (size_t)b * V + v) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < FC_U; u++)
#pragma unroll
            for (int r = 0; r < FC_ROWS; r++) {
                const T *wr = (const T *)&cur[u][r];
#pragma unroll
                for (int b = 0; b < NB; b++) {
                    const T *xb = (const T *)&xv[u][b];
                    float s = acc[r][b];
#pragma unroll
                    for (int e = 0; e < 8; e++) s = fmaf(from_fmt(wr[e]), from_fmt(xb[e]), s);
                    acc[r][b] = s;
                }
            }
    };
    load_w(wv, beg + tid); // the weights are not the predecessor's: their first loads go
    pdl_wait();            // before the wait for x, the predecessor's
    pdl_release();
    if (DB) { // two register sets in turn (unrolled by hand: a copy would wait for the loads)
        for (int v0 = beg + tid; v0 < end; v0 += 2 * STEP) {
            if (v0 + STEP < end) load_w(wn, v0 + STEP);
            products(wv, v0);
            if (v0 + STEP >= end) break;
            if (v0 + 2 * STEP < end) load_w(wv, v0 + 2 * STEP);
            products(wn, v0 + STEP);
        }
    } else {
        for (int v0 = beg + tid; v0 < end; v0 += STEP) {
            products(wv, v0);
            if (v0 + STEP < end) load_w(wv, v0 + STEP);
        }
    }
#pragma unroll
    for (int r = 0; r < FC_ROWS; r++)
#pragma unroll
        for (int b = 0; b < NB; b++) {
            float s = acc[r][b];
#pragma unroll
            for (int d = 16; d > 0; d >>= 1) s = __fadd_rn(s, __shfl_xor_sync(0xffffffffu, s, d));
            if (lane == 0) part[warp][r * NB + b] = s;
        }
    __syncthreads();
    if (tid < FC_ROWS * NB) {
        float s = part[0][tid];
#pragma unroll
        for (int k = 1; k < FC_THREADS / 32; k++) s = __fadd_rn(s, part[k][tid]);
        sum[tid] = s;
    }
    if (CL > 1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
        namespace cg = cooperative_groups;
        cg::cluster_group cl = cg::this_cluster();
        cl.sync(); // every block's sums are in its shared memory
        if (cl.block_rank() == 0 && tid < FC_ROWS * NB) {
            float s = sum[tid];
#pragma unroll
            for (int k = 1; k < CL; k++) s = __fadd_rn(s, *cl.map_shared_rank(&sum[tid], k));
            sum[tid] = s;
        }
        cl.sync(); // block 0 has read the others' sums: they may exit
        if (cl.block_rank() != 0) return;
#elif defined(__CUDA_ARCH__)
        __trap(); // fc_stream launches clusters on compute capability 9.0 and newer only
#endif
    }
    if (tid < FC_ROWS * NB) {
        const int r = tid / NB, b = tid - r * NB;
        if (o0 + r < O) y[(size_t)b * O + o0 + r] = sum[tid];
    }
}

// kernel<T, NB, CL, DB> over CL slices, a cluster of CL blocks along y.
template <typename T, int CL, bool DB>
static void fc_stream_cl(cudaStream_t st, const T *w, const T *x, float *y, int B, int I, int O) {
    void (*k)(const T *, const T *, float *, int, int) = NULL;
    switch (B) {
    case 1: k = fc_stream_kernel<T, 1, CL, DB>; break;
    case 2: k = fc_stream_kernel<T, 2, CL, DB>; break;
    case 3: k = fc_stream_kernel<T, 3, CL, DB>; break;
    case 4: k = fc_stream_kernel<T, 4, CL, DB>; break;
    case 5: k = fc_stream_kernel<T, 5, CL, DB>; break;
    case 6: k = fc_stream_kernel<T, 6, CL, DB>; break;
    case 7: k = fc_stream_kernel<T, 7, CL, DB>; break;
    default: k = fc_stream_kernel<T, 8, CL, DB>; break;
    }
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = 1, at[0].val.clusterDim.y = CL, at[0].val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDim = dim3((unsigned)((O + FC_ROWS - 1) / FC_ROWS), CL);
    cfg.blockDim = dim3(FC_THREADS), cfg.stream = st;
    cfg.attrs = at, cfg.numAttrs = CL > 1 ? 1 : 0;
    CK(cudaLaunchKernelEx(&cfg, k, w, x, y, I, O));
}

// v2: as many slices as there are full blocks of vectors for, up to 8; v3 (db): up to 2.
template <typename T>
static void fc_stream(bool db, cudaStream_t st, const T *w, const T *x, float *y, int B, int I,
                      int O) {
    const int V = I / 8;
    int cl = db ? 2 : FC_MAXCL;
    while (cl > 1 && V / cl < FC_THREADS) cl /= 2;
    if (db) {
        if (cl == 2) fc_stream_cl<T, 2, true>(st, w, x, y, B, I, O);
        else fc_stream_cl<T, 1, true>(st, w, x, y, B, I, O);
    } else if (cl == 8) {
        fc_stream_cl<T, 8, false>(st, w, x, y, B, I, O);
    } else if (cl == 4) {
        fc_stream_cl<T, 4, false>(st, w, x, y, B, I, O);
    } else if (cl == 2) {
        fc_stream_cl<T, 2, false>(st, w, x, y, B, I, O);
    } else {
        fc_stream_cl<T, 1, false>(st, w, x, y, B, I, O);
    }
}

template <typename T> struct dtype_of;
template <> struct dtype_of<__half> { static constexpr cudaDataType_t v = CUDA_R_16F; };
template <> struct dtype_of<__nv_bfloat16> { static constexpr cudaDataType_t v = CUDA_R_16BF; };

// y (B, O) = x (B, I) w^T at version v.
template <typename T>
static void fc_forward(int v, cublasHandle_t blas, cudaStream_t st, const T *w, const T *x,
                       float *y, int B, int I, int O) {
    if (v == 1) {
        // column-major: y^T (O, B) = w (O, I) x^T (I, B): gemm(T, N), as src/'s gemm_ex
        const float one = 1.0f, zero = 0.0f;
        const cudaDataType_t dt = dtype_of<T>::v;
        CUBLAS_CK(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, O, B, I, &one, w, dt, I, x, dt, I,
                               &zero, y, CUDA_R_32F, O, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    } else {
        fc_stream<T>(v == 3, st, w, x, y, B, I, O);
        CK(cudaGetLastError());
    }
}

struct options {
    int version, batch, in, out, bf16, reps;
};

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static float rng_uniform(float lo, float hi) {
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return lo + (hi - lo) * (float)((rng_state >> 40) & 0xFFFFFF) / 16777216.0f;
}

template <typename T> static int run(const options &o) {
    const int B = o.batch, I = o.in, O = o.out;
    std::vector<T> wh((size_t)O * I), xh((size_t)B * I);
    const float bound = 1.0f / sqrtf((float)I);
    for (T &v : wh) v = to_fmt<T>(rng_uniform(-bound, bound));
    for (T &v : xh) v = to_fmt<T>(rng_uniform(0.0f, 2.0f)); // post-ReLU features
    std::vector<double> ref((size_t)B * O);
    for (int b = 0; b < B; b++)
        for (int k = 0; k < O; k++) {
            double s = 0;
            const T *wr = &wh[(size_t)k * I], *xr = &xh[(size_t)b * I];
            for (int i = 0; i < I; i++) s += (double)from_fmt(wr[i]) * from_fmt(xr[i]);
            ref[(size_t)b * O + k] = s;
        }
    T *w, *x;
    float *y;
    CK(cudaMalloc(&w, wh.size() * sizeof(T)));
    CK(cudaMalloc(&x, xh.size() * sizeof(T)));
    CK(cudaMalloc(&y, (size_t)B * O * sizeof(float)));
    CK(cudaMemcpy(w, wh.data(), wh.size() * sizeof(T), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(x, xh.data(), xh.size() * sizeof(T), cudaMemcpyHostToDevice));
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    cublasHandle_t blas;
    CUBLAS_CK(cublasCreate(&blas));
    CUBLAS_CK(cublasSetStream(blas, st));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    const double tol = 1e-4; // fp32 sums of I products against double's
    int failed = 0;
    printf("B %d, I %d, O %d, %s: %.1f MB of weights\n\n| v | level | ms | weights GB/s | error vs "
           "CPU |\n|---|---|---|---|---|\n", B, I, O, o.bf16 ? "bf16" : "fp16",
           wh.size() * sizeof(T) / 1e6);
    static const char *const level[4] = {"", "<= 9", "10", "11"};
    for (int v = 1; v <= 3; v++) {
        if (o.version && o.version != v) continue;
        CK(cudaMemset(y, 0xff, (size_t)B * O * sizeof(float))); // NaNs: every output written
        fc_forward<T>(v, blas, st, w, x, y, B, I, O);
        std::vector<float> yh((size_t)B * O);
        CK(cudaMemcpyAsync(yh.data(), y, yh.size() * sizeof(float), cudaMemcpyDeviceToHost, st));
        CK(cudaStreamSynchronize(st));
        double e2 = 0, r2 = 0;
        for (size_t i = 0; i < yh.size(); i++) {
            const double d = yh[i] - ref[i];
            e2 += d * d, r2 += ref[i] * ref[i];
        }
        const double err = sqrt(e2 / (r2 > 0 ? r2 : 1));
        if (!(err <= tol)) failed = 1;
        for (int r = 0; r < 10; r++) fc_forward<T>(v, blas, st, w, x, y, B, I, O);
        CK(cudaEventRecord(e0, st));
        for (int r = 0; r < o.reps; r++) fc_forward<T>(v, blas, st, w, x, y, B, I, O);
        CK(cudaEventRecord(e1, st));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        ms /= (float)o.reps;
        printf("| v%d | %s | %.4f | %.0f | %.2g%s |\n", v, level[v], ms,
               wh.size() * sizeof(T) / (ms * 1e-3) / 1e9, err, err <= tol ? "" : " FAIL");
    }
    printf("\nerror: ||gpu - cpu|| / ||cpu|| (<= %g)%s\n", tol, failed ? "; FAILED" : "");
    CUBLAS_CK(cublasDestroy(blas));
    return failed;
}

int main(int argc, char **argv) {
    options o = {0, 1, 64 * 28 * 28, 512, 0, 500};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const bool more = i + 1 < argc;
        if (!strcmp(a, "--batch") && more) o.batch = atoi(argv[++i]);
        else if (!strcmp(a, "--in") && more) o.in = atoi(argv[++i]);
        else if (!strcmp(a, "--out") && more) o.out = atoi(argv[++i]);
        else if (!strcmp(a, "--reps") && more) o.reps = atoi(argv[++i]);
        else if (!strcmp(a, "--bf16")) o.bf16 = 1;
        else if (a[0] != '-' && atoi(a) >= 1 && atoi(a) <= 3) o.version = atoi(a);
        else {
            fprintf(stderr, "usage: %s [VERSION 1..3] [--batch N] [--in I] [--out O] [--bf16] "
                            "[--reps N]\n", argv[0]);
            return 1;
        }
    }
    if (o.batch < 1 || o.batch > FC_MAXB || o.in < 8 || o.in % 8 || o.out < 1 || o.reps < 1) {
        fprintf(stderr, "%s: --batch 1..%d, --in a multiple of 8, --out and --reps >= 1\n",
                argv[0], FC_MAXB);
        return 1;
    }
    int dev = 0, major = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    if (major < 9) {
        fprintf(stderr, "%s: needs compute capability 9.0 or newer (clusters)\n", argv[0]);
        return 1;
    }
    return o.bf16 ? run<__nv_bfloat16>(o) : run<__half>(o);
}
