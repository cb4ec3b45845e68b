/* The MLP checkpoints (PPO's actor-critic, DQN's Q-network): their tensors against the model
 * their metadata describes. */
#ifndef CUDARL_RUNTIME_MLP_CHECK_H
#define CUDARL_RUNTIME_MLP_CHECK_H

#include "io/checkpoint.h"

/* cr_checkpoint_check_header for `algo`, then refuses a convolutional network (metadata
 * "network": CUDARL_ERR_UNSUPPORTED, as this reader takes MLPs only) and any parameter tensor (or
 * Adam moment) whose dtype or shape is not the one the metadata describes. */
cudarl_status cr_checkpoint_check_format(const cr_st_file *f, const char *path, const char *algo);

#endif
