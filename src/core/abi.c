/* What a binding asks of the build it loaded: the version and the size of each public struct. */
#include <string.h>

#include "cudarl.h"

const char *cudarl_version(void) { return CUDARL_VERSION_STRING; }

size_t cudarl_sizeof(const char *type_name) {
#define CR_SIZE(T) {#T, sizeof(T)}
    static const struct {
        const char *name;
        size_t size;
    } sizes[] = {
        CR_SIZE(cudarl_env_def),         CR_SIZE(cudarl_ppo_config),
        CR_SIZE(cudarl_train_summary),   CR_SIZE(cudarl_dqn_config),
        CR_SIZE(cudarl_replay_request),  CR_SIZE(cudarl_onnx_options),
        CR_SIZE(cudarl_policy_options),  CR_SIZE(cudarl_policy_info),
        CR_SIZE(cudarl_latency_stats),   CR_SIZE(cudarl_vec_buffers),
        CR_SIZE(cudarl_video_options),   CR_SIZE(cudarl_video_summary),
    };
#undef CR_SIZE
    for (size_t i = 0; type_name && i < sizeof sizes / sizeof sizes[0]; i++)
        if (!strcmp(type_name, sizes[i].name)) return sizes[i].size;
    return 0;
}
