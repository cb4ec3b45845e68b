// The Gaussian policy of CleanRL's ppo_continuous_action.py on the device: sampling and the PPO
// loss with its gradient. The semantics are src/ops/cpu/ppo_loss.c's (cr_cpu_gaussian_sample,
// cr_cpu_ppo_loss_gaussian); read those first.
//
// Layout: L lanes of a warp per row (L = K rounded up to a power of two), lane k on element k,
// so every (B, K) array is read and written in contiguous runs. A row's log-prob is the sum of
// its K terms in k order, in float, as the CPU adds them: each lane adds the K terms fetched by
// shuffles one by one, so sampling and the loss compute the same logp bit for bit from the same
// mean, log-std and action (a freshly sampled minibatch has ratios of exactly 1).
//
// The loss is three steps, every reduction in double and in a fixed order (no atomics), the
// grid a function of B and K only, so the result is bitwise repeatable:
//   1. adv stats (ppo_loss.cu's cr_cuda_ppo_adv_stats: two launches, only with norm_adv);
//   2. rows: dmean, dvalue, and each block's K sums of d loss / d logstd and five statistics
//      into scratch->wide;
//   3. finish (one block): adds the blocks' sums (a warp per value, in a fixed order), writes
//      dlogstd and adds the means to acc as ppo_loss does.
// Arithmetic is the CPU's with every product spelled as a _rn intrinsic (no FMA contraction):
// the value path (dvalue, v_loss) is the CPU's bit for bit and the policy path differs only by
// CUDA's expf / logf / cosf ulps.
#include "ops/cuda/cuda_common.cuh"
#include "ops/cuda/ppo_loss_device.cuh"

#define GAUSS_THREADS 256
#define GAUSS_STATS 5 // pg_loss, v_loss, old_approx_kl, approx_kl, clipfrac sums
// per block in scratch->wide: K (<= 32) dlogstd sums, then the statistics
#define GAUSS_WIDTH (CR_GAUSSIAN_MAX_K + GAUSS_STATS)
#define GAUSS_MAX_BLOCKS 1024
#define GAUSS_FINISH_THREADS 512 // 16 warps, the 37 values

static_assert(GAUSS_MAX_BLOCKS * GAUSS_WIDTH <= CR_CUDA_WIDE_PARTIALS, "wide partials too small");
static_assert(CR_GAUSSIAN_MAX_K <= 32, "a row must fit in a warp");

// Lanes per row: K rounded up to a power of two (a divisor of 32).
static int lanes_per_row(int K) {
    int L = 1;
    while (L < K) L <<= 1;
    return L;
}

// Blocks for B rows of L lanes each: a function of B and K only.
static int row_blocks(int B, int L) {
    const long rows_per_block = GAUSS_THREADS / L;
    long g = ((long)B + rows_per_block - 1) / rows_per_block;
    return (int)(g < 1 ? 1 : g > GAUSS_MAX_BLOCKS ? GAUSS_MAX_BLOCKS : g);
}

// The sum of the K terms of this lane's row, added in k order (every lane of the warp must
// call it; lanes past K hold 0 and are not read).
__device__ __forceinline__ float row_sum(float term, int K, int L) {
    float s = 0.0f;
    for (int j = 0; j < K; j++) s = __fadd_rn(s, __shfl_sync(0xffffffffu, term, j, L));
    return s;
}

// action (B, K) = mean + exp(logstd) z with z = cr_box_muller(u[2j], u[2j + 1]) for element j;
// logp (B). Grid-stride over blocks of GAUSS_THREADS / L rows.
__global__ void __launch_bounds__(GAUSS_THREADS)
gaussian_sample_kernel(const float *__restrict__ mean, const float *__restrict__ logstd,
                       const float *__restrict__ u, float *action, float *logp, int B, int K,
                       int L) {
    const int k = threadIdx.x & (L - 1), slot = threadIdx.x / L;
    const long rows_per_block = GAUSS_THREADS / L;
    const float ls = k < K ? logstd[k] : 0.0f, sd = expf(ls);
    for (long base = blockIdx.x * rows_per_block; base < B; base += gridDim.x * rows_per_block) {
        const long b = base + slot;
        float term = 0.0f;
        if (b < B && k < K) {
            const size_t j = (size_t)b * K + k;
            float z = cr_box_muller(u[2 * j], u[2 * j + 1]);
            float m = mean[j], a = __fadd_rn(m, __fmul_rn(sd, z));
            action[j] = a;
            term = cr_gaussian_logp_term(__fsub_rn(a, m), sd, ls);
        }
        float lp = row_sum(term, K, L);
        if (b < B && k == 0) logp[b] = lp;
    }
}

void cr_cuda_gaussian_sample(cudarl_ctx *ctx, const float *mean, const float *logstd,
                             const float *u, float *action, float *logp, int B, int K) {
    CUDARL_ASSERT(K >= 1 && K <= CR_GAUSSIAN_MAX_K);
    if (B <= 0) return;
    const int L = lanes_per_row(K);
    gaussian_sample_kernel<<<row_blocks(B, L), GAUSS_THREADS, 0, cr_stream(ctx)>>>(
        mean, logstd, u, action, logp, B, K, L);
    CR_CUDA_LAUNCHED(ctx);
}

// Rows of the minibatch: dmean (B, K), dvalue (B), and the block's sums into
// scratch->wide[blockIdx.x * GAUSS_WIDTH ...]: K sums of d loss / d logstd_k (without the entropy
// bonus) in double, then the five per-row statistics.
__global__ void __launch_bounds__(GAUSS_THREADS)
gaussian_loss_rows_kernel(const float *__restrict__ mean, const float *__restrict__ logstd,
                          const float *__restrict__ action, const float *__restrict__ old_logp,
                          const float *__restrict__ adv, const float *__restrict__ value,
                          const float *__restrict__ old_value, const float *__restrict__ returns,
                          cr_ppo_loss_params p, float *__restrict__ dmean,
                          float *__restrict__ dvalue, cr_cuda_scratch *scratch, int B, int K,
                          int L) {
    __shared__ double sh[GAUSS_STATS * GAUSS_THREADS];
    const int k = threadIdx.x & (L - 1), slot = threadIdx.x / L;
    const long rows_per_block = GAUSS_THREADS / L;
    const float clip = p.clip_coef, inv_b = 1.0f / (float)B;
    const float ls = k < K ? logstd[k] : 0.0f, sd = expf(ls), var = __fmul_rn(sd, sd);
    double adv_mean = 0.0, adv_denom = 1.0;
    if (p.norm_adv) adv_mean = scratch->adv_mean, adv_denom = scratch->adv_denom;
    double dls = 0.0, sums[GAUSS_STATS] = {0, 0, 0, 0, 0};
    for (long base = blockIdx.x * rows_per_block; base < B; base += gridDim.x * rows_per_block) {
        const long b = base + slot;
        const size_t j = (size_t)b * K + k;
        float d = 0.0f, term = 0.0f;
        if (b < B && k < K) {
            d = __fsub_rn(action[j], mean[j]);
            term = cr_gaussian_logp_term(d, sd, ls);
        }
        const float logp = row_sum(term, K, L);
        if (b >= B) continue;
        float a = cr_ppo_norm_adv(adv[b], p.norm_adv, adv_mean, adv_denom), st[4];
        float g_logp = cr_ppo_surrogate(logp, old_logp[b], a, clip, inv_b, st);
        // d logp / d mean_k = d / var; d logp / d logstd_k = d^2 / var - 1
        if (k < K) {
            dmean[j] = __fdiv_rn(__fmul_rn(g_logp, d), var);
            dls += (double)__fmul_rn(g_logp, __fsub_rn(__fdiv_rn(__fmul_rn(d, d), var), 1.0f));
        }
        if (k == 0) {
            float dv;
            float vl =
                cr_ppo_value_term(value[b], old_value[b], returns[b], clip, p.clip_vloss, &dv);
            dvalue[b] = cr_ppo_dvalue(p.vf_coef, dv, inv_b);
            sums[0] += st[0];
            sums[1] += vl;
            sums[2] += st[1];
            sums[3] += st[2];
            sums[4] += st[3];
        }
    }
    double *out = scratch->wide + (size_t)blockIdx.x * GAUSS_WIDTH;
    // dlogstd_k: the block's threads on element k (t = k, k + L, ...) added in thread order
    sh[threadIdx.x] = dls;
    __syncthreads();
    if (threadIdx.x < K) {
        double s = 0.0;
        for (int t = threadIdx.x; t < GAUSS_THREADS; t += L) s += sh[t];
        out[threadIdx.x] = s;
    }
    __syncthreads();
    cr_block_sum<GAUSS_STATS, GAUSS_THREADS>(sums, sh);
    if (threadIdx.x == 0)
        for (int i = 0; i < GAUSS_STATS; i++) out[CR_GAUSSIAN_MAX_K + i] = sums[i];
}

// Adds up the sums of `blocks` blocks: dlogstd (K) = the gradient sums - ent_coef, and the
// minibatch's statistics (with the entropy of the log-std, the same for every row) added to acc.
// One block of GAUSS_FINISH_THREADS: a warp per value, lane l taking blocks l, l + 32, ... in
// order, cr_warp_sum adding the lanes.
__global__ void __launch_bounds__(GAUSS_FINISH_THREADS)
gaussian_loss_finish_kernel(const float *__restrict__ logstd, const cr_cuda_scratch *scratch,
                            int blocks, float ent_coef, float vf_coef, float *dlogstd,
                            cr_ppo_stats_acc *acc, int B, int K) {
    __shared__ double total[GAUSS_WIDTH];
    const int lane = threadIdx.x & 31;
    for (int i = threadIdx.x / 32; i < GAUSS_WIDTH; i += GAUSS_FINISH_THREADS / 32) {
        if (i >= K && i < CR_GAUSSIAN_MAX_K) continue; // dlogstd slots past K are not written
        double s = 0.0;
        for (int g = lane; g < blocks; g += 32)
            s = __dadd_rn(s, scratch->wide[(size_t)g * GAUSS_WIDTH + i]);
        s = cr_warp_sum(s);
        if (lane == 0) total[i] = s;
    }
    __syncthreads();
    if (threadIdx.x < K)
        dlogstd[threadIdx.x] = (float)__dsub_rn(total[threadIdx.x], (double)ent_coef);
    if (threadIdx.x != 0) return;
    // entropy: the sum over k of 0.5 + log(sqrt(2 pi)) + logstd_k, in float, in k order
    float ent = 0.0f;
    for (int k = 0; k < K; k++) ent = __fadd_rn(ent, __fadd_rn(0.5f + CR_LOG_SQRT_2PI, logstd[k]));
    cr_ppo_acc_add_entropy(total + CR_GAUSSIAN_MAX_K, ent, ent_coef, vf_coef, acc, B);
}

void cr_cuda_ppo_loss_gaussian(cudarl_ctx *ctx, const float *mean, const float *logstd,
                               const float *action, const float *old_logp, const float *adv,
                               const float *value, const float *old_value, const float *returns,
                               const cr_ppo_loss_params *p, float *dmean, float *dlogstd,
                               float *dvalue, cr_ppo_stats_acc *acc, int B, int K) {
    CUDARL_ASSERT(K >= 1 && K <= CR_GAUSSIAN_MAX_K);
    if (B <= 0) return;
    cudaStream_t st = cr_stream(ctx);
    cr_cuda_scratch *scratch = cr_impl(ctx)->scratch;
    if (p->norm_adv) cr_cuda_ppo_adv_stats(ctx, adv, B);
    const int L = lanes_per_row(K), blocks = row_blocks(B, L);
    gaussian_loss_rows_kernel<<<blocks, GAUSS_THREADS, 0, st>>>(
        mean, logstd, action, old_logp, adv, value, old_value, returns, *p, dmean, dvalue,
        scratch, B, K, L);
    CR_CUDA_LAUNCHED(ctx);
    gaussian_loss_finish_kernel<<<1, GAUSS_FINISH_THREADS, 0, st>>>(
        logstd, scratch, blocks, p->ent_coef, p->vf_coef, dlogstd, acc, B, K);
    CR_CUDA_LAUNCHED(ctx);
}
