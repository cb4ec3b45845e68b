/* The Q-network of CleanRL's dqn.py: Linear(obs, 120) - ReLU - Linear(120, 84) - ReLU -
 * Linear(84, actions), in one parameter buffer in PyTorch state_dict order (network.0.weight,
 * network.0.bias, network.2.weight, ..., network.4.bias), so a checkpoint loads into CleanRL's
 * QNetwork as it is. */
#ifndef CUDARL_QNET_H
#define CUDARL_QNET_H

#include "nn/actor_critic.h"

#define CR_QNET_NUM_TENSORS 6

typedef struct cr_qnet_layout {
    int obs_dim, h1, h2, num_actions;
    cr_param_tensor t[CR_QNET_NUM_TENSORS];
    size_t num_params;
} cr_qnet_layout;

void cr_qnet_layout_init(cr_qnet_layout *l, int obs_dim, int h1, int h2, int num_actions);
/* The network's view into `buf` (a parameter or gradient buffer of l->num_params floats). */
cr_mlp_view cr_qnet_view(const cr_qnet_layout *l, float *buf);
/* PyTorch's default nn.Linear init, as CleanRL's QNetwork gets it: weights and biases uniform
 * in [-1/sqrt(fan_in), 1/sqrt(fan_in)), drawn from `rng` in tensor order. Host memory. */
void cr_qnet_init_params(const cr_qnet_layout *l, float *params, cr_philox_state *rng);
/* The wider hidden layer: what an MLP cache for this network must hold per row. */
int cr_qnet_widest(const cr_qnet_layout *l);

#endif
