/* OpenMP for the CPU ops where the build has it (-fopenmp defines _OPENMP). Without it (the
 * runtime-only build, docs/install.md) every op runs on the calling thread: the functions below
 * stand in for OpenMP's, and the compiler skips the #pragma omp lines. Results are the same
 * either way (every reduction has a fixed order); only the speed differs. */
#ifndef CUDARL_OPS_PARALLEL_H
#define CUDARL_OPS_PARALLEL_H

#ifdef _OPENMP
#include <omp.h>
#else
static inline int omp_get_thread_num(void) { return 0; }
static inline int omp_get_num_threads(void) { return 1; }
static inline int omp_get_max_threads(void) { return 1; }
static inline int omp_get_num_procs(void) { return 1; }
static inline void omp_set_num_threads(int n) { (void)n; }
#endif

#endif
