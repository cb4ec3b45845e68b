/* Issue 24's acceptance on the CPU: PPO with the continuous preset (Gaussian policy, 8 envs x
 * 256 steps, observations and rewards normalized) brings Pendulum-v1 to a mean return of at
 * least -200 over the last 100 episodes within 262,144 steps, 3 of 3 seeds. argv[1]: the runs
 * folder. Each seed takes about 5 s on one core. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "cudarl.h"

int main(int argc, char **argv) {
    cudarl_ctx *ctx;
    CHECK_OK(cudarl_ctx_init(&ctx, CUDARL_DEVICE_CPU, 0));
    for (uint64_t seed = 1; seed <= 3; seed++) {
        cudarl_ppo_config c;
        cudarl_ppo_config_default(&c, NULL);
        cudarl_ppo_config_for_env(&c, "Pendulum-v1");
        CHECK(c.norm_obs && c.norm_reward && c.num_envs == 8);
        c.seed = seed, c.quiet = 1, c.total_timesteps = 262144;
        snprintf(c.runs_dir, sizeof c.runs_dir, "%s", argc > 1 ? argv[1] : "pendulum-runs");
        cudarl_train_summary s;
        CHECK_OK(cudarl_ppo_train(ctx, &c, NULL, &s));
        printf("Pendulum-v1 seed %llu: mean return of the last 100 episodes %.1f at %lld steps "
               "(%.1f s, %.0f steps/s); -200 first at step %lld\n", (unsigned long long)seed,
               s.mean_return_100, (long long)s.global_step, s.train_seconds, s.sps,
               (long long)s.solved_step);
        CHECK_MSG(s.mean_return_100 >= -200.0, "seed %llu: %g < -200", (unsigned long long)seed,
                  s.mean_return_100);
    }
    cudarl_ctx_free(ctx);
    printf("ok\n");
    return 0;
}
