// The backward of the IGEMM engine's training handles (convnet_half_train.cuh; convnet_cuda.h
// has the meaning). The forward that filled the cache was the policy runtime's (convnet_half.cu
// with train set): every trunk stage's output is kept in the format, conv outputs that feed a
// conv channels-last (B, P, Q, K), the last conv's NCHW (the flatten order), linear outputs (B,
// O). The backward walks the stages in reverse with the gradient of each stage's output in one
// of c->d[]'s two buffers:
//   heads        dh (B, F) fp32 = dout Wa + dvalue wc (fp32 weights, a fixed order: the CPU's
//                linear backward and its add of the critic's outer product); the heads' weight
//                gradients one cublasGemmEx each over [dout | dvalue] in the format and the
//                features; their bias gradients column sums of dout and dvalue;
//   a linear     the ReLU mask on its fp32 output gradient (y <= 0 ? 0 : dy, the CPU's), the bias
//                gradient its column sums, then G = the gradient in the format, dW = G^T x and
//                dx = G W (cublasGemmEx, format inputs, fp32 sums and outputs, CUBLAS_COMPUTE_32F);
//   a conv       its output gradient in the format, channels-last (the last conv's is
//                transposed from the fp32 NCHW rows the linear after it wrote, masked and
//                rounded in one pass; an earlier conv's is cuDNN's data gradient, masked in
//                place), the bias gradient its column sums over (n, p, q), the weight gradient
//                cudnnConvolutionBackwardFilter into the format then converted to the float
//                KCRS tensor, and, after the first stage, the data gradient
//                cudnnConvolutionBackwardData with the weights block's KRSC weights.
// cuDNN runs NHWC tensors in the format with fp32 compute on the tensor cores
// (CUDNN_TENSOR_OP_MATH) and ALGO_1 in both directions: the deterministic algorithm, and the
// fastest one measured for these shapes (bench/RESULTS.md, the training convolutions); the plan
// asks cudnnGet*WorkspaceSize whether each shape runs, so a refusal is the init's, not a run's.
// The first conv's input is the observations: the Nature-CNN's 8x8/4 conv over uint8 frames
// goes to cuDNN as the 2x2 conv over 4x4 blocks of 16 C channels that hconv_s2d_kernel runs
// (x_s2d[n][p][q][(c 4 + r % 4) 4 + s % 4] = x[n][c][4 p + r % 4][4 q + s % 4], 64 channels,
// where cuDNN's kernels run at the tensor cores' rate, and its 4-channel NHWC form at a tenth);
// any other first conv as NHWC with its channels padded with zeros to a multiple of 8. uint8
// frames go in as the bytes themselves (exact in both formats) and the weight gradient is
// divided by 255 after (x / 255 factors out of the sum), as the forward divides its sums.
//
// Precision against the mixed GEMM engine (which has the same rounding of the products' inputs
// and fp32 sums): cuDNN writes the data and weight gradients in the format, so the conv layers'
// bias gradients sum the rounded output gradients, and each weight gradient is rounded once to
// the format (a relative 2^-9 for bf16, 2^-12 for fp16) before it is converted to float. The
// linear stages' and heads' gradients stay fp32 outputs. Determinism: cuDNN's ALGO_1s, cuBLAS
// for a fixed handle, shape and workspace, and column sums in a fixed order (blocks of rows,
// their warps in order, then the blocks in order, in double): no atomics, the same bits on a
// repeat.
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "nn/convnet_half_train.cuh"
#include "ops/cuda/conv2d_half_kernels.cuh"

#ifdef CUDARL_WITH_CUDNN
#include "ops/cuda/cudnn_check.cuh"
#endif

#define WS_ALIGN ((size_t)256)
#define FIRST_INPUT_SMEM 8192 // elements of the format first_input_kernel stages (16 KiB)
#define SUM_BLOCKS 1024 // most blocks of a column sum's first pass (a block per 64 rows below)

// why (n bytes) = printf(fmt, ...), when the caller asked for it.
static void say(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t n, const char *fmt, ...) {
    if (!why || !n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
}

int cr_convnet_half_train_fits(const cr_convnet *net, const cr_convnet_half_plan *hp, char *why,
                               size_t n) {
#ifndef CUDARL_WITH_CUDNN
    (void)net, (void)hp;
    say(why, n, "the build has no cuDNN (its backward runs the convolutions' gradients)");
    return 0;
#else
    if (why && n) why[0] = '\0';
    if (net->ntrunk < 1 || net->stage[0].op != CR_CONVNET_CONV) {
        say(why, n, "the trunk does not start with a conv");
        return 0;
    }
    int linears = 0;
    for (int i = 0; i < net->ntrunk; i++) {
        const cr_convnet_stage *st = &net->stage[i];
        if (st->act != CR_CONVNET_RELU && st->act != CR_CONVNET_IDENTITY) {
            say(why, n, "stage %d's activation is not ReLU or none", i);
            return 0;
        }
        if (st->op == CR_CONVNET_LINEAR) {
            linears = 1;
            continue;
        }
        if (linears) {
            say(why, n, "stage %d is a conv after a linear", i);
            return 0;
        }
        const cr_conv2d_shape *s = &st->conv;
        if (i == 0 && 16 * s->C > FIRST_INPUT_SMEM) {
            say(why, n, "the input has more than %d channels", FIRST_INPUT_SMEM / 16);
            return 0;
        }
        if (s->K % 8 || s->K > 2048) {
            say(why, n, "stage %d's output channels are not a multiple of 8 up to 2048", i);
            return 0;
        }
        if (i > 0 && (s->C % 8 || (s->C * s->R * s->S) % HALF_BK)) {
            say(why, n, "stage %d's input channels are not a multiple of 8, or its taps of 32", i);
            return 0;
        }
    }
    (void)hp;
    return 1;
#endif
}

#ifndef CUDARL_WITH_CUDNN

cudarl_status cr_convnet_half_train_init(cudarl_ctx *ctx, const cr_convnet *net,
                                         const cr_convnet_half_plan *hp, const int *batches,
                                         int nbatches, cr_convnet_half_train **out) {
    (void)ctx, (void)net, (void)hp, (void)batches, (void)nbatches;
    *out = NULL;
    return cr_fail(CUDARL_ERR_UNSUPPORTED, "convnet on CUDA: the igemm training engine needs "
                   "cuDNN, which this build does not have; use the gemm engine");
}
void cr_convnet_half_train_free(cr_convnet_half_train *t) { (void)t; }
size_t cr_convnet_half_train_workspace_bytes(const cr_convnet_half_train *t) {
    (void)t;
    return 0;
}
const char *cr_convnet_half_train_describe(const cr_convnet_half_train *t) {
    (void)t;
    return "";
}
void cr_convnet_half_backward(cudarl_ctx *ctx, const cr_convnet *net,
                              const cr_convnet_half_plan *hp, const cr_convnet_half_train *t,
                              const void *weights, void *workspace, const void *obs,
                              size_t obs_stride, const float *params, float *grads,
                              const float *dout, const float *dvalue, const cr_convnet_cache *c,
                              int B) {
    (void)ctx, (void)net, (void)hp, (void)t, (void)weights, (void)workspace, (void)obs;
    (void)obs_stride, (void)params, (void)grads, (void)dout, (void)dvalue, (void)c, (void)B;
    CUDARL_ASSERT(!"the igemm training engine is not in this build");
}

#else

#define CUDNN_TRY(expr)                                                                  \
    do {                                                                                 \
        cudnnStatus_t cudnn_try_s_ = (expr);                                             \
        if (cudnn_try_s_ != CUDNN_STATUS_SUCCESS) {                                      \
            cudaGetLastError();                                                          \
            return cr_fail(cudnn_try_s_ == CUDNN_STATUS_ALLOC_FAILED                     \
                               ? CUDARL_ERR_OUT_OF_MEMORY                                \
                               : cudnn_try_s_ == CUDNN_STATUS_NOT_SUPPORTED              \
                                     ? CUDARL_ERR_UNSUPPORTED                            \
                                     : CUDARL_ERR_CUDA,                                  \
                           "convnet on CUDA (igemm training): %s failed: %s", #expr,     \
                           cudnnGetErrorString(cudnn_try_s_));                           \
        }                                                                                \
    } while (0)

// One conv stage at one batch size, as cuDNN sees it.
struct conv_plan {
    cudnnTensorDescriptor_t x, dy;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    size_t wgrad_ws, dgrad_ws;
};

// A conv stage's shape in cuDNN's view: the s2d form of the first, or its channels padded.
struct conv_view {
    int C, H, W, R, S, stride, pad; // the input's channels and size, the filter, as cuDNN runs it
    int s2d;                        // the 2x2 form of an 8x8/4 conv over 4x4 blocks
};

struct cr_convnet_half_train {
    cudnnHandle_t handle;
    cudnnDataType_t dt;
    int nbatches, batches[CR_CONVNET_CUDA_MAX_BATCHES];
    conv_plan plan[CR_CONVNET_MAX_LAYERS][CR_CONVNET_CUDA_MAX_BATCHES];
    conv_view view[CR_CONVNET_MAX_LAYERS];
    // workspace, from its aligned start: the first conv's input as cuDNN reads it, the largest
    // weight gradient in the format, the heads' output gradients in the format, the column sums'
    // partials, cuDNN's workspace
    size_t xin_at, dwf_at, gh_at, part_at, cudnn_at, cudnn_bytes, bytes;
    char describe[256];
};

static conv_view view_of(const cr_convnet *net, const cr_convnet_half_plan *hp, int i) {
    const cr_conv2d_shape *s = &net->stage[i].conv;
    conv_view v = {s->C, s->H, s->W, s->R, s->S, s->stride, s->pad, 0};
    if (i == 0 && hp->s2d) {
        v.C = 16 * s->C, v.H = s->H / 4, v.W = s->W / 4, v.R = v.S = 2, v.stride = 1, v.pad = 0;
        v.s2d = 1;
    } else if (i == 0) {
        v.C = (int)round_up((size_t)s->C, 8);
    }
    return v;
}

static cudarl_status plan_conv(cr_convnet_half_train *t, const cr_convnet_stage *st,
                               const conv_view &v, int B, int dgrad, conv_plan *p) {
    const cr_conv2d_shape *s = &st->conv;
    CUDNN_TRY(cudnnCreateTensorDescriptor(&p->x));
    CUDNN_TRY(cudnnCreateTensorDescriptor(&p->dy));
    CUDNN_TRY(cudnnCreateFilterDescriptor(&p->w));
    CUDNN_TRY(cudnnCreateConvolutionDescriptor(&p->conv));
    CUDNN_TRY(cudnnSetTensor4dDescriptor(p->x, CUDNN_TENSOR_NHWC, t->dt, B, v.C, v.H, v.W));
    CUDNN_TRY(cudnnSetTensor4dDescriptor(p->dy, CUDNN_TENSOR_NHWC, t->dt, B, s->K, s->P, s->Q));
    CUDNN_TRY(cudnnSetFilter4dDescriptor(p->w, t->dt, CUDNN_TENSOR_NHWC, s->K, v.C, v.R, v.S));
    CUDNN_TRY(cudnnSetConvolution2dDescriptor(p->conv, v.pad, v.pad, v.stride, v.stride, 1, 1,
                                              CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CUDNN_TRY(cudnnSetConvolutionMathType(p->conv, CUDNN_TENSOR_OP_MATH));
    int n, c, h, w;
    CUDNN_TRY(cudnnGetConvolution2dForwardOutputDim(p->conv, p->x, p->w, &n, &c, &h, &w));
    if (n != B || c != s->K || h != s->P || w != s->Q)
        return cr_fail(CUDARL_ERR_UNSUPPORTED, "convnet on CUDA (igemm training): cuDNN's "
                       "output %dx%dx%dx%d is not the conv's %dx%dx%dx%d", n, c, h, w, B, s->K,
                       s->P, s->Q);
    CUDNN_TRY(cudnnGetConvolutionBackwardFilterWorkspaceSize(
        t->handle, p->x, p->dy, p->conv, p->w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1,
        &p->wgrad_ws));
    p->dgrad_ws = 0;
    if (dgrad)
        CUDNN_TRY(cudnnGetConvolutionBackwardDataWorkspaceSize(
            t->handle, p->w, p->dy, p->conv, p->x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
            &p->dgrad_ws));
    return CUDARL_OK;
}

void cr_convnet_half_train_free(cr_convnet_half_train *t) {
    if (!t) return;
    for (int i = 0; i < CR_CONVNET_MAX_LAYERS; i++)
        for (int b = 0; b < CR_CONVNET_CUDA_MAX_BATCHES; b++) {
            conv_plan *p = &t->plan[i][b];
            if (p->x) cudnnDestroyTensorDescriptor(p->x);
            if (p->dy) cudnnDestroyTensorDescriptor(p->dy);
            if (p->w) cudnnDestroyFilterDescriptor(p->w);
            if (p->conv) cudnnDestroyConvolutionDescriptor(p->conv);
        }
    if (t->handle) cudnnDestroy(t->handle);
    free(t);
}

cudarl_status cr_convnet_half_train_init(cudarl_ctx *ctx, const cr_convnet *net,
                                         const cr_convnet_half_plan *hp, const int *batches,
                                         int nbatches, cr_convnet_half_train **out) {
    *out = NULL;
    char why[160];
    if (!cr_convnet_half_train_fits(net, hp, why, sizeof why))
        return cr_fail(CUDARL_ERR_UNSUPPORTED, "convnet on CUDA: %s cannot train on the igemm "
                       "engine: %s; use the gemm engine", net->spec.name, why);
    cr_convnet_half_train *t = (cr_convnet_half_train *)calloc(1, sizeof *t);
    if (!t) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "convnet on CUDA: out of host memory");
    t->dt = hp->dtype == CR_DTYPE_F16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
    cudarl_status st = CUDARL_OK;
    cudnnStatus_t cs = cudnnCreate(&t->handle);
    if (cs == CUDNN_STATUS_SUCCESS) cs = cudnnSetStream(t->handle, cr_stream(ctx));
    if (cs != CUDNN_STATUS_SUCCESS) {
        cudaGetLastError();
        st = cr_fail(cs == CUDNN_STATUS_ALLOC_FAILED ? CUDARL_ERR_OUT_OF_MEMORY : CUDARL_ERR_CUDA,
                     "convnet on CUDA (igemm training): cuDNN did not start: %s",
                     cudnnGetErrorString(cs));
    }
    int max_b = 0;
    for (int b = 0; b < nbatches; b++) {
        t->batches[t->nbatches++] = batches[b];
        max_b = batches[b] > max_b ? batches[b] : max_b;
    }
    size_t cudnn_ws = 0, dwf = 0, maxk = 0, xin = 0;
    for (int i = 0; st == CUDARL_OK && i < net->ntrunk; i++) {
        const cr_convnet_stage *s = &net->stage[i];
        if (s->op != CR_CONVNET_CONV) continue;
        t->view[i] = view_of(net, hp, i);
        const conv_view &v = t->view[i];
        dwf = (size_t)s->conv.K * v.C * v.R * v.S > dwf ? (size_t)s->conv.K * v.C * v.R * v.S
                                                        : dwf;
        maxk = (size_t)s->conv.K > maxk ? (size_t)s->conv.K : maxk;
        if (i == 0) xin = (size_t)max_b * v.C * v.H * v.W * 2;
        for (int b = 0; st == CUDARL_OK && b < t->nbatches; b++) {
            st = plan_conv(t, s, v, t->batches[b], i > 0, &t->plan[i][b]);
            if (st != CUDARL_OK) break;
            const conv_plan &p = t->plan[i][b];
            cudnn_ws = p.wgrad_ws > cudnn_ws ? p.wgrad_ws : cudnn_ws;
            cudnn_ws = p.dgrad_ws > cudnn_ws ? p.dgrad_ws : cudnn_ws;
        }
    }
    if (st != CUDARL_OK) {
        cr_convnet_half_train_free(t);
        return st;
    }
    for (int i = 0; i < net->ntrunk; i++) // the linear stages' and heads' column sums too
        maxk = (size_t)net->stage[i].out > maxk && net->stage[i].op == CR_CONVNET_LINEAR
                   ? (size_t)net->stage[i].out
                   : maxk;
    maxk = (size_t)net->spec.num_actions + 1 > maxk ? (size_t)net->spec.num_actions + 1 : maxk;
    size_t at = 0;
    t->xin_at = at, at += round_up(xin, WS_ALIGN);
    t->dwf_at = at, at += round_up(dwf * 2, WS_ALIGN);
    t->gh_at = at, at += round_up((size_t)max_b * (net->spec.num_actions + 1) * 2, WS_ALIGN);
    t->part_at = at, at += round_up((size_t)SUM_BLOCKS * maxk * sizeof(double), WS_ALIGN);
    t->cudnn_at = at, t->cudnn_bytes = cudnn_ws, at += round_up(cudnn_ws, WS_ALIGN);
    t->bytes = at + WS_ALIGN - 1;
    snprintf(t->describe, sizeof t->describe, "backward: cuDNN NHWC %s, ALGO_1 data and filter "
             "gradients on tensor cores%s, cuDNN workspace %zu bytes",
             hp->dtype == CR_DTYPE_F16 ? "fp16" : "bf16",
             hp->s2d ? ", the first conv's as a 2x2 conv over 4x4 blocks" : "", cudnn_ws);
    *out = t;
    return CUDARL_OK;
}

size_t cr_convnet_half_train_workspace_bytes(const cr_convnet_half_train *t) { return t->bytes; }

const char *cr_convnet_half_train_describe(const cr_convnet_half_train *t) { return t->describe; }

// ---- kernels -------------------------------------------------------------------------------

// dh (B, F) fp32 = dout (B, A) wa (A, F) [+ dvalue (B) x wc (F)]: the CPU's linear backward
// (sum over a in order) and its add of the critic's outer product (one product, one sum); gh
// (B, A + 1) = [dout | dvalue] in the format (dvalue's column only with wc).
template <typename T>
static __global__ void heads_backward_kernel(const float *__restrict__ dout,
                                             const float *__restrict__ dvalue,
                                             const float *__restrict__ wa,
                                             const float *__restrict__ wc, float *__restrict__ dh,
                                             T *__restrict__ gh, int B, int A, int F) {
    const size_t n = (size_t)B * F, step = (size_t)gridDim.x * blockDim.x;
    const int G = A + 1;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        const size_t b = i / F, f = i - b * F;
        float s = 0.0f;
        for (int a = 0; a < A; a++) s = fmaf(dout[b * A + a], wa[(size_t)a * F + f], s);
        if (wc) s = __fadd_rn(s, __fmul_rn(dvalue[b], wc[f]));
        dh[i] = s;
        if (f < (size_t)G) gh[b * G + f] = to_fmt<T>(f < (size_t)A ? dout[b * A + f]
                                                   : wc ? dvalue[b] : 0.0f);
    }
}

// gh's columns when F < A + 1 (the loop above writes gh only for f < F).
template <typename T>
static __global__ void heads_g_kernel(const float *__restrict__ dout,
                                      const float *__restrict__ dvalue, T *__restrict__ gh, int B,
                                      int A, int from) {
    const int G = A + 1;
    const size_t n = (size_t)B * G, step = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        const size_t b = i / G, f = i - b * G;
        if ((int)f < from) continue;
        gh[i] = to_fmt<T>((int)f < A ? dout[b * A + f] : dvalue ? dvalue[b] : 0.0f);
    }
}

// A linear stage's output gradient: d (n) fp32 masked in place by the ReLU of y (the format),
// and g = d in the format.
template <typename T>
static __global__ void linear_mask_kernel(float *__restrict__ d, const T *__restrict__ y,
                                          T *__restrict__ g, size_t n, int relu) {
    const size_t step = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        float v = d[i];
        if (relu && from_fmt(y[i]) <= 0.0f) v = 0.0f, d[i] = v;
        g[i] = to_fmt<T>(v);
    }
}

// The last conv's output gradient: g (B, P Q, K) in the format, channels-last, from d (B, K, P Q)
// fp32 rows, masked by the ReLU of y (B, K, P Q) (the format). One block per image, through
// shared memory where the image fits, so that both sides are read and written in order.
#define TR_SMEM_FLOATS 8192
template <typename T>
static __global__ void last_conv_grad_kernel(const float *__restrict__ d,
                                             const T *__restrict__ y, T *__restrict__ g, int K,
                                             int PQ, int relu) {
    __shared__ float tile[TR_SMEM_FLOATS];
    const size_t img = (size_t)blockIdx.x * K * PQ;
    const int n = K * PQ;
    if (n <= TR_SMEM_FLOATS) {
        for (int i = threadIdx.x; i < n; i += blockDim.x) { // i = k PQ + pq
            float v = d[img + i];
            if (relu && from_fmt(y[img + i]) <= 0.0f) v = 0.0f;
            tile[i] = v;
        }
        __syncthreads();
        for (int o = threadIdx.x; o < n; o += blockDim.x) { // o = pq K + k
            const int pq = o / K, k = o - pq * K;
            g[img + o] = to_fmt<T>(tile[k * PQ + pq]);
        }
        return;
    }
    for (int o = threadIdx.x; o < n; o += blockDim.x) {
        const int pq = o / K, k = o - pq * K;
        float v = d[img + (size_t)k * PQ + pq];
        if (relu && from_fmt(y[img + (size_t)k * PQ + pq]) <= 0.0f) v = 0.0f;
        g[img + o] = to_fmt<T>(v);
    }
}

// Column sums of x (M, K) row-major fp32, first pass: block (cx, by) sums columns 32 cx + lane over
// its slice of rows (the by-th of gridDim.y), its 8 warps striding the rows, in double; the
// warps' sums added in order into part[by][k].
static __global__ void colsum_kernel(const float *__restrict__ x, size_t M, int K,
                                     double *__restrict__ part) {
    __shared__ double ws[8][32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int k = blockIdx.x * 32 + lane;
    const size_t per = (M + gridDim.y - 1) / gridDim.y;
    const size_t r0 = (size_t)blockIdx.y * per, r1 = r0 + per < M ? r0 + per : M;
    double s = 0.0;
    if (k < K)
#pragma unroll 4
        for (size_t r = r0 + warp; r < r1; r += 8) s += (double)x[r * K + k];
    ws[warp][lane] = s;
    __syncthreads();
    if (warp == 0 && k < K) {
        double t = ws[0][lane];
        for (int w = 1; w < 8; w++) t += ws[w][lane];
        part[(size_t)blockIdx.y * K + k] = t;
    }
}

// Second pass: out[k] = the blocks' partial sums of column k, rounded once; a block a column,
// thread t summing the partials t, t + 256, ... in order, then a fixed tree over the threads.
static __global__ void colsum_done_kernel(const double *__restrict__ part, int blocks, int K,
                                          float *__restrict__ out) {
    __shared__ double sum[256];
    const int k = blockIdx.x, t = threadIdx.x;
    double s = 0.0;
    for (int b = t; b < blocks; b += 256) s += part[(size_t)b * K + k];
    sum[t] = s;
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if (t < h) sum[t] += sum[t + h];
        __syncthreads();
    }
    if (t == 0) out[k] = (float)sum[0];
}

// Column sums of g (M, K) row-major in the format, first pass, with g masked in place by the
// ReLU of y (the format, same shape) where y is not NULL: K a multiple of 8 and at most 2048,
// both 16-byte aligned. Thread t of block (0, by) takes columns 8 (t % G) .. + 7 (G = K / 8
// groups) of the rows t / G, + 256 / G, ... of its slice (the by-th of gridDim.y), eight at a
// time (one 16-byte load), in double; the threads of a group are then added in order into
// part[by][k].
template <typename T>
static __global__ void colsum8_kernel(T *__restrict__ g, const T *__restrict__ y, size_t M,
                                      int K, double *__restrict__ part) {
    __shared__ double acc[256 * 8];
    const int G = K / 8, t = threadIdx.x, rps = 256 / G; // rows a step takes
    const int cg = t % G, ro = t / G;
    const size_t per = (M + gridDim.y - 1) / gridDim.y;
    const size_t r0 = (size_t)blockIdx.y * per, r1 = r0 + per < M ? r0 + per : M;
    double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (ro < rps)
        for (size_t r = r0 + ro; r < r1; r += rps) {
            uint4 gv = ((const uint4 *)(g + r * K))[cg];
            T *ge = (T *)&gv;
            if (y) {
                const uint4 yv = ((const uint4 *)(y + r * K))[cg];
                const T *ye = (const T *)&yv;
#pragma unroll
                for (int e = 0; e < 8; e++)
                    if (from_fmt(ye[e]) <= 0.0f) ge[e] = to_fmt<T>(0.0f);
                ((uint4 *)(g + r * K))[cg] = gv;
            }
#pragma unroll
            for (int e = 0; e < 8; e++) s[e] += (double)from_fmt(ge[e]);
        }
#pragma unroll
    for (int e = 0; e < 8; e++) acc[t * 8 + e] = s[e];
    __syncthreads();
    for (int k = t; k < K; k += 256) { // column k: group k / 8, element k % 8, rows in order
        double u = 0.0;
        for (int o = 0; o < rps; o++) u += acc[(o * G + k / 8) * 8 + k % 8];
        part[(size_t)blockIdx.y * K + k] = u;
    }
}

// The first conv's input as cuDNN reads it, NHWC in the format, from the observations (B rows
// `stride` elements apart, uint8 or float): with s2d, x_s2d[n][p][q][(c 4 + dr) 4 + ds] =
// x[n][c][4 p + dr][4 q + ds] (H4 x W4 blocks, 16 C channels); else x[n][h][w][c] with Cp
// channels, zeros past C. uint8 as the bytes (exact); the division by 255 is the weight
// gradient's. A block takes one output row (b, p) (s2d: the input's rows 4 p .. 4 p + 3; else
// row h), `span` of its output positions at a time: their C x RH input rows' columns read in
// order into shared memory, then the output's contiguous run written in order.
template <typename T>
static __global__ void first_input_kernel(const void *__restrict__ obs, size_t stride, int u8,
                                          T *__restrict__ xin, int B, int C, int H, int W,
                                          int Cp, int s2d, int span) {
    __shared__ T tile[FIRST_INPUT_SMEM];
    const int RH = s2d ? 4 : 1;                  // input rows an output row reads
    const int rows = H / RH, cols = W / RH;      // output rows and positions an image has
    const int per = s2d ? 16 * C : Cp;           // output elements a position has
    const int chunks = (cols + span - 1) / span; // a row's runs of `span` positions
    const long long jobs = (long long)B * rows * chunks;
    for (long long job = blockIdx.x; job < jobs; job += gridDim.x) {
        const int chunk = (int)(job % chunks);
        const long long row = job / chunks; // b rows + p
        const int b = (int)(row / rows), p = (int)(row % rows);
        const int q0 = chunk * span, nq = min(span, cols - q0);
        const int wn = nq * RH; // input columns the run reads, from w0 = q0 RH
        const size_t src = (size_t)b * stride + (size_t)p * RH * W + (size_t)q0 * RH;
        __syncthreads(); // the previous job's tile is read
        // i = cr wn + w with cr = c RH + r (input row r of channel c), stepped without dividing
        // (integer division dominates a pass this light)
        int w = (int)threadIdx.x % wn, cr = (int)threadIdx.x / wn;
        const int wstep = (int)blockDim.x % wn, crstep = (int)blockDim.x / wn;
        for (int i = threadIdx.x; i < C * RH * wn; i += blockDim.x) {
            const int c = s2d ? cr >> 2 : cr, r = s2d ? cr & 3 : 0;
            const size_t e = src + ((size_t)c * H + r) * W + w;
            tile[i] = to_fmt<T>(u8 ? (float)((const uint8_t *)obs)[e] : ((const float *)obs)[e]);
            w += wstep, cr += crstep;
            if (w >= wn) w -= wn, cr++;
        }
        __syncthreads();
        T *dst = xin + ((size_t)row * cols + q0) * per;
        int q = (int)threadIdx.x / per, cc = (int)threadIdx.x % per; // o = q per + cc
        const int qstep = (int)blockDim.x / per, ccstep = (int)blockDim.x % per;
        for (int o = threadIdx.x; o < nq * per; o += blockDim.x) {
            if (s2d) { // cc = (c 4 + dr) 4 + ds
                dst[o] = tile[(cc >> 2) * wn + 4 * q + (cc & 3)];
            } else {
                dst[o] = cc < C ? tile[cc * wn + q] : to_fmt<T>(0.0f);
            }
            q += qstep, cc += ccstep;
            if (cc >= per) cc -= per, q++;
        }
    }
}

// Output positions a first_input_kernel block stages at a time: as many as FIRST_INPUT_SMEM holds
// (at least one: cr_convnet_half_train_fits refuses an input whose one position does not fit).
static int first_input_span(int C, int W, int s2d) {
    const int RH = s2d ? 4 : 1, cols = W / RH;
    const int span = FIRST_INPUT_SMEM / (C * RH * RH);
    return span < cols ? span : cols;
}

// The s2d form of the first conv's input where the observations allow 4-element loads (S
// uint8_t or float; W and the row stride multiples of 4, the rows aligned): each 4 x 4 block's
// row of 4 pixels is 4 consecutive elements of the input and of the output, so thread k moves
// the output's 4-element group k = ((b H4 + p) W4 + q) 4C + c 4 + dr (written in order) from
// x[b][c][4 p + dr][4 q .. 4 q + 3] (read through the cache, its neighbours' groups beside it).
template <typename T, typename S>
static __global__ void s2d_input_kernel(const S *__restrict__ obs, size_t stride,
                                        T *__restrict__ xin, int B, int C, int H, int W) {
    const int W4 = W / 4, C4 = 4 * C, per = (H / 4) * W4 * C4; // groups an image has
    for (int b = blockIdx.y; b < B; b += gridDim.y) {
        const S *img = obs + (size_t)b * stride;
        uint2 *dst = (uint2 *)(xin + (size_t)b * per * 4);
        for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < per; k += gridDim.x * blockDim.x) {
            const int cdr = k % C4, pq = k / C4, q = pq % W4, p = pq / W4;
            const int c = cdr >> 2, dr = cdr & 3;
            const S *src = img + ((size_t)c * H + 4 * p + dr) * W + 4 * q;
            float v[4];
            if (sizeof(S) == 1) {
                const uchar4 u = __ldg((const uchar4 *)src);
                v[0] = u.x, v[1] = u.y, v[2] = u.z, v[3] = u.w;
            } else {
                const float4 f = __ldg((const float4 *)src);
                v[0] = f.x, v[1] = f.y, v[2] = f.z, v[3] = f.w;
            }
            uint2 out;
            T *o = (T *)&out;
#pragma unroll
            for (int e = 0; e < 4; e++) o[e] = to_fmt<T>(v[e]);
            dst[k] = out;
        }
    }
}

// The first conv's input as cuDNN reads it (first_input_kernel's layout) into xin: the s2d
// form by whole groups of 4 where the observations are aligned for it, else through shared
// memory.
template <typename T>
static void first_input(cudarl_ctx *ctx, const void *obs, size_t stride, int u8, T *xin, int B,
                        int C, int H, int W, int Cp, int s2d) {
    cudaStream_t st = cr_stream(ctx);
    const size_t esz = u8 ? 1 : sizeof(float);
    if (s2d && W % 4 == 0 && stride % 4 == 0 && (uintptr_t)obs % (4 * esz) == 0) {
        const int per = (H / 4) * (W / 4) * 4 * C;
        const dim3 grid((unsigned)((per + 255) / 256), (unsigned)(B < 65535 ? B : 65535));
        if (u8)
            s2d_input_kernel<T, uint8_t><<<grid, 256, 0, st>>>((const uint8_t *)obs, stride, xin,
                                                                B, C, H, W);
        else
            s2d_input_kernel<T, float><<<grid, 256, 0, st>>>((const float *)obs, stride, xin, B,
                                                              C, H, W);
        CR_CUDA_LAUNCHED(ctx);
        return;
    }
    const int span = first_input_span(C, W, s2d);
    const int RH = s2d ? 4 : 1;
    const long long jobs = (long long)B * (H / RH) * ((W / RH + span - 1) / span);
    first_input_kernel<T><<<(unsigned)(jobs < (1 << 20) ? jobs : (1 << 20)), 256, 0, st>>>(
        obs, stride, u8, xin, B, C, H, W, Cp, s2d, span);
    CR_CUDA_LAUNCHED(ctx);
}


// A conv's weight gradient from cuDNN's (K, R', S', C') in the format into the float KCRS tensor
// dw (K, C, R, S), divided by 255 where the input was the uint8 bytes of frames scaled by 1/255.
template <typename T>
static __global__ void weight_grad_kernel(const T *__restrict__ dwf, float *__restrict__ dw, int K,
                                          int C, int R, int S, int Cv, int Rv, int Sv, int s2d,
                                          int div255) {
    const size_t n = (size_t)K * C * R * S, step = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        const int s = (int)(i % S), r = (int)((i / S) % R), c = (int)((i / ((size_t)S * R)) % C);
        const int k = (int)(i / ((size_t)S * R * C));
        size_t src;
        if (s2d) {
            const int cv = (c * 4 + (r & 3)) * 4 + (s & 3);
            src = (((size_t)k * Rv + (r >> 2)) * Sv + (s >> 2)) * Cv + cv;
        } else {
            src = (((size_t)k * Rv + r) * Sv + s) * Cv + c;
        }
        const float v = from_fmt(dwf[src]);
        dw[i] = div255 ? __fdiv_rn(v, 255.0f) : v;
    }
}

// ---- the backward --------------------------------------------------------------------------

static const float f_one = 1.0f, f_zero = 0.0f;

// out (K) fp32 = column sums of x (M, K) fp32, in a fixed order.
static void colsum(cudarl_ctx *ctx, const float *x, size_t M, int K, double *part, float *out) {
    cudaStream_t st = cr_stream(ctx);
    const size_t want = (M + 63) / 64;
    const unsigned by = (unsigned)(want < 1 ? 1 : want < SUM_BLOCKS ? want : SUM_BLOCKS);
    colsum_kernel<<<dim3((unsigned)((K + 31) / 32), by), 256, 0, st>>>(x, M, K, part);
    CR_CUDA_LAUNCHED(ctx);
    colsum_done_kernel<<<(unsigned)K, 256, 0, st>>>(part, (int)by, K, out);
    CR_CUDA_LAUNCHED(ctx);
}

// out (K) fp32 = column sums of g (M, K) in the format, g first masked in place by the ReLU of y
// where y is not NULL (colsum8_kernel's bounds: K a multiple of 8, at most 2048).
template <typename T>
static void colsum_masked(cudarl_ctx *ctx, T *g, const T *y, size_t M, int K, double *part,
                          float *out) {
    cudaStream_t st = cr_stream(ctx);
    const size_t want = (M + 255) / 256;
    const unsigned by = (unsigned)(want < 1 ? 1 : want < SUM_BLOCKS ? want : SUM_BLOCKS);
    colsum8_kernel<T><<<dim3(1, by), 256, 0, st>>>(g, y, M, K, part);
    CR_CUDA_LAUNCHED(ctx);
    colsum_done_kernel<<<(unsigned)K, 256, 0, st>>>(part, (int)by, K, out);
    CR_CUDA_LAUNCHED(ctx);
}

// C (m x n, column-major, ldc) fp32 = op(A) op(B), format inputs, fp32 sums.
static void gemm(cudarl_ctx *ctx, cudaDataType_t dt, cublasOperation_t ta, cublasOperation_t tb,
                 int m, int n, int k, const void *A, int lda, const void *Bm, int ldb, float *C,
                 int ldc) {
    CUBLAS_CHECK(cublasGemmEx(cr_impl(ctx)->blas, ta, tb, m, n, k, &f_one, A, dt, lda, Bm, dt,
                              ldb, &f_zero, C, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT));
    CR_CUDA_LAUNCHED(ctx);
}

static int batch_of(const cr_convnet_half_train *t, int B) {
    for (int b = 0; b < t->nbatches; b++)
        if (t->batches[b] == B) return b;
    return -1;
}

template <typename T>
static void backward_as(cudarl_ctx *ctx, const cr_convnet *net, const cr_convnet_half_plan *hp,
                        const cr_convnet_half_train *t, const unsigned char *wb, char *ws,
                        const void *obs, size_t obs_stride, const float *params, float *grads,
                        const float *dout, const float *dvalue, const cr_convnet_cache *c,
                        int B) {
    const cudaDataType_t dt = hp->dtype == CR_DTYPE_F16 ? CUDA_R_16F : CUDA_R_16BF;
    cudaStream_t st = cr_stream(ctx);
    const int bi = batch_of(t, B);
    CUDARL_ASSERT(bi >= 0);
    const cr_convnet_tensor *tn = net->t;
    const cr_convnet_spec *spec = &net->spec;
    const int ppo = spec->heads == CR_CONVNET_PPO, A = spec->num_actions, F = net->features;
    const int G = A + 1, last = net->ntrunk - 1;
    const unsigned TH = CR_CUDA_THREADS;
    double *part = (double *)(ws + t->part_at);
    T *gh = (T *)(ws + t->gh_at);
    void *cws = t->cudnn_bytes ? ws + t->cudnn_at : NULL;
    const T *h = (const T *)c->act[last];

    // the heads: d loss / d features into d[0]; their weight gradients over [dout | dvalue] in
    // the format and the features, their bias gradients column sums
    const int wa_t = ppo ? net->actor_w : net->stage[net->ntrunk].weight;
    const int ba_t = ppo ? net->actor_b : net->stage[net->ntrunk].bias;
    const float *wc = ppo ? params + tn[net->critic_w].offset : NULL;
    const float *dv = ppo ? dvalue : NULL;
    const size_t nBF = (size_t)B * F;
    heads_backward_kernel<T><<<cr_cuda_blocks(nBF, TH), TH, 0, st>>>(
        dout, dv, params + tn[wa_t].offset, wc, c->d[0], gh, B, A, F);
    CR_CUDA_LAUNCHED(ctx);
    if (F < G) {
        heads_g_kernel<T><<<cr_cuda_blocks((size_t)B * G, TH), TH, 0, st>>>(dout, dv, gh, B, A, F);
        CR_CUDA_LAUNCHED(ctx);
    }
    // dWa (A, F) row-major is (F x A) column-major: h (F x B) times the first A rows of gh (G x
    // B, column-major) transposed
    gemm(ctx, dt, CUBLAS_OP_N, CUBLAS_OP_T, F, A, B, h, F, gh, G, grads + tn[wa_t].offset, F);
    colsum(ctx, dout, (size_t)B, A, part, grads + tn[ba_t].offset);
    if (ppo) {
        gemm(ctx, dt, CUBLAS_OP_N, CUBLAS_OP_T, F, 1, B, h, F, gh + A, G,
             grads + tn[net->critic_w].offset, F);
        colsum(ctx, dvalue, (size_t)B, 1, part, grads + tn[net->critic_b].offset);
    }

    // the trunk in reverse; the gradient of stage i's output is in buf[cur]: fp32 rows (B, out)
    // when f32 (from the heads or a linear), else the format, channels-last (a conv's dgrad)
    float *buf[2] = {c->d[0], c->d[1]};
    int cur = 0, f32 = 1;
    for (int i = last; i >= 0; i--) {
        const cr_convnet_stage *s = &net->stage[i];
        const int relu = s->act == CR_CONVNET_RELU;
        float *dw = grads + tn[s->weight].offset, *db = grads + tn[s->bias].offset;
        const void *w = wb + hp->piece[s->weight].dst;
        if (s->op == CR_CONVNET_LINEAR) { // i > 0: the trunk starts with a conv
            float *d = buf[cur];
            T *g = (T *)buf[1 - cur];
            const size_t n = (size_t)B * s->out;
            linear_mask_kernel<T><<<cr_cuda_blocks(n, TH), TH, 0, st>>>(
                d, (const T *)c->act[i], g, n, relu);
            CR_CUDA_LAUNCHED(ctx);
            colsum(ctx, d, (size_t)B, s->out, part, db);
            const T *x = (const T *)c->act[i - 1];
            // dW (out, in) row-major = (in x out) column-major: x (in x B) g^T; dx (B, in) =
            // (in x B) column-major: W (in x out) g (out x B); dx over d (its sums are done)
            gemm(ctx, dt, CUBLAS_OP_N, CUBLAS_OP_T, s->in, s->out, B, x, s->in, g, s->out, dw,
                 s->in);
            gemm(ctx, dt, CUBLAS_OP_N, CUBLAS_OP_N, s->in, B, s->out, w, s->in, g, s->out, d,
                 s->in);
            f32 = 1;
            continue;
        }
        const cr_conv2d_shape *cs = &s->conv;
        const conv_view &v = t->view[i];
        const conv_plan &p = t->plan[i][bi];
        const int PQ = cs->P * cs->Q;
        const size_t M = (size_t)B * PQ;
        T *g;
        if (f32) { // the last conv: fp32 NCHW rows to the format, channels-last, masked
            g = (T *)buf[1 - cur];
            last_conv_grad_kernel<T><<<(unsigned)B, 256, 0, st>>>(buf[cur], (const T *)c->act[i],
                                                                   g, cs->K, PQ, relu);
            CR_CUDA_LAUNCHED(ctx);
            cur = 1 - cur;
        } else { // cuDNN's data gradient, masked in place as it is summed
            g = (T *)buf[cur];
        }
        colsum_masked<T>(ctx, g, relu && !f32 ? (const T *)c->act[i] : NULL, M, cs->K, part, db);
        const void *x = c->act[i > 0 ? i - 1 : 0];
        if (i == 0) { // the observations as cuDNN reads them
            T *xin = (T *)(ws + t->xin_at);
            first_input<T>(ctx, obs, obs_stride, spec->dtype == CR_CONVNET_U8, xin, B, cs->C,
                           cs->H, cs->W, v.C, v.s2d);
            x = xin;
        }
        T *dwf = (T *)(ws + t->dwf_at);
        CUDNN_CHECK(cudnnConvolutionBackwardFilter(t->handle, &f_one, p.x, x, p.dy, g, p.conv,
                                                   CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, cws,
                                                   t->cudnn_bytes, &f_zero, p.w, dwf));
        const size_t nw = (size_t)cs->K * cs->C * cs->R * cs->S;
        const int div255 = i == 0 && spec->dtype == CR_CONVNET_U8 &&
                           spec->scale == CR_CONVNET_SCALE_255;
        weight_grad_kernel<T><<<cr_cuda_blocks(nw, TH), TH, 0, st>>>(
            dwf, dw, cs->K, cs->C, cs->R, cs->S, v.C, v.R, v.S, v.s2d, div255);
        CR_CUDA_LAUNCHED(ctx);
        if (i == 0) break;
        T *dx = (T *)buf[1 - cur];
        CUDNN_CHECK(cudnnConvolutionBackwardData(t->handle, &f_one, p.w, w, p.dy, g, p.conv,
                                                 CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, cws,
                                                 t->cudnn_bytes, &f_zero, p.x, dx));
        cur = 1 - cur, f32 = 0;
    }
}

void cr_convnet_half_backward(cudarl_ctx *ctx, const cr_convnet *net,
                              const cr_convnet_half_plan *hp, const cr_convnet_half_train *t,
                              const void *weights, void *workspace, const void *obs,
                              size_t obs_stride, const float *params, float *grads,
                              const float *dout, const float *dvalue, const cr_convnet_cache *c,
                              int B) {
    char *ws = (char *)round_up((size_t)(uintptr_t)workspace, WS_ALIGN);
    const unsigned char *wb = (const unsigned char *)weights;
    if (hp->dtype == CR_DTYPE_F16)
        backward_as<__half>(ctx, net, hp, t, wb, ws, obs, obs_stride, params, grads, dout,
                            dvalue, c, B);
    else
        backward_as<__nv_bfloat16>(ctx, net, hp, t, wb, ws, obs, obs_stride, params, grads, dout,
                                   dvalue, c, B);
}

#endif
