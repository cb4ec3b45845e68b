/* libFuzzer: a checkpoint file through the config loader (cudarl_ppo_config_load, the
 * hyperparameters in its metadata), then the validator on what it read. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_write("model.safetensors", data, size);
    cudarl_ppo_config cfg;
    if (cudarl_ppo_config_load(path, &cfg) == CUDARL_OK) (void)cudarl_ppo_config_validate(&cfg);
    return 0;
}
