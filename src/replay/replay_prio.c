/* Prioritized replay, CPU twin: the sum tree, stratified proportional sampling, importance
 * weights with annealed beta, and priority updates (Schaul et al., "Prioritized Experience
 * Replay", ICLR 2016). The tree is one flat float array: tree[1] is the root, node i has children
 * 2i and 2i+1, leaf s is tree[L + s]; every inner node is the float sum left + right, a pure
 * function of the leaves, so any update order (or a GPU's level-by-level pass) gives the same
 * bits. */
#include <math.h>

#include "replay/replay.h"

void cr_replay_tree_set(cr_replay *rb, int64_t s, float v) {
    float *t = rb->tree;
    int64_t i = rb->leaves + s;
    t[i] = v;
    for (i /= 2; i >= 1; i /= 2) t[i] = t[2 * i] + t[2 * i + 1];
}

float cr_replay_beta(const cr_replay_spec *sp, int64_t step) {
    if (sp->beta_steps <= 0) return 1.0f;
    double f = (double)step / (double)sp->beta_steps;
    if (f > 1.0) f = 1.0;
    if (f < 0.0) f = 0.0;
    return (float)(sp->beta0 + (1.0 - sp->beta0) * f);
}

/* The leaf whose prefix-sum interval holds x; only ever steps into a subtree of nonzero sum, so
 * the leaf reached has a nonzero priority even when rounding puts x past the root's sum. */
static int64_t tree_find(const cr_replay *rb, float x) {
    const float *t = rb->tree;
    int64_t i = 1;
    while (i < rb->leaves) {
        float left = t[2 * i];
        if (x < left) i = 2 * i;
        else if (t[2 * i + 1] > 0.0f) {
            x -= left;
            i = 2 * i + 1;
        } else {
            i = 2 * i;
        }
    }
    return i - rb->leaves;
}

/* Draw b of a stratified batch (see cr_replay_sample_prioritized): its slot. */
static int64_t prio_draw(const cr_replay *rb, const cr_rng_stream *s, int b, float seg) {
    uint32_t w = cr_rng_stream_word(s, s->offset + (uint64_t)b);
    float u = (float)(w >> 8) * (1.0f / 16777216.0f);
    float t = (float)b + u;
    return tree_find(rb, t * seg);
}

cudarl_status cr_replay_sample_prioritized(const cr_replay *rb, cr_rng_stream *s, int batch,
                                           int64_t step, const cr_replay_batch *out) {
    if (!rb->tree)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "replay: prioritized sampling needs a buffer "
                       "planned with prioritized = 1");
    if (batch < 1)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "replay: batch size %d must be >= 1", batch);
    if (rb->state->num_valid == 0)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "replay: nothing to sample yet; start learning "
                       "after at least one full transition (--learning-starts)");
    const float *leaf = rb->tree + rb->leaves;
    float seg = rb->tree[1] / (float)batch;
    float min_leaf = INFINITY; /* pass 1: the batch's smallest priority, for the weights */
    for (int b = 0; out->weights && b < batch; b++) {
        float l = leaf[prio_draw(rb, s, b, seg)];
        if (l < min_leaf) min_leaf = l;
    }
    double beta = cr_replay_beta(&rb->spec, step);
    for (int b = 0; b < batch; b++) { /* pass 2: the same draws, gathered */
        int64_t slot = prio_draw(rb, s, b, seg);
        cr_replay_gather(rb, slot, b, out);
        if (out->weights)
            out->weights[b] = (float)pow((double)leaf[slot] / (double)min_leaf, -beta);
    }
    s->offset += (uint64_t)batch;
    return CUDARL_OK;
}

cudarl_status cr_replay_update_priorities(cr_replay *rb, const int64_t *indices,
                                          const float *td_errors, int n, float eps) {
    if (!rb->tree)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "replay: priority update on a buffer planned "
                       "without prioritized = 1");
    if (!(eps > 0.0f))
        return cr_fail(CUDARL_ERR_INVALID_ARG, "replay: priority eps %g must be > 0",
                       (double)eps);
    for (int i = 0; i < n; i++)
        if (!isfinite(td_errors[i]))
            return cr_fail(CUDARL_ERR_NUMERIC, "replay: td error %d of %d is %g; priorities "
                           "must be finite", i, n, (double)td_errors[i]);
    for (int i = 0; i < n; i++) {
        if (!cr_replay_slot_valid(rb, indices[i])) continue;
        float p = fabsf(td_errors[i]) + eps;
        cr_replay_tree_set(rb, indices[i], (float)pow((double)p, (double)rb->spec.alpha));
        if (p > rb->state->max_priority) rb->state->max_priority = p;
    }
    return CUDARL_OK;
}
