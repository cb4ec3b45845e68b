// Error checks of the CUDA benchmarks: a failed CUDA call (CK) or cudarl call (OK) prints where
// and why, then exits 1. A benchmark stops at the first failure rather than timing broken work.
#ifndef CUDARL_BENCH_CHECK_CUH
#define CUDARL_BENCH_CHECK_CUH

#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

#include "cudarl.h"

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)
#define OK(x)                                                                                  \
    do {                                                                                       \
        if ((x) != CUDARL_OK) {                                                                \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudarl_last_error());  \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

#endif
