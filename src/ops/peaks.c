/* Dense FLOPs per SM and clock by architecture and precision (backend.h's cr_peaks): the table
 * the CUDA backend's `peaks` multiplies by the SM count and clock the runtime reports. Plain C,
 * in every build, so that the CPU tests check it. */
#include "ops/backend.h"

/* FP32 lanes per SM: 64 on Volta, Turing and A100 (sm_70/72/75/80); 128 on sm_86 and later
 * (Ampere GeForce, Orin, Ada, Hopper, Blackwell). An FMA is 2 FLOPs. */
static int fp32_per_sm_clock(int major, int minor) {
    return 2 * (major < 8 || (major == 8 && minor == 0) ? 64 : 128);
}

/* Dense fp16 tensor-core FLOPs per SM and clock with fp32 accumulation; 0: not in the table.
 *   sm_70/72 (V100, Xavier), sm_75 (T4): 8 tensor cores x 64 FMAs      1024
 *   sm_80 (A100), sm_87 (Orin): 4 tensor cores x 256 FMAs               2048
 *   sm_86, sm_89 (A10/A40, L4/L40), sm_120 (RTX PRO 6000): 4 x 128 FMAs 1024
 *   sm_90 (H100, H200): 4 x 512 FMAs                                    4096
 *   sm_100/103 (B200, B300)                                             8192
 * e.g. A100: 108 SMs x 2048 x 1.41 GHz = 312 TFLOP/s; H100 SXM: 132 x 4096 x 1.83 GHz = 989
 * (NVIDIA's figures; the runtime reports H100/H200 SXM's 1.98 GHz maximum boost clock, which
 * gives 1070). */
static int fp16_tensor_per_sm_clock(int major, int minor) {
    switch (major * 10 + minor) {
    case 70: case 72: case 75: case 86: case 89: case 120: return 1024;
    case 80: case 87: return 2048;
    case 90: return 4096;
    case 100: case 103: return 8192;
    default: return 0;
    }
}

int cr_peak_flops_per_sm_clock(int major, int minor, cudarl_precision precision) {
    const int fp16 = fp16_tensor_per_sm_clock(major, minor);
    switch (precision) {
    case CUDARL_PRECISION_FP32: return fp32_per_sm_clock(major, minor);
    case CUDARL_PRECISION_FP16: return fp16;
    case CUDARL_PRECISION_BF16: return major >= 8 ? fp16 : 0; /* bf16 and tf32: from Ampere */
    case CUDARL_PRECISION_TF32: return major >= 8 ? fp16 / 2 : 0;
    default: return 0;
    }
}
