/* A replay buffer on a context, whichever its device: the CPU ring (replay.h) in host memory on
 * a CPU context, its CUDA twin (replay_cuda.h) in device memory on a CUDA one, with the same
 * transitions, samples and priorities for the same inputs. The trainers call this interface and
 * never ask which twin runs. Every pointer argument is backend memory of the context. */
#ifndef CUDARL_REPLAY_BUFFER_H
#define CUDARL_REPLAY_BUFFER_H

#include <stdint.h>

#include "ops/backend.h"
#include "replay/replay.h"
#include "replay/replay_cuda.h"

typedef struct cr_replay_buffer {
    cudarl_ctx *ctx;
    int on_device;      /* the CUDA twin (a CUDA context) */
    cr_replay cpu;      /* the CPU ring (a CPU context) */
    cr_replay_cuda gpu; /* the CUDA twin (a CUDA context) */
} cr_replay_buffer;

/* Adds the buffer's pieces for `spec` and batches of up to max_batch rows to plan, as the twin
 * of ctx lays them out (cr_replay_plan or cr_replay_cuda_plan). */
cudarl_status cr_replay_buffer_plan(const cudarl_ctx *ctx, const cr_replay_spec *spec,
                                    int max_batch, cr_plan *plan);
/* Points rb at the arena's pieces from first_item on (the plan above, in backend memory). */
cudarl_status cr_replay_buffer_init(cr_replay_buffer *rb, cudarl_ctx *ctx,
                                    const cr_replay_spec *spec, int max_batch,
                                    const cr_arena *arena, int first_item);
/* One transition of every env (cr_replay_insert's arguments). */
void cr_replay_buffer_insert(cr_replay_buffer *rb, const void *obs, const int32_t *actions,
                             const float *rewards, const uint8_t *terminated,
                             const uint8_t *truncated, const void *final_obs);
/* A minibatch of `batch` rows into out: uniform, or by priority with importance weights when
 * the spec is prioritized, beta at env step `step` (the CPU reads it; the CUDA twin reads the
 * same count from d_step, backend memory, so that a captured graph samples at every replay's
 * step). The CPU twin's errors come back as statuses; the CUDA twin's are error bits. */
cudarl_status cr_replay_buffer_sample(cr_replay_buffer *rb, cr_rng_stream *s, int batch,
                                      int64_t step, const int64_t *d_step,
                                      const cr_replay_batch *out);
/* Priorities of the sampled slots from their td errors (prioritized replay only). */
cudarl_status cr_replay_buffer_update_priorities(cr_replay_buffer *rb, const int64_t *indices,
                                                 const float *td_errors, int n, float eps);
/* The CUDA twin's error bits (backend memory: copy them with the metrics), or NULL where the twin
 * reports its errors as statuses (the CPU). */
const uint32_t *cr_replay_buffer_error_bits(const cr_replay_buffer *rb);
/* The status the error bits read back from cr_replay_buffer_error_bits stand for (CUDARL_OK for
 * none), with the message that names the fix. */
cudarl_status cr_replay_buffer_error(uint32_t bits);

/* ---- checkpoints (replay.h's pieces) ------------------------------------------------------ */

/* The layout of the buffer's pieces (data NULL) into pieces (CR_REPLAY_PIECES); their count. */
int cr_replay_buffer_pieces(const cr_replay_buffer *rb, cr_replay_piece *pieces);
/* The buffer's state in host memory for a checkpoint, after the work enqueued so far: the pieces
 * (CR_REPLAY_PIECES, their count in *n) point into the buffer itself on a CPU context (nothing
 * is copied; valid until the buffer changes), or into one host block copied from the device on
 * a CUDA one (*block: malloc'd, the caller frees it; NULL on the CPU). */
cudarl_status cr_replay_buffer_save(cr_replay_buffer *rb, cr_replay_piece *pieces, int *n,
                                    void **block);
/* Checks pieces read from a checkpoint (host; cr_replay_check_pieces with the env steps each env
 * took and the actions' count) and, when they pass, writes them into the buffer and rebuilds
 * what follows from them: the sum tree's inner nodes and, on CUDA, the twin's widest window.
 * A bad piece is CUDARL_ERR_FORMAT with *bad_piece its index and what is wrong in why (cap
 * bytes), nothing written; out of host memory (CUDA: the tree is built on the host) _OUT_OF_MEMORY. */
cudarl_status cr_replay_buffer_restore(cr_replay_buffer *rb, const cr_replay_piece *pieces,
                                       int64_t steps, int num_actions, int *bad_piece, char *why,
                                       size_t cap);

#endif
