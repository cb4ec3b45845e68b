// Device discovery for `cudarl info` and device selection.
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "ops/cuda/cuda_info.h"

extern "C" int cr_cuda_device_count(char *why, size_t cap) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(why, cap, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
        cudaGetLastError();
        return 0;
    }
    if (n == 0) snprintf(why, cap, "the CUDA runtime sees no GPU");
    return n;
}

extern "C" void cr_cuda_describe(char *buf, size_t cap) {
    char why[256];
    int n = cr_cuda_device_count(why, sizeof why);
    size_t len = strlen(buf);
    if (n == 0) {
        snprintf(buf + len, cap - len, "  cuda devices: none (%s)\n", why);
        return;
    }
    int rt = 0, drv = 0;
    cudaRuntimeGetVersion(&rt);
    cudaDriverGetVersion(&drv);
    len = strlen(buf);
    snprintf(buf + len, cap - len, "  cuda runtime %d.%d, driver %d.%d\n", rt / 1000,
             (rt % 1000) / 10, drv / 1000, (drv % 1000) / 10);
    for (int i = 0; i < n; i++) {
        cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
        len = strlen(buf);
        snprintf(buf + len, cap - len,
                 "  cuda:%d %s, sm_%d%d, %d SMs, %.1f GiB%s\n", i, p.name, p.major, p.minor,
                 p.multiProcessorCount, (double)p.totalGlobalMem / (1 << 30),
                 p.integrated ? ", integrated (shares host memory)" : "");
    }
}
