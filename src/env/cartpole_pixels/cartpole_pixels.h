/* CartPolePixels-v1: CartPole-v1 (cartpole_step.h's per-env code, the same RNG draws, so the
 * underlying float64 states equal CartPole-v1's bit for bit for the same seed and actions) seen
 * as 84x84 grayscale uint8 frames (cartpole_pixels_render.h draws them), stacked 4 deep.
 *
 * Observation: uint8 (4, 84, 84), channels first, channel 0 the oldest frame and channel 3 the
 * newest (the frame of the state the last step reached). Padding: reset fills all 4 channels
 * with the episode's first frame, so the first observations of an episode repeat its first frame
 * in the older channels (as Gymnasium's FrameStackObservation with padding_type="reset") and no
 * frame of the previous episode ever appears in the next one. Actions, reward, termination and
 * the 500-step time limit are CartPole-v1's; solved at a mean return of 475.
 *
 * State of one env: the CartPole state, its step count, its Philox stream and the frame stack
 * (a ring of 4 frames), ~28 KiB. */
#ifndef CUDARL_CARTPOLE_PIXELS_H
#define CUDARL_CARTPOLE_PIXELS_H

#include <stdint.h>

#include "core/philox.h"
#include "cudarl.h"
#include "env/cartpole_pixels/cartpole_pixels_render.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CR_CARTPOLE_PIXELS_STACK 4

/* One CartPolePixels-v1 env. */
typedef struct cr_cartpole_pixels_state {
    double s[4];         /* x, x_dot, theta, theta_dot: CartPole-v1's state */
    int32_t elapsed;     /* steps into the episode (the pool counts them for truncation too) */
    int32_t newest;      /* ring slot of the newest frame */
    cr_philox_state rng; /* stream `index` of the batch's seed */
    uint8_t frames[CR_CARTPOLE_PIXELS_STACK][CR_CARTPOLE_PIXELS_FRAME_BYTES]; /* (4, 84, 84) ring */
} cr_cartpole_pixels_state;

/* The env as a def (id "CartPolePixels-v1"); the registry lists it with the built-ins. */
extern const cudarl_env_def cr_cartpole_pixels_def;

/* Draws the frame (84, 84) (host) of CartPole state (4) (host: x, x_dot, theta, theta_dot; only
 * x and theta are drawn). */
void cr_cartpole_pixels_render(const double state[4], uint8_t frame[CR_CARTPOLE_PIXELS_FRAME_BYTES]);

/* The env's CUDA twin: N envs on the device, each state the CPU def's struct (the frame ring
 * included), stepped as a cr_env_pool of cr_cartpole_pixels_def steps them: the same draws, the
 * pool's same-step autoreset, truncation at 500 steps counted as the pool counts, the same
 * observation and final-observation bytes (up to CartPole's double sin/cos, which CUDA may round
 * differently from glibc in the last ulp: a frame differs only if that moves a pixel edge).
 * One block per env; every call is queued on `stream` (a cudaStream_t), allocates nothing and
 * can be captured in a CUDA graph. */
typedef struct cr_cartpole_pixels_cuda {
    int num_envs;
    cr_cartpole_pixels_state *states; /* (N) device */
    int32_t *elapsed;                 /* (N) device: steps into the episode, as the pool counts */
    int64_t first;                    /* env i is seeded as env first + i (0 from init): a
                                       * data-parallel rank's share, as the pool's first_env */
} cr_cartpole_pixels_cuda;

#ifdef CUDARL_WITH_CUDA
/* The CUDA twin of cr_cartpole_pixels_render (cartpole_pixels.cu): draws frames (N, 84, 84) of
 * states (N, 4) (both device memory), the same bytes as the CPU. Queued on `stream` (a
 * cudaStream_t; NULL for the default stream); nothing waits. N = 0 launches nothing. A failed
 * launch is a bug: it prints file:line and the CUDA error and aborts. */
void cr_cartpole_pixels_cuda_render(const double *state, uint8_t *frames, int N, void *stream);

/* Device bytes for n envs (states, then elapsed; 64-byte aligned pieces). */
size_t cr_cartpole_pixels_cuda_bytes(int n);
/* Points env at mem (cr_cartpole_pixels_cuda_bytes(n) bytes of device memory, 64-byte aligned). */
void cr_cartpole_pixels_cuda_init(cr_cartpole_pixels_cuda *env, int n, void *mem);
/* Zeroes, seeds (seed, first + i) and resets env i, writes obs (N, 4, 84, 84) (device). */
void cr_cartpole_pixels_cuda_reset(const cr_cartpole_pixels_cuda *env, uint64_t seed,
                                   uint8_t *obs, void *stream);
/* Steps env i with actions[i] (0 or 1; device): obs (N, 4, 84, 84), reward, terminated,
 * truncated, done (NULL: skipped) (N), and for the envs that ended their final_obs row. */
void cr_cartpole_pixels_cuda_step(const cr_cartpole_pixels_cuda *env, const int32_t *actions,
                                  uint8_t *obs, float *reward, uint8_t *terminated,
                                  uint8_t *truncated, uint8_t *done, uint8_t *final_obs,
                                  void *stream);
#endif

#ifdef __cplusplus
}
#endif
#endif
