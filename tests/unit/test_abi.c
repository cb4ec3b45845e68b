/* The ABI facts of the header and the library (docs/install.md, "The ABI promise"): the version
 * macros against cudarl_version and cudarl_abi_version; each struct a caller fills refused by
 * every function that takes it when its struct_size is 0, larger than the library's, or a size
 * no header had, with a message naming the function, the struct and the fix, and the struct left
 * as it was; the *_default functions writing only the caller's size; and the reading of an
 * earlier, smaller size of a struct (core/abi.h) on a struct of two versions. CPU only. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "core/abi.h"
#include "cudarl.h"
#include "nn/convnet.h"

static void refused(const char *what, cudarl_status got, const char *needle1,
                    const char *needle2) {
    const char *msg = cudarl_last_error();
    CHECK_MSG(got == CUDARL_ERR_INVALID_ARG && strstr(msg, needle1) && strstr(msg, needle2),
              "%s: expected CUDARL_ERR_INVALID_ARG with '%s' and '%s', got %s: %s", what, needle1,
              needle2, cudarl_status_name(got), msg);
    printf("  refused %-48s %s\n", what, msg);
}

static void test_version(void) {
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", CUDARL_VERSION_MAJOR, CUDARL_VERSION_MINOR,
             CUDARL_VERSION_PATCH);
    CHECK_MSG(!strcmp(cudarl_version(), want) && !strcmp(CUDARL_VERSION_STRING, want),
              "cudarl_version() %s, CUDARL_VERSION_STRING %s, the macros %s", cudarl_version(),
              CUDARL_VERSION_STRING, want);
    CHECK(cudarl_abi_version() == CUDARL_ABI_VERSION);
    printf("version %s, ABI %d\n", cudarl_version(), cudarl_abi_version());
}

/* Each table: this build's size is cudarl_sizeof's, and every earlier size is larger than a
 * size_t, ascending, and below the size after it (a new field did not go into tail padding). */
static void test_tables(void) {
    int n = 0;
    for (const cr_struct_abi *const *a = cr_struct_abis; *a; a++, n++) {
        CHECK_MSG((*a)->size == cudarl_sizeof((*a)->type), "%s: %zu, cudarl_sizeof %zu",
                  (*a)->type, (*a)->size, cudarl_sizeof((*a)->type));
        size_t last = sizeof(size_t);
        for (int i = 0; i < CR_STRUCT_OLDER_MAX && (*a)->older[i]; i++) {
            CHECK_MSG((*a)->older[i] > last, "%s: older size %zu after %zu", (*a)->type,
                      (*a)->older[i], last);
            last = (*a)->older[i];
        }
        CHECK_MSG(last < (*a)->size, "%s: older size %zu, now %zu",
                  (*a)->type, last, (*a)->size);
    }
    CHECK(n == 9);
    printf("struct tables: %d\n", n);
}

/* A struct of two versions: v1 {size, a}, v2 {size, a, b}. */
typedef struct v1 {
    size_t struct_size;
    int a;
} v1;
typedef struct v2 {
    size_t struct_size;
    int a;
    double b;
} v2;

static void test_older_size(void) {
    const cr_struct_abi abi = {"v2", "v2_default()", sizeof(v2), {CR_SIZE_BEFORE(v2, b)}};
    CHECK(abi.older[0] == sizeof(v1));
    CHECK_OK(cr_struct_check(&abi, sizeof(v1), "test"));
    CHECK_OK(cr_struct_check(&abi, sizeof(v2), "test"));
    v1 old = {sizeof old, 7};
    v2 full = {sizeof full, 1, 2.5}; /* the defaults */
    CHECK_OK(cr_struct_read(&abi, &full, &old, "test"));
    CHECK_MSG(full.struct_size == sizeof(v2) && full.a == 7 && full.b == 2.5,
              "read a v1 as {%zu, %d, %g}", full.struct_size, full.a, full.b);
    /* written back: v1's bytes and no more */
    unsigned char buf[sizeof(v2) + 8];
    memset(buf, 0xAB, sizeof buf);
    full.a = 9;
    cr_struct_write(buf, &full, sizeof(v1));
    v1 back;
    memcpy(&back, buf, sizeof back);
    CHECK(back.struct_size == sizeof(v1) && back.a == 9);
    for (size_t i = sizeof(v1); i < sizeof buf; i++) CHECK_MSG(buf[i] == 0xAB, "byte %zu", i);
    refused("a size between the two", cr_struct_check(&abi, sizeof(v1) + 4, "test"),
            "no cudarl.h of ABI version", "fill the struct with v2_default()");
    printf("an earlier size read with the later field at its default, written back in place\n");
}

/* struct_size of `s` (its first member) set to `size`. */
static void set_size(void *s, size_t size) { memcpy(s, &size, sizeof size); }

/* The *_default functions: the caller's size written, nothing past it; other sizes refused with
 * the struct untouched. */
static void test_defaults(void) {
    cudarl_ppo_config p;
    memset(&p, 0x5A, sizeof p);
    CHECK_OK(cudarl_ppo_config_default(&p, "CartPole-v1"));
    CHECK(p.struct_size == sizeof p && p.num_envs == 16 && !strcmp(p.env_id, "CartPole-v1"));
    cudarl_ppo_config q;
    memset(&q, 0x5A, sizeof q);
    refused("ppo default, size too big",
            cudarl_ppo_config_default_sized(&q, sizeof q + 8, NULL), "cudarl_ppo_config_default",
            "newer cudarl.h");
    refused("ppo default, size 0", cudarl_ppo_config_default_sized(&q, 0, NULL),
            "cudarl_ppo_config.struct_size is 0", "cudarl_ppo_config_default");
    refused("ppo default, a size no header had",
            cudarl_ppo_config_default_sized(&q, sizeof q - 8, NULL), "ABI version", "sizeof");
    for (size_t i = 0; i < sizeof q; i++) CHECK_MSG(((unsigned char *)&q)[i] == 0x5A, "byte %zu", i);

    cudarl_dqn_config d;
    CHECK_OK(cudarl_dqn_config_default(&d, NULL));
    CHECK(d.struct_size == sizeof d && d.batch_size == 128);
    refused("dqn default, size too big", cudarl_dqn_config_default_sized(&d, sizeof d + 8, NULL),
            "cudarl_dqn_config_default", "newer cudarl.h");
    cudarl_policy_options o;
    CHECK_OK(cudarl_policy_options_default(&o));
    CHECK(o.struct_size == sizeof o && o.max_batch == 1);
    refused("policy options default, size 0", cudarl_policy_options_default_sized(&o, 0),
            "cudarl_policy_options_default", "struct_size is 0");
    cudarl_video_options vo;
    CHECK_OK(cudarl_video_options_default(&vo));
    CHECK(vo.struct_size == sizeof vo && vo.episodes == 1);
    refused("video options default, size too big",
            cudarl_video_options_default_sized(&vo, sizeof vo + 8), "cudarl_video_options_default",
            "newer cudarl.h");
    cudarl_onnx_options x;
    CHECK_OK(cudarl_onnx_options_default(&x));
    CHECK(x.struct_size == sizeof x && x.input_dtype == CUDARL_OBS_F32);
    refused("onnx options default, size too big",
            cudarl_onnx_options_default_sized(&x, sizeof x + 64), "cudarl_onnx_options_default",
            "newer cudarl.h");
}

/* Every function that reads a config refuses a bad struct_size, naming itself; the presets
 * leave such a config as it was. */
static void test_configs(cudarl_ctx *ctx) {
    cudarl_ppo_config p;
    CHECK_OK(cudarl_ppo_config_default(&p, NULL));
    cudarl_ppo_config_for_device(&p, CUDARL_DEVICE_CUDA); /* through a copy of this build's */
    CHECK(p.struct_size == sizeof p && p.num_envs == 1024);
    CHECK_OK(cudarl_ppo_config_validate(&p));
    p.struct_size = 0;
    refused("ppo validate, size 0", cudarl_ppo_config_validate(&p), "cudarl_ppo_config_validate",
            "fill the struct with cudarl_ppo_config_default(), which sets it");
    p.struct_size = sizeof p + 16;
    refused("ppo train, size too big", cudarl_ppo_train(ctx, &p, NULL, NULL), "cudarl_ppo_train",
            "rebuild it against this library's header");
    p.struct_size = 0;
    const int envs = p.num_envs;
    cudarl_ppo_config_for_policy(&p, "nature-cnn");
    CHECK(p.num_envs == envs && !strcmp(p.policy, "mlp"));
    CHECK(strstr(cudarl_last_error(), "cudarl_ppo_config_for_policy"));
    cudarl_ppo_config_for_env(&p, "Pendulum-v1");
    CHECK(!strcmp(p.env_id, "CartPole-v1") && strstr(cudarl_last_error(), "for_env"));
    cudarl_ppo_config_for_device(&p, CUDARL_DEVICE_CPU);
    CHECK(strstr(cudarl_last_error(), "cudarl_ppo_config_for_device"));
    refused("ppo config load, size 0", cudarl_ppo_config_load_sized("x.safetensors", &p, 0),
            "cudarl_ppo_config_load", "struct_size is 0");

    cudarl_dqn_config d;
    CHECK_OK(cudarl_dqn_config_default(&d, NULL));
    CHECK_OK(cudarl_dqn_config_validate(&d));
    set_size(&d, 0);
    refused("dqn validate, size 0", cudarl_dqn_config_validate(&d), "cudarl_dqn_config_validate",
            "cudarl_dqn_config_default()");
    set_size(&d, sizeof d + 8);
    refused("dqn train, size too big", cudarl_dqn_train(ctx, &d, NULL), "cudarl_dqn_train",
            "newer cudarl.h");
    set_size(&d, 0);
    const int64_t steps = d.total_timesteps;
    cudarl_dqn_config_for_device(&d, CUDARL_DEVICE_CUDA);
    CHECK(d.total_timesteps == steps && strstr(cudarl_last_error(), "for_device"));
}

/* The options and requests: refused before anything is opened. */
static void test_options(void) {
    cudarl_policy_options o;
    CHECK_OK(cudarl_policy_options_default(&o));
    o.struct_size = 0;
    cudarl_policy *pi = (cudarl_policy *)&o;
    refused("policy load, options size 0", cudarl_policy_load("missing.safetensors", &o, &pi),
            "cudarl_policy_load", "cudarl_policy_options_default()");
    CHECK(pi == NULL);
    cudarl_video_options vo;
    CHECK_OK(cudarl_video_options_default(&vo));
    vo.struct_size = 0;
    refused("policy record, options size 0",
            cudarl_policy_record("missing.safetensors", "out.gif", &vo, NULL),
            "cudarl_policy_record", "cudarl_video_options_default()");
    cudarl_dqn_config dc;
    refused("dqn config load, size 0", cudarl_dqn_config_load_sized("missing.safetensors", &dc, 0),
            "cudarl_dqn_config_load", "struct_size is 0");
    CHECK(pi == NULL);
    o.struct_size = sizeof o + 8;
    cr_convnet_spec spec;
    CHECK_OK(cr_convnet_spec_named(&spec, "minatar-cnn", 4, 10, 10, CR_CONVNET_DQN, 3));
    char text[CR_CONVNET_TEXT_MAX];
    CHECK_OK(cr_convnet_spec_to_text(&spec, text, sizeof text));
    size_t n = 0;
    CHECK_OK(cudarl_network_init_params(text, 5, NULL, 0, &n));
    float *w = malloc(n * sizeof *w);
    CHECK(w);
    CHECK_OK(cudarl_network_init_params(text, 5, w, n, &n));
    refused("policy load network, size too big",
            cudarl_policy_load_network(text, w, n, "x", CUDARL_CONV_ENGINE_AUTO, &o, &pi),
            "cudarl_policy_load_network", "newer cudarl.h");
    o.struct_size = sizeof o;
    CHECK_OK(cudarl_policy_load_network(text, w, n, "x", CUDARL_CONV_ENGINE_AUTO, &o, &pi));
    cudarl_policy_free(pi);
    free(w);

    cudarl_onnx_options x;
    CHECK_OK(cudarl_onnx_options_default(&x));
    x.struct_size = 3;
    refused("onnx export, a size no header had",
            cudarl_policy_export_onnx("missing.safetensors", "out.onnx", &x),
            "cudarl_policy_export_onnx", "cudarl_onnx_options_default()");

    cudarl_replay_request r = {.buffer_size = 1000, .num_envs = 1, .frame_elems = 4,
                               .frame_stack = 1, .mem_budget = 1 << 30};
    char report[1024];
    refused("replay plan, size 0", cudarl_replay_plan_report(&r, report, sizeof report),
            "cudarl_replay_plan_report", ".struct_size = sizeof(cudarl_replay_request)");
    r.struct_size = sizeof r;
    CHECK_OK(cudarl_replay_plan_report(&r, report, sizeof report));
    refused("replay plan, NULL", cudarl_replay_plan_report(NULL, report, sizeof report),
            "cudarl_replay_plan_report", "NULL");

    cudarl_env_def def = *cudarl_env_find("CartPole-v1");
    CHECK(def.struct_size == sizeof def); /* the registry's copies carry their size */
    def.id = "AbiCartPole-v0";
    def.struct_size = 0;
    refused("env register, size 0", cudarl_env_register(&def), "cudarl_env_register",
            ".struct_size = sizeof(cudarl_env_def)");
    def.struct_size = sizeof def + 8;
    refused("env register, size too big", cudarl_env_register(&def), "cudarl_env_register",
            "newer cudarl.h");
    CHECK(!cudarl_env_find("AbiCartPole-v0"));
    def.struct_size = sizeof def;
    CHECK_OK(cudarl_env_register(&def));
    CHECK(cudarl_env_find("AbiCartPole-v0"));
}

int main(void) {
    test_version();
    test_tables();
    test_older_size();
    test_defaults();
    cudarl_ctx *ctx;
    CHECK_OK(cudarl_ctx_init(&ctx, CUDARL_DEVICE_CPU, 0));
    test_configs(ctx);
    cudarl_ctx_free(ctx);
    test_options();
    printf("test_abi: ok\n");
    return 0;
}
