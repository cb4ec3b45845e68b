// Random numbers from a stream whose position lives in device memory: uniforms and
// permutations, word for word those of src/ops/cpu/rng.c.
//
// Word w of a stream is word w % 4 of Philox block w / 4 (core.h), so one thread computes one
// Philox block and writes the (up to four) of its words that fall in [offset, offset + n). The
// offset is only known on the device, so the grid covers the most blocks n words can touch
// (n / 4 + 2) and threads past the end return. Every thread reads the offset; a second one-thread
// kernel advances it afterwards, which the stream orders after the first.
//
// The permutation sorts (key = word, value = index) pairs with CUB's LSD radix sort, which is
// stable, so equal keys keep index order exactly as the CPU's LSD radix sort does.
#include <cub/device/device_radix_sort.cuh>

#include "ops/cuda/cuda_common.cuh"

// Byte alignment of the pieces of the permutation scratch.
#define PERM_ALIGN 256

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

// keys (n) = words, values (n) = 0..n-1.
__global__ void perm_keys_kernel(const cr_rng_stream *s, uint32_t *keys, int32_t *values, int n) {
    stream_words(s, n, [keys, values](int i, uint32_t word) {
        keys[i] = word;
        values[i] = i;
    });
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

// The scratch of a permutation of n: keys in, keys out, values in (n words each), then CUB's
// temporary storage; each piece PERM_ALIGN-aligned.
typedef struct perm_layout {
    size_t keys_out, values_in, temp, temp_bytes, total;
} perm_layout;

static size_t align_up(size_t x) { return (x + PERM_ALIGN - 1) / PERM_ALIGN * PERM_ALIGN; }

static perm_layout layout_of(int n) {
    perm_layout l;
    size_t words = align_up((size_t)n * sizeof(uint32_t));
    l.keys_out = words;
    l.values_in = 2 * words;
    l.temp = 3 * words;
    l.temp_bytes = 0;
    // A size query: with NULL storage CUB only computes the bytes it needs (for this device's
    // architecture); it enqueues no work.
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(NULL, l.temp_bytes, (const uint32_t *)NULL,
                                               (uint32_t *)NULL, (const int32_t *)NULL,
                                               (int32_t *)NULL, n));
    l.total = l.temp + align_up(l.temp_bytes);
    return l;
}

size_t cr_cuda_permutation_scratch_bytes(int n) { return n > 0 ? layout_of(n).total : 0; }

void cr_cuda_permutation(cudarl_ctx *ctx, cr_rng_stream *s, int32_t *perm, int n,
                         void *scratch) {
    if (n <= 0) return;
    perm_layout l = layout_of(n);
    unsigned char *base = (unsigned char *)scratch;
    uint32_t *keys = (uint32_t *)base, *keys_out = (uint32_t *)(base + l.keys_out);
    int32_t *values = (int32_t *)(base + l.values_in);
    perm_keys_kernel<<<rng_blocks(n), CR_CUDA_THREADS, 0, cr_stream(ctx)>>>(s, keys, values, n);
    CR_CUDA_LAUNCHED(ctx);
    size_t temp_bytes = l.temp_bytes;
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(base + l.temp, temp_bytes, keys, keys_out, values,
                                               perm, n, 0, 32, cr_stream(ctx)));
    CR_CUDA_LAUNCHED(ctx);
    advance(ctx, s, (uint64_t)n);
}
