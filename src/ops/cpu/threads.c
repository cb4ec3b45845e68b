/* Thread count of the CPU ops. */

#include "ops/cpu/ops_cpu.h"
#include "ops/parallel.h"

/* OpenMP's nthreads-var of the calling thread: the ops called from this thread use that many.
 * Results do not depend on it (every reduction has a fixed order), only the speed does. */
void cr_cpu_set_threads(int threads) {
    omp_set_num_threads(threads > 0 ? threads : omp_get_num_procs());
}

int cr_cpu_threads(void) { return omp_get_max_threads(); }
