/* Device memory in use (total - free, cudaMemGetInfo) on the current device; 0 on error. */
#ifndef CUDARL_CUDA_MEMINFO_H
#define CUDARL_CUDA_MEMINFO_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif
size_t cr_cuda_bytes_in_use(void);
#ifdef __cplusplus
}
#endif
#endif
