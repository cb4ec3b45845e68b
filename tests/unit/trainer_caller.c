/* A program that links a trainer (cudarl_ppo_config_validate, in libcudarl.so's version node
 * CUDARL_<abi>_TRAIN): scripts/consumer-check.sh builds it against a full install and runs it
 * on the runtime-only library, where the dynamic linker must refuse to start it, naming the
 * node, rather than let it fail at its first call. On a full library it prints "ok". */
#include <stdio.h>

#include <cudarl.h>

int main(void) {
    cudarl_ppo_config cfg;
    if (cudarl_ppo_config_default(&cfg, NULL) != CUDARL_OK ||
        cudarl_ppo_config_validate(&cfg) != CUDARL_OK) {
        fprintf(stderr, "trainer_caller: %s\n", cudarl_last_error());
        return 1;
    }
    printf("ok\n");
    return 0;
}
