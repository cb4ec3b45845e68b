/* cudarl command-line tool (being written). */
#include <stdio.h>

#include "cudarl.h"

int main(void) {
    printf("cudarl %s\n", CUDARL_VERSION_STRING);
    return 0;
}
