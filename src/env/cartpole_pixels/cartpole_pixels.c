/* CartPolePixels-v1 as a cudarl_env_def (cartpole_pixels.h): CartPole-v1's per-env code of
 * cartpole_step.h, exactly as cartpole_def.c runs it (the same seeding, the same draws at every
 * reset, physics then the termination test), plus a frame drawn after every reset and step into
 * a ring of 4, written out oldest first. */
#include <string.h>

#include "env/cartpole_pixels/cartpole_pixels.h"
#include "env/cartpole/cartpole_step.h"
#include "env/env_check.h"
#include "env/render.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

void cr_cartpole_pixels_render(const double state[4], uint8_t frame[CR_CARTPOLE_PIXELS_FRAME_BYTES]) {
    cr_cartpole_pixels_pose pose = cr_cartpole_pixels_pose_of(state[0], state[2]);
    for (int row = 0; row < CR_CARTPOLE_PIXELS_SIDE; row++)
        for (int col = 0; col < CR_CARTPOLE_PIXELS_SIDE; col++)
            frame[row * CR_CARTPOLE_PIXELS_SIDE + col] = cr_cartpole_pixels_shade(&pose, row, col);
}

/* Writes the stack into obs (4, 84, 84), oldest frame first. */
static void write_obs(const cr_cartpole_pixels_state *c, uint8_t *obs) {
    for (int k = 0; k < CR_CARTPOLE_PIXELS_STACK; k++) {
        int slot = (c->newest + 1 + k) % CR_CARTPOLE_PIXELS_STACK;
        memcpy(obs + (size_t)k * CR_CARTPOLE_PIXELS_FRAME_BYTES, c->frames[slot],
               CR_CARTPOLE_PIXELS_FRAME_BYTES);
    }
}

static void pixels_seed(void *state, uint64_t seed, uint64_t index) {
    cr_cartpole_pixels_state *c = state;
    cr_philox_seed(&c->rng, seed, index);
}

/* A new episode: CartPole's reset draws, and its first frame in every slot of the stack. */
static void pixels_reset(void *state, void *obs) {
    cr_cartpole_pixels_state *c = state;
    cr_cartpole_reset_one(c->s, &c->elapsed, &c->rng);
    c->newest = 0;
    cr_cartpole_pixels_render(c->s, c->frames[0]);
    for (int k = 1; k < CR_CARTPOLE_PIXELS_STACK; k++)
        memcpy(c->frames[k], c->frames[0], CR_CARTPOLE_PIXELS_FRAME_BYTES);
    write_obs(c, obs);
}

static void pixels_step(void *state, int32_t action, void *obs, float *reward,
                        uint8_t *terminated) {
    cr_cartpole_pixels_state *c = state;
    cr_cartpole_physics(c->s, action);
    c->elapsed++;
    *terminated = (uint8_t)cr_cartpole_is_terminated(c->s);
    *reward = 1.0f;
    c->newest = (c->newest + 1) % CR_CARTPOLE_PIXELS_STACK;
    cr_cartpole_pixels_render(c->s, c->frames[c->newest]);
    write_obs(c, obs);
}

/* CartPole's state, its step count below the time limit, the ring slot of the newest frame;
 * the frames are any bytes. */
static int pixels_check(const void *state, char *why, size_t cap) {
    const cr_cartpole_pixels_state *c = state;
    return cr_cartpole_check_state(c->s, why, cap) ||
           cr_check_int(why, cap, "elapsed", c->elapsed, 0, CR_CARTPOLE_MAX_STEPS - 1) ||
           cr_check_int(why, cap, "newest", c->newest, 0, CR_CARTPOLE_PIXELS_STACK - 1) ||
           cr_check_rng(why, cap, "rng", &c->rng);
}

const cudarl_env_def cr_cartpole_pixels_def = {
    .id = "CartPolePixels-v1",
    .obs_rank = 3,
    .obs_shape = {CR_CARTPOLE_PIXELS_STACK, CR_CARTPOLE_PIXELS_SIDE, CR_CARTPOLE_PIXELS_SIDE},
    .obs_dtype = CUDARL_OBS_U8,
    .num_actions = CR_CARTPOLE_NUM_ACTIONS,
    .max_episode_steps = CR_CARTPOLE_MAX_STEPS,
    .solved_return = 475.0,
    .state_bytes = sizeof(cr_cartpole_pixels_state),
    .seed = pixels_seed,
    .reset = pixels_reset,
    .step = pixels_step,
    .frame_stack = CR_CARTPOLE_PIXELS_STACK,
    .state_check = pixels_check,
};

/* The newest frame of the observation (its last channel), each pixel a 4x4 grey square, at
 * CartPole's 50 frames a second. */
#define PIXELS_ZOOM 4

static void cartpole_pixels_draw(const cudarl_env_def *def, const void *state, const void *obs,
                                 uint8_t *rgb) {
    (void)def, (void)state;
    const uint8_t *newest = (const uint8_t *)obs +
                            (size_t)(CR_CARTPOLE_PIXELS_STACK - 1) * CR_CARTPOLE_PIXELS_FRAME_BYTES;
    cr_canvas_gray_scaled(newest, CR_CARTPOLE_PIXELS_SIDE, CR_CARTPOLE_PIXELS_SIDE, PIXELS_ZOOM,
                          rgb);
}

const cr_env_renderer cr_cartpole_pixels_renderer = {
    CR_CARTPOLE_PIXELS_SIDE * PIXELS_ZOOM, CR_CARTPOLE_PIXELS_SIDE * PIXELS_ZOOM, 50,
    cartpole_pixels_draw};
