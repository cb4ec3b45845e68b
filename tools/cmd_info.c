/* cudarl info: the build's options, the devices it sees and the registered envs. */
#include <stdio.h>

#include "cmd.h"
#include "cudarl.h"

int cmd_info(int argc, char **argv) {
    if (argc > 0) {
        fprintf(stderr, "cudarl info: takes no arguments, got '%s'\n", argv[0]);
        return EXIT_USAGE;
    }
    char buf[4096];
    cudarl_info(buf, sizeof buf);
    fputs(buf, stdout);
    return 0;
}
