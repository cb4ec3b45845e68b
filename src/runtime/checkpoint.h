/* What every cudarl checkpoint shares: its format tag and version, checked before trusting. */
#ifndef CUDARL_RUNTIME_CHECKPOINT_H
#define CUDARL_RUNTIME_CHECKPOINT_H

#include "runtime/safetensors.h"

#define CR_CHECKPOINT_FORMAT "cudarl-checkpoint"
#define CR_CHECKPOINT_VERSION 1

/* Refuses a file that is not a cudarl checkpoint of a version this build reads, not of `algo`
 * ("ppo"), or of a convolutional network (metadata "network": CUDARL_ERR_UNSUPPORTED, as only
 * MLPs are read back for now), with a message naming the file and what to do. */
cudarl_status cr_checkpoint_check_format(const cr_st_file *f, const char *path, const char *algo);
/* The first part of cr_checkpoint_check_format: the format tag, its version and the algo only,
 * for readers of every network (the policy runtime reads the convolutional ones). */
cudarl_status cr_checkpoint_check_header(const cr_st_file *f, const char *path, const char *algo);
/* Whether a PPO checkpoint was trained with --separate-critic (metadata "separate_critic" other
 * than "0"; absent in files written before it existed: no). */
int cr_checkpoint_separate_critic(const cr_st_file *f);

#endif
