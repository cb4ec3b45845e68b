#!/usr/bin/env python3
"""PPO on CartPolePixels-v1 (Nature-CNN on uint8 84x84x4 frames), cudarl beside a PyTorch peer on
the same frames, in one invocation (issue 26's benchmark). One job at a time on the device.

  python3 bench/pixels.py --cudarl build/cudarl --out DIR [--seeds 1,2,3] [--seconds 60]
  python3 bench/pixels.py --cudarl build/cudarl --out DIR --throughput [--iterations 20]

cudarl: `cudarl train --device D --env-id CartPolePixels-v1 --policy nature-cnn CUDARL_ARGS
--total-timesteps T --seed S` (the envs on the env's CUDA twin on a GPU); CUDARL_ARGS default to
the ppo_pixels row of bench/README.md without its --total-timesteps. The peer:
bench/peers/ppo_atari_torch.py (CleanRL ppo_atari.py's agent and algorithm in eager PyTorch, its
envs cudarl's own CartPolePixels-v1 through cudarl.make_vec: the same CUDA twin, the frames and
actions in device memory through DLPack), given the same recipe: the flags of CUDARL_ARGS that
both have (--num-envs, --num-steps, --num-minibatches, --update-epochs, --learning-rate,
--ent-coef, --vf-coef, --clip-coef, --gamma, --gae-lambda, --max-grad-norm, --target-kl,
--[no-]separate-critic, --[no-]clip-vloss, --[no-]anneal-lr, --[no-]norm-adv; --precision bf16 as
--amp, tf32 as --tf32), the same --total-timesteps (so the same learning-rate schedule) and seed,
then PEER_ARGS (e.g. "--channels-last --compile"). The flags only cudarl takes are listed.

Solve mode (default): per seed, cudarl then the peer, each launched by this script (the launch
time is taken here, just before the process starts) and stopped after --seconds from launch or
once the mean return of the last 100 episodes reached --stop-at (475; at least 100 episodes):
cudarl by SIGINT (it ends its iteration and writes its checkpoint), the peer by its own
--seconds/--stop-at. cudarl's curve is its run folder's metrics.csv (global_step,
charts/mean_return_100, charts/episodes, time/elapsed_s: seconds from its loop start), read while
it runs; its loop start after launch is taken from its "solved ... (unix time)" line where it
prints one, else as the least (time a row was first seen - that row's time/elapsed_s), rows
being polled every 0.05 s. The peer's curve is in its --json, timed from the same launch.
Prints per seed: seconds from launch and env steps to mean(100) >= 475 (or the best mean
reached), steps/s over the loop; cudarl, the peer, and the ratio (peer / cudarl for time,
cudarl / peer for steps/s); then the medians.

Throughput mode (--throughput): one run of each side at a large batch (default 4,096 envs x 16
steps, 4 minibatches, the rest of the recipe as above) for --iterations iterations: env steps/s
over the loop and after the first iteration (warm-up, graph capture, compilation), and the ratio.

--out DIR gets pixels_ppo.json (or pixels_sps.json: the commands, every curve, the summaries),
pixels_ppo.png (return against env steps and against seconds from launch, one curve per run,
drawn by `cudarl plot` from the curves written in its metrics.csv layout, time/elapsed_s there
being seconds from launch; matplotlib where cudarl plot fails and it is importable; else no plot,
said so) and pixels_ppo_runs.tgz (those curves, cudarl's metrics.csv files and every log)."""
import argparse
import csv
import io
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PEER = os.path.join(HERE, "peers", "ppo_atari_torch.py")
ENV_ID = "CartPolePixels-v1"
# the ppo_pixels row of bench/README.md, without --device/--env-id/--policy (set here) and
# without --total-timesteps (--total-timesteps here)
DEFAULT_CUDARL_ARGS = ("--separate-critic --no-clip-vloss --num-envs 32 --num-minibatches 16 "
                       "--precision bf16 --quiet")
RECENT = 100
POLL_S = 0.05

# flags of cudarl train the peer takes under the same name (with a value)
SHARED_VALUE = {"num-envs", "num-steps", "num-minibatches", "update-epochs", "learning-rate",
                "ent-coef", "vf-coef", "clip-coef", "gamma", "gae-lambda", "max-grad-norm",
                "target-kl"}
SHARED_BOOL = {"separate-critic", "clip-vloss", "anneal-lr", "norm-adv"}
CUDARL_BOOL = {"quiet", "profile", "async", "norm-obs", "norm-reward"}  # cudarl's alone
OWN = {"device", "env-id", "policy", "seed", "total-timesteps", "runs-dir", "run-name", "resume",
       "config", "algo"}
BOOL_WORDS = {"y": True, "yes": True, "t": True, "true": True, "on": True, "1": True,
              "n": False, "no": False, "f": False, "false": False, "off": False, "0": False}


def fail(msg):
    sys.exit("pixels.py: " + msg)


def translate(cudarl_args):
    """The peer's flags for cudarl's recipe flags; (peer args, flags only cudarl takes)."""
    peer, only = [], []
    i = 0
    while i < len(cudarl_args):
        a = cudarl_args[i]
        if not a.startswith("--"):
            fail("--cudarl-args: '%s' is not a flag; give cudarl train's flags (--name value)" % a)
        name, eq, val = a[2:].partition("=")
        neg = name.startswith("no-")
        base = name[3:] if neg else name
        if base in OWN:
            fail("--cudarl-args has --%s, which this script sets; use its own flag "
                 "(--cudarl-device, --seeds, --total-timesteps, --runs-dir)" % base)
        nxt = cudarl_args[i + 1] if i + 1 < len(cudarl_args) else None
        if base in SHARED_BOOL or base in CUDARL_BOOL:
            if eq:  # --name=word (cudarl takes no --no-name=word)
                on = None if neg else BOOL_WORDS.get(val.lower())
            elif nxt is not None and nxt.lower() in BOOL_WORDS:  # --name word: the word wins
                on, val, i = BOOL_WORDS[nxt.lower()], nxt, i + 1
            else:
                on = not neg
            if on is None:
                fail("--cudarl-args: %s: write --%s, --no-%s or --%s true|false" % (a, base, base,
                                                                                  base))
            if base in SHARED_BOOL:
                peer.append("--%s%s" % ("" if on else "no-", base))
            else:
                only.append("--%s%s" % ("" if on else "no-", base))
            i += 1
            continue
        if not eq:
            if nxt is None or (nxt.startswith("--") and len(nxt) > 2):
                fail("--cudarl-args: --%s needs a value" % name)
            val, i = nxt, i + 1
        i += 1
        if name in SHARED_VALUE:
            if name == "target-kl" and num(val) == 0:
                continue  # cudarl's 0 is off: the peer's default
            peer += ["--" + name, val]
        elif name == "precision":
            if val == "bf16":
                peer.append("--amp")
            elif val == "tf32":
                peer.append("--tf32")
            elif val != "fp32":
                fail("--cudarl-args: --precision %s: the peer has fp32, tf32 and bf16 "
                     "(autocast); use one of those" % val)
        else:
            only.append("--%s %s" % (name, val))
    return peer, only


def parse_seeds(s):
    try:
        seeds = [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        seeds = []
    if not seeds or any(x < 0 for x in seeds):
        fail("--seeds %r: give seeds >= 0, comma-separated (e.g. 1,2,3)" % s)
    return seeds


# ---- cudarl ----------------------------------------------------------------------------------

class CsvTail:
    """The complete rows appended to a CSV file since the last read, as dicts."""

    def __init__(self, path):
        self.path, self.pos, self.header, self.buf = path, 0, None, ""

    def read(self):
        try:
            with open(self.path) as f:
                f.seek(self.pos)
                data = f.read()
                self.pos = f.tell()
        except FileNotFoundError:
            return []
        self.buf += data
        rows = []
        while "\n" in self.buf:
            line, self.buf = self.buf.split("\n", 1)
            if not line.strip():
                continue
            fields = next(csv.reader([line]))
            if self.header is None:
                self.header = fields
            elif len(fields) == len(self.header):
                rows.append(dict(zip(self.header, fields)))
        return rows


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def run_cudarl(a, cudarl_args, seed, total, name, seconds, stop_at):
    """One cudarl train run; its curve timed from launch and its summary."""
    run_dir = os.path.join(a.runs_dir, name)
    shutil.rmtree(run_dir, ignore_errors=True)
    cmd = [a.cudarl, "train", "--device", a.cudarl_device, "--env-id", ENV_ID, "--policy",
           "nature-cnn"] + cudarl_args + ["--total-timesteps", str(total), "--seed", str(seed),
                                          "--runs-dir", a.runs_dir, "--run-name", name]
    log_path = os.path.join(a.runs_dir, name + ".log")
    tail = CsvTail(os.path.join(run_dir, "metrics.csv"))
    rows, offsets = [], []
    stopped, sent, killed = None, False, False
    with open(log_path, "w") as log:
        t_launch = time.time()
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        while True:
            rc = p.poll()
            now = time.time() - t_launch
            for r in tail.read():
                rows.append(r)
                el = num(r.get("time/elapsed_s"))
                if el is not None:
                    offsets.append(now - el)
                m, e = num(r.get("charts/mean_return_100")), num(r.get("charts/episodes"))
                if (stopped is None and stop_at is not None and m is not None and e is not None
                        and e >= RECENT and m >= stop_at):
                    stopped = "stop-at"
            if rc is not None:
                break
            if stopped is None and seconds and now >= seconds:
                stopped = "seconds"
            if stopped and not sent:
                p.send_signal(signal.SIGINT)  # it ends the iteration and writes its checkpoint
                sent = True
            if not killed and now > (seconds or 1e9) + a.grace:
                p.kill()
                killed = True
            time.sleep(POLL_S)
    rows += tail.read()
    out = open(log_path).read()
    if (p.returncode not in (0, 130) and not killed) or not rows:
        print(out[-3000:])
        fail("cudarl exited with status %d and %d metrics rows: %s (log: %s)"
             % (p.returncode, len(rows), shlex.join(cmd), log_path))
    m = re.search(r"solved .* at step (\d+), ([\d.]+) s into the loop \(unix time ([\d.]+)\)", out)
    if m:
        loop_start, how = float(m[3]) - float(m[2]) - t_launch, "its solved line"
    elif offsets:
        loop_start, how = min(offsets), "the first sight of its rows"
    else:
        fail("cudarl's metrics.csv has no time/elapsed_s column: %s" % tail.path)
    curve = []
    for r in rows:
        el = num(r.get("time/elapsed_s"))
        curve.append([round(loop_start + el, 4), int(float(r["global_step"])),
                      num(r.get("charts/mean_return_100")),
                      int(num(r.get("charts/episodes")) or 0)])
    last = rows[-1]
    return finish({"side": "cudarl", "seed": seed, "cmd": shlex.join(cmd), "log": log_path,
                   "metrics_csv": tail.path, "returncode": p.returncode,
                   "stop": (stopped or "total-timesteps") + (", killed after --grace" if killed
                                                             else ""),
                   "loop_start_s": loop_start,
                   "loop_start_from": how, "loop_s": num(last.get("time/elapsed_s")),
                   "curve": curve}, stop_at)


# ---- the peer ----------------------------------------------------------------------------------

def run_peer(a, peer_args, seed, total, name, seconds, stop_at):
    json_path = os.path.join(a.runs_dir, name + ".json")
    log_path = os.path.join(a.runs_dir, name + ".log")
    for pth in (json_path, log_path):
        if os.path.exists(pth):
            os.remove(pth)
    t_launch = time.time()
    cmd = ([a.python, PEER, "--device", a.peer_device, "--env-id", ENV_ID] + peer_args +
           ["--total-timesteps", str(total), "--seed", str(seed), "--json", json_path,
            "--launch-unix", repr(t_launch)])
    if seconds:
        cmd += ["--seconds", str(seconds)]
    if stop_at is not None:
        cmd += ["--stop-at", str(stop_at)]
    with open(log_path, "w") as log:
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        try:
            p.wait(timeout=(seconds or 1e9) + a.grace)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    if p.returncode != 0 or not os.path.exists(json_path):
        print(open(log_path).read()[-3000:])
        fail("the peer exited with status %d: %s (log: %s)" % (p.returncode, shlex.join(cmd),
                                                                 log_path))
    res = json.load(open(json_path))
    s = res["summary"]
    return finish({"side": "torch", "seed": seed, "cmd": shlex.join(cmd), "log": log_path,
                   "json": json_path, "returncode": p.returncode, "stop": s["stop"],
                   "loop_start_s": s["loop_start_s"], "loop_s": s["loop_s"],
                   "peak_gpu_memory_bytes": s.get("peak_gpu_memory_bytes"),
                   "torch_version": res.get("torch_version"), "curve": res["curve"]}, stop_at)


def finish(r, stop_at):
    """The run's figures from its curve [t from launch, step, mean100, episodes]."""
    c = r["curve"]
    full = [x for x in c if x[2] is not None and x[3] >= RECENT]
    r["reached"] = None
    if stop_at is not None:
        hit = [x for x in full if x[2] >= stop_at]
        if hit:
            r["reached"] = {"s": hit[0][0], "step": hit[0][1]}
    # the best mean of 100 episodes; before 100 had ended, of those that had
    r["best_mean100"] = max((x[2] for x in (full or [x for x in c if x[2] is not None])),
                            default=None)
    r["final_mean100"] = c[-1][2] if c else None
    r["steps"] = c[-1][1] if c else 0
    r["sps"] = r["steps"] / r["loop_s"] if r.get("loop_s") else None
    r["sps_after_first_iteration"] = ((c[-1][1] - c[0][1]) / (c[-1][0] - c[0][0])
                                      if len(c) >= 3 and c[-1][0] > c[0][0] else None)
    return r


# ---- output ------------------------------------------------------------------------------------

def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def ratio(x, y):
    return x / y if x and y else None


def write_curve_csv(r, folder):
    """The run's curve in cudarl's metrics.csv layout (time/elapsed_s: seconds from launch), so
    that `cudarl plot` draws it."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "metrics.csv"), "w") as f:
        f.write("global_step,time/elapsed_s,charts/mean_return_100,charts/episodes\n")
        for t, step, m, e in r["curve"]:
            f.write("%d,%.4f,%s,%d\n" % (step, t, "" if m is None else "%.6g" % m, e))


def plot(a, runs, png, curves_dir):
    folders, labels = [], []
    runs = sorted(runs, key=lambda r: (r["side"] != "cudarl", r["seed"]))  # cudarl's first
    for r in runs:
        if any(x[2] is not None for x in r["curve"]):
            folders.append(os.path.join(curves_dir, "%s_s%d" % (r["side"], r["seed"])))
            labels.append("%s seed %d" % ("cudarl" if r["side"] == "cudarl" else "PyTorch",
                                          r["seed"]))
    if not folders:
        return "no plot: no run has a mean return yet"
    cmd = [a.cudarl, "plot"] + folders + ["--out", png, "--group", ",".join(labels)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode == 0:
        return "plot: %s (cudarl plot: left against env steps, right against seconds from " \
               "launch)" % png
    why = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["?"]
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "no plot: cudarl plot failed (%s) and matplotlib is not importable" % why[0]
    fig, ax = plt.subplots(1, 2, figsize=(12, 5))
    for r, lab in zip([r for r in runs if any(x[2] is not None for x in r["curve"])], labels):
        pts = [x for x in r["curve"] if x[2] is not None]
        ls = "-" if r["side"] == "cudarl" else "--"
        ax[0].plot([x[1] for x in pts], [x[2] for x in pts], ls, label=lab)
        ax[1].plot([x[0] for x in pts], [x[2] for x in pts], ls, label=lab)
    ax[0].set_xlabel("env steps")
    ax[1].set_xlabel("seconds from launch")
    for x in ax:
        x.set_ylabel("mean return, last 100 episodes")
        x.grid(alpha=0.3)
    ax[1].legend()
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    return "plot: %s (matplotlib; cudarl plot failed: %s)" % (png, why[0])


def pack(tgz, paths, arc_root):
    with tarfile.open(tgz, "w:gz") as t:
        for p in paths:
            if p and os.path.exists(p):
                t.add(p, arcname=os.path.relpath(p, arc_root))


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def solve_mode(a, cudarl_args, peer_args, only):
    seeds = parse_seeds(a.seeds)
    runs = []
    print("PPO on %s, %s; each run until %s s from launch or mean(100) >= %g; %d steps' "
          "schedule" % (ENV_ID, "cudarl on %s, the peer on %s" % (a.cudarl_device, a.peer_device),
                        fmt(a.seconds, "g"), a.stop_at, a.total_timesteps), flush=True)
    for seed in seeds:
        for side in ("cudarl", "torch"):
            name = "%s_s%d" % (side, seed)
            if side == "cudarl":
                r = run_cudarl(a, cudarl_args, seed, a.total_timesteps, name, a.seconds, a.stop_at)
            else:
                r = run_peer(a, peer_args, seed, a.total_timesteps, name, a.seconds, a.stop_at)
            runs.append(r)
            print("  %-6s seed %d: %s; %d steps, %s steps/s, loop from %.2f s; stop: %s" % (
                side, seed,
                "mean(100) >= %g at %.2f s from launch, step %d" % (
                    a.stop_at, r["reached"]["s"], r["reached"]["step"]) if r["reached"]
                else "best mean(100) %s" % fmt(r["best_mean100"], ".1f"),
                r["steps"], fmt(r["sps"], ".0f"), r["loop_start_s"], r["stop"]), flush=True)

    def cell(r):
        if r["reached"]:
            return "%.1f s, %s" % (r["reached"]["s"], "{:,}".format(r["reached"]["step"]))
        return "not in %s s (best %s)" % (fmt(a.seconds, "g"), fmt(r["best_mean100"], ".1f"))

    by = {(r["side"], r["seed"]): r for r in runs}
    print("\n==== PPO on %s: seconds from launch and env steps to mean(100) >= %g, steps/s "
          "====" % (ENV_ID, a.stop_at))
    print("| seed | cudarl: to %g | PyTorch: to %g | time PyTorch / cudarl | cudarl steps/s "
          "| PyTorch steps/s | steps/s cudarl / PyTorch |" % (a.stop_at, a.stop_at))
    print("|---|---|---|---:|---:|---:|---:|")
    rows = []
    for seed in seeds:
        c, t = by[("cudarl", seed)], by[("torch", seed)]
        tr = ratio(t["reached"]["s"], c["reached"]["s"]) if c["reached"] and t["reached"] else None
        sr = ratio(c["sps"], t["sps"])
        rows.append((tr, sr))
        print("| %d | %s | %s | %s | %s | %s | %s |" % (
            seed, cell(c), cell(t), fmt(tr, ".2f"), fmt(c["sps"], ",.0f"), fmt(t["sps"], ",.0f"),
            fmt(sr, ".2f")))
    cs = [by[("cudarl", s)] for s in seeds]
    ts = [by[("torch", s)] for s in seeds]
    summary = {
        "cudarl_reached": sum(1 for r in cs if r["reached"]),
        "torch_reached": sum(1 for r in ts if r["reached"]),
        "median_cudarl_s": med([r["reached"]["s"] for r in cs if r["reached"]]),
        "median_torch_s": med([r["reached"]["s"] for r in ts if r["reached"]]),
        "median_cudarl_sps": med([r["sps"] for r in cs]),
        "median_torch_sps": med([r["sps"] for r in ts]),
        "median_time_ratio": med([x[0] for x in rows]),
        "median_sps_ratio": med([x[1] for x in rows]),
    }
    print("| median | %s of %d, %s s | %s of %d, %s s | %s | %s | %s | %s |" % (
        summary["cudarl_reached"], len(seeds), fmt(summary["median_cudarl_s"], ".1f"),
        summary["torch_reached"], len(seeds), fmt(summary["median_torch_s"], ".1f"),
        fmt(summary["median_time_ratio"], ".2f"), fmt(summary["median_cudarl_sps"], ",.0f"),
        fmt(summary["median_torch_sps"], ",.0f"), fmt(summary["median_sps_ratio"], ".2f")))
    return runs, summary


def throughput_mode(a, cudarl_args, peer_args):
    shape = ["--num-envs", str(a.tp_envs), "--num-steps", str(a.tp_steps), "--num-minibatches",
             str(a.tp_minibatches)]
    total = a.iterations * a.tp_envs * a.tp_steps
    print("Throughput on %s: %d envs x %d steps, %d minibatches, %d iterations (%d steps), "
          "seed 1" % (ENV_ID, a.tp_envs, a.tp_steps, a.tp_minibatches, a.iterations, total),
          flush=True)
    c = run_cudarl(a, cudarl_args + shape, 1, total, "cudarl_sps", 0, None)
    print("  cudarl: %d steps, %s steps/s over the loop" % (c["steps"], fmt(c["sps"], ".0f")),
          flush=True)
    t = run_peer(a, peer_args + shape, 1, total, "torch_sps", 0, None)
    print("  torch:  %d steps, %s steps/s over the loop" % (t["steps"], fmt(t["sps"], ".0f")),
          flush=True)
    print("\n==== PPO on %s, %d envs x %d steps: env steps/s ====" % (ENV_ID, a.tp_envs,
                                                                      a.tp_steps))
    print("| | cudarl | PyTorch | cudarl / PyTorch |")
    print("|---|---:|---:|---:|")
    for k, what in (("sps", "over the loop"), ("sps_after_first_iteration",
                                                "after the first iteration")):
        print("| steps/s %s | %s | %s | %s |" % (what, fmt(c[k], ",.0f"), fmt(t[k], ",.0f"),
                                                 fmt(ratio(c[k], t[k]), ".2f")))
    summary = {"cudarl_sps": c["sps"], "torch_sps": t["sps"], "sps_ratio": ratio(c["sps"], t["sps"]),
               "cudarl_sps_steady": c["sps_after_first_iteration"],
               "torch_sps_steady": t["sps_after_first_iteration"],
               "sps_steady_ratio": ratio(c["sps_after_first_iteration"],
                                         t["sps_after_first_iteration"])}
    return [c, t], summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 1)[1])
    ap.add_argument("--cudarl", required=True, help="the cudarl CLI")
    ap.add_argument("--cudarl-device", choices=["cuda", "cpu"], default="cuda",
                    help="cudarl's --device (the peer's --device too unless --peer-device)")
    ap.add_argument("--peer-device", choices=["cuda", "cpu"], default=None)
    ap.add_argument("--cudarl-args", default=DEFAULT_CUDARL_ARGS,
                    help="cudarl train's recipe flags (default: %(default)s)")
    ap.add_argument("--peer-args", default="", help="more flags for the peer")
    ap.add_argument("--python", default=sys.executable, help="the Python that runs the peer")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--seconds", type=float, default=60,
                    help="each run's limit, seconds from launch (0: none)")
    ap.add_argument("--stop-at", type=float, default=475.0)
    ap.add_argument("--total-timesteps", type=int, default=5_000_000,
                    help="both sides' --total-timesteps (the learning rate's anneal)")
    ap.add_argument("--grace", type=float, default=120,
                    help="seconds past --seconds before a run is killed")
    ap.add_argument("--throughput", action="store_true", help="the throughput mode")
    ap.add_argument("--iterations", type=int, default=20, help="throughput: iterations per side")
    ap.add_argument("--tp-envs", type=int, default=4096)
    ap.add_argument("--tp-steps", type=int, default=16)
    ap.add_argument("--tp-minibatches", type=int, default=4)
    ap.add_argument("--runs-dir", default="/tmp/bench-pixels", help="scratch: run folders, logs")
    ap.add_argument("--out", required=True, help="folder for the JSON, the plot and the tgz")
    a = ap.parse_args()
    a.peer_device = a.peer_device or a.cudarl_device
    if not (os.path.isfile(a.cudarl) and os.access(a.cudarl, os.X_OK)):
        fail("--cudarl %s is not an executable file; give the cudarl CLI of a build "
             "(build/cudarl)" % a.cudarl)
    if a.seconds < 0 or a.grace <= 0:
        fail("--seconds must be >= 0 (0: no limit) and --grace > 0")
    if a.total_timesteps < 1 or a.iterations < 1 or min(a.tp_envs, a.tp_steps,
                                                        a.tp_minibatches) < 1:
        fail("--total-timesteps, --iterations, --tp-envs, --tp-steps and --tp-minibatches must "
             "be at least 1")
    parse_seeds(a.seeds)
    try:
        cudarl_args = shlex.split(a.cudarl_args)
        extra = shlex.split(a.peer_args)
    except ValueError as e:
        fail("--cudarl-args / --peer-args: %s" % e)
    peer_args, only = translate(cudarl_args)
    peer_args += extra
    os.makedirs(a.runs_dir, exist_ok=True)
    os.makedirs(a.out, exist_ok=True)
    print("cudarl: %s train --device %s --env-id %s --policy nature-cnn %s" % (
        a.cudarl, a.cudarl_device, ENV_ID, shlex.join(cudarl_args)))
    print("peer:   %s --device %s %s (cudarl's flags not given to the peer: %s)" % (
        os.path.relpath(PEER), a.peer_device, shlex.join(peer_args), ", ".join(only) or "none"),
        flush=True)
    t0 = time.time()
    if a.throughput:
        runs, summary = throughput_mode(a, cudarl_args, peer_args)
        stem = "pixels_sps"
    else:
        runs, summary = solve_mode(a, cudarl_args, peer_args, only)
        stem = "pixels_ppo"
    curves_dir = os.path.join(a.runs_dir, stem + "_curves")
    shutil.rmtree(curves_dir, ignore_errors=True)
    for r in runs:
        write_curve_csv(r, os.path.join(curves_dir, "%s_s%d" % (r["side"], r["seed"])))
    res = {"benchmark": stem, "env": ENV_ID, "cudarl_args": cudarl_args, "peer_args": peer_args,
           "cudarl_only_flags": only, "seconds": a.seconds, "stop_at": a.stop_at,
           "total_timesteps": a.total_timesteps, "wall_s": time.time() - t0, "summary": summary,
           "curve_columns": ["s_since_launch", "global_step", "mean_return_100", "episodes"],
           "runs": runs}
    json_path = os.path.join(a.out, stem + ".json")
    with open(json_path, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    msg = ""
    if not a.throughput:
        msg = plot(a, runs, os.path.join(a.out, stem + ".png"), curves_dir)
    tgz = os.path.join(a.out, stem + "_runs.tgz")
    paths = [curves_dir] + [r["log"] for r in runs] + [r.get("metrics_csv") for r in runs] + \
        [r.get("json") for r in runs]
    pack(tgz, paths, a.runs_dir)
    print("\n%s\nwrote %s, %s%s" % (msg, json_path, tgz, "" if a.throughput else
                                     " (curves: time/elapsed_s = seconds from launch)"))
    S = summary
    if a.throughput:  # the last line: bench/run.sh's summary shows it
        print("pixels: steps/s cudarl %s, PyTorch %s: %sx (after the first iteration %sx)" % (
            fmt(S["cudarl_sps"], ".0f"), fmt(S["torch_sps"], ".0f"), fmt(S["sps_ratio"], ".2f"),
            fmt(S["sps_steady_ratio"], ".2f")))
    else:
        n = len(parse_seeds(a.seeds))
        print("pixels: %g reached by cudarl %d/%d (median %s s), PyTorch %d/%d (%s s); "
              "steps/s %sx" % (a.stop_at, S["cudarl_reached"], n, fmt(S["median_cudarl_s"], ".1f"),
                               S["torch_reached"], n, fmt(S["median_torch_s"], ".1f"),
                               fmt(S["median_sps_ratio"], ".2f")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
