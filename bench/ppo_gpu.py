#!/usr/bin/env python3
"""GPU PPO on CartPole-v1, side by side in one invocation (issue 3's benchmark).

Rows, each a separate process per seed so that "from process start" means what it says:
  1. cudarl, --device cuda, its CUDA preset (1024 envs x 16 steps, 4 epochs x 4 minibatches,
     lr 5e-3, 2M steps): time to reach a mean return of 475 over the last 100 episodes, from
     process start (launch to the solve, wall clock) and from loop start; steps/s; device memory.
  2. bench/peers/ppo_torch.py (eager PyTorch, CleanRL's algorithm, torch-vectorised CartPole on
     the GPU) with the same workload.
  3. Throughput at the benchmark configuration (--envs x 16 steps, 4 x 4 minibatches): cudarl GPU,
     the PyTorch peer (fewer steps: it is slow), and cudarl's CPU path.
Prints a table and the ratios; writes JSON to --out.

  python3 bench/ppo_gpu.py --cudarl build/cudarl --seeds 5 --envs 65536 --out results.json
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PRESET = ["--num-envs", "1024", "--num-steps", "16", "--num-minibatches", "4",
          "--update-epochs", "4", "--learning-rate", "5e-3", "--total-timesteps", "2000000",
          "--ent-coef", "0"]


def run_cudarl(cudarl, args, runs_dir, name):
    cmd = [cudarl, "train", "--quiet", "--runs-dir", runs_dir, "--run-name", name] + args
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.time() - t0
    if p.returncode != 0:
        sys.exit(f"cudarl failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    out = p.stdout
    r = {"cmd": " ".join(cmd), "wall_s": wall}
    m = re.search(r"step (\d+): (\d+) steps in ([\d.]+) s \((\d+) steps/s\).*last 100: ([\d.]+)", out)
    r["steps"], r["loop_s"], r["sps"], r["final100"] = int(m[2]), float(m[3]), float(m[4]), float(m[5])
    m = re.search(r"solved .* at step (\d+), ([\d.]+) s into the loop \(unix time ([\d.]+)\)", out)
    if m:
        r["solved_step"], r["solved_loop_s"] = int(m[1]), float(m[2])
        r["solved_proc_s"] = float(m[3]) - t0
    m = re.search(r"training arena ([\d.]+) MiB; ([\d.]+) MiB in use", out)
    if m:
        r["arena_mib"], r["device_in_use_mib"] = float(m[1]), float(m[2])
    return r


def run_peer(args, json_path):
    cmd = [sys.executable, os.path.join(HERE, "peers", "ppo_torch.py")] + args + ["--json", json_path]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"peer failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    with open(json_path) as f:
        res = json.load(f)
    seed = res["results"][0]
    seed["wall_s"] = time.time() - t0
    seed["peak_mib"] = (seed.get("peak_gpu_memory_bytes") or 0) / 2**20
    return seed, res


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, spec=".3f"):
    return "-" if x is None else format(x, spec)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cudarl", default="build/cudarl")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--envs", type=int, default=65536, help="envs of the throughput configuration")
    ap.add_argument("--throughput-steps", type=int, default=200_000_000)
    ap.add_argument("--peer-throughput-steps", type=int, default=4_000_000)
    ap.add_argument("--runs-dir", default="/tmp/bench-ppo-gpu")
    ap.add_argument("--out", default="ppo_gpu.json")
    a = ap.parse_args()
    os.makedirs(a.runs_dir, exist_ok=True)
    res = {"solve": {"cudarl": [], "torch": []}, "throughput": {}}

    for s in range(1, a.seeds + 1):
        r = run_cudarl(a.cudarl, ["--device", "cuda", "--seed", str(s)] + PRESET, a.runs_dir, f"solve{s}")
        res["solve"]["cudarl"].append(r)
        print(f"cudarl cuda seed {s}: {r['sps']:.0f} steps/s, 475 at {fmt(r.get('solved_proc_s'))} s "
              f"from process start ({fmt(r.get('solved_loop_s'))} s in loop)", flush=True)
    for s in range(1, a.seeds + 1):
        r, _ = run_peer(["--device", "cuda", "--seeds", "1", "--seed", str(s)] + PRESET,
                        os.path.join(a.runs_dir, f"peer{s}.json"))
        res["solve"]["torch"].append(r)
        print(f"torch cuda seed {s}: {json.dumps(r)}", flush=True)

    tp = ["--num-envs", str(a.envs), "--num-steps", "16", "--num-minibatches", "4",
          "--update-epochs", "4", "--learning-rate", "5e-3", "--ent-coef", "0"]
    r = run_cudarl(a.cudarl, ["--device", "cuda", "--total-timesteps", str(a.throughput_steps)] + tp,
                   a.runs_dir, "throughput")
    res["throughput"]["cudarl_cuda"] = r
    print(f"cudarl cuda throughput: {r['sps']:.0f} steps/s", flush=True)
    pr, _ = run_peer(["--device", "cuda", "--seeds", "1", "--total-timesteps",
                      str(a.peer_throughput_steps)] + tp, os.path.join(a.runs_dir, "peer_tp.json"))
    res["throughput"]["torch_cuda"] = pr
    print(f"torch cuda throughput: {json.dumps(pr)}", flush=True)
    r = run_cudarl(a.cudarl, ["--device", "cpu", "--seed", "1"], a.runs_dir, "cpu")
    res["throughput"]["cudarl_cpu"] = r

    c, t = res["solve"]["cudarl"], res["solve"]["torch"]
    key = lambda rows, k: [x.get(k) for x in rows]
    peer_proc, peer_loop, peer_sps = key(t, "solved_process_s"), key(t, "solved_loop_s"), key(t, "sps")
    summary = {
        "cudarl_solve_proc_s": med(key(c, "solved_proc_s")),
        "cudarl_solve_loop_s": med(key(c, "solved_loop_s")),
        "cudarl_preset_sps": med(key(c, "sps")),
        "torch_solve_proc_s": med(peer_proc), "torch_solve_loop_s": med(peer_loop),
        "torch_preset_sps": med(peer_sps),
        "cudarl_cuda_tp_sps": res["throughput"]["cudarl_cuda"]["sps"],
        "torch_cuda_tp_sps": pr["sps"],
        "cudarl_cpu_sps": res["throughput"]["cudarl_cpu"]["sps"],
        "cudarl_arena_mib": res["throughput"]["cudarl_cuda"].get("arena_mib"),
        "torch_peak_mib": pr["peak_mib"],
    }
    res["summary"] = summary
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    S = summary
    print("\n==== PPO CartPole-v1 on the GPU (medians of %d seeds) ====" % a.seeds)
    print(f"{'':34} {'cudarl':>14} {'PyTorch':>14} {'ratio':>8}")
    def row(name, x, y, better_low):
        ratio = None if not x or not y else (y / x if better_low else x / y)
        print(f"{name:34} {fmt(x, '.3f'):>14} {fmt(y, '.3f'):>14} {fmt(ratio, '.1f'):>8}")
    row("solve 475, from process start (s)", S["cudarl_solve_proc_s"], S["torch_solve_proc_s"], True)
    row("solve 475, from loop start (s)", S["cudarl_solve_loop_s"], S["torch_solve_loop_s"], True)
    row("steps/s, preset (1024x16)", S["cudarl_preset_sps"], S["torch_preset_sps"], False)
    row(f"steps/s, {a.envs}x16", S["cudarl_cuda_tp_sps"], S["torch_cuda_tp_sps"], False)
    row("memory (MiB: arena / torch peak)", S["cudarl_arena_mib"], S["torch_peak_mib"], True)
    print(f"cudarl CPU path (1 thread, CPU preset): {fmt(S['cudarl_cpu_sps'], '.0f')} steps/s")


if __name__ == "__main__":
    main()
