/* Does the information in CartPolePixels-v1's frames limit PPO? A proxy env with what a stack of
 * 4 binary 84x84 frames can tell: the last 4 (x, theta) pairs, no velocities, x rounded to QX m
 * (the renderer's 15 px per metre: 1/15) and theta to QTHETA rad (one pixel at the 15-px pole's
 * tip: 1/15; the 2-px-thick segment's pixel pattern resolves about half that). PPO with separate
 * 64-wide MLPs (cudarl's default actor-critic), 32 envs x 128 steps, 4 minibatches, 2 seeds.
 * A diagnostic for bench/RESULTS.md, not part of the build:
 *   cmake --build build && gcc -O2 -std=c11 -Iinclude -Isrc dev/rl/quantized_cartpole.c \
 *     -o /tmp/qcp build/libcudarl.a -fopenmp -lpthread -lcjson -lprotobuf-c -lm
 *   /tmp/qcp QTHETA QX STEPS          (0 0: exact positions) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cudarl.h"
#include "env/cartpole/cartpole_step.h"

static double QTHETA = 1.0 / 30, QX = 1.0 / 15;

typedef struct qs {
    double s[4];
    int32_t elapsed;
    cr_philox_state rng;
    float hist[8]; /* (x, theta) of the last 4 steps, oldest first */
} qs;

/* Appends the current (x, theta), rounded, to the history. */
static void push(qs *c) {
    memmove(c->hist, c->hist + 2, 6 * sizeof(float));
    c->hist[6] = (float)(QX > 0 ? round(c->s[0] / QX) * QX : c->s[0]);
    c->hist[7] = (float)(QTHETA > 0 ? round(c->s[2] / QTHETA) * QTHETA : c->s[2]);
}

static void q_seed(void *st, uint64_t seed, uint64_t index) {
    cr_philox_seed(&((qs *)st)->rng, seed, index);
}

static void q_reset(void *st, void *obs) {
    qs *c = st;
    cr_cartpole_reset_one(c->s, &c->elapsed, &c->rng);
    for (int k = 0; k < 4; k++) push(c);
    memcpy(obs, c->hist, sizeof c->hist);
}

static void q_step(void *st, int32_t a, void *obs, float *r, uint8_t *term) {
    qs *c = st;
    cr_cartpole_physics(c->s, a);
    *term = (uint8_t)cr_cartpole_is_terminated(c->s);
    *r = 1.0f;
    push(c);
    memcpy(obs, c->hist, sizeof c->hist);
}

static int fail(void) {
    fprintf(stderr, "quantized_cartpole: %s\n", cudarl_last_error());
    return 1;
}

int main(int argc, char **argv) {
    QTHETA = argc > 1 ? atof(argv[1]) : QTHETA;
    QX = argc > 2 ? atof(argv[2]) : QX;
    long steps = argc > 3 ? atol(argv[3]) : 2000000;
    static cudarl_env_def d;
    d.id = "QuantCartPole-v0";
    d.obs_rank = 1, d.obs_shape[0] = 8, d.obs_dtype = CUDARL_OBS_F32;
    d.num_actions = 2, d.max_episode_steps = 500, d.solved_return = 475;
    d.state_bytes = sizeof(qs), d.seed = q_seed, d.reset = q_reset, d.step = q_step;
    cudarl_ctx *ctx;
    if (cudarl_env_register(&d) != CUDARL_OK) return fail();
    if (cudarl_ctx_init(&ctx, CUDARL_DEVICE_CPU, 0) != CUDARL_OK) return fail();
    for (int seed = 1; seed <= 2; seed++) {
        cudarl_ppo_config c;
        cudarl_ppo_config_default(&c, d.id);
        c.env_device = CUDARL_DEVICE_CPU, c.env_threads = 1, c.seed = (uint64_t)seed;
        c.num_envs = 32, c.num_steps = 128, c.num_minibatches = 4, c.total_timesteps = steps;
        c.quiet = 1;
        snprintf(c.runs_dir, sizeof c.runs_dir, "/tmp/qcp-runs");
        snprintf(c.run_name, sizeof c.run_name, "q%g_%g_%d_%ld", QTHETA, QX, seed,
                 (long)time(NULL));
        cudarl_train_summary s;
        if (cudarl_ppo_train(ctx, &c, NULL, &s) != CUDARL_OK) return fail();
        printf("qtheta %g qx %g seed %d: mean(100) %.1f at %lld steps, 475 at %lld (%.0f s)\n",
               QTHETA, QX, seed, s.mean_return_100, (long long)s.global_step,
               (long long)s.solved_step, s.train_seconds);
    }
    cudarl_ctx_free(ctx);
    return 0;
}
