/* Built instead of the tasks when the build has no MuJoCo (cmake/mujoco.cmake): no defs, and
 * their ids, which the registry refuses saying how to build them in (cr_env_check_built). */
#include <string.h>

#include "env/mujoco/mujoco_env.h"

const cudarl_env_def *const cr_mujoco_defs[] = {NULL};

int cr_mujoco_left_out(const char *id) {
    static const char *const ids[CR_MUJOCO_TASKS] = {CR_MUJOCO_IDS};
    for (int i = 0; id && i < CR_MUJOCO_TASKS; i++)
        if (!strcmp(ids[i], id)) return 1;
    return 0;
}
