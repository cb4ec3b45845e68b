/* CartPolePixels-v1's renderer on the GPU against the CPU: 10,000 states (random ones over and
 * beyond an episode's range, and edge cases: the cart at and past the track's ends and off the
 * frame, the pole at 0, +-12 degrees and a hair either side, pointing sideways and down, whole
 * turns away, huge, infinite and NaN values, positions on the pixel grid where an edge passes
 * through pixel centres) drawn by cr_cartpole_pixels_cuda_render and by cr_cartpole_pixels_render.
 * The frames must be identical bytes: the drawing is integer arithmetic after exact conversions
 * (cartpole_pixels_render.h), so there is no tolerance. Needs a GPU (ctest label gpu) and fails
 * saying so when there is none. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/core.h"
#include "env/cartpole_pixels/cartpole_pixels.h"
#include "env/env_pool.h"

#define NSTATES 10000
#define FRAME CR_CARTPOLE_PIXELS_FRAME_BYTES
#define PI 3.14159265358979323846
#define DEG (PI / 180.0)

#define CHECK_CUDA(expr)                                                                  \
    do {                                                                                  \
        cudaError_t e_ = (expr);                                                          \
        CHECK_MSG(e_ == cudaSuccess, "%s: %s", cudaGetErrorName(e_), cudaGetErrorString(e_)); \
    } while (0)

static void require_gpu(void) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    CHECK_MSG(e == cudaSuccess && n > 0, "no CUDA device (%s); run this test on a machine with a "
              "GPU, or exclude it with ctest -LE gpu", cudaGetErrorString(e));
}

/* Fills states (NSTATES, 4): the edge cases first, then random states. Returns the count of
 * edge cases. */
static int make_states(double *states) {
    const double xs[] = {0.0, -0.0, 1.0, -1.0, 2.4, -2.4, 2.4000000000000004, -2.4000000000000004,
                         2.6, -2.6, 2.8, -2.8, 3.0, -3.0, 10.0, -10.0, 64.0, -64.0, 1e300, -1e300,
                         INFINITY, -INFINITY, NAN, 1.0 / 15, 0.5 / 15, -0.5 / 15, 3.0 / 15,
                         2.9 / 15, 1e-300, 5e-324};
    const double ts[] = {0.0, -0.0, 12 * DEG, -12 * DEG, nextafter(12 * DEG, 1), nextafter(-12 * DEG, -1),
                         nextafter(12 * DEG, 0), 0.2095, -0.2095, 0.25, -0.25, PI / 2, -PI / 2,
                         PI, -PI, 3 * PI / 2, 2 * PI, -2 * PI, 0.1 + 4 * PI, 100.0, -1000.0,
                         1048576.0, 1e10, -1e300, INFINITY, -INFINITY, NAN, 1e-300, -5e-324,
                         30 * DEG};
    int nx = (int)(sizeof xs / sizeof xs[0]), nt = (int)(sizeof ts / sizeof ts[0]), n = 0;
    for (int i = 0; i < nx; i++)
        for (int j = 0; j < nt; j++) {
            double *s = states + 4 * n++;
            s[0] = xs[i], s[1] = 0.5, s[2] = ts[j], s[3] = -0.5;
        }
    int edges = n;
    cr_philox_state rng;
    cr_philox_seed(&rng, 20240612, 0);
    for (; n < NSTATES; n++) {
        double *s = states + 4 * n;
        double u = cr_philox_uniform_f64(&rng), v = cr_philox_uniform_f64(&rng);
        if (n % 2) { /* an episode's range, and a little beyond */
            s[0] = -2.6 + 5.2 * u, s[2] = (-14 + 28 * v) * DEG;
        } else { /* anywhere on and off the frame, any angle */
            s[0] = -4.0 + 8.0 * u, s[2] = -4 * PI + 8 * PI * v;
        }
        s[1] = cr_philox_normal(&rng), s[3] = cr_philox_normal(&rng);
    }
    return edges;
}

/* The env's CUDA twin against a cr_env_pool of its def, step by step: 37 envs, 700 steps, half
 * of them random and half balanced by a rule on the pool's state (so episodes reach the 500-step
 * time limit and truncate); obs, rewards, flags, done and the final observations of the envs
 * that ended must be the same bytes. */
#define TWIN_N 37
#define TWIN_STEPS 700
static void twin_case(void) {
    const size_t OB = (size_t)CR_CARTPOLE_PIXELS_STACK * FRAME, N = TWIN_N;
    cr_env_pool pool;
    cr_env_pool_config pc = {.num_envs = TWIN_N, .num_threads = 2, .num_groups = 1};
    CHECK_OK(cr_env_pool_init(&pool, &cr_cartpole_pixels_def, &pc, NULL));
    uint8_t *h_obs = malloc(N * OB), *h_fin = malloc(N * OB), *g_obs = malloc(N * OB);
    uint8_t *g_fin = malloc(N * OB), h_term[TWIN_N], h_trunc[TWIN_N], g_flags[4 * TWIN_N];
    float h_rew[TWIN_N], g_rew[TWIN_N];
    int32_t act[TWIN_N];
    CHECK(h_obs && h_fin && g_obs && g_fin);
    cr_env_pool_outputs out = {h_obs, h_rew, h_term, h_trunc, h_fin};
    cr_env_pool_set_outputs(&pool, &out);
    cr_env_pool_reset(&pool, 77);

    cr_cartpole_pixels_cuda twin;
    void *mem;
    uint8_t *d_obs, *d_fin, *d_flags;
    float *d_rew;
    int32_t *d_act;
    CHECK_CUDA(cudaMalloc(&mem, cr_cartpole_pixels_cuda_bytes(TWIN_N)));
    CHECK_CUDA(cudaMalloc((void **)&d_obs, N * OB));
    CHECK_CUDA(cudaMalloc((void **)&d_fin, N * OB));
    CHECK_CUDA(cudaMalloc((void **)&d_flags, 4 * N));
    CHECK_CUDA(cudaMalloc((void **)&d_rew, N * 4));
    CHECK_CUDA(cudaMalloc((void **)&d_act, N * 4));
    cr_cartpole_pixels_cuda_init(&twin, TWIN_N, mem);
    cr_cartpole_pixels_cuda_reset(&twin, 77, d_obs, NULL);
    CHECK_CUDA(cudaMemcpy(g_obs, d_obs, N * OB, cudaMemcpyDeviceToHost));
    CHECK_MSG(!memcmp(g_obs, h_obs, N * OB), "reset observations differ");
    uint32_t x = 2024;
    int ended = 0, truncs = 0;
    for (int t = 0; t < TWIN_STEPS; t++) {
        for (size_t i = 0; i < N; i++) {
            const cr_cartpole_pixels_state *c = cr_env_pool_state(&pool, (int)i);
            x = x * 1664525u + 1013904223u;
            act[i] = i % 2 ? (int32_t)(x >> 31) : (c->s[2] + 0.5 * c->s[3] > 0.0);
        }
        cr_env_pool_step(&pool, act);
        CHECK_CUDA(cudaMemcpy(d_act, act, N * 4, cudaMemcpyHostToDevice));
        cr_cartpole_pixels_cuda_step(&twin, d_act, d_obs, d_rew, d_flags, d_flags + N,
                                     d_flags + 2 * N, d_fin, NULL);
        CHECK_CUDA(cudaDeviceSynchronize());
        CHECK_CUDA(cudaMemcpy(g_obs, d_obs, N * OB, cudaMemcpyDeviceToHost));
        CHECK_CUDA(cudaMemcpy(g_fin, d_fin, N * OB, cudaMemcpyDeviceToHost));
        CHECK_CUDA(cudaMemcpy(g_rew, d_rew, N * 4, cudaMemcpyDeviceToHost));
        CHECK_CUDA(cudaMemcpy(g_flags, d_flags, 3 * N, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < N; i++) {
            CHECK_MSG(g_rew[i] == h_rew[i] && g_flags[i] == h_term[i] &&
                          g_flags[N + i] == h_trunc[i] &&
                          g_flags[2 * N + i] == (h_term[i] | h_trunc[i]),
                      "step %d env %zu: reward/terminated/truncated/done gpu %g %d %d %d, cpu %g "
                      "%d %d", t, i, g_rew[i], g_flags[i], g_flags[N + i], g_flags[2 * N + i],
                      h_rew[i], h_term[i], h_trunc[i]);
            if (h_term[i] | h_trunc[i]) {
                ended++, truncs += h_trunc[i];
                CHECK_MSG(!memcmp(g_fin + i * OB, h_fin + i * OB, OB),
                          "step %d env %zu: final observation differs", t, i);
            }
        }
        CHECK_MSG(!memcmp(g_obs, h_obs, N * OB), "step %d: observations differ", t);
    }
    CHECK_MSG(ended > 100 && truncs >= 1, "only %d episodes ended, %d truncated", ended, truncs);
    printf("CartPolePixels-v1 twin: %d steps of %d envs identical to the pool (%d episodes "
           "ended, %d truncated)\n", TWIN_STEPS, TWIN_N, ended, truncs);
    cr_env_pool_free(&pool);
    free(h_obs), free(h_fin), free(g_obs), free(g_fin);
    CHECK_CUDA(cudaFree(mem));
    CHECK_CUDA(cudaFree(d_obs));
    CHECK_CUDA(cudaFree(d_fin));
    CHECK_CUDA(cudaFree(d_flags));
    CHECK_CUDA(cudaFree(d_rew));
    CHECK_CUDA(cudaFree(d_act));
}

int main(void) {
    require_gpu();
    twin_case();
    static double states[NSTATES * 4];
    static uint8_t cpu[(size_t)NSTATES * FRAME], gpu[(size_t)NSTATES * FRAME];
    int edges = make_states(states);
    for (int i = 0; i < NSTATES; i++) cr_cartpole_pixels_render(states + 4 * i, cpu + (size_t)i * FRAME);

    double *d_states;
    uint8_t *d_frames;
    CHECK_CUDA(cudaMalloc((void **)&d_states, sizeof states));
    CHECK_CUDA(cudaMalloc((void **)&d_frames, sizeof gpu));
    CHECK_CUDA(cudaMemcpy(d_states, states, sizeof states, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemset(d_frames, 0xA5, sizeof gpu)); /* a value no pixel takes */
    cr_cartpole_pixels_cuda_render(d_states, d_frames, NSTATES, NULL);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaMemcpy(gpu, d_frames, sizeof gpu, cudaMemcpyDeviceToHost));

    int bad_frames = 0;
    for (int i = 0; i < NSTATES; i++) {
        const uint8_t *c = cpu + (size_t)i * FRAME, *g = gpu + (size_t)i * FRAME;
        if (!memcmp(c, g, FRAME)) continue;
        int k = 0;
        while (c[k] == g[k]) k++;
        if (bad_frames++ < 5)
            fprintf(stderr, "state %d (%s; x %a, theta %a): first difference at row %d col %d: "
                    "cpu %d, gpu %d\n", i, i < edges ? "edge case" : "random",
                    states[4 * i], states[4 * i + 2], k / CR_CARTPOLE_PIXELS_SIDE,
                    k % CR_CARTPOLE_PIXELS_SIDE, c[k], g[k]);
    }
    CHECK_MSG(bad_frames == 0, "%d of %d frames differ between the CPU and the GPU", bad_frames,
              NSTATES);

    /* N = 0 queues nothing, and a second launch over part of the batch writes only that part */
    CHECK_CUDA(cudaMemset(d_frames, 0xA5, sizeof gpu));
    cr_cartpole_pixels_cuda_render(d_states, d_frames, 0, NULL);
    cr_cartpole_pixels_cuda_render(d_states, d_frames, 3, NULL);
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaMemcpy(gpu, d_frames, 4 * FRAME, cudaMemcpyDeviceToHost));
    CHECK(!memcmp(gpu, cpu, 3 * FRAME));
    for (int k = 0; k < FRAME; k++) CHECK(gpu[3 * FRAME + k] == 0xA5);

    CHECK_CUDA(cudaFree(d_states));
    CHECK_CUDA(cudaFree(d_frames));
    printf("test_cartpole_pixels_cuda: %d frames (%d edge cases) identical on the CPU and the "
           "GPU\n", NSTATES, edges);
    return 0;
}
