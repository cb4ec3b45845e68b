/* The accepted range of each numeric setting of the trainers' configs (cudarl_flag_ranges): the
 * tables cudarl_ppo_config_validate and cudarl_dqn_config_validate check every field against,
 * and the CLI parses its flags with. Rules between settings stay in the validators. */
#include <stddef.h>

#include "replay/replay.h"

/* 1e15 steps: a bound on step counts that an int64 keeps exactly as a double (below 2^53). */
#define STEPS_MAX 1e15

#define PPO(flag, field, type, lo, hi, lo_means) \
    {flag, lo, hi, lo_means, offsetof(cudarl_ppo_config, field), CUDARL_FIELD_##type}
#define DQN(flag, field, type, lo, hi, lo_means) \
    {flag, lo, hi, lo_means, offsetof(cudarl_dqn_config, field), CUDARL_FIELD_##type}
#define END {NULL, 0, 0, NULL, 0, CUDARL_FIELD_INT}

static const cudarl_flag_range ppo_ranges[] = {
    PPO("total-timesteps", total_timesteps, I64, 1, STEPS_MAX, NULL),
    PPO("learning-rate", learning_rate, F64, 1e-12, 1, NULL),
    PPO("num-envs", num_envs, INT, 1, 1 << 22, NULL),
    PPO("num-steps", num_steps, INT, 1, 1 << 16, NULL),
    PPO("gamma", gamma, F64, 0, 1, NULL),
    PPO("gae-lambda", gae_lambda, F64, 0, 1, NULL),
    PPO("num-minibatches", num_minibatches, INT, 1, 1 << 26, NULL),
    PPO("update-epochs", update_epochs, INT, 1, 1000, NULL),
    PPO("clip-coef", clip_coef, F64, 1e-9, 10, NULL),
    PPO("ent-coef", ent_coef, F64, 0, 10, NULL),
    PPO("vf-coef", vf_coef, F64, 0, 100, NULL),
    PPO("max-grad-norm", max_grad_norm, F64, 1e-9, 1e9, NULL),
    PPO("target-kl", target_kl, F64, 0, 1e9, "off"),
    PPO("hidden", hidden, INT, 1, 4096, NULL),
    PPO("threads", threads, INT, 0, 1024, "all cores"),
    PPO("env-threads", env_threads, INT, 0, 1024, "all cores"),
    PPO("env-groups", env_groups, INT, 0, 31, "2 with a GPU policy, else 1"),
    PPO("actor-device", actor_device, INT, -1, 63, "the context's GPU"),
    PPO("learner-device", learner_device, INT, -1, 63, "the actor's GPU"),
    PPO("checkpoint-every", checkpoint_every, INT, 0, 1 << 30, "at the end only"),
    END,
};

static const cudarl_flag_range dqn_ranges[] = {
    DQN("total-timesteps", total_timesteps, I64, 1, STEPS_MAX, NULL),
    DQN("learning-rate", learning_rate, F64, 1e-12, 1, NULL),
    DQN("num-envs", num_envs, INT, 1, 1 << 20, NULL),
    /* at least cr_replay_min_rows(frame stack) x num_envs: the validator's rule */
    DQN("buffer-size", buffer_size, I64, 4, (double)((int64_t)1 << 34), NULL),
    DQN("gamma", gamma, F64, 0, 1, NULL),
    DQN("tau", tau, F64, 1e-9, 1, NULL),
    DQN("target-network-frequency", target_network_frequency, I64, 1, STEPS_MAX, NULL),
    DQN("batch-size", batch_size, INT, 1, 1 << 20, NULL),
    DQN("start-e", start_e, F64, 0, 1, NULL),
    DQN("end-e", end_e, F64, 0, 1, NULL),
    DQN("exploration-fraction", exploration_fraction, F64, 1e-9, 1, NULL),
    DQN("learning-starts", learning_starts, I64, 0, STEPS_MAX, NULL),
    DQN("train-frequency", train_frequency, I64, 1, STEPS_MAX, NULL),
    DQN("prioritized-alpha", prioritized_alpha, F64, 0, 10, NULL),
    DQN("prioritized-beta", prioritized_beta, F64, 0, 1, NULL),
    DQN("prioritized-eps", prioritized_eps, F64, 1e-12, 1, NULL),
    DQN("max-grad-norm", max_grad_norm, F64, 0, 1e9, "no clipping"),
    DQN("hidden1", hidden1, INT, 1, 4096, NULL),
    DQN("hidden2", hidden2, INT, 1, 4096, NULL),
    DQN("threads", threads, INT, 0, 1024, "all cores"),
    DQN("env-threads", env_threads, INT, 0, 1024, "all cores"),
    DQN("mem-budget", mem_budget, I64, 0, (double)((int64_t)1 << 50), "what the device can give"),
    END,
};

const cudarl_flag_range *cudarl_flag_ranges(cudarl_flag_table table) {
    switch (table) {
    case CUDARL_FLAGS_PPO: return ppo_ranges;
    case CUDARL_FLAGS_DQN: return dqn_ranges;
    case CUDARL_FLAGS_REPLAY: return cr_replay_flag_ranges;
    }
    return NULL;
}

cudarl_status cudarl_flag_check(cudarl_flag_table table, const char *flag, double value) {
    const cudarl_flag_range *ranges = cudarl_flag_ranges(table);
    if (!ranges)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "flag table %d is not a cudarl_flag_table",
                       (int)table);
    const cudarl_flag_range *r = cr_flag_range_find(ranges, flag);
    if (!r)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "--%.64s is not a numeric setting of this table",
                       flag ? flag : "(null)");
    return cr_flag_range_check(r, value);
}
