/* What the CUDA runtime reports about this machine (compiled only with the CUDA backend). */
#ifndef CUDARL_CUDA_INFO_H
#define CUDARL_CUDA_INFO_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Number of usable CUDA devices; 0 with a reason in `why` when there are none. */
int cr_cuda_device_count(char *why, size_t cap);
/* Appends one line per device (name, compute capability, memory, integrated) to buf. */
void cr_cuda_describe(char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
