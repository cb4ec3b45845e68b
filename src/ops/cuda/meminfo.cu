// Device memory in use, for the trainer's check that memory does not grow after setup.
#include <cuda_runtime.h>

#include "ops/cuda/meminfo.h"

extern "C" size_t cr_cuda_bytes_in_use(void) {
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return total_b - free_b;
}
