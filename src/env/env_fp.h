/* Floating point for the step headers that the C compiler and nvcc both compile (CR_HD code of
 * cartpole/, classic/): float64 arithmetic that is never fused into a multiply-add, so that the
 * CPU, the CUDA twin and numpy, which never fuses a*b+c, round alike.
 *
 * Every double operation that could pair into an FMA goes through CR_DMUL/CR_DADD/CR_DSUB/
 * CR_DDIV. On the device they are the __dmul_rn/__dadd_rn/__dsub_rn/__ddiv_rn intrinsics, which
 * nvcc documents as never merged into an FMA, so the result does not depend on -fmad or on how a
 * build compiles the .cu file. On the host they are the plain operators: GCC does not contract in
 * ISO C mode (-std=c11), and for clang CR_NO_CONTRACT opens each function that does arithmetic
 * with `#pragma STDC FP_CONTRACT OFF` (scoped to that body). The host copies are meant for C
 * translation units; nvcc's host pass (g++ in GNU mode may contract on aarch64) is not used for
 * them. */
#ifndef CUDARL_ENV_FP_H
#define CUDARL_ENV_FP_H

#ifdef __CUDA_ARCH__
#define CR_DADD(a, b) __dadd_rn((a), (b))
#define CR_DSUB(a, b) __dsub_rn((a), (b))
#define CR_DMUL(a, b) __dmul_rn((a), (b))
#define CR_DDIV(a, b) __ddiv_rn((a), (b))
#else
#define CR_DADD(a, b) ((a) + (b))
#define CR_DSUB(a, b) ((a) - (b))
#define CR_DMUL(a, b) ((a) * (b))
#define CR_DDIV(a, b) ((a) / (b))
#endif

#if defined(__clang__) && !defined(__CUDACC__)
#define CR_NO_CONTRACT _Pragma("STDC FP_CONTRACT OFF")
#else
#define CR_NO_CONTRACT
#endif

#endif
