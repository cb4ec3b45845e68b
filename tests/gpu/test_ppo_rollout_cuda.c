/* The fused CUDA rollout (src/algo/ppo/ppo_fused_cartpole.cu) against its reference, the rollout the
 * CPU backend computes op by op, and against the unfused CUDA rollout, from the same seed: three
 * trainers with identical weights, env states and sampler streams (every 7th env placed near the
 * 500-step limit, so truncations occur) each run three rollouts
 * (so the state carried between calls - env, running episode sums, sampler offset - is checked
 * too), and every rollout buffer is compared.
 *
 * The env and the sampler are the same code on every path, so trajectories agree exactly as
 * long as the sampled actions do. An action can differ only if a uniform draw falls within a
 * rounding error (~1e-7) of the softmax boundary, about once per 10^7 draws; an env whose action
 * differed is compared up to that step only, and at most one such env is allowed.
 * Tolerances (absolute, on values of order 1): values, logp, final values 2e-5 - the fused
 * kernel sums its 64-wide products as fp32 FMA chains in another order than cuBLAS or the CPU's
 * GEMM (each ~1e-7 relative, through two tanh layers); advantages and returns 1e-4 - GAE
 * accumulates those differences over up to T steps with gamma lambda ~ 0.94. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/ppo/ppo_internal.h"
#include "check.h"
#include "cudarl.h"

#define T_STEPS 64
#define N_ENVS 777 /* not a multiple of the kernel's 64-thread blocks */
#define ROLLOUTS 3

typedef struct host_rollout {
    float obs[T_STEPS * N_ENVS * 4], values[T_STEPS * N_ENVS], logp[T_STEPS * N_ENVS];
    float rewards[T_STEPS * N_ENVS], final_values[T_STEPS * N_ENVS], adv[T_STEPS * N_ENVS];
    float returns[T_STEPS * N_ENVS], final_obs[T_STEPS * N_ENVS * 4], last_values[N_ENVS];
    int32_t actions[T_STEPS * N_ENVS];
    uint8_t terminated[T_STEPS * N_ENVS], truncated[T_STEPS * N_ENVS], done[T_STEPS * N_ENVS];
    cr_ppo_metrics metrics;
} host_rollout;

static void fetch(cr_ppo *p, host_rollout *h) {
    cudarl_ctx *c = p->ctx;
    const cr_backend *o = c->ops;
    size_t tn = (size_t)T_STEPS * N_ENVS;
    o->copy_to_host(c, h->obs, p->obs, tn * 4 * sizeof(float));
    o->copy_to_host(c, h->final_obs, p->final_obs, tn * 4 * sizeof(float));
    o->copy_to_host(c, h->values, p->values, tn * sizeof(float));
    o->copy_to_host(c, h->logp, p->logp, tn * sizeof(float));
    o->copy_to_host(c, h->rewards, p->rewards, tn * sizeof(float));
    o->copy_to_host(c, h->final_values, p->final_values, tn * sizeof(float));
    o->copy_to_host(c, h->adv, p->adv, tn * sizeof(float));
    o->copy_to_host(c, h->returns, p->returns, tn * sizeof(float));
    o->copy_to_host(c, h->last_values, p->last_values, N_ENVS * sizeof(float));
    o->copy_to_host(c, h->actions, p->actions, tn * sizeof(int32_t));
    o->copy_to_host(c, h->terminated, p->terminated, tn);
    o->copy_to_host(c, h->truncated, p->truncated, tn);
    o->copy_to_host(c, h->done, p->done, tn);
    o->copy_to_host(c, &h->metrics, p->metrics, sizeof h->metrics);
}

/* Compares rollout `got` with the reference `want`; env n is compared up to step limit[n]
 * (exclusive), the first step whose action differed in any earlier rollout or in this one.
 * Returns the number of envs whose actions have differed so far. */
static long truncations; /* bootstrapped rows compared */

static int compare(const char *what, int rollout, const host_rollout *want, const host_rollout *got,
                   int *limit) {
    int diverged = 0;
    for (int n = 0; n < N_ENVS; n++) {
        if (limit[n] < T_STEPS * ROLLOUTS) { /* diverged in an earlier rollout */
            diverged++;
            continue;
        }
        int end = T_STEPS;
        for (int t = 0; t < T_STEPS; t++)
            if (want->actions[t * N_ENVS + n] != got->actions[t * N_ENVS + n]) {
                end = t;
                limit[n] = rollout * T_STEPS + t;
                diverged++;
                printf("%s: env %d: actions differ at rollout %d step %d (logp %.9g vs %.9g); "
                       "compared up to there\n", what, n, rollout, t, want->logp[t * N_ENVS + n],
                       got->logp[t * N_ENVS + n]);
                break;
            }
        for (int t = 0; t < end; t++) {
            size_t r = (size_t)t * N_ENVS + n;
            char name[96];
            snprintf(name, sizeof name, "%s rollout %d (t %d, n %d)", what, rollout, t, n);
            for (int k = 0; k < 4; k++)
                CHECK_MSG(want->obs[r * 4 + k] == got->obs[r * 4 + k], "%s: obs[%d]", name, k);
            CHECK_MSG(want->rewards[r] == got->rewards[r], "%s: reward", name);
            CHECK_MSG(want->terminated[r] == got->terminated[r] &&
                          want->truncated[r] == got->truncated[r] && want->done[r] == got->done[r],
                      "%s: flags", name);
            CHECK_CLOSE(name, got->values[r], want->values[r], 2e-5, 0);
            CHECK_CLOSE(name, got->logp[r], want->logp[r], 2e-5, 0);
            if (want->done[r])
                for (int k = 0; k < 4; k++)
                    CHECK_MSG(want->final_obs[r * 4 + k] == got->final_obs[r * 4 + k],
                              "%s: final_obs[%d]", name, k);
            /* the fused kernel evaluates V(final obs) only where GAE uses it: truncations */
            if (want->truncated[r] && !want->terminated[r]) {
                CHECK_CLOSE(name, got->final_values[r], want->final_values[r], 2e-5, 0);
                truncations++;
            }
            if (end == T_STEPS) {
                CHECK_CLOSE(name, got->adv[r], want->adv[r], 1e-4, 0);
                CHECK_CLOSE(name, got->returns[r], want->returns[r], 1e-4, 0);
            }
        }
        if (end == T_STEPS)
            CHECK_CLOSE(what, got->last_values[n], want->last_values[n], 2e-5, 0);
    }
    CHECK_MSG(diverged <= 1, "%s: %d envs sampled another action than the reference", what,
              diverged);
    if (diverged == 0) { /* the same episodes ended in the same order */
        const cr_episode_log *a = &want->metrics.log, *b = &got->metrics.log;
        CHECK_MSG(a->episodes == b->episodes && a->iter_episodes == b->iter_episodes,
                  "%s: episodes %lld/%lld vs %lld/%lld", what, (long long)a->episodes,
                  (long long)a->iter_episodes, (long long)b->episodes, (long long)b->iter_episodes);
        CHECK(a->iter_length_sum == b->iter_length_sum);
        CHECK_CLOSE(what, b->iter_return_sum, a->iter_return_sum, 0, 1e-12);
        for (int k = 0; k < CR_RECENT_EPISODES; k++)
            CHECK_MSG(a->recent[k] == b->recent[k], "%s: recent[%d] %g vs %g", what, k,
                      a->recent[k], b->recent[k]);
    }
    return diverged;
}

int main(void) {
    cudarl_ctx *cpu, *gpu;
    CHECK_OK(cudarl_ctx_init(&cpu, CUDARL_DEVICE_CPU, 0));
    if (cudarl_ctx_init(&gpu, CUDARL_DEVICE_CUDA, 0) != CUDARL_OK) {
        fprintf(stderr, "FAIL: no CUDA device: %s\n", cudarl_last_error());
        return 1;
    }
    cudarl_ppo_config cfg;
    cudarl_ppo_config_default(&cfg, "CartPole-v1");
    cfg.num_envs = N_ENVS, cfg.num_steps = T_STEPS, cfg.num_minibatches = 1;
    cfg.total_timesteps = (int64_t)N_ENVS * T_STEPS * ROLLOUTS;
    cfg.seed = 7;
    static cr_ppo ref, fused, unfused;
    CHECK_OK(cr_ppo_init(&ref, cpu, &cfg));
    CHECK_OK(cr_ppo_init(&fused, gpu, &cfg));
    CHECK_OK(cr_ppo_init(&unfused, gpu, &cfg));
    CHECK_MSG(fused.fused_rollout, "the CUDA trainer does not use the fused rollout (CUDARL_FUSED=0?)");
    /* Every 7th env starts 480-499 steps into its episode, so episodes are truncated (those
     * bootstrap from V(final obs)) and some terminate on their last step (both flags). */
    static int32_t elapsed[N_ENVS];
    for (int n = 0; n < N_ENVS; n++) elapsed[n] = n % 7 == 0 ? 480 + n % 20 : 0;
    cr_ppo *all[3] = {&ref, &fused, &unfused};
    for (int k = 0; k < 3; k++)
        all[k]->ctx->ops->copy_from_host(all[k]->ctx, all[k]->env.cartpole.elapsed, elapsed,
                                         sizeof elapsed);
    unfused.fused_rollout = 0;

    static host_rollout want, got;
    int limit_f[N_ENVS], limit_u[N_ENVS];
    for (int n = 0; n < N_ENVS; n++) limit_f[n] = limit_u[n] = T_STEPS * ROLLOUTS;
    int episodes = 0;
    for (int r = 0; r < ROLLOUTS; r++) {
        cr_ppo_rollout(&ref);
        fetch(&ref, &want);
        episodes += (int)want.metrics.log.iter_episodes;
        cr_ppo_rollout(&fused);
        fetch(&fused, &got);
        int df = compare("fused", r, &want, &got, limit_f);
        cr_ppo_rollout(&unfused);
        fetch(&unfused, &got);
        int du = compare("unfused", r, &want, &got, limit_u);
        printf("rollout %d: %lld episodes ended; envs diverged: fused %d, unfused %d\n", r,
               (long long)want.metrics.log.iter_episodes, df, du);
    }
    CHECK_MSG(episodes > N_ENVS, "only %d episodes ended: the test would not cover autoreset",
              episodes);
    printf("truncated rows whose bootstrap values were compared: %ld\n", truncations);
    CHECK_MSG(truncations > 20, "only %ld truncations: the bootstrap values went untested",
              truncations);
    cr_ppo_free(&ref);
    cr_ppo_free(&fused);
    cr_ppo_free(&unfused);
    cudarl_ctx_free(cpu);
    cudarl_ctx_free(gpu);
    printf("ok: fused and unfused CUDA rollouts match the CPU reference (%d x %d x %d)\n",
           ROLLOUTS, T_STEPS, N_ENVS);
    return 0;
}
