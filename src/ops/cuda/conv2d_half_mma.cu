// The half-precision forward's conv kernels on mma.sync m16n8k16 (ldmatrix fragments, fp32
// accumulators), for the shapes they fit (conv2d_half.cu chooses; conv2d_half.cuh says what a layer
// computes):
//   hconv_mma_kernel       a channels-last conv with C a multiple of 8 and K > 32;
//   hconv_mma_lean_kernel  the same where every window tap is inside the frame (no padding, no
//                          padded taps), C a multiple of 32 and K of 8, in fewer instructions:
//                          chunks of 64 taps where every split's taps are a multiple of 64, else
//                          of 32;
//   hconv_halo_kernel      the same, unsplit (the larger batches), C a multiple of 16, C R S of
//                          64, Q <= 128, with the input rows of a tile of whole output rows in
//                          shared memory instead of each pixel's taps;
//   hconv_s2d_kernel       the Nature-CNN's first conv (8x8/4 over 4 uint8 / 255 channels) as a
//                          2x2 conv over the frame's 4 x 4 blocks of pixels.
// The first three sum the same chunks in the same order through the same products and the same
// per-output arithmetic: the same bits as each other.
#include "ops/cuda/conv2d_half_kernels.cuh"

#define HM_THREADS 128 // threads of a block: 4 warps of 64 pixels x 32 channels (s2d: 32 x 32)
#define HM_STAGES 3    // chunks in flight in hconv_mma_kernel: two loading while one multiplies

// One k16 step of a warp's 64 x 32 outputs: acc[i][j] += A rows 16 i .. + 15 times B rows (channels)
// 8 j .. + 7 over the step's 16 taps, by ldmatrix and m16n8k16 products in (i, j) order. a0 and b0
// are the shared-window addresses of this lane's ldmatrix rows at the step's first tap (A: row
// lane % 16, taps 8 (lane / 16); B: row (lane % 8) + 8 (lane / 16), taps 8 ((lane / 8) % 2)); the
// tiles' rows are LDS elements long. hconv_mma_kernel's and hconv_mma_lean_kernel's.
template <typename T, int LDS>
__device__ __forceinline__ void hconv_warp_k16(float (&acc)[4][4][4], unsigned a0, unsigned b0) {
    unsigned af[4][4], bf[4][2];
#pragma unroll
    for (int i = 0; i < 4; i++) ldsm_x4_at(af[i], a0 + 16 * i * LDS * 2);
    hconv_ldsm_b(bf, b0, 16 * LDS * 2);
    hconv_mma_mi<T>(acc, af, bf);
}

// A warp's 64 x 32 mma.sync accumulators into the block's fp32 output tile Cs (shared memory,
// free again: the caller's barrier): Cs[pixel][channel] with rows of LDR floats where `rows`,
// else Cs[channel][pixel] with rows of LDC. Accumulator (i, j) element e is pixel wm0 + 16 i +
// lane / 4 (+ 8 for e >= 2), channel wn0 + 8 j + 2 (lane % 4) (+ 1 for odd e).
template <int BM, int BN, int LDR, int LDC>
__device__ __forceinline__ void hconv_mma_store_acc(const float (&acc)[4][4][4], float *Cs,
                                                    bool rows, int wm0, int wn0, int lane) {
    const int g = lane >> 2, t2 = (lane & 3) * 2;
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const int mi = wm0 + 16 * i + g + 8 * hf, ki = wn0 + 8 * j + t2;
                if (rows) {
                    *(float2 *)(Cs + mi * LDR + ki) =
                        make_float2(acc[i][j][2 * hf], acc[i][j][2 * hf + 1]);
                } else {
                    Cs[ki * LDC + mi] = acc[i][j][2 * hf];
                    Cs[(ki + 1) * LDC + mi] = acc[i][j][2 * hf + 1];
                }
            }
}

// y = act(b + conv(x)) for a channels-last input with C a multiple of 8 and K > 32, the
// general one of this file's kernels (any padding, any C R S): blocks of 128 pixels x 64
// channels, 4 warps (2 x 2) of 64 pixels x 32 channels each, the tiles copied global -> shared
// by cp.async HM_STAGES chunks deep, the fragments read by ldmatrix and multiplied by mma.sync
// m16n8k16 (32 tensor instructions for 12 fragment loads per chunk between two barriers). The
// chunks of 32 taps in order, the epilogue hconv_write_tile's. Each thread copies 4 of the A
// tile's 128 x 4 vectors (see the copies) and 2 of the weight tile's 64 x 4 (channel tid / 2,
// taps 16 (tid % 2) .. + 15).
template <typename T>
static __global__ void __launch_bounds__(HM_THREADS) hconv_mma_kernel(const hconv_args a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    constexpr int BM = 128, BN = 64, LDS = HC_LDS, STAGE = (BM + BN) * LDS;
    constexpr int MI = 4, NI = 4;           // a warp's m16 and n8 tiles: 64 x 32
    constexpr int LDR = BN + 8, LDC = BM + 4; // the fp32 output tile's rows (see the end)
    constexpr int AB_BYTES = HM_STAGES * STAGE * 2;
    constexpr int C_BYTES = (BM * LDR > BN * LDC ? BM * LDR : BN * LDC) * 4;
    __shared__ __align__(128) unsigned char smem[AB_BYTES > C_BYTES ? AB_BYTES : C_BYTES];
    T *const tiles = (T *)smem;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm0 = (warp & 1) * 64, wn0 = (warp >> 1) * 32; // the warp's tile in the block's
    const long long m0 = (long long)blockIdx.x * BM;
    const int k0 = blockIdx.y * BN;
    const int kbeg = blockIdx.z * a.cps * HALF_BK;
    const int kend = kbeg + a.cps * HALF_BK < a.CRSp ? kbeg + a.cps * HALF_BK : a.CRSp;
    const int nch = (kend - kbeg) / HALF_BK;

    // The A tile's copies: vector u = tid % 4 (taps 8 u .. 8 u + 7 of a chunk) of pixels
    // tid / 4 + 32 v, v = 0 .. 3, so that the 4 lanes of a pixel copy its 64 contiguous bytes
    // (C >= 32) and a warp's copy covers whole sectors; through L1, where the windows of
    // neighbouring pixels meet.
    const int u = tid & 3;
    bool mvalid[4];
    int h0[4], w0[4];
    const T *x = (const T *)a.x, *pix[4]; // pix: the pixel's window's top left (no padding)
#pragma unroll
    for (int v = 0; v < 4; v++) {
        const long long m = m0 + (tid >> 2) + 32 * v;
        size_t nbase = 0;
        mvalid[v] = m < a.M;
        h0[v] = w0[v] = 0;
        if (mvalid[v]) hconv_window(a, m, &h0[v], &w0[v], &nbase);
        pix[v] = x + (long long)nbase + ((long long)h0[v] * a.W + w0[v]) * a.C;
    }
    // without padding, and with no padded taps (C R S == CRSp), every tap of a pixel's window is
    // inside the frame: its vectors are at one offset from pix for all four pixels
    const bool whole = a.pad == 0 && a.C * a.R * a.S == a.CRSp;
    // this thread's tap (r, s, c) in the next chunk to load: tap next + 8 u
    int rs = (kbeg + 8 * u) / a.C, c = (kbeg + 8 * u) - rs * a.C, r = rs / a.S, s = rs - r * a.S;
    const int kb = tid >> 1, jb = (tid & 1) * 16;
    const T *wsrc = (const T *)a.w + (size_t)(k0 + kb) * a.CRSp + jb;
    int next = kbeg;

    auto load = [&](int st) {
        T *At = tiles + st * STAGE, *Bt = At + BM * LDS;
        const int off = (r * a.W + s) * a.C + c;
#pragma unroll
        for (int v = 0; v < 4; v++) {
            T *dst = At + ((tid >> 2) + 32 * v) * LDS + 8 * u;
            if (whole) {
                cp_async16_ca(dst, mvalid[v] ? pix[v] + off : x, mvalid[v]);
            } else {
                const bool ok = mvalid[v] && r < a.R && inside(a, h0[v] + r, w0[v] + s);
                cp_async16_ca(dst, ok ? pix[v] + off : x, ok);
            }
        }
        cp_async16(Bt + kb * LDS + jb, wsrc + next, true);
        cp_async16(Bt + kb * LDS + jb + 8, wsrc + next + 8, true);
        // the next chunk's tap, 32 on (C is a multiple of 8, maybe below 32: several steps)
        for (c += HALF_BK; c >= a.C; c -= a.C)
            if (++s == a.S) s = 0, ++r;
        next += HALF_BK;
    };

    float acc[MI][NI][4];
    hconv_warp_zero(acc);

#pragma unroll
    for (int i = 0; i < HM_STAGES - 1; i++) {
        if (i < nch) load(i);
        cp_async_commit();
    }
    // where this lane's ldmatrix rows start: A rows (lane % 16), taps 8 (lane / 16); B rows
    // (lane % 8) + 8 (lane / 16), taps 8 ((lane / 8) % 2)
    const int arow = wm0 + (lane & 15), acol = (lane >> 4) * 8;
    const int brow = wn0 + (lane & 7) + ((lane >> 4) << 3), bcol = ((lane >> 3) & 1) * 8;
    for (int kc = 0; kc < nch; kc++) {
        cp_async_wait<HM_STAGES - 2>();
        __syncthreads(); // chunk kc is in; every warp is past chunk kc - 1, whose stage reloads
        if (kc + HM_STAGES - 1 < nch) load((kc + HM_STAGES - 1) % HM_STAGES);
        cp_async_commit();
        const T *At = tiles + (kc % HM_STAGES) * STAGE, *Bt = At + BM * LDS;
#pragma unroll
        for (int ks = 0; ks < HALF_BK; ks += 16)
            hconv_warp_k16<T, LDS>(acc, (unsigned)__cvta_generic_to_shared(At + arow * LDS + ks + acol),
                                   (unsigned)__cvta_generic_to_shared(Bt + brow * LDS + ks + bcol));
    }
    cp_async_wait<0>();
    __syncthreads(); // the tiles' memory becomes the fp32 output tile
    float *Cs = (float *)smem;
    hconv_mma_store_acc<BM, BN, LDR, LDC>(acc, Cs, a.partial || !a.out_nchw, wm0, wn0, lane);
    __syncthreads();
    hconv_write_tile<T, BM, BN, LDR, LDC, HM_THREADS>(a, Cs, m0, k0, tid);
#elif defined(__CUDA_ARCH__)
    __trap(); // cr_convnet_cuda_init_precision refuses devices below compute capability 8.0
#endif
}

// ---- the channels-last conv with a lean main loop -------------------------------------------

// 16 bytes from global src to shared address d (a shared-window address, cvta'd once by the
// caller), through L1 (.ca) or not (.cg); no predicate: src is always a mapped address.
__device__ __forceinline__ void cp_async16_to(unsigned d, const void *src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src));
#endif
}
__device__ __forceinline__ void cp_async16_cg_to(unsigned d, const void *src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src));
#endif
}

// hconv_write_tile for hconv_mma_lean_kernel (HM_THREADS threads, K a multiple of 8, no / 255):
// the same values (act(sum + b) rounded once, or the raw sums), with what stays the same across
// a thread's items (index divisions, the bias, the activation's branch) computed once.
// Channels-last y or partial sums: item e = tid + 128 t is 8 channels (tid % 8) 8 of pixel tid / 8 + 16 t, so the
// bias is loaded once; (N, K, P, Q) y: 8 pixels (tid % 16) 8 of channel tid / 16 + 8 t, so the
// image and its pixel are divided out once.
// Rows m0 .. mend - 1 of the tile are written (mend: a.M, or the end of hconv_halo_kernel's rows).
template <typename T, int ACT, int BM, int BN, int LDR, int LDC>
__device__ __forceinline__ void hconv_lean_write(const hconv_args &a, const float *Cs,
                                                 long long m0, long long mend, int k0, int tid) {
    static_assert(BN == 64 && BM == 128 && HM_THREADS == 128, "the items below assume the tile");
    T *y = (T *)a.y;
    if (a.partial || !a.out_nchw) {
        const int kg = (tid & 7) * 8, k = k0 + kg;
        if (k >= a.K) return;
        float *part = a.partial ? a.partial + (size_t)blockIdx.z * (size_t)a.M * a.K : NULL;
        float4 b0 = make_float4(0.0f, 0.0f, 0.0f, 0.0f), b1 = b0;
        if (!part) b0 = *(const float4 *)(a.b + k), b1 = *(const float4 *)(a.b + k + 4);
#pragma unroll 2
        for (int t = 0; t < BM / 16; t++) {
            const int mi = (tid >> 3) + 16 * t;
            const long long mm = m0 + mi;
            if (mm >= mend) break;
            const float *c = Cs + mi * LDR + kg;
            const size_t at = (size_t)mm * a.K + k;
            const float4 c0 = *(const float4 *)c, c1 = *(const float4 *)(c + 4);
            if (part) {
                *(float4 *)(part + at) = c0; // hconv_reduce_kernel's
                *(float4 *)(part + at + 4) = c1;
                continue;
            }
            const float v[8] = {
                act_apply(ACT, __fadd_rn(c0.x, b0.x)), act_apply(ACT, __fadd_rn(c0.y, b0.y)),
                act_apply(ACT, __fadd_rn(c0.z, b0.z)), act_apply(ACT, __fadd_rn(c0.w, b0.w)),
                act_apply(ACT, __fadd_rn(c1.x, b1.x)), act_apply(ACT, __fadd_rn(c1.y, b1.y)),
                act_apply(ACT, __fadd_rn(c1.z, b1.z)), act_apply(ACT, __fadd_rn(c1.w, b1.w))};
            *(uint4 *)(y + at) = pack8<T>(v);
        }
    } else {
        const int mi = (tid & 15) * 8, PQ = a.P * a.Q;
        const long long mm = m0 + mi;
        if (mm >= mend) return;
        const unsigned n = (unsigned)mm / (unsigned)PQ; // mm < M < 2^31
        const int pq = (int)((unsigned)mm - n * (unsigned)PQ);
        const bool whole = (PQ & 7) == 0 && mm + 8 <= mend; // the 8 pixels: one image's, < mend
#pragma unroll 2
        for (int t = 0; t < BN / 8; t++) {
            const int ki = (tid >> 4) + 8 * t, k = k0 + ki;
            if (k >= a.K) break;
            const float *c = Cs + ki * LDC + mi;
            const float bk = a.b[k];
            if (whole) {
                const float4 c0 = *(const float4 *)c, c1 = *(const float4 *)(c + 4);
                const float v[8] = {
                    act_apply(ACT, __fadd_rn(c0.x, bk)), act_apply(ACT, __fadd_rn(c0.y, bk)),
                    act_apply(ACT, __fadd_rn(c0.z, bk)), act_apply(ACT, __fadd_rn(c0.w, bk)),
                    act_apply(ACT, __fadd_rn(c1.x, bk)), act_apply(ACT, __fadd_rn(c1.y, bk)),
                    act_apply(ACT, __fadd_rn(c1.z, bk)), act_apply(ACT, __fadd_rn(c1.w, bk))};
                *(uint4 *)(y + ((size_t)n * a.K + k) * PQ + pq) = pack8<T>(v);
                continue;
            }
            for (int e = 0; e < 8 && mm + e < mend; e++) {
                const long long me = mm + e, ne = me / PQ;
                y[((size_t)ne * a.K + k) * PQ + (me - ne * PQ)] =
                    to_fmt<T>(act_apply(ACT, __fadd_rn(c[e], bk)));
            }
        }
    }
}

// hconv_lean_write with the conv's activation as its template argument.
template <typename T, int BM, int BN, int LDR, int LDC>
__device__ __forceinline__ void hconv_lean_write_act(const hconv_args &a, const float *Cs,
                                                     long long m0, long long mend, int k0,
                                                     int tid) {
    if (a.act == ACT_RELU)
        hconv_lean_write<T, ACT_RELU, BM, BN, LDR, LDC>(a, Cs, m0, mend, k0, tid);
    else if (a.act == ACT_TANH)
        hconv_lean_write<T, ACT_TANH, BM, BN, LDR, LDC>(a, Cs, m0, mend, k0, tid);
    else
        hconv_lean_write<T, ACT_NONE, BM, BN, LDR, LDC>(a, Cs, m0, mend, k0, tid);
}

template <int BK> struct hconv_lean {
    static constexpr int BM = 128, BN = 64;
    static constexpr int STAGES = BK == 32 ? HM_STAGES : 2; // the same bytes in flight
    static constexpr int LDS = BK + 8; // a shared row: 80 or 144 bytes, ldmatrix conflict-free
    static constexpr int STAGE = (BM + BN) * LDS;
    static constexpr int LDR = BN + 8, LDC = BM + 4;
    static constexpr int AB_BYTES = STAGES * STAGE * 2;
    static constexpr int C_BYTES = (BM * LDR > BN * LDC ? BM * LDR : BN * LDC) * 4;
    static constexpr int SMEM = AB_BYTES > C_BYTES ? AB_BYTES : C_BYTES; // 46080 or 55296
};

// hconv_mma_kernel for the convs whose every window tap is inside the frame (no padding, no
// padded taps), C a multiple of 32 and K of 8 (the Nature-CNN's second and third convs): the
// same tile, copies, chunks, m16n8k16 products in the same order (hconv_warp_k16) and the same
// per-output arithmetic, so the same bits, in fewer instructions: a 32-tap run is 32
// consecutive values of one pixel (C % 32 == 0), so each copy is a pixel's window pointer plus
// one offset that advances by 32, and by (W - S) C more at the end of a window row (no pixel
// checks, no padding branch); pixels past M copy pixel 0's window (their rows are never
// written); the windows come from one division and a walk; the shared addresses are computed
// once (opaque to the compiler, which otherwise reloads the thread index each chunk) and the
// stages rotate by adding a constant; three stages: chunk kc + 2's copies go after chunk kc's
// products (issued before them, their address registers would be the next ldmatrix's
// destinations, and wait for them); the epilogue is hconv_lean_write. BK 32, or 64 (two stages
// of 64 taps, 54 KiB of dynamic shared memory, half the barriers) where every split's taps are
// a multiple of 64.
template <typename T, int BK>
static __global__ void __launch_bounds__(HM_THREADS) hconv_mma_lean_kernel(const hconv_args a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    typedef hconv_lean<BK> L;
    constexpr int BM = L::BM, BN = L::BN, LDS = L::LDS, STAGES = L::STAGES;
    constexpr int MI = 4, NI = 4;
    constexpr int SUB = BK / HALF_BK; // 32-tap runs of a chunk, each inside one pixel
    constexpr unsigned STAGE_BYTES = L::STAGE * 2, B_AT = BM * LDS * 2; // B tile after A tile
    extern __shared__ __align__(128) unsigned char smem[];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm0 = (warp & 1) * 64, wn0 = (warp >> 1) * 32;
    const long long m0 = (long long)blockIdx.x * BM;
    const int k0 = blockIdx.y * BN;
    const int kbeg = blockIdx.z * a.cps * HALF_BK;
    const int kend = kbeg + a.cps * HALF_BK < a.CRSp ? kbeg + a.cps * HALF_BK : a.CRSp;
    const int nch = (kend - kbeg) / BK; // the launch checks that BK divides it
    const unsigned s0 = (unsigned)__cvta_generic_to_shared(smem);

    // the copies: as hconv_mma_kernel's, vector u = tid % 4 of each 32-tap run, pixels tid / 4
    // + 32 v
    const int u = tid & 3;
    const T *x = (const T *)a.x, *pa[4];
    {
        // pixel m's image n and output (p, q) by one division, the next ones (32 on) by a walk
        // (no padding: the window's top left is (p stride, q stride))
        long long m = m0 + (tid >> 2);
        const unsigned PQ = (unsigned)(a.P * a.Q);
        unsigned n = (unsigned)m / PQ, pq = (unsigned)m - n * PQ, p = pq / (unsigned)a.Q,
                 q = pq - p * (unsigned)a.Q;
        const size_t image = (size_t)a.C * a.H * a.W;
#pragma unroll
        for (int v = 0; v < 4; v++) {
            pa[v] = x + 8 * u;
            if (m < a.M)
                pa[v] += (size_t)n * image +
                         ((size_t)(p * a.stride) * a.W + q * a.stride) * (size_t)a.C;
            m += 32;
            for (q += 32; q >= (unsigned)a.Q; q -= a.Q)
                if (++p == (unsigned)a.P) p = 0, ++n;
        }
    }
    unsigned a_dst = s0 + ((tid >> 2) * LDS + 8 * u) * 2;
    unsigned b_dst = s0 + B_AT + ((tid >> 1) * LDS + (tid & 1) * 16) * 2;
    // opaque to the compiler, so that it keeps them in registers instead of recomputing them
    // from the thread index (S2R) in the loop, as it did
    asm volatile("" : "+r"(a_dst), "+r"(b_dst));
    const T *wsrc = (const T *)a.w + (size_t)(k0 + (tid >> 1)) * a.CRSp + (tid & 1) * 16 + kbeg;
    // the tap walk: the next 32-tap run is at window offset off; cs counts the runs of a window
    // row (S C / 32 of them), after which the next row is (W - S) C further
    const int row_chunks = a.S * a.C / HALF_BK, row_jump = (a.W - a.S) * a.C;
    int off = 0, cs = 0;
    if (kbeg) { // a split past the first: its first tap's (r, s, c)
        const int rs = kbeg / a.C, c = kbeg - rs * a.C, r = rs / a.S, s = rs - r * a.S;
        off = (r * a.W + s) * a.C + c;
        cs = (s * a.C + c) / HALF_BK;
    }
    unsigned ld = 0; // the stage the next copy fills, as a byte offset
    auto load = [&]() {
#pragma unroll
        for (int h = 0; h < SUB; h++) {
#pragma unroll
            for (int v = 0; v < 4; v++)
                cp_async16_to(a_dst + ld + (v * 32 * LDS + h * HALF_BK) * 2, pa[v] + off);
            cp_async16_cg_to(b_dst + ld + h * HALF_BK * 2, wsrc);
            cp_async16_cg_to(b_dst + ld + h * HALF_BK * 2 + 16, wsrc + 8);
            wsrc += HALF_BK;
            off += HALF_BK;
            if (++cs == row_chunks) cs = 0, off += row_jump;
        }
        ld = ld == (STAGES - 1) * STAGE_BYTES ? 0 : ld + STAGE_BYTES;
    };

    float acc[MI][NI][4];
    hconv_warp_zero(acc);

    pdl_wait(); // the input is the predecessor's
    pdl_release();
#pragma unroll
    for (int i = 0; i < STAGES - 1; i++) {
        if (i < nch) load();
        cp_async_commit();
    }
    // this lane's ldmatrix rows in stage 0, as hconv_mma_kernel's
    unsigned a_frag = s0 + ((wm0 + (lane & 15)) * LDS + (lane >> 4) * 8) * 2;
    unsigned b_frag =
        s0 + B_AT + ((wn0 + (lane & 7) + ((lane >> 4) << 3)) * LDS + ((lane >> 3) & 1) * 8) * 2;
    asm volatile("" : "+r"(a_frag), "+r"(b_frag));
    unsigned cur = 0; // the stage chunk kc is in
    for (int kc = 0; kc < nch; kc++) {
        cp_async_wait<STAGES - 2>();
        __syncthreads(); // chunk kc is in; every warp is past chunk kc - 1, whose stage reloads
        if (STAGES == 2) { // the next chunk's copies go while this one multiplies
            if (kc + 1 < nch) load();
            cp_async_commit();
        }
#pragma unroll
        for (int ks = 0; ks < BK; ks += 16)
            hconv_warp_k16<T, LDS>(acc, a_frag + cur + ks * 2, b_frag + cur + ks * 2);
        // three stages: the copies of chunk kc + 2 after the products (issued first, their
        // address registers would be the next ldmatrix's destinations, which would wait for the
        // copies to read them); chunk kc + 1's copies still go while this one multiplies
        if (STAGES > 2) {
            if (kc + STAGES - 1 < nch) load();
            cp_async_commit();
        }
        cur = cur == (STAGES - 1) * STAGE_BYTES ? 0 : cur + STAGE_BYTES;
    }
    cp_async_wait<0>();
    __syncthreads(); // the tiles' memory becomes the fp32 output tile
    hconv_mma_store_acc<BM, BN, L::LDR, L::LDC>(acc, (float *)smem, a.partial || !a.out_nchw, wm0,
                                                wn0, lane);
    __syncthreads();
    hconv_lean_write_act<T, BM, BN, L::LDR, L::LDC>(a, (const float *)smem, m0, a.M, k0, tid);
#elif defined(__CUDA_ARCH__)
    __trap(); // cr_convnet_cuda_init_precision refuses devices below compute capability 8.0
#endif
}

// ---- the channels-last conv from an input tile in shared memory ----------------------------

// hconv_mma_lean_kernel's products without its im2col copies: a block's tile is TR whole output
// rows of one image (TR Q <= 128 of its 128 pixel rows), and the input rows those read (HR =
// (TR - 1) stride + R of them, all W columns and C channels, one contiguous run of the NHWC
// input) are copied into shared memory once; every A fragment is an ldmatrix whose lanes address
// their own pixel's taps there, where the lean kernel copies each pixel's R S C taps (the halo
// is 3x (4x4/2) to 5.6x (3x3/1) fewer bytes for the Nature-CNN's convs).
// The input tile is XOR-swizzled in 16-byte units by the 128-byte line (Swizzle<3,4,3>: byte
// offset o at o ^ ((o >> 7) & 7) << 4), so that the 8 rows of an ldmatrix (8 consecutive pixels,
// stride 1 or 2) hit distinct banks. The weights stream in chunks of 64 taps as in the lean
// kernel (two stages), and each pixel's sums run over the same k16 steps in the same order
// through the same products and epilogue (hconv_lean_write): the same bits as the lean kernel
// with 64-tap chunks (dev/cuda/conv_half_forward.cu checks). For unsplit convs (the larger
// batches) with no padding, C a multiple of 16, C R S a multiple of 64, Q <= 128.
// Where byte o of the input tile lies in shared memory: that swizzle.
__device__ __forceinline__ unsigned halo_swizzle(unsigned o) { return o ^ (((o >> 7) & 7) << 4); }
struct hconv_halo {
    static constexpr int BM = 128, BN = 64, BK = 64, LDS = BK + 8;
    static constexpr int B_STAGE = BN * LDS * 2; // bytes of a weight chunk
    static constexpr int LDR = BN + 8, LDC = BM + 4;
    static constexpr int C_BYTES = (BM * LDR > BN * LDC ? BM * LDR : BN * LDC) * 4;
};
// The output rows per tile and the shared bytes of a conv, 0 rows where it does not fit.
static void halo_shape(const hconv_args &a, int *tr, int *smem) {
    typedef hconv_halo L;
    *tr = 0, *smem = 0;
    if (a.Q > L::BM || a.pad || a.C % 16 || a.C * a.R * a.S != a.CRSp || a.CRSp % L::BK) return;
    const int rows = L::BM / a.Q < a.P ? L::BM / a.Q : a.P;
    // whole 128-byte lines: the swizzle moves units within a line
    const size_t halo = round_up((size_t)((rows - 1) * a.stride + a.R) * a.W * a.C * 2, 128);
    const size_t bytes = halo + 2 * L::B_STAGE > (size_t)L::C_BYTES ? halo + 2 * L::B_STAGE
                                                                     : (size_t)L::C_BYTES;
    if (bytes > 96 * 1024) return;
    *tr = rows, *smem = (int)bytes;
}

template <typename T>
static __global__ void __launch_bounds__(HM_THREADS) hconv_halo_kernel(const hconv_args a, int TR,
                                                                       int halo_bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    typedef hconv_halo L;
    constexpr int BM = L::BM, BN = L::BN, BK = L::BK, LDS = L::LDS;
    extern __shared__ __align__(128) unsigned char smem[];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm0 = (warp & 1) * 64, wn0 = (warp >> 1) * 32;
    const int tiles = (a.P + TR - 1) / TR, n = blockIdx.x / tiles, p0 = (blockIdx.x % tiles) * TR;
    const int k0 = blockIdx.y * BN;
    const int rows = a.P - p0 < TR ? a.P - p0 : TR;
    const long long m0 = ((long long)n * a.P + p0) * a.Q, mend = m0 + (long long)rows * a.Q;
    const int nch = a.CRSp / BK;
    const unsigned s0 = (unsigned)__cvta_generic_to_shared(smem);
    const unsigned b_at = s0 + (unsigned)halo_bytes; // the weight stages after the input tile
    const int CB = a.C * 2, WCB = a.W * CB;          // bytes of a pixel, of an input row

    // this lane's A rows: pixel wm0 + 16 i + lane % 16 of the tile (row 0's first pixel where
    // the tile has no such pixel: its sums are not written), taps 8 (lane / 16) of a step
    int base[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        int mi = wm0 + 16 * i + (lane & 15);
        if (mi >= rows * a.Q) mi = 0;
        const int pr = mi / a.Q, q = mi - pr * a.Q;
        base[i] = pr * a.stride * WCB + q * a.stride * CB + (lane >> 4) * 16;
    }
    // the weight copies, as the lean kernel's: row k0 + tid / 2, taps 16 (tid % 2) of each
    // 32-tap half of a chunk
    const unsigned b_dst = b_at + ((tid >> 1) * LDS + (tid & 1) * 16) * 2;
    const T *wsrc = (const T *)a.w + (size_t)(k0 + (tid >> 1)) * a.CRSp + (tid & 1) * 16;
    auto load_w = [&](int kc) {
        const unsigned d = b_dst + (kc & 1) * L::B_STAGE;
        const T *src = wsrc + kc * BK;
#pragma unroll
        for (int h = 0; h < BK / HALF_BK; h++) {
            cp_async16_cg_to(d + h * HALF_BK * 2, src + h * HALF_BK);
            cp_async16_cg_to(d + h * HALF_BK * 2 + 16, src + h * HALF_BK + 8);
        }
    };
    float acc[4][4][4];
    hconv_warp_zero(acc);
    load_w(0); // the weights are not the predecessor's
    pdl_wait(); // the input is
    pdl_release();
    { // the input tile: HR rows from row p0 stride (those past the frame are never read)
        const int h0 = p0 * a.stride, hr = (rows - 1) * a.stride + a.R;
        const int units = (h0 + hr <= a.H ? hr : a.H - h0) * WCB / 16;
        const unsigned char *src =
            (const unsigned char *)a.x + ((size_t)n * a.H + h0) * (size_t)WCB;
        for (int u = tid; u < units; u += HM_THREADS) {
            const unsigned o = (unsigned)u * 16;
            cp_async16_to(s0 + halo_swizzle(o), src + o);
        }
    }
    cp_async_commit();
    const unsigned b_frag =
        b_at + ((wn0 + (lane & 7) + ((lane >> 4) << 3)) * LDS + ((lane >> 3) & 1) * 8) * 2;
    // the tap walk: a step's 16 taps are window (r, s), channels c .. c + 15 (C a multiple of
    // 16), at byte tap = r WCB + s CB + 2 c of a pixel's window, which grows by 32 a step within
    // a window row (S C taps) and jumps to the next row's start after it
    const int row_taps = a.S * a.C, row_jump = WCB - a.S * CB;
    int tap = 0, in_row = 0;
    for (int kc = 0; kc < nch; kc++) {
        cp_async_wait<0>();
        __syncthreads(); // chunk kc (and the input tile) are in; chunk kc - 1's stage is free
        if (kc + 1 < nch) load_w(kc + 1);
        cp_async_commit();
        const unsigned bk = b_frag + (kc & 1) * L::B_STAGE;
#pragma unroll
        for (int ks = 0; ks < BK / 16; ks++) {
            unsigned af[4][4], bf[4][2];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                ldsm_x4_at(af[i], s0 + halo_swizzle((unsigned)(base[i] + tap)));
            }
            hconv_ldsm_b(bf, bk + ks * 32, 16 * LDS * 2);
            hconv_mma_mi<T>(acc, af, bf);
            tap += 32;
            if ((in_row += 16) == row_taps) in_row = 0, tap += row_jump;
        }
    }
    cp_async_wait<0>();
    __syncthreads(); // the tiles' memory becomes the fp32 output tile
    hconv_mma_store_acc<BM, BN, L::LDR, L::LDC>(acc, (float *)smem, !a.out_nchw, wm0, wn0, lane);
    __syncthreads();
    hconv_lean_write_act<T, BM, BN, L::LDR, L::LDC>(a, (const float *)smem, m0, mend, k0, tid);
#elif defined(__CUDA_ARCH__)
    __trap(); // cr_convnet_cuda_init_precision refuses devices below compute capability 8.0
#endif
}

// ---- the first conv as a 2 x 2 conv over 4 x 4 blocks --------------------------------------

// An 8 x 8 / 4 conv over uint8 / 255 frames of C = 4 channels (the Nature-CNN's first conv) seen
// as a 2 x 2 / 1 conv over the frame's 4 x 4
// blocks of pixels, each block 16 C = 64 values (c, dr, ds): output pixel (p, q) is the sum over
// blocks (p + bh, q + bw), bh, bw in {0, 1}, of 64-value dot products (space to depth).
//
// An item is two output rows of one image, all channels (K <= 32); the blocks are persistent
// (4 per SM, items blockIdx.x, + gridDim.x, ...), each with 128 threads. A block copies the 32 x
// 256 weights (HALF_PIECE_S2D order) into shared memory once; for each item it writes the 12
// frame rows the item reads into shared memory, each byte converted exactly to the format
// (bytes_exact) into its 4 x 4 block, and loads the next item's words into registers while this
// one multiplies. Every A fragment is one ldmatrix from the blocks (an output pixel's 16 taps of
// a k16 step are 16 contiguous values of one block), where hconv_kernel gathers each pixel's
// taps word by word (~15 instructions per tensor instruction). Warp w: output
// row w / 2 of the item, columns 32 (w % 2) .. + 31 (two m16 tiles), all 32 channels (four n8
// tiles). The 16-byte units of a block are stored XOR-swizzled by the block's column (unit u at
// u ^ (wb % 8)), so that the 8 rows of an ldmatrix, consecutive columns, hit distinct banks.
//
// The sums are of the bytes themselves (as hconv_kernel's with div255, in another order of the
// taps), then scaled by the float nearest 1/255 in one FMA with the bias, where an IEEE division
// and addition cost ~12 instructions per output, for a result that differs by at most an fp32
// rounding before the format's.
#define S2D_C 4                      // channels
#define S2D_WB 65                    // block columns in shared memory: Q <= 64 (q + 1 <= 64)
#define S2D_TAPS (64 * S2D_C)        // 2 x 2 blocks of 16 C values
#define S2D_LDW (S2D_TAPS + 8)       // a weight row in shared memory, padded: 528 bytes

int cr_conv2d_half_s2d_fits(const cr_conv2d_shape *c, int u8_scaled, int next_conv) {
    return u8_scaled && next_conv && c->C == S2D_C && c->R == 8 && c->S == 8 && c->stride == 4 &&
           c->pad == 0 && c->W % 4 == 0 && c->W / 4 < S2D_WB && c->Q <= 64 && c->K <= 32 &&
           c->K % 8 == 0;
}

template <typename T>
static __global__ void __launch_bounds__(128, 4) hconv_s2d_kernel(const hconv_args a, int items) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    constexpr int BLK = 16 * S2D_C; // values per 4 x 4 block
    __shared__ __align__(128) T in[3 * S2D_WB * BLK];
    __shared__ __align__(128) T wt[32 * S2D_LDW];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int WB4 = a.W / 4, pairs = (a.P + 1) / 2;
    // the weights, once per block: 32 rows of 256 taps, 16 bytes a copy
    const T *wg = (const T *)a.w;
    for (int e = tid; e < 32 * S2D_TAPS / 8; e += 128) {
        const int k = e / (S2D_TAPS / 8), j = (e - k * (S2D_TAPS / 8)) * 8;
        cp_async16(wt + k * S2D_LDW + j, wg + (size_t)k * a.CRSp + j, true);
    }
    cp_async_commit();
    for (int e = tid; e < 3 * BLK; e += 128) // block column 64, read only for q = 63 (ignored)
        in[((e / BLK) * S2D_WB + S2D_WB - 1) * BLK + e % BLK] = to_fmt<T>(0.0f);
    // An item is two output rows (2 pp, 2 pp + 1) of image n: it reads frame rows 8 pp ..
    // 8 pp + 11. This thread's words of them: channel c, row 8 pp + warp + 4 j, block column
    // lane + 32 hf (zeros past the frame). The next item's are loaded while this one multiplies.
    unsigned word[S2D_C][3][2];
    auto fetch = [&](int item) {
        const int n = item / pairs, pp = item - n * pairs;
        const uint8_t *x = (const uint8_t *)a.x + (size_t)n * S2D_C * a.H * a.W;
#pragma unroll
        for (int c = 0; c < S2D_C; c++)
#pragma unroll
            for (int j = 0; j < 3; j++) {
                const int h = 8 * pp + warp + 4 * j;
                const uint8_t *row = x + ((size_t)c * a.H + h) * a.W;
#pragma unroll
                for (int hf = 0; hf < 2; hf++) {
                    const int wb = lane + 32 * hf;
                    word[c][j][hf] = h < a.H && wb < WB4 ? __ldg((const unsigned *)(row + 4 * wb)) : 0u;
                }
            }
    };
    int item = blockIdx.x;
    pdl_wait(); // the frames are the predecessor's (the weights are not: copied above)
    pdl_release();
    if (item < items) fetch(item);
    for (; item < items; item += gridDim.x) {
        __syncthreads(); // every warp is done with the previous item's blocks
#pragma unroll
        for (int c = 0; c < S2D_C; c++)
#pragma unroll
            for (int j = 0; j < 3; j++) {
                const int hh = warp + 4 * j, hb = hh >> 2, dr = hh & 3;
#pragma unroll
                for (int hf = 0; hf < 2; hf++) {
                    const int wb = lane + 32 * hf;
                    const int unit = (2 * c + (dr >> 1)) ^ (wb & 7);
                    *(uint2 *)(in + (hb * S2D_WB + wb) * BLK + unit * 8 + (dr & 1) * 4) =
                        bytes_exact<T>(word[c][j][hf]);
                }
            }
        cp_async_wait<0>(); // the weights (the first item)
        __syncthreads();
        if (item + (int)gridDim.x < items) fetch(item + gridDim.x);
        const int n = item / pairs, p0 = 2 * (item - n * pairs);

        const int pl = warp >> 1, qw = (warp & 1) * 32; // the warp's output row (0, 1), columns
        float acc[2][4][4];
        hconv_warp_zero(acc);
        // ldmatrix rows: A, pixel q = qw + 16 i + lane % 16, unit half lane / 16 of the k16 step;
        // B, channel (lane % 8) + 8 (lane / 16), taps 8 ((lane / 8) % 2) of the step
        const int aq = qw + (lane & 15), ahalf = lane >> 4;
        const int brow = (lane & 7) + ((lane >> 4) << 3), bcol = ((lane >> 3) & 1) * 8;
#pragma unroll
        for (int blk = 0; blk < 4; blk++) {
            const int bh = blk >> 1, bw = blk & 1;
#pragma unroll
            for (int cc = 0; cc < S2D_C; cc++) {
                unsigned af[2][4], bf[4][2];
#pragma unroll
                for (int i = 0; i < 2; i++) {
                    const int wb = aq + 16 * i + bw;
                    ldsm_x4(af[i], in + ((pl + bh) * S2D_WB + wb) * BLK +
                                       ((2 * cc + ahalf) ^ (wb & 7)) * 8);
                }
#pragma unroll
                for (int jp = 0; jp < 2; jp++) {
                    unsigned t4[4];
                    ldsm_x4(t4, wt + (16 * jp + brow) * S2D_LDW + blk * BLK + 16 * cc + bcol);
                    bf[2 * jp][0] = t4[0], bf[2 * jp][1] = t4[1];
                    bf[2 * jp + 1][0] = t4[2], bf[2 * jp + 1][1] = t4[3];
                }
                hconv_mma_mi<T>(acc, af, bf);
            }
        }
        // act(sum / 255 + b) in the format, channels-last: accumulator (i, j) element e is pixel
        // q = qw + 16 i + lane / 4 (+ 8 for e >= 2), channel 8 j + 2 (lane % 4) (+ 1 for odd e)
        const int p = p0 + pl;
        if (p < a.P) {
            T *y = (T *)a.y + ((size_t)n * a.P + p) * a.Q * a.K;
            const int g = lane >> 2, t2 = (lane & 3) * 2;
            const float inv255 = 1.0f / 255.0f; // the float nearest 1/255
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int k = 8 * j + t2;
                if (k >= a.K) continue;
                const float b0 = a.b[k], b1 = a.b[k + 1];
#pragma unroll
                for (int i = 0; i < 2; i++)
#pragma unroll
                    for (int hf = 0; hf < 2; hf++) {
                        const int q = qw + 16 * i + g + 8 * hf;
                        if (q >= a.Q) continue;
                        const float v0 = act_apply(a.act, fmaf(acc[i][j][2 * hf], inv255, b0));
                        const float v1 = act_apply(a.act, fmaf(acc[i][j][2 * hf + 1], inv255, b1));
                        *(unsigned *)(y + (size_t)q * a.K + k) = pack2(to_fmt<T>(v0), to_fmt<T>(v1));
                    }
            }
        }
    }
#elif defined(__CUDA_ARCH__)
    __trap(); // cr_convnet_cuda_init_precision refuses devices below compute capability 8.0
#endif
}

// ---- the launches ----------------------------------------------------------------------------

template <typename T> void hconv_launch_mma(cudarl_ctx *ctx, const hconv_args &a, int splits) {
    cudaStream_t st = cr_stream(ctx);
    dim3 grid((unsigned)((a.M + 127) / 128), (unsigned)((a.K + 63) / 64), (unsigned)splits);
    if (a.pad == 0 && a.C * a.R * a.S == a.CRSp && a.C % HALF_BK == 0 && a.K % 8 == 0) {
        CUDARL_ASSERT(!a.div255); // a first conv's; hconv_lean_write has no / 255
        int tr = 0, hsmem = 0;
        if (splits == 1) halo_shape(a, &tr, &hsmem);
        if (tr) {
            // the weight stages go after the input tile (or further, where the fp32 output
            // tile is the larger)
            const int tiles = (a.P + tr - 1) / tr, halo = hsmem - 2 * hconv_halo::B_STAGE;
            cudaFuncSetAttribute(hconv_halo_kernel<T>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, hsmem);
            launch_k(st, dim3((unsigned)(a.M / ((long long)a.P * a.Q) * tiles), grid.y),
                     dim3(HM_THREADS), hsmem, hconv_halo_kernel<T>, a, tr, halo);
        } else if (a.cps % 2 == 0 && a.CRSp % 64 == 0) { // every split's taps: whole 64s
            constexpr int smem = hconv_lean<64>::SMEM; // over 48 KiB: the launch must ask
            cudaFuncSetAttribute(hconv_mma_lean_kernel<T, 64>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
            launch_k(st, grid, dim3(HM_THREADS), smem, hconv_mma_lean_kernel<T, 64>, a);
        } else {
            launch_k(st, grid, dim3(HM_THREADS), hconv_lean<32>::SMEM,
                     hconv_mma_lean_kernel<T, 32>, a);
        }
    } else {
        hconv_mma_kernel<T><<<grid, HM_THREADS, 0, st>>>(a);
    }
    CR_CUDA_LAUNCHED(ctx);
}

template <typename T>
void hconv_launch_s2d(cudarl_ctx *ctx, const hconv_args &a, int items, int grid) {
    launch_k(cr_stream(ctx), dim3(grid), dim3(128), 0, hconv_s2d_kernel<T>, a, items);
    CR_CUDA_LAUNCHED(ctx);
}

template void hconv_launch_mma<__half>(cudarl_ctx *, const hconv_args &, int);
template void hconv_launch_mma<__nv_bfloat16>(cudarl_ctx *, const hconv_args &, int);
template void hconv_launch_s2d<__half>(cudarl_ctx *, const hconv_args &, int, int);
template void hconv_launch_s2d<__nv_bfloat16>(cudarl_ctx *, const hconv_args &, int, int);
