#!/usr/bin/env python3
"""Signals sent to a running `cudarl train`: what `timeout`, `docker stop`, `kill`, Slurm and a
closed terminal do to a run.

SIGTERM, SIGHUP and SIGINT each stop a PPO run after its iteration: the exit code is 128 plus
the signal's number (143, 129, 130), stdout names the signal and the `--resume` command, the
final checkpoint is in step with metrics.csv, `cudarl eval` loads it, `--resume` continues from
its step, and the run folder holds no temp file. SIGTERM delivered twice 2 ms apart (as timeout(1)
does: to its command, then to its process group) is one request. DQN stops on SIGTERM the same
way. SIGKILL at random points of a run that checkpoints every iteration: the last checkpoint
always loads and resumes, and a temp file the kill left behind is gone once the run resumes.

    python3 test_signals.py --cudarl build/cudarl --work build/signals-work [--only GROUP]

GROUP is one of: term, hup, int, dqn, kill (default: all). Each group works in its own folder
<work>/<group>, emptied first. Needs Python 3 with numpy and safetensors (test_cli.py's helpers).
"""
import argparse
import os
import random
import signal
import subprocess
import sys
import time

import test_cli as cli
from test_cli import (BATCH, NUM_ENVS, NUM_STEPS, Result, check, checkpoint_metadata, env_with,
                      fail, fresh_dir, metrics_without_timing, no_temp_files, run_ok)

# a run far longer than any test waits: only a signal ends it
LONG = ["--device", "cpu", "--threads", "1", "--quiet", "--runs-dir", "runs",
        "--total-timesteps", "50000000"]
PPO = LONG + ["--num-envs", str(NUM_ENVS), "--num-steps", str(NUM_STEPS)]


def start(work, name, args, marker):
    """Starts `cudarl train args` and returns (process, stdout path, stderr path) once its
    stderr shows `marker` (the signal handlers are in place by then)."""
    out_path, err_path = (os.path.join(work, f"{name}.{s}") for s in ("stdout", "stderr"))
    argv = [cli.CUDARL, "train", *args]
    with open(out_path, "w") as out, open(err_path, "w") as err:
        p = subprocess.Popen(argv, cwd=work, env=env_with("info"), stdout=out, stderr=err)
    deadline = time.monotonic() + 60
    while p.poll() is None and time.monotonic() < deadline:
        with open(err_path) as f:
            if marker in f.read():
                return p, argv, out_path, err_path
        time.sleep(0.01)
    p.kill()
    p.wait()
    with open(err_path) as f:
        fail(f"run {name} starts training", f"'{marker}' on stderr within 60 s",
             f"  exit code {p.returncode}\n  stderr: {f.read().rstrip()}")


def finish(p, argv, out_path, err_path):
    try:
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    with open(out_path) as f_out, open(err_path) as f_err:
        return Result(argv, p.returncode, f_out.read(), f_err.read())


def signalled_run(work, name, args, sig, marker="training PPO on", twice=False):
    """A run sent `sig` (twice, 2 ms apart, with `twice`) 0.3 s into its training loop."""
    p, *rest = start(work, name, args, marker)
    time.sleep(0.3)
    p.send_signal(sig)
    if twice:
        time.sleep(0.002)
        if p.poll() is None:
            p.send_signal(sig)
    return finish(p, *rest)


def step_of(ckpt):
    return int(checkpoint_metadata(ckpt).get("global_step", "-1"))


def loads(work, ckpt, what):
    """`cudarl eval` reads the checkpoint and plays one episode."""
    r = run_ok(f"eval loads {what}", ["eval", ckpt, "--episodes", "1"], work)
    if "mean return" not in r.out:
        fail(f"eval of {what}", "a mean return on stdout", r.describe())


def stops_and_resumes(work, sig, twice=False):
    name = signal.Signals(sig).name
    run_dir = os.path.join(work, "runs", name)
    ckpt = os.path.join(run_dir, "model.safetensors")
    how = " twice, 2 ms apart" if twice else ""
    check(f"{name}{how} 0.3 s into a PPO run: exit code {128 + sig}, the signal and the resume "
          "command on stdout")
    r = signalled_run(work, name, PPO + ["--run-name", name], sig, twice=twice)
    if r.rc != 128 + sig:
        fail(f"a run stopped by {name}", f"exit code {128 + sig}", r.describe())
    resume = f"cudarl train --resume runs/{name}/model.safetensors"
    if f"stopped by {name}" not in r.out or resume not in r.out:
        fail(f"a run stopped by {name} says so", f"'stopped by {name}' and '{resume}' on stdout",
             r.describe())

    check("its final checkpoint is in step with metrics.csv and loads")
    step = step_of(ckpt)
    rows = len(metrics_without_timing(os.path.join(run_dir, "metrics.csv"))) - 1
    if not (step > 0 and step % BATCH == 0 and rows * BATCH == step):
        fail("the final checkpoint", f"global_step > 0, a multiple of {BATCH}, equal to metrics "
             f"rows x {BATCH}", f"  got: global_step {step}, {rows} metrics rows")
    loads(work, ckpt, f"the checkpoint {name} left")
    no_temp_files(run_dir)

    check("--resume continues from its step")
    total = step + 2 * BATCH
    run_ok(f"resume after {name}", ["train", "--resume", ckpt, "--quiet", "--total-timesteps",
                                    str(total)], work)
    if step_of(ckpt) != total:
        fail("the resumed run's checkpoint", f"global_step {total}", f"  got: {step_of(ckpt)}")
    no_temp_files(run_dir)


def test_term(work):
    stops_and_resumes(work, signal.SIGTERM, twice=True)


def test_hup(work):
    stops_and_resumes(work, signal.SIGHUP)


def test_int(work):
    stops_and_resumes(work, signal.SIGINT)


def test_dqn(work):
    check("SIGTERM 0.3 s into a DQN run: exit code 143, its checkpoint resumes the run")
    r = signalled_run(work, "dqn", LONG + ["--algo", "dqn", "--run-name", "dqn"],
                      signal.SIGTERM, marker="training DQN on")
    ckpt = os.path.join(work, "runs", "dqn", "model.safetensors")
    if r.rc != 143 or ("stopped by SIGTERM; continue with: cudarl train --resume "
                       "runs/dqn/model.safetensors") not in r.out:
        fail("a DQN run stopped by SIGTERM", "exit code 143, 'stopped by SIGTERM; continue with: "
             "cudarl train --resume runs/dqn/model.safetensors' on stdout", r.describe())
    loads(work, ckpt, "the DQN checkpoint SIGTERM left")
    no_temp_files(os.path.join(work, "runs", "dqn"))


def test_kill(work):
    """SIGKILL cannot be caught: what survives is the last checkpoint, written whole or not at
    all. A run of hidden 256 checkpointing every iteration spends much of its time writing, so a
    kill often lands mid-write and leaves model.safetensors.tmp.<pid>."""
    rng = random.Random(int(os.environ.get("CUDARL_TEST_SEED", "22")))
    run_dir = os.path.join(work, "runs", "killed")
    ckpt = os.path.join(run_dir, "model.safetensors")
    every = ["--checkpoint-every", "1"]
    args = PPO + ["--run-name", "killed", "--hidden", "256", *every]
    temps = 0
    for k in range(6):
        delay = rng.uniform(0.0, 0.4)
        check(f"round {k}: SIGKILL {delay:.3f} s after a checkpoint exists; the last checkpoint "
              "loads and resumes")
        if k == 0:
            p, argv, *rest = start(work, "killed", args, "training PPO on")
        else:  # every later round resumes the run the previous one killed
            p, argv, *rest = start(work, "killed", ["--resume", ckpt, "--device", "cpu",
                                                    "--threads", "1", "--quiet", *every],
                                   "training PPO on")
        while p.poll() is None and not os.path.exists(ckpt):
            time.sleep(0.005)
        time.sleep(delay)
        p.kill()
        r = finish(p, argv, *rest)
        if r.rc != -signal.SIGKILL:
            fail(f"round {k}: the run was killed", f"returncode {-signal.SIGKILL}", r.describe())
        left = [f for f in os.listdir(run_dir) if ".tmp." in f]
        temps += bool(left)
        step = step_of(ckpt)
        if step <= 0 or step % BATCH:
            fail(f"round {k}: the checkpoint after the kill", f"a step > 0, a multiple of {BATCH}",
                 f"  got: {step}")
        loads(work, ckpt, f"the checkpoint of round {k} (step {step})")
    check("a resume of the killed run finishes it, and the kills' temp files are gone")
    total = step_of(ckpt) + 2 * BATCH
    run_ok("resume the killed run", ["train", "--resume", ckpt, "--quiet", "--total-timesteps",
                                     str(total)], work)
    if step_of(ckpt) != total:
        fail("the resumed run's checkpoint", f"global_step {total}", f"  got: {step_of(ckpt)}")
    no_temp_files(run_dir)
    print(f"  6 kills, {temps} of them left a temp file (removed by the next resume)", flush=True)


GROUPS = {"term": test_term, "hup": test_hup, "int": test_int, "dqn": test_dqn,
          "kill": test_kill}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cudarl", required=True, help="path of the cudarl binary")
    ap.add_argument("--work", required=True, help="scratch folder (emptied per group)")
    ap.add_argument("--only", choices=sorted(GROUPS), help="run one group of checks")
    args = ap.parse_args()
    cli.CUDARL = os.path.abspath(args.cudarl)
    if not os.access(cli.CUDARL, os.X_OK):
        fail("the cudarl binary exists", f"an executable at {cli.CUDARL}",
             "  got: none; build first")
    for name, fn in GROUPS.items():
        if args.only and name != args.only:
            continue
        print(f"== {name}", flush=True)
        fn(fresh_dir(os.path.abspath(os.path.join(args.work, name))))
    print("all checks passed")


if __name__ == "__main__":
    sys.exit(main())
