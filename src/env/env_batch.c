/* Env batches: the state lives where the context computes, stepped by the matching twin. */
#include "env/env.h"

size_t cr_env_batch_bytes(const cr_env_info *info, int n) { return cr_cartpole_bytes(n); }

void cr_env_batch_init(cr_env_batch *b, const cr_env_info *info, int n, void *mem) {
    b->info = info;
    b->num_envs = n;
    cr_cartpole_init(&b->cartpole, n, mem);
}

void cr_env_batch_reset(cudarl_ctx *ctx, cr_env_batch *b, uint64_t seed, float *obs) {
#ifdef CUDARL_WITH_CUDA
    if (ctx->kind == CUDARL_DEVICE_CUDA) {
        cr_cartpole_cuda_reset(&b->cartpole, seed, obs, ctx->stream);
        return;
    }
#endif
    cr_cartpole_reset(&b->cartpole, seed, obs);
}

void cr_env_batch_step(cudarl_ctx *ctx, cr_env_batch *b, const int32_t *actions, float *obs,
                       float *reward, uint8_t *terminated, uint8_t *truncated, uint8_t *done,
                       float *final_obs) {
#ifdef CUDARL_WITH_CUDA
    if (ctx->kind == CUDARL_DEVICE_CUDA) {
        cr_cartpole_cuda_step(&b->cartpole, actions, obs, reward, terminated, truncated, done,
                              final_obs, ctx->stream);
        return;
    }
#endif
    cr_cartpole_step(&b->cartpole, actions, obs, reward, terminated, truncated, final_obs);
    for (int i = 0; i < b->num_envs; i++) done[i] = terminated[i] | truncated[i];
}
