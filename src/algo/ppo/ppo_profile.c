/* PPO's --profile (ppo_internal.h): time per phase with the device synchronised at each phase
 * boundary, host syncs, the CPU envs' waits, and the MLP's achieved FLOP/s and GB/s against the
 * device's peaks. */
#include <stdio.h>

#include "algo/ppo/ppo_internal.h"
#include "core/nvtx.h"

/* Ends the current phase: with --profile, waits for the device and charges the time to it. */
void cr_ppo_phase_end(cr_ppo *p, int phase) {
    CR_RANGE_POP();
    if (!p->cfg.profile) return;
    p->ctx->ops->sync(p->ctx);
    double now = cr_time_now();
    p->prof.seconds[phase] += now - p->prof.mark;
    p->prof.mark = now;
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

/* Prints time per phase, host syncs per iteration, and achieved FLOP/s and GB/s. */
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
    if (p->learner)
        fprintf(stderr, "  --async: each update runs beside the next rollout, so its time is "
                "inside the rollout phase\n");
    if (p->pool) {
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
    if (p->conv) {
        fprintf(stderr, "  (the FLOP/s and GB/s model covers the MLP policy only)\n");
        return;
    }
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
    double peak_f = 0, peak_b = 0;
    if (p->ctx->ops->peaks) p->ctx->ops->peaks(p->ctx, &peak_f, &peak_b);
    fprintf(stderr, "  model FLOPs per iteration: rollout %.3g, update %.3g -> %.3g TFLOP/s",
            rollout, upd, (rollout + upd) / (t_roll + t_upd) / 1e12);
    if (peak_f > 0) fprintf(stderr, " (%.1f%% of the fp32 peak, %.1f TFLOP/s)",
                            100 * (rollout + upd) / (t_roll + t_upd) / peak_f, peak_f / 1e12);
    fprintf(stderr, "\n  modelled layer traffic: %.3g GB per iteration -> %.3g GB/s", bytes / 1e9,
            bytes / (t_roll + t_upd) / 1e9);
    if (peak_b > 0) fprintf(stderr, " (%.1f%% of %.0f GB/s)", 100 * bytes / (t_roll + t_upd) / peak_b,
                            peak_b / 1e9);
    fprintf(stderr, "\n");
}
