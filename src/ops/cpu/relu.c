/* ReLU forward and backward, and the linear layer followed by ReLU (DQN's Q-network).
 *
 * Both elementwise loops are selects, so gcc vectorises them, and each element is independent,
 * so splitting them over threads changes nothing. The forward, x < 0 ? 0 : x, passes a NaN
 * (torch.relu is clamp_min, which propagates it) and -0; the backward is torch's
 * threshold_backward, y <= 0 ? 0 : dy, a select rather than a product, so an infinite or NaN dy
 * on a dead unit gives 0, not NaN. */

#include "ops/cpu/ops_cpu.h"
#include "ops/cpu/ops_dqn.h"
#include "ops/cpu/simd.h"
#include "ops/parallel.h"

/* Elements below which the elementwise loops stay on the calling thread. */
#define PARALLEL_N ((size_t)1 << 18)

CR_VECTOR_TARGET
void cr_cpu_relu_forward(const float *x, float *y, size_t n) {
    long nn = (long)n;
#pragma omp parallel for schedule(static) if (n >= PARALLEL_N)
    for (long i = 0; i < nn; i++) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}

CR_VECTOR_TARGET
void cr_cpu_relu_backward(const float *y, const float *dy, float *dx, size_t n) {
    long nn = (long)n;
#pragma omp parallel for schedule(static) if (n >= PARALLEL_N)
    for (long i = 0; i < nn; i++) dx[i] = y[i] <= 0.0f ? 0.0f : dy[i];
}

void cr_cpu_linear_relu_forward(const float *x, const float *w, const float *b, float *y, int B,
                                int I, int O) {
    cr_cpu_linear_forward(x, w, b, y, B, I, O);
    cr_cpu_relu_forward(y, y, (size_t)B * O);
}
