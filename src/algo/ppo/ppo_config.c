/* PPO hyperparameters: cudarl's tuned defaults, the presets of the device and the policy, and
 * their validation, and the hyperparameters a checkpoint holds. */
#include <stdio.h>
#include <string.h>

#include "algo/ppo/ppo_internal.h"
#include "algo/run.h"
#include "core/abi.h"
#include "core/core.h"
#include "env/env.h"
#include "nn/convnet.h"
#include "nn/precision.h"
#include "runtime/mlp_check.h"

/* cudarl's tuned defaults into *c, a config of this build's size. */
static void ppo_defaults(cudarl_ppo_config *c, const char *env_id) {
    memset(c, 0, sizeof *c);
    c->struct_size = sizeof *c;
    snprintf(c->env_id, sizeof c->env_id, "%s", env_id ? env_id : "CartPole-v1");
    snprintf(c->runs_dir, sizeof c->runs_dir, "runs");
    c->seed = 1;
    c->total_timesteps = 300000;
    c->learning_rate = 2.5e-3;
    c->num_envs = 16;
    c->num_steps = 64;
    c->anneal_lr = 1;
    c->gamma = 0.99;
    c->gae_lambda = 0.95;
    c->num_minibatches = 4;
    c->update_epochs = 4;
    c->norm_adv = 1;
    c->clip_coef = 0.2;
    c->clip_vloss = 1;
    c->ent_coef = 0.0;
    c->vf_coef = 0.5;
    c->max_grad_norm = 0.5;
    c->target_kl = 0.0;
    c->hidden = 64;
    snprintf(c->policy, sizeof c->policy, "mlp");
    c->threads = 1; /* one core is as fast as two at this model size, and never spin-waits */
    c->device = CUDARL_DEVICE_AUTO;
    c->env_device = CUDARL_DEVICE_AUTO;
    c->checkpoint_every = 0;
    c->actor_device = c->learner_device = -1;
}

cudarl_status cudarl_ppo_config_default_sized(cudarl_ppo_config *c, size_t struct_size,
                                              const char *env_id) {
    CR_REQUIRE(c, "cudarl_ppo_config_default: the config is NULL");
    CR_TRY(cr_struct_check(&cr_abi_ppo_config, struct_size, "cudarl_ppo_config_default"));
    cudarl_ppo_config full;
    ppo_defaults(&full, env_id);
    cr_struct_write(c, &full, struct_size);
    return CUDARL_OK;
}

cudarl_status cr_ppo_config_take(const cudarl_ppo_config *given, cudarl_ppo_config *c,
                                 const char *where) {
    ppo_defaults(c, NULL);
    return cr_struct_read(&cr_abi_ppo_config, c, given, where);
}

/* The presets below change the caller's config through a copy of this build's size. */
static void ppo_for_device(cudarl_ppo_config *c, cudarl_device_kind kind) {
    if (kind != CUDARL_DEVICE_CUDA) return;
    c->num_envs = 1024;
    c->num_steps = 16;
    c->learning_rate = 5e-3;
    c->total_timesteps = 2000000;
}

static void ppo_for_policy(cudarl_ppo_config *c, const char *policy) {
    if (policy) snprintf(c->policy, sizeof c->policy, "%s", policy);
    if (!strcmp(c->policy, "mlp")) return;
    /* CleanRL ppo_atari.py's defaults (its num_minibatches 4, update_epochs 4, gamma, GAE
     * lambda, vf_coef, max_grad_norm, norm_adv and clip_vloss are ppo.py's, set already) */
    c->num_envs = 8;
    c->num_steps = 128;
    c->learning_rate = 2.5e-4;
    c->anneal_lr = 1;
    c->clip_coef = 0.1;
    c->ent_coef = 0.01;
    c->total_timesteps = 10000000;
}

/* An image env (uint8 (C, H, W) observations): its conv policy with ppo_atari.py's defaults,
 * unless the calls before chose that policy already; then, training on CUDA (the envs on their
 * GPU twin unless --env-device cpu says otherwise), the Nature-CNN's or MinAtar's recipe at scale. Swept on the H200 (bench/RESULTS.md, "Pixels at
 * scale"): on Breakout, 1024 x 128 with 32 minibatches of 4,096 and lr 2e-3 reached a mean of
 * 60 at 12M steps, the best of the ten shapes and rates tried; bf16 runs minatar-cnn 1.4x as
 * fast as fp32. */
static void ppo_for_images(cudarl_ppo_config *c, const cudarl_env_def *def,
                           cudarl_device_kind kind) {
    const int *s = def->obs_shape;
    const char *policy = cr_convnet_name_for(s[0], s[1], s[2]);
    if (strcmp(c->policy, policy)) ppo_for_policy(c, policy);
    if (kind != CUDARL_DEVICE_CUDA) return;
    if (!strcmp(policy, "nature-cnn")) {
        /* The Nature-CNN recipe at scale: of the shapes swept on the H200 for CartPolePixels-v1
         * (dev/rl/pixels_solve.sh; bench/RESULTS.md, "Pixels at scale"), the one that solved in
         * the fewest seconds from launch over three seeds. A network per head costs twice the
         * work of a shared trunk but needs far fewer steps; the critic's runs on a stream of its
         * own (ppo_conv.c). */
        c->num_envs = 512;
        c->num_steps = 32;
        c->num_minibatches = 16;
        c->update_epochs = 4;
        c->learning_rate = 7e-4;
        c->anneal_lr = 0;
        c->clip_vloss = 0;
        c->separate_critic = 1;
        c->precision = CUDARL_PRECISION_BF16;
        c->total_timesteps = 2000000;
        return;
    }
    if (strcmp(policy, "minatar-cnn")) return;
    c->num_envs = 1024;
    c->num_steps = 128;
    c->num_minibatches = 32;
    c->update_epochs = 4;
    c->learning_rate = 2e-3;
    c->anneal_lr = 1;
    c->clip_coef = 0.2;
    c->ent_coef = 0.01;
    c->precision = CUDARL_PRECISION_BF16;
    c->total_timesteps = 40000000;
}

static void ppo_for_env(cudarl_ppo_config *c, const char *env_id, cudarl_device_kind kind) {
    if (env_id) snprintf(c->env_id, sizeof c->env_id, "%s", env_id);
    const cr_env_info *info = cr_env_info_find(c->env_id);
    if (!info) return;
    const cudarl_env_def *def = info->def;
    if (def->obs_rank == 3 && def->obs_dtype == CUDARL_OBS_U8) {
        ppo_for_images(c, def, kind);
        return;
    }
    if (info->action_dim == 0) return;
    c->num_envs = 8;
    c->num_steps = 256;
    c->learning_rate = 3e-4;
    c->anneal_lr = 1;
    c->num_minibatches = 32;
    c->update_epochs = 10;
    c->gamma = 0.99;
    c->gae_lambda = 0.95;
    c->ent_coef = 0.0;
    c->clip_coef = 0.2;
    c->total_timesteps = 1000000;
    c->norm_obs = c->norm_reward = 1;
}

void cudarl_ppo_config_for_device(cudarl_ppo_config *cfg, cudarl_device_kind kind) {
    cudarl_ppo_config c;
    if (cr_ppo_config_take(cfg, &c, "cudarl_ppo_config_for_device") != CUDARL_OK) return;
    ppo_for_device(&c, kind);
    cr_struct_write(cfg, &c, cfg->struct_size);
}

void cudarl_ppo_config_for_policy(cudarl_ppo_config *cfg, const char *policy) {
    cudarl_ppo_config c;
    if (cr_ppo_config_take(cfg, &c, "cudarl_ppo_config_for_policy") != CUDARL_OK) return;
    ppo_for_policy(&c, policy);
    cr_struct_write(cfg, &c, cfg->struct_size);
}

void cudarl_ppo_config_for_env_on(cudarl_ppo_config *cfg, const char *env_id,
                                  cudarl_device_kind kind) {
    cudarl_ppo_config c;
    if (cr_ppo_config_take(cfg, &c, "cudarl_ppo_config_for_env_on") != CUDARL_OK) return;
    ppo_for_env(&c, env_id, kind);
    cr_struct_write(cfg, &c, cfg->struct_size);
}

void cudarl_ppo_config_for_env(cudarl_ppo_config *cfg, const char *env_id) {
    cudarl_ppo_config_for_env_on(cfg, env_id, CUDARL_DEVICE_CPU);
}

/* --policy: "mlp" for float features, a named convolutional network that fits a uint8 image
 * env's (C, H, W) observations, and what the conv policies do not support (yet). */
static cudarl_status check_policy(const cudarl_ppo_config *c, const cudarl_env_def *def) {
    const int *s = def->obs_shape;
    const int image = def->obs_rank == 3 && def->obs_dtype == CUDARL_OBS_U8;
    if (!strcmp(c->policy, "mlp")) {
        CR_REQUIRE(def->action_dim == 0 || !c->async, "--async is for discrete actions for now; "
                   "%s's are continuous: drop --async", c->env_id);
        CR_REQUIRE(def->obs_dtype == CUDARL_OBS_F32,
                   "--env-id %s has uint8 image observations of %dx%dx%d, which --policy mlp (an "
                   "MLP over float features) does not read; use --policy %s (a convolutional "
                   "network over the frames)",
                   c->env_id, s[0], s[1], s[2], cr_convnet_name_for(s[0], s[1], s[2]));
        CR_REQUIRE(!c->separate_critic, "--separate-critic is for the conv policies; --policy "
                   "mlp's actor and critic are separate networks already: drop it");
        return CUDARL_OK;
    }
    CR_REQUIRE(!strcmp(c->policy, "minatar-cnn") || !strcmp(c->policy, "nature-cnn"),
               "--policy '%.32s' is not a known policy; choose one of: mlp, minatar-cnn, "
               "nature-cnn", c->policy);
    CR_REQUIRE(def->action_dim == 0, "--policy %s: %s has continuous actions (%d floats), "
               "which the conv policies do not take yet; use --policy mlp", c->policy, c->env_id,
               def->action_dim);
    CR_REQUIRE(!c->norm_obs && !c->norm_reward, "--norm-obs / --norm-reward are for --policy "
               "mlp; drop them with --policy %s (its frames are scaled by the network)", c->policy);
    CR_REQUIRE(image, "--policy %s is a convolutional network for uint8 image observations (C, H, "
               "W), and %s gives %s; use --policy mlp", c->policy, c->env_id,
               def->obs_dtype == CUDARL_OBS_F32 ? "float features" : "no (C, H, W) image");
    cr_convnet_spec spec;
    CR_TRY(cr_convnet_spec_named(&spec, c->policy, s[0], s[1], s[2], CR_CONVNET_PPO,
                                 def->num_actions));
    cr_convnet net;
    if (cr_convnet_plan(&net, &spec) != CUDARL_OK) {
        char why[256];
        snprintf(why, sizeof why, "%s", cudarl_last_error());
        return cr_fail(CUDARL_ERR_INVALID_ARG, "--policy %s does not fit %s's observations of "
                       "(%d, %d, %d) (%s); use --policy %s", c->policy, c->env_id, s[0], s[1],
                       s[2], why, cr_convnet_name_for(s[0], s[1], s[2]));
    }
    CR_REQUIRE(c->env_device != CUDARL_DEVICE_CUDA ||
                   (cr_env_info_find(c->env_id)->caps & CR_ENV_IMAGE_TWIN),
               "--env-device cuda: %s has no CUDA twin for --policy %s (MinAtar's five games and "
               "CartPolePixels-v1 do); use --env-device cpu or auto, which step it on CPU threads",
               c->env_id, c->policy);
    CR_REQUIRE(!c->async, "--async is for --policy mlp for now; drop --async for --policy %s",
               c->policy);
    return CUDARL_OK;
}

cudarl_status cudarl_ppo_config_validate(const cudarl_ppo_config *cfg) {
    cudarl_ppo_config full;
    CR_TRY(cr_ppo_config_take(cfg, &full, "cudarl_ppo_config_validate"));
    const cudarl_ppo_config *c = &full;
    CR_TRY(cr_flag_ranges_check(cudarl_flag_ranges(CUDARL_FLAGS_PPO), c)); /* each field */
    const cudarl_env_def *def;
    CR_TRY(cr_run_find_env(c->env_id, &def));
    CR_TRY(cr_env_check_run(def, c->num_envs, c->env_groups));
    CR_TRY(check_policy(c, def));
    CR_TRY(cr_precision_check_training(c->precision, c->device));
    CR_REQUIRE(c->env_device == CUDARL_DEVICE_AUTO || c->env_device == CUDARL_DEVICE_CPU ||
               c->env_device == CUDARL_DEVICE_CUDA,
               "--env-device must be cpu, cuda or auto");
    const int caps = cr_env_info_find(c->env_id)->caps;
    CR_REQUIRE(c->env_device != CUDARL_DEVICE_CUDA || (caps & CR_ENV_BATCH_CUDA) ||
                   (strcmp(c->policy, "mlp") && (caps & CR_ENV_IMAGE_TWIN)),
               "--env-device cuda: %s has no CUDA twin in this build (docs/envs.md lists the "
               "envs that have one); use --env-device cpu, which steps it on CPU threads", c->env_id);
    CR_REQUIRE(c->env_device != CUDARL_DEVICE_CUDA || c->device != CUDARL_DEVICE_CPU,
               "--env-device cuda needs the GPU: use --device cuda (or auto) with it");
    CR_REQUIRE(!c->async || c->env_device == CUDARL_DEVICE_CPU,
               "--async overlaps envs stepped on CPU threads with the GPU learner: it needs "
               "--env-device cpu");
    CR_REQUIRE(!c->async || c->device != CUDARL_DEVICE_CPU,
               "--async needs a GPU (the learner runs on a second CUDA stream): use --device cuda");
    CR_REQUIRE((c->actor_device < 0 && c->learner_device < 0) || c->device != CUDARL_DEVICE_CPU,
               "--actor-device / --learner-device pick GPUs, and this run is on the CPU; use "
               "--device cuda");
    CR_REQUIRE(c->learner_device < 0 || c->async ||
                   c->learner_device == (c->actor_device < 0 ? 0 : c->actor_device),
               "--learner-device %d puts the learner on another GPU than the actor's, which "
               "needs --async (the learner updates beside the next rollout); add --async "
               "--env-device cpu, or drop --learner-device", c->learner_device);
    CR_REQUIRE(c->env_groups <= c->num_envs,
               "--env-groups %d is more than --num-envs %d; each group needs an env",
               c->env_groups, c->num_envs);
    int64_t batch = (int64_t)c->num_envs * c->num_steps;
    CR_REQUIRE(batch <= (1 << 26), "--num-envs x --num-steps = %lld is over the limit of 67108864 "
               "transitions per iteration; lower one of them", (long long)batch);
    CR_REQUIRE(batch % c->num_minibatches == 0,
               "--num-minibatches %d does not divide the batch (--num-envs %d x --num-steps %d = "
               "%lld); pick a divisor of %lld", c->num_minibatches, c->num_envs, c->num_steps,
               (long long)batch, (long long)batch);
    CR_REQUIRE(c->total_timesteps >= batch,
               "--total-timesteps %lld is less than one iteration (--num-envs x --num-steps = "
               "%lld); raise it", (long long)c->total_timesteps, (long long)batch);
    CR_REQUIRE((c->norm_obs == 0 || c->norm_obs == 1) && (c->norm_reward == 0 ||
               c->norm_reward == 1), "--norm-obs and --norm-reward are 0 or 1");
    CR_REQUIRE(c->runs_dir[0], "--runs-dir must not be empty");
    if (c->run_name[0]) CR_TRY(cr_run_check_name(c->run_name));
    return CUDARL_OK;
}

/* ---- the hyperparameters a checkpoint holds ---------------------------------------------- */

static cudarl_status config_from_file(const cr_st_file *f, const char *path,
                                      cudarl_ppo_config *c) {
    const char *env = cr_st_meta(f, "env_id"), *run = cr_st_meta(f, "run_name");
    const char *pol = cr_st_meta(f, "policy"); /* absent before conv policies: the MLP */
    if (!env || !cr_env_info_find(env))
        return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s' names env '%s', which is not "
                       "registered in this process (cudarl info lists those that are); use it in "
                       "the program that registers '%s' (cudarl_env_register), or check that the "
                       "file is a checkpoint of cudarl train", path, env ? env : "(missing)",
                       env ? env : "its env");
    ppo_defaults(c, env);
    if (run) snprintf(c->run_name, sizeof c->run_name, "%s", run);
    if (pol) snprintf(c->policy, sizeof c->policy, "%s", pol);
    long long seed = 0, tt = 0, ne = 0, ns = 0, al = 0, nm = 0, ue = 0, na = 0, cv = 0, hid = 0;
    CR_TRY(cr_checkpoint_meta_ll(f, path, "seed", &seed));
    CR_TRY(cr_checkpoint_meta_ll(f, path, "total_timesteps", &tt));
    CR_TRY(cr_checkpoint_meta_ll(f, path, "num_envs", &ne));
    CR_TRY(cr_checkpoint_meta_ll(f, path, "num_steps", &ns));
    CR_TRY(cr_checkpoint_meta_ll(f, path, "anneal_lr", &al));
    CR_TRY(cr_checkpoint_meta_ll(f, path, "num_minibatches", &nm));
    CR_TRY(cr_checkpoint_meta_ll(f, path, "update_epochs", &ue));
    CR_TRY(cr_checkpoint_meta_ll(f, path, "norm_adv", &na));
    CR_TRY(cr_checkpoint_meta_ll(f, path, "clip_vloss", &cv));
    CR_TRY(cr_checkpoint_meta_ll(f, path, "hidden", &hid));
    c->seed = (uint64_t)seed, c->total_timesteps = tt, c->num_envs = (int)ne;
    c->num_steps = (int)ns, c->anneal_lr = (int)al, c->num_minibatches = (int)nm;
    c->update_epochs = (int)ue, c->norm_adv = (int)na, c->clip_vloss = (int)cv;
    c->hidden = (int)hid;
    const char *keys[2] = {"norm_obs", "norm_reward"}; /* absent before they existed: 0 */
    int *fields[2] = {&c->norm_obs, &c->norm_reward};
    for (int k = 0; k < 2; k++) {
        long long v = 0;
        if (cr_st_meta(f, keys[k])) CR_TRY(cr_checkpoint_meta_ll(f, path, keys[k], &v));
        *fields[k] = v != 0;
    }
    /* the products' format: a resumed bf16 run must not go on in fp32 (absent before
     * --precision existed: fp32) */
    CR_TRY(cr_checkpoint_meta_precision(f, path, &c->precision));
    const char *sc = cr_st_meta(f, "separate_critic"); /* absent before it existed: shared */
    if (sc) {
        long long v = 0;
        CR_TRY(cr_checkpoint_meta_ll(f, path, "separate_critic", &v));
        c->separate_critic = v != 0;
    }
    CR_TRY(cr_checkpoint_meta_double(f, path, "learning_rate", &c->learning_rate));
    CR_TRY(cr_checkpoint_meta_double(f, path, "gamma", &c->gamma));
    CR_TRY(cr_checkpoint_meta_double(f, path, "gae_lambda", &c->gae_lambda));
    CR_TRY(cr_checkpoint_meta_double(f, path, "clip_coef", &c->clip_coef));
    CR_TRY(cr_checkpoint_meta_double(f, path, "ent_coef", &c->ent_coef));
    CR_TRY(cr_checkpoint_meta_double(f, path, "vf_coef", &c->vf_coef));
    CR_TRY(cr_checkpoint_meta_double(f, path, "max_grad_norm", &c->max_grad_norm));
    CR_TRY(cr_checkpoint_meta_double(f, path, "target_kl", &c->target_kl));
    cudarl_status s = cudarl_ppo_config_validate(c);
    if (s != CUDARL_OK)
        return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s' holds invalid hyperparameters (%s)",
                       path, cudarl_last_error());
    return CUDARL_OK;
}

cudarl_status cudarl_ppo_config_load_sized(const char *path, cudarl_ppo_config *cfg,
                                           size_t struct_size) {
    CR_REQUIRE(path && cfg, "cudarl_ppo_config_load: the path and the config must not be NULL");
    CR_TRY(cr_struct_check(&cr_abi_ppo_config, struct_size, "cudarl_ppo_config_load"));
    cudarl_ppo_config full;
    cr_st_file *f;
    CR_TRY(cr_st_open(&f, path));
    /* a convolutional policy's tensors are checked against its spec by the trainer's loader */
    cudarl_status s = cr_st_meta(f, CR_CONVNET_META_KEY)
                          ? cr_checkpoint_check_header(f, path, "ppo")
                          : cr_checkpoint_check_format(f, path, "ppo");
    if (s == CUDARL_OK) s = config_from_file(f, path, &full);
    cr_st_close(f);
    if (s == CUDARL_OK) cr_struct_write(cfg, &full, struct_size);
    return s;
}
