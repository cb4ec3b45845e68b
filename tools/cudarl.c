/* cudarl: the command-line tool. Parses, then runs; exit codes: 0 done, 1 failed, 2 bad usage,
 * 130 interrupted (a PPO checkpoint resumes it). */
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"
#include "bench.h"
#include "cudarl.h"
#include "export.h"
#include "render.h"

enum { EXIT_USAGE = 2, EXIT_INTERRUPTED = 130 };

typedef struct train_opts {
    cudarl_ppo_config cfg;
    char algo[16];
    char resume[PATH_MAX];
} train_opts;

#define CFG(field) offsetof(train_opts, cfg.field)
#define BIG 1e18

static const arg_spec train_specs[] = {
    {"algo", ARG_STR, offsetof(train_opts, algo), 16, 0, 0, "algorithm: ppo or dqn (cudarl train --algo dqn --help)"},
    {"env-id", ARG_STR, CFG(env_id), 64, 0, 0, "environment id"},
    {"seed", ARG_U64, CFG(seed), 0, 0, BIG, "seed of every random stream"},
    {"total-timesteps", ARG_I64, CFG(total_timesteps), 0, 1, BIG, "env steps to train for"},
    {"learning-rate", ARG_F64, CFG(learning_rate), 0, 1e-12, 1, "Adam learning rate"},
    {"num-envs", ARG_INT, CFG(num_envs), 0, 1, 1 << 22, "parallel environments"},
    {"num-steps", ARG_INT, CFG(num_steps), 0, 1, 1 << 16, "steps per env per rollout"},
    {"anneal-lr", ARG_BOOL, CFG(anneal_lr), 0, 0, 1, "anneal the learning rate linearly to 0"},
    {"gamma", ARG_F64, CFG(gamma), 0, 0, 1, "discount factor"},
    {"gae-lambda", ARG_F64, CFG(gae_lambda), 0, 0, 1, "GAE lambda"},
    {"num-minibatches", ARG_INT, CFG(num_minibatches), 0, 1, 1 << 26, "minibatches per epoch"},
    {"update-epochs", ARG_INT, CFG(update_epochs), 0, 1, 1000, "epochs per update"},
    {"norm-adv", ARG_BOOL, CFG(norm_adv), 0, 0, 1, "normalise advantages per minibatch"},
    {"clip-coef", ARG_F64, CFG(clip_coef), 0, 1e-9, 10, "surrogate clipping coefficient"},
    {"clip-vloss", ARG_BOOL, CFG(clip_vloss), 0, 0, 1, "clip the value loss"},
    {"ent-coef", ARG_F64, CFG(ent_coef), 0, 0, 10, "entropy coefficient"},
    {"vf-coef", ARG_F64, CFG(vf_coef), 0, 0, 100, "value loss coefficient"},
    {"max-grad-norm", ARG_F64, CFG(max_grad_norm), 0, 1e-9, 1e9, "global gradient norm clip"},
    {"target-kl", ARG_F64, CFG(target_kl), 0, 0, 1e9, "stop an update's epochs above this KL (0: off)"},
    {"hidden", ARG_INT, CFG(hidden), 0, 1, 4096, "hidden width of actor and critic MLPs"},
    {"policy", ARG_STR, CFG(policy), 16, 0, 0, "actor-critic: mlp, or for image envs minatar-cnn / nature-cnn"},
    {"separate-critic", ARG_BOOL, CFG(separate_critic), 0, 0, 1, "conv policies: the critic on a trunk of its own (twice the network's work), not a head on the actor's"},
    {"device", ARG_DEVICE, CFG(device), 0, 0, 0, "cpu, cuda or auto (GPU if present)"},
    {"threads", ARG_INT, CFG(threads), 0, 0, 1024, "CPU threads for the ops (0: all cores)"},
    {"env-device", ARG_DEVICE, CFG(env_device), 0, 0, 0, "where envs step: cpu (threads), cuda (the CUDA twins: CartPole; MinAtar and CartPolePixels with a conv policy) or auto (a twin on the GPU where there is one, else threads)"},
    {"env-threads", ARG_INT, CFG(env_threads), 0, 0, 1024, "threads stepping CPU envs (0: all cores)"},
    {"env-groups", ARG_INT, CFG(env_groups), 0, 0, 31, "CPU env groups stepped while the policy runs on another (0: 2 on a GPU, else 1)"},
    {"async", ARG_BOOL, CFG(async), 0, 0, 1, "CPU envs: next rollout while the learner updates (policy one update stale)"},
    {"actor-device", ARG_INT, CFG(actor_device), 0, -1, 63, "GPU index of the actor (rollouts) and the run's context (-1: GPU 0)"},
    {"learner-device", ARG_INT, CFG(learner_device), 0, -1, 63, "GPU index of the learner; another GPU than the actor's needs --async (-1: the actor's)"},
    {"run-name", ARG_STR, CFG(run_name), 128, 0, 0, "run folder name; empty: <env>__ppo__<seed>__<unix time>"},
    {"runs-dir", ARG_STR, CFG(runs_dir), 256, 0, 0, "where run folders go"},
    {"checkpoint-every", ARG_INT, CFG(checkpoint_every), 0, 0, 1 << 30, "iterations between checkpoints (0: at the end)"},
    {"quiet", ARG_BOOL, CFG(quiet), 0, 0, 1, "no progress line"},
    {"profile", ARG_BOOL, CFG(profile), 0, 0, 1, "time per phase, syncs, FLOP/s and GB/s at the end"},
    {"precision", ARG_PRECISION, CFG(precision), 0, 0, 0, "fp32, or on the GPU tf32 (cuBLAS products on TF32 tensor cores), bf16 or fp16 (every product's inputs in the format, fp32 sums; fp16 with dynamic loss scaling)"},
    {"resume", ARG_STR, offsetof(train_opts, resume), PATH_MAX, 0, 0, "continue from this checkpoint"},
};
#define N_TRAIN_SPECS ((int)(sizeof train_specs / sizeof train_specs[0]))

/* Flags a resumed run may change; the others come from the checkpoint. */
static const char *const resume_overridable[] = {"total-timesteps", "device", "threads", "quiet", "profile",
                                                 "checkpoint-every", "resume", "algo",
                                                 "env-device", "env-threads", "env-groups",
                                                 "actor-device", "learner-device", NULL};

/* The first SIGINT asks the run to stop after its iteration (it writes its checkpoint); a second
 * one a second or more later ends the process at once. One within the second is the same
 * interrupt delivered twice: timeout(1) sends its signal to its command and then to its process
 * group, which holds the command too, and killing the run there lost its checkpoint. Only
 * async-signal-safe calls here: clock_gettime, signal, raise. */
static volatile sig_atomic_t sigint_seen;
static struct timespec sigint_first;

static void on_sigint(int sig) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (!sigint_seen) {
        sigint_seen = 1;
        sigint_first = now;
        cudarl_request_stop();
        return;
    }
    double since = (double)(now.tv_sec - sigint_first.tv_sec) +
                   (double)(now.tv_nsec - sigint_first.tv_nsec) * 1e-9;
    if (since < 1.0) return;
    signal(sig, SIG_DFL);
    raise(sig);
}

static void usage(FILE *f) {
    fprintf(f,
            "cudarl %s: reinforcement learning in C and CUDA\n\n"
            "usage:\n"
            "  cudarl train [flags]                  train PPO (CartPole-v1 by default)\n"
            "  cudarl train --resume PATH [flags]    continue a run from its checkpoint\n"
            "  cudarl train --algo dqn [flags]       DQN with the replay buffer (GPU or CPU)\n"
            "  cudarl eval PATH [--episodes N]       mean and std of the greedy policy's return\n"
            "  cudarl plan [flags]                   a replay buffer's memory plan, no training\n"
            "  cudarl export PATH --onnx FILE        the policy as an ONNX model (TensorRT, DLA)\n"
            "  cudarl render --out DIR [flags]       a pixel env's observations as PNG files\n"
            "  cudarl bench infer [flags]            the policy runtime's latency table\n"
            "  cudarl info                           build options and devices\n"
            "  cudarl <command> --help               the flags of a command, with defaults\n",
            CUDARL_VERSION_STRING);
}

static int fail(const char *what) {
    fprintf(stderr, "cudarl: error: %s: %s\n", what, cudarl_last_error());
    return EXIT_FAILURE;
}

static int apply_resume(train_opts *o, const arg_result *r) {
    for (int i = 0; i < N_TRAIN_SPECS; i++) {
        if (!r->set[i]) continue;
        int ok = 0;
        for (const char *const *n = resume_overridable; *n; n++) ok |= !strcmp(*n, train_specs[i].name);
        if (!ok) {
            fprintf(stderr, "cudarl train: --%s cannot be changed with --resume: a resumed run keeps "
                            "its checkpoint's hyperparameters; drop --%s, or start a new run "
                            "without --resume\n", train_specs[i].name, train_specs[i].name);
            return -1;
        }
    }
    cudarl_ppo_config saved;
    if (cudarl_ppo_config_load(o->resume, &saved) != CUDARL_OK) return fail("cannot resume"), -2;
    /* the run continues in the checkpoint's folder */
    char real[PATH_MAX];
    if (!realpath(o->resume, real)) return fail("cannot resume"), -2;
    char *slash = strrchr(real, '/');
    *slash = 0;
    slash = strrchr(real, '/');
    if (!slash) { /* the checkpoint lies in "/" itself: no run folder to continue in */
        fprintf(stderr, "cudarl train: cannot resume '%s': it is not inside a run folder; move "
                        "it to runs/<run>/model.safetensors and resume from there\n", o->resume);
        return -2;
    }
    snprintf(saved.run_name, sizeof saved.run_name, "%s", slash + 1);
    if (slash == real) snprintf(saved.runs_dir, sizeof saved.runs_dir, "/");
    else *slash = 0;
    if (slash != real && strlen(real) >= sizeof saved.runs_dir) {
        fprintf(stderr, "cudarl train: the checkpoint's folder path is over %zu characters; move "
                        "the run folder to a shorter path\n", sizeof saved.runs_dir - 1);
        return -2;
    }
    if (slash != real) memcpy(saved.runs_dir, real, strlen(real) + 1);
    int tt = args_find(train_specs, N_TRAIN_SPECS, "total-timesteps");
    if (r->set[tt]) saved.total_timesteps = o->cfg.total_timesteps;
    saved.device = o->cfg.device, saved.threads = o->cfg.threads, saved.quiet = o->cfg.quiet;
    saved.profile = o->cfg.profile;
    saved.checkpoint_every = o->cfg.checkpoint_every;
    saved.env_device = o->cfg.env_device, saved.env_threads = o->cfg.env_threads;
    saved.env_groups = o->cfg.env_groups;
    saved.actor_device = o->cfg.actor_device, saved.learner_device = o->cfg.learner_device;
    o->cfg = saved;
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
} dqn_opts;

#define DCFG(field) offsetof(dqn_opts, cfg.field)

static const arg_spec dqn_specs[] = {
    {"algo", ARG_STR, offsetof(dqn_opts, algo), 16, 0, 0, "algorithm: dqn"},
    {"env-id", ARG_STR, DCFG(env_id), 64, 0, 0, "environment id"},
    {"seed", ARG_U64, DCFG(seed), 0, 0, BIG, "seed of every random stream"},
    {"total-timesteps", ARG_I64, DCFG(total_timesteps), 0, 1, BIG, "env steps to train for"},
    {"learning-rate", ARG_F64, DCFG(learning_rate), 0, 1e-12, 1, "Adam learning rate"},
    {"num-envs", ARG_INT, DCFG(num_envs), 0, 1, 1 << 20, "parallel environments"},
    {"buffer-size", ARG_I64, DCFG(buffer_size), 0, 2, BIG, "replay buffer capacity (transitions)"},
    {"gamma", ARG_F64, DCFG(gamma), 0, 0, 1, "discount factor"},
    {"tau", ARG_F64, DCFG(tau), 0, 1e-9, 1, "target network update rate (1: copy)"},
    {"target-network-frequency", ARG_I64, DCFG(target_network_frequency), 0, 1, BIG, "env steps between target updates"},
    {"batch-size", ARG_INT, DCFG(batch_size), 0, 1, 1 << 20, "replay minibatch"},
    {"start-e", ARG_F64, DCFG(start_e), 0, 0, 1, "initial exploration epsilon"},
    {"end-e", ARG_F64, DCFG(end_e), 0, 0, 1, "final exploration epsilon"},
    {"exploration-fraction", ARG_F64, DCFG(exploration_fraction), 0, 1e-9, 1, "fraction of the steps to anneal epsilon over"},
    {"learning-starts", ARG_I64, DCFG(learning_starts), 0, 0, BIG, "env steps before learning"},
    {"train-frequency", ARG_I64, DCFG(train_frequency), 0, 1, BIG, "env steps between gradient steps"},
    {"double-dqn", ARG_BOOL, DCFG(double_dqn), 0, 0, 1, "double DQN targets"},
    {"prioritized", ARG_BOOL, DCFG(prioritized), 0, 0, 1, "proportional prioritized replay"},
    {"prioritized-alpha", ARG_F64, DCFG(prioritized_alpha), 0, 0, 10, "priority exponent"},
    {"prioritized-beta", ARG_F64, DCFG(prioritized_beta), 0, 0, 1, "initial importance exponent (annealed to 1)"},
    {"huber", ARG_BOOL, DCFG(huber), 0, 0, 1, "Huber TD loss (else MSE, as dqn.py)"},
    {"max-grad-norm", ARG_F64, DCFG(max_grad_norm), 0, 0, 1e9, "global gradient norm clip (0: off)"},
    {"hidden1", ARG_INT, DCFG(hidden1), 0, 1, 4096, "Q-network first hidden width"},
    {"hidden2", ARG_INT, DCFG(hidden2), 0, 1, 4096, "Q-network second hidden width"},
    {"policy", ARG_STR, DCFG(policy), 16, 0, 0, "Q-network: mlp, or for image envs minatar-cnn / nature-cnn"},
    {"mem-budget", ARG_BYTES, DCFG(mem_budget), 0, 0, 0, "memory the run may use (plan refused above it)"},
    {"device", ARG_DEVICE, DCFG(device), 0, 0, 0, "cpu, cuda or auto (GPU if present)"},
    {"threads", ARG_INT, DCFG(threads), 0, 0, 1024, "CPU threads for the ops (0: all cores)"},
    {"env-device", ARG_DEVICE, DCFG(env_device), 0, 0, 0, "where envs step: cpu (threads, any env), cuda (the CUDA twins: CartPole, MinAtar) or auto"},
    {"env-threads", ARG_INT, DCFG(env_threads), 0, 0, 1024, "threads stepping CPU envs (0: all cores)"},
    {"precision", ARG_PRECISION, DCFG(precision), 0, 0, 0, "fp32, or on the GPU tf32 (cuBLAS products on TF32 tensor cores), bf16 or fp16 (every product's inputs in the format, fp32 sums; fp16 with dynamic loss scaling)"},
    {"replay-frames", ARG_BOOL, DCFG(replay_frames), 0, 0, 1, "frame-stacked envs: store each frame once, sample K+1-frame windows"},
    {"run-name", ARG_STR, DCFG(run_name), 128, 0, 0, "run folder name; empty: <env>__dqn__<seed>__<unix time>"},
    {"runs-dir", ARG_STR, DCFG(runs_dir), 256, 0, 0, "where run folders go"},
    {"quiet", ARG_BOOL, DCFG(quiet), 0, 0, 1, "no progress line"},
};
#define N_DQN_SPECS ((int)(sizeof dqn_specs / sizeof dqn_specs[0]))

static int cmd_train_dqn(int argc, char **argv) {
    dqn_opts o;
    memset(&o, 0, sizeof o);
    cudarl_dqn_config_default(&o.cfg, NULL);
    snprintf(o.algo, sizeof o.algo, "dqn");
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: cudarl train --algo dqn [flags]\n\nflags (CleanRL dqn.py's names):\n");
            args_print_help(dqn_specs, N_DQN_SPECS, &o);
            printf("\nOn a CUDA device these defaults change to fill the GPU: num-envs 32, "
                   "train-frequency 16,\nbatch-size 256, learning-rate 0.002, buffer-size 50000, "
                   "target-network-frequency 640,\nlearning-starts 2048, exploration-fraction "
                   "0.15, total-timesteps 250000. Flags given still win.\n");
            return 0;
        }
    arg_result r;
    if (args_parse(dqn_specs, N_DQN_SPECS, &o, argc, argv, "train --algo dqn", 0, &r) != 0)
        return EXIT_USAGE;
    if (cudarl_dqn_config_validate(&o.cfg) != CUDARL_OK) {
        fprintf(stderr, "cudarl train: %s\n", cudarl_last_error());
        return EXIT_USAGE;
    }
    cudarl_ctx *ctx;
    if (cudarl_ctx_init(&ctx, o.cfg.device, 0) != CUDARL_OK) return fail("no device");
    /* the device's preset, then the user's flags over it */
    cudarl_dqn_config_default(&o.cfg, NULL);
    cudarl_dqn_config_for_device(&o.cfg, cudarl_ctx_kind(ctx));
    args_parse(dqn_specs, N_DQN_SPECS, &o, argc, argv, "train --algo dqn", 0, &r);
    if (cudarl_dqn_config_validate(&o.cfg) != CUDARL_OK) {
        fprintf(stderr, "cudarl train: %s\n", cudarl_last_error());
        cudarl_ctx_free(ctx);
        return EXIT_USAGE;
    }
    signal(SIGINT, on_sigint);
    cudarl_train_summary sum;
    cudarl_status s = cudarl_dqn_train(ctx, &o.cfg, &sum);
    cudarl_ctx_free(ctx);
    if (s != CUDARL_OK) return fail("training failed");
    print_summary(&sum);
    if (sum.interrupted) {
        printf("cudarl: interrupted; %s/model.safetensors holds the policy so far (cudarl eval and "
               "export read it); a DQN run cannot be resumed yet: start a new one to train "
               "further\n", sum.run_dir);
        return EXIT_INTERRUPTED;
    }
    return 0;
}

/* The value of --algo in argv, "ppo" when absent (the table of each algo parses the rest). */
static const char *algo_of(int argc, char **argv) {
    for (int i = 0; i < argc; i++) {
        if (!strncmp(argv[i], "--algo=", 7)) return argv[i] + 7;
        if (!strcmp(argv[i], "--algo") && i + 1 < argc) return argv[i + 1];
    }
    return "ppo";
}

static int cmd_train(int argc, char **argv) {
    if (!strcmp(algo_of(argc, argv), "dqn")) return cmd_train_dqn(argc, argv);
    train_opts o;
    memset(&o, 0, sizeof o);
    cudarl_ppo_config_default(&o.cfg, NULL);
    snprintf(o.algo, sizeof o.algo, "ppo");
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: cudarl train [flags]\n\nflags (CleanRL's names):\n");
            args_print_help(train_specs, N_TRAIN_SPECS, &o);
            printf("\nOn a CUDA device four defaults change to fill the GPU: num-envs 1024, "
                   "num-steps 16,\nlearning-rate 0.005, total-timesteps 2000000. Flags given "
                   "still win.\n");
            printf("With --policy minatar-cnn or nature-cnn (any device) they are CleanRL "
                   "ppo_atari.py's instead:\nnum-envs 8, num-steps 128, learning-rate 0.00025, "
                   "clip-coef 0.1, ent-coef 0.01,\ntotal-timesteps 10000000.\n");
            return 0;
        }
    arg_result r;
    if (args_parse(train_specs, N_TRAIN_SPECS, &o, argc, argv, "train", 0, &r) != 0)
        return EXIT_USAGE;
    if (strcmp(o.algo, "ppo")) {
        fprintf(stderr, "cudarl train: --algo '%s' is not available; choose: ppo or dqn\n", o.algo);
        return EXIT_USAGE;
    }
    cudarl_ctx *ctx;
    /* the run's context on the actor's GPU (flags are parsed over the defaults: -1 is unset) */
    const int actor = o.cfg.actor_device > 0 ? o.cfg.actor_device : 0;
    if (cudarl_ctx_init(&ctx, o.cfg.device, actor) != CUDARL_OK) return fail("no device");
    if (!o.resume[0]) {
        /* the device's batch shape, then the user's flags over it */
        char policy[sizeof o.cfg.policy]; /* --policy picks a preset too */
        memcpy(policy, o.cfg.policy, sizeof policy);
        cudarl_ppo_config_default(&o.cfg, NULL);
        cudarl_ppo_config_for_device(&o.cfg, cudarl_ctx_kind(ctx));
        cudarl_ppo_config_for_policy(&o.cfg, policy);
        args_parse(train_specs, N_TRAIN_SPECS, &o, argc, argv, "train", 0, &r);
    } else {
        int rc = apply_resume(&o, &r);
        if (rc) cudarl_ctx_free(ctx);
        if (rc == -1) return EXIT_USAGE;
        if (rc) return EXIT_FAILURE;
    }
    if (cudarl_ppo_config_validate(&o.cfg) != CUDARL_OK) {
        fprintf(stderr, "cudarl train: %s\n", cudarl_last_error());
        cudarl_ctx_free(ctx);
        return EXIT_USAGE;
    }
    signal(SIGINT, on_sigint);
    cudarl_train_summary sum;
    cudarl_status s = cudarl_ppo_train(ctx, &o.cfg, o.resume[0] ? o.resume : NULL, &sum);
    cudarl_ctx_free(ctx);
    if (s != CUDARL_OK) return fail("training failed");
    print_summary(&sum);
    if (sum.interrupted) {
        printf("cudarl: interrupted; continue with: cudarl train --resume %s/model.safetensors\n",
               sum.run_dir);
        return EXIT_INTERRUPTED;
    }
    return 0;
}

typedef struct eval_opts {
    int episodes;
    uint64_t seed;
    cudarl_device_kind device;
    cudarl_precision precision;
} eval_opts;

static const arg_spec eval_specs[] = {
    {"episodes", ARG_INT, offsetof(eval_opts, episodes), 0, 1, 1000000, "episodes to play"},
    {"seed", ARG_U64, offsetof(eval_opts, seed), 0, 0, BIG, "seed of the evaluation envs"},
    {"device", ARG_DEVICE, offsetof(eval_opts, device), 0, 0, 0, "cpu, cuda or auto (cuda: conv policies only)"},
    {"precision", ARG_PRECISION, offsetof(eval_opts, precision), 0, 0, 0, "fp32, or on the GPU for conv policies tf32, bf16 or fp16 (the policy runtime's)"},
};

static int cmd_eval(int argc, char **argv) {
    eval_opts o = {100, 12345, CUDARL_DEVICE_CPU, CUDARL_PRECISION_FP32};
    int n = (int)(sizeof eval_specs / sizeof eval_specs[0]);
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: cudarl eval CHECKPOINT [flags]\n\nflags:\n");
            args_print_help(eval_specs, n, &o);
            return 0;
        }
    arg_result r;
    if (args_parse(eval_specs, n, &o, argc, argv, "eval", 1, &r) != 0) return EXIT_USAGE;
    if (r.npositional != 1) {
        fprintf(stderr, "cudarl eval: which checkpoint? usage: cudarl eval "
                        "runs/<run>/model.safetensors [--episodes N]\n");
        return EXIT_USAGE;
    }
    cudarl_ctx *ctx;
    if (cudarl_ctx_init(&ctx, o.device, 0) != CUDARL_OK) return fail("no device");
    double mean = 0, std = 0;
    cudarl_status s = cudarl_policy_eval_precision(ctx, r.positional[0], o.episodes, o.seed,
                                                   o.precision, &mean, &std);
    cudarl_ctx_free(ctx);
    if (s != CUDARL_OK) return fail("evaluation failed");
    printf("episodes %d  mean return %.2f  std %.2f\n", o.episodes, mean, std);
    return 0;
}

typedef struct plan_opts {
    int64_t buffer_size, mem_budget;
    int num_envs, frame_stack, prioritized;
    char obs_shape[64], obs_dtype[16];
} plan_opts;

static const arg_spec plan_specs[] = {
    {"buffer-size", ARG_I64, offsetof(plan_opts, buffer_size), 0, 1, BIG, "replay capacity (transitions)"},
    {"num-envs", ARG_INT, offsetof(plan_opts, num_envs), 0, 1, 1 << 20, "envs inserting per step"},
    {"obs-shape", ARG_STR, offsetof(plan_opts, obs_shape), 64, 0, 0, "one stored observation (one frame when stacking), e.g. 84x84 or 4"},
    {"obs-dtype", ARG_STR, offsetof(plan_opts, obs_dtype), 16, 0, 0, "uint8 or float32"},
    {"frame-stack", ARG_INT, offsetof(plan_opts, frame_stack), 0, 1, 16, "frames per observation"},
    {"prioritized", ARG_BOOL, offsetof(plan_opts, prioritized), 0, 0, 1, "with a priority sum tree"},
    {"mem-budget", ARG_BYTES, offsetof(plan_opts, mem_budget), 0, 0, 0, "the budget to check against"},
};

/* Elements of "84x84" / "4" / "3,84,84"; -1 if malformed. */
static int64_t shape_elems(const char *s) {
    int64_t n = 1;
    const char *p = s;
    while (*p) {
        char *end;
        long long d = strtoll(p, &end, 10);
        if (end == p || d < 1 || d > (1 << 24)) return -1;
        n *= d;
        if (n > ((int64_t)1 << 40)) return -1;
        p = end;
        if (*p == 'x' || *p == ',') p++;
        else if (*p) return -1;
    }
    return p == s ? -1 : n;
}

static int cmd_plan(int argc, char **argv) {
    plan_opts o = {1000000, 0, 1, 4, 0, "84x84", "uint8"};
    int n = (int)(sizeof plan_specs / sizeof plan_specs[0]);
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: cudarl plan [flags]: the replay buffer's memory plan, without training\n"
                   "\nflags:\n");
            args_print_help(plan_specs, n, &o);
            return 0;
        }
    arg_result r;
    if (args_parse(plan_specs, n, &o, argc, argv, "plan", 0, &r) != 0) return EXIT_USAGE;
    int64_t elems = shape_elems(o.obs_shape);
    if (elems < 0) {
        fprintf(stderr, "cudarl plan: --obs-shape '%s' is not a shape; write it as 84x84 or 4\n",
                o.obs_shape);
        return EXIT_USAGE;
    }
    int u8 = !strcmp(o.obs_dtype, "uint8");
    if (!u8 && strcmp(o.obs_dtype, "float32")) {
        fprintf(stderr, "cudarl plan: --obs-dtype '%s' is not uint8 or float32\n", o.obs_dtype);
        return EXIT_USAGE;
    }
    cudarl_replay_request rq = {o.buffer_size, o.num_envs, elems, u8, o.frame_stack,
                                o.prioritized, 0, o.mem_budget, NULL};
    char report[4096];
    cudarl_status s = cudarl_replay_plan_report(&rq, report, sizeof report);
    fputs(report, stdout);
    if (s != CUDARL_OK) {
        fprintf(stderr, "cudarl plan: %s\n", cudarl_last_error());
        return s == CUDARL_ERR_OUT_OF_MEMORY ? EXIT_FAILURE : EXIT_USAGE;
    }
    printf("fits\n");
    return 0;
}

static int cmd_info(int argc, char **argv) {
    if (argc > 0) {
        fprintf(stderr, "cudarl info: takes no arguments, got '%s'\n", argv[0]);
        return EXIT_USAGE;
    }
    char buf[4096];
    cudarl_info(buf, sizeof buf);
    fputs(buf, stdout);
    return 0;
}

/* Refuses environment variables with values cudarl cannot use. */
static int check_environment(void) {
    const char *v = getenv("CUDARL_LOG");
    if (v && *v && strcmp(v, "error") && strcmp(v, "warn") && strcmp(v, "info") &&
        strcmp(v, "debug")) {
        fprintf(stderr, "cudarl: CUDARL_LOG='%s' is not a log level; set it to error, warn, info "
                        "or debug, or unset it\n", v);
        return -1;
    }
    static const char *const flags[] = {"CUDARL_SYNC_DEBUG", "CUDARL_FUSED"};
    for (int i = 0; i < 2; i++) {
        v = getenv(flags[i]);
        if (v && *v && strcmp(v, "0") && strcmp(v, "1")) {
            fprintf(stderr, "cudarl: %s='%s' is not 0 or 1; set it to 0 or 1, or unset it\n",
                    flags[i], v);
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (check_environment() != 0) return EXIT_USAGE;
    const char *cmd = argv[1];
    if (!strcmp(cmd, "train")) return cmd_train(argc - 2, argv + 2);
    if (!strcmp(cmd, "eval")) return cmd_eval(argc - 2, argv + 2);
    if (!strcmp(cmd, "info")) return cmd_info(argc - 2, argv + 2);
    if (!strcmp(cmd, "plan")) return cmd_plan(argc - 2, argv + 2);
    if (!strcmp(cmd, "export")) return cudarl_cmd_export(argc - 2, argv + 2);
    if (!strcmp(cmd, "render")) return cudarl_cmd_render(argc - 2, argv + 2);
    if (!strcmp(cmd, "bench")) return cudarl_cmd_bench(argc - 2, argv + 2);
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("cudarl %s\n", CUDARL_VERSION_STRING);
        return 0;
    }
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr,
            "cudarl: unknown command '%s'; commands: train, eval, plan, export, render, info, "
            "bench (cudarl --help)\n",
            cmd);
    return EXIT_USAGE;
}
