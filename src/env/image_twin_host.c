/* cr_image_twin_has (image_twin.h): known in every build, by id (the registry's defs are copies,
 * ids are unique in it). */
#include <string.h>

#include "env/env.h"
#include "env/image_twin.h"

int cr_image_twin_has(const char *id) {
    if (!id) return 0;
    if (!strcmp(id, cr_cartpole_pixels_def.id)) return 1;
    return cr_env_has_cuda_twin(id) && strncmp(id, "MinAtar/", 8) == 0;
}
