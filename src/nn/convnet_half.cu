// The half-precision forward of convnet_cuda: fp16 or bf16 products on the tensor cores, fp32
// accumulation, inference only (convnet_cuda.h has the API and its meaning, convnet_half.cuh the
// plan).
//
// Conv stages: one implicit-GEMM kernel each (hconv_kernel). The product is the GEMM view of a
// convolution, rows m = (n, p, q) output pixels, columns k output channels, reduction over the
// taps j of one output: y[m][k] = act(b[k] + sum_j A[m][j] W[k][j]), A the im2col matrix. The
// kernel never writes A: each block gathers its tile of A for one chunk of 32 taps straight from
// the stage's input into shared memory, converting to the format as it goes (uint8 / 255 or
// cast, float rounded, or the previous stage's values as they are), multiplies it with the
// weights' tile on the tensor cores (WMMA m16n16k16, fp32 accumulators), and moves on to the next
// chunk while the loads of that one are in flight (two shared buffers, one barrier a chunk). The
// bias and the activation are applied to the fp32 accumulators, once, and the result is rounded
// once to the format: the CPU's stage with its input and output rounded, which is the model of
// nn/precision.c's conv.y rows. Layouts: the first conv reads the observations as they come
// (N, C, H, W), taps in the weight's own order (c, r, s); its output, and every conv output that
// feeds a conv, is channels-last (N, P, Q, K), so the next conv gathers 8 channels of one tap as
// one 16-byte load, with its weights reordered to (r, s, c) taps when they are converted; the
// last conv writes (N, K, P, Q), the flatten order the linear after it was trained on.
//
// A conv over a channels-last input with C a multiple of 8 and more than 32 output channels (the
// convs after the first) runs hconv_nhwc_kernel instead: the same product, its tiles copied
// global -> shared by cp.async three chunks deep (see there).
//
// Tiles: 256 threads, 8 warps of 32 x 32 outputs each; 128 pixels x 64 channels per block, or
// 256 x 32 when the stage has at most 32 channels (the seed's first conv). Conv weights are
// zero-padded in the weights block to whole tiles (K to 64, taps to 32), so the weight tile is
// read without bounds checks; gathered taps past C R S are zeros, so the padding multiplies zeros.
//
// Split-K: at a small batch the pixels give fewer blocks than the GPU runs at once (batch 1 of
// the seed's convs: 16, 8 and 7 blocks, each a chain of 8 to 18 chunks: latency, not work). Then
// the taps are split too (gridDim.z, cr_convnet_half_splits: up to two blocks per SM, whole
// chunks each); each block writes its fp32 partial sums, and hconv_reduce_kernel adds them in
// split order, adds the bias, applies the activation and rounds. The partial sums live in the
// rows of the stage's output buffer that the batch leaves free (the cache holds max_batch rows),
// else in the workspace. The split is a fixed function of the batch size and the SM count: each
// batch size sums in one order.
//
// Linear stages: cublasGemmEx with the format's inputs and an fp32 output into the workspace
// (CUBLAS_COMPUTE_32F), then one kernel adds the fp32 bias, applies the activation and rounds
// to the format. Heads (PPO's actor and critic, DQN's Q head): one kernel, a warp per output,
// fp32 sums of exact fp32 products of the format's values, a fixed butterfly order, plus the
// fp32 bias, written in fp32.
//
// Why CUBLAS_COMPUTE_32F (and fp32 WMMA accumulators): nn/precision.c's
// cr_precision_why_fp32_accumulate: a 256-term sum in a format of unit roundoff u errs by up to
// 256 u of its terms, every bit for bf16; float sums keep the error at the inputs' rounding.
// fp16 accumulation (CUBLAS_COMPUTE_16F) would also overflow at 65504 in the sum itself. The
// cost is the tensor cores' fp32-accumulate rate, which on Ampere and Hopper is their fp16 rate
// for dense MMA.
//
// Determinism: every output is a sum in a fixed order (the chunks in order, the MMA's fixed
// internal order; cuBLAS's order for a fixed handle, shape and workspace; the heads' butterfly),
// no atomics: results repeat bit for bit on one device and library version.
//
// Memory of the seed network (4x256x256 uint8, conv 32@8x8/4, 64@4x4/2, 64@3x3/1, FC 512, heads
// 7 + 1; 25.77 M parameters) at max_batch B: weights 51.6 MB (fp32's 103 MB is not on the device
// at all for the policy runtime), cache B x (32x63x63 + 64x30x30) x 2 bytes = B x 369 KB (no
// float input: the first conv reads the uint8 observations in place), workspace B x 512 x 4
// bytes (at B = 1 the split-K partials instead, 4.1 MB), no im2col (the GEMM engine's conv1
// im2col is B x 4 MB in fp32). So 99.1 MB at B = 128 (every smaller batch's partials fit in the
// free rows) and 55.9 MB at B = 1, beside the runtime's uint8 input buffer (B x 262 KB) and the
// context's 32 MiB cuBLAS workspace.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>
#include <string.h>

#include "ops/cuda/cuda_common.cuh"
#include "ops/cuda/tanh_device.cuh"
// convnet_cuda.h, included by convnet_half.cuh, has its own extern "C"
#include "nn/convnet_half.cuh"

#define HALF_ALIGN ((size_t)256) // each piece of the weights block and the cache
#define HC_THREADS 256           // threads of a conv block: 8 warps
#define HC_LDS (HALF_BK + 8)     // elements per row of a shared tile: 80 bytes, so that rows start
                                 // 16-byte aligned and 8 rows' 16-byte pieces hit 32 banks once

enum { ACT_NONE = 0, ACT_RELU, ACT_TANH };
enum { IN_U8 = 0, IN_F32, IN_NHWC }; // what a conv stage reads

static size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

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

static int act_of(const cr_convnet_stage *st) {
    return st->act == CR_CONVNET_RELU ? ACT_RELU : st->act == CR_CONVNET_TANH ? ACT_TANH
                                                                               : ACT_NONE;
}

// ---- the weights block ---------------------------------------------------------------------

// Index into the float parameters of element i of piece p, or -1 where the block holds a zero
// (past a conv weight's K rows or C R S taps). One mapping for the host's pack and the device's
// update, so that the two write the same bytes.
__host__ __device__ static inline long long piece_source(const cr_half_piece &p, size_t i) {
    if (p.kind == HALF_PIECE_COPY || p.kind == HALF_PIECE_BIAS) return (long long)(p.src + i);
    const size_t k = i / (size_t)p.CRSp, j = i - k * (size_t)p.CRSp;
    if (k >= (size_t)p.K || j >= (size_t)p.CRS) return -1;
    size_t tap = j; // KCRS: the tensor's own (c, r, s) order
    if (p.kind == HALF_PIECE_KRSC) { // j = (r S + s) C + c
        const size_t rs = j / (size_t)p.C, c = j - rs * (size_t)p.C;
        const size_t r = rs / (size_t)p.S, s = rs - r * (size_t)p.S;
        tap = (c * (size_t)p.R + r) * (size_t)p.S + s;
    }
    return (long long)(p.src + k * (size_t)p.CRS + tap);
}

void cr_convnet_half_plan_init(const cr_convnet *net, cudarl_precision precision,
                               const int *batches, int nbatches, int sms,
                               cr_convnet_half_plan *hp) {
    memset(hp, 0, sizeof *hp);
    hp->precision = precision;
    hp->dtype = cr_precision_policy_of(precision)->activations;
    CUDARL_ASSERT(hp->dtype == CR_DTYPE_F16 || hp->dtype == CR_DTYPE_BF16);
    CUDARL_ASSERT(nbatches >= 1 && sms >= 1);
    for (int b = 0; b < nbatches; b++)
        hp->max_batch = batches[b] > hp->max_batch ? batches[b] : hp->max_batch;
    hp->sms = sms;
    hp->npieces = net->ntensors;
    for (int i = 0; i < net->ntensors; i++) {
        const cr_convnet_tensor *t = &net->t[i];
        cr_half_piece *p = &hp->piece[i];
        p->kind = t->ndim == 1 ? HALF_PIECE_BIAS : HALF_PIECE_COPY;
        p->src = t->offset, p->count = t->count;
    }
    size_t widest_linear = 0;
    for (int s = 0; s < net->ntrunk; s++) {
        const cr_convnet_stage *st = &net->stage[s];
        const size_t out = (size_t)st->out;
        hp->widest[s & 1] = out > hp->widest[s & 1] ? out : hp->widest[s & 1];
        if (st->op == CR_CONVNET_LINEAR) {
            widest_linear = out > widest_linear ? out : widest_linear;
            continue;
        }
        // a conv after the first reads the channels-last output of the conv before it
        CUDARL_ASSERT(s == 0 || net->stage[s - 1].op == CR_CONVNET_CONV);
        const cr_conv2d_shape *c = &st->conv;
        cr_half_piece *p = &hp->piece[st->weight];
        p->kind = s == 0 ? HALF_PIECE_KCRS : HALF_PIECE_KRSC;
        p->K = c->K, p->C = c->C, p->R = c->R, p->S = c->S;
        p->CRS = c->C * c->R * c->S;
        p->CRSp = (int)round_up((size_t)p->CRS, HALF_BK);
        p->count = round_up((size_t)p->K, HALF_KP) * (size_t)p->CRSp;
    }
    size_t at = 0;
    for (int i = 0; i < hp->npieces; i++) {
        cr_half_piece *p = &hp->piece[i];
        p->dst = at;
        p->bytes = round_up(p->count * (p->kind == HALF_PIECE_BIAS ? sizeof(float) : 2),
                            HALF_ALIGN);
        at += p->bytes;
    }
    hp->weights_bytes = at;
    // the workspace: the linear stages' products, or split-K partials that their output buffer
    // cannot hold, whichever is larger (a stage's partials are summed before the next stage)
    size_t ws = (size_t)hp->max_batch * widest_linear * sizeof(float);
    for (int b = 0; b < nbatches; b++)
        for (int s = 0; s < net->ntrunk; s++) {
            if (net->stage[s].op != CR_CONVNET_CONV) continue;
            const cr_half_split sp = cr_convnet_half_splits(net, hp, s, batches[b]);
            if (sp.splits > 1 && !sp.in_output) ws = sp.bytes > ws ? sp.bytes : ws;
        }
    hp->workspace_bytes = ws ? round_up(ws, HALF_ALIGN) + HALF_ALIGN - 1 : 0;
    hp->needs_x = net->ntrunk == 0 || net->stage[0].op != CR_CONVNET_CONV;
}

// The conv kernel's tile for a stage of K channels: 256 pixels x 32 channels up to 32 channels,
// else 128 x 64 (hconv_tile).
static void conv_tile(int K, int *bm, int *bn) {
    *bm = K <= 32 ? 256 : 128;
    *bn = K <= 32 ? 32 : 64;
}

cr_half_split cr_convnet_half_splits(const cr_convnet *net, const cr_convnet_half_plan *hp,
                                     int i, int B) {
    const cr_convnet_stage *st = &net->stage[i];
    const cr_conv2d_shape *cs = &st->conv;
    CUDARL_ASSERT(st->op == CR_CONVNET_CONV && B >= 1 && B <= hp->max_batch);
    int bm, bn;
    conv_tile(cs->K, &bm, &bn);
    const long long M = (long long)B * cs->P * cs->Q;
    const long long blocks = (M + bm - 1) / bm * ((cs->K + bn - 1) / bn);
    const int chunks = hp->piece[st->weight].CRSp / HALF_BK;
    long long want = 2LL * hp->sms / blocks; // splits for two blocks per SM
    want = want < 1 ? 1 : want > chunks ? chunks : want;
    cr_half_split sp;
    memset(&sp, 0, sizeof sp);
    sp.cps = (chunks + (int)want - 1) / (int)want;
    sp.splits = (chunks + sp.cps - 1) / sp.cps; // no empty split
    if (sp.splits == 1) return sp;
    sp.bytes = (size_t)sp.splits * (size_t)M * (size_t)cs->K * sizeof(float);
    // the output buffer holds max_batch rows of its widest stage; this output takes B rows
    const size_t out = round_up((size_t)B * (size_t)st->out * 2, HALF_ALIGN);
    const size_t cap = (size_t)hp->max_batch * hp->widest[i & 1] * 2;
    sp.in_output = cap >= out && cap - out >= sp.bytes;
    sp.at = sp.in_output ? out : 0;
    return sp;
}

size_t cr_convnet_half_cache_carve(const cr_convnet *net, const cr_convnet_half_plan *hp,
                                   unsigned char *mem, int max_rows, cr_convnet_half_cache *c) {
    const size_t B = (size_t)max_rows, E = 2; // bytes of an fp16 / bf16 element
    size_t buf[2], at = 0;
    CUDARL_ASSERT(max_rows >= hp->max_batch); // split-K partials may use the rows past B
    memset(c, 0, sizeof *c);
    c->max_rows = max_rows;
    if (hp->needs_x) {
        c->x = mem ? mem + at : NULL;
        at += round_up(B * (size_t)net->in_floats * E, HALF_ALIGN);
    }
    for (int k = 0; k < 2; k++) {
        buf[k] = at;
        at += round_up(B * hp->widest[k] * E, HALF_ALIGN);
    }
    for (int i = 0; i < net->ntrunk; i++) c->act[i] = mem ? mem + buf[i & 1] : NULL;
    return at;
}

template <typename T>
static void pack_as(const cr_convnet_half_plan *hp, const float *params, unsigned char *out) {
    memset(out, 0, hp->weights_bytes); // the padding's zeros: +0 in both formats
    for (int k = 0; k < hp->npieces; k++) {
        const cr_half_piece &p = hp->piece[k];
        unsigned char *d = out + p.dst;
        for (size_t i = 0; i < p.count; i++) {
            const long long s = piece_source(p, i);
            if (s < 0) continue;
            if (p.kind == HALF_PIECE_BIAS) {
                memcpy(d + i * sizeof(float), &params[s], sizeof(float));
            } else {
                const T h = to_fmt<T>(params[s]);
                memcpy(d + i * 2, &h, 2);
            }
        }
    }
}

void cr_convnet_half_pack(const cr_convnet_half_plan *hp, const float *params, void *out) {
    if (hp->dtype == CR_DTYPE_F16) pack_as<__half>(hp, params, (unsigned char *)out);
    else pack_as<__nv_bfloat16>(hp, params, (unsigned char *)out);
}

// Piece p of the weights block from the float parameters (pack_as's loop, one thread an
// element), and zeros over the rest of its line: every byte of the block is written, as the host
// pack's memset does.
template <typename T>
static __global__ void pack_kernel(const cr_half_piece p, const float *__restrict__ params,
                                   unsigned char *__restrict__ block) {
    const size_t step = (size_t)gridDim.x * blockDim.x;
    if (p.kind == HALF_PIECE_BIAS) {
        float *d = (float *)(block + p.dst);
        for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < p.bytes / 4; i += step)
            d[i] = i < p.count ? params[p.src + i] : 0.0f;
        return;
    }
    T *d = (T *)(block + p.dst);
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < p.bytes / 2; i += step) {
        const long long s = i < p.count ? piece_source(p, i) : -1;
        d[i] = to_fmt<T>(s < 0 ? 0.0f : params[s]);
    }
}

void cr_convnet_half_update(cudarl_ctx *ctx, const cr_convnet_half_plan *hp, const float *params,
                            void *weights) {
    for (int k = 0; k < hp->npieces; k++) {
        const cr_half_piece &p = hp->piece[k];
        const unsigned blocks = cr_cuda_blocks(p.bytes / 2, CR_CUDA_THREADS);
        if (hp->dtype == CR_DTYPE_F16)
            pack_kernel<__half><<<blocks, CR_CUDA_THREADS, 0, cr_stream(ctx)>>>(
                p, params, (unsigned char *)weights);
        else
            pack_kernel<__nv_bfloat16><<<blocks, CR_CUDA_THREADS, 0, cr_stream(ctx)>>>(
                p, params, (unsigned char *)weights);
        CR_CUDA_LAUNCHED(ctx);
    }
}

// ---- the conv kernel -----------------------------------------------------------------------

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
                  // stride and W multiples of 4 (the seed's 8x8/4 conv on 256 or 84 pixels)
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
    const int PQ = a.P * a.Q;
    const long long n = m / PQ;
    const int pq = (int)(m - n * PQ), p = pq / a.Q, q = pq - p * a.Q;
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
template <typename T, int BM, int BN>
__device__ __forceinline__ void
hconv_epilogue(const hconv_args &a,
               nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> (&acc)[2][2],
               unsigned char *smem, long long m0, int k0, int wm, int wn, int tid) {
    using namespace nvcuda;
    float *Cs = (float *)smem;
    T *y = (T *)a.y;
    if (a.partial || !a.out_nchw) { // Cs[pixel][channel]; consecutive threads, channels
        constexpr int LDC = BN + 4;
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int j = 0; j < 2; j++)
                wmma::store_matrix_sync(Cs + (wm * 32 + i * 16) * LDC + wn * 32 + j * 16,
                                        acc[i][j], LDC, wmma::mem_row_major);
        __syncthreads();
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
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int j = 0; j < 2; j++)
                wmma::store_matrix_sync(Cs + (wn * 32 + j * 16) * LDC + wm * 32 + i * 16,
                                        acc[i][j], LDC, wmma::mem_col_major);
        __syncthreads();
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

template <typename T, int BM, int BN>
__device__ __forceinline__ void
hconv_epilogue_vec(const hconv_args &a,
                   nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> (&acc)[2][2],
                   unsigned char *smem, long long m0, int k0, int wm, int wn, int tid) {
    using namespace nvcuda;
    float *Cs = (float *)smem;
    T *y = (T *)a.y;
    const int PQ = a.P * a.Q;
    if (a.partial || !a.out_nchw) { // Cs[pixel][channel]; an item: 8 channels of one pixel
        constexpr int LDC = BN + 4, G = BN / 8;
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int j = 0; j < 2; j++)
                wmma::store_matrix_sync(Cs + (wm * 32 + i * 16) * LDC + wn * 32 + j * 16,
                                        acc[i][j], LDC, wmma::mem_row_major);
        __syncthreads();
        float *part = a.partial ? a.partial + (size_t)blockIdx.z * (size_t)a.M * a.K : NULL;
        for (int e = tid; e < BM * G; e += HC_THREADS) {
            const int mi = e / G, k = k0 + (e - mi * G) * 8;
            const long long mm = m0 + mi;
            if (mm >= a.M || k >= a.K) continue;
            const float *c = Cs + mi * LDC + (k - k0);
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
    } else { // Cs[channel][pixel]; y (N, K, P, Q); an item: 8 pixels of one channel
        constexpr int LDC = BM + 4, G = BM / 8;
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int j = 0; j < 2; j++)
                wmma::store_matrix_sync(Cs + (wn * 32 + j * 16) * LDC + wm * 32 + i * 16,
                                        acc[i][j], LDC, wmma::mem_col_major);
        __syncthreads();
        for (int e = tid; e < BN * G; e += HC_THREADS) {
            const int ki = e / G, mi = (e - ki * G) * 8, k = k0 + ki;
            const long long mm = m0 + mi;
            if (mm >= a.M || k >= a.K) continue;
            const float *c = Cs + ki * LDC + mi;
            const float bk = a.b[k];
            if ((PQ & 7) == 0) { // the 8 pixels are one image's, and all of them < M
                const long long n = mm / PQ;
                const int pq = (int)(mm - n * PQ);
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
    __trap(); // cr_convnet_cuda_init_precision refuses devices below compute capability 8.0
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
    __trap(); // cr_convnet_cuda_init_precision refuses devices below compute capability 8.0
#endif
}

// y = act(b + the sum of the splits' partial sums, in split order), in the format: the epilogue
// of a split conv. partial (splits, M, K); y (M, K) channels-last, or (N, K, P, Q) when
// out_nchw; one thread per element of y, in y's order.
template <typename T>
static __global__ void hconv_reduce_kernel(const float *__restrict__ partial, int splits,
                                           const float *__restrict__ b, T *__restrict__ y,
                                           long long M, int K, int PQ, int act, int out_nchw,
                                           int div255) {
    const size_t n = (size_t)M * K, step = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        size_t m;
        int k;
        if (out_nchw) { // i = (img K + k) PQ + pq
            const size_t nk = i / (size_t)PQ, img = nk / (size_t)K;
            k = (int)(nk - img * K);
            m = img * PQ + (i - nk * PQ);
        } else {
            m = i / (size_t)K;
            k = (int)(i - m * K);
        }
        float s = partial[m * K + k];
        for (int z = 1; z < splits; z++) s = __fadd_rn(s, partial[((size_t)z * M + m) * K + k]);
        if (div255) s = __fdiv_rn(s, 255.0f);
        y[i] = to_fmt<T>(act_apply(act, __fadd_rn(s, b[k])));
    }
}

// The kernel level at start (cr_convnet_half_set_pipelined); a build may set it to compare the
// levels in one run, e.g. -DCMAKE_CUDA_FLAGS=-DCUDARL_HALF_LEVEL=3 (scripts/gpu-check.sh's
// infer_levels).
#ifndef CUDARL_HALF_LEVEL
#define CUDARL_HALF_LEVEL 3
#endif
static int use_pipelined = CUDARL_HALF_LEVEL;

extern "C" void cr_convnet_half_set_pipelined(int level) {
    use_pipelined = level < 0 ? 0 : level > 3 ? 3 : level;
}

extern "C" int cr_convnet_half_level(void) { return use_pipelined; }

template <typename T, int IN>
static void launch_conv_in(cudarl_ctx *ctx, const hconv_args &a, int splits) {
    cudaStream_t st = cr_stream(ctx);
    if (IN == IN_NHWC && a.C % 8 == 0 && a.K > 32 && use_pipelined) { // the same tile as hconv_tile<2>
        typedef hconv_tile<2> tile;
        dim3 grid((unsigned)((a.M + tile::BM - 1) / tile::BM), (unsigned)((a.K + 63) / 64),
                  (unsigned)splits);
        if (use_pipelined >= 2) hconv_nhwc_kernel<T, true><<<grid, HC_THREADS, 0, st>>>(a);
        else hconv_nhwc_kernel<T, false><<<grid, HC_THREADS, 0, st>>>(a);
    } else if (a.K <= 32) {
        typedef hconv_tile<1> tile;
        dim3 grid((unsigned)((a.M + tile::BM - 1) / tile::BM), (unsigned)((a.K + 31) / 32),
                  (unsigned)splits);
        if (use_pipelined >= 2) hconv_kernel<T, IN, 1, true><<<grid, HC_THREADS, 0, st>>>(a);
        else hconv_kernel<T, IN, 1, false><<<grid, HC_THREADS, 0, st>>>(a);
    } else {
        typedef hconv_tile<2> tile;
        dim3 grid((unsigned)((a.M + tile::BM - 1) / tile::BM), (unsigned)((a.K + 63) / 64),
                  (unsigned)splits);
        if (use_pipelined >= 2) hconv_kernel<T, IN, 2, true><<<grid, HC_THREADS, 0, st>>>(a);
        else hconv_kernel<T, IN, 2, false><<<grid, HC_THREADS, 0, st>>>(a);
    }
    CR_CUDA_LAUNCHED(ctx);
}

// The conv stage of a: one kernel, or with splits > 1 the split kernel into a.partial and the
// reduce.
template <typename T>
static void launch_conv(cudarl_ctx *ctx, int in, const hconv_args &a, int splits) {
    if (in == IN_U8) launch_conv_in<T, IN_U8>(ctx, a, splits);
    else if (in == IN_F32) launch_conv_in<T, IN_F32>(ctx, a, splits);
    else launch_conv_in<T, IN_NHWC>(ctx, a, splits);
    if (splits == 1) return;
    const size_t n = (size_t)a.M * a.K;
    hconv_reduce_kernel<T><<<cr_cuda_blocks(n, CR_CUDA_THREADS), CR_CUDA_THREADS, 0,
                             cr_stream(ctx)>>>(a.partial, splits, a.b, (T *)a.y, a.M, a.K,
                                               a.P * a.Q, a.act, a.out_nchw, a.div255);
    CR_CUDA_LAUNCHED(ctx);
}

// ---- the other kernels ---------------------------------------------------------------------

// x (n) = the observations (n) in the format: uint8 / 255 or cast, or float, rounded.
template <typename T>
static __global__ void input_kernel(const void *__restrict__ obs, int u8, int scale255,
                                    T *__restrict__ x, size_t n) {
    const size_t step = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        float f;
        if (u8) {
            const float u = (float)((const uint8_t *)obs)[i];
            f = scale255 ? __fdiv_rn(u, 255.0f) : u;
        } else {
            f = ((const float *)obs)[i];
        }
        x[i] = to_fmt<T>(f);
    }
}

// y (B, O) = act(acc (B, O) + b (O)) in the format, n = B O: a linear stage's epilogue.
template <typename T>
static __global__ void linear_epilogue_kernel(const float *__restrict__ acc,
                                              const float *__restrict__ b, T *__restrict__ y,
                                              size_t n, unsigned O, int act) {
    const size_t step = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        y[i] = to_fmt<T>(act_apply(act, __fadd_rn(acc[i], b[i % O])));
}

// out (B, A) = h (B, F) wa^T (A, F) + ba, and, with wc, value (B) = h wc^T (1, F) + bc: one warp
// per output (row b, output o; o == A is the critic), lanes over f, fp32 sums of the exact
// products, then the butterfly (each lane ends with the same bits: a + b == b + a), then the bias.
template <typename T>
static __global__ void heads_kernel(const T *__restrict__ h, int F, const T *__restrict__ wa,
                                    const float *__restrict__ ba, float *__restrict__ out, int A,
                                    const T *__restrict__ wc, const float *__restrict__ bc,
                                    float *__restrict__ value, int B) {
    const int O = A + (wc != NULL), lane = threadIdx.x & 31;
    const long long g = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (g >= (long long)B * O) return; // the whole warp
    const int b = (int)(g / O), o = (int)(g - (long long)b * O);
    const T *x = h + (size_t)b * F, *wr = o < A ? wa + (size_t)o * F : wc;
    float s = 0.0f;
    for (int f = lane; f < F; f += 32) s = fmaf(from_fmt(x[f]), from_fmt(wr[f]), s);
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) s = __fadd_rn(s, __shfl_xor_sync(0xffffffffu, s, d));
    if (lane) return;
    const float v = __fadd_rn(s, o < A ? ba[o] : bc[0]);
    if (o < A) out[(size_t)b * A + o] = v;
    else value[b] = v;
}

// ---- the forward ---------------------------------------------------------------------------

static const float one = 1.0f, zero = 0.0f;

// y (B, O) fp32 = x (B, I) w^T, x and w (O, I) in the format dt, fp32 accumulation (the
// top says why); column-major that is y^T (O, B) = w (O, I) x^T (I, B): gemm(T, N).
static void gemm_ex(cudarl_ctx *ctx, cudaDataType_t dt, const void *w, const void *x, float *y,
                    int B, int I, int O) {
    CUBLAS_CHECK(cublasGemmEx(cr_impl(ctx)->blas, CUBLAS_OP_T, CUBLAS_OP_N, O, B, I, &one, w, dt,
                              I, x, dt, I, &zero, y, CUDA_R_32F, O, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT));
    CR_CUDA_LAUNCHED(ctx);
}

template <typename T>
static void forward_as(cudarl_ctx *ctx, const cr_convnet *net, const cr_convnet_half_plan *hp,
                       const unsigned char *wb, float *ws, const void *obs, float *out,
                       float *value, const cr_convnet_half_cache *c, int B) {
    const cr_convnet_spec *spec = &net->spec;
    const cudaDataType_t dt = hp->dtype == CR_DTYPE_F16 ? CUDA_R_16F : CUDA_R_16BF;
    const int u8 = spec->dtype == CR_CONVNET_U8, scale = spec->scale == CR_CONVNET_SCALE_255;
    cudaStream_t st = cr_stream(ctx);
    const void *h = obs;
    if (hp->needs_x) {
        const size_t n = (size_t)B * net->in_floats;
        input_kernel<T><<<cr_cuda_blocks(n, CR_CUDA_THREADS), CR_CUDA_THREADS, 0, st>>>(
            obs, u8, scale, (T *)c->x, n);
        CR_CUDA_LAUNCHED(ctx);
        h = c->x;
    }
    for (int i = 0; i < net->ntrunk; i++) {
        const cr_convnet_stage *s = &net->stage[i];
        const void *w = wb + hp->piece[s->weight].dst;
        const float *b = (const float *)(wb + hp->piece[s->bias].dst);
        if (s->op == CR_CONVNET_CONV) {
            const cr_conv2d_shape *cs = &s->conv;
            hconv_args a;
            a.x = h, a.w = w, a.b = b, a.y = c->act[i];
            a.M = (long long)B * cs->P * cs->Q;
            a.K = cs->K, a.C = cs->C, a.H = cs->H, a.W = cs->W, a.R = cs->R, a.S = cs->S;
            a.stride = cs->stride, a.pad = cs->pad, a.P = cs->P, a.Q = cs->Q;
            a.CRSp = hp->piece[s->weight].CRSp;
            a.scale255 = scale, a.act = act_of(s);
            a.u8_words = u8 && i == 0 && cs->pad == 0 && cs->S % 4 == 0 && cs->stride % 4 == 0 &&
                         cs->W % 4 == 0;
            a.div255 = a.u8_words && scale && use_pipelined >= 3;
            a.out_nchw = !(i + 1 < net->ntrunk && net->stage[i + 1].op == CR_CONVNET_CONV);
            const cr_half_split sp = cr_convnet_half_splits(net, hp, i, B);
            a.cps = sp.cps;
            a.partial = sp.splits == 1 ? NULL
                        : sp.in_output ? (float *)((unsigned char *)c->act[i] + sp.at)
                                       : ws;
            launch_conv<T>(ctx, i > 0 ? IN_NHWC : u8 ? IN_U8 : IN_F32, a, sp.splits);
        } else {
            const size_t n = (size_t)B * s->out;
            gemm_ex(ctx, dt, w, h, ws, B, s->in, s->out);
            linear_epilogue_kernel<T><<<cr_cuda_blocks(n, CR_CUDA_THREADS), CR_CUDA_THREADS, 0,
                                        st>>>(ws, b, (T *)c->act[i], n, (unsigned)s->out,
                                              act_of(s));
            CR_CUDA_LAUNCHED(ctx);
        }
        h = c->act[i];
    }
    const int F = net->features, A = spec->num_actions;
    const T *wa, *wc = NULL;
    const float *ba, *bc = NULL;
    if (spec->heads == CR_CONVNET_DQN) {
        const cr_convnet_stage *q = &net->stage[net->ntrunk];
        wa = (const T *)(wb + hp->piece[q->weight].dst);
        ba = (const float *)(wb + hp->piece[q->bias].dst);
    } else {
        wa = (const T *)(wb + hp->piece[net->actor_w].dst);
        ba = (const float *)(wb + hp->piece[net->actor_b].dst);
        wc = (const T *)(wb + hp->piece[net->critic_w].dst);
        bc = (const float *)(wb + hp->piece[net->critic_b].dst);
    }
    const size_t threads = (size_t)B * (size_t)(A + (wc != NULL)) * 32;
    heads_kernel<T><<<(unsigned)((threads + 255) / 256), 256, 0, st>>>(
        (const T *)h, F, wa, ba, out, A, wc, bc, value, B);
    CR_CUDA_LAUNCHED(ctx);
}

void cr_convnet_half_forward(cudarl_ctx *ctx, const cr_convnet *net,
                             const cr_convnet_half_plan *hp, const void *weights, void *workspace,
                             const void *obs, float *out, float *value,
                             const cr_convnet_half_cache *c, int B) {
    const unsigned char *wb = (const unsigned char *)weights;
    float *ws = (float *)workspace;
    if (hp->dtype == CR_DTYPE_F16)
        forward_as<__half>(ctx, net, hp, wb, ws, obs, out, value, c, B);
    else
        forward_as<__nv_bfloat16>(ctx, net, hp, wb, ws, obs, out, value, c, B);
}
