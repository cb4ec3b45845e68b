/* Replay buffer, CPU twin: memory plan, insert (scatter), validity, uniform sampling (gather).
 * The storage, padding and validity conventions are documented in replay.h. */
#include <math.h>
#include <string.h>

#include "replay/replay.h"

/* ---- memory plan ------------------------------------------------------------------------- */

static size_t dtype_bytes(cr_replay_dtype d) { return d == CR_REPLAY_FLOAT32 ? 4 : 1; }

static int64_t pow2_at_least(int64_t n) {
    int64_t p = 1;
    while (p < n) p *= 2;
    return p;
}

int64_t cr_replay_min_rows(int stack) { return (int64_t)stack + 3; }

cudarl_status cr_replay_spec_check(const cr_replay_spec *sp) {
    if (sp->num_envs < 1)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "replay: num_envs is %d, must be >= 1",
                       sp->num_envs);
    if (sp->stack < 1 || sp->stack > CR_REPLAY_MAX_STACK)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "replay: frame stack is %d, must be in [1, %d]",
                       sp->stack, CR_REPLAY_MAX_STACK);
    if (sp->frame_elems < 1 || sp->frame_elems > ((int64_t)1 << 32))
        return cr_fail(CUDARL_ERR_INVALID_ARG, "replay: observation has %lld elements, must be "
                       "in [1, 2^32]", (long long)sp->frame_elems);
    if (sp->insert_stride != 0 &&
        (sp->insert_stride < sp->frame_elems || sp->insert_stride > ((int64_t)1 << 36)))
        return cr_fail(CUDARL_ERR_INVALID_ARG, "replay: insert stride %lld must be 0 (packed) or "
                       "between the frame's %lld elements and 2^36", (long long)sp->insert_stride,
                       (long long)sp->frame_elems);
    if (sp->dtype != CR_REPLAY_UINT8 && sp->dtype != CR_REPLAY_FLOAT32)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "replay: dtype %d is neither uint8 nor float32",
                       (int)sp->dtype);
    int64_t min_rows = cr_replay_min_rows(sp->stack);
    if (sp->capacity % sp->num_envs != 0 || sp->capacity / sp->num_envs < min_rows ||
        sp->capacity > ((int64_t)1 << 40))
        return cr_fail(CUDARL_ERR_INVALID_ARG, "replay: buffer size %lld must be a multiple of "
                       "num_envs (%d), at least %lld per env (stack + 3) and at most 2^40",
                       (long long)sp->capacity, sp->num_envs, (long long)min_rows);
    if (sp->prioritized && !(sp->alpha >= 0.0f && sp->beta0 >= 0.0f && sp->beta0 <= 1.0f))
        return cr_fail(CUDARL_ERR_INVALID_ARG, "replay: prioritized alpha %g must be >= 0 and "
                       "beta0 %g in [0, 1]", (double)sp->alpha, (double)sp->beta0);
    return CUDARL_OK;
}

size_t cr_replay_insert_stride_bytes(const cr_replay_spec *sp) {
    int64_t s = sp->insert_stride ? sp->insert_stride : sp->frame_elems;
    return (size_t)s * dtype_bytes(sp->dtype);
}

size_t cr_replay_bytes_per_transition(const cr_replay_spec *sp) {
    size_t frame = (size_t)sp->frame_elems * dtype_bytes(sp->dtype);
    return frame + sizeof(int32_t) + sizeof(float) + 1 + (sp->prioritized ? 2 * sizeof(float) : 0);
}

cudarl_status cr_replay_plan(const cr_replay_spec *sp, cr_plan *plan) {
    CR_TRY(cr_replay_spec_check(sp));
    size_t C = (size_t)sp->capacity;
    cr_plan_add(plan, "replay.frames", C * (size_t)sp->frame_elems * dtype_bytes(sp->dtype));
    cr_plan_add(plan, "replay.actions", C * sizeof(int32_t));
    cr_plan_add(plan, "replay.rewards", C * sizeof(float));
    cr_plan_add(plan, "replay.flags", C);
    cr_plan_add(plan, "replay.heads", (size_t)sp->num_envs * sizeof(int64_t));
    cr_plan_add(plan, "replay.state", sizeof(cr_replay_state));
    if (sp->prioritized)
        cr_plan_add(plan, "replay.tree", 2 * (size_t)pow2_at_least(sp->capacity) * sizeof(float));
    return CUDARL_OK;
}

size_t cr_replay_plan_bytes(const cr_replay_spec *sp) {
    cr_plan plan;
    cr_plan_init(&plan);
    if (cr_replay_plan(sp, &plan) != CUDARL_OK) return 0;
    return (plan.total + CR_ARENA_ALIGN - 1) / CR_ARENA_ALIGN * CR_ARENA_ALIGN;
}

/* Plan bytes of `sp` with `rows` slots per env (SIZE_MAX if that spec is invalid). */
static size_t bytes_with_rows(const cr_replay_spec *sp, int64_t rows) {
    cr_replay_spec t = *sp;
    t.capacity = rows * sp->num_envs;
    size_t b = cr_replay_plan_bytes(&t);
    return b ? b : SIZE_MAX;
}

int64_t cr_replay_max_capacity(const cr_replay_spec *sp, size_t budget) {
    int64_t lo = cr_replay_min_rows(sp->stack);
    if (sp->num_envs < 1 || bytes_with_rows(sp, lo) > budget) return 0;
    size_t row_bytes = cr_replay_bytes_per_transition(sp) * (size_t)sp->num_envs;
    int64_t hi = (int64_t)(budget / row_bytes) + 1; /* bytes(rows) >= rows * row_bytes */
    if (hi > ((int64_t)1 << 40) / sp->num_envs) hi = ((int64_t)1 << 40) / sp->num_envs;
    while (lo < hi) { /* bytes grow with rows: largest rows in [lo, hi] that fit */
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (bytes_with_rows(sp, mid) <= budget) lo = mid;
        else hi = mid - 1;
    }
    return lo * sp->num_envs;
}

/* ---- lifetime ---------------------------------------------------------------------------- */

void cr_replay_init(cr_replay *rb, const cr_replay_spec *sp, const cr_arena *arena,
                    int first_item) {
    CUDARL_ASSERT(cr_replay_spec_check(sp) == CUDARL_OK);
    memset(rb, 0, sizeof *rb);
    rb->spec = *sp;
    rb->rows = sp->capacity / sp->num_envs;
    rb->leaves = pow2_at_least(sp->capacity);
    rb->frame_bytes = (size_t)sp->frame_elems * dtype_bytes(sp->dtype);
    int i = first_item;
    rb->frames = cr_arena_get(arena, i++);
    rb->actions = cr_arena_get(arena, i++);
    rb->rewards = cr_arena_get(arena, i++);
    rb->flags = cr_arena_get(arena, i++);
    rb->heads = cr_arena_get(arena, i++);
    rb->state = cr_arena_get(arena, i++);
    if (sp->prioritized) {
        rb->tree = cr_arena_get(arena, i++);
        memset(rb->tree, 0, 2 * (size_t)rb->leaves * sizeof(float));
    }
    memset(rb->heads, 0, (size_t)sp->num_envs * sizeof(int64_t));
    memset(rb->flags, 0, (size_t)sp->capacity);
    rb->state->num_valid = 0;
    rb->state->max_priority = 1.0f;
}

/* ---- positions and validity -------------------------------------------------------------- */

/* Slot of env e's absolute position p. */
static int64_t slot_of(const cr_replay *rb, int e, int64_t p) {
    return (int64_t)e * rb->rows + p % rb->rows;
}

/* Lowest sampleable position when env has written n slots (see replay.h). */
static int64_t window_lo(const cr_replay *rb, int64_t n) {
    return n <= rb->rows ? 0 : n - rb->rows + rb->spec.stack - 1;
}

/* The validity rule of replay.h for env e's position p with n slots written. */
static int valid_at(const cr_replay *rb, int e, int64_t p, int64_t n) {
    if (p < window_lo(rb, n) || p > n - 1) return 0;
    uint8_t f = rb->flags[slot_of(rb, e, p)];
    if (f & CR_REPLAY_FINAL) return 0;
    return p <= n - 2 || (f & CR_REPLAY_TERMINATED);
}

int cr_replay_slot_valid(const cr_replay *rb, int64_t s) {
    if (s < 0 || s >= rb->spec.capacity) return 0;
    int e = (int)(s / rb->rows);
    int64_t q = s % rb->rows, n = rb->heads[e];
    if (q > n - 1) return 0; /* not written yet */
    int64_t p = q + (n - 1 - q) / rb->rows * rb->rows; /* newest position held in slot s */
    return valid_at(rb, e, p, n);
}

int64_t cr_replay_num_sampleable(const cr_replay *rb) { return rb->state->num_valid; }

/* Slot s enters (on) or leaves the sampleable set: count it, and give it max priority. */
static void set_valid(cr_replay *rb, int64_t s, int on) {
    rb->state->num_valid += on ? 1 : -1;
    if (!rb->tree) return;
    float leaf = (float)pow((double)rb->state->max_priority, (double)rb->spec.alpha);
    cr_replay_tree_set(rb, s, on ? leaf : 0.0f);
}

/* ---- insert ------------------------------------------------------------------------------ */

static void write_slot(cr_replay *rb, int64_t s, const void *frame, int32_t action,
                       float reward, uint8_t flags) {
    memcpy(rb->frames + (size_t)s * rb->frame_bytes, frame, rb->frame_bytes);
    rb->actions[s] = action;
    rb->rewards[s] = reward;
    rb->flags[s] = flags;
}

/* Env e's step: retire positions leaving the window (before their slots are overwritten), write
 * the transition (and the FINAL slot of a truncation), then admit positions that became valid. */
static void insert_env(cr_replay *rb, int e, const void *obs, int32_t action, float reward,
                       uint8_t flags, const void *final_obs) {
    int end = (flags & CR_REPLAY_TRUNCATED) && !(flags & CR_REPLAY_TERMINATED);
    CUDARL_ASSERT(!end || final_obs);
    int64_t old = rb->heads[e], n = old + 1 + end;
    int64_t lo_new = window_lo(rb, n);
    for (int64_t p = window_lo(rb, old); p < lo_new && p < old; p++)
        if (valid_at(rb, e, p, old)) set_valid(rb, slot_of(rb, e, p), 0);
    write_slot(rb, slot_of(rb, e, old), obs, action, reward, flags);
    if (end) write_slot(rb, slot_of(rb, e, old + 1), final_obs, 0, 0.0f, CR_REPLAY_FINAL);
    rb->heads[e] = n;
    for (int64_t p = old - 1 > lo_new ? old - 1 : lo_new; p < n; p++) {
        int was = p < old && valid_at(rb, e, p, old); /* slot p untouched by the writes: R > 3 */
        int now = valid_at(rb, e, p, n);
        if (now != was) set_valid(rb, slot_of(rb, e, p), now);
    }
}

void cr_replay_insert(cr_replay *rb, const void *obs, const int32_t *actions,
                      const float *rewards, const uint8_t *terminated, const uint8_t *truncated,
                      const void *final_obs) {
    const uint8_t *o = obs, *fo = final_obs;
    size_t stride = cr_replay_insert_stride_bytes(&rb->spec);
    for (int e = 0; e < rb->spec.num_envs; e++) {
        uint8_t f = (uint8_t)((terminated[e] ? CR_REPLAY_TERMINATED : 0) |
                              (truncated[e] ? CR_REPLAY_TRUNCATED : 0));
        insert_env(rb, e, o + (size_t)e * stride, actions[e], rewards[e], f,
                   fo ? fo + (size_t)e * stride : NULL);
    }
}

/* ---- gather ------------------------------------------------------------------------------ */

/* Slot q of env e starts an episode: q == 0, or slot q-1 ended one (terminated or FINAL). */
static int episode_first(const cr_replay *rb, int e, int64_t q) {
    return q == 0 || (rb->flags[slot_of(rb, e, q - 1)] & (CR_REPLAY_TERMINATED | CR_REPLAY_FINAL));
}

/* The stacked observation (K, frame) of env e's position p into dst, oldest frame first; frames
 * before the episode's first repeat it. */
static void gather_stack(const cr_replay *rb, int e, int64_t p, uint8_t *dst) {
    int K = rb->spec.stack;
    int64_t q = p;
    for (int k = K - 1; k >= 0; k--) {
        memcpy(dst + (size_t)k * rb->frame_bytes,
               rb->frames + (size_t)slot_of(rb, e, q) * rb->frame_bytes, rb->frame_bytes);
        if (k > 0 && !episode_first(rb, e, q)) q--;
    }
}

void cr_replay_gather(const cr_replay *rb, int64_t s, int b, const cr_replay_batch *out) {
    int e = (int)(s / rb->rows);
    int64_t q = s % rb->rows, n = rb->heads[e];
    int64_t p = q + (n - 1 - q) / rb->rows * rb->rows;
    uint8_t f = rb->flags[s];
    size_t obs_bytes = (size_t)rb->spec.stack * rb->frame_bytes;
    if (out->obs) gather_stack(rb, e, p, (uint8_t *)out->obs + (size_t)b * obs_bytes);
    if (out->next_obs) {
        uint8_t *dst = (uint8_t *)out->next_obs + (size_t)b * obs_bytes;
        if (f & CR_REPLAY_TERMINATED) memset(dst, 0, obs_bytes);
        else gather_stack(rb, e, p + 1, dst);
    }
    if (out->window) { /* obs's stack, then frame p + 1: next_obs's stack shares K - 1 frames */
        uint8_t *dst = (uint8_t *)out->window + (size_t)b * (obs_bytes + rb->frame_bytes);
        gather_stack(rb, e, p, dst);
        if (f & CR_REPLAY_TERMINATED) memset(dst + obs_bytes, 0, rb->frame_bytes);
        else memcpy(dst + obs_bytes, rb->frames + (size_t)slot_of(rb, e, p + 1) * rb->frame_bytes,
                    rb->frame_bytes);
    }
    if (out->actions) out->actions[b] = rb->actions[s];
    if (out->rewards) out->rewards[b] = rb->rewards[s];
    if (out->terminated) out->terminated[b] = (f & CR_REPLAY_TERMINATED) ? 1 : 0;
    if (out->truncated) out->truncated[b] = (f & CR_REPLAY_TRUNCATED) ? 1 : 0;
    if (out->indices) out->indices[b] = s;
}

/* ---- uniform sampling -------------------------------------------------------------------- */

/* High 64 bits of the 128-bit product a * b. */
static uint64_t mulhi64(uint64_t a, uint64_t b) {
    uint64_t a0 = (uint32_t)a, a1 = a >> 32, b0 = (uint32_t)b, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (uint32_t)p01 + (uint32_t)p10;
    return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

/* Attempt k of draw b (see cr_replay_sample_uniform): the slot, or -1 if rejected. */
static int64_t uniform_attempt(const cr_replay *rb, const cr_rng_stream *s, int B, int b,
                               int64_t k, int64_t wmax) {
    uint64_t w = s->offset + 2 * ((uint64_t)k * (uint64_t)B + (uint64_t)b);
    uint64_t x = (uint64_t)cr_rng_stream_word(s, w) << 32 | cr_rng_stream_word(s, w + 1);
    uint64_t idx = mulhi64(x, (uint64_t)rb->spec.num_envs * (uint64_t)wmax);
    int e = (int)(idx / (uint64_t)wmax);
    int64_t n = rb->heads[e], p = window_lo(rb, n) + (int64_t)(idx % (uint64_t)wmax);
    return valid_at(rb, e, p, n) ? slot_of(rb, e, p) : -1;
}

cudarl_status cr_replay_sample_uniform(const cr_replay *rb, cr_rng_stream *s, int batch,
                                       const cr_replay_batch *out) {
    if (batch < 1)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "replay: batch size %d must be >= 1", batch);
    if (rb->state->num_valid == 0)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "replay: nothing to sample yet; start learning "
                       "after at least one full transition (--learning-starts)");
    int64_t wmax = 1, kmax = 0;
    for (int e = 0; e < rb->spec.num_envs; e++) {
        int64_t w = rb->heads[e] - window_lo(rb, rb->heads[e]);
        if (w > wmax) wmax = w;
    }
    for (int b = 0; b < batch; b++) {
        int64_t k = 0, slot;
        while ((slot = uniform_attempt(rb, s, batch, b, k, wmax)) < 0) k++;
        if (k > kmax) kmax = k;
        cr_replay_gather(rb, slot, b, out);
        if (out->weights) out->weights[b] = 1.0f;
    }
    s->offset += 2 * (uint64_t)batch * (uint64_t)(kmax + 1);
    return CUDARL_OK;
}
