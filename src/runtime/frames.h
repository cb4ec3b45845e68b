/* The frames' handle (cudarl_frames in cudarl.h), shared by its CPU side (frames.c: checks,
 * create, the CPU tick) and its CUDA side (frames_cuda.cu: the device tick of a CUDA policy).
 *
 * Memory of one handle:
 *   host arena (one allocation): the handle, the cameras' geometry (num_cameras), the latency
 *     ring, the frame pointers of the two ticks that may be in flight (CR_FRAMES_SLOTS,
 *     num_cameras), the CUDA side's per-camera arrays (staging pointers, frame sources), and for
 *     a CPU policy the stacks (num_cameras, depth, channels, H, W) as rings whose slot `newest`
 *     holds the latest frame and the batch (num_cameras, C, H, W) act() reads;
 *   CUDA policy (cr_frames_cuda): one device arena (a staging set per tick in flight: each
 *     camera's staging; the cameras' descriptions, the stacks as rings, a batch and a tick state
 *     per tick in flight), one pinned host block (a tick state and an out block per tick in
 *     flight, two bounce buffers for pageable frames), a copy stream, events and the ticks'
 *     graphs; in the host arena the CUDA side's per-camera arrays and its table of the pointers
 *     seen (cr_frames_ptr).
 *
 * Ticks in flight (cudarl_frames_submit / _wait): tick k takes slot k mod CR_FRAMES_SLOTS, its
 * staging set, tick state, batch, out block and events; a slot is free again once the wait of
 * its tick has returned, so at most CR_FRAMES_SLOTS ticks are in flight. */
#ifndef CUDARL_RUNTIME_FRAMES_H
#define CUDARL_RUNTIME_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "ops/frames.h"
#include "runtime/latency.h"
#include "runtime/policy.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of one pageable-frame bounce buffer at most: a frame larger than this goes up in
 * chunks, the host's copy of chunk c+1 overlapping the device's of chunk c. */
#define CR_FRAMES_BOUNCE_MAX ((size_t)4 << 20)

/* Ticks in flight at most: tick t+1 uploads while tick t computes. */
#define CR_FRAMES_SLOTS 2

/* A pointer's CUDA attributes, as the CUDA tick remembers them (frames_cuda.cu). */
typedef struct cr_frames_ptr {
    const void *ptr;        /* NULL: an empty slot */
    void *device_ptr;       /* its device address (device, managed; mapped pinned memory) */
    int type;               /* cudaMemoryType */
    int device;
} cr_frames_ptr;

/* Slots of the table of pointers: a power of two of at least 16 x (cameras + 3 outputs), so
 * that it holds (at most half full) a capture ring of 8 buffers a camera (V4L2 and GStreamer
 * pools are 4 to 8) without being emptied and looked up again. */
static inline int cr_frames_ptr_cap(int num_cameras) {
    int cap = 64;
    while (cap < 16 * (num_cameras + 3)) cap <<= 1;
    return cap;
}

/* The CUDA side's state (frames_cuda.cu); zero for a CPU policy. Stream, event and graph
 * handles are cudaStream_t, cudaEvent_t, cudaGraphExec_t. */
typedef struct cr_frames_cuda {
    cr_arena dev;             /* the device arena */
    uint8_t **staging;        /* (host arena) (CR_FRAMES_SLOTS, num_cameras): camera i's frame on
                                 the device, one staging set a slot */
    size_t *frame_bytes;      /* (host arena) (num_cameras): cr_frame_bytes of each camera */
    int *source;              /* (host arena) (num_cameras): where this tick's frame lives */
    cr_frames_ptr *ptrs;      /* (host arena) (ptr_cap): the pointers seen, open addressing */
    int ptr_cap, ptr_count;
    struct cr_frames_camera *cams; /* (device) (num_cameras): what the tick's kernel reads */
    unsigned max_blocks;      /* the kernel grid's x: the most blocks of one camera */
    uint8_t *rings;           /* (device) (num_cameras, depth, slot_bytes) */
    uint8_t *batch[CR_FRAMES_SLOTS]; /* (device) (num_cameras, C, H, W): a slot's tick's
                                 observations */
    void *state_dev[CR_FRAMES_SLOTS]; /* (device) cr_frames_tick_state, then num_cameras
                                 pointers */
    unsigned char *pinned;    /* (host, pinned) the one cudaHostAlloc */
    size_t pinned_bytes;
    void *state_host[CR_FRAMES_SLOTS]; /* (host, pinned) what the slot's graph copies to its
                                 state_dev */
    size_t state_bytes;
    unsigned char *out[CR_FRAMES_SLOTS]; /* (host, pinned) the policy's out block of `rows` rows,
                                 as the slot's tick left it */
    unsigned char *bounce[2]; /* (host, pinned) bounce_bytes each */
    size_t bounce_bytes;
    int rows;                 /* the policy's graph batch: num_cameras up to a power of two */
    int maps_host;            /* an integrated GPU: pinned host frames are read in place */
    void *copy;               /* the copy stream (the compute stream is the policy's) */
    void *uploaded[CR_FRAMES_SLOTS]; /* events: the slot's tick's copies are done */
    void *early[CR_FRAMES_SLOTS]; /* events: its copies of every camera but the last are done */
    void *done[CR_FRAMES_SLOTS]; /* events: its device work and outputs are done */
    void *bounced[2];         /* events: bounce buffer j may be written again */
    void *graph[CR_FRAMES_SLOTS]; /* a tick's device work with uploads: state, the frames'
                                 kernel after `early` and after `uploaded`, the forward */
    void *direct[CR_FRAMES_SLOTS]; /* the same where every frame is read in place: state, one
                                 kernel for every camera, the forward */
    int last;                 /* the slot of the tick last waited for: its batch is the frames'
                                 observations */
} cr_frames_cuda;

struct cudarl_frames {
    cudarl_policy *policy;  /* the caller's */
    int num_cameras;
    int channels, depth;    /* per frame; frames a stack: C = depth x channels */
    int C, H, W;            /* the policy's observation */
    size_t slot_bytes;      /* one frame: channels x H x W */
    size_t row_bytes;       /* one observation: C x H x W */
    cr_frame_geom *geom;    /* (host) (num_cameras) */
    uint8_t *stacks;        /* (host) (num_cameras, depth, slot_bytes) rings; CPU policy only */
    uint8_t *batch;         /* (host) (num_cameras, C, H, W); CPU policy only */
    int newest;             /* the ring slot of the newest frame, the same for every camera */
    int fill;               /* the next tick fills each whole stack (after create and reset) */
    int acted;              /* a tick has acted: the batch holds its observations */
    int oldest, in_flight;  /* the slot of the oldest tick submitted and not waited for; how
                               many are (0..CR_FRAMES_SLOTS) */
    uint64_t submitted_ns[CR_FRAMES_SLOTS]; /* each slot's submit entry (cr_now_ns) */
    const void **slot_frames; /* (host) (CR_FRAMES_SLOTS, num_cameras): each slot's frames (a
                               CPU policy's tick runs in its wait) */
    int on_device;          /* a CUDA policy: the tick runs on its GPU (frames_cuda.cu) */
    int check_device_ptrs;  /* a CPU policy in a CUDA build with a GPU: refuse device frames */
    cr_latency lat;
    cr_frames_cuda cuda;
    cr_arena host;          /* this handle lives in it */
};

#ifdef CUDARL_WITH_CUDA
/* After the host arena: the device arena, the pinned block, the streams and events, the tick's
 * graph, and one launch of it. On failure frees what it made. */
cudarl_status cr_frames_cuda_init(cudarl_frames *f);
void cr_frames_cuda_free(cudarl_frames *f);
/* Starts the tick of slot `slot` on the device with ring slot `newest` (f->fill says whether it
 * fills the stacks), frames checked but for where the memory lives: each frame uploaded into
 * the slot's staging (host) or read in place (device, managed; mapped on an integrated GPU),
 * the slot's graph launched, its `done` recorded. A frame of another GPU is refused before
 * anything is enqueued; a CUDA failure leaves nothing of the tick running. */
cudarl_status cr_frames_cuda_submit(cudarl_frames *f, const char *where, int slot, int newest,
                                    const void *const *frames);
/* Outputs of the policy's GPU or host memory; another GPU's refused. */
cudarl_status cr_frames_cuda_outputs_check(cudarl_frames *f, const void *actions,
                                           const float *values, const float *logits);
/* Waits for slot `slot`'s tick and writes its outputs (checked, cr_frames_cuda_outputs_check
 * too); the slot is free again after it, whether the tick's device work succeeded or not. */
cudarl_status cr_frames_cuda_wait(cudarl_frames *f, int slot, void *actions, float *values,
                                  float *logits);
/* Empties the table of pointers seen (cudarl_frames_reset). */
void cr_frames_cuda_forget_pointers(cudarl_frames *f);
/* Copies the device batch of the tick last waited for (num_cameras rows) into out (host). */
cudarl_status cr_frames_cuda_observations(const cudarl_frames *f, void *out);
#endif

#ifdef __cplusplus
}
#endif
#endif
