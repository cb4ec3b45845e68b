// The CUDA side of the frames (runtime/frames.h): a CUDA policy's ticks on its GPU.
//
// At create: one device arena (two staging sets, each camera's staging in each; the cameras'
// descriptions; the stacks as rings; a batch and a tick state per slot), one pinned block (a
// tick state and an out block per slot, two bounce buffers), a copy stream, per slot the events
// `early`, `uploaded` and `done`, one event per bounce buffer, and per slot two CUDA graphs of
// a tick's device work, captured on the policy's own stream (the compute stream: its cuBLAS
// handle is bound to it). `graph[s]`, for a tick that uploads:
//   the slot's tick state (pinned) -> its state on the device;
//   (two cameras or more) wait for the slot's `early` (an external event of the copy stream:
//     the copies of every camera but the last are done), then the frames' kernel for cameras
//     0..n-2;
//   wait for the slot's `uploaded` (every copy is done), then the frames' kernel for the last
//     camera (one camera: for it). The kernel (cr_cuda_frames_tick): each frame converted,
//     cropped and resized (ops/frames.h's arithmetic) into its ring slot, the older frames from
//     the ring beside it, into the camera's row of the slot's batch and of the policy's graph
//     input, the input's rows past num_cameras zeroed (as act() does with device observations);
//   the policy's forward (cr_policy_forward, as its own graphs run it), its out block -> the
//     slot's pinned out block.
// `direct[s]`, for a tick whose frames are all read in place: the state, the kernel for every
// camera, the forward, the out block; no waits (nothing to wait for), one launch.
// A submit classifies each camera's frame by its CUDA attributes (cudaPointerGetAttributes once
// a pointer: a table of the handle remembers the pointers seen; see `pointer_attributes`):
// device or managed memory of the policy's GPU is read in place; on an integrated GPU (the
// policy's maps_obs) pinned host memory is read in place at its mapped address; other pinned
// memory is copied to the camera's staging of the slot by cudaMemcpyAsync on the copy stream;
// pageable memory goes up in chunks through the two pinned bounce buffers, the host filling one
// while the copy stream empties the other (an event each). Only the bytes a conversion reads are
// copied (cr_frame_read_ranges: the crop's rows; NV12 into gray, the Y plane alone, 2/3 of a
// frame). `early` is recorded before the last camera's copies, `uploaded` after them, the graph
// launched once every copy is enqueued and `done` recorded after it; the wait synchronises with
// `done` and copies the outputs out of the slot's pinned block; nothing is allocated.
//
// Why two launches, not one a camera: after the last byte lands the tick still converts, runs the
// forward and copies the outputs back, and that, not the copy, is what a pinned tick adds to the
// copy floor. The first cameras' conversions run under the last camera's copy (0.23 ms for a 4K
// NV12 frame at 54 GB/s, far longer than they take), leaving one camera's conversion and the
// forward after it; a launch and a wait more a camera would buy nothing more, since each camera
// but the last is converted long before the last copy ends. Where nothing is copied the early
// launch would only add a launch and a wait: hence `direct`.
//
// Across ticks (cudarl_frames_submit / _wait): tick t+1's copies run on the copy stream into the
// other staging set while tick t's graph runs on the compute stream, which orders the ticks'
// graphs, and so their stack updates, as the ticks were submitted. A slot's staging set, tick
// state, batch, out block and events are touched again only by the submit two ticks later,
// which the frames allow only after the wait for this tick (its `done`) has returned. The two
// bounce buffers are shared by the slots: the copy stream runs the ticks' copies in order and
// each buffer's event says when it may be written again, so a second pair would hold the same
// bytes at other addresses and buy nothing.
#include <string.h>

#include "ops/cuda/cuda_common.cuh"
#include "ops/cuda/frames_cuda.h"
// actor_critic.h and qnet.h (included by policy.h) have no extern "C" of their own.
extern "C" {
#include "runtime/frames.h"
}

#define STAGING_ALIGN 256 // each camera's staging starts on a 256-byte line

enum { SRC_DEVICE, SRC_MAPPED, SRC_PINNED, SRC_PAGEABLE };

static cudarl_status cuda_failed(const cudarl_frames *f, const char *what, cudaError_t e) {
    cudaGetLastError(); // clear a non-sticky error so that later calls start clean
    return cr_fail(e == cudaErrorMemoryAllocation ? CUDARL_ERR_OUT_OF_MEMORY : CUDARL_ERR_CUDA,
                   "frames on cuda:%d: %s failed: %s", f->policy->ctx->device_index, what,
                   cudaGetErrorString(e));
}

static size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// Records slot `slot`'s tick into *graph: with uploads (graph[slot]) or, `direct`, for frames
// all read in place (direct[slot]). The file's comment says what each holds.
static cudarl_status capture(cudarl_frames *f, int slot, int direct, void **graph) {
    cudarl_policy *p = f->policy;
    cudarl_ctx *ctx = p->ctx;
    cr_frames_cuda *c = &f->cuda;
    cudaStream_t st = cr_stream(ctx);
    const cr_frames_tick_state *state = (const cr_frames_tick_state *)c->state_dev[slot];
    const int n = f->num_cameras, split = !direct && n > 1;
    uint8_t *batch = c->batch[slot];
    CR_TRY(cr_cuda_graph_begin(ctx));
    cudaError_t e = cudaMemcpyAsync(c->state_dev[slot], c->state_host[slot], c->state_bytes,
                                    cudaMemcpyHostToDevice, st);
    if (e == cudaSuccess && split) // cameras 0..n-2 under the last camera's copy
        e = cudaStreamWaitEvent(st, (cudaEvent_t)c->early[slot], cudaEventWaitExternal);
    if (e == cudaSuccess && split)
        cr_cuda_frames_tick(ctx, state, c->cams, c->max_blocks, 0, n - 1, n, c->rows, f->depth,
                            f->slot_bytes, c->rings, batch, p->cuda.in);
    if (e == cudaSuccess && !direct)
        e = cudaStreamWaitEvent(st, (cudaEvent_t)c->uploaded[slot], cudaEventWaitExternal);
    if (e == cudaSuccess) {
        cr_cuda_frames_tick(ctx, state, c->cams, c->max_blocks, split ? n - 1 : 0, split ? 1 : n,
                            n, c->rows, f->depth, f->slot_bytes, c->rings, batch, p->cuda.in);
        cr_policy_forward(p, p->cuda.in, c->rows, 1);
        e = cudaMemcpyAsync(c->out[slot], p->out, cr_policy_out_bytes(p, c->rows),
                            cudaMemcpyDeviceToHost, st);
    }
    cudarl_status s = cr_cuda_graph_end(ctx, graph);
    if (e != cudaSuccess) {
        if (*graph) cudaGraphExecDestroy((cudaGraphExec_t)*graph);
        *graph = NULL;
        return cuda_failed(f, "capturing the tick's graph", e);
    }
    return s;
}

// The pinned block: a tick state and an out block of c->rows rows a slot, two bounce buffers.
static cudarl_status pinned_alloc(cudarl_frames *f, size_t largest_frame) {
    cr_frames_cuda *c = &f->cuda;
    const size_t state = align_up(c->state_bytes, CR_ARENA_ALIGN);
    const size_t out = align_up(cr_policy_out_bytes(f->policy, c->rows), CR_ARENA_ALIGN);
    c->bounce_bytes = largest_frame < CR_FRAMES_BOUNCE_MAX ? largest_frame : CR_FRAMES_BOUNCE_MAX;
    c->bounce_bytes = align_up(c->bounce_bytes, CR_ARENA_ALIGN);
    c->pinned_bytes = CR_FRAMES_SLOTS * (state + out) + 2 * c->bounce_bytes;
    cudaError_t e = cudaHostAlloc((void **)&c->pinned, c->pinned_bytes, cudaHostAllocDefault);
    if (e != cudaSuccess) {
        c->pinned = NULL;
        return cuda_failed(f, "cudaHostAlloc (the tick states, outputs and bounce buffers)", e);
    }
    memset(c->pinned, 0, c->pinned_bytes);
    unsigned char *at = c->pinned;
    for (int s = 0; s < CR_FRAMES_SLOTS; s++) {
        c->state_host[s] = at;
        c->out[s] = at + state;
        at += state + out;
    }
    c->bounce[0] = at;
    c->bounce[1] = at + c->bounce_bytes;
    return CUDARL_OK;
}

// The device arena: the staging sets (each camera's, on 256-byte lines), the cameras'
// descriptions, rings, a batch and a tick state a slot.
static cudarl_status device_alloc(cudarl_frames *f, size_t *largest_frame) {
    cudarl_ctx *ctx = f->policy->ctx;
    cr_frames_cuda *c = &f->cuda;
    const int n = f->num_cameras;
    size_t staging = 0, largest = 0;
    for (int i = 0; i < n; i++) {
        c->frame_bytes[i] = cr_frame_bytes(&f->geom[i]);
        staging += align_up(c->frame_bytes[i], STAGING_ALIGN);
        largest = c->frame_bytes[i] > largest ? c->frame_bytes[i] : largest;
    }
    *largest_frame = largest;
    c->state_bytes = sizeof(cr_frames_tick_state) + (size_t)n * sizeof(const uint8_t *);
    cr_plan pl;
    cr_plan_init(&pl);
    const int a_staging = cr_plan_add(&pl, "frame staging (2 sets)", CR_FRAMES_SLOTS * staging);
    const int a_cams = cr_plan_add(&pl, "cameras", (size_t)n * sizeof(cr_frames_camera));
    const int a_rings = cr_plan_add(&pl, "stacks", (size_t)n * (size_t)f->depth * f->slot_bytes);
    int a_batch[CR_FRAMES_SLOTS], a_state[CR_FRAMES_SLOTS];
    for (int s = 0; s < CR_FRAMES_SLOTS; s++) {
        a_batch[s] = cr_plan_add(&pl, "batch", (size_t)n * f->row_bytes);
        a_state[s] = cr_plan_add(&pl, "tick state", c->state_bytes);
    }
    CR_TRY(ctx->ops->arena_alloc(ctx, &c->dev, &pl));
    uint8_t *at = (uint8_t *)cr_arena_get(&c->dev, a_staging);
    for (int s = 0; s < CR_FRAMES_SLOTS; s++)
        for (int i = 0; i < n; i++) {
            c->staging[(size_t)s * (size_t)n + (size_t)i] = at;
            at += align_up(c->frame_bytes[i], STAGING_ALIGN);
        }
    c->cams = (cr_frames_camera *)cr_arena_get(&c->dev, a_cams);
    c->rings = (uint8_t *)cr_arena_get(&c->dev, a_rings);
    for (int s = 0; s < CR_FRAMES_SLOTS; s++) {
        c->batch[s] = (uint8_t *)cr_arena_get(&c->dev, a_batch[s]);
        c->state_dev[s] = cr_arena_get(&c->dev, a_state[s]);
    }
    CR_DEBUG("frames: device arena %zu bytes (staging 2 x %zu)", pl.total, staging);
    return CUDARL_OK;
}

static cudarl_status streams_create(cudarl_frames *f) {
    cr_frames_cuda *c = &f->cuda;
    cudaError_t e = cudaStreamCreateWithFlags((cudaStream_t *)&c->copy, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        c->copy = NULL;
        return cuda_failed(f, "cudaStreamCreateWithFlags (the copy stream)", e);
    }
    void **ev[3 * CR_FRAMES_SLOTS + 2] = {&c->bounced[0], &c->bounced[1]};
    for (int s = 0; s < CR_FRAMES_SLOTS; s++) {
        ev[2 + 3 * s] = &c->uploaded[s];
        ev[3 + 3 * s] = &c->early[s];
        ev[4 + 3 * s] = &c->done[s];
    }
    for (int i = 0; i < 3 * CR_FRAMES_SLOTS + 2; i++) {
        e = cudaEventCreateWithFlags((cudaEvent_t *)ev[i], cudaEventDisableTiming);
        if (e != cudaSuccess) {
            *ev[i] = NULL;
            return cuda_failed(f, "cudaEventCreateWithFlags", e);
        }
    }
    return CUDARL_OK;
}

// The cameras' descriptions into the device arena (after its zeroing, before the capture).
static cudarl_status cameras_write(cudarl_frames *f) {
    cr_frames_cuda *c = &f->cuda;
    c->max_blocks = 0;
    for (int i = 0; i < f->num_cameras; i++) {
        cr_frames_camera d;
        cr_cuda_frames_camera_init(&f->geom[i], &d);
        c->max_blocks = d.blocks > c->max_blocks ? d.blocks : c->max_blocks;
        cudaError_t e = cudaMemcpy(c->cams + i, &d, sizeof d, cudaMemcpyHostToDevice);
        if (e != cudaSuccess) return cuda_failed(f, "writing the cameras' descriptions", e);
    }
    return CUDARL_OK;
}

extern "C" void cr_frames_cuda_free(cudarl_frames *f) {
    cr_frames_cuda *c = &f->cuda;
    cudarl_ctx *ctx = f->policy->ctx;
    if (c->copy) cudaStreamSynchronize((cudaStream_t)c->copy);
    cudaStreamSynchronize(cr_stream(ctx)); // ticks in flight end here
    cudaGetLastError();
    for (int s = 0; s < CR_FRAMES_SLOTS; s++) {
        if (c->graph[s]) cudaGraphExecDestroy((cudaGraphExec_t)c->graph[s]);
        if (c->direct[s]) cudaGraphExecDestroy((cudaGraphExec_t)c->direct[s]);
        if (c->uploaded[s]) cudaEventDestroy((cudaEvent_t)c->uploaded[s]);
        if (c->early[s]) cudaEventDestroy((cudaEvent_t)c->early[s]);
        if (c->done[s]) cudaEventDestroy((cudaEvent_t)c->done[s]);
    }
    for (int j = 0; j < 2; j++)
        if (c->bounced[j]) cudaEventDestroy((cudaEvent_t)c->bounced[j]);
    if (c->copy) cudaStreamDestroy((cudaStream_t)c->copy);
    if (c->pinned) cudaFreeHost(c->pinned);
    if (c->dev.base) ctx->ops->arena_free(ctx, &c->dev);
    uint8_t **staging = c->staging;
    size_t *frame_bytes = c->frame_bytes;
    int *source = c->source;
    cr_frames_ptr *ptrs = c->ptrs;
    const int ptr_cap = c->ptr_cap;
    memset(c, 0, sizeof *c);
    c->staging = staging, c->frame_bytes = frame_bytes, c->source = source;
    c->ptrs = ptrs, c->ptr_cap = ptr_cap; // host arena arrays: the handle's
}

// Each slot's state: fill, newest 0, the frames from the slot's staging set.
static void states_init(cudarl_frames *f) {
    cr_frames_cuda *c = &f->cuda;
    for (int s = 0; s < CR_FRAMES_SLOTS; s++) {
        cr_frames_tick_state *st = (cr_frames_tick_state *)c->state_host[s];
        st->newest = 0, st->fill = 1;
        const uint8_t **src = (const uint8_t **)(void *)(st + 1);
        for (int i = 0; i < f->num_cameras; i++)
            src[i] = c->staging[(size_t)s * (size_t)f->num_cameras + (size_t)i];
    }
}

extern "C" cudarl_status cr_frames_cuda_init(cudarl_frames *f) {
    cudarl_policy *p = f->policy;
    cr_frames_cuda *c = &f->cuda;
    c->rows = 1;
    while (c->rows < f->num_cameras) c->rows <<= 1;
    CUDARL_ASSERT(c->rows <= p->rows);
    c->maps_host = p->maps_obs;
    size_t largest = 0;
    cudarl_status s = device_alloc(f, &largest);
    if (s == CUDARL_OK) s = pinned_alloc(f, largest);
    if (s == CUDARL_OK) s = streams_create(f);
    if (s == CUDARL_OK) {
        states_init(f);
        // the arena's zeroing is queued on the policy's stream: done before the capture
        cudaError_t e = cudaStreamSynchronize(cr_stream(p->ctx));
        s = e == cudaSuccess ? cameras_write(f) : cuda_failed(f, "zeroing the device arena", e);
    }
    for (int k = 0; k < 2 * CR_FRAMES_SLOTS && s == CUDARL_OK; k++)
        s = capture(f, k / 2, k % 2, k % 2 ? &c->direct[k / 2] : &c->graph[k / 2]);
    // one launch of each, so that no tick pays for a graph's first upload (the events are
    // recorded on the idle copy stream first: complete, they are waited for at once)
    cudaStream_t st = cr_stream(p->ctx);
    for (int k = 0; k < 2 * CR_FRAMES_SLOTS && s == CUDARL_OK; k++) {
        cudaError_t e = cudaEventRecord((cudaEvent_t)c->early[k / 2], (cudaStream_t)c->copy);
        if (e == cudaSuccess)
            e = cudaEventRecord((cudaEvent_t)c->uploaded[k / 2], (cudaStream_t)c->copy);
        if (e == cudaSuccess)
            e = cudaGraphLaunch((cudaGraphExec_t)(k % 2 ? c->direct[k / 2] : c->graph[k / 2]),
                                st);
        if (e == cudaSuccess) e = cudaEventRecord((cudaEvent_t)c->done[k / 2], st);
        if (e == cudaSuccess) e = cudaStreamSynchronize(st);
        if (e != cudaSuccess) s = cuda_failed(f, "the first launch of the tick's graphs", e);
    }
    if (s != CUDARL_OK) {
        cr_frames_cuda_free(f);
        return s;
    }
    CR_DEBUG("frames: tick graphs of %d camera(s) (one kernel of %u x %d blocks) into the "
             "policy's batch of %d, %d slots; pinned %zu bytes (bounce buffers 2 x %zu)",
             f->num_cameras, c->max_blocks, f->num_cameras, c->rows, CR_FRAMES_SLOTS,
             c->pinned_bytes, c->bounce_bytes);
    return CUDARL_OK;
}

// ---- the tick ---------------------------------------------------------------------------

// The CUDA attributes of ptr: kind (cudaMemoryType), device, device address. From the handle's
// table of the pointers seen, else cudaPointerGetAttributes, remembered (open addressing over
// ptr_cap slots, emptied when half full). A pointer's kind is looked up once while the frames
// live: an address can change kind only by being freed and allocated again as another kind of
// memory, and of those changes the table's answers stay right for all but pinned memory of an
// integrated GPU (read in place at its mapped address, so never remembered; a discrete GPU's
// pinned memory is copied with cudaMemcpyAsync, right for pageable memory too, pageable memory
// is staged, right for pinned memory too, and device and managed addresses are CUDA's own range
// of the address space, never a host allocation's). cudarl_frames_reset empties the table.
static void pointer_attributes(cr_frames_cuda *c, const void *ptr, cr_frames_ptr *out) {
    const uint64_t mask = (uint64_t)c->ptr_cap - 1;
    uint64_t h = ((uint64_t)(uintptr_t)ptr * 0x9E3779B97F4A7C15ull) >> 32;
    cr_frames_ptr *slot = NULL;
    for (int probe = 0; probe < c->ptr_cap; probe++, h++) {
        cr_frames_ptr *e = &c->ptrs[h & mask];
        if (e->ptr == ptr) {
            *out = *e;
            return;
        }
        if (!e->ptr) {
            slot = e;
            break;
        }
    }
    cudaPointerAttributes at;
    memset(&at, 0, sizeof at);
    if (cudaPointerGetAttributes(&at, ptr) != cudaSuccess) {
        cudaGetLastError(); // not known to CUDA: ordinary host memory
        at.type = cudaMemoryTypeUnregistered;
    }
    memset(out, 0, sizeof *out);
    out->ptr = ptr;
    out->type = (int)at.type;
    out->device = at.device;
    out->device_ptr = at.devicePointer;
    if (at.type == cudaMemoryTypeHost && c->maps_host) return; // read in place: not remembered
    if (!slot || 2 * (c->ptr_count + 1) > c->ptr_cap) { // full enough: start over
        memset(c->ptrs, 0, (size_t)c->ptr_cap * sizeof *c->ptrs);
        c->ptr_count = 0;
        h = ((uint64_t)(uintptr_t)ptr * 0x9E3779B97F4A7C15ull) >> 32;
        slot = &c->ptrs[h & mask];
    }
    *slot = *out;
    c->ptr_count++;
}

extern "C" void cr_frames_cuda_forget_pointers(cudarl_frames *f) {
    cr_frames_cuda *c = &f->cuda;
    if (c->ptrs) memset(c->ptrs, 0, (size_t)c->ptr_cap * sizeof *c->ptrs);
    c->ptr_count = 0;
}

static int is_device_memory(const cr_frames_ptr *a) {
    return a->type == (int)cudaMemoryTypeDevice || a->type == (int)cudaMemoryTypeManaged;
}

// Where camera i's frame lives: SRC_* into *source, and for memory read in place its device
// address into *in_place. Memory of another GPU is refused.
static cudarl_status classify(cudarl_frames *f, const char *where, int i, const void *frame,
                              int *source, const uint8_t **in_place) {
    const int dev = f->policy->ctx->device_index;
    cr_frames_ptr at;
    pointer_attributes(&f->cuda, frame, &at);
    *in_place = NULL;
    if (is_device_memory(&at)) {
        if (at.device != dev)
            return cr_fail(CUDARL_ERR_INVALID_ARG, "%s: camera_frames[%d] is memory of cuda:%d, "
                           "but the policy runs on cuda:%d; pass host memory or memory of "
                           "cuda:%d", where, i, at.device, dev, dev);
        *source = SRC_DEVICE;
        *in_place = (const uint8_t *)frame;
    } else if (at.type == (int)cudaMemoryTypeHost) {
        *source = f->cuda.maps_host && at.device_ptr ? SRC_MAPPED : SRC_PINNED;
        if (*source == SRC_MAPPED) *in_place = (const uint8_t *)at.device_ptr;
    } else {
        *source = SRC_PAGEABLE;
    }
    return CUDARL_OK;
}

// A pageable frame into the device through the bounce buffers, chunk by chunk; *next: the
// buffer the next chunk takes.
static cudaError_t upload_pageable(cr_frames_cuda *c, uint8_t *dst, const uint8_t *src,
                                   size_t bytes, int *next) {
    cudaStream_t cp = (cudaStream_t)c->copy;
    cudaError_t e = cudaSuccess;
    for (size_t at = 0; at < bytes && e == cudaSuccess; at += c->bounce_bytes) {
        const size_t k = bytes - at < c->bounce_bytes ? bytes - at : c->bounce_bytes;
        const int j = *next;
        *next ^= 1;
        e = cudaEventSynchronize((cudaEvent_t)c->bounced[j]); // its last copy has left
        if (e != cudaSuccess) break;
        memcpy(c->bounce[j], src + at, k);
        e = cudaMemcpyAsync(dst + at, c->bounce[j], k, cudaMemcpyHostToDevice, cp);
        if (e == cudaSuccess) e = cudaEventRecord((cudaEvent_t)c->bounced[j], cp);
    }
    return e;
}

extern "C" cudarl_status cr_frames_cuda_submit(cudarl_frames *f, const char *where, int slot,
                                               int newest, const void *const *frames) {
    cudarl_ctx *ctx = f->policy->ctx;
    cr_frames_cuda *c = &f->cuda;
    const int n = f->num_cameras;
    uint8_t *const *staging = c->staging + (size_t)slot * (size_t)n;
    // where every frame lives, before anything is enqueued
    cr_frames_tick_state *state = (cr_frames_tick_state *)c->state_host[slot];
    const uint8_t **src = (const uint8_t **)(void *)(state + 1);
    int copies = 0;
    for (int i = 0; i < n; i++) {
        const uint8_t *in_place;
        CR_TRY(classify(f, where, i, frames[i], &c->source[i], &in_place));
        src[i] = in_place ? in_place : staging[i];
        copies += !in_place;
    }
    state->newest = newest, state->fill = f->fill;
    // the copies, camera by camera, into the slot's staging set, then the event the graph waits
    // for; the graph; the slot's `done`
    cudaStream_t cp = (cudaStream_t)c->copy, st = cr_stream(ctx);
    cudaError_t e = cudaSuccess;
    int next = 0;
    for (int i = 0; i < n && copies && e == cudaSuccess; i++) {
        if (i == n - 1 && n > 1) e = cudaEventRecord((cudaEvent_t)c->early[slot], cp);
        if (e != cudaSuccess || (c->source[i] != SRC_PINNED && c->source[i] != SRC_PAGEABLE))
            continue;
        size_t off[2], len[2];
        const int ranges = cr_frame_read_ranges(&f->geom[i], off, len);
        const uint8_t *from = (const uint8_t *)frames[i];
        for (int r = 0; r < ranges && e == cudaSuccess; r++)
            e = c->source[i] == SRC_PINNED
                    ? cudaMemcpyAsync(staging[i] + off[r], from + off[r], len[r],
                                      cudaMemcpyHostToDevice, cp)
                    : upload_pageable(c, staging[i] + off[r], from + off[r], len[r], &next);
    }
    if (e == cudaSuccess && copies) e = cudaEventRecord((cudaEvent_t)c->uploaded[slot], cp);
    if (e == cudaSuccess)
        e = cudaGraphLaunch((cudaGraphExec_t)(copies ? c->graph[slot] : c->direct[slot]), st);
    if (e == cudaSuccess) e = cudaEventRecord((cudaEvent_t)c->done[slot], st);
    if (e != cudaSuccess) {
        cudarl_status s = cuda_failed(f, where, e);
        // nothing of this tick may still run when the next one starts
        cudaStreamSynchronize(cp);
        cudaStreamSynchronize(st);
        cudaGetLastError();
        return s;
    }
    return CUDARL_OK;
}

// Whether each output is device memory of the policy's GPU (on_dev; NULL outputs 0); memory of
// another GPU is refused.
static cudarl_status outputs_where(cudarl_frames *f, void *const out[3], int on_dev[3]) {
    static const char *const name[3] = {"actions", "values", "logits"};
    const int dev = f->policy->ctx->device_index;
    for (int k = 0; k < 3; k++) {
        on_dev[k] = 0;
        if (!out[k]) continue;
        cr_frames_ptr at;
        pointer_attributes(&f->cuda, out[k], &at);
        const int d = is_device_memory(&at) ? at.device : -1;
        if (d >= 0 && d != dev)
            return cr_fail(CUDARL_ERR_INVALID_ARG, "cudarl_frames_wait: %s is memory of cuda:%d, "
                           "but the policy runs on cuda:%d; pass host memory or memory of "
                           "cuda:%d", name[k], d, dev, dev);
        on_dev[k] = d >= 0;
    }
    return CUDARL_OK;
}

extern "C" cudarl_status cr_frames_cuda_outputs_check(cudarl_frames *f, const void *actions,
                                                      const float *values, const float *logits) {
    void *const out[3] = {(void *)actions, (void *)values, (void *)logits};
    int on_dev[3];
    return outputs_where(f, out, on_dev);
}

extern "C" cudarl_status cr_frames_cuda_wait(cudarl_frames *f, int slot, void *actions,
                                             float *values, float *logits) {
    cudarl_policy *p = f->policy;
    cr_frames_cuda *c = &f->cuda;
    const int n = f->num_cameras;
    void *const out[3] = {actions, values, logits};
    int on_dev[3];
    CR_TRY(outputs_where(f, out, on_dev));
    cudaError_t e = cudaEventSynchronize((cudaEvent_t)c->done[slot]);
    if (e != cudaSuccess) {
        cudarl_status s = cuda_failed(f, "cudarl_frames_wait", e);
        cudaStreamSynchronize((cudaStream_t)c->copy);
        cudaStreamSynchronize(cr_stream(p->ctx));
        cudaGetLastError();
        return s;
    }
    p->ctx->host_syncs++;
    c->last = slot;
    // the outputs from the slot's out block: the policy's own has since been the next tick's
    int32_t *ha;
    float *hv, *hl;
    cr_policy_out_layout(p, c->out[slot], c->rows, &ha, &hv, &hl);
    const size_t bytes[3] = {(size_t)n * cr_policy_action_bytes(p), (size_t)n * sizeof *hv,
                             (size_t)n * (size_t)p->net.num_actions * sizeof *hl};
    const void *from[3] = {ha, hv, hl};
    for (int k = 0; k < 3; k++) {
        if (!out[k]) continue;
        if (!on_dev[k]) {
            memcpy(out[k], from[k], bytes[k]);
            continue;
        }
        // pinned to device; cudaMemcpy waits for it, and the frames' streams are non-blocking
        e = cudaMemcpy(out[k], from[k], bytes[k], cudaMemcpyHostToDevice);
        if (e != cudaSuccess) return cuda_failed(f, "cudarl_frames_wait (device outputs)", e);
    }
    return CUDARL_OK;
}

extern "C" cudarl_status cr_frames_cuda_observations(const cudarl_frames *f, void *out) {
    cudaError_t e = cudaMemcpy(out, f->cuda.batch[f->cuda.last],
                               (size_t)f->num_cameras * f->row_bytes, cudaMemcpyDeviceToHost);
    return e == cudaSuccess ? CUDARL_OK : cuda_failed(f, "copying the observations to the host",
                                                      e);
}
