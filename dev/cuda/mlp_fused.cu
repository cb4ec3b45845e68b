// nvcc -O3 -arch=sm_90 -lineinfo -lcublas dev/cuda/mlp_fused.cu -o /tmp/mlp_fused
//
// Kernel lab: one MLP's training step (Linear(4,64)-tanh-Linear(64,64)-tanh-Linear(64,O)) on a
// minibatch of B rows, forward and forward + backward, as the backend does it now (ref) and as
// one fused kernel (v1, v1b, v2), checked against each other and timed. dev/cuda/mlp_fused.md
// has the design, the floors and the predictions; dev/cuda/run_mlp_fused.sh builds and runs it.
//
//   ref  src/ops/cuda/linear.cu and tanh.cu as they are: per layer a cuBLAS SGEMM (fp32,
//        CUBLAS_DEFAULT_MATH), a bias (+ tanh) epilogue kernel; backward per layer dx and dw as
//        SGEMMs, db as a two-stage column sum, tanh' as its own kernel. The 64-wide activations
//        cross global memory 23 times a row (~6 KB a row per MLP): bound by memory traffic.
//   v1   one persistent kernel: a block stages the weights in shared memory once, then loops
//        over tiles of 128 rows doing the whole forward, the per-row loss gradient (a functor;
//        here out - target) and the whole backward with the activations in shared memory and
//        registers; weight gradients accumulate in registers across tiles, each block writes one
//        row of partial sums, and a second kernel adds the rows in a fixed order (no atomics).
//        Global traffic is x, target and out (32 B a row at O = 2): bound by fp32 issue (FFMA
//        for the three 64 x 64 products, ~37 instructions per tanh).
//   v1b  v1 with the tanh's division stripped of its slow-path guard: same bits, fewer
//        instructions, and the tanh of a thread can overlap.
//   v2   v1b with the three 64 x 64 products on tensor cores in 3xTF32 (fp32-accurate).
//
// Usage: mlp_fused [--seed N] [--reps N] [--cpu-max-rows N] [--B N]... [--variants v1,v1b,v2]
// (default B = 262144 and 16384, O = 1 and 2, all variants). Exits 1 if a check fails, 2 on a
// CUDA error.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#define CUDA_CHECK(expr)                                                                  \
    do {                                                                                  \
        cudaError_t e_ = (expr);                                                          \
        if (e_ != cudaSuccess) {                                                          \
            fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorString(e_),      \
                    __FILE__, __LINE__, #expr);                                           \
            exit(2);                                                                      \
        }                                                                                 \
    } while (0)
#define CUBLAS_CHECK(expr)                                                                \
    do {                                                                                  \
        cublasStatus_t s_ = (expr);                                                       \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                \
            fprintf(stderr, "cuBLAS error %s at %s:%d: %s\n", cublasGetStatusString(s_), \
                    __FILE__, __LINE__, #expr);                                           \
            exit(2);                                                                      \
        }                                                                                 \
    } while (0)
#define LAUNCHED() CUDA_CHECK(cudaGetLastError())

// ---- the MLP's shape and its parameter layout (src/nn/actor_critic.c, one MLP view) --------

constexpr int I = 4;  // inputs (CartPole's observation)
constexpr int H = 64; // hidden width

// Offsets of the six tensors in a parameter (or gradient) buffer of P floats: w0 (H, I), b0 (H),
// w1 (H, H), b1 (H), w2 (O, H), b2 (O), PyTorch's row-major (out, in).
constexpr int P_W1 = 0, P_B1 = P_W1 + H * I, P_W2 = P_B1 + H, P_B2 = P_W2 + H * H,
              P_W3 = P_B2 + H;
__host__ __device__ constexpr int p_b3(int O) { return P_W3 + O * H; }
__host__ __device__ constexpr int num_params(int O) { return p_b3(O) + O; }
// Row stride of the per-block partial gradients: P rounded up to 32 floats (128 B).
__host__ __device__ constexpr int partial_stride(int O) { return (num_params(O) + 31) / 32 * 32; }

// ---- the project's tanh (copied from src/ops/cuda/tanh_device.cuh, bit for bit cr_tanhf) ----

__device__ __forceinline__ float cr_exp_small_device(float t) {
    const float magic = 12582912.0f; // 1.5 * 2^23: adding it rounds to an integer
    float kf = fmaf(t, 1.44269504088896341f, magic);
    uint32_t kbits = __float_as_uint(kf);
    kf = __fsub_rn(kf, magic);
    float r = fmaf(kf, -0.693359375f, t);
    r = fmaf(kf, 2.12194440e-4f, r);
    float p = 1.9875691500e-4f;
    p = fmaf(p, r, 1.3981999507e-3f);
    p = fmaf(p, r, 8.3334519073e-3f);
    p = fmaf(p, r, 4.1665795894e-2f);
    p = fmaf(p, r, 1.6666665459e-1f);
    p = fmaf(p, r, 5.0000001201e-1f);
    p = __fadd_rn(fmaf(p, __fmul_rn(r, r), r), 1.0f);
    uint32_t sbits = (kbits - 0x4B400000u + 127u) << 23; // 2^n from n in kf's low bits
    return __fmul_rn(p, __uint_as_float(sbits));
}

__device__ __forceinline__ float cr_tanhf_device(float x) {
    float ax = fabsf(x);
    float z = __fmul_rn(x, x);
    float q = fmaf(-5.70498872745e-3f, z, 2.06390887954e-2f);
    q = fmaf(q, z, -5.37397155531e-2f);
    q = fmaf(q, z, 1.33314422036e-1f);
    q = fmaf(q, z, -3.33332819422e-1f);
    float small = fmaf(__fmul_rn(q, z), ax, ax);
    float e = cr_exp_small_device(__fmul_rn(2.0f, ax > 9.5f ? 9.5f : ax));
    float big = __fsub_rn(1.0f, __fdiv_rn(2.0f, __fadd_rn(e, 1.0f)));
    return copysignf(ax < 0.625f ? small : big, x);
}

// dx = dy * (1 - y^2), as src/ops/cuda/tanh.cu (no FMA contraction).
__device__ __forceinline__ float tanh_grad(float y, float dy) {
    return __fmul_rn(dy, __fsub_rn(1.0f, __fmul_rn(y, y)));
}

// ---- the loss: dout (O) of one row from its output (O) --------------------------------------

// The lab's loss, 0.5 * |out - target|^2 per row: dout = out - target. In PPO the same place
// takes the clipped-surrogate / entropy gradient of the logits (actor) or the value loss's
// gradient (critic); both depend on one row only, given the minibatch's advantage statistics.
template <int O>
struct SquaredLoss {
    const float *target; // (B, O)
    __device__ void operator()(int row, const float (&out)[O], float (&dout)[O]) const {
#pragma unroll
        for (int o = 0; o < O; o++) dout[o] = __fsub_rn(out[o], target[(size_t)row * O + o]);
    }
};

__global__ void squared_loss_kernel(const float *out, const float *target, float *dout, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dout[i] = __fsub_rn(out[i], target[i]);
}

// =============================================================================================
// ref: the backend's current path (src/ops/cuda/linear.cu, tanh.cu), replicated
// =============================================================================================

namespace ref {

constexpr unsigned THREADS = 256;
constexpr unsigned MAX_BLOCKS = 8192;
constexpr int DB_COLS = 32, DB_ROWS = 16;
constexpr int MAX_PARTIALS = 1024, PARTIAL_WIDTH = 8; // the context's double scratch

static unsigned blocks_for(size_t n) {
    size_t b = (n + THREADS - 1) / THREADS;
    return b < 1 ? 1u : b > MAX_BLOCKS ? MAX_BLOCKS : (unsigned)b;
}

static const float one = 1.0f, zero = 0.0f;

// y[r, o] = act(y[r, o] + b[o]) for y (B, O), n = B * O.
template <bool TANH>
__global__ void bias_act_kernel(float *y, const float *__restrict__ b, size_t n, int O) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = __fadd_rn(y[i], b[i % (size_t)O]);
        y[i] = TANH ? cr_tanhf_device(v) : v;
    }
}

__global__ void tanh_backward_kernel(const float *y, const float *dy, float *dx, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dx[i] = tanh_grad(y[i], dy[i]);
}

// db[o] = sum_r dy[r, o] for dy (B, O): row chunks into double partials, then chunks in order.
__global__ void column_sum_partial_kernel(const float *__restrict__ dy, double *partial, int B,
                                          int O, int rows_per_chunk) {
    __shared__ double sh[DB_ROWS][DB_COLS + 1];
    int o = blockIdx.x * DB_COLS + threadIdx.x;
    int begin = blockIdx.y * rows_per_chunk;
    int end = min(B, begin + rows_per_chunk);
    double s = 0.0;
    if (o < O)
        for (int r = begin + threadIdx.y; r < end; r += DB_ROWS) s += dy[(size_t)r * O + o];
    sh[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    for (int h = DB_ROWS / 2; h > 0; h >>= 1) {
        if (threadIdx.y < h) sh[threadIdx.y][threadIdx.x] += sh[threadIdx.y + h][threadIdx.x];
        __syncthreads();
    }
    if (threadIdx.y == 0 && o < O) partial[(size_t)blockIdx.y * O + o] = sh[0][threadIdx.x];
}

__global__ void column_sum_finish_kernel(const double *partial, float *__restrict__ db, int O,
                                         int chunks) {
    int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= O) return;
    double s = 0.0;
    for (int c = 0; c < chunks; c++) s += partial[(size_t)c * O + o];
    db[o] = (float)s;
}

static int column_sum_chunks(int B, int O) {
    int cap = (MAX_PARTIALS * PARTIAL_WIDTH) / (O > 0 ? O : 1);
    int chunks = (B + 255) / 256;
    if (chunks > 128) chunks = 128;
    if (chunks > cap) chunks = cap;
    return chunks < 1 ? 1 : chunks;
}

struct Ctx {
    cublasHandle_t blas;
    cudaStream_t stream;
    double *partial; // (MAX_PARTIALS, PARTIAL_WIDTH) (device)
};

// y (B, O) = act(x (B, In) w^T + b), as cr_cuda_linear[_tanh]_forward.
template <bool TANH>
static void linear_forward(const Ctx &c, const float *x, const float *w, const float *b, float *y,
                           int B, int In, int O) {
    size_t n = (size_t)B * O;
    CUBLAS_CHECK(cublasSgemm(c.blas, CUBLAS_OP_T, CUBLAS_OP_N, O, B, In, &one, w, In, x, In, &zero,
                             y, O));
    bias_act_kernel<TANH><<<blocks_for(n), THREADS, 0, c.stream>>>(y, b, n, O);
    LAUNCHED();
}

// dx (B, In) = dy w, dw (O, In) = dy^T x, db (O) = column sums of dy, as cr_cuda_linear_backward.
static void linear_backward(const Ctx &c, const float *dy, const float *x, const float *w,
                            float *dx, float *dw, float *db, int B, int In, int O) {
    if (dx)
        CUBLAS_CHECK(cublasSgemm(c.blas, CUBLAS_OP_N, CUBLAS_OP_N, In, B, O, &one, w, In, dy, O,
                                 &zero, dx, In));
    CUBLAS_CHECK(cublasSgemm(c.blas, CUBLAS_OP_N, CUBLAS_OP_T, In, O, B, &one, x, In, dy, O,
                             &zero, dw, In));
    int chunks = column_sum_chunks(B, O), rows = (B + chunks - 1) / chunks;
    dim3 threads(DB_COLS, DB_ROWS), grid((O + DB_COLS - 1) / DB_COLS, chunks);
    column_sum_partial_kernel<<<grid, threads, 0, c.stream>>>(dy, c.partial, B, O, rows);
    LAUNCHED();
    column_sum_finish_kernel<<<(O + 255) / 256, 256, 0, c.stream>>>(c.partial, db, O, chunks);
    LAUNCHED();
}

// Activations kept for the backward (B, H) each, and dout (B, O) (device).
struct Cache {
    float *h1, *h2, *d1, *d2, *dout;
};

// out (B, O) = mlp(x (B, I)), as cr_mlp_forward.
static void mlp_forward(const Ctx &c, const float *params, const float *x, float *out,
                        const Cache &k, int B, int O) {
    linear_forward<true>(c, x, params + P_W1, params + P_B1, k.h1, B, I, H);
    linear_forward<true>(c, k.h1, params + P_W2, params + P_B2, k.h2, B, H, H);
    linear_forward<false>(c, k.h2, params + P_W3, params + p_b3(O), out, B, H, O);
}

// Forward, dout = out - target, backward into grad (P), as cr_mlp_forward + loss +
// cr_mlp_backward.
static void mlp_train_step(const Ctx &c, const float *params, const float *x, const float *target,
                           float *out, float *grad, const Cache &k, int B, int O) {
    mlp_forward(c, params, x, out, k, B, O);
    size_t n = (size_t)B * O;
    squared_loss_kernel<<<blocks_for(n), THREADS, 0, c.stream>>>(out, target, k.dout, n);
    LAUNCHED();
    const float *w = params;
    linear_backward(c, k.dout, k.h2, w + P_W3, k.d2, grad + P_W3, grad + p_b3(O), B, H, O);
    tanh_backward_kernel<<<blocks_for((size_t)B * H), THREADS, 0, c.stream>>>(k.h2, k.d2, k.d2,
                                                                             (size_t)B * H);
    LAUNCHED();
    linear_backward(c, k.d2, k.h1, w + P_W2, k.d1, grad + P_W2, grad + P_B2, B, H, H);
    tanh_backward_kernel<<<blocks_for((size_t)B * H), THREADS, 0, c.stream>>>(k.h1, k.d1, k.d1,
                                                                             (size_t)B * H);
    LAUNCHED();
    linear_backward(c, k.d1, x, w + P_W1, nullptr, grad + P_W1, grad + P_B1, B, I, H);
}

} // namespace ref

// =============================================================================================
// fused: one persistent kernel per training step (v1, v1b, v2)
// =============================================================================================
//
// Block: 256 threads (8 warps), tiles of R = 128 rows. Activations are kept feature-major in
// shared memory (hT[j][r], row stride LD floats, padded so that the accesses below spread over
// the banks). Per tile, with TRAIN:
//   1. layer 1: thread (rg, cg) = (tid / 8, tid % 8) owns rows 4rg..4rg+3 x columns 8cg..8cg+7:
//      h1 = tanh(x w0^T + b0) -> h1T. x comes straight from global memory (16 B a row).
//   2. GEMM a: pre2 (R, 64) = h1 w1^T. Epilogue on the same 4 x 8 tile: h2 = tanh(pre2 + b1);
//      out = h2 w2^T + b2 (8-lane shuffle sum over the column groups); dout = loss(out);
//      dW3 += dout^T h2, db3 += dout; d2 = (dout w2) * (1 - h2^2) -> d2T; db2 += d2. h2 never
//      leaves registers; dW3, db2, db3 are per-thread sums until the end.
//   3. GEMM b: dW2 (64, 64) += d2^T h1 over the tile's rows, into 16 accumulators per thread
//      that live for the whole kernel.
//   4. GEMM c: dh1 (R, 64) = d2 w1, then d1 = dh1 * (1 - h1^2) written over h1T in place (each
//      thread reads and writes only its own elements; GEMM c itself reads only d2T and w1).
//   5. dW1 (64, 4) += d1^T x and db1 += column sums of d1: thread (k, i) = (tid / 4, tid % 4)
//      owns dW1[k][i] (and db1[k] when i = 0), over the tile's rows from d1T and xT.
// Five barriers per tile (six in v2). Forward only: steps 1 and 2 up to out.
// Rows past B get x = 0 and dout = 0, so they add nothing to any gradient.
//
// The variants differ in the three 64-wide GEMMs and in the tanh:
//   v1  (V = 1) fp32 FFMA register tiles: GEMM a and c 4 rows x 8 columns a thread (32 FFMA
//       per 3 LDS.128 per k); GEMM b thread (jg, kg) = (tid / 16, tid % 16) owns dW2 rows
//       jg + 16a, columns kg + 16b (16 FFMA per 8 LDS.128 per 4 rows). tanh: tanh_device.cuh.
//   v1b (V = 2) v1 with a tanh whose one division skips nvcc's slow-path guard (FCHK, branch,
//       call): same bits for every float (the lab checks all 2^32), and the 32 tanh of a
//       thread can be interleaved instead of each sitting between convergence barriers.
//   v2  (V = 3) v1b with the GEMMs on tensor cores: mma.sync m16n8k8 TF32 with the 3xTF32
//       split (a = big + small, a b ~ big*big + big*small + small*big), which keeps fp32
//       accuracy at 3 MMAs per product. GEMM a and c: warp w owns rows 16w..16w+15 x all 64
//       columns; w1 is staged once per block in fragment order (one LDS.64 per fragment).
//       GEMM b: warp w owns dW2 rows 16(w/2).. x columns 32(w%2)..; its k (row) index is
//       permuted within each 8 so that a thread's two values are adjacent (LDS.64). GEMM a's
//       result goes through d2T's space so that the v1 epilogue (and its thread tile) is kept.
namespace fused {

constexpr int THREADS = 256;
constexpr int R = 128; // rows per tile

constexpr const char *variant_name(int V) { return V == 1 ? "v1" : V == 2 ? "v1b" : "v2"; }

// Shared memory (floats) of variant V. The first P_B3 + O floats mirror the parameter buffer
// except w1's slot (WA); TRAIN adds WC, d2T and xT. WA / WC hold w1 as GEMM a / GEMM c read it:
// V 1, 2: WA = w1^T (k, j), WC = w1 (j, k); V 3: the two fragment orders (frag_index).
template <int O, bool TRAIN, int V>
struct Smem {
    // Row stride of hT / d2T: R + 4 puts GEMM b's 16 rows of a warp (stride 4 LD) on distinct
    // bank groups; R + 8 puts v2's fragment loads (rows t, columns g) on distinct banks.
    static constexpr int LD = V == 3 ? R + 8 : R + 4;
    static constexpr bool STAGE = TRAIN || V == 3; // d2T present (v2 stages GEMM a through it)
    static constexpr int W1 = P_W1, B1 = P_B1, WA = P_W2, B2 = P_B2, W3 = P_W3, B3 = p_b3(O);
    static constexpr int WC = B3 + 4;                        // TRAIN only
    static constexpr int H1T = WC + (TRAIN ? H * H : 0);     // (64, LD): h1, then d1
    static constexpr int D2T = H1T + H * LD;                 // (64, LD): d2 (v2: pre2 first)
    static constexpr int XT = D2T + (STAGE ? H * LD : 0);    // (4, LD): x, TRAIN only
    static constexpr int FLOATS = XT + (TRAIN ? I * LD : 0);
    static constexpr size_t BYTES = (size_t)FLOATS * sizeof(float);
    // End-of-kernel staging for the sums over the 32 row groups, in d2T's space:
    // db2 (32, 64), dW3 (O, 32, 64), db3 (32, O).
    static constexpr int RED = D2T, RED_DB3 = RED + (1 + O) * 32 * H;
    static_assert(!TRAIN || RED_DB3 + 32 * O <= XT, "staging must fit in d2T");
    static_assert(WC % 4 == 0 && H1T % 4 == 0 && D2T % 4 == 0 && XT % 4 == 0 && LD % 4 == 0,
                  "float4 offsets");
};

__device__ __forceinline__ float4 ld4(const float *p) {
    return *reinterpret_cast<const float4 *>(p);
}
__device__ __forceinline__ float2 ld2(const float *p) {
    return *reinterpret_cast<const float2 *>(p);
}
__device__ __forceinline__ void st4(float *p, float a, float b, float c, float d) {
    *reinterpret_cast<float4 *>(p) = make_float4(a, b, c, d);
}

// ---- the tanh of v1b and v2 -----------------------------------------------------------------

// 2 / d for d in [2, e^19 + 1] (tanh's range): the fast path of nvcc's IEEE division
// (__fdiv_rn: MUFU.RCP, two FFMA refinements, one FFMA correction) without the FCHK test that
// sends operands near the ends of the exponent range to a slow-path call. No such operand
// reaches it here, so the bits are those of __fdiv_rn(2.0f, d); tanh_exhaustive_check holds
// cr_tanhf_fast_device equal to cr_tanhf_device for all 2^32 inputs.
__device__ __forceinline__ float two_over(float d) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));
    float e = fmaf(-d, r, 1.0f);
    r = fmaf(r, e, r);
    float q = __fmul_rn(r, 2.0f);
    float rem = fmaf(-d, q, 2.0f);
    return fmaf(r, rem, q);
}

// cr_tanhf_device with two_over in place of __fdiv_rn (everything else the same).
__device__ __forceinline__ float cr_tanhf_fast_device(float x) {
    float ax = fabsf(x);
    float z = __fmul_rn(x, x);
    float q = fmaf(-5.70498872745e-3f, z, 2.06390887954e-2f);
    q = fmaf(q, z, -5.37397155531e-2f);
    q = fmaf(q, z, 1.33314422036e-1f);
    q = fmaf(q, z, -3.33332819422e-1f);
    float small = fmaf(__fmul_rn(q, z), ax, ax);
    float e = cr_exp_small_device(__fmul_rn(2.0f, ax > 9.5f ? 9.5f : ax));
    float big = __fsub_rn(1.0f, two_over(__fadd_rn(e, 1.0f)));
    return copysignf(ax < 0.625f ? small : big, x);
}

template <int V>
__device__ __forceinline__ float act(float x) {
    return V == 1 ? cr_tanhf_device(x) : cr_tanhf_fast_device(x);
}

// Counts the floats x (all 2^32 bit patterns) where the two tanh differ (NaN = NaN).
__global__ void tanh_exhaustive_check(unsigned long long *mismatches, unsigned *first) {
    unsigned long long bad = 0;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (1ull << 32); i += stride) {
        float x = __uint_as_float((unsigned)i);
        float a = cr_tanhf_device(x), b = cr_tanhf_fast_device(x);
        if (__float_as_uint(a) != __float_as_uint(b) && !(a != a && b != b)) {
            bad++;
            atomicMin(first, (unsigned)i);
        }
    }
    if (bad) atomicAdd(mismatches, bad);
}

// ---- staging the weights --------------------------------------------------------------------

// Position of w1[n][k] (V 3, GEMM a) or w1[k][n] (GEMM c) in the fragment order: for k-step
// ks = k / 8, n-tile nt = n / 8 and lane (g, t) = (n % 8, k % 4), the pair {k % 8 < 4, >= 4}
// sits at ((ks * 8 + nt) * 32 + lane) * 2 + e, e = (k % 8) / 4: one LDS.64 per fragment.
__device__ __forceinline__ int frag_index(int n, int k) {
    return (((k >> 3) * 8 + (n >> 3)) * 32 + (n & 7) * 4 + (k & 3)) * 2 + ((k >> 2) & 1);
}

// Stage the parameters (P floats, global) into shared memory: w1 as GEMM a (and c) read it.
template <int O, bool TRAIN, int V>
__device__ void load_weights(float *sm, const float *__restrict__ params) {
    using L = Smem<O, TRAIN, V>;
    for (int i = threadIdx.x; i < num_params(O); i += THREADS) {
        float v = params[i];
        int q = i - P_W2, j = q >> 6, k = q & (H - 1); // w1[j][k]
        if (q >= 0 && q < H * H) {
            if (V == 3) {
                sm[L::WA + frag_index(j, k)] = v;            // GEMM a: B[k][n = j]
                if (TRAIN) sm[L::WC + frag_index(k, j)] = v; // GEMM c: B[k = j][n = k]
            } else {
                sm[L::WA + k * H + j] = v;
                if (TRAIN) sm[L::WC + q] = v;
            }
        } else {
            sm[i] = v;
        }
    }
}

// ---- step 1 ---------------------------------------------------------------------------------

// h1T[j][4rg + a] = tanh(x[row0 + 4rg + a] . w0[j] + b0[j]) for j = 8cg .. 8cg + 7; with
// TRAIN, the cg = 0 threads also store their 4 rows of x into xT (I, LD).
template <int O, bool TRAIN, int V>
__device__ __forceinline__ void layer1_tile(float *sm, const float *__restrict__ x, int row0,
                                            int B, int rg, int cg) {
    using L = Smem<O, TRAIN, V>;
    float xr[4][I];
#pragma unroll
    for (int a = 0; a < 4; a++) {
        int row = row0 + 4 * rg + a;
        float4 v = row < B ? __ldg(reinterpret_cast<const float4 *>(x) + row)
                           : make_float4(0.f, 0.f, 0.f, 0.f);
        xr[a][0] = v.x, xr[a][1] = v.y, xr[a][2] = v.z, xr[a][3] = v.w;
    }
    if (TRAIN && cg == 0)
#pragma unroll
        for (int i = 0; i < I; i++)
            st4(sm + L::XT + i * L::LD + 4 * rg, xr[0][i], xr[1][i], xr[2][i], xr[3][i]);
#pragma unroll
    for (int c = 0; c < 8; c++) {
        int j = 8 * cg + c;
        float4 w = ld4(sm + L::W1 + I * j);
        float bj = sm[L::B1 + j], h[4];
#pragma unroll
        for (int a = 0; a < 4; a++) {
            float s = __fmul_rn(xr[a][0], w.x);
            s = fmaf(xr[a][1], w.y, s);
            s = fmaf(xr[a][2], w.z, s);
            s = fmaf(xr[a][3], w.w, s);
            h[a] = act<V>(__fadd_rn(s, bj));
        }
        st4(sm + L::H1T + j * L::LD + 4 * rg, h[0], h[1], h[2], h[3]);
    }
}

// ---- v1: FFMA register tiles ----------------------------------------------------------------

// acc[a][c] = sum_k aT[k][4rg + a] * w[k][8cg + c] for aT (64, LD) feature-major and w (64, 64):
// an (R, 64) x (64, 64) product, 4 rows x 8 columns a thread.
template <int LD>
__device__ __forceinline__ void gemm_rows_ffma(const float *aT, const float *w, int rg, int cg,
                                               float (&acc)[4][8]) {
#pragma unroll
    for (int a = 0; a < 4; a++)
#pragma unroll
        for (int c = 0; c < 8; c++) acc[a][c] = 0.0f;
    const float *ap = aT + 4 * rg, *wp = w + 8 * cg;
#pragma unroll 8
    for (int k = 0; k < H; k++) {
        float4 av = ld4(ap + k * LD), w0 = ld4(wp + k * H), w1 = ld4(wp + k * H + 4);
        float A[4] = {av.x, av.y, av.z, av.w};
        float W[8] = {w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w};
#pragma unroll
        for (int a = 0; a < 4; a++)
#pragma unroll
            for (int c = 0; c < 8; c++) acc[a][c] = fmaf(A[a], W[c], acc[a][c]);
    }
}

// acc[a][b] += sum_r dT[jg + 16a][r] * hT[kg + 16b][r] over the tile's R rows: dW2 += d2^T h1.
template <int LD>
__device__ __forceinline__ void gemm_dw_ffma(const float *dT, const float *hT, int jg, int kg,
                                             float (&acc)[4][4]) {
#pragma unroll 2
    for (int r = 0; r < R; r += 4) {
        float4 d[4], h[4];
#pragma unroll
        for (int a = 0; a < 4; a++) d[a] = ld4(dT + (jg + 16 * a) * LD + r);
#pragma unroll
        for (int b = 0; b < 4; b++) h[b] = ld4(hT + (kg + 16 * b) * LD + r);
#pragma unroll
        for (int a = 0; a < 4; a++)
#pragma unroll
            for (int b = 0; b < 4; b++) {
                float s = acc[a][b];
                s = fmaf(d[a].x, h[b].x, s);
                s = fmaf(d[a].y, h[b].y, s);
                s = fmaf(d[a].z, h[b].z, s);
                s = fmaf(d[a].w, h[b].w, s);
                acc[a][b] = s;
            }
    }
}

// ---- v2: 3xTF32 tensor-core fragments -------------------------------------------------------
// m16n8k8 TF32 fragments, lane = 4g + t: A (16 x 8) a0 = A[g][t], a1 = A[g + 8][t],
// a2 = A[g][t + 4], a3 = A[g + 8][t + 4]; B (8 x 8) b0 = B[t][g], b1 = B[t + 4][g];
// C (16 x 8) c0 = C[g][2t], c1 = C[g][2t + 1], c2 = C[g + 8][2t], c3 = C[g + 8][2t + 1].

// x = big + small: big = x rounded to TF32 (10 mantissa bits; ties away from zero, by adding
// half an ulp to the bits and masking; no NaN / overflow handling, which cvt.rna.tf32 spends
// three more instructions on), small = x - big (exact, |small| <= 2^-11 |x|); the tensor core
// reads small's top 19 bits.
__device__ __forceinline__ void split_tf32(float x, uint32_t &big, uint32_t &small) {
    big = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
    small = __float_as_uint(__fsub_rn(x, __uint_as_float(big)));
}

__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4],
                                         const uint32_t (&b)[2]) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// d += a b in 3xTF32 from the split operands: the two small cross terms first, then big * big.
__device__ __forceinline__ void mma_3xtf32(float (&d)[4], const uint32_t (&ab)[4],
                                           const uint32_t (&as)[4], const uint32_t (&bb)[2],
                                           const uint32_t (&bs)[2]) {
    mma_tf32(d, as, bb);
    mma_tf32(d, ab, bs);
    mma_tf32(d, ab, bb);
}

// acc[nt] = C[16w .. 16w + 15][8nt .. 8nt + 7] (fragment order) of C (R, 64) = A (R, 64) B
// (64, 64), A given feature-major as aT[k][r] (64, LD), B in fragment order (frag_index).
template <int LD>
__device__ __forceinline__ void gemm_rows_mma(const float *aT, const float *bf, int w, int lane,
                                              float (&acc)[8][4]) {
    const int g = lane >> 2, t = lane & 3, r = 16 * w + g;
#pragma unroll
    for (int nt = 0; nt < 8; nt++)
#pragma unroll
        for (int i = 0; i < 4; i++) acc[nt][i] = 0.0f;
#pragma unroll 1
    for (int ks = 0; ks < H / 8; ks++) {
        const float *p = aT + (8 * ks + t) * LD + r;
        float a[4] = {p[0], p[8], p[4 * LD], p[4 * LD + 8]};
        uint32_t ab[4], as[4];
#pragma unroll
        for (int i = 0; i < 4; i++) split_tf32(a[i], ab[i], as[i]);
#pragma unroll
        for (int nt = 0; nt < 8; nt++) {
            float2 bv = ld2(bf + ((ks * 8 + nt) * 32 + lane) * 2);
            uint32_t bb[2], bs[2];
            split_tf32(bv.x, bb[0], bs[0]);
            split_tf32(bv.y, bb[1], bs[1]);
            mma_3xtf32(acc[nt], ab, as, bb, bs);
        }
    }
}

// acc[q] += fragment (m-tile w / 2, n-tile 4 (w % 2) + q) of dW2 = d2^T h1 over the tile's R
// rows (K = r). Within each k-step of 8 rows, fragment index t takes row 2t and t + 4 takes
// row 2t + 1 (any fixed permutation of K is the same sum), so each pair is one LDS.64.
template <int LD>
__device__ __forceinline__ void gemm_dw_mma(const float *dT, const float *hT, int w, int lane,
                                            float (&acc)[4][4]) {
    const int g = lane >> 2, t = lane & 3, j = 16 * (w >> 1) + g, k0 = 32 * (w & 1) + g;
#pragma unroll 2
    for (int r = 0; r < R; r += 8) {
        float2 lo = ld2(dT + j * LD + r + 2 * t), hi = ld2(dT + (j + 8) * LD + r + 2 * t);
        float a[4] = {lo.x, hi.x, lo.y, hi.y};
        uint32_t ab[4], as[4];
#pragma unroll
        for (int i = 0; i < 4; i++) split_tf32(a[i], ab[i], as[i]);
#pragma unroll
        for (int q = 0; q < 4; q++) {
            float2 bv = ld2(hT + (k0 + 8 * q) * LD + r + 2 * t);
            uint32_t bb[2], bs[2];
            split_tf32(bv.x, bb[0], bs[0]);
            split_tf32(bv.y, bb[1], bs[1]);
            mma_3xtf32(acc[q], ab, as, bb, bs);
        }
    }
}

// ---- the kernel -----------------------------------------------------------------------------

// Forward (and with TRAIN the backward) of the MLP at params (P) over x (B, I); out (B, O) if
// non-null; with TRAIN, block b writes its partial gradients to partial[b * partial_stride(O)].
// Grid: persistent, at most one block per tile; dynamic shared memory Smem<O, TRAIN, V>::BYTES.
template <int O, bool TRAIN, int V, class Loss>
__global__ void __launch_bounds__(THREADS, TRAIN || V == 3 ? 2 : 3)
mlp_kernel(const float *__restrict__ params, const float *__restrict__ x, Loss loss,
           float *__restrict__ out, float *__restrict__ partial, int B) {
    using L = Smem<O, TRAIN, V>;
    constexpr int LD = L::LD;
    extern __shared__ float4 smem4[];
    float *sm = reinterpret_cast<float *>(smem4);
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int rg = tid >> 3, cg = tid & 7;  // steps 1, 2 (v1: 4): rows 4rg.., columns 8cg..
    const int jg = tid >> 4, kg = tid & 15; // step 3 (v1): dW2 rows jg + 16a, columns kg + 16b
    const int wk = tid >> 2, wi = tid & 3;  // step 5: dW1[wk][wi]

    float dW2acc[4][4] = {}, dW3acc[O][8] = {}, db2acc[8] = {}, db3acc[O] = {};
    float dW1acc = 0.0f, db1acc = 0.0f;

    load_weights<O, TRAIN, V>(sm, params);
    __syncthreads();

    const int tiles = (B + R - 1) / R;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const int row0 = tile * R;
        layer1_tile<O, TRAIN, V>(sm, x, row0, B, rg, cg);
        __syncthreads();

        // Step 2: h2 = tanh(h1 w1^T + b1) and out = h2 w2^T + b2 for this thread's 4 x 8 tile.
        float h2[4][8];
        if constexpr (V == 3) {
            float acc[8][4];
            gemm_rows_mma<LD>(sm + L::H1T, sm + L::WA, warp, lane, acc);
            const int g = lane >> 2, t = lane & 3;
            float *s = sm + L::D2T + 16 * warp + g; // pre2 (feature-major) through d2T's space
#pragma unroll
            for (int nt = 0; nt < 8; nt++) {
                float *c = s + (8 * nt + 2 * t) * LD;
                c[0] = acc[nt][0], c[LD] = acc[nt][1], c[8] = acc[nt][2], c[LD + 8] = acc[nt][3];
            }
            __syncthreads();
#pragma unroll
            for (int c = 0; c < 8; c++) {
                float4 v = ld4(sm + L::D2T + (8 * cg + c) * LD + 4 * rg);
                h2[0][c] = v.x, h2[1][c] = v.y, h2[2][c] = v.z, h2[3][c] = v.w;
            }
        } else {
            gemm_rows_ffma<LD>(sm + L::H1T, sm + L::WA, rg, cg, h2);
        }
#pragma unroll
        for (int c = 0; c < 8; c++) {
            float bj = sm[L::B2 + 8 * cg + c];
#pragma unroll
            for (int a = 0; a < 4; a++) h2[a][c] = act<V>(__fadd_rn(h2[a][c], bj));
        }
        float ov[4][O];
#pragma unroll
        for (int o = 0; o < O; o++) {
            float4 wa = ld4(sm + L::W3 + o * H + 8 * cg), wb = ld4(sm + L::W3 + o * H + 8 * cg + 4);
            float w[8] = {wa.x, wa.y, wa.z, wa.w, wb.x, wb.y, wb.z, wb.w};
            float bo = sm[L::B3 + o];
#pragma unroll
            for (int a = 0; a < 4; a++) {
                float s = __fmul_rn(h2[a][0], w[0]);
#pragma unroll
                for (int c = 1; c < 8; c++) s = fmaf(h2[a][c], w[c], s);
                // Sum over the 8 column groups (lanes 8q .. 8q + 7): a butterfly, so every lane
                // gets the same bits (each step adds the same two values in either order).
#pragma unroll
                for (int m = 1; m < 8; m <<= 1)
                    s = __fadd_rn(s, __shfl_xor_sync(0xffffffffu, s, m));
                ov[a][o] = __fadd_rn(s, bo);
            }
        }
        float dout[4][O];
#pragma unroll
        for (int a = 0; a < 4; a++) {
            int row = row0 + 4 * rg + a;
            if (row < B) {
                if (out && cg == 0)
#pragma unroll
                    for (int o = 0; o < O; o++) out[(size_t)row * O + o] = ov[a][o];
                if (TRAIN) loss(row, ov[a], dout[a]);
            } else {
#pragma unroll
                for (int o = 0; o < O; o++) dout[a][o] = 0.0f;
            }
        }
        if constexpr (!TRAIN) {
            __syncthreads(); // h1T (and v2's staging) are rewritten by the next tile
        } else {
#pragma unroll
            for (int a = 0; a < 4; a++)
#pragma unroll
                for (int o = 0; o < O; o++) db3acc[o] = __fadd_rn(db3acc[o], dout[a][o]);
#pragma unroll
            for (int c = 0; c < 8; c++) {
                int j = 8 * cg + c;
                float d2[4];
#pragma unroll
                for (int a = 0; a < 4; a++) {
                    float g = __fmul_rn(dout[a][0], sm[L::W3 + j]);
#pragma unroll
                    for (int o = 1; o < O; o++) g = fmaf(dout[a][o], sm[L::W3 + o * H + j], g);
                    d2[a] = tanh_grad(h2[a][c], g);
#pragma unroll
                    for (int o = 0; o < O; o++)
                        dW3acc[o][c] = fmaf(dout[a][o], h2[a][c], dW3acc[o][c]);
                    db2acc[c] = __fadd_rn(db2acc[c], d2[a]);
                }
                st4(sm + L::D2T + j * LD + 4 * rg, d2[0], d2[1], d2[2], d2[3]);
            }
            __syncthreads();

            // Step 3: dW2 += d2^T h1.
            if constexpr (V == 3)
                gemm_dw_mma<LD>(sm + L::D2T, sm + L::H1T, warp, lane, dW2acc);
            else
                gemm_dw_ffma<LD>(sm + L::D2T, sm + L::H1T, jg, kg, dW2acc);
            __syncthreads();

            // Step 4: d1 = (d2 w1) * (1 - h1^2), over h1T in place.
            if constexpr (V == 3) {
                float dh[8][4];
                gemm_rows_mma<LD>(sm + L::D2T, sm + L::WC, warp, lane, dh);
                const int g = lane >> 2, t = lane & 3;
                float *s = sm + L::H1T + 16 * warp + g;
#pragma unroll
                for (int nt = 0; nt < 8; nt++) {
                    float *c = s + (8 * nt + 2 * t) * LD;
                    c[0] = tanh_grad(c[0], dh[nt][0]);
                    c[LD] = tanh_grad(c[LD], dh[nt][1]);
                    c[8] = tanh_grad(c[8], dh[nt][2]);
                    c[LD + 8] = tanh_grad(c[LD + 8], dh[nt][3]);
                }
            } else {
                float dh[4][8];
                gemm_rows_ffma<LD>(sm + L::D2T, sm + L::WC, rg, cg, dh);
#pragma unroll
                for (int c = 0; c < 8; c++) {
                    float *p = sm + L::H1T + (8 * cg + c) * LD + 4 * rg;
                    float4 h = ld4(p);
                    st4(p, tanh_grad(h.x, dh[0][c]), tanh_grad(h.y, dh[1][c]),
                        tanh_grad(h.z, dh[2][c]), tanh_grad(h.w, dh[3][c]));
                }
            }
            __syncthreads();

            // Step 5: dW1[wk][wi] += sum_r d1[r][wk] x[r][wi]; db1[wk] += sum_r d1[r][wk].
            {
                const float *dp = sm + L::H1T + wk * LD, *xp = sm + L::XT + wi * LD;
#pragma unroll 4
                for (int r = 0; r < R; r += 4) {
                    float4 d = ld4(dp + r), xv = ld4(xp + r);
                    dW1acc = fmaf(d.x, xv.x, dW1acc);
                    dW1acc = fmaf(d.y, xv.y, dW1acc);
                    dW1acc = fmaf(d.z, xv.z, dW1acc);
                    dW1acc = fmaf(d.w, xv.w, dW1acc);
                    if (wi == 0)
                        db1acc = __fadd_rn(
                            __fadd_rn(__fadd_rn(__fadd_rn(db1acc, d.x), d.y), d.z), d.w);
                }
            }
            __syncthreads(); // h1T, d2T and xT are rewritten by the next tile
        }
    }
    if constexpr (TRAIN) {
        // This block's partial gradients. dW2, dW1, db1 have one owner each; db2, dW3 and db3
        // are held per row group and summed here over rg = 0 .. 31 in order (d2T is free now).
        float *red = sm + L::RED;
#pragma unroll
        for (int c = 0; c < 8; c++) {
            red[rg * H + 8 * cg + c] = db2acc[c];
#pragma unroll
            for (int o = 0; o < O; o++) red[(1 + o) * 32 * H + rg * H + 8 * cg + c] = dW3acc[o][c];
        }
        if (cg == 0)
#pragma unroll
            for (int o = 0; o < O; o++) sm[L::RED_DB3 + rg * O + o] = db3acc[o];
        __syncthreads();
        float *p = partial + (size_t)blockIdx.x * partial_stride(O);
        if constexpr (V == 3) {
            const int g = lane >> 2, t = lane & 3, j = 16 * (warp >> 1) + g;
#pragma unroll
            for (int q = 0; q < 4; q++) {
                int k = 32 * (warp & 1) + 8 * q + 2 * t;
                p[P_W2 + j * H + k] = dW2acc[q][0];
                p[P_W2 + j * H + k + 1] = dW2acc[q][1];
                p[P_W2 + (j + 8) * H + k] = dW2acc[q][2];
                p[P_W2 + (j + 8) * H + k + 1] = dW2acc[q][3];
            }
        } else {
#pragma unroll
            for (int a = 0; a < 4; a++)
#pragma unroll
                for (int b = 0; b < 4; b++)
                    p[P_W2 + (jg + 16 * a) * H + kg + 16 * b] = dW2acc[a][b];
        }
        p[P_W1 + wk * I + wi] = dW1acc;
        if (wi == 0) p[P_B1 + wk] = db1acc;
        for (int q = tid; q < (1 + O) * H; q += THREADS) { // q < H: db2[q]; else dW3[q/H - 1][q%H]
            float s = 0.0f;
            for (int g = 0; g < 32; g++) s = __fadd_rn(s, red[(q / H) * 32 * H + g * H + q % H]);
            p[q < H ? P_B2 + q : P_W3 + q - H] = s;
        }
        if (tid < O) {
            float s = 0.0f;
            for (int g = 0; g < 32; g++) s = __fadd_rn(s, sm[L::RED_DB3 + g * O + tid]);
            p[p_b3(O) + tid] = s;
        }
    }
}

// grad[q] = sum over blocks g of partial[g][q], q < P: 32 parameters a block, 8 warps each
// summing every 8th block row (g = warp, warp + 8, ...), then the 8 sums in warp order.
// A fixed order for a given G, so repeated runs give the same bits.
__global__ void reduce_partials_kernel(const float *__restrict__ partial, float *grad, int G,
                                       int P, int stride) {
    __shared__ float sh[8][33];
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, q = blockIdx.x * 32 + lane;
    float s = 0.0f;
    if (q < P)
        for (int g = w; g < G; g += 8) s = __fadd_rn(s, partial[(size_t)g * stride + q]);
    sh[w][lane] = s;
    __syncthreads();
    if (w == 0 && q < P) {
        float t = sh[0][lane];
        for (int k = 1; k < 8; k++) t = __fadd_rn(t, sh[k][lane]);
        grad[q] = t;
    }
}

// Launch geometry of one kernel: blocks per SM that fit, and the persistent grid for B rows.
struct Plan {
    int blocks_per_sm, grid;
};

template <int O, bool TRAIN, int V>
static Plan plan(int B, int sms) {
    auto *k = mlp_kernel<O, TRAIN, V, SquaredLoss<O>>;
    size_t bytes = Smem<O, TRAIN, V>::BYTES;
    CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
    Plan p;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&p.blocks_per_sm, k, THREADS, bytes));
    int tiles = (B + R - 1) / R;
    p.grid = std::min(tiles, std::max(1, p.blocks_per_sm) * sms);
    return p;
}

// out (B, O) = mlp(x (B, I)).
template <int O, int V>
static void forward(const Plan &pl, cudaStream_t st, const float *params, const float *x,
                    float *out, int B) {
    mlp_kernel<O, false, V, SquaredLoss<O>><<<pl.grid, THREADS, Smem<O, false, V>::BYTES, st>>>(
        params, x, SquaredLoss<O>{nullptr}, out, nullptr, B);
    LAUNCHED();
}

// out (B, O) = mlp(x), grad (P) = gradient of the squared loss against target (B, O).
// partial: (pl.grid, partial_stride(O)) scratch (device).
template <int O, int V>
static void train_step(const Plan &pl, cudaStream_t st, const float *params, const float *x,
                       const float *target, float *out, float *grad, float *partial, int B) {
    mlp_kernel<O, true, V, SquaredLoss<O>><<<pl.grid, THREADS, Smem<O, true, V>::BYTES, st>>>(
        params, x, SquaredLoss<O>{target}, out, partial, B);
    LAUNCHED();
    reduce_partials_kernel<<<(num_params(O) + 31) / 32, 256, 0, st>>>(
        partial, grad, pl.grid, num_params(O), partial_stride(O));
    LAUNCHED();
}

} // namespace fused

// =============================================================================================
// harness
// =============================================================================================

// splitmix64: the harness's own RNG (host), uniform floats in [lo, hi).
struct Rng {
    uint64_t s;
    uint64_t next() {
        uint64_t z = (s += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    float uniform(float lo, float hi) { return lo + (hi - lo) * (float)((next() >> 40) * 0x1p-24); }
};

// Random parameters (P): weights U(-a, a) with the orthogonal init's row norms (gain sqrt 2
// hidden, 1 out), biases U(-0.1, 0.1) (non-zero, so they are tested). With x ~ U(-2, 2) the
// pre-activations cover both branches of the tanh (|v| < 0.625 and above).
static void init_params(Rng &rng, float *p, int O) {
    auto fill = [&](int off, int n, float a) {
        for (int i = 0; i < n; i++) p[off + i] = rng.uniform(-a, a);
    };
    fill(P_W1, H * I, sqrtf(3.0f) * sqrtf(2.0f) / sqrtf((float)I));
    fill(P_B1, H, 0.1f);
    fill(P_W2, H * H, sqrtf(3.0f) * sqrtf(2.0f) / sqrtf((float)H));
    fill(P_B2, H, 0.1f);
    fill(P_W3, O * H, sqrtf(3.0f) / sqrtf((float)H));
    fill(p_b3(O), O, 0.1f);
}

// The MLP and its squared-loss gradients in double on the host: out (B, O), grad (P).
static void cpu_train_step(const float *prm, const float *x, const float *target, int B, int O,
                           double *out, double *grad) {
    std::vector<double> h1(H), h2(H), g2(H), g1(H);
    std::fill(grad, grad + num_params(O), 0.0);
    const float *w0 = prm + P_W1, *b0 = prm + P_B1, *w1 = prm + P_W2, *b1 = prm + P_B2,
                *w2 = prm + P_W3, *b2 = prm + p_b3(O);
    for (int r = 0; r < B; r++) {
        const float *xr = x + (size_t)r * I;
        for (int j = 0; j < H; j++) {
            double s = b0[j];
            for (int i = 0; i < I; i++) s += (double)w0[j * I + i] * xr[i];
            h1[j] = tanh(s);
        }
        for (int j = 0; j < H; j++) {
            double s = b1[j];
            for (int k = 0; k < H; k++) s += (double)w1[j * H + k] * h1[k];
            h2[j] = tanh(s);
        }
        double d[8];
        for (int o = 0; o < O; o++) {
            double s = b2[o];
            for (int j = 0; j < H; j++) s += (double)w2[o * H + j] * h2[j];
            out[(size_t)r * O + o] = s;
            d[o] = s - target[(size_t)r * O + o];
        }
        for (int j = 0; j < H; j++) {
            double g = 0;
            for (int o = 0; o < O; o++) {
                g += d[o] * w2[o * H + j];
                grad[P_W3 + o * H + j] += d[o] * h2[j];
            }
            g2[j] = g * (1 - h2[j] * h2[j]);
        }
        for (int o = 0; o < O; o++) grad[p_b3(O) + o] += d[o];
        for (int k = 0; k < H; k++) g1[k] = 0;
        for (int j = 0; j < H; j++) {
            grad[P_B2 + j] += g2[j];
            for (int k = 0; k < H; k++) {
                grad[P_W2 + j * H + k] += g2[j] * h1[k];
                g1[k] += g2[j] * w1[j * H + k];
            }
        }
        for (int k = 0; k < H; k++) {
            double g = g1[k] * (1 - h1[k] * h1[k]);
            grad[P_B1 + k] += g;
            for (int i = 0; i < I; i++) grad[P_W1 + k * I + i] += g * xr[i];
        }
    }
}

// |a - b| / |b| (2-norms) over n values; NaN anywhere in a gives NaN.
template <class T>
static double rel_err(const float *a, const T *b, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - (double)b[i];
        num += d * d;
        den += (double)b[i] * (double)b[i];
    }
    return sqrt(num) / (den > 0 ? sqrt(den) : 1.0);
}

static bool g_failed = false;

// Prints the relative error of each tensor of grad (P) against want and of the whole vector;
// a tensor at or above tol fails the run unless `info`.
template <class T>
static void check_grads(const char *label, const float *grad, const T *want, int O, double tol,
                        bool info) {
    struct Tensor {
        const char *name;
        int off, n;
    } ts[] = {{"w0", P_W1, H * I}, {"b0", P_B1, H},     {"w1", P_W2, H * H},
              {"b1", P_B2, H},     {"w2", P_W3, O * H}, {"b2", p_b3(O), O}};
    double worst = 0;
    printf("    %-24s", label);
    for (const Tensor &t : ts) {
        double e = rel_err(grad + t.off, want + t.off, t.n);
        printf(" %s %.1e", t.name, e);
        worst = std::max(worst, e == e ? e : INFINITY);
    }
    bool ok = worst < tol;
    printf(" | all %.1e  max %s %.0e %s\n", rel_err(grad, want, num_params(O)), ok ? "<" : ">=",
           tol, ok ? "ok" : info ? "(above)" : "FAIL");
    if (!ok && !info) g_failed = true;
}

static void check(const char *label, double err, double tol) {
    bool ok = err < tol;
    printf("    %-24s %.2e %s %.0e %s\n", label, err, ok ? "<" : ">=", tol, ok ? "ok" : "FAIL");
    if (!ok) g_failed = true;
}

// Median of reps timed runs (after 3 warm-up runs) of fn on stream st, in microseconds.
template <class F>
static double time_us(cudaStream_t st, int reps, F fn) {
    cudaEvent_t e0, e1;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    for (int i = 0; i < 3; i++) fn();
    CUDA_CHECK(cudaStreamSynchronize(st));
    std::vector<double> t;
    for (int i = 0; i < reps; i++) {
        CUDA_CHECK(cudaEventRecord(e0, st));
        fn();
        CUDA_CHECK(cudaEventRecord(e1, st));
        CUDA_CHECK(cudaEventSynchronize(e1));
        float ms;
        CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(ms * 1e3);
    }
    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

struct Options {
    uint64_t seed = 1;
    int reps = 20;
    long cpu_max_rows = 16384; // the fp64 host reference only up to this B (it is slow)
    bool variant[4] = {false, true, true, true}; // index V: v1, v1b, v2
    std::vector<int> batches;
};

struct Device {
    int sms;
    cudaStream_t stream;
    ref::Ctx ref;
};

constexpr double PEAK_FLOPS = 67e12;  // H200 fp32 FFMA, dense (132 SMs x 128 x 2 x 1.98 GHz)
constexpr double PEAK_BYTES = 4.8e12; // H200 HBM3e

// One timed row of the table.
struct Row {
    const char *variant, *pass;
    double us, flops, bytes, ref_us;
};

// The buffers and inputs of one (B, O) case (device), and the reference results (host).
template <int O>
struct Case {
    int B;
    float *params, *x, *target, *out_ref, *out, *grad_ref, *grad, *partial; // (device)
    ref::Cache cache;
    std::vector<float> h_params, h_x, h_target, r_out, r_grad;
    std::vector<double> c_out, c_grad; // fp64 host reference, when B <= cpu_max_rows
};

// Checks variant V against ref (and fp64) and times it; appends its rows.
template <int O, int V>
static void run_variant(const Device &dev, const Options &opt, Case<O> &c, double ref_f,
                        double ref_t, std::vector<Row> &rows) {
    const int B = c.B, P = num_params(O);
    const size_t nBO = (size_t)B * O;
    const cudaStream_t st = dev.stream;
    const char *name = fused::variant_name(V);
    fused::Plan pf = fused::plan<O, false, V>(B, dev.sms), pt = fused::plan<O, true, V>(B, dev.sms);
    auto poison = [&](float *p, size_t n) { CUDA_CHECK(cudaMemsetAsync(p, 0xFF, n * 4, st)); };
    auto fetch = [&](const float *p, size_t n) {
        std::vector<float> h(n);
        CUDA_CHECK(cudaStreamSynchronize(st));
        CUDA_CHECK(cudaMemcpy(h.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost));
        return h;
    };
    printf("  %s: forward %d blocks (%d/SM, %zu B smem), train %d blocks (%d/SM, %zu B smem)\n",
           name, pf.grid, pf.blocks_per_sm, fused::Smem<O, false, V>::BYTES, pt.grid,
           pt.blocks_per_sm, fused::Smem<O, true, V>::BYTES);

    poison(c.out, nBO);
    fused::forward<O, V>(pf, st, c.params, c.x, c.out, B);
    std::vector<float> f_out = fetch(c.out, nBO);
    poison(c.out, nBO);
    poison(c.grad, P);
    poison(c.partial, (size_t)pt.grid * partial_stride(O));
    fused::train_step<O, V>(pt, st, c.params, c.x, c.target, c.out, c.grad, c.partial, B);
    std::vector<float> t_out = fetch(c.out, nBO), t_grad = fetch(c.grad, P);
    poison(c.grad, P);
    fused::train_step<O, V>(pt, st, c.params, c.x, c.target, c.out, c.grad, c.partial, B);
    std::vector<float> t_grad2 = fetch(c.grad, P);

    char label[64];
    snprintf(label, sizeof label, "%s forward out vs ref", name);
    check(label, rel_err(f_out.data(), c.r_out.data(), nBO), 1e-5);
    snprintf(label, sizeof label, "%s train out vs ref", name);
    check(label, rel_err(t_out.data(), c.r_out.data(), nBO), 1e-5);
    snprintf(label, sizeof label, "%s grads vs ref", name);
    check_grads(label, t_grad.data(), c.r_grad.data(), O, 1e-4, false);
    bool same = memcmp(t_grad.data(), t_grad2.data(), P * sizeof(float)) == 0;
    printf("    %-24s %s\n", "  run to run", same ? "bitwise equal ok" : "DIFFER FAIL");
    if (!same) g_failed = true;
    if (!c.c_grad.empty()) {
        printf("    %-24s %.1e (ref %.1e)\n", "  out vs fp64",
               rel_err(t_out.data(), c.c_out.data(), nBO),
               rel_err(c.r_out.data(), c.c_out.data(), nBO));
        check_grads("  grads vs fp64", t_grad.data(), c.c_grad.data(), O, 1e-4, true);
    }

    const double fwd_flops = 2.0 * B * (I * H + H * H + H * O);
    const double train_flops = 2.0 * B * (2 * I * H + 3 * H * H + 3 * H * O);
    const double fwd_bytes = 4.0 * ((double)B * (I + O) + (double)pf.grid * P);
    const double train_bytes =
        4.0 * ((double)B * (I + 2 * O) + (double)pt.grid * (P + 2 * partial_stride(O)) + P);
    double tf = time_us(st, opt.reps,
                        [&] { fused::forward<O, V>(pf, st, c.params, c.x, c.out, B); });
    double tt = time_us(st, opt.reps, [&] {
        fused::train_step<O, V>(pt, st, c.params, c.x, c.target, c.out, c.grad, c.partial, B);
    });
    rows.push_back({name, "fwd", tf, fwd_flops, fwd_bytes, ref_f});
    rows.push_back({name, "fwd+bwd", tt, train_flops, train_bytes, ref_t});
}

// One (B, O) case: inputs, the reference, every selected variant, then the table.
template <int O>
static void run_case(const Device &dev, const Options &opt, int B) {
    const int P = num_params(O);
    const cudaStream_t st = dev.stream;
    Case<O> c;
    c.B = B;
    Rng rng{opt.seed * 1000003u + (uint64_t)B * 7u + O};
    c.h_params.resize(P), c.h_x.resize((size_t)B * I), c.h_target.resize((size_t)B * O);
    init_params(rng, c.h_params.data(), O);
    for (float &v : c.h_x) v = rng.uniform(-2.0f, 2.0f);
    for (float &v : c.h_target) v = rng.uniform(-1.0f, 1.0f);

    // Device buffers: one allocation, carved in 128-byte pieces. The partial rows are sized for
    // the largest grid any variant can get (at most one block per tile).
    const size_t nBH = (size_t)B * H, nBO = (size_t)B * O, tiles = (B + fused::R - 1) / fused::R;
    const size_t sizes[] = {(size_t)P, (size_t)B * I, nBO, nBO, nBO, (size_t)P, (size_t)P,
                            nBH, nBH, nBH, nBH, nBO, tiles * partial_stride(O)};
    size_t floats = 0;
    for (size_t n : sizes) floats += (n + 31) / 32 * 32;
    float *mem, *cur;
    CUDA_CHECK(cudaMalloc(&mem, floats * sizeof(float)));
    cur = mem;
    int next = 0;
    auto carve = [&]() { float *p = cur; cur += (sizes[next++] + 31) / 32 * 32; return p; };
    c.params = carve(), c.x = carve(), c.target = carve(), c.out_ref = carve(), c.out = carve();
    c.grad_ref = carve(), c.grad = carve();
    c.cache.h1 = carve(), c.cache.h2 = carve(), c.cache.d1 = carve(), c.cache.d2 = carve();
    c.cache.dout = carve(), c.partial = carve();
    CUDA_CHECK(cudaMemcpy(c.params, c.h_params.data(), P * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(c.x, c.h_x.data(), c.h_x.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(c.target, c.h_target.data(), c.h_target.size() * sizeof(float),
                          cudaMemcpyHostToDevice));

    printf("\n== B = %d, O = %d (P = %d, %zu tiles of %d rows)\n", B, O, P, tiles, fused::R);
    printf("  checks (relative error, 2-norm; outputs and gradients poisoned with NaN first):\n");
    CUDA_CHECK(cudaMemsetAsync(c.out_ref, 0xFF, nBO * 4, st));
    CUDA_CHECK(cudaMemsetAsync(c.grad_ref, 0xFF, P * 4, st));
    ref::mlp_train_step(dev.ref, c.params, c.x, c.target, c.out_ref, c.grad_ref, c.cache, B, O);
    CUDA_CHECK(cudaStreamSynchronize(st));
    c.r_out.resize(nBO), c.r_grad.resize(P);
    CUDA_CHECK(cudaMemcpy(c.r_out.data(), c.out_ref, nBO * 4, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(c.r_grad.data(), c.grad_ref, P * 4, cudaMemcpyDeviceToHost));
    if (B <= opt.cpu_max_rows) {
        c.c_out.resize(nBO), c.c_grad.resize(P);
        cpu_train_step(c.h_params.data(), c.h_x.data(), c.h_target.data(), B, O, c.c_out.data(),
                       c.c_grad.data());
        printf("    %-24s %.1e\n", "ref out vs fp64", rel_err(c.r_out.data(), c.c_out.data(), nBO));
        check_grads("ref grads vs fp64", c.r_grad.data(), c.c_grad.data(), O, 1e-4, true);
    }

    std::vector<Row> rows;
    double ref_f = time_us(st, opt.reps, [&] {
        ref::mlp_forward(dev.ref, c.params, c.x, c.out_ref, c.cache, B, O);
    });
    double ref_t = time_us(st, opt.reps, [&] {
        ref::mlp_train_step(dev.ref, c.params, c.x, c.target, c.out_ref, c.grad_ref, c.cache, B, O);
    });
    const double fwd_flops = 2.0 * B * (I * H + H * H + H * O);
    const double train_flops = 2.0 * B * (2 * I * H + 3 * H * H + 3 * H * O);
    // ref's traffic a row, in floats (each kernel's reads + writes of (B, *) arrays):
    // forward I + 8H + 3O; loss 3O; backward 15H + 3O + I.
    rows.push_back({"ref", "fwd", ref_f, fwd_flops, 4.0 * B * (I + 8 * H + 3 * O), 0});
    rows.push_back({"ref", "fwd+bwd", ref_t, train_flops, 4.0 * B * (2 * I + 23 * H + 9 * O), 0});

    if (opt.variant[1]) run_variant<O, 1>(dev, opt, c, ref_f, ref_t, rows);
    if (opt.variant[2]) run_variant<O, 2>(dev, opt, c, ref_f, ref_t, rows);
    if (opt.variant[3]) run_variant<O, 3>(dev, opt, c, ref_f, ref_t, rows);

    // Floors: the model's FLOPs at fp32 peak, and the bytes that must move (x and target in,
    // out for the forward; the parameters in and the gradient out) at HBM bandwidth.
    const double min_fwd = 4.0 * ((double)B * (I + O) + P);
    const double min_train = 4.0 * ((double)B * (I + O) + 2.0 * P);
    printf("  floors: fwd %.1f us of FLOPs (%.3f GFLOP at 67 TFLOP/s), %.2f us of bytes (%.2f MB "
           "at 4.8 TB/s); fwd+bwd %.1f us of FLOPs (%.3f GFLOP), %.2f us of bytes (%.2f MB)\n",
           fwd_flops / PEAK_FLOPS * 1e6, fwd_flops / 1e9, min_fwd / PEAK_BYTES * 1e6, min_fwd / 1e6,
           train_flops / PEAK_FLOPS * 1e6, train_flops / 1e9, min_train / PEAK_BYTES * 1e6,
           min_train / 1e6);
    printf("  %-8s %-8s %7s %2s %10s %9s %7s %9s %8s\n", "variant", "pass", "B", "O", "time_us",
           "GFLOP/s", "%peak", "MB_moved", "x_vs_ref");
    for (const char *pass : {"fwd", "fwd+bwd"}) {
        bool fwd = !strcmp(pass, "fwd");
        double fl = fwd ? fwd_flops : train_flops, mb = fwd ? min_fwd : min_train;
        printf("  %-8s %-8s %7d %2d %10.1f %9.0f %6.0f%% %9.2f %8s\n", "floor", pass, B, O,
               std::max(fl / PEAK_FLOPS, mb / PEAK_BYTES) * 1e6, PEAK_FLOPS / 1e9, 100.0, mb / 1e6,
               "-");
        for (const Row &r : rows) {
            if (strcmp(r.pass, pass)) continue;
            char sp[16] = "-";
            if (r.ref_us > 0) snprintf(sp, sizeof sp, "%.2fx", r.ref_us / r.us);
            double gf = r.flops / (r.us * 1e-6) / 1e9;
            printf("  %-8s %-8s %7d %2d %10.1f %9.0f %6.1f%% %9.2f %8s\n", r.variant, r.pass, B, O,
                   r.us, gf, 100.0 * gf * 1e9 / PEAK_FLOPS, r.bytes / 1e6, sp);
        }
    }
    CUDA_CHECK(cudaFree(mem));
}

static Options parse(int argc, char **argv) {
    Options o;
    for (int i = 1; i < argc; i++) {
        auto need = [&](const char *flag) {
            if (i + 1 >= argc) {
                fprintf(stderr, "%s needs a value\n", flag);
                exit(2);
            }
            return argv[++i];
        };
        if (!strcmp(argv[i], "--seed")) {
            o.seed = strtoull(need("--seed"), nullptr, 10);
        } else if (!strcmp(argv[i], "--reps")) {
            o.reps = atoi(need("--reps"));
        } else if (!strcmp(argv[i], "--cpu-max-rows")) {
            o.cpu_max_rows = atol(need("--cpu-max-rows"));
        } else if (!strcmp(argv[i], "--B")) {
            o.batches.push_back(atoi(need("--B")));
        } else if (!strcmp(argv[i], "--variants")) {
            const char *list = need("--variants");
            for (int v = 1; v <= 3; v++) {
                const char *n = fused::variant_name(v), *p = list;
                size_t len = strlen(n);
                bool on = false;
                while ((p = strstr(p, n))) { // whole comma-separated names only
                    if ((p == list || p[-1] == ',') && (p[len] == ',' || p[len] == 0)) on = true;
                    p += len;
                }
                o.variant[v] = on;
            }
        } else {
            fprintf(stderr,
                    "usage: %s [--seed N] [--reps N] [--cpu-max-rows N] [--B N]... "
                    "[--variants v1,v1b,v2]\n",
                    argv[0]);
            exit(2);
        }
    }
    if (o.batches.empty()) o.batches = {262144, 16384};
    if (o.reps < 1) o.reps = 1;
    return o;
}

int main(int argc, char **argv) {
    setvbuf(stdout, nullptr, _IOLBF, 0); // lines reach a log even if a later kernel faults
    Options opt = parse(argc, argv);
    Device dev;
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    dev.sms = prop.multiProcessorCount;
    int clock_khz = 0;
    if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0) != cudaSuccess) clock_khz = 0;
    printf("device: %s, sm_%d%d, %d SMs, max clock %.0f MHz, %zu KB smem/SM; seed %llu, median "
           "of %d runs\n",
           prop.name, prop.major, prop.minor, dev.sms, clock_khz / 1e3,
           prop.sharedMemPerMultiprocessor / 1024, (unsigned long long)opt.seed, opt.reps);

    CUDA_CHECK(cudaStreamCreateWithFlags(&dev.stream, cudaStreamNonBlocking));
    dev.ref.stream = dev.stream;
    CUBLAS_CHECK(cublasCreate(&dev.ref.blas));
    CUBLAS_CHECK(cublasSetStream(dev.ref.blas, dev.stream));
    // As the backend: its own workspace (32 MiB on Hopper), fp32 math, host pointer mode.
    size_t ws_bytes = prop.major >= 9 ? (size_t)32 << 20 : (size_t)4 << 20;
    void *ws;
    CUDA_CHECK(cudaMalloc(&ws, ws_bytes));
    CUBLAS_CHECK(cublasSetWorkspace(dev.ref.blas, ws, ws_bytes));
    CUBLAS_CHECK(cublasSetMathMode(dev.ref.blas, CUBLAS_DEFAULT_MATH));
    CUBLAS_CHECK(cublasSetPointerMode(dev.ref.blas, CUBLAS_POINTER_MODE_HOST));
    CUDA_CHECK(cudaMalloc(&dev.ref.partial,
                          sizeof(double) * ref::MAX_PARTIALS * ref::PARTIAL_WIDTH));

    if (opt.variant[2] || opt.variant[3]) { // v1b and v2 rely on the fast tanh being exact
        unsigned long long *bad;
        unsigned *first;
        CUDA_CHECK(cudaMalloc(&bad, sizeof *bad + sizeof *first));
        first = reinterpret_cast<unsigned *>(bad + 1);
        CUDA_CHECK(cudaMemset(bad, 0, sizeof *bad));
        CUDA_CHECK(cudaMemset(first, 0xFF, sizeof *first));
        fused::tanh_exhaustive_check<<<4 * dev.sms, 256>>>(bad, first);
        LAUNCHED();
        unsigned long long h_bad;
        unsigned h_first;
        CUDA_CHECK(cudaMemcpy(&h_bad, bad, sizeof h_bad, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(&h_first, first, sizeof h_first, cudaMemcpyDeviceToHost));
        printf("tanh without the division's slow path vs tanh_device.cuh, all 2^32 floats: %llu "
               "differ%s",
               h_bad, h_bad ? "" : " ok\n");
        if (h_bad) printf(" (first bits 0x%08x) FAIL\n", h_first), g_failed = true;
        CUDA_CHECK(cudaFree(bad));
    }

    for (int B : opt.batches) {
        run_case<1>(dev, opt, B);
        run_case<2>(dev, opt, B);
    }

    CUBLAS_CHECK(cublasDestroy(dev.ref.blas));
    CUDA_CHECK(cudaFree(ws));
    CUDA_CHECK(cudaFree(dev.ref.partial));
    CUDA_CHECK(cudaStreamDestroy(dev.stream));
    printf("\n%s\n", g_failed ? "FAILED" : "all checks passed");
    return g_failed ? 1 : 0;
}
