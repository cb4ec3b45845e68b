/* The public entry points the CLI reaches the library through (include/cudarl.h, added when
 * tools/ stopped including src/): what each returns on good input, and that each bad argument is
 * refused with its status and a message that names it. CPU only.
 *   cudarl_format_bytes, cudarl_random_u32, cudarl_env_find, cudarl_env_play_random,
 *   cudarl_cuda_device_name, cudarl_network_init_params, cudarl_policy_load_network,
 *   cudarl_policy_conv_engine, cudarl_policy_time_forward, cudarl_check_environment (and its
 *   refusal by cudarl_ctx_init and cudarl_policy_load_network), cudarl_flag_ranges and
 *   cudarl_flag_check (and that the validators refuse exactly what the tables do) */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <string.h>

#include "check.h"
#include "cudarl.h"
#include "core/philox.h"
#include "nn/convnet.h"

static void refused(const char *what, cudarl_status got, cudarl_status want, const char *needle) {
    const char *msg = cudarl_last_error();
    CHECK_MSG(got == want && strstr(msg, needle), "%s: expected %s with '%s', got %s: %s", what,
              cudarl_status_name(want), needle, cudarl_status_name(got), msg);
    printf("  refused %-44s %s\n", what, cudarl_status_name(got));
}

static void test_format_bytes(void) {
    char b[32];
    CHECK(!strcmp(cudarl_format_bytes(512, b, sizeof b), "512 B"));
    CHECK(!strcmp(cudarl_format_bytes(1536, b, sizeof b), "1.50 KiB"));
    CHECK(!strcmp(cudarl_format_bytes((size_t)3 << 30, b, sizeof b), "3.00 GiB"));
    printf("format_bytes: 512 B, 1.50 KiB, 3.00 GiB\n");
}

/* The words of stream (seed, stream) from position `first` are the generator's, wherever the
 * caller starts. */
static void test_random(void) {
    uint32_t all[16], tail[9];
    cudarl_random_u32(7, 3, 0, all, 16);
    cr_philox_state r;
    cr_philox_seed(&r, 7, 3);
    for (int i = 0; i < 16; i++) CHECK_MSG(all[i] == cr_philox_next_u32(&r), "word %d", i);
    cudarl_random_u32(7, 3, 7, tail, 9);
    CHECK(!memcmp(tail, all + 7, sizeof tail));
    cudarl_random_u32(7, 3, 5, NULL, 0); /* nothing asked, nothing written */
    printf("random_u32: the generator's words, from any position\n");
}

typedef struct play_log {
    int calls, last_t, episodes, stop_at;
} play_log;

static cudarl_status on_obs(void *user, int t, const void *obs, int episodes) {
    play_log *l = user;
    CHECK(obs && t == l->calls);
    l->calls++, l->last_t = t, l->episodes = episodes;
    return l->stop_at && t == l->stop_at ? CUDARL_ERR_IO : CUDARL_OK;
}

static void test_env(void) {
    CHECK(cudarl_env_find(NULL) == NULL && cudarl_env_find("Nope-v0") == NULL);
    const cudarl_env_def *d = cudarl_env_find("CartPole-v1");
    CHECK(d && !strcmp(d->id, "CartPole-v1"));
    play_log l = {0, -1, 0, 0};
    CHECK_OK(cudarl_env_play_random("CartPole-v1", 3, 600, on_obs, &l));
    CHECK_MSG(l.calls == 600 && l.last_t == 599 && l.episodes >= 1,
              "600 calls over >= 1 episode, got %d calls, %d episodes", l.calls, l.episodes);
    printf("env_play_random: %d observations, %d episodes ended\n", l.calls, l.episodes);
    play_log stop = {0, -1, 0, 5};
    CHECK(cudarl_env_play_random("CartPole-v1", 3, 100, on_obs, &stop) == CUDARL_ERR_IO &&
          stop.calls == 6);
    refused("env_play_random: unknown env", cudarl_env_play_random("Nope-v0", 1, 5, on_obs, &l),
            CUDARL_ERR_INVALID_ARG, "Nope-v0");
    refused("env_play_random: 0 steps", cudarl_env_play_random("CartPole-v1", 1, 0, on_obs, &l),
            CUDARL_ERR_INVALID_ARG, "steps is 0");
    refused("env_play_random: no callback", cudarl_env_play_random("CartPole-v1", 1, 5, NULL, &l),
            CUDARL_ERR_INVALID_ARG, "fn is NULL");
}

static void test_devices(void) {
    char name[64];
    refused("cuda_device_name: no buffer", cudarl_cuda_device_name(0, NULL, 0),
            CUDARL_ERR_INVALID_ARG, "no buffer");
    if (cudarl_cuda_device_count() == 0)
        refused("cuda_device_name without a GPU", cudarl_cuda_device_name(0, name, sizeof name),
                CUDARL_ERR_UNSUPPORTED, "");
    else
        refused("cuda_device_name: an index past the GPUs",
                cudarl_cuda_device_name(cudarl_cuda_device_count(), name, sizeof name),
                CUDARL_ERR_INVALID_ARG, "does not exist");
}

static void test_network(void) {
    cr_convnet_spec spec;
    CHECK_OK(cr_convnet_spec_named(&spec, "minatar-cnn", 4, 10, 10, CR_CONVNET_DQN, 3));
    char text[CR_CONVNET_TEXT_MAX];
    CHECK_OK(cr_convnet_spec_to_text(&spec, text, sizeof text));
    size_t P = 0;
    CHECK_OK(cudarl_network_init_params(text, 5, NULL, 0, &P));
    float *params = malloc(P * sizeof(float)), *again = malloc(P * sizeof(float));
    CHECK(params && again && P > 0);
    CHECK_OK(cudarl_network_init_params(text, 5, params, P, &P));
    CHECK_OK(cudarl_network_init_params(text, 5, again, P, &P));
    CHECK_MSG(!memcmp(params, again, P * sizeof(float)), "init differs for one seed");
    refused("network_init_params: no count", cudarl_network_init_params(text, 5, params, P, NULL),
            CUDARL_ERR_INVALID_ARG, "num_params is NULL");
    refused("network_init_params: too small a buffer",
            cudarl_network_init_params(text, 5, params, P - 1, &P), CUDARL_ERR_INVALID_ARG,
            "params holds");
    refused("network_init_params: not a network",
            cudarl_network_init_params("{\"format\": \"nope\"}", 5, params, P, &P),
            CUDARL_ERR_FORMAT, "");
    refused("network_init_params: no text", cudarl_network_init_params(NULL, 5, params, P, &P),
            CUDARL_ERR_INVALID_ARG, "no network");

    cudarl_policy_options opt;
    cudarl_policy_options_default(&opt);
    opt.device = CUDARL_DEVICE_CPU, opt.max_batch = 2;
    cudarl_policy *pol = NULL;
    CHECK_OK(cudarl_policy_load_network(text, params, P, "probe", CUDARL_CONV_ENGINE_AUTO, &opt,
                                        &pol));
    uint8_t obs[2 * 4 * 10 * 10] = {0};
    for (size_t i = 0; i < sizeof obs; i += 7) obs[i] = 1;
    int32_t a[2];
    CHECK_OK(cudarl_policy_act(pol, obs, CUDARL_OBS_U8, 2, a, NULL, NULL));
    CHECK(a[0] >= 0 && a[0] < 3 && a[1] >= 0 && a[1] < 3);
    CHECK(!strcmp(cudarl_policy_conv_engine(pol), "cpu"));
    float ms[2];
    refused("policy_time_forward on the CPU", cudarl_policy_time_forward(pol, 1, 2, ms),
            CUDARL_ERR_UNSUPPORTED, "");
    refused("policy_time_forward: n past max_batch", cudarl_policy_time_forward(pol, 3, 2, ms),
            CUDARL_ERR_INVALID_ARG, "n is 3");
    refused("policy_time_forward: 0 iterations", cudarl_policy_time_forward(pol, 1, 0, ms),
            CUDARL_ERR_INVALID_ARG, "iters is 0");
    cudarl_policy_free(pol);
    cudarl_policy *none = NULL;
    refused("policy_load_network: wrong parameter count",
            cudarl_policy_load_network(text, params, P + 1, "probe", CUDARL_CONV_ENGINE_AUTO,
                                       &opt, &none), CUDARL_ERR_INVALID_ARG, "parameters given");
    CHECK(none == NULL);
    refused("policy_load_network: not an engine",
            cudarl_policy_load_network(text, params, P, "probe", (cudarl_conv_engine)9, &opt,
                                       &none), CUDARL_ERR_INVALID_ARG, "engine 9");
    refused("policy_load_network: no label",
            cudarl_policy_load_network(text, params, P, NULL, CUDARL_CONV_ENGINE_AUTO, &opt,
                                       &none), CUDARL_ERR_INVALID_ARG, "must not be NULL");
    refused("policy_load_network: no out",
            cudarl_policy_load_network(text, params, P, "probe", CUDARL_CONV_ENGINE_AUTO, &opt,
                                       NULL), CUDARL_ERR_INVALID_ARG, "out is NULL");
    printf("network: %zu parameters, loaded and acting on the CPU\n", P);
    free(params), free(again);
}

/* Each CUDARL_* variable with a value it does not take is refused by cudarl_check_environment,
 * cudarl_ctx_init and the policy runtime, naming the variable, the value and the fix; its
 * values and unset pass. */
static void test_environment(void) {
    static const struct {
        const char *var, *bad, *good, *values;
    } vars[] = {{"CUDARL_LOG", "verbose", "warn", "error, warn, info or debug"},
                {"CUDARL_SYNC_DEBUG", "yes", "0", "0 or 1"},
                {"CUDARL_FUSED", "2", "1", "0 or 1"},
                {"CUDARL_CONV_ENGINE", "bogus", "cudnn", "gemm or cudnn"}};
    cr_convnet_spec spec;
    CHECK_OK(cr_convnet_spec_named(&spec, "minatar-cnn", 4, 10, 10, CR_CONVNET_DQN, 3));
    char text[CR_CONVNET_TEXT_MAX];
    CHECK_OK(cr_convnet_spec_to_text(&spec, text, sizeof text));
    size_t P = 0;
    CHECK_OK(cudarl_network_init_params(text, 5, NULL, 0, &P));
    float *params = calloc(P, sizeof(float));
    CHECK(params);
    cudarl_policy_options opt;
    cudarl_policy_options_default(&opt);
    opt.device = CUDARL_DEVICE_CPU;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *was = getenv(vars[i].var);
        char saved[64];
        snprintf(saved, sizeof saved, "%s", was ? was : "");
        char needle[160];
        snprintf(needle, sizeof needle, "%s='%s' is not", vars[i].var, vars[i].bad);
        setenv(vars[i].var, vars[i].bad, 1);
        refused(vars[i].var, cudarl_check_environment(), CUDARL_ERR_INVALID_ARG, needle);
        CHECK(strstr(cudarl_last_error(), vars[i].values) &&
              strstr(cudarl_last_error(), "or unset it"));
        cudarl_ctx *ctx = (cudarl_ctx *)&ctx; /* not NULL: the refusal must clear it */
        refused("ctx_init under it", cudarl_ctx_init(&ctx, CUDARL_DEVICE_CPU, 0),
                CUDARL_ERR_INVALID_ARG, needle);
        CHECK(ctx == NULL);
        cudarl_policy *pol = NULL;
        refused("policy_load_network under it",
                cudarl_policy_load_network(text, params, P, "probe", CUDARL_CONV_ENGINE_AUTO, &opt,
                                           &pol), CUDARL_ERR_INVALID_ARG, needle);
        CHECK(pol == NULL);
        setenv(vars[i].var, vars[i].good, 1);
        CHECK_OK(cudarl_check_environment());
        setenv(vars[i].var, "", 1);
        CHECK_OK(cudarl_check_environment());
        unsetenv(vars[i].var);
        CHECK_OK(cudarl_check_environment());
        CHECK_OK(cudarl_ctx_init(&ctx, CUDARL_DEVICE_CPU, 0));
        cudarl_ctx_free(ctx);
        if (was) setenv(vars[i].var, saved, 1);
    }
    free(params);
    printf("check_environment: a bad value of each CUDARL_* variable refused, also by ctx_init "
           "and the policy runtime\n");
}

/* Sets the field of `r` in `config` to v (an integer field: v as that integer). */
static void set_field(const cudarl_flag_range *r, void *config, double v) {
    char *f = (char *)config + r->offset;
    if (r->type == CUDARL_FIELD_INT) *(int *)f = (int)v;
    else if (r->type == CUDARL_FIELD_I64) *(int64_t *)f = (int64_t)v;
    else *(double *)f = v;
}

/* The validator of `table` on `config` (a cudarl_ppo_config, cudarl_dqn_config or
 * cudarl_replay_request). */
static cudarl_status validate(cudarl_flag_table table, const void *config) {
    static char report[4096];
    switch (table) {
    case CUDARL_FLAGS_PPO: return cudarl_ppo_config_validate(config);
    case CUDARL_FLAGS_DQN: return cudarl_dqn_config_validate(config);
    case CUDARL_FLAGS_REPLAY: return cudarl_replay_plan_report(config, report, sizeof report);
    }
    return CUDARL_ERR_INVALID_ARG;
}

/* For every setting of every table: the bounds pass cudarl_flag_check, the values just outside
 * them (and NaN for a real number) are refused with "--flag must be between", and the config's
 * validator refuses each of those with cudarl_flag_check's very message, and never refuses a
 * bound as out of range: the tables are the validation. */
static void test_flag_ranges(void) {
    static const char *const names[] = {"ppo", "dqn", "replay"};
    union {
        cudarl_ppo_config ppo;
        cudarl_dqn_config dqn;
        cudarl_replay_request replay;
    } base, c;
    int total = 0;
    for (int t = 0; t < 3; t++) {
        const cudarl_flag_table table = (cudarl_flag_table)t;
        memset(&base, 0, sizeof base);
        if (table == CUDARL_FLAGS_PPO) cudarl_ppo_config_default(&base.ppo, NULL);
        if (table == CUDARL_FLAGS_DQN) cudarl_dqn_config_default(&base.dqn, NULL);
        if (table == CUDARL_FLAGS_REPLAY)
            base.replay = (cudarl_replay_request){sizeof base.replay, 1000, 1, 16, 1, 1, 0, 0,
                                                  (int64_t)1 << 40, NULL};
        CHECK_MSG(validate(table, &base) == CUDARL_OK, "%s defaults: %s", names[t],
                  cudarl_last_error());
        const cudarl_flag_range *r = cudarl_flag_ranges(table);
        CHECK(r && r->flag);
        for (; r->flag; r++, total++) {
            const int real = r->type == CUDARL_FIELD_F64;
            CHECK_MSG(r->lo <= r->hi && fabs(r->lo) < 9007199254740992.0 &&
                          fabs(r->hi) < 9007199254740992.0 &&
                          (real || (r->lo == floor(r->lo) && r->hi == floor(r->hi))),
                      "%s --%s: bounds %g..%g", names[t], r->flag, r->lo, r->hi);
            const double outside[3] = {real ? nextafter(r->lo, -INFINITY) : r->lo - 1,
                                       real ? nextafter(r->hi, INFINITY) : r->hi + 1, NAN};
            for (int k = 0; k < (real ? 3 : 2); k++) {
                char want[512], needle[96];
                snprintf(needle, sizeof needle, "--%s must be between", r->flag);
                cudarl_status s = cudarl_flag_check(table, r->flag, outside[k]);
                snprintf(want, sizeof want, "%s", cudarl_last_error());
                CHECK_MSG(s == CUDARL_ERR_INVALID_ARG && !strncmp(want, needle, strlen(needle)),
                          "%s --%s = %g: expected '%s...', got %s: '%s'", names[t], r->flag,
                          outside[k], needle, cudarl_status_name(s), want);
                c = base;
                set_field(r, &c, outside[k]);
                s = validate(table, &c);
                CHECK_MSG(s == CUDARL_ERR_INVALID_ARG && !strcmp(cudarl_last_error(), want),
                          "%s validator, --%s = %g: expected '%s', got %s: '%s'", names[t],
                          r->flag, outside[k], want, cudarl_status_name(s), cudarl_last_error());
            }
            for (int k = 0; k < 2; k++) {
                const double bound = k ? r->hi : r->lo;
                CHECK_OK(cudarl_flag_check(table, r->flag, bound));
                c = base;
                set_field(r, &c, bound);
                char needle[96];
                snprintf(needle, sizeof needle, "--%s must be between", r->flag);
                CHECK_MSG(validate(table, &c) == CUDARL_OK || !strstr(cudarl_last_error(), needle),
                          "%s validator refuses --%s = %g, its bound: %s", names[t], r->flag,
                          bound, cudarl_last_error());
            }
        }
    }
    refused("flag_check: a flag no table has", cudarl_flag_check(CUDARL_FLAGS_PPO, "tau", 0.5),
            CUDARL_ERR_INVALID_ARG, "--tau is not");
    refused("flag_check: no such table", cudarl_flag_check((cudarl_flag_table)7, "gamma", 0.5),
            CUDARL_ERR_INVALID_ARG, "table 7");
    CHECK(cudarl_flag_ranges((cudarl_flag_table)7) == NULL);
    printf("flag_ranges: %d settings; each validator refuses exactly what its table does, with "
           "its message\n", total);
}

int main(void) {
    test_environment();
    test_flag_ranges();
    test_format_bytes();
    test_random();
    test_env();
    test_devices();
    test_network();
    printf("ok: the public entry points of the CLI\n");
    return 0;
}
