#!/usr/bin/env python3
"""PPO on MinAtar against the clock: cudarl beside a JAX peer (PureJaxRL's PPO, ported in
bench/peers/ppo_minatar_jax.py), the return against wall time from launch.

  python3 bench/minatar.py --cudarl build-gpu/cudarl --out DIR [--games Breakout,Asterix]
      [--seeds 1,2,3] [--seconds 30] [--at 10,20,30] [--cudarl-args '--num-envs 512 ...']
      [--cudarl-device cuda] [--peer-python python3] [--peer-args '...'] [--skip-peer]
      [--runs-dir DIR] [--deadline S]

For each game, and each seed in turn, one run at a time (the GPU is shared):
  * cudarl: `cudarl train --device cuda --env-id MinAtar/<Game>-v1 --policy minatar-cnn --seed S`
    plus --cudarl-args (the recipe; default none), stopped with SIGINT --seconds after its launch.
    Its metrics.csv gives the mean return of the last 100 episodes (charts/mean_return_100) per
    iteration against time/elapsed_s, which counts from the start of its training loop. The
    wall time from launch is that plus the loop's start, read as the moment cudarl's line
    "training PPO on ..." (written to stderr, unbuffered, just before the loop starts) arrives.
  * the peer: bench/peers/ppo_minatar_jax.py --env <Game>-MinAtar --seed S --seconds SECONDS
    --launch-time <its launch>, with --peer-python; it prints the mean return of its last 100
    episodes after each chunk of updates, timed from its launch (imports and the compilation
    included). gymnax's MinAtar has no sticky actions and a time limit (1000 steps; Freeway
    2500); cudarl's MinAtar/<Game>-v1 follows MinAtar 1.0.15 (sticky actions 0.1, no limit).

Prints per game the mean over seeds of each side's return (and env steps) at each --at time
(default: a third, two thirds and all of --seconds: 10, 20, 30 s), the value at t being the last
one known at or before t, the ratio cudarl / peer and whether cudarl is ahead; the last line
sums it up. Writes to --out: summary.json (settings, every curve: t from launch, env steps,
return; the table), minatar.png (per game `cudarl plot`'s two panels: return against env steps
and against wall time from launch, cudarl beside the peer, each the mean over seeds with a
min-max band; the games stacked; without Pillow one PNG per game; without a working `cudarl
plot` matplotlib draws them) and runs.tgz (each run's output log and metrics, the peer's JSON).

--deadline S starts no game whose runs would end past S seconds from this script's start (its
estimate: seeds x 2 runs x (--seconds + the longest overrun seen, 10 s at first)); the games
left are named with the command that runs them. Exit status: 0, 1 if a run failed, 3 if the
deadline left games out.
"""
import argparse
import csv
import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time

T0 = time.time()
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEER = os.path.join(ROOT, "bench", "peers", "ppo_minatar_jax.py")
GAMES = ("Breakout", "Asterix", "Freeway", "SpaceInvaders", "Seaquest")
PEER_LABEL = "purejaxrl-jax"
# flags that minatar.py sets on each cudarl run itself
OWN_FLAGS = ("--env-id", "--seed", "--runs-dir", "--run-name", "--device", "--resume")


def parse_games(s):
    by_lower = {g.lower(): g for g in GAMES}
    out = []
    for w in s.split(","):
        w = w.strip()
        g = by_lower.get(w.lower())
        if g is None:
            raise argparse.ArgumentTypeError(
                "no MinAtar game '%s' in --games: give some of %s, comma-separated"
                % (w, ",".join(GAMES)))
        if g in out:
            raise argparse.ArgumentTypeError("--games names %s twice" % g)
        out.append(g)
    return out


def parse_seeds(s):
    out = []
    for w in s.split(","):
        try:
            v = int(w)
        except ValueError:
            raise argparse.ArgumentTypeError(
                "'%s' in --seeds is not a whole number: give seeds like 1,2,3" % w)
        if v < 0 or v in out:
            raise argparse.ArgumentTypeError(
                "--seeds: %d is %s" % (v, "negative" if v < 0 else "named twice"))
        out.append(v)
    return out


def positive_float(s):
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError("'%s' is not a number" % s)
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError("'%s': give a number of seconds above 0" % s)
    return v


def parse_at(s):
    return [positive_float(w) for w in s.split(",")]


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 2)[2])
    ap.add_argument("--cudarl", required=True, help="the cudarl CLI (e.g. build-gpu/cudarl)")
    ap.add_argument("--out", required=True, help="folder for summary.json, minatar.png, runs.tgz")
    ap.add_argument("--games", type=parse_games, default=list(GAMES),
                    help="comma-separated, default all: " + ",".join(GAMES))
    ap.add_argument("--seeds", type=parse_seeds, default=[1, 2, 3], help="default 1,2,3")
    ap.add_argument("--seconds", type=positive_float, default=30.0,
                    help="wall time of each run from its launch (default 30)")
    ap.add_argument("--at", type=parse_at, default=None,
                    help="times from launch to compare at, comma-separated (default: a third, "
                         "two thirds and all of --seconds)")
    ap.add_argument("--cudarl-args", default="",
                    help="more flags for cudarl train (the recipe), one string")
    ap.add_argument("--cudarl-device", default="cuda", choices=("cuda", "cpu"),
                    help="cudarl train --device (default cuda; cpu for a test without a GPU)")
    ap.add_argument("--peer-python", default=sys.executable,
                    help="the interpreter that runs the peer (needs jax and gymnax); default this one")
    ap.add_argument("--peer-args", default="",
                    help="more flags for the peer, one string (e.g. '--updates-per-chunk 5')")
    ap.add_argument("--skip-peer", action="store_true", help="run cudarl alone")
    ap.add_argument("--runs-dir", default=None,
                    help="scratch folder for the runs (default: a new temporary one)")
    ap.add_argument("--deadline", type=float, default=0,
                    help="start no game that would end past this many seconds from now (0: none)")
    ap.add_argument("--grace", type=positive_float, default=60.0,
                    help="seconds a run may take to stop after its time is up before it is "
                         "killed (default 60)")
    a = ap.parse_args(argv)
    if not (os.path.isfile(a.cudarl) and os.access(a.cudarl, os.X_OK)):
        ap.error("--cudarl %s is not an executable file: give the cudarl CLI you built "
                 "(e.g. build-gpu/cudarl)" % a.cudarl)
    a.cudarl = os.path.abspath(a.cudarl)
    try:
        a.cudarl_argv = shlex.split(a.cudarl_args)
        a.peer_argv = shlex.split(a.peer_args)
    except ValueError as e:
        ap.error("--cudarl-args / --peer-args: %s (quote them as one shell string)" % e)
    for w in a.cudarl_argv:
        if w.split("=")[0] in OWN_FLAGS:
            ap.error("--cudarl-args holds %s, which minatar.py sets itself (%s): leave it out"
                     % (w.split("=")[0], ", ".join(OWN_FLAGS)))
    if not a.skip_peer and not shutil.which(a.peer_python) and not os.path.isfile(a.peer_python):
        ap.error("--peer-python %s is no program: give the Python with jax and gymnax, or "
                 "--skip-peer" % a.peer_python)
    if a.at is None:
        a.at = [round(a.seconds * k / 3, 3) for k in (1, 2, 3)]
    for t in a.at:
        if t > a.seconds:
            ap.error("--at %g is past --seconds %g: the runs stop at --seconds" % (t, a.seconds))
    if not math.isfinite(a.deadline) or a.deadline < 0:
        ap.error("--deadline %s: give seconds, 0 or more (0: none)" % a.deadline)
    if os.path.exists(a.out) and not os.path.isdir(a.out):
        ap.error("--out %s is a file: give a folder" % a.out)
    return a


# ---- running one program against the clock ------------------------------------------------------

def default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a shell may have the child ignore it


def run_timed(cmd, seconds, grace, log_path):
    """Runs cmd (stdout and stderr together), stopping it with SIGINT `seconds` after its launch
    and killing it `grace` seconds later. Returns (launch unix time, exit status, [(s after
    launch, line)], seconds after launch it was stopped at, or None if it ended first)."""
    launch = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         bufsize=1, cwd=ROOT, preexec_fn=default_sigint, errors="replace")
    lines = []

    def read():
        for line in p.stdout:
            lines.append((time.time() - launch, line.rstrip("\n")))

    th = threading.Thread(target=read, daemon=True)
    th.start()
    stopped = None
    try:
        p.wait(timeout=max(0.0, launch + seconds - time.time()))
    except subprocess.TimeoutExpired:
        stopped = time.time() - launch
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    th.join(timeout=10)
    with open(log_path, "w") as f:
        f.write("# %s\n# launched at unix time %.3f; %s\n"
                % (" ".join(shlex.quote(c) for c in cmd), launch,
                   "SIGINT at %.3f s" % stopped if stopped is not None else "ended by itself"))
        for t, line in lines:
            f.write("%9.3f %s\n" % (t, line))
    return launch, p.returncode, lines, stopped


def tail(lines, n=15):
    return "\n".join("    " + l for _, l in lines[-n:])


def run_cudarl(a, game, seed, runs):
    name = "cudarl-s%d" % seed
    shutil.rmtree(os.path.join(runs, name), ignore_errors=True)
    cmd = [a.cudarl, "train", "--device", a.cudarl_device, "--env-id", "MinAtar/%s-v1" % game,
           "--policy", "minatar-cnn", "--seed", str(seed)] + a.cudarl_argv + \
          ["--runs-dir", runs, "--run-name", name]
    launch, rc, lines, stopped = run_timed(cmd, a.seconds, a.grace,
                                           os.path.join(runs, name + ".log"))
    res = {"side": "cudarl", "seed": seed, "cmd": " ".join(shlex.quote(c) for c in cmd), "rc": rc,
           "stopped_at_s": stopped, "wall_s": time.time() - launch, "curve": [], "error": None}
    path = os.path.join(runs, name, "metrics.csv")
    if rc not in (0, 130) or not os.path.isfile(path):
        res["error"] = "cudarl exited with status %s%s; its last lines:\n%s" % (
            rc, "" if os.path.isfile(path) else " and wrote no %s" % path, tail(lines))
        return res
    # the loop's start, seconds after launch: when "training PPO on" arrived
    loop = next((t for t, l in lines if "training PPO on" in l), None)
    with open(path) as f:
        rows = list(csv.DictReader(f))
    if loop is None:  # no such line (CUDARL_LOG=error?): the loop ended at the stop, at the latest
        end = stopped if stopped is not None else res["wall_s"]
        loop = end - float(rows[-1]["time/elapsed_s"]) if rows else 0.0
        res["loop_start_estimated"] = True
    res["loop_start_s"] = loop
    for r in rows:
        m = r.get("charts/mean_return_100", "")
        if m == "":
            continue
        res["curve"].append([round(loop + float(r["time/elapsed_s"]), 4), int(r["global_step"]),
                             float(m)])
    if not res["curve"]:
        res["error"] = "cudarl's metrics.csv has no row with a mean return (no episode ended " \
                       "in %g s); its last lines:\n%s" % (a.seconds, tail(lines))
    return res


PEER_LINE = re.compile(r"^t=([0-9.]+) step=(\d+) return=(\S+)")


def run_peer(a, game, seed, runs):
    name = "jax-s%d" % seed
    js = os.path.join(runs, name + ".json")
    if os.path.exists(js):
        os.remove(js)
    launch_arg = "--launch-time"
    cmd = [a.peer_python, PEER, "--env", game + "-MinAtar", "--seed", str(seed), "--seconds",
           repr(a.seconds)] + a.peer_argv + ["--json", js]
    # the peer stops itself after the first chunk past --seconds; the guard is for a hang
    launch = time.time()
    launch, rc, lines, stopped = run_timed(cmd + [launch_arg, "%.6f" % launch],
                                           a.seconds + a.grace, a.grace,
                                           os.path.join(runs, name + ".log"))
    res = {"side": "peer", "seed": seed, "cmd": " ".join(shlex.quote(c) for c in cmd), "rc": rc,
           "stopped_at_s": stopped, "wall_s": time.time() - launch, "curve": [], "error": None}
    for _, l in lines:
        m = PEER_LINE.match(l)
        if m and m.group(3) != "nan":
            res["curve"].append([float(m.group(1)), int(m.group(2)), float(m.group(3))])
        if l.startswith("ppo_minatar_jax: init done"):
            m = re.search(r"compile=([0-9.]+)", l)
            res["compile_s"] = float(m.group(1)) if m else None
    if os.path.isfile(js):
        with open(js) as f:
            j = json.load(f)
        res["config"], res["device"] = j.get("config"), j.get("device")
    if rc != 0 or not res["curve"]:
        res["error"] = "the peer %s; its last lines:\n%s" % (
            "exited with status %s" % rc if rc != 0 else "printed no return", tail(lines))
    return res


# ---- the figures ----------------------------------------------------------------------------------

def value_at(curve, t):
    """(return, env steps) of the last point at or before t; None if none."""
    best = None
    for pt in curve:
        if pt[0] <= t:
            best = pt
    return (best[2], best[1]) if best else None


def side_at(results, t):
    """The mean over seeds of (return, steps) at t, and how many seeds had a value."""
    vals = [v for v in (value_at(r["curve"], t) for r in results if not r["error"]) if v]
    if not vals:
        return None, None, 0
    return (sum(v[0] for v in vals) / len(vals), sum(v[1] for v in vals) / len(vals), len(vals))


def fmt_steps(s):
    if s is None:
        return "-"
    return "%.2fM" % (s / 1e6) if s >= 1e6 else "%.0fk" % (s / 1e3)


def game_table(a, game, cud, peer):
    rows = []
    n = len(a.seeds)
    print("\n== %s: MinAtar/%s-v1 (cudarl) | %s-MinAtar (peer), seeds %s, %g s each"
          % (game, game, game, ",".join(map(str, a.seeds)), a.seconds))
    print("| from launch | cudarl return | cudarl steps | peer return | peer steps | "
          "cudarl / peer | cudarl ahead |")
    print("|---:|---:|---:|---:|---:|---:|---|")
    for t in a.at:
        cr, cs, cn = side_at(cud, t)
        pr, ps, pn = side_at(peer, t) if peer else (None, None, 0)
        ratio = None
        if cr is not None and pr is not None:
            ratio = cr / pr if pr > 0 else (math.inf if cr > 0 else None)
        ahead = "-" if cr is None or pr is None else ("yes" if cr > pr else "no")
        f = lambda v, k: "-" if v is None else "%.2f%s" % (v, "" if k == n else " (%d/%d)" % (k, n))  # noqa: E731
        print("| %g s | %s | %s | %s | %s | %s | %s |"
              % (t, f(cr, cn), fmt_steps(cs), f(pr, pn) if peer else "not run", fmt_steps(ps),
                 "-" if ratio is None else "%.2f" % ratio, ahead))
        rows.append({"t": t, "cudarl_return": cr, "cudarl_steps": cs, "cudarl_seeds": cn,
                     "peer_return": pr, "peer_steps": ps, "peer_seeds": pn,
                     "ratio": None if ratio is None or math.isinf(ratio) else ratio,
                     "cudarl_ahead": None if ahead == "-" else ahead == "yes"})
    ls = [r["loop_start_s"] for r in cud if "loop_start_s" in r]
    cs = [r["compile_s"] for r in peer if r.get("compile_s") is not None]
    print("cudarl: launch to loop start %s s%s"
          % ("/".join("%.2f" % v for v in ls) or "-",
             "; peer: compile %s s (inside its time)" % ("/".join("%.2f" % v for v in cs) or "-")
             if peer else ""))
    for r in cud + peer:
        if r["error"]:
            print("%s seed %d FAILED: %s" % (r["side"], r["seed"], r["error"]))
    return rows


# ---- plots --------------------------------------------------------------------------------------

def write_plot_runs(folder, results, label):
    """Each run's curve as a run folder with a metrics.csv `cudarl plot` reads (time/elapsed_s
    holding the time from launch); the folders."""
    dirs = []
    for r in results:
        if not r["curve"]:
            continue
        d = os.path.join(folder, "%s-s%d" % (label, r["seed"]))
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "metrics.csv"), "w") as f:
            f.write("global_step,time/elapsed_s,charts/mean_return_100\n")
            for t, s, v in r["curve"]:
                f.write("%d,%.4f,%.6g\n" % (s, t, v))
        dirs.append(d)
    return dirs


def plot_cudarl(a, results, work):
    """One PNG per game by `cudarl plot`; the paths, or None if it failed."""
    pngs = []
    for game in results:
        folder = os.path.join(work, "plot", game)
        dirs, labels = [], []
        for side, label in (("cudarl", "cudarl"), ("peer", PEER_LABEL)):
            d = write_plot_runs(folder, results[game][side], label)
            dirs += d
            labels += [label] * len(d)
        if not dirs:
            continue
        png = os.path.join(work, "plot", game + ".png")
        p = subprocess.run([a.cudarl, "plot"] + dirs + ["--group", ",".join(labels), "--out", png],
                           capture_output=True, text=True)
        if p.returncode != 0 or not os.path.isfile(png):
            print("minatar.py: cudarl plot failed (%d): %s" % (p.returncode,
                                                              (p.stderr or p.stdout).strip()[-300:]))
            return None
        pngs.append((game, png))
    return pngs


def stack_pngs(pngs, out):
    """The games' PNGs one under another, each headed by its name, into out/minatar.png;
    without Pillow each PNG is copied as it is. The files written."""
    try:
        from PIL import Image, ImageDraw
    except ImportError:
        print("minatar.py: no Pillow: one PNG per game")
        files = []
        for game, png in pngs:
            shutil.copy(png, os.path.join(out, "minatar_%s.png" % game))
            files.append(os.path.join(out, "minatar_%s.png" % game))
        return files
    ims = [(g, Image.open(p).convert("RGB")) for g, p in pngs]
    head = 24
    w = max(im.width for _, im in ims)
    h = sum(im.height + head for _, im in ims)
    sheet = Image.new("RGB", (w, h), "white")
    d = ImageDraw.Draw(sheet)
    y = 0
    for g, im in ims:
        d.text((10, y + 6), "MinAtar %s: cudarl (MinAtar/%s-v1) beside %s (%s-MinAtar); wall "
               "time counts from launch" % (g, g, PEER_LABEL, g), fill="black")
        sheet.paste(im, (0, y + head))
        y += im.height + head
    path = os.path.join(out, "minatar.png")
    sheet.save(path)
    return [path]


def plot_matplotlib(results, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("minatar.py: no plots: `cudarl plot` failed and matplotlib is not importable")
        return []
    games = list(results)
    fig, axes = plt.subplots(len(games), 2, figsize=(12, 3.6 * len(games)), squeeze=False)
    for i, g in enumerate(games):
        for side, color, label in (("cudarl", "C0", "cudarl"), ("peer", "C1", PEER_LABEL)):
            for k, r in enumerate(results[g][side]):
                if not r["curve"]:
                    continue
                t, s, v = zip(*r["curve"])
                lab = label if k == 0 else None
                axes[i][0].plot(s, v, color=color, lw=1, label=lab)
                axes[i][1].plot(t, v, color=color, lw=1, label=lab)
        axes[i][0].set_xlabel("env steps")
        axes[i][1].set_xlabel("wall time from launch, s")
        for ax in axes[i]:
            ax.set_ylabel("mean return of the last 100")
            ax.set_title("MinAtar %s" % g)
            ax.grid(alpha=0.3)
        axes[i][0].legend()
    fig.tight_layout()
    path = os.path.join(out, "minatar.png")
    fig.savefig(path, dpi=80)
    return [path]


def pack_runs(runs, out):
    """The runs' logs, metrics.csv, config.toml and the peer's JSON, into out/runs.tgz."""
    path = os.path.join(out, "runs.tgz")
    with tarfile.open(path, "w:gz") as tar:
        for base, _, files in os.walk(runs):
            for fn in sorted(files):
                if fn.endswith((".log", ".json", ".csv", ".toml")) and "/plot/" not in base + "/":
                    full = os.path.join(base, fn)
                    tar.add(full, arcname=os.path.join("runs", os.path.relpath(full, runs)))
    return path


# ---- main -----------------------------------------------------------------------------------------

def rest_command(argv, games):
    """This command line for `games` alone: without --games, --deadline, --out and --runs-dir."""
    drop = ("--games", "--deadline", "--out", "--runs-dir")
    keep, i = [], 0
    while i < len(argv):
        w = argv[i]
        if w in drop:
            i += 2
            continue
        if not w.startswith("--") or w.split("=")[0] not in drop:
            keep.append(w)
        i += 1
    env = ["PYTHONPATH=" + os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []
    return " ".join(env + [shlex.quote(w) for w in [sys.executable, os.path.relpath(__file__, ROOT)]
                           + keep + ["--games", ",".join(games), "--out", "DIR"]])


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    a = parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    runs = a.runs_dir or tempfile.mkdtemp(prefix="minatar-bench-")
    os.makedirs(runs, exist_ok=True)
    print("minatar.py: %s games %s, seeds %s, %g s a run from launch, cudarl %s --device %s%s; "
          "peer %s; runs in %s"
          % ("PPO on MinAtar:", ",".join(a.games), ",".join(map(str, a.seeds)), a.seconds,
             a.cudarl, a.cudarl_device, " " + a.cudarl_args if a.cudarl_args else "",
             "skipped" if a.skip_peer else "%s %s%s" % (a.peer_python, os.path.relpath(PEER, ROOT),
                                                       " " + a.peer_args if a.peer_args else ""),
             runs), flush=True)
    results, tables, skipped = {}, {}, []
    overrun = 10.0  # seconds a run takes past --seconds, the most seen
    failed = False
    for gi, game in enumerate(a.games):
        sides = 1 if a.skip_peer else 2
        need = len(a.seeds) * sides * (a.seconds + overrun)
        if a.deadline and time.time() - T0 + need > a.deadline:
            skipped = a.games[gi:]
            break
        gdir = os.path.join(runs, game)
        os.makedirs(gdir, exist_ok=True)
        results[game] = {"cudarl": [], "peer": []}
        for seed in a.seeds:
            r = run_cudarl(a, game, seed, gdir)
            overrun = max(overrun, r["wall_s"] - a.seconds)
            results[game]["cudarl"].append(r)
            print("minatar.py: %s seed %d cudarl: %s" % (game, seed, summary_line(r)), flush=True)
            if not a.skip_peer:
                r = run_peer(a, game, seed, gdir)
                overrun = max(overrun, r["wall_s"] - a.seconds)
                results[game]["peer"].append(r)
                print("minatar.py: %s seed %d peer: %s" % (game, seed, summary_line(r)), flush=True)
        tables[game] = game_table(a, game, results[game]["cudarl"], results[game]["peer"])
        failed |= any(r["error"] for r in results[game]["cudarl"] + results[game]["peer"])

    files = []
    if results:
        pngs = plot_cudarl(a, results, runs)
        files += stack_pngs(pngs, a.out) if pngs else plot_matplotlib(results, a.out)
        files.append(pack_runs(runs, a.out))
    summary = {"settings": {k: getattr(a, k) for k in ("games", "seeds", "seconds", "at",
                                                       "cudarl", "cudarl_args", "cudarl_device",
                                                       "peer_python", "peer_args", "skip_peer")},
               "curve_columns": ["s from launch", "env steps", "mean return of the last 100"],
               "games": {g: {"table": tables[g], "cudarl": results[g]["cudarl"],
                             "peer": results[g]["peer"]} for g in results},
               "skipped_by_deadline": skipped}
    path = os.path.join(a.out, "summary.json")
    with open(path, "w") as f:
        json.dump(summary, f, indent=1)
    files.insert(0, path)
    print("\nminatar.py: wrote %s" % ", ".join(files))
    if skipped:
        print("minatar.py: the --deadline (%g s) left out %s; run them with: %s"
              % (a.deadline, ",".join(skipped), rest_command(argv, skipped)))
    # the last line: what bench/run.sh shows in its summary
    last = []
    for g in results:
        r = tables[g][-1]
        last.append("%s %s" % (g, "-" if r["ratio"] is None else "%.2f" % r["ratio"]))
    ahead = sum(1 for g in results if tables[g][-1]["cudarl_ahead"])
    print("minatar.py: return at %g s, cudarl / peer: %s; cudarl ahead in %d of %d games%s%s"
          % (a.at[-1], ", ".join(last) or "-", ahead, len(results),
             "; FAILED runs above" if failed else "",
             "; left out: " + ",".join(skipped) if skipped else ""))
    return 1 if failed else 3 if skipped else 0


def summary_line(r):
    if r["error"]:
        return "FAILED (status %s)" % r["rc"]
    t, s, v = r["curve"][-1]
    return "%d points, last at %.1f s: %d steps, return %.2f (status %s, %.1f s wall)" % (
        len(r["curve"]), t, s, v, r["rc"], r["wall_s"])


if __name__ == "__main__":
    sys.exit(main())
