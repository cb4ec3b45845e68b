/* Arenas: a plan of named sizes, then one allocation carved by it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

void cr_plan_init(cr_plan *p) { memset(p, 0, sizeof *p); }

int cr_plan_add(cr_plan *p, const char *name, size_t bytes) {
    CUDARL_ASSERT(p->count < CR_ARENA_MAX_ITEMS);
    size_t off = (p->total + CR_ARENA_ALIGN - 1) / CR_ARENA_ALIGN * CR_ARENA_ALIGN;
    int i = p->count++;
    p->names[i] = name;
    p->offsets[i] = off;
    p->sizes[i] = bytes;
    p->total = off + bytes;
    return i;
}

cudarl_status cr_arena_alloc(cr_arena *a, const cr_plan *p, cr_mem_kind kind) {
    CUDARL_ASSERT(kind == CR_MEM_HOST); /* pinned and device arenas live in the CUDA backend */
    memset(a, 0, sizeof *a);
    a->plan = *p;
    a->kind = kind;
    size_t total = (p->total + CR_ARENA_ALIGN - 1) / CR_ARENA_ALIGN * CR_ARENA_ALIGN;
    if (total == 0) total = CR_ARENA_ALIGN;
    a->base = aligned_alloc(CR_ARENA_ALIGN, total);
    if (!a->base) {
        char b[32];
        return cr_fail(CUDARL_ERR_OUT_OF_MEMORY,
                       "cannot allocate %s of host memory; reduce --num-envs or --num-steps",
                       cudarl_format_bytes(total, b, sizeof b));
    }
    memset(a->base, 0, total);
    return CUDARL_OK;
}

void *cr_arena_get(const cr_arena *a, int item) {
    CUDARL_ASSERT(a->base && item >= 0 && item < a->plan.count);
    return a->base + a->plan.offsets[item];
}

void cr_arena_free(cr_arena *a) {
    if (a->base) free(a->base);
    a->base = NULL;
}

const char *cudarl_format_bytes(size_t bytes, char *buf, size_t cap) {
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (u == 0) snprintf(buf, cap, "%zu B", bytes);
    else snprintf(buf, cap, "%.2f %s", v, units[u]);
    return buf;
}

void cr_plan_print(const cr_plan *p, const char *title) {
    char b[32];
    CR_INFO("memory plan: %s, %s in %d buffers", title, cudarl_format_bytes(p->total, b, sizeof b),
            p->count);
    for (int i = 0; i < p->count; i++)
        CR_DEBUG("  %-24s %s", p->names[i], cudarl_format_bytes(p->sizes[i], b, sizeof b));
}
