/* The communicator of a build without MPI (ops/comm.h): one rank. A launch by mpirun of two or
 * more ranks is refused, since each would train alone on the same seed. */
#include <stdlib.h>
#include <string.h>

#include "ops/comm.h"

int cr_comm_built(void) { return 0; }

cudarl_status cr_comm_init(void) {
    int n = cr_comm_launched_size();
    if (n > 1)
        return cr_fail(CUDARL_ERR_UNSUPPORTED, "launched as one of %d ranks (mpirun), but this "
                       "cudarl was built without MPI, so each rank would train alone; install "
                       "libopenmpi-dev (scripts/setup.sh does) and rebuild with -DCUDARL_MPI=ON, "
                       "or run one process", n);
    return CUDARL_OK;
}

void cr_comm_finalize(void) {}
/* Each asks a job of threads first (--num-gpus N, cr_comm_run_threads). */
int cr_comm_rank(void) { return cr_comm_thread_rank() >= 0 ? cr_comm_thread_rank() : 0; }
int cr_comm_size(void) { return cr_comm_thread_rank() >= 0 ? cr_comm_thread_size() : 1; }

void cr_comm_allgather(const void *send, void *recv, size_t bytes) {
    if (cr_comm_thread_rank() >= 0) cr_comm_thread_allgather(send, recv, bytes);
    else if (recv != send) memmove(recv, send, bytes);
}

void cr_comm_gather0(const void *send, void *recv, size_t bytes) {
    if (cr_comm_thread_rank() >= 0) cr_comm_thread_gather0(send, recv, bytes);
    else if (recv != send) memmove(recv, send, bytes);
}

void cr_comm_bcast0(void *buf, size_t bytes) {
    if (cr_comm_thread_rank() >= 0) cr_comm_thread_bcast0(buf, bytes);
}

_Noreturn void cr_comm_abort(int code) { exit(code); }
