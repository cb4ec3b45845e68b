/* NVTX ranges around the phases of the loops, visible in Nsight Systems. Compiled in with the
 * CUDA backend (NVTX 3 is header-only and costs a branch when no tool is attached). */
#ifndef CUDARL_NVTX_H
#define CUDARL_NVTX_H

#ifdef CUDARL_WITH_CUDA
#include <nvtx3/nvToolsExt.h>
#define CR_RANGE_PUSH(name) nvtxRangePushA(name)
#define CR_RANGE_POP() nvtxRangePop()
#else
#define CR_RANGE_PUSH(name) ((void)0)
#define CR_RANGE_POP() ((void)0)
#endif

#endif
