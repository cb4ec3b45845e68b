/* PPO's --profile (ppo_internal.h): time per phase with the device synchronised at each phase
 * boundary, host syncs, the CPU envs' waits; the MLP's achieved FLOP/s and GB/s, or a conv
 * policy's rollout split into env steps, forwards and the rest and its achieved FLOP/s, against
 * the device's peaks for the precision in use. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/ppo/ppo_internal.h"
#include "core/nvtx.h"

/* ---- a conv policy's rollout parts -------------------------------------------------------- */

cudarl_status cr_ppo_parts_init(cr_ppo *p) {
    cr_ppo_parts *m = &p->parts;
    memset(m, 0, sizeof *m);
    if (!p->cfg.profile || !p->conv) return CUDARL_OK;
    /* a rollout's marks: at most 4 per group and step (ppo_pool.c: the forward and its end,
     * V(final obs) and its end; ppo_conv.c's twin: forward, env, final forward, end) over T + 1
     * steps, and the last values' two */
    const int cap = 4 * (p->T + 1) * cr_ppo_pool_group_count(p) + 8;
    m->part = calloc((size_t)cap, sizeof *m->part);
    if (!m->part) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory for --profile");
    void *first = NULL;
    CR_TRY(cr_ctx_timing_event_create(p->ctx, &first));
    if (first) { /* a device: timing events */
        m->ev = calloc((size_t)cap, sizeof *m->ev);
        if (!m->ev) {
            p->ctx->ops->event_free(p->ctx, first);
            return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory for --profile");
        }
        m->ev[0] = first;
        m->cap = cap; /* cr_ppo_parts_free frees the events made, if one below fails */
        for (int i = 1; i < cap; i++) CR_TRY(cr_ctx_timing_event_create(p->ctx, &m->ev[i]));
    } else {
        m->at = calloc((size_t)cap, sizeof *m->at);
        if (!m->at) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory for --profile");
    }
    m->cap = cap;
    return CUDARL_OK;
}

void cr_ppo_parts_free(cr_ppo *p) {
    cr_ppo_parts *m = &p->parts;
    if (m->ev)
        for (int i = 0; i < m->cap; i++)
            if (m->ev[i]) p->ctx->ops->event_free(p->ctx, m->ev[i]);
    free(m->ev), free(m->at), free(m->part);
    memset(m, 0, sizeof *m);
}

/* Adds the closed parts (marks 0 .. n - 2, each ended by the next) into prof.part_seconds; the
 * device has passed every mark (the caller synchronised). */
static void parts_collect(cr_ppo *p) {
    cr_ppo_parts *m = &p->parts;
    for (int i = 0; i + 1 < m->n; i++) {
        if (m->part[i] == CR_PART_NONE) continue;
        p->prof.part_seconds[m->part[i]] +=
            m->ev ? 1e-3 * cr_ctx_event_elapsed_ms(p->ctx, m->ev[i], m->ev[i + 1])
                  : m->at[i + 1] - m->at[i];
    }
}

void cr_ppo_part_mark(cr_ppo *p, int part) {
    cr_ppo_parts *m = &p->parts;
    if (m->n == m->cap) { /* more marks than planned: read them (a sync), keep the open one */
        p->ctx->ops->sync(p->ctx);
        parts_collect(p);
        if (m->ev) {
            void *t = m->ev[0];
            m->ev[0] = m->ev[m->n - 1], m->ev[m->n - 1] = t;
        } else {
            m->at[0] = m->at[m->n - 1];
        }
        m->part[0] = m->part[m->n - 1];
        m->n = 1;
    }
    m->part[m->n] = part;
    if (m->ev) p->ctx->ops->event_record(p->ctx, m->ev[m->n]);
    else m->at[m->n] = cr_time_now();
    m->n++;
}

/* ---- phases --------------------------------------------------------------------------------- */

/* Ends the current phase: with --profile, waits for the device and charges the time to it (and,
 * at the rollout's end, a conv policy's marks to their parts). */
void cr_ppo_phase_end(cr_ppo *p, int phase) {
    CR_RANGE_POP();
    if (!p->cfg.profile) return;
    double queued = cr_time_now();
    p->ctx->ops->sync(p->ctx);
    double now = cr_time_now();
    p->prof.sync_wait[phase] += now - queued;
    p->prof.seconds[phase] += now - p->prof.mark;
    p->prof.mark = now;
    if (phase == CR_PHASE_ROLLOUT && p->parts.cap) {
        parts_collect(p);
        p->parts.n = 0;
    }
}

/* Model FLOPs of one row through an MLP forward (fwd) and backward (bwd, weights + inputs). */
static void mlp_flops(const cr_ac_layout *l, int out, double *fwd, double *bwd) {
    double D = l->obs_dim, H = l->hidden, O = out;
    *fwd = 2 * (D * H + H * H + H * O);
    *bwd = *fwd + 2 * (H * H + H * O); /* dW for every layer, dX for all but the first */
}

/* Bytes per row that the layer ops of one MLP pass move through device memory (fp32), as the
 * backend runs them: forward, a GEMM (read x, write y) then a bias/tanh pass (read and write
 * y); backward, per layer the dW GEMM (read dy, x), the bias sum (read dy), the dX GEMM (read
 * dy, write dx; not for the first layer) and the tanh derivative (read y, dy; write dx). */
static void mlp_bytes(const cr_ac_layout *l, int out, double *fwd, double *bwd) {
    double d[4] = {l->obs_dim, l->hidden, l->hidden, out};
    *fwd = *bwd = 0;
    for (int k = 0; k < 3; k++) {
        *fwd += 4 * (d[k] + 3 * d[k + 1]);
        *bwd += 4 * (2 * d[k + 1] + d[k]);
        if (k > 0) *bwd += 4 * (d[k + 1] + d[k]) + 4 * 3 * d[k];
    }
}

/* The device's peaks for products in `precision` (zeros where the backend has none: the CPU). */
static cr_peaks device_peaks(const cr_ppo *p, cudarl_precision precision) {
    cr_peaks k;
    memset(&k, 0, sizeof k);
    if (p->ctx->ops->peaks) p->ctx->ops->peaks(p->ctx, precision, &k);
    return k;
}

/* " (X% of the <precision> peak ...)" for an achieved FLOP/s, or why there is no peak. */
static void print_peak(const cr_ppo *p, double achieved, cudarl_precision precision) {
    const cr_peaks k = device_peaks(p, precision);
    const char *name = cudarl_precision_name(precision);
    if (k.flops > 0)
        fprintf(stderr, " (%.1f%% of the %s peak of the %s, %.1f TFLOP/s: sm_%d%d, %d SMs x %d "
                "FLOP/clock x %.0f MHz)", 100 * achieved / k.flops, name, k.units, k.flops / 1e12,
                k.sm_major, k.sm_minor, k.sms, k.flops_per_sm_clock, k.clock_hz / 1e6);
    else if (p->ctx->ops->peaks)
        fprintf(stderr, " (no %s peak known for sm_%d%d)", name, k.sm_major, k.sm_minor);
    else
        fprintf(stderr, " (no peak known on the %s backend)", p->ctx->ops->name);
}

/* The envs on CPU threads: their waits for the device and the device's for them. */
static void print_pool(const cr_ppo *p, double it) {
    const cr_ppo_profile *f = &p->prof;
    /* the wait counters run from the loop's start: pro-rate them to an iteration */
    int threads = cr_ppo_pool_threads(p), groups = cr_ppo_pool_groups(p);
    double env = f->env_wait / it, idle = f->gpu_wait_cpu / it;
    double thr = cr_ppo_pool_thread_wait(p) / threads / it;
    double roll = f->seconds[CR_PHASE_ROLLOUT] / it;
    fprintf(stderr, "  envs on %d CPU thread%s in %d group%s, per iteration:\n", threads,
            threads == 1 ? "" : "s", groups, groups == 1 ? "" : "s");
    fprintf(stderr, "    host waiting for env groups   %9.3f ms\n", 1e3 * env);
    fprintf(stderr, "    device idle, waiting for envs %9.3f ms (%.1f%% of the rollout; a lower bound: counted\n      only when its stream had run dry as the host began to wait)\n",
            1e3 * idle, roll > 0 ? 100 * idle / roll : 0);
    fprintf(stderr, "    env threads waiting for the device %6.3f ms each (%.1f%% of the "
            "rollout)\n", 1e3 * thr, roll > 0 ? 100 * thr / roll : 0);
    if (p->fused_pool && f->gpu_busy > 0) {
        /* the group steps' device time; the update phase is device work throughout */
        double busy = f->gpu_busy / it, upd = f->seconds[CR_PHASE_UPDATE] / it;
        double iter = 0;
        for (int i = 0; i < CR_PHASE_COUNT; i++) iter += f->seconds[i] / it;
        fprintf(stderr, "    device busy in the rollout     %9.3f ms (%.1f%% of the rollout); "
                "over the iteration ~%.1f%% (rollout kernels + update phase)\n", 1e3 * busy,
                roll > 0 ? 100 * busy / roll : 0, iter > 0 ? 100 * (busy + upd) / iter : 0);
    }
    if (p->ctx->kind == CUDARL_DEVICE_CUDA)
        fprintf(stderr, "    %s\n", idle > thr ? "the envs are the bottleneck: more "
                "--env-threads (or cheaper envs) would speed this up" : "the device is the "
                "bottleneck (the threads wait for it longer than it waits for them)");
}

/* The MLP policy's model FLOP/s and GB/s over rollout + update. */
static void print_mlp(const cr_ppo *p, double it) {
    const cr_ppo_profile *f = &p->prof;
    double af, ab, cf, cb;
    mlp_flops(&p->layout, p->A, &af, &ab);
    mlp_flops(&p->layout, 1, &cf, &cb);
    double rollout = (double)p->batch * (af + 3 * cf); /* critic on obs, final obs, and last */
    double upd = (double)p->cfg.update_epochs * p->batch * (af + ab + cf + cb);
    double abf, abb, cbf, cbb;
    mlp_bytes(&p->layout, p->A, &abf, &abb);
    mlp_bytes(&p->layout, 1, &cbf, &cbb);
    double gather = 2.0 * 4 * (p->D + 5); /* per minibatch row: read and write the row's fields */
    double bytes = (double)p->batch * (abf + 3 * cbf) +
                   (double)p->cfg.update_epochs * p->batch * (abf + abb + cbf + cbb + gather);
    double t_roll = f->seconds[CR_PHASE_ROLLOUT] / it, t_upd = f->seconds[CR_PHASE_UPDATE] / it;
    /* the fused kernels compute in fp32 whatever tf32 asks (ppo.c's fused_update) */
    cudarl_precision prec = p->fused && p->cfg.precision == CUDARL_PRECISION_TF32
                                ? CUDARL_PRECISION_FP32 : p->cfg.precision;
    const cr_peaks k = device_peaks(p, prec);
    fprintf(stderr, "  model FLOPs per iteration: rollout %.3g, update %.3g -> %.3g TFLOP/s",
            rollout, upd, (rollout + upd) / (t_roll + t_upd) / 1e12);
    print_peak(p, (rollout + upd) / (t_roll + t_upd), prec);
    fprintf(stderr, "\n  modelled layer traffic: %.3g GB per iteration -> %.3g GB/s", bytes / 1e9,
            bytes / (t_roll + t_upd) / 1e9);
    if (k.bytes_per_s > 0)
        fprintf(stderr, " (%.1f%% of %.0f GB/s)", 100 * bytes / (t_roll + t_upd) / k.bytes_per_s,
                k.bytes_per_s / 1e9);
    fprintf(stderr, "\n");
}

/* One part of the rollout: ms per iteration and its share of the rollout phase. */
static void print_part(const char *what, double seconds, double rollout) {
    fprintf(stderr, "    %-50s %9.3f ms %5.1f%%\n", what, 1e3 * seconds,
            rollout > 0 ? 100 * seconds / rollout : 0);
}

/* A conv policy: its rollout split into env steps, forwards and the rest, then the model FLOPs
 * of its forwards and update and the achieved FLOP/s against the device's peak. */
static void print_conv(const cr_ppo *p, double it) {
    const cr_ppo_profile *f = &p->prof;
    const double roll = f->seconds[CR_PHASE_ROLLOUT] / it, t_upd = f->seconds[CR_PHASE_UPDATE] / it;
    const int device = p->parts.ev != NULL; /* timing events: the parts are device time */
    const double env = (p->pool ? f->env_wait : f->part_seconds[CR_PART_ENV]) / it;
    const double fwd = f->part_seconds[CR_PART_FORWARD] / it;
    fprintf(stderr, "  the rollout's parts, per iteration and share of the rollout\n    (%s):\n",
            !device ? "host clock: the CPU backend's ops run on the calling thread"
            : p->pool ? "the forwards in device time between timing events, the env steps as "
                        "the host's wait for the CPU threads"
                      : "device time between timing events; to place them the rollout runs op "
                        "by op under --profile, not as its CUDA graph, so it is slower than "
                        "without");
    print_part(p->pool ? "env steps (the host waiting for the CPU threads)"
                       : "env steps (the image twin's kernels)", env, roll);
    print_part("policy forwards + sampling", fwd, roll);
    if (!p->pool || !device)
        print_part(device ? "the rest (copies, episode sums, GAE, launch gaps)"
                          : "the rest (copies, episode sums, GAE)", roll - env - fwd, roll);
    else
        fprintf(stderr, "    (the device runs forwards while the threads step envs: the parts "
                "overlap and do not add up to the rollout)\n");
    double fw, bw;
    cr_convnet_flops(&p->cnn.net, &fw, &bw);
    const int nets = p->cnn.separate ? 2 : 1;
    fw *= nets, bw *= nets;
    const double rows = (double)f->rollout_rows / it;
    const double roll_f = rows * fw, upd_f = (double)p->cfg.update_epochs * p->batch * (fw + bw);
    fprintf(stderr, "  model FLOPs per iteration (%s, %d network%s; 2 per multiply-add of its "
            "convs and linears):\n", p->cfg.policy, nets, nets == 1 ? "" : "s: --separate-critic");
    fprintf(stderr, "    rollout forwards %.3g (%.0f rows x %.3g MFLOP)\n", roll_f, rows, fw / 1e6);
    fprintf(stderr, "    update %s%.3g (%d epochs x %d rows x %.3g MFLOP forward + backward)\n",
            p->cfg.target_kl > 0 ? "at most " : "", upd_f, p->cfg.update_epochs, p->batch,
            (fw + bw) / 1e6);
    const double achieved = (roll_f + upd_f) / (roll + t_upd);
    fprintf(stderr, "  achieved %.3g TFLOP/s over rollout + update", achieved / 1e12);
    print_peak(p, achieved, p->cfg.precision);
    fprintf(stderr, "\n    the update alone %.3g TFLOP/s", t_upd > 0 ? upd_f / t_upd / 1e12 : 0);
    if (fwd > 0)
        fprintf(stderr, "; the rollout's forwards (with sampling) alone %.3g TFLOP/s",
                roll_f / fwd / 1e12);
    fprintf(stderr, "\n");
}

/* Prints time per phase, host syncs per iteration, the CPU envs' waits, and achieved FLOP/s. */
void cr_ppo_profile_print(const cr_ppo *p) {
    const cr_ppo_profile *f = &p->prof;
    if (!p->cfg.profile || f->iterations == 0) return;
    static const char *const names[CR_PHASE_COUNT] = {"rollout (env + policy)", "update (learn)",
        "metrics (device -> host)", "log (csv, progress)", "checkpoint"};
    double total = 0, it = (double)f->iterations;
    for (int i = 0; i < CR_PHASE_COUNT; i++) total += f->seconds[i];
    fprintf(stderr, "profile: %lld iterations, %.3f ms each (phases timed with a device sync at "
            "each boundary)\n", (long long)f->iterations, 1e3 * total / it);
    for (int i = 0; i < CR_PHASE_COUNT; i++)
        fprintf(stderr, "  %-26s %9.3f ms %5.1f%%\n", names[i], 1e3 * f->seconds[i] / it,
                total > 0 ? 100 * f->seconds[i] / total : 0);
    fprintf(stderr, "  host<->device synchronisations per iteration: %.1f\n",
            (double)(p->ctx->host_syncs - f->syncs_start) / it);
    if (p->ctx->kind == CUDARL_DEVICE_CUDA)
        fprintf(stderr, "  host waiting for the device at the phase ends: rollout %.3f ms, update "
                "%.3f ms (the queued work still running; near 0: the host's launches bound the "
                "phase)\n", 1e3 * f->sync_wait[CR_PHASE_ROLLOUT] / it,
                1e3 * f->sync_wait[CR_PHASE_UPDATE] / it);
    if (p->learner)
        fprintf(stderr, "  --async: each update runs beside the next rollout, so its time is "
                "inside the rollout phase\n");
    if (p->pool) print_pool(p, it);
    if (p->conv) print_conv(p, it);
    else print_mlp(p, it);
    const double setup = p->start.setup + p->start.rest;
    if (p->start.before >= 0)
        fprintf(stderr, "  from the process's start to the loop: %.3f s (the loop's first iteration "
                "also captures its graphs)\n    %-72s %8.3f s\n", p->start.before + setup,
                "before training began (the process, the device's context and libraries)",
                p->start.before);
    else
        fprintf(stderr, "  to the loop (the process's age is unknown here):\n");
    fprintf(stderr, "    %-72s %8.3f s\n", "PPO's setup (plans, memory, the networks' handles, "
            "warm-up)", p->start.setup);
    for (int i = 0; i < p->start.nparts; i++)
        fprintf(stderr, "      %-70s %8.3f s\n", p->start.part[i].what, p->start.part[i].secs);
    fprintf(stderr, "    %-72s %8.3f s\n",
            p->start.resumed ? "the checkpoint's load and the run directory" : "the run directory",
            p->start.rest);
}
