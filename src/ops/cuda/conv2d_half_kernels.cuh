// What the half-precision forward's kernel files share (conv2d_half.cu, conv2d_half_mma.cu and
// nn/convnet_half.cu): the formats and their conversions, the activations, the launch helpers
// (programmatic dependent launch, clusters), a conv stage's arguments (hconv_args) and the pieces
// its kernels share: the byte conversion, the output tile's writer, cp.async, ldmatrix and the
// m16n8k16 product. Internal to these files; every function is static or a template, so that each
// file's kernels are compiled with their helpers inlined.
#ifndef CUDARL_CONVNET_HALF_KERNELS_CUH
#define CUDARL_CONVNET_HALF_KERNELS_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <string.h>

#include "ops/cuda/cuda_common.cuh"
#include "ops/cuda/tanh_device.cuh"
#include "ops/cuda/conv2d_half.cuh"

#define HC_LDS (HALF_BK + 8)     // elements per row of a shared tile: 80 bytes, so that rows start
                                 // 16-byte aligned and 8 rows' 16-byte pieces hit 32 banks once

enum { ACT_NONE = 0, ACT_RELU, ACT_TANH };

static inline size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// Programmatic dependent launch (compute capability 9.0 on): the forward's kernels are
// launched so that each may start while the one before it finishes; each waits for its
// predecessor's completion (and memory) before it reads or writes anything the predecessor
// could touch (pdl_wait), then lets its own successor launch (pdl_release). Without the launch
// attribute both are no-ops.
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
// Attribute a of the current device; 0 where it cannot be read.
static inline int device_attr(cudaDeviceAttr a) {
    int dev = 0, v = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&v, a, dev) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return v;
}
static inline bool pdl_usable(void) { return device_attr(cudaDevAttrComputeCapabilityMajor) >= 9; }
// Whether the device launches clusters of blocks (compute capability 9.0 on).
static inline bool cluster_usable(void) { return device_attr(cudaDevAttrClusterLaunch) != 0; }
// kernel<<<grid, block, smem, st>>>(args...) in clusters of cluster_y blocks along y (1: none;
// more needs compute capability 9.0), with the programmatic-serialization attribute on devices
// that have it.
template <typename... KArgs, typename... Args>
static void launch_kc(cudaStream_t st, dim3 grid, dim3 block, size_t smem, unsigned cluster_y,
                      void (*k)(KArgs...), Args... args) {
    const bool pdl = pdl_usable();
    if (pdl || cluster_y > 1) {
        cudaLaunchAttribute at[2];
        unsigned n = 0;
        if (pdl) {
            at[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
            at[n++].val.programmaticStreamSerializationAllowed = 1;
        }
        if (cluster_y > 1) {
            at[n].id = cudaLaunchAttributeClusterDimension;
            at[n].val.clusterDim.x = 1, at[n].val.clusterDim.y = cluster_y;
            at[n++].val.clusterDim.z = 1;
        }
        cudaLaunchConfig_t cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.gridDim = grid, cfg.blockDim = block, cfg.dynamicSmemBytes = smem, cfg.stream = st;
        cfg.attrs = at, cfg.numAttrs = n;
        cudaLaunchKernelEx(&cfg, k, ((KArgs)args)...);
    } else {
        k<<<grid, block, smem, st>>>(((KArgs)args)...);
    }
}
template <typename... KArgs, typename... Args>
static void launch_k(cudaStream_t st, dim3 grid, dim3 block, size_t smem, void (*k)(KArgs...),
                     Args... args) {
    launch_kc(st, grid, block, smem, 1, k, args...);
}

// ---- the formats ---------------------------------------------------------------------------

template <typename T> __host__ __device__ __forceinline__ T to_fmt(float x);
template <> __host__ __device__ __forceinline__ __half to_fmt<__half>(float x) {
    return __float2half_rn(x);
}
template <> __host__ __device__ __forceinline__ __nv_bfloat16 to_fmt<__nv_bfloat16>(float x) {
    return __float2bfloat16_rn(x);
}
__device__ __forceinline__ float from_fmt(__half x) { return __half2float(x); }
__device__ __forceinline__ float from_fmt(__nv_bfloat16 x) { return __bfloat162float(x); }
__host__ __device__ __forceinline__ unsigned bits_of(__half x) { return __half_as_ushort(x); }
__host__ __device__ __forceinline__ unsigned bits_of(__nv_bfloat16 x) {
    return __bfloat16_as_ushort(x);
}

// Two values as one 32-bit word, a at the lower address.
template <typename T> __host__ __device__ __forceinline__ unsigned pack2(T a, T b) {
    return bits_of(a) | (bits_of(b) << 16);
}

__device__ __forceinline__ float act_apply(int act, float v) {
    if (act == ACT_RELU) return v < 0.0f ? 0.0f : v; // NaN and -0 pass, as the CPU's
    if (act == ACT_TANH) return cr_tanhf_device(v);
    return v;
}

// ---- a conv stage as its kernels read it ----------------------------------------------------

// One conv stage as the kernel reads it. M = N P Q output pixels (< 2^31: cr_convnet_cuda_init
// refuses larger batches).
struct hconv_args {
    const void *x;  // IN_U8, IN_F32: the observations (N, C, H, W); IN_NHWC: (N, H, W, C) format
    const void *w;  // (Kp, CRSp) format, taps in the input's order, zero-padded
    const float *b; // (K)
    void *y;        // format: (N, P, Q, K), or (N, K, P, Q) when out_nchw
    long long M;
    int K, C, H, W, R, S, stride, pad, P, Q, CRSp;
    int scale255, act, out_nchw;
    int div255;   // u8_words with / 255: the products take the bytes themselves (exact in
                  // either format) and the sums are divided by 255 before the bias
    int u8_words; // IN_U8 with 4 taps of a row one aligned 32-bit word: no padding, and S,
                  // stride and W multiples of 4 (the Nature-CNN's 8x8/4 conv on 256 or 84 pixels)
    int cps;        // chunks of HALF_BK taps per split: block z sums chunks [z cps, (z + 1) cps)
    float *partial; // split-K: (splits, M, K) raw sums, written instead of y; NULL: one split
};

__host__ __device__ __forceinline__ bool inside(const hconv_args &a, int h, int w) {
    return (unsigned)h < (unsigned)a.H && (unsigned)w < (unsigned)a.W;
}

// Four bytes (the lowest first) as four values of the format, exactly (0 .. 255 are exact in
// fp16 and bf16), as two words of two values each, the lower value in the lower half: fp16 by
// the magic number 1024 (0x6400 | b is 1024 + b; one subtraction of 1024 per pair), bf16 through
// float's 2^23.
template <typename T> __device__ __forceinline__ uint2 bytes_exact(unsigned w);
template <> __device__ __forceinline__ uint2 bytes_exact<__half>(unsigned w) {
    union { unsigned u; __half2 h; } lo, hi;
    lo.u = __byte_perm(w, 0x64646464u, 0x5140); // 1024 + b0, 1024 + b1
    hi.u = __byte_perm(w, 0x64646464u, 0x7362); // 1024 + b2, 1024 + b3
    const __half2 magic = __float2half2_rn(1024.0f);
    lo.h = __hsub2(lo.h, magic);
    hi.h = __hsub2(hi.h, magic);
    return make_uint2(lo.u, hi.u);
}
template <> __device__ __forceinline__ uint2 bytes_exact<__nv_bfloat16>(unsigned w) {
    float f[4];
#pragma unroll
    for (int b = 0; b < 4; b++)
        f[b] = __uint_as_float(0x4B000000u | ((w >> (8 * b)) & 255u)) - 8388608.0f;
    return make_uint2(pack2(__float2bfloat16_rn(f[0]), __float2bfloat16_rn(f[1])),
                      pack2(__float2bfloat16_rn(f[2]), __float2bfloat16_rn(f[3])));
}

// A conv's sum as its outputs take it: divided by 255 where the products took the bytes
// themselves (hconv_args.div255).
__device__ __forceinline__ float hc_scaled(const hconv_args &a, float sum) {
    return a.div255 ? __fdiv_rn(sum, 255.0f) : sum;
}
__device__ __forceinline__ float4 hc_scaled4(const hconv_args &a, float4 v) {
    if (a.div255)
        v = make_float4(__fdiv_rn(v.x, 255.0f), __fdiv_rn(v.y, 255.0f), __fdiv_rn(v.z, 255.0f),
                        __fdiv_rn(v.w, 255.0f));
    return v;
}

// Output pixel m's window: its top left (h0, w0), padding included, and its image's first
// element nbase.
__device__ __forceinline__ void hconv_window(const hconv_args &a, long long m, int *h0, int *w0,
                                             size_t *nbase) {
    const unsigned PQ = (unsigned)(a.P * a.Q), n = (unsigned)m / PQ; // m < M < 2^31
    const int pq = (int)((unsigned)m - n * PQ), p = pq / a.Q, q = pq - p * a.Q;
    *h0 = p * a.stride - a.pad, *w0 = q * a.stride - a.pad;
    *nbase = (size_t)n * a.C * a.H * a.W;
}

// Eight values rounded to the format, as one 16-byte vector.
template <typename T>
__device__ __forceinline__ uint4 pack8(const float (&v)[8]) {
    return make_uint4(pack2(to_fmt<T>(v[0]), to_fmt<T>(v[1])), pack2(to_fmt<T>(v[2]), to_fmt<T>(v[3])),
                      pack2(to_fmt<T>(v[4]), to_fmt<T>(v[5])), pack2(to_fmt<T>(v[6]), to_fmt<T>(v[7])));
}

// The block's fp32 output tile in shared memory to y as act(b + sum) rounded once to the format
// (or to the raw partial sums): Cs[pixel][channel] with rows of LDR floats where the partials or
// a channels-last y take it, else Cs[channel][pixel] with rows of LDC floats. NT threads, this
// one tid. 8 outputs per item where the layout allows: 8 channels of a pixel (channels-last y or
// the partial sums; K a multiple of 8), or 8 pixels of a channel ((N, K, P, Q) y; P Q a multiple
// of 8, so that 8 pixels from a multiple of 8 are one image's); each item one 16-byte store (32
// for partial sums) and one division. Items the vectors cannot take (the channels past the last
// multiple of 8) go one element at a time.
template <typename T, int BM, int BN, int LDR, int LDC, int NT>
__device__ __forceinline__ void hconv_write_tile(const hconv_args &a, const float *Cs,
                                                 long long m0, int k0, int tid) {
    T *y = (T *)a.y;
    const int PQ = a.P * a.Q;
    if (a.partial || !a.out_nchw) { // an item: 8 channels of one pixel
        constexpr int G = BN / 8;
        float *part = a.partial ? a.partial + (size_t)blockIdx.z * (size_t)a.M * a.K : NULL;
        for (int e = tid; e < BM * G; e += NT) {
            const int mi = e / G, k = k0 + (e - mi * G) * 8;
            const long long mm = m0 + mi;
            if (mm >= a.M || k >= a.K) continue;
            const float *c = Cs + mi * LDR + (k - k0);
            const size_t at = (size_t)mm * a.K + k;
            if ((a.K & 7) == 0) {
                float4 c0 = *(const float4 *)c, c1 = *(const float4 *)(c + 4);
                if (part) {
                    *(float4 *)(part + at) = c0; // hconv_reduce_kernel's
                    *(float4 *)(part + at + 4) = c1;
                    continue;
                }
                c0 = hc_scaled4(a, c0), c1 = hc_scaled4(a, c1);
                const float4 b0 = *(const float4 *)(a.b + k), b1 = *(const float4 *)(a.b + k + 4);
                const float v[8] = {
                    act_apply(a.act, __fadd_rn(c0.x, b0.x)), act_apply(a.act, __fadd_rn(c0.y, b0.y)),
                    act_apply(a.act, __fadd_rn(c0.z, b0.z)), act_apply(a.act, __fadd_rn(c0.w, b0.w)),
                    act_apply(a.act, __fadd_rn(c1.x, b1.x)), act_apply(a.act, __fadd_rn(c1.y, b1.y)),
                    act_apply(a.act, __fadd_rn(c1.z, b1.z)), act_apply(a.act, __fadd_rn(c1.w, b1.w))};
                *(uint4 *)(y + at) = pack8<T>(v);
                continue;
            }
            for (int t = 0; t < 8 && k + t < a.K; t++) {
                if (part) part[at + t] = c[t];
                else y[at + t] = to_fmt<T>(act_apply(a.act, __fadd_rn(hc_scaled(a, c[t]), a.b[k + t])));
            }
        }
    } else { // y (N, K, P, Q); an item: 8 pixels of one channel
        constexpr int G = BM / 8;
        for (int e = tid; e < BN * G; e += NT) {
            const int ki = e / G, mi = (e - ki * G) * 8, k = k0 + ki;
            const long long mm = m0 + mi;
            if (mm >= a.M || k >= a.K) continue;
            const float *c = Cs + ki * LDC + mi;
            const float bk = a.b[k];
            if ((PQ & 7) == 0) { // the 8 pixels are one image's, and all of them < M
                const unsigned n = (unsigned)mm / (unsigned)PQ; // mm < M < 2^31
                const int pq = (int)((unsigned)mm - n * (unsigned)PQ);
                const float4 c0 = hc_scaled4(a, *(const float4 *)c),
                             c1 = hc_scaled4(a, *(const float4 *)(c + 4));
                const float v[8] = {
                    act_apply(a.act, __fadd_rn(c0.x, bk)), act_apply(a.act, __fadd_rn(c0.y, bk)),
                    act_apply(a.act, __fadd_rn(c0.z, bk)), act_apply(a.act, __fadd_rn(c0.w, bk)),
                    act_apply(a.act, __fadd_rn(c1.x, bk)), act_apply(a.act, __fadd_rn(c1.y, bk)),
                    act_apply(a.act, __fadd_rn(c1.z, bk)), act_apply(a.act, __fadd_rn(c1.w, bk))};
                *(uint4 *)(y + ((size_t)n * a.K + k) * PQ + pq) = pack8<T>(v);
                continue;
            }
            for (int t = 0; t < 8 && mm + t < a.M; t++) {
                const long long n = (mm + t) / PQ;
                const int pq = (int)(mm + t - n * PQ);
                y[((size_t)n * a.K + k) * PQ + pq] =
                    to_fmt<T>(act_apply(a.act, __fadd_rn(hc_scaled(a, c[t]), bk)));
            }
        }
    }
}

// ---- cp.async -------------------------------------------------------------------------------

// 16 bytes from global src to shared dst without a register in between (cp.async, sm_80); with
// valid false nothing is read and the 16 bytes are zeros (src must still be a mapped address).
__device__ __forceinline__ void cp_async16(void *dst, const void *src, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
                 "r"(valid ? 16 : 0));
#endif
}
// cp_async16 through L1 (cp.async.ca): for tiles whose bytes neighbouring pixels' windows read
// again (a conv's input), where .cg would fetch them from L2 each time.
__device__ __forceinline__ void cp_async16_ca(void *dst, const void *src, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
                 "r"(valid ? 16 : 0));
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}
// Waits until at most N of this thread's committed groups are still in flight.
template <int N> __device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

// ---- ldmatrix and mma.sync ----------------------------------------------------------------

// Four 8 x 8 matrices of 16-bit elements from shared memory (ldmatrix): lane l gives the address
// of row l % 8 of matrix l / 8; each lane gets element pair (l / 4, 2 (l % 4) .. + 1) of each.

// ldsm_x4 from a shared-window address (cvta'd by the caller).
__device__ __forceinline__ void ldsm_x4_at(unsigned (&r)[4], unsigned a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
#endif
}
// The same from a generic pointer into shared memory.
__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], const void *p) {
    ldsm_x4_at(r, (unsigned)__cvta_generic_to_shared(p));
}

// d += a b on the tensor cores: m16n8k16, a row-major (16 x 16), b column-major (16 x 8), fp32
// accumulators (the instruction a WMMA 16x16x16 product is made of, two per WMMA); F the
// inputs' PTX type, f16 or bf16. Not volatile: registers only, so the compiler may interleave
// the products with the next fragments' loads.
#define HC_MMA16816(F, d, a, b0, b1)                                                              \
    asm("mma.sync.aligned.m16n8k16.row.col.f32." F "." F ".f32 {%0, %1, %2, %3}, "               \
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"                                         \
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                         \
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1))

template <typename T>
__device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                                         unsigned b1);
template <>
__device__ __forceinline__ void mma16816<__half>(float (&d)[4], const unsigned (&a)[4],
                                                 unsigned b0, unsigned b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    HC_MMA16816("f16", d, a, b0, b1);
#endif
}
template <>
__device__ __forceinline__ void mma16816<__nv_bfloat16>(float (&d)[4], const unsigned (&a)[4],
                                                        unsigned b0, unsigned b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    HC_MMA16816("bf16", d, a, b0, b1);
#endif
}

// The B fragments of a k16 step for 4 n8 tiles (32 channels): two ldmatrix x4, at b0 (this
// lane's row, see hconv_warp_k16) and 16 channel rows (rows16 bytes) further.
__device__ __forceinline__ void hconv_ldsm_b(unsigned (&bf)[4][2], unsigned b0, unsigned rows16) {
#pragma unroll
    for (int jp = 0; jp < 2; jp++) {
        unsigned t4[4];
        ldsm_x4_at(t4, b0 + jp * rows16);
        bf[2 * jp][0] = t4[0], bf[2 * jp][1] = t4[1];
        bf[2 * jp + 1][0] = t4[2], bf[2 * jp + 1][1] = t4[3];
    }
}
// acc[i][j] += af[i] bf[j], m16n8k16, in (i, j) order.
template <typename T, int MI>
__device__ __forceinline__ void hconv_mma_mi(float (&acc)[MI][4][4], const unsigned (&af)[MI][4],
                                             const unsigned (&bf)[4][2]) {
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) mma16816<T>(acc[i][j], af[i], bf[j][0], bf[j][1]);
}

// A warp's MI x 4 m16n8 fp32 accumulators set to zero (hconv_warp_k16's 64 x 32, MI 4; the
// s2d kernel's 32 x 32, MI 2).
template <int MI> __device__ __forceinline__ void hconv_warp_zero(float (&acc)[MI][4][4]) {
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;
}

// ---- the kernels' launches (conv2d_half_mma.cu) ----------------------------------------------

// A channels-last conv with C a multiple of 8 and K > 32 on the mma.sync kernels, splits blocks
// along the taps (a.partial set when splits > 1).
template <typename T> void hconv_launch_mma(cudarl_ctx *ctx, const hconv_args &a, int splits);
// The first conv on hconv_s2d_kernel (cr_conv2d_half_s2d_fits): items (two output rows of an image
// each) over grid persistent blocks.
template <typename T>
void hconv_launch_s2d(cudarl_ctx *ctx, const hconv_args &a, int items, int grid);

#endif
