// The device side of the communicator over NCCL (ops/comm.h; docs/multigpu.md), built with
// CUDARL_NCCL: a GPU context's gradient mean in device memory. The exchange is an ncclAllGather
// of every rank's vector into a device scratch, then one kernel sums the R vectors in rank order
// and scales by 1/R, as cr_comm_sum_ranks_f32 does on the CPU: the same bits on every rank,
// whatever ring or tree NCCL picks (an ncclAllReduce's order is NCCL's, and not specified).
// The NCCL communicator's id travels over the job's host communicator (MPI_Bcast under
// mpirun, nothing to send for --num-gpus 1).
#include <stdio.h>
#include <stdlib.h>

#include <nccl.h>

#include "ops/cuda/cuda_common.cuh"

extern "C" {
#include "ops/comm.h"
}

// The job cannot go on without its exchange: every rank would wait for this one.
[[noreturn]] static void nccl_fail(const char *what, ncclResult_t r) {
    fprintf(stderr, "cudarl: NCCL %s failed: %s (%s); ending the job (NCCL_DEBUG=WARN says "
            "more)\n", what, ncclGetErrorString(r), ncclGetLastError(NULL));
    cr_comm_abort(1);
}

#define NCCL_CHECK(expr)                              \
    do {                                              \
        ncclResult_t nccl_check_r_ = (expr);          \
        if (nccl_check_r_ != ncclSuccess) nccl_fail(#expr, nccl_check_r_); \
    } while (0)

// out[i] = (all[i] + all[n + i] + ... + all[(R-1) n + i]) * inv, in rank order, rounded as the
// CPU's (no contraction: the sums and the product each their own rounding).
__global__ void sum_ranks_kernel(const float *all, float *out, size_t n, int ranks, float inv) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float s = all[i];
        for (int r = 1; r < ranks; r++) s = __fadd_rn(s, all[(size_t)r * n + i]);
        out[i] = __fmul_rn(s, inv);
    }
}

extern "C" void cr_cuda_sum_ranks_f32(cudarl_ctx *ctx, const float *all, float *out, size_t n,
                                      int ranks) {
    if (n == 0) return;
    size_t blocks = (n + CR_CUDA_THREADS - 1) / CR_CUDA_THREADS;
    if (blocks > 4096) blocks = 4096;
    sum_ranks_kernel<<<(unsigned)blocks, CR_CUDA_THREADS, 0, cr_stream(ctx)>>>(
        all, out, n, ranks, 1.0f / (float)ranks);
    CR_CUDA_LAUNCHED(ctx);
}

extern "C" cudarl_status cr_nccl_open(cudarl_ctx *ctx, float *scratch, size_t n) {
    CUDARL_ASSERT(ctx->kind == CUDARL_DEVICE_CUDA && !ctx->comm);
    const int R = cr_comm_size(), rank = cr_comm_rank();
    ncclUniqueId id;
    int32_t st = 0;
    if (rank == 0) st = (int32_t)ncclGetUniqueId(&id);
    cr_comm_bcast0(&st, sizeof st); // every rank fails with rank 0, none waits in the init
    if (st != ncclSuccess)
        return cr_fail(CUDARL_ERR_IO, "NCCL could not make the job's id (ncclGetUniqueId: %s); "
                       "NCCL_DEBUG=WARN says why (often: no network interface NCCL may use, "
                       "NCCL_SOCKET_IFNAME)", ncclGetErrorString((ncclResult_t)st));
    cr_comm_bcast0(&id, sizeof id);
    CUDA_CHECK(cudaSetDevice(ctx->device_index));
    ncclComm_t comm;
    ncclResult_t r = ncclCommInitRank(&comm, R, id, rank);
    if (r != ncclSuccess)
        return cr_fail(CUDARL_ERR_IO, "NCCL could not join rank %d of %d on cuda:%d "
                       "(ncclCommInitRank: %s, %s); two ranks on one GPU are refused by NCCL "
                       "(give each rank its own GPU: mpirun -np R with R <= the GPUs per host); "
                       "NCCL_DEBUG=INFO says more", rank, R, ctx->device_index,
                       ncclGetErrorString(r), ncclGetLastError(NULL));
    ctx->comm = comm;
    // one exchange now, outside any capture: NCCL makes its connections at a communicator's
    // first collectives, which a graph capture cannot hold
    if (n > 0) {
        CUDA_CHECK(cudaMemsetAsync(scratch, 0, (size_t)R * n * sizeof(float), cr_stream(ctx)));
        NCCL_CHECK(ncclAllGather(scratch + (size_t)rank * n, scratch, n, ncclFloat, comm,
                                 cr_stream(ctx)));
        CUDA_CHECK(cudaStreamSynchronize(cr_stream(ctx)));
    }
    return CUDARL_OK;
}

extern "C" void cr_nccl_close(cudarl_ctx *ctx) {
    if (!ctx->comm) return;
    ncclCommDestroy((ncclComm_t)ctx->comm);
    ctx->comm = NULL;
}

extern "C" void cr_nccl_mean_f32(cudarl_ctx *ctx, float *buf, float *scratch, size_t n) {
    CUDARL_ASSERT(ctx->comm); // cr_nccl_open first
    NCCL_CHECK(ncclAllGather(buf, scratch, n, ncclFloat, (ncclComm_t)ctx->comm, cr_stream(ctx)));
    cr_cuda_sum_ranks_f32(ctx, scratch, buf, n, cr_comm_size());
}
