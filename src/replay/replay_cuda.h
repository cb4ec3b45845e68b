/* Replay buffer, CUDA twin of replay.h: the same storage layout (cr_replay_plan's items, in device
 * memory), the same validity rule, the same random-number positions and the same float
 * arithmetic, so a CPU and a GPU buffer fed the same steps hold the same bytes and draw the same
 * batches. Every call is enqueued on the context's stream, allocates nothing and never waits for
 * the host, so insert and sample can be captured into a CUDA graph. What the CPU twin reports as
 * a status after looking at buffer contents (nothing sampleable yet, a non-finite td error) the
 * device cannot return without a sync: it records an error bit instead, does nothing more (see
 * cr_replay_cuda_errors), and the host-checkable arguments still fail with a status at once.
 *
 * Memory: cr_replay_cuda_plan = cr_replay_plan (the same items, in the same order) + one scratch
 * item (the batch's slots, the leaves an insert touched, the uniform sampler's attempt count,
 * error bits). The rng stream (cr_rng_stream) given to the samplers lives in device memory; its
 * offset advances on the device exactly as the CPU twin advances it. */
#ifndef CUDARL_REPLAY_CUDA_H
#define CUDARL_REPLAY_CUDA_H

#include "replay/replay.h"

#ifdef __cplusplus
extern "C" {
#endif

#include "ops/backend.h" /* no extern "C" of its own */

/* Device-recorded errors (bits of cr_replay_cuda_errors). */
#define CR_REPLAY_CUDA_ERR_EMPTY 1u     /* a sampler ran with nothing sampleable: batch untouched */
#define CR_REPLAY_CUDA_ERR_NONFINITE 2u /* update_priorities saw a non-finite td: nothing changed */

typedef struct cr_replay_cuda {
    cr_replay rb;          /* every pointer is device memory (rb.state, rb.heads included) */
    int max_batch;         /* largest batch the samplers take (sizes the scratch) */
    int64_t *slots;        /* (max_batch) the drawn slots (device scratch) */
    int64_t *touched;      /* (E * 24) leaves an insert set, compacted (device scratch) */
    uint32_t *misc;        /* [0] most attempts of a uniform draw, [1] error bits, [2..3] the
                            * widest sampling window, [4] a fused sample's finished blocks,
                            * [5..8] an insert's finished blocks, running widest window and
                            * touched-leaf count (replay_cuda.cu) */
} cr_replay_cuda;

/* Appends cr_replay_plan(spec)'s items and then one scratch item ("replay.cuda_scratch") to plan;
 * max_batch in [1, 65535]. */
cudarl_status cr_replay_cuda_plan(const cr_replay_spec *spec, int max_batch, cr_plan *plan);
/* Points rb at the items of a device arena (ctx's backend) planned by cr_replay_cuda_plan from
 * first_item, and empties the buffer on ctx's stream (asynchronous; not for a graph). */
cudarl_status cr_replay_cuda_init(cudarl_ctx *ctx, cr_replay_cuda *rb, const cr_replay_spec *spec,
                                  int max_batch, const cr_arena *arena, int first_item);
/* cr_replay_insert on the device: obs (E, frame_elems), actions, rewards, terminated, truncated
 * (E each), final_obs (E, frame_elems) or NULL: all device memory. */
void cr_replay_cuda_insert(cudarl_ctx *ctx, cr_replay_cuda *rb, const void *obs,
                           const int32_t *actions, const float *rewards,
                           const uint8_t *terminated, const uint8_t *truncated,
                           const void *final_obs);
/* cr_replay_sample_uniform on the device: s (device) and every pointer of out (device). Returns
 * INVALID_ARG for batch outside [1, max_batch]; an empty buffer sets CR_REPLAY_CUDA_ERR_EMPTY. */
cudarl_status cr_replay_cuda_sample_uniform(cudarl_ctx *ctx, cr_replay_cuda *rb, cr_rng_stream *s,
                                            int batch, const cr_replay_batch *out);
/* cr_replay_sample_prioritized on the device (beta from step on the host, as the CPU). */
cudarl_status cr_replay_cuda_sample_prioritized(cudarl_ctx *ctx, cr_replay_cuda *rb,
                                                cr_rng_stream *s, int batch, int64_t step,
                                                const cr_replay_batch *out);
/* The same with the step read on the device when the sampler runs (step: device memory, e.g.
 * a trainer's step counter), beta = cr_replay_beta(spec, *step) computed there, bit for bit:
 * no host argument changes from call to call, so a CUDA graph can hold it. */
cudarl_status cr_replay_cuda_sample_prioritized_at(cudarl_ctx *ctx, cr_replay_cuda *rb,
                                                   cr_rng_stream *s, int batch,
                                                   const int64_t *step,
                                                   const cr_replay_batch *out);
/* cr_replay_update_priorities on the device: indices (n) and td_errors (n) device memory; a later
 * duplicate index wins, as in the CPU's loop. eps <= 0 or no tree: INVALID_ARG at once; a
 * non-finite td error sets CR_REPLAY_CUDA_ERR_NONFINITE and changes nothing. */
cudarl_status cr_replay_cuda_update_priorities(cudarl_ctx *ctx, cr_replay_cuda *rb,
                                               const int64_t *indices, const float *td_errors,
                                               int n, float eps);
/* Sets the widest sampling window the uniform sampler draws from (cr_replay_widest_window of the
 * heads) after the buffer's pieces were written into it from a checkpoint (enqueued). */
void cr_replay_cuda_set_window(cudarl_ctx *ctx, cr_replay_cuda *rb, int64_t wmax);
/* Waits for the stream, returns the error bits recorded since the last call and clears them. */
uint32_t cr_replay_cuda_errors(cudarl_ctx *ctx, cr_replay_cuda *rb);

#ifdef __cplusplus
}
#endif

#endif
