/* What one libcudarl.so's policy runtime computes on a GPU, printed bit for bit, so that two
 * builds can be compared (tests/gpu/test_runtime_only_cuda.sh: the full library and the
 * runtime-only one must print the same). The library is opened with dlopen from the path given,
 * not linked, so one binary runs on both; only the functions of the CUDARL_0 node are looked up.
 *
 * For each checkpoint given and for two in-memory networks (nature-cnn, minatar-cnn, weights from
 * cudarl_network_init_params), at each precision the policy takes (fp32 and tf32; bf16 and fp16
 * for the convolutional ones), it loads the policy on CUDA device 0 with max_batch 64, acts on
 * batches of 1, 5 and 64 observations drawn from Philox, and prints the actions, the values and
 * the logits (or means) as hex words.
 *
 *     runtime_act_dump LIBRARY [CHECKPOINT...]
 * Exits 0 when every case ran, 1 when one failed (with the library's message). */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudarl.h"
#include "netspecs.h"

#define MAX_BATCH 64

static struct {
    cudarl_status (*options_default_sized)(cudarl_policy_options *, size_t);
    cudarl_status (*load)(const char *, const cudarl_policy_options *, cudarl_policy **);
    cudarl_status (*load_network)(const char *, const float *, size_t, const char *,
                                  cudarl_conv_engine, const cudarl_policy_options *,
                                  cudarl_policy **);
    cudarl_status (*init_params)(const char *, uint64_t, float *, size_t, size_t *);
    cudarl_status (*act)(cudarl_policy *, const void *, cudarl_obs_dtype, int, void *, float *,
                         float *);
    void (*get_info)(const cudarl_policy *, cudarl_policy_info *);
    void (*free_policy)(cudarl_policy *);
    void (*random_u32)(uint64_t, uint64_t, uint64_t, uint32_t *, size_t);
    const char *(*last_error)(void);
    const char *(*version)(void);
} lib;

static const char *NATURE = NETSPEC_NATURE_PPO6;
static const char *MINATAR =
    "{\"format\":\"cudarl-convnet\",\"version\":1,\"name\":\"minatar-cnn\","
    "\"input\":{\"shape\":[4,10,10],\"dtype\":\"u8\",\"scale\":\"none\"},"
    "\"layers\":[{\"type\":\"conv\",\"out\":16,\"kernel\":[3,3],\"stride\":1,\"pad\":0},"
    "{\"type\":\"relu\"},{\"type\":\"flatten\"},{\"type\":\"linear\",\"out\":128},"
    "{\"type\":\"relu\"}],\"heads\":{\"type\":\"dqn\",\"actions\":3}}";

static int sym(void *handle, void *slot, const char *name) {
    void *p = dlsym(handle, name);
    if (!p) fprintf(stderr, "runtime_act_dump: %s: no %s\n", dlerror(), name);
    memcpy(slot, &p, sizeof p); /* ISO C: a data pointer to a function pointer */
    return p != NULL;
}

static void hex(const char *what, const void *words, size_t n) {
    const uint32_t *w = words;
    printf("  %s", what);
    for (size_t i = 0; i < n; i++) printf(" %08x", (unsigned)w[i]);
    printf("\n");
}

/* Loads one policy (a checkpoint, or a network with params) at `precision` and prints what it
 * computes. A precision the policy does not take (CUDARL_ERR_UNSUPPORTED) is printed as such:
 * both builds must agree on that too. */
static int one(const char *what, const char *checkpoint, const char *network,
               const float *params, size_t num_params, cudarl_precision precision) {
    cudarl_policy_options opt;
    lib.options_default_sized(&opt, sizeof opt);
    opt.device = CUDARL_DEVICE_CUDA;
    opt.precision = precision;
    opt.max_batch = MAX_BATCH;
    cudarl_policy *pi = NULL;
    cudarl_status st = checkpoint ? lib.load(checkpoint, &opt, &pi)
                                  : lib.load_network(network, params, num_params, what,
                                                     CUDARL_CONV_ENGINE_AUTO, &opt, &pi);
    printf("%s precision %d:", what, (int)precision);
    if (st == CUDARL_ERR_UNSUPPORTED) {
        printf(" unsupported\n");
        return 0;
    }
    if (st != CUDARL_OK) {
        printf(" load failed\n");
        fprintf(stderr, "runtime_act_dump: %s: %s\n", what, lib.last_error());
        return 1;
    }
    cudarl_policy_info info;
    lib.get_info(pi, &info);
    printf(" %s %s, %d inputs, %d actions\n", info.algo, info.network, info.obs_dim,
           info.num_actions);
    size_t row = (size_t)info.obs_dim, elems = row * MAX_BATCH;
    uint32_t *words = malloc(elems * sizeof *words);
    void *obs = malloc(elems * sizeof(float));
    float *values = malloc(MAX_BATCH * sizeof *values);
    float *logits = malloc((size_t)MAX_BATCH * (size_t)info.num_actions * sizeof *logits);
    float *actions = malloc((size_t)MAX_BATCH * (size_t)info.num_actions * sizeof *actions);
    int bad = !words || !obs || !values || !logits || !actions;
    if (!bad) {
        lib.random_u32(1, 11, 0, words, elems);
        for (size_t i = 0; i < elems; i++) {
            if (info.obs_dtype != CUDARL_OBS_U8)
                ((float *)obs)[i] = (float)(words[i] >> 8) / 4194304.0f - 2.0f; /* [-2, 2) */
            else if (!strcmp(info.network, "minatar-cnn"))
                ((uint8_t *)obs)[i] = (uint8_t)(words[i] >> 31); /* 0/1 channels */
            else
                ((uint8_t *)obs)[i] = (uint8_t)(words[i] >> 24);
        }
    }
    static const int batches[] = {1, 5, MAX_BATCH};
    for (int b = 0; !bad && b < 3; b++) {
        int n = batches[b];
        size_t per_action = info.action_dim ? (size_t)info.action_dim : 1;
        if (lib.act(pi, obs, info.obs_dtype, n, actions, info.has_values ? values : NULL,
                    logits) != CUDARL_OK) {
            fprintf(stderr, "runtime_act_dump: %s act(%d): %s\n", what, n, lib.last_error());
            bad = 1;
            break;
        }
        printf(" batch %d\n", n);
        hex("actions", actions, (size_t)n * per_action);
        if (info.has_values) hex("values", values, (size_t)n);
        hex("logits", logits, (size_t)n * (size_t)info.num_actions);
    }
    free(words);
    free(obs);
    free(values);
    free(logits);
    free(actions);
    lib.free_policy(pi);
    return bad;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: runtime_act_dump LIBRARY [CHECKPOINT...]\n");
        return 2;
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "runtime_act_dump: %s\n", dlerror());
        return 1;
    }
    int ok = sym(h, &lib.options_default_sized, "cudarl_policy_options_default_sized") &
             sym(h, &lib.load, "cudarl_policy_load") &
             sym(h, &lib.load_network, "cudarl_policy_load_network") &
             sym(h, &lib.init_params, "cudarl_network_init_params") &
             sym(h, &lib.act, "cudarl_policy_act") &
             sym(h, &lib.get_info, "cudarl_policy_get_info") &
             sym(h, &lib.free_policy, "cudarl_policy_free") &
             sym(h, &lib.random_u32, "cudarl_random_u32") &
             sym(h, &lib.last_error, "cudarl_last_error") &
             sym(h, &lib.version, "cudarl_version");
    if (!ok) return 1;
    fprintf(stderr, "runtime_act_dump: %s, cudarl %s\n", argv[1], lib.version());
    static const cudarl_precision precisions[] = {CUDARL_PRECISION_FP32, CUDARL_PRECISION_TF32,
                                                  CUDARL_PRECISION_BF16, CUDARL_PRECISION_FP16};
    int failed = 0;
    for (int i = 2; i < argc; i++)
        for (int p = 0; p < 4; p++) failed |= one(argv[i], argv[i], NULL, NULL, 0, precisions[p]);
    const char *nets[] = {NATURE, MINATAR}, *names[] = {"nature-cnn", "minatar-cnn"};
    for (int k = 0; k < 2; k++) {
        size_t n = 0;
        if (lib.init_params(nets[k], 3, NULL, 0, &n) != CUDARL_OK) {
            fprintf(stderr, "runtime_act_dump: %s: %s\n", names[k], lib.last_error());
            return 1;
        }
        float *params = malloc(n * sizeof *params);
        if (!params || lib.init_params(nets[k], 3, params, n, &n) != CUDARL_OK) {
            fprintf(stderr, "runtime_act_dump: %s: no parameters\n", names[k]);
            free(params);
            return 1;
        }
        for (int p = 0; p < 4; p++) failed |= one(names[k], NULL, nets[k], params, n,
                                                  precisions[p]);
        free(params);
    }
    dlclose(h);
    return failed;
}
