// Results to the host without stopping the device: pinned buffers, asynchronous copies into
// them, and events to ask whether a copy has landed.
#include "ops/cuda/cuda_common.cuh"

cudarl_status cr_cuda_pinned_alloc(cudarl_ctx *ctx, void **p, size_t bytes) {
    return cr_cuda_host_alloc_pinned(p, bytes);
}

void cr_cuda_pinned_free(cudarl_ctx *ctx, void *p) { cr_cuda_host_free_pinned(p); }

void cr_cuda_copy_to_host_async(cudarl_ctx *ctx, void *dst_pinned, const void *src, size_t bytes) {
    if (!bytes) return;
    CUDA_CHECK(cudaMemcpyAsync(dst_pinned, src, bytes, cudaMemcpyDeviceToHost, cr_stream(ctx)));
}

cudarl_status cr_cuda_event_create(cudarl_ctx *ctx, void **event) {
    cudaEvent_t e;
    cudaError_t err = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    if (err != cudaSuccess) {
        cudaGetLastError();
        return cr_fail(CUDARL_ERR_CUDA, "cudaEventCreate: %s", cudaGetErrorString(err));
    }
    *event = (void *)e;
    return CUDARL_OK;
}

cudarl_status cr_cuda_timing_event_create(void **event) {
    cudaEvent_t e;
    cudaError_t err = cudaEventCreate(&e);
    if (err != cudaSuccess) {
        cudaGetLastError();
        return cr_fail(CUDARL_ERR_CUDA, "cudaEventCreate: %s", cudaGetErrorString(err));
    }
    *event = (void *)e;
    return CUDARL_OK;
}

float cr_cuda_event_elapsed_ms(void *start, void *end) {
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, (cudaEvent_t)start, (cudaEvent_t)end));
    return ms;
}

void cr_cuda_event_free(cudarl_ctx *ctx, void *event) {
    if (event) cudaEventDestroy((cudaEvent_t)event);
}

void cr_cuda_event_record(cudarl_ctx *ctx, void *event) {
    CUDA_CHECK(cudaEventRecord((cudaEvent_t)event, cr_stream(ctx)));
}

int cr_cuda_event_done(cudarl_ctx *ctx, void *event) {
    cudaError_t e = cudaEventQuery((cudaEvent_t)event);
    if (e == cudaSuccess) return 1;
    if (e == cudaErrorNotReady) return 0;
    CUDA_CHECK(e);
    return 0;
}

void cr_cuda_event_wait(cudarl_ctx *ctx, void *event) {
    // atomic: env threads wait on events of one context at once (src/algo/ppo/ppo_pool.c)
    __atomic_fetch_add(&ctx->host_syncs, 1, __ATOMIC_RELAXED);
    CUDA_CHECK(cudaEventSynchronize((cudaEvent_t)event));
}

void cr_cuda_stream_wait_event(cudarl_ctx *ctx, void *event) {
    CUDA_CHECK(cudaStreamWaitEvent(cr_stream(ctx), (cudaEvent_t)event, 0));
}
