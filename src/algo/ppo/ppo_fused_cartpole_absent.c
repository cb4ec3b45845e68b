/* ppo_fused_cartpole.h where cudarl is built without CUDA (CMake builds this file instead of
 * ppo_fused_cartpole.cu): the fused rollout takes no shapes, so the trainer takes its op-by-op
 * path and never reaches the kernels' entry points. */
#include "algo/ppo/ppo_fused_cartpole.h"

int cr_ppo_rollout_cuda_shape_ok(const cr_mlp_view *actor, const cr_mlp_view *critic) {
    (void)actor, (void)critic;
    return 0;
}

void cr_ppo_rollout_cuda(cudarl_ctx *ctx, const cr_ppo_rollout_args *a) {
    (void)ctx, (void)a;
    CUDARL_ASSERT(!"the fused rollout needs cudarl built with CUDA");
}

void cr_ppo_pool_step_cuda(cudarl_ctx *ctx, const cr_ppo_pool_step_args *a) {
    (void)ctx, (void)a;
    CUDARL_ASSERT(!"the fused pool step needs cudarl built with CUDA");
}

void cr_ppo_pool_rollout_cuda_end(cudarl_ctx *ctx, cr_rng_stream *sampler, int T, int N,
                                  const uint8_t *done, const double *fin_return,
                                  const int32_t *fin_length, cr_episode_log *log) {
    (void)ctx, (void)sampler, (void)T, (void)N, (void)done, (void)fin_return, (void)fin_length;
    (void)log;
    CUDARL_ASSERT(!"the fused pool step needs cudarl built with CUDA");
}
