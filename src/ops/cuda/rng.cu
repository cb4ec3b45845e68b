// Random numbers from a stream whose position lives in device memory: uniforms and
// permutations, word for word those of src/ops/cpu/rng.c.
//
// Word w of a stream is word w % 4 of Philox block w / 4 (core.h), so one thread computes one
// Philox block and writes the (up to four) of its words that fall in [offset, offset + n). The
// offset is only known on the device, so the grid covers the most blocks n words can touch
// (n / 4 + 2) and threads past the end return. Every thread reads the offset; a second one-thread
// kernel advances it afterwards, which the stream orders after the first.
//
// The permutation is the Feistel shuffle of core/shuffle.h, the CPU's code, one thread per
// element.
#include "core/shuffle.h"
#include "ops/cuda/cuda_common.cuh"

// Thread blocks for one thread per Philox block that n words can touch, whatever the offset.
static unsigned rng_blocks(int n) {
    size_t t = (size_t)n / 4 + 2;
    return (unsigned)((t + CR_CUDA_THREADS - 1) / CR_CUDA_THREADS);
}

// Calls emit(i, word) for the words i in [0, n) of the stream from its offset that fall in the
// Philox block of this thread.
template <typename Emit>
__device__ __forceinline__ void stream_words(const cr_rng_stream *s, int n, Emit emit) {
    uint64_t first = s->offset, end = first + (uint64_t)n;
    uint64_t block = first / 4 + (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    uint64_t w0 = block * 4;
    if (w0 >= end) return;
    uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), s->stream[0], s->stream[1]};
    uint32_t key[2] = {s->key[0], s->key[1]};
    uint32_t out[4];
    cr_philox4x32_10_hd(ctr, key, out);
    for (int k = 0; k < 4; k++) {
        uint64_t w = w0 + (uint64_t)k;
        if (w >= first && w < end) emit((int)(w - first), out[k]);
    }
}

// u (n) = words as floats in [0, 1) with 24 bits (the conversion and product are exact).
__global__ void uniform_kernel(const cr_rng_stream *s, float *u, int n) {
    stream_words(s, n, [u](int i, uint32_t word) {
        u[i] = (float)(word >> 8) * (1.0f / 16777216.0f);
    });
}

// perm (n): the shuffle of core/shuffle.h keyed by the stream's words offset .. offset + 15.
// The first CR_SHUFFLE_ROUNDS threads of each block draw one key each into shared memory (a
// select, not an indexed array, picks the word of the Philox block, so nothing goes to local
// memory); then every thread computes its element.
__global__ void permutation_kernel(const cr_rng_stream *s, int32_t *perm, int n) {
    __shared__ uint32_t keys[CR_SHUFFLE_ROUNDS];
    if (threadIdx.x < CR_SHUFFLE_ROUNDS) {
        uint64_t w = s->offset + threadIdx.x, block = w / 4;
        uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), s->stream[0], s->stream[1]};
        uint32_t key[2] = {s->key[0], s->key[1]};
        uint32_t out[4];
        cr_philox4x32_10_hd(ctr, key, out);
        int k = (int)(w % 4);
        keys[threadIdx.x] = k == 0 ? out[0] : k == 1 ? out[1] : k == 2 ? out[2] : out[3];
    }
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    cr_shuffle sh = cr_shuffle_make((uint32_t)n, keys);
    perm[i] = (int32_t)cr_shuffle_at(&sh, (uint32_t)i);
}

__global__ void advance_kernel(cr_rng_stream *s, uint64_t n) { s->offset += n; }

static void advance(cudarl_ctx *ctx, cr_rng_stream *s, uint64_t n) {
    advance_kernel<<<1, 1, 0, cr_stream(ctx)>>>(s, n);
    CR_CUDA_LAUNCHED(ctx);
}

void cr_cuda_rng_advance(cudarl_ctx *ctx, cr_rng_stream *s, uint64_t n) { advance(ctx, s, n); }

void cr_cuda_uniform(cudarl_ctx *ctx, cr_rng_stream *s, float *u, int n) {
    if (n <= 0) return;
    uniform_kernel<<<rng_blocks(n), CR_CUDA_THREADS, 0, cr_stream(ctx)>>>(s, u, n);
    CR_CUDA_LAUNCHED(ctx);
    advance(ctx, s, (uint64_t)n);
}

void cr_cuda_permutation(cudarl_ctx *ctx, cr_rng_stream *s, int32_t *perm, int n) {
    if (n <= 0) return;
    permutation_kernel<<<cr_cuda_blocks((size_t)n, CR_CUDA_THREADS), CR_CUDA_THREADS, 0,
                         cr_stream(ctx)>>>(s, perm, n);
    CR_CUDA_LAUNCHED(ctx);
    advance(ctx, s, CR_SHUFFLE_ROUNDS);
}
