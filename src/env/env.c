/* The registry of built-in environments. */
#include <string.h>

#include "env/cartpole.h"
#include "env/env.h"

static const cr_env_info env_table[] = {
    {"CartPole-v1", CR_CARTPOLE_OBS_DIM, CR_CARTPOLE_NUM_ACTIONS, CR_CARTPOLE_MAX_STEPS, 475.0},
};

static const char *const env_names[] = {"CartPole-v1", NULL};

const cr_env_info *cr_env_find(const char *id) {
    for (size_t i = 0; i < sizeof env_table / sizeof env_table[0]; i++)
        if (!strcmp(env_table[i].id, id)) return &env_table[i];
    return NULL;
}

const char *const *cudarl_env_names(void) { return env_names; }
