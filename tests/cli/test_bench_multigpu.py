#!/usr/bin/env python3
"""bench/multigpu_scale.py (the multigpu_scale row of bench/README.md) on the CPU at a tiny shape:
with one GPU counted it runs the 1-GPU row alone (positive env steps/s in its table) and ends
saying that it needs 2+ GPUs; with two counted it launches the second run with --num-gpus 2 and
twice the envs, which a CPU run refuses, and the script fails naming that GPU count."""
import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "bench", "multigpu_scale.py")
TINY = ["--device", "cpu", "--envs-per-gpu", "2", "--total-per-gpu", "96", "--seconds", "120",
        "--cudarl-args", "--num-steps 16 --update-epochs 1 --threads 1 --env-threads 1"]


def fail(what, out):
    print(f"FAIL: {what}\n{out[-4000:]}", file=sys.stderr)
    sys.exit(1)


def run(a, work, gpus):
    p = subprocess.run([sys.executable, SCRIPT, "--cudarl", a.cudarl, "--runs-dir",
                        os.path.join(work, f"runs{gpus}"), "--out", os.path.join(work, f"out{gpus}"),
                        "--gpu-count", str(gpus), *TINY], capture_output=True, text=True,
                       timeout=600)
    return p, p.stdout + p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cudarl", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    p, out = run(a, a.work, 1)
    if p.returncode != 0:
        fail("multigpu_scale.py on one counted GPU exits 0", out)
    row = re.search(r"^\| 1 \| 2 \| ([0-9,]+) \| ([0-9,]+) \| 1\.000 \|", out, re.M)
    if not row or int(row.group(1).replace(",", "")) <= 0:
        fail("the 1-GPU row: 2 envs, positive env steps/s, efficiency 1.000", out)
    if "needs 2+ GPUs: only the 1-GPU row ran" not in out.splitlines()[-1]:
        fail("one GPU: the last line says the benchmark needs 2+ GPUs", out)
    if not os.path.exists(os.path.join(a.work, "out1", "multigpu_scale.json")):
        fail("--out gets multigpu_scale.json", out)
    p, out = run(a, a.work, 2)
    log = open(os.path.join(a.work, "out2", "gpus2.log")).read()
    if p.returncode == 0 or "the runs on [2] GPU(s) failed" not in out or \
            "--num-gpus" not in log:
        fail("two counted GPUs on the CPU: the --num-gpus 2 run is refused and the script "
             "fails naming it", out + log)
    print("multigpu_scale.py: the 1-GPU row alone with one GPU (and the 2+ GPU line); the "
          "2-GPU run launched with --num-gpus 2 and its failure reported")


if __name__ == "__main__":
    main()
