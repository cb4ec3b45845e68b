// The CUDA side of the policy runtime: pinned staging, one CUDA graph per batch size, and act()
// as a copy in, one graph launch, a copy out and one stream synchronisation.
//
// For each batch size b = 2^k up to the policy's rows, two graphs are captured at load:
//   full[k]:    obs staging (pinned) -> device, [uint8 -> float / 255], the network, argmax,
//               out block -> out staging (pinned). (A conv net converts its uint8 input inside
//               its forward, cr_convnet_cuda_forward.) act() with host memory everywhere: copy the
//               observations into the staging, launch, synchronise, copy the outputs out.
//   compute[k]: the same without the two copies, for calls where the observations or an output
//               are device memory: act() enqueues its own copies from and to the caller's
//               pointers around it.
// On an integrated GPU (Jetson: one memory for CPU and GPU) the staging is mapped
// (cudaHostAllocMapped) and the graphs read host observations in place: no copy in.
// A call of n rows runs the graph of the smallest b >= n with rows n..b-1 zeroed; their outputs
// are computed and ignored. A conv net's CUDA twin is declared for every one of those batch
// sizes and runs each once outside any capture first (cuDNN loads its kernels on a plan's first
// call); under TF32 the policy's context runs its cuBLAS products as TF32 tensor ops
// (cr_convnet_cuda_set_tf32, set in policy.c before anything is captured); under BF16 and FP16
// the graphs hold the conv net's half-precision forward (cr_convnet_cuda_half_forward, on the
// weights policy.c converted at load).
#include <string.h>

#include "ops/cuda/cuda_common.cuh"
#include "ops/cuda/cuda_info.h"
// actor_critic.h and qnet.h (included by policy.h) have no extern "C" of their own.
extern "C" {
#include "runtime/policy.h"
}

static cudarl_status cuda_failed(const cudarl_policy *p, const char *what, cudaError_t e) {
    cudaGetLastError(); // clear a non-sticky error so that later calls start clean
    return cr_fail(e == cudaErrorMemoryAllocation ? CUDARL_ERR_OUT_OF_MEMORY : CUDARL_ERR_CUDA,
                   "policy on cuda:%d: %s failed: %s", p->ctx->device_index, what,
                   cudaGetErrorString(e));
}

extern "C" int cr_policy_cuda_devices(void) {
    char why[256];
    return cr_cuda_device_count(why, sizeof why);
}

extern "C" int cr_policy_pointer_device(const void *ptr) {
    cudaPointerAttributes at;
    if (cudaPointerGetAttributes(&at, ptr) != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    return at.type == cudaMemoryTypeDevice || at.type == cudaMemoryTypeManaged ? at.device : -1;
}

// x (n) uint8 -> y (n) float as the policy was trained: x / 255 (pixels) or x (cast).
static void convert_u8(const cudarl_policy *p, const uint8_t *x, float *y, size_t n) {
    if (p->net.u8_scaled) p->ctx->ops->scale_u8(p->ctx, x, y, n);
    else p->ctx->ops->u8_to_float(p->ctx, x, y, n);
}

extern "C" int cr_policy_cuda_maps_obs(const cudarl_ctx *ctx) {
    int integrated = 0, can_map = 0, dev = ctx->device_index;
    cudaError_t e = cudaDeviceGetAttribute(&integrated, cudaDevAttrIntegrated, dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&can_map, cudaDevAttrCanMapHostMemory, dev);
    if (e != cudaSuccess) cudaGetLastError(); // no mapping then: the graphs copy
    return e == cudaSuccess && integrated && can_map;
}

// The pinned block (obs staging, then out staging) and where the graphs read observations.
static cudarl_status staging_alloc(cudarl_policy *p) {
    cr_policy_cuda *c = &p->cuda;
    size_t obs_bytes = (size_t)p->rows * p->obs_row_bytes;
    obs_bytes = (obs_bytes + CR_ARENA_ALIGN - 1) / CR_ARENA_ALIGN * CR_ARENA_ALIGN;
    c->pinned_bytes = obs_bytes + cr_policy_out_bytes(p, p->rows);
    cudaError_t e = cudaHostAlloc((void **)&c->pinned, c->pinned_bytes,
                                  p->maps_obs ? cudaHostAllocMapped : cudaHostAllocDefault);
    if (e != cudaSuccess) {
        c->pinned = NULL;
        return cuda_failed(p, "cudaHostAlloc (staging)", e);
    }
    memset(c->pinned, 0, c->pinned_bytes);
    c->stage_obs = c->pinned;
    c->stage_out = c->pinned + obs_bytes;
    c->in = p->obs_u8 ? p->obs_u8 : (unsigned char *)p->obs;
    if (p->maps_obs) {
        void *mapped = NULL;
        if ((e = cudaHostGetDevicePointer(&mapped, c->stage_obs, 0)) != cudaSuccess)
            return cuda_failed(p, "cudaHostGetDevicePointer (staging)", e);
        c->in = (unsigned char *)mapped;
    }
    return CUDARL_OK;
}

// Records the graph of `rows` rows (full: with the staging copies) into *exec.
static cudarl_status capture(cudarl_policy *p, int rows, int full, void **exec) {
    cudarl_ctx *ctx = p->ctx;
    cr_policy_cuda *c = &p->cuda;
    cudaStream_t st = cr_stream(ctx);
    CR_TRY(cr_cuda_graph_begin(ctx));
    cudaError_t e = cudaSuccess;
    if (full && !p->maps_obs)
        e = cudaMemcpyAsync(c->in, c->stage_obs, (size_t)rows * p->obs_row_bytes,
                            cudaMemcpyHostToDevice, st);
    if (e == cudaSuccess) {
        const void *x = c->in;
        if (p->net.obs_dtype == CUDARL_OBS_U8 && !p->net.is_conv) {
            convert_u8(p, c->in, p->obs, (size_t)rows * (size_t)p->net.obs_dim);
            x = p->obs;
        }
        cr_policy_forward(p, x, rows, 1);
        if (full)
            e = cudaMemcpyAsync(c->stage_out, p->out, cr_policy_out_bytes(p, rows),
                                cudaMemcpyDeviceToHost, st);
    }
    cudarl_status s = cr_cuda_graph_end(ctx, exec);
    if (e != cudaSuccess) {
        if (*exec) cudaGraphExecDestroy((cudaGraphExec_t)*exec);
        *exec = NULL;
        return cuda_failed(p, "cudaMemcpyAsync (graph capture)", e);
    }
    return s;
}

extern "C" void cr_policy_cuda_free(cudarl_policy *p) {
    cr_policy_cuda *c = &p->cuda;
    for (int k = 0; k < CR_POLICY_MAX_GRAPHS; k++) {
        if (c->full[k]) cudaGraphExecDestroy((cudaGraphExec_t)c->full[k]);
        if (c->compute[k]) cudaGraphExecDestroy((cudaGraphExec_t)c->compute[k]);
    }
    if (c->pinned) cudaFreeHost(c->pinned);
    memset(c, 0, sizeof *c);
}

// A conv net's forward of each batch size once, eagerly, on the (zeroed) input.
static cudarl_status conv_warm_up(cudarl_policy *p, int sizes) {
    if (!p->net.is_conv) return CUDARL_OK;
    for (int k = 0; k < sizes; k++) cr_policy_forward(p, p->cuda.in, 1 << k, 1);
    cudaError_t e = cudaStreamSynchronize(cr_stream(p->ctx));
    return e == cudaSuccess ? CUDARL_OK : cuda_failed(p, "the conv net's first forwards", e);
}

extern "C" cudarl_status cr_policy_cuda_init(cudarl_policy *p) {
    cr_policy_cuda *c = &p->cuda;
    cudarl_status s = staging_alloc(p);
    int sizes = 0;
    while ((1 << sizes) < p->rows) sizes++;
    sizes++;
    CUDARL_ASSERT(sizes <= CR_POLICY_MAX_GRAPHS);
    if (s == CUDARL_OK) s = conv_warm_up(p, sizes);
    for (int k = 0; k < sizes && s == CUDARL_OK; k++) {
        s = capture(p, 1 << k, 1, &c->full[k]);
        if (s == CUDARL_OK) s = capture(p, 1 << k, 0, &c->compute[k]);
    }
    // one launch of each, so that no act() pays for a graph's first upload
    cudaStream_t st = cr_stream(p->ctx);
    cudaError_t e = cudaSuccess;
    for (int k = 0; k < sizes && s == CUDARL_OK && e == cudaSuccess; k++) {
        e = cudaGraphLaunch((cudaGraphExec_t)c->full[k], st);
        if (e == cudaSuccess) e = cudaGraphLaunch((cudaGraphExec_t)c->compute[k], st);
    }
    if (s == CUDARL_OK && e == cudaSuccess) e = cudaStreamSynchronize(st);
    if (s == CUDARL_OK && e != cudaSuccess) s = cuda_failed(p, "the first launch of the graphs", e);
    if (s != CUDARL_OK) {
        cr_policy_cuda_free(p);
        return s;
    }
    c->graph_batches = sizes;
    return CUDARL_OK;
}

extern "C" cudarl_status cr_policy_cuda_act(cudarl_policy *p, const void *obs, int n,
                                            void *actions, float *values, float *logits) {
    cudarl_ctx *ctx = p->ctx;
    cr_policy_cuda *c = &p->cuda;
    // where each pointer lives: device (or managed) memory of this GPU, or host memory
    void *ptr[4] = {(void *)obs, actions, values, logits};
    static const char *const name[4] = {"obs", "actions", "values", "logits"};
    int on_dev[4] = {0, 0, 0, 0}, dev_out = 0, host_out = 0;
    for (int i = 0; i < 4; i++) {
        if (!ptr[i] || ptr[i] == (void *)c->stage_obs) continue; // the policy's own host buffer
        int d = cr_policy_pointer_device(ptr[i]);
        if (d >= 0 && d != ctx->device_index)
            return cr_fail(CUDARL_ERR_INVALID_ARG, "cudarl_policy_act: %s is memory of cuda:%d, "
                           "but this policy runs on cuda:%d; pass host memory or memory of "
                           "cuda:%d", name[i], d, ctx->device_index, ctx->device_index);
        on_dev[i] = d >= 0;
        if (i > 0) dev_out |= on_dev[i], host_out |= !on_dev[i];
    }
    int k = 0;
    while ((1 << k) < n) k++;
    int b = 1 << k;
    size_t row = p->obs_row_bytes;
    int full = !on_dev[0] && !dev_out;
    cudaStream_t st = cr_stream(ctx);
    cudaError_t e = cudaSuccess;
    if (!on_dev[0]) {
        if (p->net.obs_dtype == CUDARL_OBS_F32)
            CR_TRY(cr_policy_check_finite(p, (const float *)obs, n));
        if (obs != c->stage_obs) // else the caller wrote them there (cudarl_policy_obs_buffer)
            memcpy(c->stage_obs, obs, (size_t)n * row);
        memset(c->stage_obs + (size_t)n * row, 0, (size_t)(b - n) * row);
        if (!full && !p->maps_obs)
            e = cudaMemcpyAsync(c->in, c->stage_obs, (size_t)b * row, cudaMemcpyHostToDevice, st);
    } else {
        e = cudaMemcpyAsync(c->in, obs, (size_t)n * row, cudaMemcpyDefault, st);
        if (e == cudaSuccess && b > n)
            e = cudaMemsetAsync(c->in + (size_t)n * row, 0, (size_t)(b - n) * row, st);
    }
    if (e == cudaSuccess)
        e = cudaGraphLaunch((cudaGraphExec_t)(full ? c->full[k] : c->compute[k]), st);
    int32_t *da, *ha;
    float *dv, *dl, *hv, *hl;
    cr_policy_out_layout(p, p->out, b, &da, &dv, &dl);
    cr_policy_out_layout(p, c->stage_out, b, &ha, &hv, &hl);
    size_t A = (size_t)p->net.num_actions;
    if (e == cudaSuccess && !full && host_out)
        e = cudaMemcpyAsync(c->stage_out, p->out, cr_policy_out_bytes(p, b),
                            cudaMemcpyDeviceToHost, st);
    if (e == cudaSuccess && on_dev[1])
        e = cudaMemcpyAsync(actions, da, (size_t)n * cr_policy_action_bytes(p),
                            cudaMemcpyDefault, st);
    if (e == cudaSuccess && on_dev[2])
        e = cudaMemcpyAsync(values, dv, (size_t)n * sizeof *dv, cudaMemcpyDefault, st);
    if (e == cudaSuccess && on_dev[3])
        e = cudaMemcpyAsync(logits, dl, (size_t)n * A * sizeof *dl, cudaMemcpyDefault, st);
    if (e == cudaSuccess) e = cudaStreamSynchronize(st);
    if (e != cudaSuccess) {
        cudarl_status s = cuda_failed(p, "cudarl_policy_act", e);
        cudaStreamSynchronize(st); // nothing of this call may still run when the next one starts
        cudaGetLastError();
        return s;
    }
    ctx->host_syncs++;
    if (!on_dev[1]) memcpy(actions, ha, (size_t)n * cr_policy_action_bytes(p));
    if (values && !on_dev[2]) memcpy(values, hv, (size_t)n * sizeof *hv);
    if (logits && !on_dev[3]) memcpy(logits, hl, (size_t)n * A * sizeof *hl);
    return CUDARL_OK;
}

extern "C" cudarl_status cr_policy_cuda_time_forward(cudarl_policy *p, int n, int iters,
                                                     float *ms) {
    CUDARL_ASSERT(n >= 1 && n <= p->opt.max_batch && iters >= 1);
    int k = 0;
    while ((1 << k) < n) k++;
    cudaStream_t st = cr_stream(p->ctx);
    cudaEvent_t ev[2] = {NULL, NULL};
    cudaError_t e = cudaEventCreate(&ev[0]);
    if (e == cudaSuccess) e = cudaEventCreate(&ev[1]);
    for (int i = 0; i < iters && e == cudaSuccess; i++) {
        e = cudaEventRecord(ev[0], st);
        if (e == cudaSuccess) e = cudaGraphLaunch((cudaGraphExec_t)p->cuda.compute[k], st);
        if (e == cudaSuccess) e = cudaEventRecord(ev[1], st);
        if (e == cudaSuccess) e = cudaEventSynchronize(ev[1]);
        if (e == cudaSuccess) e = cudaEventElapsedTime(&ms[i], ev[0], ev[1]);
    }
    cudarl_status s = e == cudaSuccess ? CUDARL_OK : cuda_failed(p, "timing the forward graph", e);
    for (int i = 0; i < 2; i++)
        if (ev[i]) cudaEventDestroy(ev[i]);
    return s;
}

extern "C" size_t cr_policy_cuda_context_bytes(const cudarl_policy *p) {
    return cr_impl(p->ctx)->blas_workspace_bytes + sizeof(cr_cuda_scratch);
}
