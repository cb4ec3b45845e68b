/* cudarl — reinforcement learning in C11 and CUDA C.
 *
 * The one public header. Handles are opaque; every function that can fail returns a
 * cudarl_status and leaves a message for cudarl_last_error(). The library never exits or
 * aborts on user error. Memory notes on each function say where its buffers live. */
#ifndef CUDARL_H
#define CUDARL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version: these four numbers are its one source (CMake's project version, the SONAME and
 * the Python package's version are read from them). CUDARL_ABI_VERSION is the N of
 * libcudarl.so.N: it changes when a program built against an earlier cudarl.h of the same N
 * could stop working with this library (docs/install.md, "The ABI promise"). */
#define CUDARL_VERSION_MAJOR 0
#define CUDARL_VERSION_MINOR 1
#define CUDARL_VERSION_PATCH 0
#define CUDARL_ABI_VERSION 0
#define CUDARL_STRINGIFY_(x) #x
#define CUDARL_STRINGIFY(x) CUDARL_STRINGIFY_(x)
#define CUDARL_VERSION_STRING                                                                 \
    CUDARL_STRINGIFY(CUDARL_VERSION_MAJOR) "." CUDARL_STRINGIFY(CUDARL_VERSION_MINOR) "."     \
        CUDARL_STRINGIFY(CUDARL_VERSION_PATCH)

/* The library's version, CUDARL_VERSION_STRING as it was built ("0.1.0"); static storage. */
const char *cudarl_version(void);
/* The library's CUDARL_ABI_VERSION as it was built: a program may compare it with the header's
 * (the dynamic linker already did, through the SONAME, unless the library was loaded by path). */
int cudarl_abi_version(void);
/* sizeof the public struct type `type_name` ("cudarl_ppo_config", "cudarl_policy_options", ...)
 * in this build, 0 for a name that is none: for bindings that mirror the structs (the Python
 * package checks its mirrors against it at import). */
size_t cudarl_sizeof(const char *type_name);

/* Structs a caller fills and passes in (cudarl_ppo_config, cudarl_dqn_config, cudarl_env_def,
 * cudarl_policy_options, cudarl_onnx_options, cudarl_replay_request, cudarl_video_options,
 * cudarl_camera, cudarl_frames_options) begin with
 *     size_t struct_size;   sizeof the struct as the caller was compiled
 * which their *_default function sets (or the caller: .struct_size = sizeof(cudarl_env_def)).
 * cudarl grows such a struct only at its end, so a library reads every size an earlier cudarl.h
 * of its ABI version gave the struct, with the fields after it at their defaults; a struct_size
 * of 0 (unset), larger than the library's (a program compiled against a newer cudarl.h) or of
 * no earlier header is CUDARL_ERR_INVALID_ARG naming the struct, the function and the fix. A
 * function that writes a whole struct (*_default, cudarl_ppo_config_load) takes the caller's
 * sizeof through a *_sized entry point, which the static inline function of the usual name
 * calls with sizeof *cfg: bindings (the Python package) call the *_sized one. */

/* ---- status ------------------------------------------------------------------------ */

typedef enum cudarl_status {
    CUDARL_OK = 0,
    CUDARL_ERR_INVALID_ARG,   /* a value the caller passed is out of range or malformed */
    CUDARL_ERR_OUT_OF_MEMORY, /* a memory plan does not fit, or an allocation failed */
    CUDARL_ERR_IO,            /* a file could not be opened, read, written or renamed */
    CUDARL_ERR_FORMAT,        /* a file is truncated, corrupted or not what it claims */
    CUDARL_ERR_MISMATCH,      /* a file is valid but for another model/env/config */
    CUDARL_ERR_UNSUPPORTED,   /* not built in, or not available on this machine */
    CUDARL_ERR_CUDA,          /* a CUDA runtime or library call failed */
    CUDARL_ERR_NUMERIC,       /* NaN or inf where a finite number is required */
} cudarl_status;

/* Short name of a status code ("CUDARL_ERR_IO"); static storage. */
const char *cudarl_status_name(cudarl_status s);
/* The message of the last failure on this thread (static, thread-local storage). */
const char *cudarl_last_error(void);
/* A byte count as people read it ("512 B", "1.23 MiB", binary units up to TiB) into buf (cap
 * bytes, the caller's); returns buf. */
const char *cudarl_format_bytes(size_t bytes, char *buf, size_t cap);

/* ---- output files ------------------------------------------------------------------ */

/* Every file cudarl writes whole goes through these (the library's checkpoints and ONNX models,
 * the CLI's JSON reports and images): the bytes go to `<path>.tmp.<pid>` beside `path`, which
 * commit fsyncs and renames over `path`; a reader sees the old file or the new one, never a
 * part, and a failure leaves `path` as it was and no temp file behind. `path` must be missing or
 * a regular file: a directory, FIFO, device, socket or symbolic link (to anything) is refused,
 * not replaced. `what` names the file in messages ("ONNX model"; NULL: "file"). */
typedef struct cudarl_output cudarl_output;
/* Checks, before long work, that `path` can be written as above and its directory exists and is
 * writable; CUDARL_ERR_IO (or _INVALID_ARG for an empty or overlong path) names the fix. */
cudarl_status cudarl_output_check(const char *path, const char *what);
/* Checks `path` and creates its temp file: *stream is open for writing (stdio), *out (host
 * memory) goes to exactly one of cudarl_output_commit or cudarl_output_abort, which free it. */
cudarl_status cudarl_output_open(cudarl_output **out, const char *path, const char *what,
                                 FILE **stream);
/* Flushes, fsyncs and closes the stream, checks `path` again and renames the temp file over it;
 * on failure (a write failed, a full disk) removes the temp file. Frees `out` either way. */
cudarl_status cudarl_output_commit(cudarl_output *out);
/* Closes and removes the temp file, leaving `path` as it was; frees `out` (NULL is fine). */
void cudarl_output_abort(cudarl_output *out);

/* ---- logging ----------------------------------------------------------------------- */

typedef enum cudarl_log_level {
    CUDARL_LOG_ERROR = 0,
    CUDARL_LOG_WARN,
    CUDARL_LOG_INFO,
    CUDARL_LOG_DEBUG,
} cudarl_log_level;

/* Messages at or below this level go to stderr (default: INFO, or $CUDARL_LOG). */
void cudarl_log_set_level(cudarl_log_level level);

/* ---- environment variables ----------------------------------------------------------- */

/* Checks each environment variable cudarl reads against the values it takes: CUDARL_LOG (error,
 * warn, info, debug), CUDARL_SYNC_DEBUG (0, 1), CUDARL_FUSED (0, 1), CUDARL_CONV_ENGINE (gemm,
 * cudnn). Unset or empty is fine. Any other value is CUDARL_ERR_INVALID_ARG with a message naming
 * the variable, its value, the values it takes and "or unset it". cudarl_ctx_init (and so
 * cudarl_policy_load) checks this first, and the CLI at its start, so a bad value is refused
 * whether or not the run would have read it. */
cudarl_status cudarl_check_environment(void);

/* ---- devices ----------------------------------------------------------------------- */

typedef enum cudarl_device_kind {
    CUDARL_DEVICE_AUTO = 0, /* CUDA if built with it and a GPU is present, else CPU */
    CUDARL_DEVICE_CPU,
    CUDARL_DEVICE_CUDA,
} cudarl_device_kind;

/* A compute context: the device, its stream and its library handles. */
typedef struct cudarl_ctx cudarl_ctx;

/* Opens a context on `kind` (device `index` for CUDA). A bad CUDARL_* environment value is
 * CUDARL_ERR_INVALID_ARG (cudarl_check_environment); CUDA that is not built in, or no GPU,
 * returns CUDARL_ERR_UNSUPPORTED with a message saying which. Context lives on the host. */
cudarl_status cudarl_ctx_init(cudarl_ctx **out, cudarl_device_kind kind, int index);
void cudarl_ctx_free(cudarl_ctx *ctx);
/* The kind actually opened (never AUTO). */
cudarl_device_kind cudarl_ctx_kind(const cudarl_ctx *ctx);
/* Writes a human-readable description of the build and devices to `buf`. */
void cudarl_info(char *buf, size_t cap);
/* Number of usable CUDA devices: 0 without a GPU, or in a build without CUDA. */
int cudarl_cuda_device_count(void);
/* The name of CUDA device `index` ("NVIDIA H200") into buf (host, cap bytes). A build without
 * CUDA, or no GPU, is CUDARL_ERR_UNSUPPORTED; an index that is no device _INVALID_ARG. */
cudarl_status cudarl_cuda_device_name(int index, char *buf, size_t cap);

/* ---- random numbers ---------------------------------------------------------------- */

/* Words first .. first + n - 1 of stream `stream` of `seed` of the Philox4x32-10 generator that
 * cudarl's envs and initialisations draw from, into out (host, n): the same words on every
 * machine, CPU or GPU, and in every build. */
void cudarl_random_u32(uint64_t seed, uint64_t stream, uint64_t first, uint32_t *out, size_t n);

/* ---- environments ------------------------------------------------------------------ */

/* Names of the registered environments, NULL-terminated: the built-ins, then those added by
 * cudarl_env_register in the order they were added (static storage; the array stays valid, and
 * grows in place, as envs are registered). */
const char *const *cudarl_env_names(void);

/* The element type of an env's observations. */
typedef enum cudarl_obs_dtype {
    CUDARL_OBS_F32 = 0, /* float32 features (CartPole's state) */
    CUDARL_OBS_U8 = 1,  /* uint8 pixels or binary channels, scaled to [0, 1] by the network */
} cudarl_obs_dtype;

/* One environment as a table of functions over ONE env's state: what a built-in env and a user's
 * C env both provide. cudarl batches it (N states side by side, stepped on CPU threads), does the
 * step counting, the truncation at max_episode_steps and the same-step autoreset, and keeps the
 * final observation of each episode; the env only knows how to start an episode and take a step.
 *
 * Rules for the functions: they touch only `state` and the outputs they are given (no globals, no
 * allocation, no locks), and draw randomness only from an RNG kept inside `state` that `seed`
 * initialises; then N envs may be stepped by any number of threads and a run is reproducible.
 * Observations are written in the layout obs_shape (channels first for images), obs_dtype. */
#define CUDARL_ACTION_DIM_MAX 32 /* floats of one continuous (Box) action, at most */

typedef struct cudarl_env_def {
    size_t struct_size;         /* sizeof(cudarl_env_def) (above, "Structs a caller fills") */
    const char *id;             /* "CartPole-v1"; unique among registered envs */
    int obs_rank;               /* 1 (features) or 3 (C, H, W) */
    int obs_shape[3];           /* dims; unused trailing dims are 1 */
    cudarl_obs_dtype obs_dtype;
    int num_actions;            /* discrete actions 0 .. num_actions-1; 0 with action_dim */
    int max_episode_steps;      /* truncation by the batch; 0: the env never truncates */
    double solved_return;       /* mean return over 100 episodes that counts as solved */
    size_t state_bytes;         /* bytes of one env's state (the batch aligns each to 64) */
    /* Seeds env number `index` of a batch seeded with `seed` (its own RNG stream); no reset. */
    void (*seed)(void *state, uint64_t seed, uint64_t index);
    /* Starts a new episode from the env's RNG and writes its first observation. */
    void (*reset)(void *state, void *obs);
    /* Takes `action` (checked in range by the batch); writes the next observation, the reward and
     * whether the episode terminated (a terminal state of the MDP, not a time limit). */
    void (*step)(void *state, int32_t action, void *obs, float *reward, uint8_t *terminated);
    /* 0 or 1: an observation is one picture. K > 1: a (K, H, W) uint8 observation is the last K
     * frames along C, oldest first, and an episode's first observation repeats its first frame
     * (Gymnasium's FrameStackObservation with padding "reset"); DQN's replay then stores each
     * frame once and rebuilds the stacks (cudarl_dqn_config.replay_frames). */
    int frame_stack;
    /* Optional (NULL: no check). Whether `state`, read back from a checkpoint when a run
     * resumes, is one that step and reset can take: 0 if so; else nonzero, with what is wrong
     * written to why (why_cap bytes, e.g. "pos is 12, expected 0..9"). It must only read `state`:
     * check every field that indexes an array or counts something against its range, so that a
     * damaged file is refused instead of stepped. */
    int (*state_check)(const void *state, char *why, size_t why_cap);
    /* A vector env instead of one env's functions (a Gymnasium VectorEnv behind the Python
     * package, or any batch that steps as a whole): seed, reset and step NULL, state_bytes 0,
     * max_episode_steps 0 (the vector env keeps its own time limit). vec_reset seeds and resets
     * its vec_num_envs envs and writes their observations; vec_step steps them all with
     * actions (n) and writes obs, reward, terminated and truncated (n) with same-step autoreset:
     * an env whose episode ended has the next episode's first observation in obs and the
     * episode's last one in its final_obs row. Both are called from the thread that drives the
     * batch (a run's training thread), never concurrently. A run on it uses --num-envs
     * vec_num_envs and one env group; to stop the run from inside (an error), call
     * cudarl_request_stop(). A vector env's id may be registered again: the new def replaces
     * the old (not while a run on it is going). */
    void (*vec_reset)(void *user, int n, uint64_t seed, void *obs);
    /* actions: int32 (n) for discrete actions, float (n, action_dim) clipped into the box for
     * continuous ones */
    void (*vec_step)(void *user, int n, const void *actions, void *obs, float *reward,
                     uint8_t *terminated, uint8_t *truncated, void *final_obs);
    void *vec_user;             /* their first argument */
    int vec_num_envs;           /* envs in the vector env, >= 1 */
    /* Continuous (Box) actions instead of discrete ones: action_dim (1 .. CUDARL_ACTION_DIM_MAX)
     * floats per action, the k-th within [action_low[k], action_high[k]] (finite, low < high);
     * num_actions is then 0, step NULL, and step_box takes the action. The pool and the batch
     * clip every action into the box before step_box (or vec_step) sees it, as Gymnasium's
     * ClipAction does: a Gaussian policy samples outside it, and learns from what it sampled.
     * 0 (a zero-filled def): the actions are discrete. */
    int action_dim;
    float action_low[CUDARL_ACTION_DIM_MAX], action_high[CUDARL_ACTION_DIM_MAX];
    void (*step_box)(void *state, const float *action, void *obs, float *reward,
                     uint8_t *terminated);
} cudarl_env_def;

#define CUDARL_ENV_ID_MAX 64   /* bytes of an id, with its terminating NUL */
#define CUDARL_ENV_MAX 64      /* registered envs, built-ins included */

/* Adds a C environment to the registry, under def->id, next to the built-ins: it then appears
 * in cudarl_env_names(), and cudarl finds it by id and steps batches of it on CPU threads.
 * Every field is checked; a bad one returns CUDARL_ERR_INVALID_ARG with a message naming it and
 * the fix (a duplicate id too), a full registry CUDARL_ERR_OUT_OF_MEMORY. The registry copies
 * *def and its id (static storage), so `def` may be freed after the call; the functions it
 * points to must stay loaded for the life of the process. Registered envs stay registered.
 * Register at start-up, before other threads look envs up: registration is serialised, lookups
 * do not wait for it. */
cudarl_status cudarl_env_register(const cudarl_env_def *def);

/* The registered env `id` (a built-in or one added by cudarl_env_register), or NULL. The def
 * lives in the registry's static storage for the life of the process. */
const cudarl_env_def *cudarl_env_find(const char *id);

/* ---- env batches for your own learner ---------------------------------------------- */

/* N envs of one registered env stepped as a batch for a learner that is not cudarl's (the
 * Python package's cudarl.make_vec). On a CUDA context an env with a CUDA twin (the batch's:
 * CartPole-v1, Acrobot-v1, MountainCar-v0, Pendulum-v1, MountainCarContinuous-v0; an image
 * env's: CartPolePixels-v1 and MinAtar's five games) steps on the GPU with every buffer in device
 * memory, on the context's own stream; any other env, or a CPU
 * context, steps on `threads` CPU threads (0: all cores) into host memory (pinned on a CUDA
 * context). Same-step autoreset, as cudarl's own trainers see the env: an env whose episode
 * ended has the next episode's first observation in obs and the last one in final_obs. */
typedef struct cudarl_vec cudarl_vec;

/* Where a batch's arrays live (all the batch's own, for its life): write the actions of the
 * next step into `actions`, read the rest after it. */
typedef struct cudarl_vec_buffers {
    void *obs;            /* (N, obs elems) of the env's obs_dtype */
    float *reward;        /* (N) */
    uint8_t *terminated;  /* (N) 0 or 1 */
    uint8_t *truncated;   /* (N) 0 or 1 */
    void *final_obs;      /* (N, obs elems): rows of the envs that ended in the last step */
    void *actions;        /* int32 (N), or float (N, action_dim) for a continuous env */
    int device;           /* -1: host memory; else the index of the GPU they are on */
} cudarl_vec_buffers;

/* Makes the batch of num_envs (1 .. 1048576) envs of `id` on ctx. An unknown id, a bad count or
 * a vector env (vec_step: it steps itself) is CUDARL_ERR_INVALID_ARG naming the fix. */
cudarl_status cudarl_vec_create(cudarl_ctx *ctx, const char *id, int num_envs, int threads,
                                cudarl_vec **out);
void cudarl_vec_get_buffers(const cudarl_vec *vec, cudarl_vec_buffers *buffers);
/* Seeds env i with stream i of `seed` and starts every episode (obs written). */
cudarl_status cudarl_vec_reset(cudarl_vec *vec, uint64_t seed);
/* Steps every env with the actions in its buffer and returns once the outputs are written (on a
 * GPU: the context's stream synchronised). Continuous actions are clipped into the env's box.
 * On the CPU an action outside 0 .. num_actions-1, or a NaN in a continuous one, is
 * CUDARL_ERR_INVALID_ARG naming the env; on the GPU they are not checked first: an action out of
 * range stops the kernel with an error that the next CUDA call reports, and a NaN goes into the
 * env's dynamics as it would in Gymnasium. */
cudarl_status cudarl_vec_step(cudarl_vec *vec);
/* Releases the batch (NULL is fine). */
void cudarl_vec_free(cudarl_vec *vec);

/* What cudarl_env_play_random hands over after the reset (t = 0) and after each step t: obs
 * (host memory of the play's, valid during the call) in the env's obs_shape and obs_dtype, and
 * the number of episodes ended so far. A status other than CUDARL_OK stops the play, which
 * returns it. */
typedef cudarl_status (*cudarl_env_play_fn)(void *user, int t, const void *obs, int episodes);

/* Plays one env `id` under a uniformly random policy, so that its observations can be looked at
 * (`cudarl render`): resets it with `seed`, calls fn(user, 0, ...), then takes steps - 1 steps,
 * calling fn(user, t, ...) after step t. Episodes end as they do in training (truncation at
 * max_episode_steps; same-step autoreset: the observation after an episode ended is the next
 * episode's first). The actions come from Philox stream 2^63 of `seed`, which no env draws
 * from. Memory (host): the env's state and two observations, allocated here and freed before
 * returning. An unknown id, steps < 1 or a NULL fn is CUDARL_ERR_INVALID_ARG. */
cudarl_status cudarl_env_play_random(const char *id, uint64_t seed, int steps,
                                     cudarl_env_play_fn fn, void *user);

/* ---- precision --------------------------------------------------------------------- */

/* What matmuls and convolutions compute in and activations are stored in (`--precision`).
 * Under every precision the master weights, the weight gradients, Adam's state and every
 * accumulation are float32, and losses, advantages, returns, GAE, softmax and reductions stay
 * float32; FP16 adds dynamic loss scaling. docs/precision.md has the table and the reasons. */
typedef enum cudarl_precision {
    CUDARL_PRECISION_FP32 = 0, /* everything float32 (the default; the CPU runs only this) */
    CUDARL_PRECISION_TF32,     /* matmul/conv inputs rounded to TF32 on tensor cores */
    CUDARL_PRECISION_BF16,     /* matmul/conv in bfloat16, activations stored bfloat16 */
    CUDARL_PRECISION_FP16,     /* matmul/conv in float16, activations float16, loss scaling */
} cudarl_precision;

#define CUDARL_PRECISION_COUNT 4

/* The flag spelling of `p` ("fp32", "tf32", "bf16", "fp16"); "?" for a value out of range.
 * Static storage. */
const char *cudarl_precision_name(cudarl_precision p);
/* Reads a --precision value (lower case, as cudarl_precision_name writes it) into *out. Any
 * other string returns CUDARL_ERR_INVALID_ARG with a message listing the choices; *out is then
 * left as it was. */
cudarl_status cudarl_precision_parse(const char *s, cudarl_precision *out);

/* ---- limits of numeric settings ----------------------------------------------------- */

/* The accepted range of each numeric setting of a config, named by its CLI flag: one table per
 * config, which the library's validators check every field against and the CLI's flag parser
 * reads, so both refuse the same values with the same message ("--num-envs must be between 1
 * and 4194304, got 0"). Rules between settings (a replay of at least (frame stack + 3) x
 * num_envs transitions, minibatches that divide the batch, ...) are the validators' own. */
typedef enum cudarl_field_type {
    CUDARL_FIELD_INT = 0, /* int */
    CUDARL_FIELD_I64,     /* int64_t */
    CUDARL_FIELD_F64,     /* double */
} cudarl_field_type;

typedef struct cudarl_flag_range {
    const char *flag;       /* the CLI flag without "--" ("num-envs"; the field is num_envs) */
    double lo, hi;          /* accepted values, both included (integer fields: integers, each
                               below 2^53, so an int64 compares exactly as a double) */
    const char *lo_means;   /* what lo stands for where it is special ("all cores"), or NULL */
    size_t offset;          /* of the field in the table's config struct */
    cudarl_field_type type; /* of that field */
} cudarl_flag_range;

typedef enum cudarl_flag_table {
    CUDARL_FLAGS_PPO = 0, /* cudarl_ppo_config (cudarl train) */
    CUDARL_FLAGS_DQN,     /* cudarl_dqn_config (cudarl train --algo dqn) */
    CUDARL_FLAGS_REPLAY,  /* cudarl_replay_request (cudarl plan) */
} cudarl_flag_table;

/* The ranges of `table`, ended by an entry whose flag is NULL (static storage); NULL for a value
 * that is no table. */
const cudarl_flag_range *cudarl_flag_ranges(cudarl_flag_table table);
/* Checks `value` against the range of `flag` in `table`: CUDARL_OK inside it; otherwise (NaN and
 * inf too) CUDARL_ERR_INVALID_ARG with the validators' message, "--flag must be between lo and
 * hi, got value". A flag the table does not have is CUDARL_ERR_INVALID_ARG naming it. */
cudarl_status cudarl_flag_check(cudarl_flag_table table, const char *flag, double value);

#define CUDARL_EVAL_MAX_EPISODES 1000000 /* most episodes one cudarl_policy_eval plays */

/* ---- PPO --------------------------------------------------------------------------- */

/* PPO hyperparameters: CleanRL's ppo.py names and meanings. */
/* One report point of a training run: its metrics under CleanRL's TensorBoard names
 * ("charts/episodic_return", "losses/value_loss", "charts/SPS", ...), the values of its
 * metrics.csv row (NaN where the row has none: no episode ended since the last row). */
typedef struct cudarl_metrics {
    int64_t global_step, iteration;
    int count;                 /* entries of names and values */
    const char *const *names;
    const double *values;
} cudarl_metrics;
/* A run's metrics callback: called on the training thread at each report point (the host's:
 * on a GPU up to a few iterations behind the device); nonzero asks the run to stop after its
 * current iteration and write its checkpoint, as cudarl_request_stop does. */
typedef int (*cudarl_metrics_fn)(const cudarl_metrics *m, void *user);

typedef struct cudarl_ppo_config {
    size_t struct_size; /* set by cudarl_ppo_config_default (above, "Structs a caller fills") */
    char env_id[64];
    char run_name[128];
    char runs_dir[256];
    uint64_t seed;
    int64_t total_timesteps;
    double learning_rate;
    int num_envs;
    int num_steps;
    int anneal_lr;
    double gamma;
    double gae_lambda;
    int num_minibatches;
    int update_epochs;
    int norm_adv;
    double clip_coef;
    int clip_vloss;
    double ent_coef;
    double vf_coef;
    double max_grad_norm;
    double target_kl;  /* <= 0 disables the early stop */
    int hidden;        /* hidden width of both MLPs (64) */
    /* The actor-critic: "mlp" (ppo.py's two tanh MLPs over float features, `hidden` wide), or
     * for uint8 image (C, H, W) envs a convolutional network with ppo_atari.py's Agent layout
     * (a shared `network` trunk, `actor` and `critic` heads), on the CPU or CUDA: "minatar-cnn"
     * (MinAtar's 0/1 channels, unscaled) or "nature-cnn" (84x84 frames, x / 255). Its envs
     * step on CPU threads, or on the GPU where the env has a CUDA twin (env_device). */
    char policy[16];
    /* Conv policies: 1 gives the critic a network of its own (a second trunk of the same spec)
     * instead of a head on the actor's trunk, at twice the network's work. The checkpoint's
     * policy (eval, export, the runtime) is the actor's network; it serves no values. 0: the
     * shared trunk (ppo_atari.py's). */
    int separate_critic;
    int threads;       /* CPU worker threads; 0 = all cores */
    cudarl_device_kind device;
    /* Where the envs step: CUDARL_DEVICE_CUDA on the GPU (envs with a CUDA twin: CartPole-v1),
     * CUDARL_DEVICE_CPU on a pool of env_threads threads (any registered env), AUTO: the GPU
     * when both the device and the env allow it, else the CPU. */
    cudarl_device_kind env_device;
    int env_threads;   /* threads stepping CPU envs; 0 = all cores */
    int env_groups;    /* CPU envs in this many groups, stepped while the policy runs on another
                        * (1: the synchronous schedule); 0 = 2 with a GPU policy, else 1 */
    int async;         /* CPU envs on a GPU: collect the next rollout while the learner updates
                        * on the last one (on a second stream), with the policy one update stale */
    /* GPUs by index (-1: the context's). actor_device: the GPU the trainer's context must be on
     * (the CLI opens it there). learner_device: with --async, the learner's context on another
     * GPU, reading and writing the actor's buffers through peer access (NVLink or PCIe). */
    int actor_device, learner_device;
    int checkpoint_every; /* iterations between checkpoints; 0 = only at the end */
    int quiet;            /* no progress line */
    int profile;          /* time each phase (synchronising after it) and print a table */
    /* FP32 (default) or, on the GPU, TF32: the cuBLAS products (the conv nets' GEMMs, linear
     * layers through cuBLAS) take TF32 inputs on the tensor cores, sums in fp32; the fused
     * CartPole kernels stay fp32. BF16 and FP16 (GPU): every conv and linear product's inputs
     * in the format with fp32 sums (an MLP then runs op by op, not in the fused kernels), fp32
     * weights, Adam and losses; FP16 with dynamic loss scaling (torch.amp.GradScaler's rules,
     * the scale and the skipped steps in metrics.csv as amp/loss_scale and amp/skipped_steps). */
    cudarl_precision precision;
    cudarl_metrics_fn on_metrics; /* NULL, or called with each metrics row (not saved) */
    void *on_metrics_user;        /* its second argument */
    /* Gymnasium's NormalizeObservation and NormalizeReward (with the clip at 10 of CleanRL's
     * ppo_continuous_action.py) over the whole batch of envs, on the context's device: running
     * statistics of the observations (updated with every step's N observations) and of the
     * discounted returns, saved in the checkpoint; eval, the runtime and the ONNX export apply
     * the observations' (frozen). Episode returns in the metrics stay the env's own. MLP
     * policies over float observations only. */
    int norm_obs;
    int norm_reward;
    /* NULL, or the run's resolved config as TOML text (`cudarl train` writes one `flag = value`
     * line per flag: docs/training.md), not read by the trainer: saved as
     * runs/<run>/config.toml (atomically) once the run folder is claimed, and added to the
     * TensorBoard event file as CleanRL's "hyperparameters" text, a |param|value| table of its
     * lines. The caller's memory, read during the call. */
    const char *config_toml;
} cudarl_ppo_config;

/* Fills `cfg` (struct_size bytes: the caller's sizeof) with cudarl's tuned defaults for `env_id`
 * (CartPole-v1 if NULL), struct_size included. A size this library does not know is
 * CUDARL_ERR_INVALID_ARG, and `cfg` is left as it was. */
cudarl_status cudarl_ppo_config_default_sized(cudarl_ppo_config *cfg, size_t struct_size,
                                              const char *env_id);
static inline cudarl_status cudarl_ppo_config_default(cudarl_ppo_config *cfg,
                                                      const char *env_id) {
    return cudarl_ppo_config_default_sized(cfg, sizeof *cfg, env_id);
}
/* The three functions below change a config that cudarl_ppo_config_default filled; a bad
 * struct_size leaves it as it was, with the reason in cudarl_last_error() (and the next
 * cudarl_ppo_config_validate refuses it). */
/* Adjusts the batch shape of `cfg` (set by cudarl_ppo_config_default) to the device that will
 * train it: on CUDA, 1024 envs x 16 steps, lr 5e-3, 2M steps - a batch wide enough to fill a GPU
 * and still solve CartPole in ~50 updates. A no-op for the CPU. */
void cudarl_ppo_config_for_device(cudarl_ppo_config *cfg, cudarl_device_kind kind);
/* Sets cfg->policy to `policy` and, for a convolutional one, CleanRL ppo_atari.py's defaults
 * over whatever the two calls above set (on any device): 8 envs x 128 steps, lr 2.5e-4
 * annealed, clip-coef 0.1, ent-coef 0.01, 10M steps; the rest (4 minibatches, 4 epochs, gamma
 * 0.99, GAE 0.95, vf 0.5, max grad norm 0.5, Adam eps 1e-5) is ppo.py's already. The CPU ops
 * keep their one thread (threads > 1 pays on a machine of its own, and costs several times
 * over on a shared one, where OpenMP's workers spin for cores the env threads need). A NULL
 * policy keeps cfg->policy; "mlp" changes nothing else. */
void cudarl_ppo_config_for_policy(cudarl_ppo_config *cfg, const char *policy);
/* Sets cfg->env_id to `env_id` (NULL keeps it) and, for an env with continuous actions (its def's
 * action_dim > 0), CleanRL ppo_continuous_action.py's defaults over what the calls above set:
 * lr 3e-4 annealed, 32 minibatches, 10 epochs, ent-coef 0, gamma 0.99, GAE 0.95, a batch of
 * 2048 (8 envs x 256 steps instead of its 1 x 2048, so that env threads have work), 1M steps,
 * observations and rewards normalized. Discrete envs: only the id changes. */
void cudarl_ppo_config_for_env(cudarl_ppo_config *cfg, const char *env_id);
/* cudarl_ppo_config_for_env for the device that will train the run (`kind`: its context's), and
 * the recipes of image envs (uint8 (C, H, W) observations) over what the calls above set:
 * their convolutional policy (minatar-cnn for MinAtar's 10x10 channels, nature-cnn for 84x84
 * frames) with ppo_atari.py's defaults as cudarl_ppo_config_for_policy sets them, unless that
 * policy was chosen already; on CUDA, MinAtar's recipe at scale: 1024 envs x 128 steps, 32
 * minibatches, 4 epochs, lr 2e-3 annealed, clip-coef 0.2, ent-coef 0.01, bf16, 40M steps
 * (docs/training.md has its curves). cudarl_ppo_config_for_env is this with the CPU. */
void cudarl_ppo_config_for_env_on(cudarl_ppo_config *cfg, const char *env_id,
                                  cudarl_device_kind kind);
/* Checks every field; the message names the field and the accepted range. */
cudarl_status cudarl_ppo_config_validate(const cudarl_ppo_config *cfg);

/* What a training run reports at its end. */
typedef struct cudarl_train_summary {
    int64_t global_step;    /* env steps so far, including those before a resume */
    int64_t run_steps;      /* env steps taken by this call */
    int64_t episodes;
    double mean_return_100; /* mean return of the last 100 finished episodes */
    double train_seconds;   /* training loop wall time */
    double sps;             /* env steps per second over the loop */
    int64_t solved_step;    /* first step where mean_return_100 >= the env's threshold; -1 if never */
    double solved_seconds;  /* loop time at solved_step; -1 if never */
    char run_dir[512];      /* where metrics.csv and model.safetensors were written */
    int interrupted;        /* stopped early by cudarl_request_stop(); the checkpoint resumes */
    int64_t device_bytes_after_setup; /* device memory in use after the first iteration (CUDA;
                                         cudaMemGetInfo: the whole device, other processes too) */
    int64_t device_bytes_growth;      /* in use at the end minus after the first iteration (other
                                         processes starting or ending on the device show here) */
    int64_t arena_bytes;              /* the training arena (device memory on CUDA) */
    double solved_unix_time;          /* wall clock (CLOCK_REALTIME) at solved_step; 0 if never */
    double host_syncs_per_iteration;  /* times the host waited for the device, per iteration */
} cudarl_train_summary;

/* The algo a cudarl checkpoint was trained with ("ppo", "dqn") into algo (cap bytes), from its
 * metadata alone (nothing else is checked: the trainer's loader checks the rest); a file that is
 * no cudarl checkpoint is CUDARL_ERR_IO or _FORMAT. */
cudarl_status cudarl_checkpoint_algo(const char *path, char *algo, size_t cap);
/* Reads the hyperparameters stored in the PPO checkpoint at `path` into `cfg` (struct_size
 * bytes: the caller's sizeof; struct_size set). */
cudarl_status cudarl_ppo_config_load_sized(const char *path, cudarl_ppo_config *cfg,
                                           size_t struct_size);
static inline cudarl_status cudarl_ppo_config_load(const char *path, cudarl_ppo_config *cfg) {
    return cudarl_ppo_config_load_sized(path, cfg, sizeof *cfg);
}

/* ---- Data parallel (docs/multigpu.md) ------------------------------------------------ */

/* Joins the MPI job that `mpirun -np R` started this process in (MPI_Init), so that
 * cudarl_ppo_train trains one policy on R ranks, each with num_envs / R of the envs; nothing
 * when no launcher started it (a plain run never touches MPI). A build without MPI refuses a
 * launch of 2 or more ranks, naming the rebuild. Call once, before the context and the run. */
cudarl_status cudarl_dist_init(void);
/* Leaves the job (MPI_Finalize); nothing if cudarl_dist_init joined none. */
void cudarl_dist_finalize(void);
/* This process's rank and the job's rank count (0 and 1 outside a job). */
int cudarl_dist_rank(void);
int cudarl_dist_size(void);
/* This rank's index among the ranks on its host (0 outside a job): under mpirun, rank r trains
 * on GPU cudarl_dist_local_rank() (counted from --actor-device). */
int cudarl_dist_local_rank(void);
/* `cudarl train --num-gpus N`: makes this process a data-parallel job of its own on N GPUs, which
 * exchanges its gradients over NCCL (a GPU context's run then opens its NCCL communicator).
 * N = 1: a job of one rank on the context's GPU, which runs the NCCL exchange and equals a plain
 * run bit for bit; N > 1: run the N ranks with cudarl_dist_run_threads, each its own context on
 * its own GPU. Refused under mpirun, with N < 1, with more GPUs than the machine has and in a
 * build without NCCL. Call once, before the contexts and the run. */
cudarl_status cudarl_dist_local_gpus(int num_gpus);
/* Runs fn(rank, arg) on n threads (rank 0 on the calling thread), the ranks of one job in this
 * process: cudarl_dist_rank and _size are the calling thread's, and a cudarl_ppo_train called
 * from each (a context of its own each) trains one policy on the n ranks. A rank whose fn
 * returns non-zero ends the process with that code. Returns rank 0's result. */
int cudarl_dist_run_threads(int n, int (*fn)(int rank, void *arg), void *arg);
/* Ends the whole job with exit code `code` (MPI_Abort: mpirun ends the other ranks); exit(code)
 * outside a job. For a rank whose run failed, so that the others do not wait for it. */
void cudarl_dist_abort(int code);

/* Asks a running cudarl_ppo_train or cudarl_dqn_train to stop after its current iteration (DQN
 * on the GPU: its current graph block) and write its checkpoint (safe to call from a signal
 * handler). */
void cudarl_request_stop(void);

/* Trains PPO as configured, writing runs/<run_name>/{metrics.csv,model.safetensors}.
 * `resume_path` (may be NULL) continues a checkpoint, after checking every number of its
 * training state (a value out of range is CUDARL_ERR_FORMAT naming the tensor, a NaN or an inf
 * _NUMERIC). Without loss scaling (every precision but fp16) a non-finite loss or gradient stops
 * the run with CUDARL_ERR_NUMERIC before it writes another checkpoint. */
cudarl_status cudarl_ppo_train(cudarl_ctx *ctx, const cudarl_ppo_config *cfg,
                               const char *resume_path, cudarl_train_summary *summary);

/* ---- DQN --------------------------------------------------------------------------- */

/* DQN hyperparameters: CleanRL's dqn.py names, meanings and defaults, plus cudarl's extras. */
typedef struct cudarl_dqn_config {
    size_t struct_size; /* set by cudarl_dqn_config_default (above, "Structs a caller fills") */
    char env_id[64];
    char run_name[128];
    char runs_dir[256];
    uint64_t seed;
    int64_t total_timesteps;          /* env steps over all envs */
    double learning_rate;
    int num_envs;
    int64_t buffer_size;              /* replay capacity (transitions) */
    double gamma;
    double tau;                       /* target network update rate (1 = copy) */
    int64_t target_network_frequency; /* env steps between target updates */
    int batch_size;
    double start_e, end_e;            /* epsilon-greedy schedule ends */
    double exploration_fraction;      /* fraction of total_timesteps to anneal epsilon over */
    int64_t learning_starts;          /* env steps before learning */
    int64_t train_frequency;          /* env steps between gradient steps */
    int double_dqn;                   /* target = Q_target(s', argmax_a Q_online(s', a)) */
    int prioritized;                  /* proportional prioritized replay */
    double prioritized_alpha, prioritized_beta, prioritized_eps;
    int huber;                        /* Huber (smooth L1) TD loss; else MSE as dqn.py */
    double max_grad_norm;             /* global gradient-norm clip; 0 disables */
    int hidden1, hidden2;             /* Q-network widths (120, 84 as dqn.py) */
    /* The Q-network: "mlp" (dqn.py's, hidden1 x hidden2; any env: uint8 observations reach it
     * flattened and cast to float, unscaled, as MinAtar's 0/1 channels want; PPO's MLP refuses
     * them), or a convolutional network of dqn_atari.py's shape for image (C, H, W)
     * observations (CPU or CUDA): "minatar-cnn" (MinAtar's 0/1 channels, unscaled) or
     * "nature-cnn" (84x84 pixels, x / 255). */
    char policy[16];
    int64_t mem_budget;               /* bytes the run may use; 0 = what the device can give */
    int threads;
    cudarl_device_kind device;
    int quiet;
    /* Where the envs step: CUDARL_DEVICE_CUDA on the GPU (envs with a CUDA twin: CartPole-v1),
     * CUDARL_DEVICE_CPU on a pool of env_threads threads (any registered env; uint8
     * observations, MinAtar's, reach the Q-network cast to float, unscaled), AUTO: the GPU when
     * both the device and the env allow it, else the CPU. */
    cudarl_device_kind env_device;
    int env_threads;                  /* threads stepping CPU envs; 0 = all cores */
    /* With an env of frame stacks (cudarl_env_def.frame_stack K > 1) and a conv policy: store
     * each frame once (a K-th of the stacks' bytes) and sample windows of K + 1 frames that the
     * Q-network reads as obs and next_obs (default 1); 0 stores whole stacks. Same results. */
    int replay_frames;
    cudarl_precision precision;       /* as cudarl_ppo_config.precision */
    cudarl_metrics_fn on_metrics;     /* as cudarl_ppo_config.on_metrics */
    void *on_metrics_user;
    const char *config_toml;          /* as cudarl_ppo_config.config_toml */
} cudarl_dqn_config;

/* A replay buffer to size before anything is allocated (`cudarl plan`). */
typedef struct cudarl_replay_request {
    size_t struct_size;   /* sizeof(cudarl_replay_request) (above, "Structs a caller fills") */
    int64_t buffer_size;  /* transitions */
    int num_envs;
    int64_t frame_elems;  /* elements of one stored observation (one frame when stacking) */
    int uint8_frames;     /* 1: uint8 frames, 0: float32 observations */
    int frame_stack;      /* frames per stacked observation (1: plain) */
    int prioritized;
    int64_t other_bytes;  /* what the run needs besides the replay buffer */
    int64_t mem_budget;   /* bytes; 0 = this host's available memory */
    const char *mem_budget_source; /* what mem_budget is, for the messages; NULL: "--mem-budget" */
} cudarl_replay_request;

/* Writes the memory plan of `r` into `report` (a table of buffers, bytes per transition, the
 * total against the budget). A plan over the budget returns CUDARL_ERR_OUT_OF_MEMORY with a
 * message giving the bytes needed, the budget and the largest --buffer-size that fits. */
cudarl_status cudarl_replay_plan_report(const cudarl_replay_request *r, char *report, size_t cap);

/* Fills `cfg` (struct_size bytes: the caller's sizeof) with CleanRL dqn.py's defaults for
 * `env_id` (CartPole-v1 if NULL), struct_size included; as cudarl_ppo_config_default_sized. */
cudarl_status cudarl_dqn_config_default_sized(cudarl_dqn_config *cfg, size_t struct_size,
                                              const char *env_id);
static inline cudarl_status cudarl_dqn_config_default(cudarl_dqn_config *cfg,
                                                      const char *env_id) {
    return cudarl_dqn_config_default_sized(cfg, sizeof *cfg, env_id);
}
/* Adjusts `cfg` (set by cudarl_dqn_config_default) to the device that will train it: on CUDA,
 * 32 envs with two train steps of batch 256 per env step (a GPU step costs launches, not rows),
 * lr 2e-3, buffer 50k, target copies every 640 steps, learning from step 2048, epsilon annealed
 * over 15% of 250k steps. A no-op for the CPU. */
void cudarl_dqn_config_for_device(cudarl_dqn_config *cfg, cudarl_device_kind kind);
/* Sets cfg->env_id to `env_id` (NULL keeps it) and, for an image env, its Q-network (minatar-cnn
 * for MinAtar's 10x10 channels, nature-cnn for 84x84 frames) and, training on CUDA (`kind`),
 * MinAtar's recipe: 256 envs, batch-size 512, learning-rate 1e-3, train-frequency 64,
 * target-network-frequency 8192, buffer-size 100000, learning-starts 5000, end-e 0.01,
 * exploration-fraction 0.02, Huber loss, 2.5M steps. Other envs: only the id changes. */
void cudarl_dqn_config_for_env_on(cudarl_dqn_config *cfg, const char *env_id,
                                  cudarl_device_kind kind);
cudarl_status cudarl_dqn_config_validate(const cudarl_dqn_config *cfg);
/* Trains DQN as configured on ctx's device (replay buffer, networks and, with the envs' CUDA
 * twin, the envs in device memory; CPU envs in pinned host memory), writing
 * runs/<run_name>/{metrics.csv,model.safetensors}. A non-finite TD loss (or, without loss
 * scaling, gradient norm) stops the run with CUDARL_ERR_NUMERIC and no checkpoint. */
cudarl_status cudarl_dqn_train(cudarl_ctx *ctx, const cudarl_dqn_config *cfg,
                               cudarl_train_summary *summary);
/* Continues the DQN run whose checkpoint is `resume_path` (a model.safetensors of
 * cudarl_dqn_train, which holds the whole training state: both networks, Adam, the RNG streams,
 * the replay buffer whole, the envs, the episode and metrics sums, the step counters), in its
 * run folder cfg->runs_dir/cfg->run_name, until cfg->total_timesteps: a run stopped at step N
 * and resumed ends with the checkpoint and metrics.csv (but for the wall-clock columns) of one
 * that went straight through with the same cfg. A checkpoint of another env, Q-network, env
 * placement (env_device), --num-envs, --buffer-size, --prioritized, --replay-frames or
 * precision is CUDARL_ERR_MISMATCH naming the flag; a damaged state value CUDARL_ERR_FORMAT (a
 * NaN or an inf _NUMERIC) naming the tensor; a checkpoint already at total_timesteps
 * _INVALID_ARG. cudarl_dqn_config_load gives the cfg the run had. */
cudarl_status cudarl_dqn_train_resume(cudarl_ctx *ctx, const cudarl_dqn_config *cfg,
                                      const char *resume_path, cudarl_train_summary *summary);
/* Reads the hyperparameters stored in the DQN checkpoint at `path` into `cfg` (env_device cpu
 * when its envs stepped on CPU threads, else auto; device auto). */
cudarl_status cudarl_dqn_config_load_sized(const char *path, cudarl_dqn_config *cfg,
                                           size_t struct_size);
static inline cudarl_status cudarl_dqn_config_load(const char *path, cudarl_dqn_config *cfg) {
    return cudarl_dqn_config_load_sized(path, cfg, sizeof *cfg);
}

/* Plays `episodes` greedy (argmax) episodes of the policy in `path` (1 to
 * CUDARL_EVAL_MAX_EPISODES) on the env it names, which must be registered in this process;
 * mean and std of return. Conv policies run on ctx's device (the policy runtime, fp32; envs on
 * one CPU thread); MLP policies on the CPU only (a CUDA ctx is refused), for any registered env
 * (DQN's MLP on MinAtar too). A network that does not fit its env is CUDARL_ERR_MISMATCH; a checkpoint holding a NaN
 * or an inf, CUDARL_ERR_NUMERIC. */
cudarl_status cudarl_policy_eval(cudarl_ctx *ctx, const char *path, int episodes, uint64_t seed,
                                 double *mean, double *std);
/* cudarl_policy_eval with the policy runtime in `precision` (`cudarl eval --precision`): FP32
 * anywhere; TF32, BF16 and FP16 for conv policies on a CUDA ctx (refused with the fix elsewhere). */
cudarl_status cudarl_policy_eval_precision(cudarl_ctx *ctx, const char *path, int episodes,
                                           uint64_t seed, cudarl_precision precision,
                                           double *mean, double *std);

/* ---- videos of a policy ------------------------------------------------------------ */

#define CUDARL_VIDEO_MAX_EPISODES 64   /* most episodes one video holds */
#define CUDARL_VIDEO_MAX_FRAMES 20000  /* most frames: 400 s of CartPole at 50 a second */
#define CUDARL_VIDEO_MAX_FPS 100       /* a GIF's: 50 (its delays are 1/100 s) */

/* Whether env `id` can be drawn: CUDARL_OK with its image's *width, *height and the frames a
 * second of its own time *fps (Gymnasium's render_fps: CartPole 50; any pointer may be NULL) for
 * the built-in envs but the MuJoCo robots; CUDARL_ERR_UNSUPPORTED naming those that can for any
 * other registered env, _INVALID_ARG for an unknown id. */
cudarl_status cudarl_env_render_info(const char *id, int *width, int *height, int *fps);

/* How a policy's video is made. */
typedef struct cudarl_video_options {
    size_t struct_size;         /* set by cudarl_video_options_default */
    int episodes;               /* 1 .. CUDARL_VIDEO_MAX_EPISODES, played one after another */
    int fps;                    /* frames a second of the video; 0: the env's own */
    uint64_t seed;              /* episode k starts as env k of an evaluation seeded with it:
                                   the k-th episode cudarl_policy_eval plays with that seed */
    cudarl_device_kind device;  /* where the policy runs, as cudarl_policy_options.device */
    cudarl_precision precision; /* what it computes in, as cudarl_policy_options.precision */
} cudarl_video_options;

/* What a video holds. */
typedef struct cudarl_video_summary {
    int frames;                 /* each episode's reset and every step after it: its length + 1 */
    int width, height, fps;
    int episodes;               /* recorded, the last maybe cut short (truncated) */
    int truncated;              /* 1: CUDARL_VIDEO_MAX_FRAMES ended the last episode early */
    int64_t lengths[CUDARL_VIDEO_MAX_EPISODES];  /* steps of each recorded episode */
    double returns[CUDARL_VIDEO_MAX_EPISODES];   /* and its return */
} cudarl_video_summary;

/* 1 episode, the env's fps, seed 12345 (cudarl eval's), the CPU, fp32; struct_size bytes, the
 * caller's sizeof. */
cudarl_status cudarl_video_options_default_sized(cudarl_video_options *opt, size_t struct_size);
static inline cudarl_status cudarl_video_options_default(cudarl_video_options *opt) {
    return cudarl_video_options_default_sized(opt, sizeof *opt);
}
/* Checks a video's path and frame rate before any work: the format by its extension (.gif:
 * giflib, built in where CMake found libgif-dev; .mp4: an `ffmpeg` on PATH), fps 1 ..
 * CUDARL_VIDEO_MAX_FPS (a GIF: 1 .. 50), and that the path can be written (as
 * cudarl_output_check). Each refusal (CUDARL_ERR_INVALID_ARG, _UNSUPPORTED for a missing
 * encoder, _IO) names the fix. */
cudarl_status cudarl_video_check(const char *video_path, int fps);
/* Plays the greedy policy of `checkpoint` (as cudarl_policy_eval plays it, through the policy
 * runtime) on its env for opt->episodes episodes and writes what a person would see to
 * `video_path`: a frame after each reset and after each step, drawn by the env's renderer
 * (cudarl_env_render_info), ending each episode on its last state (no autoreset in between).
 * Written as every output file (temp file, fsync, rename); nothing is left at video_path after a
 * failure, or after cudarl_request_stop() (CUDARL_ERR_IO saying it was stopped). `opt` NULL: the
 * defaults. Memory (host): one env's state, an observation, a frame and the encoder's buffers,
 * freed before returning. */
cudarl_status cudarl_policy_record(const char *checkpoint, const char *video_path,
                                   const cudarl_video_options *opt,
                                   cudarl_video_summary *summary);

/* ---- export ------------------------------------------------------------------------ */

#define CUDARL_ONNX_OPSET 17     /* the ai.onnx opset of every exported model */
#define CUDARL_ONNX_IR_VERSION 8 /* the IR version that goes with opset 17 */
#define CUDARL_ONNX_MAX_BATCH 16777216

/* How a policy is exported to ONNX. */
typedef struct cudarl_onnx_options {
    size_t struct_size;           /* set by cudarl_onnx_options_default */
    int64_t batch;                /* rows of the input: 0 = dynamic (dim "batch"), else fixed,
                                     1 .. CUDARL_ONNX_MAX_BATCH (TensorRT on DLA needs it fixed) */
    cudarl_obs_dtype input_dtype; /* F32: input `obs` float32, as the policy takes it; U8: input
                                     `obs` uint8, converted in the graph as cudarl converts it:
                                     Cast, then Div(255) unless the policy casts its uint8
                                     observations unscaled (MinAtar) */
    int argmax_action;            /* nonzero: add output `action` (int64 [batch]), the argmax
                                     of the logits or Q-values (the greedy action) */
} cudarl_onnx_options;

/* Dynamic batch, float32 input, no `action` output; struct_size bytes, the caller's sizeof. */
cudarl_status cudarl_onnx_options_default_sized(cudarl_onnx_options *opt, size_t struct_size);
static inline cudarl_status cudarl_onnx_options_default(cudarl_onnx_options *opt) {
    return cudarl_onnx_options_default_sized(opt, sizeof *opt);
}

/* Writes the policy in `checkpoint` (a model.safetensors of cudarl train) to `onnx_path` as an
 * ONNX model (opset CUDARL_ONNX_OPSET) for onnxruntime or TensorRT: input `obs` [batch, obs_dim]
 * (or [batch, C, H, W] for a convolutional policy);
 * a PPO checkpoint gives outputs `logits` [batch, actions] and `value` [batch, 1] (`logits` only
 * when it was trained with --separate-critic, whose critic is not in the policy), a DQN one
 * `q_values` [batch, actions]. Weights are stored as they are (float32). The file is written
 * atomically (temp file, fsync, rename). `opt` NULL means the defaults. A bad option returns
 * CUDARL_ERR_INVALID_ARG, a bad checkpoint _IO/_FORMAT/_MISMATCH (_NUMERIC: it holds a NaN or
 * an inf), an unwritable path _IO. All memory is host memory, freed before returning. */
cudarl_status cudarl_policy_export_onnx(const char *checkpoint, const char *onnx_path,
                                        const cudarl_onnx_options *opt);

/* ---- policy runtime ---------------------------------------------------------------- */

/* A trained policy (a model.safetensors of cudarl train) loaded for a real-time control loop:
 * loading reads the checkpoint, allocates every buffer once and, on CUDA, captures one CUDA
 * graph per batch size, so that cudarl_policy_act() allocates nothing and is a copy in, a graph
 * launch and a copy out. The handle owns its own context (stream, cuBLAS) and is used by one
 * thread at a time. Today's policies: the PPO actor-critic MLP, the DQN Q-network MLP, and the
 * convolutional networks of PPO and DQN (nature-cnn, minatar-cnn, custom specs: checkpoints that
 * carry their network's spec under the metadata key "network"). */
typedef struct cudarl_policy cudarl_policy;

#define CUDARL_POLICY_MAX_BATCH 65536 /* largest max_batch */
#define CUDARL_LATENCY_WINDOW 65536   /* act() durations kept for the percentiles: the last 2^16 */

/* How a policy is loaded. */
typedef struct cudarl_policy_options {
    size_t struct_size;         /* set by cudarl_policy_options_default */
    cudarl_device_kind device;  /* CPU, CUDA, or AUTO: CUDA when there is a GPU and the CUDA
                                   backend runs this network, else the CPU */
    int device_index;           /* which GPU, for CUDA */
    cudarl_precision precision; /* FP32 (CPU and CUDA); TF32 on CUDA only (every product on
                                   TF32 tensor cores, sums and activations fp32; a conv net's
                                   convolutions then run on the GEMM engine, whatever
                                   CUDARL_CONV_ENGINE says); BF16 and FP16 on CUDA only, for
                                   convolutional networks (weights and activations in the
                                   format, sums fp32, outputs fp32; a GPU of compute capability
                                   8.0 or newer); other cases are CUDARL_ERR_UNSUPPORTED */
    int max_batch;              /* most observations one act() takes, 1..CUDARL_POLICY_MAX_BATCH */
    double deadline_us;         /* an act() longer than this counts as a deadline miss (it still
                                   completes); 0 = no deadline */
} cudarl_policy_options;

/* AUTO device 0, FP32, max_batch 1, no deadline; struct_size bytes, the caller's sizeof. */
cudarl_status cudarl_policy_options_default_sized(cudarl_policy_options *opt,
                                                  size_t struct_size);
static inline cudarl_status cudarl_policy_options_default(cudarl_policy_options *opt) {
    return cudarl_policy_options_default_sized(opt, sizeof *opt);
}

/* Loads the policy in `checkpoint` (checked as cudarl eval checks it) with `opt` (NULL: the
 * defaults) into *out. Memory: one host arena (the handle, the latency ring, the weights), and
 * on CUDA one device arena, one pinned host block (cudaHostAllocMapped on an integrated GPU, whose
 * kernels read host observations in place) and the graphs of batch sizes 1, 2, 4, ... up to
 * max_batch rounded up to a power of two, each launched once before returning. A bad option
 * returns CUDARL_ERR_INVALID_ARG, an unavailable device or precision _UNSUPPORTED, a bad file
 * _IO/_FORMAT/_MISMATCH, one holding a NaN or an inf _NUMERIC; each message names the problem
 * and the fix. */
cudarl_status cudarl_policy_load(const char *checkpoint, const cudarl_policy_options *opt,
                                 cudarl_policy **out);

/* The greedy actions of n observations: actions[i] = argmax of the actor's logits (PPO) or of
 * the Q-values (DQN) of row i, as cudarl eval plays them: int32 (n). A Gaussian policy (PPO on
 * an env of continuous actions: cudarl_policy_info.action_dim > 0) writes its mean action
 * clipped into the env's box instead, float (n, action_dim), and its logits are the means.
 * A checkpoint trained with --norm-obs normalizes the observations by its frozen statistics
 * first, as in training. obs (n, obs_dim) of `dtype`, which must
 * be what the policy was trained on (cudarl_policy_get_info): float32 features, or uint8 for an
 * env whose observations are uint8, converted as in training: cast value for value where the
 * checkpoint says so (obs_input metadata: MinAtar's 0/1 channels), else scaled by 1/255 (pixels).
 * Outputs: actions (n); values (n) the critic's value (PPO only: NULL for DQN, which has no
 * value head); logits (n, num_actions) the logits or Q-values; values and logits may be NULL.
 * 1 <= n <= max_batch; on CUDA the graph of the next power of two runs, on zero rows past n.
 * Pointers may be host or device memory: on a CUDA policy each is classified per call with
 * cudaPointerGetAttributes (device or managed memory of the policy's GPU: used on the device;
 * anything else: host memory), but for the policy's own cudarl_policy_obs_buffer, which it
 * knows; a CPU policy refuses device pointers. Host float observations are
 * checked to be finite (CUDARL_ERR_NUMERIC naming the row and element); device ones are not.
 * Returns when the outputs are written (one stream synchronisation on CUDA). Allocates nothing.
 * Each successful call's duration (CLOCK_MONOTONIC, entry to return) goes to the latency ring;
 * refused calls are not counted. */
cudarl_status cudarl_policy_act(cudarl_policy *policy, const void *obs, cudarl_obs_dtype dtype,
                                int n, void *actions, float *values, float *logits);

/* A buffer of the policy's own for observations, so that act() need not copy them: *buffer
 * (host memory, pinned; on an integrated GPU mapped, so the graphs read it in place) holds
 * max_batch rows of the policy's observations (*bytes = max_batch x a row's bytes, as
 * cudarl_policy_act takes them). Write up to n rows there and pass *buffer as act()'s obs:
 * act() then skips its copy into its staging (on the H200 a batch-1 pixel policy's end to end
 * time drops by the copy; bench/RESULTS.md) and zeroes rows n .. of the graph's batch in the
 * buffer. The buffer lives until cudarl_policy_free. CUDA policies only: a CPU policy reads
 * observations where they are (CUDARL_ERR_UNSUPPORTED). */
cudarl_status cudarl_policy_obs_buffer(cudarl_policy *policy, void **buffer, size_t *bytes);

/* What a loaded policy is. */
typedef struct cudarl_policy_info {
    char algo[8];                 /* "ppo" or "dqn" */
    char env_id[CUDARL_ENV_ID_MAX];
    cudarl_obs_dtype obs_dtype;   /* what act() takes */
    int obs_dim, num_actions;
    int has_values;               /* 1: act() can return values (PPO) */
    cudarl_device_kind device;    /* where it runs (never AUTO) */
    int device_index;
    int max_batch;
    int graph_batches;            /* batch sizes with a captured CUDA graph (0 on the CPU) */
    size_t host_bytes, device_bytes, pinned_bytes; /* what loading allocated (the context's own
                                                      cuBLAS workspace and scratch not counted) */
    char network[32];             /* "mlp" (PPO), "qnet" (DQN), or the convolutional network's
                                     name: "nature-cnn", "minatar-cnn", "custom" */
    cudarl_precision precision;   /* what it computes in */
    size_t context_bytes;         /* device memory of the policy's own context beside
                                     device_bytes: cuBLAS workspace and scratch (0 on the CPU) */
    int action_dim;               /* a Gaussian policy's floats per action (num_actions = the
                                     same); 0: discrete actions */
    float action_low[CUDARL_ACTION_DIM_MAX], action_high[CUDARL_ACTION_DIM_MAX]; /* its box */
} cudarl_policy_info;

/* Fills *info (host) for `policy`; all zeros for NULL. */
void cudarl_policy_get_info(const cudarl_policy *policy, cudarl_policy_info *info);

/* Latency of act() calls: the percentiles and max cover the last min(count,
 * CUDARL_LATENCY_WINDOW) calls (nearest rank), the deadline misses every call since loading. */
typedef struct cudarl_latency_stats {
    int64_t count;           /* successful act() calls since loading */
    int64_t window;          /* the latest of them the percentiles cover */
    double p50_us, p99_us, max_us;
    double deadline_us;      /* the policy's deadline (0: none) */
    int64_t deadline_misses; /* calls that took longer than deadline_us */
} cudarl_latency_stats;

/* Fills *stats from the ring in the handle (durations in ns, saturated at 4.29 s; a radix
 * select, no allocation, about a millisecond for a full window). Not concurrently with act() on
 * the same handle. */
cudarl_status cudarl_policy_latency(const cudarl_policy *policy, cudarl_latency_stats *stats);

/* Releases everything cudarl_policy_load allocated (NULL is fine). */
void cudarl_policy_free(cudarl_policy *policy);

/* ---- camera frames to observations ------------------------------------------------- */

/* Camera frames into a pixel policy's observations (docs/cameras.md): each tick, every camera's
 * frame is converted (to gray or RGB), cropped and area-resized to the policy's input size,
 * pushed onto that camera's frame stack, and the cameras' stacks, one row each, go through
 * cudarl_policy_act. All of it integer arithmetic, defined by the CPU reference
 * (cudarl_frame_convert) so that the GPU's twin can match it bit for bit:
 *   - gray from RGB8 / BGR8: (9798 R + 19235 G + 3735 B + 2^14) >> 15 (OpenCV's cvtColor
 *     RGB2GRAY / BGR2GRAY fixed point, 0.299 / 0.587 / 0.114 in 15 bits); from NV12 and YUYV
 *     the Y samples (COLOR_YUV2GRAY_*); RGB from GRAY8 repeats the gray (GRAY2RGB);
 *   - RGB from NV12 / YUYV: ITU-R BT.601, limited range, as OpenCV's COLOR_YUV2RGB_NV12 /
 *     _YUYV: y = max(Y - 16, 0) 1220542, R = (y + 1673527 (V-128) + 2^19) >> 20,
 *     G = (y - 852492 (V-128) - 409993 (U-128) + 2^19) >> 20, B = (y + 2116026 (U-128) + 2^19)
 *     >> 20, each clamped to 0..255; each pixel takes the U, V of its 2x2 block (NV12) or pair
 *     (YUYV) in the whole frame;
 *   - the area resize of the crop (cw x ch) to W x H, any ratio: output pixel x covers the source
 *     interval [x cw / W, (x+1) cw / W) (y likewise), each source pixel weighted by its overlap,
 *     which in units of 1/W (1/H) is an integer; out = (sum + area / 2) / area with area = cw ch,
 *     the exact average rounded half up. Against OpenCV's INTER_AREA (float weights) it differs
 *     by at most 1 where both sides shrink or both grow (tests/unit/test_frames_opencv.py
 *     measures it); where one shrinks and the other grows OpenCV does not average areas.
 * Conversion happens at the frame's resolution, then the resize, channel by channel (as cvtColor
 * then resize). */
typedef struct cudarl_frames cudarl_frames;

#define CUDARL_FRAME_MAX_SIDE 32768 /* largest frame width or height */

typedef enum cudarl_pixel_format {
    CUDARL_PIXEL_GRAY8 = 0, /* 1 byte a pixel */
    CUDARL_PIXEL_RGB8,      /* 3 bytes a pixel: R, G, B */
    CUDARL_PIXEL_BGR8,      /* 3 bytes a pixel: B, G, R (OpenCV's order) */
    CUDARL_PIXEL_YUYV,      /* 4:2:2, 4 bytes a pair of pixels: Y0 U Y1 V (V4L2 YUYV, YUY2) */
    CUDARL_PIXEL_NV12,      /* 4:2:0: the Y plane, then the U,V plane interleaved (half height) */
} cudarl_pixel_format;

/* One camera's frames, as cudarl_frames_tick receives them. */
typedef struct cudarl_camera {
    size_t struct_size;         /* set by cudarl_camera_default */
    int width, height;          /* pixels, 1..CUDARL_FRAME_MAX_SIDE; even for NV12 (both) and
                                   YUYV (width) */
    cudarl_pixel_format format;
    size_t pitch;               /* bytes from one row to the next (NV12: of the Y plane; its U,V
                                   plane follows at height x pitch with the same pitch); 0: tight
                                   (width x bytes a pixel) */
    int crop_x, crop_y, crop_width, crop_height; /* all 0: the whole frame; else the rectangle
                                   read, inside the frame, at any pixel (each pixel converted as
                                   in the whole frame, then cropped) */
} cudarl_camera;

/* GRAY8, 0 x 0, tight, no crop; struct_size bytes, the caller's sizeof. */
cudarl_status cudarl_camera_default_sized(cudarl_camera *cam, size_t struct_size);
static inline cudarl_status cudarl_camera_default(cudarl_camera *cam) {
    return cudarl_camera_default_sized(cam, sizeof *cam);
}

/* How the cameras become observations. */
typedef struct cudarl_frames_options {
    size_t struct_size;         /* set by cudarl_frames_options_default */
    int channels;               /* per frame: 1 gray (default) or 3 RGB; the policy's input
                                   channels C are a stack of C / channels frames */
    double deadline_us;         /* a tick longer than this counts as a deadline miss; 0 = none */
} cudarl_frames_options;

/* Gray, no deadline; struct_size bytes, the caller's sizeof. */
cudarl_status cudarl_frames_options_default_sized(cudarl_frames_options *opt,
                                                  size_t struct_size);
static inline cudarl_status cudarl_frames_options_default(cudarl_frames_options *opt) {
    return cudarl_frames_options_default_sized(opt, sizeof *opt);
}

/* The preprocessing of num_cameras cameras (cameras[i], host, copied) into `policy`, which must
 * take uint8 (C, H, W) pixel observations (a convolutional network whose input is scaled by
 * 1/255: nature-cnn, or a custom spec), 1 <= num_cameras <= its max_batch; opt NULL: the
 * defaults. The policy stays the caller's: free it after the frames. The preprocessing runs where
 * the policy runs. Memory: one host arena (the handle, the latency ring, the frame pointers of
 * the two ticks that may be in flight; for a CPU policy each camera's stack and the observation
 * batch); for a CUDA policy also one device arena (two staging sets, a buffer per camera each,
 * one per tick in flight; the stacks; two batches), one pinned host block (two tick states and
 * output blocks, and two bounce buffers for pageable frames, each min(largest frame, 4 MiB)), a
 * copy stream, events per staging set and four CUDA graphs of a tick's device work (conversion,
 * stacking, the policy's forward; one per staging set for ticks that upload, one per set for
 * ticks whose frames are all read in place), each launched once here; ticks allocate nothing.
 * A bad camera, option or policy is CUDARL_ERR_INVALID_ARG naming the problem and the fix; a
 * CUDA failure _CUDA or _OUT_OF_MEMORY. */
cudarl_status cudarl_frames_create(cudarl_policy *policy, const cudarl_camera *cameras,
                                   int num_cameras, const cudarl_frames_options *opt,
                                   cudarl_frames **out);

/* One tick: frames[i] is camera i's frame now; each is converted, cropped and
 * resized into the newest slot of camera i's stack, the stacks packed into the observation batch
 * (num_cameras rows of (C, H, W); in a row the frames oldest first, newest last, each frame's
 * channels R, G, B or its gray plane, as CartPolePixels-v1 and Gymnasium's FrameStackObservation
 * stack them), and the policy acts on it: actions, values, logits as cudarl_policy_act writes
 * them for n = num_cameras rows. The first tick after create or cudarl_frames_reset fills each
 * camera's whole stack with its frame (Gymnasium's reset padding). The tick's duration (entry to
 * return: uploads, conversion, act, the outputs on the host) goes to the frames' own latency ring.
 * Allocates nothing. Where frames[i] lives: for a CPU policy host memory (device memory is
 * CUDARL_ERR_UNSUPPORTED); for a CUDA policy each pointer is classified the first time the
 * frames see it (cudaPointerGetAttributes; remembered until cudarl_frames_reset, docs/cameras.md
 * says why that stays right): device or managed memory of the policy's GPU is read in place (it
 * must be complete when the tick is called: the tick does not wait for the caller's streams,
 * and a cudaMemcpy from pageable memory may return before its last bytes land, so synchronize
 * first), pinned host memory is copied by DMA (read in place on an integrated GPU, whose pinned
 * memory is the device's), pageable host memory through the pinned bounce buffers, of each frame
 * only the bytes its conversion reads (the crop's rows; NV12 into gray, the Y plane); the
 * cameras but the last are converted while the last one's frame is copied, the last after it,
 * and the device work is one CUDA graph launch (where every frame is read in place, one kernel
 * for all cameras).
 * Outputs may be host or device memory of the policy's GPU, as for cudarl_policy_act.
 * The tick is cudarl_frames_submit then cudarl_frames_wait, with the same checks and results;
 * with a tick submitted and not yet waited for it is CUDARL_ERR_INVALID_ARG (wait first). */
cudarl_status cudarl_frames_tick(cudarl_frames *frames, const void *const *camera_frames,
                                 void *actions, float *values, float *logits);

/* The tick in two halves, so that tick t+1's uploads overlap tick t's conversion and forward:
 * submit(t), submit(t+1), wait(t), submit(t+2), wait(t+1), ... At most two ticks are in flight;
 * they complete in order, each exactly as cudarl_frames_tick would have computed it (the stacks
 * advance tick after tick, the outputs bit for bit those of the same ticks run one by one).
 *
 * cudarl_frames_submit starts a tick on camera_frames (as cudarl_frames_tick takes them, checked
 * alike) and returns without waiting for it. A CUDA policy's submit enqueues the tick's uploads
 * on the copy stream into the staging set the tick takes (two sets, used in turn) and its graph
 * on the policy's stream after them; a pageable frame is copied into the bounce buffers before
 * submit returns, a pinned one later by DMA, a device one read by the graph. A CPU policy's
 * submit only checks and records the tick, whose work runs in its wait. Either way every frame
 * camera_frames[i] points to must stay valid and unchanged until the wait of its tick returns;
 * the frames are the caller's again then (the array of pointers is copied: it may be reused at
 * once). Allocates nothing.
 *
 * cudarl_frames_wait waits for the oldest tick in flight and writes its outputs (as
 * cudarl_frames_tick writes them; host or device memory of the policy's GPU). Its latency,
 * from its submit's entry to this wait's return, goes to the latency ring (p50, p99, max and the
 * deadline misses of cudarl_frames_latency), so that a tick's time counts whatever it waited
 * behind. After it, cudarl_frames_observations gives this tick's batch. Allocates nothing.
 *
 * Misuse is CUDARL_ERR_INVALID_ARG naming the fix and changes nothing: a submit with two ticks
 * in flight, a wait with none, cudarl_frames_tick or cudarl_frames_reset with any in flight; a
 * wait refused for its outputs leaves its tick in flight. A submit or wait that fails on the
 * device (CUDARL_ERR_CUDA) drops its tick. cudarl_frames_free with ticks in flight waits for
 * their device work and drops them. */
cudarl_status cudarl_frames_submit(cudarl_frames *frames, const void *const *camera_frames);
cudarl_status cudarl_frames_wait(cudarl_frames *frames, void *actions, float *values,
                                 float *logits);

/* Starts the stacks over: the next tick fills them with its frames. A CUDA policy's frames also
 * forget the pointers they have seen: the next tick looks their memory kinds up again. With a
 * tick in flight (cudarl_frames_submit) CUDARL_ERR_INVALID_ARG: wait for it first. */
cudarl_status cudarl_frames_reset(cudarl_frames *frames);

/* Copies the observation batch the last tick acted on (the last cudarl_frames_tick, or the
 * tick of the last cudarl_frames_wait: uint8 (num_cameras, C, H, W)) into out (host, bytes >=
 * that size; from the device for a CUDA policy); before the first tick CUDARL_ERR_INVALID_ARG. */
cudarl_status cudarl_frames_observations(const cudarl_frames *frames, void *out, size_t bytes);

/* Latency of the ticks, as cudarl_policy_latency for act(): p50, p99, max, deadline misses
 * against cudarl_frames_options.deadline_us. */
cudarl_status cudarl_frames_latency(const cudarl_frames *frames, cudarl_latency_stats *stats);

/* Releases what cudarl_frames_create allocated (NULL is fine); not the policy. */
void cudarl_frames_free(cudarl_frames *frames);

/* One frame (host) of camera `cam` through the CPU reference: converted, cropped and
 * area-resized as above into out (host, uint8 (channels, out_height, out_width), planar);
 * channels 1 or 3, 1 <= out_width, out_height <= CUDARL_FRAME_MAX_SIDE. What the tests and
 * benchmarks compare with. Allocates nothing. */
cudarl_status cudarl_frame_convert(const cudarl_camera *cam, const void *frame, int out_width,
                                   int out_height, int channels, uint8_t *out);

/* ---- policies built in memory, for benchmarks and tests ------------------------------ */

/* What a CUDA policy computes its fp32 and TF32 convolutions with (BF16 and FP16 have one
 * engine of their own, the half-precision implicit GEMM "igemm"). */
typedef enum cudarl_conv_engine {
    CUDARL_CONV_ENGINE_AUTO = 0, /* $CUDARL_CONV_ENGINE ("gemm" or "cudnn") if set, else GEMM */
    CUDARL_CONV_ENGINE_GEMM,     /* im2col and cuBLAS */
    CUDARL_CONV_ENGINE_CUDNN,    /* cuDNN */
} cudarl_conv_engine;

/* Whether this build has `engine`: CUDNN only where cuDNN was found when cudarl was
 * configured; AUTO and GEMM always (on the CPU every engine means the CPU's convolution). */
int cudarl_conv_engine_built(cudarl_conv_engine engine);

/* The parameters of the convolutional network `network` (its text form, as a checkpoint's
 * metadata "network" holds it: format "cudarl-convnet", an input, layers and heads): their
 * count into *num_params and, unless params is NULL, their values into params (host, cap floats,
 * state_dict order), drawn as PyTorch's default nn.Conv2d / nn.Linear init does: each weight and
 * bias uniform in +-1/sqrt(fan_in), tensor by tensor from Philox stream 0 of `seed`. A network
 * that does not parse is CUDARL_ERR_FORMAT naming the field; cap < *num_params _INVALID_ARG. */
cudarl_status cudarl_network_init_params(const char *network, uint64_t seed, float *params,
                                         size_t cap, size_t *num_params);

/* Loads the convolutional network `network` (its text form, as above) with the weights `params`
 * (host, num_params floats in state_dict order, copied) as cudarl_policy_load loads a
 * checkpoint's: algo "ppo" or "dqn" from its heads, observations as its input says, `label` in
 * place of the env id (messages, cudarl_policy_info); `engine` picks the convolutions of a CUDA
 * policy. Same options, refusals and memory as cudarl_policy_load; a network that does not parse
 * is CUDARL_ERR_FORMAT, a num_params other than the network's _INVALID_ARG. */
cudarl_status cudarl_policy_load_network(const char *network, const float *params,
                                         size_t num_params, const char *label,
                                         cudarl_conv_engine engine,
                                         const cudarl_policy_options *opt, cudarl_policy **out);

/* What a policy's convolutions run on: "gemm", "cudnn" or (BF16, FP16) "igemm" on CUDA, "cpu" on
 * the CPU; "" for a policy without convolutions. (static storage) */
const char *cudarl_policy_conv_engine(const cudarl_policy *policy);

/* GPU time of the forward act() runs for n rows (1 <= n <= max_batch): `iters` launches of the
 * policy's forward-only CUDA graph on the observations the device holds (the latest act()'s),
 * ms (host, iters) the milliseconds of each launch between two CUDA events on the policy's
 * stream. A CPU policy is CUDARL_ERR_UNSUPPORTED. */
cudarl_status cudarl_policy_time_forward(cudarl_policy *policy, int n, int iters, float *ms);

#ifdef __cplusplus
}
#endif
#endif
