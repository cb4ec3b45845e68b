/* The communicator over MPI (ops/comm.h), built with CUDARL_MPI. Every exchange is a gather of
 * bytes in rank order: the caller reduces them itself in a fixed order, so a result never
 * depends on the algorithm MPI picks. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "ops/comm.h"

static int joined; /* cr_comm_init called MPI_Init */
static int rank_, size_ = 1;

int cr_comm_built(void) { return 1; }

cudarl_status cr_comm_init(void) {
    if (joined || cr_comm_launched_size() == 0) return CUDARL_OK;
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited && MPI_Init(NULL, NULL) != MPI_SUCCESS)
        return cr_fail(CUDARL_ERR_IO, "MPI_Init failed: the launcher's environment names a job "
                       "that this process could not join; start it with mpirun -np N cudarl ...");
    joined = !inited;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    return CUDARL_OK;
}

void cr_comm_finalize(void) {
    if (!joined) return;
    MPI_Finalize();
    joined = 0;
    rank_ = 0, size_ = 1;
}

/* Each asks a job of threads first (--num-gpus N, cr_comm_run_threads; never under mpirun). */
int cr_comm_rank(void) { return cr_comm_thread_rank() >= 0 ? cr_comm_thread_rank() : rank_; }
int cr_comm_size(void) { return cr_comm_thread_rank() >= 0 ? cr_comm_thread_size() : size_; }

static int count_of(size_t bytes) {
    CUDARL_ASSERT(bytes <= INT_MAX);
    return (int)bytes;
}

void cr_comm_allgather(const void *send, void *recv, size_t bytes) {
    if (cr_comm_thread_rank() >= 0) {
        cr_comm_thread_allgather(send, recv, bytes);
        return;
    }
    if (size_ == 1) {
        if (recv != send) memmove(recv, send, bytes);
        return;
    }
    MPI_Allgather(send, count_of(bytes), MPI_BYTE, recv, count_of(bytes), MPI_BYTE,
                  MPI_COMM_WORLD);
}

void cr_comm_gather0(const void *send, void *recv, size_t bytes) {
    if (cr_comm_thread_rank() >= 0) {
        cr_comm_thread_gather0(send, recv, bytes);
        return;
    }
    if (size_ == 1) {
        if (recv != send) memmove(recv, send, bytes);
        return;
    }
    MPI_Gather(send, count_of(bytes), MPI_BYTE, recv, count_of(bytes), MPI_BYTE, 0,
               MPI_COMM_WORLD);
}

void cr_comm_bcast0(void *buf, size_t bytes) {
    if (cr_comm_thread_rank() >= 0) cr_comm_thread_bcast0(buf, bytes);
    else if (size_ > 1) MPI_Bcast(buf, count_of(bytes), MPI_BYTE, 0, MPI_COMM_WORLD);
}

_Noreturn void cr_comm_abort(int code) {
    if (joined && size_ > 1) {
        fflush(stdout), fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, code);
    }
    exit(code);
}
