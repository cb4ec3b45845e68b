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
// Faster kernels replace it where the shapes allow (the kernel level, cr_convnet_half_set_pipelined,
// default 6; each level keeps the ones below):
//   1. a conv over a channels-last input with C a multiple of 8 and more than 32 output channels
//      (the convs after the first) runs hconv_nhwc_kernel: the same product, its tiles copied
//      global -> shared by cp.async three chunks deep;
//   2. every conv's epilogue writes 8 outputs per 16-byte store (hconv_epilogue_vec);
//   3. a first conv over uint8 / 255 frames multiplies the bytes themselves, converted exactly,
//      and divides its sums by 255 before the bias (no byte table);
//   4. the channels-last convs run hconv_mma_kernel: warps of 64 x 32 outputs, ldmatrix and
//      mma.sync m16n8k16, the same bits as level 3;
//   5. the Nature-CNN's first conv (8x8/4 over 4 uint8 / 255 channels) runs hconv_s2d_kernel, as a
//      2x2 conv over the frame's 4 x 4 blocks of pixels, from shared memory;
//   6. the heads do the last linear stage's epilogue (one launch fewer).
// Levels 0-2 give the same bits, 3 and 4 the same bits, 5 and 6 the same bits; 3 and 5 round
// differently (test_policy_conv checks each against the CPU and its emulation of the roundings).
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
// context's cuBLAS workspace: 1 MiB in the policy runtime, whose linear stages lend cuBLAS a free
// cache buffer instead (gemm_ex) where that is larger, 32 MiB elsewhere.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cooperative_groups.h>
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

// The kernel level at start (cr_convnet_half_set_pipelined); a build may set it to compare the
// levels in one run, e.g. -DCMAKE_CUDA_FLAGS=-DCUDARL_HALF_LEVEL=3 (scripts/gpu-check.sh's
// infer_levels).
#ifndef CUDARL_HALF_LEVEL
#define CUDARL_HALF_LEVEL 12
#endif
static int use_pipelined = CUDARL_HALF_LEVEL;

// Programmatic dependent launch (level 9, compute capability 9.0 on): the forward's kernels are
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
static int device_attr(cudaDeviceAttr a) {
    int dev = 0, v = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&v, a, dev) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return v;
}
static bool pdl_usable(void) { return device_attr(cudaDevAttrComputeCapabilityMajor) >= 9; }
// Whether the device launches clusters of blocks (compute capability 9.0 on).
static bool cluster_usable(void) { return device_attr(cudaDevAttrClusterLaunch) != 0; }
// kernel<<<grid, block, smem, st>>>(args...) in clusters of cluster_y blocks along y (1: none;
// more needs compute capability 9.0), with the programmatic-serialization attribute from level 9
// on devices that have it.
template <typename... KArgs, typename... Args>
static void launch_kc(cudaStream_t st, dim3 grid, dim3 block, size_t smem, unsigned cluster_y,
                      void (*k)(KArgs...), Args... args) {
    const bool pdl = use_pipelined >= 9 && pdl_usable();
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
    if (p.kind == HALF_PIECE_S2D) { // j = ((bh 2 + bw) C + c) 16 + dr 4 + ds
        const size_t blk = j / (16 * (size_t)p.C), e = j - blk * 16 * (size_t)p.C;
        const size_t c = e >> 4, r = 4 * (blk >> 1) + ((e >> 2) & 3), s = 4 * (blk & 1) + (e & 3);
        tap = (c * (size_t)p.R + r) * (size_t)p.S + s;
    } else if (p.kind == HALF_PIECE_KRSC) { // j = (r S + s) C + c
        const size_t rs = j / (size_t)p.C, c = j - rs * (size_t)p.C;
        const size_t r = rs / (size_t)p.S, s = rs - r * (size_t)p.S;
        tap = (c * (size_t)p.R + r) * (size_t)p.S + s;
    }
    return (long long)(p.src + k * (size_t)p.CRS + tap);
}

static int s2d_fits(const cr_convnet *net);

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
        if (s == 0 && s2d_fits(net)) p->kind = HALF_PIECE_S2D, hp->s2d = 1;
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
    cr_half_split sp;
    memset(&sp, 0, sizeof sp);
    if (i == 0 && hp->s2d) { // hconv_s2d_kernel: a block per two output rows, all the taps
        sp.splits = 1, sp.cps = hp->piece[st->weight].CRSp / HALF_BK;
        return sp;
    }
    int bm, bn;
    conv_tile(cs->K, &bm, &bn);
    const long long M = (long long)B * cs->P * cs->Q;
    const long long blocks = (M + bm - 1) / bm * ((cs->K + bn - 1) / bn);
    const int chunks = hp->piece[st->weight].CRSp / HALF_BK;
    long long want = 2LL * hp->sms / blocks; // splits for two blocks per SM
    want = want < 1 ? 1 : want > chunks ? chunks : want;
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
                                   unsigned char *mem, int max_rows, unsigned char *input,
                                   size_t input_bytes, cr_convnet_half_cache *c) {
    const size_t B = (size_t)max_rows, E = 2; // bytes of an fp16 / bf16 element
    size_t buf[2], at = 0;
    CUDARL_ASSERT(max_rows >= hp->max_batch); // split-K partials may use the rows past B
    memset(c, 0, sizeof *c);
    c->max_rows = max_rows;
    if (hp->needs_x) {
        c->x = mem ? mem + at : NULL;
        at += round_up(B * (size_t)net->in_floats * E, HALF_ALIGN);
    }
    // the odd stages write after the first has read the observations (or their conversion
    // into x): their buffer may be the observations' own
    const size_t odd = round_up(B * hp->widest[1] * E, HALF_ALIGN);
    const bool lent = net->ntrunk > 1 && input_bytes >= odd;
    for (int k = 0; k < 2; k++) {
        buf[k] = at;
        if (k == 0 || !lent) at += round_up(B * hp->widest[k] * E, HALF_ALIGN);
    }
    if (lent) c->input = input;
    for (int i = 0; i < net->ntrunk; i++)
        c->act[i] = !mem ? NULL : (i & 1) && lent ? input : mem + buf[i & 1];
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
    __trap(); // cr_convnet_cuda_init_precision refuses devices below compute capability 8.0
#endif
}

// ---- the warp-tiled channels-last conv kernel (level 4) ---------------------------------------

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
// the same sums, and the same epilogue: the same bits (test_policy_conv checks). Each thread
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
    __trap(); // cr_convnet_cuda_init_precision refuses devices below compute capability 8.0
#endif
}

// ---- the channels-last conv with a lean main loop (level 7) ----------------------------------

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

// hconv_lean_write with the conv's activation as its template argument.
template <typename T, int BM, int BN, int LDR, int LDC>
__device__ __forceinline__ void hconv_lean_write_act(const hconv_args &a, const float *Cs,
                                                     long long m0, long long mend, int k0,
                                                     int tid) {
    if (a.act == ACT_RELU)
        hconv_lean_write<T, ACT_RELU, BM, BN, LDR, LDC>(a, Cs, m0, mend, k0, tid);
    else if (a.act == ACT_TANH)
        hconv_lean_write<T, ACT_TANH, BM, BN, LDR, LDC>(a, Cs, m0, mend, k0, tid);
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
// per-output arithmetic, so the same bits (test_policy_conv checks), in fewer instructions.
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
// hconv_lean_write. BK 32 (level 7) or 64 (level 8: two stages of 64 taps, 54 KiB of dynamic
// shared memory, half the barriers). On the H200, fp16 at batch 128: 0.197 ms at level 6, 0.184
// at 7, 0.179 at 8 (bench/RESULTS.md).
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
    __trap(); // cr_convnet_cuda_init_precision refuses devices below compute capability 8.0
#endif
}

// ---- the channels-last conv from an input tile in shared memory (level 12) ------------------

// hconv_mma_lean_kernel's products without its im2col copies: a block's tile is TR whole output
// rows of one image (TR Q <= 128 of its 128 pixel rows), and the input rows those read (HR =
// (TR - 1) stride + R of them, all W columns and C channels, one contiguous run of the NHWC
// input) are copied into shared memory once; every A fragment is an ldmatrix whose lanes address
// their own pixel's taps there. The lean kernel copies each pixel's R S C taps (at batch 128 ~170
// MB from L2 per conv of the seed's net; the halo is 3x (conv2) to 5.6x (conv3) fewer bytes).
// The input tile is XOR-swizzled in 16-byte units by the 128-byte line (Swizzle<3,4,3>: byte
// offset o at o ^ ((o >> 7) & 7) << 4), so that the 8 rows of an ldmatrix (8 consecutive pixels,
// stride 1 or 2) hit distinct banks. The weights stream in chunks of 64 taps as in the lean
// kernel (two stages), and each pixel's sums run over the same k16 steps in the same order
// through the same products and epilogue (hconv_lean_write): the same bits as levels 8 to 11
// (test_policy_conv's test_unsplit). For unsplit convs (the larger batches) with no padding, C a multiple
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
// of the seed net's unsplit convs gain: on the H200 at batch 128, fp16, one build, the forward
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
    __trap(); // cr_convnet_cuda_init_precision refuses devices below compute capability 8.0
#endif
}

// ---- the first conv as a 2 x 2 conv over 4 x 4 blocks (level 5) ------------------------------

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
// The sums are of the bytes themselves (as level 3's, in another order of the taps), then
// scaled by the float nearest 1/255 in one FMA with the bias: level 3's IEEE division and
// addition cost ~12 instructions per output, for a result that differs by at most an fp32
// rounding before the format's.
#define S2D_C 4                      // channels
#define S2D_WB 65                    // block columns in shared memory: Q <= 64 (q + 1 <= 64)
#define S2D_TAPS (64 * S2D_C)        // 2 x 2 blocks of 16 C values
#define S2D_LDW (S2D_TAPS + 8)       // a weight row in shared memory, padded: 528 bytes

static int s2d_fits(const cr_convnet *net) {
    if (use_pipelined < 5 || net->ntrunk < 2) return 0;
    const cr_convnet_stage *st = &net->stage[0];
    const cr_conv2d_shape *c = &st->conv;
    return net->spec.dtype == CR_CONVNET_U8 && net->spec.scale == CR_CONVNET_SCALE_255 &&
           st->op == CR_CONVNET_CONV && net->stage[1].op == CR_CONVNET_CONV && c->C == S2D_C &&
           c->R == 8 && c->S == 8 && c->stride == 4 && c->pad == 0 && c->W % 4 == 0 &&
           c->W / 4 < S2D_WB && c->Q <= 64 && c->K <= 32 && c->K % 8 == 0;
}

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
    __trap(); // cr_convnet_cuda_init_precision refuses devices below compute capability 8.0
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

extern "C" void cr_convnet_half_set_pipelined(int level) {
    use_pipelined = level < 0 ? 0 : level > 12 ? 12 : level;
}

extern "C" int cr_convnet_half_level(void) { return use_pipelined; }

template <typename T, int IN>
static void launch_conv_in(cudarl_ctx *ctx, const hconv_args &a, int splits) {
    cudaStream_t st = cr_stream(ctx);
    if (IN == IN_NHWC && a.C % 8 == 0 && a.K > 32 && use_pipelined >= 4) { // the same block tile
        dim3 grid((unsigned)((a.M + 127) / 128), (unsigned)((a.K + 63) / 64), (unsigned)splits);
        if (use_pipelined >= 7 && a.pad == 0 && a.C * a.R * a.S == a.CRSp &&
            a.C % HALF_BK == 0 && a.K % 8 == 0) {
            CUDARL_ASSERT(!a.div255); // a first conv's; hconv_lean_write has no / 255
            int tr = 0, hsmem = 0;
            if (use_pipelined >= 12 && splits == 1) halo_shape(a, &tr, &hsmem);
            if (tr) { // level 12: the input rows in shared memory
                // the weight stages go after the input tile (or further, where the fp32 output
                // tile is the larger)
                const int tiles = (a.P + tr - 1) / tr, halo = hsmem - 2 * hconv_halo::B_STAGE;
                cudaFuncSetAttribute(hconv_halo_kernel<T>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, hsmem);
                launch_k(st, dim3((unsigned)(a.M / ((long long)a.P * a.Q) * tiles), grid.y),
                         dim3(HM_THREADS), hsmem, hconv_halo_kernel<T>, a, tr, halo);
                CR_CUDA_LAUNCHED(ctx);
                return;
            }
            // level 8: chunks of 64 taps where every split's taps are a multiple of 64 (at the
            // larger batch sizes, one split)
            if (use_pipelined >= 8 && a.cps % 2 == 0 && a.CRSp % 64 == 0) {
                constexpr int smem = hconv_lean<64>::SMEM; // over 48 KiB: the launch must ask
                cudaFuncSetAttribute(hconv_mma_lean_kernel<T, 64>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
                launch_k(st, grid, dim3(HM_THREADS), smem, hconv_mma_lean_kernel<T, 64>, a);
            } else {
                launch_k(st, grid, dim3(HM_THREADS), hconv_lean<32>::SMEM,
                         hconv_mma_lean_kernel<T, 32>, a);
            }
        } else {
            hconv_mma_kernel<T><<<grid, HM_THREADS, 0, st>>>(a);
        }
    } else if (IN == IN_NHWC && a.C % 8 == 0 && a.K > 32 && use_pipelined) { // hconv_tile<2>'s
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
    CUDARL_ASSERT(n < ((size_t)1 << 31)); // hconv_reduce_kernel's indices; splits are for
                                           // small batches (cr_convnet_half_splits)
    launch_k(cr_stream(ctx), dim3(cr_cuda_blocks(n, CR_CUDA_THREADS)), dim3(CR_CUDA_THREADS), 0,
             hconv_reduce_kernel<T>, (const float *)a.partial, splits, a.b, (T *)a.y, (int)a.M,
             a.K, a.P * a.Q, a.act, a.out_nchw, a.div255);
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
// With acc (level 6), h is not read: the features are the last linear stage's epilogue done
// here, to_fmt(act(acc (B, F) + bacc (F))) (linear_epilogue_kernel's values, so the same bits),
// one launch fewer.
// A lane's part of a head's dot product: its features lane, lane + 32, ... of x (or, with xa,
// of the last linear's to_fmt(ACT(xa + bacc)), linear_epilogue_kernel's values) times wr's, in
// that order. The activation a template argument and xa's test outside the loops, so that the
// loop's loads can go 8 steps ahead (the same sums in the same order): at batch 1 the heads
// are one block, and one dependent load at a time had it at ~6 us (ncu, H200, 2026-11-30).
template <typename T, int ACT>
__device__ __forceinline__ float heads_dot(const T *__restrict__ x, const float *__restrict__ xa,
                                           const float *__restrict__ bacc,
                                           const T *__restrict__ wr, int F, int lane) {
    float s = 0.0f;
    if (xa) {
#pragma unroll 8
        for (int f = lane; f < F; f += 32)
            s = fmaf(from_fmt(to_fmt<T>(act_apply(ACT, __fadd_rn(xa[f], bacc[f])))),
                     from_fmt(wr[f]), s);
    } else {
#pragma unroll 8
        for (int f = lane; f < F; f += 32) s = fmaf(from_fmt(x[f]), from_fmt(wr[f]), s);
    }
    return s;
}

template <typename T>
static __global__ void heads_kernel(const T *__restrict__ h, int F, const T *__restrict__ wa,
                                    const float *__restrict__ ba, float *__restrict__ out, int A,
                                    const T *__restrict__ wc, const float *__restrict__ bc,
                                    float *__restrict__ value, int B, const float *__restrict__ acc,
                                    const float *__restrict__ bacc, int act) {
    pdl_wait(); // the features are the predecessors'
    pdl_release();
    const int O = A + (wc != NULL), lane = threadIdx.x & 31;
    const long long g = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (g >= (long long)B * O) return; // the whole warp
    const int b = (int)(g / O), o = (int)(g - (long long)b * O);
    const T *x = h + (size_t)b * F, *wr = o < A ? wa + (size_t)o * F : wc;
    const float *xa = acc ? acc + (size_t)b * F : NULL;
    float s = act == ACT_RELU ? heads_dot<T, ACT_RELU>(x, xa, bacc, wr, F, lane)
              : act == ACT_TANH ? heads_dot<T, ACT_TANH>(x, xa, bacc, wr, F, lane)
                                : heads_dot<T, ACT_NONE>(x, xa, bacc, wr, F, lane);
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) s = __fadd_rn(s, __shfl_xor_sync(0xffffffffu, s, d));
    if (lane) return;
    const float v = __fadd_rn(s, o < A ? ba[o] : bc[0]);
    if (o < A) out[(size_t)b * A + o] = v;
    else value[b] = v;
}

// ---- the forward ---------------------------------------------------------------------------

// y (B, O) fp32 = x (B, I) w^T for a few rows (B <= FC_MAXB; x, w (O, I) in the format, I a
// multiple of 8, rows 16-byte aligned): level 10's replacement for cuBLAS at small batches,
// where the product is a stream of w (the seed's FC: 51 MB of fp16 weights, ~11 us at the
// H200's HBM rate) and cuBLAS ran two kernels (a split-K GEMM and its reduce: 16.8 + 3.7 us
// under ncu at batch 1). Block (x, y) computes outputs FC_ROWS x .. + FC_ROWS - 1 of every row of
// x over the y-th of CL slices of I. Its threads stride over the slice in 8-value vectors,
// FC_U steps' loads issued before their products, the first weights' before the wait for x (a
// first version, one block per output group and two steps in flight, streamed at ~1.4 TB/s:
// 0.0675 ms at batch 1 against cuBLAS's 0.0502, H200 2026-11-30), and sum the products in fp32
// in a fixed order; the block sums its threads' (warp shuffles, then the warps in order). The
// CL slices' blocks are one cluster (compute capability 9.0): block 0 sums the others' sums from
// their shared memory in rank order, so the bits do not depend on which block ends first, and
// nothing is left for another kernel (0.0437 ms at batch 1, fp16; 0.0459 through cuBLAS at level
// 9, the same day).
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

template <typename T, int CL, bool DB>
static void fc_stream_cl(cudaStream_t st, const T *w, const T *x, float *y, int B, int I, int O) {
    const dim3 grid((unsigned)((O + FC_ROWS - 1) / FC_ROWS), CL);
    // the rows of x as a template argument: their accumulators stay in registers
    void (*k)(const T *, const T *, float *, int, int) = NULL;
    switch (B) {
    case 1: k = fc_stream_kernel<T, 1, CL, DB>; break;
    case 2: k = fc_stream_kernel<T, 2, CL, DB>; break;
    case 3: k = fc_stream_kernel<T, 3, CL, DB>; break;
    case 4: k = fc_stream_kernel<T, 4, CL, DB>; break;
    case 5: k = fc_stream_kernel<T, 5, CL, DB>; break;
    case 6: k = fc_stream_kernel<T, 6, CL, DB>; break;
    case 7: k = fc_stream_kernel<T, 7, CL, DB>; break;
    case 8: k = fc_stream_kernel<T, 8, CL, DB>; break;
    default: CUDARL_ASSERT(!"fc_stream: B > FC_MAXB");
    }
    launch_kc(st, grid, dim3(FC_THREADS), 0, CL, k, w, x, y, I, O);
}

// The slices: as many as there are full blocks of vectors for, up to FC_MAXCL. The forward
// takes this path where clusters can be launched (one block per output group, the first
// version, was slower than cuBLAS on the H200). Level 11: two slices at most, each block's
// loads double-buffered, so that the blocks are one wave (two per SM) that streams without
// stopping: batch 1 fp16 0.0432 -> 0.0388 ms on the H200 (ncu had level 10's eight slices,
// ~4 waves that each paid the loads' latency, at 24 us).
template <typename T>
static void fc_stream(cudarl_ctx *ctx, const T *w, const T *x, float *y, int B, int I, int O) {
    cudaStream_t st = cr_stream(ctx);
    const int V = I / 8;
    const bool db = use_pipelined >= 11;
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
    CR_CUDA_LAUNCHED(ctx);
}

static const float one = 1.0f, zero = 0.0f;

// y (B, O) fp32 = x (B, I) w^T, x and w (O, I) in the format dt, fp32 accumulation (the
// top says why); column-major that is y^T (O, B) = w (O, I) x^T (I, B): gemm(T, N). free and
// free_bytes: device memory nothing reads or writes during the product (a cache buffer), lent
// to cuBLAS as its workspace for this call where it is larger than the context's own (the
// policy runtime keeps that one small: cr_cuda_set_blas_workspace); the pointer is what a graph
// captures.
static void gemm_ex(cudarl_ctx *ctx, cudaDataType_t dt, const void *w, const void *x, float *y,
                    int B, int I, int O, void *free, size_t free_bytes) {
    cr_cuda_impl *im = cr_impl(ctx);
    const bool lend = free_bytes > im->blas_workspace_bytes;
    if (lend) CUBLAS_CHECK(cublasSetWorkspace(im->blas, free, free_bytes));
    CUBLAS_CHECK(cublasGemmEx(im->blas, CUBLAS_OP_T, CUBLAS_OP_N, O, B, I, &one, w, dt,
                              I, x, dt, I, &zero, y, CUDA_R_32F, O, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT));
    CR_CUDA_LAUNCHED(ctx);
    if (lend)
        CUBLAS_CHECK(cublasSetWorkspace(im->blas, im->blas_workspace, im->blas_workspace_bytes));
}

template <typename T>
static void forward_as(cudarl_ctx *ctx, const cr_convnet *net, const cr_convnet_half_plan *hp,
                       const unsigned char *wb, float *ws, const void *obs, float *out,
                       float *value, const cr_convnet_half_cache *c, int B) {
    const cr_convnet_spec *spec = &net->spec;
    const cudaDataType_t dt = hp->dtype == CR_DTYPE_F16 ? CUDA_R_16F : CUDA_R_16BF;
    const int u8 = spec->dtype == CR_CONVNET_U8, scale = spec->scale == CR_CONVNET_SCALE_255;
    cudaStream_t st = cr_stream(ctx);
    CUDARL_ASSERT(c->input == NULL || obs == c->input); // the odd stages' buffer: read first
    const void *h = obs;
    const float *fused_acc = NULL, *fused_b = NULL; // level 6: the last linear's epilogue
    int fused_act = ACT_NONE;                       // in the heads
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
            if (i == 0 && hp->s2d) {
                CUDARL_ASSERT(!a.out_nchw && !a.partial); // s2d_fits, and never split
                const int items = B * ((cs->P + 1) / 2); // two output rows of an image each
                const int grid = items < 4 * hp->sms ? items : 4 * hp->sms;
                launch_k(st, dim3(grid), dim3(128), 0, hconv_s2d_kernel<T>, a, items);
                CR_CUDA_LAUNCHED(ctx);
            } else {
                launch_conv<T>(ctx, i > 0 ? IN_NHWC : u8 ? IN_U8 : IN_F32, a, sp.splits);
            }
        } else {
            const size_t n = (size_t)B * s->out;
            // free during the product: the output's buffer (its last stage's output was this
            // one's input's input), or the tail of the input's buffer past the B rows it holds
            const size_t ALIGN = HALF_ALIGN, E = 2;
            unsigned char *out_buf = (unsigned char *)c->act[i];
            size_t out_free = (size_t)c->max_rows * hp->widest[i & 1] * E, in_free = 0;
            unsigned char *in_tail = NULL;
            if (i > 0) {
                const size_t used = round_up((size_t)B * s->in * E, ALIGN);
                const size_t cap = (size_t)c->max_rows * hp->widest[(i - 1) & 1] * E;
                if (cap > used) in_tail = (unsigned char *)c->act[i - 1] + used, in_free = cap - used;
            }
            if (use_pipelined >= 10 && B <= FC_MAXB && s->in % 8 == 0 && cluster_usable())
                fc_stream<T>(ctx, (const T *)w, (const T *)h, ws, B, s->in, s->out);
            else if (in_free > out_free)
                gemm_ex(ctx, dt, w, h, ws, B, s->in, s->out, in_tail, in_free);
            else gemm_ex(ctx, dt, w, h, ws, B, s->in, s->out, out_buf, out_free);
            if (i == net->ntrunk - 1 && use_pipelined >= 6) { // the heads do its epilogue
                fused_acc = ws, fused_b = b, fused_act = act_of(s);
            } else {
                linear_epilogue_kernel<T><<<cr_cuda_blocks(n, CR_CUDA_THREADS), CR_CUDA_THREADS,
                                            0, st>>>(ws, b, (T *)c->act[i], n, (unsigned)s->out,
                                                     act_of(s));
                CR_CUDA_LAUNCHED(ctx);
            }
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
    launch_k(st, dim3((unsigned)((threads + 255) / 256)), dim3(256), 0, heads_kernel<T>,
             (const T *)h, F, wa, ba, out, A, wc, bc, value, B, fused_acc, fused_b, fused_act);
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
