#!/usr/bin/env python3
"""Continuous control side by side in one invocation (issue 24's benchmark): cudarl's Gaussian PPO
against CleanRL's ppo_continuous_action.py on the same task.

  python3 bench/continuous.py --cudarl build/cudarl --cleanrl PATH/ppo_continuous_action.py \
      --cleanrl-pythonpath DIR [--pendulum-seeds 3] [--cheetah-seeds 3] [--hopper-seeds 3]
      [--cleanrl-seconds 120]
      [--device cuda|cpu] [--env-threads 16] [--cleanrl-cuda] [--out results.json]

CleanRL's robot run gets a quarter of --cleanrl-seconds (its steps/s is what is wanted).

Rows:
  1. Pendulum-v1: cudarl (--device cuda: the GPU learner; the envs where --env-device auto puts
     them) with the continuous preset, per seed: the time from launch to a mean return of -200
     over the last 100 episodes, and the mean at the end. CleanRL on Gymnasium's Pendulum-v1 (its
     defaults: one env, 2048 steps per rollout, the GPU for the network), timed from launch as its
     episodes print, stopped at -200 or after --cleanrl-seconds.
  2. HalfCheetah: cudarl 1M steps with 16 env threads and the GPU learner, per seed: wall time,
     steps/s, the mean return at 1M and the time from launch to a mean of 1,800. CleanRL on
     Gymnasium's HalfCheetah for --cleanrl-seconds: its steps/s, and the time it would take to
     1M steps at that rate (it is not run to the end: about an hour).
  3. Hopper: cudarl 1M steps as row 2, per seed, and the time from launch to a mean of 2,000.
"From launch" for cudarl: the process's wall time to the end minus the training loop's time
(metrics.csv's time/elapsed_s of the last row), plus the loop time of the first row at the
threshold; for CleanRL the time its episode line arrives. Prints a table and the ratios."""
import argparse
import collections
import csv
import glob
import json
import os
import re
import subprocess
import sys
import time


def cudarl_run(cudarl, env, seed, runs, extra, threshold, device):
    name = "%s_s%d" % (env, seed)
    cmd = [cudarl, "train", "--env-id", env, "--seed", str(seed), "--device", device, "--quiet",
           "--runs-dir", runs, "--run-name", name] + extra
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.time() - t0
    if p.returncode != 0:
        sys.exit("cudarl failed (%d): %s\n%s\n%s" % (p.returncode, " ".join(cmd), p.stdout,
                                                    p.stderr))
    rows = list(csv.DictReader(open(os.path.join(runs, name, "metrics.csv"))))
    loop = float(rows[-1]["time/elapsed_s"])
    setup = wall - loop
    solved = None
    for r in rows:
        m = r["charts/mean_return_100"]
        if m and float(m) >= threshold and float(r["charts/episodes"]) >= 100:
            solved = (int(r["global_step"]), setup + float(r["time/elapsed_s"]))
            break
    last = rows[-1]
    return {"cmd": " ".join(cmd), "wall_s": wall, "setup_s": setup, "loop_s": loop,
            "steps": int(last["global_step"]), "sps": int(last["global_step"]) / loop,
            "final_mean_100": float(last["charts/mean_return_100"] or "nan"),
            "solved": solved}


def cleanrl_run(script, pythonpath, env, seed, seconds, threshold, cuda):
    """CleanRL's script as a subprocess; episodes timed as they print; stopped at the
    threshold or after `seconds`."""
    penv = dict(os.environ, PYTHONPATH=pythonpath)
    cmd = [sys.executable, script, "--env-id", env, "--seed", str(seed), "--no-track",
           "--total-timesteps", "1000000"] + ([] if cuda else ["--no-cuda"])
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=penv, cwd="/tmp")
    returns = collections.deque(maxlen=100)
    step, solved, last, sps = 0, None, "", None
    for line in p.stdout:
        last = line
        m = re.match(r"global_step=(\d+), episodic_return=\[?([-0-9.e]+)", line)
        if m:
            step = int(m.group(1))
            returns.append(float(m.group(2)))
            if (solved is None and len(returns) == 100 and
                    sum(returns) / len(returns) >= threshold):
                solved = (step, time.perf_counter() - t0)
                p.kill()
                break
        m = re.match(r"SPS: (\d+)", line)
        if m:
            sps = int(m.group(1))
        if time.perf_counter() - t0 > seconds:
            p.kill()
            break
    p.wait()
    wall = time.perf_counter() - t0
    if step == 0:
        raise RuntimeError("CleanRL printed no episode; its last line: " + last)
    return {"cmd": " ".join(cmd), "wall_s": wall, "steps": step, "sps_printed": sps,
            "sps_wall": step / wall,
            "mean_100": sum(returns) / len(returns) if returns else None, "solved": solved}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cudarl", required=True)
    ap.add_argument("--cleanrl", help="CleanRL's ppo_continuous_action.py")
    ap.add_argument("--cleanrl-pythonpath", default="")
    ap.add_argument("--cleanrl-seconds", type=float, default=120)
    ap.add_argument("--pendulum-seeds", type=int, default=3)
    ap.add_argument("--cheetah-seeds", type=int, default=3)
    ap.add_argument("--cheetah-env", default="HalfCheetah-v5")
    ap.add_argument("--cleanrl-cheetah-env", default="HalfCheetah-v4")
    ap.add_argument("--hopper-seeds", type=int, default=0)
    ap.add_argument("--hopper-env", default="Hopper-v5")
    ap.add_argument("--runs", default="/tmp/bench-continuous")
    ap.add_argument("--device", default="cuda", help="cudarl's --device (the learner's)")
    ap.add_argument("--env-threads", default="16", help="cudarl's --env-threads for the robot")
    ap.add_argument("--cleanrl-cuda", action="store_true",
                    help="CleanRL's network on the GPU (its default); else --no-cuda")
    ap.add_argument("--out")
    a = ap.parse_args()
    res = {"pendulum": [], "cheetah": [], "hopper": [], "cleanrl": {}}
    for s in range(1, a.pendulum_seeds + 1):
        r = cudarl_run(a.cudarl, "Pendulum-v1", s, a.runs, [], -200, a.device)
        res["pendulum"].append(r)
        print("cudarl Pendulum-v1 seed %d: %s, mean(100) %.1f at %d steps, %.0f steps/s" %
              (s, "-200 at %.1f s from launch (step %d)" % (r["solved"][1], r["solved"][0])
               if r["solved"] else "never -200", r["final_mean_100"], r["steps"], r["sps"]),
              flush=True)
    for s in range(1, a.cheetah_seeds + 1):
        r = cudarl_run(a.cudarl, a.cheetah_env, s, a.runs, ["--env-threads", a.env_threads], 1800,
                       a.device)
        res["cheetah"].append(r)
        print("cudarl %s seed %d: 1M steps in %.1f s (%.0f steps/s), mean(100) %.0f, 1800 %s" %
              (a.cheetah_env, s, r["wall_s"], r["sps"], r["final_mean_100"],
               "at %.1f s" % r["solved"][1] if r["solved"] else "not reached"), flush=True)
    for s in range(1, a.hopper_seeds + 1):
        r = cudarl_run(a.cudarl, a.hopper_env, s, a.runs, ["--env-threads", a.env_threads], 2000,
                       a.device)
        res["hopper"].append(r)
        print("cudarl %s seed %d: 1M steps in %.1f s (%.0f steps/s), mean(100) %.0f, 2000 %s" %
              (a.hopper_env, s, r["wall_s"], r["sps"], r["final_mean_100"],
               "at %.1f s" % r["solved"][1] if r["solved"] else "not reached"), flush=True)
    for name, rows in (("cheetah", res["cheetah"]), ("hopper", res["hopper"])):
        if rows:
            means = [r["final_mean_100"] for r in rows]
            print("cudarl %s: mean over %d seeds of the mean(100) at 1M: %.0f (min %.0f)" %
                  (name, len(rows), sum(means) / len(means), min(means)), flush=True)
    if a.cleanrl:
        pen = cleanrl_run(a.cleanrl, a.cleanrl_pythonpath, "Pendulum-v1", 1, a.cleanrl_seconds,
                          -200, a.cleanrl_cuda)
        res["cleanrl"]["pendulum"] = pen
        print("CleanRL Pendulum-v1: %s; %d steps in %.0f s (%.0f steps/s), mean(100) %s" %
              ("-200 at %.1f s" % pen["solved"][1] if pen["solved"] else "not -200",
               pen["steps"], pen["wall_s"], pen["sps_wall"], pen["mean_100"]), flush=True)
        ch = cleanrl_run(a.cleanrl, a.cleanrl_pythonpath, a.cleanrl_cheetah_env, 1,
                         a.cleanrl_seconds / 4, 1e9, a.cleanrl_cuda)
        res["cleanrl"]["cheetah"] = ch
        to_1m = 1e6 / ch["sps_wall"]
        ours = sum(r["wall_s"] for r in res["cheetah"]) / max(1, len(res["cheetah"]))
        print("CleanRL %s: %d steps in %.0f s (%.0f steps/s): 1M steps in ~%.0f s; cudarl's "
              "1M steps %.1f s: %.1fx sooner" % (a.cleanrl_cheetah_env, ch["steps"],
                                                   ch["wall_s"], ch["sps_wall"], to_1m, ours,
                                                   to_1m / ours if ours else 0), flush=True)
        res["cleanrl"]["cheetah_1m_s_estimate"] = to_1m
    if a.out:
        json.dump(res, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
