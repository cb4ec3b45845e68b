/* What evaluation (eval.c) shares with the video recorder (record.c). */
#ifndef CUDARL_ALGO_EVAL_H
#define CUDARL_ALGO_EVAL_H

#include "core/core.h"

/* The registered env a loaded policy names, into *def (NULL when none is), and whether the
 * policy's network fits it (observations, dtype, actions); the refusal names the checkpoint at
 * `path` and the fix. */
cudarl_status cr_eval_policy_env(const char *path, const cudarl_policy *pol,
                                 const cudarl_env_def **def);

#endif
