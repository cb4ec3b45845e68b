/* CartPole-v1 on the GPU against the CPU batch (the specification): N envs with the same seed
 * and the same random actions (Philox, drawn on the host), stepped STEPS times on both, resets
 * included. Every observation and final observation must agree to 1e-5 (CUDA's double sin/cos
 * may differ from glibc's in the last ulp, and a float32 observation of a state one double ulp
 * away may round to the neighbouring float: about 2.4e-7 at |theta_dot| ~ 3; episodes with random
 * actions last ~20 steps, too short for the ulp to grow to 1e-5); reward, terminated, truncated
 * and done exactly; the float64 state to 1e-9 over the first 20 steps; the reset states, elapsed
 * counts and RNG states exactly (no transcendental there, and the dynamics are never fused into
 * an FMA). Envs start at elapsed = i % 500 so truncation, which random actions never reach, is
 * exercised too. Needs a GPU (ctest label gpu) and fails saying so when there is none. */
#include <cuda_runtime_api.h>
#include <string.h>

#include "check.h"
#include "env/cartpole/cartpole.h"

#define N 1024
#define STEPS 10000
#define SHORT_HORIZON 20
#define SEED 20240611u
#define OBS_ATOL 1e-5
#define STATE_ATOL 1e-9
#define SENTINEL (-1234.5f) /* fills final_obs rows that must stay untouched */

#define CHECK_CUDA(expr)                                                                  \
    do {                                                                                  \
        cudaError_t e_ = (expr);                                                          \
        CHECK_MSG(e_ == cudaSuccess, "%s: %s", cudaGetErrorName(e_), cudaGetErrorString(e_)); \
    } while (0)

/* One side's env batch and step buffers: host memory for the CPU, device memory for the GPU. */
typedef struct side {
    cr_cartpole env;
    int32_t *actions;    /* (N) */
    float *obs;          /* (N, 4) */
    float *reward;       /* (N) */
    uint8_t *terminated; /* (N) */
    uint8_t *truncated;  /* (N) */
    float *final_obs;    /* (N, 4), SENTINEL until an env ends */
    uint8_t *done;       /* (N), GPU only */
} side;

/* What the GPU's step results, copied back to the host, are compared in. */
typedef struct mirror {
    double state[N * CR_CARTPOLE_OBS_DIM];
    int32_t elapsed[N];
    cr_philox_state rng[N];
    float obs[N * CR_CARTPOLE_OBS_DIM];
    float reward[N];
    uint8_t terminated[N], truncated[N], done[N];
    float final_obs[N * CR_CARTPOLE_OBS_DIM];
} mirror;

/* What the run saw. */
typedef struct stats {
    long resets, terminations, truncations, inexact_states;
    double max_obs, max_final_obs, max_state, max_state_short;
} stats;

static void require_gpu(void) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        fprintf(stderr, "FAIL: no usable CUDA device (%s); test_cartpole_cuda compares the GPU "
                        "CartPole with the CPU and needs a GPU. On a machine without one run "
                        "`ctest -LE gpu`.\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "the CUDA runtime sees no GPU");
        exit(1);
    }
}

/* Plans the env and its buffers, allocates them once (host arena or one cudaMalloc), points in. */
static void side_init(side *s, cr_arena *host_arena, void **device_block) {
    size_t n = N, row = CR_CARTPOLE_OBS_DIM * sizeof(float);
    cr_plan p;
    cr_plan_init(&p);
    int ienv = cr_plan_add(&p, "env", cr_cartpole_bytes(N));
    int iact = cr_plan_add(&p, "actions", n * sizeof(int32_t));
    int iobs = cr_plan_add(&p, "obs", n * row);
    int irew = cr_plan_add(&p, "reward", n * sizeof(float));
    int iterm = cr_plan_add(&p, "terminated", n);
    int itrunc = cr_plan_add(&p, "truncated", n);
    int ifin = cr_plan_add(&p, "final_obs", n * row);
    int idone = cr_plan_add(&p, "done", n);
    unsigned char *base;
    if (host_arena) {
        CHECK_OK(cr_arena_alloc(host_arena, &p, CR_MEM_HOST));
        base = host_arena->base;
    } else {
        CHECK_CUDA(cudaMalloc(device_block, p.total));
        base = *device_block;
    }
    cr_cartpole_init(&s->env, N, base + p.offsets[ienv]);
    s->actions = (int32_t *)(base + p.offsets[iact]);
    s->obs = (float *)(base + p.offsets[iobs]);
    s->reward = (float *)(base + p.offsets[irew]);
    s->terminated = base + p.offsets[iterm];
    s->truncated = base + p.offsets[itrunc];
    s->final_obs = (float *)(base + p.offsets[ifin]);
    s->done = base + p.offsets[idone];
}

static void copy_back(void *dst, const void *src, size_t bytes, cudaStream_t st) {
    CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, st));
}

/* Copies the GPU's env and step outputs into m and waits for them. */
static void mirror_fetch(mirror *m, const side *gpu, cudaStream_t st) {
    size_t rows = sizeof m->obs;
    copy_back(m->state, gpu->env.state, sizeof m->state, st);
    copy_back(m->elapsed, gpu->env.elapsed, sizeof m->elapsed, st);
    copy_back(m->rng, gpu->env.rng, sizeof m->rng, st);
    copy_back(m->obs, gpu->obs, rows, st);
    copy_back(m->reward, gpu->reward, sizeof m->reward, st);
    copy_back(m->terminated, gpu->terminated, N, st);
    copy_back(m->truncated, gpu->truncated, N, st);
    copy_back(m->final_obs, gpu->final_obs, rows, st);
    copy_back(m->done, gpu->done, N, st);
    CHECK_CUDA(cudaStreamSynchronize(st));
}

/* Largest |a - b| over n floats; fails at the first pair further apart than atol. */
static double compare_floats(const char *what, long step, const float *a, const float *b,
                             size_t n, double atol) {
    double worst = 0;
    for (size_t k = 0; k < n; k++) {
        double d = fabs((double)a[k] - (double)b[k]);
        CHECK_MSG(d <= atol, "step %ld %s env %zu component %zu: cpu %.9g, gpu %.9g (atol %g)",
                  step, what, k / CR_CARTPOLE_OBS_DIM, k % CR_CARTPOLE_OBS_DIM, (double)a[k],
                  (double)b[k], atol);
        if (d > worst) worst = d;
    }
    return worst;
}

/* Float64 states: largest |a - b|, failing past atol; counts components not bit-identical. */
static double compare_states(long step, const double *a, const double *b, double atol,
                             long *inexact) {
    double worst = 0;
    for (size_t k = 0; k < N * CR_CARTPOLE_OBS_DIM; k++) {
        double d = fabs(a[k] - b[k]);
        CHECK_MSG(d <= atol, "step %ld state env %zu component %zu: cpu %.17g, gpu %.17g (atol %g)",
                  step, k / CR_CARTPOLE_OBS_DIM, k % CR_CARTPOLE_OBS_DIM, a[k], b[k], atol);
        *inexact += a[k] != b[k];
        if (d > worst) worst = d;
    }
    return worst;
}

/* Seeds both sides, starts env i at elapsed i % 500 on both, requires identical starts. */
static void reset_both(side *cpu, side *gpu, mirror *m, cudaStream_t st) {
    size_t rows = N * CR_CARTPOLE_OBS_DIM;
    for (size_t k = 0; k < rows; k++) cpu->final_obs[k] = SENTINEL;
    CHECK_CUDA(cudaMemcpyAsync(gpu->final_obs, cpu->final_obs, rows * sizeof(float),
                               cudaMemcpyHostToDevice, st));
    cr_cartpole_reset(&cpu->env, SEED, cpu->obs);
    cr_cartpole_cuda_reset(&gpu->env, SEED, 0, gpu->obs, st);
    mirror_fetch(m, gpu, st);
    CHECK_MSG(memcmp(m->state, cpu->env.state, sizeof m->state) == 0,
              "reset states differ between CPU and GPU (must be bit-identical)");
    CHECK_MSG(memcmp(m->obs, cpu->obs, sizeof m->obs) == 0, "reset observations differ");
    CHECK_MSG(memcmp(m->rng, cpu->env.rng, sizeof m->rng) == 0, "RNG states differ after reset");
    for (int i = 0; i < N; i++) {
        CHECK_MSG(m->elapsed[i] == 0, "env %d: gpu elapsed %d after reset", i, m->elapsed[i]);
        cpu->env.elapsed[i] = i % CR_CARTPOLE_MAX_STEPS;
    }
    CHECK_CUDA(cudaMemcpyAsync(gpu->env.elapsed, cpu->env.elapsed, N * sizeof(int32_t),
                               cudaMemcpyHostToDevice, st));
}

/* One step on both sides with the same actions, then every output compared. */
static void step_both(long t, side *cpu, side *gpu, mirror *m, cr_philox_state *actions_rng,
                      stats *st_out, cudaStream_t st) {
    for (int i = 0; i < N; i++) cpu->actions[i] = (int32_t)(cr_philox_next_u32(actions_rng) >> 31);
    CHECK_CUDA(cudaMemcpyAsync(gpu->actions, cpu->actions, N * sizeof(int32_t),
                               cudaMemcpyHostToDevice, st));
    int with_done = t % 2 == 0; /* odd steps exercise done == NULL */
    if (!with_done) CHECK_CUDA(cudaMemsetAsync(gpu->done, 0xAB, N, st));
    cr_cartpole_cuda_step(&gpu->env, gpu->actions, gpu->obs, gpu->reward, gpu->terminated,
                          gpu->truncated, with_done ? gpu->done : NULL, gpu->final_obs, st);
    cr_cartpole_step(&cpu->env, cpu->actions, cpu->obs, cpu->reward, cpu->terminated,
                     cpu->truncated, cpu->final_obs);
    mirror_fetch(m, gpu, st);
    for (int i = 0; i < N; i++) {
        CHECK_MSG(m->reward[i] == cpu->reward[i], "step %ld env %d reward: cpu %g, gpu %g", t, i,
                  (double)cpu->reward[i], (double)m->reward[i]);
        CHECK_MSG(m->terminated[i] == cpu->terminated[i] && m->truncated[i] == cpu->truncated[i],
                  "step %ld env %d terminated/truncated: cpu %d/%d, gpu %d/%d", t, i,
                  cpu->terminated[i], cpu->truncated[i], m->terminated[i], m->truncated[i]);
        int ended = cpu->terminated[i] || cpu->truncated[i];
        CHECK_MSG(m->done[i] == (with_done ? ended : 0xAB),
                  "step %ld env %d done: expected %d, gpu %d", t, i,
                  with_done ? ended : 0xAB, m->done[i]);
        CHECK_MSG(m->elapsed[i] == cpu->env.elapsed[i], "step %ld env %d elapsed: cpu %d, gpu %d",
                  t, i, cpu->env.elapsed[i], m->elapsed[i]);
        st_out->resets += ended;
        st_out->terminations += cpu->terminated[i];
        st_out->truncations += cpu->truncated[i];
    }
    size_t rows = N * CR_CARTPOLE_OBS_DIM;
    double d = compare_floats("obs", t, cpu->obs, m->obs, rows, OBS_ATOL);
    if (d > st_out->max_obs) st_out->max_obs = d;
    d = compare_floats("final_obs", t, cpu->final_obs, m->final_obs, rows, OBS_ATOL);
    if (d > st_out->max_final_obs) st_out->max_final_obs = d;
    double atol = t < SHORT_HORIZON ? STATE_ATOL : INFINITY;
    d = compare_states(t, cpu->env.state, m->state, atol, &st_out->inexact_states);
    if (d > st_out->max_state) st_out->max_state = d;
    if (t < SHORT_HORIZON && d > st_out->max_state_short) st_out->max_state_short = d;
}

static void report(const stats *s) {
    printf("cartpole cuda vs cpu: %d envs x %d steps: %ld resets (%ld terminated, %ld truncated)\n",
           N, STEPS, s->resets, s->terminations, s->truncations);
    printf("  max |obs diff| %.3g, max |final_obs diff| %.3g (limit %g)\n", s->max_obs,
           s->max_final_obs, OBS_ATOL);
    printf("  max |state diff| %.3g over the first %d steps (limit %g), %.3g over the run; "
           "%ld of %ld state components not bit-identical\n",
           s->max_state_short, SHORT_HORIZON, STATE_ATOL, s->max_state, s->inexact_states,
           (long)STEPS * N * CR_CARTPOLE_OBS_DIM);
}

int main(void) {
    require_gpu();
    cr_arena host_arena;
    void *device_block = NULL;
    side cpu, gpu;
    side_init(&cpu, &host_arena, NULL);
    side_init(&gpu, NULL, &device_block);
    mirror *m = malloc(sizeof *m);
    CHECK(m != NULL);
    cudaStream_t st;
    CHECK_CUDA(cudaStreamCreate(&st));

    reset_both(&cpu, &gpu, m, st);
    cr_philox_state actions_rng;
    cr_philox_seed(&actions_rng, SEED + 1, 0);
    stats s = {0};
    for (long t = 0; t < STEPS; t++) step_both(t, &cpu, &gpu, m, &actions_rng, &s, st);
    CHECK_MSG(memcmp(m->rng, cpu.env.rng, sizeof m->rng) == 0,
              "RNG states differ after %d steps", STEPS);
    report(&s);
    CHECK_MSG(s.resets > 0, "no episode ended in %d steps", STEPS);
    CHECK_MSG(s.truncations > 0, "no episode was truncated in %d steps", STEPS);

    CHECK_CUDA(cudaStreamDestroy(st));
    CHECK_CUDA(cudaFree(device_block));
    cr_arena_free(&host_arena);
    free(m);
    return 0;
}
