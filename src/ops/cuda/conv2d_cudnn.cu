// 2-D convolution forward and backward on the device through cuDNN: the CUDNN engine of the
// conv2d op (ops/conv2d.h; conv2d.cu dispatches to it), a CUDA twin of conv2d.c and
// conv2d_backward.c (conv2d_cuda.h has the API and its meaning). Built only with cuDNN.
//
// cuDNN does the three convolutions (forward, backward data, backward filter); two small kernels
// of ours do the rest, so that their meaning is exactly the CPU's:
//   forward:  cudnnConvolutionForward (beta 0), then one pass y = relu?(y + b[k]).
//             Not cudnnConvolutionBiasActivationForward: it fuses the ReLU only with the
//             IMPLICIT_PRECOMP_GEMM algorithm (with the others cuDNN runs conv, bias and
//             activation as separate passes itself), its ReLU's treatment of NaN is not
//             documented while the CPU's (v < 0 ? 0 : v) lets NaN through, and one code path is
//             one thing to test. The price is one pass over y, about a microsecond per MB.
//   backward: one kernel applies the ReLU select (y <= 0 ? 0 : dy) into a copy of dy in the
//             workspace (dy is not written, as on the CPU) and sums db in double in a fixed
//             order (not cudnnConvolutionBackwardBias, whose summation order is not documented
//             as deterministic); then cudnnConvolutionBackwardFilter and, when dx is wanted,
//             cudnnConvolutionBackwardData on the masked gradient, both with beta 0: dw and dx
//             are overwritten, not accumulated, and cuDNN does not read them (beta 0 lets
//             them hold anything, NaN included).
//
// Descriptors: x (N, C, H, W) and y (N, K, P, Q) as NCHW tensors, w (K, C, R, S) as a KCRS
// (CUDNN_TENSOR_NCHW) filter, a cross-correlation (PyTorch's and the CPU's convolution: no
// kernel flip) with pad and stride in both dimensions and no dilation; cuDNN's output size is
// checked against the CPU's P, Q. The bias needs no descriptor: our kernels read it.
//
// Algorithms: chosen once per plan by cudnnGetConvolution*Algorithm_v7, cuDNN's heuristics: a
// function of shape, device and cuDNN version, that times nothing and allocates nothing, so the
// same build picks the same algorithms on every run (cudnnFind* times candidates: a noisy timing
// could pick another algorithm in the next process, with other roundings, and it needs the
// buffers allocated). From its ranked list the plan takes the first candidate that is
//   - deterministic (CUDNN_DETERMINISTIC): the project promises bitwise-repeatable updates, and
//     the non-deterministic ones (backward data ALGO_0, backward filter ALGO_0 and ALGO_3) add
//     with float atomics in whatever order the blocks finish;
//   - of the GEMM family (implicit / precomputed-implicit / explicit GEMM, direct; backward
//     ALGO_1): each output is a plain sum of products, so the error against the CPU grows like
//     sqrt(terms) ulps (the tolerances of test_conv_cuda rest on that); FFT and Winograd
//     transforms have their own, larger and shape-dependent, error, and FFT wants large
//     workspaces;
//   - not a tensor-op math type, and within WORKSPACE_CAP bytes when any candidate is;
//   - accepted by cudnnGet*WorkspaceSize (which also gives the bytes it needs).
// The convolution descriptor's math type is CUDNN_FMA_MATH: fp32 stays fp32. With
// CUDNN_DEFAULT_MATH cuDNN may run fp32 convolutions on tensor cores in TF32 (10-bit mantissa
// inputs, ~1e-3 relative error) on Ampere and newer, as PyTorch does unless allow_tf32 is off,
// and PyTorch sets CUDNN_FMA_MATH for exactly this case. TF32 would be a precision policy
// (DESIGN.md: one place), not a kernel's default.
//
// Handle: each plan owns a cuDNN handle bound to its context's stream (cudnnSetStream at init).
// One per layer costs a little host and device memory at setup and keeps cuda_common.cuh's
// context untouched; plans are made at setup and live as long as the model.
#include <cudnn.h>
#include <stdio.h>
#include <stdlib.h>

#include "ops/cuda/conv2d_cuda.h"
#include "ops/cuda/cuda_common.cuh"
#include "ops/cuda/cudnn_check.cuh"

// ---- errors --------------------------------------------------------------------------------

// At plan creation a failure is the machine's (library, driver, memory): a status and a message
// naming the call, returned from the enclosing function.
#define CUDNN_TRY(expr)                                                                  \
    do {                                                                                 \
        cudnnStatus_t cudnn_try_s_ = (expr);                                             \
        if (cudnn_try_s_ != CUDNN_STATUS_SUCCESS)                                        \
            return cudnn_failed(#expr, cudnn_try_s_, __FILE__, __LINE__);                \
    } while (0)

static cudarl_status cudnn_failed(const char *expr, cudnnStatus_t s, const char *file, int line) {
    cudaGetLastError(); // clear a non-sticky error cuDNN may have left
    return cr_fail(s == CUDNN_STATUS_ALLOC_FAILED ? CUDARL_ERR_OUT_OF_MEMORY : CUDARL_ERR_CUDA,
                   "conv2d plan: %s failed at %s:%d: %s", expr, file, line,
                   cudnnGetErrorString(s));
}

// ---- the plan ------------------------------------------------------------------------------

// Largest cuDNN workspace an algorithm may ask for while another candidate needs less.
#define WORKSPACE_CAP ((size_t)64 << 20)
// Alignment of the pieces of the workspace (cudaMalloc's); the caller's pointer is rounded up.
#define WS_ALIGN ((size_t)256)
// Threads of the bias-gradient blocks, and the elements one block sums at most.
#define DB_THREADS 256
#define DB_CHUNK 4096
#define DB_MAX_CHUNKS 256

struct cr_cuda_conv2d_plan {
    cr_conv2d_shape s;
    cudaStream_t stream; // the context's, which the handle is bound to
    cudnnHandle_t handle;
    cudnnTensorDescriptor_t x_desc, y_desc;
    cudnnFilterDescriptor_t w_desc;
    cudnnConvolutionDescriptor_t conv;
    cudnnConvolutionFwdAlgo_t fwd_algo;
    cudnnConvolutionBwdDataAlgo_t bwd_data_algo;
    cudnnConvolutionBwdFilterAlgo_t bwd_filter_algo;
    size_t fwd_ws, bwd_data_ws, bwd_filter_ws; // bytes each algorithm needs
    // Workspace, from its 256-aligned start: [0, cudnn_ws) cuDNN's, [dym_at, +y bytes) the
    // masked dy, [partial_at, +K db_chunks doubles) the bias gradient's partial sums.
    size_t cudnn_ws, dym_at, partial_at, workspace_bytes;
    int db_chunks;
    size_t db_per_chunk; // elements (n, p, q) of one channel per bias-gradient block
    char describe[256];
};

static size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

static const char *const fwd_names[] = {"implicit_gemm", "implicit_precomp_gemm", "gemm",
                                        "direct", "fft", "fft_tiling", "winograd",
                                        "winograd_nonfused"};
static const char *const bwd_data_names[] = {"algo_0", "algo_1", "fft", "fft_tiling",
                                             "winograd", "winograd_nonfused"};
static const char *const bwd_filter_names[] = {"algo_0", "algo_1", "fft", "algo_3",
                                               "winograd", "winograd_nonfused", "fft_tiling"};

// The GEMM family of each direction (see the top of the file).
static int gemm_family(cudnnConvolutionFwdAlgo_t a) {
    return a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM ||
           a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
           a == CUDNN_CONVOLUTION_FWD_ALGO_GEMM || a == CUDNN_CONVOLUTION_FWD_ALGO_DIRECT;
}
static int gemm_family(cudnnConvolutionBwdDataAlgo_t a) {
    return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0 || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
}
static int gemm_family(cudnnConvolutionBwdFilterAlgo_t a) {
    return a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 || a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 ||
           a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3;
}

// cudnnGet*WorkspaceSize for one algorithm of each direction: also says whether cuDNN can run it.
static cudnnStatus_t workspace_of(const cr_cuda_conv2d_plan *p, cudnnConvolutionFwdAlgo_t a,
                                  size_t *bytes) {
    return cudnnGetConvolutionForwardWorkspaceSize(p->handle, p->x_desc, p->w_desc, p->conv,
                                                   p->y_desc, a, bytes);
}
static cudnnStatus_t workspace_of(const cr_cuda_conv2d_plan *p, cudnnConvolutionBwdDataAlgo_t a,
                                  size_t *bytes) {
    return cudnnGetConvolutionBackwardDataWorkspaceSize(p->handle, p->w_desc, p->y_desc, p->conv,
                                                        p->x_desc, a, bytes);
}
static cudnnStatus_t workspace_of(const cr_cuda_conv2d_plan *p,
                                  cudnnConvolutionBwdFilterAlgo_t a, size_t *bytes) {
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(p->handle, p->x_desc, p->y_desc,
                                                          p->conv, p->w_desc, a, bytes);
}

// The first of the heuristics' count ranked candidates that the policy at the top of the file
// accepts: deterministic, GEMM family, no tensor-op math, runnable; in a first pass only those
// within WORKSPACE_CAP. Returns whether one was found (*algo, *ws set).
template <typename Perf, typename Algo>
static int pick(const cr_cuda_conv2d_plan *p, const Perf *perf, int count, Algo *algo,
                size_t *ws) {
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < count; i++) {
            const Perf &c = perf[i];
            size_t bytes = 0;
            if (c.status != CUDNN_STATUS_SUCCESS || c.determinism != CUDNN_DETERMINISTIC ||
                c.mathType == CUDNN_TENSOR_OP_MATH ||
                c.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION || !gemm_family(c.algo) ||
                (pass == 0 && c.memory > WORKSPACE_CAP) ||
                workspace_of(p, c.algo, &bytes) != CUDNN_STATUS_SUCCESS)
                continue;
            *algo = c.algo;
            *ws = bytes > c.memory ? bytes : c.memory;
            return 1;
        }
    return 0;
}

static cudarl_status no_algorithm(const cr_conv2d_shape *s, const char *direction) {
    return cr_fail(CUDARL_ERR_UNSUPPORTED,
                   "conv2d: cuDNN offers no deterministic fp32 GEMM-family %s algorithm for "
                   "N=%d C=%d H=%d W=%d K=%d R=%d S=%d stride=%d pad=%d",
                   direction, s->N, s->C, s->H, s->W, s->K, s->R, s->S, s->stride, s->pad);
}

// Candidates asked of each heuristic: more than any direction has algorithms.
#define MAX_CANDIDATES 16

static cudarl_status choose_algorithms(cr_cuda_conv2d_plan *p) {
    const cr_conv2d_shape *s = &p->s;
    int n = 0;
    {
        cudnnConvolutionFwdAlgoPerf_t perf[MAX_CANDIDATES];
        CUDNN_TRY(cudnnGetConvolutionForwardAlgorithm_v7(p->handle, p->x_desc, p->w_desc, p->conv,
                                                         p->y_desc, MAX_CANDIDATES, &n, perf));
        if (!pick(p, perf, n, &p->fwd_algo, &p->fwd_ws)) return no_algorithm(s, "forward");
    }
    {
        cudnnConvolutionBwdDataAlgoPerf_t perf[MAX_CANDIDATES];
        CUDNN_TRY(cudnnGetConvolutionBackwardDataAlgorithm_v7(
            p->handle, p->w_desc, p->y_desc, p->conv, p->x_desc, MAX_CANDIDATES, &n, perf));
        if (!pick(p, perf, n, &p->bwd_data_algo, &p->bwd_data_ws))
            return no_algorithm(s, "backward-data");
    }
    {
        cudnnConvolutionBwdFilterAlgoPerf_t perf[MAX_CANDIDATES];
        CUDNN_TRY(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            p->handle, p->x_desc, p->y_desc, p->conv, p->w_desc, MAX_CANDIDATES, &n, perf));
        if (!pick(p, perf, n, &p->bwd_filter_algo, &p->bwd_filter_ws))
            return no_algorithm(s, "backward-filter");
    }
    return CUDARL_OK;
}

// Creates the handle and descriptors of p (p->s checked) and chooses its algorithms.
static cudarl_status setup(cr_cuda_conv2d_plan *p) {
    const cr_conv2d_shape *s = &p->s;
    CUDNN_TRY(cudnnCreate(&p->handle));
    CUDNN_TRY(cudnnSetStream(p->handle, p->stream));
    CUDNN_TRY(cudnnCreateTensorDescriptor(&p->x_desc));
    CUDNN_TRY(cudnnCreateTensorDescriptor(&p->y_desc));
    CUDNN_TRY(cudnnCreateFilterDescriptor(&p->w_desc));
    CUDNN_TRY(cudnnCreateConvolutionDescriptor(&p->conv));
    CUDNN_TRY(cudnnSetTensor4dDescriptor(p->x_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, s->N,
                                         s->C, s->H, s->W));
    CUDNN_TRY(cudnnSetTensor4dDescriptor(p->y_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, s->N,
                                         s->K, s->P, s->Q));
    CUDNN_TRY(cudnnSetFilter4dDescriptor(p->w_desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, s->K,
                                         s->C, s->R, s->S));
    CUDNN_TRY(cudnnSetConvolution2dDescriptor(p->conv, s->pad, s->pad, s->stride, s->stride, 1,
                                              1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CUDNN_TRY(cudnnSetConvolutionMathType(p->conv, CUDNN_FMA_MATH));
    int n = 0, k = 0, h = 0, w = 0;
    CUDNN_TRY(cudnnGetConvolution2dForwardOutputDim(p->conv, p->x_desc, p->w_desc, &n, &k, &h,
                                                    &w));
    CUDARL_ASSERT(n == s->N && k == s->K && h == s->P && w == s->Q); // the CPU's output size
    return choose_algorithms(p);
}

// Sizes the workspace pieces of p (algorithms chosen) and writes its description.
static void plan_workspace(cr_cuda_conv2d_plan *p) {
    const cr_conv2d_shape *s = &p->s;
    size_t ws = p->fwd_ws;
    if (p->bwd_data_ws > ws) ws = p->bwd_data_ws;
    if (p->bwd_filter_ws > ws) ws = p->bwd_filter_ws;
    p->cudnn_ws = round_up(ws, WS_ALIGN);
    size_t y_bytes = (size_t)s->N * s->K * s->P * s->Q * sizeof(float);
    size_t m = (size_t)s->N * s->P * s->Q; // elements of one channel
    size_t chunks = (m + DB_CHUNK - 1) / DB_CHUNK;
    if (chunks > DB_MAX_CHUNKS) chunks = DB_MAX_CHUNKS;
    p->db_chunks = (int)chunks;
    p->db_per_chunk = (m + chunks - 1) / chunks;
    p->dym_at = p->cudnn_ws;
    p->partial_at = p->dym_at + round_up(y_bytes, WS_ALIGN);
    size_t partial_bytes = chunks > 1 ? (size_t)s->K * chunks * sizeof(double) : 0;
    p->workspace_bytes = p->partial_at + round_up(partial_bytes, WS_ALIGN) + WS_ALIGN - 1;
    snprintf(p->describe, sizeof p->describe,
             "conv2d N=%d C=%d %dx%d -> K=%d %dx%d (%dx%d/%d pad %d): fwd %s, bwd data %s, "
             "bwd filter %s, workspace %zu bytes (cuDNN %zu)",
             s->N, s->C, s->H, s->W, s->K, s->P, s->Q, s->R, s->S, s->stride, s->pad,
             fwd_names[p->fwd_algo], bwd_data_names[p->bwd_data_algo],
             bwd_filter_names[p->bwd_filter_algo], p->workspace_bytes, ws);
}

extern "C" void cr_cuda_conv2d_plan_free(cr_cuda_conv2d_plan *p) {
    if (!p) return;
    if (p->conv) cudnnDestroyConvolutionDescriptor(p->conv);
    if (p->w_desc) cudnnDestroyFilterDescriptor(p->w_desc);
    if (p->y_desc) cudnnDestroyTensorDescriptor(p->y_desc);
    if (p->x_desc) cudnnDestroyTensorDescriptor(p->x_desc);
    if (p->handle) cudnnDestroy(p->handle);
    free(p);
}

extern "C" cudarl_status cr_cuda_conv2d_plan_init(cudarl_ctx *ctx, const cr_conv2d_shape *s,
                                                  cr_cuda_conv2d_plan **plan) {
    CUDARL_ASSERT(ctx && ctx->kind == CUDARL_DEVICE_CUDA && ctx->stream && s && plan);
    *plan = NULL;
    cr_conv2d_shape checked = *s;
    CR_TRY(cr_conv2d_shape_check(&checked));
    // The shape check keeps per-image counts within int; cuDNN's descriptors also take the
    // batch's element counts as int.
    if ((int64_t)checked.N * checked.C * checked.H * checked.W > INT32_MAX ||
        (int64_t)checked.N * checked.K * checked.P * checked.Q > INT32_MAX)
        return cr_fail(CUDARL_ERR_INVALID_ARG,
                       "conv2d: a batch of N=%d is too large for one cuDNN call; split it",
                       checked.N);
    size_t loaded = cudnnGetVersion();
    if (loaded / 10000 != CUDNN_MAJOR)
        return cr_fail(CUDARL_ERR_CUDA, "conv2d: built against cuDNN %d, but cuDNN %zu.%zu is "
                       "loaded; install cuDNN %d or rebuild", CUDNN_MAJOR, loaded / 10000,
                       loaded / 100 % 100, CUDNN_MAJOR);
    cr_cuda_conv2d_plan *p = (cr_cuda_conv2d_plan *)calloc(1, sizeof *p);
    if (!p) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "conv2d plan: out of host memory");
    p->s = checked;
    p->stream = cr_stream(ctx);
    cudarl_status st = setup(p);
    if (st != CUDARL_OK) {
        cr_cuda_conv2d_plan_free(p);
        return st;
    }
    plan_workspace(p);
    *plan = p;
    return CUDARL_OK;
}

extern "C" const cr_conv2d_shape *cr_cuda_conv2d_plan_shape(const cr_cuda_conv2d_plan *p) {
    return &p->s;
}

extern "C" size_t cr_cuda_conv2d_workspace_bytes(const cr_cuda_conv2d_plan *p) {
    return p->workspace_bytes;
}

extern "C" const char *cr_cuda_conv2d_plan_describe(const cr_cuda_conv2d_plan *p) {
    return p->describe;
}

// ---- kernels -------------------------------------------------------------------------------

// y[i] = relu?(y[i] + b[k]) over y (N, K, P, Q), n = N K P Q, pq = P Q: conv2d.c's bias_relu,
// one rounding for the addition, v < 0 ? 0 : v (NaN and -0 pass) for the ReLU.
template <bool RELU>
__global__ void bias_relu_kernel(float *y, const float *__restrict__ b, size_t n, size_t pq,
                                 unsigned K) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = __fadd_rn(y[i], b[(i / pq) % K]);
        if (RELU) v = v < 0.0f ? 0.0f : v;
        y[i] = v;
    }
}

// Block (k, c) sums chunk c of channel k's N P Q elements of dy (N, K, P, Q), masked by the
// ReLU select (y <= 0 ? 0 : dy) into dym when MASK: each thread adds its strided elements in
// double, then a fixed halving tree (cr_block_sum). With one chunk the block writes db[k]
// itself; otherwise partial[k chunks + c], added by bias_grad_finish_kernel. The chunking is a
// function of the shape, so the order, and the result, repeat bit for bit.
template <bool MASK>
__global__ void __launch_bounds__(DB_THREADS)
    bias_grad_kernel(const float *__restrict__ dy, const float *__restrict__ y,
                     float *__restrict__ dym, double *partial, float *db, unsigned K, size_t pq,
                     size_t m, size_t per_chunk) {
    __shared__ double sh[DB_THREADS];
    const unsigned k = blockIdx.x, c = blockIdx.y;
    size_t begin = (size_t)c * per_chunk, end = begin + per_chunk < m ? begin + per_chunk : m;
    double v[1] = {0.0};
    for (size_t e = begin + threadIdx.x; e < end; e += DB_THREADS) {
        size_t img = e / pq, i = (img * K + k) * pq + (e - img * pq);
        float g = dy[i];
        if (MASK) {
            g = y[i] <= 0.0f ? 0.0f : g;
            dym[i] = g;
        }
        v[0] += g;
    }
    cr_block_sum<1, DB_THREADS>(v, sh);
    if (threadIdx.x == 0) {
        if (gridDim.y == 1) db[k] = (float)v[0];
        else partial[(size_t)k * gridDim.y + c] = v[0];
    }
}

// db[k] = the chunks' partial sums of channel k, added in chunk order.
__global__ void bias_grad_finish_kernel(const double *__restrict__ partial, float *db, unsigned K,
                                        unsigned chunks) {
    unsigned k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= K) return;
    double s = 0.0;
    for (unsigned c = 0; c < chunks; c++) s += partial[(size_t)k * chunks + c];
    db[k] = (float)s;
}

// ---- ops -----------------------------------------------------------------------------------

static const float one = 1.0f, zero = 0.0f;

// The caller's workspace rounded up to WS_ALIGN (workspace_bytes includes the slack).
static char *aligned_workspace(void *workspace) {
    CUDARL_ASSERT(workspace != NULL);
    return (char *)round_up((size_t)(uintptr_t)workspace, WS_ALIGN);
}

extern "C" void cr_cuda_conv2d_forward(cudarl_ctx *ctx, const cr_cuda_conv2d_plan *p,
                                       const float *x, const float *w, const float *b, float *y,
                                       int relu, void *workspace) {
    CUDARL_ASSERT(cr_stream(ctx) == p->stream); // the handle is bound to the plan's stream
    const cr_conv2d_shape *s = &p->s;
    char *ws = aligned_workspace(workspace);
    CUDNN_CHECK(cudnnConvolutionForward(p->handle, &one, p->x_desc, x, p->w_desc, w, p->conv,
                                        p->fwd_algo, ws, p->cudnn_ws, &zero, p->y_desc, y));
    CR_CUDA_LAUNCHED(ctx);
    size_t pq = (size_t)s->P * s->Q, n = (size_t)s->N * s->K * pq;
    unsigned blocks = cr_cuda_blocks(n, CR_CUDA_THREADS);
    if (relu)
        bias_relu_kernel<true><<<blocks, CR_CUDA_THREADS, 0, p->stream>>>(y, b, n, pq,
                                                                          (unsigned)s->K);
    else
        bias_relu_kernel<false><<<blocks, CR_CUDA_THREADS, 0, p->stream>>>(y, b, n, pq,
                                                                           (unsigned)s->K);
    CR_CUDA_LAUNCHED(ctx);
}

extern "C" void cr_cuda_conv2d_backward(cudarl_ctx *ctx, const cr_cuda_conv2d_plan *p,
                                        const float *x, const float *w, const float *y_relu,
                                        const float *dy, float *dx, float *dw, float *db,
                                        void *workspace) {
    CUDARL_ASSERT(cr_stream(ctx) == p->stream);
    const cr_conv2d_shape *s = &p->s;
    char *ws = aligned_workspace(workspace);
    float *dym = (float *)(ws + p->dym_at);
    double *partial = (double *)(ws + p->partial_at);
    size_t pq = (size_t)s->P * s->Q, m = (size_t)s->N * pq;
    dim3 grid((unsigned)s->K, (unsigned)p->db_chunks);
    if (y_relu)
        bias_grad_kernel<true><<<grid, DB_THREADS, 0, p->stream>>>(
            dy, y_relu, dym, partial, db, (unsigned)s->K, pq, m, p->db_per_chunk);
    else
        bias_grad_kernel<false><<<grid, DB_THREADS, 0, p->stream>>>(
            dy, NULL, NULL, partial, db, (unsigned)s->K, pq, m, p->db_per_chunk);
    CR_CUDA_LAUNCHED(ctx);
    if (p->db_chunks > 1) {
        bias_grad_finish_kernel<<<(s->K + 255) / 256, 256, 0, p->stream>>>(
            partial, db, (unsigned)s->K, (unsigned)p->db_chunks);
        CR_CUDA_LAUNCHED(ctx);
    }
    const float *g = y_relu ? dym : dy; // the gradient w.r.t. the convolution's output
    CUDNN_CHECK(cudnnConvolutionBackwardFilter(p->handle, &one, p->x_desc, x, p->y_desc, g,
                                               p->conv, p->bwd_filter_algo, ws, p->cudnn_ws,
                                               &zero, p->w_desc, dw));
    CR_CUDA_LAUNCHED(ctx);
    if (dx) {
        CUDNN_CHECK(cudnnConvolutionBackwardData(p->handle, &one, p->w_desc, w, p->y_desc, g,
                                                 p->conv, p->bwd_data_algo, ws, p->cudnn_ws,
                                                 &zero, p->x_desc, dx));
        CR_CUDA_LAUNCHED(ctx);
    }
}
