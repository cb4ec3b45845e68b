#!/usr/bin/env python3
"""Data-parallel PPO's acceptance benchmark (issue 28, docs/multigpu.md): Nature-CNN PPO on
CartPolePixels-v1's CUDA twin on 1 GPU, then on 2, 4 and 8 (the powers of two up to the GPUs
`nvidia-smi -L` lists), weak scaling: every GPU steps as many envs as the one-GPU run (the job's
--num-envs is R x --envs-per-gpu, its --total-timesteps R x the one-GPU run's, so every run
makes the same number of iterations with the same learning-rate schedule and per-GPU minibatch).

  python3 bench/multigpu_scale.py --cudarl build/cudarl --runs-dir RUNS [--out DIR]
      [--envs-per-gpu 512] [--seconds 100] [--stop-at 475] [--seed 1] [--cudarl-args "..."]

R = 1 is a plain run; R > 1 is `--num-gpus R` (one process, a thread per GPU, gradients over
NCCL; NCCL_NVLS_ENABLE=0 as the lent machines need). Each run is stopped (SIGINT: it ends its
iteration and writes its checkpoint) once the mean return of the last 100 episodes reached
--stop-at (at least 100 episodes), or --seconds after launch. From its metrics.csv, polled as it
runs: env steps/s after the first iteration (warm-up and graph capture excluded) and over the
loop, the loop time (time/elapsed_s) and env step where the mean of 100 first reached --stop-at.
Prints a table per GPU count, the scaling efficiency (steps/s at R / (R x steps/s at 1)) and
whether 2 GPUs reach 90% (issue 28's bar), and ends with one line: the efficiencies, or, on a
machine of one GPU, "needs 2+ GPUs: only the 1-GPU row ran". --out DIR gets
multigpu_scale.json (commands, curves, figures).

--gpu-count N and --device cpu are for this script's own test (a CPU build, tiny shapes)."""
import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time

from pixels import CsvTail, num  # noqa: E402  (bench/, this script's folder: its CSV tail)

ENV_ID = "CartPolePixels-v1"
# the Nature-CNN's CUDA recipe (ppo_config.c: 512 x 32, 16 minibatches, separate critic, bf16),
# less its --num-envs and --total-timesteps, which scale with the GPU count here
RECIPE = ""
TOTAL_PER_GPU = 2000000
BAR = 0.90  # issue 28: scaling efficiency at 2 GPUs


def gpu_count():
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


def run_one(a, gpus, log_dir):
    """One training run on `gpus` GPUs; its rows and figures."""
    name = f"gpus{gpus}"
    run_dir = os.path.join(a.runs_dir, name)
    shutil.rmtree(run_dir, ignore_errors=True)
    cmd = [a.cudarl, "train", "--device", a.device, "--env-id", ENV_ID, "--policy", "nature-cnn",
           *shlex.split(RECIPE), *shlex.split(a.cudarl_args),
           "--num-envs", str(a.envs_per_gpu * gpus),
           "--total-timesteps", str(a.total_per_gpu * gpus), "--seed", str(a.seed),
           "--runs-dir", a.runs_dir, "--run-name", name, "--quiet"]
    if gpus > 1:
        cmd += ["--num-gpus", str(gpus)]
    env = dict(os.environ, NCCL_NVLS_ENABLE="0")
    tail = CsvTail(os.path.join(run_dir, "metrics.csv"))
    rows, reached, stopped = [], None, None
    log_path = os.path.join(log_dir, name + ".log")
    with open(log_path, "w") as log:
        t0 = time.time()
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        sent = False
        while True:
            rc = p.poll()
            for r in tail.read():
                row = {k: num(r.get(k)) for k in ("global_step", "time/elapsed_s",
                                                   "charts/mean_return_100", "charts/episodes")}
                rows.append(row)
                m, e = row["charts/mean_return_100"], row["charts/episodes"]
                if reached is None and m is not None and e is not None and e >= 100 and \
                        m >= a.stop_at:
                    reached = row
            if rc is not None:
                break
            now = time.time() - t0
            if not sent and (reached is not None or now >= a.seconds):
                stopped = "reached" if reached is not None else "time"
                p.send_signal(signal.SIGINT)
                sent = True
            if sent and now >= a.seconds + 60:
                p.kill()
            time.sleep(0.1)
    rows += [{k: num(r.get(k)) for k in ("global_step", "time/elapsed_s",
                                         "charts/mean_return_100", "charts/episodes")}
             for r in tail.read()]
    log_tail = open(log_path).read()[-2000:]
    if rc != 0 or not rows:
        print(f"multigpu_scale: {gpus} GPU(s): cudarl exited {rc} with {len(rows)} rows:\n"
              f"{log_tail}")
        return {"gpus": gpus, "cmd": cmd, "rc": rc, "rows": rows, "sps": None}
    first, last = rows[0], rows[-1]
    dt = last["time/elapsed_s"] - first["time/elapsed_s"]
    sps = (last["global_step"] - first["global_step"]) / dt if len(rows) > 1 and dt > 0 else None
    return {"gpus": gpus, "cmd": cmd, "rc": rc, "rows": rows, "stopped": stopped,
            "sps": sps, "sps_loop": last["global_step"] / max(last["time/elapsed_s"], 1e-9),
            "reached_step": reached["global_step"] if reached else None,
            "reached_s": reached["time/elapsed_s"] if reached else None,
            "best_mean": max((r["charts/mean_return_100"] or 0) for r in rows),
            "last_step": last["global_step"], "last_s": last["time/elapsed_s"]}


def fmt(x, spec=",.0f"):
    return "-" if x is None else format(x, spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cudarl", required=True)
    ap.add_argument("--runs-dir", required=True)
    ap.add_argument("--out", default="")
    ap.add_argument("--envs-per-gpu", type=int, default=512)
    ap.add_argument("--total-per-gpu", type=int, default=TOTAL_PER_GPU,
                    help="--total-timesteps of the one-GPU run (R GPUs: R times it)")
    ap.add_argument("--seconds", type=float, default=100, help="per run, from launch")
    ap.add_argument("--stop-at", type=float, default=475)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cudarl-args", default="", help="more flags for every run")
    ap.add_argument("--gpu-count", type=int, default=None, help="instead of nvidia-smi -L's")
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    if a.envs_per_gpu < 1 or a.seconds <= 0 or a.total_per_gpu < 1:
        sys.exit("multigpu_scale: --envs-per-gpu, --total-per-gpu and --seconds must be positive")
    n = gpu_count() if a.gpu_count is None else a.gpu_count
    counts = [r for r in (1, 2, 4, 8) if r <= max(n, 1)]
    os.makedirs(a.runs_dir, exist_ok=True)
    log_dir = a.out or a.runs_dir
    os.makedirs(log_dir, exist_ok=True)
    print(f"multigpu_scale: {n} GPU(s) listed; Nature-CNN PPO on {ENV_ID}'s CUDA twin, "
          f"{a.envs_per_gpu} envs per GPU, the env's recipe {RECIPE} {a.cudarl_args}".rstrip() +
          f", each run stopped at a mean of 100 >= {a.stop_at:g} or {a.seconds:g} s; GPU "
          f"counts {counts}")
    res = []
    for r in counts:
        res.append(run_one(a, r, log_dir))
        x = res[-1]
        if x["sps"] is None:
            continue
        print(f"multigpu_scale: {r} GPU(s): {fmt(x['sps'])} env steps/s after the first "
              f"iteration, {fmt(x['sps_loop'])} over the loop; mean of 100 >= {a.stop_at:g} at "
              f"step {fmt(x['reached_step'])}, {fmt(x['reached_s'], '.1f')} s into the loop "
              f"(best {x['best_mean']:.1f}; stopped by {x['stopped'] or 'its end'} at step "
              f"{fmt(x['last_step'])}, {x['last_s']:.1f} s)")
    one = res[0]["sps"]
    print()
    print("| GPUs | envs | env steps/s | per GPU | efficiency | step to target | s to target |")
    print("|---|---|---|---|---|---|---|")
    eff = {}
    for x in res:
        r = x["gpus"]
        if x["sps"] is not None and one:
            eff[r] = x["sps"] / (r * one)
        print(f"| {r} | {a.envs_per_gpu * r} | {fmt(x['sps'])} | "
              f"{fmt(x['sps'] / r if x['sps'] else None)} | {fmt(eff.get(r), '.3f')} | "
              f"{fmt(x.get('reached_step'))} | {fmt(x.get('reached_s'), '.1f')} |")
    if a.out:
        with open(os.path.join(a.out, "multigpu_scale.json"), "w") as f:
            json.dump({"gpus_listed": n, "envs_per_gpu": a.envs_per_gpu, "recipe": RECIPE,
                       "cudarl_args": a.cudarl_args, "stop_at": a.stop_at, "runs": res,
                       "efficiency": eff}, f, indent=1)
    failed = [x["gpus"] for x in res if x["sps"] is None]
    if failed:
        print(f"multigpu_scale: the runs on {failed} GPU(s) failed (their logs above)")
        sys.exit(1)
    if len(counts) == 1:
        print(f"multigpu_scale: needs 2+ GPUs: only the 1-GPU row ran ({n} GPU(s) listed): "
              f"{fmt(one)} env steps/s")
        return
    two = eff.get(2)
    print("multigpu_scale: scaling efficiency " +
          ", ".join(f"{r} GPUs {eff[r]:.3f}" for r in counts if r > 1) +
          f"; at 2 GPUs {'>=' if two >= BAR else '<'} {BAR:.2f} (issue 28's bar: "
          f"{'met' if two >= BAR else 'not met'})")


if __name__ == "__main__":
    main()
