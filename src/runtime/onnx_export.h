/* ONNX export of a checkpoint's policy (cudarl_policy_export_onnx in cudarl.h writes the file).
 *
 * The graph, opset CUDARL_ONNX_OPSET, for a network of three Linear layers (PyTorch's
 * Sequential indices 0, 2, 4 with the activation at 1 and 3):
 *
 *   obs (float32 [batch, obs_dim])                       -- input_dtype F32
 *   obs (uint8 [batch, obs_dim]) -> Cast(float) -> Div(255)   -- input_dtype U8
 *     -> Gemm(W0, b0, transB=1) -> Tanh|Relu -> Gemm(W2, b2, transB=1) -> Tanh|Relu
 *     -> Gemm(W4, b4, transB=1) -> out
 *
 * PPO (the actor-critic): the actor's MLP gives `logits` [batch, actions], the critic's MLP
 * `value` [batch, 1], both from the same input, activations Tanh. DQN (the Q-network): one MLP
 * gives `q_values` [batch, actions], activations Relu. With argmax_action, `action` (int64
 * [batch]) = ArgMax(logits or q_values, axis 1, keepdims 0): the greedy action.
 *
 * Initializers keep the checkpoint's state_dict names (actor.0.weight, network.4.bias, ...) and
 * its float32 values, weights in PyTorch's (out, in) layout, hence transB=1. Div by 255 rather
 * than Mul by 1/255: it is what cudarl's own scaling (cr_cpu_scale_u8) and PyTorch's
 * obs.float() / 255.0 compute, bit for bit. The same checkpoint and options give the same bytes
 * (no time stamps). */
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
#define CR_ONNX_BATCH_PARAM "batch" /* the symbolic dim of a dynamic batch */

/* Serialises the ONNX model of the policy in `checkpoint` (checked as cudarl eval checks it)
 * with options `opt` (checked; not NULL) into *bytes (host, malloc'd; the caller frees it) of
 * *len bytes. Nothing is written to disk. */
cudarl_status cr_onnx_model_pack(const char *checkpoint, const cudarl_onnx_options *opt,
                                 uint8_t **bytes, size_t *len);

#endif
