/* --profile's models: cr_convnet_flops (nn/convnet.h) against multiply-adds counted by hand, and
 * cr_peak_flops_per_sm_clock (ops/backend.h) times SM counts and clocks against the peaks NVIDIA
 * quotes for known GPUs.
 *
 * FLOPs per row, 2 per multiply-add (MAC); a conv's MACs are its output (P Q K) times its window
 * (R S C), a linear's I O:
 *   nature-cnn on (4, 84, 84), ppo heads, A actions:
 *     conv1 20*20*32 * 8*8*4  = 3276800      conv2 9*9*64 * 4*4*32 = 2654208
 *     conv3 7*7*64 * 3*3*64   = 1806336      fc    3136*512         = 1605632
 *     trunk 9342976; heads 512 (A + 1): A 6 -> 3584, total 9346560 (A 2, CartPolePixels-v1:
 *     1536, 9344512 -> 18689024, 2 * (2 * 9344512 - 3276800) = 30824448)
 *     forward 2 * 9346560 = 18693120
 *     backward: dW of every layer (9346560) + dX of all but conv1 (9346560 - 3276800), times 2:
 *       2 * (2 * 9346560 - 3276800) = 30832640
 *   nature-cnn, dqn head (512 A), A 6: 9342976 + 3072 = 9346048 -> 18692096, 30830592
 *   minatar-cnn on (C, 10, 10), ppo heads: conv 8*8*16 * 3*3*C = 9216 C, fc 1024*128 = 131072,
 *     heads 128 (A + 1); C 4, A 6: 36864 + 131072 + 896 = 168832 -> 337664,
 *     2 * (2 * 168832 - 36864) = 601600
 *   minatar-cnn, C 10, dqn head, A 18: 92160 + 131072 + 2304 = 225536 -> 451072,
 *     2 * (2 * 225536 - 92160) = 717824
 *
 * Peaks (dense; clocks as NVIDIA's datasheets state them):
 *   H100/H200 SXM, sm_90, 132 SMs: bf16/fp16 4096 x 132 x 1.83 GHz = 989.4 TFLOP/s, tf32 494.7;
 *     fp32 256 x 132 x 1.98 GHz = 66.9
 *   A100 SXM, sm_80, 108 SMs at 1.41 GHz: bf16 311.9, tf32 155.9, fp32 19.5
 *   Jetson AGX Orin 64GB, sm_87, 16 SMs at 1.3 GHz: fp16 42.6, fp32 5.3
 *   V100 SXM2, sm_70, 80 SMs at 1.53 GHz: fp16 125.3, fp32 15.7; no bf16 or tf32 units
 *   L40S, sm_89, 142 SMs at 2.52 GHz: fp16 366.4, tf32 183.2, fp32 91.6 */
#include <stdio.h>

#include "check.h"
#include "nn/convnet.h"
#include "ops/backend.h"

static void plan(cr_convnet *n, const char *name, int c, int h, int w, cr_convnet_heads heads,
                 int A) {
    cr_convnet_spec spec;
    CHECK_OK(cr_convnet_spec_named(&spec, name, c, h, w, heads, A));
    CHECK_OK(cr_convnet_plan(n, &spec));
}

static void check_flops(const char *what, const cr_convnet *n, double fwd, double bwd) {
    double f = -1, b = -1;
    cr_convnet_flops(n, &f, &b);
    CHECK_MSG(f == fwd && b == bwd, "%s: forward %.0f backward %.0f, expected %.0f and %.0f", what,
              f, b, fwd, bwd);
}

static void test_flops(void) {
    cr_convnet n;
    plan(&n, "nature-cnn", 4, 84, 84, CR_CONVNET_PPO, 6);
    check_flops("nature-cnn ppo A 6", &n, 18693120, 30832640);
    plan(&n, "nature-cnn", 4, 84, 84, CR_CONVNET_DQN, 6);
    check_flops("nature-cnn dqn A 6", &n, 18692096, 30830592);
    plan(&n, "nature-cnn", 4, 84, 84, CR_CONVNET_PPO, 2); /* CartPolePixels-v1 */
    check_flops("nature-cnn ppo A 2", &n, 18689024, 30824448);
    plan(&n, "minatar-cnn", 4, 10, 10, CR_CONVNET_PPO, 6);
    check_flops("minatar-cnn ppo C 4 A 6", &n, 337664, 601600);
    plan(&n, "minatar-cnn", 10, 10, 10, CR_CONVNET_DQN, 18);
    check_flops("minatar-cnn dqn C 10 A 18", &n, 451072, 717824);
    printf("flops: nature-cnn 18.69 MFLOP forward, 30.83 backward per row (ppo, A 6); "
           "minatar-cnn 0.338 / 0.602 (C 4, A 6); dqn heads\n");
}

/* sms x the table's rate x clock, in TFLOP/s */
static double peak(int major, int minor, cudarl_precision p, int sms, double ghz) {
    return sms * (double)cr_peak_flops_per_sm_clock(major, minor, p) * ghz * 1e9 / 1e12;
}

static void test_peaks(void) {
    const cudarl_precision F32 = CUDARL_PRECISION_FP32, T32 = CUDARL_PRECISION_TF32;
    const cudarl_precision B16 = CUDARL_PRECISION_BF16, F16 = CUDARL_PRECISION_FP16;
    CHECK_CLOSE("H100 bf16", peak(9, 0, B16, 132, 1.83), 989.4, 0.1, 0);
    CHECK_CLOSE("H100 fp16", peak(9, 0, F16, 132, 1.83), 989.4, 0.1, 0);
    CHECK_CLOSE("H100 tf32", peak(9, 0, T32, 132, 1.83), 494.7, 0.1, 0);
    CHECK_CLOSE("H100 fp32", peak(9, 0, F32, 132, 1.98), 66.9, 0.1, 0);
    CHECK_CLOSE("A100 bf16", peak(8, 0, B16, 108, 1.41), 311.9, 0.1, 0);
    CHECK_CLOSE("A100 tf32", peak(8, 0, T32, 108, 1.41), 155.9, 0.1, 0);
    CHECK_CLOSE("A100 fp32", peak(8, 0, F32, 108, 1.41), 19.5, 0.1, 0);
    CHECK_CLOSE("Orin fp16", peak(8, 7, F16, 16, 1.3), 42.6, 0.1, 0);
    CHECK_CLOSE("Orin fp32", peak(8, 7, F32, 16, 1.3), 5.3, 0.1, 0);
    CHECK_CLOSE("V100 fp16", peak(7, 0, F16, 80, 1.53), 125.3, 0.1, 0);
    CHECK_CLOSE("V100 fp32", peak(7, 0, F32, 80, 1.53), 15.7, 0.1, 0);
    CHECK_CLOSE("L40S fp16", peak(8, 9, F16, 142, 2.52), 366.4, 0.1, 0);
    CHECK_CLOSE("L40S tf32", peak(8, 9, T32, 142, 2.52), 183.2, 0.1, 0);
    CHECK_CLOSE("L40S fp32", peak(8, 9, F32, 142, 2.52), 91.6, 0.1, 0);
    /* formats the units lack, and an architecture the table does not know: 0, not a guess */
    CHECK(cr_peak_flops_per_sm_clock(7, 0, B16) == 0);
    CHECK(cr_peak_flops_per_sm_clock(7, 5, T32) == 0);
    CHECK(cr_peak_flops_per_sm_clock(11, 0, B16) == 0);
    CHECK(cr_peak_flops_per_sm_clock(6, 1, F16) == 0);
    printf("peaks: H100 989.4 bf16 / 494.7 tf32 / 66.9 fp32 TFLOP/s, A100, Orin, V100, L40S as "
           "quoted; unknown architectures and missing formats 0\n");
}

int main(void) {
    test_flops();
    test_peaks();
    printf("test_profile_model: all checks passed\n");
    return 0;
}
