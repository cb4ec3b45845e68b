// DQN's ops on the device, twins of src/ops/cpu/relu.c, dqn_loss.c, egreedy.c and polyak.c, and
// the uint8 -> float cast of the Q-network's input. What each gives against the CPU
// (tests/test_ops_cuda.c, group dqn, holds them to it):
//
//   linear_relu_forward  cuBLAS SGEMM (fp32, no TF32) then a bias + ReLU epilogue: the products
//                        sum in cuBLAS's order, so y agrees with the CPU to rounding (as
//                        linear_forward does); the epilogue's add is one rounding, as the CPU's.
//   relu_backward        a select, bit for bit (NaN and -0 as the CPU).
//   dqn_loss             one block: each row in one thread with the CPU's float roundings in the
//                        CPU's order (_rn intrinsics, so nvcc cannot contract a product and a sum
//                        into an FMA the CPU does not do), so dq and td_error are the CPU's bits;
//                        the three means are double sums over rows in a fixed tree order (each
//                        thread's rows in order, then a halving tree over the threads: no
//                        atomics, bitwise repeatable), which differ from the CPU's index order
//                        only in double rounding.
//   epsilon_schedule     one thread: cr_linear_schedule in double with _rn intrinsics (the CPU
//                        build compiles C11 without contraction), the same float.
//   epsilon_greedy       one thread per row, the CPU's select, product and argmax: bit for bit.
//   polyak               elementwise, the CPU's two products and sum each rounded: bit for bit;
//                        tau == 1 is a copy, as on the CPU.
//   u8_to_float          an exact conversion: bit for bit.
//
// Every op is asynchronous, allocates nothing and reads its scalars from kernel arguments or
// backend memory, so all of them can be captured into a CUDA graph.
#include "ops/cuda/cuda_common.cuh"

// ---- ReLU layers ----------------------------------------------------------------------------

// y[r, o] = relu(y[r, o] + b[o]) for y (B, O), n = B * O; x < 0 ? 0 : x keeps NaN and -0.
__global__ void bias_relu_kernel(float *y, const float *__restrict__ b, size_t n, int O) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = __fadd_rn(y[i], b[i % (size_t)O]);
        y[i] = v < 0.0f ? 0.0f : v;
    }
}

void cr_cuda_linear_relu_forward(cudarl_ctx *ctx, const float *x, const float *w, const float *b,
                                 float *y, int B, int I, int O) {
    if (B <= 0 || O <= 0) return;
    size_t n = (size_t)B * O;
    if (I > 0) {
        cr_cuda_sgemm(ctx, CUBLAS_OP_T, CUBLAS_OP_N, O, B, I, w, I, x, I, y, O);
    } else {
        CUDA_CHECK(cudaMemsetAsync(y, 0, n * sizeof *y, cr_stream(ctx)));
    }
    bias_relu_kernel<<<cr_cuda_blocks(n, CR_CUDA_THREADS), CR_CUDA_THREADS, 0, cr_stream(ctx)>>>(
        y, b, n, O);
    CR_CUDA_LAUNCHED(ctx);
}

// dx (n) = y <= 0 ? 0 : dy (torch's threshold_backward); dx may alias dy.
__global__ void relu_backward_kernel(const float *y, const float *dy, float *dx, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dx[i] = y[i] <= 0.0f ? 0.0f : dy[i];
}

void cr_cuda_relu_backward(cudarl_ctx *ctx, const float *y, const float *dy, float *dx,
                           size_t n) {
    if (!n) return;
    relu_backward_kernel<<<cr_cuda_blocks(n, CR_CUDA_THREADS), CR_CUDA_THREADS, 0,
                           cr_stream(ctx)>>>(y, dy, dx, n);
    CR_CUDA_LAUNCHED(ctx);
}

// ---- the TD loss ----------------------------------------------------------------------------

#define LOSS_THREADS 256

// Index of the largest of l[0..A), the first on ties (cr_cpu_categorical_argmax's loop).
__device__ __forceinline__ int row_argmax(const float *l, int A) {
    int best = 0;
    for (int j = 1; j < A; j++)
        if (l[j] > l[best]) best = j;
    return best;
}

// One block. Row b (thread b % LOSS_THREADS) as cr_cpu_dqn_loss computes it; then the sums of
// w l, q_a and |delta| over the rows, and their means added to acc by thread 0.
__global__ void __launch_bounds__(LOSS_THREADS)
dqn_loss_kernel(const float *__restrict__ q, const int32_t *__restrict__ actions,
                const float *__restrict__ rewards, const uint8_t *__restrict__ terminated,
                const float *__restrict__ next_q_target, const float *__restrict__ next_q_online,
                const float *__restrict__ weights, float gamma, int double_dqn, int huber,
                float *dq, float *td_error, cr_dqn_stats_acc *acc, int B, int A) {
    __shared__ double sh[3 * LOSS_THREADS];
    double v[3] = {0.0, 0.0, 0.0}; // sum w l, sum q_a, sum |delta|
    const float inv_b = __fdiv_rn(1.0f, (float)B);
    for (int b = threadIdx.x; b < B; b += LOSS_THREADS) {
        const size_t row = (size_t)b * A;
        const int a = actions[b];
        if ((unsigned)a >= (unsigned)A) __trap(); // a bug upstream, as the CPU's assert
        int best = row_argmax((double_dqn ? next_q_online : next_q_target) + row, A);
        float target = terminated[b]
                           ? rewards[b]
                           : __fadd_rn(rewards[b], __fmul_rn(gamma, next_q_target[row + best]));
        float qa = q[row + a], delta = __fsub_rn(qa, target), dl, l;
        if (!huber) {
            dl = __fmul_rn(2.0f, delta);
            l = __fmul_rn(delta, delta);
        } else {
            float z = fabsf(delta);
            dl = delta < -1.0f ? -1.0f : delta > 1.0f ? 1.0f : delta;
            l = z < 1.0f ? __fmul_rn(__fmul_rn(0.5f, delta), delta) : __fsub_rn(z, 0.5f);
        }
        float w = weights ? weights[b] : 1.0f;
        for (int j = 0; j < A; j++) dq[row + j] = 0.0f;
        dq[row + a] = __fmul_rn(__fmul_rn(w, dl), inv_b);
        if (td_error) td_error[b] = delta;
        v[0] += (double)__fmul_rn(w, l);
        v[1] += (double)qa;
        v[2] += (double)fabsf(delta);
    }
    cr_block_sum<3, LOSS_THREADS>(v, sh);
    if (threadIdx.x == 0) {
        double loss = v[0] / B;
        acc->loss_sum += loss;
        acc->q_sum += v[1] / B;
        acc->td_abs_sum += v[2] / B;
        acc->count += 1.0;
        acc->last_loss = loss;
    }
}

void cr_cuda_dqn_loss(cudarl_ctx *ctx, const float *q, const int32_t *actions,
                      const float *rewards, const uint8_t *terminated, const float *next_q_target,
                      const float *next_q_online, const float *weights, float gamma,
                      int double_dqn, int huber, float *dq, float *td_error,
                      cr_dqn_stats_acc *acc, int B, int A) {
    CUDARL_ASSERT(B >= 1 && A >= 1 && (!double_dqn || next_q_online != NULL));
    dqn_loss_kernel<<<1, LOSS_THREADS, 0, cr_stream(ctx)>>>(
        q, actions, rewards, terminated, next_q_target, next_q_online, weights, gamma, double_dqn,
        huber, dq, td_error, acc, B, A);
    CR_CUDA_LAUNCHED(ctx);
}

// ---- exploration ----------------------------------------------------------------------------

// cr_linear_schedule at *step, rounded to float; then *step += n.
__global__ void epsilon_schedule_kernel(int64_t *step, int64_t n, double start_e, double end_e,
                                        double duration, float *epsilon) {
    double t = (double)*step, e = end_e;
    if (duration > 0.0) {
        double slope = __ddiv_rn(__dsub_rn(end_e, start_e), duration);
        double x = __dadd_rn(__dmul_rn(slope, t), start_e);
        e = end_e > x ? end_e : x; // Python's max(x, end_e)
    }
    *epsilon = (float)e;
    *step += n;
}

void cr_cuda_epsilon_schedule(cudarl_ctx *ctx, int64_t *step, int64_t n, double start_e,
                              double end_e, double duration, float *epsilon) {
    epsilon_schedule_kernel<<<1, 1, 0, cr_stream(ctx)>>>(step, n, start_e, end_e, duration,
                                                          epsilon);
    CR_CUDA_LAUNCHED(ctx);
}

// actions[b]: a uniform action where u_explore[b] < epsilon, else the row's argmax.
__global__ void epsilon_greedy_kernel(const float *__restrict__ q,
                                      const float *__restrict__ u_explore,
                                      const float *__restrict__ u_action, const float *epsilon,
                                      int32_t *actions, int B, int A) {
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= B) return;
    if (u_explore[b] < *epsilon) {
        int a = (int)__fmul_rn(u_action[b], (float)A);
        actions[b] = a < A - 1 ? a : A - 1;
    } else {
        actions[b] = row_argmax(q + (size_t)b * A, A);
    }
}

void cr_cuda_epsilon_greedy(cudarl_ctx *ctx, const float *q, const float *u_explore,
                            const float *u_action, const float *epsilon, int32_t *actions, int B,
                            int A) {
    if (B <= 0) return;
    unsigned blocks = (unsigned)((B + CR_CUDA_THREADS - 1) / CR_CUDA_THREADS);
    epsilon_greedy_kernel<<<blocks, CR_CUDA_THREADS, 0, cr_stream(ctx)>>>(
        q, u_explore, u_action, epsilon, actions, B, A);
    CR_CUDA_LAUNCHED(ctx);
}

// ---- target network, input cast ------------------------------------------------------------

// target = a online + c target, each product and the sum rounded (no FMA).
__global__ void polyak_kernel(float *__restrict__ target, const float *__restrict__ online,
                              size_t n, float a, float c) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        target[i] = __fadd_rn(__fmul_rn(a, online[i]), __fmul_rn(c, target[i]));
}

void cr_cuda_polyak(cudarl_ctx *ctx, float *target, const float *online, size_t n, double tau) {
    if (!n) return;
    if (tau == 1.0) { // a copy, bit for bit (the formula would turn -0 into +0)
        CUDA_CHECK(cudaMemcpyAsync(target, online, n * sizeof *target, cudaMemcpyDeviceToDevice,
                                   cr_stream(ctx)));
        return;
    }
    polyak_kernel<<<cr_cuda_blocks(n, CR_CUDA_THREADS), CR_CUDA_THREADS, 0, cr_stream(ctx)>>>(
        target, online, n, (float)tau, (float)(1.0 - tau));
    CR_CUDA_LAUNCHED(ctx);
}

__global__ void u8_to_float_kernel(const uint8_t *__restrict__ x, float *__restrict__ y,
                                   size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = (float)x[i];
}

void cr_cuda_u8_to_float(cudarl_ctx *ctx, const uint8_t *x, float *y, size_t n) {
    if (!n) return;
    u8_to_float_kernel<<<cr_cuda_blocks(n, CR_CUDA_THREADS), CR_CUDA_THREADS, 0,
                         cr_stream(ctx)>>>(x, y, n);
    CR_CUDA_LAUNCHED(ctx);
}
