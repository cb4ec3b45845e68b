/* DQN with a convolutional Q-network (--policy minatar-cnn, src/algo/dqn.c through cr_convnet)
 * on the context given by argv[1] (cpu; cuda for the gpu label):
 *  cpu  1. --policy is validated: an unknown name is refused listing the choices, a conv policy
 *          on CartPole-v1 (vector observations) is refused, nature-cnn on MinAtar's 10x10 is
 *          refused as not fitting.
 *       2. MinAtar/Breakout-v1 trains for a few thousand steps with minatar-cnn: episodes finish
 *          and are logged in metrics.csv; the checkpoint's "network" metadata parses back to
 *          minatar-cnn for (4, 10, 10) and 3 actions with DQN heads, its policy is minatar-cnn,
 *          and every tensor of that layout (online, target, Adam's moments) is there, with the
 *          layout's shape, and finite.
 *       3. cudarl eval refuses the checkpoint (it reads MLPs only) with CUDARL_ERR_UNSUPPORTED.
 *  cuda    the conv policy on a CUDA context is refused with CUDARL_ERR_UNSUPPORTED. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "cudarl.h"
#include "env/env.h"
#include "nn/convnet.h"
#include "runtime/safetensors.h"

#define BREAKOUT "MinAtar/Breakout-v1"

/* The network's tensors under these prefixes: online, target, Adam's two moments. */
static const char *const prefix[] = {"", "target_", "optimizer.exp_avg.",
                                     "optimizer.exp_avg_sq."};

static const char *runs;

static void breakout_config(cudarl_dqn_config *c, cudarl_device_kind kind) {
    cudarl_dqn_config_default(c, BREAKOUT);
    snprintf(c->policy, sizeof c->policy, "minatar-cnn");
    c->num_envs = 4, c->total_timesteps = 4000, c->learning_starts = 500, c->train_frequency = 4;
    c->batch_size = 32, c->buffer_size = 2000, c->target_network_frequency = 400;
    c->env_device = CUDARL_DEVICE_CPU, c->env_threads = 2, c->device = kind, c->quiet = 1;
    snprintf(c->runs_dir, sizeof c->runs_dir, "%s", runs);
    snprintf(c->run_name, sizeof c->run_name, "breakout_cnn_%d", (int)getpid());
}

/* Expects `s` to be `want` with a message containing `needle`. */
static void expect_refusal(const char *what, cudarl_status s, cudarl_status want,
                           const char *needle) {
    const char *msg = cudarl_last_error();
    CHECK_MSG(s == want && strstr(msg, needle) != NULL, "%s: expected %s with '%s', got %s: %s",
              what, cudarl_status_name(want), needle, cudarl_status_name(s), msg);
    printf("%s: refused: %s\n", what, msg);
}

static void validation_case(void) {
    cudarl_dqn_config c;
    breakout_config(&c, CUDARL_DEVICE_CPU);
    CHECK_OK(cudarl_dqn_config_validate(&c));
    snprintf(c.policy, sizeof c.policy, "resnet");
    expect_refusal("unknown policy", cudarl_dqn_config_validate(&c), CUDARL_ERR_INVALID_ARG,
                   "choose one of: mlp, minatar-cnn, nature-cnn");
    snprintf(c.policy, sizeof c.policy, "nature-cnn");
    expect_refusal("nature-cnn on MinAtar", cudarl_dqn_config_validate(&c),
                   CUDARL_ERR_INVALID_ARG, "does not fit");
    cudarl_dqn_config_default(&c, "CartPole-v1");
    snprintf(c.policy, sizeof c.policy, "minatar-cnn");
    expect_refusal("minatar-cnn on CartPole", cudarl_dqn_config_validate(&c),
                   CUDARL_ERR_INVALID_ARG, "use --policy mlp");
}

/* The checkpoint's network: its spec text parses to minatar-cnn, and every tensor of the layout
 * it plans is in the file with that shape and finite values. */
static void check_checkpoint(const char *path, int num_actions) {
    cr_st_file *f = NULL;
    CHECK_OK(cr_st_open(&f, path));
    const char *pol = cr_st_meta(f, "policy");
    CHECK_MSG(pol && !strcmp(pol, "minatar-cnn"), "policy metadata '%s'", pol ? pol : "(none)");
    cr_convnet_spec spec;
    CHECK_OK(cr_convnet_spec_parse(&spec, cr_st_meta(f, CR_CONVNET_META_KEY), path));
    CHECK_MSG(!strcmp(spec.name, "minatar-cnn") && spec.heads == CR_CONVNET_DQN &&
                  spec.in_c == 4 && spec.in_h == 10 && spec.in_w == 10 &&
                  spec.num_actions == num_actions && spec.dtype == CR_CONVNET_U8 &&
                  spec.scale == CR_CONVNET_SCALE_NONE,
              "network spec %s heads %d (%d, %d, %d) actions %d dtype %d scale %d", spec.name,
              (int)spec.heads, spec.in_c, spec.in_h, spec.in_w, spec.num_actions,
              (int)spec.dtype, (int)spec.scale);
    static cr_convnet net;
    CHECK_OK(cr_convnet_plan(&net, &spec));
    CHECK(net.ntensors == 6 && cr_convnet_find(&net, "network.5.weight") == 4);
    float *w = malloc(net.num_params * sizeof(float));
    CHECK(w != NULL);
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < net.ntensors; i++) {
            const cr_convnet_tensor *t = &net.t[i];
            char name[96];
            snprintf(name, sizeof name, "%s%s", prefix[k], t->name);
            cr_st_tensor st;
            CHECK_OK(cr_st_find(f, name, &st));
            CHECK_MSG(st.ndim == t->ndim, "%s: %d dims, expected %d", name, st.ndim, t->ndim);
            for (int d = 0; d < t->ndim; d++)
                CHECK_MSG(st.shape[d] == t->shape[d], "%s: dim %d is %lld, expected %d", name, d,
                          (long long)st.shape[d], t->shape[d]);
            CHECK_OK(cr_st_read_f32(f, name, w + t->offset, t->count));
            for (size_t e = 0; e < t->count; e++)
                CHECK_MSG(isfinite(w[t->offset + e]), "%s[%zu] = %g", name, e, w[t->offset + e]);
        }
    free(w);
    cr_st_close(f);
    printf("checkpoint: policy minatar-cnn, %zu parameters in %d tensors\n", net.num_params,
           net.ntensors);
}

static void breakout_case(cudarl_ctx *ctx) {
    cudarl_dqn_config c;
    breakout_config(&c, CUDARL_DEVICE_CPU);
    cudarl_train_summary s;
    CHECK_OK(cudarl_dqn_train(ctx, &c, &s));
    printf("%s minatar-cnn: %lld steps, %lld episodes, mean(100) %.2f, %.2f s\n", BREAKOUT,
           (long long)s.global_step, (long long)s.episodes, s.mean_return_100, s.train_seconds);
    CHECK(s.global_step == 4000);
    CHECK_MSG(s.episodes >= 5, "only %lld episodes in 4,000 steps", (long long)s.episodes);
    CHECK(s.mean_return_100 >= 0.0);
    char path[700], line[512];
    snprintf(path, sizeof path, "%s/metrics.csv", s.run_dir);
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "no %s", path);
    int rows = 0, with_return = 0;
    while (fgets(line, sizeof line, f)) {
        if (rows++ == 0) continue; /* the header */
        const char *p = strchr(line, ',');
        p = p ? strchr(p + 1, ',') : NULL; /* charts/episodic_return follows the 2nd comma */
        if (p && p[1] != ',') with_return++;
    }
    fclose(f);
    CHECK_MSG(rows > 10 && with_return > 0, "metrics.csv: %d rows, %d with an episodic return",
              rows, with_return);
    snprintf(path, sizeof path, "%s/model.safetensors", s.run_dir);
    const cr_env_info *info = cr_env_info_find(BREAKOUT);
    CHECK(info != NULL);
    check_checkpoint(path, info->num_actions);
    double mean = 0, std = 0;
    expect_refusal("eval of a minatar-cnn checkpoint", cudarl_policy_eval(ctx, path, 1, 1, &mean,
                   &std), CUDARL_ERR_UNSUPPORTED, "convolutional network");
}

static void cuda_case(cudarl_ctx *ctx) {
    cudarl_dqn_config c;
    breakout_config(&c, CUDARL_DEVICE_CUDA);
    cudarl_train_summary s;
    expect_refusal("minatar-cnn on CUDA", cudarl_dqn_train(ctx, &c, &s), CUDARL_ERR_UNSUPPORTED,
                   "the CUDA convolutional network is not built yet; use --device cpu");
}

int main(int argc, char **argv) {
    cudarl_device_kind kind =
        argc > 1 && !strcmp(argv[1], "cuda") ? CUDARL_DEVICE_CUDA : CUDARL_DEVICE_CPU;
    runs = argc > 2 ? argv[2] : "dqn-conv-runs";
    cudarl_log_set_level(CUDARL_LOG_WARN);
    cudarl_ctx *ctx;
    CHECK_OK(cudarl_ctx_init(&ctx, kind, 0));
    if (kind == CUDARL_DEVICE_CUDA) {
        cuda_case(ctx);
    } else {
        validation_case();
        breakout_case(ctx);
    }
    cudarl_ctx_free(ctx);
    printf("test_dqn_conv: ok\n");
    return 0;
}
