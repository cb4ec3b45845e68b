// Internals shared by the .cu files of the CUDA backend: the C headers, error checks, the
// context's private state, launch helpers, a deterministic block sum and the entry points the
// backend table (backend_cuda.cu) points at.
#ifndef CUDARL_CUDA_COMMON_CUH
#define CUDARL_CUDA_COMMON_CUH

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

// ops_cpu.h and backend.h have no extern "C" of their own.
extern "C" {
#include "ops/backend.h"
#include "ops/cuda/cuda_backend.h"
}

// ---- errors: a failed CUDA call inside an op is a bug; print it and abort ------------------

[[noreturn]] void cr_cuda_fail(const char *expr, const char *err, const char *file, int line);

#define CUDA_CHECK(expr)                                                                 \
    do {                                                                                 \
        cudaError_t cuda_check_e_ = (expr);                                              \
        if (cuda_check_e_ != cudaSuccess)                                                \
            cr_cuda_fail(#expr, cudaGetErrorString(cuda_check_e_), __FILE__, __LINE__); \
    } while (0)

#define CUBLAS_CHECK(expr)                                                                   \
    do {                                                                                     \
        cublasStatus_t cublas_check_s_ = (expr);                                             \
        if (cublas_check_s_ != CUBLAS_STATUS_SUCCESS)                                        \
            cr_cuda_fail(#expr, cublasGetStatusString(cublas_check_s_), __FILE__, __LINE__); \
    } while (0)

// Checks the launch (kernel, cuBLAS or CUB call) just enqueued on ctx's stream; with
// CUDARL_SYNC_DEBUG=1 also waits for it (except while capturing a graph), so a fault inside a
// kernel is reported at its own launch.
#define CR_CUDA_LAUNCHED(ctx) cr_cuda_after_launch((ctx), __FILE__, __LINE__)
void cr_cuda_after_launch(cudarl_ctx *ctx, const char *file, int line);

// ---- the context's private state ----------------------------------------------------------

// Partial sums of multi-block reductions: at most this many blocks, this many values each.
#define CR_CUDA_MAX_PARTIALS 1024
#define CR_CUDA_PARTIAL_WIDTH 8
// Partial sums of reductions with many values per block (a column per value): the Gaussian
// loss's dlogstd (K per block) and the running statistics (two per column and row chunk).
#define CR_CUDA_WIDE_PARTIALS (1 << 16)
// Instances of ppo_fused.cu's kernel (each with its grid cap in cr_cuda_impl)
#define CR_FUSED_KERNELS 15

// Device scratch of one context: what one op hands from one of its kernels to the next. Ops on
// one stream run one after another, so they share it.
struct cr_cuda_scratch {
    double partial[CR_CUDA_MAX_PARTIALS][CR_CUDA_PARTIAL_WIDTH];
    double adv_mean, adv_denom; // ppo_loss: advantage normalisation
    double clip_coef;           // clip_grad_norm: max_norm / (norm + 1e-6)
    float adam_step;            // adam_step: lr / (1 - b1^t)
    float adam_bc2_sqrt;        // adam_step: sqrt(1 - b2^t)
    unsigned adam_blocks_done;  // adam_step: blocks finished (0 between launches)
    double wide[CR_CUDA_WIDE_PARTIALS]; // gaussian.cu, normalize.cu: partials, many per block
};

struct cr_cuda_impl {
    cublasHandle_t blas;
    void *blas_workspace; // (device)
    size_t blas_workspace_bytes;
    cr_cuda_scratch *scratch; // (device)
    int sync_debug;           // CUDARL_SYNC_DEBUG=1 at init
    int capturing;            // between graph_begin and graph_end
    const char *capture_error; // the first op that cannot be in a graph, met while capturing
    int fused_grid_cap[CR_FUSED_KERNELS]; // ppo_fused.cu: most blocks of each fused kernel
                                          // (occupancy x SMs)
    cudaStream_t side;         // a second stream for ops that fork independent kernels
    cudaEvent_t fork, join;    // (timing disabled) to fork onto `side` and join back
    // the format of the products that go through cr_cuda_sgemm: 0 (fp32 through cublasSgemm,
    // TF32 under CUBLAS_TF32_TENSOR_OP_MATH), or CUDA_R_16BF / CUDA_R_16F on a bf16 or fp16
    // context (cr_cuda_set_gemm_precision): the inputs are rounded into fmt_ws, then cublasGemmEx
    // with fp32 sums
    int gemm_format;
    void *fmt_ws; // (device) both inputs of one product in the format; grows to the largest
    size_t fmt_ws_bytes;
    void *fmt_retired[48]; // outgrown workspaces: queued or captured products still read them
    int n_retired;
};

// Inside a capture, an op that cannot be captured (it waits for the device or reads pageable
// host memory) records itself here and does nothing, so graph_end fails with a status rather
// than the process aborting; returns whether it was refused.
int cr_cuda_refuse_in_capture(cudarl_ctx *ctx, const char *op);

static inline cudaStream_t cr_stream(const cudarl_ctx *ctx) { return (cudaStream_t)ctx->stream; }
static inline cr_cuda_impl *cr_impl(const cudarl_ctx *ctx) { return (cr_cuda_impl *)ctx->impl; }

// C (m, n) = op(A) op(B) with A and B rounded to the context's format (gemm_format), fp32
// sums (cublasGemmEx, CUBLAS_COMPUTE_32F); as cr_cuda_sgemm's arguments (backend_cuda.cu).
void cr_cuda_gemm_in_format(cudarl_ctx *ctx, cublasOperation_t ta, cublasOperation_t tb, int m,
                            int n, int k, const float *A, int lda, const float *B, int ldb,
                            float *C, int ldc);

// C (m, n) = op(A) op(B), fp32 matrices (column-major, cublasSgemm's arguments, alpha 1 and
// beta 0: C is overwritten and not read). cublasSgemm; on a bf16 / fp16 context the inputs are
// rounded to the format first and the product runs on its tensor cores with fp32 sums (the
// trainers' --precision bf16 / fp16 for every layer that goes through here). Not cuBLAS's
// CUBLAS_COMPUTE_32F_FAST_16BF / _16F on the fp32 inputs: those only allow the down-conversion,
// and cuBLAS picks TF32 or fp32 kernels for many shapes.
static inline void cr_cuda_sgemm(cudarl_ctx *ctx, cublasOperation_t ta, cublasOperation_t tb,
                                 int m, int n, int k, const float *A, int lda, const float *B,
                                 int ldb, float *C, int ldc) {
    static const float one = 1.0f, zero = 0.0f;
    cr_cuda_impl *im = cr_impl(ctx);
    if (im->gemm_format) {
        cr_cuda_gemm_in_format(ctx, ta, tb, m, n, k, A, lda, B, ldb, C, ldc);
        return;
    }
    CUBLAS_CHECK(cublasSgemm(im->blas, ta, tb, m, n, k, &one, A, lda, B, ldb, &zero, C, ldc));
    CR_CUDA_LAUNCHED(ctx);
}

// The format's value of v (round to nearest even), or v itself for float.
template <typename T> __device__ __forceinline__ T cr_to_fmt(float v);
template <> __device__ __forceinline__ float cr_to_fmt<float>(float v) { return v; }
template <> __device__ __forceinline__ __half cr_to_fmt<__half>(float v) {
    return __float2half_rn(v);
}
template <> __device__ __forceinline__ __nv_bfloat16 cr_to_fmt<__nv_bfloat16>(float v) {
    return __float2bfloat16_rn(v);
}

// y (n) = x in the format.
template <typename T>
__global__ void cr_to_fmt_kernel(const float *__restrict__ x, T *__restrict__ y, size_t n) {
    const size_t step = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        y[i] = cr_to_fmt<T>(x[i]);
}

// cudaMalloc that counts towards cr_cuda_alloc_count().
cudaError_t cr_cuda_malloc(void **p, size_t bytes);

// ---- launch geometry ----------------------------------------------------------------------

#define CR_CUDA_THREADS 256
// Blocks of a grid-stride loop over n items: enough to fill any GPU, a fixed function of n.
#define CR_CUDA_MAX_BLOCKS 8192u

static inline unsigned cr_cuda_blocks(size_t n, unsigned threads) {
    size_t b = (n + threads - 1) / threads;
    return b < 1 ? 1u : b > CR_CUDA_MAX_BLOCKS ? CR_CUDA_MAX_BLOCKS : (unsigned)b;
}

// ---- deterministic block sum --------------------------------------------------------------

// Sums v[0..K) over the block (THREADS threads, a power of two) by a fixed halving tree in sh
// (K * THREADS doubles of shared memory): the same order on every run. Thread 0 gets the totals
// in v; every thread must call it.
template <int K, int THREADS>
__device__ void cr_block_sum(double (&v)[K], double *sh) {
    const unsigned t = threadIdx.x;
    for (int k = 0; k < K; k++) sh[k * THREADS + t] = v[k];
    __syncthreads();
    for (unsigned s = THREADS / 2; s > 0; s >>= 1) {
        if (t < s)
            for (int k = 0; k < K; k++) sh[k * THREADS + t] += sh[k * THREADS + t + s];
        __syncthreads();
    }
    if (t == 0)
        for (int k = 0; k < K; k++) v[k] = sh[k * THREADS];
    __syncthreads(); // sh may be reused by the caller
}

// Sums v over the 32 lanes of a warp by a fixed butterfly: every lane gets the total, the same
// bits on every run (IEEE addition is commutative, so lanes i and i ^ o add the same pair).
// Every lane of the warp must call it.
__device__ __forceinline__ double cr_warp_sum(double v) {
    for (int o = 16; o > 0; o >>= 1) v = __dadd_rn(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// ---- the ops (backend table in backend_cuda.cu) --------------------------------------------

// memory.cu
cudarl_status cr_cuda_arena_alloc(cudarl_ctx *ctx, cr_arena *a, const cr_plan *p);
// async.cu
cudarl_status cr_cuda_pinned_alloc(cudarl_ctx *ctx, void **p, size_t bytes);
void cr_cuda_pinned_free(cudarl_ctx *ctx, void *p);
void cr_cuda_copy_to_host_async(cudarl_ctx *ctx, void *dst_pinned, const void *src, size_t bytes);
cudarl_status cr_cuda_event_create(cudarl_ctx *ctx, void **event);
void cr_cuda_event_free(cudarl_ctx *ctx, void *event);
void cr_cuda_event_record(cudarl_ctx *ctx, void *event);
int cr_cuda_event_done(cudarl_ctx *ctx, void *event);
void cr_cuda_event_wait(cudarl_ctx *ctx, void *event);
void cr_cuda_arena_free(cudarl_ctx *ctx, cr_arena *a);
void cr_cuda_copy_to_host(cudarl_ctx *ctx, void *dst, const void *src, size_t bytes);
void cr_cuda_copy_from_host(cudarl_ctx *ctx, void *dst, const void *src, size_t bytes);
void cr_cuda_copy(cudarl_ctx *ctx, void *dst, const void *src, size_t bytes);
void cr_cuda_zero(cudarl_ctx *ctx, void *dst, size_t bytes);
void cr_cuda_sync(cudarl_ctx *ctx);
void cr_cuda_gather_rows_many(cudarl_ctx *ctx, const int32_t *idx, int rows, int count,
                              const cr_gather_item *items);
void cr_cuda_keep_rows(cudarl_ctx *ctx, const void *src, const uint8_t *flag, void *dst,
                       int32_t *step, int32_t t, int rows, size_t row_bytes);
void cr_cuda_place_values(cudarl_ctx *ctx, const float *v, int32_t *step, float *out, int rows);
void cr_cuda_gather_rows(cudarl_ctx *ctx, const void *src, const int32_t *idx, void *dst,
                         int rows, size_t row_bytes);
// linear.cu
void cr_cuda_linear_forward(cudarl_ctx *ctx, const float *x, const float *w, const float *b,
                            float *y, int B, int I, int O);
void cr_cuda_linear_tanh_forward(cudarl_ctx *ctx, const float *x, const float *w, const float *b,
                                 float *y, int B, int I, int O);
void cr_cuda_linear_backward(cudarl_ctx *ctx, const float *dy, const float *x, const float *w,
                             float *dx, float *dw, float *db, int B, int I, int O);
// tanh.cu
void cr_cuda_tanh_backward(cudarl_ctx *ctx, const float *y, const float *dy, float *dx, size_t n);
// rng.cu
void cr_cuda_uniform(cudarl_ctx *ctx, cr_rng_stream *s, float *u, int n);
void cr_cuda_permutation(cudarl_ctx *ctx, cr_rng_stream *s, int32_t *perm, int n);
// Moves the stream's offset n words on (after a kernel that drew them itself).
void cr_cuda_rng_advance(cudarl_ctx *ctx, cr_rng_stream *s, uint64_t n);
// categorical.cu
void cr_cuda_categorical_sample(cudarl_ctx *ctx, const float *logits, const float *u,
                                int32_t *action, float *logp, int B, int A);
void cr_cuda_categorical_argmax(cudarl_ctx *ctx, const float *logits, int32_t *action, int B,
                                int A);
// clip_box.cu
void cr_cuda_clip_box(cudarl_ctx *ctx, const float *x, const cr_action_box *box, float *y,
                      int B);
// episodes.cu
void cr_cuda_episodes_record(cudarl_ctx *ctx, const float *reward, const uint8_t *done,
                             double *ep_return, int64_t *ep_length, cr_episode_log *log, int N);
// The episodes that ended at elements i of done (n) with their returns fin_ret (n) and lengths
// fin_len (n) already summed (rows whose done is 0 are not read), pushed to the log in index
// order: what episodes_record does over the steps of a rollout, flattened (T, N) -> (T N).
void cr_cuda_episodes_log_finished(cudarl_ctx *ctx, const uint8_t *done, const double *fin_ret,
                                   const int32_t *fin_len, cr_episode_log *log, int n);
// value_stats.cu
void cr_cuda_value_stats(cudarl_ctx *ctx, const float *values, const float *returns, int n,
                         double *out);
// gae.cu
void cr_cuda_bootstrap_values(cudarl_ctx *ctx, const float *values, const float *final_values,
                              const float *last_values, const uint8_t *done, float *next_values,
                              int T, int N);
void cr_cuda_gae(cudarl_ctx *ctx, const float *rewards, const float *values,
                 const float *next_values, const uint8_t *terminated, const uint8_t *done,
                 float gamma, float lambda, float *adv, float *returns, int T, int N);
// ppo_loss.cu
void cr_cuda_ppo_loss(cudarl_ctx *ctx, const float *logits, const int32_t *action,
                      const float *old_logp, const float *adv, const float *value,
                      const float *old_value, const float *returns, const cr_ppo_loss_params *p,
                      float *dlogits, float *dvalue, cr_ppo_stats_acc *acc, int B, int A);
// scratch->adv_mean, adv_denom = mean and unbiased std + 1e-8 of adv (B) (ppo_loss's first pass)
void cr_cuda_ppo_adv_stats(cudarl_ctx *ctx, const float *adv, int B);
// gaussian.cu
void cr_cuda_gaussian_sample(cudarl_ctx *ctx, const float *mean, const float *logstd,
                             const float *u, float *action, float *logp, int B, int K);
void cr_cuda_ppo_loss_gaussian(cudarl_ctx *ctx, const float *mean, const float *logstd,
                               const float *action, const float *old_logp, const float *adv,
                               const float *value, const float *old_value, const float *returns,
                               const cr_ppo_loss_params *p, float *dmean, float *dlogstd,
                               float *dvalue, cr_ppo_stats_acc *acc, int B, int K);
// normalize.cu
void cr_cuda_running_stats_update(cudarl_ctx *ctx, double *mean, double *var, double *count,
                                  const float *x, int B, int D);
void cr_cuda_normalize_obs(cudarl_ctx *ctx, const double *mean, const double *var,
                           const float *x, float *y, int B, int D, float clip);
void cr_cuda_normalize_reward(cudarl_ctx *ctx, double *mean, double *var, double *count,
                              double *ret, const float *reward, const uint8_t *terminated,
                              float *out, int N, float gamma, float clip);
// ppo_fused.cu
// Sets the fused kernels' shared memory limits and grid caps (im->fused_grid_cap) for a device
// of `sms` SMs; returns 0 when they cannot run there (then the op must not be offered).
int cr_cuda_ppo_fused_setup(cr_cuda_impl *im, int sms);
size_t cr_cuda_ppo_minibatch_scratch_bytes(int B, size_t num_params);
void cr_cuda_ppo_minibatch_grads_gaussian(
    cudarl_ctx *ctx, const cr_mlp_view *actor, const cr_mlp_view *critic, const float *logstd,
    const cr_mlp_view *g_actor, const cr_mlp_view *g_critic, float *g_logstd, const float *obs,
    const float *action, const float *old_logp, const float *adv, const float *old_value,
    const float *returns, const cr_ppo_loss_params *p, cr_ppo_stats_acc *acc, void *scratch,
    int B);
void cr_cuda_ppo_minibatch_grads(cudarl_ctx *ctx, const cr_mlp_view *actor,
                                 const cr_mlp_view *critic, const cr_mlp_view *g_actor,
                                 const cr_mlp_view *g_critic, const float *obs,
                                 const int32_t *action, const float *old_logp, const float *adv,
                                 const float *old_value, const float *returns,
                                 const cr_ppo_loss_params *p, cr_ppo_stats_acc *acc,
                                 void *scratch, int B, int A);
// optim.cu
void cr_cuda_clip_grad_norm(cudarl_ctx *ctx, float *g, size_t n, double max_norm,
                            double *norm_sum);
void cr_cuda_adam_step(cudarl_ctx *ctx, float *p, const float *g, float *m, float *v, size_t n,
                       const float *lr, float b1, float b2, float eps, int64_t *t);
// dqn_ops.cu
void cr_cuda_linear_relu_forward(cudarl_ctx *ctx, const float *x, const float *w, const float *b,
                                 float *y, int B, int I, int O);
void cr_cuda_relu_backward(cudarl_ctx *ctx, const float *y, const float *dy, float *dx, size_t n);
void cr_cuda_dqn_loss(cudarl_ctx *ctx, const float *q, const int32_t *actions,
                      const float *rewards, const uint8_t *terminated, const float *next_q_target,
                      const float *next_q_online, const float *weights, float gamma,
                      int double_dqn, int huber, float *dq, float *td_error,
                      cr_dqn_stats_acc *acc, int B, int A);
void cr_cuda_epsilon_schedule(cudarl_ctx *ctx, int64_t *step, int64_t n, double start_e,
                              double end_e, double duration, float *epsilon);
void cr_cuda_epsilon_greedy(cudarl_ctx *ctx, const float *q, const float *u_explore,
                            const float *u_action, const float *epsilon, int32_t *actions, int B,
                            int A);
void cr_cuda_polyak(cudarl_ctx *ctx, float *target, const float *online, size_t n, double tau);
void cr_cuda_u8_to_float(cudarl_ctx *ctx, const uint8_t *x, float *y, size_t n);

#endif
