/* The communicator's launch detection, shared by both builds (ops/comm.h). */
#include <stdio.h>
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

void cr_comm_mean_f32(float *buf, float *scratch, size_t n) {
    const int R = cr_comm_size();
    cr_comm_allgather(buf, scratch, n * sizeof(float));
    const float inv = 1.0f / (float)R;
    for (size_t i = 0; i < n; i++) {
        float s = scratch[i];
        for (int r = 1; r < R; r++) s += scratch[(size_t)r * n + i];
        buf[i] = s * inv;
    }
}

uint64_t cr_comm_fnv1a(uint64_t h, const void *p, size_t bytes) {
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = 0; i < bytes; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

void *cr_comm_host_alloc(size_t bytes, const char *what) {
    size_t n = (bytes + CR_ARENA_ALIGN - 1) / CR_ARENA_ALIGN * CR_ARENA_ALIGN;
    void *m = aligned_alloc(CR_ARENA_ALIGN, n ? n : CR_ARENA_ALIGN);
    if (!m) {
        fprintf(stderr, "cudarl: out of host memory for %zu bytes (%s); ending the job\n", bytes,
                what);
        cr_comm_abort(1);
    }
    return m;
}

cudarl_status cudarl_dist_init(void) { return cr_comm_init(); }
void cudarl_dist_finalize(void) { cr_comm_finalize(); }
int cudarl_dist_rank(void) { return cr_comm_rank(); }
int cudarl_dist_size(void) { return cr_comm_size(); }
void cudarl_dist_abort(int code) { cr_comm_abort(code); }
