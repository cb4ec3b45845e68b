// Convolutional policies on the device: the CUDA twin of convnet.c's forward and backward
// (convnet_cuda.h has the API and its meaning).
//
// Stages as on the CPU: each conv or linear with the activation after it; NCHW activations
// between stages (so a flatten is nothing and the first linear reads the last conv's output as
// its rows); linear stages and heads through the backend's cuBLAS ops; the backward in reverse
// with two gradient buffers in turn. The conv stages run on one of two engines.
//
// GEMM engine (the default). A convolution is three matrix products over the im2col matrix
// col (CRS, L), CRS = C R S taps and L = N P Q output pixels of the whole batch, row-major:
// col[(c R + r) S + s][(n P + p) Q + q] = x[n][c][p stride - pad + r][q stride - pad + s], or 0
// in the padding. With prod (K, L) the product laid out channel-major:
//   forward       prod = W (K, CRS) col                    one SGEMM, then y = act(prod + b)
//                                                           transposed back to NCHW
//   weight grad   dW (K, CRS) = G (K, L) col^T              one SGEMM over all N P Q terms
//   input grad    dcol (CRS, L) = W^T G, then dx = col2im   one SGEMM, then a gather
// where G (K, L) is dy through the activation's backward, transposed channel-major by the same
// kernel that sums the bias gradient. Why not cuDNN, whose plans (the CUDNN engine) are here
// too: with the deterministic fp32 FMA algorithms conv2d.cu must choose (implicit-precomp GEMM
// forward, ALGO_1 backward data and filter) the Nature-CNN trunk's forward + backward at batch 32
// runs far below the GPU's fp32 rate (bench/RESULTS.md, cuDNN convolutions): at a DQN batch
// the images are few and small, the per-image kernels leave most of the GPU idle, and ALGO_1's
// weight gradient reduces over N P Q without splitting it. One SGEMM over the whole batch gives
// cuBLAS one large product per direction, which it tiles (and splits along a long reduction, as
// the weight gradient's, with a deterministic reduction in its workspace: no atomics unless a
// handle allows them, and the backend's does not) over the whole GPU, in fp32 (the backend's
// handle runs CUBLAS_DEFAULT_MATH: no TF32). The price is the im2col matrix in the workspace
// (conv1 of Nature-CNN: 256 x 400 floats per image, 13 MB at batch 32), written once by the
// forward and once more by the backward (the weight gradient needs it again, and keeping it per
// cache would triple DQN's memory for three forwards), then reused as dcol.
//
// Precision and order: every output is a plain fp32 sum of products (cuBLAS's order), the bias
// added once, rounded (__fadd_rn), as the CPU adds it; the bias gradient sums in double in a
// fixed order (blocks of one channel's N P Q terms, a halving tree, chunks added in order), as
// conv2d.cu's; col2im adds at most ceil(R / stride) ceil(S / stride) terms per input element in
// a fixed (r, s) order. The ReLU select (v < 0 ? 0 : v forward, y <= 0 ? 0 : dy backward) and
// tanh (cr_tanhf_device and the CPU's dy (1 - y^2) roundings) are bitwise the CPU's. So results
// agree with the CPU to rounding and repeat bit for bit.
//
// CUDNN engine: cr_cuda_conv2d_forward / _backward (ops/cuda/conv2d.cu) with one plan per conv
// stage and declared batch size; a tanh after a conv is one more elementwise pass each way.
//
// IGEMM engine (fp16 and bf16 handles, forward only): convnet_half.cu; this file makes its plan
// (convnet_half.cuh) at init and hands it the handle's weights, workspace and cache.
//
// Mixed GEMM (bf16 and fp16 training handles, cr_convnet_cuda_init_training): the GEMM engine
// with the three products' inputs in the format: im2col writes col in the format (half the
// bytes of the largest matrix), the gradient kernel writes G in the format (its bias sums stay
// double over the fp32 values), the stage's float weights are converted into the workspace
// before each product that reads them (a few MB a step: the weights change every step, and a
// forward of one set - a target net's - may come between another's forward and backward), and
// cublasGemmEx multiplies them on the tensor cores with fp32 sums into fp32 prod and dW, and
// dcol in the format (col2im sums it in fp32). Half-size matrices make it affordable to keep
// each stage's col in a room of its own: the backward reads the one its forward wrote instead
// of building it again, unless a forward on another cache (or batch) came between (the handle
// remembers the last forward's cache and batch), and then it rebuilds it from its own cache.
// Everything else is the fp32 engine's, so the mixed handle differs from fp32 only by the
// rounding of the products' inputs (nn/precision.c's conv rows). fp16 inputs overflow above
// 65504: a loss-scaled gradient that does becomes inf in G and then in dW, which the trainer's
// loss scaler finds and skips (ops/loss_scale.h).
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/cuda/cuda_common.cuh"
#include "ops/cuda/tanh_device.cuh"
#ifdef CUDARL_WITH_CUDNN
#include "ops/cuda/conv2d_cuda.h"
#endif
// convnet.h and convnet_cuda.h have their own extern "C"
#include "nn/convnet_cuda.h"
#include "nn/convnet_half.cuh"

// Alignment of the workspace's and the caches' pieces (cudaMalloc's); the caller's workspace
// pointer is rounded up inside, its size includes the slack.
#define WS_ALIGN ((size_t)256)
// Bias gradient: threads per block, the terms one block sums at most, and the most blocks
// (chunks) per channel.
#define DB_THREADS 256
#define DB_CHUNK 4096
#define DB_MAX_CHUNKS 256

enum { ACT_NONE = 0, ACT_RELU, ACT_TANH };

struct cr_convnet_cuda {
    cudarl_ctx *ctx;
    cudaStream_t stream;
    cr_convnet net;
    cr_convnet_engine engine;
    cudarl_precision precision;
    int nbatches, max_batch;
    int batches[CR_CONVNET_CUDA_MAX_BATCHES];
    // GEMM engine: offsets of the pieces in the aligned workspace (col, prod, bias partials,
    // and for a mixed handle one conv weight in the format)
    size_t col_at, prod_at, partial_at, wh_at;
    int mixed; // GEMM engine, bf16 or fp16 products (cr_convnet_cuda_init_training)
    // mixed: each conv stage's im2col matrix in a room of its own (kept from the forward for the
    // backward), and the input gradients' dcol in the format; the forward whose matrices the
    // rooms hold (its cache's x and batch; host state, in stream order of the enqueues)
    size_t colc_at[CR_CONVNET_MAX_LAYERS + 1], dcol_at;
    const void *cols_of;
    int cols_batch;
    size_t workspace_bytes;
    void *workspace; // the caller's (device)
#ifdef CUDARL_WITH_CUDNN
    // CUDNN engine: plan[stage][batch index], NULL for linear stages
    cr_cuda_conv2d_plan *plan[CR_CONVNET_MAX_LAYERS + 1][CR_CONVNET_CUDA_MAX_BATCHES];
#endif
    // IGEMM engine (fp16, bf16): its plan, and the converted weights (the caller's, device)
    cr_convnet_half_plan half;
    void *weights;
    char describe[2048];
};

static int is_half(cudarl_precision p) {
    return p == CUDARL_PRECISION_FP16 || p == CUDARL_PRECISION_BF16;
}

// One conv stage at batch N, as the kernels read it.
struct geom {
    int N, C, H, W, K, R, S, stride, pad, P, Q;
    int L;   // N P Q: columns of col, prod and G
    int CRS; // rows of col
};

static size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

static geom geom_of(const cr_convnet_stage *st, int N) {
    const cr_conv2d_shape *s = &st->conv;
    geom g;
    g.N = N, g.C = s->C, g.H = s->H, g.W = s->W, g.K = s->K, g.R = s->R, g.S = s->S;
    g.stride = s->stride, g.pad = s->pad, g.P = s->P, g.Q = s->Q;
    g.L = N * s->P * s->Q;
    g.CRS = s->C * s->R * s->S;
    return g;
}

// Chunks of one channel's L terms in the bias gradient: a fixed function of L.
static int db_chunks(size_t L) {
    size_t c = (L + DB_CHUNK - 1) / DB_CHUNK;
    return c < 1 ? 1 : c > DB_MAX_CHUNKS ? DB_MAX_CHUNKS : (int)c;
}

static int act_of(const cr_convnet_stage *st) {
    return st->act == CR_CONVNET_RELU ? ACT_RELU : st->act == CR_CONVNET_TANH ? ACT_TANH
                                                                               : ACT_NONE;
}

// ---- kernels -------------------------------------------------------------------------------

template <int ACT> __device__ __forceinline__ float act_forward(float v) {
    if (ACT == ACT_RELU) return v < 0.0f ? 0.0f : v; // NaN and -0 pass, as the CPU's
    if (ACT == ACT_TANH) return cr_tanhf_device(v);
    return v;
}

// x (n) = obs uint8 as float, divided by 255 (one IEEE division, cr_cpu_scale_u8) when SCALE;
// element i of x is element i % row of input row i / row, rows `in_stride` bytes apart.
template <bool SCALE>
static __global__ void input_kernel(const uint8_t *__restrict__ u, float *__restrict__ x,
                                    size_t n, size_t row, size_t in_stride) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = (float)u[row == in_stride ? i : i / row * in_stride + i % row];
        x[i] = SCALE ? __fdiv_rn(v, 255.0f) : v;
    }
}

// Index arithmetic is 32-bit unsigned (a 64-bit division costs several times more): init
// refuses batches whose activations or L reach 2^31 elements, so every element index of x, y,
// dy, dx and every l < L fits, and a grid-stride index stays below 2^31 + 2^21 < 2^32. Offsets
// into col and G (CRS or K rows of L) are formed in size_t.

// col (CRS, L) from x (N, C, H, W): block row j = blockIdx.y (+ gridDim.y ...) is tap (c, r, s),
// threads run along its L pixels (coalesced writes).
template <typename T>
static __global__ void im2col_kernel(const float *__restrict__ x, T *__restrict__ col, geom g) {
    const unsigned RS = (unsigned)(g.R * g.S), PQ = (unsigned)(g.P * g.Q), Q = (unsigned)g.Q;
    const unsigned L = (unsigned)g.L, step = gridDim.x * blockDim.x;
    for (unsigned j = blockIdx.y; j < (unsigned)g.CRS; j += gridDim.y) {
        const unsigned c = j / RS, rs = j - c * RS, r = rs / (unsigned)g.S, s = rs - r * g.S;
        T *row = col + (size_t)j * L;
        const float *xc = x + (size_t)c * g.H * g.W; // channel c of image 0
        for (unsigned l = blockIdx.x * blockDim.x + threadIdx.x; l < L; l += step) {
            const unsigned n = l / PQ, pq = l - n * PQ, p = pq / Q, q = pq - p * Q;
            const int h = (int)(p * g.stride + r) - g.pad, w = (int)(q * g.stride + s) - g.pad;
            float v = 0.0f;
            if (h >= 0 && h < g.H && w >= 0 && w < g.W)
                v = xc[((size_t)n * g.C * g.H + h) * g.W + w];
            row[l] = cr_to_fmt<T>(v);
        }
    }
}

// y (N, K, P, Q) = act(prod (K, L) + b (K)), the transpose back to NCHW: one thread per output
// element in y's order (coalesced writes; reads coalesced along each image's P Q run).
template <int ACT>
static __global__ void bias_act_kernel(const float *__restrict__ prod, const float *__restrict__ b,
                                       float *__restrict__ y, geom g) {
    const unsigned PQ = (unsigned)(g.P * g.Q), K = (unsigned)g.K;
    const unsigned n_all = (unsigned)g.N * K * PQ, step = gridDim.x * blockDim.x;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n_all; i += step) {
        const unsigned t = i / PQ, pq = i - t * PQ, n = t / K, k = t - n * K;
        const float v = __fadd_rn(prod[(size_t)k * (unsigned)g.L + n * PQ + pq], b[k]);
        y[i] = act_forward<ACT>(v);
    }
}

// Block (k, c) takes chunk c of channel k's L terms of dy (N, K, P, Q) through the activation's
// backward (ReLU: y <= 0 ? 0 : dy; tanh: dy (1 - y^2) with the CPU's roundings; none: dy),
// writes them to row k of G (K, L), and sums them in double (each thread its strided terms in
// order, then cr_block_sum's fixed tree). One chunk: the block writes db[k]; more: partial
// (K, chunks), which db_finish_kernel adds in chunk order. dy is not written.
template <int ACT, typename TG>
static __global__ void __launch_bounds__(DB_THREADS)
    grad_kernel(const float *__restrict__ dy, const float *__restrict__ y, TG *__restrict__ G,
                double *__restrict__ partial, float *__restrict__ db, unsigned K, unsigned pq,
                unsigned L, unsigned per_chunk) {
    __shared__ double sh[DB_THREADS];
    const unsigned k = blockIdx.x, c = blockIdx.y;
    const unsigned begin = c * per_chunk; // c < chunks <= 256: begin < L + 256 < 2^32
    const unsigned left = begin < L ? L - begin : 0;
    const unsigned end = begin + (per_chunk < left ? per_chunk : left);
    TG *row = G + (size_t)k * L;
    double v[1] = {0.0};
    for (unsigned e = begin + threadIdx.x; e < end; e += DB_THREADS) {
        const unsigned img = e / pq, i = (img * K + k) * pq + (e - img * pq);
        float d = dy[i];
        if (ACT == ACT_RELU) d = y[i] <= 0.0f ? 0.0f : d;
        if (ACT == ACT_TANH) {
            const float yi = y[i];
            d = __fmul_rn(d, __fsub_rn(1.0f, __fmul_rn(yi, yi)));
        }
        row[e] = cr_to_fmt<TG>(d);
        v[0] += d;
    }
    cr_block_sum<1, DB_THREADS>(v, sh);
    if (threadIdx.x == 0) {
        if (gridDim.y == 1) db[k] = (float)v[0];
        else partial[(size_t)k * gridDim.y + c] = v[0];
    }
}

// db[k] = the chunks' partial sums of channel k, added in chunk order.
static __global__ void db_finish_kernel(const double *__restrict__ partial, float *__restrict__ db,
                                        unsigned K, unsigned chunks) {
    const unsigned k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= K) return;
    double s = 0.0;
    for (unsigned c = 0; c < chunks; c++) s += partial[(size_t)k * chunks + c];
    db[k] = (float)s;
}

// dx (N, C, H, W) from dcol (CRS, L): each input element gathers the taps that read it, r then
// s ascending (a fixed order: no atomics). Element (h, w) is tap (r, s) of output (p, q) when
// p stride + r = h + pad and q stride + s = w + pad, so r runs over (h + pad) mod stride,
// + stride, ... while p = (h + pad - r) / stride >= 0, and only p < P counts.
template <typename T>
static __global__ void col2im_kernel(const T *__restrict__ dcol, float *__restrict__ dx, geom g) {
    const unsigned W = (unsigned)g.W, H = (unsigned)g.H, C = (unsigned)g.C;
    const unsigned n_all = (unsigned)g.N * C * H * W, step = gridDim.x * blockDim.x;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n_all; i += step) {
        unsigned t = i / W;
        const int w = (int)(i - t * W);
        unsigned t2 = t / H;
        const int h = (int)(t - t2 * H);
        const unsigned n = t2 / C;
        const int c = (int)(t2 - n * C);
        const int hp = h + g.pad, wq = w + g.pad;
        float sum = 0.0f;
        for (int r = hp % g.stride; r < g.R && r <= hp; r += g.stride) {
            const int p = (hp - r) / g.stride;
            if (p >= g.P) continue;
            for (int s = wq % g.stride; s < g.S && s <= wq; s += g.stride) {
                const int q = (wq - s) / g.stride;
                if (q >= g.Q) continue;
                const size_t j = ((size_t)c * g.R + r) * g.S + s;
                sum = __fadd_rn(sum, (float)dcol[j * (unsigned)g.L + (n * g.P + p) * g.Q + q]);
            }
        }
        dx[i] = sum;
    }
}

#ifdef CUDARL_WITH_CUDNN
// y (n) = tanh(y) in place (the CUDNN engine's conv + tanh stage).
static __global__ void tanh_inplace_kernel(float *y, size_t n) {
    const size_t step = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        y[i] = cr_tanhf_device(y[i]);
}
#endif

// dh (B, F) += dvalue (B) outer critic_w (F): the critic's input gradient added to the actor's,
// as the CPU does (its dvalue w product, one rounding, then the sum, one rounding).
static __global__ void add_outer_kernel(float *dh, const float *__restrict__ dv,
                                        const float *__restrict__ w, size_t n, unsigned F) {
    const size_t step = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        dh[i] = __fadd_rn(dh[i], __fmul_rn(dv[i / F], w[i % F]));
}

// ---- launches ------------------------------------------------------------------------------

static const float one = 1.0f, zero = 0.0f;

static char *aligned_ws(const cr_convnet_cuda *cn) {
    CUDARL_ASSERT(cn->workspace != NULL); // cr_convnet_cuda_set_workspace before the first call
    return (char *)round_up((size_t)(uintptr_t)cn->workspace, WS_ALIGN);
}

template <typename T>
static void launch_im2col(cudarl_ctx *ctx, const float *x, T *col, const geom &g) {
    dim3 grid(cr_cuda_blocks((size_t)g.L, CR_CUDA_THREADS), g.CRS < 65535 ? g.CRS : 65535);
    im2col_kernel<T><<<grid, CR_CUDA_THREADS, 0, cr_stream(ctx)>>>(x, col, g);
    CR_CUDA_LAUNCHED(ctx);
}

template <typename T> static void launch_to_fmt(cudarl_ctx *ctx, const float *x, T *y, size_t n) {
    cr_to_fmt_kernel<T><<<cr_cuda_blocks(n, CR_CUDA_THREADS), CR_CUDA_THREADS, 0, cr_stream(ctx)>>>(
        x, y, n);
    CR_CUDA_LAUNCHED(ctx);
}

template <typename T> struct fmt_type;
template <> struct fmt_type<__half> { static const cudaDataType_t value = CUDA_R_16F; };
template <> struct fmt_type<__nv_bfloat16> { static const cudaDataType_t value = CUDA_R_16BF; };

// C = op(A) op(B) with A and B in the format T, fp32 sums (cublasGemmEx, beta 0), C in fp32 or
// (TC = T) rounded to the format once; as cr_cuda_sgemm's arguments otherwise. The float
// overload (the fp32 engine's SGEMM) stands with the conv stage below.
template <typename T, typename TC>
static void gemm_t(cudarl_ctx *ctx, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                   int k, const T *A, int lda, const T *B, int ldb, TC *C, int ldc) {
    const cudaDataType_t t = fmt_type<T>::value;
    const cudaDataType_t tc = sizeof(TC) == sizeof(float) ? CUDA_R_32F : t;
    CUBLAS_CHECK(cublasGemmEx(cr_impl(ctx)->blas, ta, tb, m, n, k, &one, A, t, lda, B, t, ldb,
                              &zero, C, tc, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    CR_CUDA_LAUNCHED(ctx);
}

static void launch_bias_act(cudarl_ctx *ctx, int act, const float *prod, const float *b,
                            float *y, const geom &g) {
    const size_t n = (size_t)g.N * g.K * g.P * g.Q;
    const unsigned blocks = cr_cuda_blocks(n, CR_CUDA_THREADS);
    cudaStream_t st = cr_stream(ctx);
    if (act == ACT_RELU)
        bias_act_kernel<ACT_RELU><<<blocks, CR_CUDA_THREADS, 0, st>>>(prod, b, y, g);
    else if (act == ACT_TANH)
        bias_act_kernel<ACT_TANH><<<blocks, CR_CUDA_THREADS, 0, st>>>(prod, b, y, g);
    else
        bias_act_kernel<ACT_NONE><<<blocks, CR_CUDA_THREADS, 0, st>>>(prod, b, y, g);
    CR_CUDA_LAUNCHED(ctx);
}

// G (K, L) and db (K) from dy and y (N, K, P, Q); partial: K db_chunks(L) doubles.
template <typename TG>
static void launch_grad(cudarl_ctx *ctx, int act, const float *dy, const float *y, TG *G,
                        double *partial, float *db, const geom &g) {
    const unsigned L = (unsigned)g.L, pq = (unsigned)(g.P * g.Q);
    const int chunks = db_chunks(L);
    const unsigned per_chunk = (L + chunks - 1) / chunks;
    dim3 grid((unsigned)g.K, (unsigned)chunks);
    cudaStream_t st = cr_stream(ctx);
    const unsigned K = (unsigned)g.K;
    if (act == ACT_RELU)
        grad_kernel<ACT_RELU, TG><<<grid, DB_THREADS, 0, st>>>(dy, y, G, partial, db, K, pq, L,
                                                           per_chunk);
    else if (act == ACT_TANH)
        grad_kernel<ACT_TANH, TG><<<grid, DB_THREADS, 0, st>>>(dy, y, G, partial, db, K, pq, L,
                                                           per_chunk);
    else
        grad_kernel<ACT_NONE, TG><<<grid, DB_THREADS, 0, st>>>(dy, y, G, partial, db, K, pq, L,
                                                           per_chunk);
    CR_CUDA_LAUNCHED(ctx);
    if (chunks > 1) {
        db_finish_kernel<<<(K + 255) / 256, 256, 0, st>>>(partial, db, K, (unsigned)chunks);
        CR_CUDA_LAUNCHED(ctx);
    }
}

// ---- the GEMM engine's conv stage ----------------------------------------------------------

// The products' matrices hold T: float (the fp32 engine: cr_cuda_sgemm, the weights as they
// are), or a format of a mixed handle (the weights converted into the workspace, cublasGemmEx).
// C = op(A) op(B) column-major (cuBLAS's convention; the callers spell out the row-major
// meaning), beta 0: C is overwritten and not read.
static void gemm_t(cudarl_ctx *ctx, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                   int k, const float *A, int lda, const float *B, int ldb, float *C, int ldc) {
    cr_cuda_sgemm(ctx, ta, tb, m, n, k, A, lda, B, ldb, C, ldc);
}
template <typename T>
static const T *weights_t(cudarl_ctx *ctx, const cr_convnet_cuda *cn, const float *w, size_t n) {
    T *wh = (T *)(aligned_ws(cn) + cn->wh_at);
    launch_to_fmt<T>(ctx, w, wh, n);
    return wh;
}
template <>
const float *weights_t<float>(cudarl_ctx *, const cr_convnet_cuda *, const float *w, size_t) {
    return w;
}

// The room of stage i's im2col matrix: the shared one, or (mixed) the stage's own.
static size_t col_room(const cr_convnet_cuda *cn, int i) {
    return cn->mixed ? cn->colc_at[i] : cn->col_at;
}

// y (N, K, P, Q) = act(conv(x) + b) for conv stage st (stage i) at batch N.
template <typename T>
static void gemm_conv_forward(cudarl_ctx *ctx, const cr_convnet_cuda *cn, int i,
                              const cr_convnet_stage *st, const float *w, const float *b,
                              const float *x, float *y, int N) {
    const geom g = geom_of(st, N);
    char *ws = aligned_ws(cn);
    T *col = (T *)(ws + col_room(cn, i));
    float *prod = (float *)(ws + cn->prod_at);
    const T *wt = weights_t<T>(ctx, cn, w, (size_t)g.K * g.CRS);
    launch_im2col<T>(ctx, x, col, g);
    // prod (K, L) = W (K, CRS) col (CRS, L), row-major; column-major that is
    // prod^T (L, K) = col^T (L, CRS) W^T (CRS, K), both read as they lie (N, N).
    gemm_t(ctx, CUBLAS_OP_N, CUBLAS_OP_N, g.L, g.K, g.CRS, col, g.L, wt, g.CRS, prod, g.L);
    launch_bias_act(ctx, act_of(st), prod, b, y, g);
}

// dw, db, and dx (unless NULL) of conv stage st (stage i) given dy w.r.t. its output y, x its
// input. fp32: col is rebuilt from x in the shared room, then dcol overwrites it (written by the
// last product, after the one that read col: one stream). Mixed: G (in prod's room), col and
// dcol hold T; col is the forward's, kept in the stage's room, unless `cols_kept` is 0 (another
// forward came between), and dcol has a room of its own.
template <typename T>
static void gemm_conv_backward(cudarl_ctx *ctx, const cr_convnet_cuda *cn, int i, int cols_kept,
                               const cr_convnet_stage *st, const float *w, const float *x,
                               const float *y, const float *dy, float *dx, float *dw, float *db,
                               int N) {
    const geom g = geom_of(st, N);
    char *ws = aligned_ws(cn);
    T *col = (T *)(ws + col_room(cn, i)), *G = (T *)(ws + cn->prod_at);
    T *dcol = (T *)(ws + (cn->mixed ? cn->dcol_at : cn->col_at));
    double *partial = (double *)(ws + cn->partial_at);
    launch_grad<T>(ctx, act_of(st), dy, y, G, partial, db, g);
    if (!cn->mixed || !cols_kept) launch_im2col<T>(ctx, x, col, g);
    // dW (K, CRS) = G (K, L) col^T (L, CRS), row-major; column-major
    // dW^T (CRS, K) = col (CRS, L) G^T (L, K): col lies as col^T (L, CRS), so op T; G^T as is.
    gemm_t(ctx, CUBLAS_OP_T, CUBLAS_OP_N, g.CRS, g.K, g.L, col, g.L, G, g.L, dw, g.CRS);
    if (!dx) return;
    // dcol (CRS, L) = W^T (CRS, K) G (K, L), row-major, into col (read by the product above,
    // which runs first on the stream); column-major dcol^T (L, CRS) = G^T (L, K) W (K, CRS):
    // G^T as it lies, W lies as W^T (CRS, K), so op T.
    const T *wt = weights_t<T>(ctx, cn, w, (size_t)g.K * g.CRS);
    gemm_t(ctx, CUBLAS_OP_N, CUBLAS_OP_T, g.L, g.CRS, g.K, G, g.L, wt, g.CRS, dcol, g.L);
    const size_t n = (size_t)g.N * g.C * g.H * g.W;
    col2im_kernel<T><<<cr_cuda_blocks(n, CR_CUDA_THREADS), CR_CUDA_THREADS, 0, cr_stream(ctx)>>>(
        dcol, dx, g);
    CR_CUDA_LAUNCHED(ctx);
}

// ---- stages --------------------------------------------------------------------------------

static int batch_index(const cr_convnet_cuda *cn, int B) {
    for (int i = 0; i < cn->nbatches; i++)
        if (cn->batches[i] == B) return i;
    return -1;
}

// y (B, out) = stage i of x (B, in), its activation included.
static void stage_forward(cudarl_ctx *ctx, const cr_convnet_cuda *cn, int i, int bi,
                          const float *params, const float *x, float *y, int B) {
    const cr_convnet *net = &cn->net;
    const cr_convnet_stage *st = &net->stage[i];
    const float *w = params + net->t[st->weight].offset, *b = params + net->t[st->bias].offset;
    const cr_backend *o = ctx->ops;
    if (st->op == CR_CONVNET_LINEAR) {
        if (st->act == CR_CONVNET_RELU) o->linear_relu_forward(ctx, x, w, b, y, B, st->in, st->out);
        else if (st->act == CR_CONVNET_TANH)
            o->linear_tanh_forward(ctx, x, w, b, y, B, st->in, st->out);
        else o->linear_forward(ctx, x, w, b, y, B, st->in, st->out);
        return;
    }
    if (cn->engine == CR_CONVNET_ENGINE_GEMM) {
        if (!cn->mixed) gemm_conv_forward<float>(ctx, cn, i, st, w, b, x, y, B);
        else if (cn->precision == CUDARL_PRECISION_BF16)
            gemm_conv_forward<__nv_bfloat16>(ctx, cn, i, st, w, b, x, y, B);
        else gemm_conv_forward<__half>(ctx, cn, i, st, w, b, x, y, B);
        return;
    }
#ifdef CUDARL_WITH_CUDNN
    cr_cuda_conv2d_forward(ctx, cn->plan[i][bi], x, w, b, y, st->act == CR_CONVNET_RELU,
                           aligned_ws(cn));
    if (st->act == CR_CONVNET_TANH) {
        const size_t n = (size_t)B * st->out;
        tanh_inplace_kernel<<<cr_cuda_blocks(n, CR_CUDA_THREADS), CR_CUDA_THREADS, 0,
                              cr_stream(ctx)>>>(y, n);
        CR_CUDA_LAUNCHED(ctx);
    }
#else
    CUDARL_ASSERT(!"the CUDNN engine is refused at init in builds without cuDNN");
#endif
}

// Gradients of stage i given dy (B, out) w.r.t. its output y (after the activation; dy may be
// overwritten), x (B, in) its input; dx (B, in) unless NULL.
static void stage_backward(cudarl_ctx *ctx, const cr_convnet_cuda *cn, int i, int bi,
                           int cols_kept, const float *params, float *grads, const float *x,
                           const float *y, float *dy, float *dx, int B) {
    const cr_convnet *net = &cn->net;
    const cr_convnet_stage *st = &net->stage[i];
    const cr_convnet_tensor *t = net->t;
    const float *w = params + t[st->weight].offset;
    float *dw = grads + t[st->weight].offset, *db = grads + t[st->bias].offset;
    const cr_backend *o = ctx->ops;
    const size_t n = (size_t)B * st->out;
    if (st->op == CR_CONVNET_LINEAR) {
        if (st->act == CR_CONVNET_TANH) o->tanh_backward(ctx, y, dy, dy, n);
        if (st->act == CR_CONVNET_RELU) o->relu_backward(ctx, y, dy, dy, n);
        o->linear_backward(ctx, dy, x, w, dx, dw, db, B, st->in, st->out);
        return;
    }
    if (cn->engine == CR_CONVNET_ENGINE_GEMM) {
        if (!cn->mixed)
            gemm_conv_backward<float>(ctx, cn, i, 0, st, w, x, y, dy, dx, dw, db, B);
        else if (cn->precision == CUDARL_PRECISION_BF16)
            gemm_conv_backward<__nv_bfloat16>(ctx, cn, i, cols_kept, st, w, x, y, dy, dx, dw, db,
                                              B);
        else gemm_conv_backward<__half>(ctx, cn, i, cols_kept, st, w, x, y, dy, dx, dw, db, B);
        return;
    }
#ifdef CUDARL_WITH_CUDNN
    if (st->act == CR_CONVNET_TANH) o->tanh_backward(ctx, y, dy, dy, n);
    cr_cuda_conv2d_backward(ctx, cn->plan[i][bi], x, w, st->act == CR_CONVNET_RELU ? y : NULL, dy,
                            dx, dw, db, aligned_ws(cn));
#else
    CUDARL_ASSERT(!"the CUDNN engine is refused at init in builds without cuDNN");
#endif
}

// ---- the API -------------------------------------------------------------------------------

extern "C" const char *cr_convnet_cuda_engine_name(cr_convnet_engine e) {
    return e == CR_CONVNET_ENGINE_GEMM    ? "gemm"
           : e == CR_CONVNET_ENGINE_CUDNN ? "cudnn"
           : e == CR_CONVNET_ENGINE_IGEMM ? "igemm"
                                          : "auto";
}

// AUTO -> IGEMM at fp16 and bf16 (the only engine they run), else CUDARL_CONV_ENGINE or GEMM;
// the CUDNN engine only where cuDNN is built in.
static cudarl_status resolve_engine(cr_convnet_engine *e, cudarl_precision prec) {
    if (is_half(prec)) {
        if (*e == CR_CONVNET_ENGINE_AUTO) *e = CR_CONVNET_ENGINE_IGEMM;
        if (*e != CR_CONVNET_ENGINE_IGEMM)
            return cr_fail(CUDARL_ERR_INVALID_ARG, "convnet on CUDA: precision %s runs on the "
                           "igemm engine only, not %s; ask for engine AUTO or IGEMM",
                           cudarl_precision_name(prec), cr_convnet_cuda_engine_name(*e));
        return CUDARL_OK;
    }
    if (*e == CR_CONVNET_ENGINE_IGEMM)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "convnet on CUDA: the igemm engine runs fp16 and "
                       "bf16 only, not %s; use engine AUTO, GEMM or CUDNN",
                       cudarl_precision_name(prec));
    if (*e == CR_CONVNET_ENGINE_AUTO) {
        const char *v = getenv("CUDARL_CONV_ENGINE");
        if (!v || !*v || !strcmp(v, "gemm")) *e = CR_CONVNET_ENGINE_GEMM;
        else if (!strcmp(v, "cudnn")) *e = CR_CONVNET_ENGINE_CUDNN;
        else
            return cr_fail(CUDARL_ERR_INVALID_ARG, "CUDARL_CONV_ENGINE='%.32s' is not an engine; "
                           "set gemm or cudnn, or unset it", v);
    }
    if (*e != CR_CONVNET_ENGINE_GEMM && *e != CR_CONVNET_ENGINE_CUDNN)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "convnet on CUDA: unknown engine %d", (int)*e);
#ifndef CUDARL_WITH_CUDNN
    if (*e == CR_CONVNET_ENGINE_CUDNN)
        return cr_fail(CUDARL_ERR_UNSUPPORTED, "the cuDNN convolution engine is not in this "
                       "build (cuDNN was not found when cudarl was configured); use the gemm "
                       "engine (unset CUDARL_CONV_ENGINE)");
#endif
    return CUDARL_OK;
}

// Refuses a batch whose activations or im2col matrix a GEMM, a kernel or cuDNN cannot index
// with int.
static cudarl_status check_sizes(const cr_convnet *net, int B) {
    for (int i = 0; i < net->ntrunk; i++) {
        const cr_convnet_stage *st = &net->stage[i];
        int64_t rows_in = (int64_t)B * st->in, rows_out = (int64_t)B * st->out;
        int64_t L = st->op == CR_CONVNET_CONV ? (int64_t)B * st->conv.P * st->conv.Q : 0;
        if (rows_in > INT_MAX || rows_out > INT_MAX || L > INT_MAX)
            return cr_fail(CUDARL_ERR_INVALID_ARG, "convnet on CUDA: a batch of %d rows makes "
                           "stage %d's activations larger than 2^31 elements; use smaller "
                           "batches", B, i);
    }
    if ((int64_t)B * net->in_floats > INT_MAX)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "convnet on CUDA: a batch of %d observations is "
                       "larger than 2^31 elements; use smaller batches", B);
    return CUDARL_OK;
}

// Sizes the GEMM engine's workspace for the largest batch.
static void plan_gemm_workspace(cr_convnet_cuda *cn) {
    const cr_convnet *net = &cn->net;
    size_t col = 0, prod = 0, partial = 0;
    for (int i = 0; i < net->ntrunk; i++) {
        const cr_convnet_stage *st = &net->stage[i];
        if (st->op != CR_CONVNET_CONV) continue;
        const geom g = geom_of(st, cn->max_batch);
        const size_t L = (size_t)g.L;
        const size_t c = (size_t)g.CRS * L * sizeof(float), p = (size_t)g.K * L * sizeof(float);
        const int chunks = db_chunks(L);
        const size_t d = chunks > 1 ? (size_t)g.K * chunks * sizeof(double) : 0;
        col = c > col ? c : col, prod = p > prod ? p : prod, partial = d > partial ? d : partial;
    }
    // mixed (2-byte elements): the largest conv weight, each stage's col, the largest dcol
    size_t wh = 0, cols = 0, dcol = 0;
    for (int i = 0; i < net->ntrunk; i++)
        if (cn->mixed && net->stage[i].op == CR_CONVNET_CONV) {
            const cr_conv2d_shape *s = &net->stage[i].conv;
            const geom g = geom_of(&net->stage[i], cn->max_batch);
            const size_t w = (size_t)s->K * s->C * s->R * s->S * 2;
            const size_t c = (size_t)g.CRS * (size_t)g.L * 2;
            wh = w > wh ? w : wh;
            cn->colc_at[i] = cols;
            cols += round_up(c, WS_ALIGN);
            if (i > 0) dcol = c > dcol ? c : dcol; // the first conv's input has no gradient
        }
    cn->col_at = 0;
    if (cn->mixed) col = cols; // the rooms of the stages' matrices, one after another
    cn->prod_at = round_up(col, WS_ALIGN);
    cn->partial_at = cn->prod_at + round_up(prod, WS_ALIGN);
    cn->wh_at = cn->partial_at + round_up(partial, WS_ALIGN);
    cn->dcol_at = cn->wh_at + round_up(wh, WS_ALIGN);
    cn->workspace_bytes = cn->dcol_at + round_up(dcol, WS_ALIGN) + WS_ALIGN - 1;
}

#ifdef CUDARL_WITH_CUDNN
// One cuDNN plan per conv stage and batch size; the workspace is the largest plan's.
static cudarl_status plan_cudnn(cr_convnet_cuda *cn) {
    const cr_convnet *net = &cn->net;
    size_t ws = 0;
    for (int i = 0; i < net->ntrunk; i++) {
        const cr_convnet_stage *st = &net->stage[i];
        if (st->op != CR_CONVNET_CONV) continue;
        for (int b = 0; b < cn->nbatches; b++) {
            cr_conv2d_shape s = st->conv;
            s.N = cn->batches[b];
            CR_TRY(cr_cuda_conv2d_plan_init(cn->ctx, &s, &cn->plan[i][b]));
            size_t bytes = cr_cuda_conv2d_workspace_bytes(cn->plan[i][b]);
            ws = bytes > ws ? bytes : ws;
        }
    }
    // the conv ops align the workspace themselves; our aligned_ws rounds the pointer up first
    cn->workspace_bytes = ws + WS_ALIGN - 1;
    return CUDARL_OK;
}
#endif

// Appends printf-style text to cn->describe.
static void describe_add(cr_convnet_cuda *cn, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void describe_add(cr_convnet_cuda *cn, const char *fmt, ...) {
    size_t used = strlen(cn->describe);
    if (used + 1 >= sizeof cn->describe) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cn->describe + used, sizeof cn->describe - used, fmt, ap);
    va_end(ap);
}

static void describe(cr_convnet_cuda *cn) {
    const cr_convnet *net = &cn->net;
    cn->describe[0] = '\0';
    const char *how = cn->mixed ? (cn->precision == CUDARL_PRECISION_FP16
                                       ? "im2col + cublasGemmEx, fp16 products, fp32 sums"
                                       : "im2col + cublasGemmEx, bf16 products, fp32 sums")
                      : cn->engine == CR_CONVNET_ENGINE_GEMM ? "im2col + cuBLAS SGEMM, fp32"
                      : cn->engine == CR_CONVNET_ENGINE_CUDNN
                          ? "cuDNN plans, fp32 FMA"
                          : cn->precision == CUDARL_PRECISION_FP16
                                ? "implicit GEMM on tensor cores, fp16 inputs, fp32 sums"
                                : "implicit GEMM on tensor cores, bf16 inputs, fp32 sums";
    describe_add(cn, "%s on CUDA, conv engine %s (%s), batches", net->spec.name,
                 cr_convnet_cuda_engine_name(cn->engine), how);
    for (int b = 0; b < cn->nbatches; b++) describe_add(cn, "%s%d", b ? ", " : " ", cn->batches[b]);
    describe_add(cn, "; workspace %zu bytes", cn->workspace_bytes);
    if (cn->engine == CR_CONVNET_ENGINE_IGEMM)
        describe_add(cn, "; %s weights %zu bytes", cudarl_precision_name(cn->precision),
                     cn->half.weights_bytes);
    describe_add(cn, "\n");
    for (int i = 0; i < net->ntrunk; i++) {
        const cr_convnet_stage *st = &net->stage[i];
        if (st->op != CR_CONVNET_CONV) continue;
        const cr_conv2d_shape *s = &st->conv;
        describe_add(cn, "  stage %d conv %dx%dx%d -> %dx%dx%d (%dx%d/%d pad %d, %s)\n", i, s->C,
                     s->H, s->W, s->K, s->P, s->Q, s->R, s->S, s->stride, s->pad,
                     cr_convnet_op_name(st->act));
#ifdef CUDARL_WITH_CUDNN
        for (int b = 0; b < cn->nbatches; b++)
            if (cn->plan[i][b])
                describe_add(cn, "    %s\n", cr_cuda_conv2d_plan_describe(cn->plan[i][b]));
#endif
    }
}

extern "C" void cr_convnet_cuda_free(cr_convnet_cuda *cn) {
    if (!cn) return;
#ifdef CUDARL_WITH_CUDNN
    for (int i = 0; i <= CR_CONVNET_MAX_LAYERS; i++)
        for (int b = 0; b < CR_CONVNET_CUDA_MAX_BATCHES; b++)
            cr_cuda_conv2d_plan_free(cn->plan[i][b]);
#endif
    free(cn);
}

// The half engine's tensor-core kernels (bf16 WMMA) need compute capability 8.0; *sms: the
// device's SMs, which its split-K plan is made for.
static cudarl_status check_half_device(const cudarl_ctx *ctx, cudarl_precision prec, int *sms) {
    int major = 0, minor = 0;
    cudaError_t e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor,
                                           ctx->device_index);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, ctx->device_index);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, ctx->device_index);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return cr_fail(CUDARL_ERR_CUDA, "cuda:%d: cudaDeviceGetAttribute failed: %s",
                       ctx->device_index, cudaGetErrorString(e));
    }
    if (major < 8)
        return cr_fail(CUDARL_ERR_UNSUPPORTED, "convnet on CUDA: precision %s needs a GPU of "
                       "compute capability 8.0 or newer (bf16 / fp16 tensor-core kernels), and "
                       "cuda:%d is %d.%d; use precision fp32 (or tf32) there",
                       cudarl_precision_name(prec), ctx->device_index, major, minor);
    return CUDARL_OK;
}

extern "C" cudarl_status cr_convnet_cuda_init(cudarl_ctx *ctx, const cr_convnet *net,
                                              const int *batches, int nbatches,
                                              cr_convnet_engine engine, cr_convnet_cuda **out) {
    return cr_convnet_cuda_init_precision(ctx, net, batches, nbatches, engine,
                                          CUDARL_PRECISION_FP32, out);
}

extern "C" cudarl_status cr_convnet_cuda_init_precision(cudarl_ctx *ctx, const cr_convnet *net,
                                                        const int *batches, int nbatches,
                                                        cr_convnet_engine engine,
                                                        cudarl_precision precision,
                                                        cr_convnet_cuda **out) {
    CUDARL_ASSERT(ctx && ctx->kind == CUDARL_DEVICE_CUDA && ctx->stream && net && out);
    CUDARL_ASSERT((unsigned)precision < CUDARL_PRECISION_COUNT);
    *out = NULL;
    if (nbatches < 1 || nbatches > CR_CONVNET_CUDA_MAX_BATCHES || !batches)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "convnet on CUDA: %d batch sizes; declare 1 to %d",
                       nbatches, CR_CONVNET_CUDA_MAX_BATCHES);
    int max_batch = 0;
    for (int b = 0; b < nbatches; b++) {
        if (batches[b] < 1)
            return cr_fail(CUDARL_ERR_INVALID_ARG, "convnet on CUDA: batch size %d; must be >= 1",
                           batches[b]);
        max_batch = batches[b] > max_batch ? batches[b] : max_batch;
    }
    CR_TRY(resolve_engine(&engine, precision));
    int sms = 0;
    if (is_half(precision)) CR_TRY(check_half_device(ctx, precision, &sms));
    CR_TRY(check_sizes(net, max_batch));
    cr_convnet_cuda *cn = (cr_convnet_cuda *)calloc(1, sizeof *cn);
    if (!cn) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "convnet on CUDA: out of host memory");
    cn->ctx = ctx;
    cn->stream = cr_stream(ctx);
    cn->net = *net;
    cn->engine = engine;
    cn->precision = precision;
    cn->max_batch = max_batch;
    for (int b = 0; b < nbatches; b++) // distinct sizes only: one cuDNN plan each
        if (batch_index(cn, batches[b]) < 0) cn->batches[cn->nbatches++] = batches[b];
    if (engine == CR_CONVNET_ENGINE_GEMM) {
        plan_gemm_workspace(cn);
    } else if (engine == CR_CONVNET_ENGINE_IGEMM) {
        cr_convnet_half_plan_init(net, precision, cn->batches, cn->nbatches, sms, &cn->half);
        cn->workspace_bytes = cn->half.workspace_bytes;
    } else {
#ifdef CUDARL_WITH_CUDNN
        cudarl_status s = plan_cudnn(cn);
        if (s != CUDARL_OK) {
            cr_convnet_cuda_free(cn);
            return s;
        }
#endif
    }
    describe(cn);
    *out = cn;
    return CUDARL_OK;
}

extern "C" cudarl_status cr_convnet_cuda_init_training(cudarl_ctx *ctx, const cr_convnet *net,
                                                       const int *batches, int nbatches,
                                                       cr_convnet_engine engine,
                                                       cudarl_precision precision,
                                                       cr_convnet_cuda **out) {
    CUDARL_ASSERT((unsigned)precision < CUDARL_PRECISION_COUNT && out);
    if (!is_half(precision))
        return cr_convnet_cuda_init_precision(ctx, net, batches, nbatches, engine, precision, out);
    *out = NULL;
    if (engine != CR_CONVNET_ENGINE_AUTO && engine != CR_CONVNET_ENGINE_GEMM)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "convnet on CUDA: %s training runs on the gemm "
                       "engine only (im2col + cublasGemmEx), not %s; ask for engine AUTO or GEMM",
                       cudarl_precision_name(precision), cr_convnet_cuda_engine_name(engine));
    int sms = 0;
    CR_TRY(check_half_device(ctx, precision, &sms));
    CR_TRY(cr_convnet_cuda_init_precision(ctx, net, batches, nbatches, CR_CONVNET_ENGINE_GEMM,
                                          CUDARL_PRECISION_FP32, out));
    cr_convnet_cuda *cn = *out;
    cn->mixed = 1, cn->precision = precision;
    plan_gemm_workspace(cn); // with the weights' room
    describe(cn);
    return CUDARL_OK;
}

extern "C" cr_convnet_engine cr_convnet_cuda_engine(const cr_convnet_cuda *cn) {
    return cn->engine;
}

extern "C" cudarl_precision cr_convnet_cuda_precision(const cr_convnet_cuda *cn) {
    return cn->precision;
}

extern "C" const char *cr_convnet_cuda_describe(const cr_convnet_cuda *cn) { return cn->describe; }

extern "C" cudarl_status cr_convnet_cuda_set_tf32(cudarl_ctx *ctx, int tf32) {
    CUDARL_ASSERT(ctx && ctx->kind == CUDARL_DEVICE_CUDA);
    cublasStatus_t s = cublasSetMathMode(cr_impl(ctx)->blas, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                                  : CUBLAS_DEFAULT_MATH);
    if (s != CUBLAS_STATUS_SUCCESS)
        return cr_fail(CUDARL_ERR_CUDA, "cuda:%d: cublasSetMathMode (%s): %s", ctx->device_index,
                       tf32 ? "TF32 tensor ops" : "default", cublasGetStatusString(s));
    return CUDARL_OK;
}

extern "C" size_t cr_convnet_cuda_workspace_bytes(const cr_convnet_cuda *cn) {
    return cn->workspace_bytes;
}

extern "C" void cr_convnet_cuda_set_workspace(cr_convnet_cuda *cn, void *workspace) {
    cn->workspace = workspace;
}

// Points *c into mem (or, with mem NULL, only sizes the cache); returns its bytes.
static size_t carve(const cr_convnet *net, unsigned char *mem, int max_rows, cr_convnet_cache *c) {
    const size_t B = (size_t)max_rows, F = sizeof(float);
    size_t at = 0;
    memset(c, 0, sizeof *c);
    c->max_rows = max_rows;
    c->x = (float *)(mem ? mem + at : NULL);
    at += round_up(B * (size_t)net->in_floats * F, WS_ALIGN);
    for (int i = 0; i < net->ntrunk; i++) {
        c->act[i] = (float *)(mem ? mem + at : NULL);
        at += round_up(B * (size_t)net->stage[i].out * F, WS_ALIGN);
    }
    for (int k = 0; k < 2; k++) {
        c->d[k] = (float *)(mem ? mem + at : NULL);
        at += round_up(B * (size_t)net->widest * F, WS_ALIGN);
    }
    c->scratch = NULL;
    return at;
}

extern "C" size_t cr_convnet_cuda_cache_bytes(const cr_convnet *net, int max_rows) {
    CUDARL_ASSERT(max_rows >= 1);
    cr_convnet_cache sizing;
    return carve(net, NULL, max_rows, &sizing);
}

extern "C" void cr_convnet_cuda_cache_carve(const cr_convnet *net, void *mem, int max_rows,
                                            cr_convnet_cache *c) {
    CUDARL_ASSERT(max_rows >= 1 && mem != NULL && ((uintptr_t)mem & 63) == 0);
    carve(net, (unsigned char *)mem, max_rows, c);
}

// The forward-only cache: x, then buffer 0 (the even stages' outputs) and buffer 1 (the odd
// ones'); with mem NULL only sizes it. Returns its bytes.
static size_t carve_forward(const cr_convnet *net, unsigned char *mem, int max_rows,
                            cr_convnet_cache *c) {
    const size_t B = (size_t)max_rows, F = sizeof(float);
    size_t widest[2] = {0, 0};
    for (int i = 0; i < net->ntrunk; i++) {
        const size_t out = (size_t)net->stage[i].out;
        widest[i & 1] = out > widest[i & 1] ? out : widest[i & 1];
    }
    memset(c, 0, sizeof *c);
    c->max_rows = max_rows;
    c->x = (float *)mem;
    size_t at = round_up(B * (size_t)net->in_floats * F, WS_ALIGN), buf[2];
    for (int k = 0; k < 2; k++) {
        buf[k] = at;
        at += round_up(B * widest[k] * F, WS_ALIGN);
    }
    for (int i = 0; i < net->ntrunk; i++) c->act[i] = (float *)(mem ? mem + buf[i & 1] : NULL);
    return at;
}

extern "C" size_t cr_convnet_cuda_forward_cache_bytes(const cr_convnet *net, int max_rows) {
    CUDARL_ASSERT(max_rows >= 1);
    cr_convnet_cache sizing;
    return carve_forward(net, NULL, max_rows, &sizing);
}

extern "C" void cr_convnet_cuda_forward_cache_carve(const cr_convnet *net, void *mem,
                                                    int max_rows, cr_convnet_cache *c) {
    CUDARL_ASSERT(max_rows >= 1 && mem != NULL && ((uintptr_t)mem & 63) == 0);
    carve_forward(net, (unsigned char *)mem, max_rows, c);
}

// ---- half precision (convnet_half.cu) --------------------------------------------------------

extern "C" size_t cr_convnet_cuda_weights_bytes(const cr_convnet_cuda *cn) {
    return cn->engine == CR_CONVNET_ENGINE_IGEMM ? cn->half.weights_bytes : 0;
}

extern "C" void cr_convnet_cuda_set_weights(cr_convnet_cuda *cn, void *weights) {
    CUDARL_ASSERT(cn->engine == CR_CONVNET_ENGINE_IGEMM && ((uintptr_t)weights & 63) == 0);
    cn->weights = weights;
}

extern "C" void cr_convnet_cuda_weights_pack(const cr_convnet_cuda *cn, const float *params,
                                             void *out) {
    CUDARL_ASSERT(cn->engine == CR_CONVNET_ENGINE_IGEMM && params && out);
    cr_convnet_half_pack(&cn->half, params, out);
}

extern "C" void cr_convnet_cuda_weights_update(cudarl_ctx *ctx, const cr_convnet_cuda *cn,
                                               const float *params) {
    CUDARL_ASSERT(cn->engine == CR_CONVNET_ENGINE_IGEMM && cr_stream(ctx) == cn->stream);
    CUDARL_ASSERT(cn->weights != NULL); // cr_convnet_cuda_set_weights first
    cr_convnet_half_update(ctx, &cn->half, params, cn->weights);
}

extern "C" size_t cr_convnet_cuda_half_cache_bytes(const cr_convnet_cuda *cn, int max_rows,
                                                   size_t input_bytes) {
    CUDARL_ASSERT(cn->engine == CR_CONVNET_ENGINE_IGEMM && max_rows >= cn->max_batch);
    cr_convnet_half_cache sizing;
    return cr_convnet_half_cache_carve(&cn->net, &cn->half, NULL, max_rows, NULL, input_bytes,
                                       &sizing);
}

extern "C" void cr_convnet_cuda_half_cache_carve(const cr_convnet_cuda *cn, void *mem,
                                                 int max_rows, void *input, size_t input_bytes,
                                                 cr_convnet_half_cache *c) {
    CUDARL_ASSERT(cn->engine == CR_CONVNET_ENGINE_IGEMM && max_rows >= cn->max_batch &&
                  mem != NULL && ((uintptr_t)mem & 63) == 0 &&
                  (input_bytes == 0 || (input != NULL && ((uintptr_t)input & 63) == 0)));
    cr_convnet_half_cache_carve(&cn->net, &cn->half, (unsigned char *)mem, max_rows,
                                (unsigned char *)input, input_bytes, c);
}

extern "C" void cr_convnet_cuda_half_forward(cudarl_ctx *ctx, const cr_convnet_cuda *cn,
                                             const void *obs, float *out, float *value,
                                             const cr_convnet_half_cache *c, int B) {
    const int ppo = cn->net.spec.heads == CR_CONVNET_PPO;
    CUDARL_ASSERT(cn->engine == CR_CONVNET_ENGINE_IGEMM && cr_stream(ctx) == cn->stream &&
                  batch_index(cn, B) >= 0 && c->max_rows >= cn->max_batch &&
                  (value != NULL) == ppo);
    CUDARL_ASSERT(cn->weights != NULL); // cr_convnet_cuda_set_weights and a pack or an update
    void *ws = cn->half.workspace_bytes ? aligned_ws(cn) : NULL;
    cr_convnet_half_forward(ctx, &cn->net, &cn->half, cn->weights, ws, obs, out, value, c, B);
}

// c->x (n) = obs as float, scaled as the spec says.
// x (B, row) from B input rows `stride` elements apart, converted as the spec says.
static void input_to_float(cudarl_ctx *ctx, const cr_convnet_spec *s, const void *obs,
                           size_t stride, float *x, size_t row, int B) {
    const size_t n = (size_t)B * row;
    if (s->dtype == CR_CONVNET_F32) {
        if (stride == row) {
            ctx->ops->copy(ctx, x, obs, n * sizeof(float));
        } else {
            CUDA_CHECK(cudaMemcpy2DAsync(x, row * sizeof(float), obs, stride * sizeof(float),
                                         row * sizeof(float), (size_t)B,
                                         cudaMemcpyDeviceToDevice, cr_stream(ctx)));
        }
        return;
    }
    const unsigned blocks = cr_cuda_blocks(n, CR_CUDA_THREADS);
    const uint8_t *u = (const uint8_t *)obs;
    if (s->scale == CR_CONVNET_SCALE_255)
        input_kernel<true><<<blocks, CR_CUDA_THREADS, 0, cr_stream(ctx)>>>(u, x, n, row, stride);
    else
        input_kernel<false><<<blocks, CR_CUDA_THREADS, 0, cr_stream(ctx)>>>(u, x, n, row, stride);
    CR_CUDA_LAUNCHED(ctx);
}

extern "C" void cr_convnet_cuda_forward(cudarl_ctx *ctx, const cr_convnet_cuda *cn,
                                        const float *params, const void *obs, float *out,
                                        float *value, const cr_convnet_cache *c, int B) {
    cr_convnet_cuda_forward_rows(ctx, cn, params, obs, (size_t)cn->net.in_floats, out, value, c,
                                 B);
}

extern "C" void cr_convnet_cuda_forward_rows(cudarl_ctx *ctx, const cr_convnet_cuda *cn,
                                             const float *params, const void *obs,
                                             size_t obs_stride, float *out, float *value,
                                             const cr_convnet_cache *c, int B) {
    const cr_convnet *net = &cn->net;
    const int ppo = net->spec.heads == CR_CONVNET_PPO, bi = batch_index(cn, B);
    CUDARL_ASSERT(cr_stream(ctx) == cn->stream && bi >= 0 && B <= c->max_rows &&
                  (value != NULL) == ppo && obs_stride >= (size_t)net->in_floats);
    CUDARL_ASSERT(cn->engine != CR_CONVNET_ENGINE_IGEMM); // cr_convnet_cuda_half_forward
    input_to_float(ctx, &net->spec, obs, obs_stride, c->x, (size_t)net->in_floats, B);
    // the conv matrices the stages write now are this forward's (host state; the handle is
    // otherwise read-only here, and forwards on one handle are enqueued from one thread)
    cr_convnet_cuda *w = (cr_convnet_cuda *)cn;
    w->cols_of = c->x, w->cols_batch = B;
    const float *h = c->x;
    for (int i = 0; i < net->ntrunk; i++) {
        stage_forward(ctx, cn, i, bi, params, h, c->act[i], B);
        h = c->act[i];
    }
    if (!ppo) {
        stage_forward(ctx, cn, net->ntrunk, bi, params, h, out, B);
        return;
    }
    const cr_convnet_tensor *t = net->t;
    const int F = net->features, A = net->spec.num_actions;
    ctx->ops->linear_forward(ctx, h, params + t[net->actor_w].offset,
                             params + t[net->actor_b].offset, out, B, F, A);
    ctx->ops->linear_forward(ctx, h, params + t[net->critic_w].offset,
                             params + t[net->critic_b].offset, value, B, F, 1);
}

// c->d[0] (B, F) = d loss / d features from the heads, their gradients written; not when the
// trunk has no stage (the features are then the input, which has no gradient).
static void heads_backward(cudarl_ctx *ctx, const cr_convnet_cuda *cn, const float *params,
                           float *grads, const float *dout, const float *dvalue,
                           const cr_convnet_cache *c, int B) {
    const cr_convnet *net = &cn->net;
    const cr_convnet_tensor *t = net->t;
    const cr_backend *o = ctx->ops;
    const float *h = net->ntrunk ? c->act[net->ntrunk - 1] : c->x;
    float *dh = net->ntrunk ? c->d[0] : NULL;
    const int F = net->features, A = net->spec.num_actions;
    if (net->spec.heads == CR_CONVNET_DQN) {
        const cr_convnet_stage *q = &net->stage[net->ntrunk];
        o->linear_backward(ctx, dout, h, params + t[q->weight].offset, dh,
                           grads + t[q->weight].offset, grads + t[q->bias].offset, B, F, A);
        return;
    }
    o->linear_backward(ctx, dout, h, params + t[net->actor_w].offset, dh,
                       grads + t[net->actor_w].offset, grads + t[net->actor_b].offset, B, F, A);
    o->linear_backward(ctx, dvalue, h, params + t[net->critic_w].offset, NULL,
                       grads + t[net->critic_w].offset, grads + t[net->critic_b].offset, B, F, 1);
    if (!dh) return;
    const size_t n = (size_t)B * F;
    add_outer_kernel<<<cr_cuda_blocks(n, CR_CUDA_THREADS), CR_CUDA_THREADS, 0, cr_stream(ctx)>>>(
        dh, dvalue, params + t[net->critic_w].offset, n, (unsigned)F);
    CR_CUDA_LAUNCHED(ctx);
}

extern "C" void cr_convnet_cuda_backward(cudarl_ctx *ctx, const cr_convnet_cuda *cn,
                                         const float *params, float *grads, const float *dout,
                                         const float *dvalue, const cr_convnet_cache *c, int B) {
    const cr_convnet *net = &cn->net;
    const int ppo = net->spec.heads == CR_CONVNET_PPO, bi = batch_index(cn, B);
    CUDARL_ASSERT(cr_stream(ctx) == cn->stream && bi >= 0 && B <= c->max_rows &&
                  (dvalue != NULL) == ppo);
    CUDARL_ASSERT(c->d[0] && c->d[1]); // not a forward-only cache
    CUDARL_ASSERT(cn->engine != CR_CONVNET_ENGINE_IGEMM); // half handles run forwards only
    heads_backward(ctx, cn, params, grads, dout, dvalue, c, B);
    // a mixed handle's conv matrices are this cache's when its last forward was on it
    const int cols_kept = cn->cols_of == (const void *)c->x && cn->cols_batch == B;
    int cur = 0; // c->d[cur] holds d loss / d (output of stage i)
    for (int i = net->ntrunk - 1; i >= 0; i--) {
        const float *x = i ? c->act[i - 1] : c->x;
        float *dx = i ? c->d[1 - cur] : NULL;
        stage_backward(ctx, cn, i, bi, cols_kept, params, grads, x, c->act[i], c->d[cur], dx,
                       B);
        cur = 1 - cur;
    }
}
