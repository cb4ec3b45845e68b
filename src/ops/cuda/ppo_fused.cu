// One PPO minibatch's gradients in fused kernels (the backend op ppo_minibatch_grads): the v2
// kernel of the lab (dev/cuda/mlp_fused.cu, design and figures in dev/cuda/mlp_fused.md)
// with the per-row PPO loss inside. Per minibatch, on the context's stream:
//   1. (norm_adv) the advantage mean and std, ppo_loss.cu's kernels (cr_cuda_ppo_adv_stats);
//   2. the actor kernel: per tile of 128 rows, logits = MLP(obs) -> log-softmax -> clipped
//      policy loss + entropy bonus -> dlogits (ppo_loss_device.cuh, the rows ppo_loss computes)
//      -> backward; each block writes its partial gradients and its partial loss sums;
//   3. the critic kernel: the same with value -> (clipped) value loss -> dvalue;
//   4. two reduce kernels (one per MLP) add the per-block partial gradients in block order and
//      write them through the gradient views; one finish kernel adds the loss partials in block
//      order and adds the means into acc as ppo_loss does.
// No atomics, no allocation (the partials live in the caller's scratch), a grid that depends
// on B and the device only: bitwise repeatable and capturable into a graph.
//
// The Gaussian policy of CleanRL's ppo_continuous_action.py (ppo_minibatch_grads_gaussian) is
// the same actor kernel with the Gaussian's row in place of the categorical one: K means out,
// the log-std (a parameter of its own) read at the start, and each row's d loss / d logstd
// added into the block's loss sums; the finish kernel adds those over the blocks, subtracts the
// entropy bonus and writes the log-std's gradient.
//
// Shapes: hidden 64, obs_dim D <= 32 (padded with zeros to IP = 4, 16 or 32 in shared memory),
// actor outputs 2 (categorical) or K <= 8 (Gaussian, padded with zero rows to O = 1, 4 or 8),
// critic 1 (cr_ppo_fused_shape_ok, cr_ppo_fused_gaussian_shape_ok in backend.h). Everything else
// about the kernel (3xTF32 mma.sync for the three 64-wide products, the tanh without the
// division's slow-path guard, the staging of per-row-group sums) is the lab's v2, unchanged;
// with O > 3 outputs the 4 row groups of a warp are added by shuffles before the staging, which
// would not fit otherwise.
#include "ops/cuda/cuda_common.cuh"
#include "ops/cuda/ppo_loss_device.cuh"
#include "ops/cuda/tanh_device.cuh"

namespace {

constexpr int H = 64;
constexpr int THREADS = 256;
constexpr int R = 128;          // rows per tile
constexpr int LD = R + 8;       // row stride of the feature-major tiles (the lab's v2)
constexpr int GMAX = 512;       // most blocks of one fused kernel (the scratch is sized for it)
constexpr int STATS_STRIDE = 16; // doubles per block of partial loss sums (Gaussian: 4 + O)
constexpr int ACTIONS = 2;       // the categorical actor's outputs
constexpr int GAUSS_MAX_O = 8;   // the Gaussian actor's most outputs

// What a fused kernel trains: the critic (O = 1, the value loss), the categorical actor (O = 2,
// the policy loss with the entropy bonus) or the Gaussian actor (O >= K means).
enum { CRITIC, CATEGORICAL, GAUSSIAN };

// Row groups whose sums the end-of-kernel staging holds: 32 (one per 4 rows), or with more than
// 3 outputs 8 (one per warp: its 4 row groups added by shuffles first).
__host__ __device__ constexpr int staged_groups(int O) { return O > 3 ? 8 : 32; }

__host__ __device__ constexpr int round_up(int n, int m) { return (n + m - 1) / m * m; }

// Shared memory (floats) of the kernel for padded input width IP and O outputs: the weights
// (w0 padded to IP columns with zeros, b0, w1 in GEMM a's fragment order, b1, w2, b2), w1 again
// in GEMM c's fragment order, h1T (64, LD), d2T (64, LD), xT (IP, LD).
template <int IP, int O>
struct Smem {
    static constexpr int W1 = 0, B1 = H * IP, WA = B1 + H, B2 = WA + H * H, W3 = B2 + H,
                         B3 = W3 + O * H;
    static constexpr int WC = round_up(B3 + O, 4);
    static constexpr int H1T = WC + H * H;
    static constexpr int D2T = H1T + H * LD;
    static constexpr int XT = D2T + H * LD;
    static constexpr int FLOATS = XT + IP * LD;
    static constexpr size_t BYTES = (size_t)FLOATS * sizeof(float);
    // End-of-kernel staging in d2T: db2 (G, 64), dW3 (O, G, 64), db3 (32, O) for G =
    // staged_groups(O); the loss sums (NS, 32 doubles) in h1T.
    static constexpr int G = staged_groups(O);
    static constexpr int RED = D2T, RED_DB3 = RED + (1 + O) * G * H;
    static_assert(RED_DB3 + 32 * O <= XT, "staging must fit in d2T");
    static_assert(WC % 4 == 0 && H1T % 4 == 0 && D2T % 4 == 0 && XT % 4 == 0 && LD % 4 == 0,
                  "float4 offsets");
};

// Offsets of the six tensors in one block's row of partial gradients (the view's order:
// w0 (H, D), b0, w1 (H, H), b1, w2 (O, H), b2), and the row's length and stride.
struct PLayout {
    int w0, b0, w1, b1, w2, b2, n, stride;
};
__host__ __device__ inline PLayout playout(int D, int O) {
    PLayout l;
    l.w0 = 0, l.b0 = H * D, l.w1 = l.b0 + H, l.b1 = l.w1 + H * H, l.w2 = l.b1 + H;
    l.b2 = l.w2 + O * H, l.n = l.b2 + O, l.stride = round_up(l.n, 32);
    return l;
}

__device__ __forceinline__ float4 ld4(const float *p) {
    return *reinterpret_cast<const float4 *>(p);
}
__device__ __forceinline__ float2 ld2(const float *p) {
    return *reinterpret_cast<const float2 *>(p);
}
__device__ __forceinline__ void st4(float *p, float a, float b, float c, float d) {
    *reinterpret_cast<float4 *>(p) = make_float4(a, b, c, d);
}

// dx = dy * (1 - y^2), as src/ops/cuda/tanh.cu (no FMA contraction).
__device__ __forceinline__ float tanh_grad(float y, float dy) {
    return __fmul_rn(dy, __fsub_rn(1.0f, __fmul_rn(y, y)));
}

// Position of w1[n][k] (GEMM a) or w1[k][n] (GEMM c) in the mma fragment order.
__device__ __forceinline__ int frag_index(int n, int k) {
    return (((k >> 3) * 8 + (n >> 3)) * 32 + (n & 7) * 4 + (k & 3)) * 2 + ((k >> 2) & 1);
}

// x = big + small, big rounded to TF32 (ties away), small = x - big (exact).
__device__ __forceinline__ void split_tf32(float x, uint32_t &big, uint32_t &small) {
    big = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
    small = __float_as_uint(__fsub_rn(x, __uint_as_float(big)));
}

__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4],
                                         const uint32_t (&b)[2]) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void mma_3xtf32(float (&d)[4], const uint32_t (&ab)[4],
                                           const uint32_t (&as)[4], const uint32_t (&bb)[2],
                                           const uint32_t (&bs)[2]) {
    mma_tf32(d, as, bb);
    mma_tf32(d, ab, bs);
    mma_tf32(d, ab, bb);
}

// acc[nt] = C[16w .. 16w + 15][8nt .. 8nt + 7] of C (R, 64) = A (R, 64) B (64, 64), A given
// feature-major as aT[k][r] (64, LD), B in fragment order.
__device__ __forceinline__ void gemm_rows_mma(const float *aT, const float *bf, int w, int lane,
                                              float (&acc)[8][4]) {
    const int g = lane >> 2, t = lane & 3, r = 16 * w + g;
#pragma unroll
    for (int nt = 0; nt < 8; nt++)
#pragma unroll
        for (int i = 0; i < 4; i++) acc[nt][i] = 0.0f;
#pragma unroll 1
    for (int ks = 0; ks < H / 8; ks++) {
        const float *p = aT + (8 * ks + t) * LD + r;
        float a[4] = {p[0], p[8], p[4 * LD], p[4 * LD + 8]};
        uint32_t ab[4], as[4];
#pragma unroll
        for (int i = 0; i < 4; i++) split_tf32(a[i], ab[i], as[i]);
#pragma unroll
        for (int nt = 0; nt < 8; nt++) {
            float2 bv = ld2(bf + ((ks * 8 + nt) * 32 + lane) * 2);
            uint32_t bb[2], bs[2];
            split_tf32(bv.x, bb[0], bs[0]);
            split_tf32(bv.y, bb[1], bs[1]);
            mma_3xtf32(acc[nt], ab, as, bb, bs);
        }
    }
}

// acc[q] += fragment (m-tile w / 2, n-tile 4 (w % 2) + q) of dW2 = d2^T h1 over the tile.
__device__ __forceinline__ void gemm_dw_mma(const float *dT, const float *hT, int w, int lane,
                                            float (&acc)[4][4]) {
    const int g = lane >> 2, t = lane & 3, j = 16 * (w >> 1) + g, k0 = 32 * (w & 1) + g;
#pragma unroll 2
    for (int r = 0; r < R; r += 8) {
        float2 lo = ld2(dT + j * LD + r + 2 * t), hi = ld2(dT + (j + 8) * LD + r + 2 * t);
        float a[4] = {lo.x, hi.x, lo.y, hi.y};
        uint32_t ab[4], as[4];
#pragma unroll
        for (int i = 0; i < 4; i++) split_tf32(a[i], ab[i], as[i]);
#pragma unroll
        for (int q = 0; q < 4; q++) {
            float2 bv = ld2(hT + (k0 + 8 * q) * LD + r + 2 * t);
            uint32_t bb[2], bs[2];
            split_tf32(bv.x, bb[0], bs[0]);
            split_tf32(bv.y, bb[1], bs[1]);
            mma_3xtf32(acc[q], ab, as, bb, bs);
        }
    }
}

// What the kernels read per row besides obs, and the loss parameters.
struct RowArgs {
    const int32_t *action;          // categorical (B)
    const float *action_f, *logstd; // Gaussian: actions (B, K), log-std (K)
    const float *old_logp, *adv, *old_value, *returns;
    const cr_cuda_scratch *scratch; // adv_mean, adv_denom (norm_adv)
    cr_ppo_loss_params p;
    float inv_b;
    int K; // the MLP's outputs: 2 categorical, 1 critic, the Gaussian's K (<= O)
};

// Blocks of a kernel that one SM holds at least: 2 where the shared memory and the registers
// allow (the lab's v2), 1 with 32 padded inputs or more than 2 outputs.
__host__ __device__ constexpr int min_blocks(int IP, int O) { return IP > 16 || O > 2 ? 1 : 2; }

// The fused training step of one MLP m (a tanh MLP D -> 64 -> 64 -> K, K = ra.K <= O) over
// obs (B, D), with the PPO loss of MODE as the per-row gradient. Block b writes its partial
// gradients to partial + b * playout(D, K).stride and its partial loss sums to stats + b *
// STATS_STRIDE: CATEGORICAL {pg, entropy, -logratio, kl, clipfrac}, GAUSSIAN {pg, -logratio, kl,
// clipfrac, then the K sums of d loss / d logstd_k}, CRITIC {v}.
template <int IP, int O, int MODE>
__global__ void __launch_bounds__(THREADS, min_blocks(IP, O))
ppo_fused_kernel(cr_mlp_view m, const float *__restrict__ x, RowArgs ra,
                 float *__restrict__ partial, double *__restrict__ stats, int B, int D) {
    using L = Smem<IP, O>;
    constexpr bool ACTOR = MODE != CRITIC;
    constexpr int NS = MODE == CATEGORICAL ? 5 : MODE == GAUSSIAN ? 4 + O : 1;
    static_assert(NS <= STATS_STRIDE, "the loss sums must fit in a stats row");
    static_assert(MODE != CATEGORICAL || O == ACTIONS, "the categorical actor has 2 outputs");
    const int K = ra.K;
    constexpr int IQ = IP / 4; // step-5 columns per thread
    extern __shared__ float4 smem4[];
    float *sm = reinterpret_cast<float *>(smem4);
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int rg = tid >> 3, cg = tid & 7; // rows 4rg.., columns 8cg..
    const int wk = tid >> 2, wi = tid & 3; // step 5: dW1[wk][wi + 4q]

    float dW2acc[4][4] = {}, dW3acc[O][8] = {}, db2acc[8] = {}, db3acc[O] = {};
    float dW1acc[IQ] = {}, db1acc = 0.0f;
    double lsum[NS] = {};
    double adv_mean = 0.0, adv_denom = 1.0;
    if (ACTOR && ra.p.norm_adv) adv_mean = ra.scratch->adv_mean, adv_denom = ra.scratch->adv_denom;
    // the Gaussian's log-std, standard deviation and variance per output (gaussian.cu's)
    float g_ls[MODE == GAUSSIAN ? O : 1], g_sd[MODE == GAUSSIAN ? O : 1],
        g_var[MODE == GAUSSIAN ? O : 1];
    if constexpr (MODE == GAUSSIAN) {
#pragma unroll
        for (int o = 0; o < O; o++) {
            g_ls[o] = o < K ? ra.logstd[o] : 0.0f;
            g_sd[o] = expf(g_ls[o]);
            g_var[o] = __fmul_rn(g_sd[o], g_sd[o]);
        }
    }

    // Stage the weights: w0 padded to IP columns, w1 in both fragment orders.
    for (int i = tid; i < H * IP; i += THREADS) {
        int j = i / IP, k = i % IP;
        sm[L::W1 + i] = k < D ? m.w[0][j * D + k] : 0.0f;
    }
    for (int i = tid; i < H * H; i += THREADS) {
        int j = i >> 6, k = i & (H - 1);
        float v = m.w[1][i];
        sm[L::WA + frag_index(j, k)] = v;
        sm[L::WC + frag_index(k, j)] = v;
    }
    for (int i = tid; i < O * H; i += THREADS) sm[L::W3 + i] = i < K * H ? m.w[2][i] : 0.0f;
    if (tid < H) sm[L::B1 + tid] = m.b[0][tid], sm[L::B2 + tid] = m.b[1][tid];
    if (tid < O) sm[L::B3 + tid] = tid < K ? m.b[2][tid] : 0.0f;

    const int tiles = (B + R - 1) / R;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const int row0 = tile * R;
        // The tile's x into xT (IP, LD), zero past D and past B.
        for (int e = tid; e < R * IP; e += THREADS) {
            int r = e / IP, i = e % IP, row = row0 + r;
            sm[L::XT + i * LD + r] = row < B && i < D ? __ldg(x + (size_t)row * D + i) : 0.0f;
        }
        __syncthreads();

        // Step 1: h1 = tanh(x w0^T + b0) for rows 4rg.. x columns 8cg.. (the lab's order: the
        // first product, then fmaf over the inputs, then the bias).
        {
            float s[8][4];
#pragma unroll
            for (int i = 0; i < IP; i++) {
                float4 xv = ld4(sm + L::XT + i * LD + 4 * rg);
                float xa[4] = {xv.x, xv.y, xv.z, xv.w};
#pragma unroll
                for (int c = 0; c < 8; c++) {
                    float w = sm[L::W1 + (8 * cg + c) * IP + i];
#pragma unroll
                    for (int a = 0; a < 4; a++)
                        s[c][a] = i == 0 ? __fmul_rn(xa[a], w) : fmaf(xa[a], w, s[c][a]);
                }
            }
#pragma unroll
            for (int c = 0; c < 8; c++) {
                int j = 8 * cg + c;
                float bj = sm[L::B1 + j];
                st4(sm + L::H1T + j * LD + 4 * rg, cr_tanhf_fast_device(__fadd_rn(s[c][0], bj)),
                    cr_tanhf_fast_device(__fadd_rn(s[c][1], bj)), cr_tanhf_fast_device(__fadd_rn(s[c][2], bj)),
                    cr_tanhf_fast_device(__fadd_rn(s[c][3], bj)));
            }
        }
        __syncthreads();

        // Step 2: h2 = tanh(h1 w1^T + b1) (GEMM a staged through d2T), out = h2 w2^T + b2.
        float h2[4][8];
        {
            float acc[8][4];
            gemm_rows_mma(sm + L::H1T, sm + L::WA, warp, lane, acc);
            const int g = lane >> 2, t = lane & 3;
            float *s = sm + L::D2T + 16 * warp + g;
#pragma unroll
            for (int nt = 0; nt < 8; nt++) {
                float *c = s + (8 * nt + 2 * t) * LD;
                c[0] = acc[nt][0], c[LD] = acc[nt][1], c[8] = acc[nt][2], c[LD + 8] = acc[nt][3];
            }
            __syncthreads();
#pragma unroll
            for (int c = 0; c < 8; c++) {
                float4 v = ld4(sm + L::D2T + (8 * cg + c) * LD + 4 * rg);
                h2[0][c] = v.x, h2[1][c] = v.y, h2[2][c] = v.z, h2[3][c] = v.w;
            }
        }
#pragma unroll
        for (int c = 0; c < 8; c++) {
            float bj = sm[L::B2 + 8 * cg + c];
#pragma unroll
            for (int a = 0; a < 4; a++) h2[a][c] = cr_tanhf_fast_device(__fadd_rn(h2[a][c], bj));
        }
        float ov[4][O];
#pragma unroll
        for (int o = 0; o < O; o++) {
            float4 wa = ld4(sm + L::W3 + o * H + 8 * cg), wb = ld4(sm + L::W3 + o * H + 8 * cg + 4);
            float w[8] = {wa.x, wa.y, wa.z, wa.w, wb.x, wb.y, wb.z, wb.w};
            float bo = sm[L::B3 + o];
#pragma unroll
            for (int a = 0; a < 4; a++) {
                float s = __fmul_rn(h2[a][0], w[0]);
#pragma unroll
                for (int c = 1; c < 8; c++) s = fmaf(h2[a][c], w[c], s);
                // butterfly over the 8 column groups: every lane gets the same bits
#pragma unroll
                for (int k = 1; k < 8; k <<= 1)
                    s = __fadd_rn(s, __shfl_xor_sync(0xffffffffu, s, k));
                ov[a][o] = __fadd_rn(s, bo);
            }
        }

        // The loss: dout (the mean's 1/B included) for each of the thread's 4 rows; the 8
        // lanes of a row compute the same bits, lane cg = 0 adds the row's loss sums.
        float dout[4][O];
#pragma unroll
        for (int a = 0; a < 4; a++) {
            int row = row0 + 4 * rg + a;
            if (row < B) {
                if constexpr (MODE == GAUSSIAN) {
                    // log-prob: the K terms added in k order, as gaussian.cu's row_sum
                    float an = cr_ppo_norm_adv(ra.adv[row], ra.p.norm_adv, adv_mean, adv_denom);
                    const float *act = ra.action_f + (size_t)row * K;
                    float d[O], logp = 0.0f, st[4];
#pragma unroll
                    for (int o = 0; o < O; o++) {
                        d[o] = o < K ? __fsub_rn(act[o], ov[a][o]) : 0.0f;
                        if (o < K)
                            logp = __fadd_rn(logp, cr_gaussian_logp_term(d[o], g_sd[o], g_ls[o]));
                    }
                    float g = cr_ppo_surrogate(logp, ra.old_logp[row], an, ra.p.clip_coef,
                                               ra.inv_b, st);
                    // d logp / d mean_k = d / var; d logp / d logstd_k = d^2 / var - 1
#pragma unroll
                    for (int o = 0; o < O; o++)
                        dout[a][o] = o < K ? __fdiv_rn(__fmul_rn(g, d[o]), g_var[o]) : 0.0f;
                    if (cg == 0) {
#pragma unroll
                        for (int k = 0; k < 4; k++) lsum[k] += st[k];
#pragma unroll
                        for (int o = 0; o < O; o++)
                            if (o < K)
                                lsum[4 + o] += (double)__fmul_rn(
                                    g, __fsub_rn(__fdiv_rn(__fmul_rn(d[o], d[o]), g_var[o]), 1.0f));
                    }
                } else if constexpr (MODE == CATEGORICAL) {
                    float st[5];
                    float an = cr_ppo_norm_adv(ra.adv[row], ra.p.norm_adv, adv_mean, adv_denom);
                    cr_ppo_policy_row(ov[a], O, ra.action[row], ra.old_logp[row], an,
                                      ra.p.clip_coef, ra.p.ent_coef, ra.inv_b, dout[a], st);
                    if (cg == 0)
#pragma unroll
                        for (int k = 0; k < 5; k++) lsum[k] += st[k];
                } else {
                    float dv;
                    float vl = cr_ppo_value_term(ov[a][0], ra.old_value[row], ra.returns[row],
                                                 ra.p.clip_coef, ra.p.clip_vloss, &dv);
                    dout[a][0] = cr_ppo_dvalue(ra.p.vf_coef, dv, ra.inv_b);
                    if (cg == 0) lsum[0] += vl;
                }
            } else {
#pragma unroll
                for (int o = 0; o < O; o++) dout[a][o] = 0.0f;
            }
        }

#pragma unroll
        for (int a = 0; a < 4; a++)
#pragma unroll
            for (int o = 0; o < O; o++) db3acc[o] = __fadd_rn(db3acc[o], dout[a][o]);
#pragma unroll
        for (int c = 0; c < 8; c++) {
            int j = 8 * cg + c;
            float d2[4];
#pragma unroll
            for (int a = 0; a < 4; a++) {
                float g = __fmul_rn(dout[a][0], sm[L::W3 + j]);
#pragma unroll
                for (int o = 1; o < O; o++) g = fmaf(dout[a][o], sm[L::W3 + o * H + j], g);
                d2[a] = tanh_grad(h2[a][c], g);
#pragma unroll
                for (int o = 0; o < O; o++) dW3acc[o][c] = fmaf(dout[a][o], h2[a][c], dW3acc[o][c]);
                db2acc[c] = __fadd_rn(db2acc[c], d2[a]);
            }
            st4(sm + L::D2T + j * LD + 4 * rg, d2[0], d2[1], d2[2], d2[3]);
        }
        __syncthreads();

        // Step 3: dW2 += d2^T h1.
        gemm_dw_mma(sm + L::D2T, sm + L::H1T, warp, lane, dW2acc);
        __syncthreads();

        // Step 4: d1 = (d2 w1) * (1 - h1^2), over h1T in place.
        {
            float dh[8][4];
            gemm_rows_mma(sm + L::D2T, sm + L::WC, warp, lane, dh);
            const int g = lane >> 2, t = lane & 3;
            float *s = sm + L::H1T + 16 * warp + g;
#pragma unroll
            for (int nt = 0; nt < 8; nt++) {
                float *c = s + (8 * nt + 2 * t) * LD;
                c[0] = tanh_grad(c[0], dh[nt][0]);
                c[LD] = tanh_grad(c[LD], dh[nt][1]);
                c[8] = tanh_grad(c[8], dh[nt][2]);
                c[LD + 8] = tanh_grad(c[LD + 8], dh[nt][3]);
            }
        }
        __syncthreads();

        // Step 5: dW1[wk][wi + 4q] += sum_r d1[r][wk] x[r][wi + 4q]; db1[wk] += sum_r d1[r][wk].
        {
            const float *dp = sm + L::H1T + wk * LD;
#pragma unroll 2
            for (int r = 0; r < R; r += 4) {
                float4 d = ld4(dp + r);
#pragma unroll
                for (int q = 0; q < IQ; q++) {
                    float4 xv = ld4(sm + L::XT + (wi + 4 * q) * LD + r);
                    float s = dW1acc[q];
                    s = fmaf(d.x, xv.x, s);
                    s = fmaf(d.y, xv.y, s);
                    s = fmaf(d.z, xv.z, s);
                    s = fmaf(d.w, xv.w, s);
                    dW1acc[q] = s;
                }
                if (wi == 0)
                    db1acc = __fadd_rn(__fadd_rn(__fadd_rn(__fadd_rn(db1acc, d.x), d.y), d.z), d.w);
            }
        }
        __syncthreads(); // h1T, d2T and xT are rewritten by the next tile
    }

    // This block's partial gradients and loss sums.
    float *red = sm + L::RED;
    constexpr int G = L::G;
    if constexpr (G == 32) {
#pragma unroll
        for (int c = 0; c < 8; c++) {
            red[rg * H + 8 * cg + c] = db2acc[c];
#pragma unroll
            for (int o = 0; o < O; o++) red[(1 + o) * 32 * H + rg * H + 8 * cg + c] = dW3acc[o][c];
        }
    } else { // the warp's 4 row groups (lanes 8 apart) added first, then one row per warp
#pragma unroll
        for (int c = 0; c < 8; c++) {
            float v = db2acc[c];
            v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, 8));
            v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, 16));
            if (lane < 8) red[warp * H + 8 * cg + c] = v;
#pragma unroll
            for (int o = 0; o < O; o++) {
                float w = dW3acc[o][c];
                w = __fadd_rn(w, __shfl_xor_sync(0xffffffffu, w, 8));
                w = __fadd_rn(w, __shfl_xor_sync(0xffffffffu, w, 16));
                if (lane < 8) red[(1 + o) * G * H + warp * H + 8 * cg + c] = w;
            }
        }
    }
    if (cg == 0) {
#pragma unroll
        for (int o = 0; o < O; o++) sm[L::RED_DB3 + rg * O + o] = db3acc[o];
        double *ls = reinterpret_cast<double *>(sm + L::H1T);
#pragma unroll
        for (int k = 0; k < NS; k++) ls[k * 32 + rg] = lsum[k];
    }
    __syncthreads();
    const PLayout pl = playout(D, K);
    float *p = partial + (size_t)blockIdx.x * pl.stride;
    {
        const int g = lane >> 2, t = lane & 3, j = 16 * (warp >> 1) + g;
#pragma unroll
        for (int q = 0; q < 4; q++) {
            int k = 32 * (warp & 1) + 8 * q + 2 * t;
            p[pl.w1 + j * H + k] = dW2acc[q][0];
            p[pl.w1 + j * H + k + 1] = dW2acc[q][1];
            p[pl.w1 + (j + 8) * H + k] = dW2acc[q][2];
            p[pl.w1 + (j + 8) * H + k + 1] = dW2acc[q][3];
        }
    }
#pragma unroll
    for (int q = 0; q < IQ; q++) {
        int i = wi + 4 * q;
        if (i < D) p[pl.w0 + wk * D + i] = dW1acc[q];
    }
    if (wi == 0) p[pl.b0 + wk] = db1acc;
    for (int q = tid; q < (1 + K) * H; q += THREADS) { // q < H: db2[q]; else dW3[q/H - 1][q%H]
        float s = 0.0f;
        for (int g = 0; g < G; g++) s = __fadd_rn(s, red[(q / H) * G * H + g * H + q % H]);
        p[q < H ? pl.b1 + q : pl.w2 + q - H] = s;
    }
    if (tid < K) {
        float s = 0.0f;
        for (int g = 0; g < 32; g++) s = __fadd_rn(s, sm[L::RED_DB3 + g * O + tid]);
        p[pl.b2 + tid] = s;
    }
    if (tid < NS) {
        const double *ls = reinterpret_cast<const double *>(sm + L::H1T);
        double s = 0.0;
        for (int g = 0; g < 32; g++) s += ls[tid * 32 + g];
        stats[(size_t)blockIdx.x * STATS_STRIDE + tid] = s;
    }
}

// grad[q] = sum over blocks g of partial[g][q] (32 parameters a block, 8 warps each summing
// every 8th row, then the 8 sums in warp order), written through the gradient view.
__global__ void __launch_bounds__(256)
reduce_grads_kernel(const float *__restrict__ partial, cr_mlp_view g, int G, int D, int O) {
    __shared__ float sh[8][33];
    const PLayout pl = playout(D, O);
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, q = blockIdx.x * 32 + lane;
    float s = 0.0f;
    if (q < pl.n)
        for (int k = w; k < G; k += 8) s = __fadd_rn(s, partial[(size_t)k * pl.stride + q]);
    sh[w][lane] = s;
    __syncthreads();
    if (w == 0 && q < pl.n) {
        float t = sh[0][lane];
        for (int k = 1; k < 8; k++) t = __fadd_rn(t, sh[k][lane]);
        float *dst = q < pl.b0   ? g.w[0] + q
                     : q < pl.w1 ? g.b[0] + (q - pl.b0)
                     : q < pl.b1 ? g.w[1] + (q - pl.w1)
                     : q < pl.w2 ? g.b[1] + (q - pl.b1)
                     : q < pl.b2 ? g.w[2] + (q - pl.w2)
                                 : g.b[2] + (q - pl.b2);
        *dst = t;
    }
}

// Adds the loss partials of the actor's Ga and the critic's Gc blocks (in block order) and the
// means into acc, as ppo_loss's finish kernel does.
__global__ void __launch_bounds__(THREADS)
finish_stats_kernel(const double *__restrict__ sa, int Ga, const double *__restrict__ sc, int Gc,
                    float ent_coef, float vf_coef, cr_ppo_stats_acc *acc, int B) {
    __shared__ double sh[6 * THREADS];
    double sums[6] = {0, 0, 0, 0, 0, 0};
    for (int k = threadIdx.x; k < Ga; k += THREADS) {
        const double *r = sa + (size_t)k * STATS_STRIDE;
        sums[0] += r[0], sums[2] += r[1], sums[3] += r[2], sums[4] += r[3], sums[5] += r[4];
    }
    for (int k = threadIdx.x; k < Gc; k += THREADS) sums[1] += sc[(size_t)k * STATS_STRIDE];
    cr_block_sum<6, THREADS>(sums, sh);
    if (threadIdx.x == 0) cr_ppo_acc_add(sums, ent_coef, vf_coef, acc, B);
}

// The Gaussian's finish: adds the blocks' sums (in block order) as finish_stats_kernel does,
// writes d loss / d logstd_k = its sum over the rows - ent_coef, and adds the means into acc with
// the entropy of the log-std (the same for every row) as gaussian.cu's finish does.
__global__ void __launch_bounds__(THREADS)
finish_gaussian_kernel(const double *__restrict__ sa, int Ga, const double *__restrict__ sc,
                       int Gc, const float *__restrict__ logstd, float *g_logstd, int K,
                       float ent_coef, float vf_coef, cr_ppo_stats_acc *acc, int B) {
    constexpr int N = 5 + GAUSS_MAX_O; // pg, v, -logratio, kl, clipfrac, then dlogstd (K)
    __shared__ double sh[N * THREADS];
    double sums[N] = {};
    for (int k = threadIdx.x; k < Ga; k += THREADS) {
        const double *r = sa + (size_t)k * STATS_STRIDE;
        sums[0] += r[0], sums[2] += r[1], sums[3] += r[2], sums[4] += r[3];
        for (int o = 0; o < K; o++) sums[5 + o] += r[4 + o];
    }
    for (int k = threadIdx.x; k < Gc; k += THREADS) sums[1] += sc[(size_t)k * STATS_STRIDE];
    cr_block_sum<N, THREADS>(sums, sh);
    if (threadIdx.x != 0) return;
    for (int o = 0; o < K; o++) g_logstd[o] = (float)__dsub_rn(sums[5 + o], (double)ent_coef);
    // entropy: the sum over k of 0.5 + log(sqrt(2 pi)) + logstd_k, in float, in k order
    float ent = 0.0f;
    for (int o = 0; o < K; o++)
        ent = __fadd_rn(ent, __fadd_rn(0.5f + CR_LOG_SQRT_2PI, logstd[o]));
    cr_ppo_acc_add_entropy(sums, ent, ent_coef, vf_coef, acc, B);
}

// Blocks whose partials the scratch holds for B rows.
int grid_bound(int B) {
    int tiles = (B + R - 1) / R;
    return tiles < 1 ? 1 : tiles > GMAX ? GMAX : tiles;
}

// The kernels' instances: for each padded input width IP (4, 16, 32) the categorical actor and
// the critic, then the Gaussian actor for each IP and padded output count O (1, 4, 8).
using KernelFn = void (*)(cr_mlp_view, const float *, RowArgs, float *, double *, int, int);
struct KernelInfo {
    KernelFn f;
    size_t bytes;
};
template <int IP, int O, int MODE>
constexpr KernelInfo info() {
    return {ppo_fused_kernel<IP, O, MODE>, Smem<IP, O>::BYTES};
}
const KernelInfo kernels[CR_FUSED_KERNELS] = {
    info<4, ACTIONS, CATEGORICAL>(),  info<4, 1, CRITIC>(),
    info<16, ACTIONS, CATEGORICAL>(), info<16, 1, CRITIC>(),
    info<32, ACTIONS, CATEGORICAL>(), info<32, 1, CRITIC>(),
    info<4, 1, GAUSSIAN>(),           info<4, 4, GAUSSIAN>(),  info<4, 8, GAUSSIAN>(),
    info<16, 1, GAUSSIAN>(),          info<16, 4, GAUSSIAN>(), info<16, 8, GAUSSIAN>(),
    info<32, 1, GAUSSIAN>(),          info<32, 4, GAUSSIAN>(), info<32, 8, GAUSSIAN>(),
};
static_assert(CR_FUSED_MAX_OBS == 32 && CR_FUSED_MAX_GAUSS_K == GAUSS_MAX_O,
              "the instances cover backend.h's shapes");

int ip_index(int D) { return D <= 4 ? 0 : D <= 16 ? 1 : 2; }
int categorical_kernel(int D) { return 2 * ip_index(D); }
int critic_kernel(int D) { return 2 * ip_index(D) + 1; }
int gaussian_kernel(int D, int K) { return 6 + 3 * ip_index(D) + (K <= 1 ? 0 : K <= 4 ? 1 : 2); }

// Block i of the G blocks of kernel k over B rows: one launch on stream st.
void launch(cudarl_ctx *ctx, cudaStream_t st, int k, int G, const cr_mlp_view &m,
            const float *obs, const RowArgs &ra, float *partial, double *stats, int B, int D) {
    kernels[k].f<<<G, THREADS, kernels[k].bytes, st>>>(m, obs, ra, partial, stats, B, D);
    CR_CUDA_LAUNCHED(ctx);
}

// Where the scratch puts each piece, for B rows of the actor's and the critic's layouts.
struct ScratchParts {
    float *part_a, *part_c;
    double *stats_a, *stats_c;
};
ScratchParts carve(void *scratch, int B, size_t num_params, const PLayout &la) {
    const int Gb = grid_bound(B);
    ScratchParts s;
    s.part_a = (float *)scratch;
    s.part_c = s.part_a + (size_t)Gb * la.stride;
    size_t floats = (size_t)Gb * (num_params + 64);
    s.stats_a = (double *)((char *)scratch + (floats * sizeof(float) + 15) / 16 * 16);
    s.stats_c = s.stats_a + (size_t)Gb * STATS_STRIDE;
    return s;
}

// The actor's kernel ka on the context's stream and the critic's kc on the side stream (forked
// from and joined back to the context's stream: inside a capture, two branches of the graph),
// each followed by its gradient reduction. Each fused kernel holds one or two blocks an SM; run
// one after the other, the second waited for the first's last tiles and launch, while side by
// side its blocks take SMs as the first's retire. Returns the actor's and critic's block counts.
void run_pair(cudarl_ctx *ctx, int ka, int kc, const cr_mlp_view *actor,
              const cr_mlp_view *critic, const cr_mlp_view *g_actor, const cr_mlp_view *g_critic,
              const float *obs, const RowArgs &ra, const ScratchParts &sp, int B, int *Ga,
              int *Gc) {
    const cr_cuda_impl *im = cr_impl(ctx);
    const int D = actor->dims[0], K = actor->dims[3], Gb = grid_bound(B);
    *Ga = Gb < im->fused_grid_cap[ka] ? Gb : im->fused_grid_cap[ka];
    *Gc = Gb < im->fused_grid_cap[kc] ? Gb : im->fused_grid_cap[kc];
    RowArgs rc = ra;
    rc.K = 1;
    cudaStream_t st = cr_stream(ctx);
    CUDA_CHECK(cudaEventRecord(im->fork, st));
    CUDA_CHECK(cudaStreamWaitEvent(im->side, im->fork, 0));
    launch(ctx, st, ka, *Ga, *actor, obs, ra, sp.part_a, sp.stats_a, B, D);
    launch(ctx, im->side, kc, *Gc, *critic, obs, rc, sp.part_c, sp.stats_c, B, D);
    const PLayout la = playout(D, K), lc = playout(D, 1);
    reduce_grads_kernel<<<(la.n + 31) / 32, 256, 0, st>>>(sp.part_a, *g_actor, *Ga, D, K);
    CR_CUDA_LAUNCHED(ctx);
    reduce_grads_kernel<<<(lc.n + 31) / 32, 256, 0, im->side>>>(sp.part_c, *g_critic, *Gc, D, 1);
    CR_CUDA_LAUNCHED(ctx);
    CUDA_CHECK(cudaEventRecord(im->join, im->side));
    CUDA_CHECK(cudaStreamWaitEvent(st, im->join, 0));
}

} // namespace

int cr_cuda_ppo_fused_setup(cr_cuda_impl *im, int sms) {
    for (int k = 0; k < CR_FUSED_KERNELS; k++) {
        cudaError_t e = cudaFuncSetAttribute(kernels[k].f,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             (int)kernels[k].bytes);
        int per_sm = 0;
        if (e == cudaSuccess)
            e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernels[k].f, THREADS,
                                                              kernels[k].bytes);
        if (e != cudaSuccess || per_sm < 1) {
            cudaGetLastError();
            return 0;
        }
        int cap = per_sm * sms;
        im->fused_grid_cap[k] = cap > GMAX ? GMAX : cap;
    }
    return 1;
}

size_t cr_cuda_ppo_minibatch_scratch_bytes(int B, size_t num_params) {
    size_t G = (size_t)grid_bound(B);
    // per block: both MLPs' partial rows (each rounded up to 32 floats), then two stats rows
    size_t floats = G * (num_params + 64);
    return (floats * sizeof(float) + 15) / 16 * 16 +
           2 * G * STATS_STRIDE * sizeof(double);
}

void cr_cuda_ppo_minibatch_grads(cudarl_ctx *ctx, const cr_mlp_view *actor,
                                 const cr_mlp_view *critic, const cr_mlp_view *g_actor,
                                 const cr_mlp_view *g_critic, const float *obs,
                                 const int32_t *action, const float *old_logp, const float *adv,
                                 const float *old_value, const float *returns,
                                 const cr_ppo_loss_params *p, cr_ppo_stats_acc *acc,
                                 void *scratch, int B, int A) {
    CUDARL_ASSERT(cr_ppo_fused_shape_ok(actor, critic) && A == actor->dims[3]);
    if (B <= 0) return;
    const int D = actor->dims[0];
    const PLayout la = playout(D, ACTIONS), lc = playout(D, 1);
    const ScratchParts sp = carve(scratch, B, (size_t)la.n + (size_t)lc.n, la);
    if (p->norm_adv) cr_cuda_ppo_adv_stats(ctx, adv, B);
    RowArgs ra = {action,  NULL,   NULL, old_logp, adv, old_value, returns, cr_impl(ctx)->scratch,
                  *p,      1.0f / (float)B, ACTIONS};
    int Ga, Gc;
    run_pair(ctx, categorical_kernel(D), critic_kernel(D), actor, critic, g_actor, g_critic, obs,
             ra, sp, B, &Ga, &Gc);
    finish_stats_kernel<<<1, THREADS, 0, cr_stream(ctx)>>>(sp.stats_a, Ga, sp.stats_c, Gc,
                                                           p->ent_coef, p->vf_coef, acc, B);
    CR_CUDA_LAUNCHED(ctx);
}

void cr_cuda_ppo_minibatch_grads_gaussian(
    cudarl_ctx *ctx, const cr_mlp_view *actor, const cr_mlp_view *critic, const float *logstd,
    const cr_mlp_view *g_actor, const cr_mlp_view *g_critic, float *g_logstd, const float *obs,
    const float *action, const float *old_logp, const float *adv, const float *old_value,
    const float *returns, const cr_ppo_loss_params *p, cr_ppo_stats_acc *acc, void *scratch,
    int B) {
    CUDARL_ASSERT(cr_ppo_fused_gaussian_shape_ok(actor, critic));
    if (B <= 0) return;
    const int D = actor->dims[0], K = actor->dims[3];
    const PLayout la = playout(D, K), lc = playout(D, 1);
    // the scratch was sized for both MLPs and the log-std: at least what is carved here
    const ScratchParts sp = carve(scratch, B, (size_t)la.n + (size_t)lc.n + (size_t)K, la);
    if (p->norm_adv) cr_cuda_ppo_adv_stats(ctx, adv, B);
    RowArgs ra = {NULL, action, logstd, old_logp, adv, old_value, returns, cr_impl(ctx)->scratch,
                  *p,   1.0f / (float)B, K};
    int Ga, Gc;
    run_pair(ctx, gaussian_kernel(D, K), critic_kernel(D), actor, critic, g_actor, g_critic, obs,
             ra, sp, B, &Ga, &Gc);
    finish_gaussian_kernel<<<1, THREADS, 0, cr_stream(ctx)>>>(
        sp.stats_a, Ga, sp.stats_c, Gc, logstd, g_logstd, K, p->ent_coef, p->vf_coef, acc, B);
    CR_CUDA_LAUNCHED(ctx);
}
