/* Compiler hints shared by the vectorised CPU kernels. Neither changes a result. */
#ifndef CUDARL_OPS_CPU_SIMD_H
#define CUDARL_OPS_CPU_SIMD_H

#include <math.h>

/* Fused multiply-add where the hardware has it (one rounding, twice the throughput, the same
 * roundings as the GPU twin's fmaf). Fixed per build, so never dependent on the thread count. */
#if defined(FP_FAST_FMAF)
#define CR_FMA(a, b, c) fmaf((a), (b), (c))
#else
#define CR_FMA(a, b, c) ((a) * (b) + (c))
#endif

/* gcc on an AVX-512 machine keeps to 256-bit vectors unless told; the kernels run faster with
 * 512-bit ones (bench/RESULTS.md, CPU convolutions). */
#if defined(__AVX512F__) && defined(__GNUC__) && !defined(__clang__)
#define CR_VECTOR_TARGET __attribute__((target("prefer-vector-width=512")))
#else
#define CR_VECTOR_TARGET
#endif

#endif
