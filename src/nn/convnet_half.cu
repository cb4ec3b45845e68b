// The half-precision forward of convnet_cuda: fp16 or bf16 products on the tensor cores, fp32
// accumulation, inference only (convnet_cuda.h has the API and its meaning, convnet_half.cuh the
// plan). This file: the plan, the weights block, and the forward's launches with its linear
// stages and heads; the conv stages run the kernels of ops/cuda/conv2d_half.cuh (conv2d_half.cu
// says which kernel runs which shape, and how a layer splits at small batches).
//
// Conv stages: one implicit-GEMM kernel each, the bias and the
// activation applied to the fp32 sums and the result rounded once to the format: the CPU's stage
// with its input and output rounded, which is the model of nn/precision.c's conv.y rows.
//
// Linear stages: at batch sizes up to 8 on devices that launch clusters, one kernel streaming
// the weights (fc_stream_kernel); else cublasGemmEx with the format's inputs and an fp32 output
// into the workspace (CUBLAS_COMPUTE_32F); then one kernel adds the fp32 bias, applies the
// activation and rounds to the format, except after the last linear stage, whose epilogue the
// heads do. Heads (PPO's actor and critic, DQN's Q head): one kernel, a warp per output, fp32
// sums of exact fp32 products of the format's values, a fixed butterfly order, plus the fp32
// bias, written in fp32. On compute capability 9.0 the forward's own kernels are launched for
// programmatic dependent launch: each may start while the one before it ends, and waits for its
// data.
//
// Why CUBLAS_COMPUTE_32F (and fp32 accumulators in the conv kernels): nn/precision.c's
// cr_precision_why_fp32_accumulate: a 256-term sum in a format of unit roundoff u errs by up to
// 256 u of its terms, every bit for bf16; float sums keep the error at the inputs' rounding.
// fp16 accumulation (CUBLAS_COMPUTE_16F) would also overflow at 65504 in the sum itself. The
// cost is the tensor cores' fp32-accumulate rate, which on Ampere and Hopper is their fp16 rate
// for dense MMA.
//
// Determinism: every output is a sum in a fixed order (the chunks in order, the MMA's fixed
// internal order; cuBLAS's order for a fixed handle, shape and workspace; the streamed FC's and
// the heads' fixed orders), no atomics: results repeat bit for bit on one device and library
// version.
//
// Memory of the bench network (4x256x256 uint8, conv 32@8x8/4, 64@4x4/2, 64@3x3/1, FC 512,
// heads 7 + 1; 25.77 M parameters) at max_batch B: weights 51.6 MB (fp32's 103 MB is not on the
// device at all for the policy runtime), cache B x (32x63x63 + 64x30x30) x 2 bytes = B x 369 KB
// (no float input: the first conv reads the uint8 observations in place), workspace B x 512 x 4
// bytes (at B = 1 the split-K partials instead, 4.1 MB), no im2col (the GEMM engine's conv1
// im2col is B x 4 MB in fp32). So 99.1 MB at B = 128 (every smaller batch's partials fit in the
// free rows) and 55.9 MB at B = 1, beside the runtime's uint8 input buffer (B x 262 KB) and the
// context's cuBLAS workspace: 1 MiB in the policy runtime, whose linear stages lend cuBLAS a free
// cache buffer instead (gemm_ex) where that is larger, 32 MiB elsewhere.
#include <cooperative_groups.h>

#include "nn/convnet_half.cuh"
#include "ops/cuda/conv2d_half_kernels.cuh"

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

void cr_convnet_half_plan_init(const cr_convnet *net, cudarl_precision precision,
                               const int *batches, int nbatches, int sms, int train,
                               cr_convnet_half_plan *hp) {
    memset(hp, 0, sizeof *hp);
    hp->precision = precision;
    hp->train = train;
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
        if (s == 0 && net->ntrunk >= 2 && net->stage[1].op == CR_CONVNET_CONV &&
            cr_conv2d_half_s2d_fits(c, net->spec.dtype == CR_CONVNET_U8 &&
                                           net->spec.scale == CR_CONVNET_SCALE_255, 1))
            p->kind = HALF_PIECE_S2D, hp->s2d = 1;
        p->K = c->K, p->C = c->C, p->R = c->R, p->S = c->S;
        p->CRS = c->C * c->R * c->S;
        p->CRSp = (int)round_up((size_t)p->CRS, HALF_BK);
        p->count = round_up((size_t)p->K, HALF_KP) * (size_t)p->CRSp;
    }
    for (int s = 0; s < net->ntrunk; s++) // the buffer each stage writes: one of the two in
        hp->row_bytes[s] = train ? (size_t)net->stage[s].out * sizeof(float) // turn, or its own
                                 : hp->widest[s & 1] * 2;
    for (int s = 0; s < net->ntrunk; s++) { // each conv stage as its kernels' layer
        const cr_convnet_stage *st = &net->stage[s];
        if (st->op != CR_CONVNET_CONV) continue;
        cr_conv2d_half_desc *d = &hp->conv[s];
        d->shape = st->conv;
        d->in = s > 0 ? IN_NHWC : net->spec.dtype == CR_CONVNET_U8 ? IN_U8 : IN_F32;
        d->scale255 = net->spec.scale == CR_CONVNET_SCALE_255;
        d->act = act_of(st);
        d->out_nchw = !(s + 1 < net->ntrunk && net->stage[s + 1].op == CR_CONVNET_CONV);
        d->CRSp = hp->piece[st->weight].CRSp;
        d->s2d = s == 0 && hp->s2d;
        d->sms = sms;
        // the output buffer holds max_batch rows of its widest stage
        d->out_cap = (size_t)hp->max_batch * hp->row_bytes[s];
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
            const cr_half_split sp = cr_conv2d_half_splits(&hp->conv[s], batches[b]);
            if (sp.splits > 1 && !sp.in_output) ws = sp.bytes > ws ? sp.bytes : ws;
        }
    hp->workspace_bytes = ws ? round_up(ws, HALF_ALIGN) + HALF_ALIGN - 1 : 0;
    hp->needs_x = net->ntrunk == 0 || net->stage[0].op != CR_CONVNET_CONV;
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
// With acc, h is not read: the features are the last linear stage's epilogue done here,
// to_fmt(act(acc (B, F) + bacc (F))) (linear_epilogue_kernel's values, so the same bits), one
// launch fewer.
// A lane's part of a head's dot product: its features lane, lane + 32, ... of x (or, with xa,
// of the last linear's to_fmt(ACT(xa + bacc)), linear_epilogue_kernel's values) times wr's, in
// that order. The activation a template argument and xa's test outside the loops, so that the
// loop's loads can go 8 steps ahead (the same sums in the same order): at batch 1 the heads
// are one block, which one dependent load at a time would leave waiting on memory latency.
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
// multiple of 8, rows 16-byte aligned): the linear stages' product at small batches, where it
// is a stream of w (the bench network's FC: 51 MB of fp16 weights) that cuBLAS runs as two
// kernels (a split-K GEMM and its reduce). Block (x, y) computes outputs FC_ROWS x .. + FC_ROWS
// - 1 of every row of x over the y-th of CL slices of I (at most two: the blocks are one wave,
// two per SM, that streams without stopping). Its threads stride over the slice in 8-value
// vectors with two register sets of weights in turn, the next step's loads issued before this
// step's products, the first weights' before the wait for x, and sum the products in fp32 in a
// fixed order; the block sums its threads' (warp shuffles, then the warps in order). The CL
// slices' blocks are one cluster (compute capability 9.0): block 0 sums the others' sums from
// their shared memory in rank order, so the bits do not depend on which block ends first, and
// nothing is left for another kernel.
#define FC_ROWS 4
#define FC_MAXB 8
#define FC_THREADS 256
template <typename T, int NB, int CL>
static __global__ void __launch_bounds__(FC_THREADS) fc_stream_kernel(const T *__restrict__ w,
                                                                      const T *__restrict__ x,
                                                                      float *__restrict__ y, int I,
                                                                      int O) {
    // steps in flight (registers), in each of two sets: the next step's loads go before this
    // one's products
    constexpr int FC_U = NB <= 2 ? 2 : 1;
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
    uint4 wv[FC_U][FC_ROWS], wn[FC_U][FC_ROWS];
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
    // two register sets in turn (unrolled by hand: a copy would wait for the loads)
    for (int v0 = beg + tid; v0 < end; v0 += 2 * STEP) {
        if (v0 + STEP < end) load_w(wn, v0 + STEP);
        products(wv, v0);
        if (v0 + STEP >= end) break;
        if (v0 + 2 * STEP < end) load_w(wv, v0 + 2 * STEP);
        products(wn, v0 + STEP);
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

template <typename T, int CL>
static void fc_stream_cl(cudaStream_t st, const T *w, const T *x, float *y, int B, int I, int O) {
    const dim3 grid((unsigned)((O + FC_ROWS - 1) / FC_ROWS), CL);
    // the rows of x as a template argument: their accumulators stay in registers
    void (*k)(const T *, const T *, float *, int, int) = NULL;
    switch (B) {
    case 1: k = fc_stream_kernel<T, 1, CL>; break;
    case 2: k = fc_stream_kernel<T, 2, CL>; break;
    case 3: k = fc_stream_kernel<T, 3, CL>; break;
    case 4: k = fc_stream_kernel<T, 4, CL>; break;
    case 5: k = fc_stream_kernel<T, 5, CL>; break;
    case 6: k = fc_stream_kernel<T, 6, CL>; break;
    case 7: k = fc_stream_kernel<T, 7, CL>; break;
    case 8: k = fc_stream_kernel<T, 8, CL>; break;
    default: CUDARL_ASSERT(!"fc_stream: B > FC_MAXB");
    }
    launch_kc(st, grid, dim3(FC_THREADS), 0, CL, k, w, x, y, I, O);
}

// fc_stream_kernel over two slices of I where each has a full block of vectors, else one. The
// forward takes this path where clusters can be launched.
template <typename T>
static void fc_stream(cudarl_ctx *ctx, const T *w, const T *x, float *y, int B, int I, int O) {
    cudaStream_t st = cr_stream(ctx);
    const int V = I / 8;
    if (V / 2 >= FC_THREADS) fc_stream_cl<T, 2>(st, w, x, y, B, I, O);
    else fc_stream_cl<T, 1>(st, w, x, y, B, I, O);
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
    const float *fused_acc = NULL, *fused_b = NULL; // the last linear's epilogue, done by the
    int fused_act = ACT_NONE;                       // heads
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
            cr_conv2d_half_forward<T>(ctx, &hp->conv[i], h, w, b, c->act[i], ws, B);
        } else {
            const size_t n = (size_t)B * s->out;
            // free during the product: the output's buffer (its last stage's output was this
            // one's input's input), or the tail of the input's buffer past the B rows it holds
            const size_t ALIGN = HALF_ALIGN, E = 2;
            unsigned char *out_buf = (unsigned char *)c->act[i];
            size_t out_free = (size_t)c->max_rows * hp->row_bytes[i], in_free = 0;
            unsigned char *in_tail = NULL;
            if (i > 0) {
                const size_t used = round_up((size_t)B * s->in * E, ALIGN);
                const size_t cap = (size_t)c->max_rows * hp->row_bytes[i - 1];
                if (cap > used) in_tail = (unsigned char *)c->act[i - 1] + used, in_free = cap - used;
            }
            if (B <= FC_MAXB && s->in % 8 == 0 && cluster_usable())
                fc_stream<T>(ctx, (const T *)w, (const T *)h, ws, B, s->in, s->out);
            else if (in_free > out_free)
                gemm_ex(ctx, dt, w, h, ws, B, s->in, s->out, in_tail, in_free);
            else gemm_ex(ctx, dt, w, h, ws, B, s->in, s->out, out_buf, out_free);
            if (i == net->ntrunk - 1 && !hp->train) { // the heads do its epilogue
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
