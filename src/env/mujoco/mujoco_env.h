/* Gymnasium's MuJoCo tasks (HalfCheetah-v5, Hopper-v5, Walker2d-v5, Ant-v5) as cudarl_env_defs
 * stepped on the env pool's threads, with Gymnasium's models, observations, rewards, healthy
 * checks, frame skips and reset noise (docs/mujoco.md). The registry (env.c) registers
 * cr_mujoco_defs; a build without MuJoCo (cmake/mujoco.cmake) has none of them and refuses
 * their ids saying how to build them in. No MuJoCo type appears here: the registry and the
 * tests include this header in either build. */
#ifndef CUDARL_ENV_MUJOCO_H
#define CUDARL_ENV_MUJOCO_H

#include <stdint.h>

#include "cudarl.h"

/* The tasks' ids, in the order of cr_mujoco_defs. */
#define CR_MUJOCO_IDS "HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Ant-v5"
#define CR_MUJOCO_TASKS 4

/* The tasks this build has, NULL-terminated: the four, or none in a build without MuJoCo. */
extern const cudarl_env_def *const cr_mujoco_defs[];

/* 1 when `id` names one of the tasks and this build has no MuJoCo, else 0. */
int cr_mujoco_left_out(const char *id);

/* ---- for tests, in builds with MuJoCo ------------------------------------------------- */

/* What an env's state holds of MuJoCo's (pointers into the state). */
typedef struct cr_mujoco_view {
    int nq, nv;
    double time;
    const double *qpos;  /* (nq) */
    const double *qvel;  /* (nv) */
    const double *warm;  /* (nv) the solver's warm start */
    const double *qpos0; /* (nq) the model's qpos0, Gymnasium's init_qpos */
    double noise;        /* the task's reset_noise_scale */
    int qvel_normal;     /* 1: reset qvel = noise * N(0, 1); 0: U(-noise, noise) */
} cr_mujoco_view;

/* The MuJoCo state inside `state`, an env of any of the tasks, seeded (the model is loaded). */
void cr_mujoco_view_state(const void *state, cr_mujoco_view *view);
/* Starts an episode of a seeded env at qpos (nq) and qvel (nv) instead of drawing them, as
 * Gymnasium's reset does once it has drawn them (mj_resetData, then set_state), and writes
 * the first observation. The env's RNG is not touched. */
void cr_mujoco_start_at(void *state, const double *qpos, const double *qvel, void *obs);
/* MuJoCo's version string as the linked library reports it ("3.3.7"). */
const char *cr_mujoco_version(void);

#endif
