#!/usr/bin/env python3
"""Issue 28's open question: a --num-gpus 1 minatar-cnn run (bf16, --separate-critic) stopped
after 2 iterations and resumed did not end with the uninterrupted run's weights (H200,
2026-12-02). This asks the same of plain one-process runs, in bf16 and fp32, for minatar-cnn
and the Nature-CNN, so a failure points at the twin state / precision (plain fails too) or at
the rank path (plain passes).
    dev/mgpu/resume_probe.py build-gpu/cudarl WORKDIR
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "cli"))
import test_mpi as tm  # noqa: E402

CONV = ["--device", "cuda", "--quiet", "--runs-dir", "runs", "--num-steps", "32",
        "--num-minibatches", "4", "--update-epochs", "2", "--seed", "5", "--anneal-lr", "false"]
NETS = {
    "minatar_sep": ["--env-id", "MinAtar/Breakout-v1", "--policy", "minatar-cnn",
                    "--num-envs", "32", "--separate-critic", "true"],
    "minatar_shared": ["--env-id", "MinAtar/Breakout-v1", "--policy", "minatar-cnn",
                       "--num-envs", "32"],
    "pixels_sep": ["--env-id", "CartPolePixels-v1", "--policy", "nature-cnn",
                   "--num-envs", "32", "--separate-critic", "true"],
}


def probe(work, net, prec):
    flags = [*CONV, *NETS[net], "--precision", prec]
    full, part = f"{net}_{prec}_full", f"{net}_{prec}_part"
    tm.run_ok(["train", *flags, "--run-name", full, "--total-timesteps", "4096"], work)
    tm.run_ok(["train", *flags, "--run-name", part, "--total-timesteps", "2048"], work)
    tm.run_ok(["train", "--resume", f"runs/{part}/model.safetensors", "--total-timesteps",
               "4096", "--quiet"], work)
    _, ta = tm.safetensors(os.path.join(work, "runs", full, "model.safetensors"))
    _, tb = tm.safetensors(os.path.join(work, "runs", part, "model.safetensors"))
    differ = sorted(k for k in ta if ta.get(k) != tb.get(k))
    print(f"{net} {prec}: resumed == uninterrupted: {'yes' if not differ else 'NO'}"
          + (f"; {len(differ)} tensors differ: {differ[:12]}" if differ else ""), flush=True)
    if differ:  # where the runs part: the first metrics row and its columns that differ
        head, ra, keep = tm.metrics(os.path.join(work, "runs", full, "metrics.csv"))
        head = [head[i] for i in keep]
        _, rb, _ = tm.metrics(os.path.join(work, "runs", part, "metrics.csv"))
        for i, (a, b) in enumerate(zip(ra, rb)):
            cols = [h for h, x, y in zip(head, a, b) if x != y]
            if cols:
                print(f"  first differing metrics row {i + 1} of {len(ra)}: {cols}", flush=True)
                break
        else:
            print(f"  metrics rows equal ({len(ra)} and {len(rb)})", flush=True)


def main():
    tm.CUDARL = os.path.abspath(sys.argv[1])
    work = sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    # two fresh bf16 runs, to tell a run-to-run difference from a resume's
    for k in ("a", "b"):
        tm.run_ok(["train", *CONV, *NETS["minatar_shared"], "--precision", "bf16", "--run-name",
                   f"fresh_{k}", "--total-timesteps", "4096"], work)
    _, ta = tm.safetensors(os.path.join(work, "runs", "fresh_a", "model.safetensors"))
    _, tb = tm.safetensors(os.path.join(work, "runs", "fresh_b", "model.safetensors"))
    print(f"two fresh minatar_shared bf16 runs equal: {ta == tb}", flush=True)
    for net in NETS:
        for prec in ("bf16", "fp32"):
            try:
                probe(work, net, prec)
            except SystemExit:
                print(f"{net} {prec}: a run failed", flush=True)


if __name__ == "__main__":
    main()
