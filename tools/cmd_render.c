/* cudarl render: steps one env of a pixel env (obs uint8 (C, H, W), e.g. CartPolePixels-v1)
 * under a uniformly random policy and writes each observation as an 8-bit grayscale PNG, so a
 * person can look at what a policy sees.
 *
 * Files: <out>/obs_000000.png is the observation of the first reset, obs_<t>.png the one after
 * step t, for t < --steps (so --steps N writes N files and takes N-1 steps). An observation after
 * an episode ended is the next episode's first (same-step autoreset), so a frame stack shows its
 * reset padding there. Each image holds the C channels side by side, channel 0 (for a frame stack
 * the oldest frame) at the left, separated by 1-px white columns: W = C * w + C - 1, H = h, the
 * pixel values as the env wrote them. A tEXt chunk names the writer (Software: cudarl <version>)
 * and the env, seed and step (Description).
 *
 * Built without libpng (CMake did not find it), the command exists but fails, saying which
 * package to install. */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cmd.h"
#include "cudarl.h"
#include "png_out.h"

#ifndef CUDARL_HAVE_PNG

int cmd_render(int argc, char **argv) {
    (void)argc, (void)argv;
    fprintf(stderr, "cudarl render: %s\n", png_out_missing());
    return EXIT_FAILURE;
}

#else

#include <sys/stat.h>

#define MAX_STEPS 100000
#define SEPARATOR 255 /* intensity of the columns between channels */

typedef struct render_opts {
    char env_id[CUDARL_ENV_ID_MAX];
    uint64_t seed;
    int steps;
    char out[PATH_MAX];
} render_opts;

static const arg_spec render_specs[] = {
    {"env-id", ARG_STR, offsetof(render_opts, env_id), CUDARL_ENV_ID_MAX, 0, 0, "environment with pixel observations (uint8 (C, H, W))"},
    {"seed", ARG_U64, offsetof(render_opts, seed), 0, 0, 1e18, "seed of the env and of the random policy"},
    {"steps", ARG_INT, offsetof(render_opts, steps), 0, 1, MAX_STEPS, "observations to write: the reset's, then one per step"},
    {"out", ARG_STR, offsetof(render_opts, out), PATH_MAX, 0, 0, "folder for the PNG files (created if missing)"},
};
#define N_RENDER_SPECS ((int)(sizeof render_specs / sizeof render_specs[0]))

/* Whether `d` has pixel observations: rank 3, uint8. */
static int is_pixel_env(const cudarl_env_def *d) {
    return d->obs_rank == 3 && d->obs_dtype == CUDARL_OBS_U8;
}

/* "A, B" of the registered envs with pixel observations, into buf. */
static void pixel_env_list(char *buf, size_t cap) {
    buf[0] = 0;
    for (const char *const *n = cudarl_env_names(); *n; n++)
        if (is_pixel_env(cudarl_env_find(*n)))
            snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", buf[0] ? ", " : "", *n);
}

/* The env of --env-id if it has pixel observations; else prints why and returns NULL. */
static const cudarl_env_def *find_pixel_env(const char *id) {
    char list[512];
    pixel_env_list(list, sizeof list);
    const cudarl_env_def *d = cudarl_env_find(id);
    if (!d) {
        fprintf(stderr, "cudarl render: --env-id '%s' is not a known environment; envs with pixel "
                        "observations: %s\n", id, list);
        return NULL;
    }
    if (!is_pixel_env(d)) {
        fprintf(stderr, "cudarl render: env '%s' has no pixel observations (its observations "
                        "are %s of rank %d, not uint8 (C, H, W)); choose one of: %s\n", id,
                d->obs_dtype == CUDARL_OBS_U8 ? "uint8" : "float32", d->obs_rank, list);
        return NULL;
    }
    return d;
}

/* Creates folder `path` and its missing parents (mkdir -p). */
static int make_dirs(const char *path) {
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s", path);
    for (char *c = p + 1; *c; c++) {
        if (*c != '/') continue;
        *c = 0;
        if (mkdir(p, 0777) != 0 && errno != EEXIST) return -1;
        *c = '/';
    }
    if (mkdir(p, 0777) != 0 && errno != EEXIST) return -1;
    struct stat st;
    if (stat(p, &st) != 0) return -1;
    if (!S_ISDIR(st.st_mode)) return errno = ENOTDIR, -1;
    return 0;
}

/* Makes sure the files of --out can be written (creating the folder): the folder is writable
 * and each obs_<t>.png is missing or a regular file; else prints why and returns -1. */
static int check_out_dir(const render_opts *o) {
    if (make_dirs(o->out) != 0) {
        fprintf(stderr, "cudarl render: cannot write PNG files to --out '%s': %s; choose a folder "
                        "you can write to\n", o->out, strerror(errno));
        return -1;
    }
    char path[PATH_MAX + 32];
    for (int t = 0; t < o->steps; t++) {
        snprintf(path, sizeof path, "%s/obs_%06d.png", o->out, t);
        if (cudarl_output_check(path, "PNG file") != CUDARL_OK) {
            fprintf(stderr, "cudarl render: %s\n", cudarl_last_error());
            return -1;
        }
    }
    return 0;
}

/* Writes the grey image (h, w) of `pixels` to `path`; 0, or prints why and returns -1. */
static int write_png(const char *path, uint8_t *pixels, int w, int h, const char *description) {
    return png_out_write(path, pixels, w, h, 1, description, "render");
}

/* Lays the C channels of obs (C, h, w) side by side into image (h, W). */
static void tile_channels(const uint8_t *obs, int c, int h, int w, uint8_t *image) {
    int width = c * w + c - 1;
    memset(image, SEPARATOR, (size_t)width * (size_t)h);
    for (int k = 0; k < c; k++)
        for (int y = 0; y < h; y++)
            memcpy(image + (size_t)y * (size_t)width + (size_t)k * (size_t)(w + 1),
                   obs + ((size_t)k * (size_t)h + (size_t)y) * (size_t)w, (size_t)w);
}

/* What the play hands each observation to: the run, the image (h, W) and its row pointers. */
typedef struct render_run_state {
    const render_opts *o;
    const cudarl_env_def *d;
    uint8_t *image;   /* (h, W) */
    int episodes;     /* ended so far */
    int written;      /* files */
    int write_failed; /* write_png said why */
} render_run_state;

/* Writes observation t as DIR/obs_<t>.png (a cudarl_env_play_fn). */
static cudarl_status render_obs(void *user, int t, const void *obs, int episodes) {
    render_run_state *r = user;
    const cudarl_env_def *d = r->d;
    int c = d->obs_shape[0], h = d->obs_shape[1], w = d->obs_shape[2];
    r->episodes = episodes;
    if (cmd_stop_signal()) return CUDARL_ERR_IO; /* stop between files: none is half written */
    char path[PATH_MAX + 32], description[256];
    snprintf(path, sizeof path, "%s/obs_%06d.png", r->o->out, t);
    snprintf(description, sizeof description, "%s seed %llu step %d, %d episodes ended: "
             "observation (%d, %d, %d), channels left to right", d->id,
             (unsigned long long)r->o->seed, t, episodes, c, h, w);
    tile_channels(obs, c, h, w, r->image);
    if (write_png(path, r->image, c * w + c - 1, h, description) != 0) {
        r->write_failed = 1;
        return CUDARL_ERR_IO;
    }
    r->written++;
    return CUDARL_OK;
}

/* Plays one env of `d` as configured, writing the files; 0 done, 1 failed (said why). */
static int render_run(const render_opts *o, const cudarl_env_def *d) {
    int c = d->obs_shape[0], h = d->obs_shape[1], w = d->obs_shape[2];
    size_t width = (size_t)(c * w + c - 1);
    render_run_state r = {o, d, malloc(width * (size_t)h), 0, 0, 0};
    int rc = EXIT_FAILURE;
    if (!r.image)
        fprintf(stderr, "cudarl render: out of memory for one image (%zu bytes)\n",
                width * (size_t)h);
    else if (cudarl_env_play_random(d->id, o->seed, o->steps, render_obs, &r) == CUDARL_OK) {
        printf("cudarl render: wrote %d PNG files (%zu x %d: the %d channels of each "
               "observation side by side, channel 0 at the left) to %s; %d episodes ended\n",
               o->steps, width, h, c, o->out, r.episodes);
        rc = 0;
    } else if (cmd_stop_signal()) {
        fprintf(stderr, "cudarl render: stopped by %s after %d of %d PNG files in %s\n",
                cmd_signal_name(cmd_stop_signal()), r.written, o->steps, o->out);
        rc = cmd_interrupted_exit_code();
    } else if (!r.write_failed)
        fprintf(stderr, "cudarl render: cannot start env '%s': %s\n", d->id, cudarl_last_error());
    free(r.image);
    return rc;
}

int cmd_render(int argc, char **argv) {
    render_opts o = {"CartPolePixels-v1", 1, 100, ""};
    if (cmd_wants_help(argc, argv)) {
        printf("usage: cudarl render --out DIR [flags]\n\nSteps one env under a random "
               "policy and writes each observation as a PNG file:\nDIR/obs_000000.png after "
               "the reset, then obs_000001.png .. after each step (--steps files).\nAn image "
               "holds the observation's channels side by side, channel 0 (for a frame stack\n"
               "the oldest frame) at the left, with 1-px white columns between them.\n\n"
               "flags:\n");
        args_print_help(render_specs, N_RENDER_SPECS, &o, ARGS_CLI_ONLY);
        return 0;
    }
    arg_result r;
    if (args_parse(render_specs, N_RENDER_SPECS, &o, argc, argv, "render", ARGS_CLI_ONLY, 0,
                   &r) != 0)
        return EXIT_USAGE;
    if (!o.out[0]) {
        fprintf(stderr, "cudarl render: where should the PNG files go? add --out DIR\n");
        return EXIT_USAGE;
    }
    const cudarl_env_def *d = find_pixel_env(o.env_id);
    if (!d || check_out_dir(&o) != 0) return EXIT_USAGE;
    cmd_catch_stop_signals();
    return render_run(&o, d);
}

#endif
