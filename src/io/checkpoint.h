/* What every cudarl checkpoint shares: its format tag and version, checked before trusting, and
 * the readers of its metadata values (one place, one message for each kind of bad value). */
#ifndef CUDARL_IO_CHECKPOINT_H
#define CUDARL_IO_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "io/safetensors.h"

#define CR_CHECKPOINT_FORMAT "cudarl-checkpoint"
#define CR_CHECKPOINT_VERSION 1

/* Refuses a file that is not a cudarl checkpoint of a version this build reads, or not of `algo`
 * ("ppo", "dqn"), with a message naming the file and what to do; then one that holds a NaN or
 * an inf (cr_checkpoint_check_finite). Every reader of a checkpoint (resume, eval, export, the
 * policy runtime) starts with this check. */
cudarl_status cr_checkpoint_check_header(const cr_st_file *f, const char *path, const char *algo);
/* Refuses a file with a NaN or an inf in any floating-point tensor (F16, BF16, F32, F64: the
 * weights, Adam's moments, the training state): CUDARL_ERR_NUMERIC naming the file, the tensor
 * and the element. A cudarl checkpoint holds finite numbers only. */
cudarl_status cr_checkpoint_check_finite(const cr_st_file *f, const char *path);
/* Whether a PPO checkpoint was trained with --separate-critic (metadata "separate_critic" other
 * than "0"; absent in files written before it existed: no). */
int cr_checkpoint_separate_critic(const cr_st_file *f);

/* Metadata `key` as an integer, a number, or a positive integer (1 .. 2^20) into *out; a missing
 * or malformed value is CUDARL_ERR_FORMAT naming the file and the key. */
cudarl_status cr_checkpoint_meta_ll(const cr_st_file *f, const char *path, const char *key,
                                    long long *out);
cudarl_status cr_checkpoint_meta_double(const cr_st_file *f, const char *path, const char *key,
                                        double *out);
cudarl_status cr_checkpoint_meta_int(const cr_st_file *f, const char *path, const char *key,
                                     int *out);

/* The precision a checkpoint was trained in (metadata "precision") into *out, which keeps its
 * value where the key is absent (a file from before --precision: the caller's default); a name
 * this build does not know is CUDARL_ERR_FORMAT naming it. */
cudarl_status cr_checkpoint_meta_precision(const cr_st_file *f, const char *path,
                                           cudarl_precision *out);
/* Refuses a resume in another precision than the file's (CUDARL_ERR_MISMATCH, naming the fix); a
 * file without the key counts as precision `absent`, or is refused where `absent` is -1. */
cudarl_status cr_checkpoint_check_precision(const cr_st_file *f, const char *path,
                                            cudarl_precision run, int absent);

/* "[d0, d1, ...]" of a tensor shape into b (cap bytes), for messages; returns b. */
const char *cr_checkpoint_shape_text(char *b, size_t cap, int ndim, const int64_t *shape);

/* Tensor `name` of f is there (else cr_st_find's error) and F32 of shape (ndim, shape); else
 * CUDARL_ERR_MISMATCH naming it, its dtype and shape, and what expects it (`expected`, e.g.
 * "this run's Q-network has"), as damage to the file. */
cudarl_status cr_checkpoint_expect_f32(const cr_st_file *f, const char *path, const char *name,
                                       int ndim, const int64_t *shape, const char *expected);

#endif
