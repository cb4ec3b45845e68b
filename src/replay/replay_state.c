/* Replay buffer checkpoints, the host side both twins share: the pieces a checkpoint holds, the
 * check of pieces read back from one, and the sum tree rebuilt from its leaves (replay.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay/replay.h"

int cr_replay_pieces(const cr_replay *rb, cr_replay_piece *pc) {
    const int64_t C = rb->spec.capacity, E = rb->spec.num_envs;
    const int f32 = rb->spec.dtype == CR_REPLAY_FLOAT32;
    const cr_replay_piece t[CR_REPLAY_PIECES] = {
        {"frames", f32 ? CR_REPLAY_ELEM_F32 : CR_REPLAY_ELEM_U8, C * rb->spec.frame_elems,
         (size_t)C * rb->frame_bytes, NULL},
        {"actions", CR_REPLAY_ELEM_I32, C, (size_t)C * sizeof(int32_t), NULL},
        {"rewards", CR_REPLAY_ELEM_F32, C, (size_t)C * sizeof(float), NULL},
        {"flags", CR_REPLAY_ELEM_U8, C, (size_t)C, NULL},
        {"heads", CR_REPLAY_ELEM_I64, E, (size_t)E * sizeof(int64_t), NULL},
        {"num_valid", CR_REPLAY_ELEM_I64, 1, sizeof(int64_t), NULL},
        {"max_priority", CR_REPLAY_ELEM_F32, 1, sizeof(float), NULL},
        {"leaves", CR_REPLAY_ELEM_F32, C, (size_t)C * sizeof(float), NULL},
    };
    const int n = rb->spec.prioritized ? 8 : 7;
    memcpy(pc, t, (size_t)n * sizeof *pc);
    return n;
}

void cr_replay_tree_build(float *tree, int64_t leaves) {
    for (int64_t i = leaves - 1; i >= 1; i--) tree[i] = tree[2 * i] + tree[2 * i + 1];
}

int64_t cr_replay_widest_window(const cr_replay *rb, const void *heads) {
    int64_t wmax = 1;
    for (int e = 0; e < rb->spec.num_envs; e++) {
        int64_t n;
        memcpy(&n, (const uint8_t *)heads + (size_t)e * sizeof n, sizeof n);
        int64_t lo = n <= rb->rows ? 0 : n - rb->rows + rb->spec.stack - 1;
        if (n - lo > wmax) wmax = n - lo;
    }
    return wmax;
}

/* Writes what is wrong into why and returns `piece`. */
static int bad(int piece, char *why, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
    return piece;
}

static int check_slots(const cr_replay *rb, const cr_replay_piece *pc, int64_t *heads,
                       int num_actions, char *why, size_t cap);

enum { P_FRAMES, P_ACTIONS, P_REWARDS, P_FLAGS, P_HEADS, P_NUM_VALID, P_MAX_PRIORITY, P_LEAVES };

int cr_replay_check_pieces(const cr_replay *rb, const cr_replay_piece *pc, int64_t steps,
                           int num_actions, char *why, size_t cap) {
    const int64_t *heads = pc[P_HEADS].data; /* the file's bytes may be unaligned: memcpy */
    for (int e = 0; e < rb->spec.num_envs; e++) {
        int64_t n;
        memcpy(&n, heads + e, sizeof n);
        if (n < steps || n > 2 * steps)
            return bad(P_HEADS, why, cap, "env %d has written %lld slots, expected %lld..%lld "
                       "(one per step of its %lld, and one more per truncation)", e,
                       (long long)n, (long long)steps, (long long)(2 * steps), (long long)steps);
    }
    int64_t *aligned_heads = malloc((size_t)rb->spec.num_envs * sizeof(int64_t));
    if (!aligned_heads) return bad(P_HEADS, why, cap, "out of host memory to check them");
    memcpy(aligned_heads, heads, (size_t)rb->spec.num_envs * sizeof(int64_t));
    int r = check_slots(rb, pc, aligned_heads, num_actions, why, cap);
    free(aligned_heads);
    return r;
}

/* The checks of cr_replay_check_pieces after the heads': every slot, with the heads (E) in
 * aligned host memory. */
static int check_slots(const cr_replay *rb, const cr_replay_piece *pc, int64_t *heads,
                       int num_actions, char *why, size_t cap) {
    const int64_t C = rb->spec.capacity;
    const uint8_t *flags = pc[P_FLAGS].data;
    for (int64_t s = 0; s < C; s++)
        if (flags[s] > (CR_REPLAY_TERMINATED | CR_REPLAY_TRUNCATED) && flags[s] != CR_REPLAY_FINAL)
            return bad(P_FLAGS, why, cap, "slot %lld has flags %u, expected 0 to 3 or 4 (final)",
                       (long long)s, flags[s]);
    for (int64_t s = 0; s < C; s++) {
        int32_t a;
        float r;
        memcpy(&a, (const int32_t *)pc[P_ACTIONS].data + s, sizeof a);
        memcpy(&r, (const float *)pc[P_REWARDS].data + s, sizeof r);
        if (a < 0 || a >= num_actions)
            return bad(P_ACTIONS, why, cap, "slot %lld has action %d, expected 0..%d",
                       (long long)s, a, num_actions - 1);
        if (!isfinite(r))
            return bad(P_REWARDS, why, cap, "slot %lld has reward %g, expected a finite number",
                       (long long)s, (double)r);
    }
    if (rb->spec.dtype == CR_REPLAY_FLOAT32)
        for (int64_t i = 0; i < pc[P_FRAMES].count; i++) {
            float x;
            memcpy(&x, (const float *)pc[P_FRAMES].data + i, sizeof x);
            if (!isfinite(x))
                return bad(P_FRAMES, why, cap, "element %lld (slot %lld) is %g, expected a "
                           "finite number", (long long)i, (long long)(i / rb->spec.frame_elems),
                           (double)x);
        }
    /* the validity rule over the pieces' heads and flags (cr_replay_slot_valid reads no more) */
    cr_replay view = *rb;
    view.heads = heads, view.flags = (uint8_t *)pc[P_FLAGS].data;
    int64_t valid = 0, num_valid;
    float maxp;
    memcpy(&num_valid, pc[P_NUM_VALID].data, sizeof num_valid);
    memcpy(&maxp, pc[P_MAX_PRIORITY].data, sizeof maxp);
    for (int64_t s = 0; s < C; s++) {
        int v = cr_replay_slot_valid(&view, s);
        valid += v;
        if (!rb->spec.prioritized) continue;
        float leaf;
        memcpy(&leaf, (const float *)pc[P_LEAVES].data + s, sizeof leaf);
        if (!isfinite(leaf) || leaf < 0 || (!v && leaf != 0))
            return bad(P_LEAVES, why, cap, "slot %lld's priority is %g, expected %s",
                       (long long)s, (double)leaf,
                       v ? "a finite number >= 0" : "0 (it holds no sampleable transition)");
    }
    if (num_valid != valid)
        return bad(P_NUM_VALID, why, cap, "it counts %lld sampleable transitions, and the heads "
                   "and flags give %lld", (long long)num_valid, (long long)valid);
    if (!isfinite(maxp) || maxp < 1.0f)
        return bad(P_MAX_PRIORITY, why, cap, "it is %g, expected a finite number >= 1",
                   (double)maxp);
    return -1;
}
