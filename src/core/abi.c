/* What a binding asks of the build it loaded (the version, the size of each public struct), and
 * the checks of the struct_size of the structs a caller fills (core/abi.h). */
#include <stdio.h>
#include <string.h>

#include "core/abi.h"
#include "core/core.h"

const char *cudarl_version(void) { return CUDARL_VERSION_STRING; }

int cudarl_abi_version(void) { return CUDARL_ABI_VERSION; }

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
        CR_SIZE(cudarl_camera),          CR_SIZE(cudarl_frames_options),
    };
#undef CR_SIZE
    for (size_t i = 0; type_name && i < sizeof sizes / sizeof sizes[0]; i++)
        if (!strcmp(type_name, sizes[i].name)) return sizes[i].size;
    return 0;
}

/* ---- struct_size ------------------------------------------------------------------------ */

/* Each struct's history: none yet, as struct_size came with ABI version 0's first release.
 * Adding field f at the end of T: append CR_SIZE_BEFORE(T, f) to T's `older`. */
const cr_struct_abi cr_abi_env_def = {"cudarl_env_def", NULL, sizeof(cudarl_env_def), {0}};
const cr_struct_abi cr_abi_ppo_config = {"cudarl_ppo_config", "cudarl_ppo_config_default()",
                                         sizeof(cudarl_ppo_config), {0}};
const cr_struct_abi cr_abi_dqn_config = {"cudarl_dqn_config", "cudarl_dqn_config_default()",
                                         sizeof(cudarl_dqn_config), {0}};
const cr_struct_abi cr_abi_replay_request = {"cudarl_replay_request", NULL,
                                             sizeof(cudarl_replay_request), {0}};
const cr_struct_abi cr_abi_onnx_options = {"cudarl_onnx_options",
                                           "cudarl_onnx_options_default()",
                                           sizeof(cudarl_onnx_options), {0}};
const cr_struct_abi cr_abi_policy_options = {"cudarl_policy_options",
                                             "cudarl_policy_options_default()",
                                             sizeof(cudarl_policy_options), {0}};
const cr_struct_abi cr_abi_video_options = {"cudarl_video_options",
                                            "cudarl_video_options_default()",
                                            sizeof(cudarl_video_options), {0}};
const cr_struct_abi cr_abi_camera = {"cudarl_camera", "cudarl_camera_default()",
                                     sizeof(cudarl_camera), {0}};
const cr_struct_abi cr_abi_frames_options = {"cudarl_frames_options",
                                             "cudarl_frames_options_default()",
                                             sizeof(cudarl_frames_options), {0}};
const cr_struct_abi *const cr_struct_abis[] = {
    &cr_abi_env_def,       &cr_abi_ppo_config,     &cr_abi_dqn_config,
    &cr_abi_replay_request, &cr_abi_onnx_options,  &cr_abi_policy_options,
    &cr_abi_video_options, &cr_abi_camera,         &cr_abi_frames_options,
    NULL,
};

/* How a caller sets struct_size, for the messages. */
static void fix_text(const cr_struct_abi *abi, char *buf, size_t cap) {
    if (abi->fill)
        snprintf(buf, cap, "fill the struct with %s, which sets it to sizeof(%s)", abi->fill,
                 abi->type);
    else
        snprintf(buf, cap, "set it to sizeof(%s) (.struct_size = sizeof(%s) in its initializer)",
                 abi->type, abi->type);
}

cudarl_status cr_struct_check(const cr_struct_abi *abi, size_t struct_size, const char *where) {
    if (struct_size == abi->size) return CUDARL_OK;
    for (int i = 0; i < CR_STRUCT_OLDER_MAX && abi->older[i]; i++)
        if (struct_size == abi->older[i]) return CUDARL_OK;
    char fix[192];
    fix_text(abi, fix, sizeof fix);
    if (struct_size == 0)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "%s: %s.struct_size is 0 (unset); %s", where,
                       abi->type, fix);
    if (struct_size > abi->size)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "%s: %s.struct_size is %zu bytes, larger than the "
                       "%zu of this libcudarl %s: the program was compiled against a newer "
                       "cudarl.h; rebuild it against this library's header, or run it with the "
                       "libcudarl it was built for", where, abi->type, struct_size, abi->size,
                       CUDARL_VERSION_STRING);
    return cr_fail(CUDARL_ERR_INVALID_ARG, "%s: %s.struct_size is %zu bytes, a size no cudarl.h of "
                   "ABI version %d gave it (this library's is %zu); %s", where, abi->type,
                   struct_size, CUDARL_ABI_VERSION, abi->size, fix);
}

cudarl_status cr_struct_read(const cr_struct_abi *abi, void *full, const void *src,
                             const char *where) {
    CR_REQUIRE(src, "%s: the %s is NULL; pass one", where, abi->type);
    size_t given;
    memcpy(&given, src, sizeof given);
    CR_TRY(cr_struct_check(abi, given, where));
    memcpy(full, src, given);
    memcpy(full, &abi->size, sizeof abi->size);
    return CUDARL_OK;
}

void cr_struct_write(void *dst, const void *full, size_t struct_size) {
    memcpy(dst, full, struct_size);
    memcpy(dst, &struct_size, sizeof struct_size);
}
