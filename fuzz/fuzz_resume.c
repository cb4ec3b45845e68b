/* libFuzzer: a checkpoint file resumed by PPO on the CPU (cudarl_ppo_train with resume_path, as
 * `cudarl train --resume` runs it): its config, state tensors and weights must be refused with a
 * status or train one more iteration than the checkpoint's config planned. Inputs whose config
 * asks for more than a small run (over 4,096 env steps per iteration or 64 iterations, the
 * Nature-CNN) are skipped: those sizes are the validator's to refuse, and fuzz_config covers it;
 * what is fuzzed here is everything a resume reads. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_write("runs/run/model.safetensors", data, size);
    cudarl_ppo_config cfg;
    if (cudarl_ppo_config_load(path, &cfg) != CUDARL_OK) return 0;
    int64_t batch = (int64_t)cfg.num_envs * cfg.num_steps;
    if (batch < 1 || batch > 4096 || cfg.total_timesteps < 0 ||
        cfg.total_timesteps > 63 * batch || !strcmp(cfg.policy, "nature-cnn"))
        return 0;
    snprintf(cfg.runs_dir, sizeof cfg.runs_dir, "%s/runs", fuzz_dir());
    snprintf(cfg.run_name, sizeof cfg.run_name, "run");
    cfg.total_timesteps += batch; /* one iteration past the checkpoint's plan */
    cfg.device = CUDARL_DEVICE_CPU, cfg.env_device = CUDARL_DEVICE_CPU;
    cfg.threads = 1, cfg.env_threads = 1, cfg.env_groups = 0;
    cfg.actor_device = -1, cfg.learner_device = -1;
    cfg.async = 0, cfg.quiet = 1, cfg.profile = 0, cfg.checkpoint_every = 0;
    cudarl_ctx *ctx = NULL;
    if (cudarl_ctx_init(&ctx, CUDARL_DEVICE_CPU, 0) != CUDARL_OK) abort();
    cudarl_train_summary summary;
    (void)cudarl_ppo_train(ctx, &cfg, path, &summary);
    cudarl_ctx_free(ctx);
    return 0;
}
