/* The image twins' blocks regrouped env by env (cr_image_twin_copy_env), as a data-parallel PPO
 * checkpoint on GPU ranks gathers them (docs/multigpu.md): host blocks laid out as the CUDA twins
 * lay out theirs (MinAtar's (W, N) words transposed, then the step counts; CartPolePixels-v1's
 * (N) structs, then the step counts; each piece 64-byte aligned), filled with what each env's
 * reset writes (the env def's seed and reset: what the twin's reset kernel computes, bit for bit,
 * tests/gpu/test_minatar_cuda.c and test_cartpole_pixels_cuda.c). Two ranks of 4 envs, rank r's
 * twin seeding envs 4r .. 4r+3 (its `first`), gathered into a block of 8 equal one process's
 * block of 8 envs byte for byte, pass its state check, and split back into the two ranks' blocks
 * byte for byte; rank 1 seeded from env 0 (no `first`) gathers into another block. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "env/env.h"
#include "env/image_twin.h"

static size_t align64(size_t n) { return (n + 63) / 64 * 64; }

/* A twin of n envs of def over a zeroed host block, laid out as the CUDA twin's init does. */
static void *layout(cr_image_twin *t, const cudarl_env_def *def, int n) {
    memset(t, 0, sizeof *t);
    const size_t states = align64(def->state_bytes * (size_t)n);
    t->num_envs = n;
    t->bytes = states + align64((size_t)n * 4);
    t->mem = aligned_alloc(64, t->bytes);
    CHECK(t->mem);
    memset(t->mem, 0, t->bytes);
    unsigned char *m = t->mem;
    if (!strcmp(def->id, cr_cartpole_pixels_def.id)) {
        t->kind = 2;
        t->pixels.num_envs = n;
        t->pixels.states = (cr_cartpole_pixels_state *)m;
        t->pixels.elapsed = (int32_t *)(m + states);
    } else {
        t->kind = 1;
        t->minatar.def = def;
        t->minatar.num_envs = n;
        t->minatar.state_words = (int)(def->state_bytes / 4);
        t->minatar.states = (uint32_t *)m;
        t->minatar.elapsed = (int32_t *)(m + states);
    }
    return t->mem;
}

/* Env i of twin t as its reset leaves it: zeroed, seeded (seed, first + i), reset; a step count
 * that names the env (first + i) so that a misplaced count shows. */
static void reset_envs(const cr_image_twin *t, const cudarl_env_def *def, uint64_t seed,
                       int64_t first) {
    unsigned char *state = malloc(def->state_bytes);
    unsigned char *obs = malloc((size_t)def->obs_shape[0] * def->obs_shape[1] * def->obs_shape[2]);
    CHECK(state && obs);
    const int n = t->num_envs;
    for (int i = 0; i < n; i++) {
        memset(state, 0, def->state_bytes);
        def->seed(state, seed, (uint64_t)(first + i));
        def->reset(state, obs);
        int32_t e = (int32_t)(first + i);
        if (t->kind == 2) {
            memcpy(&t->pixels.states[i], state, def->state_bytes);
            memcpy(&t->pixels.elapsed[i], &e, 4);
        } else {
            for (int k = 0; k < t->minatar.state_words; k++)
                memcpy(&t->minatar.states[(size_t)k * n + i], state + 4 * (size_t)k, 4);
            memcpy(&t->minatar.elapsed[i], &e, 4);
        }
    }
    free(state), free(obs);
}

/* The ranks' blocks (R twins of n envs) gathered into the job's twin w, env by env. */
static void gather(const cr_image_twin *w, const cr_image_twin *ranks, int R, int n) {
    for (int r = 0; r < R; r++)
        for (int j = 0; j < n; j++)
            cr_image_twin_copy_env(w, w->mem, r * n + j, &ranks[r], ranks[r].mem, j);
}

static void check_env(const char *id) {
    const cudarl_env_def *def = cr_env_def_find(id);
    CHECK_MSG(def && def->seed && def->reset, "%s has a def", id);
    enum { R = 2, n = 4, N = R * n };
    const uint64_t seed = 11;
    cr_image_twin one, ranks[R], job, back[R];
    layout(&one, def, N);
    reset_envs(&one, def, seed, 0); /* one process: envs 0 .. 7 */
    for (int r = 0; r < R; r++) {
        layout(&ranks[r], def, n);
        reset_envs(&ranks[r], def, seed, (int64_t)r * n); /* rank r: the job's envs 4r .. */
    }
    layout(&job, def, N);
    gather(&job, ranks, R, n);
    CHECK_MSG(!memcmp(job.mem, one.mem, one.bytes), "%s: 2 ranks' blocks gathered are one "
              "process's block bit for bit", id);
    int bad = 0;
    char why[256];
    /* the step counts here are env indices (< 8): in range for both envs */
    CHECK_MSG(cr_image_twin_check_state(&job, job.mem, &bad, why, sizeof why) == -1,
              "%s: the gathered block passes the state check (%s)", id, why);
    for (int r = 0; r < R; r++) { /* and back: a resume's rank takes envs r*n .. */
        layout(&back[r], def, n);
        for (int j = 0; j < n; j++)
            cr_image_twin_copy_env(&back[r], back[r].mem, j, &job, job.mem, r * n + j);
        CHECK_MSG(!memcmp(back[r].mem, ranks[r].mem, ranks[r].bytes),
                  "%s: rank %d's envs taken from the job's block are its own bit for bit", id, r);
    }
    /* without the rank's first env, rank 1 repeats rank 0's envs: not the job's block */
    reset_envs(&ranks[1], def, seed, 0);
    memset(job.mem, 0, job.bytes);
    gather(&job, ranks, R, n);
    CHECK_MSG(memcmp(job.mem, one.mem, one.bytes) != 0,
              "%s: rank 1 seeded from env 0 gathers into another block", id);
    free(one.mem), free(job.mem);
    for (int r = 0; r < R; r++) free(ranks[r].mem), free(back[r].mem);
    printf("%s: 2 ranks' twin blocks (first env 0 and 4) gather into one process's block of 8 "
           "envs and split back, bit for bit\n", id);
}

int main(void) {
    check_env("MinAtar/Breakout-v1");
    check_env("MinAtar/SpaceInvaders-v1");
    check_env("CartPolePixels-v1");
    return 0;
}
