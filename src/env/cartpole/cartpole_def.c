/* CartPole-v1 as a cudarl_env_def: one env's state stepped by the per-env code of
 * cartpole_step.h that the batch (cartpole.c) and the CUDA twin also run. The pool that batches
 * a def counts the steps, truncates at max_episode_steps (500) and resets ended envs in the same
 * step, as the batch does inside cr_cartpole_step_one; env i is seeded with stream i of the seed
 * and draws every reset state from that stream, as cr_cartpole_reset. So a pool of this def
 * and cr_cartpole_step give the same obs, rewards, flags and final observations bit for bit. */
#include "env/cartpole/cartpole_step.h"
#include "env/env.h"
#include "env/env_check.h"
#include "env/render.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

/* One CartPole env. */
typedef struct cartpole_state {
    double s[CR_CARTPOLE_OBS_DIM]; /* x, x_dot, theta, theta_dot */
    cr_philox_state rng;           /* stream `index` of the batch's seed */
} cartpole_state;

static void cartpole_seed(void *state, uint64_t seed, uint64_t index) {
    cartpole_state *c = state;
    cr_philox_seed(&c->rng, seed, index);
}

static void cartpole_reset(void *state, void *obs) {
    cartpole_state *c = state;
    int32_t elapsed; /* the pool counts the steps */
    cr_cartpole_reset_one(c->s, &elapsed, &c->rng);
    cr_cartpole_observe(c->s, obs);
}

static void cartpole_step(void *state, int32_t action, void *obs, float *reward,
                          uint8_t *terminated) {
    cartpole_state *c = state;
    cr_cartpole_physics(c->s, action);
    *terminated = (uint8_t)cr_cartpole_is_terminated(c->s);
    *reward = 1.0f;
    cr_cartpole_observe(c->s, obs);
}

int cr_cartpole_check_state(const double s[4], char *why, size_t cap) {
    return cr_check_real(why, cap, "x", s[0], -CR_CP_X_THRESHOLD, CR_CP_X_THRESHOLD) ||
           cr_check_real(why, cap, "x_dot", s[1], -CR_CARTPOLE_MAX_SPEED, CR_CARTPOLE_MAX_SPEED) ||
           cr_check_real(why, cap, "theta", s[2], -CR_CP_THETA_THRESHOLD, CR_CP_THETA_THRESHOLD) ||
           cr_check_real(why, cap, "theta_dot", s[3], -CR_CARTPOLE_MAX_SPEED,
                         CR_CARTPOLE_MAX_SPEED);
}

static int cartpole_check(const void *state, char *why, size_t cap) {
    const cartpole_state *c = state;
    return cr_cartpole_check_state(c->s, why, cap) || cr_check_rng(why, cap, "rng", &c->rng);
}

const cudarl_env_def cr_cartpole_def = {
    .id = "CartPole-v1",
    .obs_rank = 1,
    .obs_shape = {CR_CARTPOLE_OBS_DIM, 1, 1},
    .obs_dtype = CUDARL_OBS_F32,
    .num_actions = CR_CARTPOLE_NUM_ACTIONS,
    .max_episode_steps = CR_CARTPOLE_MAX_STEPS,
    .solved_return = 475.0,
    .state_bytes = sizeof(cartpole_state),
    .seed = cartpole_seed,
    .reset = cartpole_reset,
    .step = cartpole_step,
    .state_check = cartpole_check,
};

/* ---- drawing ------------------------------------------------------------------------------ */

/* CartPole-v1 as Gymnasium's CartPoleEnv.render draws it in rgb_array mode (the geometry of
 * gymnasium/envs/classic_control/cartpole.py): a 600x400 surface, the world's 4.8 m (|x| <= 2.4)
 * across its width (125 px/m), white; the cart a black 50x30 px box centred at x with its top
 * at y = 100 + 15 (y up); the pole a 10 px wide bar of 1 m (125 px) from the axle 7.5 px above
 * the cart's centre line, leaning by theta (right for theta > 0), colour (202, 152, 101); the
 * axle a disc of radius 5, colour (129, 132, 203); the track a black line at y = 100; then the
 * surface flipped upside down. Gymnasium also anti-aliases the outlines, which this does not. */
#define CP_W 600
#define CP_H 400

void cr_cartpole_draw(const double s[4], uint8_t *rgb) {
    const double scale = CP_W / (2 * CR_CP_X_THRESHOLD), pole_w = 10.0;
    const double pole_len = scale * (2 * CR_CP_LENGTH), cart_w = 50.0, cart_h = 30.0;
    const double axle = cart_h / 4.0, cart_y = 100;
    const double cart_x = s[0] * scale + CP_W / 2.0;
    cr_canvas cv = {rgb, CP_W, CP_H};
    cr_canvas_fill(&cv, (cr_rgb){255, 255, 255});
    const double cart[8] = {cart_x - cart_w / 2, cart_y - cart_h / 2, cart_x - cart_w / 2,
                            cart_y + cart_h / 2, cart_x + cart_w / 2, cart_y + cart_h / 2,
                            cart_x + cart_w / 2, cart_y - cart_h / 2};
    cr_canvas_polygon(&cv, cart, 4, (cr_rgb){0, 0, 0});
    /* the pole's corners (l, b), (l, t), (r, t), (r, b) turned by -theta (pygame's rotate_rad,
     * counter-clockwise for a positive angle), then moved to the axle */
    const double l = -pole_w / 2, r = pole_w / 2, t = pole_len - pole_w / 2, b = -pole_w / 2;
    const double corners[8] = {l, b, l, t, r, t, r, b};
    const double c = cos(-s[2]), sn = sin(-s[2]);
    double pole[8];
    for (int k = 0; k < 4; k++) {
        double px = corners[2 * k], py = corners[2 * k + 1];
        pole[2 * k] = px * c - py * sn + cart_x;
        pole[2 * k + 1] = px * sn + py * c + cart_y + axle;
    }
    cr_canvas_polygon(&cv, pole, 4, (cr_rgb){202, 152, 101});
    cr_canvas_circle(&cv, (int)cart_x, (int)(cart_y + axle), (int)(pole_w / 2),
                     (cr_rgb){129, 132, 203});
    cr_canvas_line(&cv, 0, cart_y, CP_W, cart_y, (cr_rgb){0, 0, 0});
    cr_canvas_flip(&cv);
}

static void cartpole_draw(const cudarl_env_def *def, const void *state, const void *obs,
                          uint8_t *rgb) {
    (void)def, (void)obs;
    cr_cartpole_draw(((const cartpole_state *)state)->s, rgb);
}

const cr_env_renderer cr_cartpole_renderer = {CP_W, CP_H, 50, cartpole_draw};
