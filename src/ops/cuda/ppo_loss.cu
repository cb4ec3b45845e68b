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
#include "ops/cuda/categorical_device.cuh"

#define PPO_THREADS 256
#define PPO_STATS 6 // pg_loss, v_loss, entropy, old_approx_kl, approx_kl, clipfrac sums

static_assert(PPO_STATS <= CR_CUDA_PARTIAL_WIDTH, "partials too narrow");

// d max(a, b) / da (PyTorch: 1, 0 or 1/2 on a tie).
__device__ __forceinline__ float dmax_da(float a, float b) {
    return a > b ? 1.0f : a < b ? 0.0f : 0.5f;
}

// The value term of one row: its loss (before 0.5 and the mean) and d loss / d value.
__device__ __forceinline__ float value_term(float v, float v_old, float ret, float clip,
                                            int clip_vloss, float *dv) {
    float du = __fsub_rn(v, ret), lu = __fmul_rn(du, du);
    if (!clip_vloss) {
        *dv = __fmul_rn(2.0f, du);
        return lu;
    }
    float d = __fsub_rn(v, v_old);
    float dc = d < -clip ? -clip : d > clip ? clip : d;
    float dcv = __fsub_rn(__fadd_rn(v_old, dc), ret), lc = __fmul_rn(dcv, dcv);
    float pass = (d >= -clip && d <= clip) ? 1.0f : 0.0f;
    *dv = __fadd_rn(__fmul_rn(__fmul_rn(dmax_da(lu, lc), 2.0f), du),
                    __fmul_rn(__fmul_rn(__fmul_rn(dmax_da(lc, lu), 2.0f), dcv), pass));
    return lu > lc ? lu : lc;
}

// scratch->adv_mean, adv_denom = mean and unbiased std + 1e-8 of adv (B), in double; with
// B = 1 the std is 0 (PyTorch would give NaN). Over many blocks (a single block would walk all
// B rows): pass 0 sums x, pass 1 sums (x - mean)^2, each block into partial[block][pass]; the
// finish kernel adds the block sums in block order, so the result repeats exactly.
__global__ void __launch_bounds__(PPO_THREADS)
adv_partial_kernel(const float *__restrict__ adv, int B, cr_cuda_scratch *scratch, int pass) {
    __shared__ double sh[PPO_THREADS];
    double m = pass ? scratch->adv_mean : 0.0;
    double v[1] = {0.0};
    for (int b = blockIdx.x * PPO_THREADS + threadIdx.x; b < B; b += gridDim.x * PPO_THREADS) {
        double d = (double)adv[b] - m;
        v[0] += pass ? d * d : d;
    }
    cr_block_sum<1, PPO_THREADS>(v, sh);
    if (threadIdx.x == 0) scratch->partial[blockIdx.x][pass] = v[0];
}

__global__ void __launch_bounds__(PPO_THREADS)
adv_finish_kernel(int B, int blocks, cr_cuda_scratch *scratch, int pass) {
    __shared__ double sh[PPO_THREADS];
    double v[1] = {0.0};
    for (int k = threadIdx.x; k < blocks; k += PPO_THREADS) v[0] += scratch->partial[k][pass];
    cr_block_sum<1, PPO_THREADS>(v, sh);
    if (threadIdx.x != 0) return;
    if (pass == 0) {
        scratch->adv_mean = v[0] / B;
    } else {
        double std = B > 1 ? sqrt(v[0] / (B - 1)) : 0.0;
        scratch->adv_denom = std + 1e-8;
    }
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
    const float lo = 1.0f - clip, hi = 1.0f + clip;
    double adv_mean = 0.0, adv_denom = 1.0;
    if (p.norm_adv) adv_mean = scratch->adv_mean, adv_denom = scratch->adv_denom;
    double sums[PPO_STATS] = {0, 0, 0, 0, 0, 0};
    for (int b = blockIdx.x * PPO_THREADS + threadIdx.x; b < B; b += gridDim.x * PPO_THREADS) {
        const float *l = logits + (size_t)b * A;
        float *dl = dlogits + (size_t)b * A;
        // log-softmax and entropy as the CPU computes them; s is cr_row_sum_exp's sum
        float m = cr_row_max(l, A);
        float s = 0.0f, el = 0.0f;
        for (int j = 0; j < A; j++) {
            float lm = l[j] - m, e = expf(lm);
            s = __fadd_rn(s, e);
            el = __fadd_rn(el, __fmul_rn(e, lm));
        }
        const int act = action[b];
        float log_s = logf(s), ent = __fsub_rn(log_s, __fdiv_rn(el, s));
        float logp = cr_row_logp(l, act, m, s);

        float logratio = logp - old_logp[b], ratio = expf(logratio);
        float a = p.norm_adv ? (float)(((double)adv[b] - adv_mean) / adv_denom) : adv[b];
        float rc = ratio < lo ? lo : ratio > hi ? hi : ratio;
        float pg1 = __fmul_rn(-a, ratio), pg2 = __fmul_rn(-a, rc);
        float pass = (ratio >= lo && ratio <= hi) ? 1.0f : 0.0f;
        float dratio = __fadd_rn(__fmul_rn(dmax_da(pg1, pg2), -a),
                                 __fmul_rn(__fmul_rn(dmax_da(pg2, pg1), -a), pass));
        float g_logp = __fmul_rn(__fmul_rn(dratio, ratio), inv_b);
        float g_ent = __fmul_rn(p.ent_coef, inv_b);
        for (int j = 0; j < A; j++) {
            float lp = (l[j] - m) - log_s, pj = expf(lp);
            float onehot = j == act ? 1.0f : 0.0f;
            dl[j] = __fadd_rn(__fmul_rn(g_logp, __fsub_rn(onehot, pj)),
                              __fmul_rn(__fmul_rn(g_ent, pj), __fadd_rn(lp, ent)));
        }

        float dv;
        float vl = value_term(value[b], old_value[b], returns[b], clip, p.clip_vloss, &dv);
        dvalue[b] = __fmul_rn(__fmul_rn(__fmul_rn(p.vf_coef, 0.5f), dv), inv_b);

        sums[0] += pg1 > pg2 ? pg1 : pg2;
        sums[1] += vl;
        sums[2] += ent;
        sums[3] += -logratio;
        sums[4] += (ratio - 1.0f) - logratio;
        sums[5] += fabsf(ratio - 1.0f) > clip ? 1.0 : 0.0;
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
    if (threadIdx.x != 0) return;
    double pg_loss = sums[0] / B, v_loss = __dmul_rn(0.5, sums[1]) / B, entropy = sums[2] / B;
    double old_approx_kl = sums[3] / B, approx_kl = sums[4] / B, clipfrac = sums[5] / B;
    double loss = __dadd_rn(__dsub_rn(pg_loss, __dmul_rn((double)ent_coef, entropy)),
                            __dmul_rn((double)vf_coef, v_loss));
    acc->sum[0] += loss, acc->sum[1] += pg_loss, acc->sum[2] += v_loss;
    acc->sum[3] += entropy, acc->sum[4] += old_approx_kl, acc->sum[5] += approx_kl;
    acc->sum[6] += clipfrac;
    acc->count += 1;
    acc->last_approx_kl = approx_kl;
}

void cr_cuda_ppo_loss(cudarl_ctx *ctx, const float *logits, const int32_t *action,
                      const float *old_logp, const float *adv, const float *value,
                      const float *old_value, const float *returns, const cr_ppo_loss_params *p,
                      float *dlogits, float *dvalue, cr_ppo_stats_acc *acc, int B, int A) {
    if (B <= 0) return;
    cudaStream_t st = cr_stream(ctx);
    cr_cuda_scratch *scratch = cr_impl(ctx)->scratch;
    if (p->norm_adv) {
        int ab = (B + 4 * PPO_THREADS - 1) / (4 * PPO_THREADS);
        if (ab > CR_CUDA_MAX_PARTIALS) ab = CR_CUDA_MAX_PARTIALS;
        for (int pass = 0; pass < 2; pass++) {
            adv_partial_kernel<<<ab, PPO_THREADS, 0, st>>>(adv, B, scratch, pass);
            CR_CUDA_LAUNCHED(ctx);
            adv_finish_kernel<<<1, PPO_THREADS, 0, st>>>(B, ab, scratch, pass);
            CR_CUDA_LAUNCHED(ctx);
        }
    }
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
