/* A program of your own on an installed cudarl (docs/install.md): built outside cudarl's tree,
 * by CMake (find_package(cudarl CONFIG), CMakeLists.txt here) or by make with pkg-config
 * (Makefile here), against libcudarl.so or libcudarl.a, full or runtime-only. It checks that the
 * header it was compiled with and the library it runs with have one ABI version, loads a
 * checkpoint of `cudarl train` on the CPU, acts on a batch of observations drawn from cudarl's
 * Philox stream, and checks each action: a discrete one in 0 .. num_actions-1, a continuous one
 * inside the policy's box, the same twice over.
 *
 * Usage: consumer CHECKPOINT [--batch N]   (N in 1 .. 64; default 8)
 * Prints the actions, one line each, on stdout (the same for every build of one cudarl and
 * checkpoint) and what the library is and act()'s latency on stderr. Exits 0 when all is
 * well, 1 on a failure (with the library's message), 2 on bad usage. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cudarl.h>

#define MAX_BATCH 64
#define MAX_OBS (1 << 16) /* elements of one observation, at most */

static int fail(const char *what) {
    fprintf(stderr, "consumer: %s: %s\n", what, cudarl_last_error());
    return 1;
}

/* n rows of obs_dim inputs of `dtype` from Philox stream 7 of seed 1: floats in [-0.5, 0.5),
 * or bytes. */
static void *observations(const cudarl_policy_info *info, int n) {
    size_t elems = (size_t)n * (size_t)info->obs_dim;
    size_t size = info->obs_dtype == CUDARL_OBS_U8 ? 1 : sizeof(float);
    uint32_t *words = malloc(elems * sizeof *words);
    void *obs = malloc(elems * size);
    if (!words || !obs) {
        free(words);
        free(obs);
        return NULL;
    }
    cudarl_random_u32(1, 7, 0, words, elems);
    for (size_t i = 0; i < elems; i++) {
        if (info->obs_dtype == CUDARL_OBS_U8) ((uint8_t *)obs)[i] = (uint8_t)(words[i] >> 24);
        else ((float *)obs)[i] = (float)(words[i] >> 8) / 16777216.0f - 0.5f;
    }
    free(words);
    return obs;
}

/* Prints action i of `actions` and returns whether it is one the policy may take. */
static int check_action(const cudarl_policy_info *info, const void *actions, int i) {
    if (info->action_dim == 0) {
        int32_t a = ((const int32_t *)actions)[i];
        printf("action %d: %d\n", i, (int)a);
        return a >= 0 && a < info->num_actions;
    }
    const float *a = (const float *)actions + (size_t)i * (size_t)info->action_dim;
    int ok = 1;
    printf("action %d:", i);
    for (int k = 0; k < info->action_dim; k++) {
        printf(" %.6f", a[k]);
        ok = ok && a[k] >= info->action_low[k] && a[k] <= info->action_high[k];
    }
    printf("\n");
    return ok;
}

static int run(const char *checkpoint, int batch) {
    cudarl_policy_options opt;
    if (cudarl_policy_options_default(&opt) != CUDARL_OK) return fail("options");
    opt.device = CUDARL_DEVICE_CPU;
    opt.max_batch = batch;
    cudarl_policy *pi;
    if (cudarl_policy_load(checkpoint, &opt, &pi) != CUDARL_OK) return fail("cudarl_policy_load");
    cudarl_policy_info info;
    cudarl_policy_get_info(pi, &info);
    fprintf(stderr, "consumer: %s policy (%s) of %s: %d inputs, %d %s actions\n", info.algo,
            info.network, info.env_id, info.obs_dim, info.num_actions,
            info.action_dim ? "continuous" : "discrete");
    int status = 1;
    void *obs = info.obs_dim > 0 && info.obs_dim <= MAX_OBS ? observations(&info, batch) : NULL;
    size_t action_bytes = info.action_dim ? (size_t)info.action_dim * sizeof(float)
                                          : sizeof(int32_t);
    void *first = calloc((size_t)batch, action_bytes), *again = calloc((size_t)batch, action_bytes);
    if (!obs || !first || !again) {
        fprintf(stderr, "consumer: out of memory, or a policy of %d inputs\n", info.obs_dim);
    } else if (cudarl_policy_act(pi, obs, info.obs_dtype, batch, first, NULL, NULL) != CUDARL_OK ||
               cudarl_policy_act(pi, obs, info.obs_dtype, batch, again, NULL, NULL) != CUDARL_OK) {
        fail("cudarl_policy_act");
    } else {
        status = 0;
        for (int i = 0; i < batch; i++)
            if (!check_action(&info, first, i)) {
                fprintf(stderr, "consumer: action %d is not one the policy may take\n", i);
                status = 1;
            }
        if (memcmp(first, again, (size_t)batch * action_bytes)) {
            fprintf(stderr, "consumer: the same observations gave other actions the second time\n");
            status = 1;
        }
        cudarl_latency_stats st;
        if (cudarl_policy_latency(pi, &st) == CUDARL_OK)
            fprintf(stderr, "consumer: %lld act() calls, p50 %.1f us, max %.1f us\n",
                    (long long)st.count, st.p50_us, st.max_us);
    }
    free(obs);
    free(first);
    free(again);
    cudarl_policy_free(pi);
    return status;
}

int main(int argc, char **argv) {
    int batch = 8;
    if (argc == 4 && !strcmp(argv[2], "--batch")) {
        char *end;
        long b = strtol(argv[3], &end, 10);
        batch = *argv[3] && !*end && b >= 1 && b <= MAX_BATCH ? (int)b : 0;
    }
    if ((argc != 2 && argc != 4) || batch == 0) {
        fprintf(stderr, "usage: consumer CHECKPOINT [--batch N]   (N: 1 .. %d)\n", MAX_BATCH);
        return 2;
    }
    fprintf(stderr, "consumer: compiled with cudarl.h %s (ABI %d), running libcudarl %s (ABI %d)\n",
            CUDARL_VERSION_STRING, CUDARL_ABI_VERSION, cudarl_version(), cudarl_abi_version());
    if (cudarl_abi_version() != CUDARL_ABI_VERSION) { /* the SONAME has it: loaded by path? */
        fprintf(stderr, "consumer: the library's ABI is not the header's\n");
        return 1;
    }
    return run(argv[1], batch);
}
