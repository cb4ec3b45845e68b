/* The MuJoCo tasks' ids in a library without MuJoCo: refused by each lookup of an env by id
 * (a run's --env-id, cudarl_vec_create) saying how to build them in, while an unknown id keeps
 * its own refusal and an env a user registers under one of the ids is found as any other.
 *
 * This program is linked with src/env/mujoco/mujoco_missing.c (mujoco.cmake), which defines the
 * registry's view of the tasks as a build without MuJoCo has it; the linker then takes no
 * object of the tasks from the static library, so the test runs in a build with MuJoCo too. */
#include <string.h>

#include "algo/run.h"
#include "check.h"
#include "env/env.h"
#include "env/mujoco/mujoco_env.h"

static const char *const ids[CR_MUJOCO_TASKS] = {CR_MUJOCO_IDS};

/* The refusal of `id`: UNSUPPORTED, naming the id after `what`, MuJoCo and the fix. */
static void expect_refusal(cudarl_status s, const char *what, const char *id) {
    const char *msg = cudarl_last_error();
    char head[128];
    snprintf(head, sizeof head, "%s'%s' needs MuJoCo", what, id);
    CHECK_MSG(s == CUDARL_ERR_UNSUPPORTED, "%s: status %s: %s", id, cudarl_status_name(s), msg);
    CHECK_MSG(strstr(msg, head) && strstr(msg, "pip install mujoco gymnasium") &&
              strstr(msg, "-DCUDARL_MUJOCO=ON"), "%s: message: %s", id, msg);
}

static void step_nothing(void *state, const float *action, void *obs, float *reward,
                         uint8_t *terminated) {
    *(float *)obs = 0.0f, *reward = 0.0f, *terminated = 0;
}

static void seed_nothing(void *state, uint64_t seed, uint64_t index) {}

static void reset_nothing(void *state, void *obs) { *(float *)obs = 0.0f; }

int main(void) {
    for (const char *const *n = cudarl_env_names(); *n; n++)
        for (int t = 0; t < CR_MUJOCO_TASKS; t++)
            CHECK_MSG(strcmp(*n, ids[t]), "%s is registered without MuJoCo", ids[t]);
    cudarl_ctx *ctx;
    CHECK_OK(cudarl_ctx_init(&ctx, CUDARL_DEVICE_CPU, 0));
    for (int t = 0; t < CR_MUJOCO_TASKS; t++) {
        const cudarl_env_def *def = (const cudarl_env_def *)1;
        CHECK(cr_mujoco_left_out(ids[t]));
        expect_refusal(cr_run_find_env(ids[t], &def), "--env-id ", ids[t]);
        CHECK(def == NULL);
        cudarl_vec *vec = (cudarl_vec *)1;
        expect_refusal(cudarl_vec_create(ctx, ids[t], 2, 1, &vec), "cudarl_vec_create: ", ids[t]);
        CHECK(vec == NULL);
    }
    const cudarl_env_def *def;
    CHECK(cr_run_find_env("Nope-v0", &def) == CUDARL_ERR_INVALID_ARG &&
          strstr(cudarl_last_error(), "not a known environment"));
    CHECK(!cr_mujoco_left_out("Nope-v0") && !cr_mujoco_left_out(NULL) &&
          cr_env_check_built(NULL, "") == CUDARL_OK);

    /* A user's env under one of the ids (a Gymnasium env behind the Python package) is found. */
    cudarl_env_def mine = {.struct_size = sizeof mine, .id = "Hopper-v5", .obs_rank = 1,
                           .obs_shape = {1, 1, 1},
                           .obs_dtype = CUDARL_OBS_F32, .solved_return = 1.0, .state_bytes = 8,
                           .seed = seed_nothing, .reset = reset_nothing, .action_dim = 1,
                           .action_low = {-1.0f}, .action_high = {1.0f},
                           .step_box = step_nothing};
    CHECK_OK(cudarl_env_register(&mine));
    CHECK_OK(cr_run_find_env("Hopper-v5", &def));
    CHECK(def && def->step_box == step_nothing && cr_env_check_built("Hopper-v5", "") == CUDARL_OK);
    cudarl_vec *vec;
    CHECK_OK(cudarl_vec_create(ctx, "Hopper-v5", 2, 1, &vec));
    cudarl_vec_free(vec);
    cudarl_ctx_free(ctx);
    printf("test_mujoco_missing: ok: the four ids refused, an env registered under one found\n");
    return 0;
}
