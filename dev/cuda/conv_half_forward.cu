// nvcc -O3 -arch=sm_90 -lineinfo dev/cuda/conv_half_forward.cu -o /tmp/conv_half_forward
// (dev/cuda/run_half_forward.sh builds and runs it with fc_half_forward.cu)
//
// Kernel lab: the conv stages of the half-precision inference forward (the winner lives in
// src/ops/cuda/conv2d_half.cu and conv2d_half_mma.cu): fp16 or bf16 products on the tensor
// cores, fp32 sums, the bias and ReLU on the sums, each output rounded once to the format. The
// network is the bench's (tools/bench_infer.c): conv1 32@8x8/4 over 4 uint8 / 255 channels
// (NCHW), conv2 64@4x4/2 and conv3 64@3x3/1 over channels-last input; --hw 84 gives the
// Nature-CNN at Atari size. Each version is the one before with one change; the number in
// brackets is the kernel level it was in src/ before issue 21 (bench/RESULTS.md's figures).
//   v1 [0]   hconv_kernel for all three: an implicit GEMM on WMMA 16x16x16 gathering its im2col
//            tiles straight from the input (no im2col matrix), staged through registers two
//            chunks deep, one output per store in the epilogue.
//   v2 [1]   conv2, conv3 on hconv_nhwc_kernel: tiles copied global -> shared by cp.async three
//            chunks deep, no staging registers (v1's channels-last convs were latency-bound).
//   v3 [2]   every epilogue writes 8 outputs per 16-byte store with one division per 8, where v2
//            spent index arithmetic and a 2-byte store on each output.
//   v4 [3]   conv1 multiplies the uint8 bytes themselves (exact in either format) and divides
//            its sums by 255 before the bias: no byte table to fill and read per block.
//   v5 [4]   conv2, conv3 on hconv_mma_kernel: warps of 64 x 32 outputs by ldmatrix and mma.sync
//            m16n8k16, 32 tensor instructions for 12 fragment loads per chunk (v4: 16 for 8).
//   v6 [5]   conv1 on hconv_s2d_kernel, a 2x2 conv over 4 x 4 blocks of pixels in shared
//            memory: each A fragment one ldmatrix, where v5 gathered every tap word by word.
//   v7 [7]   conv2, conv3 on hconv_mma_lean_kernel: v6's products in fewer instructions (each
//            copy a pointer plus one offset, addresses computed once, the epilogue's divisions
//            and bias loads hoisted).
//   v8 [8]   its chunks 64 taps wide where every split's taps allow: half the barriers.
//   v9 [12]  unsplit conv2, conv3 on hconv_halo_kernel: a tile's input rows copied into shared
//            memory once, 3x (conv2) to 5.6x (conv3) fewer bytes than each pixel's taps. src/'s.
// Same bits: v1-v3, v4-v5, v6-v9 (checked here, every stage, bit for bit). Rounded otherwise:
// v4 (conv1's inputs are the bytes, not bytes / 255 rounded to the format) and v6 (conv1's taps
// in another order, scaled by 1/255 in the bias's FMA).
//
// Every version's stages are checked against a plain-C reference in double on the same inputs
// (the version's own previous stage, so each stage is checked alone): normalized L2 error, the
// format's rounding of the outputs (~3e-4 fp16, ~2e-3 bf16); a wrong index is O(1). At small
// batches a stage splits its taps across blocks as src/ does (up to two blocks per SM), and
// hconv_reduce_kernel adds the splits' partial sums in order. The timings are the stages'
// launches back to back on one stream (no graph, no programmatic dependent launch: src/'s
// forward has both, and its heads and FC; `cudarl bench infer` times that).
//
// Usage: conv_half_forward [VERSION] [--batch N] [--hw 256|84] [--bf16] [--reps N] [--check N]
// (VERSION 1..9, default all; batch 128; hw 256; reps 200; --check images per stage against the
// CPU, default 2: the first and the last). Exit 1 if a check fails, 2 on a CUDA error.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>
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

#define HALF_KP 64 // conv weights: K rounded up to a whole tile of output channels
#define HALF_BK 32 // taps per chunk; C R S rounded up to it
#define HC_THREADS 256           // threads of a conv block: 8 warps
#define HC_LDS (HALF_BK + 8)     // elements per row of a shared tile: 80 bytes, so that rows start
                                 // 16-byte aligned and 8 rows' 16-byte pieces hit 32 banks once

enum { ACT_NONE = 0, ACT_RELU };
enum { IN_U8 = 0, IN_F32, IN_NHWC }; // what a conv stage reads

static size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// Programmatic dependent launch (compute capability 9.0 on; src/ launches with it, this lab
// without, where both are no-ops): the forward's kernels are
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

// The activation: ReLU or none (the lab's net is all ReLU; src/ has tanh too).
__device__ __forceinline__ float act_apply(int act, float v) {
    if (act == ACT_RELU) return v < 0.0f ? 0.0f : v; // NaN and -0 pass, as the CPU's
    return v;
}

// ---- the conv kernel -----------------------------------------------------------------------

// One conv stage as the kernel reads it. M = N P Q output pixels (< 2^31).
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
                  // stride and W multiples of 4 (the bench network's 8x8/4 conv on 256 or 84 pixels)
    int cps;        // chunks of HALF_BK taps per split: block z sums chunks [z cps, (z + 1) cps)
    float *partial; // split-K: (splits, M, K) raw sums, written instead of y; NULL: one split
};

// The tile of a block of 8 warps, WN warps across the channels.
template <int WN> struct hconv_tile {
    static constexpr int WM = 8 / WN;              // warps across the pixels
    static constexpr int BM = 32 * WM;             // pixels per block: 128 (WN 2) or 256 (WN 1)
    static constexpr int BN = 32 * WN;             // channels per block: 64 or 32
    static constexpr int TPR = HC_THREADS / BM;    // threads gathering one pixel's taps: 2 or 1
    static constexpr int JT = HALF_BK / TPR;       // taps each of them gathers a chunk: 16 or 32
    static constexpr int AV = JT / 8;              // as 16-byte vectors of 8 values
    static constexpr int AB_BYTES = 2 * (BM + BN) * HC_LDS * 2; // A and B tiles, two buffers
    static constexpr int C_ELEMS =
        BM * (BN + 4) > BN * (BM + 4) ? BM * (BN + 4) : BN * (BM + 4); // the fp32 output tile
    static constexpr int SMEM = AB_BYTES > C_ELEMS * 4 ? AB_BYTES : C_ELEMS * 4;
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

// out = the JT taps j0 .. j0 + JT - 1 of pixel row m of A (the im2col matrix, never stored), in
// the format, 8 to a vector; zeros for taps past C R S, for the padding, and for rows m >= M.
// The pixel is given by nbase (its image's first element) and h0, w0 (its window's top left,
// padding included). lut (IN_U8): the format's value of each uint8 (x / 255 or x).
template <typename T, int IN, int JT>
__host__ __device__ __forceinline__ void gather_a(const hconv_args &a, bool mvalid, size_t nbase,
                                                  int h0, int w0, int j0, const T *lut,
                                                  uint4 (&out)[JT / 8]) {
    if (IN == IN_NHWC && (a.C & 7) == 0) {
        // taps j = (r S + s) C + c: 8 channels of one tap are 16 contiguous, aligned bytes
        const T *x = (const T *)a.x;
        int rs = j0 / a.C, c = j0 - rs * a.C, r = rs / a.S, s = rs - r * a.S;
#pragma unroll
        for (int v = 0; v < JT / 8; v++) {
            const int h = h0 + r, w = w0 + s;
            uint4 val = make_uint4(0u, 0u, 0u, 0u);
            if (mvalid && r < a.R && inside(a, h, w))
                val = *(const uint4 *)(x + nbase + ((size_t)h * a.W + w) * a.C + c);
            out[v] = val;
            c += 8;
            if (c == a.C) {
                c = 0;
                if (++s == a.S) s = 0, ++r;
            }
        }
        return;
    }
    T v[JT];
    if (IN == IN_NHWC) { // channels-last with C not a multiple of 8: one value at a time
        const T *x = (const T *)a.x;
        int rs = j0 / a.C, c = j0 - rs * a.C, r = rs / a.S, s = rs - r * a.S;
#pragma unroll
        for (int e = 0; e < JT; e++) {
            const int h = h0 + r, w = w0 + s;
            T val = to_fmt<T>(0.0f);
            if (mvalid && r < a.R && inside(a, h, w))
                val = x[nbase + ((size_t)h * a.W + w) * a.C + c];
            v[e] = val;
            if (++c == a.C) {
                c = 0;
                if (++s == a.S) s = 0, ++r;
            }
        }
    } else if (IN == IN_U8 && a.u8_words) { // 4 taps (s .. s + 3 of one row) a word
        const uint8_t *x = (const uint8_t *)a.x;
        const int RS = a.R * a.S;
        int c = j0 / RS, rs = j0 - c * RS, r = rs / a.S, s = rs - r * a.S;
        if (a.div255) { // the bytes themselves: two words of the tile per word read, no table
            unsigned packed[JT / 2];
#pragma unroll
            for (int g = 0; g < JT / 4; g++) {
                unsigned word = 0; // past C R S (c == C): zeros
                if (mvalid && c < a.C)
                    word = *(const unsigned *)(x + nbase + ((size_t)c * a.H + h0 + r) * a.W +
                                               w0 + s);
                const uint2 two = bytes_exact<T>(word);
                packed[2 * g] = two.x, packed[2 * g + 1] = two.y;
                s += 4;
                if (s == a.S) {
                    s = 0;
                    if (++r == a.R) r = 0, ++c;
                }
            }
#pragma unroll
            for (int q = 0; q < JT / 8; q++)
                out[q] = make_uint4(packed[4 * q], packed[4 * q + 1], packed[4 * q + 2],
                                    packed[4 * q + 3]);
            return;
        }
#pragma unroll
        for (int g = 0; g < JT / 4; g++) {
            unsigned word = 0; // past C R S (c == C): zeros, lut[0] = 0
            if (mvalid && c < a.C)
                word = *(const unsigned *)(x + nbase + ((size_t)c * a.H + h0 + r) * a.W + w0 + s);
#pragma unroll
            for (int b = 0; b < 4; b++) v[4 * g + b] = lut[(word >> (8 * b)) & 255u];
            s += 4;
            if (s == a.S) {
                s = 0;
                if (++r == a.R) r = 0, ++c;
            }
        }
    } else { // the observations (N, C, H, W), taps j = (c R + r) S + s
        const int RS = a.R * a.S;
        int c = j0 / RS, rs = j0 - c * RS, r = rs / a.S, s = rs - r * a.S;
#pragma unroll
        for (int e = 0; e < JT; e++) {
            const int h = h0 + r, w = w0 + s;
            const bool in = mvalid && c < a.C && inside(a, h, w);
            const size_t i = nbase + ((size_t)c * a.H + h) * a.W + w;
            if (IN == IN_U8) v[e] = lut[in ? ((const uint8_t *)a.x)[i] : 0];
            else v[e] = to_fmt<T>(in ? ((const float *)a.x)[i] : 0.0f);
            if (++s == a.S) {
                s = 0;
                if (++r == a.R) r = 0, ++c;
            }
        }
    }
#pragma unroll
    for (int q = 0; q < JT / 8; q++)
        out[q] = make_uint4(pack2(v[8 * q], v[8 * q + 1]), pack2(v[8 * q + 2], v[8 * q + 3]),
                            pack2(v[8 * q + 4], v[8 * q + 5]), pack2(v[8 * q + 6], v[8 * q + 7]));
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

// One chunk's products: warp (wm, wn)'s 32 x 32 accumulators += its rows of the A tile At
// (pixels x taps) times its columns of the B tile Bt (element (tap t, channel c) at
// Bt[c * HC_LDS + t]), two k16 steps.
template <typename T>
__device__ __forceinline__ void
hconv_mma_chunk(const T *At, const T *Bt, int wm, int wn,
                nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> (&acc)[2][2]) {
    using namespace nvcuda;
#pragma unroll
    for (int ks = 0; ks < HALF_BK; ks += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa[2];
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fb[2];
#pragma unroll
        for (int i = 0; i < 2; i++)
            wmma::load_matrix_sync(fa[i], At + (wm * 32 + i * 16) * HC_LDS + ks, HC_LDS);
#pragma unroll
        for (int j = 0; j < 2; j++)
            wmma::load_matrix_sync(fb[j], Bt + (wn * 32 + j * 16) * HC_LDS + ks, HC_LDS);
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int j = 0; j < 2; j++) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
}

// The end of a conv block: its accumulators (warp (wm, wn)'s 32 x 32 outputs) through shared
// memory (smem, free again: the caller's barrier) to y as act(b + sum) in the format, or, split,
// to the block's partial sums; y channels-last, or (N, K, P, Q) when a.out_nchw.
// A block's WMMA accumulators (warp (wm, wn)'s 32 x 32 outputs) into shared memory (smem, free
// again: the caller's barrier) as the fp32 output tile, then a barrier: Cs[pixel][channel] with
// rows of BN + 4 floats where `rows`, else Cs[channel][pixel] with rows of BM + 4.
template <int BM, int BN>
__device__ __forceinline__ float *
hconv_stage_acc(nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> (&acc)[2][2],
                unsigned char *smem, bool rows, int wm, int wn) {
    using namespace nvcuda;
    float *Cs = (float *)smem;
    constexpr int LDR = BN + 4, LDC = BM + 4;
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++) {
            if (rows)
                wmma::store_matrix_sync(Cs + (wm * 32 + i * 16) * LDR + wn * 32 + j * 16,
                                        acc[i][j], LDR, wmma::mem_row_major);
            else
                wmma::store_matrix_sync(Cs + (wn * 32 + j * 16) * LDC + wm * 32 + i * 16,
                                        acc[i][j], LDC, wmma::mem_col_major);
        }
    __syncthreads();
    return Cs;
}

template <typename T, int BM, int BN>
__device__ __forceinline__ void
hconv_epilogue(const hconv_args &a,
               nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> (&acc)[2][2],
               unsigned char *smem, long long m0, int k0, int wm, int wn, int tid) {
    T *y = (T *)a.y;
    const bool rows = a.partial || !a.out_nchw;
    const float *Cs = hconv_stage_acc<BM, BN>(acc, smem, rows, wm, wn);
    if (rows) { // Cs[pixel][channel]; consecutive threads, channels
        constexpr int LDC = BN + 4;
        float *part = a.partial ? a.partial + (size_t)blockIdx.z * (size_t)a.M * a.K : NULL;
        for (int e = tid; e < BM * BN; e += HC_THREADS) {
            const int mi = e / BN, ki = e - mi * BN, k = k0 + ki;
            const long long mm = m0 + mi;
            if (mm >= a.M || k >= a.K) continue;
            if (part) part[(size_t)mm * a.K + k] = Cs[mi * LDC + ki]; // hconv_reduce_kernel's
            else
                y[(size_t)mm * a.K + k] =
                    to_fmt<T>(act_apply(a.act, __fadd_rn(hc_scaled(a, Cs[mi * LDC + ki]), a.b[k])));
        }
    } else { // Cs[channel][pixel]; y (N, K, P, Q): consecutive threads, consecutive pixels
        constexpr int LDC = BM + 4;
        const int PQ = a.P * a.Q;
        for (int e = tid; e < BM * BN; e += HC_THREADS) {
            const int ki = e / BM, mi = e - ki * BM, k = k0 + ki;
            const long long mm = m0 + mi;
            if (mm < a.M && k < a.K) {
                const long long n = mm / PQ;
                const int pq = (int)(mm - n * PQ);
                y[((size_t)n * a.K + k) * PQ + pq] =
                    to_fmt<T>(act_apply(a.act, __fadd_rn(hc_scaled(a, Cs[ki * LDC + mi]), a.b[k])));
            }
        }
    }
}

// hconv_epilogue with 8 outputs per thread and item where the layout allows: 8 channels of a
// pixel (channels-last y or the partial sums; K a multiple of 8), or 8 pixels of a channel
// ((N, K, P, Q) y; P Q a multiple of 8, so that 8 pixels from a multiple of 8 are one image's);
// each item one 16-byte store (32 for partial sums) and one division, where hconv_epilogue
// spends index arithmetic and a 2-byte store on every element. The same values: each output
// is still act(b + sum) rounded once. Items the vectors cannot take (the channels past the
// last multiple of 8) go one element at a time.
template <typename T>
__device__ __forceinline__ uint4 pack8(const float (&v)[8]) {
    return make_uint4(pack2(to_fmt<T>(v[0]), to_fmt<T>(v[1])), pack2(to_fmt<T>(v[2]), to_fmt<T>(v[3])),
                      pack2(to_fmt<T>(v[4]), to_fmt<T>(v[5])), pack2(to_fmt<T>(v[6]), to_fmt<T>(v[7])));
}

// The block's fp32 output tile in shared memory to y (or the partial sums), 8 outputs per item
// (the top of hconv_epilogue_vec): Cs[pixel][channel] with rows of LDR floats where the
// partials or a channels-last y take it, else Cs[channel][pixel] with rows of LDC floats.
// NT threads, this one tid.
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

template <typename T, int BM, int BN>
__device__ __forceinline__ void
hconv_epilogue_vec(const hconv_args &a,
                   nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> (&acc)[2][2],
                   unsigned char *smem, long long m0, int k0, int wm, int wn, int tid) {
    const float *Cs = hconv_stage_acc<BM, BN>(acc, smem, a.partial || !a.out_nchw, wm, wn);
    hconv_write_tile<T, BM, BN, BN + 4, BM + 4, HC_THREADS>(a, Cs, m0, k0, tid);
}

// y = act(b + conv(x)) in the format, one block per BM pixels x BN channels (see the top).
// Shared memory: A tiles As[2][BM][HC_LDS] (pixels x taps) and B tiles Bs[2][BN][HC_LDS]
// (channels x taps, the weight's rows), then, after the last chunk, the fp32 output tile.
template <typename T, int IN, int WN, bool VEC>
static __global__ void __launch_bounds__(HC_THREADS) hconv_kernel(const hconv_args a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    using namespace nvcuda;
    typedef hconv_tile<WN> tile;
    constexpr int BM = tile::BM, BN = tile::BN, LDS = HC_LDS;
    __shared__ __align__(128) unsigned char smem[tile::SMEM];
    __shared__ T lut[256]; // IN_U8: each byte's value in the format
    T *As = (T *)smem;
    T *Bs = As + 2 * BM * LDS;
    const int tid = threadIdx.x, warp = tid >> 5;
    if (IN == IN_U8) { // the fp32 path's input (one IEEE division, or the cast), rounded
        const float u = (float)tid;
        lut[tid] = to_fmt<T>(a.scale255 ? __fdiv_rn(u, 255.0f) : u);
        __syncthreads();
    }
    const int wm = warp % tile::WM, wn = warp / tile::WM; // the warp's 32 x 32 outputs
    const long long m0 = (long long)blockIdx.x * BM;
    const int k0 = blockIdx.y * BN;
    // this block's taps: chunks [z cps, (z + 1) cps) of the reduction (all of them unsplit)
    const int kbeg = blockIdx.z * a.cps * HALF_BK;
    const int kend = kbeg + a.cps * HALF_BK < a.CRSp ? kbeg + a.cps * HALF_BK : a.CRSp;

    // the pixel whose taps this thread gathers, and where in each chunk
    const int row = tid / tile::TPR, jofs = (tid % tile::TPR) * tile::JT;
    const long long m = m0 + row;
    const bool mvalid = m < a.M;
    int h0 = 0, w0 = 0;
    size_t nbase = 0;
    if (mvalid) hconv_window(a, m, &h0, &w0, &nbase);
    // the weight vector this thread loads: row k0 + kb (< Kp), taps jb .. jb + 7 of each chunk
    const bool bthread = tid < 4 * BN;
    const int kb = tid >> 2, jb = (tid & 3) * 8;
    const T *wsrc = (const T *)a.w + (size_t)(k0 + kb) * a.CRSp + jb;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++) wmma::fill_fragment(acc[i][j], 0.0f);

    uint4 areg[tile::AV], breg = make_uint4(0u, 0u, 0u, 0u);
    gather_a<T, IN, tile::JT>(a, mvalid, nbase, h0, w0, kbeg + jofs, lut, areg);
    if (bthread) breg = *(const uint4 *)(wsrc + kbeg);
    int buf = 0;
    for (int kk = kbeg; kk < kend; kk += HALF_BK) {
        T *At = As + buf * BM * LDS, *Bt = Bs + buf * BN * LDS;
#pragma unroll
        for (int v = 0; v < tile::AV; v++) *(uint4 *)(At + row * LDS + jofs + 8 * v) = areg[v];
        if (bthread) *(uint4 *)(Bt + kb * LDS + jb) = breg;
        // The tiles of this chunk are complete, and every warp is past its products of the chunk
        // before the last, whose buffer the next iteration overwrites.
        __syncthreads();
        if (kk + HALF_BK < kend) { // the next chunk's loads, in flight during the products
            gather_a<T, IN, tile::JT>(a, mvalid, nbase, h0, w0, kk + HALF_BK + jofs, lut, areg);
            if (bthread) breg = *(const uint4 *)(wsrc + kk + HALF_BK);
        }
        hconv_mma_chunk<T>(At, Bt, wm, wn, acc);
        buf ^= 1;
    }
    __syncthreads(); // every warp is done with the tiles: the memory becomes the output tile
    if (VEC) hconv_epilogue_vec<T, BM, BN>(a, acc, smem, m0, k0, wm, wn, tid);
    else hconv_epilogue<T, BM, BN>(a, acc, smem, m0, k0, wm, wn, tid);
#elif defined(__CUDA_ARCH__)
    __trap(); // main refuses devices below compute capability 8.0
#endif
}

// ---- the pipelined channels-last conv kernel ------------------------------------------------

#define HC_STAGES 3 // chunks in flight in hconv_nhwc_kernel: two loading while one multiplies

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

// hconv_kernel's product for a channels-last input with C a multiple of 8 and K > 32 (the
// convs after the first): the same tile (128 pixels x 64 channels, 8 warps of 32 x 32), the same
// chunks of 32 taps in the same order, the same MMAs and epilogue, so the same bits; but the
// tiles go from global to shared memory by cp.async, HC_STAGES chunks deep, instead of through
// registers two deep. ncu on the H200 (2026-11-30) found hconv_kernel's channels-last convs
// latency-bound: 40% of issue slots used, 2 blocks per SM by registers, each warp waiting ~8
// cycles per instruction; here the loads of two chunks are in flight while one multiplies, and
// the staging registers and their stores are gone.
// Each thread copies 2 of the A tile's 128 x 4 vectors (pixel tid / 2, taps 16 (tid % 2) .. + 15
// of the chunk) and 1 of the B tile's 64 x 4 (channel tid / 4, taps 8 (tid % 4) .. + 7).
template <typename T, bool VEC>
static __global__ void __launch_bounds__(HC_THREADS) hconv_nhwc_kernel(const hconv_args a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    using namespace nvcuda;
    typedef hconv_tile<2> tile;
    constexpr int BM = tile::BM, BN = tile::BN, LDS = HC_LDS, STAGE = (BM + BN) * LDS;
    constexpr int AB_BYTES = HC_STAGES * STAGE * 2;
    constexpr int SMEM = AB_BYTES > tile::C_ELEMS * 4 ? AB_BYTES : tile::C_ELEMS * 4;
    static_assert(tile::TPR == 2 && tile::AV == 2, "two A vectors per thread");
    __shared__ __align__(128) unsigned char smem[SMEM];
    T *const tiles = (T *)smem;
    const int tid = threadIdx.x, warp = tid >> 5;
    const int wm = warp % tile::WM, wn = warp / tile::WM;
    const long long m0 = (long long)blockIdx.x * BM;
    const int k0 = blockIdx.y * BN;
    const int kbeg = blockIdx.z * a.cps * HALF_BK;
    const int kend = kbeg + a.cps * HALF_BK < a.CRSp ? kbeg + a.cps * HALF_BK : a.CRSp;
    const int nch = (kend - kbeg) / HALF_BK;

    // this thread's pixel, and its first tap (r, s, c) in the next chunk to load
    const int row = tid >> 1, jofs = (tid & 1) * 16;
    const long long m = m0 + row;
    const bool mvalid = m < a.M;
    int h0 = 0, w0 = 0;
    size_t nbase = 0;
    if (mvalid) hconv_window(a, m, &h0, &w0, &nbase);
    const T *x = (const T *)a.x;
    int rs = (kbeg + jofs) / a.C, c = (kbeg + jofs) - rs * a.C, r = rs / a.S, s = rs - r * a.S;
    const int kb = tid >> 2, jb = (tid & 3) * 8;
    const T *wsrc = (const T *)a.w + (size_t)(k0 + kb) * a.CRSp + jb;
    int next = kbeg; // the first tap of the next chunk to load

    // Issues the copies of the chunk starting at tap `next` into stage `st`, and moves on.
    auto load = [&](int st) {
        T *At = tiles + st * STAGE, *Bt = At + BM * LDS;
        int rr = r, ss = s, cc = c;
#pragma unroll
        for (int v = 0; v < 2; v++) {
            const int h = h0 + rr, w = w0 + ss;
            const bool ok = mvalid && rr < a.R && inside(a, h, w);
            const T *src = ok ? x + nbase + ((size_t)h * a.W + w) * a.C + cc : x;
            cp_async16(At + row * LDS + jofs + 8 * v, src, ok);
            cc += 8;
            if (cc == a.C) {
                cc = 0;
                if (++ss == a.S) ss = 0, ++rr;
            }
        }
        cp_async16(Bt + kb * LDS + jb, wsrc + next, true);
        // the next chunk starts 32 taps on (C may be 8 or 16: more than one (r, s) step)
        for (c += HALF_BK; c >= a.C; c -= a.C)
            if (++s == a.S) s = 0, ++r;
        next += HALF_BK;
    };

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++) wmma::fill_fragment(acc[i][j], 0.0f);

#pragma unroll
    for (int i = 0; i < HC_STAGES - 1; i++) {
        if (i < nch) load(i);
        cp_async_commit(); // an empty group where there is no chunk: the count stays uniform
    }
    for (int kc = 0; kc < nch; kc++) {
        cp_async_wait<HC_STAGES - 2>(); // this thread's copies of chunk kc have landed
        // Every thread's copies of chunk kc are visible, and every warp is past its products of
        // chunk kc - 1, whose stage the next load overwrites.
        __syncthreads();
        if (kc + HC_STAGES - 1 < nch) load((kc + HC_STAGES - 1) % HC_STAGES);
        cp_async_commit();
        const T *At = tiles + (kc % HC_STAGES) * STAGE, *Bt = At + BM * LDS;
        hconv_mma_chunk<T>(At, Bt, wm, wn, acc);
    }
    cp_async_wait<0>(); // only empty groups are left; nothing may still write the tiles
    __syncthreads();    // every warp is done with the tiles: the memory becomes the output tile
    if (VEC) hconv_epilogue_vec<T, BM, BN>(a, acc, smem, m0, k0, wm, wn, tid);
    else hconv_epilogue<T, BM, BN>(a, acc, smem, m0, k0, wm, wn, tid);
#elif defined(__CUDA_ARCH__)
    __trap(); // main refuses devices below compute capability 8.0
#endif
}

// ---- the warp-tiled channels-last conv kernel (v5) ------------------------------------------

#define HM_THREADS 128 // threads of a hconv_mma_kernel block: 4 warps of 64 pixels x 32 channels
#define HM_STAGES 3    // chunks in flight: two loading while one multiplies

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

// One k16 step of a warp's 64 x 32 outputs: acc[i][j] += A rows 16 i .. + 15 times B rows (channels)
// 8 j .. + 7 over the step's 16 taps, by ldmatrix and m16n8k16 products in (i, j) order. a0 and b0
// are the shared-window addresses of this lane's ldmatrix rows at the step's first tap (A: row
// lane % 16, taps 8 (lane / 16); B: row (lane % 8) + 8 (lane / 16), taps 8 ((lane / 8) % 2)); the
// tiles' rows are LDS elements long. hconv_mma_kernel's and hconv_mma_lean_kernel's.
template <typename T, int LDS>
__device__ __forceinline__ void hconv_warp_k16(float (&acc)[4][4][4], unsigned a0, unsigned b0) {
    unsigned af[4][4], bf[4][2];
#pragma unroll
    for (int i = 0; i < 4; i++) ldsm_x4_at(af[i], a0 + 16 * i * LDS * 2);
    hconv_ldsm_b(bf, b0, 16 * LDS * 2);
    hconv_mma_mi<T>(acc, af, bf);
}

// A warp's 64 x 32 mma.sync accumulators into the block's fp32 output tile Cs (shared memory,
// free again: the caller's barrier): Cs[pixel][channel] with rows of LDR floats where `rows`,
// else Cs[channel][pixel] with rows of LDC. Accumulator (i, j) element e is pixel wm0 + 16 i +
// lane / 4 (+ 8 for e >= 2), channel wn0 + 8 j + 2 (lane % 4) (+ 1 for odd e).
template <int BM, int BN, int LDR, int LDC>
__device__ __forceinline__ void hconv_mma_store_acc(const float (&acc)[4][4][4], float *Cs,
                                                    bool rows, int wm0, int wn0, int lane) {
    const int g = lane >> 2, t2 = (lane & 3) * 2;
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const int mi = wm0 + 16 * i + g + 8 * hf, ki = wn0 + 8 * j + t2;
                if (rows) {
                    *(float2 *)(Cs + mi * LDR + ki) =
                        make_float2(acc[i][j][2 * hf], acc[i][j][2 * hf + 1]);
                } else {
                    Cs[ki * LDC + mi] = acc[i][j][2 * hf];
                    Cs[(ki + 1) * LDC + mi] = acc[i][j][2 * hf + 1];
                }
            }
}

// hconv_nhwc_kernel's product with a larger warp tile: 4 warps (2 x 2) of 64 pixels x 32
// channels each on the same 128 x 64 block tile, the fragments read by ldmatrix and multiplied
// by mma.sync m16n8k16. Per chunk of 32 taps a warp issues 32 tensor instructions for 12
// fragment loads between two barriers, where hconv_nhwc_kernel's warps of 32 x 32 issue 16 for
// 8, and twice as many warps wait at each barrier. (On the H200 the forward went 0.298 -> 0.286
// ms at fp16, batch 128: the convs are latency-bound, 4 blocks of 128 registers per SM.) The
// same chunks in the same order and the same m16n8k16 products of the same values as WMMA's, so
// the same sums, and the same epilogue: the same bits (this lab checks). Each thread
// copies 4 of the A tile's 128 x 4 vectors (see the copies) and 2 of the weight tile's 64 x 4
// (channel tid / 2, taps 16 (tid % 2) .. + 15).
template <typename T>
static __global__ void __launch_bounds__(HM_THREADS) hconv_mma_kernel(const hconv_args a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    constexpr int BM = 128, BN = 64, LDS = HC_LDS, STAGE = (BM + BN) * LDS;
    constexpr int MI = 4, NI = 4;           // a warp's m16 and n8 tiles: 64 x 32
    constexpr int LDR = BN + 8, LDC = BM + 4; // the fp32 output tile's rows (see the end)
    constexpr int AB_BYTES = HM_STAGES * STAGE * 2;
    constexpr int C_BYTES = (BM * LDR > BN * LDC ? BM * LDR : BN * LDC) * 4;
    __shared__ __align__(128) unsigned char smem[AB_BYTES > C_BYTES ? AB_BYTES : C_BYTES];
    T *const tiles = (T *)smem;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm0 = (warp & 1) * 64, wn0 = (warp >> 1) * 32; // the warp's tile in the block's
    const long long m0 = (long long)blockIdx.x * BM;
    const int k0 = blockIdx.y * BN;
    const int kbeg = blockIdx.z * a.cps * HALF_BK;
    const int kend = kbeg + a.cps * HALF_BK < a.CRSp ? kbeg + a.cps * HALF_BK : a.CRSp;
    const int nch = (kend - kbeg) / HALF_BK;

    // The A tile's copies: vector u = tid % 4 (taps 8 u .. 8 u + 7 of a chunk) of pixels
    // tid / 4 + 32 v, v = 0 .. 3, so that the 4 lanes of a pixel copy its 64 contiguous bytes
    // (C >= 32) and a warp's copy covers whole sectors; through L1, where the windows of
    // neighbouring pixels meet.
    const int u = tid & 3;
    bool mvalid[4];
    int h0[4], w0[4];
    const T *x = (const T *)a.x, *pix[4]; // pix: the pixel's window's top left (no padding)
#pragma unroll
    for (int v = 0; v < 4; v++) {
        const long long m = m0 + (tid >> 2) + 32 * v;
        size_t nbase = 0;
        mvalid[v] = m < a.M;
        h0[v] = w0[v] = 0;
        if (mvalid[v]) hconv_window(a, m, &h0[v], &w0[v], &nbase);
        pix[v] = x + (long long)nbase + ((long long)h0[v] * a.W + w0[v]) * a.C;
    }
    // without padding, and with no padded taps (C R S == CRSp), every tap of a pixel's window is
    // inside the frame: its vectors are at one offset from pix for all four pixels
    const bool whole = a.pad == 0 && a.C * a.R * a.S == a.CRSp;
    // this thread's tap (r, s, c) in the next chunk to load: tap next + 8 u
    int rs = (kbeg + 8 * u) / a.C, c = (kbeg + 8 * u) - rs * a.C, r = rs / a.S, s = rs - r * a.S;
    const int kb = tid >> 1, jb = (tid & 1) * 16;
    const T *wsrc = (const T *)a.w + (size_t)(k0 + kb) * a.CRSp + jb;
    int next = kbeg;

    auto load = [&](int st) {
        T *At = tiles + st * STAGE, *Bt = At + BM * LDS;
        const int off = (r * a.W + s) * a.C + c;
#pragma unroll
        for (int v = 0; v < 4; v++) {
            T *dst = At + ((tid >> 2) + 32 * v) * LDS + 8 * u;
            if (whole) {
                cp_async16_ca(dst, mvalid[v] ? pix[v] + off : x, mvalid[v]);
            } else {
                const bool ok = mvalid[v] && r < a.R && inside(a, h0[v] + r, w0[v] + s);
                cp_async16_ca(dst, ok ? pix[v] + off : x, ok);
            }
        }
        cp_async16(Bt + kb * LDS + jb, wsrc + next, true);
        cp_async16(Bt + kb * LDS + jb + 8, wsrc + next + 8, true);
        // the next chunk's tap, 32 on (C is a multiple of 8, maybe below 32: several steps)
        for (c += HALF_BK; c >= a.C; c -= a.C)
            if (++s == a.S) s = 0, ++r;
        next += HALF_BK;
    };

    float acc[MI][NI][4];
    hconv_warp_zero(acc);

#pragma unroll
    for (int i = 0; i < HM_STAGES - 1; i++) {
        if (i < nch) load(i);
        cp_async_commit();
    }
    // where this lane's ldmatrix rows start: A rows (lane % 16), taps 8 (lane / 16); B rows
    // (lane % 8) + 8 (lane / 16), taps 8 ((lane / 8) % 2)
    const int arow = wm0 + (lane & 15), acol = (lane >> 4) * 8;
    const int brow = wn0 + (lane & 7) + ((lane >> 4) << 3), bcol = ((lane >> 3) & 1) * 8;
    for (int kc = 0; kc < nch; kc++) {
        cp_async_wait<HM_STAGES - 2>();
        __syncthreads(); // chunk kc is in; every warp is past chunk kc - 1, whose stage reloads
        if (kc + HM_STAGES - 1 < nch) load((kc + HM_STAGES - 1) % HM_STAGES);
        cp_async_commit();
        const T *At = tiles + (kc % HM_STAGES) * STAGE, *Bt = At + BM * LDS;
#pragma unroll
        for (int ks = 0; ks < HALF_BK; ks += 16)
            hconv_warp_k16<T, LDS>(acc, (unsigned)__cvta_generic_to_shared(At + arow * LDS + ks + acol),
                                   (unsigned)__cvta_generic_to_shared(Bt + brow * LDS + ks + bcol));
    }
    cp_async_wait<0>();
    __syncthreads(); // the tiles' memory becomes the fp32 output tile
    float *Cs = (float *)smem;
    hconv_mma_store_acc<BM, BN, LDR, LDC>(acc, Cs, a.partial || !a.out_nchw, wm0, wn0, lane);
    __syncthreads();
    hconv_write_tile<T, BM, BN, LDR, LDC, HM_THREADS>(a, Cs, m0, k0, tid);
#elif defined(__CUDA_ARCH__)
    __trap(); // main refuses devices below compute capability 8.0
#endif
}

// ---- the channels-last conv with a lean main loop (v7, v8) --------------------------------

// 16 bytes from global src to shared address d (a shared-window address, cvta'd once by the
// caller), through L1 (.ca) or not (.cg); no predicate: src is always a mapped address.
__device__ __forceinline__ void cp_async16_to(unsigned d, const void *src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src));
#endif
}
__device__ __forceinline__ void cp_async16_cg_to(unsigned d, const void *src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src));
#endif
}

// hconv_write_tile for hconv_mma_lean_kernel (HM_THREADS threads, K a multiple of 8, no / 255):
// the same values (act(sum + b) rounded once, or the raw sums), with what stays the same across
// a thread's items computed once. ncu had the general one at ~20% of the kernel's stall samples:
// per item, its index divisions, a bias load and the activation's branch. Channels-last y or
// partial sums: item e = tid + 128 t is 8 channels (tid % 8) 8 of pixel tid / 8 + 16 t, so the
// bias is loaded once; (N, K, P, Q) y: 8 pixels (tid % 16) 8 of channel tid / 16 + 8 t, so the
// image and its pixel are divided out once.
// Rows m0 .. mend - 1 of the tile are written (mend: a.M, or the end of hconv_halo_kernel's rows).
template <typename T, int ACT, int BM, int BN, int LDR, int LDC>
__device__ __forceinline__ void hconv_lean_write(const hconv_args &a, const float *Cs,
                                                 long long m0, long long mend, int k0, int tid) {
    static_assert(BN == 64 && BM == 128 && HM_THREADS == 128, "the items below assume the tile");
    T *y = (T *)a.y;
    if (a.partial || !a.out_nchw) {
        const int kg = (tid & 7) * 8, k = k0 + kg;
        if (k >= a.K) return;
        float *part = a.partial ? a.partial + (size_t)blockIdx.z * (size_t)a.M * a.K : NULL;
        float4 b0 = make_float4(0.0f, 0.0f, 0.0f, 0.0f), b1 = b0;
        if (!part) b0 = *(const float4 *)(a.b + k), b1 = *(const float4 *)(a.b + k + 4);
#pragma unroll 2
        for (int t = 0; t < BM / 16; t++) {
            const int mi = (tid >> 3) + 16 * t;
            const long long mm = m0 + mi;
            if (mm >= mend) break;
            const float *c = Cs + mi * LDR + kg;
            const size_t at = (size_t)mm * a.K + k;
            const float4 c0 = *(const float4 *)c, c1 = *(const float4 *)(c + 4);
            if (part) {
                *(float4 *)(part + at) = c0; // hconv_reduce_kernel's
                *(float4 *)(part + at + 4) = c1;
                continue;
            }
            const float v[8] = {
                act_apply(ACT, __fadd_rn(c0.x, b0.x)), act_apply(ACT, __fadd_rn(c0.y, b0.y)),
                act_apply(ACT, __fadd_rn(c0.z, b0.z)), act_apply(ACT, __fadd_rn(c0.w, b0.w)),
                act_apply(ACT, __fadd_rn(c1.x, b1.x)), act_apply(ACT, __fadd_rn(c1.y, b1.y)),
                act_apply(ACT, __fadd_rn(c1.z, b1.z)), act_apply(ACT, __fadd_rn(c1.w, b1.w))};
            *(uint4 *)(y + at) = pack8<T>(v);
        }
    } else {
        const int mi = (tid & 15) * 8, PQ = a.P * a.Q;
        const long long mm = m0 + mi;
        if (mm >= mend) return;
        const unsigned n = (unsigned)mm / (unsigned)PQ; // mm < M < 2^31
        const int pq = (int)((unsigned)mm - n * (unsigned)PQ);
        const bool whole = (PQ & 7) == 0 && mm + 8 <= mend; // the 8 pixels: one image's, < mend
#pragma unroll 2
        for (int t = 0; t < BN / 8; t++) {
            const int ki = (tid >> 4) + 8 * t, k = k0 + ki;
            if (k >= a.K) break;
            const float *c = Cs + ki * LDC + mi;
            const float bk = a.b[k];
            if (whole) {
                const float4 c0 = *(const float4 *)c, c1 = *(const float4 *)(c + 4);
                const float v[8] = {
                    act_apply(ACT, __fadd_rn(c0.x, bk)), act_apply(ACT, __fadd_rn(c0.y, bk)),
                    act_apply(ACT, __fadd_rn(c0.z, bk)), act_apply(ACT, __fadd_rn(c0.w, bk)),
                    act_apply(ACT, __fadd_rn(c1.x, bk)), act_apply(ACT, __fadd_rn(c1.y, bk)),
                    act_apply(ACT, __fadd_rn(c1.z, bk)), act_apply(ACT, __fadd_rn(c1.w, bk))};
                *(uint4 *)(y + ((size_t)n * a.K + k) * PQ + pq) = pack8<T>(v);
                continue;
            }
            for (int e = 0; e < 8 && mm + e < mend; e++) {
                const long long me = mm + e, ne = me / PQ;
                y[((size_t)ne * a.K + k) * PQ + (me - ne * PQ)] =
                    to_fmt<T>(act_apply(ACT, __fadd_rn(c[e], bk)));
            }
        }
    }
}

// hconv_lean_write with the conv's activation as its template argument (src/ has tanh too).
template <typename T, int BM, int BN, int LDR, int LDC>
__device__ __forceinline__ void hconv_lean_write_act(const hconv_args &a, const float *Cs,
                                                     long long m0, long long mend, int k0,
                                                     int tid) {
    if (a.act == ACT_RELU)
        hconv_lean_write<T, ACT_RELU, BM, BN, LDR, LDC>(a, Cs, m0, mend, k0, tid);
    else
        hconv_lean_write<T, ACT_NONE, BM, BN, LDR, LDC>(a, Cs, m0, mend, k0, tid);
}

template <int BK> struct hconv_lean {
    static constexpr int BM = 128, BN = 64;
    static constexpr int STAGES = BK == 32 ? HM_STAGES : 2; // the same bytes in flight
    static constexpr int LDS = BK + 8; // a shared row: 80 or 144 bytes, ldmatrix conflict-free
    static constexpr int STAGE = (BM + BN) * LDS;
    static constexpr int LDR = BN + 8, LDC = BM + 4;
    static constexpr int AB_BYTES = STAGES * STAGE * 2;
    static constexpr int C_BYTES = (BM * LDR > BN * LDC ? BM * LDR : BN * LDC) * 4;
    static constexpr int SMEM = AB_BYTES > C_BYTES ? AB_BYTES : C_BYTES; // 46080 or 55296
};

// hconv_mma_kernel for the convs whose every window tap is inside the frame (no padding, no
// padded taps), C a multiple of 32 and K of 8 (the Nature-CNN's second and third convs): the
// same tile, copies, chunks, m16n8k16 products in the same order (hconv_warp_k16) and the same
// per-output arithmetic, so the same bits (this lab checks), in fewer instructions.
// ncu's source page (H200, 2026-11-30, conv2 at batch 128) had hconv_mma_kernel's chunk at 228
// warp instructions for its 32 tensor instructions, IPC 0.24 per scheduler: 144 of them the
// copies, their pixel checks (64-bit compares), the padding branch and the tap walk, recomputed
// each chunk with constant-bank and thread-index reloads (S2R) the compiler used to spare
// registers, and the stage's address by a division by 3; its prologue (four window divisions)
// and epilogue were ~30% of the stall samples. Here a 32-tap run is 32 consecutive values of
// one pixel (C % 32 == 0), so each copy is a pixel's window pointer plus one offset that
// advances by 32, and by (W - S) C more at the end of a window row; pixels past M copy pixel 0's
// window (their rows are never written); the windows come from one division and a walk; the
// shared addresses are computed once (opaque to the compiler) and the stages rotate by adding a
// constant; three stages: chunk kc + 2's copies go after chunk kc's products (before them, their
// address registers were the next ldmatrix's destinations: long_sb stalls); the epilogue is
// hconv_lean_write. BK 32 (v7) or 64 (v8: two stages of 64 taps, 54 KiB of dynamic
// shared memory, half the barriers). On the H200, fp16 at batch 128 (the whole forward): 0.197
// ms before v7, 0.184 with v7, 0.179 with v8 (bench/RESULTS.md).
template <typename T, int BK>
static __global__ void __launch_bounds__(HM_THREADS) hconv_mma_lean_kernel(const hconv_args a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    typedef hconv_lean<BK> L;
    constexpr int BM = L::BM, BN = L::BN, LDS = L::LDS, STAGES = L::STAGES;
    constexpr int MI = 4, NI = 4;
    constexpr int SUB = BK / HALF_BK; // 32-tap runs of a chunk, each inside one pixel
    constexpr unsigned STAGE_BYTES = L::STAGE * 2, B_AT = BM * LDS * 2; // B tile after A tile
    extern __shared__ __align__(128) unsigned char smem[];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm0 = (warp & 1) * 64, wn0 = (warp >> 1) * 32;
    const long long m0 = (long long)blockIdx.x * BM;
    const int k0 = blockIdx.y * BN;
    const int kbeg = blockIdx.z * a.cps * HALF_BK;
    const int kend = kbeg + a.cps * HALF_BK < a.CRSp ? kbeg + a.cps * HALF_BK : a.CRSp;
    const int nch = (kend - kbeg) / BK; // the launch checks that BK divides it
    const unsigned s0 = (unsigned)__cvta_generic_to_shared(smem);

    // the copies: as hconv_mma_kernel's, vector u = tid % 4 of each 32-tap run, pixels tid / 4
    // + 32 v
    const int u = tid & 3;
    const T *x = (const T *)a.x, *pa[4];
    {
        // pixel m's image n and output (p, q) by one division, the next ones (32 on) by a walk
        // (no padding: the window's top left is (p stride, q stride))
        long long m = m0 + (tid >> 2);
        const unsigned PQ = (unsigned)(a.P * a.Q);
        unsigned n = (unsigned)m / PQ, pq = (unsigned)m - n * PQ, p = pq / (unsigned)a.Q,
                 q = pq - p * (unsigned)a.Q;
        const size_t image = (size_t)a.C * a.H * a.W;
#pragma unroll
        for (int v = 0; v < 4; v++) {
            pa[v] = x + 8 * u;
            if (m < a.M)
                pa[v] += (size_t)n * image +
                         ((size_t)(p * a.stride) * a.W + q * a.stride) * (size_t)a.C;
            m += 32;
            for (q += 32; q >= (unsigned)a.Q; q -= a.Q)
                if (++p == (unsigned)a.P) p = 0, ++n;
        }
    }
    unsigned a_dst = s0 + ((tid >> 2) * LDS + 8 * u) * 2;
    unsigned b_dst = s0 + B_AT + ((tid >> 1) * LDS + (tid & 1) * 16) * 2;
    // opaque to the compiler, so that it keeps them in registers instead of recomputing them
    // from the thread index (S2R) in the loop, as it did
    asm volatile("" : "+r"(a_dst), "+r"(b_dst));
    const T *wsrc = (const T *)a.w + (size_t)(k0 + (tid >> 1)) * a.CRSp + (tid & 1) * 16 + kbeg;
    // the tap walk: the next 32-tap run is at window offset off; cs counts the runs of a window
    // row (S C / 32 of them), after which the next row is (W - S) C further
    const int row_chunks = a.S * a.C / HALF_BK, row_jump = (a.W - a.S) * a.C;
    int off = 0, cs = 0;
    if (kbeg) { // a split past the first: its first tap's (r, s, c)
        const int rs = kbeg / a.C, c = kbeg - rs * a.C, r = rs / a.S, s = rs - r * a.S;
        off = (r * a.W + s) * a.C + c;
        cs = (s * a.C + c) / HALF_BK;
    }
    unsigned ld = 0; // the stage the next copy fills, as a byte offset
    auto load = [&]() {
#pragma unroll
        for (int h = 0; h < SUB; h++) {
#pragma unroll
            for (int v = 0; v < 4; v++)
                cp_async16_to(a_dst + ld + (v * 32 * LDS + h * HALF_BK) * 2, pa[v] + off);
            cp_async16_cg_to(b_dst + ld + h * HALF_BK * 2, wsrc);
            cp_async16_cg_to(b_dst + ld + h * HALF_BK * 2 + 16, wsrc + 8);
            wsrc += HALF_BK;
            off += HALF_BK;
            if (++cs == row_chunks) cs = 0, off += row_jump;
        }
        ld = ld == (STAGES - 1) * STAGE_BYTES ? 0 : ld + STAGE_BYTES;
    };

    float acc[MI][NI][4];
    hconv_warp_zero(acc);

    pdl_wait(); // the input is the predecessor's
    pdl_release();
#pragma unroll
    for (int i = 0; i < STAGES - 1; i++) {
        if (i < nch) load();
        cp_async_commit();
    }
    // this lane's ldmatrix rows in stage 0, as hconv_mma_kernel's
    unsigned a_frag = s0 + ((wm0 + (lane & 15)) * LDS + (lane >> 4) * 8) * 2;
    unsigned b_frag =
        s0 + B_AT + ((wn0 + (lane & 7) + ((lane >> 4) << 3)) * LDS + ((lane >> 3) & 1) * 8) * 2;
    asm volatile("" : "+r"(a_frag), "+r"(b_frag));
    unsigned cur = 0; // the stage chunk kc is in
    for (int kc = 0; kc < nch; kc++) {
        cp_async_wait<STAGES - 2>();
        __syncthreads(); // chunk kc is in; every warp is past chunk kc - 1, whose stage reloads
        if (STAGES == 2) { // the next chunk's copies go while this one multiplies
            if (kc + 1 < nch) load();
            cp_async_commit();
        }
#pragma unroll
        for (int ks = 0; ks < BK; ks += 16)
            hconv_warp_k16<T, LDS>(acc, a_frag + cur + ks * 2, b_frag + cur + ks * 2);
        // three stages: the copies of chunk kc + 2 after the products. Issued first, their
        // address registers were the next ldmatrix's destinations, which waited for the copies
        // to read them (ncu: long_sb); chunk kc + 1's copies still go while this one multiplies
        if (STAGES > 2) {
            if (kc + STAGES - 1 < nch) load();
            cp_async_commit();
        }
        cur = cur == (STAGES - 1) * STAGE_BYTES ? 0 : cur + STAGE_BYTES;
    }
    cp_async_wait<0>();
    __syncthreads(); // the tiles' memory becomes the fp32 output tile
    hconv_mma_store_acc<BM, BN, L::LDR, L::LDC>(acc, (float *)smem, a.partial || !a.out_nchw, wm0,
                                                wn0, lane);
    __syncthreads();
    hconv_lean_write_act<T, BM, BN, L::LDR, L::LDC>(a, (const float *)smem, m0, a.M, k0, tid);
#elif defined(__CUDA_ARCH__)
    __trap(); // main refuses devices below compute capability 8.0
#endif
}

// ---- the channels-last conv from an input tile in shared memory (v9) ------------------------

// hconv_mma_lean_kernel's products without its im2col copies: a block's tile is TR whole output
// rows of one image (TR Q <= 128 of its 128 pixel rows), and the input rows those read (HR =
// (TR - 1) stride + R of them, all W columns and C channels, one contiguous run of the NHWC
// input) are copied into shared memory once; every A fragment is an ldmatrix whose lanes address
// their own pixel's taps there. The lean kernel copies each pixel's R S C taps (at batch 128 ~170
// MB from L2 per conv of the bench network; the halo is 3x (conv2) to 5.6x (conv3) fewer bytes).
// The input tile is XOR-swizzled in 16-byte units by the 128-byte line (Swizzle<3,4,3>: byte
// offset o at o ^ ((o >> 7) & 7) << 4), so that the 8 rows of an ldmatrix (8 consecutive pixels,
// stride 1 or 2) hit distinct banks. The weights stream in chunks of 64 taps as in the lean
// kernel (two stages), and each pixel's sums run over the same k16 steps in the same order
// through the same products and epilogue (hconv_lean_write): the same bits as v8 (this
// lab checks). For unsplit convs (the larger batches) with no padding, C a multiple
// of 16, C R S a multiple of 64, Q <= 128.
// Where byte o of the input tile lies in shared memory: that swizzle.
__device__ __forceinline__ unsigned halo_swizzle(unsigned o) { return o ^ (((o >> 7) & 7) << 4); }
struct hconv_halo {
    static constexpr int BM = 128, BN = 64, BK = 64, LDS = BK + 8;
    static constexpr int B_STAGE = BN * LDS * 2; // bytes of a weight chunk
    static constexpr int LDR = BN + 8, LDC = BM + 4;
    static constexpr int C_BYTES = (BM * LDR > BN * LDC ? BM * LDR : BN * LDC) * 4;
};
// The output rows per tile and the shared bytes of a conv, 0 rows where it does not fit. (Both
// of the bench network's unsplit convs gain: on the H200 at batch 128, fp16, one build, the forward
// took 0.1741 ms with neither here, 0.1697 with conv3 (3x3/1) alone, 0.1654 with conv2 (4x4/2)
// too, in another run of the same build as the first figure's 0.1739.)
static void halo_shape(const hconv_args &a, int *tr, int *smem) {
    typedef hconv_halo L;
    *tr = 0, *smem = 0;
    if (a.Q > L::BM || a.pad || a.C % 16 || a.C * a.R * a.S != a.CRSp || a.CRSp % L::BK) return;
    const int rows = L::BM / a.Q < a.P ? L::BM / a.Q : a.P;
    // whole 128-byte lines: the swizzle moves units within a line
    const size_t halo = round_up((size_t)((rows - 1) * a.stride + a.R) * a.W * a.C * 2, 128);
    const size_t bytes = halo + 2 * L::B_STAGE > (size_t)L::C_BYTES ? halo + 2 * L::B_STAGE
                                                                     : (size_t)L::C_BYTES;
    if (bytes > 96 * 1024) return;
    *tr = rows, *smem = (int)bytes;
}

template <typename T>
static __global__ void __launch_bounds__(HM_THREADS) hconv_halo_kernel(const hconv_args a, int TR,
                                                                       int halo_bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    typedef hconv_halo L;
    constexpr int BM = L::BM, BN = L::BN, BK = L::BK, LDS = L::LDS;
    extern __shared__ __align__(128) unsigned char smem[];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm0 = (warp & 1) * 64, wn0 = (warp >> 1) * 32;
    const int tiles = (a.P + TR - 1) / TR, n = blockIdx.x / tiles, p0 = (blockIdx.x % tiles) * TR;
    const int k0 = blockIdx.y * BN;
    const int rows = a.P - p0 < TR ? a.P - p0 : TR;
    const long long m0 = ((long long)n * a.P + p0) * a.Q, mend = m0 + (long long)rows * a.Q;
    const int nch = a.CRSp / BK;
    const unsigned s0 = (unsigned)__cvta_generic_to_shared(smem);
    const unsigned b_at = s0 + (unsigned)halo_bytes; // the weight stages after the input tile
    const int CB = a.C * 2, WCB = a.W * CB;          // bytes of a pixel, of an input row

    // this lane's A rows: pixel wm0 + 16 i + lane % 16 of the tile (row 0's first pixel where
    // the tile has no such pixel: its sums are not written), taps 8 (lane / 16) of a step
    int base[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        int mi = wm0 + 16 * i + (lane & 15);
        if (mi >= rows * a.Q) mi = 0;
        const int pr = mi / a.Q, q = mi - pr * a.Q;
        base[i] = pr * a.stride * WCB + q * a.stride * CB + (lane >> 4) * 16;
    }
    // the weight copies, as the lean kernel's: row k0 + tid / 2, taps 16 (tid % 2) of each
    // 32-tap half of a chunk
    const unsigned b_dst = b_at + ((tid >> 1) * LDS + (tid & 1) * 16) * 2;
    const T *wsrc = (const T *)a.w + (size_t)(k0 + (tid >> 1)) * a.CRSp + (tid & 1) * 16;
    auto load_w = [&](int kc) {
        const unsigned d = b_dst + (kc & 1) * L::B_STAGE;
        const T *src = wsrc + kc * BK;
#pragma unroll
        for (int h = 0; h < BK / HALF_BK; h++) {
            cp_async16_cg_to(d + h * HALF_BK * 2, src + h * HALF_BK);
            cp_async16_cg_to(d + h * HALF_BK * 2 + 16, src + h * HALF_BK + 8);
        }
    };
    float acc[4][4][4];
    hconv_warp_zero(acc);
    load_w(0); // the weights are not the predecessor's
    pdl_wait(); // the input is
    pdl_release();
    { // the input tile: HR rows from row p0 stride (those past the frame are never read)
        const int h0 = p0 * a.stride, hr = (rows - 1) * a.stride + a.R;
        const int units = (h0 + hr <= a.H ? hr : a.H - h0) * WCB / 16;
        const unsigned char *src =
            (const unsigned char *)a.x + ((size_t)n * a.H + h0) * (size_t)WCB;
        for (int u = tid; u < units; u += HM_THREADS) {
            const unsigned o = (unsigned)u * 16;
            cp_async16_to(s0 + halo_swizzle(o), src + o);
        }
    }
    cp_async_commit();
    const unsigned b_frag =
        b_at + ((wn0 + (lane & 7) + ((lane >> 4) << 3)) * LDS + ((lane >> 3) & 1) * 8) * 2;
    // the tap walk: a step's 16 taps are window (r, s), channels c .. c + 15 (C a multiple of
    // 16), at byte tap = r WCB + s CB + 2 c of a pixel's window, which grows by 32 a step within
    // a window row (S C taps) and jumps to the next row's start after it
    const int row_taps = a.S * a.C, row_jump = WCB - a.S * CB;
    int tap = 0, in_row = 0;
    for (int kc = 0; kc < nch; kc++) {
        cp_async_wait<0>();
        __syncthreads(); // chunk kc (and the input tile) are in; chunk kc - 1's stage is free
        if (kc + 1 < nch) load_w(kc + 1);
        cp_async_commit();
        const unsigned bk = b_frag + (kc & 1) * L::B_STAGE;
#pragma unroll
        for (int ks = 0; ks < BK / 16; ks++) {
            unsigned af[4][4], bf[4][2];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                ldsm_x4_at(af[i], s0 + halo_swizzle((unsigned)(base[i] + tap)));
            }
            hconv_ldsm_b(bf, bk + ks * 32, 16 * LDS * 2);
            hconv_mma_mi<T>(acc, af, bf);
            tap += 32;
            if ((in_row += 16) == row_taps) in_row = 0, tap += row_jump;
        }
    }
    cp_async_wait<0>();
    __syncthreads(); // the tiles' memory becomes the fp32 output tile
    hconv_mma_store_acc<BM, BN, L::LDR, L::LDC>(acc, (float *)smem, !a.out_nchw, wm0, wn0, lane);
    __syncthreads();
    hconv_lean_write_act<T, BM, BN, L::LDR, L::LDC>(a, (const float *)smem, m0, mend, k0, tid);
#elif defined(__CUDA_ARCH__)
    __trap(); // main refuses devices below compute capability 8.0
#endif
}

// ---- the first conv as a 2 x 2 conv over 4 x 4 blocks (v6) -------------------------------

// An 8 x 8 / 4 conv over uint8 / 255 frames of C = 4 channels (the Nature-CNN's first conv, half
// of the forward's time before this kernel) seen as a 2 x 2 / 1 conv over the frame's 4 x 4
// blocks of pixels, each block 16 C = 64 values (c, dr, ds): output pixel (p, q) is the sum over
// blocks (p + bh, q + bw), bh, bw in {0, 1}, of 64-value dot products (space to depth).
//
// An item is two output rows of one image, all channels (K <= 32); the blocks are persistent
// (4 per SM, items blockIdx.x, + gridDim.x, ...), each with 128 threads. A block copies the 32 x
// 256 weights (HALF_PIECE_S2D order) into shared memory once; for each item it writes the 12
// frame rows the item reads into shared memory, each byte converted exactly to the format
// (bytes_exact) into its 4 x 4 block, and loads the next item's words into registers while this
// one multiplies. Every A fragment is one ldmatrix from the blocks (an output pixel's 16 taps of
// a k16 step are 16 contiguous values of one block), where hconv_kernel gathers each pixel's
// taps word by word: that gather was ~15 instructions per tensor instruction. Warp w: output
// row w / 2 of the item, columns 32 (w % 2) .. + 31 (two m16 tiles), all 32 channels (four n8
// tiles). The 16-byte units of a block are stored XOR-swizzled by the block's column (unit u at
// u ^ (wb % 8)), so that the 8 rows of an ldmatrix, consecutive columns, hit distinct banks.
//
// The sums are of the bytes themselves (as v4's, in another order of the taps), then
// scaled by the float nearest 1/255 in one FMA with the bias: v4's IEEE division and
// addition cost ~12 instructions per output, for a result that differs by at most an fp32
// rounding before the format's.
#define S2D_C 4                      // channels
#define S2D_WB 65                    // block columns in shared memory: Q <= 64 (q + 1 <= 64)
#define S2D_TAPS (64 * S2D_C)        // 2 x 2 blocks of 16 C values
#define S2D_LDW (S2D_TAPS + 8)       // a weight row in shared memory, padded: 528 bytes

template <typename T>
static __global__ void __launch_bounds__(128, 4) hconv_s2d_kernel(const hconv_args a, int items) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    constexpr int BLK = 16 * S2D_C; // values per 4 x 4 block
    __shared__ __align__(128) T in[3 * S2D_WB * BLK];
    __shared__ __align__(128) T wt[32 * S2D_LDW];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int WB4 = a.W / 4, pairs = (a.P + 1) / 2;
    // the weights, once per block: 32 rows of 256 taps, 16 bytes a copy
    const T *wg = (const T *)a.w;
    for (int e = tid; e < 32 * S2D_TAPS / 8; e += 128) {
        const int k = e / (S2D_TAPS / 8), j = (e - k * (S2D_TAPS / 8)) * 8;
        cp_async16(wt + k * S2D_LDW + j, wg + (size_t)k * a.CRSp + j, true);
    }
    cp_async_commit();
    for (int e = tid; e < 3 * BLK; e += 128) // block column 64, read only for q = 63 (ignored)
        in[((e / BLK) * S2D_WB + S2D_WB - 1) * BLK + e % BLK] = to_fmt<T>(0.0f);
    // An item is two output rows (2 pp, 2 pp + 1) of image n: it reads frame rows 8 pp ..
    // 8 pp + 11. This thread's words of them: channel c, row 8 pp + warp + 4 j, block column
    // lane + 32 hf (zeros past the frame). The next item's are loaded while this one multiplies.
    unsigned word[S2D_C][3][2];
    auto fetch = [&](int item) {
        const int n = item / pairs, pp = item - n * pairs;
        const uint8_t *x = (const uint8_t *)a.x + (size_t)n * S2D_C * a.H * a.W;
#pragma unroll
        for (int c = 0; c < S2D_C; c++)
#pragma unroll
            for (int j = 0; j < 3; j++) {
                const int h = 8 * pp + warp + 4 * j;
                const uint8_t *row = x + ((size_t)c * a.H + h) * a.W;
#pragma unroll
                for (int hf = 0; hf < 2; hf++) {
                    const int wb = lane + 32 * hf;
                    word[c][j][hf] = h < a.H && wb < WB4 ? __ldg((const unsigned *)(row + 4 * wb)) : 0u;
                }
            }
    };
    int item = blockIdx.x;
    pdl_wait(); // the frames are the predecessor's (the weights are not: copied above)
    pdl_release();
    if (item < items) fetch(item);
    for (; item < items; item += gridDim.x) {
        __syncthreads(); // every warp is done with the previous item's blocks
#pragma unroll
        for (int c = 0; c < S2D_C; c++)
#pragma unroll
            for (int j = 0; j < 3; j++) {
                const int hh = warp + 4 * j, hb = hh >> 2, dr = hh & 3;
#pragma unroll
                for (int hf = 0; hf < 2; hf++) {
                    const int wb = lane + 32 * hf;
                    const int unit = (2 * c + (dr >> 1)) ^ (wb & 7);
                    *(uint2 *)(in + (hb * S2D_WB + wb) * BLK + unit * 8 + (dr & 1) * 4) =
                        bytes_exact<T>(word[c][j][hf]);
                }
            }
        cp_async_wait<0>(); // the weights (the first item)
        __syncthreads();
        if (item + (int)gridDim.x < items) fetch(item + gridDim.x);
        const int n = item / pairs, p0 = 2 * (item - n * pairs);

        const int pl = warp >> 1, qw = (warp & 1) * 32; // the warp's output row (0, 1), columns
        float acc[2][4][4];
        hconv_warp_zero(acc);
        // ldmatrix rows: A, pixel q = qw + 16 i + lane % 16, unit half lane / 16 of the k16 step;
        // B, channel (lane % 8) + 8 (lane / 16), taps 8 ((lane / 8) % 2) of the step
        const int aq = qw + (lane & 15), ahalf = lane >> 4;
        const int brow = (lane & 7) + ((lane >> 4) << 3), bcol = ((lane >> 3) & 1) * 8;
#pragma unroll
        for (int blk = 0; blk < 4; blk++) {
            const int bh = blk >> 1, bw = blk & 1;
#pragma unroll
            for (int cc = 0; cc < S2D_C; cc++) {
                unsigned af[2][4], bf[4][2];
#pragma unroll
                for (int i = 0; i < 2; i++) {
                    const int wb = aq + 16 * i + bw;
                    ldsm_x4(af[i], in + ((pl + bh) * S2D_WB + wb) * BLK +
                                       ((2 * cc + ahalf) ^ (wb & 7)) * 8);
                }
#pragma unroll
                for (int jp = 0; jp < 2; jp++) {
                    unsigned t4[4];
                    ldsm_x4(t4, wt + (16 * jp + brow) * S2D_LDW + blk * BLK + 16 * cc + bcol);
                    bf[2 * jp][0] = t4[0], bf[2 * jp][1] = t4[1];
                    bf[2 * jp + 1][0] = t4[2], bf[2 * jp + 1][1] = t4[3];
                }
                hconv_mma_mi<T>(acc, af, bf);
            }
        }
        // act(sum / 255 + b) in the format, channels-last: accumulator (i, j) element e is pixel
        // q = qw + 16 i + lane / 4 (+ 8 for e >= 2), channel 8 j + 2 (lane % 4) (+ 1 for odd e)
        const int p = p0 + pl;
        if (p < a.P) {
            T *y = (T *)a.y + ((size_t)n * a.P + p) * a.Q * a.K;
            const int g = lane >> 2, t2 = (lane & 3) * 2;
            const float inv255 = 1.0f / 255.0f; // the float nearest 1/255
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int k = 8 * j + t2;
                if (k >= a.K) continue;
                const float b0 = a.b[k], b1 = a.b[k + 1];
#pragma unroll
                for (int i = 0; i < 2; i++)
#pragma unroll
                    for (int hf = 0; hf < 2; hf++) {
                        const int q = qw + 16 * i + g + 8 * hf;
                        if (q >= a.Q) continue;
                        const float v0 = act_apply(a.act, fmaf(acc[i][j][2 * hf], inv255, b0));
                        const float v1 = act_apply(a.act, fmaf(acc[i][j][2 * hf + 1], inv255, b1));
                        *(unsigned *)(y + (size_t)q * a.K + k) = pack2(to_fmt<T>(v0), to_fmt<T>(v1));
                    }
            }
        }
    }
#elif defined(__CUDA_ARCH__)
    __trap(); // main refuses devices below compute capability 8.0
#endif
}

// y = act(b + the sum of the splits' partial sums, in split order), in the format: the epilogue
// of a split conv. partial (splits, M, K); y (M, K) channels-last, or (N, K, P, Q) when
// out_nchw; one thread per element, in the partial sums' order (pixel-major: a warp reads whole
// sectors of every split), 32-bit indices (the launch checks M K < 2^31). The splits' loads go
// four at a time, then are summed in split order: the batch-1 profile (ncu, H200, 2026-11-30)
// had this kernel at 11 us for conv3 at batch 1, one dependent load per split and, for an
// (N, K, P, Q) y, each warp reading 32 sectors of every split.
template <typename T>
static __global__ void hconv_reduce_kernel(const float *__restrict__ partial, int splits,
                                           const float *__restrict__ b, T *__restrict__ y,
                                           int M, int K, int PQ, int act, int out_nchw,
                                           int div255) {
    pdl_wait(); // the partial sums are the predecessor's
    pdl_release();
    const unsigned n = (unsigned)M * (unsigned)K, step = gridDim.x * blockDim.x;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        const float *p = partial + i;
        const size_t z_step = (size_t)n;
        float s = p[0];
        int z = 1;
        for (; z + 3 < splits; z += 4) {
            const float v0 = p[z * z_step], v1 = p[(z + 1) * z_step], v2 = p[(z + 2) * z_step],
                        v3 = p[(z + 3) * z_step];
            s = __fadd_rn(__fadd_rn(__fadd_rn(__fadd_rn(s, v0), v1), v2), v3);
        }
        for (; z < splits; z++) s = __fadd_rn(s, p[z * z_step]);
        const unsigned m = i / (unsigned)K, k = i - m * (unsigned)K;
        if (div255) s = __fdiv_rn(s, 255.0f);
        const T v = to_fmt<T>(act_apply(act, __fadd_rn(s, b[k])));
        if (out_nchw) {
            const unsigned img = m / (unsigned)PQ, pq = m - img * (unsigned)PQ;
            y[((size_t)img * K + k) * PQ + pq] = v;
        } else {
            y[i] = v;
        }
    }
}

// ---- the launches, as src/ chose them at each version ---------------------------------------

// The versions: the src/ kernel level each was, and the version it must give the bits of.
struct version {
    int level, bits_as;
    const char *what;
};
static const version versions[] = {
    {0, 1, "hconv_kernel: WMMA, tiles staged through registers"},
    {1, 1, "conv2, conv3: cp.async three chunks deep"},
    {2, 1, "epilogues: 8 outputs per 16-byte store"},
    {3, 4, "conv1: the bytes themselves, sums / 255"},
    {4, 4, "conv2, conv3: ldmatrix + mma.sync, 64 x 32 warps"},
    {5, 6, "conv1: 2x2 conv over 4 x 4 blocks (s2d)"},
    {7, 6, "conv2, conv3: lean main loop"},
    {8, 6, "conv2, conv3: chunks of 64 taps"},
    {12, 6, "unsplit conv2, conv3: input rows in shared memory"},
};
static const int NV = (int)(sizeof versions / sizeof versions[0]);

struct conv_shape {
    int C, H, W, K, R, S, stride, P, Q;
    int CRSp; // C R S rounded up to HALF_BK
};

static conv_shape make_shape(int C, int H, int W, int K, int R, int stride) {
    conv_shape s;
    s.C = C, s.H = H, s.W = W, s.K = K, s.R = R, s.S = R, s.stride = stride;
    s.P = (H - R) / stride + 1, s.Q = (W - R) / stride + 1;
    s.CRSp = (int)round_up((size_t)C * R * R, HALF_BK);
    return s;
}

// src/'s s2d_fits: an 8x8/4 first conv over 4 uint8 / 255 channels, K <= 32, Q <= 64.
static bool s2d_fits(const conv_shape &c) {
    return c.C == S2D_C && c.R == 8 && c.S == 8 && c.stride == 4 && c.W % 4 == 0 &&
           c.W / 4 < S2D_WB && c.Q <= 64 && c.K <= 32 && c.K % 8 == 0;
}

// src/'s cr_conv2d_half_splits: splits of the taps for two blocks per SM where the pixels give
// fewer, whole chunks each; s2d never splits.
static int splits_of(const conv_shape &s, int B, int sms, bool s2d, int *cps) {
    const int chunks = s.CRSp / HALF_BK;
    if (s2d) {
        *cps = chunks;
        return 1;
    }
    const int bm = s.K <= 32 ? 256 : 128, bn = s.K <= 32 ? 32 : 64;
    const long long M = (long long)B * s.P * s.Q;
    const long long blocks = (M + bm - 1) / bm * ((s.K + bn - 1) / bn);
    long long want = 2LL * sms / blocks;
    want = want < 1 ? 1 : want > chunks ? chunks : want;
    *cps = (chunks + (int)want - 1) / (int)want;
    return (chunks + *cps - 1) / *cps;
}

// src/'s launch_conv_in at kernel level lv.
template <typename T, int IN>
static void launch_conv_in(int lv, const hconv_args &a, int splits, cudaStream_t st) {
    if (IN == IN_NHWC && a.C % 8 == 0 && a.K > 32 && lv >= 4) { // the same block tile
        dim3 grid((unsigned)((a.M + 127) / 128), (unsigned)((a.K + 63) / 64), (unsigned)splits);
        if (lv >= 7 && a.pad == 0 && a.C * a.R * a.S == a.CRSp && a.C % HALF_BK == 0 &&
            a.K % 8 == 0) {
            int tr = 0, hsmem = 0;
            if (lv >= 12 && splits == 1) halo_shape(a, &tr, &hsmem);
            if (tr) {
                const int tiles = (a.P + tr - 1) / tr, halo = hsmem - 2 * hconv_halo::B_STAGE;
                CK(cudaFuncSetAttribute(hconv_halo_kernel<T>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, hsmem));
                hconv_halo_kernel<T>
                    <<<dim3((unsigned)(a.M / ((long long)a.P * a.Q) * tiles), grid.y), HM_THREADS,
                       hsmem, st>>>(a, tr, halo);
            } else if (lv >= 8 && a.cps % 2 == 0 && a.CRSp % 64 == 0) {
                constexpr int smem = hconv_lean<64>::SMEM;
                CK(cudaFuncSetAttribute(hconv_mma_lean_kernel<T, 64>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
                hconv_mma_lean_kernel<T, 64><<<grid, HM_THREADS, smem, st>>>(a);
            } else {
                hconv_mma_lean_kernel<T, 32><<<grid, HM_THREADS, hconv_lean<32>::SMEM, st>>>(a);
            }
        } else {
            hconv_mma_kernel<T><<<grid, HM_THREADS, 0, st>>>(a);
        }
    } else if (IN == IN_NHWC && a.C % 8 == 0 && a.K > 32 && lv >= 1) {
        dim3 grid((unsigned)((a.M + 127) / 128), (unsigned)((a.K + 63) / 64), (unsigned)splits);
        if (lv >= 2) hconv_nhwc_kernel<T, true><<<grid, HC_THREADS, 0, st>>>(a);
        else hconv_nhwc_kernel<T, false><<<grid, HC_THREADS, 0, st>>>(a);
    } else if (a.K <= 32) {
        dim3 grid((unsigned)((a.M + 255) / 256), (unsigned)((a.K + 31) / 32), (unsigned)splits);
        if (lv >= 2) hconv_kernel<T, IN, 1, true><<<grid, HC_THREADS, 0, st>>>(a);
        else hconv_kernel<T, IN, 1, false><<<grid, HC_THREADS, 0, st>>>(a);
    } else {
        dim3 grid((unsigned)((a.M + 127) / 128), (unsigned)((a.K + 63) / 64), (unsigned)splits);
        if (lv >= 2) hconv_kernel<T, IN, 2, true><<<grid, HC_THREADS, 0, st>>>(a);
        else hconv_kernel<T, IN, 2, false><<<grid, HC_THREADS, 0, st>>>(a);
    }
    CK(cudaGetLastError());
}

// The whole bench network's trunk on the device at one version.
struct trunk {
    conv_shape s[3];
    int B, sms;
    uint8_t *x;         // (B, 4, H, W) the frames
    void *y[3];         // conv1, conv2 (B, P, Q, K) channels-last; conv3 (B, K, P, Q)
    void *w[3], *w_s2d; // the weights in the format, zero-padded (Kp, CRSp): conv1 taps (c, r, s)
                        // or (w_s2d) HALF_PIECE_S2D's; conv2, conv3 taps (r, s, c)
    float *b[3];        // (K) the biases, fp32
    float *partial;     // split-K partial sums, the largest stage's
};

// Stage i of the trunk at level lv on stream st.
template <typename T> static void run_stage(const trunk &t, int lv, int i, cudaStream_t st) {
    const conv_shape &s = t.s[i];
    const bool s2d = i == 0 && lv >= 5 && s2d_fits(s);
    hconv_args a;
    memset(&a, 0, sizeof a);
    a.x = i == 0 ? (const void *)t.x : t.y[i - 1];
    a.w = s2d ? t.w_s2d : t.w[i], a.b = t.b[i], a.y = t.y[i];
    a.M = (long long)t.B * s.P * s.Q;
    a.K = s.K, a.C = s.C, a.H = s.H, a.W = s.W, a.R = s.R, a.S = s.S;
    a.stride = s.stride, a.pad = 0, a.P = s.P, a.Q = s.Q, a.CRSp = s.CRSp;
    a.scale255 = i == 0, a.act = ACT_RELU, a.out_nchw = i == 2;
    a.u8_words = i == 0 && s.S % 4 == 0 && s.stride % 4 == 0 && s.W % 4 == 0;
    a.div255 = a.u8_words && lv >= 3;
    const int splits = splits_of(s, t.B, t.sms, s2d, &a.cps);
    a.partial = splits > 1 ? t.partial : NULL;
    if (s2d) {
        const int items = t.B * ((s.P + 1) / 2);
        hconv_s2d_kernel<T><<<items < 4 * t.sms ? items : 4 * t.sms, 128, 0, st>>>(a, items);
        CK(cudaGetLastError());
        return;
    }
    if (i == 0) launch_conv_in<T, IN_U8>(lv, a, splits, st);
    else launch_conv_in<T, IN_NHWC>(lv, a, splits, st);
    if (splits == 1) return;
    const unsigned n = (unsigned)(a.M * a.K);
    hconv_reduce_kernel<T><<<(n + 255) / 256, 256, 0, st>>>(
        t.partial, splits, a.b, (T *)a.y, (int)a.M, a.K, a.P * a.Q, a.act, a.out_nchw, a.div255);
    CK(cudaGetLastError());
}

// ---- the CPU reference ------------------------------------------------------------------------

template <typename T> static float fmt(float x) { return (float)to_fmt<T>(x); }
template <> float fmt<__half>(float x) { return __half2float(__float2half_rn(x)); }
template <> float fmt<__nv_bfloat16>(float x) {
    return __bfloat162float(__float2bfloat16_rn(x));
}

// y (K, P, Q) = relu(b + scale sum_{c, r, s} x (C, H, W) w (K, C, R, S)) for one image, in
// double.
static void conv_ref(const conv_shape &s, const float *x, const float *w, const float *b,
                     double scale, double *y) {
    for (int k = 0; k < s.K; k++)
        for (int p = 0; p < s.P; p++)
            for (int q = 0; q < s.Q; q++) {
                double sum = 0;
                for (int c = 0; c < s.C; c++)
                    for (int r = 0; r < s.R; r++) {
                        const float *xr =
                            x + ((size_t)c * s.H + p * s.stride + r) * s.W + q * s.stride;
                        const float *wr = w + (((size_t)k * s.C + c) * s.R + r) * s.S;
                        for (int e = 0; e < s.S; e++) sum += (double)xr[e] * wr[e];
                    }
                const double v = sum * scale + b[k];
                y[((size_t)k * s.P + p) * s.Q + q] = v < 0 ? 0 : v;
            }
}

// Element (c, h, w) of image n of a stage's output on the host (the format's bits), as float.
template <typename T>
static float out_at(const std::vector<uint16_t> &y, const conv_shape &s, bool nchw, int n, int c,
                    int h, int w) {
    const size_t i = nchw ? (((size_t)n * s.K + c) * s.P + h) * s.Q + w
                          : (((size_t)n * s.P + h) * s.Q + w) * s.K + c;
    T v;
    memcpy(&v, &y[i], 2);
    return (float)v;
}

// ---- main -------------------------------------------------------------------------------------

struct host_net {
    std::vector<float> w[3], b[3]; // w (K, C, R, S), the format's values; b fp32
};

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rng_u32() {
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}
static float rng_uniform(float lo, float hi) {
    return lo + (hi - lo) * (float)(rng_u32() >> 8) / 16777216.0f;
}

// The weights block's layout of one conv weight (src/'s piece_source): (Kp, CRSp) in the format,
// zeros past K and C R S; taps (c, r, s) (order 0), (r, s, c) (1), or s2d's (((r / 4) 2 + s / 4)
// C + c) 16 + (r % 4) 4 + s % 4 (2). w (K, C, R, S).
template <typename T>
static std::vector<T> pack_weight(const conv_shape &s, const std::vector<float> &w, int order) {
    const int Kp = (int)round_up(s.K, HALF_KP), CRS = s.C * s.R * s.S;
    std::vector<T> h((size_t)Kp * s.CRSp, to_fmt<T>(0.0f));
    for (int k = 0; k < s.K; k++)
        for (int j = 0; j < CRS; j++) {
            int c, r, e;
            if (order == 0) {
                c = j / (s.R * s.S), r = j / s.S % s.R, e = j % s.S;
            } else if (order == 1) {
                const int rs = j / s.C;
                c = j % s.C, r = rs / s.S, e = rs % s.S;
            } else {
                const int blk = j / (16 * s.C), f = j % (16 * s.C);
                c = f >> 4, r = 4 * (blk >> 1) + ((f >> 2) & 3), e = 4 * (blk & 1) + (f & 3);
            }
            h[(size_t)k * s.CRSp + j] = to_fmt<T>(w[(((size_t)k * s.C + c) * s.R + r) * s.S + e]);
        }
    return h;
}

template <typename T>
static void *upload_weight(const conv_shape &s, const std::vector<float> &w, int order) {
    const std::vector<T> h = pack_weight<T>(s, w, order);
    void *d;
    CK(cudaMalloc(&d, h.size() * sizeof(T)));
    CK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

struct options {
    int version, batch, hw, bf16, reps, check;
};

template <typename T> static int run(const options &o) {
    int dev = 0;
    CK(cudaGetDevice(&dev));
    trunk t;
    memset(&t, 0, sizeof t);
    CK(cudaDeviceGetAttribute(&t.sms, cudaDevAttrMultiProcessorCount, dev));
    t.B = o.batch;
    t.s[0] = make_shape(4, o.hw, o.hw, 32, 8, 4);
    t.s[1] = make_shape(32, t.s[0].P, t.s[0].Q, 64, 4, 2);
    t.s[2] = make_shape(64, t.s[1].P, t.s[1].Q, 64, 3, 1);
    host_net hn;
    size_t partial = 0;
    for (int i = 0; i < 3; i++) {
        const conv_shape &s = t.s[i];
        const size_t wn = (size_t)s.K * s.C * s.R * s.S;
        const float bound = 1.0f / sqrtf((float)(s.C * s.R * s.S)) * (i == 0 ? 4.0f : 2.0f);
        hn.w[i].resize(wn), hn.b[i].resize(s.K);
        for (float &v : hn.w[i]) v = fmt<T>(rng_uniform(-bound, bound));
        for (float &v : hn.b[i]) v = rng_uniform(-0.1f, 0.1f);
        t.w[i] = upload_weight<T>(s, hn.w[i], i == 0 ? 0 : 1);
        CK(cudaMalloc(&t.b[i], s.K * sizeof(float)));
        CK(cudaMemcpy(t.b[i], hn.b[i].data(), s.K * sizeof(float), cudaMemcpyHostToDevice));
        CK(cudaMalloc(&t.y[i], (size_t)t.B * s.P * s.Q * s.K * 2));
        int cps;
        const int sp = splits_of(s, t.B, t.sms, false, &cps);
        if (sp > 1) {
            const size_t bytes = (size_t)sp * t.B * s.P * s.Q * s.K * sizeof(float);
            partial = bytes > partial ? bytes : partial;
        }
    }
    t.w_s2d = s2d_fits(t.s[0]) ? upload_weight<T>(t.s[0], hn.w[0], 2) : NULL;
    if (partial) CK(cudaMalloc(&t.partial, partial));
    const size_t xn = (size_t)t.B * 4 * o.hw * o.hw;
    std::vector<uint8_t> xh(xn);
    for (uint8_t &v : xh) v = (uint8_t)(rng_u32() & 255);
    CK(cudaMalloc(&t.x, xn));
    CK(cudaMemcpy(t.x, xh.data(), xn, cudaMemcpyHostToDevice));
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));

    const double tol = o.bf16 ? 1e-2 : 2e-3;
    const int nchk = o.check < t.B ? o.check : t.B; // images checked: the first and the last
    int failed = 0;
    std::vector<std::vector<uint16_t>> ref_out[NV + 1]; // the outputs of each group's first
    printf("batch %d, %dx%d, %s, %d SMs; splits per stage:", t.B, o.hw, o.hw,
           o.bf16 ? "bf16" : "fp16", t.sms);
    for (int i = 0; i < 3; i++) {
        int cps;
        printf(" %d", splits_of(t.s[i], t.B, t.sms, false, &cps));
    }
    printf(" (s2d: 1)\n\n| v | level | change | ms per trunk | conv1 | conv2 | conv3 | "
           "error vs CPU (1, 2, 3) | bits |\n|---|---|---|---|---|---|---|---|---|\n");
    for (int v = 1; v <= NV; v++) {
        const version &ver = versions[v - 1];
        const bool wanted = o.version == 0 || o.version == v;
        const bool needed = wanted || (o.version && versions[o.version - 1].bits_as == v);
        if (!needed) continue;
        // once, for the checks
        std::vector<std::vector<uint16_t>> out(3);
        for (int i = 0; i < 3; i++) {
            run_stage<T>(t, ver.level, i, st);
            const conv_shape &s = t.s[i];
            out[i].resize((size_t)t.B * s.P * s.Q * s.K);
            CK(cudaMemcpyAsync(out[i].data(), t.y[i], out[i].size() * 2, cudaMemcpyDeviceToHost,
                               st));
        }
        CK(cudaStreamSynchronize(st));
        if (ver.bits_as == v) ref_out[v] = out;
        if (!wanted) continue;
        // bit for bit against the group's first version (run before this one)
        char bits[64] = "-";
        if (ver.bits_as != v) {
            bool same = true;
            for (int i = 0; i < 3; i++) same = same && out[i] == ref_out[ver.bits_as][i];
            snprintf(bits, sizeof bits, "%s v%d's", same ? "=" : "DIFFER from", ver.bits_as);
            if (!same) failed = 1;
        }
        // each stage against the CPU on its own input, for the first and last images
        double err[3] = {0, 0, 0};
        for (int i = 0; i < 3; i++) {
            const conv_shape &s = t.s[i];
            const bool bytes = i == 0 && ver.level >= 3; // the products take the bytes
            std::vector<float> xin((size_t)s.C * s.H * s.W);
            std::vector<double> y((size_t)s.K * s.P * s.Q);
            double e2 = 0, r2 = 0;
            for (int k = 0; k < nchk; k++) {
                const int n = k == 0 ? 0 : t.B - nchk + k;
                for (int c = 0; c < s.C; c++)
                    for (int h = 0; h < s.H; h++)
                        for (int w = 0; w < s.W; w++) {
                            float v = 0;
                            if (i == 0) {
                                const float u = xh[(((size_t)n * s.C + c) * s.H + h) * s.W + w];
                                v = bytes ? u : fmt<T>(u / 255.0f);
                            } else {
                                v = out_at<T>(out[i - 1], t.s[i - 1], false, n, c, h, w);
                            }
                            xin[((size_t)c * s.H + h) * s.W + w] = v;
                        }
                conv_ref(s, xin.data(), hn.w[i].data(), hn.b[i].data(), bytes ? 1.0 / 255.0 : 1.0,
                         y.data());
                for (int c = 0; c < s.K; c++)
                    for (int h = 0; h < s.P; h++)
                        for (int w = 0; w < s.Q; w++) {
                            const double r = y[((size_t)c * s.P + h) * s.Q + w];
                            const double g = out_at<T>(out[i], s, i == 2, n, c, h, w);
                            e2 += (g - r) * (g - r), r2 += r * r;
                        }
            }
            err[i] = sqrt(e2 / (r2 > 0 ? r2 : 1));
            if (!(err[i] <= tol)) failed = 1;
        }
        // timed: the trunk, then each stage alone
        float ms[4];
        for (int part = 0; part < 4; part++) {
            for (int r = 0; r < 5; r++)
                for (int i = 0; i < 3; i++)
                    if (part == 3 || part == i) run_stage<T>(t, ver.level, i, st);
            CK(cudaEventRecord(e0, st));
            for (int r = 0; r < o.reps; r++)
                for (int i = 0; i < 3; i++)
                    if (part == 3 || part == i) run_stage<T>(t, ver.level, i, st);
            CK(cudaEventRecord(e1, st));
            CK(cudaEventSynchronize(e1));
            CK(cudaEventElapsedTime(&ms[part], e0, e1));
            ms[part] /= (float)o.reps;
        }
        printf("| v%d | %d | %s | %.4f | %.4f | %.4f | %.4f | %.2g, %.2g, %.2g%s | %s |\n", v,
               ver.level, ver.what, ms[3], ms[0], ms[1], ms[2], err[0], err[1], err[2],
               err[0] <= tol && err[1] <= tol && err[2] <= tol ? "" : " FAIL", bits);
        fflush(stdout);
    }
    printf("\nerror: ||gpu - cpu|| / ||cpu|| per stage over %d image(s) (<= %g)%s\n", nchk, tol,
           failed ? "; FAILED" : "");
    return failed;
}

int main(int argc, char **argv) {
    options o = {0, 128, 256, 0, 200, 2};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const bool more = i + 1 < argc;
        if (!strcmp(a, "--batch") && more) o.batch = atoi(argv[++i]);
        else if (!strcmp(a, "--hw") && more) o.hw = atoi(argv[++i]);
        else if (!strcmp(a, "--reps") && more) o.reps = atoi(argv[++i]);
        else if (!strcmp(a, "--check") && more) o.check = atoi(argv[++i]);
        else if (!strcmp(a, "--bf16")) o.bf16 = 1;
        else if (a[0] != '-' && atoi(a) >= 1 && atoi(a) <= NV) o.version = atoi(a);
        else {
            fprintf(stderr, "usage: %s [VERSION 1..%d] [--batch N] [--hw 256|84] [--bf16] "
                            "[--reps N] [--check N]\n", argv[0], NV);
            return 1;
        }
    }
    if (o.batch < 1 || o.hw < 36 || o.hw % 4 || o.reps < 1 || o.check < 1) {
        fprintf(stderr, "%s: --batch, --reps and --check >= 1; --hw a multiple of 4, >= 36\n",
                argv[0]);
        return 1;
    }
    int dev = 0, major = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    if (major < 8) {
        fprintf(stderr, "%s: needs compute capability 8.0 or newer (bf16 tensor cores)\n", argv[0]);
        return 1;
    }
    return o.bf16 ? run<__nv_bfloat16>(o) : run<__half>(o);
}
