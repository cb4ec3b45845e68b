// Episode bookkeeping on the device (twin of src/ops/cpu/episodes.c), in three parallel passes
// over blocks of contiguous envs (at most CR_CUDA_MAX_PARTIALS blocks, a fixed function of N):
//   1. count: each block counts its finished episodes (done flags) and sums their returns and
//      lengths into scratch->partial[block][0..2];
//   2. offsets: one block turns the counts into exclusive offsets (block order) and updates the
//      log's counters and per-iteration sums (block partial sums added in a fixed order);
//   3. push: every finished episode knows its rank in index order (block offset + its rank in
//      the block), writes the ring slot the CPU would have written last for it, and its env's
//      running sums restart.
// The ring, the counters and every env's running return and length match the CPU bit for bit;
// the two per-iteration double sums are added in a fixed tree order rather than index order
// (the logged mean episodic return agrees to ~1e-15 relative).
#include <cub/block/block_scan.cuh>

#include "ops/cuda/cuda_common.cuh"

#define EP_THREADS 256

typedef cub::BlockScan<int, EP_THREADS> ep_scan_t;

static __device__ void block_range(int N, int *begin, int *end) {
    int per = (N + gridDim.x - 1) / gridDim.x;
    *begin = min(N, (int)blockIdx.x * per);
    *end = min(N, *begin + per);
}

// Pass 1. Running sums (fin_ret == NULL): adds each env's reward to its running return and
// length and counts the envs that ended. Given episodes (fin_ret, fin_len set): element i that
// ended holds its episode's return and length already.
__global__ void __launch_bounds__(EP_THREADS)
episodes_count_kernel(const float *__restrict__ reward, const uint8_t *__restrict__ done,
                      double *ep_return, int64_t *ep_length, const double *__restrict__ fin_ret,
                      const int32_t *__restrict__ fin_len, cr_cuda_scratch *scratch, int N) {
    __shared__ double sh[3 * EP_THREADS];
    int begin, end;
    block_range(N, &begin, &end);
    double v[3] = {0.0, 0.0, 0.0}; // count, return sum, length sum
    for (int i = begin + threadIdx.x; i < end; i += EP_THREADS) {
        if (fin_ret) {
            if (done[i]) v[0] += 1.0, v[1] += fin_ret[i], v[2] += (double)fin_len[i];
            continue;
        }
        double ret = ep_return[i] + (double)reward[i];
        int64_t len = ep_length[i] + 1;
        ep_return[i] = ret, ep_length[i] = len;
        if (done[i]) v[0] += 1.0, v[1] += ret, v[2] += (double)len;
    }
    cr_block_sum<3, EP_THREADS>(v, sh);
    if (threadIdx.x == 0)
        for (int k = 0; k < 3; k++) scratch->partial[blockIdx.x][k] = v[k];
}

// Pass 2, one block: thread k takes the partials of blocks [k c, k c + c) (c = ceil(blocks /
// EP_THREADS)); a block scan of the counts gives each block its exclusive offset, and the
// return and length sums go through the fixed-order block sum. (A single thread walking 1,024
// partials is a chain of dependent loads: bench/RESULTS.md, GPU PPO, has its cost.)
typedef cub::BlockScan<long long, EP_THREADS> ep_offset_scan_t;

__global__ void __launch_bounds__(EP_THREADS)
episodes_offsets_kernel(cr_cuda_scratch *scratch, int blocks, cr_episode_log *log) {
    __shared__ typename ep_offset_scan_t::TempStorage tmp;
    __shared__ double sh[2 * EP_THREADS];
    const int per = (blocks + EP_THREADS - 1) / EP_THREADS;
    const int b0 = min(blocks, (int)threadIdx.x * per), b1 = min(blocks, b0 + per);
    long long count = 0;
    double v[2] = {0.0, 0.0}; // return sum, length sum
    for (int b = b0; b < b1; b++) {
        count += (long long)scratch->partial[b][0];
        v[0] += scratch->partial[b][1], v[1] += scratch->partial[b][2];
    }
    long long offset, total;
    ep_offset_scan_t(tmp).ExclusiveSum(count, offset, total);
    for (int b = b0; b < b1; b++) {
        scratch->partial[b][3] = (double)offset;
        offset += (long long)scratch->partial[b][0];
    }
    cr_block_sum<2, EP_THREADS>(v, sh);
    if (threadIdx.x != 0) return;
    scratch->partial[0][4] = (double)log->episodes; // episodes before this step
    scratch->partial[0][5] = (double)total;         // finished in this step
    log->episodes += total;
    log->iter_episodes += total;
    log->iter_return_sum += v[0], log->iter_length_sum += v[1];
}

__global__ void __launch_bounds__(EP_THREADS)
episodes_push_kernel(const uint8_t *__restrict__ done, double *ep_return, int64_t *ep_length,
                     const double *__restrict__ fin_ret, const cr_cuda_scratch *scratch,
                     cr_episode_log *log, int N) {
    __shared__ typename ep_scan_t::TempStorage tmp;
    int begin, end;
    block_range(N, &begin, &end);
    int64_t before = (int64_t)scratch->partial[0][4], total = (int64_t)scratch->partial[0][5];
    int64_t rank0 = (int64_t)scratch->partial[blockIdx.x][3];
    for (int base = begin; base < end; base += EP_THREADS) { // every thread runs every chunk
        int i = base + threadIdx.x;
        int ended = i < end && done[i] != 0, rank, count;
        ep_scan_t(tmp).ExclusiveSum(ended, rank, count);
        __syncthreads();
        if (ended) {
            int64_t r = rank0 + rank;
            if (r >= total - CR_RECENT_EPISODES) /* only the last 100 survive in the ring */
                log->recent[(before + r) % CR_RECENT_EPISODES] = fin_ret ? fin_ret[i] : ep_return[i];
            if (!fin_ret) ep_return[i] = 0.0, ep_length[i] = 0;
        }
        rank0 += count;
    }
}

static void episodes_passes(cudarl_ctx *ctx, const float *reward, const uint8_t *done,
                            double *ep_return, int64_t *ep_length, const double *fin_ret,
                            const int32_t *fin_len, cr_episode_log *log, int N) {
    if (N <= 0) return;
    cudaStream_t st = cr_stream(ctx);
    cr_cuda_scratch *scratch = cr_impl(ctx)->scratch;
    int blocks = (N + 4 * EP_THREADS - 1) / (4 * EP_THREADS);
    if (blocks > CR_CUDA_MAX_PARTIALS) blocks = CR_CUDA_MAX_PARTIALS;
    episodes_count_kernel<<<blocks, EP_THREADS, 0, st>>>(reward, done, ep_return, ep_length,
                                                         fin_ret, fin_len, scratch, N);
    CR_CUDA_LAUNCHED(ctx);
    episodes_offsets_kernel<<<1, EP_THREADS, 0, st>>>(scratch, blocks, log);
    CR_CUDA_LAUNCHED(ctx);
    episodes_push_kernel<<<blocks, EP_THREADS, 0, st>>>(done, ep_return, ep_length, fin_ret,
                                                        scratch, log, N);
    CR_CUDA_LAUNCHED(ctx);
}

void cr_cuda_episodes_record(cudarl_ctx *ctx, const float *reward, const uint8_t *done,
                             double *ep_return, int64_t *ep_length, cr_episode_log *log, int N) {
    episodes_passes(ctx, reward, done, ep_return, ep_length, NULL, NULL, log, N);
}

void cr_cuda_episodes_log_finished(cudarl_ctx *ctx, const uint8_t *done, const double *fin_ret,
                                   const int32_t *fin_len, cr_episode_log *log, int n) {
    episodes_passes(ctx, NULL, done, NULL, NULL, fin_ret, fin_len, log, n);
}
