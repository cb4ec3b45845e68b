/* The communicator of a data-parallel job (docs/multigpu.md): the ranks of one MPI job, each a
 * process with its own envs and a replica of the networks. Device plumbing, so the ops layer's:
 * ops/cpu/comm_mpi.c over MPI (built with CUDARL_MPI), ops/comm_single.c (one rank, built
 * without MPI). A process that mpirun did not start, or that never called cr_comm_init, is rank
 * 0 of 1 and every call below is a copy or nothing. Every collective is called by every rank in
 * the same order; an MPI error ends the whole job (MPI's default handler aborts). Results are
 * in rank order and identical on every rank, whatever algorithm MPI picks. */
#ifndef CUDARL_OPS_COMM_H
#define CUDARL_OPS_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

typedef struct cudarl_ctx cudarl_ctx;

#ifdef __cplusplus
extern "C" {
#endif

/* The world size the launcher's environment names (OMPI_COMM_WORLD_SIZE, PMI_SIZE, or
 * PMIX_RANK's job, taken as 1 when only a rank is named), or 0 when no launcher started this
 * process. Read by cr_comm_init, never by a plain run. */
int cr_comm_launched_size(void);
/* 1 when this build has MPI (CUDARL_MPI), else 0. */
int cr_comm_built(void);
/* Joins the job mpirun started (MPI_Init) when cr_comm_launched_size() > 0; nothing otherwise.
 * Without MPI, a launch of 2 or more ranks is refused naming the rebuild. Once per process. */
cudarl_status cr_comm_init(void);
/* Leaves the job (MPI_Finalize) if cr_comm_init joined one. */
void cr_comm_finalize(void);
int cr_comm_rank(void);
int cr_comm_size(void);
/* recv (size * bytes) = every rank's `send` (bytes), in rank order, on every rank. */
void cr_comm_allgather(const void *send, void *recv, size_t bytes);
/* recv (size * bytes, rank 0 only; other ranks may pass NULL) = every rank's send, rank order. */
void cr_comm_gather0(const void *send, void *recv, size_t bytes);
/* buf (bytes) = rank 0's buf on every rank. */
void cr_comm_bcast0(void *buf, size_t bytes);
/* buf (n floats) = the mean of every rank's buf: gathered into scratch (size * n floats), summed
 * in rank order, times 1 / size; the same bits on every rank. */
void cr_comm_mean_f32(float *buf, float *scratch, size_t n);
/* FNV-1a of `bytes` bytes at p, continuing from h (start: CR_COMM_FNV1A_START): the ranks compare
 * their weights' hashes. */
#define CR_COMM_FNV1A_START 1469598103934665603ull
uint64_t cr_comm_fnv1a(uint64_t h, const void *p, size_t bytes);
/* FNV-1a's step taken on 8-byte little-endian words (the bytes past the last whole word one by
 * one): the same use, a multiply per 8 bytes, for weights of megabytes hashed every iteration
 * (the Nature-CNN's weights and moments with --separate-critic: 40 MB, 15 ms on a 2-core dev
 * machine where the byte-wise hash takes 58). */
uint64_t cr_comm_fnv1a_words(uint64_t h, const void *p, size_t bytes);
/* `bytes` of host memory aligned to CR_ARENA_ALIGN (free()); without it, says so naming `what`
 * and ends the whole job, since the other ranks would wait for this one in a collective. */
void *cr_comm_host_alloc(size_t bytes, const char *what);
/* out (n) = (all[0*n+i] + all[1*n+i] + ... + all[(ranks-1)*n+i]) * (1 / ranks), summed in rank
 * order: the reduction of cr_comm_mean_f32, and the CPU twin of the CUDA kernel of
 * cr_comm_dev_mean_f32 (the same bits; test_nccl_cuda). */
void cr_comm_sum_ranks_f32(const float *all, float *out, size_t n, int ranks);

/* ---- the device side: a GPU context's gradient mean over NCCL (docs/multigpu.md) ----
 * A data-parallel run on GPUs exchanges its gradients where they are, in device memory, over
 * NCCL; the host exchanges above (metrics, checkpoints, the communicator's own id) stay on the
 * job's host communicator. A CPU context's device side is the host side. */

/* 1 when this build reduces device buffers over NCCL (CUDA and CUDARL_NCCL), else 0. */
int cr_comm_nccl_built(void);
/* --num-gpus: this process is a job of its own, `n` ranks of one GPU each, in one process (n = 1:
 * this thread, a job of one rank that still exchanges over NCCL; n > 1: the threads of
 * cr_comm_run_threads). Refused when mpirun started the process, n < 1, n over the GPU count,
 * or without NCCL. Before cr_comm_dev_open. */
cudarl_status cr_comm_local_gpus(int n);
/* This rank's index among the job's ranks on its host (the launcher's OMPI_COMM_WORLD_LOCAL_RANK,
 * MPI_LOCALRANKID, PMI_LOCAL_RANK or SLURM_LOCALID; the rank where none is set; 0 outside a job):
 * the GPU a rank opens. */
int cr_comm_local_rank(void);
/* Runs fn(rank, arg) on n threads, rank 0 on the calling thread, as the ranks of a job of n in
 * this process (--num-gpus n): meanwhile every host exchange above (cr_comm_rank, _size,
 * _allgather, _gather0, _bcast0) is the calling thread's, through shared memory and a barrier.
 * A rank whose fn returns non-zero ends the process with that code (the others would wait for it
 * in their next exchange), as MPI_Abort ends a job. Returns rank 0's result once every thread
 * ended; refused under mpirun or inside another group. */
int cr_comm_run_threads(int n, int (*fn)(int rank, void *arg), void *arg);
/* The calling thread's rank in the group of cr_comm_run_threads, or -1 outside one (the host
 * communicators ask it first). */
int cr_comm_thread_rank(void);
int cr_comm_thread_size(void);
void cr_comm_thread_allgather(const void *send, void *recv, size_t bytes);
void cr_comm_thread_gather0(const void *send, void *recv, size_t bytes);
void cr_comm_thread_bcast0(void *buf, size_t bytes);
/* The --num-gpus of cr_comm_local_gpus, or 0. */
int cr_comm_local_gpu_count(void);
/* 1 when a run on a GPU context should open the device communicator: a job of 2 or more ranks,
 * or --num-gpus. */
int cr_comm_dev_wanted(void);
/* Opens ctx's device communicator (ctx->comm): on a GPU, an NCCL communicator of the job's ranks
 * (rank 0 makes the id, cr_comm_bcast0 hands it out, every rank joins), then one exchange of n
 * floats through `scratch` (device memory, size * n floats) so that NCCL's connections are made
 * before a graph captures the exchanges; on the CPU, nothing. A collective. Refused naming the
 * rebuild when the build has no NCCL. */
cudarl_status cr_comm_dev_open(cudarl_ctx *ctx, float *scratch, size_t n);
/* Closes what cr_comm_dev_open opened (nothing if none). */
void cr_comm_dev_close(cudarl_ctx *ctx);
/* buf (n floats, ctx's memory) = the mean of every rank's buf, as cr_comm_mean_f32: gathered into
 * scratch (size * n floats, ctx's memory), summed in rank order, times 1 / size; the same bits
 * on every rank. On a GPU: ncclAllGather and one summing kernel on ctx's stream (capturable). */
void cr_comm_dev_mean_f32(cudarl_ctx *ctx, float *buf, float *scratch, size_t n);

/* Ends the whole job with `code`: this process, and mpirun the others (MPI_Abort). Without a
 * job, exit(code). */
#ifdef __cplusplus
[[noreturn]] void cr_comm_abort(int code); /* (comm_nccl.cu includes this header) */
#else
_Noreturn void cr_comm_abort(int code);
#endif

#ifdef __cplusplus
}
#endif

#endif
