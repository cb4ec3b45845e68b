// Convolutional policies on the device: the CUDA twin of convnet.c's forward and backward
// (convnet_cuda.h has the API and its meaning).
//
// Stages as on the CPU: each conv or linear with the activation after it; NCHW activations
// between stages (so a flatten is nothing and the first linear reads the last conv's output as
// its rows); every conv and linear stage and the heads through the backend's op table (conv2d
// plans, one per conv stage and declared batch size, on the engine init chose: ops/conv2d.h;
// the linear ops on cuBLAS); the backward in reverse with two gradient buffers in turn. What is
// left here is the net's own glue: the input's conversion to float, the critic's gradient added
// to the actor's, the caches and the one workspace every stage's op shares.
//
// Mixed GEMM (bf16 and fp16 training handles, cr_convnet_cuda_init_training): conv plans whose
// products take the format (ops/cuda/conv2d_gemm.cu says how). Each conv stage's im2col matrix
// has a room of its own in the workspace (the plan's keep buffer): the backward reads the one
// its forward wrote instead of building it again, unless a forward on another cache (or batch)
// came between (the handle remembers the last forward's cache and batch). Everything else is the
// fp32 engine's, so the mixed handle differs from fp32 only by the rounding of the products'
// inputs (nn/precision.c's conv rows).
//
// IGEMM engine (fp16 and bf16 handles, forward only): convnet_half.cu on the kernels of
// ops/cuda/conv2d_half.cuh; this file makes its plan (convnet_half.cuh) at init and hands it the
// handle's weights, workspace and cache.
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/cuda/cuda_common.cuh"
#include "ops/cuda/tanh_device.cuh"
// convnet.h and convnet_cuda.h have their own extern "C"
#include "nn/convnet_cuda.h"
#include "nn/convnet_half.cuh"
#include "nn/convnet_half_train.cuh"

// Alignment of the workspace's and the caches' pieces (cudaMalloc's); the caller's workspace
// pointer is rounded up inside, its size includes the slack.
#define WS_ALIGN ((size_t)256)

struct cr_convnet_cuda {
    cudarl_ctx *ctx;
    cudaStream_t stream;
    cr_convnet net;
    cr_convnet_engine engine;
    cudarl_precision precision;
    int nbatches, max_batch;
    int batches[CR_CONVNET_CUDA_MAX_BATCHES];
    int mixed; // bf16 or fp16 conv products (cr_convnet_cuda_init_training)
    // conv stages: the op table's plans, plan[stage][batch index] (NULL for linear stages)
    cr_conv2d_plan *plan[CR_CONVNET_MAX_LAYERS + 1][CR_CONVNET_CUDA_MAX_BATCHES];
    // the aligned workspace: each conv stage's keep room (mixed plans: its im2col matrix, kept
    // from the forward for the backward), then the scratch every op shares; the forward whose
    // matrices the rooms hold (its cache's x and batch; host state, in stream order of the
    // enqueues)
    size_t keep_at[CR_CONVNET_MAX_LAYERS + 1], scratch_at;
    const void *cols_of;
    int cols_batch;
    size_t workspace_bytes;
    void *workspace; // the caller's (device)
    // IGEMM engine (fp16, bf16): its plan, and the converted weights (the caller's, device)
    cr_convnet_half_plan half;
    void *weights;
    // IGEMM training handles: the backward's plans; the workspace's pieces (the converted
    // weights, the packed observations of a forward whose rows are not, the forward's and then
    // the backward's scratch); each cache's last forward (its x, as the key: the observations
    // the backward reads again, their stride, the batch)
    cr_convnet_half_train *train;
    size_t weights_at, packed_at, scratch_at_half;
    struct {
        const void *key, *obs;
        size_t stride;
        int B;
    } fwd[8];
    char describe[2048];
};

static int is_half(cudarl_precision p) {
    return p == CUDARL_PRECISION_FP16 || p == CUDARL_PRECISION_BF16;
}

static size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// ---- kernels -------------------------------------------------------------------------------

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

// dh (B, F) += dvalue (B) outer critic_w (F): the critic's input gradient added to the actor's,
// as the CPU does (its dvalue w product, one rounding, then the sum, one rounding).
static __global__ void add_outer_kernel(float *dh, const float *__restrict__ dv,
                                        const float *__restrict__ w, size_t n, unsigned F) {
    const size_t step = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        dh[i] = __fadd_rn(dh[i], __fmul_rn(dv[i / F], w[i % F]));
}

// ---- launches ------------------------------------------------------------------------------

static char *aligned_ws(const cr_convnet_cuda *cn) {
    CUDARL_ASSERT(cn->workspace != NULL); // cr_convnet_cuda_set_workspace before the first call
    return (char *)round_up((size_t)(uintptr_t)cn->workspace, WS_ALIGN);
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
    const cr_conv2d_plan *p = cn->plan[i][bi];
    char *ws = aligned_ws(cn);
    o->conv2d_forward(ctx, p, x, w, b, y, ws + cn->scratch_at,
                      p->keep_bytes ? ws + cn->keep_at[i] : NULL);
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
    const cr_conv2d_plan *p = cn->plan[i][bi];
    char *ws = aligned_ws(cn);
    o->conv2d_backward(ctx, p, x, w, y, dy, dx, dw, db, ws + cn->scratch_at,
                       p->keep_bytes ? ws + cn->keep_at[i] : NULL, cols_kept);
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
        CR_TRY(cr_envvar_check(CR_ENVVAR_CONV_ENGINE));
        *e = cr_envvar_value(CR_ENVVAR_CONV_ENGINE) == 1 ? CR_CONVNET_ENGINE_CUDNN // "cudnn"
                                                         : CR_CONVNET_ENGINE_GEMM;
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

// One conv plan per conv stage and batch size (the op table's, on the handle's engine); the
// workspace: each stage's keep room, for its largest batch, then the largest plan's scratch.
static cudarl_status plan_convs(cr_convnet_cuda *cn) {
    const cr_convnet *net = &cn->net;
    size_t keep = 0, scratch = 0;
    for (int i = 0; i < net->ntrunk; i++) {
        const cr_convnet_stage *st = &net->stage[i];
        if (st->op != CR_CONVNET_CONV) continue;
        size_t room = 0;
        for (int b = 0; b < cn->nbatches; b++) {
            cr_conv2d_desc d;
            memset(&d, 0, sizeof d);
            d.shape = st->conv;
            d.shape.N = cn->batches[b];
            d.act = st->act == CR_CONVNET_RELU   ? CR_CONV2D_RELU
                    : st->act == CR_CONVNET_TANH ? CR_CONV2D_TANH
                                                 : CR_CONV2D_IDENTITY;
            d.products = cn->mixed ? cn->precision : CUDARL_PRECISION_FP32;
            d.engine = cn->engine == CR_CONVNET_ENGINE_CUDNN ? CR_CONV2D_CUDNN : CR_CONV2D_GEMM;
            d.no_dx = i == 0; // the first stage's input is the observation: no gradient
            CR_TRY(cn->ctx->ops->conv2d_plan_init(cn->ctx, &d, &cn->plan[i][b]));
            const cr_conv2d_plan *p = cn->plan[i][b];
            scratch = p->workspace_bytes > scratch ? p->workspace_bytes : scratch;
            room = p->keep_bytes > room ? p->keep_bytes : room;
        }
        cn->keep_at[i] = keep;
        keep += round_up(room, WS_ALIGN);
    }
    cn->scratch_at = keep;
    cn->workspace_bytes = keep + scratch + WS_ALIGN - 1;
    return CUDARL_OK;
}

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
    if (cn->train) describe_add(cn, "; %s", cr_convnet_half_train_describe(cn->train));
    describe_add(cn, "\n");
    for (int i = 0; i < net->ntrunk; i++) {
        const cr_convnet_stage *st = &net->stage[i];
        if (st->op != CR_CONVNET_CONV) continue;
        const cr_conv2d_shape *s = &st->conv;
        describe_add(cn, "  stage %d conv %dx%dx%d -> %dx%dx%d (%dx%d/%d pad %d, %s)\n", i, s->C,
                     s->H, s->W, s->K, s->P, s->Q, s->R, s->S, s->stride, s->pad,
                     cr_convnet_op_name(st->act));
        for (int b = 0; cn->engine == CR_CONVNET_ENGINE_CUDNN && b < cn->nbatches; b++)
            if (cn->plan[i][b]) describe_add(cn, "    %s\n", cn->plan[i][b]->describe);
    }
}

extern "C" void cr_convnet_cuda_free(cr_convnet_cuda *cn) {
    if (!cn) return;
    cr_convnet_half_train_free(cn->train);
    for (int i = 0; i <= CR_CONVNET_MAX_LAYERS; i++)
        for (int b = 0; b < CR_CONVNET_CUDA_MAX_BATCHES; b++)
            cn->ctx->ops->conv2d_plan_free(cn->plan[i][b]);
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

// Refuses a batch list out of range; *max_batch: its largest.
static cudarl_status check_batches(const int *batches, int nbatches, int *max_batch) {
    if (nbatches < 1 || nbatches > CR_CONVNET_CUDA_MAX_BATCHES || !batches)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "convnet on CUDA: %d batch sizes; declare 1 to %d",
                       nbatches, CR_CONVNET_CUDA_MAX_BATCHES);
    *max_batch = 0;
    for (int b = 0; b < nbatches; b++) {
        if (batches[b] < 1)
            return cr_fail(CUDARL_ERR_INVALID_ARG, "convnet on CUDA: batch size %d; must be >= 1",
                           batches[b]);
        *max_batch = batches[b] > *max_batch ? batches[b] : *max_batch;
    }
    return CUDARL_OK;
}

// The handle on a resolved engine; mixed: conv products in the (half) precision's format.
static cudarl_status create(cudarl_ctx *ctx, const cr_convnet *net, const int *batches,
                            int nbatches, int max_batch, cr_convnet_engine engine,
                            cudarl_precision precision, int mixed, int train, int sms,
                            cr_convnet_cuda **out) {
    CR_TRY(check_sizes(net, max_batch));
    cr_convnet_cuda *cn = (cr_convnet_cuda *)calloc(1, sizeof *cn);
    if (!cn) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "convnet on CUDA: out of host memory");
    cn->ctx = ctx;
    cn->stream = cr_stream(ctx);
    cn->net = *net;
    cn->engine = engine;
    cn->precision = precision;
    cn->mixed = mixed;
    cn->max_batch = max_batch;
    for (int b = 0; b < nbatches; b++) // distinct sizes only: one conv plan each
        if (batch_index(cn, batches[b]) < 0) cn->batches[cn->nbatches++] = batches[b];
    if (engine == CR_CONVNET_ENGINE_IGEMM && train) {
        cr_convnet_half_plan_init(net, precision, cn->batches, cn->nbatches, sms, 1, &cn->half);
        cudarl_status s = cr_convnet_half_train_init(ctx, net, &cn->half, cn->batches,
                                                     cn->nbatches, &cn->train);
        if (s != CUDARL_OK) {
            cr_convnet_cuda_free(cn);
            return s;
        }
        // [converted weights][packed observations][the forward's, then the backward's scratch]
        const size_t obs_row = (size_t)net->in_floats * (net->spec.dtype == CR_CONVNET_U8 ? 1 : 4);
        const size_t fwd = cn->half.workspace_bytes;
        const size_t bwd = cr_convnet_half_train_workspace_bytes(cn->train);
        cn->weights_at = 0;
        cn->packed_at = round_up(cn->half.weights_bytes, WS_ALIGN);
        cn->scratch_at_half = cn->packed_at + round_up((size_t)max_batch * obs_row, WS_ALIGN);
        cn->workspace_bytes = cn->scratch_at_half + (fwd > bwd ? fwd : bwd) + WS_ALIGN - 1;
    } else if (engine == CR_CONVNET_ENGINE_IGEMM) {
        cr_convnet_half_plan_init(net, precision, cn->batches, cn->nbatches, sms, 0, &cn->half);
        cn->workspace_bytes = cn->half.workspace_bytes;
    } else {
        cudarl_status s = plan_convs(cn);
        if (s != CUDARL_OK) {
            cr_convnet_cuda_free(cn);
            return s;
        }
    }
    describe(cn);
    *out = cn;
    return CUDARL_OK;
}

extern "C" cudarl_status cr_convnet_cuda_init_precision(cudarl_ctx *ctx, const cr_convnet *net,
                                                        const int *batches, int nbatches,
                                                        cr_convnet_engine engine,
                                                        cudarl_precision precision,
                                                        cr_convnet_cuda **out) {
    CUDARL_ASSERT(ctx && ctx->kind == CUDARL_DEVICE_CUDA && ctx->stream && net && out);
    CUDARL_ASSERT((unsigned)precision < CUDARL_PRECISION_COUNT);
    *out = NULL;
    int max_batch = 0, sms = 0;
    CR_TRY(check_batches(batches, nbatches, &max_batch));
    CR_TRY(resolve_engine(&engine, precision));
    if (is_half(precision)) CR_TRY(check_half_device(ctx, precision, &sms));
    return create(ctx, net, batches, nbatches, max_batch, engine, precision, 0, 0, sms, out);
}

// AUTO's threshold for training on the igemm engine: multiply-adds of a row's convs. Measured on
// the H200 (bench/RESULTS.md, 2026-12-02 third session): the Nature-CNN (7.7M, three convs of 32
// and 64 channels) takes a third of the gemm engine's time per learner step there; minatar-cnn
// (37k, one 3x3 conv of 16 channels over 10x10) ran its PPO recipe's iteration about 15% slower
// under --profile (64 against 56 ms: more, smaller launches for a conv the tensor cores do not
// fill), so it stays on gemm unless asked.
#define IGEMM_AUTO_CONV_MACS 1000000.0

static double conv_macs(const cr_convnet *net) {
    double macs = 0;
    for (int i = 0; i < net->ntrunk; i++) {
        const cr_convnet_stage *st = &net->stage[i];
        if (st->op != CR_CONVNET_CONV) continue;
        const cr_conv2d_shape *c = &st->conv;
        macs += (double)c->K * c->P * c->Q * c->C * c->R * c->S;
    }
    return macs;
}

extern "C" cudarl_status cr_convnet_cuda_init_training(cudarl_ctx *ctx, const cr_convnet *net,
                                                       const int *batches, int nbatches,
                                                       cr_convnet_engine engine,
                                                       cudarl_precision precision,
                                                       cr_convnet_cuda **out) {
    CUDARL_ASSERT((unsigned)precision < CUDARL_PRECISION_COUNT && out);
    if (!is_half(precision))
        return cr_convnet_cuda_init_precision(ctx, net, batches, nbatches, engine, precision, out);
    CUDARL_ASSERT(ctx && ctx->kind == CUDARL_DEVICE_CUDA && ctx->stream && net);
    *out = NULL;
    if (engine == CR_CONVNET_ENGINE_CUDNN)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "convnet on CUDA: %s training runs on the igemm "
                       "engine (implicit GEMM forward, cuDNN gradients) or the gemm engine "
                       "(im2col + cublasGemmEx), not cudnn; ask for engine AUTO, IGEMM or GEMM",
                       cudarl_precision_name(precision));
    int max_batch = 0, sms = 0;
    CR_TRY(check_half_device(ctx, precision, &sms));
    CR_TRY(check_batches(batches, nbatches, &max_batch));
    if (engine == CR_CONVNET_ENGINE_AUTO || engine == CR_CONVNET_ENGINE_IGEMM) {
        // AUTO: igemm where the net fits it (cuDNN built, the shapes its backward takes) and
        // its convs are large enough for the tensor cores to matter (IGEMM_AUTO_CONV_MACS)
        cr_convnet_half_plan probe;
        cr_convnet_half_plan_init(net, precision, batches, nbatches, sms, 1, &probe);
        char why[160];
        const int fits = cr_convnet_half_train_fits(net, &probe, why, sizeof why);
        if (engine == CR_CONVNET_ENGINE_IGEMM && !fits)
            return cr_fail(CUDARL_ERR_UNSUPPORTED, "convnet on CUDA: %s cannot train on the "
                           "igemm engine: %s; use engine AUTO or GEMM", net->spec.name, why);
        if (fits && (engine == CR_CONVNET_ENGINE_IGEMM || conv_macs(net) >= IGEMM_AUTO_CONV_MACS))
            return create(ctx, net, batches, nbatches, max_batch, CR_CONVNET_ENGINE_IGEMM,
                          precision, 0, 1, sms, out);
    }
    return create(ctx, net, batches, nbatches, max_batch, CR_CONVNET_ENGINE_GEMM, precision, 1,
                  0, sms, out);
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
    // a training handle's converted weights are a piece of its workspace
    return cn->engine == CR_CONVNET_ENGINE_IGEMM && !cn->train ? cn->half.weights_bytes : 0;
}

extern "C" void cr_convnet_cuda_set_weights(cr_convnet_cuda *cn, void *weights) {
    CUDARL_ASSERT(cn->engine == CR_CONVNET_ENGINE_IGEMM && !cn->train && ((uintptr_t)weights & 63) == 0);
    cn->weights = weights;
}

extern "C" void cr_convnet_cuda_weights_pack(const cr_convnet_cuda *cn, const float *params,
                                             void *out) {
    CUDARL_ASSERT(cn->engine == CR_CONVNET_ENGINE_IGEMM && !cn->train && params && out);
    cr_convnet_half_pack(&cn->half, params, out);
}

extern "C" void cr_convnet_cuda_weights_update(cudarl_ctx *ctx, const cr_convnet_cuda *cn,
                                               const float *params) {
    CUDARL_ASSERT(cn->engine == CR_CONVNET_ENGINE_IGEMM && !cn->train && cr_stream(ctx) == cn->stream);
    CUDARL_ASSERT(cn->weights != NULL); // cr_convnet_cuda_set_weights first
    cr_convnet_half_update(ctx, &cn->half, params, cn->weights);
}

extern "C" size_t cr_convnet_cuda_half_cache_bytes(const cr_convnet_cuda *cn, int max_rows,
                                                   size_t input_bytes) {
    CUDARL_ASSERT(cn->engine == CR_CONVNET_ENGINE_IGEMM && !cn->train && max_rows >= cn->max_batch);
    cr_convnet_half_cache sizing;
    return cr_convnet_half_cache_carve(&cn->net, &cn->half, NULL, max_rows, NULL, input_bytes,
                                       &sizing);
}

extern "C" void cr_convnet_cuda_half_cache_carve(const cr_convnet_cuda *cn, void *mem,
                                                 int max_rows, void *input, size_t input_bytes,
                                                 cr_convnet_half_cache *c) {
    CUDARL_ASSERT(cn->engine == CR_CONVNET_ENGINE_IGEMM && !cn->train && max_rows >= cn->max_batch &&
                  mem != NULL && ((uintptr_t)mem & 63) == 0 &&
                  (input_bytes == 0 || (input != NULL && ((uintptr_t)input & 63) == 0)));
    cr_convnet_half_cache_carve(&cn->net, &cn->half, (unsigned char *)mem, max_rows,
                                (unsigned char *)input, input_bytes, c);
}

extern "C" void cr_convnet_cuda_half_forward(cudarl_ctx *ctx, const cr_convnet_cuda *cn,
                                             const void *obs, float *out, float *value,
                                             const cr_convnet_half_cache *c, int B) {
    const int ppo = cn->net.spec.heads == CR_CONVNET_PPO;
    CUDARL_ASSERT(cn->engine == CR_CONVNET_ENGINE_IGEMM && !cn->train &&
                  cr_stream(ctx) == cn->stream && batch_index(cn, B) >= 0 &&
                  c->max_rows >= cn->max_batch &&
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

// ---- IGEMM training handles -------------------------------------------------------------

// The forward of a training handle: the weights converted from params (they change between
// calls), the observations packed where their rows are not (the first conv reads whole rows
// from a 16-byte aligned start), the policy runtime's forward into c's float buffers (each
// stage its own), and what the backward will read again remembered for c.
static void half_train_forward(cudarl_ctx *ctx, const cr_convnet_cuda *cn, const float *params,
                               const void *obs, size_t obs_stride, float *out, float *value,
                               const cr_convnet_cache *c, int B) {
    const cr_convnet *net = &cn->net;
    CUDARL_ASSERT(c->max_rows >= cn->max_batch); // split-K partials may use the rows past B
    char *ws = aligned_ws(cn);
    void *weights = ws + cn->weights_at;
    cr_convnet_half_update(ctx, &cn->half, params, weights);
    const size_t esize = net->spec.dtype == CR_CONVNET_U8 ? 1 : sizeof(float);
    const size_t row = (size_t)net->in_floats * esize;
    const void *x = obs;
    if (obs_stride != (size_t)net->in_floats || ((uintptr_t)obs & 15)) {
        CUDA_CHECK(cudaMemcpy2DAsync(ws + cn->packed_at, row, obs, obs_stride * esize, row,
                                     (size_t)B, cudaMemcpyDeviceToDevice, cr_stream(ctx)));
        x = ws + cn->packed_at;
    }
    cr_convnet_half_cache hc;
    memset(&hc, 0, sizeof hc);
    hc.max_rows = c->max_rows;
    for (int i = 0; i < net->ntrunk; i++) hc.act[i] = c->act[i];
    cr_convnet_half_forward(ctx, net, &cn->half, weights, ws + cn->scratch_at_half, x, out,
                            value, &hc, B);
    // host state, in stream order of the enqueues (forwards and backwards on one handle are
    // enqueued from one thread)
    cr_convnet_cuda *w = (cr_convnet_cuda *)cn;
    int slot = -1;
    for (int k = 0; k < 8 && slot < 0; k++)
        if (w->fwd[k].key == c->x || !w->fwd[k].key) slot = k;
    CUDARL_ASSERT(slot >= 0); // more than 8 caches on one handle
    w->fwd[slot].key = c->x, w->fwd[slot].obs = obs, w->fwd[slot].stride = obs_stride;
    w->fwd[slot].B = B;
}

static void half_train_backward(cudarl_ctx *ctx, const cr_convnet_cuda *cn, const float *params,
                                float *grads, const float *dout, const float *dvalue,
                                const cr_convnet_cache *c, int B) {
    int slot = -1;
    for (int k = 0; k < 8 && slot < 0; k++)
        if (cn->fwd[k].key == c->x) slot = k;
    // the backward of a forward on this cache, at this batch
    CUDARL_ASSERT(slot >= 0 && cn->fwd[slot].B == B);
    char *ws = aligned_ws(cn);
    cr_convnet_half_backward(ctx, &cn->net, &cn->half, cn->train, ws + cn->weights_at,
                             ws + cn->scratch_at_half, cn->fwd[slot].obs, cn->fwd[slot].stride,
                             params, grads, dout, dvalue, c, B);
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
    if (cn->train) {
        half_train_forward(ctx, cn, params, obs, obs_stride, out, value, c, B);
        return;
    }
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
    if (cn->train) {
        half_train_backward(ctx, cn, params, grads, dout, dvalue, c, B);
        return;
    }
    CUDARL_ASSERT(cn->engine != CR_CONVNET_ENGINE_IGEMM); // inference handles run forwards only
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
