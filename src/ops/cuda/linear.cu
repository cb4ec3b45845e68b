// Fully connected layer y = x w^T + b on the device: cuBLAS SGEMM (fp32, no TF32) for the
// products, a fused bias (+ tanh) epilogue, and the bias gradient as column sums with a fixed
// reduction order.
//
// Row-major buffers read as column-major are their transposes, so each product is written for
// the transposed shapes: y^T (O, B) = w (O, I) x^T (I, B), i.e. sgemm(T, N) on w and x;
// dw^T (I, O) = x^T (I, B) dy (B, O), i.e. sgemm(N, T); dx^T (I, B) = w^T (I, O) dy^T (O, B),
// i.e. sgemm(N, N). The sums run in cuBLAS's order, not the CPU's: results agree with the CPU
// to rounding (test_ops_cuda), and are bitwise repeatable on one GPU.
#include "ops/cuda/cuda_common.cuh"
#include "ops/cuda/tanh_device.cuh"

// Columns and row lanes of a column-sum block.
#define DB_COLS 32
#define DB_ROWS 16

// y[r, o] = act(y[r, o] + b[o]) for y (B, O), n = B * O.
template <bool TANH>
__global__ void bias_act_kernel(float *y, const float *__restrict__ b, size_t n, int O) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = __fadd_rn(y[i], b[i % (size_t)O]);
        y[i] = TANH ? cr_tanhf_device(v) : v;
    }
}

// db[o] = sum_r dy[r, o] for dy (B, O), in two stages with a fixed order (no atomics):
// stage 1 splits the rows into `chunks` contiguous ranges; block (cx, c) sums range c of 32
// columns (DB_ROWS lanes, then a halving tree) into partial[c * O + o] (double); stage 2 adds
// the chunks in order. The chunk count is a fixed function of B and O, so results repeat.
__global__ void column_sum_partial_kernel(const float *__restrict__ dy, double *partial, int B,
                                          int O, int rows_per_chunk) {
    __shared__ double sh[DB_ROWS][DB_COLS + 1];
    int o = blockIdx.x * DB_COLS + threadIdx.x;
    int begin = blockIdx.y * rows_per_chunk;
    int end = min(B, begin + rows_per_chunk);
    double s = 0.0;
    if (o < O)
        for (int r = begin + threadIdx.y; r < end; r += DB_ROWS) s += dy[(size_t)r * O + o];
    sh[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    for (int h = DB_ROWS / 2; h > 0; h >>= 1) {
        if (threadIdx.y < h) sh[threadIdx.y][threadIdx.x] += sh[threadIdx.y + h][threadIdx.x];
        __syncthreads();
    }
    if (threadIdx.y == 0 && o < O) partial[(size_t)blockIdx.y * O + o] = sh[0][threadIdx.x];
}

__global__ void column_sum_finish_kernel(const double *partial, float *__restrict__ db, int O,
                                         int chunks) {
    int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= O) return;
    double s = 0.0;
    for (int c = 0; c < chunks; c++) s += partial[(size_t)c * O + o];
    db[o] = (float)s;
}

// Row chunks of the column sum: about 256 rows each, at most 128, and no more than the scratch
// holds for O columns.
static int column_sum_chunks(int B, int O) {
    int cap = (CR_CUDA_MAX_PARTIALS * CR_CUDA_PARTIAL_WIDTH) / (O > 0 ? O : 1);
    int chunks = (B + 255) / 256;
    if (chunks > 128) chunks = 128;
    if (chunks > cap) chunks = cap;
    return chunks < 1 ? 1 : chunks;
}

template <bool TANH>
static void forward(cudarl_ctx *ctx, const float *x, const float *w, const float *b, float *y,
                    int B, int I, int O) {
    if (B <= 0 || O <= 0) return;
    size_t n = (size_t)B * O;
    if (I > 0) {
        cr_cuda_sgemm(ctx, CUBLAS_OP_T, CUBLAS_OP_N, O, B, I, w, I, x, I, y, O);
    } else {
        CUDA_CHECK(cudaMemsetAsync(y, 0, n * sizeof *y, cr_stream(ctx)));
    }
    bias_act_kernel<TANH><<<cr_cuda_blocks(n, CR_CUDA_THREADS), CR_CUDA_THREADS, 0,
                            cr_stream(ctx)>>>(y, b, n, O);
    CR_CUDA_LAUNCHED(ctx);
}

void cr_cuda_linear_forward(cudarl_ctx *ctx, const float *x, const float *w, const float *b,
                            float *y, int B, int I, int O) {
    forward<false>(ctx, x, w, b, y, B, I, O);
}

void cr_cuda_linear_tanh_forward(cudarl_ctx *ctx, const float *x, const float *w, const float *b,
                                 float *y, int B, int I, int O) {
    forward<true>(ctx, x, w, b, y, B, I, O);
}

void cr_cuda_linear_backward(cudarl_ctx *ctx, const float *dy, const float *x, const float *w,
                             float *dx, float *dw, float *db, int B, int I, int O) {
    cudaStream_t st = cr_stream(ctx);
    if (B <= 0) { // no rows: zero gradients, as the CPU leaves them
        if (O > 0) {
            CUDA_CHECK(cudaMemsetAsync(db, 0, (size_t)O * sizeof *db, st));
            if (I > 0) CUDA_CHECK(cudaMemsetAsync(dw, 0, (size_t)O * I * sizeof *dw, st));
        }
        return;
    }
    if (dx && I > 0) {
        if (O > 0) {
            cr_cuda_sgemm(ctx, CUBLAS_OP_N, CUBLAS_OP_N, I, B, O, w, I, dy, O, dx, I);
        } else {
            CUDA_CHECK(cudaMemsetAsync(dx, 0, (size_t)B * I * sizeof *dx, st));
        }
    }
    if (O <= 0) return;
    if (I > 0) {
        cr_cuda_sgemm(ctx, CUBLAS_OP_N, CUBLAS_OP_T, I, O, B, x, I, dy, O, dw, I);
    }
    int chunks = column_sum_chunks(B, O), rows = (B + chunks - 1) / chunks;
    double *partial = &cr_impl(ctx)->scratch->partial[0][0];
    dim3 threads(DB_COLS, DB_ROWS), grid((O + DB_COLS - 1) / DB_COLS, chunks);
    column_sum_partial_kernel<<<grid, threads, 0, st>>>(dy, partial, B, O, rows);
    CR_CUDA_LAUNCHED(ctx);
    column_sum_finish_kernel<<<(O + 255) / 256, 256, 0, st>>>(partial, db, O, chunks);
    CR_CUDA_LAUNCHED(ctx);
}
