// Episode bookkeeping on the device, with the CPU's results bit for bit
// (src/ops/cpu/episodes.c): one block walks the envs in chunks of its size; in each chunk every
// thread updates its env's running return and length, a block scan over the done flags gives
// each finished episode its rank in index order, and one thread pushes the finished episodes
// into the log in that order (the ring and the double sums see the CPU's sequence of writes and
// additions). A step rarely ends more than a few episodes, so the serial part is short.
#include <cub/block/block_scan.cuh>

#include "ops/cuda/cuda_common.cuh"

#define EP_THREADS 256

__global__ void __launch_bounds__(EP_THREADS)
episodes_record_kernel(const float *__restrict__ reward, const uint8_t *__restrict__ done,
                       double *ep_return, int64_t *ep_length, cr_episode_log *log, int N) {
    typedef cub::BlockScan<int, EP_THREADS> scan_t;
    __shared__ typename scan_t::TempStorage scan_tmp;
    __shared__ double ended_return[EP_THREADS];
    __shared__ int64_t ended_length[EP_THREADS];
    // thread 0's copy of the log's counters and sums
    int64_t episodes = 0, iter_episodes = 0;
    double return_sum = 0, length_sum = 0;
    if (threadIdx.x == 0) {
        episodes = log->episodes, iter_episodes = log->iter_episodes;
        return_sum = log->iter_return_sum, length_sum = log->iter_length_sum;
    }
    for (int base = 0; base < N; base += EP_THREADS) {
        int i = base + threadIdx.x, ended = 0;
        double ret = 0;
        int64_t len = 0;
        if (i < N) {
            ret = ep_return[i] + (double)reward[i];
            len = ep_length[i] + 1;
            ended = done[i] != 0;
            ep_return[i] = ended ? 0.0 : ret;
            ep_length[i] = ended ? 0 : len;
        }
        int rank, count;
        scan_t(scan_tmp).ExclusiveSum(ended, rank, count);
        if (ended) ended_return[rank] = ret, ended_length[rank] = len;
        __syncthreads();
        if (threadIdx.x == 0)
            for (int k = 0; k < count; k++) {
                log->recent[episodes % CR_RECENT_EPISODES] = ended_return[k];
                episodes++;
                iter_episodes++;
                return_sum += ended_return[k];
                length_sum += (double)ended_length[k];
            }
        __syncthreads(); // the shared arrays and the scan storage are reused by the next chunk
    }
    if (threadIdx.x == 0) {
        log->episodes = episodes, log->iter_episodes = iter_episodes;
        log->iter_return_sum = return_sum, log->iter_length_sum = length_sum;
    }
}

void cr_cuda_episodes_record(cudarl_ctx *ctx, const float *reward, const uint8_t *done,
                             double *ep_return, int64_t *ep_length, cr_episode_log *log, int N) {
    if (N <= 0) return;
    episodes_record_kernel<<<1, EP_THREADS, 0, cr_stream(ctx)>>>(reward, done, ep_return,
                                                                 ep_length, log, N);
    CR_CUDA_LAUNCHED(ctx);
}
