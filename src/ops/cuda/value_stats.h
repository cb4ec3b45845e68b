/* out[0..5) += n, sum y, sum y^2, sum d, sum d^2 (y = returns, d = returns - values) on `stream`;
 * all pointers device memory. The caller checks the launch. */
#ifndef CUDARL_CUDA_VALUE_STATS_H
#define CUDARL_CUDA_VALUE_STATS_H

#ifdef __cplusplus
extern "C" {
#endif
void cr_cuda_value_stats(const float *values, const float *returns, int n, double *out,
                         void *stream);
#ifdef __cplusplus
}
#endif
#endif
