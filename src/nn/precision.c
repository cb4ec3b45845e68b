/* The precision policy (precision.h): the tables and the --precision spelling. */
#include "nn/precision.h"

#include <math.h>
#include <string.h>

#include "core/core.h"
#include "ops/backend.h"
#ifdef CUDARL_WITH_CUDA
#include "nn/convnet_cuda.h"
#include "ops/cuda/cuda_backend.h"
#endif

/* ---- --precision --------------------------------------------------------------------------- */

static const char *const precision_names[CUDARL_PRECISION_COUNT] = {"fp32", "tf32", "bf16",
                                                                      "fp16"};

const char *cudarl_precision_name(cudarl_precision p) {
    return (unsigned)p < CUDARL_PRECISION_COUNT ? precision_names[p] : "?";
}

cudarl_status cudarl_precision_parse(const char *s, cudarl_precision *out) {
    for (int i = 0; s && i < CUDARL_PRECISION_COUNT; i++)
        if (strcmp(s, precision_names[i]) == 0) {
            *out = (cudarl_precision)i;
            return CUDARL_OK;
        }
    return cr_fail(CUDARL_ERR_INVALID_ARG,
                   "--precision '%.64s' is not a precision; choose one of fp32 (default), tf32, "
                   "bf16, fp16",
                   s ? s : "(null)");
}

/* ---- number formats ------------------------------------------------------------------------ */

typedef struct dtype_format {
    const char *name;
    int bits;        /* significand bits with the implicit one */
    int min_quantum; /* exponent of the spacing of the subnormals (the smallest spacing) */
    int emax;        /* exponent of the largest binade */
} dtype_format;

static const dtype_format formats[] = {
    [CR_DTYPE_F32] = {"f32", 24, -149, 127},
    [CR_DTYPE_TF32] = {"tf32", 11, -136, 127},
    [CR_DTYPE_BF16] = {"bf16", 8, -133, 127},
    [CR_DTYPE_F16] = {"f16", 11, -24, 15},
};

static const dtype_format *format_of(cr_dtype t) {
    CUDARL_ASSERT((unsigned)t < sizeof formats / sizeof formats[0]);
    return &formats[t];
}

const char *cr_dtype_name(cr_dtype t) { return format_of(t)->name; }

double cr_dtype_unit_roundoff(cr_dtype t) { return ldexp(1.0, -format_of(t)->bits); }

float cr_round_to_dtype(float x, cr_dtype t) {
    const dtype_format *f = format_of(t);
    if (t == CR_DTYPE_F32 || !isfinite(x)) return x;
    double a = fabs((double)x);
    /* Halfway between the largest finite value, (2 - 2^(1-bits)) 2^emax, and 2^(emax+1): from
     * there on, round to nearest gives inf. */
    if (a >= ldexp(2.0 - ldexp(1.0, -f->bits), f->emax)) return copysignf(INFINITY, x);
    int e;
    frexp(a, &e); /* a = m 2^e, m in [0.5, 1): the leading bit is worth 2^(e-1) */
    int q = e - f->bits;
    if (q < f->min_quantum) q = f->min_quantum;
    /* a / 2^q is exact, nearbyint rounds it to an integer with ties to even (the default mode),
     * and the product is exact: a value of t, converted to float exactly. */
    double r = nearbyint(ldexp(a, -q));
    return (float)copysign(ldexp(r, q), (double)x);
}

/* ---- the policies -------------------------------------------------------------------------- */

const char *const cr_precision_why_fp32_accumulate =
    "a sum of T terms rounded in a format with unit roundoff u errs by up to T u of the terms: "
    "with bf16's u = 2^-8 a 256-term dot product could lose every bit; float32 sums (cuBLAS "
    "CUBLAS_COMPUTE_32F, cuDNN CUDNN_DATA_FLOAT compute type) keep the error at the inputs' "
    "rounding";
const char *const cr_precision_why_fp32_master =
    "an Adam update is ~lr = 1e-3..1e-4 of a weight, below bf16's spacing (2^-7 relative) and "
    "near fp16's (2^-10): stored in those formats most updates round back to the old weight; v "
    "= g^2 underflows fp16 for |g| < 2^-12. Weights, weight gradients and m, v stay float32 and "
    "the reduced-precision copy of a weight is made from them for each forward";

static const cr_precision_policy policies[CUDARL_PRECISION_COUNT] = {
    {CUDARL_PRECISION_FP32, CR_DTYPE_F32, CR_DTYPE_F32, CR_DTYPE_F32, CR_DTYPE_F32, CR_DTYPE_F32,
     CR_DTYPE_F32, CR_DTYPE_F32, 0,
     "the reference: what the CPU computes; cuBLAS and cuDNN with TF32 conversion off"},
    {CUDARL_PRECISION_TF32, CR_DTYPE_TF32, CR_DTYPE_TF32, CR_DTYPE_F32, CR_DTYPE_F32,
     CR_DTYPE_F32, CR_DTYPE_F32, CR_DTYPE_F32, 0,
     "tensor cores round (or truncate) the products' inputs to 11 significand bits and keep "
     "float32's exponent range: matmul speed for no change elsewhere; activations stay float32 "
     "(no memory saved), and nothing can overflow that float32 would not, so no loss scaling"},
    {CUDARL_PRECISION_BF16, CR_DTYPE_BF16, CR_DTYPE_BF16, CR_DTYPE_BF16, CR_DTYPE_F32,
     CR_DTYPE_F32, CR_DTYPE_F32, CR_DTYPE_F32, 0,
     "8 significand bits but float32's exponent range: half the activation memory and bandwidth; "
     "gradients neither underflow nor overflow where float32's would not, so no loss scaling "
     "(torch.autocast with bfloat16 uses none either)"},
    {CUDARL_PRECISION_FP16, CR_DTYPE_F16, CR_DTYPE_F16, CR_DTYPE_F16, CR_DTYPE_F32,
     CR_DTYPE_F32, CR_DTYPE_F32, CR_DTYPE_F32, 1,
     "11 significand bits (3 more than bf16) but 5 exponent bits: values below 2^-24 flush to 0 "
     "and above 65504 overflow, and small gradients are lost first; dynamic loss scaling "
     "multiplies the loss by S so the gradients sit in range, unscales them in float32 and skips "
     "a step whose gradients overflowed (GradScaler's rules)"},
};

const cr_precision_policy *cr_precision_policy_of(cudarl_precision p) {
    CUDARL_ASSERT((unsigned)p < CUDARL_PRECISION_COUNT);
    return &policies[p];
}

/* ---- the ops that stay float32 ------------------------------------------------------------- */

const cr_fp32_op cr_precision_fp32_ops[] = {
    {"ppo_loss",
     "ratio = exp(logp - old_logp) is the exponential of a difference of nearly equal numbers: "
     "in bf16 the log-probs of ~-0.7 carry an error of ~3e-3, as large as a typical approx_kl "
     "(1e-2) and ~2% of the clip range; the loss and its statistics are means over the "
     "minibatch (reductions), and the advantages are normalised by their mean and std"},
    {"dqn_loss",
     "the TD error r + gamma max Q' - Q is a difference of nearly equal values: Q ~ 100 on "
     "CartPole, where bf16's spacing is 0.5 and fp16's 0.06, while rewards are 1"},
    {"categorical_sample",
     "softmax, log-softmax and entropy: exp turns an absolute logit error d into a relative "
     "probability error d (bf16 logits of 10 are 0.03 apart); the log-sum-exp subtracts the max "
     "in float32, and sampling compares u with cumulative sums of float32 weights"},
    {"gae",
     "advantages and returns: a recurrence over T steps of discounted rewards, whose errors "
     "compound, and advantage = return - value is a difference of nearly equal numbers ~100 "
     "(bf16 spacing 0.5): the advantage's signal would drown"},
    {"bootstrap_values", "selects the values GAE reads, which are float32 (see gae)"},
    {"value_stats",
     "explained variance: sums of squares over the batch (reductions, in double) and a variance "
     "of differences (cancellation)"},
    {"clip_grad_norm",
     "a sum of squares over all parameters (a reduction, in double): in fp16 one squared "
     "gradient of 256 overflows; it reads the float32 weight gradients"},
    {"adam_step", "master weights and m, v are float32 (cr_precision_why_fp32_master)"},
    {"loss_scale",
     "the scale reaches 2^24 and more (fp16 stops at 65504); unscaling multiplies by 1/scale in "
     "float32, as torch does, and must see every inf and NaN of the scaled gradients"},
    {"episodes_record", "returns and lengths are counters summed in double, not tensor data"},
};

const size_t cr_precision_fp32_op_count =
    sizeof cr_precision_fp32_ops / sizeof cr_precision_fp32_ops[0];

int cr_precision_op_is_fp32(const char *op) {
    for (size_t i = 0; i < cr_precision_fp32_op_count; i++)
        if (strcmp(cr_precision_fp32_ops[i].op, op) == 0) return 1;
    return 0;
}

/* ---- tolerances against the float32 CPU reference ------------------------------------------ */

/* The model behind the NORM entries. Rounding x to a format with unit roundoff u changes it by a
 * relative d with |d| <= u (to nearest; uniform-ish, rms u/sqrt(3)). A product of two rounded
 * inputs errs by x w (d1 + d2); over T zero-mean terms these add like a random walk, so the error
 * vector's norm is ~u sqrt(2/3) ||y|| (the terms' squares sum to about y^2 for zero-mean data).
 * Storing the result rounds once more: u/sqrt(3) ||y||. The float32 accumulation adds ~2^-24
 * sqrt(T): nothing next to u. So a result with both inputs and its output rounded errs by ~1.0 u
 * ||y|| (rms), and 4 u leaves a factor of 4 for the spread of the norm (which, over many
 * elements, is small) and for data a little less random. An indexing bug (a dropped or doubled
 * term) costs ~1/sqrt(T) of the norm: 6% at T = 256, above 4 u for every format here. TF32: the
 * tensor cores may truncate instead of rounding; truncation's d lies in [-2^-10, 0], mean and rms
 * ~0.6 2^-10 each, ~1.2 2^-10 ||y|| in all: 4 2^-10 = 2^-8. */
#define TF32_WHY(what)                                                                            \
    what " rounded to TF32 on the tensor cores (u = 2^-11 to nearest, up to 2^-10 if they "      \
         "truncate), the product's output float32: ~1.2 2^-10 ||y|| rms under truncation, 4x that"
#define FP32_GEMM_WHY                                                                             \
    "float32 products summed by cuBLAS/cuDNN in another order than the CPU: ~sqrt(T) 2^-24 of "   \
    "the norm (tests/test_ops_cuda.c's linear.*; test_conv_cuda.c holds the convolutions to the " \
    "tighter 8 u of sum|terms|)"

#define BF16 " (u = 2^-8)"
#define FP16                                                                                      \
    " (u = 2^-11; values in fp16's normal range 2^-14..65504, where the loss scale keeps the "    \
    "gradients)"
/* 4 u of bf16 (2^-6) and fp16 (2^-9) for an output whose `what` are stored in the format. */
#define BF16_ROW(op, what, model)                                                                 \
    { op, CUDARL_PRECISION_BF16, CR_TOL_NORM, 0, 0x1p-6, what " in bf16" BF16 ": " model }
#define FP16_ROW(op, what, model)                                                                 \
    { op, CUDARL_PRECISION_FP16, CR_TOL_NORM, 0, 0x1p-9, what " in fp16" FP16 ": " model }

#define IN2_OUT1 "two rounded inputs and a rounded output: ~1.0 u ||y|| rms, 4 u"
#define IN2_OUT32 "two rounded inputs, the output float32 (weight gradients): ~0.8 u ||y|| rms, 4 u"
#define IN1_OUT32                                                                                 \
    "a column sum of the stored dy, one rounding per term, in float32 into float32: ~0.6 u "      \
    "||y|| rms, 4 u"

/* Activations: the op (tanh, ReLU) in float32 from the stored input, its output stored. Input
 * rounding moves tanh by |tanh'(x)| u |x| <= u |tanh x|, ReLU by u |y|; output rounding by u |y|:
 * 2 u |y| in all, element by element (a bound, not a statistic), plus the float32 formula's own
 * 4e-7 (tests/test_ops_cuda.c's linear.tanh) and, for fp16, twice half the subnormal spacing
 * 2^-25. */
#define ACT_WHY(fmt)                                                                              \
    "tanh/ReLU in float32 from the input stored in " fmt ", the output stored in " fmt           \
    ": |tanh'(x)| u |x| <= u |y| for the input, u |y| for the output, 2 u in all (a bound), "    \
    "plus float32 tanh's 4e-7"

const cr_precision_tolerance cr_precision_tolerances[] = {
    /* fp32: the reference, up to summation order */
    {"linear.y", CUDARL_PRECISION_FP32, CR_TOL_NORM, 0, 1e-5, FP32_GEMM_WHY},
    {"linear.dx", CUDARL_PRECISION_FP32, CR_TOL_NORM, 0, 1e-5, FP32_GEMM_WHY},
    {"linear.dw", CUDARL_PRECISION_FP32, CR_TOL_NORM, 0, 1e-5, FP32_GEMM_WHY},
    {"linear.db", CUDARL_PRECISION_FP32, CR_TOL_NORM, 0, 1e-5,
     "float32 column sums in a tree order against the CPU's row order"},
    {"conv.y", CUDARL_PRECISION_FP32, CR_TOL_NORM, 0, 1e-5, FP32_GEMM_WHY},
    {"conv.dx", CUDARL_PRECISION_FP32, CR_TOL_NORM, 0, 1e-5, FP32_GEMM_WHY},
    {"conv.dw", CUDARL_PRECISION_FP32, CR_TOL_NORM, 0, 1e-5, FP32_GEMM_WHY},
    {"conv.db", CUDARL_PRECISION_FP32, CR_TOL_NORM, 0, 1e-5,
     "N P Q terms summed in double on the GPU, in float per image on the CPU"},
    {"activation", CUDARL_PRECISION_FP32, CR_TOL_CLOSE, 4e-7, 0,
     "the device's tanh is cr_tanhf op for op; an ulp or two where the CPU build lacks FMA; "
     "ReLU is exact"},

    /* tf32: products' inputs rounded, everything stored float32 */
    {"linear.y", CUDARL_PRECISION_TF32, CR_TOL_NORM, 0, 0x1p-8, TF32_WHY("x and w")},
    {"linear.dx", CUDARL_PRECISION_TF32, CR_TOL_NORM, 0, 0x1p-8, TF32_WHY("dy and w")},
    {"linear.dw", CUDARL_PRECISION_TF32, CR_TOL_NORM, 0, 0x1p-8, TF32_WHY("dy and x")},
    {"linear.db", CUDARL_PRECISION_TF32, CR_TOL_NORM, 0, 1e-5,
     "not a matmul: the float32 column sums of fp32's entry, from float32 dy"},
    {"conv.y", CUDARL_PRECISION_TF32, CR_TOL_NORM, 0, 0x1p-8, TF32_WHY("x and w")},
    {"conv.dx", CUDARL_PRECISION_TF32, CR_TOL_NORM, 0, 0x1p-8, TF32_WHY("dy and w")},
    {"conv.dw", CUDARL_PRECISION_TF32, CR_TOL_NORM, 0, 0x1p-8, TF32_WHY("dy and x")},
    {"conv.db", CUDARL_PRECISION_TF32, CR_TOL_NORM, 0, 1e-5,
     "not a product: fp32's double sums of float32 dy"},
    {"activation", CUDARL_PRECISION_TF32, CR_TOL_CLOSE, 4e-7, 0,
     "activations are stored float32 under tf32: fp32's entry"},

    /* bf16: inputs and activations in bf16, weight gradients float32 */
    BF16_ROW("linear.y", "x, w, b and y", IN2_OUT1),
    BF16_ROW("linear.dx", "dy, w and dx", IN2_OUT1),
    BF16_ROW("linear.dw", "dy and x", IN2_OUT32),
    BF16_ROW("linear.db", "dy", IN1_OUT32),
    BF16_ROW("conv.y", "x, w, b and y", IN2_OUT1),
    BF16_ROW("conv.dx", "dy, w and dx", IN2_OUT1),
    BF16_ROW("conv.dw", "dy and x", IN2_OUT32),
    BF16_ROW("conv.db", "dy", IN1_OUT32),
    {"activation", CUDARL_PRECISION_BF16, CR_TOL_CLOSE, 4e-7, 0x1p-7, ACT_WHY("bf16") BF16},

    /* fp16: as bf16 with fp16's finer significand and narrow range */
    FP16_ROW("linear.y", "x, w, b and y", IN2_OUT1),
    FP16_ROW("linear.dx", "dy, w and dx", IN2_OUT1),
    FP16_ROW("linear.dw", "dy and x", IN2_OUT32),
    FP16_ROW("linear.db", "dy", IN1_OUT32),
    FP16_ROW("conv.y", "x, w, b and y", IN2_OUT1),
    FP16_ROW("conv.dx", "dy, w and dx", IN2_OUT1),
    FP16_ROW("conv.dw", "dy and x", IN2_OUT32),
    FP16_ROW("conv.db", "dy", IN1_OUT32),
    {"activation", CUDARL_PRECISION_FP16, CR_TOL_CLOSE, 4e-7 + 0x1p-24, 0x1p-10,
     ACT_WHY("fp16") " (u = 2^-11), plus 2^-25 twice for fp16's subnormals"},
};

const size_t cr_precision_tolerance_count =
    sizeof cr_precision_tolerances / sizeof cr_precision_tolerances[0];

const cr_precision_tolerance *cr_precision_tolerance_of(const char *op, cudarl_precision p) {
    for (size_t i = 0; i < cr_precision_tolerance_count; i++)
        if (cr_precision_tolerances[i].precision == p &&
            strcmp(cr_precision_tolerances[i].op, op) == 0)
            return &cr_precision_tolerances[i];
    return NULL;
}

double cr_precision_chain_rtol(cudarl_precision p, int products) {
    CUDARL_ASSERT(products >= 1);
    if (p == CUDARL_PRECISION_FP32) return 1e-4;
    const cr_precision_tolerance *t = cr_precision_tolerance_of("linear.y", p);
    CUDARL_ASSERT(t != NULL);
    return products * t->rtol;
}

double cr_precision_twin_rtol(cudarl_precision p) {
    const cr_precision_policy *pol = cr_precision_policy_of(p);
    if (pol->activations == CR_DTYPE_F32) return cr_precision_chain_rtol(p, 1);
    return cr_dtype_unit_roundoff(pol->activations);
}

cudarl_status cr_precision_check_training(cudarl_precision p, cudarl_device_kind device) {
    CR_REQUIRE((int)p >= 0 && (int)p < CUDARL_PRECISION_COUNT,
               "--precision %d is not a precision; choose one of fp32, tf32, bf16, fp16", (int)p);
    CR_REQUIRE(p == CUDARL_PRECISION_FP32 || device != CUDARL_DEVICE_CPU,
               "--precision %s needs the GPU (the CPU trains in fp32 only); use --device cuda, "
               "or --precision fp32", cudarl_precision_name(p));
    return CUDARL_OK; /* every policy: an MLP's bf16/fp16 run op by op, not in the fused kernels */
}

cudarl_status cr_precision_apply(cudarl_ctx *ctx, cudarl_precision p, int *changed) {
    *changed = 0;
    CR_TRY(cr_precision_check_training(p, ctx->kind));
#ifdef CUDARL_WITH_CUDA
    /* tf32: cuBLAS's TF32 math mode for every fp32 product; bf16, fp16: the products that go
     * through cr_cuda_sgemm (linear layers, heads) take their inputs rounded to the format
     * (cr_cuda_set_gemm_precision), the conv products too (the training handle of
     * convnet_cuda.h converts them itself) */
    if (ctx->kind == CUDARL_DEVICE_CUDA && p == CUDARL_PRECISION_TF32) {
        CR_TRY(cr_convnet_cuda_set_tf32(ctx, 1));
        *changed = 1;
    } else if (ctx->kind == CUDARL_DEVICE_CUDA && p != CUDARL_PRECISION_FP32) {
        CR_TRY(cr_cuda_set_gemm_precision(ctx, p));
        *changed = 1;
    }
#endif
    return CUDARL_OK;
}

const char *cr_precision_training_summary(cudarl_precision p) {
    switch (p) {
    case CUDARL_PRECISION_TF32:
        return "the cuBLAS products (conv GEMMs, linear layers) on TF32 tensor cores, sums and "
               "everything else fp32";
    case CUDARL_PRECISION_BF16:
        return "every conv and linear product's inputs in bf16 (fp32 sums; an MLP runs op by "
               "op, not in the fused CartPole kernels); weights, Adam, losses and activations "
               "fp32; no loss scaling";
    case CUDARL_PRECISION_FP16:
        return "every conv and linear product's inputs in fp16 (fp32 sums; an MLP runs op by "
               "op, not in the fused CartPole kernels); weights, Adam, losses and activations "
               "fp32; dynamic loss scaling (2^16 to start, halved and the step skipped on "
               "inf/NaN, doubled after 2,000 clean steps)";
    default:
        return "fp32 throughout";
    }
}

void cr_precision_restore(cudarl_ctx *ctx) {
#ifdef CUDARL_WITH_CUDA
    if (ctx->kind == CUDARL_DEVICE_CUDA) {
        (void)cr_convnet_cuda_set_tf32(ctx, 0);
        (void)cr_cuda_set_gemm_precision(ctx, CUDARL_PRECISION_FP32);
    }
#else
    (void)ctx;
#endif
}
