// CUDNN_CHECK: a failed cuDNN call inside an op or a backward is a bug (its plan validated every
// shape at setup): print the call and cuDNN's message, and abort, as CUDA_CHECK does. Shared by
// the cuDNN conv engine (conv2d_cudnn.cu) and the igemm training engine's backward
// (nn/convnet_half_train.cu); each keeps its own CUDNN_TRY for setup, whose messages differ.
// Builds with cuDNN only.
#ifndef CUDARL_CUDNN_CHECK_CUH
#define CUDARL_CUDNN_CHECK_CUH

#include <cudnn.h>

#include "ops/cuda/cuda_common.cuh"

#define CUDNN_CHECK(expr)                                                               \
    do {                                                                                \
        cudnnStatus_t cudnn_check_s_ = (expr);                                          \
        if (cudnn_check_s_ != CUDNN_STATUS_SUCCESS)                                     \
            cr_cuda_fail(#expr, cudnnGetErrorString(cudnn_check_s_), __FILE__, __LINE__); \
    } while (0)

#endif
