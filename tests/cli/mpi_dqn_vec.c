/* Data-parallel DQN refuses a vector env (docs/multigpu.md): run under `mpirun -np 2`
 * (tests/cli/mpi.cmake, ctest mpi_dqn_vec_refused). A vector env (cudarl_env_def.vec_*) seeds
 * and steps its envs as a whole, so a rank cannot step its share of them; every rank's
 * cudarl_dqn_train must fail with CUDARL_ERR_UNSUPPORTED, a message that names the vector env
 * and the fix, before any collective (else the ranks would wait on each other), and exit 0. */
#include <stdio.h>
#include <string.h>

#include "cudarl.h"

#define VEC_N 4

static void vec_reset(void *user, int n, uint64_t seed, void *obs) {
    (void)user, (void)seed;
    memset(obs, 0, (size_t)n * 2 * sizeof(float));
}

static void vec_step(void *user, int n, const void *actions, void *obs, float *reward,
                     uint8_t *terminated, uint8_t *truncated, void *final_obs) {
    (void)user, (void)actions, (void)final_obs;
    memset(obs, 0, (size_t)n * 2 * sizeof(float));
    for (int i = 0; i < n; i++) reward[i] = 1.0f, terminated[i] = 0, truncated[i] = 0;
}

static const cudarl_env_def vec_def = {
    .struct_size = sizeof(cudarl_env_def),
    .id = "MpiVec-v0", .obs_rank = 1, .obs_shape = {2, 1, 1}, .obs_dtype = CUDARL_OBS_F32,
    .num_actions = 2, .solved_return = 1.0, .vec_reset = vec_reset, .vec_step = vec_step,
    .vec_num_envs = VEC_N,
};

static int failed(const char *what, const char *detail) {
    fprintf(stderr, "FAIL: %s\n%s\n", what, detail ? detail : "");
    cudarl_dist_finalize();
    return 1;
}

int main(int argc, char **argv) {
    const char *runs = argc > 1 ? argv[1] : "mpi-dqn-vec-runs";
    if (cudarl_dist_init() != CUDARL_OK) return failed("cudarl_dist_init", cudarl_last_error());
    if (cudarl_dist_size() != 2)
        return failed("run under mpirun -np 2", "this process is not one of 2 ranks");
    if (cudarl_env_register(&vec_def) != CUDARL_OK)
        return failed("the vector env registers", cudarl_last_error());
    cudarl_ctx *ctx = NULL;
    if (cudarl_ctx_init(&ctx, CUDARL_DEVICE_CPU, 0) != CUDARL_OK)
        return failed("a CPU context", cudarl_last_error());
    cudarl_dqn_config cfg;
    if (cudarl_dqn_config_default(&cfg, vec_def.id) != CUDARL_OK)
        return failed("the DQN defaults for the vector env", cudarl_last_error());
    cfg.num_envs = VEC_N, cfg.total_timesteps = 64, cfg.learning_starts = 32, cfg.quiet = 1;
    cfg.buffer_size = 256, cfg.batch_size = 8;
    snprintf(cfg.runs_dir, sizeof cfg.runs_dir, "%s", runs);
    cudarl_status s = cudarl_dqn_train(ctx, &cfg, NULL);
    const char *msg = cudarl_last_error();
    cudarl_ctx_free(ctx);
    if (s != CUDARL_ERR_UNSUPPORTED)
        return failed("DQN on 2 ranks refuses a vector env with CUDARL_ERR_UNSUPPORTED", msg);
    if (!strstr(msg, "vector env") || !strstr(msg, "run it as one process"))
        return failed("the refusal names the vector env and the fix", msg);
    printf("rank %d: refused: %s\n", cudarl_dist_rank(), msg);
    cudarl_dist_finalize();
    return 0;
}
