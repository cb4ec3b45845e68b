/* Batched environments: the registry of envs and the interface the trainers use.
 *
 * Every env is a struct of its state plus one Philox stream per env (no globals), stepping N
 * envs at once into caller-owned slices. Same-step autoreset: when env i ends (terminated or
 * truncated), final_obs[i] receives the last observation of the episode and obs[i] the first
 * observation of the next one; terminated and truncated stay distinct.
 *
 * The registry (env.c) holds every env as a cudarl_env_def (cudarl.h): the built-ins, then the
 * envs users add with cudarl_env_register. Any def can be stepped on CPU threads by the pool
 * (env_pool.h). The batch below (cr_env_batch, with its CUDA twin) steps the envs whose
 * registry line names a batch twin (CR_ENV_BATCH), and cr_env_find answers only for those. */
#ifndef CUDARL_ENV_H
#define CUDARL_ENV_H

#include <stdint.h>

#include "core/core.h"
#include "env/cartpole/cartpole.h"
#include "env/classic/classic.h"
#include "ops/backend.h"

/* What an env has besides its def, as the registry records it (cr_env_info.caps):
 *   CR_ENV_BATCH       cr_env_batch steps it on the CPU: CartPole-v1 and the classic-control
 *                      envs (Acrobot-v1, MountainCar-v0, Pendulum-v1, MountainCarContinuous-v0)
 *   CR_ENV_BATCH_CUDA  ... and on a CUDA context, by the batch's CUDA twin: the same envs
 *   CR_ENV_IMAGE_TWIN  an image twin (image_twin.h) steps it on a CUDA context: the MinAtar
 *                      games and CartPolePixels-v1
 *   CR_ENV_RENDER      a renderer (render.h) draws it as an RGB image: every built-in env but
 *                      the MuJoCo robots
 * An env with neither (every env a user registers) steps on CPU threads (env_pool.h). */
enum {
    CR_ENV_BATCH = 1 << 0,
    CR_ENV_IMAGE_TWIN = 1 << 1,
    CR_ENV_BATCH_CUDA = 1 << 2,
    CR_ENV_RENDER = 1 << 3,
};
#define CR_ENV_CUDA_TWIN (CR_ENV_BATCH_CUDA | CR_ENV_IMAGE_TWIN)

typedef struct cr_env_batch_twin cr_env_batch_twin;
typedef struct cr_env_renderer cr_env_renderer;

/* What the trainers need to know of an env: derived from its def by the registry. */
typedef struct cr_env_info {
    const char *id;          /* "CartPole-v1" */
    int obs_dim;             /* elements per observation (the product of the def's obs_shape) */
    int num_actions;         /* discrete actions */
    int max_episode_steps;   /* truncation limit */
    double solved_return;    /* the conventional "solved" threshold of the mean return */
    const cudarl_env_def *def; /* the registered def it was derived from */
    int caps;                /* CR_ENV_* bits */
    int action_dim;          /* floats per continuous action; 0: discrete (num_actions) */
    const cr_env_batch_twin *batch; /* how cr_env_batch steps it: set with CR_ENV_BATCH */
    const cr_env_renderer *render;  /* how it is drawn (render.h): set with CR_ENV_RENDER */
} cr_env_info;

/* Bytes of one action of `def`: an int32, or action_dim floats. */
static inline size_t cr_env_def_action_bytes(const cudarl_env_def *def) {
    return def->action_dim > 0 ? (size_t)def->action_dim * sizeof(float) : sizeof(int32_t);
}

/* Clips a continuous action of `def` into its box: out[k] = min(max(a[k], low[k]), high[k]).
 * A NaN stays NaN. */
static inline void cr_env_clip_action(const cudarl_env_def *def, const float *a, float *out) {
    for (int k = 0; k < def->action_dim; k++) {
        float x = a[k], lo = def->action_low[k], hi = def->action_high[k];
        out[k] = x < lo ? lo : x > hi ? hi : x;
    }
}

/* The env named `id` that cr_env_batch can run (caps CR_ENV_BATCH), or NULL. Registered envs
 * without a batch twin are found by cr_env_info_find. */
const cr_env_info *cr_env_find(const char *id);

/* What the trainers need to know of any registered env named `id` (batched or not), or NULL. */
const cr_env_info *cr_env_info_find(const char *id);
/* The registered env named `id` (built-in or added by cudarl_env_register), or NULL. The def
 * lives in the registry's static storage for the life of the process. */
const cudarl_env_def *cr_env_def_find(const char *id);
/* CUDARL_ERR_UNSUPPORTED when `id` names a built-in env that this build was made without (one
 * of MuJoCo's tasks, without MuJoCo) and nothing registered it: the message, after `what`
 * ("--env-id "), says how to build it in. CUDARL_OK otherwise, registered or not: a lookup that
 * finds no env calls it before its own "unknown env" refusal. */
cudarl_status cr_env_check_built(const char *id, const char *what);
/* Checks every field of `def` as cudarl_env_register does (not the uniqueness of its id); the
 * message names the first bad field and the fix. */
cudarl_status cr_env_def_check(const cudarl_env_def *def);
/* Whether a run of `def` with num_envs envs in `groups` env groups (0: the trainer's choice) can
 * step it: a vector env (vec_step) needs exactly its vec_num_envs and one group; the message
 * names the flag (--num-envs, --env-groups) and the fix. */
cudarl_status cr_env_check_run(const cudarl_env_def *def, int num_envs, int groups);
/* Elements of one observation of `def`: the product of its obs_rank used dims. */
size_t cr_env_def_obs_elems(const cudarl_env_def *def);
/* Bytes of one observation of `def` (elements times the size of its dtype). */
size_t cr_env_def_obs_bytes(const cudarl_env_def *def);
/* Whether one env's state and its step count `elapsed` (steps into the episode, as the pool
 * counts them), read back from a checkpoint, are ones the env can go on from: 0 if so; 1 when
 * the state is not (the def's state_check, if it has one, says why); 2 when the step count is
 * below 0 or not below the def's time limit. What is wrong goes to why (cap bytes). */
int cr_env_check_state(const cudarl_env_def *def, const void *state, int32_t elapsed, char *why,
                       size_t cap);

/* CartPole-v1 as a def (cartpole_def.c): the per-env code of cartpole_step.h, so that a pool of
 * it steps bit for bit as cr_cartpole_step does for the same seed and actions. */
extern const cudarl_env_def cr_cartpole_def;

/* A batch of N envs whose state lives in the context's backend memory (device memory on
 * CUDA), stepped on the CPU or by the CUDA twin accordingly. All of its state is one block (mem,
 * bytes), the same bytes on either side: a copy of it is a checkpoint of the envs, which
 * cr_env_batch_check_state checks. */
typedef struct cr_env_batch {
    const cr_env_info *info;
    int num_envs;
    void *mem;            /* the block (cr_env_batch_bytes of backend memory) */
    size_t bytes;
    int64_t first;        /* the stream of env 0's seed (env i: first + i): 0, or a data-parallel
                           * rank's first env of the job (docs/multigpu.md) */
    cr_cartpole cartpole; /* CartPole-v1: its arrays in the block (PPO's fused rollout steps
                           * them); zero for other envs */
    cr_classic classic;   /* the classic-control envs: their arrays in the block */
} cr_env_batch;

/* How the batch runs one env (env_batch.c defines one per family of envs, and the registry's
 * line of each CR_ENV_BATCH env names it): the block's bytes and carving, reset and step on the
 * CPU and on a CUDA context (NULL in a build without CUDA), and the check of env i's state and
 * step count in a host copy of the block (0, or 1 or 2 as cr_env_check_state). */
struct cr_env_batch_twin {
    size_t (*bytes)(const cr_env_info *info, int n);
    void (*init)(cr_env_batch *b, void *mem);
    void (*reset)(cr_env_batch *b, uint64_t seed, float *obs);
    void (*step)(cr_env_batch *b, const void *actions, float *obs, float *reward,
                 uint8_t *terminated, uint8_t *truncated, uint8_t *done, float *final_obs);
    void (*cuda_reset)(cudarl_ctx *ctx, cr_env_batch *b, uint64_t seed, float *obs);
    void (*cuda_step)(cudarl_ctx *ctx, cr_env_batch *b, const void *actions, float *obs,
                      float *reward, uint8_t *terminated, uint8_t *truncated, uint8_t *done,
                      float *final_obs);
    int (*check_env)(const cr_env_batch *b, const void *block, int i, char *why, size_t cap);
    /* env di of dst = env si of src (both in host memory, batches of one env with any sizes) */
    void (*copy_env)(cr_env_batch *dst, int di, const cr_env_batch *src, int si);
};

/* The batch twins of env_batch.c: CartPole-v1's, and the classic-control envs' (one for all). */
extern const cr_env_batch_twin cr_cartpole_batch;
extern const cr_env_batch_twin cr_classic_batch;

/* Backend-memory bytes for n envs of `info` (an env with CR_ENV_BATCH). */
size_t cr_env_batch_bytes(const cr_env_info *info, int n);
/* Carves the batch out of `mem` (cr_env_batch_bytes, 64-byte aligned, backend memory). */
void cr_env_batch_init(cr_env_batch *b, const cr_env_info *info, int n, void *mem);
/* Seeds env i with stream i of `seed` and resets every env; obs (N, D) in backend memory. */
void cr_env_batch_reset(cudarl_ctx *ctx, cr_env_batch *b, uint64_t seed, float *obs);
/* Steps every env; all arrays in backend memory: actions int32 (N) for a discrete env, float
 * (N, action_dim) for a continuous one (clipped into the def's box before the env sees them, as
 * the pool does; the caller's array is not changed), obs (N, D), reward (N), terminated,
 * truncated, done = terminated | truncated (N), final_obs (N, D) (rows of envs that ended;
 * others untouched). A discrete action out of range is a bug in the policy: the CPU aborts
 * saying so, the CUDA twin traps. */
void cr_env_batch_step(cudarl_ctx *ctx, cr_env_batch *b, const void *actions, float *obs,
                       float *reward, uint8_t *terminated, uint8_t *truncated, uint8_t *done,
                       float *final_obs);
/* Checks every env's state and step count in `block`, a host copy of the batch's block
 * (b->bytes, as a checkpoint holds it): -1 when all pass; else the first bad env, with *bad = 1
 * (its state) or 2 (its step count) and what is wrong in why (cap bytes). Any build. */
/* Env di of dst = env si of src, its whole state (step count and RNG included): batches of one
 * env in host memory (the CPU twins'), of any sizes. Data parallel moves envs between a rank's
 * batch and the job's with it (algo/ppo/ppo_checkpoint.c). */
void cr_env_batch_copy_env(cr_env_batch *dst, int di, const cr_env_batch *src, int si);
int cr_env_batch_check_state(const cr_env_batch *b, const void *block, int *bad, char *why,
                             size_t cap);

#endif
