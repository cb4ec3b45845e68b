/* CleanRL's DQN loss (dqn.py) on one minibatch, with double DQN, Huber loss and importance
 * weights, and its gradient with respect to the online Q-values. Subgradients are PyTorch's:
 * smooth_l1's backward is clamp(delta, -1, 1) (so a NaN delta stays NaN), mse_loss's is 2 delta.
 * Per-row quantities are float, as in a float32 PyTorch run; means accumulate in double, in row
 * order. Rows are few (the minibatch), so the op stays on the calling thread. */
#include <math.h>
#include <string.h>

#include "ops/cpu/ops_cpu.h"
#include "ops/cpu/ops_dqn.h"

/* Loss of one TD error and its derivative: smooth_l1 (beta 1) or the squared error. */
static float td_loss(float delta, int huber, float *dl) {
    if (!huber) {
        *dl = 2.0f * delta;
        return delta * delta;
    }
    float z = fabsf(delta);
    *dl = delta < -1.0f ? -1.0f : delta > 1.0f ? 1.0f : delta;
    return z < 1.0f ? 0.5f * delta * delta : z - 0.5f;
}

void cr_cpu_dqn_loss(const float *q, const int32_t *actions, const float *rewards,
                     const uint8_t *terminated, const float *next_q_target,
                     const float *next_q_online, const float *weights, float gamma,
                     int double_dqn, int huber, float *dq, float *td_error,
                     cr_dqn_loss_stats *stats, int B, int A) {
    CUDARL_ASSERT(!double_dqn || next_q_online != NULL);
    const float inv_b = 1.0f / (float)B;
    double loss_sum = 0.0, q_sum = 0.0, abs_sum = 0.0;
    for (int b = 0; b < B; b++) {
        const size_t row = (size_t)b * A;
        const int a = actions[b];
        CUDARL_ASSERT(a >= 0 && a < A);
        int32_t best;
        cr_cpu_categorical_argmax((double_dqn ? next_q_online : next_q_target) + row, &best, 1, A);
        float target = terminated[b] ? rewards[b] : rewards[b] + gamma * next_q_target[row + best];
        float qa = q[row + a], delta = qa - target, dl;
        float l = td_loss(delta, huber, &dl);
        float w = weights ? weights[b] : 1.0f;

        memset(dq + row, 0, (size_t)A * sizeof *dq);
        dq[row + a] = w * dl * inv_b;
        if (td_error) td_error[b] = delta;
        loss_sum += (double)(w * l);
        q_sum += qa;
        abs_sum += fabsf(delta);
    }
    stats->loss = loss_sum / B;
    stats->q_mean = q_sum / B;
    stats->td_abs_mean = abs_sum / B;
}
