// Gymnasium's running normalization on the device (RunningMeanStd, NormalizeObservation,
// NormalizeReward): the semantics are src/ops/cpu/normalize.c's; read that first.
//
// The batch statistics are a deterministic two-pass reduction in double, no atomics, with a grid
// that is a function of the shapes only, so the result is bitwise repeatable:
//   1. moments: each block takes a chunk of rows and a tile of columns, sums each column's chunk
//      (S), then sums the squared deviations from the chunk's own mean (M2), rereading the chunk;
//      both go to scratch->wide;
//   2. finish (a warp per column): the batch mean from the chunks' sums, the batch
//      M2 = sum over chunks of M2_c + n_c (mean_c - mean)^2 (the exact decomposition of the
//      CPU's sum of squared deviations), each summed in a fixed order (lane by lane, then a
//      butterfly), then the merge into the running statistics with the CPU's roundings;
//   3. count += B (one thread), once every column has read the old count.
// The batch mean and variance differ from the CPU's only by the order of the double sums; the
// merge, the normalizations and the discounted returns are the CPU's operations, each rounded
// as the CPU rounds it (_rn intrinsics: no FMA contraction).
#include "ops/cuda/cuda_common.cuh"

#define NORM_THREADS 256
#define NORM_MAX_CHUNKS 512
#define NORM_MIN_STEPS 8 // rows a thread takes in a chunk, at least
#define NORM_MAX_FINISH 1024 // blocks of the finish (a warp per column, grid-stride)
// columns of one group: its chunks' S and M2 fill at most the wide partials
#define NORM_MAX_GROUP (CR_CUDA_WIDE_PARTIALS / 2)

// The moments launch for B rows of a group of Dg columns: blocks of tx column lanes by ty row
// lanes (tx ty <= NORM_THREADS; a block reads ty whole rows when Dg < 32, else 32-column runs of
// 8 rows), `tiles` column tiles by `chunks` chunks of `rows` rows.
typedef struct moments_grid {
    int tx, ty, tiles, chunks;
    long rows;
} moments_grid;

static moments_grid plan_moments(long B, int Dg) {
    moments_grid m;
    m.tx = Dg < 32 ? Dg : 32;
    m.ty = NORM_THREADS / m.tx;
    m.tiles = (Dg + m.tx - 1) / m.tx;
    long cap = CR_CUDA_WIDE_PARTIALS / (2L * Dg);
    if (cap > NORM_MAX_CHUNKS) cap = NORM_MAX_CHUNKS;
    long rows = (B + cap - 1) / cap, least = (long)m.ty * NORM_MIN_STEPS;
    m.rows = rows > least ? rows : least;
    m.chunks = (int)((B + m.rows - 1) / m.rows);
    return m;
}

// Chunk c = blockIdx.y (rows [c R, min(B, c R + R))) of the columns d0 + blockIdx.x tx + x of
// x (B, D): each column's sum S and M2 = sum of (x - S / n)^2 over the chunk, in double, into
// wide[c Dg + dl] and wide[(G + c) Dg + dl] (dl: the column within the group).
template <typename T>
__global__ void __launch_bounds__(NORM_THREADS)
moments_kernel(const T *__restrict__ x, long B, int D, int d0, int Dg, long R, int G,
               double *__restrict__ wide) {
    __shared__ double sh[NORM_THREADS];
    __shared__ double chunk_sum[32];
    const int tx = threadIdx.x, ty = threadIdx.y, TX = blockDim.x, TY = blockDim.y;
    const int dl = blockIdx.x * TX + tx;
    const bool on = dl < Dg;
    const long r0 = blockIdx.y * R, r1 = r0 + R < B ? r0 + R : B;
    const T *col = x + d0 + (on ? dl : 0);

    double s = 0.0;
    if (on)
        for (long r = r0 + ty; r < r1; r += TY) s = __dadd_rn(s, (double)col[r * D]);
    sh[ty * TX + tx] = s;
    __syncthreads();
    if (ty == 0) {
        double t = 0.0;
        for (int i = 0; i < TY; i++) t = __dadd_rn(t, sh[i * TX + tx]);
        chunk_sum[tx] = t;
    }
    __syncthreads();
    const double S = chunk_sum[tx], cm = __ddiv_rn(S, (double)(r1 - r0));

    double m2 = 0.0;
    if (on)
        for (long r = r0 + ty; r < r1; r += TY) {
            double e = __dsub_rn((double)col[r * D], cm);
            m2 = __dadd_rn(m2, __dmul_rn(e, e));
        }
    sh[ty * TX + tx] = m2;
    __syncthreads();
    if (ty == 0 && on) {
        double t = 0.0;
        for (int i = 0; i < TY; i++) t = __dadd_rn(t, sh[i * TX + tx]);
        wide[(size_t)blockIdx.y * Dg + dl] = S;
        wide[(size_t)(G + blockIdx.y) * Dg + dl] = t;
    }
}

// RunningMeanStd.update_from_moments with normalize.c's roundings: the batch of n values, mean bm
// and population variance bv, merged into (mean, var) of count values.
__device__ __forceinline__ void merge(double *mean, double *var, double count, double bm,
                                      double bv, double n) {
    double delta = __dsub_rn(bm, *mean), tot = __dadd_rn(count, n);
    double m2 = __dadd_rn(__dadd_rn(__dmul_rn(*var, count), __dmul_rn(bv, n)),
                          __ddiv_rn(__dmul_rn(__dmul_rn(__dmul_rn(delta, delta), count), n), tot));
    *mean = __dadd_rn(*mean, __ddiv_rn(__dmul_rn(delta, n), tot));
    *var = __ddiv_rn(m2, tot);
}

// The batch mean and variance of each column of the group from its G chunks, merged into
// mean[d0 + dl], var[d0 + dl] with the running count (not updated here: the other columns still
// read it). A warp per column: lane l takes chunks l, l + 32, ... in order, cr_warp_sum adds the
// lanes.
__global__ void __launch_bounds__(NORM_THREADS)
moments_finish_kernel(const double *__restrict__ wide, long B, long R, int G, int d0, int Dg,
                      double *mean, double *var, const double *count) {
    const int lane = threadIdx.x & 31, warps = gridDim.x * (NORM_THREADS / 32);
    const double n = (double)B, cnt = *count;
    for (int dl = (blockIdx.x * NORM_THREADS + threadIdx.x) / 32; dl < Dg; dl += warps) {
        double s = 0.0;
        for (int c = lane; c < G; c += 32) s = __dadd_rn(s, wide[(size_t)c * Dg + dl]);
        const double bm = __ddiv_rn(cr_warp_sum(s), n);
        double m2 = 0.0;
        for (int c = lane; c < G; c += 32) {
            long rc = B - c * R < R ? B - c * R : R;
            double nc = (double)rc;
            double dm = __dsub_rn(__ddiv_rn(wide[(size_t)c * Dg + dl], nc), bm);
            m2 = __dadd_rn(m2, __dadd_rn(wide[(size_t)(G + c) * Dg + dl],
                                         __dmul_rn(__dmul_rn(nc, dm), dm)));
        }
        m2 = cr_warp_sum(m2);
        if (lane == 0) merge(&mean[d0 + dl], &var[d0 + dl], cnt, bm, __ddiv_rn(m2, n), n);
    }
}

// *count += B, once every column has been merged.
__global__ void count_add_kernel(double *count, long B) {
    *count = __dadd_rn(*count, (double)B);
}

// mean (D), var (D), count (1) updated with x (B, D): moments and finish per group of columns.
template <typename T>
static void stats_update(cudarl_ctx *ctx, double *mean, double *var, double *count, const T *x,
                         long B, int D) {
    cudaStream_t st = cr_stream(ctx);
    double *wide = cr_impl(ctx)->scratch->wide;
    for (int d0 = 0; d0 < D; d0 += NORM_MAX_GROUP) {
        const int Dg = D - d0 < NORM_MAX_GROUP ? D - d0 : NORM_MAX_GROUP;
        const moments_grid m = plan_moments(B, Dg);
        moments_kernel<T><<<dim3(m.tiles, m.chunks), dim3(m.tx, m.ty), 0, st>>>(
            x, B, D, d0, Dg, m.rows, m.chunks, wide);
        CR_CUDA_LAUNCHED(ctx);
        const int warps_per_block = NORM_THREADS / 32;
        const int fb = (Dg + warps_per_block - 1) / warps_per_block;
        moments_finish_kernel<<<fb < NORM_MAX_FINISH ? fb : NORM_MAX_FINISH, NORM_THREADS, 0,
                                st>>>(wide, B, m.rows, m.chunks, d0, Dg, mean, var, count);
        CR_CUDA_LAUNCHED(ctx);
    }
    count_add_kernel<<<1, 1, 0, st>>>(count, B);
    CR_CUDA_LAUNCHED(ctx);
}

void cr_cuda_running_stats_update(cudarl_ctx *ctx, double *mean, double *var, double *count,
                                  const float *x, int B, int D) {
    if (B <= 0 || D <= 0) return;
    stats_update<float>(ctx, mean, var, count, x, B, D);
}

__device__ __forceinline__ float clipf(float v, float c) { return v < -c ? -c : v > c ? c : v; }

// y (B D) = clip((x - mean[d]) / sqrt(var[d] + 1e-8)), d = i mod D; y may be x. The column
// moves on by step mod D with each grid-stride step (no 64-bit division in the loop).
__global__ void normalize_obs_kernel(const double *__restrict__ mean,
                                     const double *__restrict__ var, const float *x, float *y,
                                     size_t n, int D, float clip) {
    const size_t step = (size_t)gridDim.x * blockDim.x;
    const int step_d = (int)(step % (size_t)D);
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (int d = (int)(i % (size_t)D); i < n; i += step) {
        double sd = __dsqrt_rn(__dadd_rn(var[d], 1e-8));
        y[i] = clipf((float)__ddiv_rn(__dsub_rn((double)x[i], mean[d]), sd), clip);
        d += step_d;
        if (d >= D) d -= D;
    }
}

void cr_cuda_normalize_obs(cudarl_ctx *ctx, const double *mean, const double *var,
                           const float *x, float *y, int B, int D, float clip) {
    if (B <= 0 || D <= 0) return;
    const size_t n = (size_t)B * D;
    normalize_obs_kernel<<<cr_cuda_blocks(n, CR_CUDA_THREADS), CR_CUDA_THREADS, 0,
                           cr_stream(ctx)>>>(mean, var, x, y, n, D, clip);
    CR_CUDA_LAUNCHED(ctx);
}

// ret (N) = ret gamma (1 - terminated) + reward: each env's discounted return, reset where its
// episode terminated (not where it was truncated).
__global__ void discounted_return_kernel(double *__restrict__ ret, const float *__restrict__ reward,
                                         const uint8_t *__restrict__ terminated, int N,
                                         float gamma) {
    const int step = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += step) {
        double keep = __dsub_rn(1.0, (double)terminated[i]);
        ret[i] = __dadd_rn(__dmul_rn(__dmul_rn(ret[i], (double)gamma), keep), (double)reward[i]);
    }
}

// out (N) = clip(reward / sqrt(var + 1e-8)) with the statistics just updated.
__global__ void scale_reward_kernel(const float *__restrict__ reward, const double *var,
                                    float *out, int N, float clip) {
    const double sd = __dsqrt_rn(__dadd_rn(*var, 1e-8));
    const int step = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += step)
        out[i] = clipf((float)__ddiv_rn((double)reward[i], sd), clip);
}

void cr_cuda_normalize_reward(cudarl_ctx *ctx, double *mean, double *var, double *count,
                              double *ret, const float *reward, const uint8_t *terminated,
                              float *out, int N, float gamma, float clip) {
    if (N <= 0) return;
    cudaStream_t st = cr_stream(ctx);
    const unsigned blocks = cr_cuda_blocks((size_t)N, CR_CUDA_THREADS);
    discounted_return_kernel<<<blocks, CR_CUDA_THREADS, 0, st>>>(ret, reward, terminated, N,
                                                                 gamma);
    CR_CUDA_LAUNCHED(ctx);
    stats_update<double>(ctx, mean, var, count, ret, N, 1);
    scale_reward_kernel<<<blocks, CR_CUDA_THREADS, 0, st>>>(reward, var, out, N, clip);
    CR_CUDA_LAUNCHED(ctx);
}
