// The half-precision forward's conv layers (conv2d_half.cuh says what a layer computes;
// nn/convnet_half.cu runs the rest of the forward): how a layer splits its reduction at small batches, the general
// implicit-GEMM kernel (hconv_kernel, on WMMA), the reduce of split stages, and which kernel
// each stage runs.
//
// A conv stage is the GEMM view of a convolution: rows m = (n, p, q) output pixels, columns k
// output channels, the reduction over the taps j of one output: y[m][k] = act(b[k] + sum_j
// A[m][j] W[k][j]), A the im2col matrix, which no kernel writes: each block gathers its tile of A
// for a chunk of 32 taps (HALF_BK) straight from the stage's input into shared memory, converting
// to the format as it goes (uint8 / 255 or cast, float rounded, or the previous stage's values
// as they are), multiplies it with the weights' tile on the tensor cores with fp32 accumulators,
// and moves on to the next chunk while the loads of that one are in flight. The bias and the
// activation are applied to the fp32 sums, once, and the result is rounded once to the format:
// the CPU's stage with its input and output rounded, the model of nn/precision.c's conv.y rows.
//
// Layouts: the first conv reads the observations as they come (N, C, H, W), taps in the weight's
// own order (c, r, s); its output, and every conv output that feeds a conv, is channels-last
// (N, P, Q, K), so the next conv gathers 8 channels of one tap as one 16-byte load, with its
// weights reordered to (r, s, c) taps when they are converted; the last conv writes (N, K, P,
// Q), the flatten order the linear after it was trained on. Conv weights are zero-padded in the
// weights block to whole tiles (K to 64, taps to 32), so the weight tile is read without bounds
// checks; gathered taps past C R S are zeros, so the padding multiplies zeros.
//
// Which kernel: the Nature-CNN's first conv (8x8/4 over 4 uint8 / 255 channels) on
// hconv_s2d_kernel; the channels-last convs with C a multiple of 8 and more than 32 channels on
// the mma.sync kernels of conv2d_half_mma.cu; every other conv on hconv_kernel. A first conv
// over uint8 / 255 frames read a word at a time multiplies the bytes themselves (exact in the
// format) and divides its sums by 255 before the bias (hconv_args.div255).
//
// Split-K: at a small batch the pixels give fewer blocks than the GPU runs at once (batch 1 of
// the bench network's convs: 16, 8 and 7 blocks, each a chain of 8 to 18 chunks: latency, not
// work). Then the taps are split too (gridDim.z, cr_conv2d_half_splits: up to two blocks per
// SM, whole chunks each); each block writes its fp32 partial sums, and hconv_reduce_kernel adds
// them in split order, adds the bias, applies the activation and rounds. The partial sums live in
// the rows of the stage's output buffer that the batch leaves free (the cache holds max_batch
// rows), else in the workspace. The split is a fixed function of the batch size and the SM
// count: each batch size sums in one order.
#include <mma.h>

#include "ops/cuda/conv2d_half_kernels.cuh"

#define HC_THREADS 256 // threads of an hconv_kernel block: 8 warps

// The conv kernel's tile for a stage of K channels: 256 pixels x 32 channels up to 32 channels,
// else 128 x 64 (hconv_tile).
static void conv_tile(int K, int *bm, int *bn) {
    *bm = K <= 32 ? 256 : 128;
    *bn = K <= 32 ? 32 : 64;
}

cr_half_split cr_conv2d_half_splits(const cr_conv2d_half_desc *d, int B) {
    const cr_conv2d_shape *cs = &d->shape;
    CUDARL_ASSERT(B >= 1);
    cr_half_split sp;
    memset(&sp, 0, sizeof sp);
    if (d->s2d) { // hconv_s2d_kernel: a block per two output rows, all the taps
        sp.splits = 1, sp.cps = d->CRSp / HALF_BK;
        return sp;
    }
    int bm, bn;
    conv_tile(cs->K, &bm, &bn);
    const long long M = (long long)B * cs->P * cs->Q;
    const long long blocks = (M + bm - 1) / bm * ((cs->K + bn - 1) / bn);
    const int chunks = d->CRSp / HALF_BK;
    long long want = 2LL * d->sms / blocks; // splits for two blocks per SM
    want = want < 1 ? 1 : want > chunks ? chunks : want;
    sp.cps = (chunks + (int)want - 1) / (int)want;
    sp.splits = (chunks + sp.cps - 1) / sp.cps; // no empty split
    if (sp.splits == 1) return sp;
    sp.bytes = (size_t)sp.splits * (size_t)M * (size_t)cs->K * sizeof(float);
    // this output takes B rows of K P Q values; the buffer may hold more
    const size_t out = round_up((size_t)B * cs->K * cs->P * cs->Q * 2, HALF_ALIGN);
    const size_t cap = d->out_cap;
    sp.in_output = cap >= out && cap - out >= sp.bytes;
    sp.at = sp.in_output ? out : 0;
    return sp;
}

// The tile of a block of 8 warps, WN warps across the channels.
template <int WN> struct hconv_tile {
    static constexpr int WM = 8 / WN;              // warps across the pixels
    static constexpr int BM = 32 * WM;             // pixels per block: 128 (WN 2) or 256 (WN 1)
    static constexpr int BN = 32 * WN;             // channels per block: 64 or 32
    static constexpr int TPR = HC_THREADS / BM;    // threads gathering one pixel's taps: 2 or 1
    static constexpr int JT = HALF_BK / TPR;       // taps each of them gathers a chunk: 16 or 32
    static constexpr int AV = JT / 8;              // as 16-byte vectors of 8 values
    static constexpr int AB_BYTES = 2 * (BM + BN) * HC_LDS * 2; // A and B tiles, two buffers
    static constexpr int C_ELEMS =
        BM * (BN + 4) > BN * (BM + 4) ? BM * (BN + 4) : BN * (BM + 4); // the fp32 output tile
    static constexpr int SMEM = AB_BYTES > C_ELEMS * 4 ? AB_BYTES : C_ELEMS * 4;
};

// out = the JT taps j0 .. j0 + JT - 1 of pixel row m of A (the im2col matrix, never stored), in
// the format, 8 to a vector; zeros for taps past C R S, for the padding, and for rows m >= M.
// The pixel is given by nbase (its image's first element) and h0, w0 (its window's top left,
// padding included). lut (IN_U8): the format's value of each uint8 (x / 255 or x).
template <typename T, int IN, int JT>
__host__ __device__ __forceinline__ void gather_a(const hconv_args &a, bool mvalid, size_t nbase,
                                                  int h0, int w0, int j0, const T *lut,
                                                  uint4 (&out)[JT / 8]) {
    if (IN == IN_NHWC && (a.C & 7) == 0) {
        // taps j = (r S + s) C + c: 8 channels of one tap are 16 contiguous, aligned bytes
        const T *x = (const T *)a.x;
        int rs = j0 / a.C, c = j0 - rs * a.C, r = rs / a.S, s = rs - r * a.S;
#pragma unroll
        for (int v = 0; v < JT / 8; v++) {
            const int h = h0 + r, w = w0 + s;
            uint4 val = make_uint4(0u, 0u, 0u, 0u);
            if (mvalid && r < a.R && inside(a, h, w))
                val = *(const uint4 *)(x + nbase + ((size_t)h * a.W + w) * a.C + c);
            out[v] = val;
            c += 8;
            if (c == a.C) {
                c = 0;
                if (++s == a.S) s = 0, ++r;
            }
        }
        return;
    }
    T v[JT];
    if (IN == IN_NHWC) { // channels-last with C not a multiple of 8: one value at a time
        const T *x = (const T *)a.x;
        int rs = j0 / a.C, c = j0 - rs * a.C, r = rs / a.S, s = rs - r * a.S;
#pragma unroll
        for (int e = 0; e < JT; e++) {
            const int h = h0 + r, w = w0 + s;
            T val = to_fmt<T>(0.0f);
            if (mvalid && r < a.R && inside(a, h, w))
                val = x[nbase + ((size_t)h * a.W + w) * a.C + c];
            v[e] = val;
            if (++c == a.C) {
                c = 0;
                if (++s == a.S) s = 0, ++r;
            }
        }
    } else if (IN == IN_U8 && a.u8_words) { // 4 taps (s .. s + 3 of one row) a word
        const uint8_t *x = (const uint8_t *)a.x;
        const int RS = a.R * a.S;
        int c = j0 / RS, rs = j0 - c * RS, r = rs / a.S, s = rs - r * a.S;
        if (a.div255) { // the bytes themselves: two words of the tile per word read, no table
            unsigned packed[JT / 2];
#pragma unroll
            for (int g = 0; g < JT / 4; g++) {
                unsigned word = 0; // past C R S (c == C): zeros
                if (mvalid && c < a.C)
                    word = *(const unsigned *)(x + nbase + ((size_t)c * a.H + h0 + r) * a.W +
                                               w0 + s);
                const uint2 two = bytes_exact<T>(word);
                packed[2 * g] = two.x, packed[2 * g + 1] = two.y;
                s += 4;
                if (s == a.S) {
                    s = 0;
                    if (++r == a.R) r = 0, ++c;
                }
            }
#pragma unroll
            for (int q = 0; q < JT / 8; q++)
                out[q] = make_uint4(packed[4 * q], packed[4 * q + 1], packed[4 * q + 2],
                                    packed[4 * q + 3]);
            return;
        }
#pragma unroll
        for (int g = 0; g < JT / 4; g++) {
            unsigned word = 0; // past C R S (c == C): zeros, lut[0] = 0
            if (mvalid && c < a.C)
                word = *(const unsigned *)(x + nbase + ((size_t)c * a.H + h0 + r) * a.W + w0 + s);
#pragma unroll
            for (int b = 0; b < 4; b++) v[4 * g + b] = lut[(word >> (8 * b)) & 255u];
            s += 4;
            if (s == a.S) {
                s = 0;
                if (++r == a.R) r = 0, ++c;
            }
        }
    } else { // the observations (N, C, H, W), taps j = (c R + r) S + s
        const int RS = a.R * a.S;
        int c = j0 / RS, rs = j0 - c * RS, r = rs / a.S, s = rs - r * a.S;
#pragma unroll
        for (int e = 0; e < JT; e++) {
            const int h = h0 + r, w = w0 + s;
            const bool in = mvalid && c < a.C && inside(a, h, w);
            const size_t i = nbase + ((size_t)c * a.H + h) * a.W + w;
            if (IN == IN_U8) v[e] = lut[in ? ((const uint8_t *)a.x)[i] : 0];
            else v[e] = to_fmt<T>(in ? ((const float *)a.x)[i] : 0.0f);
            if (++s == a.S) {
                s = 0;
                if (++r == a.R) r = 0, ++c;
            }
        }
    }
#pragma unroll
    for (int q = 0; q < JT / 8; q++)
        out[q] = make_uint4(pack2(v[8 * q], v[8 * q + 1]), pack2(v[8 * q + 2], v[8 * q + 3]),
                            pack2(v[8 * q + 4], v[8 * q + 5]), pack2(v[8 * q + 6], v[8 * q + 7]));
}

// One chunk's products: warp (wm, wn)'s 32 x 32 accumulators += its rows of the A tile At
// (pixels x taps) times its columns of the B tile Bt (element (tap t, channel c) at
// Bt[c * HC_LDS + t]), two k16 steps.
template <typename T>
__device__ __forceinline__ void
hconv_mma_chunk(const T *At, const T *Bt, int wm, int wn,
                nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> (&acc)[2][2]) {
    using namespace nvcuda;
#pragma unroll
    for (int ks = 0; ks < HALF_BK; ks += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa[2];
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fb[2];
#pragma unroll
        for (int i = 0; i < 2; i++)
            wmma::load_matrix_sync(fa[i], At + (wm * 32 + i * 16) * HC_LDS + ks, HC_LDS);
#pragma unroll
        for (int j = 0; j < 2; j++)
            wmma::load_matrix_sync(fb[j], Bt + (wn * 32 + j * 16) * HC_LDS + ks, HC_LDS);
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int j = 0; j < 2; j++) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
}

// A block's WMMA accumulators (warp (wm, wn)'s 32 x 32 outputs) into shared memory (smem, free
// again: the caller's barrier) as the fp32 output tile, then a barrier: Cs[pixel][channel] with
// rows of BN + 4 floats where `rows`, else Cs[channel][pixel] with rows of BM + 4.
template <int BM, int BN>
__device__ __forceinline__ float *
hconv_stage_acc(nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> (&acc)[2][2],
                unsigned char *smem, bool rows, int wm, int wn) {
    using namespace nvcuda;
    float *Cs = (float *)smem;
    constexpr int LDR = BN + 4, LDC = BM + 4;
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++) {
            if (rows)
                wmma::store_matrix_sync(Cs + (wm * 32 + i * 16) * LDR + wn * 32 + j * 16,
                                        acc[i][j], LDR, wmma::mem_row_major);
            else
                wmma::store_matrix_sync(Cs + (wn * 32 + j * 16) * LDC + wm * 32 + i * 16,
                                        acc[i][j], LDC, wmma::mem_col_major);
        }
    __syncthreads();
    return Cs;
}

// The end of a conv block: its accumulators (warp (wm, wn)'s 32 x 32 outputs) through shared
// memory (smem, free again: the caller's barrier) to y as act(b + sum) in the format, or, split,
// to the block's partial sums (hconv_write_tile); y channels-last, or (N, K, P, Q) when
// a.out_nchw.
template <typename T, int BM, int BN>
__device__ __forceinline__ void
hconv_epilogue_vec(const hconv_args &a,
                   nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> (&acc)[2][2],
                   unsigned char *smem, long long m0, int k0, int wm, int wn, int tid) {
    const float *Cs = hconv_stage_acc<BM, BN>(acc, smem, a.partial || !a.out_nchw, wm, wn);
    hconv_write_tile<T, BM, BN, BN + 4, BM + 4, HC_THREADS>(a, Cs, m0, k0, tid);
}

// y = act(b + conv(x)) in the format, one block per BM pixels x BN channels (see the top).
// Shared memory: A tiles As[2][BM][HC_LDS] (pixels x taps) and B tiles Bs[2][BN][HC_LDS]
// (channels x taps, the weight's rows), then, after the last chunk, the fp32 output tile.
template <typename T, int IN, int WN>
static __global__ void __launch_bounds__(HC_THREADS) hconv_kernel(const hconv_args a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    using namespace nvcuda;
    typedef hconv_tile<WN> tile;
    constexpr int BM = tile::BM, BN = tile::BN, LDS = HC_LDS;
    __shared__ __align__(128) unsigned char smem[tile::SMEM];
    __shared__ T lut[256]; // IN_U8: each byte's value in the format
    T *As = (T *)smem;
    T *Bs = As + 2 * BM * LDS;
    const int tid = threadIdx.x, warp = tid >> 5;
    if (IN == IN_U8) { // the fp32 path's input (one IEEE division, or the cast), rounded
        const float u = (float)tid;
        lut[tid] = to_fmt<T>(a.scale255 ? __fdiv_rn(u, 255.0f) : u);
        __syncthreads();
    }
    const int wm = warp % tile::WM, wn = warp / tile::WM; // the warp's 32 x 32 outputs
    const long long m0 = (long long)blockIdx.x * BM;
    const int k0 = blockIdx.y * BN;
    // this block's taps: chunks [z cps, (z + 1) cps) of the reduction (all of them unsplit)
    const int kbeg = blockIdx.z * a.cps * HALF_BK;
    const int kend = kbeg + a.cps * HALF_BK < a.CRSp ? kbeg + a.cps * HALF_BK : a.CRSp;

    // the pixel whose taps this thread gathers, and where in each chunk
    const int row = tid / tile::TPR, jofs = (tid % tile::TPR) * tile::JT;
    const long long m = m0 + row;
    const bool mvalid = m < a.M;
    int h0 = 0, w0 = 0;
    size_t nbase = 0;
    if (mvalid) hconv_window(a, m, &h0, &w0, &nbase);
    // the weight vector this thread loads: row k0 + kb (< Kp), taps jb .. jb + 7 of each chunk
    const bool bthread = tid < 4 * BN;
    const int kb = tid >> 2, jb = (tid & 3) * 8;
    const T *wsrc = (const T *)a.w + (size_t)(k0 + kb) * a.CRSp + jb;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++) wmma::fill_fragment(acc[i][j], 0.0f);

    uint4 areg[tile::AV], breg = make_uint4(0u, 0u, 0u, 0u);
    gather_a<T, IN, tile::JT>(a, mvalid, nbase, h0, w0, kbeg + jofs, lut, areg);
    if (bthread) breg = *(const uint4 *)(wsrc + kbeg);
    int buf = 0;
    for (int kk = kbeg; kk < kend; kk += HALF_BK) {
        T *At = As + buf * BM * LDS, *Bt = Bs + buf * BN * LDS;
#pragma unroll
        for (int v = 0; v < tile::AV; v++) *(uint4 *)(At + row * LDS + jofs + 8 * v) = areg[v];
        if (bthread) *(uint4 *)(Bt + kb * LDS + jb) = breg;
        // The tiles of this chunk are complete, and every warp is past its products of the chunk
        // before the last, whose buffer the next iteration overwrites.
        __syncthreads();
        if (kk + HALF_BK < kend) { // the next chunk's loads, in flight during the products
            gather_a<T, IN, tile::JT>(a, mvalid, nbase, h0, w0, kk + HALF_BK + jofs, lut, areg);
            if (bthread) breg = *(const uint4 *)(wsrc + kk + HALF_BK);
        }
        hconv_mma_chunk<T>(At, Bt, wm, wn, acc);
        buf ^= 1;
    }
    __syncthreads(); // every warp is done with the tiles: the memory becomes the output tile
    hconv_epilogue_vec<T, BM, BN>(a, acc, smem, m0, k0, wm, wn, tid);
#elif defined(__CUDA_ARCH__)
    __trap(); // cr_convnet_cuda_init_precision refuses devices below compute capability 8.0
#endif
}

// y = act(b + the sum of the splits' partial sums, in split order), in the format: the epilogue
// of a split conv. partial (splits, M, K); y (M, K) channels-last, or (N, K, P, Q) when
// out_nchw; one thread per element, in the partial sums' order (pixel-major: a warp reads whole
// sectors of every split), 32-bit indices (the launch checks M K < 2^31). The splits' loads go
// four at a time, then are summed in split order (one dependent load per split left the small
// batches' reduce waiting on memory latency).
template <typename T>
static __global__ void hconv_reduce_kernel(const float *__restrict__ partial, int splits,
                                           const float *__restrict__ b, T *__restrict__ y,
                                           int M, int K, int PQ, int act, int out_nchw,
                                           int div255) {
    pdl_wait(); // the partial sums are the predecessor's
    pdl_release();
    const unsigned n = (unsigned)M * (unsigned)K, step = gridDim.x * blockDim.x;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        const float *p = partial + i;
        const size_t z_step = (size_t)n;
        float s = p[0];
        int z = 1;
        for (; z + 3 < splits; z += 4) {
            const float v0 = p[z * z_step], v1 = p[(z + 1) * z_step], v2 = p[(z + 2) * z_step],
                        v3 = p[(z + 3) * z_step];
            s = __fadd_rn(__fadd_rn(__fadd_rn(__fadd_rn(s, v0), v1), v2), v3);
        }
        for (; z < splits; z++) s = __fadd_rn(s, p[z * z_step]);
        const unsigned m = i / (unsigned)K, k = i - m * (unsigned)K;
        if (div255) s = __fdiv_rn(s, 255.0f);
        const T v = to_fmt<T>(act_apply(act, __fadd_rn(s, b[k])));
        if (out_nchw) {
            const unsigned img = m / (unsigned)PQ, pq = m - img * (unsigned)PQ;
            y[((size_t)img * K + k) * PQ + pq] = v;
        } else {
            y[i] = v;
        }
    }
}

// The conv stage of a on the kernel its shape takes: the channels-last convs with C a multiple
// of 8 and more than 32 channels on the mma.sync kernels (hconv_launch_mma), the others (the
// first conv where hconv_s2d_kernel does not fit it, and convs the mma.sync kernels refuse) on
// hconv_kernel, its tile 256 x 32 up to 32 channels, else 128 x 64.
template <typename T, int IN>
static void launch_conv_in(cudarl_ctx *ctx, const hconv_args &a, int splits) {
    cudaStream_t st = cr_stream(ctx);
    if (IN == IN_NHWC && a.C % 8 == 0 && a.K > 32) {
        hconv_launch_mma<T>(ctx, a, splits);
        return;
    }
    if (a.K <= 32) {
        typedef hconv_tile<1> tile;
        dim3 grid((unsigned)((a.M + tile::BM - 1) / tile::BM), (unsigned)((a.K + 31) / 32),
                  (unsigned)splits);
        hconv_kernel<T, IN, 1><<<grid, HC_THREADS, 0, st>>>(a);
    } else {
        typedef hconv_tile<2> tile;
        dim3 grid((unsigned)((a.M + tile::BM - 1) / tile::BM), (unsigned)((a.K + 63) / 64),
                  (unsigned)splits);
        hconv_kernel<T, IN, 2><<<grid, HC_THREADS, 0, st>>>(a);
    }
    CR_CUDA_LAUNCHED(ctx);
}

// The conv stage of a: one kernel, or with splits > 1 the split kernel into a.partial and the
// reduce.
template <typename T>
static void launch_conv(cudarl_ctx *ctx, int in, const hconv_args &a, int splits) {
    if (in == IN_U8) launch_conv_in<T, IN_U8>(ctx, a, splits);
    else if (in == IN_F32) launch_conv_in<T, IN_F32>(ctx, a, splits);
    else launch_conv_in<T, IN_NHWC>(ctx, a, splits);
    if (splits == 1) return;
    const size_t n = (size_t)a.M * a.K;
    CUDARL_ASSERT(n < ((size_t)1 << 31)); // hconv_reduce_kernel's indices; splits are for
                                           // small batches (cr_conv2d_half_splits)
    launch_k(cr_stream(ctx), dim3(cr_cuda_blocks(n, CR_CUDA_THREADS)), dim3(CR_CUDA_THREADS), 0,
             hconv_reduce_kernel<T>, (const float *)a.partial, splits, a.b, (T *)a.y, (int)a.M,
             a.K, a.P * a.Q, a.act, a.out_nchw, a.div255);
    CR_CUDA_LAUNCHED(ctx);
}

template <typename T>
void cr_conv2d_half_forward(cudarl_ctx *ctx, const cr_conv2d_half_desc *d, const void *x,
                            const void *w, const float *b, void *y, float *ws, int B) {
    const cr_conv2d_shape *cs = &d->shape;
    hconv_args a;
    a.x = x, a.w = w, a.b = b, a.y = y;
    a.M = (long long)B * cs->P * cs->Q;
    a.K = cs->K, a.C = cs->C, a.H = cs->H, a.W = cs->W, a.R = cs->R, a.S = cs->S;
    a.stride = cs->stride, a.pad = cs->pad, a.P = cs->P, a.Q = cs->Q;
    a.CRSp = d->CRSp;
    a.scale255 = d->scale255, a.act = d->act;
    a.u8_words = d->in == IN_U8 && cs->pad == 0 && cs->S % 4 == 0 && cs->stride % 4 == 0 &&
                 cs->W % 4 == 0;
    a.div255 = a.u8_words && d->scale255;
    a.out_nchw = d->out_nchw;
    const cr_half_split sp = cr_conv2d_half_splits(d, B);
    a.cps = sp.cps;
    a.partial = sp.splits == 1 ? NULL
                : sp.in_output ? (float *)((unsigned char *)y + sp.at)
                               : ws;
    if (d->s2d) {
        CUDARL_ASSERT(!a.out_nchw && !a.partial); // cr_conv2d_half_s2d_fits, and never split
        const int items = B * ((cs->P + 1) / 2); // two output rows of an image each
        hconv_launch_s2d<T>(ctx, a, items, items < 4 * d->sms ? items : 4 * d->sms);
    } else {
        launch_conv<T>(ctx, d->in, a, sp.splits);
    }
}

template void cr_conv2d_half_forward<__half>(cudarl_ctx *, const cr_conv2d_half_desc *,
                                             const void *, const void *, const float *, void *,
                                             float *, int);
template void cr_conv2d_half_forward<__nv_bfloat16>(cudarl_ctx *, const cr_conv2d_half_desc *,
                                                    const void *, const void *, const float *,
                                                    void *, float *, int);
