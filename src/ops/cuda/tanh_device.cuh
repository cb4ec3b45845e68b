// tanh on the device, bit for bit the formula of cr_tanhf in src/ops/cpu/tanh.c (Cephes' tanhf
// with its expf inlined): the same coefficients, the same operations in the same order, fmaf
// where the CPU's CR_FMA is fmaf (every build with hardware FMA), and every other product, sum
// and quotient spelled as a _rn intrinsic so nvcc cannot fuse it into an FMA the CPU does not
// do. test_ops_cuda holds the two equal. Until the formula moves into one CR_HD header shared
// with the CPU, a change to either copy must be made to both.
#ifndef CUDARL_TANH_DEVICE_CUH
#define CUDARL_TANH_DEVICE_CUH

#include <stdint.h>

// e^t for t in [0, 19] (no overflow or underflow handling needed there).
__device__ __forceinline__ float cr_exp_small_device(float t) {
    const float magic = 12582912.0f; // 1.5 * 2^23: adding it rounds to an integer
    float kf = fmaf(t, 1.44269504088896341f, magic);
    uint32_t kbits = __float_as_uint(kf);
    kf = __fsub_rn(kf, magic);
    float r = fmaf(kf, -0.693359375f, t);
    r = fmaf(kf, 2.12194440e-4f, r);
    float p = 1.9875691500e-4f;
    p = fmaf(p, r, 1.3981999507e-3f);
    p = fmaf(p, r, 8.3334519073e-3f);
    p = fmaf(p, r, 4.1665795894e-2f);
    p = fmaf(p, r, 1.6666665459e-1f);
    p = fmaf(p, r, 5.0000001201e-1f);
    p = __fadd_rn(fmaf(p, __fmul_rn(r, r), r), 1.0f);
    uint32_t sbits = (kbits - 0x4B400000u + 127u) << 23; // 2^n from n in kf's low bits
    return __fmul_rn(p, __uint_as_float(sbits));
}

// 2 / d for d in [2, e^19 + 1]: __fdiv_rn's fast path without its slow-path guard (the lab
// checks all 2^32 inputs of the tanh below against cr_tanhf_device: the same bits).
__device__ __forceinline__ float cr_two_over_device(float d) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));
    float e = fmaf(-d, r, 1.0f);
    r = fmaf(r, e, r);
    float q = __fmul_rn(r, 2.0f);
    float rem = fmaf(-d, q, 2.0f);
    return fmaf(r, rem, q);
}

// The tanh of Cephes' tanhf (cr_tanhf in src/ops/cpu/tanh.c). FAST: 2 / (e + 1) by
// cr_two_over_device instead of __fdiv_rn - the same bits, fewer instructions and no branch.
template <bool FAST> __device__ __forceinline__ float cr_tanhf_body(float x) {
    float ax = fabsf(x);
    float z = __fmul_rn(x, x);
    float q = fmaf(-5.70498872745e-3f, z, 2.06390887954e-2f);
    q = fmaf(q, z, -5.37397155531e-2f);
    q = fmaf(q, z, 1.33314422036e-1f);
    q = fmaf(q, z, -3.33332819422e-1f);
    float small = fmaf(__fmul_rn(q, z), ax, ax);
    float e = cr_exp_small_device(__fmul_rn(2.0f, ax > 9.5f ? 9.5f : ax));
    float d = __fadd_rn(e, 1.0f);
    float big = __fsub_rn(1.0f, FAST ? cr_two_over_device(d) : __fdiv_rn(2.0f, d));
    return copysignf(ax < 0.625f ? small : big, x);
}

__device__ __forceinline__ float cr_tanhf_device(float x) { return cr_tanhf_body<false>(x); }

// cr_tanhf_device, bit for bit, with cr_two_over_device in place of __fdiv_rn.
__device__ __forceinline__ float cr_tanhf_fast_device(float x) { return cr_tanhf_body<true>(x); }

#endif
