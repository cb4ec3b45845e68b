/* cudarl's own forward pass of a checkpoint's policy, the reference test_onnx_export.py holds
 * the exported ONNX model against:
 *
 *   onnx_policy_forward CHECKPOINT IN.safetensors OUT.safetensors
 *
 * IN holds `obs`, F32 or U8 (N, obs_dim); U8 is scaled to [0, 1] by cudarl's cr_cpu_scale_u8.
 * OUT gets `logits` (N, A) and `value` (N, 1) for a PPO checkpoint or `q_values` (N, A) for a
 * DQN one, F32, and `action` (N) I64, the argmax by the backend's categorical_argmax. The
 * network runs on the CPU backend through cr_mlp_forward, the code cudarl eval and training
 * run; the weights are read by the layouts' state_dict names. Exits 1 on the first failure. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "nn/actor_critic.h"
#include "nn/qnet.h"
#include "ops/cpu/ops_conv.h"
#include "runtime/safetensors.h"

/* Integer metadata `key` of the checkpoint. */
static int meta_int(const cr_st_file *f, const char *key) {
    const char *v = cr_st_meta(f, key);
    CHECK_MSG(v != NULL, "checkpoint metadata '%s' is missing", key);
    return atoi(v);
}

enum { B_PARAMS, B_X, B_OUT, B_VALUE, B_CACHE, B_ACTION, B_ACTION64 };

int main(int argc, char **argv) {
    CHECK_MSG(argc == 4, "usage: onnx_policy_forward CHECKPOINT IN.safetensors OUT.safetensors");
    cr_st_file *ck, *in;
    CHECK_OK(cr_st_open(&ck, argv[1]));
    CHECK_OK(cr_st_open(&in, argv[2]));
    const char *algo = cr_st_meta(ck, "algo");
    CHECK_MSG(algo && (!strcmp(algo, "ppo") || !strcmp(algo, "dqn")), "algo %s", algo ? algo : "?");
    int dqn = !strcmp(algo, "dqn");
    int obs_dim = meta_int(ck, "obs_dim"), A = meta_int(ck, "num_actions");
    cr_ac_layout ac;
    cr_qnet_layout q;
    const cr_param_tensor *t;
    int ntensors, widest;
    size_t num_params;
    if (dqn) {
        cr_qnet_layout_init(&q, obs_dim, meta_int(ck, "hidden1"), meta_int(ck, "hidden2"), A);
        t = q.t, ntensors = CR_QNET_NUM_TENSORS, num_params = q.num_params;
        widest = cr_qnet_widest(&q);
    } else {
        cr_ac_layout_init(&ac, obs_dim, meta_int(ck, "hidden"), A);
        t = ac.t, ntensors = CR_AC_NUM_TENSORS, num_params = ac.num_params;
        widest = ac.hidden;
    }

    cr_st_tensor obs;
    CHECK_OK(cr_st_find(in, "obs", &obs));
    CHECK_MSG(obs.ndim == 2 && obs.shape[1] == obs_dim && obs.shape[0] >= 1 &&
              (obs.dtype == CR_ST_F32 || obs.dtype == CR_ST_U8),
              "obs must be F32 or U8 (N, %d)", obs_dim);
    int N = (int)obs.shape[0];
    size_t n = (size_t)N, F = sizeof(float);
    cr_plan pl;
    cr_plan_init(&pl);
    cr_plan_add(&pl, "params", num_params * F);
    cr_plan_add(&pl, "x", n * (size_t)obs_dim * F);
    cr_plan_add(&pl, "out", n * (size_t)A * F);
    cr_plan_add(&pl, "value", n * F);
    cr_plan_add(&pl, "cache", cr_mlp_cache_floats(N, widest) * F);
    cr_plan_add(&pl, "action", n * sizeof(int32_t));
    cr_plan_add(&pl, "action64", n * sizeof(int64_t));
    cr_arena a;
    CHECK_OK(cr_arena_alloc(&a, &pl, CR_MEM_HOST));
    float *params = cr_arena_get(&a, B_PARAMS), *x = cr_arena_get(&a, B_X);
    float *out = cr_arena_get(&a, B_OUT), *value = cr_arena_get(&a, B_VALUE);
    int32_t *action = cr_arena_get(&a, B_ACTION);
    int64_t *action64 = cr_arena_get(&a, B_ACTION64);
    cr_mlp_cache cache = cr_mlp_cache_carve(cr_arena_get(&a, B_CACHE), N, widest);
    for (int i = 0; i < ntensors; i++)
        CHECK_OK(cr_st_read_f32(ck, t[i].name, params + t[i].offset, t[i].count));
    if (obs.dtype == CR_ST_U8) cr_cpu_scale_u8(obs.data, x, obs.count);
    else memcpy(x, obs.data, obs.nbytes);

    cudarl_ctx *ctx;
    CHECK_OK(cudarl_ctx_init(&ctx, CUDARL_DEVICE_CPU, 0));
    cr_mlp_view net = dqn ? cr_qnet_view(&q, params) : cr_ac_actor(&ac, params);
    cr_mlp_forward(ctx, &net, x, out, &cache, N);
    if (!dqn) {
        cr_mlp_view critic = cr_ac_critic(&ac, params);
        cr_mlp_forward(ctx, &critic, x, value, &cache, N);
    }
    ctx->ops->categorical_argmax(ctx, out, action, N, A);
    for (int i = 0; i < N; i++) action64[i] = action[i];

    cr_st_writer *w = malloc(sizeof *w);
    CHECK(w != NULL);
    cr_st_writer_init(w);
    cr_st_add_tensor(w, "action", CR_ST_I64, 1, (int64_t[]){N}, action64); /* widest first */
    cr_st_add_tensor(w, dqn ? "q_values" : "logits", CR_ST_F32, 2, (int64_t[]){N, A}, out);
    if (!dqn) cr_st_add_tensor(w, "value", CR_ST_F32, 2, (int64_t[]){N, 1}, value);
    CHECK_OK(cr_st_write_atomic(w, argv[3]));
    free(w);
    cudarl_ctx_free(ctx);
    cr_arena_free(&a);
    cr_st_close(in);
    cr_st_close(ck);
    return 0;
}
