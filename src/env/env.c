/* The registry of environments: the built-in defs, then the ones users register, each with the
 * cr_env_info the trainers read derived from it.
 *
 * Storage is static and sized up front (CUDARL_ENV_MAX entries): a registered def is copied into
 * a slot, its id into the slot's own buffer, and the names array points at those ids, so the
 * array cudarl_env_names returns stays valid and NULL-terminated as it grows. Registration is
 * serialised by a mutex; a lookup reads the count with acquire and never locks. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core/abi.h"
#include "env/env.h"
#include "env/mujoco/mujoco_env.h"
#include "env/render.h"

/* The built-in envs and their twins (env.h's CR_ENV_* bits), one line each: an env's folder
 * defines its cudarl_env_def, and its line here declares and registers it, with the batch twin
 * that runs it when it has CR_ENV_BATCH (env_batch.c) and the renderer that draws it when it
 * has CR_ENV_RENDER (render.h). Every env also steps on CPU threads
 * (env_pool.h). */
#define CR_BUILTIN_ENVS(X)                                                                 \
    X(cr_cartpole_def, CR_ENV_BATCH | CR_ENV_BATCH_CUDA | CR_ENV_RENDER, &cr_cartpole_batch,    \
      &cr_cartpole_renderer)                                                                 \
    X(cr_cartpole_pixels_def, CR_ENV_IMAGE_TWIN | CR_ENV_RENDER, NULL,                        \
      &cr_cartpole_pixels_renderer)                                                          \
    X(cr_minatar_breakout_def, CR_ENV_IMAGE_TWIN | CR_ENV_RENDER, NULL, &cr_minatar_renderer) \
    X(cr_minatar_asterix_def, CR_ENV_IMAGE_TWIN | CR_ENV_RENDER, NULL, &cr_minatar_renderer)  \
    X(cr_minatar_freeway_def, CR_ENV_IMAGE_TWIN | CR_ENV_RENDER, NULL, &cr_minatar_renderer)  \
    X(cr_minatar_seaquest_def, CR_ENV_IMAGE_TWIN | CR_ENV_RENDER, NULL, &cr_minatar_renderer) \
    X(cr_minatar_space_invaders_def, CR_ENV_IMAGE_TWIN | CR_ENV_RENDER, NULL,                 \
      &cr_minatar_renderer)                                                                  \
    X(cr_acrobot_def, CR_ENV_BATCH | CR_ENV_BATCH_CUDA | CR_ENV_RENDER, &cr_classic_batch,     \
      &cr_acrobot_renderer)                                                                  \
    X(cr_mountain_car_def, CR_ENV_BATCH | CR_ENV_BATCH_CUDA | CR_ENV_RENDER, &cr_classic_batch,\
      &cr_mountain_car_renderer)                                                             \
    X(cr_pendulum_def, CR_ENV_BATCH | CR_ENV_BATCH_CUDA | CR_ENV_RENDER, &cr_classic_batch,    \
      &cr_pendulum_renderer)                                                                 \
    X(cr_mountain_car_continuous_def, CR_ENV_BATCH | CR_ENV_BATCH_CUDA | CR_ENV_RENDER,        \
      &cr_classic_batch, &cr_mountain_car_continuous_renderer)

#define CR_DECLARE_BUILTIN(def, caps, batch, render) extern const cudarl_env_def def;
CR_BUILTIN_ENVS(CR_DECLARE_BUILTIN)

#define CR_LIST_BUILTIN(def, caps, batch, render) {&def, caps, batch, render},
static const struct {
    const cudarl_env_def *def;
    int caps;
    const cr_env_batch_twin *batch;
    const cr_env_renderer *render;
} builtins[] = {CR_BUILTIN_ENVS(CR_LIST_BUILTIN)};
#define NUM_BUILTINS ((int)(sizeof builtins / sizeof builtins[0]))

typedef struct env_entry {
    cudarl_env_def def;         /* a copy; def.id points at id below */
    char id[CUDARL_ENV_ID_MAX];
    cr_env_info info;
} env_entry;

static pthread_once_t registry_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER; /* serialises registering */
static atomic_int registry_count;                 /* entries published (release, when complete) */
static env_entry registry[CUDARL_ENV_MAX];
static const char *registry_names[CUDARL_ENV_MAX + 1]; /* entries' ids, then NULL (zero-filled) */

size_t cr_env_def_obs_elems(const cudarl_env_def *def) {
    size_t n = 1;
    for (int k = 0; k < def->obs_rank && k < 3; k++) n *= (size_t)def->obs_shape[k];
    return n;
}

size_t cr_env_def_obs_bytes(const cudarl_env_def *def) {
    return cr_env_def_obs_elems(def) * (def->obs_dtype == CUDARL_OBS_U8 ? 1 : sizeof(float));
}

int cr_env_check_state(const cudarl_env_def *def, const void *state, int32_t elapsed, char *why,
                       size_t cap) {
    int32_t limit = def->max_episode_steps > 0 ? def->max_episode_steps - 1 : INT32_MAX;
    if (elapsed < 0 || elapsed > limit) {
        snprintf(why, cap, "its step count is %d, expected 0..%d", (int)elapsed, (int)limit);
        return 2;
    }
    if (!def->state_check) return 0;
    char what[200] = "";
    if (!def->state_check(state, what, sizeof what)) return 0;
    what[sizeof what - 1] = 0; /* a user's check may leave it unterminated */
    snprintf(why, cap, "%s", what[0] ? what : "its state_check refused it without saying why");
    return 1;
}

/* Fills entry e from a def already checked: its copy of the def and the info derived from it,
 * with the batch twin that runs it (NULL: none). */
static void entry_fill(env_entry *e, const cudarl_env_def *def, int caps,
                       const cr_env_batch_twin *batch, const cr_env_renderer *render) {
    e->def = *def;
    e->def.struct_size = sizeof e->def; /* the built-ins' defs leave it 0 */
    snprintf(e->id, sizeof e->id, "%s", def->id);
    e->def.id = e->id;
    for (int k = def->obs_rank; k < 3; k++) e->def.obs_shape[k] = 1; /* 0 was allowed */
    e->info = (cr_env_info){.id = e->id,
                            .obs_dim = (int)cr_env_def_obs_elems(def),
                            .num_actions = def->num_actions,
                            .max_episode_steps = def->max_episode_steps,
                            .solved_return = def->solved_return,
                            .def = &e->def,
                            .caps = caps,
                            .action_dim = def->action_dim,
                            .batch = batch,
                            .render = render};
}

/* Fills the next entry from a def already checked, and publishes it. The caller holds the lock
 * (or runs the one-time init). */
static void registry_append(const cudarl_env_def *def, int caps,
                            const cr_env_batch_twin *batch, const cr_env_renderer *render) {
    int n = atomic_load_explicit(&registry_count, memory_order_relaxed);
    env_entry *e = &registry[n];
    entry_fill(e, def, caps, batch, render);
    registry_names[n] = e->id;
    atomic_store_explicit(&registry_count, n + 1, memory_order_release);
}

static void registry_init(void) {
    for (int i = 0; i < NUM_BUILTINS; i++) {
        CUDARL_ASSERT(cr_env_def_check(builtins[i].def) == CUDARL_OK); /* a built-in is valid */
        /* a line with CR_ENV_BATCH names its batch twin, and only such a line */
        CUDARL_ASSERT(!(builtins[i].caps & CR_ENV_BATCH) == !builtins[i].batch);
        /* and a line with CR_ENV_RENDER its renderer */
        CUDARL_ASSERT(!(builtins[i].caps & CR_ENV_RENDER) == !builtins[i].render);
        registry_append(builtins[i].def, builtins[i].caps, builtins[i].batch,
                        builtins[i].render);
    }
    for (const cudarl_env_def *const *d = cr_mujoco_defs; *d; d++) { /* those this build has */
        CUDARL_ASSERT(cr_env_def_check(*d) == CUDARL_OK);
        registry_append(*d, 0, NULL, NULL);
    }
}

static int registry_size(void) {
    pthread_once(&registry_once, registry_init);
    return atomic_load_explicit(&registry_count, memory_order_acquire);
}

static const env_entry *registry_lookup(const char *id) {
    int n = registry_size();
    if (!id) return NULL;
    for (int i = 0; i < n; i++)
        if (!strcmp(registry[i].id, id)) return &registry[i];
    return NULL;
}

const cr_env_info *cr_env_find(const char *id) {
    const env_entry *e = registry_lookup(id);
    return e && (e->info.caps & CR_ENV_BATCH) ? &e->info : NULL;
}

const cr_env_info *cr_env_info_find(const char *id) {
    const env_entry *e = registry_lookup(id);
    return e ? &e->info : NULL;
}

const cudarl_env_def *cr_env_def_find(const char *id) {
    const env_entry *e = registry_lookup(id);
    return e ? &e->def : NULL;
}

cudarl_status cr_env_check_built(const char *id, const char *what) {
    if (!id || !cr_mujoco_left_out(id) || cr_env_def_find(id)) return CUDARL_OK;
    return cr_fail(CUDARL_ERR_UNSUPPORTED, "%s'%s' needs MuJoCo, which this build of cudarl was "
                   "made without: pip install mujoco gymnasium, then reconfigure with "
                   "-DCUDARL_MUJOCO=ON and rebuild (docs/mujoco.md)", what, id);
}

const char *const *cudarl_env_names(void) {
    registry_size();
    return registry_names;
}

/* The id: 1 .. CUDARL_ENV_ID_MAX-1 printable characters without spaces (it is typed after
 * --env-id and stored in checkpoints). */
static cudarl_status check_id(const char *id) {
    CR_REQUIRE(id, "the env's id is NULL; give the env a name such as \"Chain-v0\"");
    size_t len = strnlen(id, CUDARL_ENV_ID_MAX);
    CR_REQUIRE(len > 0, "the env's id is empty; give the env a name such as \"Chain-v0\"");
    CR_REQUIRE(len < CUDARL_ENV_ID_MAX, "the env's id '%.16s...' is longer than %d characters; use "
               "a shorter name", id, CUDARL_ENV_ID_MAX - 1);
    for (const char *c = id; *c; c++)
        CR_REQUIRE(*c > ' ' && *c < 127, "the env's id '%s' contains character %d at position %d; "
                   "use printable ASCII without spaces (letters, digits, '-', '_', '.', '/')", id,
                   (unsigned char)*c, (int)(c - id));
    return CUDARL_OK;
}

/* obs_rank, obs_shape (used dims >= 1; unused ones 1, or 0 as a zero-filled initializer leaves
 * them, which the registry stores as 1) and obs_dtype; an observation's elements fit an int. */
static cudarl_status check_obs(const cudarl_env_def *d) {
    CR_REQUIRE(d->obs_rank == 1 || d->obs_rank == 3, "env '%s': obs_rank is %d; use 1 for a "
               "feature vector or 3 for an image (C, H, W)", d->id, d->obs_rank);
    int64_t elems = 1;
    for (int k = 0; k < 3; k++) {
        int dim = d->obs_shape[k];
        if (k < d->obs_rank) {
            CR_REQUIRE(dim >= 1,
                       "env '%s': obs_shape[%d] is %d; every dim of a rank-%d observation "
                       "must be >= 1", d->id, k, dim, d->obs_rank);
            elems *= dim;
            CR_REQUIRE(elems <= INT32_MAX, "env '%s': an observation of obs_shape (%d, %d, %d) has "
                       "more than %d elements; use a smaller one", d->id, d->obs_shape[0],
                       d->obs_shape[1], d->obs_shape[2], INT32_MAX);
        } else {
            CR_REQUIRE(dim == 1 || dim == 0, "env '%s': obs_shape[%d] is %d but obs_rank is %d; "
                       "set unused trailing dims to 1", d->id, k, dim, d->obs_rank);
        }
    }
    CR_REQUIRE(d->obs_dtype == CUDARL_OBS_F32 || d->obs_dtype == CUDARL_OBS_U8, "env '%s': "
               "obs_dtype is %d; use CUDARL_OBS_F32 or CUDARL_OBS_U8", d->id, (int)d->obs_dtype);
    return CUDARL_OK;
}

/* num_actions for discrete actions, or action_dim, the box and step_box for continuous ones. */
static cudarl_status check_actions(const cudarl_env_def *d) {
    if (d->action_dim == 0) {
        CR_REQUIRE(d->num_actions >= 1, "env '%s': num_actions is %d; a discrete env needs at "
                   "least 1 action (actions are 0 .. num_actions-1), a continuous one action_dim "
                   ">= 1", d->id, d->num_actions);
        CR_REQUIRE(!d->step_box, "env '%s': step_box is set but action_dim is 0; set action_dim "
                   "(floats per action) for a continuous env, or leave step_box NULL", d->id);
        return CUDARL_OK;
    }
    CR_REQUIRE(d->action_dim >= 1 && d->action_dim <= CUDARL_ACTION_DIM_MAX, "env '%s': "
               "action_dim is %d; use 1 .. %d floats per action", d->id, d->action_dim,
               CUDARL_ACTION_DIM_MAX);
    CR_REQUIRE(d->num_actions == 0, "env '%s': num_actions is %d with action_dim %d; a continuous "
               "env has no discrete actions: set num_actions 0", d->id, d->num_actions,
               d->action_dim);
    for (int k = 0; k < d->action_dim; k++)
        CR_REQUIRE(isfinite(d->action_low[k]) && isfinite(d->action_high[k]) &&
                   d->action_low[k] < d->action_high[k], "env '%s': action bounds [%g, %g] of "
                   "dim %d; give finite bounds with low < high", d->id, d->action_low[k],
                   d->action_high[k], k);
    if (d->vec_step || d->vec_reset) return CUDARL_OK;
    CR_REQUIRE(d->step_box && !d->step, "env '%s': a continuous env (action_dim %d) steps with "
               "step_box(state, const float *action, ...); set step_box and leave step NULL",
               d->id, d->action_dim);
    return CUDARL_OK;
}

/* A vector env's fields (cudarl_env_def: vec_*). */
static cudarl_status check_vec(const cudarl_env_def *d) {
    CR_REQUIRE(d->vec_reset && d->vec_step, "env '%s': a vector env needs both vec_reset and "
               "vec_step", d->id);
    CR_REQUIRE(!d->seed && !d->reset && !d->step && !d->step_box && d->state_bytes == 0,
               "env '%s': a vector env (vec_step set) steps as a whole; leave seed, reset, step, "
               "step_box NULL and state_bytes 0",
               d->id);
    CR_REQUIRE(d->vec_num_envs >= 1 && d->vec_num_envs <= (1 << 20), "env '%s': vec_num_envs is "
               "%d; give the vector env's size, 1 .. 1048576", d->id, d->vec_num_envs);
    CR_REQUIRE(d->max_episode_steps == 0, "env '%s': max_episode_steps is %d; a vector env keeps "
               "its own time limit: set 0", d->id, d->max_episode_steps);
    CR_REQUIRE(d->frame_stack <= 1, "env '%s': frame_stack is %d; a vector env's frames are not "
               "stored once: set 0", d->id, d->frame_stack);
    return CUDARL_OK;
}

cudarl_status cr_env_def_check(const cudarl_env_def *d) {
    CR_REQUIRE(d, "the def is NULL; pass a filled cudarl_env_def");
    CR_TRY(check_id(d->id));
    CR_TRY(check_obs(d));
    CR_TRY(check_actions(d));
    CR_REQUIRE(d->max_episode_steps >= 0, "env '%s': max_episode_steps is %d; use the time limit "
               "in steps, or 0 for none", d->id, d->max_episode_steps);
    CR_REQUIRE(isfinite(d->solved_return), "env '%s': solved_return is not finite; use the mean "
               "return over 100 episodes that counts as solved", d->id);
    if (d->vec_step || d->vec_reset) return check_vec(d);
    CR_REQUIRE(d->state_bytes > 0, "env '%s': state_bytes is 0; use the size of one env's state "
               "struct (sizeof)", d->id);
    CR_REQUIRE(d->state_bytes <= ((size_t)1 << 30), "env '%s': state_bytes is %zu, more than 1 GiB "
               "per env; keep large read-only data outside the state", d->id, d->state_bytes);
    CR_REQUIRE(d->seed, "env '%s': seed is NULL; give a function that seeds the RNG inside one "
               "env's state", d->id);
    CR_REQUIRE(d->reset, "env '%s': reset is NULL; give a function that starts an episode and "
               "writes its first observation", d->id);
    CR_REQUIRE(d->step || d->action_dim > 0, "env '%s': step is NULL; give a function that "
               "takes an action and writes the next observation, reward and terminated", d->id);
    CR_REQUIRE(d->frame_stack >= 0 && d->frame_stack <= 16, "env '%s': frame_stack is %d; use 0 "
               "(not a frame stack) or the frames per observation, at most 16", d->id,
               d->frame_stack);
    CR_REQUIRE(d->frame_stack <= 1 || (d->obs_rank == 3 && d->obs_dtype == CUDARL_OBS_U8 &&
                                       d->obs_shape[0] == d->frame_stack),
               "env '%s': frame_stack %d needs uint8 (C, H, W) observations with C = %d (the "
               "frames along C); set frame_stack 0 or fix obs_shape", d->id, d->frame_stack,
               d->frame_stack);
    return CUDARL_OK;
}

cudarl_status cr_env_check_run(const cudarl_env_def *def, int num_envs, int groups) {
    if (!def->vec_step) return CUDARL_OK;
    CR_REQUIRE(num_envs == def->vec_num_envs, "--num-envs %d: %s is a vector env of %d envs; "
               "use --num-envs %d", num_envs, def->id, def->vec_num_envs, def->vec_num_envs);
    CR_REQUIRE(groups <= 1, "--env-groups %d: %s is a vector env, which steps as one batch; use "
               "--env-groups 1 (or 0)", groups, def->id);
    return CUDARL_OK;
}

cudarl_status cudarl_env_register(const cudarl_env_def *given) {
    CR_REQUIRE(given, "cudarl_env_register: the def is NULL; pass a filled cudarl_env_def");
    cudarl_env_def full = {.struct_size = sizeof full}; /* fields an older def lacks: 0 */
    CR_TRY(cr_struct_read(&cr_abi_env_def, &full, given, "cudarl_env_register"));
    const cudarl_env_def *def = &full;
    cudarl_status s = cr_env_def_check(def);
    if (s != CUDARL_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", cudarl_last_error());
        return cr_fail(s, "cudarl_env_register: %s", why);
    }
    registry_size();
    pthread_mutex_lock(&registry_lock);
    int n = atomic_load_explicit(&registry_count, memory_order_relaxed);
    env_entry *old = (env_entry *)registry_lookup(def->id); /* under the lock: ours to write */
    if (old && old->def.vec_step && def->vec_step) /* a vector env's id: replaced, info too */
        entry_fill(old, def, old->info.caps, old->info.batch, old->info.render);
    else if (old)
        s = cr_fail(CUDARL_ERR_INVALID_ARG, "cudarl_env_register: an env named '%s' is already "
                    "registered; give this one another id (e.g. a new version suffix, -v1)",
                    def->id);
    else if (n == CUDARL_ENV_MAX)
        s = cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "cudarl_env_register: env '%s': the registry is "
                    "full (%d envs, CUDARL_ENV_MAX); register fewer envs", def->id,
                    CUDARL_ENV_MAX);
    else
        registry_append(def, 0, NULL, NULL);
    pthread_mutex_unlock(&registry_lock);
    return s;
}
