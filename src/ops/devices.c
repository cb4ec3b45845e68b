/* The CUDA devices this process sees, for callers of the public API (cudarl.h). */
#include <stdio.h>

#include "core/core.h"
#ifdef CUDARL_WITH_CUDA
#include <cuda_runtime.h>

#include "ops/cuda/cuda_info.h"
#endif

int cudarl_cuda_device_count(void) {
#ifdef CUDARL_WITH_CUDA
    char why[256];
    return cr_cuda_device_count(why, sizeof why);
#else
    return 0;
#endif
}

cudarl_status cudarl_cuda_device_name(int index, char *buf, size_t cap) {
    if (!buf || cap == 0) return cr_fail(CUDARL_ERR_INVALID_ARG, "no buffer for the device name");
    buf[0] = 0;
#ifdef CUDARL_WITH_CUDA
    char why[256];
    int n = cr_cuda_device_count(why, sizeof why);
    if (n == 0) return cr_fail(CUDARL_ERR_UNSUPPORTED, "no usable CUDA device (%s)", why);
    if (index < 0 || index >= n)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "cuda:%d does not exist: this machine has %d CUDA "
                       "device%s (0..%d)", index, n, n == 1 ? "" : "s", n - 1);
    struct cudaDeviceProp prop;
    cudaError_t e = cudaGetDeviceProperties(&prop, index);
    if (e != cudaSuccess) {
        cudaGetLastError(); /* clear a non-sticky error so later calls start clean */
        return cr_fail(CUDARL_ERR_CUDA, "cudaGetDeviceProperties(cuda:%d): %s", index,
                       cudaGetErrorString(e));
    }
    snprintf(buf, cap, "%s", prop.name);
    return CUDARL_OK;
#else
    (void)index;
    return cr_fail(CUDARL_ERR_UNSUPPORTED, "this cudarl was built without CUDA");
#endif
}
