// CleanRL's PPO loss on one minibatch, its gradient w.r.t. the logits and values, and the
// statistics, on the device: the semantics of src/ops/cpu/ppo_loss.c (read that first: the
// clamp and max subgradients, the advantage normalisation with the unbiased std and the B = 1
// rule). Three launches, every reduction in double and in a fixed order (no atomics), so the
// result is bitwise repeatable:
//   1. adv_stats (one block, only with norm_adv): mean and std + 1e-8 of adv into the scratch;
//   2. rows (G blocks, one thread per row): dlogits, dvalue and each block's six partial sums;
//   3. finish (one block): adds the G partials up, turns them into the means and adds them to
//      acc (sum[], count, last_approx_kl), as the CPU backend's wrapper does.
// G is a function of B only. Per-row arithmetic is the CPU's, with every product that feeds a
// sum spelled as a _rn intrinsic (no FMA contraction), so the value path (dvalue, v_loss) is the
// CPU's bit for bit and the policy path differs only by CUDA's expf/logf ulps.
#include "ops/cuda/cuda_common.cuh"
#include "ops/cuda/ppo_loss_device.cuh"

#define PPO_THREADS 256
#define PPO_STATS 6 // pg_loss, v_loss, entropy, old_approx_kl, approx_kl, clipfrac sums

static_assert(PPO_STATS <= CR_CUDA_PARTIAL_WIDTH, "partials too narrow");

// scratch->adv_mean, adv_denom = mean and unbiased std + 1e-8 of adv (B), in double; with
// B = 1 the std is 0 (PyTorch would give NaN). One pass over many blocks (a single block would
// walk all B rows): each block sums x and x^2 in double into partial[block][0..1]; the finish
// kernel adds the block sums in a fixed order (the result repeats exactly) and takes
// var = (sum x^2 - (sum x)^2 / B) / (B - 1). Each x^2 of a float is exact in double, so this
// differs from the CPU's two passes only by double rounding scaled by mean^2 / var, ~1e-14 for
// advantages (which are centred near 0); the saved pass is two launches a minibatch.
__global__ void __launch_bounds__(PPO_THREADS)
adv_partial_kernel(const float *__restrict__ adv, int B, cr_cuda_scratch *scratch) {
    __shared__ double sh[2 * PPO_THREADS];
    double v[2] = {0.0, 0.0};
    for (int b = blockIdx.x * PPO_THREADS + threadIdx.x; b < B; b += gridDim.x * PPO_THREADS) {
        double x = (double)adv[b];
        v[0] += x, v[1] += x * x;
    }
    cr_block_sum<2, PPO_THREADS>(v, sh);
    if (threadIdx.x == 0) scratch->partial[blockIdx.x][0] = v[0], scratch->partial[blockIdx.x][1] = v[1];
}

__global__ void __launch_bounds__(PPO_THREADS)
adv_finish_kernel(int B, int blocks, cr_cuda_scratch *scratch) {
    __shared__ double sh[2 * PPO_THREADS];
    double v[2] = {0.0, 0.0};
    for (int k = threadIdx.x; k < blocks; k += PPO_THREADS)
        v[0] += scratch->partial[k][0], v[1] += scratch->partial[k][1];
    cr_block_sum<2, PPO_THREADS>(v, sh);
    if (threadIdx.x != 0) return;
    double mean = v[0] / B, ss = v[1] - v[0] * mean;
    double std = B > 1 ? sqrt((ss > 0.0 ? ss : 0.0) / (B - 1)) : 0.0;
    scratch->adv_mean = mean;
    scratch->adv_denom = std + 1e-8;
}

// Rows b of the minibatch, one per thread (grid-stride): dlogits, dvalue, and the block's sums
// of the per-row statistics into scratch->partial[blockIdx.x].
__global__ void __launch_bounds__(PPO_THREADS)
ppo_rows_kernel(const float *__restrict__ logits, const int32_t *__restrict__ action,
                const float *__restrict__ old_logp, const float *__restrict__ adv,
                const float *__restrict__ value, const float *__restrict__ old_value,
                const float *__restrict__ returns, cr_ppo_loss_params p,
                float *__restrict__ dlogits, float *__restrict__ dvalue,
                cr_cuda_scratch *scratch, int B, int A) {
    __shared__ double sh[PPO_STATS * PPO_THREADS];
    const float clip = p.clip_coef, inv_b = 1.0f / (float)B;
    double adv_mean = 0.0, adv_denom = 1.0;
    if (p.norm_adv) adv_mean = scratch->adv_mean, adv_denom = scratch->adv_denom;
    double sums[PPO_STATS] = {0, 0, 0, 0, 0, 0};
    for (int b = blockIdx.x * PPO_THREADS + threadIdx.x; b < B; b += gridDim.x * PPO_THREADS) {
        float st[5];
        float a = cr_ppo_norm_adv(adv[b], p.norm_adv, adv_mean, adv_denom);
        cr_ppo_policy_row(logits + (size_t)b * A, A, action[b], old_logp[b], a, clip, p.ent_coef,
                          inv_b, dlogits + (size_t)b * A, st);
        float dv;
        float vl = cr_ppo_value_term(value[b], old_value[b], returns[b], clip, p.clip_vloss, &dv);
        dvalue[b] = cr_ppo_dvalue(p.vf_coef, dv, inv_b);

        sums[0] += st[0];
        sums[1] += vl;
        sums[2] += st[1];
        sums[3] += st[2];
        sums[4] += st[3];
        sums[5] += st[4];
    }
    cr_block_sum<PPO_STATS, PPO_THREADS>(sums, sh);
    if (threadIdx.x == 0)
        for (int k = 0; k < PPO_STATS; k++) scratch->partial[blockIdx.x][k] = sums[k];
}

// Adds the partials of `blocks` blocks (in a fixed order) and accumulates the means into acc.
__global__ void __launch_bounds__(PPO_THREADS)
ppo_finish_kernel(const cr_cuda_scratch *scratch, int blocks, float ent_coef, float vf_coef,
                  cr_ppo_stats_acc *acc, int B) {
    __shared__ double sh[PPO_STATS * PPO_THREADS];
    double sums[PPO_STATS] = {0, 0, 0, 0, 0, 0};
    for (int k = threadIdx.x; k < blocks; k += PPO_THREADS)
        for (int j = 0; j < PPO_STATS; j++) sums[j] += scratch->partial[k][j];
    cr_block_sum<PPO_STATS, PPO_THREADS>(sums, sh);
    if (threadIdx.x == 0) cr_ppo_acc_add(sums, ent_coef, vf_coef, acc, B);
}

// scratch->adv_mean, adv_denom of adv (B): two launches (partials, finish).
void cr_cuda_ppo_adv_stats(cudarl_ctx *ctx, const float *adv, int B) {
    cudaStream_t st = cr_stream(ctx);
    cr_cuda_scratch *scratch = cr_impl(ctx)->scratch;
    int ab = (B + 4 * PPO_THREADS - 1) / (4 * PPO_THREADS);
    if (ab > CR_CUDA_MAX_PARTIALS) ab = CR_CUDA_MAX_PARTIALS;
    adv_partial_kernel<<<ab, PPO_THREADS, 0, st>>>(adv, B, scratch);
    CR_CUDA_LAUNCHED(ctx);
    adv_finish_kernel<<<1, PPO_THREADS, 0, st>>>(B, ab, scratch);
    CR_CUDA_LAUNCHED(ctx);
}

void cr_cuda_ppo_loss(cudarl_ctx *ctx, const float *logits, const int32_t *action,
                      const float *old_logp, const float *adv, const float *value,
                      const float *old_value, const float *returns, const cr_ppo_loss_params *p,
                      float *dlogits, float *dvalue, cr_ppo_stats_acc *acc, int B, int A) {
    if (B <= 0) return;
    cudaStream_t st = cr_stream(ctx);
    cr_cuda_scratch *scratch = cr_impl(ctx)->scratch;
    if (p->norm_adv) cr_cuda_ppo_adv_stats(ctx, adv, B);
    int blocks = (B + PPO_THREADS - 1) / PPO_THREADS;
    if (blocks > CR_CUDA_MAX_PARTIALS) blocks = CR_CUDA_MAX_PARTIALS;
    ppo_rows_kernel<<<blocks, PPO_THREADS, 0, st>>>(logits, action, old_logp, adv, value,
                                                    old_value, returns, *p, dlogits, dvalue,
                                                    scratch, B, A);
    CR_CUDA_LAUNCHED(ctx);
    ppo_finish_kernel<<<1, PPO_THREADS, 0, st>>>(scratch, blocks, p->ent_coef, p->vf_coef, acc,
                                                  B);
    CR_CUDA_LAUNCHED(ctx);
}
