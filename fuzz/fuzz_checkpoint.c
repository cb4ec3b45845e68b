/* libFuzzer: a checkpoint file through the policy runtime on the CPU (cudarl_policy_load, then
 * one act() of zeros when it loads). Any input must end in a status, never a crash. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_write("model.safetensors", data, size);
    cudarl_policy_options opt;
    cudarl_policy_options_default(&opt);
    opt.device = CUDARL_DEVICE_CPU;
    opt.max_batch = 2;
    cudarl_policy *p = NULL;
    if (cudarl_policy_load(path, &opt, &p) != CUDARL_OK) return 0;
    cudarl_policy_info info;
    cudarl_policy_get_info(p, &info);
    size_t bytes = (size_t)2 * (size_t)info.obs_dim * (info.obs_dtype == CUDARL_OBS_U8 ? 1 : 4);
    void *obs = calloc(1, bytes ? bytes : 1);
    int32_t actions[2];
    if (obs) (void)cudarl_policy_act(p, obs, info.obs_dtype, 2, actions, NULL, NULL);
    free(obs);
    cudarl_policy_free(p);
    return 0;
}
