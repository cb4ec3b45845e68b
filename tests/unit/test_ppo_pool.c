/* PPO's rollout with the envs on CPU threads (src/algo/ppo/ppo_pool.c) against the env batch, on the
 * context given by argv[1] (cpu, or cuda for the gpu label):
 *  1. The synchronous schedule (one group) gives the batch's rollout bit for bit: the same env
 *     code, RNG words and ops on the same shapes. On CUDA twice: the op-by-op rollouts (batch
 *     and pool), then the fused kernels (the batch's rollout kernel, the pool's step kernel,
 *     which run the same device code per env: three groups are then bit for bit too).
 *  2. Three uneven groups on 3 threads give it too on the CPU, where an op's row does not
 *     depend on how many rows it is given; on CUDA, cuBLAS may pick other kernels for other
 *     shapes, so there values and log-probabilities may differ by rounding (2e-5) and an action
 *     may flip when a uniform falls within that of the softmax boundary (at most one env).
 *  3. A checkpoint written after a rollout and loaded into a fresh trainer continues with the
 *     same next rollout, bit for bit (env states, step counts, observations, RNG streams).
 *  4. (cuda) --async, the learner on a second stream beside the next rollout, learns CartPole;
 *     with two GPUs, also with the learner on the second (--learner-device 1).
 *  5. Where --env-device auto steps the envs (cr_ppo_pool_wanted, on CPU and CUDA contexts alike:
 *     the choice reads only the context's kind): CartPole's batch; an image env's CUDA twin for a
 *     conv policy on the GPU; CPU threads for the rest.
 * Every 5th env starts 490-499 steps into its episode so that truncations occur. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo/ppo/ppo_internal.h"
#include "check.h"
#ifdef CUDARL_WITH_CUDA
#include <cuda_runtime.h>
#endif
#include "cudarl.h"

#define T_STEPS 32
#define N_ENVS 301
#define ROLLOUTS 3

typedef struct rollout_copy {
    float obs[T_STEPS * N_ENVS * 4], values[T_STEPS * N_ENVS], logp[T_STEPS * N_ENVS];
    float rewards[T_STEPS * N_ENVS], adv[T_STEPS * N_ENVS], last_values[N_ENVS];
    int32_t actions[T_STEPS * N_ENVS];
    uint8_t terminated[T_STEPS * N_ENVS], truncated[T_STEPS * N_ENVS];
    cr_episode_log log;
} rollout_copy;

static void fetch(cr_ppo *p, rollout_copy *h) {
    cudarl_ctx *c = p->ctx;
    const cr_backend *o = c->ops;
    size_t tn = (size_t)T_STEPS * N_ENVS;
    o->copy_to_host(c, h->obs, p->obs, tn * 4 * sizeof(float));
    o->copy_to_host(c, h->values, p->values, tn * sizeof(float));
    o->copy_to_host(c, h->logp, p->logp, tn * sizeof(float));
    o->copy_to_host(c, h->rewards, p->rewards, tn * sizeof(float));
    o->copy_to_host(c, h->adv, p->adv, tn * sizeof(float));
    o->copy_to_host(c, h->last_values, p->last_values, N_ENVS * sizeof(float));
    o->copy_to_host(c, h->actions, p->actions, tn * sizeof(int32_t));
    o->copy_to_host(c, h->terminated, p->terminated, tn);
    o->copy_to_host(c, h->truncated, p->truncated, tn);
    o->copy_to_host(c, &h->log, p->log, sizeof h->log);
}

/* got == want bit for bit (tol 0), or within tol where actions agree so far (at most one env
 * diverging). Returns the number of truncations seen. */
static long compare(const char *what, const rollout_copy *want, const rollout_copy *got,
                    double tol) {
    int diverged = 0;
    long truncations = 0;
    for (int n = 0; n < N_ENVS; n++) {
        for (int t = 0; t < T_STEPS; t++) {
            size_t r = (size_t)t * N_ENVS + n;
            char name[96];
            snprintf(name, sizeof name, "%s (t %d, n %d)", what, t, n);
            if (want->actions[r] != got->actions[r]) {
                CHECK_MSG(tol > 0, "%s: action %d vs %d", name, got->actions[r], want->actions[r]);
                diverged++;
                break;
            }
            for (int k = 0; k < 4; k++)
                CHECK_MSG(want->obs[r * 4 + k] == got->obs[r * 4 + k], "%s: obs[%d] %.9g vs %.9g",
                          name, k, got->obs[r * 4 + k], want->obs[r * 4 + k]);
            CHECK_MSG(want->rewards[r] == got->rewards[r] &&
                          want->terminated[r] == got->terminated[r] &&
                          want->truncated[r] == got->truncated[r],
                      "%s: reward or flags", name);
            truncations += want->truncated[r];
            if (tol == 0) {
                CHECK_MSG(want->values[r] == got->values[r] && want->logp[r] == got->logp[r] &&
                              want->adv[r] == got->adv[r],
                          "%s: value %.9g vs %.9g, logp %.9g vs %.9g, adv %.9g vs %.9g", name,
                          got->values[r], want->values[r], got->logp[r], want->logp[r],
                          got->adv[r], want->adv[r]);
            } else {
                CHECK_CLOSE(name, got->values[r], want->values[r], tol, 0);
                CHECK_CLOSE(name, got->logp[r], want->logp[r], tol, 0);
            }
        }
    }
    CHECK_MSG(diverged <= 1, "%s: %d envs sampled other actions", what, diverged);
    if (tol == 0 || diverged == 0) {
        CHECK_MSG(want->log.episodes == got->log.episodes, "%s: episodes %lld vs %lld", what,
                  (long long)got->log.episodes, (long long)want->log.episodes);
        for (int k = 0; k < CR_RECENT_EPISODES; k++)
            CHECK_MSG(want->log.recent[k] == got->log.recent[k], "%s: recent[%d]", what, k);
    }
    return truncations;
}

static void near_limit(cr_ppo *p) {
    static int32_t elapsed[N_ENVS];
    for (int n = 0; n < N_ENVS; n++) elapsed[n] = n % 5 == 0 ? 490 + n % 10 : 0;
    if (p->pool) {
        void *states;
        size_t bytes;
        int32_t *el;
        cr_ppo_pool_state(p, &states, &bytes, &el);
        memcpy(el, elapsed, sizeof elapsed);
    } else {
        p->ctx->ops->copy_from_host(p->ctx, p->env.cartpole.elapsed, elapsed, sizeof elapsed);
    }
}

/* Which rollout the trainers run: 0 the op-by-op one (batch and pool), 1 the fused kernels
 * (the batch's rollout kernel, the pool's step kernel; CUDA). */
static int fused;

static void init(cr_ppo *p, cudarl_ctx *ctx, cudarl_device_kind env_device, int groups,
                 int threads) {
    cudarl_ppo_config cfg;
    cudarl_ppo_config_default(&cfg, "CartPole-v1");
    cfg.num_envs = N_ENVS, cfg.num_steps = T_STEPS, cfg.num_minibatches = 1;
    cfg.total_timesteps = (int64_t)N_ENVS * T_STEPS * ROLLOUTS * 4;
    cfg.seed = 11;
    cfg.quiet = 1;
    cfg.env_device = env_device, cfg.env_groups = groups, cfg.env_threads = threads;
    CHECK_OK(cr_ppo_init(p, ctx, &cfg));
    CHECK_MSG((p->pool != NULL) == (env_device == CUDARL_DEVICE_CPU), "pool mode %d",
              p->pool != NULL);
    if (fused) { /* both fused: the same device code per env and step */
        CHECK_MSG(p->pool ? p->fused_pool : p->fused_rollout, "the %s rollout is not fused",
                  p->pool ? "pool's" : "batch's");
    } else { /* the op-by-op rollouts: the same ops on both sides */
        p->fused_rollout = 0, p->fused_pool = 0;
    }
    near_limit(p);
}

/* Items 1-3 for the rollouts `fused` selects; the number of truncations seen. */
static long run_matrix(cudarl_ctx *ctx, int gpu) {
    cudarl_device_kind batch_device = gpu ? CUDARL_DEVICE_CUDA : CUDARL_DEVICE_AUTO;
    static cr_ppo batch, sync1, grouped;
    init(&batch, ctx, batch_device, 0, 0);
    init(&sync1, ctx, CUDARL_DEVICE_CPU, 1, 2);
    init(&grouped, ctx, CUDARL_DEVICE_CPU, 3, 3);
    static rollout_copy want, got, mine;
    long truncations = 0;
    char path[64];
    snprintf(path, sizeof path, "/tmp/test_ppo_pool_%d.safetensors", (int)getpid());
    /* Fused, each env's values come from the same kernel code whatever the group: bit for bit */
    double group_tol = gpu && !fused ? 2e-5 : 0;
    for (int r = 0; r < ROLLOUTS; r++) {
        cr_ppo_rollout(&batch);
        fetch(&batch, &want);
        cr_ppo_rollout(&sync1);
        fetch(&sync1, &mine);
        truncations += compare("one group", &want, &mine, 0);
        cr_ppo_rollout(&grouped);
        fetch(&grouped, &got);
        compare("three groups", &want, &got, group_tol);
        if (r == 0) { /* the counters the loop keeps after this rollout (resume checks them) */
            sync1.iteration = 1, sync1.global_step = sync1.batch;
            CHECK_OK(cr_ppo_checkpoint_save(&sync1, path));
        }
        if (r == 1) { /* a fresh trainer from the checkpoint continues as sync1 did */
            static cr_ppo resumed;
            init(&resumed, ctx, CUDARL_DEVICE_CPU, 1, 2);
            resumed.num_iterations = 1000;
            CHECK_OK(cr_ppo_checkpoint_load(&resumed, path));
            cr_ppo_rollout(&resumed);
            static rollout_copy again;
            fetch(&resumed, &again);
            compare("resumed from a checkpoint", &mine, &again, 0);
            cr_ppo_free(&resumed);
        }
        printf("%s rollout %d: %lld episodes so far\n", fused ? "fused" : "op-by-op", r,
               (long long)want.log.episodes);
    }
    unlink(path);
    cr_ppo_free(&batch);
    cr_ppo_free(&sync1);
    cr_ppo_free(&grouped);
    return truncations;
}

static const char *kind_name(cudarl_device_kind k) {
    return k == CUDARL_DEVICE_CPU ? "cpu" : k == CUDARL_DEVICE_CUDA ? "cuda" : "auto";
}

/* 5. The auto placement, per env, policy and context kind (1: CPU threads). */
static void auto_placement(cudarl_ctx *ctx) {
    static const struct {
        const char *env, *policy;
        cudarl_device_kind ctx_kind, env_device;
        int threads;
    } cases[] = {
        {"CartPole-v1", "mlp", CUDARL_DEVICE_CPU, CUDARL_DEVICE_AUTO, 0},
        {"CartPole-v1", "mlp", CUDARL_DEVICE_CUDA, CUDARL_DEVICE_AUTO, 0},
        {"CartPole-v1", "mlp", CUDARL_DEVICE_CUDA, CUDARL_DEVICE_CPU, 1},
        {"CartPolePixels-v1", "nature-cnn", CUDARL_DEVICE_CPU, CUDARL_DEVICE_AUTO, 1},
        {"CartPolePixels-v1", "nature-cnn", CUDARL_DEVICE_CUDA, CUDARL_DEVICE_AUTO, 0},
        {"CartPolePixels-v1", "nature-cnn", CUDARL_DEVICE_CUDA, CUDARL_DEVICE_CPU, 1},
        {"MinAtar/Breakout-v1", "minatar-cnn", CUDARL_DEVICE_CPU, CUDARL_DEVICE_AUTO, 1},
        {"MinAtar/Breakout-v1", "minatar-cnn", CUDARL_DEVICE_CUDA, CUDARL_DEVICE_AUTO, 0},
        {"MinAtar/Breakout-v1", "mlp", CUDARL_DEVICE_CUDA, CUDARL_DEVICE_AUTO, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cudarl_ctx fake = *ctx;
        fake.kind = cases[i].ctx_kind;
        cr_ppo p;
        memset(&p, 0, sizeof p);
        p.ctx = &fake;
        cudarl_ppo_config_default(&p.cfg, cases[i].env);
        snprintf(p.cfg.policy, sizeof p.cfg.policy, "%s", cases[i].policy);
        p.cfg.env_device = cases[i].env_device;
        p.conv = strcmp(cases[i].policy, "mlp") != 0;
        CHECK_MSG(cr_ppo_pool_wanted(&p) == cases[i].threads,
                  "%s, --policy %s, --env-device %s on a %s context: expected %s", cases[i].env,
                  cases[i].policy, kind_name(cases[i].env_device),
                  kind_name(cases[i].ctx_kind),
                  cases[i].threads ? "CPU threads" : "the env batch or CUDA twin");
    }
}

int main(int argc, char **argv) {
    int gpu = argc > 1 && !strcmp(argv[1], "cuda");
    cudarl_ctx *ctx;
    if (cudarl_ctx_init(&ctx, gpu ? CUDARL_DEVICE_CUDA : CUDARL_DEVICE_CPU, 0) != CUDARL_OK) {
        fprintf(stderr, "FAIL: cannot open the context: %s\n", cudarl_last_error());
        return 1;
    }
    auto_placement(ctx);
    long truncations = run_matrix(ctx, gpu);
    CHECK_MSG(truncations >= 40, "only %ld truncations: the test would not cover them",
              truncations);
    if (gpu) { /* the same with the fused kernels on both sides */
        fused = 1;
        run_matrix(ctx, gpu);
    }
    if (gpu) { /* 4. --async (learner on a second stream, the policy one update stale) solves */
        cudarl_ppo_config cfg;
        cudarl_ppo_config_default(&cfg, "CartPole-v1");
        cudarl_ppo_config_for_device(&cfg, CUDARL_DEVICE_CUDA);
        cfg.env_device = CUDARL_DEVICE_CPU, cfg.env_threads = 4, cfg.async = 1;
        cfg.num_envs = 4096, cfg.total_timesteps = 4 * 1000 * 1000;
        cfg.quiet = 1;
        snprintf(cfg.runs_dir, sizeof cfg.runs_dir, "/tmp/test_ppo_pool_async_%d", (int)getpid());
        cudarl_train_summary sum;
        CHECK_OK(cudarl_ppo_train(ctx, &cfg, NULL, &sum));
        printf("--async: %.0f steps/s, mean of the last 100 %.1f, 475 at step %lld\n", sum.sps,
               sum.mean_return_100, (long long)sum.solved_step);
        /* It learns, but one update stale at the CUDA preset's learning rate it learns slower
         * than the synchronous schedule (H200, 2026-11-30: 286.5 after these 4M steps, where the
         * synchronous schedule solves in ~1M): the bar is learning, not solving. A random
         * policy scores ~22. */
        CHECK_MSG(sum.mean_return_100 >= 150.0, "--async did not learn: mean of the last 100 %.1f",
                  sum.mean_return_100);
        /* 5. with two GPUs, the learner on the second (--learner-device 1: peer access to the
         * actor's buffers) learns too */
        int gpus = 0;
#ifdef CUDARL_WITH_CUDA
        if (cudaGetDeviceCount(&gpus) != cudaSuccess) gpus = 0;
#endif
        if (gpus >= 2) {
            cfg.learner_device = 1;
            snprintf(cfg.runs_dir, sizeof cfg.runs_dir, "/tmp/test_ppo_pool_async2_%d",
                     (int)getpid());
            CHECK_OK(cudarl_ppo_train(ctx, &cfg, NULL, &sum));
            printf("--async, learner on cuda:1: %.0f steps/s, mean of the last 100 %.1f\n",
                   sum.sps, sum.mean_return_100);
            CHECK_MSG(sum.mean_return_100 >= 150.0, "--async with the learner on cuda:1 did not "
                      "learn: mean of the last 100 %.1f", sum.mean_return_100);
        } else {
            printf("--async, learner on another GPU: not run (%d GPU)\n", gpus);
        }
    }
    cudarl_ctx_free(ctx);
    printf("ok: envs on CPU threads match the env batch on %s (%ld truncations)\n",
           gpu ? "cuda" : "cpu", truncations);
    return 0;
}
