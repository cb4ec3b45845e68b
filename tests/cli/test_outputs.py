#!/usr/bin/env python3
"""The files the cudarl command line writes never replace what they should not.

For each writer — `train` (model.safetensors, metrics.csv), `export --onnx`, `bench infer --json`,
`render` — a path that is a FIFO, a symbolic link to a FIFO, a symbolic link to a regular file or
a directory is refused at once (before any training or benchmark, without blocking on the FIFO)
with one line naming the path and what it is, and is left as it was. A write that fails part way
(a file-size limit standing in for a full disk) leaves the old file as it was and no temp file.
`render` stopped by SIGTERM leaves only whole PNG files.

    python3 test_outputs.py --cudarl build/cudarl --work build/outputs-work [--only GROUP]

GROUP is one of: export, train, bench, render (default: all). Each group works in its own folder
<work>/<group>, emptied first. Needs Python 3 with numpy and safetensors (test_cli.py's helpers).
"""
import argparse
import os
import resource
import signal
import stat
import subprocess
import sys
import time

import test_cli as cli
from test_cli import (Result, check, env_with, expect_error, fail, fresh_dir, run_ok, sha256,
                      verify_error)

U, F = 2, 1  # exit codes: bad usage, runtime failure
TINY = ["--total-timesteps", "2048", "--num-envs", "8", "--num-steps", "64", "--threads", "1",
        "--device", "cpu", "--quiet", "--runs-dir", "runs"]
KINDS = {"fifo": "FIFO", "link_to_fifo": "symbolic link", "link_to_file": "symbolic link",
         "a_dir": "is a directory"}


def make_targets(folder):
    """A FIFO, links to it and to a regular file, and a directory in `folder`; returns
    {name: path} and the regular file's path."""
    os.makedirs(folder, exist_ok=True)
    paths = {n: os.path.join(folder, n) for n in KINDS}
    regular = os.path.join(folder, "regular.txt")
    with open(regular, "w") as f:
        f.write("keep me\n")
    os.mkfifo(paths["fifo"])
    os.symlink("fifo", paths["link_to_fifo"])
    os.symlink("regular.txt", paths["link_to_file"])
    os.mkdir(paths["a_dir"])
    return paths, regular


def snapshot(folder, ignore=()):
    """Each entry of `folder` but those in `ignore`: its type and, for regular files, its hash."""
    out = {}
    for n in sorted(set(os.listdir(folder)) - set(ignore)):
        p = os.path.join(folder, n)
        st = os.lstat(p)
        out[n] = (stat.S_IFMT(st.st_mode), sha256(p) if stat.S_ISREG(st.st_mode) else None)
    return out


def unchanged(folder, before, what, ignore=()):
    check(f"{what}: {folder} as it was, no temp file")
    after = snapshot(folder, ignore)
    if after != before:
        fail(f"{what} left {folder} as it was", sorted(before), f"  got: {sorted(after)}")


def run_full_disk(args, cwd, limit=16384):
    """Runs cudarl with files that cannot grow past `limit` bytes: a write past it fails with
    EFBIG as on a full disk (SIGXFSZ ignored, so the write returns the error)."""
    def full_disk():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    argv = [cli.CUDARL] + [str(a) for a in args]
    p = subprocess.run(argv, cwd=cwd, env=env_with("warn"), capture_output=True, text=True,
                       timeout=120, preexec_fn=full_disk)
    return Result(argv, p.returncode, p.stdout, p.stderr)


def train_tiny(work, name):
    run_ok(f"train run '{name}'", ["train", *TINY, "--run-name", name], work)
    return os.path.join(work, "runs", name, "model.safetensors")


def test_export(work):
    ckpt = train_tiny(work, "ppo")
    targets, regular = make_targets(os.path.join(work, "out"))
    before = snapshot(os.path.join(work, "out"))
    for name, kind in KINDS.items():
        rel = os.path.join("out", name)
        expect_error(f"--onnx {name} is refused", ["export", ckpt, "--onnx", rel], work, F,
                     [f"cannot write ONNX model '{rel}'", kind])
    unchanged(os.path.join(work, "out"), before, "the refused exports")

    check("--onnx over a regular file replaces it")
    run_ok("export over regular.txt", ["export", ckpt, "--onnx", "out/regular.txt"], work)
    with open(regular, "rb") as f:
        if f.read(2) == b"ke":
            fail("the export replaced regular.txt", "an ONNX model", "  got: the old text")
    if os.readlink(targets["link_to_file"]) != "regular.txt":
        fail("the link to it is still a link", "a link", "  got: something else")

    check("an export that fails part way (a full disk) keeps the old file, leaves no temp file")
    old = os.path.join(work, "out", "old.onnx")
    with open(old, "w") as f:
        f.write("the old model\n")
    before = snapshot(os.path.join(work, "out"))
    r = run_full_disk(["export", ckpt, "--onnx", old], work)
    verify_error("export on a full disk", r, F, ["cannot write ONNX model", old, "writing",
                                                  "File too large", "disk is not full"])
    unchanged(os.path.join(work, "out"), before, "the failed export")


def test_train(work):
    check("a run folder whose metrics.csv, model.safetensors or config.toml is not a regular "
          "file is refused before training, the file left as it was")
    cases = [("metrics.csv", "fifo", "FIFO"), ("metrics.csv", "link to a file", "symbolic link"),
             ("config.toml", "link to a file", "symbolic link"),
             ("model.safetensors", "fifo", "FIFO"),
             ("model.safetensors", "link to a FIFO", "symbolic link"),
             ("model.safetensors", "directory", "is a directory")]
    for i, (file, kind, needle) in enumerate(cases):
        name = f"bad{i}"
        run_dir = os.path.join(work, "runs", name)
        os.makedirs(run_dir)
        with open(os.path.join(work, "elsewhere.txt"), "w") as f:
            f.write("keep me\n")
        path = os.path.join(run_dir, file)
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "directory":
            os.mkdir(path)
        elif kind == "link to a FIFO":
            os.mkfifo(os.path.join(work, f"fifo{i}"))
            os.symlink(f"../../fifo{i}", path)
        else:
            os.symlink("../../elsewhere.txt", path)
        before = snapshot(run_dir)
        expect_error(f"{file} as a {kind}", ["train", *TINY, "--run-name", name], work, F,
                     [f"runs/{name}/{file}", needle])
        unchanged(run_dir, before, f"the refused run ({file} as a {kind})", ignore=["run.lock"])
    with open(os.path.join(work, "elsewhere.txt")) as f:
        if f.read() != "keep me\n":
            fail("no run wrote through a link", "elsewhere.txt as it was", "  got: changed")

    check("a resume whose metrics.csv became a FIFO is refused before training")
    ckpt = train_tiny(work, "resumed")
    metrics = os.path.join(work, "runs", "resumed", "metrics.csv")
    os.rename(metrics, metrics + ".saved")
    os.mkfifo(metrics)
    expect_error("resume with metrics.csv a FIFO", ["train", "--resume", ckpt, "--quiet",
                 "--total-timesteps", "4096"], work, F, [metrics, "FIFO"])
    os.remove(metrics)
    os.rename(metrics + ".saved", metrics)

    check("a resume whose checkpoint cannot be written (a full disk) fails, keeping the last "
          "checkpoint and leaving no temp file")
    before = sha256(ckpt)
    r = run_full_disk(["train", "--resume", ckpt, "--quiet", "--total-timesteps", "4096",
                       "--threads", "1"], work)
    verify_error("resume on a full disk", r, F, ["cannot write checkpoint", "File too large",
                                                 "disk is not full"])
    if sha256(ckpt) != before:
        fail("the last checkpoint kept", before, f"  got: {sha256(ckpt)}")
    cli.no_temp_files(os.path.join(work, "runs", "resumed"))
    run_ok("the kept checkpoint still resumes", ["train", "--resume", ckpt, "--quiet",
                                                 "--total-timesteps", "4096"], work)


def test_bench(work):
    targets, _ = make_targets(os.path.join(work, "out"))
    before = snapshot(os.path.join(work, "out"))
    bench = ["bench", "infer", "--device", "cpu", "--iters", "1", "--warmup", "0", "--batch", "1"]
    for name, kind in KINDS.items():
        rel = os.path.join("out", name)
        t0 = time.monotonic()
        r = expect_error(f"--json {name} is refused before the benchmark", [*bench, "--json", rel],
                         work, U, ["--json", f"cannot write JSON file '{rel}'", kind])
        if "reference" in r.err or time.monotonic() - t0 > 5:
            fail("refused before the benchmark", "one line, at once", r.describe())
    expect_error("--json in a missing folder is refused before the benchmark",
                 [*bench, "--json", "nodir/b.json"], work, U,
                 ["cannot write JSON file 'nodir/b.json'", "does not exist", "mkdir -p"])
    unchanged(os.path.join(work, "out"), before, "the refused benchmarks")
    if os.path.exists(os.path.join(work, "nodir")):
        fail("nothing created for a missing folder", "no nodir", "  got: nodir")


def png_files(folder):
    return sorted(f for f in os.listdir(folder) if f.endswith(".png"))


def whole_png(path):
    with open(path, "rb") as f:
        data = f.read()
    return data.startswith(b"\x89PNG\r\n\x1a\n") and data[-12:-4] == b"\x00\x00\x00\x00IEND"


def test_render(work):
    folder = os.path.join(work, "frames")
    os.makedirs(folder)
    os.mkfifo(os.path.join(work, "fifo"))
    for name, target, kind in (("obs_000002.png", "../fifo", "symbolic link"),
                               ("obs_000003.png", None, "FIFO")):
        path = os.path.join(folder, name)
        if target:
            os.symlink(target, path)
        else:
            os.mkfifo(path)
        before = snapshot(folder)
        expect_error(f"render refuses {name} as a {kind} before writing any file",
                     ["render", "--out", "frames", "--steps", "5"], work, U,
                     [f"frames/{name}", kind])
        unchanged(folder, before, "the refused render")
        os.remove(path)

    check("a render that fails part way (a full disk) leaves no temp file")
    os.makedirs(os.path.join(work, "full"))
    r = run_full_disk(["render", "--out", "full", "--steps", "3"], work, limit=256)
    verify_error("render on a full disk", r, F, ["full/obs_000000.png", "File too large",
                                                 "disk is not full"])
    if os.listdir(os.path.join(work, "full")):
        fail("render on a full disk leaves nothing", "an empty folder",
             f"  got: {os.listdir(os.path.join(work, 'full'))}")

    check("SIGTERM stops a long render between files: exit code 143, only whole PNG files")
    argv = [cli.CUDARL, "render", "--out", "long", "--steps", "100000"]
    p = subprocess.Popen(argv, cwd=work, env=env_with("warn"), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    long_dir = os.path.join(work, "long")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (os.path.isdir(long_dir) and
                                               len(png_files(long_dir)) >= 20):
        time.sleep(0.01)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    r = Result(argv, p.returncode, out, err)
    if r.rc != 143 or "stopped by SIGTERM" not in r.err:
        fail("render stopped by SIGTERM", "exit code 143, 'stopped by SIGTERM' on stderr",
             r.describe())
    files = os.listdir(long_dir)
    bad = [f for f in files if not f.endswith(".png") or not whole_png(os.path.join(long_dir, f))]
    if bad or not files:
        fail("only whole PNG files after SIGTERM", "PNG files, each whole", f"  got also: {bad}")
    print(f"  stopped after {len(files)} files", flush=True)


GROUPS = {"export": test_export, "train": test_train, "bench": test_bench, "render": test_render}


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
