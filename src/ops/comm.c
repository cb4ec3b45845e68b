/* The communicator's launch detection, shared by both builds (ops/comm.h). */
#include <stdlib.h>

#include "ops/comm.h"

int cr_comm_launched_size(void) {
    static const char *const sizes[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(sizes[i]);
        if (v && *v) {
            long n = strtol(v, NULL, 10);
            return n > 0 && n < 1 << 20 ? (int)n : 1;
        }
    }
    return getenv("PMIX_RANK") || getenv("PMI_RANK") ? 1 : 0; /* a rank, its size unnamed */
}

cudarl_status cudarl_dist_init(void) { return cr_comm_init(); }
void cudarl_dist_finalize(void) { cr_comm_finalize(); }
int cudarl_dist_rank(void) { return cr_comm_rank(); }
int cudarl_dist_size(void) { return cr_comm_size(); }
void cudarl_dist_abort(int code) { cr_comm_abort(code); }
