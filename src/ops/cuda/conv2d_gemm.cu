// The GEMM engine of the CUDA conv2d op (ops/conv2d.h has the contract, conv2d.cu the op-table
// entries that call this file): a convolution as three matrix products over the im2col matrix
// col (CRS, L), CRS = C R S taps and L = N P Q output pixels of the whole batch, row-major:
// col[(c R + r) S + s][(n P + p) Q + q] = x[n][c][p stride - pad + r][q stride - pad + s], or 0
// in the padding. With prod (K, L) the product laid out channel-major:
//   forward       prod = W (K, CRS) col                    one SGEMM, then y = act(prod + b)
//                                                           transposed back to NCHW
//   weight grad   dW (K, CRS) = G (K, L) col^T              one SGEMM over all N P Q terms
//   input grad    dcol (CRS, L) = W^T G, then dx = col2im   one SGEMM, then a gather
// where G (K, L) is dy through the activation's backward, transposed channel-major by the same
// kernel that sums the bias gradient.
//
// Why this is the CUDA default rather than cuDNN (conv2d_cudnn.cu): with the deterministic fp32
// FMA algorithms the cuDNN engine must choose (implicit-precomp GEMM forward, ALGO_1 backward
// data and filter) the Nature-CNN trunk's forward + backward at batch 32 runs far below the
// GPU's fp32 rate (bench/RESULTS.md, cuDNN convolutions): at a DQN batch the images are few and
// small, the per-image kernels leave most of the GPU idle, and ALGO_1's weight gradient reduces
// over N P Q without splitting it. One SGEMM over the whole batch gives cuBLAS one large product
// per direction, which it tiles (and splits along a long reduction, as the weight gradient's,
// with a deterministic reduction in its workspace: no atomics unless a handle allows them, and
// the backend's does not) over the whole GPU, in fp32 (the backend's handle runs
// CUBLAS_DEFAULT_MATH: no TF32). The price is the im2col matrix in the workspace (conv1 of
// Nature-CNN: 256 x 400 floats per image, 13 MB at batch 32), written by the forward and again
// by the backward (the weight gradient needs it), then reused as dcol.
//
// Precision and order: every output is a plain fp32 sum of products (cuBLAS's order), the bias
// added once, rounded (__fadd_rn), as the CPU adds it; the bias gradient sums in double in a
// fixed order (blocks of one channel's N P Q terms, a halving tree, chunks added in order), as
// conv2d_cudnn.cu's; col2im adds at most ceil(R / stride) ceil(S / stride) terms per input
// element in a fixed (r, s) order. The ReLU select (v < 0 ? 0 : v forward, y <= 0 ? 0 : dy
// backward) and tanh (cr_tanhf_device and the CPU's dy (1 - y^2) roundings) are bitwise the
// CPU's. So results agree with the CPU to rounding and repeat bit for bit.
//
// Mixed products (desc.products BF16 or FP16, for mixed-precision training): the three products'
// inputs in the format: im2col writes col in the format (half the bytes), the gradient kernel
// writes G in the format (its bias sums stay double over the fp32 values), the float weights are
// converted into the workspace before each product that reads them (they change every step),
// and cublasGemmEx multiplies them on the tensor cores with fp32 sums into fp32 prod and dW, and
// dcol in the format (col2im sums it in fp32). Half-size matrices make it affordable to keep
// col in the caller's keep buffer from the forward for the backward, which rebuilds it only
// when told it no longer holds this x. fp16 inputs overflow above 65504: a loss-scaled gradient
// that does becomes inf in G and then in dW, which the trainer's loss scaler finds and skips
// (ops/loss_scale.h).
#include <limits.h>

#include "ops/cuda/cuda_common.cuh"
#include "ops/cuda/tanh_device.cuh"
// after cuda_common.cuh: included first, it made the bf16 conversions below compile to a
// software rounding instead of cvt.rn.bf16.f32 (same values, other PTX)
#include "ops/cuda/conv2d_cuda.h"

// Alignment of the workspace's pieces (cudaMalloc's); the caller's workspace pointer is rounded
// up inside, its size includes the slack.
#define WS_ALIGN ((size_t)256)
// Bias gradient: threads per block, the terms one block sums at most, and the most blocks
// (chunks) per channel.
#define DB_THREADS 256
#define DB_CHUNK 4096
#define DB_MAX_CHUNKS 256

enum { ACT_NONE = 0, ACT_RELU, ACT_TANH };
static_assert((int)ACT_NONE == (int)CR_CONV2D_IDENTITY && (int)ACT_RELU == (int)CR_CONV2D_RELU &&
                  (int)ACT_TANH == (int)CR_CONV2D_TANH,
              "the kernels' activation codes are ops/conv2d.h's");

// One conv at batch N, as the kernels read it.
struct geom {
    int N, C, H, W, K, R, S, stride, pad, P, Q;
    int L;   // N P Q: columns of col, prod and G
    int CRS; // rows of col
};

static size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

static geom geom_of(const cr_conv2d_shape *s) {
    geom g;
    g.N = s->N, g.C = s->C, g.H = s->H, g.W = s->W, g.K = s->K, g.R = s->R, g.S = s->S;
    g.stride = s->stride, g.pad = s->pad, g.P = s->P, g.Q = s->Q;
    g.L = s->N * s->P * s->Q;
    g.CRS = s->C * s->R * s->S;
    return g;
}

// Chunks of one channel's L terms in the bias gradient: a fixed function of L.
static int db_chunks(size_t L) {
    size_t c = (L + DB_CHUNK - 1) / DB_CHUNK;
    return c < 1 ? 1 : c > DB_MAX_CHUNKS ? DB_MAX_CHUNKS : (int)c;
}

static int is_mixed(const cr_conv2d_desc *d) {
    return d->products == CUDARL_PRECISION_BF16 || d->products == CUDARL_PRECISION_FP16;
}

// The workspace's pieces (byte offsets from its aligned start): col (fp32 plans; a mixed plan's
// is the caller's keep buffer), prod (K, L) floats, which the backward reuses for G, the bias
// gradient's partial sums, and (mixed) the weights in the format and dcol.
struct layout {
    size_t col_at, prod_at, partial_at, wh_at, dcol_at, bytes, keep;
};

static layout layout_of(const cr_conv2d_desc *d) {
    const geom g = geom_of(&d->shape);
    const size_t L = (size_t)g.L, e = is_mixed(d) ? 2 : sizeof(float);
    const size_t col = (size_t)g.CRS * L * e;
    const int chunks = db_chunks(L);
    layout l;
    l.keep = is_mixed(d) ? round_up(col, WS_ALIGN) : 0;
    l.col_at = 0;
    l.prod_at = is_mixed(d) ? 0 : round_up(col, WS_ALIGN);
    l.partial_at = l.prod_at + round_up((size_t)g.K * L * sizeof(float), WS_ALIGN);
    l.wh_at = l.partial_at + round_up(chunks > 1 ? (size_t)g.K * chunks * sizeof(double) : 0,
                                      WS_ALIGN);
    l.dcol_at = l.wh_at + round_up(is_mixed(d) ? (size_t)g.K * g.CRS * 2 : 0, WS_ALIGN);
    const size_t dcol = is_mixed(d) && !d->no_dx ? col : 0;
    l.bytes = l.dcol_at + round_up(dcol, WS_ALIGN) + WS_ALIGN - 1;
    return l;
}

extern "C" void cr_cuda_conv2d_gemm_sizes(const cr_conv2d_desc *d, size_t *workspace,
                                          size_t *keep) {
    const layout l = layout_of(d);
    *workspace = l.bytes, *keep = l.keep;
}

// ---- kernels -------------------------------------------------------------------------------

template <int ACT> __device__ __forceinline__ float act_forward(float v) {
    if (ACT == ACT_RELU) return v < 0.0f ? 0.0f : v; // NaN and -0 pass, as the CPU's
    if (ACT == ACT_TANH) return cr_tanhf_device(v);
    return v;
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


// ---- launches ------------------------------------------------------------------------------

static const float one = 1.0f, zero = 0.0f;

static char *aligned(void *ws) { return (char *)round_up((size_t)(uintptr_t)ws, WS_ALIGN); }

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

// ---- the conv ----------------------------------------------------------------------------

// The products' matrices hold T: float (the fp32 plan: cr_cuda_sgemm, the weights as they are),
// or a format of a mixed plan (the weights converted into the workspace, cublasGemmEx).
// C = op(A) op(B) column-major (cuBLAS's convention; the callers spell out the row-major
// meaning), beta 0: C is overwritten and not read.
static void gemm_t(cudarl_ctx *ctx, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                   int k, const float *A, int lda, const float *B, int ldb, float *C, int ldc) {
    cr_cuda_sgemm(ctx, ta, tb, m, n, k, A, lda, B, ldb, C, ldc);
}
template <typename T>
static const T *weights_t(cudarl_ctx *ctx, char *ws, const layout &l, const float *w, size_t n) {
    T *wh = (T *)(ws + l.wh_at);
    launch_to_fmt<T>(ctx, w, wh, n);
    return wh;
}
template <>
const float *weights_t<float>(cudarl_ctx *, char *, const layout &, const float *w, size_t) {
    return w;
}

// y (N, K, P, Q) = act(conv(x) + b); col in keep (mixed) or the workspace.
template <typename T>
static void conv_forward(cudarl_ctx *ctx, const cr_conv2d_desc *d, const float *x,
                         const float *w, const float *b, float *y, void *workspace, void *keep) {
    const geom g = geom_of(&d->shape);
    const layout l = layout_of(d);
    char *ws = aligned(workspace);
    T *col = (T *)(keep ? (char *)keep : ws + l.col_at);
    float *prod = (float *)(ws + l.prod_at);
    const T *wt = weights_t<T>(ctx, ws, l, w, (size_t)g.K * g.CRS);
    launch_im2col<T>(ctx, x, col, g);
    // prod (K, L) = W (K, CRS) col (CRS, L), row-major; column-major that is
    // prod^T (L, K) = col^T (L, CRS) W^T (CRS, K), both read as they lie (N, N).
    gemm_t(ctx, CUBLAS_OP_N, CUBLAS_OP_N, g.L, g.K, g.CRS, col, g.L, wt, g.CRS, prod, g.L);
    launch_bias_act(ctx, (int)d->act, prod, b, y, g);
}

// dw, db, and dx (unless NULL) given dy w.r.t. the output y, x the input. fp32: col is rebuilt
// from x in the workspace, then dcol overwrites it (written by the last product, after the one
// that read col: one stream). Mixed: G (in prod's room), col and dcol hold T; col is in keep,
// rebuilt unless `kept`, and dcol has a room of its own.
template <typename T>
static void conv_backward(cudarl_ctx *ctx, const cr_conv2d_desc *d, const float *x,
                          const float *w, const float *y, const float *dy, float *dx, float *dw,
                          float *db, void *workspace, void *keep, int kept) {
    const geom g = geom_of(&d->shape);
    const layout l = layout_of(d);
    char *ws = aligned(workspace);
    T *col = (T *)(keep ? (char *)keep : ws + l.col_at), *G = (T *)(ws + l.prod_at);
    T *dcol = (T *)(ws + (keep ? l.dcol_at : l.col_at));
    double *partial = (double *)(ws + l.partial_at);
    launch_grad<T>(ctx, (int)d->act, dy, y, G, partial, db, g);
    if (!keep || !kept) launch_im2col<T>(ctx, x, col, g);
    // dW (K, CRS) = G (K, L) col^T (L, CRS), row-major; column-major
    // dW^T (CRS, K) = col (CRS, L) G^T (L, K): col lies as col^T (L, CRS), so op T; G^T as is.
    gemm_t(ctx, CUBLAS_OP_T, CUBLAS_OP_N, g.CRS, g.K, g.L, col, g.L, G, g.L, dw, g.CRS);
    if (!dx) return;
    // dcol (CRS, L) = W^T (CRS, K) G (K, L), row-major, into col (read by the product above,
    // which runs first on the stream); column-major dcol^T (L, CRS) = G^T (L, K) W (K, CRS):
    // G^T as it lies, W lies as W^T (CRS, K), so op T.
    const T *wt = weights_t<T>(ctx, ws, l, w, (size_t)g.K * g.CRS);
    gemm_t(ctx, CUBLAS_OP_N, CUBLAS_OP_T, g.L, g.CRS, g.K, G, g.L, wt, g.CRS, dcol, g.L);
    const size_t n = (size_t)g.N * g.C * g.H * g.W;
    col2im_kernel<T><<<cr_cuda_blocks(n, CR_CUDA_THREADS), CR_CUDA_THREADS, 0, cr_stream(ctx)>>>(
        dcol, dx, g);
    CR_CUDA_LAUNCHED(ctx);
}

extern "C" void cr_cuda_conv2d_gemm_forward(cudarl_ctx *ctx, const cr_conv2d_desc *d,
                                            const float *x, const float *w, const float *b,
                                            float *y, void *workspace, void *keep) {
    CUDARL_ASSERT(workspace != NULL && (keep != NULL) == is_mixed(d));
    if (d->products == CUDARL_PRECISION_BF16)
        conv_forward<__nv_bfloat16>(ctx, d, x, w, b, y, workspace, keep);
    else if (d->products == CUDARL_PRECISION_FP16)
        conv_forward<__half>(ctx, d, x, w, b, y, workspace, keep);
    else conv_forward<float>(ctx, d, x, w, b, y, workspace, NULL);
}

extern "C" void cr_cuda_conv2d_gemm_backward(cudarl_ctx *ctx, const cr_conv2d_desc *d,
                                             const float *x, const float *w, const float *y,
                                             const float *dy, float *dx, float *dw, float *db,
                                             void *workspace, void *keep, int kept) {
    CUDARL_ASSERT(workspace != NULL && (keep != NULL) == is_mixed(d) && (!dx || !d->no_dx));
    if (d->products == CUDARL_PRECISION_BF16)
        conv_backward<__nv_bfloat16>(ctx, d, x, w, y, dy, dx, dw, db, workspace, keep, kept);
    else if (d->products == CUDARL_PRECISION_FP16)
        conv_backward<__half>(ctx, d, x, w, y, dy, dx, dw, db, workspace, keep, kept);
    else conv_backward<float>(ctx, d, x, w, y, dy, dx, dw, db, workspace, NULL, 0);
}
