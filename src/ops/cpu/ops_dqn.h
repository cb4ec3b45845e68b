/* The CPU ops DQN adds: ReLU layers, the TD loss, epsilon-greedy actions, the soft target update.
 * Conventions of ops_cpu.h: float32, row-major, contiguous; results bitwise identical for any
 * thread count. B batch rows, I inputs, O outputs, A actions. */
#ifndef CUDARL_OPS_DQN_H
#define CUDARL_OPS_DQN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* y = max(0, x), n elements; y may alias x. A NaN stays NaN, as in torch.relu; -0 stays -0. */
void cr_cpu_relu_forward(const float *x, float *y, size_t n);
/* dx = y <= 0 ? 0 : dy where y = relu(x), n elements; dx may alias dy. As torch's
 * threshold_backward: the gradient at y == 0 is 0, and a masked dy never leaks a NaN. */
void cr_cpu_relu_backward(const float *y, const float *dy, float *dx, size_t n);
/* y = max(0, x w^T + b): cr_cpu_linear_forward then cr_cpu_relu_forward, bit for bit.
 * x (B, I), w (O, I), b (O), y (B, O). */
void cr_cpu_linear_relu_forward(const float *x, const float *w, const float *b, float *y, int B,
                                int I, int O);

/* What one DQN minibatch loss reports (means over the minibatch, in double). */
typedef struct cr_dqn_loss_stats {
    double loss;        /* mean_b w_b l_b */
    double q_mean;      /* mean_b q[b, a_b] */
    double td_abs_mean; /* mean_b |delta_b| */
} cr_dqn_loss_stats;

/* CleanRL's DQN TD loss on one minibatch and its gradient w.r.t. the online Q-values:
 *   v_b     = double_dqn ? next_q_target[b, argmax next_q_online[b]] : max next_q_target[b]
 *             (argmax as cr_cpu_categorical_argmax: first index on ties)
 *   delta_b = q[b, a_b] - (terminated_b ? r_b : r_b + gamma v_b)   (truncated rows bootstrap)
 *   l_b     = huber ? smooth_l1(delta_b), beta 1 : delta_b^2       (mse_loss, as dqn.py)
 *   loss    = mean_b w_b l_b, w_b = weights[b] (prioritized replay), or 1 where weights is NULL.
 * q, next_q_target, next_q_online (B, A) (next_q_online read only when double_dqn, may be NULL
 * otherwise); actions (B) in [0, A); rewards (B); terminated (B) 0/1 bytes, which select, so a
 * terminated row's next values are ignored even if not finite; weights (B) or NULL.
 * Writes dq (B, A) = d loss / d q (zero off the taken actions; the targets are constants),
 * td_error (B) = delta unless NULL, and the stats. Per-row arithmetic is float, as PyTorch's. */
void cr_cpu_dqn_loss(const float *q, const int32_t *actions, const float *rewards,
                     const uint8_t *terminated, const float *next_q_target,
                     const float *next_q_online, const float *weights, float gamma,
                     int double_dqn, int huber, float *dq, float *td_error,
                     cr_dqn_loss_stats *stats, int B, int A);

/* actions[b] = u_explore[b] < epsilon ? min(A - 1, (int)(u_action[b] * A))
 *                                     : argmax_a q[b, a] (first on ties).
 * q (B, A); u_explore, u_action (B) uniforms in [0, 1); actions (B). */
void cr_cpu_epsilon_greedy(const float *q, const float *u_explore, const float *u_action,
                           float epsilon, int32_t *actions, int B, int A);
/* CleanRL's linear_schedule: max((end_e - start_e) / duration * t + start_e, end_e); end_e when
 * duration <= 0 (exploration over at once, where Python would divide by zero). */
double cr_linear_schedule(double start_e, double end_e, double duration, double t);

/* Soft target update target = tau online + (1 - tau) target, n elements, as CleanRL's dqn.py
 * does it in float32 PyTorch: (float)tau * online + (float)(1 - tau) * target, each product and
 * the sum rounded to float.
 * tau == 1 copies online bit for bit (the formula would turn -0 into +0, inf targets into NaN).
 * target and online must not overlap. */
void cr_cpu_polyak(float *target, const float *online, size_t n, double tau);

#ifdef __cplusplus
}
#endif

#endif
