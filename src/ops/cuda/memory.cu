// Device memory: the one allocation of an arena, copies, zeroing, and gathering rows by index.
#include <string.h>

#include "ops/cuda/cuda_common.cuh"

static size_t alloc_count; // cudaMalloc calls that succeeded, ever

cudaError_t cr_cuda_malloc(void **p, size_t bytes) {
    cudaError_t e = cudaMalloc(p, bytes);
    if (e == cudaSuccess) __atomic_fetch_add(&alloc_count, 1, __ATOMIC_RELAXED);
    return e;
}

size_t cr_cuda_alloc_count(void) { return __atomic_load_n(&alloc_count, __ATOMIC_RELAXED); }

// One cudaMalloc for the whole plan, zeroed on the context's stream (so every op enqueued after
// this call sees zeros).
cudarl_status cr_cuda_arena_alloc(cudarl_ctx *ctx, cr_arena *a, const cr_plan *p) {
    memset(a, 0, sizeof *a);
    a->plan = *p;
    a->kind = CR_MEM_DEVICE;
    size_t total = (p->total + CR_ARENA_ALIGN - 1) / CR_ARENA_ALIGN * CR_ARENA_ALIGN;
    if (total == 0) total = CR_ARENA_ALIGN;
    void *base = NULL;
    cudaError_t e = cr_cuda_malloc(&base, total);
    if (e != cudaSuccess) {
        cudaGetLastError(); // out of memory is not sticky: clear it
        size_t free_b = 0, total_b = 0;
        cudaMemGetInfo(&free_b, &total_b);
        cudaGetLastError();
        char want[32], have[32], all[32];
        return cr_fail(e == cudaErrorMemoryAllocation ? CUDARL_ERR_OUT_OF_MEMORY : CUDARL_ERR_CUDA,
                       "cannot allocate %s of device memory on cuda:%d (%s free of %s): %s; "
                       "reduce --num-envs or --num-steps",
                       cudarl_format_bytes(total, want, sizeof want), ctx->device_index,
                       cudarl_format_bytes(free_b, have, sizeof have),
                       cudarl_format_bytes(total_b, all, sizeof all), cudaGetErrorString(e));
    }
    CUDA_CHECK(cudaMemsetAsync(base, 0, total, cr_stream(ctx)));
    a->base = (unsigned char *)base;
    return CUDARL_OK;
}

void cr_cuda_arena_free(cudarl_ctx *ctx, cr_arena *a) {
    if (a->base) CUDA_CHECK(cudaFree(a->base)); // waits for the device first
    a->base = NULL;
}

// Returns with the bytes in dst: the one op that waits for the stream.
void cr_cuda_copy_to_host(cudarl_ctx *ctx, void *dst, const void *src, size_t bytes) {
    if (cr_cuda_refuse_in_capture(ctx, "copy_to_host")) return;
    ctx->host_syncs++;
    if (!bytes) return;
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, cr_stream(ctx)));
    CUDA_CHECK(cudaStreamSynchronize(cr_stream(ctx)));
}

// Whether src is page-locked host memory (cr_cuda_host_alloc_pinned or registered).
static int is_pinned(const void *src) {
    cudaPointerAttributes at;
    if (cudaPointerGetAttributes(&at, src) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return at.type == cudaMemoryTypeHost;
}

// From pageable memory the runtime stages src before returning, so src may be reused at once;
// from pinned memory (cr_cuda_host_alloc_pinned) the copy is truly asynchronous and src must
// stay unchanged until the stream has passed it. Only a copy from pinned memory can be captured
// into a graph (a replay reads src as it is then).
void cr_cuda_copy_from_host(cudarl_ctx *ctx, void *dst, const void *src, size_t bytes) {
    if (!bytes) return;
    if (cr_impl(ctx)->capturing && !is_pinned(src)) {
        cr_cuda_refuse_in_capture(ctx, "copy_from_host (pageable source)");
        return;
    }
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, cr_stream(ctx)));
}

void cr_cuda_copy(cudarl_ctx *ctx, void *dst, const void *src, size_t bytes) {
    if (!bytes || dst == src) return;
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, cr_stream(ctx)));
}

void cr_cuda_zero(cudarl_ctx *ctx, void *dst, size_t bytes) {
    if (!bytes) return;
    CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, cr_stream(ctx)));
}

void cr_cuda_sync(cudarl_ctx *ctx) {
    if (cr_cuda_refuse_in_capture(ctx, "sync")) return;
    CUDA_CHECK(cudaStreamSynchronize(cr_stream(ctx)));
}

// dst row r = src row idx[r], copied in words of type W (row_words of them per row).
template <typename W>
__global__ void gather_rows_kernel(const W *__restrict__ src, const int32_t *__restrict__ idx,
                                   W *__restrict__ dst, size_t rows, size_t row_words) {
    size_t n = rows * row_words, stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        size_t r = i / row_words, k = i - r * row_words;
        dst[i] = src[(size_t)idx[r] * row_words + k];
    }
}

template <typename W>
static void gather_as(cudarl_ctx *ctx, const void *src, const int32_t *idx, void *dst, int rows,
                      size_t row_bytes) {
    size_t words = row_bytes / sizeof(W);
    gather_rows_kernel<W><<<cr_cuda_blocks((size_t)rows * words, CR_CUDA_THREADS),
                            CR_CUDA_THREADS, 0, cr_stream(ctx)>>>(
        (const W *)src, idx, (W *)dst, (size_t)rows, words);
    CR_CUDA_LAUNCHED(ctx);
}

// Copies in the widest word that divides the row and both base addresses.
void cr_cuda_gather_rows(cudarl_ctx *ctx, const void *src, const int32_t *idx, void *dst,
                         int rows, size_t row_bytes) {
    if (rows <= 0 || row_bytes == 0) return;
    uintptr_t align = (uintptr_t)src | (uintptr_t)dst | (uintptr_t)row_bytes;
    if (align % 16 == 0) gather_as<uint4>(ctx, src, idx, dst, rows, row_bytes);
    else if (align % 4 == 0) gather_as<uint32_t>(ctx, src, idx, dst, rows, row_bytes);
    else gather_as<unsigned char>(ctx, src, idx, dst, rows, row_bytes);
}

// keep_rows: thread j of row i's words copies word j when flag[i] is set; word 0 also sets step.
template <typename W>
__global__ void keep_rows_kernel(const W *__restrict__ src, const uint8_t *__restrict__ flag,
                                 W *__restrict__ dst, int32_t *__restrict__ step, int32_t t,
                                 size_t rows, size_t row_words) {
    size_t n = rows * row_words, stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        size_t r = i / row_words, k = i - r * row_words;
        if (!flag[r]) continue;
        dst[i] = src[i];
        if (k == 0) step[r] = t;
    }
}

template <typename W>
static void keep_as(cudarl_ctx *ctx, const void *src, const uint8_t *flag, void *dst,
                    int32_t *step, int32_t t, int rows, size_t row_bytes) {
    size_t words = row_bytes / sizeof(W);
    keep_rows_kernel<W><<<cr_cuda_blocks((size_t)rows * words, CR_CUDA_THREADS), CR_CUDA_THREADS,
                          0, cr_stream(ctx)>>>((const W *)src, flag, (W *)dst, step, t,
                                               (size_t)rows, words);
    CR_CUDA_LAUNCHED(ctx);
}

void cr_cuda_keep_rows(cudarl_ctx *ctx, const void *src, const uint8_t *flag, void *dst,
                       int32_t *step, int32_t t, int rows, size_t row_bytes) {
    if (rows <= 0 || row_bytes == 0) return;
    uintptr_t align = (uintptr_t)src | (uintptr_t)dst | (uintptr_t)row_bytes;
    if (align % 16 == 0) keep_as<uint4>(ctx, src, flag, dst, step, t, rows, row_bytes);
    else if (align % 4 == 0) keep_as<uint32_t>(ctx, src, flag, dst, step, t, rows, row_bytes);
    else keep_as<unsigned char>(ctx, src, flag, dst, step, t, rows, row_bytes);
}

__global__ void place_values_kernel(const float *__restrict__ v, int32_t *__restrict__ step,
                                    float *__restrict__ out, int rows) {
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < rows; i += stride) {
        int32_t k = step[i];
        if (k <= 0) continue;
        out[(size_t)(k - 1) * (size_t)rows + (size_t)i] = v[i];
        step[i] = 0;
    }
}

void cr_cuda_place_values(cudarl_ctx *ctx, const float *v, int32_t *step, float *out, int rows) {
    if (rows <= 0) return;
    place_values_kernel<<<cr_cuda_blocks((size_t)rows, CR_CUDA_THREADS), CR_CUDA_THREADS, 0,
                          cr_stream(ctx)>>>(v, step, out, rows);
    CR_CUDA_LAUNCHED(ctx);
}

// gather_rows of up to CR_GATHER_MAX arrays in one launch: thread r reads idx[r] once and copies
// row r of every array (16-byte words where an array's rows and bases allow, else 4-byte words,
// else bytes).
struct gather_many_args {
    cr_gather_item items[CR_GATHER_MAX];
    int width[CR_GATHER_MAX]; // bytes a word: 16, 4 or 1
    int count;
};

__global__ void gather_rows_many_kernel(const int32_t *__restrict__ idx, int rows,
                                        const gather_many_args a) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    size_t from = (size_t)idx[r];
#pragma unroll
    for (int k = 0; k < CR_GATHER_MAX; k++) { // unrolled: the rows' loads go out together
        if (k >= a.count) break;
        const cr_gather_item &it = a.items[k];
        size_t bytes = it.row_bytes;
        const unsigned char *s = (const unsigned char *)it.src + from * bytes;
        unsigned char *d = (unsigned char *)it.dst + (size_t)r * bytes;
        if (a.width[k] == 16)
            for (size_t w = 0; w < bytes / 16; w++) ((uint4 *)d)[w] = ((const uint4 *)s)[w];
        else if (a.width[k] == 4)
            for (size_t w = 0; w < bytes / 4; w++) ((uint32_t *)d)[w] = ((const uint32_t *)s)[w];
        else
            for (size_t w = 0; w < bytes; w++) d[w] = s[w];
    }
}

void cr_cuda_gather_rows_many(cudarl_ctx *ctx, const int32_t *idx, int rows, int count,
                              const cr_gather_item *items) {
    CUDARL_ASSERT(0 <= count && count <= CR_GATHER_MAX);
    if (rows <= 0 || count == 0) return;
    gather_many_args a;
    memset(&a, 0, sizeof a);
    a.count = count;
    for (int k = 0; k < count; k++) {
        a.items[k] = items[k];
        uintptr_t align = (uintptr_t)items[k].src | (uintptr_t)items[k].dst |
                          (uintptr_t)items[k].row_bytes;
        a.width[k] = align % 16 == 0 ? 16 : align % 4 == 0 ? 4 : 1;
    }
    gather_rows_many_kernel<<<cr_cuda_blocks((size_t)rows, CR_CUDA_THREADS), CR_CUDA_THREADS, 0,
                              cr_stream(ctx)>>>(idx, rows, a);
    CR_CUDA_LAUNCHED(ctx);
}
