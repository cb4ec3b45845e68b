// The floor under a batch-1 act() from host memory (issue 8: <= 0.03 ms end to end): what the
// host and PCIe cost around the forward, on this machine, with nothing but the CUDA runtime.
// Each row is the p50 and p99 of `reps` timed repetitions (CLOCK_MONOTONIC around the host
// calls, waited for) after `reps / 10` untimed ones:
//   attrs           cudaPointerGetAttributes on a host array (act() asks it of each pointer)
//   memcpy          the 262,144 observation bytes from a host array into pinned memory
//   graph empty     a captured graph of one empty kernel: launch + cudaStreamSynchronize
//   graph h2d       the graph: H2D copy of the bytes from pinned memory, the empty kernel
//   graph h2d+d2h   as act()'s full graph: H2D, the kernel, a 64-byte D2H into pinned memory
//   pageable h2d    cudaMemcpyAsync of the bytes from the host array (pageable) + sync
//   mapped read     a kernel of 32 blocks summing the bytes from mapped pinned memory
//                   (zero-copy, as the graphs read them on an integrated GPU), launch + sync
//   device read     the same kernel on the bytes in device memory
// Build and run from the repository's root: nvcc -O3 -arch=sm_90 -Iinclude -I. dev/cuda/act_floor.cu
// -o /tmp/act_floor && /tmp/act_floor
// (arguments: reps, default 2000).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include "bench/bench_check.cuh" // CK

static double now_us() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

__global__ void empty_kernel() {}

// out[block] = the sum of the block's share of the n bytes (4-byte words), so the reads count.
__global__ void sum_kernel(const unsigned *__restrict__ x, size_t words, unsigned *out) {
    unsigned s = 0;
    const size_t per = (words + gridDim.x - 1) / gridDim.x, b = blockIdx.x * per;
    const size_t e = b + per < words ? b + per : words;
    for (size_t i = b + threadIdx.x; i < e; i += blockDim.x) s += x[i];
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(&out[blockIdx.x], s);
}

template <typename F> static void row(const char *name, int reps, F f) {
    std::vector<double> t(reps);
    for (int i = 0; i < reps / 10; i++) f();
    for (int i = 0; i < reps; i++) {
        const double a = now_us();
        f();
        t[i] = now_us() - a;
    }
    std::sort(t.begin(), t.end());
    printf("| %-14s | %8.2f | %8.2f |\n", name, t[reps / 2], t[reps * 99 / 100]);
}

int main(int argc, char **argv) {
    const int reps = argc > 1 ? atoi(argv[1]) : 2000;
    const size_t bytes = 4 * 256 * 256, out_bytes = 64;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    CK(cudaSetDeviceFlags(cudaDeviceMapHost));
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    unsigned char *host = (unsigned char *)malloc(bytes), *pinned, *pinned_out, *mapped, *dev;
    unsigned *sums;
    for (size_t i = 0; i < bytes; i++) host[i] = (unsigned char)(i * 131 + 7);
    CK(cudaHostAlloc((void **)&pinned, bytes, cudaHostAllocDefault));
    CK(cudaHostAlloc((void **)&pinned_out, out_bytes, cudaHostAllocDefault));
    CK(cudaHostAlloc((void **)&mapped, bytes, cudaHostAllocMapped));
    memcpy(mapped, host, bytes);
    unsigned char *mapped_dev;
    CK(cudaHostGetDevicePointer((void **)&mapped_dev, mapped, 0));
    CK(cudaMalloc((void **)&dev, bytes));
    CK(cudaMalloc((void **)&sums, 32 * sizeof(unsigned)));
    CK(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice));

    auto capture = [&](bool h2d, bool d2h) {
        cudaGraph_t g;
        cudaGraphExec_t x;
        CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
        if (h2d) CK(cudaMemcpyAsync(dev, pinned, bytes, cudaMemcpyHostToDevice, st));
        empty_kernel<<<1, 32, 0, st>>>();
        if (d2h) CK(cudaMemcpyAsync(pinned_out, dev, out_bytes, cudaMemcpyDeviceToHost, st));
        CK(cudaStreamEndCapture(st, &g));
        CK(cudaGraphInstantiate(&x, g, 0));
        CK(cudaGraphDestroy(g));
        return x;
    };
    cudaGraphExec_t g_empty = capture(false, false), g_h2d = capture(true, false),
                    g_full = capture(true, true);

    printf("act_floor on %s (%d SMs), %zu observation bytes, %d reps; microseconds\n\n",
           prop.name, prop.multiProcessorCount, bytes, reps);
    printf("| what | p50 us | p99 us |\n|---|---:|---:|\n");
    cudaPointerAttributes at;
    row("attrs", reps, [&] { CK(cudaPointerGetAttributes(&at, host)); });
    row("memcpy", reps, [&] { memcpy(pinned, host, bytes); });
    auto launch = [&](cudaGraphExec_t x) {
        CK(cudaGraphLaunch(x, st));
        CK(cudaStreamSynchronize(st));
    };
    row("graph empty", reps, [&] { launch(g_empty); });
    row("graph h2d", reps, [&] { launch(g_h2d); });
    row("graph h2d+d2h", reps, [&] { launch(g_full); });
    row("pageable h2d", reps, [&] {
        CK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, st));
        CK(cudaStreamSynchronize(st));
    });
    row("mapped read", reps, [&] {
        sum_kernel<<<32, 256, 0, st>>>((const unsigned *)mapped_dev, bytes / 4, sums);
        CK(cudaStreamSynchronize(st));
    });
    row("device read", reps, [&] {
        sum_kernel<<<32, 256, 0, st>>>((const unsigned *)dev, bytes / 4, sums);
        CK(cudaStreamSynchronize(st));
    });
    CK(cudaGetLastError());
    return 0;
}
