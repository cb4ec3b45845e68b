/* cudarl train: PPO (the default) or DQN (--algo dqn) from flags named as CleanRL's and a TOML
 * file of them (--config), or a run continued from its checkpoint (--resume). Parses, then
 * runs; the resolved config goes beside the run (runs/<run>/config.toml). */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cmd.h"
#include "cudarl.h"

typedef struct train_opts {
    cudarl_ppo_config cfg;
    char algo[16];
    char resume[PATH_MAX];
    char config[PATH_MAX];
    int num_gpus; /* --num-gpus (0: not given) */
} train_opts;

#define CFG(field) offsetof(train_opts, cfg.field)
#define CONFIG_HELP "read flags from this TOML file (keys: these flags' names; the flags given here win)"

static const arg_spec train_specs[] = {
    {"algo", ARG_STR, offsetof(train_opts, algo), 16, 0, 0, "algorithm: ppo or dqn (cudarl train --algo dqn --help)"},
    {"env-id", ARG_STR, CFG(env_id), 64, 0, 0, "environment id"},
    {"seed", ARG_U64, CFG(seed), 0, 0, FLAG_MAX, "seed of every random stream"},
    {"total-timesteps", ARG_I64, CFG(total_timesteps), 0, LIB_RANGE, "env steps to train for"},
    {"learning-rate", ARG_F64, CFG(learning_rate), 0, LIB_RANGE, "Adam learning rate"},
    {"num-envs", ARG_INT, CFG(num_envs), 0, LIB_RANGE, "parallel environments"},
    {"num-steps", ARG_INT, CFG(num_steps), 0, LIB_RANGE, "steps per env per rollout"},
    {"anneal-lr", ARG_BOOL, CFG(anneal_lr), 0, 0, 1, "anneal the learning rate linearly to 0"},
    {"gamma", ARG_F64, CFG(gamma), 0, LIB_RANGE, "discount factor"},
    {"gae-lambda", ARG_F64, CFG(gae_lambda), 0, LIB_RANGE, "GAE lambda"},
    {"num-minibatches", ARG_INT, CFG(num_minibatches), 0, LIB_RANGE, "minibatches per epoch"},
    {"update-epochs", ARG_INT, CFG(update_epochs), 0, LIB_RANGE, "epochs per update"},
    {"norm-adv", ARG_BOOL, CFG(norm_adv), 0, 0, 1, "normalise advantages per minibatch"},
    {"clip-coef", ARG_F64, CFG(clip_coef), 0, LIB_RANGE, "surrogate clipping coefficient"},
    {"clip-vloss", ARG_BOOL, CFG(clip_vloss), 0, 0, 1, "clip the value loss"},
    {"ent-coef", ARG_F64, CFG(ent_coef), 0, LIB_RANGE, "entropy coefficient"},
    {"vf-coef", ARG_F64, CFG(vf_coef), 0, LIB_RANGE, "value loss coefficient"},
    {"max-grad-norm", ARG_F64, CFG(max_grad_norm), 0, LIB_RANGE, "global gradient norm clip"},
    {"target-kl", ARG_F64, CFG(target_kl), 0, LIB_RANGE, "stop an update's epochs above this KL (0: off)"},
    {"hidden", ARG_INT, CFG(hidden), 0, LIB_RANGE, "hidden width of actor and critic MLPs"},
    {"norm-obs", ARG_BOOL, CFG(norm_obs), 0, 0, 1, "normalize observations by running statistics (Gymnasium's NormalizeObservation, clip 10)"},
    {"norm-reward", ARG_BOOL, CFG(norm_reward), 0, 0, 1, "normalize rewards by the running std of the discounted return (NormalizeReward, clip 10)"},
    {"policy", ARG_STR, CFG(policy), 16, 0, 0, "actor-critic: mlp, or for image envs minatar-cnn / nature-cnn"},
    {"separate-critic", ARG_BOOL, CFG(separate_critic), 0, 0, 1, "conv policies: the critic on a trunk of its own (twice the network's work), not a head on the actor's"},
    {"device", ARG_DEVICE, CFG(device), 0, 0, 0, "cpu, cuda or auto (GPU if present)"},
    {"threads", ARG_INT, CFG(threads), 0, LIB_RANGE, "CPU threads for the networks and updates (0: all cores)"},
    {"env-device", ARG_DEVICE, CFG(env_device), 0, 0, 0, "where envs step: cpu (threads), cuda (on the GPU: CartPole; MinAtar and CartPolePixels with a conv policy) or auto (on the GPU where the env can step there, else threads)"},
    {"env-threads", ARG_INT, CFG(env_threads), 0, LIB_RANGE, "threads stepping CPU envs (0: all cores)"},
    {"env-groups", ARG_INT, CFG(env_groups), 0, LIB_RANGE, "CPU env groups stepped while the policy runs on another (0: 2 on a GPU, else 1)"},
    {"async", ARG_BOOL, CFG(async), 0, 0, 1, "CPU envs: next rollout while the learner updates (policy one update stale)"},
    {"actor-device", ARG_INT, CFG(actor_device), 0, LIB_RANGE, "GPU index of the actor (rollouts), and of the learner unless --learner-device (-1: GPU 0)"},
    {"learner-device", ARG_INT, CFG(learner_device), 0, LIB_RANGE, "GPU index of the learner; another GPU than the actor's needs --async (-1: the actor's)"},
    {"run-name", ARG_STR, CFG(run_name), 128, 0, 0, "run folder name; empty: <env>__ppo__<seed>__<unix time>"},
    {"runs-dir", ARG_STR, CFG(runs_dir), 256, 0, 0, "where run folders go"},
    {"checkpoint-every", ARG_INT, CFG(checkpoint_every), 0, LIB_RANGE, "iterations between checkpoints (0: at the end)"},
    {"quiet", ARG_BOOL, CFG(quiet), 0, 0, 1, "no progress line"},
    {"profile", ARG_BOOL, CFG(profile), 0, 0, 1, "time per phase, host-device syncs, a conv rollout's env/forward split, FLOP/s against the device's peak, at the end"},
    {"precision", ARG_PRECISION, CFG(precision), 0, 0, 0, "fp32, or on the GPU tf32 (cuBLAS products on TF32 tensor cores), bf16 or fp16 (every product's inputs in the format, fp32 sums; fp16 with dynamic loss scaling)"},
    {"resume", ARG_STR, offsetof(train_opts, resume), PATH_MAX, 0, 0, "continue from this checkpoint"},
    {"config", ARG_STR, offsetof(train_opts, config), PATH_MAX, 0, 0, CONFIG_HELP},
    {"num-gpus", ARG_INT, offsetof(train_opts, num_gpus), 0, 1, 1024, "data parallel in this process on this many GPUs (a thread each, from --actor-device on), gradients exchanged over NCCL (docs/multigpu.md; 1: the NCCL path on one GPU)"},
};
#define N_TRAIN_SPECS ((int)(sizeof train_specs / sizeof train_specs[0]))

/* Flags a resumed run may change; the others come from the checkpoint. */
static const char *const resume_overridable[] = {"total-timesteps", "device", "threads", "quiet", "profile",
                                                 "checkpoint-every", "resume", "algo", "config",
                                                 "env-device", "env-threads", "env-groups",
                                                 "actor-device", "learner-device", "mem-budget",
                                                 "num-gpus", NULL};
/* Keys a config file may not set: they name files of this command line. */
static const char *const not_in_file[] = {"config", "resume", NULL};

/* Whether spec s holds the same value in options a and b (a --runs-dir by the folder it
 * names). */
static int same_value(const arg_spec *s, const void *a, const void *b) {
    const char *x = (const char *)a + s->offset, *y = (const char *)b + s->offset;
    if (!strcmp(s->name, "runs-dir")) {
        char rx[PATH_MAX], ry[PATH_MAX];
        return realpath(x, rx) && realpath(y, ry) && !strcmp(rx, ry);
    }
    switch (s->type) {
    case ARG_STR: return !strcmp(x, y);
    case ARG_INT: case ARG_BOOL: return *(const int *)x == *(const int *)y;
    case ARG_I64: case ARG_BYTES: return *(const int64_t *)x == *(const int64_t *)y;
    case ARG_U64: return *(const uint64_t *)x == *(const uint64_t *)y;
    case ARG_F64: return *(const double *)x == *(const double *)y;
    case ARG_DEVICE: return *(const cudarl_device_kind *)x == *(const cudarl_device_kind *)y;
    case ARG_PRECISION: return *(const cudarl_precision *)x == *(const cudarl_precision *)y;
    }
    return 0;
}

/* With --resume: a flag a resumed run may not change is refused on the command line, and in the
 * --config file unless it holds the checkpoint's value (so the run's own config.toml resumes
 * it). `given` holds the parsed flags, `saved` the checkpoint's. 0, or -1 after one line. */
static int check_resume_flags(const arg_spec *specs, int n, const arg_result *r,
                              const void *given, const void *saved, const char *config) {
    for (int i = 0; i < n; i++) {
        if (!r->set[i]) continue;
        int ok = 0;
        for (const char *const *k = resume_overridable; *k; k++) ok |= !strcmp(*k, specs[i].name);
        if (ok) continue;
        if (!r->line[i]) {
            fprintf(stderr, "cudarl train: --%s cannot be changed with --resume: a resumed run keeps "
                            "its checkpoint's hyperparameters; drop --%s, or start a new run "
                            "without --resume\n", specs[i].name, specs[i].name);
            return -1;
        }
        if (!same_value(&specs[i], given, saved)) {
            fprintf(stderr, "cudarl train: %s:%d: %s differs from the checkpoint's, and a resumed "
                            "run keeps its checkpoint's hyperparameters; remove the key or set it "
                            "to the run's value (its config.toml has them), or start a new run "
                            "without --resume\n", config, r->line[i], specs[i].name);
            return -1;
        }
    }
    return 0;
}

/* The run folder a checkpoint lies in: runs_dir (cap_dir bytes) and run_name (cap_name), from
 * its real path. 0, or -1 (not a regular folder layout) / -2 (the library's error) after one
 * line. */
static int run_folder_of(const char *ckpt, char *runs_dir, size_t cap_dir, char *run_name,
                         size_t cap_name) {
    char real[PATH_MAX];
    if (!realpath(ckpt, real)) return cmd_fail("cannot resume"), -2;
    char *slash = strrchr(real, '/');
    *slash = 0;
    slash = strrchr(real, '/');
    if (!slash) { /* the checkpoint lies in "/" itself: no run folder to continue in */
        fprintf(stderr, "cudarl train: cannot resume '%s': it is not inside a run folder; move "
                        "it to runs/<run>/model.safetensors and resume from there\n", ckpt);
        return -2;
    }
    snprintf(run_name, cap_name, "%s", slash + 1);
    if (slash == real) {
        snprintf(runs_dir, cap_dir, "/");
        return 0;
    }
    *slash = 0;
    if (strlen(real) >= cap_dir) {
        fprintf(stderr, "cudarl train: the checkpoint's folder path is over %zu characters; move "
                        "the run folder to a shorter path\n", cap_dir - 1);
        return -2;
    }
    memcpy(runs_dir, real, strlen(real) + 1);
    return 0;
}

static int apply_resume(train_opts *o, const arg_result *r) {
    train_opts saved = *o;
    if (cudarl_ppo_config_load(o->resume, &saved.cfg) != CUDARL_OK)
        return cmd_fail("cannot resume"), -2;
    /* the run continues in the checkpoint's folder */
    int rc = run_folder_of(o->resume, saved.cfg.runs_dir, sizeof saved.cfg.runs_dir,
                           saved.cfg.run_name, sizeof saved.cfg.run_name);
    if (rc) return rc;
    if (check_resume_flags(train_specs, N_TRAIN_SPECS, r, o, &saved, o->config)) return -1;
    int tt = args_find(train_specs, N_TRAIN_SPECS, "total-timesteps");
    if (r->set[tt]) saved.cfg.total_timesteps = o->cfg.total_timesteps;
    saved.cfg.device = o->cfg.device, saved.cfg.threads = o->cfg.threads;
    saved.cfg.quiet = o->cfg.quiet, saved.cfg.profile = o->cfg.profile;
    saved.cfg.checkpoint_every = o->cfg.checkpoint_every;
    saved.cfg.env_device = o->cfg.env_device, saved.cfg.env_threads = o->cfg.env_threads;
    saved.cfg.env_groups = o->cfg.env_groups;
    saved.cfg.actor_device = o->cfg.actor_device, saved.cfg.learner_device = o->cfg.learner_device;
    o->cfg = saved.cfg;
    return 0;
}

/* The header of a run's config.toml. */
static const char config_header[] =
    "# cudarl train: this run's resolved config (the defaults, the presets of its device, policy\n"
    "# and env, the --config file and the flags). `cudarl train --config config.toml` runs it\n"
    "# again (add --run-name or --runs-dir for a new folder; other flags given win).\n";
/* The flags a run's config.toml leaves out: files of the command line, not the run's config. */
static const char *const not_saved[] = {"config", "resume", "num-gpus", NULL};

/* The resolved config of `opts` (its device: `kind`, the context's) as TOML into out; 0, or -1
 * after one line. */
static int render_config(const arg_spec *specs, int n, void *opts, cudarl_device_kind *device,
                         cudarl_device_kind kind, char *out, size_t cap) {
    cudarl_device_kind given = *device;
    *device = kind; /* auto as it resolved: a copy of the run trains where this one did */
    int rc = args_format_toml(specs, n, opts, not_saved, config_header, out, cap);
    *device = given;
    if (rc) fprintf(stderr, "cudarl train: the resolved config is over %zu bytes (a bug in "
                            "cudarl: please report it)\n", cap);
    return rc;
}

/* The --config file of argv, parsed into doc (NULL without --config); *path its path. 0, or -1
 * after one line naming the file, the line and the fix. */
static int read_config(int argc, char **argv, toml_doc **doc, const char **path) {
    *doc = NULL, *path = NULL;
    for (int i = 0; i < argc; i++) {
        if (!strncmp(argv[i], "--config=", 9)) *path = argv[i] + 9;
        else if (!strcmp(argv[i], "--config") && i + 1 < argc) *path = argv[++i];
    }
    if (!*path) return 0;
    if (!**path) {
        fprintf(stderr, "cudarl train: --config must not be empty; pass the path of a TOML file\n");
        return -1;
    }
    *doc = malloc(sizeof **doc);
    char err[1200];
    if (!*doc) snprintf(err, sizeof err, "out of memory reading '%s'", *path);
    if (!*doc || toml_parse_file(*path, *doc, err, sizeof err) != 0) {
        fprintf(stderr, "cudarl train: %s\n", err);
        free(*doc);
        *doc = NULL;
        return -1;
    }
    return 0;
}

static void print_summary(const cudarl_train_summary *s) {
    printf("cudarl: step %lld: %lld steps in %.2f s (%.0f steps/s), %lld episodes, mean return "
           "of the last 100: %.1f\n", (long long)s->global_step, (long long)s->run_steps,
           s->train_seconds, s->sps, (long long)s->episodes, s->mean_return_100);
    if (s->solved_step >= 0 && s->solved_seconds >= 0)
        printf("cudarl: solved (mean of 100 >= threshold) at step %lld, %.3f s into the loop "
               "(unix time %.3f)\n", (long long)s->solved_step, s->solved_seconds,
               s->solved_unix_time);
    else if (s->solved_step >= 0) /* solved before the checkpoint this run resumed */
        printf("cudarl: solved (mean of 100 >= threshold) at step %lld, before this resume\n",
               (long long)s->solved_step);
    if (s->device_bytes_after_setup > 0)
        printf("cudarl: the host waited on the device %.2f times per iteration, with up to 4 "
               "iterations queued ahead of it (metrics arrive through pinned memory)\n",
               s->host_syncs_per_iteration);
    if (s->device_bytes_after_setup > 0)
        printf("cudarl: device memory: training arena %.1f MiB; %.1f MiB in use on the device "
               "(context and libraries included, and any other process on the device), %+.1f "
               "MiB over the run\n",
               (double)s->arena_bytes / 1048576.0, (double)s->device_bytes_after_setup / 1048576.0,
               (double)s->device_bytes_growth / 1048576.0);
    printf("cudarl: checkpoint %s/model.safetensors, metrics %s/metrics.csv\n", s->run_dir,
           s->run_dir);
}

typedef struct dqn_opts {
    cudarl_dqn_config cfg;
    char algo[16];
    char resume[PATH_MAX];
    char config[PATH_MAX];
} dqn_opts;

#define DCFG(field) offsetof(dqn_opts, cfg.field)

static const arg_spec dqn_specs[] = {
    {"algo", ARG_STR, offsetof(dqn_opts, algo), 16, 0, 0, "algorithm: dqn"},
    {"env-id", ARG_STR, DCFG(env_id), 64, 0, 0, "environment id"},
    {"seed", ARG_U64, DCFG(seed), 0, 0, FLAG_MAX, "seed of every random stream"},
    {"total-timesteps", ARG_I64, DCFG(total_timesteps), 0, LIB_RANGE, "env steps to train for"},
    {"learning-rate", ARG_F64, DCFG(learning_rate), 0, LIB_RANGE, "Adam learning rate"},
    {"num-envs", ARG_INT, DCFG(num_envs), 0, LIB_RANGE, "parallel environments"},
    {"buffer-size", ARG_I64, DCFG(buffer_size), 0, LIB_RANGE, "replay buffer capacity (transitions)"},
    {"gamma", ARG_F64, DCFG(gamma), 0, LIB_RANGE, "discount factor"},
    {"tau", ARG_F64, DCFG(tau), 0, LIB_RANGE, "target network update rate (1: copy)"},
    {"target-network-frequency", ARG_I64, DCFG(target_network_frequency), 0, LIB_RANGE, "env steps between target updates"},
    {"batch-size", ARG_INT, DCFG(batch_size), 0, LIB_RANGE, "replay minibatch"},
    {"start-e", ARG_F64, DCFG(start_e), 0, LIB_RANGE, "initial exploration epsilon"},
    {"end-e", ARG_F64, DCFG(end_e), 0, LIB_RANGE, "final exploration epsilon"},
    {"exploration-fraction", ARG_F64, DCFG(exploration_fraction), 0, LIB_RANGE, "fraction of the steps to anneal epsilon over"},
    {"learning-starts", ARG_I64, DCFG(learning_starts), 0, LIB_RANGE, "env steps before learning"},
    {"train-frequency", ARG_I64, DCFG(train_frequency), 0, LIB_RANGE, "env steps between gradient steps"},
    {"double-dqn", ARG_BOOL, DCFG(double_dqn), 0, 0, 1, "double DQN targets"},
    {"prioritized", ARG_BOOL, DCFG(prioritized), 0, 0, 1, "proportional prioritized replay"},
    {"prioritized-alpha", ARG_F64, DCFG(prioritized_alpha), 0, LIB_RANGE, "priority exponent"},
    {"prioritized-beta", ARG_F64, DCFG(prioritized_beta), 0, LIB_RANGE, "initial importance exponent (annealed to 1)"},
    {"huber", ARG_BOOL, DCFG(huber), 0, 0, 1, "Huber TD loss (else MSE, as dqn.py)"},
    {"max-grad-norm", ARG_F64, DCFG(max_grad_norm), 0, LIB_RANGE, "global gradient norm clip (0: off)"},
    {"hidden1", ARG_INT, DCFG(hidden1), 0, LIB_RANGE, "Q-network first hidden width"},
    {"hidden2", ARG_INT, DCFG(hidden2), 0, LIB_RANGE, "Q-network second hidden width"},
    {"policy", ARG_STR, DCFG(policy), 16, 0, 0, "Q-network: mlp (any env; uint8 observations cast unscaled, as MinAtar's 0/1 channels want), or for image envs minatar-cnn / nature-cnn"},
    {"mem-budget", ARG_BYTES, DCFG(mem_budget), 0, LIB_RANGE, "memory the run may use (it refuses to start if it needs more)"},
    {"device", ARG_DEVICE, DCFG(device), 0, 0, 0, "cpu, cuda or auto (GPU if present)"},
    {"threads", ARG_INT, DCFG(threads), 0, LIB_RANGE, "CPU threads for the networks and updates (0: all cores)"},
    {"env-device", ARG_DEVICE, DCFG(env_device), 0, 0, 0, "where envs step: cpu (threads, any env), cuda (on the GPU: CartPole, MinAtar) or auto"},
    {"env-threads", ARG_INT, DCFG(env_threads), 0, LIB_RANGE, "threads stepping CPU envs (0: all cores)"},
    {"precision", ARG_PRECISION, DCFG(precision), 0, 0, 0, "fp32, or on the GPU tf32 (cuBLAS products on TF32 tensor cores), bf16 or fp16 (every product's inputs in the format, fp32 sums; fp16 with dynamic loss scaling)"},
    {"replay-frames", ARG_BOOL, DCFG(replay_frames), 0, 0, 1, "frame-stacked envs: store each frame once and rebuild the stacks when sampling"},
    {"run-name", ARG_STR, DCFG(run_name), 128, 0, 0, "run folder name; empty: <env>__dqn__<seed>__<unix time>"},
    {"runs-dir", ARG_STR, DCFG(runs_dir), 256, 0, 0, "where run folders go"},
    {"quiet", ARG_BOOL, DCFG(quiet), 0, 0, 1, "no progress line"},
    {"resume", ARG_STR, offsetof(dqn_opts, resume), PATH_MAX, 0, 0, "continue from this checkpoint"},
    {"config", ARG_STR, offsetof(dqn_opts, config), PATH_MAX, 0, 0, CONFIG_HELP},
};
#define N_DQN_SPECS ((int)(sizeof dqn_specs / sizeof dqn_specs[0]))

/* --resume for DQN: the checkpoint's hyperparameters and run folder, with the flags a resume
 * may change over them. 0, -1 (usage) or -2 (failed) after one line. */
static int apply_resume_dqn(dqn_opts *o, const arg_result *r) {
    dqn_opts saved = *o;
    if (cudarl_dqn_config_load(o->resume, &saved.cfg) != CUDARL_OK)
        return cmd_fail("cannot resume"), -2;
    int rc = run_folder_of(o->resume, saved.cfg.runs_dir, sizeof saved.cfg.runs_dir,
                           saved.cfg.run_name, sizeof saved.cfg.run_name);
    if (rc) return rc;
    if (check_resume_flags(dqn_specs, N_DQN_SPECS, r, o, &saved, o->config)) return -1;
    int tt = args_find(dqn_specs, N_DQN_SPECS, "total-timesteps");
    int ed = args_find(dqn_specs, N_DQN_SPECS, "env-device");
    if (r->set[tt]) saved.cfg.total_timesteps = o->cfg.total_timesteps;
    if (r->set[ed]) saved.cfg.env_device = o->cfg.env_device; /* else where the run had them */
    saved.cfg.device = o->cfg.device, saved.cfg.threads = o->cfg.threads;
    saved.cfg.quiet = o->cfg.quiet, saved.cfg.env_threads = o->cfg.env_threads;
    saved.cfg.mem_budget = o->cfg.mem_budget;
    o->cfg = saved.cfg;
    return 0;
}

static int train_dqn(int argc, char **argv, const toml_doc *doc, const char *doc_path) {
    dqn_opts o;
    memset(&o, 0, sizeof o);
    cudarl_dqn_config_default(&o.cfg, NULL);
    snprintf(o.algo, sizeof o.algo, "dqn");
    if (cmd_wants_help(argc, argv)) {
        printf("usage: cudarl train --algo dqn [flags]\n\nflags (CleanRL dqn.py's names):\n");
        args_print_help(dqn_specs, N_DQN_SPECS, &o, CUDARL_FLAGS_DQN);
        printf("\nOn a CUDA device these defaults change to fill the GPU: num-envs 32, "
               "train-frequency 16,\nbatch-size 256, learning-rate 0.002, buffer-size 50000, "
               "target-network-frequency 640,\nlearning-starts 2048, exploration-fraction "
               "0.15, total-timesteps 250000.\nAn image env picks its Q-network (minatar-cnn, "
               "nature-cnn); MinAtar's games on CUDA their\nrecipe: num-envs 256, batch-size 512, "
               "learning-rate 0.001, train-frequency 64,\ntarget-network-frequency 8192, "
               "buffer-size 100000, learning-starts 5000, end-e 0.01,\nexploration-fraction 0.02, "
               "huber, total-timesteps 2500000. Flags given still win.\n");
        printf("A --config FILE holds these flags as TOML (name = value, as a run's "
               "config.toml);\nthe flags given here win over it.\n");
        return 0;
    }
    const char *cmd = "train --algo dqn";
    arg_result r;
    if (args_parse_with_config(dqn_specs, N_DQN_SPECS, &o, doc, doc_path, not_in_file, argc, argv,
                               cmd, CUDARL_FLAGS_DQN, 0, &r) != 0)
        return EXIT_USAGE;
    if (o.resume[0]) {
        int rc = apply_resume_dqn(&o, &r);
        if (rc) return rc == -1 ? EXIT_USAGE : EXIT_FAILURE;
    }
    if (cudarl_dqn_config_validate(&o.cfg) != CUDARL_OK) {
        fprintf(stderr, "cudarl train: %s\n", cudarl_last_error());
        return EXIT_USAGE;
    }
    cudarl_ctx *ctx;
    if (cudarl_ctx_init(&ctx, o.cfg.device, 0) != CUDARL_OK) return cmd_fail("no device");
    if (!o.resume[0]) { /* the presets, then the file's and the user's flags over them */
        char env_id[sizeof o.cfg.env_id]; /* --env-id picks a preset too */
        memcpy(env_id, o.cfg.env_id, sizeof env_id);
        cudarl_dqn_config_default(&o.cfg, NULL);
        cudarl_dqn_config_for_device(&o.cfg, cudarl_ctx_kind(ctx));
        cudarl_dqn_config_for_env_on(&o.cfg, env_id, cudarl_ctx_kind(ctx));
        args_parse_with_config(dqn_specs, N_DQN_SPECS, &o, doc, doc_path, not_in_file, argc,
                               argv, cmd, CUDARL_FLAGS_DQN, 0, &r);
        if (cudarl_dqn_config_validate(&o.cfg) != CUDARL_OK) {
            fprintf(stderr, "cudarl train: %s\n", cudarl_last_error());
            cudarl_ctx_free(ctx);
            return EXIT_USAGE;
        }
    }
    static char toml[16384];
    if (render_config(dqn_specs, N_DQN_SPECS, &o, &o.cfg.device, cudarl_ctx_kind(ctx), toml,
                      sizeof toml)) {
        cudarl_ctx_free(ctx);
        return EXIT_FAILURE;
    }
    o.cfg.config_toml = toml;
    cmd_catch_stop_signals();
    cudarl_train_summary sum;
    cudarl_status s = o.resume[0] ? cudarl_dqn_train_resume(ctx, &o.cfg, o.resume, &sum)
                                  : cudarl_dqn_train(ctx, &o.cfg, &sum);
    cudarl_ctx_free(ctx);
    if (s != CUDARL_OK) return cmd_fail("training failed");
    if (cudarl_dist_rank() != 0) return sum.interrupted ? cmd_interrupted_exit_code() : 0;
    print_summary(&sum); /* data parallel: rank 0's, the job's */
    if (sum.interrupted) {
        printf("cudarl: stopped by %s; continue with: cudarl train --resume "
               "%s/model.safetensors\n", cmd_signal_name(cmd_stop_signal()), sum.run_dir);
        return cmd_interrupted_exit_code();
    }
    return 0;
}

/* The algo of the run: --algo in argv, else the config file's algo key, else, with --resume,
 * the checkpoint's, else "ppo". */
static const char *algo_of(int argc, char **argv, const toml_doc *doc) {
    const char *resume = NULL;
    for (int i = 0; i < argc; i++) {
        if (!strncmp(argv[i], "--algo=", 7)) return argv[i] + 7;
        if (!strcmp(argv[i], "--algo") && i + 1 < argc) return argv[i + 1];
        if (!strncmp(argv[i], "--resume=", 9)) resume = argv[i] + 9;
        if (!strcmp(argv[i], "--resume") && i + 1 < argc) resume = argv[i + 1];
    }
    const toml_entry *e = doc ? toml_find(doc, "algo") : NULL;
    if (e && e->type == TOML_STRING) return e->text;
    char algo[16];
    if (resume && !cmd_wants_help(argc, argv) &&
        cudarl_checkpoint_algo(resume, algo, sizeof algo) == CUDARL_OK && !strcmp(algo, "dqn"))
        return "dqn";
    return "ppo";
}

static int train_ppo(int argc, char **argv, const toml_doc *doc, const char *doc_path);

/* --num-gpus N > 1: the job's ranks, a thread each (cudarl_dist_run_threads), rank r on GPU
 * first_gpu + r; rank 0 on the context the command opened. */
typedef struct ppo_threads {
    const cudarl_ppo_config *cfg;
    const char *resume;
    cudarl_ctx *ctx0;
    int first_gpu;
    cudarl_train_summary *sum0; /* rank 0's */
} ppo_threads;

static int ppo_rank(int rank, void *arg) {
    const ppo_threads *j = arg;
    cudarl_ctx *ctx = j->ctx0;
    cudarl_train_summary sum;
    if (rank > 0 && cudarl_ctx_init(&ctx, CUDARL_DEVICE_CUDA, j->first_gpu + rank) != CUDARL_OK) {
        fprintf(stderr, "cudarl train: rank %d (cuda:%d): %s\n", rank, j->first_gpu + rank,
                cudarl_last_error());
        return EXIT_FAILURE;
    }
    cudarl_status s = cudarl_ppo_train(ctx, j->cfg, j->resume, rank == 0 ? j->sum0 : &sum);
    if (s != CUDARL_OK)
        fprintf(stderr, "cudarl train: rank %d: training failed: %s\n", rank, cudarl_last_error());
    if (rank > 0) cudarl_ctx_free(ctx);
    return s == CUDARL_OK ? 0 : EXIT_FAILURE;
}

int cmd_train(int argc, char **argv) {
    toml_doc *doc;
    const char *path;
    if (read_config(argc, argv, &doc, &path) != 0) return EXIT_USAGE;
    int rc = !strcmp(algo_of(argc, argv, doc), "dqn") ? train_dqn(argc, argv, doc, path)
                                                      : train_ppo(argc, argv, doc, path);
    free(doc);
    return rc;
}

static int train_ppo(int argc, char **argv, const toml_doc *doc, const char *doc_path) {
    train_opts o;
    memset(&o, 0, sizeof o);
    cudarl_ppo_config_default(&o.cfg, NULL);
    snprintf(o.algo, sizeof o.algo, "ppo");
    if (cmd_wants_help(argc, argv)) {
        printf("usage: cudarl train [flags]\n\nflags (CleanRL's names):\n");
        args_print_help(train_specs, N_TRAIN_SPECS, &o, CUDARL_FLAGS_PPO);
        printf("\nOn a CUDA device four defaults change to fill the GPU: num-envs 1024, "
               "num-steps 16,\nlearning-rate 0.005, total-timesteps 2000000. Flags given "
               "still win.\n");
        printf("With --policy minatar-cnn or nature-cnn (any device) they are CleanRL "
               "ppo_atari.py's instead:\nnum-envs 8, num-steps 128, learning-rate 0.00025, "
               "clip-coef 0.1, ent-coef 0.01,\ntotal-timesteps 10000000. An image env (MinAtar's "
               "games, CartPolePixels-v1) picks its\nconv policy (minatar-cnn, nature-cnn) and "
               "those defaults by itself; MinAtar's on CUDA are\nits recipe at scale: num-envs "
               "1024, num-steps 128, num-minibatches 32, learning-rate 0.002,\nclip-coef 0.2, "
               "precision bf16, total-timesteps 40000000.\n");
        printf("With an env of continuous actions (Pendulum-v1, the MuJoCo robots) they are "
               "CleanRL\nppo_continuous_action.py's: learning-rate 0.0003, num-minibatches 32, "
               "update-epochs 10,\nent-coef 0, num-envs 8 x num-steps 256 (its batch of 2048), "
               "total-timesteps 1000000,\nnorm-obs 1, norm-reward 1.\n");
        printf("A --config FILE holds these flags as TOML (name = value, as a run's "
               "config.toml);\nthe flags given here win over it.\n");
        return 0;
    }
    arg_result r;
    if (args_parse_with_config(train_specs, N_TRAIN_SPECS, &o, doc, doc_path, not_in_file, argc,
                               argv, "train", CUDARL_FLAGS_PPO, 0, &r) != 0)
        return EXIT_USAGE;
    if (strcmp(o.algo, "ppo")) {
        fprintf(stderr, "cudarl train: --algo '%s' is not available; choose: ppo or dqn\n", o.algo);
        return EXIT_USAGE;
    }
    cudarl_ctx *ctx;
    /* the run's context on the actor's GPU (flags are parsed over the defaults: -1 is unset);
     * under mpirun each rank of a host its own GPU, counted from there (docs/multigpu.md) */
    const int gpus = o.cfg.device == CUDARL_DEVICE_CPU ? 0 : cudarl_cuda_device_count();
    const int local = gpus > 0 ? cudarl_dist_local_rank() : 0; /* no GPU: the CPU, as before */
    const int actor = (o.cfg.actor_device > 0 ? o.cfg.actor_device : 0) + local;
    if (local > 0 && actor >= gpus) {
        fprintf(stderr, "cudarl train: rank %d is rank %d on its host, which would train on "
                "cuda:%d, and the host has %d CUDA GPU%s: run at most that many ranks per host "
                "on GPUs (mpirun -np R --map-by ppr:<GPUs>:node), or --device cpu\n",
                cudarl_dist_rank(), local, actor, gpus, gpus == 1 ? "" : "s");
        return EXIT_FAILURE;
    }
    if (cudarl_ctx_init(&ctx, o.cfg.device, actor) != CUDARL_OK) return cmd_fail("no device");
    if (!o.resume[0]) {
        /* the device's batch shape, then the user's flags over it */
        char policy[sizeof o.cfg.policy]; /* --policy and --env-id pick presets too */
        char env_id[sizeof o.cfg.env_id];
        memcpy(policy, o.cfg.policy, sizeof policy);
        memcpy(env_id, o.cfg.env_id, sizeof env_id);
        cudarl_ppo_config_default(&o.cfg, NULL);
        cudarl_ppo_config_for_device(&o.cfg, cudarl_ctx_kind(ctx));
        cudarl_ppo_config_for_policy(&o.cfg, policy);
        cudarl_ppo_config_for_env_on(&o.cfg, env_id, cudarl_ctx_kind(ctx));
        args_parse_with_config(train_specs, N_TRAIN_SPECS, &o, doc, doc_path, not_in_file, argc,
                               argv, "train", CUDARL_FLAGS_PPO, 0, &r);
    } else {
        int rc = apply_resume(&o, &r);
        if (rc) cudarl_ctx_free(ctx);
        if (rc == -1) return EXIT_USAGE;
        if (rc) return EXIT_FAILURE;
        if (o.cfg.precision != CUDARL_PRECISION_FP32 &&
            cudarl_ctx_kind(ctx) == CUDARL_DEVICE_CPU) { /* --precision cannot change here */
            fprintf(stderr, "cudarl train: cannot resume '%s': it was trained in precision %s, "
                    "which needs a GPU, and this run is on the CPU; resume it with --device "
                    "cuda on a machine with a GPU (a resumed run keeps its checkpoint's "
                    "precision)\n", o.resume, cudarl_precision_name(o.cfg.precision));
            cudarl_ctx_free(ctx);
            return EXIT_USAGE;
        }
    }
    if (cudarl_ppo_config_validate(&o.cfg) != CUDARL_OK) {
        fprintf(stderr, "cudarl train: %s\n", cudarl_last_error());
        cudarl_ctx_free(ctx);
        return EXIT_USAGE;
    }
    if (o.num_gpus > 0) { /* a job of its own over NCCL (docs/multigpu.md); auto: the GPU */
        if (o.cfg.device == CUDARL_DEVICE_CPU) {
            fprintf(stderr, "cudarl train: --num-gpus %d trains on GPUs, and --device cpu was "
                    "given; drop one of the two (the CPU's data parallel: mpirun -np R cudarl "
                    "train --device cpu)\n", o.num_gpus);
            cudarl_ctx_free(ctx);
            return EXIT_USAGE;
        }
        if (cudarl_dist_local_gpus(o.num_gpus) != CUDARL_OK) {
            fprintf(stderr, "cudarl train: %s\n", cudarl_last_error());
            cudarl_ctx_free(ctx);
            return EXIT_USAGE;
        }
        if (actor + o.num_gpus > cudarl_cuda_device_count()) {
            fprintf(stderr, "cudarl train: --num-gpus %d from --actor-device %d needs cuda:%d, "
                    "and this machine has %d CUDA GPUs; lower one of the two\n", o.num_gpus,
                    actor, actor + o.num_gpus - 1, cudarl_cuda_device_count());
            cudarl_ctx_free(ctx);
            return EXIT_USAGE;
        }
    }
    static char toml[16384];
    if (render_config(train_specs, N_TRAIN_SPECS, &o, &o.cfg.device, cudarl_ctx_kind(ctx), toml,
                      sizeof toml)) {
        cudarl_ctx_free(ctx);
        return EXIT_FAILURE;
    }
    o.cfg.config_toml = toml;
    cmd_catch_stop_signals();
    cudarl_train_summary sum;
    cudarl_status s;
    if (o.num_gpus > 1) { /* a rank that fails ends the process, naming itself */
        ppo_threads job = {&o.cfg, o.resume[0] ? o.resume : NULL, ctx, actor, &sum};
        s = cudarl_dist_run_threads(o.num_gpus, ppo_rank, &job) == 0 ? CUDARL_OK
                                                                      : CUDARL_ERR_IO;
    } else {
        s = cudarl_ppo_train(ctx, &o.cfg, o.resume[0] ? o.resume : NULL, &sum);
    }
    cudarl_ctx_free(ctx);
    if (s != CUDARL_OK) return cmd_fail("training failed");
    if (cudarl_dist_rank() != 0) return sum.interrupted ? cmd_interrupted_exit_code() : 0;
    print_summary(&sum); /* data parallel: rank 0's, the job's */
    if (sum.interrupted) {
        printf("cudarl: stopped by %s; continue with: cudarl train --resume "
               "%s/model.safetensors\n", cmd_signal_name(cmd_stop_signal()), sum.run_dir);
        return cmd_interrupted_exit_code();
    }
    return 0;
}
