/* A helper of test_render_gym.py: draws one state of a built-in env with the env's renderer and
 * writes the picture (and the observation) to a file, so that Python can hold it against
 * Gymnasium's and MinAtar's own drawings.
 *
 *   render_dump OUT ENV_ID state V0 V1 ...   the env reset (seed 0, env 0), then its state's
 *                                            leading doubles set to V0 V1 ... (CartPole's and
 *                                            the classic-control envs' states begin with their
 *                                            double s[]; a wrong layout shows as a wrong picture)
 *   render_dump OUT ENV_ID play SEED STEPS   env 0 of SEED reset, then STEPS steps of action
 *                                            k % num_actions (step k), stopping at an episode's
 *                                            end
 *
 * OUT: int32 width, height, obs_bytes (little-endian, this machine's), then the picture
 * (height, width, 3), then the observation. Exits 1 saying why on a bad argument. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env/env.h"
#include "env/render.h"

static int usage(const char *why) {
    fprintf(stderr, "render_dump: %s\nusage: render_dump OUT ENV_ID state V0 V1 ... | "
                    "render_dump OUT ENV_ID play SEED STEPS\n", why);
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 4) return usage("too few arguments");
    const cudarl_env_def *d = cudarl_env_find(argv[2]);
    const cr_env_renderer *r = cr_env_renderer_find(argv[2]);
    if (!d || !r) return usage("not an env with a renderer");
    size_t ob = cr_env_def_obs_bytes(d);
    void *state = aligned_alloc(64, (d->state_bytes + 63) / 64 * 64);
    void *obs = malloc(ob);
    uint8_t *rgb = malloc((size_t)r->width * (size_t)r->height * 3);
    memset(state, 0, d->state_bytes);
    d->seed(state, 0, 0);
    d->reset(state, obs);
    if (!strcmp(argv[3], "state")) {
        double *s = state;
        for (int k = 4; k < argc; k++) s[k - 4] = strtod(argv[k], NULL);
    } else if (!strcmp(argv[3], "play") && argc == 6 && d->action_dim == 0) {
        memset(state, 0, d->state_bytes);
        d->seed(state, strtoull(argv[4], NULL, 10), 0);
        d->reset(state, obs);
        for (int k = 0; k < atoi(argv[5]); k++) {
            float reward;
            uint8_t term = 0;
            d->step(state, k % d->num_actions, obs, &reward, &term);
            if (term) break;
        }
    } else {
        return usage("the third argument must be 'state', or 'play SEED STEPS' (discrete actions)");
    }
    r->draw(d, state, obs, rgb);
    FILE *f = fopen(argv[1], "wb");
    if (!f) return usage("cannot write OUT");
    int32_t head[3] = {r->width, r->height, (int32_t)ob};
    fwrite(head, sizeof head, 1, f);
    fwrite(rgb, 3, (size_t)r->width * (size_t)r->height, f);
    fwrite(obs, 1, ob, f);
    fclose(f);
    free(state), free(obs), free(rgb);
    return 0;
}
