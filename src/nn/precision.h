/* The precision policy: the one place that says what runs in which precision (DESIGN.md, "Precision
 * is a policy in one place"; docs/precision.md is this file in prose).
 *
 * A precision (cudarl_precision, --precision) fixes what the products of matmuls and convolutions
 * take their inputs in and what activations (and their gradients) are stored in between layers.
 * Everything else is float32 under every precision: every accumulation, the master weights, the
 * weight gradients, Adam's moments, and the ops of cr_precision_fp32_ops (losses, advantages,
 * returns, GAE, softmax, reductions), each with the reason it stays float32. FP16 adds dynamic
 * loss scaling (ops/loss_scale.h).
 *
 * cr_precision_tolerances is the per-op tolerance of an op run in a precision against the float32
 * CPU reference (the GPU test of a reduced-precision kernel reads it), with the reason for each
 * entry; tests/test_precision.c holds it against a CPU emulation of the roundings. */
#ifndef CUDARL_PRECISION_H
#define CUDARL_PRECISION_H

#include <stddef.h>

#include "cudarl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A number format. TF32 is a compute format only (tensor-core inputs), never stored. */
typedef enum cr_dtype {
    CR_DTYPE_F32 = 0, /* 24 significand bits (with the implicit one), exponent 8 bits */
    CR_DTYPE_TF32,    /* 11 significand bits, fp32's exponent range */
    CR_DTYPE_BF16,    /* 8 significand bits, fp32's exponent range */
    CR_DTYPE_F16,     /* 11 significand bits, exponent 5 bits: normal 2^-14 .. 65504 */
} cr_dtype;

/* "f32", "tf32", "bf16", "f16"; static storage. */
const char *cr_dtype_name(cr_dtype t);
/* Unit roundoff of t when rounding to nearest: 2^-significand bits (2^-24, 2^-11, 2^-8, 2^-11). */
double cr_dtype_unit_roundoff(cr_dtype t);
/* x rounded to the nearest value of t (ties to even), with t's subnormals and overflow to inf;
 * inf and NaN pass through. The CPU's model of a conversion (__float2bfloat16_rn, __float2half_rn,
 * cvt.rna.tf32 up to ties). */
float cr_round_to_dtype(float x, cr_dtype t);

/* What one precision computes and stores in. */
typedef struct cr_precision_policy {
    cudarl_precision precision;
    cr_dtype matmul;          /* inputs of the products of linear layers (cuBLAS) */
    cr_dtype conv;            /* inputs of the products of convolutions (cuDNN) */
    cr_dtype activations;     /* storage of activations and activation gradients */
    cr_dtype accumulate;      /* sums inside matmuls, convolutions, reductions: F32 */
    cr_dtype master_weights;  /* the parameters Adam updates: F32 */
    cr_dtype weight_grads;    /* dw, db as the optimizer reads them: F32 */
    cr_dtype optimizer_state; /* Adam's m and v: F32 */
    int loss_scaling;         /* dynamic loss scaling (ops/loss_scale.h) */
    const char *why;          /* why this precision looks as it does */
} cr_precision_policy;

/* The policy of `p` (static storage); asserts p is a cudarl_precision. */
const cr_precision_policy *cr_precision_policy_of(cudarl_precision p);

/* Whether the trainers take --precision p on `device` (CPU, CUDA or AUTO, which is checked again
 * once the context is known): FP32 anywhere, TF32, BF16 and FP16 on the GPU, for every policy.
 * The message names the problem and the fix. */
cudarl_status cr_precision_check_training(cudarl_precision p, cudarl_device_kind device);
/* Puts a trainer's context in precision p (checked against the context's device): TF32 turns the
 * TF32 tensor cores on for every fp32 cuBLAS product enqueued on ctx; BF16 and FP16 have the
 * products that go through cr_cuda_sgemm (linear layers, heads, MLPs) take their inputs in the
 * format (the conv products' format is the training handle's); FP32 changes nothing. Returns
 * whether ctx was changed in *changed, for cr_precision_restore when the trainer is done. */
cudarl_status cr_precision_apply(cudarl_ctx *ctx, cudarl_precision p, int *changed);
/* What a trainer computes in which format under p, one line for its log (static storage). */
const char *cr_precision_training_summary(cudarl_precision p);
/* Undoes a cr_precision_apply that changed ctx: the context's default fp32 math again. */
void cr_precision_restore(cudarl_ctx *ctx);

/* Why the float32-only parts of every policy are float32 (the same under every precision). */
extern const char *const cr_precision_why_fp32_accumulate;
extern const char *const cr_precision_why_fp32_master;

/* An op that computes in float32 under every precision (its inputs are converted to float32 on
 * the way in), and why. `op` names the op as backend.h does. */
typedef struct cr_fp32_op {
    const char *op;
    const char *why;
} cr_fp32_op;

extern const cr_fp32_op cr_precision_fp32_ops[];
extern const size_t cr_precision_fp32_op_count;
/* Whether `op` is on the float32 list. */
int cr_precision_op_is_fp32(const char *op);

/* How a result is compared with the float32 CPU reference. */
typedef enum cr_tol_kind {
    CR_TOL_EXACT, /* the same bits */
    CR_TOL_CLOSE, /* |got - want| <= atol + rtol |want|, element by element */
    CR_TOL_NORM,  /* ||got - want||_2 <= rtol ||want||_2 over the whole array */
} cr_tol_kind;

/* The tolerance of one op's output in one precision: the op run from float32 inputs (rounded on
 * the way in as the precision computes and stores them) against the CPU's float32 op on the
 * unrounded inputs. The NORM bounds assume zero-mean inputs, as the op tests draw them (uniform in
 * [-1, 1]), and, for F16, values inside its normal range. */
typedef struct cr_precision_tolerance {
    const char *op; /* the op's output: "linear.y", "linear.dx", ..., "activation" */
    cudarl_precision precision;
    cr_tol_kind kind;
    double atol, rtol;
    const char *why;
} cr_precision_tolerance;

extern const cr_precision_tolerance cr_precision_tolerances[];
extern const size_t cr_precision_tolerance_count;
/* The entry for (op, p), or NULL when there is none (ops of the float32 list have none: they are
 * held to the float32 tables of tests/test_ops_cuda.c under every precision). */
const cr_precision_tolerance *cr_precision_tolerance_of(const char *op, cudarl_precision p);

/* The NORM rtol of a network's outputs computed in `p` against the float32 CPU reference, when
 * they went through `products` matmuls or convolutions one after another (each stage, and the
 * head that writes them): for tf32, bf16 and fp16, `products` times the per-product rtol of
 * "linear.y" (each stage's output, rounded, is the next one's input, so the relative errors of
 * a chain add, to first order; adding them linearly rather than as a random walk is the margin
 * for depth); for fp32 1e-4 at any depth (summation order only, test_convnet_cuda.c's
 * RTOL_OUT). products >= 1. */
double cr_precision_chain_rtol(cudarl_precision p, int products);
/* The NORM rtol of a network's outputs computed in `p` (bf16, fp16) against the CPU's emulation
 * of the same roundings (input, weights and every stage's output rounded to the format, float32
 * sums and biases): the unit roundoff of the format. Only the float32 sums' order differs, and a
 * sum that differs in its last bits crosses a rounding boundary of the format with probability
 * ~ sqrt(T) 2^-24 / u per element, moving that element by one u: a small fraction of u in the
 * norm (the host emulation of the GPU kernels measured 0.12 u at worst), while a wrong index
 * costs percents. For fp32 and tf32 (nothing rounded between stages) it is
 * cr_precision_chain_rtol(p, 1). */
double cr_precision_twin_rtol(cudarl_precision p);

#ifdef __cplusplus
}
#endif
#endif
