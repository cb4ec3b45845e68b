/* DQN hyperparameters: CleanRL dqn.py's defaults and their validation. */
#include <stdio.h>
#include <string.h>

#include "algo/dqn/dqn_internal.h"
#include "algo/run.h"
#include "core/abi.h"
#include "core/core.h"
#include "env/env.h"
#include "nn/convnet.h"
#include "nn/precision.h"
#include "replay/replay.h"

/* CleanRL dqn.py's defaults into *c, a config of this build's size. */
static void dqn_defaults(cudarl_dqn_config *c, const char *env_id) {
    memset(c, 0, sizeof *c);
    c->struct_size = sizeof *c;
    snprintf(c->env_id, sizeof c->env_id, "%s", env_id ? env_id : "CartPole-v1");
    snprintf(c->runs_dir, sizeof c->runs_dir, "runs");
    c->seed = 1;
    c->total_timesteps = 500000;
    c->learning_rate = 2.5e-4;
    c->num_envs = 1;
    c->buffer_size = 10000;
    c->gamma = 0.99;
    c->tau = 1.0;
    c->target_network_frequency = 500;
    c->batch_size = 128;
    c->start_e = 1.0;
    c->end_e = 0.05;
    c->exploration_fraction = 0.5;
    c->learning_starts = 10000;
    c->train_frequency = 10;
    c->prioritized_alpha = 0.6;
    c->prioritized_beta = 0.4;
    c->prioritized_eps = 1e-6;
    c->huber = 0;
    c->max_grad_norm = 0;
    c->hidden1 = 120;
    c->hidden2 = 84;
    snprintf(c->policy, sizeof c->policy, "mlp");
    c->threads = 1;
    c->device = CUDARL_DEVICE_AUTO;
    c->env_device = CUDARL_DEVICE_AUTO;
    c->env_threads = 0;
    c->replay_frames = 1;
}

cudarl_status cudarl_dqn_config_default_sized(cudarl_dqn_config *c, size_t struct_size,
                                              const char *env_id) {
    CR_REQUIRE(c, "cudarl_dqn_config_default: the config is NULL");
    CR_TRY(cr_struct_check(&cr_abi_dqn_config, struct_size, "cudarl_dqn_config_default"));
    cudarl_dqn_config full;
    dqn_defaults(&full, env_id);
    cr_struct_write(c, &full, struct_size);
    return CUDARL_OK;
}

cudarl_status cr_dqn_config_take(const cudarl_dqn_config *given, cudarl_dqn_config *c,
                                 const char *where) {
    dqn_defaults(c, NULL);
    return cr_struct_read(&cr_abi_dqn_config, c, given, where);
}

void cudarl_dqn_config_for_device(cudarl_dqn_config *cfg, cudarl_device_kind kind) {
    cudarl_dqn_config full, *c = &full;
    if (cr_dqn_config_take(cfg, c, "cudarl_dqn_config_for_device") != CUDARL_OK) return;
    if (kind != CUDARL_DEVICE_CUDA) return;
    /* tuned on the CPU twin of the same loop: seeds 1-3 reach 475 at 150-172k steps */
    c->num_envs = 32;
    c->train_frequency = 16; /* two train steps per env step of the 32 envs */
    c->batch_size = 256;
    c->learning_rate = 2e-3;
    c->buffer_size = 50000;
    c->target_network_frequency = 640;
    c->learning_starts = 2048;
    c->exploration_fraction = 0.15;
    c->total_timesteps = 250000;
    cr_struct_write(cfg, c, cfg->struct_size);
}

/* An image env's Q-network, and MinAtar's recipe on CUDA with the envs on their GPU twin: 256
 * envs, a train step of 512 rows every 64 env steps, lr 1e-3, Huber, epsilon to 0.01 over the
 * first 2% of 2.5M steps. Swept on the H200 (bench/RESULTS.md, "Pixels at scale"): Breakout's
 * mean of 100 reached 10 at 0.73-0.81M steps, 2.5-2.6 s from launch over seeds 1-3. */
static void dqn_for_env(cudarl_dqn_config *c, const char *env_id, cudarl_device_kind kind) {
    if (env_id) snprintf(c->env_id, sizeof c->env_id, "%s", env_id);
    const cr_env_info *info = cr_env_info_find(c->env_id);
    if (!info) return;
    const cudarl_env_def *def = info->def;
    if (def->obs_rank != 3 || def->obs_dtype != CUDARL_OBS_U8) return;
    const int *s = def->obs_shape;
    snprintf(c->policy, sizeof c->policy, "%s", cr_convnet_name_for(s[0], s[1], s[2]));
    if (kind != CUDARL_DEVICE_CUDA || strcmp(c->policy, "minatar-cnn")) return;
    c->num_envs = 256;
    c->batch_size = 512;
    c->learning_rate = 1e-3;
    c->train_frequency = 64;
    c->target_network_frequency = 8192;
    c->buffer_size = 100000;
    c->learning_starts = 5000;
    c->end_e = 0.01;
    c->exploration_fraction = 0.02;
    c->huber = 1;
    c->total_timesteps = 2500000;
}

void cudarl_dqn_config_for_env_on(cudarl_dqn_config *cfg, const char *env_id,
                                  cudarl_device_kind kind) {
    cudarl_dqn_config full, *c = &full;
    if (cr_dqn_config_take(cfg, c, "cudarl_dqn_config_for_env_on") != CUDARL_OK) return;
    dqn_for_env(c, env_id, kind);
    cr_struct_write(cfg, c, cfg->struct_size);
}

/* --policy: "mlp", or a named convolutional network that fits the env's observations. */
static cudarl_status check_policy(const cudarl_dqn_config *c, const cudarl_env_def *def) {
    if (!strcmp(c->policy, "mlp")) return CUDARL_OK;
    CR_REQUIRE(!strcmp(c->policy, "minatar-cnn") || !strcmp(c->policy, "nature-cnn"),
               "--policy '%.32s' is not a known Q-network; choose one of: mlp, minatar-cnn, "
               "nature-cnn", c->policy);
    CR_REQUIRE(def->obs_rank == 3, "--policy %s is a convolutional network for image observations "
               "(C, H, W), and %s gives a vector of %d features; use --policy mlp", c->policy,
               c->env_id, def->obs_shape[0]);
    cr_convnet_spec spec;
    CR_TRY(cr_convnet_spec_named(&spec, c->policy, def->obs_shape[0], def->obs_shape[1],
                                 def->obs_shape[2], CR_CONVNET_DQN, def->num_actions));
    CR_REQUIRE(spec.dtype == CR_CONVNET_U8 && def->obs_dtype == CUDARL_OBS_U8,
               "--policy %s reads uint8 observations, and %s gives float32 ones; use --policy mlp",
               c->policy, c->env_id);
    cr_convnet net;
    if (cr_convnet_plan(&net, &spec) == CUDARL_OK) return CUDARL_OK;
    char why[256];
    snprintf(why, sizeof why, "%s", cudarl_last_error());
    return cr_fail(CUDARL_ERR_INVALID_ARG, "--policy %s does not fit %s's observations of "
                   "(%d, %d, %d) (%s); use the other convolutional policy or --policy mlp",
                   c->policy, c->env_id, def->obs_shape[0], def->obs_shape[1], def->obs_shape[2],
                   why);
}

/* --buffer-size against the replay's floor: cr_replay_min_rows(K) transitions per env, K the
 * frames it stores per observation (as dqn_init decides: the env's frame stack when a conv
 * policy stores each frame once, else 1). */
static cudarl_status check_buffer_size(const cudarl_dqn_config *c, const cudarl_env_def *def) {
    int K = 1;
    if (c->replay_frames && strcmp(c->policy, "mlp") && def->obs_dtype == CUDARL_OBS_U8 &&
        def->frame_stack > 1)
        K = def->frame_stack;
    const int64_t rows = cr_replay_min_rows(K), least = rows * c->num_envs;
    CR_REQUIRE(c->buffer_size >= least, "--buffer-size %lld is below the replay's minimum of %lld "
               "for --num-envs %d: it keeps at least %lld transitions per env (the %d frame%s of "
               "an observation it stores, + 3); raise --buffer-size to %lld, or lower --num-envs",
               (long long)c->buffer_size, (long long)least, c->num_envs, (long long)rows, K,
               K > 1 ? "s" : "", (long long)least);
    return CUDARL_OK;
}

cudarl_status cudarl_dqn_config_validate(const cudarl_dqn_config *cfg) {
    cudarl_dqn_config full;
    CR_TRY(cr_dqn_config_take(cfg, &full, "cudarl_dqn_config_validate"));
    const cudarl_dqn_config *c = &full;
    CR_TRY(cr_flag_ranges_check(cudarl_flag_ranges(CUDARL_FLAGS_DQN), c)); /* each field */
    const cudarl_env_def *def;
    CR_TRY(cr_run_find_env(c->env_id, &def));
    CR_TRY(cr_env_check_run(def, c->num_envs, 1));
    CR_REQUIRE(def->action_dim == 0, "--algo dqn: %s has continuous actions (%d floats), and DQN "
               "picks one of a discrete set; train it with --algo ppo (a Gaussian policy)",
               c->env_id, def->action_dim);
    CR_REQUIRE(c->env_device == CUDARL_DEVICE_AUTO || c->env_device == CUDARL_DEVICE_CPU ||
               c->env_device == CUDARL_DEVICE_CUDA,
               "--env-device must be cpu, cuda or auto");
    CR_REQUIRE(c->env_device != CUDARL_DEVICE_CUDA ||
                   (cr_env_info_find(c->env_id)->caps & CR_ENV_CUDA_TWIN),
               "--env-device cuda: %s has no CUDA twin (CartPole-v1, CartPolePixels-v1 and the "
               "MinAtar games have); "
               "use --env-device cpu, which steps it on CPU threads", c->env_id);
    CR_REQUIRE(c->env_device != CUDARL_DEVICE_CUDA || c->device != CUDARL_DEVICE_CPU,
               "--env-device cuda needs the GPU: use --device cuda (or auto) with it");
    CR_TRY(cr_precision_check_training(c->precision, c->device));
    CR_REQUIRE(c->replay_frames == 0 || c->replay_frames == 1,
               "replay_frames is %d; use 1 (store each frame once) or 0 (whole stacks)",
               c->replay_frames);
    CR_REQUIRE(c->total_timesteps >= c->num_envs, "--total-timesteps %lld is less than one step of "
               "--num-envs %d", (long long)c->total_timesteps, c->num_envs);
    CR_TRY(check_policy(c, def));
    CR_TRY(check_buffer_size(c, def));
    CR_REQUIRE(c->runs_dir[0], "--runs-dir must not be empty");
    if (c->run_name[0]) CR_TRY(cr_run_check_name(c->run_name));
    return CUDARL_OK;
}
