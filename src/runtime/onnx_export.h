/* ONNX export of a checkpoint's policy (cudarl_policy_export_onnx in cudarl.h writes the file).
 *
 * The graphs, opset CUDARL_ONNX_OPSET. The input, obs [batch, obs_dim] for an MLP or
 * [batch, C, H, W] for a convolutional network (its spec's input shape):
 *
 *   obs float32 -> the network                                    -- input_dtype F32
 *   obs uint8 -> Cast(float) [-> Div(255)] -> the network          -- input_dtype U8
 *
 * F32 takes what the network reads (for a policy trained on uint8 observations: after cudarl's
 * conversion). U8 takes the env's uint8 observations and converts them as cudarl does: Div by
 * 255 for pixels (nature-cnn, and a policy of float observations, with a warning), a cast only
 * where the policy casts them unscaled (minatar-cnn, and every checkpoint with obs_input
 * CR_POLICY_U8_CAST: MinAtar's 0/1 channels).
 *
 * An MLP, three Linear layers (PyTorch's Sequential indices 0, 2, 4 with the activation at 1 and
 * 3): Gemm(W0, b0, transB=1) -> Tanh|Relu -> Gemm(W2, b2, transB=1) -> Tanh|Relu ->
 * Gemm(W4, b4, transB=1). PPO (the actor-critic): the actor's MLP gives `logits`
 * [batch, actions], the critic's MLP `value` [batch, 1], both from the same input, activations
 * Tanh. DQN (the Q-network): one MLP gives `q_values` [batch, actions], activations Relu.
 *
 * A convolutional network (nn/convnet.h; CleanRL's ppo_atari.py Agent and dqn_atari.py
 * QNetwork), its trunk layer by layer, layer i as node network.<i>:
 *   conv    Conv(W (K, C, R, S), b (K), kernel_shape [R, S], strides [s, s], pads [p, p, p, p]
 *           only where the spec pads)
 *   relu, tanh    Relu, Tanh
 *   flatten       Flatten(axis 1): (C, H, W) order, PyTorch's and cudarl's
 *   linear        Gemm(W, b, transB=1)
 * e.g. nature-cnn: Conv, Relu, Conv, Relu, Conv, Relu, Flatten, Gemm, Relu. Then the heads on the
 * trunk's features: PPO Gemm(actor.weight, actor.bias) -> `logits` and Gemm(critic.weight,
 * critic.bias) -> `value`; DQN Gemm(network.<num_layers>) -> `q_values`.
 *
 * With argmax_action, `action` (int64 [batch]) = ArgMax(logits or q_values, axis 1,
 * keepdims 0): the greedy action.
 *
 * Initializers keep the checkpoint's state_dict names (actor.0.weight, network.4.bias, ...) and
 * its float32 bytes, weights in PyTorch's layouts ((out, in), hence transB=1; (K, C, R, S)).
 * Div by 255 rather than Mul by 1/255: it is what cudarl's own scaling (cr_cpu_scale_u8) and
 * PyTorch's obs.float() / 255.0 compute, bit for bit. The same checkpoint and options give the
 * same bytes (no time stamps). */
#ifndef CUDARL_RUNTIME_ONNX_EXPORT_H
#define CUDARL_RUNTIME_ONNX_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

/* Names of the graph's inputs and outputs. */
#define CR_ONNX_INPUT "obs"
#define CR_ONNX_LOGITS "logits"
#define CR_ONNX_VALUE "value"
#define CR_ONNX_Q_VALUES "q_values"
#define CR_ONNX_ACTION "action"
#define CR_ONNX_MEAN "action_mean" /* a Gaussian policy's unclipped mean */
#define CR_ONNX_BATCH_PARAM "batch" /* the symbolic dim of a dynamic batch */

/* Serialises the ONNX model of the policy in `checkpoint` (checked as cudarl eval checks it)
 * with options `opt` (checked; not NULL) into *bytes (host, malloc'd; the caller frees it) of
 * *len bytes. Nothing is written to disk. */
cudarl_status cr_onnx_model_pack(const char *checkpoint, const cudarl_onnx_options *opt,
                                 uint8_t **bytes, size_t *len);

#endif
