/* The MLP actor-critic of CleanRL's ppo.py: separate actor and critic, each
 * Linear(obs, H) - tanh - Linear(H, H) - tanh - Linear(H, out), out = actions or 1; or, for
 * continuous actions, ppo_continuous_action.py's: the actor (`actor_mean`) gives the K means of a
 * Gaussian whose log-std is the parameter `actor_logstd` (1, K), the same for every state.
 *
 * All parameters live in one contiguous float buffer laid out in PyTorch state_dict order
 * (critic.0.weight, critic.0.bias, critic.2.weight, ..., actor.4.bias [, actor_logstd]), so
 * gradients, Adam moments, the grad-norm clip and the all-reduce of later issues each see one
 * buffer. */
#ifndef CUDARL_ACTOR_CRITIC_H
#define CUDARL_ACTOR_CRITIC_H

#include <stddef.h>

#include "ops/backend.h"

#define CR_AC_NUM_TENSORS 12  /* the MLPs' weights and biases */
#define CR_AC_MAX_TENSORS 13  /* and the Gaussian's log-std */

typedef struct cr_param_tensor {
    char name[32];  /* state_dict name, e.g. "actor.2.weight" */
    int ndim;
    int shape[2];
    size_t offset;  /* in floats, into the parameter buffer */
    size_t count;
    double init_gain; /* orthogonal gain for weights; 0 for biases */
} cr_param_tensor;

typedef struct cr_ac_layout {
    int obs_dim, hidden, num_actions; /* num_actions: the actor's outputs (K means if gaussian) */
    int gaussian;                     /* continuous actions: t[12] is actor_logstd (1, K) */
    int num_tensors;                  /* 12, or 13 with the log-std */
    cr_param_tensor t[CR_AC_MAX_TENSORS];
    size_t num_params;
} cr_ac_layout;

/* cr_activation and cr_mlp_view (one MLP's view into a parameter buffer) are in
 * ops/backend.h, whose ppo_minibatch_grads op takes them. */

/* Activations an MLP keeps for its backward pass, for up to max_rows rows (backend memory). */
typedef struct cr_mlp_cache {
    float *h1, *h2;   /* (B, H) post-tanh */
    float *d1, *d2;   /* (B, H) gradient scratch */
} cr_mlp_cache;

void cr_ac_layout_init(cr_ac_layout *l, int obs_dim, int hidden, int num_actions);
/* The continuous actor-critic of K = action_dim actions: actor_mean.* (the actor's tensors under
 * ppo_continuous_action.py's names) and actor_logstd last. */
void cr_ac_layout_init_gaussian(cr_ac_layout *l, int obs_dim, int hidden, int action_dim);
/* The log-std (K floats) inside `buf` (a parameter or gradient buffer); NULL when not gaussian. */
float *cr_ac_logstd(const cr_ac_layout *l, float *buf);
/* Views of the critic and actor inside `buf` (a parameter or gradient buffer of l->num_params). */
cr_mlp_view cr_ac_critic(const cr_ac_layout *l, float *buf);
cr_mlp_view cr_ac_actor(const cr_ac_layout *l, float *buf);
/* CleanRL's init: orthogonal weights (gain sqrt(2) hidden, 1 critic out, 0.01 actor out), zero
 * biases and log-std, drawn from `rng` in tensor order. Writes host memory `params` (num_params floats). */
void cr_ac_init_params(const cr_ac_layout *l, float *params, cr_philox_state *rng);
/* Floats a cache needs for max_rows rows of hidden width H (the wider hidden layer). */
size_t cr_mlp_cache_floats(int max_rows, int hidden);
/* Points a cache into `mem` (cr_mlp_cache_floats floats, backend memory). */
cr_mlp_cache cr_mlp_cache_carve(float *mem, int max_rows, int hidden);

/* out (B, O) = mlp(x (B, I)); fills cache. */
void cr_mlp_forward(cudarl_ctx *ctx, const cr_mlp_view *m, const float *x, float *out,
                    const cr_mlp_cache *c, int B);
/* Gradients w.r.t. the MLP's parameters (overwritten into g) from dout (B, O); uses the cache of
 * the forward pass on the same x. */
void cr_mlp_backward(cudarl_ctx *ctx, const cr_mlp_view *m, const cr_mlp_view *g, const float *x,
                     const float *dout, const cr_mlp_cache *c, int B);

#endif
