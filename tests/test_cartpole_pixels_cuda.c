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
#include "env/cartpole_pixels.h"

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

int main(void) {
    require_gpu();
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
