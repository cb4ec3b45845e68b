#!/usr/bin/env python3
"""End-to-end tests of the cudarl command line.

Runs the built `cudarl` binary on small, fast configurations and checks what a user sees: exit
codes (0 done, 1 failed, 2 bad usage, 130 interrupted), one-line error messages that name the
problem and the fix, --help, bitwise determinism, the checkpoint's standard safetensors layout,
resume after Ctrl-C (SIGINT) reproducing an uninterrupted run exactly, and eval.

Each check prints what it checks; the first wrong value prints the command line, expected and
got (exit code, stdout, stderr) and exits 1.

    python3 test_cli.py --cudarl build/cudarl --work build/cli-work [--only GROUP]

GROUP is one of: bad_input, help, determinism, checkpoint, resume, eval, dqn_plan, ppo_conv,
runs, limits, continuous, config (default: all). Each
group works in its own folder <work>/<group>, emptied first, so groups may run in parallel.
Needs Python 3 with numpy and safetensors.
"""
import argparse
import csv
import hashlib
import json
import math
import os
import re
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import time

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

NUM_ENVS, NUM_STEPS = 8, 64
BATCH = NUM_ENVS * NUM_STEPS
# One thread: tiny batches gain nothing from more, and OpenMP threads that spin on a loaded
# machine (ctest -j, other builds) make a run many times slower.
SMALL = ["--total-timesteps", str(8 * BATCH), "--num-envs", str(NUM_ENVS),
         "--num-steps", str(NUM_STEPS), "--threads", "1"]
TIMING_COLUMNS = ("charts/SPS", "time/elapsed_s")
CLEANRL_FLAGS = ["env-id", "seed", "total-timesteps", "learning-rate", "num-envs", "num-steps",
                 "anneal-lr", "gamma", "gae-lambda", "num-minibatches", "update-epochs",
                 "norm-adv", "clip-coef", "clip-vloss", "ent-coef", "vf-coef", "max-grad-norm",
                 "target-kl", "device"]
# PyTorch state_dict names and shapes of CleanRL's Agent for CartPole (obs 4, hidden 64, 2 actions)
STATE_DICT = {"critic.0.weight": (64, 4), "critic.0.bias": (64,), "critic.2.weight": (64, 64),
              "critic.2.bias": (64,), "critic.4.weight": (1, 64), "critic.4.bias": (1,),
              "actor.0.weight": (64, 4), "actor.0.bias": (64,), "actor.2.weight": (64, 64),
              "actor.2.bias": (64,), "actor.4.weight": (2, 64), "actor.4.bias": (2,)}
FIX_BAD_FILE = "re-copy it or use an earlier checkpoint"

CUDARL = None  # path of the binary, set by main()


# ---- running and failing --------------------------------------------------------------------

class Result:
    def __init__(self, argv, rc, out, err):
        self.argv, self.rc, self.out, self.err = argv, rc, out, err

    def describe(self):
        return (f"  command:   {shlex.join(self.argv)}\n  exit code: {self.rc}\n"
                f"  stdout:    {self.out.rstrip() or '(empty)'}\n"
                f"  stderr:    {self.err.rstrip() or '(empty)'}")


def check(what):
    print(f"check: {what}", flush=True)


def fail(what, expected, got):
    """Prints expected and got and ends the test with exit code 1."""
    print(f"FAIL: {what}\n  expected:  {expected}\n{got}", flush=True)
    sys.exit(1)


def env_with(log):
    """This process's environment with CUDARL_LOG set to `log`."""
    return dict(os.environ, CUDARL_LOG=log)


def run(args, cwd, env=None, timeout=300):
    argv = [CUDARL] + [str(a) for a in args]
    try:
        p = subprocess.run(argv, cwd=cwd, env=env or env_with("warn"), capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        text = [x.decode(errors="replace") if isinstance(x, bytes) else (x or "")
                for x in (e.stdout, e.stderr)]
        fail("command finished in time", f"exit within {timeout} s",
             Result(argv, "timeout", *text).describe())
    return Result(argv, p.returncode, p.stdout, p.stderr)


def run_ok(what, args, cwd, env=None):
    r = run(args, cwd, env)
    if r.rc != 0:
        fail(what, "exit code 0", r.describe())
    return r


def expect_error(what, args, cwd, rc, needles, env=None):
    """Runs a command that must fail with exit code `rc`, nothing on stdout and exactly one line
    on stderr containing every string in `needles` (the problem and its fix). Informational log
    lines are not errors: they are silenced with CUDARL_LOG=warn, which still shows warnings."""
    check(what)
    return verify_error(what, run(args, cwd, env), rc, needles)


def verify_error(what, r, rc, needles):
    lines = [ln for ln in r.err.splitlines() if ln.strip()]
    missing = [n for n in needles if not lines or n not in lines[0]]
    if r.rc != rc or len(lines) != 1 or missing or r.out.strip():
        fail(what, f"exit code {rc}, empty stdout, one stderr line containing "
                   f"{', '.join(repr(n) for n in needles)}"
                   + (f" (missing: {', '.join(repr(n) for n in missing)})" if missing else ""),
             r.describe())
    return r


def fresh_dir(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def train_small(work, name, *extra):
    """Trains run `name` of the small config in <work>/runs; returns its folder."""
    run_ok(f"train run '{name}'", ["train", "--runs-dir", "runs", "--run-name", name, "--quiet",
                                   *SMALL, *extra], work)
    return os.path.join(work, "runs", name)


# ---- reading run outputs ----------------------------------------------------------------------

def metrics_without_timing(path):
    """metrics.csv as a list of rows, header first, without the wall-clock columns."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        fail(f"{path} has a header", "a header row", "  got: an empty file")
    header = rows[0]
    for col in TIMING_COLUMNS:
        if col not in header:
            fail(f"{path} has column {col}", f"header containing {col}", f"  got: {header}")
    keep = [i for i, name in enumerate(header) if name not in TIMING_COLUMNS]
    return [[row[i] for i in keep] for row in rows]


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"  row {i}: {x}\n  vs     {y}"
    return f"  {len(a)} rows vs {len(b)} rows"


def checkpoint_metadata(path):
    with safe_open(path, "np") as f:
        return f.metadata() or {}


def tensor_difference(a_path, b_path):
    """None if the two files hold the same tensors bitwise, else what differs."""
    a, b = load_file(a_path), load_file(b_path)
    if set(a) != set(b):
        return f"  tensor names differ: {sorted(set(a) ^ set(b))}"
    for name in sorted(a):
        x, y = a[name], b[name]
        if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
            return f"  tensor {name}: {x.dtype}{x.shape} vs {y.dtype}{y.shape}, values differ"
    return None


def no_temp_files(run_dir, allowed=("metrics.csv", "model.safetensors", "run.lock",
                                    "config.toml")):
    """Only the run's files: metrics.csv, the checkpoint, the claim (run.lock), the resolved
    config (config.toml) and TensorBoard event files."""
    check(f"no temp files left in {run_dir}")
    left = sorted(f for f in set(os.listdir(run_dir)) - set(allowed)
                  if not (f.startswith("events.out.tfevents.") and f.endswith(".cudarl")))
    if left:
        fail(f"no temp files in {run_dir}", f"only {', '.join(allowed)}", f"  got also: {left}")


# ---- 1. bad input -----------------------------------------------------------------------------

def bad_checkpoints(src, folder):
    """Writes damaged and foreign variants of checkpoint `src`; returns [(label, path, needles)]."""
    with open(src, "rb") as f:
        raw = f.read()
    header_len = struct.unpack("<Q", raw[:8])[0]
    tensors, meta = load_file(src), checkpoint_metadata(src)
    out = []

    def write_bytes(name, data, needles):
        path = os.path.join(folder, name)
        with open(path, "wb") as f:
            f.write(data)
        out.append((name, path, [path] + needles))

    def write_st(name, t, m, needles):
        path = os.path.join(folder, name)
        save_file(t, path, metadata=m)
        out.append((name, path, [path] + needles))

    data_len = len(raw) - 8 - header_len
    for cut in (0, 4, 8, 8 + header_len // 2, 8 + header_len - 1, 8 + header_len,
                8 + header_len + data_len // 2, len(raw) - 1):
        write_bytes(f"truncated_at_{cut}.safetensors", raw[:cut], ["truncated", FIX_BAD_FILE])
    g = bytearray(raw)
    g[8:40] = b"\xff" * 32
    write_bytes("garbage_header.safetensors", bytes(g), ["not UTF-8 JSON", FIX_BAD_FILE])
    g = bytearray(raw)
    g[8:24] = b"}}}}{{{{,,,,::::"  # ASCII, but not JSON
    write_bytes("garbage_json.safetensors", bytes(g), ["not valid JSON", FIX_BAD_FILE])
    g = bytearray(raw)
    g[0:8] = b"\xff" * 8
    write_bytes("garbage_length.safetensors", bytes(g), ["header is", "not a safetensors file"])
    write_st("foreign.safetensors", {"x": np.zeros(3, np.float32)}, {"hello": "world"},
             ["not a cudarl checkpoint", "written by cudarl train"])
    m = dict(meta, format_version="99")
    write_st("future_version.safetensors", tensors, m,
             ["format version 99", "use the cudarl version that wrote it"])
    t = dict(tensors, **{"critic.0.weight": np.zeros((32, 4), np.float32)})
    write_st("resized_weight.safetensors", t, meta,
             ["critic.0.weight", "[32, 4]", "[64, 4]", "written by cudarl train"])
    # same element count, other shape: must not load as if it were (64, 4)
    t = dict(tensors, **{"critic.0.weight": np.ascontiguousarray(tensors["critic.0.weight"].T)})
    write_st("transposed_weight.safetensors", t, meta,
             ["critic.0.weight", "[4, 64]", "[64, 4]", "written by cudarl train"])
    m = dict(meta, hidden="32")
    write_st("hidden_disagrees.safetensors", tensors, m,
             ["hidden 32", "[64, 4]", "[32, 4]", "written by cudarl train"])
    return out


def test_bad_input(work):
    run_dir = train_small(work, "taken")
    ckpt = os.path.join(run_dir, "model.safetensors")

    def train(*extra):  # a small run, so a check that wrongly starts training ends soon
        return ["train", "--runs-dir", "runs", "--quiet", *SMALL, *extra]

    U, F = 2, 1  # exit codes: usage error, runtime failure
    expect_error("unknown flag suggests the closest one", train("--nm-envs", "8"), work, U,
                 ["--nm-envs", "did you mean '--num-envs'", "--help"])
    expect_error("--num-envs at the end without a value", train("--num-envs"), work, U,
                 ["--num-envs", "needs a value", "--num-envs VALUE"])
    expect_error("--num-envs abc is not an integer", train("--num-envs", "abc"), work, U,
                 ["--num-envs", "expects an integer", "'abc'"])
    expect_error("--learning-rate x is not a number", train("--learning-rate", "x"), work, U,
                 ["--learning-rate", "expects a finite number", "'x'"])
    expect_error("--num-envs 0 is out of range", train("--num-envs", "0"), work, U,
                 ["--num-envs", "must be between 1 and"])
    expect_error("--learning-rate -1 is out of range", train("--learning-rate", "-1"), work, U,
                 ["--learning-rate", "must be between", "got -1"])
    expect_error("--gamma 1.5 is out of range", train("--gamma", "1.5"), work, U,
                 ["--gamma", "between 0 and 1", "1.5"])
    expect_error("--num-steps 0 is out of range", train("--num-steps", "0"), work, U,
                 ["--num-steps", "must be between 1 and"])
    expect_error("--seed -1 is out of range", train("--seed", "-1"), work, U,
                 ["--seed", "must be between 0 and"])
    expect_error("--total-timesteps below one iteration", train("--total-timesteps", "100"), work,
                 U, ["--total-timesteps 100", str(BATCH), "raise it"])
    expect_error("--num-minibatches that does not divide the batch",
                 train("--num-minibatches", "3"), work, U,
                 ["--num-minibatches 3", "does not divide", f"pick a divisor of {BATCH}"])
    expect_error("unknown --env-id lists the known ones", train("--env-id", "Foo-v0"), work, U,
                 ["'Foo-v0'", "not a known environment", "CartPole-v1"])
    expect_error("--env-device gpu is not a device name", train("--env-device", "gpu"), work, U,
                 ["--env-device", "cpu, cuda or auto"])
    expect_error("--env-device cuda for the MLP on an image env (a twin only for conv policies)",
                 train("--env-id", "CartPolePixels-v1", "--policy", "mlp", "--env-device", "cuda"),
                 work, U, ["CartPolePixels-v1", "use --policy nature-cnn"])
    expect_error("--env-device cuda with --device cpu",
                 train("--device", "cpu", "--env-device", "cuda"), work, U,
                 ["--env-device cuda", "--device cuda"])
    expect_error("--precision fp8 is not a precision", train("--precision", "fp8"), work, U,
                 ["--precision", "fp32, tf32, bf16 or fp16", "'fp8'"])
    expect_error("--precision bf16 on the CPU",
                 train("--precision", "bf16", "--device", "cpu", "--env-id", "MinAtar/Breakout-v1",
                       "--policy", "minatar-cnn"),
                 work, U, ["--precision bf16 needs the GPU", "--device cuda"])
    expect_error("--precision tf32 on the CPU", train("--precision", "tf32", "--device", "cpu"),
                 work, U, ["--precision tf32 needs the GPU", "--device cuda", "--precision fp32"])
    expect_error("DQN --precision fp16 on the CPU", ["train", "--algo", "dqn", "--precision",
                                                     "fp16", "--device", "cpu", "--quiet"],
                 work, U, ["--precision fp16 needs the GPU", "--device cuda"])
    expect_error("--async without CPU envs", train("--async"), work, U,
                 ["--async", "--env-device cpu"])
    expect_error("--async on the CPU", train("--async", "--env-device", "cpu", "--device", "cpu"),
                 work, U, ["--async needs a GPU", "--device cuda"])
    expect_error("--learner-device on another GPU without --async",
                 train("--learner-device", "1"), work, U,
                 ["--learner-device 1", "needs --async", "add --async --env-device cpu"])
    expect_error("--actor-device -2 is out of range", train("--actor-device", "-2"), work, U,
                 ["--actor-device", "between -1 (the context's GPU) and 63", "got -2"])
    expect_error("--actor-device with --device cpu",
                 train("--device", "cpu", "--actor-device", "0"), work, U,
                 ["--actor-device / --learner-device pick GPUs", "--device cuda"])
    expect_error("--separate-critic with the MLP policy", train("--separate-critic"), work, U,
                 ["--separate-critic is for the conv policies", "drop it"])
    expect_error("--env-threads -1 is out of range", train("--env-threads", "-1"), work, U,
                 ["--env-threads", "must be between 0"])
    expect_error("--env-groups beyond the envs", train("--env-groups", "20", "--num-envs", "16"),
                 work, U, ["--env-groups 20", "--num-envs 16"])
    expect_error("an image env with the MLP policy given",
                 train("--env-id", "MinAtar/Breakout-v1", "--policy", "mlp"), work, U, ["MinAtar/Breakout-v1", "uint8 image observations", "MLP",
                           "use --policy minatar-cnn"])
    expect_error("unknown --algo lists the available ones", train("--algo", "sac"), work, U,
                 ["--algo 'sac'", "not available", "choose: ppo or dqn"])
    expect_error("unknown command", ["trian"], work, U,
                 ["'trian'", "train, eval, plan, export, render, info", "--help"])
    check("no command prints the usage to stderr and exits 2")
    r = run([], work)
    if r.rc != U or "usage:" not in r.err or r.out:
        fail("cudarl without a command", "exit code 2, usage on stderr, empty stdout",
             r.describe())
    expect_error("--run-name with a slash", train("--run-name", "a/b"), work, U,
                 ["--run-name 'a/b'", "'/'", "letters, digits"])
    expect_error("bad CUDARL_LOG", train(), work, U,
                 ["CUDARL_LOG='verbose'", "error, warn, info or debug"],
                 env=env_with("verbose"))
    expect_error("eval without a checkpoint", ["eval"], work, U,
                 ["which checkpoint", "cudarl eval runs/<run>/model.safetensors"])
    missing = os.path.join(work, "nope", "model.safetensors")
    expect_error("eval of a missing checkpoint", ["eval", missing], work, F,
                 [missing, "No such file", "check the path"])
    expect_error("train --resume of a missing checkpoint", ["train", "--resume", missing], work,
                 F, [missing, "No such file", "check the path"])
    expect_error("--resume with a hyperparameter flag",
                 ["train", "--resume", ckpt, "--learning-rate", "0.1"], work, U,
                 ["--learning-rate cannot be changed with --resume", "drop --learning-rate"])

    # a run name that holds a checkpoint is refused, and its files stay as they were
    before = (sha256(ckpt), sha256(os.path.join(run_dir, "metrics.csv")))
    expect_error("a run name that already holds a checkpoint", train("--run-name", "taken"),
                 work, F, ["run 'taken' already has a checkpoint", "--run-name",
                           "--resume runs/taken/model.safetensors"])
    check("the refused run left the existing run's files unchanged")
    after = (sha256(ckpt), sha256(os.path.join(run_dir, "metrics.csv")))
    if after != before:
        fail("existing run untouched", f"sha256 {before}", f"  got: {after}")

    with open(os.path.join(work, "blocker"), "w") as f:
        f.write("a file, so no folder can be made under it\n")
    expect_error("--runs-dir that cannot be created",
                 ["train", "--runs-dir", "blocker/runs", "--quiet", *SMALL], work, F,
                 ["'blocker/runs'", "--runs-dir"])

    expect_error("bench infer --batch 129 is out of range",
                 ["bench", "infer", "--batch", "129"], work, U,
                 ["--batch", "must be between 0 and 128", "got 129"])

    what = "--device cuda without CUDA (build or GPU) says to use --device cpu"
    check(what)
    r = run(train("--device", "cuda", "--run-name", "cuda"), work)
    if r.rc == 0:
        print("  note: this build trains on CUDA, so --device cuda is allowed; nothing to refuse")
    else:
        verify_error(what, r, F, ["--device cuda is not available", "use --device cpu"])

    files = fresh_dir(os.path.join(work, "bad_files"))
    bad = bad_checkpoints(ckpt, files)
    for label, path, needles in bad:
        expect_error(f"eval refuses {label}", ["eval", path, "--episodes", "3"], work, F, needles)
        expect_error(f"train --resume refuses {label}",
                     ["train", "--resume", path, "--total-timesteps", str(16 * BATCH), "--quiet"],
                     work, F, needles)
    check("no refused resume wrote a run into the bad files' folder")
    if sorted(os.listdir(files)) != sorted(label for label, _, _ in bad):
        fail("bad files' folder untouched", "only the bad files",
             f"  got: {sorted(os.listdir(files))}")


# ---- 2. help ----------------------------------------------------------------------------------

def test_help(work):
    check("cudarl train --help lists every CleanRL flag with its default and exits 0")
    r = run_ok("cudarl train --help", ["train", "--help"], work)
    lines = r.out.splitlines()
    for flag in CLEANRL_FLAGS:
        pat = re.compile(r"^\s+--(\[no-\])?" + re.escape(flag) + r"\s.*\(default: [^)]+\)\s*$")
        if not any(pat.match(ln) for ln in lines):
            fail(f"train --help lists --{flag} with its default",
                 f"a line '  --{flag} ... (default: VALUE)'", r.describe())
    check("every flag line of train --help shows a default")
    flag_lines = [ln for ln in lines if ln.lstrip().startswith("--")]
    bare = [ln for ln in flag_lines if "(default: " not in ln]
    if len(flag_lines) < len(CLEANRL_FLAGS) or bare:
        fail("every flag has a default", "each '--flag' line with '(default: ...)'",
             f"  lines without a default: {bare}\n" + r.describe())
    check("cudarl eval --help and cudarl --help exit 0")
    r = run_ok("cudarl eval --help", ["eval", "--help"], work)
    if "--episodes" not in r.out:
        fail("eval --help lists --episodes", "--episodes in stdout", r.describe())
    r = run_ok("cudarl --help", ["--help"], work)
    for cmd in ("train", "eval", "info"):
        if f"cudarl {cmd}" not in r.out:
            fail(f"cudarl --help names '{cmd}'", f"'cudarl {cmd}' in stdout", r.describe())


# ---- 3. determinism ---------------------------------------------------------------------------

def test_determinism(work):
    # two threads: a reduction that depends on thread timing would show here
    a = train_small(work, "seed1_a", "--seed", "1", "--threads", "2")
    b = train_small(work, "seed1_b", "--seed", "1", "--threads", "2")
    c = train_small(work, "seed2", "--seed", "2")
    ma, mb, mc = (metrics_without_timing(os.path.join(d, "metrics.csv")) for d in (a, b, c))
    check("metrics.csv has a header and 8 rows, one per iteration")
    if len(ma) != 9:
        fail("metrics rows", "9 lines (header + 8 iterations)", f"  got: {len(ma)} lines")
    check("the same seed twice gives the same metrics.csv (timing columns dropped)")
    if ma != mb:
        fail("same seed, same metrics", "identical rows", first_difference(ma, mb))
    check("the same seed twice gives bitwise the same checkpoint tensors")
    diff = tensor_difference(os.path.join(a, "model.safetensors"),
                             os.path.join(b, "model.safetensors"))
    if diff:
        fail("same seed, same tensors", "bitwise equal tensors", diff)
    check("a different seed gives different metrics")
    if ma[1:] == mc[1:]:
        fail("different seed, different metrics", "rows that differ", "  got: identical rows")


# ---- 4. checkpoint format ---------------------------------------------------------------------

def test_checkpoint(work):
    hp = {"seed": "7", "learning-rate": "0.001", "gamma": "0.98", "gae-lambda": "0.9",
          "ent-coef": "0.01", "vf-coef": "0.4", "clip-coef": "0.3", "max-grad-norm": "0.7",
          "update-epochs": "3", "num-minibatches": "8", "target-kl": "0.5"}
    extra = [x for k, v in hp.items() for x in (f"--{k}", v)]
    run_dir = train_small(work, "ckpt", "--no-anneal-lr", "--checkpoint-every", "1", *extra)
    path = os.path.join(run_dir, "model.safetensors")
    check("safetensors.numpy.load_file reads the checkpoint")
    try:
        t = load_file(path)
        meta = checkpoint_metadata(path)
    except Exception as e:  # noqa: BLE001 - any failure to load is the finding
        fail("load the checkpoint with safetensors", "a loadable file", f"  got: {e!r}")
    check("the 12 PyTorch state_dict tensors, F32, CleanRL shapes, finite")
    for name, shape in STATE_DICT.items():
        for full in (name, f"optimizer.exp_avg.{name}", f"optimizer.exp_avg_sq.{name}"):
            x = t.get(full)
            if x is None or x.dtype != np.float32 or x.shape != shape:
                got = "missing" if x is None else f"{x.dtype} {x.shape}"
                fail(f"tensor {full}", f"float32 {shape}", f"  got: {got}")
            if not np.isfinite(x).all():
                fail(f"tensor {full} is finite", "finite values", "  got: NaN or inf")
    check("Adam's second moments are non-negative and the weights were trained")
    if any((t[f"optimizer.exp_avg_sq.{n}"] < 0).any() for n in STATE_DICT):
        fail("exp_avg_sq >= 0", "non-negative", "  got: a negative value")
    if not np.abs(t["optimizer.exp_avg.actor.0.weight"]).sum() > 0:
        fail("exp_avg is not all zero", "a trained optimizer state", "  got: zeros")
    check("metadata: format, version, step, env and every hyperparameter")
    want = {"format": "cudarl-checkpoint", "global_step": str(8 * BATCH), "env_id": "CartPole-v1",
            "algo": "ppo", "total_timesteps": str(8 * BATCH), "num_envs": str(NUM_ENVS),
            "num_steps": str(NUM_STEPS), "anneal_lr": "0", "norm_adv": "1", "clip_vloss": "1",
            "hidden": "64", "obs_dim": "4", "num_actions": "2", "run_name": "ckpt"}
    for k, v in hp.items():
        want[k.replace("-", "_")] = v
    for key, value in want.items():
        got = meta.get(key)
        same = got == value
        if not same and got is not None and "." in value:
            try:
                same = float(got) == float(value)
            except ValueError:
                same = False
        if not same:
            fail(f"metadata '{key}'", value, f"  got: {got!r}\n  all metadata: {meta}")
    try:
        version = int(meta.get("format_version", ""))
    except ValueError:
        version = 0
    if version < 1:
        fail("metadata 'format_version'", "an integer >= 1", f"  got: {meta.get('format_version')!r}")
    no_temp_files(run_dir)


# ---- 5. resume after Ctrl-C -------------------------------------------------------------------

SOLVED_NEGATIVE = re.compile(r"-\d+(\.\d+)? s into the loop")


def reported_sps(r):
    m = re.search(r"\((\d+) steps/s\)", r.out)
    return float(m.group(1)) if m else 0.0


def measured_sps(work):
    r = run_ok("train a probe run", ["train", "--runs-dir", "runs", "--run-name", "probe",
                                     "--quiet", *SMALL, "--total-timesteps", str(32 * BATCH)],
               work)
    return reported_sps(r) or 1e5


def interrupted_run(work, name, args, delay, twice=False, marker="training PPO on"):
    """Starts `cudarl train args`, sends SIGINT `delay` s after its training loop starts (twice,
    2 ms apart, with `twice`: timeout(1) delivers one interrupt so, to its command and to its
    process group); returns the Result (rc 0 when it finished before the signal came)."""
    argv = [CUDARL, "train", *args]
    err_path = os.path.join(work, f"{name}.stderr")
    with open(err_path, "w") as err, open(os.path.join(work, f"{name}.stdout"), "w") as out:
        p = subprocess.Popen(argv, cwd=work, env=env_with("info"), stdout=out, stderr=err)
        deadline = time.monotonic() + 120
        while p.poll() is None and time.monotonic() < deadline:
            with open(err_path) as f:
                if marker in f.read():  # the SIGINT handler is in place
                    break
            time.sleep(0.01)
        time.sleep(delay)
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
            if twice:
                time.sleep(0.002)
                if p.poll() is None:
                    p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    with open(err_path) as f_err, open(os.path.join(work, f"{name}.stdout")) as f_out:
        return Result(argv, p.returncode, f_out.read(), f_err.read())


def resume_keeps_precision(work):
    """--resume takes the checkpoint's --precision (a bf16 run must not go on in fp32; it did,
    silently, until 2026-12-02): a file that says bf16 is refused on the CPU, which cannot run
    it, naming the GPU (not --precision, which a resume cannot change); a format this build does
    not know is refused naming it."""
    run_dir = train_small(work, "prec")
    ckpt = os.path.join(run_dir, "model.safetensors")
    tensors, meta = load_file(ckpt), checkpoint_metadata(ckpt)
    for prec, rc, needles in (("bf16", 2, ["trained in precision bf16, which needs a GPU",
                                           "--device cuda", "keeps its checkpoint's precision"]),
                              ("fp99", 1, ["precision 'fp99'", "does not know"])):
        folder = os.path.join(work, "runs", f"prec_{prec}")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "model.safetensors")
        save_file(tensors, path, metadata=dict(meta, precision=prec))
        expect_error(f"train --resume of a {prec} file on the CPU is refused",
                     ["train", "--resume", path, "--device", "cpu", "--quiet"], work, rc, needles)


def test_resume(work):
    resume_keeps_precision(work)
    sps = measured_sps(work)
    total = max(32, int(sps * 1.5) // BATCH) * BATCH  # about 1.5 s of training
    for attempt in range(5):
        config = ["--runs-dir", "runs", "--seed", "3", "--num-envs", str(NUM_ENVS),
                  "--num-steps", str(NUM_STEPS), "--total-timesteps", str(total), "--quiet",
                  "--threads", "1"]
        shutil.rmtree(os.path.join(work, "runs", "B"), ignore_errors=True)
        check(f"SIGINT 0.4 s into a run of {total} steps, delivered twice 2 ms apart (as "
              "timeout(1) does), exits 130 and says how to resume")
        r = interrupted_run(work, "B", ["--run-name", "B", *config], 0.4, twice=True)
        if r.rc == 130:
            break
        if r.rc != 0:
            fail("interrupted run", "exit code 130", r.describe())
        total = max(4 * total, int(reported_sps(r) * 2.5) // BATCH * BATCH)
        print(f"  note: the run finished before the signal; retrying with {total} steps")
    else:
        fail("interrupt a run", "exit code 130 within 5 attempts", r.describe())
    b_dir = os.path.join(work, "runs", "B")
    b_ckpt = os.path.join(b_dir, "model.safetensors")
    if "cudarl train --resume" not in r.out or "runs/B/model.safetensors" not in r.out:
        fail("interrupted run names the resume command",
             "'cudarl train --resume .../runs/B/model.safetensors' on stdout", r.describe())

    check("the interrupted checkpoint stopped part way, in step with metrics.csv")
    step = int(checkpoint_metadata(b_ckpt).get("global_step", "-1"))
    rows = len(metrics_without_timing(os.path.join(b_dir, "metrics.csv"))) - 1
    if not (0 < step < total and step % BATCH == 0 and rows * BATCH == step):
        fail("interrupted checkpoint", f"0 < global_step < {total}, a multiple of {BATCH}, "
                                       f"equal to metrics rows x {BATCH}",
             f"  got: global_step {step}, {rows} metrics rows")
    no_temp_files(b_dir)

    before = (sha256(b_ckpt), sha256(os.path.join(b_dir, "metrics.csv")))
    expect_error("resume with --total-timesteps below the checkpoint's step is refused",
                 ["train", "--resume", b_ckpt, "--total-timesteps", str(BATCH)], work, 1,
                 [f"already at step {step}", f"--total-timesteps {BATCH}",
                  "raise --total-timesteps"])
    check("the refused resume left the checkpoint and metrics unchanged")
    if (sha256(b_ckpt), sha256(os.path.join(b_dir, "metrics.csv"))) != before:
        fail("refused resume touched nothing", "unchanged files", "  got: files changed")

    check("cudarl train --resume finishes the interrupted run")
    r = run_ok("resume run B", ["train", "--resume", b_ckpt, "--quiet"], work)
    if SOLVED_NEGATIVE.search(r.out):
        fail("resume summary has no negative time", "no '-N s into the loop'", r.describe())
    check("an uninterrupted run A of the same config (checkpointing every 50 iterations)")
    run_ok("run A", ["train", "--run-name", "A", "--checkpoint-every", "50", *config], work)
    a_dir = os.path.join(work, "runs", "A")

    check("B's final metrics.csv equals A's (timing columns dropped)")
    ma = metrics_without_timing(os.path.join(a_dir, "metrics.csv"))
    mb = metrics_without_timing(os.path.join(b_dir, "metrics.csv"))
    if ma != mb:
        fail("resumed metrics equal uninterrupted", "identical rows", first_difference(ma, mb))
    if len(ma) != total // BATCH + 1:
        fail("metrics rows", f"{total // BATCH + 1} lines", f"  got: {len(ma)}")
    check("B's final checkpoint tensors equal A's bitwise (weights, Adam, env and RNG state)")
    diff = tensor_difference(os.path.join(a_dir, "model.safetensors"), b_ckpt)
    if diff:
        fail("resumed tensors equal uninterrupted", "bitwise equal tensors", diff)
    check("B's final metadata equals A's but for the run name")
    meta_a = checkpoint_metadata(os.path.join(a_dir, "model.safetensors"))
    meta_b = checkpoint_metadata(b_ckpt)
    meta_a.pop("run_name", None)
    meta_b.pop("run_name", None)
    if meta_a != meta_b:
        keys = sorted(k for k in set(meta_a) | set(meta_b) if meta_a.get(k) != meta_b.get(k))
        fail("resumed metadata", "equal", "  differing keys: " +
             ", ".join(f"{k}: {meta_a.get(k)!r} vs {meta_b.get(k)!r}" for k in keys))
    no_temp_files(a_dir)
    no_temp_files(b_dir)


# ---- 6. eval ----------------------------------------------------------------------------------

def test_eval(work):
    ckpt = os.path.join(train_small(work, "evalme"), "model.safetensors")
    check("cudarl eval PATH --episodes 10 exits 0 and prints a mean and a std")
    r = run_ok("eval", ["eval", ckpt, "--episodes", "10"], work)
    m = re.search(r"episodes 10\s+mean return\s+(\S+)\s+std\s+(\S+)", r.out)
    try:
        mean, std = float(m.group(1)), float(m.group(2))
    except (AttributeError, ValueError):
        fail("eval output", "'episodes 10  mean return M  std S' on stdout", r.describe())
    if not (math.isfinite(mean) and 1 <= mean <= 500 and math.isfinite(std) and std >= 0):
        fail("eval mean and std", "1 <= mean <= 500 and std >= 0 (CartPole-v1 returns)",
             r.describe())
    check("eval --precision other than fp32 on the CPU is refused with the fix")
    r3 = run(["eval", ckpt, "--episodes", "2", "--precision", "bf16"], work)
    if r3.rc == 0 or "--precision bf16 evaluates on the GPU" not in r3.err or \
            "--precision fp32" not in r3.err:
        fail("eval --precision bf16 on the CPU", "a non-zero exit naming the GPU and --precision "
             "fp32", r3.describe())
    check("eval is deterministic for a given --seed")
    r2 = run_ok("eval again", ["eval", ckpt, "--episodes", "10"], work)
    if r2.out != r.out:
        fail("eval twice", r.out.strip(), r2.describe())


# ---- 7. DQN flags and memory plans ------------------------------------------------------------

def test_dqn_plan(work):
    U, R = 2, 1
    check("cudarl plan: 1M Atari-shaped transitions (84x84 uint8, stacks of 4) fit in <= 7.1 GB")
    r = run_ok("plan", ["plan", "--buffer-size", "1000000", "--obs-shape", "84x84",
                        "--frame-stack", "4", "--mem-budget", "32GiB"], work)
    m = re.search(r"(\d+) bytes per transition", r.out)
    if not m or int(m.group(1)) != 7065 or "fits" not in r.out:
        fail("plan output", "'7065 bytes per transition' and 'fits'", r.describe())
    check("a plan over the budget is refused with the bytes, the budget and the largest size")
    r = run(["plan", "--buffer-size", "1000000", "--obs-shape", "84x84", "--mem-budget", "4GiB"],
            work)
    lines = [ln for ln in r.err.splitlines() if ln.strip()]
    if r.rc != R or len(lines) != 1 or "largest --buffer-size that fits is 607921" not in lines[0] \
            or "4.00 GiB" not in lines[0] or "6.58 GiB" not in lines[0]:
        fail("plan over budget", "exit 1 and one line naming 6.58 GiB, 4.00 GiB and 607921",
             r.describe())
    expect_error("a malformed --mem-budget", ["plan", "--mem-budget", "lots"], work, U,
                 ["--mem-budget", "32GiB"])
    expect_error("a malformed --obs-shape", ["plan", "--obs-shape", "84y84"], work, U,
                 ["--obs-shape '84y84'", "84x84"])
    expect_error("an unknown --obs-dtype", ["plan", "--obs-dtype", "int16"], work, U,
                 ["--obs-dtype 'int16'", "uint8 or float32"])
    expect_error("DQN training over its budget is refused before allocating",
                 ["train", "--algo", "dqn", "--buffer-size", "50000000", "--mem-budget", "100M",
                  "--runs-dir", "runs", "--quiet"], work, R,
                 ["memory plan needs", "largest --buffer-size that fits", "--mem-budget"])
    expect_error("a DQN flag out of range", ["train", "--algo", "dqn", "--tau", "0"], work, U,
                 ["--tau", "between"])
    expect_error("a PPO flag given to DQN", ["train", "--algo", "dqn", "--num-steps", "5"], work,
                 U, ["unknown flag '--num-steps'", "--algo dqn --help"])
    expect_error("--buffer-size below the replay's minimum for the envs",
                 ["train", "--algo", "dqn", "--num-envs", "8", "--buffer-size", "10"], work, U,
                 ["--buffer-size 10", "minimum of 32 for --num-envs 8",
                  "raise --buffer-size to 32"])
    dqn = ["train", "--algo", "dqn"]
    expect_error("DQN: --env-device gpu is not a device name", dqn + ["--env-device", "gpu"],
                 work, U, ["--env-device", "cpu, cuda or auto"])
    expect_error("DQN: CartPolePixels' CUDA twin needs the GPU",
                 dqn + ["--env-id", "CartPolePixels-v1", "--policy", "nature-cnn",
                        "--device", "cpu", "--env-device", "cuda"], work, U,
                 ["--env-device cuda", "--device cuda"])
    expect_error("DQN: MinAtar's CUDA twin needs the GPU",
                 dqn + ["--env-id", "MinAtar/Breakout-v1", "--policy", "minatar-cnn",
                        "--device", "cpu", "--env-device", "cuda"], work, U,
                 ["--env-device cuda", "--device cuda"])
    expect_error("DQN: --env-device cuda with --device cpu",
                 dqn + ["--device", "cpu", "--env-device", "cuda"], work, U,
                 ["--env-device cuda", "--device cuda"])
    expect_error("DQN: --env-threads -1 is out of range", dqn + ["--env-threads", "-1"], work, U,
                 ["--env-threads", "must be between 0"])
    expect_error("DQN: an unknown --env-id lists the registered envs",
                 dqn + ["--env-id", "Foo-v0"], work, U,
                 ["'Foo-v0'", "not a known environment", "CartPole-v1", "MinAtar/Breakout-v1"])
    expect_error("DQN: an unknown --policy lists the Q-networks",
                 dqn + ["--policy", "resnet"], work, U,
                 ["--policy 'resnet'", "not a known Q-network", "mlp, minatar-cnn, nature-cnn"])
    expect_error("DQN: a convolutional --policy on CartPole's feature vector",
                 dqn + ["--policy", "minatar-cnn", "--env-id", "CartPole-v1"], work, U,
                 ["--policy minatar-cnn", "image observations", "CartPole-v1",
                  "use --policy mlp"])
    check("DQN trains MinAtar with --policy minatar-cnn; the checkpoint records the network and "
          "eval plays it")
    run_ok("dqn minatar-cnn", dqn + ["--env-id", "MinAtar/Breakout-v1", "--policy",
                                     "minatar-cnn", "--device", "cpu", "--num-envs", "4",
                                     "--total-timesteps", "400", "--learning-starts", "100",
                                     "--batch-size", "16", "--run-name", "dqn_breakout_cnn",
                                     "--runs-dir", "runs", "--quiet"], work)
    cnn = os.path.join(work, "runs", "dqn_breakout_cnn", "model.safetensors")
    meta = checkpoint_metadata(cnn)
    net = json.loads(meta.get("network", "{}"))
    with safe_open(cnn, "np") as f:
        shape = tuple(f.get_slice("network.0.weight").get_shape())
    if meta.get("policy") != "minatar-cnn" or net.get("name") != "minatar-cnn" or \
            net.get("heads", {}).get("type") != "dqn" or shape != (16, 4, 3, 3):
        fail("dqn minatar-cnn checkpoint", "policy and network minatar-cnn, dqn heads, "
             "network.0.weight (16, 4, 3, 3)", f"{meta.get('policy')}, {net}, {shape}")
    check("eval plays a convolutional DQN checkpoint greedily (the policy runtime, CPU envs)")
    r = run_ok("eval dqn minatar-cnn", ["eval", cnn, "--episodes", "4"], work)
    m = re.search(r"episodes 4 +mean return (\S+) +std (\S+)", r.out)
    if not m or not math.isfinite(float(m.group(1))) or float(m.group(1)) < 0:
        fail("eval dqn minatar-cnn", "'episodes 4  mean return M  std S', M >= 0", r.describe())
    check("DQN trains a MinAtar game (uint8 observations) with its envs on CPU threads")
    run_ok("dqn minatar", dqn + ["--env-id", "MinAtar/Breakout-v1", "--policy", "mlp",
                                 "--env-device", "cpu",
                                 "--env-threads", "2", "--device", "cpu", "--num-envs", "4",
                                 "--total-timesteps", "2000", "--learning-starts", "400",
                                 "--train-frequency", "4", "--batch-size", "32",
                                 "--run-name", "dqn_breakout", "--runs-dir", "runs", "--quiet"],
           work)
    with open(os.path.join(work, "runs", "dqn_breakout", "metrics.csv")) as f:
        rows = list(csv.DictReader(f))
    if not rows or int(rows[-1]["global_step"]) != 2000 or \
            not any(r["charts/episodic_return"] for r in rows):
        fail("dqn minatar metrics", "rows up to step 2000, some with an episodic return",
             f"{len(rows)} rows")
    check("eval plays DQN's MLP on MinAtar (the policy runtime, CPU envs)")
    r = run_ok("eval dqn minatar mlp", ["eval", os.path.join("runs", "dqn_breakout",
                                                             "model.safetensors"),
                                        "--episodes", "3"], work)
    if not re.search(r"episodes 3 +mean return \S+ +std \S+", r.out):
        fail("eval dqn minatar mlp", "'episodes 3  mean return M  std S'", r.describe())
    check("the default run name of an env id with a '/' is one folder (MinAtar-Breakout-v1__dqn__...)")
    auto_dir = os.path.join(work, "runs_auto")
    run_ok("dqn minatar default run name",
           dqn + ["--env-id", "MinAtar/Breakout-v1", "--device", "cpu", "--num-envs", "2",
                  "--total-timesteps", "200", "--learning-starts", "100", "--batch-size", "16",
                  "--runs-dir", auto_dir, "--quiet"], work)
    made = os.listdir(auto_dir)
    if len(made) != 1 or not made[0].startswith("MinAtar-Breakout-v1__dqn__1__") or \
            not os.path.exists(os.path.join(auto_dir, made[0], "model.safetensors")):
        fail("default run name", "one folder MinAtar-Breakout-v1__dqn__1__<time> holding the "
             "checkpoint", f"{made}")
    check("cudarl train --algo dqn --help lists dqn.py's flags with defaults")
    r = run_ok("dqn help", ["train", "--algo", "dqn", "--help"], work)
    for flag in ["--buffer-size", "--tau", "--target-network-frequency", "--batch-size",
                 "--start-e", "--end-e", "--exploration-fraction", "--learning-starts",
                 "--train-frequency", "--double-dqn", "--prioritized", "--mem-budget",
                 "--env-device", "--env-threads", "--policy"]:
        if flag not in r.out and f"--[no-]{flag[2:]}" not in r.out:
            fail("dqn help", f"a line for {flag}", r.describe())
    check("SIGINT twice 2 ms apart into a DQN run: exit 130, the checkpoint of the run so far "
          "(cudarl eval plays it), and the command that resumes it")
    total = 100_000_000
    r = interrupted_run(work, "dqn_int", ["--algo", "dqn", "--total-timesteps", str(total),
                                          "--learning-starts", "500", "--run-name", "dqn_int",
                                          "--runs-dir", "runs", "--quiet"], 1.0, twice=True,
                        marker="training DQN on")
    ckpt = os.path.join(work, "runs", "dqn_int", "model.safetensors")
    if r.rc != 130 or "cudarl train --resume" not in r.out or "runs/dqn_int/model.safetensors" \
            not in r.out or not os.path.exists(ckpt):
        fail("interrupted DQN run", "exit code 130, 'cudarl train --resume' and the checkpoint's "
             "path on stdout, the checkpoint written", r.describe())
    step = int(checkpoint_metadata(ckpt).get("global_step", "-1"))
    if not 0 < step < total:
        fail("interrupted DQN checkpoint", f"0 < global_step < {total}", f"  got: {step}")
    no_temp_files(os.path.join(work, "runs", "dqn_int"))
    r = run_ok("eval the interrupted DQN run", ["eval", ckpt, "--episodes", "3"], work)
    if "mean return" not in r.out:
        fail("eval the interrupted DQN run", "a mean return", r.describe())
    check("cudarl train --resume (no --algo: the checkpoint says dqn) continues it 256 steps")
    r = run_ok("resume the interrupted DQN run",
               ["train", "--resume", ckpt, "--total-timesteps", str(step + 256), "--quiet"], work)
    resumed = int(checkpoint_metadata(ckpt).get("global_step", "-1"))
    if resumed != step + 256 or f"step {step + 256}:" not in r.out:
        fail("resumed DQN run", f"global_step {step + 256}", r.describe() +
             f"\n  checkpoint's global_step: {resumed}")
    expect_error("a DQN resume may not change --gamma",
                 ["train", "--resume", ckpt, "--total-timesteps", str(step + 512), "--gamma",
                  "0.5"], work, 2, ["--gamma cannot be changed with --resume"])
    no_temp_files(os.path.join(work, "runs", "dqn_int"))
    check("a short DQN run writes a checkpoint that cudarl eval plays")
    run_ok("dqn train", ["train", "--algo", "dqn", "--total-timesteps", "3000",
                         "--learning-starts", "500", "--run-name", "dqn_small", "--runs-dir",
                         "runs", "--quiet", "--double-dqn", "--prioritized", "--huber"], work)
    r = run_ok("dqn eval", ["eval", os.path.join("runs", "dqn_small", "model.safetensors"),
                            "--episodes", "5"], work)
    if "mean return" not in r.out:
        fail("dqn eval", "a mean return", r.describe())


# ---- 8. PPO with a convolutional policy -------------------------------------------------------

# ppo_atari.py's Agent state_dict for minatar-cnn on MinAtar/Breakout-v1 (4 channels, 3 actions)
MINATAR_PPO_STATE_DICT = {"network.0.weight": (16, 4, 3, 3), "network.0.bias": (16,),
                          "network.3.weight": (128, 1024), "network.3.bias": (128,),
                          "actor.weight": (3, 128), "actor.bias": (3,),
                          "critic.weight": (1, 128), "critic.bias": (1,)}


def test_ppo_conv(work):
    U, F = 2, 1
    ppo = ["train", "--runs-dir", "runs", "--quiet", "--threads", "1"]
    expect_error("PPO: an unknown --policy lists the policies", ppo + ["--policy", "resnet"],
                 work, U, ["--policy 'resnet'", "not a known policy",
                           "mlp, minatar-cnn, nature-cnn"])
    expect_error("PPO: a convolutional --policy on CartPole's feature vector",
                 ppo + ["--policy", "minatar-cnn"], work, U,
                 ["--policy minatar-cnn", "image observations", "CartPole-v1",
                  "use --policy mlp"])
    expect_error("PPO: the MLP on CartPole's pixels names the conv policy to use",
                 ppo + ["--env-id", "CartPolePixels-v1", "--policy", "mlp"], work, U,
                 ["CartPolePixels-v1", "4x84x84", "use --policy nature-cnn"])
    expect_error("PPO: nature-cnn does not fit MinAtar's 10x10",
                 ppo + ["--env-id", "MinAtar/Breakout-v1", "--policy", "nature-cnn"], work, U,
                 ["--policy nature-cnn", "does not fit", "use --policy minatar-cnn"])
    expect_error("PPO: a conv policy with --async",
                 ppo + ["--env-id", "MinAtar/Breakout-v1", "--policy", "minatar-cnn",
                        "--async", "--env-device", "cpu"], work, U,
                 ["--async", "--policy mlp", "drop --async"])
    check("cudarl train --help lists --policy and the conv policies' preset")
    r = run_ok("help", ["train", "--help"], work)
    if "--policy" not in r.out or "ppo_atari.py" not in r.out:
        fail("train --help", "a line for --policy and the ppo_atari.py preset", r.describe())

    check("PPO trains MinAtar/Breakout-v1 with the conv policy it picks (minatar-cnn) on "
          "ppo_atari.py's preset on the CPU (8 envs x 128 steps: one iteration is 1024 steps)")
    run_ok("ppo minatar-cnn", ppo + ["--env-id", "MinAtar/Breakout-v1", "--device", "cpu",
                                     "--env-threads", "1",
                                     "--total-timesteps", "2048", "--run-name", "breakout_cnn"],
           work)
    run_dir = os.path.join(work, "runs", "breakout_cnn")
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        rows = list(csv.DictReader(f))
    if [int(r["global_step"]) for r in rows] != [1024, 2048] or \
            not all(math.isfinite(float(r["losses/value_loss"])) for r in rows):
        fail("ppo minatar-cnn metrics", "rows at steps 1024 and 2048 with finite losses",
             f"{[(r['global_step'], r['losses/value_loss']) for r in rows]}")
    ckpt = os.path.join(run_dir, "model.safetensors")
    check("its checkpoint holds ppo_atari.py's state_dict, Adam's moments, uint8 observations "
          "and the network spec")
    meta = checkpoint_metadata(ckpt)
    net = json.loads(meta.get("network", "{}"))
    if meta.get("algo") != "ppo" or meta.get("policy") != "minatar-cnn" or \
            net.get("name") != "minatar-cnn" or net.get("heads", {}).get("type") != "ppo" or \
            net.get("input", {}).get("shape") != [4, 10, 10] or \
            meta.get("num_envs") != "8" or meta.get("num_steps") != "128" or \
            float(meta.get("learning_rate", 0)) != 2.5e-4 or \
            float(meta.get("clip_coef", 0)) != 0.1 or float(meta.get("ent_coef", 0)) != 0.01:
        fail("ppo minatar-cnn checkpoint metadata", "algo ppo, policy and network minatar-cnn "
             "with ppo heads on (4, 10, 10), ppo_atari.py's hyperparameters", f"{meta}")
    t = load_file(ckpt)
    for name, shape in MINATAR_PPO_STATE_DICT.items():
        for prefix in ("", "optimizer.exp_avg.", "optimizer.exp_avg_sq."):
            x = t.get(prefix + name)
            if x is None or x.shape != shape or x.dtype != np.float32 or \
                    not np.isfinite(x).all():
                fail(f"tensor {prefix + name}", f"float32 {shape}, finite",
                     "  got: " + ("missing" if x is None else f"{x.dtype} {x.shape}"))
    if t["state.obs"].dtype != np.uint8 or t["state.obs"].shape != (8, 400):
        fail("state.obs", "uint8 (8, 400)", f"  got: {t['state.obs'].dtype} {t['state.obs'].shape}")
    check("eval plays a convolutional PPO checkpoint greedily")
    r = run_ok("eval ppo minatar-cnn", ["eval", ckpt, "--episodes", "3", "--seed", "5"], work)
    if not re.search(r"episodes 3 +mean return \S+ +std \S+", r.out):
        fail("eval ppo minatar-cnn", "'episodes 3  mean return M  std S'", r.describe())
    r2 = run_ok("eval ppo minatar-cnn again", ["eval", ckpt, "--episodes", "3", "--seed", "5"],
                work)
    if r2.out != r.out:
        fail("eval ppo minatar-cnn is deterministic", r.out, r2.out)
    expect_error("--policy cannot be changed with --resume",
                 ["train", "--resume", ckpt, "--policy", "mlp"], work, U,
                 ["--policy cannot be changed with --resume", "drop --policy"])
    check("cudarl train --resume continues a minatar-cnn run from its checkpoint")
    run_ok("ppo minatar-cnn resume", ["train", "--resume", ckpt, "--total-timesteps", "4096",
                                      "--quiet", "--threads", "1"], work)
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        steps = [int(r["global_step"]) for r in csv.DictReader(f)]
    if steps != [1024, 2048, 3072, 4096]:
        fail("resumed metrics", "rows at steps 1024, 2048, then 3072 and 4096", f"  got: {steps}")
    if checkpoint_metadata(ckpt).get("policy") != "minatar-cnn":
        fail("resumed checkpoint", "policy minatar-cnn", f"{checkpoint_metadata(ckpt)}")


# ---- 9. run folders: one name, one run -----------------------------------------------------

def test_runs(work):
    """A run claims its folder (run.lock): two processes that start one run name at once give
    exactly one run; a run that was killed leaves no claim; every trainer checks --run-name."""
    U, F = 2, 1
    ppo = ["train", "--device", "cpu", "--quiet", "--runs-dir", "runs"]
    dqn = ["train", "--algo", "dqn", "--device", "cpu", "--quiet", "--runs-dir", "runs"]
    expect_error("DQN: --run-name with a slash leaves --runs-dir", dqn + ["--run-name", "../x"],
                 work, U, ["--run-name '../x'", "'/'", "letters, digits"])
    expect_error("DQN: --run-name '..'", dqn + ["--run-name", ".."], work, U,
                 ["--run-name '..'", "not a usable folder name"])
    if os.path.exists(os.path.join(work, "x")):
        fail("nothing written outside --runs-dir", "no folder x beside runs", "  got: one")

    check("a DQN run name that holds a checkpoint is refused, suggesting --resume")
    small_dqn = dqn + ["--total-timesteps", "1200", "--learning-starts", "200"]
    run_ok("DQN run 'done'", small_dqn + ["--run-name", "done"], work)
    verify_error("DQN: a run name that holds a checkpoint", run(small_dqn + ["--run-name",
                 "done"], work), F, ["run 'done' already has a checkpoint", "--run-name",
                                     "--resume", "runs/done/model.safetensors"])

    check("two runs of one name started at once, 50 times: exactly one runs")
    # small runs (4 envs x 16 steps, 32 iterations): a few ms each, under ASan a fraction of a
    # second, both started at once so that the second mostly finds the first running
    argv = [CUDARL] + ppo + ["--num-envs", "4", "--num-steps", "16", "--total-timesteps", "2048",
                             "--run-name", "same"]
    busy = 0
    for k in range(50):
        shutil.rmtree(os.path.join(work, "runs", "same"), ignore_errors=True)
        procs = [subprocess.Popen(argv, cwd=work, env=env_with("warn"), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(2)]
        outs = [(p.wait(timeout=120), *p.communicate()) for p in procs]
        ok = [o for o in outs if o[0] == 0]
        refused = [o for o in outs if o[0] != 0]
        if len(ok) != 1 or len(refused) != 1:
            fail(f"round {k}: exactly one of two runs of one name ran",
                 "one exit code 0 and one refusal",
                 "\n".join(f"  exit {rc}: {err.strip()}" for rc, _, err in outs))
        rc, out, err = refused[0]
        lines = [ln for ln in err.splitlines() if ln.strip()]
        in_use = "is in use by another cudarl process (pid " in err
        if rc != F or len(lines) != 1 or not (in_use or "already has a checkpoint" in err):
            fail(f"round {k}: the second run's refusal", "exit 1, one line naming the first run "
                 "(its pid) or its checkpoint", f"  exit {rc}: {err.strip()}")
        busy += in_use
    print(f"  50 rounds: one run each; {busy} refusals while the first ran, {50 - busy} after its "
          "checkpoint", flush=True)
    no_temp_files(os.path.join(work, "runs", "same"))

    check("a run killed mid-way leaves no claim: the same name starts again")
    shutil.rmtree(os.path.join(work, "runs", "killed"), ignore_errors=True)
    long_argv = [CUDARL] + ppo + ["--total-timesteps", "50000000", "--run-name", "killed"]
    p = subprocess.Popen(long_argv, cwd=work, env=env_with("info"), stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    for line in p.stderr:  # the claim is taken before training starts
        if "training PPO on" in line:
            break
    p.kill()
    p.wait(timeout=30)
    r = run_ok("a new run of the killed run's name", ppo + ["--total-timesteps", "2048",
               "--run-name", "killed"], work)


# ---- 10. limits: the library's ranges, environment values, byte sizes ------------------------

RANGE_LINE = re.compile(r"^\s+--([a-z0-9-]+)\s.*, range (\S+)\.\.(\S+)\)\s*$")
RANGE_MESSAGE = re.compile(r"--([a-z0-9-]+) must be between (\S+)(?: \([^)]*\))? and (\S+), "
                           r"got (\S+)$")


def numeric_flags(work, help_args):
    """(flag, lo, hi, is_real) of every flag `cudarl ... --help` shows with a range: the
    library's table for its settings, the CLI's own bounds for the rest (a seed)."""
    r = run_ok(shlex.join(help_args), help_args, work)
    flags = []
    for line in r.out.splitlines():
        m = RANGE_LINE.match(line)
        if m:
            real = any(c in m.group(2) + m.group(3) for c in ".e")  # "0.0..1.0", "1..64"
            num = float if real else int
            flags.append((m.group(1), num(m.group(2)), num(m.group(3)), real))
    if len(flags) < 3:
        fail(f"{shlex.join(help_args)} shows ranges", "lines '... (default: X, range LO..HI)'",
             r.describe())
    return flags


def check_flag_ranges(work, what, args, help_args, accepted_after, accepted_needle):
    """For each numeric flag of `help_args`: the values just outside its range are refused
    with exit code 2 and the library's message naming that range, and the bounds pass the
    parser and the library's validator (`accepted_after` then fails on purpose, later, with
    `accepted_needle`, so that nothing trains)."""
    flags = numeric_flags(work, help_args)
    check(f"{what}: {len(flags)} numeric flags: just outside the range refused (exit 2, the "
          "library's message), the bounds accepted")
    for flag, lo, hi, real in flags:
        below = math.nextafter(lo, -math.inf) if real else lo - 1
        above = math.nextafter(hi, math.inf) if real else hi + 1
        for value in (below, above):
            text = repr(value) if real else str(value)
            r = run(args + [f"--{flag}", text], work)
            lines = [ln for ln in r.err.splitlines() if ln.strip()]
            m = RANGE_MESSAGE.search(lines[0]) if len(lines) == 1 else None
            if r.rc != 2 or r.out.strip() or not m or m.group(1) != flag or \
                    float(m.group(2)) != lo or float(m.group(3)) != hi or \
                    float(m.group(4)) != float(value):
                fail(f"{what}: --{flag} {text} is refused",
                     f"exit code 2 and one line '--{flag} must be between {lo} and {hi}, got "
                     f"{text}'", r.describe())
        for value in (lo, hi):
            text = repr(value) if real else str(value)
            r = run(args + [f"--{flag}", text] + accepted_after, work)
            lines = [ln for ln in r.err.splitlines() if ln.strip()]
            if r.rc != 2 or len(lines) != 1 or accepted_needle not in lines[0]:
                fail(f"{what}: --{flag} {text} (a bound) is accepted",
                     f"exit code 2 for the later refusal '{accepted_needle}', not for the "
                     f"flag", r.describe())


def test_limits(work):
    U = 2
    nope = ["--env-id", "Nope-v0"]  # refused by the validator after every range check
    check_flag_ranges(work, "train (PPO)", ["train", "--device", "cpu", "--quiet"],
                      ["train", "--help"], nope, "'Nope-v0' is not a known environment")
    check_flag_ranges(work, "train --algo dqn", ["train", "--algo", "dqn", "--quiet"],
                      ["train", "--algo", "dqn", "--help"], nope,
                      "'Nope-v0' is not a known environment")
    check_flag_ranges(work, "plan", ["plan"], ["plan", "--help"], ["--obs-dtype", "int16"],
                      "--obs-dtype 'int16'")
    expect_error("the replay's floor holds for plan too", ["plan", "--buffer-size", "20",
                                                          "--num-envs", "4"], work, U,
                 ["--buffer-size 20", "minimum of 28 for --num-envs 4", "--frame-stack 4 + 3"])

    # every CUDARL_* variable the library reads, a value it does not take, and what it takes;
    # refused before any command runs, whether or not that command reads the variable
    bad_env = {"CUDARL_LOG": ("verbose", "error, warn, info or debug"),
               "CUDARL_SYNC_DEBUG": ("yes", "0 or 1"), "CUDARL_FUSED": ("2", "0 or 1"),
               "CUDARL_CONV_ENGINE": ("bogus", "gemm or cudnn")}
    for var, (value, values) in bad_env.items():
        for cmd in (["info"], ["train", "--algo", "dqn", "--total-timesteps", "1"]):
            env = env_with("warn")
            env[var] = value
            expect_error(f"{var}={value} is refused by cudarl {cmd[0]}", cmd, work, U,
                         [f"{var}='{value}'", f"set it to {values}", "or unset it"], env=env)

    # byte sizes take a unit; 0 alone means no budget of its own
    small = ["plan", "--buffer-size", "1000"]
    for flag_args, where in ((small, "plan"), (["train", "--algo", "dqn", "--quiet"], "dqn")):
        expect_error(f"{where}: --mem-budget 0.5 (no unit) is refused", flag_args +
                     ["--mem-budget", "0.5"], work, U,
                     ["--mem-budget '0.5' has no unit", "512M", "or 0 for"])
        expect_error(f"{where}: --mem-budget 4096 (no unit) is refused", flag_args +
                     ["--mem-budget", "4096"], work, U, ["--mem-budget '4096' has no unit"])
        expect_error(f"{where}: --mem-budget 0.5B (under a byte) is refused", flag_args +
                     ["--mem-budget", "0.5B"], work, U,
                     ["--mem-budget '0.5B' is less than one byte", "at least 1B"])
        expect_error(f"{where}: --mem-budget 2048TiB (over the library's range) is refused",
                     flag_args + ["--mem-budget", "2048TiB"], work, U,
                     ["--mem-budget must be between 0", "and 1125899906842624"])
    check("plan reads sizes with each kind of unit, and 0 as the available memory")
    for text, shown in (("512M", "512.00 MiB"), ("1.5GiB", "1.50 GiB"), ("7.1GB", "6.61 GiB"),
                        ("4096B", "4.00 KiB"), ("2K", "2.00 KiB"),
                        ("0", "(the budget: available host memory)")):
        r = run(small + ["--frame-stack", "1", "--obs-shape", "4", "--mem-budget", text], work)
        if r.rc not in (0, 1) or shown not in r.out:
            fail(f"plan --mem-budget {text}", f"a plan against {shown}", r.describe())


# ---- continuous actions: what a Gaussian run and its checkpoint refuse ---------------------

def test_continuous(work):
    U, R = 2, 1
    expect_error("DQN refuses an env of continuous actions, naming PPO",
                 ["train", "--algo", "dqn", "--env-id", "Pendulum-v1", "--device", "cpu"], work,
                 U, ["Pendulum-v1 has continuous actions", "--algo ppo"])
    check("a Gaussian PPO run on Pendulum-v1 with its preset (--norm-obs) writes a checkpoint")
    run_ok("train pendulum", ["train", "--env-id", "Pendulum-v1", "--total-timesteps", "4096",
                              "--runs-dir", "runs", "--run-name", "pend", "--quiet"], work)
    ckpt = os.path.join(work, "runs", "pend", "model.safetensors")
    tensors, meta = load_file(ckpt), checkpoint_metadata(ckpt)
    for k in ("action_dim", "action_low", "action_high", "norm_obs", "norm_reward"):
        if k not in meta:
            fail("the Gaussian checkpoint's metadata", k, f"  got: {sorted(meta)}")
    bad_var = dict(tensors)
    bad_var["obs_rms.var"] = tensors["obs_rms.var"].copy()
    bad_var["obs_rms.var"][1] = -1.0
    path = os.path.join(work, "bad_var.safetensors")
    save_file(bad_var, path, metadata=meta)
    expect_error("eval refuses a negative observation variance", ["eval", path, "--episodes",
                 "2", "--device", "cpu"], work, R, ["obs_rms.var", "damaged"])
    bad_box = dict(meta, action_low="-2,x")
    path = os.path.join(work, "bad_box.safetensors")
    save_file(tensors, path, metadata=bad_box)
    expect_error("eval refuses an unreadable action box", ["eval", path, "--episodes", "2",
                 "--device", "cpu"], work, R, ["action_low", "comma-separated numbers"])
    os.makedirs(os.path.join(work, "runs", "resumed"), exist_ok=True)
    path = os.path.join(work, "runs", "resumed", "model.safetensors")
    save_file(bad_var, path, metadata=meta)
    expect_error("resume refuses a negative observation variance",
                 ["train", "--resume", path, "--total-timesteps", "8192", "--quiet"], work, R,
                 ["obs_rms.var", "variance >= 0"])


# ---- 12. config files -------------------------------------------------------------------------

def help_flags(work, *algo):
    """The flag names `cudarl train [--algo dqn] --help` lists, in order."""
    r = run_ok("train --help", ["train", *algo, "--help"], work)
    return [m.group(2) for m in (re.match(r"^\s+--(\[no-\])?([a-z0-9-]+)\s", ln)
                                 for ln in r.out.splitlines()) if m]


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def read_toml(path):
    import tomllib  # Python 3.11+: the standard library's TOML reader
    with open(path, "rb") as f:
        return tomllib.load(f)


def tb_hparams_text(run_dir):
    """The text of the run's "hyperparameters" text summary, as TensorBoard reads it."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    acc = EventAccumulator(run_dir, size_guidance={"tensors": 0})
    acc.Reload()
    tag = "hyperparameters/text_summary"
    if tag not in acc.Tags()["tensors"]:
        fail("the event file holds the hyperparameters text", f"tensor tag {tag}",
             f"  got tags: {acc.Tags()}")
    return acc.Tensors(tag)[0].tensor_proto.string_val[0].decode()


def config_round_trip(work, algo, file_text, override, small_args):
    """Trains from `file_text` (+ the flags `override`, which win), checks the run's
    config.toml (TOML by tomllib, every flag, the overrides' values), its TensorBoard text, and
    that --config config.toml --runs-dir again reproduces the checkpoint byte for byte."""
    name = f"cfg_{algo}"
    path = write(os.path.join(work, f"{name}.toml"), file_text)
    run_ok(f"{algo} from a config file", ["train", "--config", path, *override, *small_args],
           work)
    run_dir = os.path.join(work, "runs", name)
    saved = os.path.join(run_dir, "config.toml")
    check(f"{algo}: runs/{name}/config.toml is TOML (tomllib) with every flag but config, "
          "resume and num-gpus (how this process was launched, as mpirun's -np), the file's "
          "values and the flags' over them")
    got = read_toml(saved)
    flags = [f for f in help_flags(work, *(["--algo", "dqn"] if algo == "dqn" else []))
             if f not in ("config", "resume", "num-gpus")]
    if sorted(got) != sorted(flags):
        fail("config.toml's keys", f"the flags of --help: {sorted(flags)}",
             f"  got: {sorted(got)}")
    if got["algo"] != algo or got["run-name"] != name or got["device"] != "cpu":
        fail("config.toml's algo, run-name, device", f"{algo}, {name}, cpu", f"  got: {got}")
    for i in range(0, len(override), 2):
        key, want = override[i][2:], override[i + 1]
        if str(got[key]) != want and not (isinstance(got[key], float) and got[key] == float(want)):
            fail(f"the flag --{key} wins over the file", want, f"  got: {got[key]!r}")
    check(f"{algo}: the event file holds CleanRL's hyperparameters table")
    text = tb_hparams_text(run_dir)
    rows = text.splitlines()
    if rows[:2] != ["|param|value|", "|-|-|"] or len(rows) != len(flags) + 2 or \
            f"|seed|{got['seed']}|" not in rows:
        fail("hyperparameters text", "|param|value| then |-|-| then one row per flag",
             f"  got: {text!r}")
    check(f"{algo}: --config config.toml --runs-dir again gives the same checkpoint bytes")
    run_ok("train from the saved config", ["train", "--config", saved, "--runs-dir", "again"],
           work)
    again = os.path.join(work, "again", name)
    if sha256(os.path.join(again, "model.safetensors")) != \
            sha256(os.path.join(run_dir, "model.safetensors")):
        fail("the saved config reproduces the run", "identical model.safetensors",
             "  " + (tensor_difference(os.path.join(again, "model.safetensors"),
                                       os.path.join(run_dir, "model.safetensors")) or
                     "tensors equal, metadata differs"))
    if metrics_without_timing(os.path.join(again, "metrics.csv")) != \
            metrics_without_timing(os.path.join(run_dir, "metrics.csv")):
        fail("the saved config reproduces the metrics", "equal metrics.csv", "  they differ")
    got2 = read_toml(os.path.join(again, "config.toml"))
    got2["runs-dir"] = got["runs-dir"]
    if got2 != got:
        fail("the reproduced run's config.toml", "the first run's but for runs-dir",
             f"  got: {got2}")
    check(f"{algo}: the same run from flags alone (config.toml's values as flags) writes the "
          "same checkpoint bytes")
    as_flags = []
    for key, value in got.items():
        if key == "runs-dir" or value == "":
            continue
        if isinstance(value, bool):
            as_flags.append(f"--{key}" if value else f"--no-{key}")
        else:
            as_flags += [f"--{key}", str(value)]
    run_ok("train from flags", ["train", *as_flags, "--runs-dir", "fromflags"], work)
    flagged = os.path.join(work, "fromflags", name, "model.safetensors")
    if sha256(flagged) != sha256(os.path.join(run_dir, "model.safetensors")):
        fail("flags and a config file give the same run", "identical model.safetensors",
             "  " + (tensor_difference(flagged, os.path.join(run_dir, "model.safetensors")) or
                     "tensors equal, metadata differs"))
    return run_dir


def test_config(work):
    config_round_trip(work, "ppo", """# CartPole, small
[train]
env-id = "CartPole-v1"
seed = 7
total-timesteps = 2_048   # four iterations
num-envs = 8
num-steps = 64
learning-rate = 2.5e-4
norm-adv = true
clip-coef = 0.2
run-name = 'cfg_ppo'
runs-dir = "runs"
threads = 1
quiet = true
""", ["--learning-rate", "0.001", "--seed", "9"], [])
    dqn_dir = config_round_trip(work, "dqn", """algo = "dqn"
env-id = "CartPole-v1"
total-timesteps = 1200
num-envs = 4
learning-starts = 200
buffer-size = 600
batch-size = 16
train-frequency = 4
hidden1 = 16
hidden2 = 16
prioritized = true
mem-budget = "1GiB"
run-name = "cfg_dqn"
threads = 1
quiet = true
""", ["--gamma", "0.95"], ["--device", "cpu"])

    check("--resume with the run's own config.toml continues it; a changed value is refused")
    ckpt = os.path.join(dqn_dir, "model.safetensors")
    saved = os.path.join(dqn_dir, "config.toml")
    r = run_ok("resume with --config config.toml",
               ["train", "--resume", ckpt, "--config", saved, "--total-timesteps", "1600"], work)
    if int(checkpoint_metadata(ckpt)["global_step"]) != 1600:
        fail("resume with the run's config", "global_step 1600", r.describe())
    text = open(saved).read()
    changed = write(os.path.join(work, "changed.toml"), text.replace("gamma = 0.95",
                                                                     "gamma = 0.9"))
    line = next(i + 1 for i, ln in enumerate(text.splitlines()) if ln.startswith("gamma ="))
    expect_error("a config whose gamma differs from the checkpoint's, with --resume",
                 ["train", "--resume", ckpt, "--config", changed, "--total-timesteps", "2000"],
                 work, 2, [f"changed.toml:{line}: gamma differs from the checkpoint's",
                           "remove the key"])
    over = write(os.path.join(work, "over.toml"), "total-timesteps = 2000\nthreads = 1\n")
    run_ok("a config of flags a resume may change", ["train", "--resume", ckpt, "--config", over],
           work)
    if int(checkpoint_metadata(ckpt)["global_step"]) != 2000:
        fail("the file's total-timesteps applies to the resume", "global_step 2000", "")

    check("a checkpoint of the other algo is refused by --resume")
    ppo_ckpt = os.path.join(work, "runs", "cfg_ppo", "model.safetensors")
    expect_error("--algo dqn --resume of a PPO checkpoint",
                 ["train", "--algo", "dqn", "--resume", ppo_ckpt], work, 1,
                 [ppo_ckpt, "was trained with algo 'ppo', not dqn"])
    expect_error("--algo ppo --resume of a DQN checkpoint",
                 ["train", "--algo", "ppo", "--resume", ckpt], work, 1,
                 [ckpt, "was trained with algo 'dqn', not ppo"])

    check("every bad config file is refused with the file, the line and the fix")
    bad = [("unknown.toml", "seed = 1\nlearning_rate = 0.1\n",
            ["unknown.toml:2:", "unknown key 'learning_rate'", "did you mean 'learning-rate'"]),
           ("str_for_num.toml", 'gamma = "0.9"\n',
            ["str_for_num.toml:1:", "gamma expects a number, got a string", "without quotes"]),
           ("float_for_int.toml", "num-envs = 8.0\n",
            ["float_for_int.toml:1:", "num-envs expects an integer, got a float (8.0)",
             "whole number"]),
           ("str_for_bool.toml", 'norm-adv = "yes"\n',
            ["norm-adv expects true or false, got a string", "without quotes"]),
           ("num_for_str.toml", "env-id = 5\n",
            ["env-id expects a value, got an integer (5)", "double quotes"]),
           ("bad_device.toml", 'device = "gpu"\n',
            ["bad_device.toml:1:", "--device expects cpu, cuda or auto, got 'gpu'"]),
           ("syntax.toml", 'seed = 1\n\nenv-id = "CartPole-v1\n',
            ["syntax.toml:3:", "no closing \""]),
           ("no_equals.toml", "seed 1\n", ["no_equals.toml:1:", "expected '='"]),
           ("table.toml", "[model]\nhidden = 8\n", ["table.toml:1:", "unknown table [model]",
                                                    "[train]"]),
           ("array.toml", "seed = [1, 2]\n", ["array.toml:1:", "arrays are not supported"]),
           ("inline.toml", "x = {a = 1}\n", ["inline.toml:1:", "inline tables"]),
           ("twice.toml", "seed = 1\n[train]\nseed = 2\n",
            ["twice.toml:3:", "'seed' is set twice (line 1 too)"]),
           ("dotted.toml", "train.seed = 1\n", ["dotted.toml:1:", "dotted keys"]),
           ("multiline.toml", 'env-id = """CartPole-v1"""\n', ["multi-line strings"]),
           ("hex.toml", "seed = 0x10\n", ["hex.toml:1:", "write it in decimal"]),
           ("date.toml", "seed = 2024-01-01\n", ["dates and times"]),
           ("trailing.toml", "seed = 1 2\n", ["trailing.toml:1:", "unexpected '2'"]),
           ("resume.toml", 'resume = "runs/x/model.safetensors"\n',
            ["'resume' cannot be set in a config file", "pass --resume on the command line"]),
           ("dqn_key.toml", "buffer-size = 100\n",
            ["unknown key 'buffer-size'", "cudarl train --help"])]
    for name, text, needles in bad:
        path = write(os.path.join(work, name), text)
        expect_error(f"config {name}", ["train", "--config", path], work, 2, needles)
    with open(os.path.join(work, "latin1.toml"), "wb") as f:
        f.write(b'env-id = "Cart\xe9"\n')
    expect_error("a file that is not UTF-8", ["train", "--config", "latin1.toml"], work, 2,
                 ["latin1.toml:1:", "not UTF-8"])
    expect_error("a missing config file", ["train", "--config", "nope.toml"], work, 2,
                 ["cannot read the config file 'nope.toml'", "No such file"])
    expect_error("a folder as the config file", ["train", "--config", "runs"], work, 2,
                 ["cannot read the config file 'runs'", "Is a directory"])
    expect_error("an empty --config", ["train", "--config="], work, 2, ["--config must not be "
                                                                       "empty"])
    check("an out-of-range value gets the flag's own message, after the file and line")
    for key, value in [("num-envs", "0"), ("learning-rate", "5"), ("gamma", "-1"),
                       ("mem-budget", '"5"')]:
        algo = ["--algo", "dqn"] if key == "mem-budget" else []
        flag = run(["train", *algo, f"--{key}", value.strip('"')], work)
        path = write(os.path.join(work, "range.toml"), f"{key} = {value}\n")
        fr = run(["train", *algo, "--config", path], work)
        want = flag.err.strip().split(": ", 1)[1]
        got = fr.err.strip()
        prefix = f"cudarl train{' --algo dqn' if algo else ''}: {path}:1: "
        if flag.rc != 2 or fr.rc != 2 or got != prefix + want:
            fail(f"{key} = {value} in a file", f"exit 2 and '{prefix}{want}'",
                 fr.describe() + "\n  the flag's:\n" + flag.describe())


# ---- 13. --profile ----------------------------------------------------------------------------

def profile_ms(what, err, label):
    """The ms per iteration that --profile printed after `label` (a line's start, spaces first)."""
    m = re.search(r"^ +" + re.escape(label) + r"\s+([0-9.]+) ms", err, re.M)
    if not m:
        fail(what, f"a line '{label}   X ms'", f"  stderr:\n{err}")
    return float(m.group(1))


def test_profile(work):
    """--profile on the CPU: the MLP's FLOP/s line, and a conv policy's rollout split into env
    steps, forwards and the rest with the model FLOPs of its forwards and update."""
    ppo = ["train", "--runs-dir", "runs", "--quiet", "--threads", "1", "--profile"]
    check("--profile on the MLP prints the phases and the achieved FLOP/s, with no peak on the "
          "CPU")
    r = run_ok("mlp --profile", ppo + [*SMALL, "--run-name", "mlp"], work)
    for needle in ["profile: ", "update (learn)", "host<->device synchronisations per iteration",
                   "model FLOPs per iteration: rollout", "(no peak known on the cpu backend)"]:
        if needle not in r.err:
            fail("mlp --profile", f"a line with {needle!r}", r.describe())
    check("--profile splits the time from the process's start to the loop, the parts adding up")
    names = profile_start("mlp --profile", r)
    if names[0] != "the network's layout" or any("warm-up" in n for n in names):
        fail("mlp --profile", "the setup's parts: the network's layout first, no warm-up for an "
             "MLP", r.describe())

    # MinAtar/Breakout-v1: 4 channels, 3 actions; ppo_atari.py's preset, 8 envs x 128 steps.
    # minatar-cnn per row: conv 8*8*16 * 3*3*4 + fc 1024*128 + heads 128*4 = 168448 multiply-adds:
    # forward 0.337 MFLOP; backward 2 * (2 * 168448 - 36864) (no dx for the conv): together
    # 0.937 MFLOP. A rollout forwards its 8 x 128 rows and the 8 last (MinAtar never truncates).
    for extra, nets, fwd, both in [([], "1 network", "0.337", "0.937"),
                                   (["--separate-critic"], "2 networks: --separate-critic",
                                    "0.674", "1.87")]:
        what = "minatar-cnn --profile" + "".join(" " + e for e in extra)
        check(f"{what} splits the rollout into env steps, forwards and the rest (adding up to it "
              f"on the CPU) and prints the model FLOPs and achieved TFLOP/s")
        r = run_ok(what, ppo + ["--env-id", "MinAtar/Breakout-v1", "--policy", "minatar-cnn",
                                "--device", "cpu", "--env-threads", "1", "--total-timesteps",
                                "2048", "--run-name", "cnn" + str(len(extra)), *extra], work)
        rollout = profile_ms(what, r.err, "rollout (env + policy)")
        update = profile_ms(what, r.err, "update (learn)")
        env = profile_ms(what, r.err, "env steps (the host waiting for the CPU threads)")
        forward = profile_ms(what, r.err, "policy forwards + sampling")
        rest = profile_ms(what, r.err, "the rest (copies, episode sums, GAE)")
        if not (forward > 0 and env >= 0 and rest >= -0.01 and
                abs(env + forward + rest - rollout) <= 0.01):
            fail(what, f"env + forwards + rest = the rollout's {rollout} ms, forwards > 0",
                 f"  got {env} + {forward} + {rest}\n{r.describe()}")
        want = (f"model FLOPs per iteration (minatar-cnn, {nets}; 2 per multiply-add of its "
                f"convs and linears):")
        m = re.search(re.escape(want) + r"\n +rollout forwards (\S+) \(1032 rows x " + fwd +
                      r" MFLOP\)\n +update (\S+) \(4 epochs x 1024 rows x " + re.escape(both) +
                      r" MFLOP forward \+ backward\)\n", r.err)
        a = re.search(r"achieved (\S+) TFLOP/s over rollout \+ update \(no peak known on the "
                      r"cpu backend\)", r.err)
        if not m or not a:
            fail(what, f"'{want}', lines 'rollout forwards F (1032 rows x {fwd} MFLOP)' and "
                       f"'update U (4 epochs x 1024 rows x {both} MFLOP forward + backward)', "
                       f"and 'achieved X TFLOP/s over rollout + update (no peak known on the cpu "
                       f"backend)'", r.describe())
        flops = float(m.group(1)) + float(m.group(2))
        achieved = float(a.group(1)) * 1e12
        expect = flops / ((rollout + update) * 1e-3)
        if abs(achieved - expect) > 0.01 * expect:
            fail(what, f"achieved = model FLOPs / (rollout + update) = {expect:.4g} FLOP/s",
                 f"  got {achieved:.4g}\n{r.describe()}")


def profile_flops(what, r, want_rows, fwd, both, epochs, batch):
    """The model FLOPs lines of a conv policy's --profile (`fwd`, `both`: the MFLOP per row as
    printed) with `want_rows` rows forwarded per rollout; returns the rollout's and update's."""
    m = re.search(r"\n +rollout forwards (\S+) \(" + str(want_rows) + r" rows x " +
                  re.escape(fwd) + r" MFLOP\)\n +update (\S+) \(" + str(epochs) +
                  r" epochs x " + str(batch) + r" rows x " + re.escape(both) +
                  r" MFLOP forward \+ backward\)\n", r.err)
    if not m:
        fail(what, f"'rollout forwards F ({want_rows} rows x {fwd} MFLOP)' and 'update U "
                   f"({epochs} epochs x {batch} rows x {both} MFLOP forward + backward)'",
             r.describe())
    return float(m.group(1)), float(m.group(2))


def profile_start(what, r):
    """--profile's start lines: the total, before training, PPO's setup with its parts, the run
    directory, adding up (each printed to the ms); returns the setup's parts' names."""
    m = re.search(r"from the process's start to the loop: (\S+) s .*\n +before training began "
                  r"\(the process, the device's context and libraries\) +(\S+) s\n +PPO's setup "
                  r"\(plans, memory, the networks' handles, warm-up\) +(\S+) s\n"
                  r"((?:      \S.*? +\S+ s\n)+) +the run directory +(\S+) s\n", r.err)
    if not m:
        fail(what, "the start's lines: total, before, setup and its parts, run directory",
             r.describe())
    total, before, setup, rest = (float(m.group(i)) for i in (1, 2, 3, 5))
    parts = re.findall(r"^      (\S.*?) +(\S+) s$", m.group(4), re.M)
    if not (before >= 0 and setup > 0 and rest >= 0
            and abs(before + setup + rest - total) <= 0.0025
            and abs(sum(float(v) for _, v in parts) - setup) <= 0.0006 * len(parts) + 0.0005
            and all(float(v) >= 0 for _, v in parts)):
        fail(what, "before + setup + run directory = the total, the setup's parts adding up to "
             "it, each >= 0", r.describe())
    return [n for n, _ in parts]


def test_profile_gpu(work):
    """--profile on a GPU (label gpu): a conv policy's rollout with its envs' image twin, split
    by timing events into env steps, forwards and the rest, and its TFLOP/s against the bf16
    tensor-core peak; the same policy with its envs on CPU threads."""
    ppo = ["train", "--runs-dir", "runs", "--quiet", "--profile", "--device", "cuda"]
    # nature-cnn on CartPolePixels-v1 (2 actions) per row: forward 2 * 9344512 multiply-adds =
    # 18.7 MFLOP, with the backward 49.5 (test_profile_model.c); the twin forwards every step's
    # N rows, the N last, and once after the rollout the N rows where truncated envs' final
    # observations were kept: T N + 2 N rows.
    what = "CartPolePixels-v1 nature-cnn bf16 --profile on the GPU twin"
    check(f"{what}: env steps + forwards + the rest = the rollout, TFLOP/s against the bf16 peak")
    # one network: the Nature-CNN's CUDA recipe would give the critic a network of its own
    r = run_ok(what, ppo + ["--env-id", "CartPolePixels-v1", "--policy", "nature-cnn",
                            "--precision", "bf16", "--num-envs", "256", "--num-steps", "16",
                            "--num-minibatches", "4", "--total-timesteps", "8192",
                            "--separate-critic", "false", "--run-name", "twin"], work)
    rollout = profile_ms(what, r.err, "rollout (env + policy)")
    update = profile_ms(what, r.err, "update (learn)")
    env = profile_ms(what, r.err, "env steps (the image twin's kernels)")
    forward = profile_ms(what, r.err, "policy forwards + sampling")
    rest = profile_ms(what, r.err, "the rest (copies, episode sums, GAE, launch gaps)")
    if not (env > 0 and forward > 0 and rest >= -0.01 and
            abs(env + forward + rest - rollout) <= 0.01):
        fail(what, f"env > 0, forwards > 0, env + forwards + rest = the rollout's {rollout} ms",
             f"  got {env} + {forward} + {rest}\n{r.describe()}")
    roll_f, upd_f = profile_flops(what, r, 16 * 256 + 2 * 256, "18.7", "49.5", 4, 4096)
    a = re.search(r"achieved (\S+) TFLOP/s over rollout \+ update \(\S+% of the bf16 peak of "
                  r"the tensor cores, (\S+) TFLOP/s: sm_\d+, \d+ SMs x \d+ FLOP/clock x \d+ "
                  r"MHz\)", r.err)
    if not a or float(a.group(2)) <= 0:
        fail(what, "'achieved X TFLOP/s over rollout + update (P% of the bf16 peak of the tensor "
                   "cores, T TFLOP/s: sm_.., S SMs x R FLOP/clock x C MHz)', T > 0", r.describe())
    expect = (roll_f + upd_f) / ((rollout + update) * 1e-3)
    if abs(float(a.group(1)) * 1e12 - expect) > 0.01 * expect:
        fail(what, f"achieved = model FLOPs / (rollout + update) = {expect:.4g} FLOP/s",
             r.describe())
    if "host waiting for the device at the phase ends: rollout" not in r.err:
        fail(what, "a line 'host waiting for the device at the phase ends'", r.describe())
    names = profile_start(what, r)
    if (names[0] != "the policy's network: its plans, the libraries' handles"
            or names[-2] != "a conv policy's warm-up calls (the libraries' first calls)"
            or names[-1] != ("the first state: the rest of the weights' thread, seeds, the "
                             "envs' reset")
            or any("critic" in n for n in names)):
        fail(what, "the setup's parts: the policy's network first, the warm-up calls, then the "
             "first state (the rest of the weights' host thread) last, no critic's network "
             "(--separate-critic false)", r.describe())

    what = "MinAtar/Breakout-v1 minatar-cnn --profile, envs on CPU threads, policy on the GPU"
    check(f"{what}: the host's wait for the threads, the forwards' device time")
    # ppo_atari.py's shape (8 x 128, 4 minibatches), not MinAtar's CUDA recipe
    r = run_ok(what, ppo + ["--env-id", "MinAtar/Breakout-v1", "--policy", "minatar-cnn",
                            "--env-device", "cpu", "--env-threads", "2", "--num-envs", "8",
                            "--num-steps", "128", "--num-minibatches", "4", "--total-timesteps",
                            "2048", "--run-name", "pool"], work)
    forward = profile_ms(what, r.err, "policy forwards + sampling")
    profile_ms(what, r.err, "env steps (the host waiting for the CPU threads)")
    if forward <= 0 or "the parts overlap" not in r.err:
        fail(what, "forwards > 0 ms and the note that the parts overlap", r.describe())
    profile_flops(what, r, 1032, "0.337", "0.937", 4, 1024)


GROUPS = {"bad_input": test_bad_input, "help": test_help, "determinism": test_determinism,
          "checkpoint": test_checkpoint, "resume": test_resume, "eval": test_eval,
          "dqn_plan": test_dqn_plan, "ppo_conv": test_ppo_conv, "runs": test_runs,
          "limits": test_limits, "continuous": test_continuous, "config": test_config,
          "profile": test_profile}
GPU_GROUPS = {"profile_gpu": test_profile_gpu}  # run only when named (label gpu, CUDA builds)


def main():
    global CUDARL
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cudarl", required=True, help="path of the cudarl binary")
    ap.add_argument("--work", required=True, help="scratch folder (emptied per group)")
    ap.add_argument("--only", choices=sorted({**GROUPS, **GPU_GROUPS}),
                    help="run one group of checks")
    args = ap.parse_args()
    CUDARL = os.path.abspath(args.cudarl)
    if not os.access(CUDARL, os.X_OK):
        fail("the cudarl binary exists", f"an executable at {CUDARL}", "  got: none; build first")
    for name, fn in {**GROUPS, **GPU_GROUPS}.items():
        if (args.only and name != args.only) or (not args.only and name in GPU_GROUPS):
            continue
        print(f"== {name}", flush=True)
        fn(fresh_dir(os.path.abspath(os.path.join(args.work, name))))
    print("all checks passed")


if __name__ == "__main__":
    main()
