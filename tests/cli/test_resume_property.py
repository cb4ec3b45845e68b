#!/usr/bin/env python3
"""Resume property test: no damaged training state crashes `cudarl train --resume`.

Trains small checkpoints with the built `cudarl` (PPO's MLP on CartPole-v1 with its envs in the
env batch and on CPU threads, on Acrobot-v1 in the env batch (its block saved whole), PPO's
minatar-cnn on a MinAtar game, DQN's MLP and minatar-cnn),
then corrupts every `state.*` tensor of each PPO checkpoint in several ways (NaN, inf, negative
and huge values, integers out of range, random and flipped bytes) and resumes each copy. Every
resume must end cleanly: either refused (exit code 1, one line on stderr naming the checkpoint
and the tensor) or, where the damaged value is still a state the run can go on from (a
negative return, a byte of an observation), trained to its end (exit code 0). A signal, an
assertion, a sanitizer report or a hang fails the test, and so does a corruption that must be
refused (NaN, inf, a negative count, a random env state) being taken. A value a run can go on
from may also drive DQN's TD loss to inf (a huge observation through its ReLU network): that
run stops with its one-line divergence message, which counts as clean.

Also: NaN weights and inf Adam moments are refused by resume, eval and export, naming the
tensor; DQN's checkpoints (its MLP with prioritized replay on the env batch, minatar-cnn on CPU
threads) have every state.* tensor corrupted in the same ways.

    python3 test_resume_property.py --cudarl build/cudarl --work DIR [--full] [--seed N]

--full (ctest label slow) adds every MinAtar game and CartPolePixels-v1, more corruptions per
tensor and many random bytes and words in the env states. Needs Python 3 with numpy and
safetensors.
"""
import argparse
import os
import random
import shlex
import shutil
import subprocess
import sys
import time

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

CUDARL = None
VERBOSE = False
SANITIZER_WORDS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer",
                   "runtime error:", "Assertion", "assertion", "Segmentation fault")
THREADS = ["--threads", "1"]
# the one line of a run that stopped because its loss became non-finite
DIVERGED = "cudarl: error: training failed: the TD loss became"


def fail(what, detail):
    print(f"FAIL: {what}\n{detail}", flush=True)
    sys.exit(1)


def run(args, cwd, timeout=120):
    argv = [CUDARL] + [str(a) for a in args]
    try:
        p = subprocess.run(argv, cwd=cwd, env=dict(os.environ, CUDARL_LOG="warn"),
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        fail("a command finished in time", f"  command: {shlex.join(argv)} ran over {timeout} s")
    return argv, p.returncode, p.stdout, p.stderr


def describe(argv, rc, out, err):
    return (f"  command:   {shlex.join(argv)}\n  exit code: {rc}\n"
            f"  stdout:    {out.rstrip() or '(empty)'}\n  stderr:    {err.rstrip() or '(empty)'}")


def clean_exit(what, argv, rc, out, err):
    """Fails on a signal, an exit code other than 0 or 1, or a sanitizer or assertion report."""
    if rc not in (0, 1) or any(w in err for w in SANITIZER_WORDS):
        fail(f"{what}: a clean exit (0, or 1 with a message)", describe(argv, rc, out, err))


def expect_refusal(what, args, cwd, needles):
    """The command exits 1 with exactly one stderr line holding every needle."""
    argv, rc, out, err = run(args, cwd)
    clean_exit(what, argv, rc, out, err)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if rc != 1 or len(lines) != 1 or not all(n in lines[0] for n in needles):
        fail(f"{what}: refused with one line naming {needles}", describe(argv, rc, out, err))
    return lines[0]


def metadata(path):
    with safe_open(path, "np") as f:
        return f.metadata() or {}


# ---- checkpoints ------------------------------------------------------------------------------

def train(work, name, args):
    """Trains run `name` in <work>/runs and returns its folder."""
    argv, rc, out, err = run(["train", "--runs-dir", "runs", "--run-name", name, "--quiet",
                              "--device", "cpu", *THREADS, *args], work)
    if rc != 0:
        fail(f"train {name}", describe(argv, rc, out, err))
    return os.path.join(work, "runs", name)


PPO_SMALL = ["--num-envs", "4", "--num-steps", "16", "--num-minibatches", "2",
             "--update-epochs", "1", "--hidden", "16", "--total-timesteps", "128"]


def conv_small(game):
    return ["--env-id", game, "--policy", "minatar-cnn", "--env-device", "cpu",
            "--env-threads", "1", "--num-envs", "2", "--num-steps", "16", "--num-minibatches",
            "2", "--update-epochs", "1", "--total-timesteps", "64"]


# ---- corruptions --------------------------------------------------------------------------------

def corruptions(name, x, rng, full, num_envs):
    """[(label, new array, must_refuse)] for state tensor `name` holding x: must_refuse where no
    run writes such a value whatever the tensor means (NaN, inf, negative counts, random env
    states), else either outcome is right (-1 may be a return, any byte an observation's)."""
    out = []
    flat = x.reshape(-1)

    def with_flat(f):
        y = flat.copy()
        f(y)
        return y.reshape(x.shape)

    if x.dtype.kind == "f":
        big = np.finfo(x.dtype).max
        out += [("nan at 0", with_flat(lambda y: y.__setitem__(0, np.nan)), True),
                ("inf at last", with_flat(lambda y: y.__setitem__(-1, np.inf)), True),
                ("-1 everywhere", np.full_like(x, -1.0), False),
                ("huge everywhere", np.full_like(x, big / 4), False)]
        if full:
            out += [("-inf everywhere", np.full_like(x, -np.inf), True),
                    ("negative zero", np.full_like(x, -0.0), False)]
    elif x.dtype.kind == "i":
        info = np.iinfo(x.dtype)
        out += [("-5 everywhere", np.full_like(x, -5), True),
                ("max everywhere", np.full_like(x, info.max), False),
                ("min at 0", with_flat(lambda y: y.__setitem__(0, info.min)), False)]
        if full:
            for i in range(min(flat.size, 4)):
                out += [(f"+1 at {i}", with_flat(lambda y, i=i: y.__setitem__(i, y[i] + 1)),
                         False),
                        (f"-1 at {i}", with_flat(lambda y, i=i: y.__setitem__(i, -1)), False)]
    elif x.dtype == np.uint32:
        # RNG streams: all ones or random words put the sampler's and the shuffle's stream ids,
        # or an env's buffer index (word 10 of state.env_rng), out of range
        i = int(rng.integers(flat.size))
        out += [("all ones", np.full_like(x, 0xFFFFFFFF), True),
                ("random words", rng.integers(0, 2**32, x.shape, dtype=np.uint64)
                 .astype(np.uint32), True),
                (f"word {i} flipped", with_flat(lambda y: y.__setitem__(i, y[i] ^ 0xFFFF)),
                 False)]
    elif x.dtype == np.uint8:
        is_state = name in ("state.pool_states", "state.twin", "state.env_batch")
        out += [("random bytes", rng.integers(0, 256, x.shape, dtype=np.uint16)
                 .astype(np.uint8), is_state),
                ("all 0xff", np.full_like(x, 0xFF), is_state)]
        # env states: most bytes where the fields are, the first 128 of each env's state (the
        # rest of a large state is frames or lists)
        stride = flat.size // num_envs if is_state else flat.size

        def offset():
            if not is_state or rng.integers(4) == 0:
                return int(rng.integers(flat.size))
            return int(rng.integers(num_envs)) * stride + int(rng.integers(min(stride, 128)))

        for k in range((48 if is_state else 6) if full else 2):
            i = offset()
            flip = with_flat(lambda y, i=i: y.__setitem__(i, y[i] ^ 0xFF))
            out.append((f"byte {i} flipped", flip, False))
        for k in range(16 if full and is_state else 0):  # a random int32 in an aligned field
            i, w = offset() // 4 * 4, rng.integers(0, 256, 4, dtype=np.uint16).astype(np.uint8)
            out.append((f"word at byte {i} random",
                        with_flat(lambda y, i=i, w=w: y.__setitem__(slice(i, i + 4), w)), False))
    else:
        fail(f"a known dtype for {name}", f"  got {x.dtype}: extend corruptions()")
    return out


def resume_case(work, src_dir, case, name, tensors, meta, new, must_refuse, resume, tally):
    """Resumes a copy of src_dir whose tensor `name` is `new`; checks the property."""
    run_dir = os.path.join(work, "runs", case)
    shutil.rmtree(run_dir, ignore_errors=True)
    shutil.copytree(src_dir, run_dir)
    ckpt = os.path.join(run_dir, "model.safetensors")
    save_file(dict(tensors, **{name: new}), ckpt, metadata=meta)
    argv, rc, out, err = run(["train", "--resume", ckpt, *resume], work)
    what = f"resume with {name} {case.split('__')[-1]}"
    clean_exit(what, argv, rc, out, err)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if rc == 1 and not must_refuse and len(lines) == 1 and DIVERGED in lines[0]:
        # a value a run can go on from, which then drives the TD loss to inf (DQN's ReLU network
        # passes a huge observation on, where PPO's tanh saturates): stopped, saying why
        tally["diverged"] += 1
        if VERBOSE:
            print(f"    diverged {name} {what.split(' ', 3)[-1]}: {lines[0]}", flush=True)
    elif rc == 1:
        if len(lines) != 1 or f"'{name}'" not in lines[0] or ckpt not in lines[0]:
            fail(f"{what}: refused with one line naming the checkpoint and '{name}'",
                 describe(argv, rc, out, err))
        tally["refused"] += 1
        if VERBOSE:
            print(f"    refused  {name} {what.split(' ', 3)[-1]}: {lines[0]}", flush=True)
    else:
        if must_refuse:
            fail(f"{what}: refused (no run writes this value)", describe(argv, rc, out, err))
        tally["resumed"] += 1
        if VERBOSE:
            print(f"    resumed  {name} {what.split(' ', 3)[-1]}", flush=True)
    shutil.rmtree(run_dir, ignore_errors=True)


def corrupt_every_state(work, label, run_dir, where, rng, full):
    """Resumes a copy of the checkpoint in run_dir (its envs stepped `where`: the flags) for each
    corruption of each state tensor."""
    ckpt = os.path.join(run_dir, "model.safetensors")
    tensors, meta = load_file(ckpt), metadata(ckpt)
    names = sorted(k for k in tensors if k.startswith("state."))
    if not names:
        fail(f"{label} has state.* tensors", "  got none")
    # PPO: an iteration of num_envs x num_steps; DQN: 8 steps of every env (num_steps absent)
    batch = int(meta["num_envs"]) * int(meta.get("num_steps", "8"))
    # one more iteration where the damaged state is taken
    resume = ["--total-timesteps", str(int(meta["global_step"]) + batch), "--quiet", *THREADS,
              *where]
    tally = {"refused": 0, "resumed": 0, "diverged": 0}
    t0 = time.time()
    for name in names:
        cases = corruptions(name, tensors[name], rng, full, int(meta["num_envs"]))
        for k, (what, new, must) in enumerate(cases):
            resume_case(work, run_dir, f"{label}__{name}__{k}", name, tensors, meta, new, must,
                        resume, tally)
    print(f"  {label}: {len(names)} state tensors, {tally['refused']} corruptions refused naming "
          f"the tensor, {tally['resumed']} resumed cleanly, {tally['diverged']} stopped by the "
          f"divergence they caused ({time.time() - t0:.1f} s)",
          flush=True)


# ---- NaN weights, DQN ---------------------------------------------------------------------------

def with_value(work, src, name, value, tag):
    """A copy of checkpoint src in run folder runs/<tag> with element 0 of `name` set to value."""
    run_dir = os.path.join(work, "runs", tag)
    shutil.rmtree(run_dir, ignore_errors=True)
    shutil.copytree(os.path.dirname(src), run_dir)
    t, meta = load_file(src), metadata(src)
    x = t[name].copy()
    x.reshape(-1)[0] = value
    t[name] = x
    path = os.path.join(run_dir, "model.safetensors")
    save_file(t, path, metadata=meta)
    return path


def non_finite_weights(work, ckpt, names, resumable, onnx=True):
    for name, value, word in names:
        path = with_value(work, ckpt, name, value, "nan_" + name.replace(".", "_"))
        needles = [path, f"'{name}'", word]
        if resumable:
            expect_refusal(f"resume of a {word} in {name}", ["train", "--resume", path], work,
                           needles)
        expect_refusal(f"eval of a {word} in {name}", ["eval", path, "--episodes", "1"], work,
                       needles)
        if onnx:
            expect_refusal(f"export of a {word} in {name}",
                           ["export", path, "--onnx", os.path.join(work, "x.onnx")], work, needles)


def test(work, full, seed):
    rng = np.random.default_rng(seed)
    print(f"resume property test (seed {seed}{', full' if full else ''})", flush=True)
    games = ["MinAtar/Breakout-v1"]
    if full:
        games += ["MinAtar/Asterix-v1", "MinAtar/Freeway-v1", "MinAtar/Seaquest-v1",
                  "MinAtar/SpaceInvaders-v1"]
    pool = ["--env-device", "cpu", "--env-threads", "1"]  # envs on CPU threads
    runs = {"ppo_mlp_batch": train(work, "ppo_mlp_batch", PPO_SMALL),
            "ppo_mlp_pool": train(work, "ppo_mlp_pool", PPO_SMALL + pool),
            "ppo_mlp_acrobot": train(work, "ppo_mlp_acrobot",
                                     PPO_SMALL + ["--env-id", "Acrobot-v1"])}
    if full:  # 84x84 frames in a 28 KiB state per env
        runs["ppo_cnn_pixels"] = train(work, "ppo_cnn_pixels", [
            "--env-id", "CartPolePixels-v1", "--policy", "nature-cnn", *pool, "--num-envs", "2",
            "--num-steps", "16", "--num-minibatches", "2", "--update-epochs", "1",
            "--total-timesteps", "32"])
    where = {"ppo_mlp_batch": [], "ppo_mlp_acrobot": []}
    for g in games:
        label = "ppo_cnn_" + g.split("/")[1].split("-")[0].lower()
        runs[label] = train(work, label, conv_small(g))
    for label, run_dir in runs.items():
        corrupt_every_state(work, label, run_dir, where.get(label, pool), rng, full)

    print("  NaN weights and inf Adam moments: resume, eval and export refuse them", flush=True)
    mlp = os.path.join(runs["ppo_mlp_batch"], "model.safetensors")
    non_finite_weights(work, mlp, [("actor.0.weight", np.nan, "NaN"),
                                   ("optimizer.exp_avg_sq.critic.0.bias", np.inf, "inf"),
                                   ("optimizer.exp_avg.actor.4.bias", -np.inf, "-inf")], True)
    cnn = os.path.join(runs["ppo_cnn_breakout"], "model.safetensors")
    non_finite_weights(work, cnn, [("network.0.weight", np.nan, "NaN")], True)

    print("  DQN: every state.* tensor corrupted as PPO's are", flush=True)
    dqn = ["--algo", "dqn", "--num-envs", "2", "--learning-starts", "64", "--batch-size", "8",
           "--buffer-size", "100", "--train-frequency", "4"]
    dqn_runs = [train(work, "dqn_mlp", dqn + ["--total-timesteps", "200", "--hidden1", "16",
                                              "--hidden2", "16", "--prioritized"]),
                train(work, "dqn_cnn", dqn + ["--total-timesteps", "100", "--env-id",
                                              "MinAtar/Breakout-v1", "--policy", "minatar-cnn",
                                              "--env-device", "cpu", "--env-threads", "1"])]
    for label, run_dir, where in [("dqn_mlp", dqn_runs[0], []), ("dqn_cnn", dqn_runs[1], pool)]:
        corrupt_every_state(work, label, run_dir, where, rng, full)
    non_finite_weights(work, os.path.join(dqn_runs[0], "model.safetensors"),
                       [("network.0.weight", np.nan, "NaN"),
                        ("target_network.2.bias", np.inf, "inf")], False)
    non_finite_weights(work, os.path.join(dqn_runs[1], "model.safetensors"),
                       [("network.0.weight", np.nan, "NaN")], False)


def main():
    global CUDARL
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cudarl", required=True, help="path of the cudarl binary")
    ap.add_argument("--work", required=True, help="scratch folder (emptied first)")
    ap.add_argument("--full", action="store_true", help="every MinAtar game, more corruptions")
    ap.add_argument("--seed", type=int, default=1, help="seed of the random corruptions")
    ap.add_argument("--verbose", action="store_true", help="print every case's outcome")
    args = ap.parse_args()
    global VERBOSE
    VERBOSE = args.verbose
    CUDARL = os.path.abspath(args.cudarl)
    if not os.access(CUDARL, os.X_OK):
        fail("the cudarl binary exists", f"  no executable at {CUDARL}; build first")
    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    t0 = time.time()
    test(work, args.full, args.seed)
    print(f"all checks passed ({time.time() - t0:.1f} s)")


if __name__ == "__main__":
    main()
