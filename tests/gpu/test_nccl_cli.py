#!/usr/bin/env python3
"""Data parallel on GPUs over NCCL (docs/multigpu.md), through the CLI. Groups:

  np1   `cudarl train --num-gpus 1` (a job of one rank on cuda:0: the gradients go through
        ncclAllGather and the rank-order summing kernel, inside the update's CUDA graph) equals a
        plain run on the GPU bit for bit: every checkpoint tensor, every metrics value but
        timing; its log says the gradients were averaged over NCCL, the plain run's does not.
  bad   refusals on the GPU: --num-gpus over the machine's GPU count, a config the GPU path
        does not split yet (--norm-obs) under --num-gpus 1.
  np2   (2 GPUs and mpirun; else exit 77, ctest's skip) `mpirun -np 2 cudarl train --device
        cuda`: each rank on its own GPU (its local rank), the first iteration's episodes equal
        one process's with the same envs and seed (the same rollout), the ranks' weights stay
        identical (the trainer's per-iteration hash check would stop the job), and two runs
        repeat bit for bit.
  ng2   (2 GPUs; else exit 77) `cudarl train --num-gpus 2` (one process, a thread per GPU): the
        first iteration's episodes equal one GPU's, two runs repeat bit for bit, and, with
        mpirun, the run equals `mpirun -np 2`'s bit for bit (the same job, threads or processes).
"""
import argparse
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
import test_mpi as tm  # noqa: E402  (its safetensors, metrics and run-folder comparisons)

SKIP = 77
GPU = ["--device", "cuda", "--env-id", "CartPole-v1", "--quiet", "--runs-dir", "runs"]


def gpu_count():
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


def group_np1(work):
    extra = ["--total-timesteps", "163840", "--seed", "3"]  # 10 iterations of 1024 x 16
    plain = tm.run_ok(["train", *GPU, "--run-name", "plain", *extra], work)
    ng1 = tm.run_ok(["train", *GPU, "--run-name", "ng1", "--num-gpus", "1", *extra], work)
    said = "gradients averaged over NCCL on cuda:0"
    if said not in ng1.stderr + ng1.stdout:
        tm.fail("--num-gpus 1 runs the NCCL exchange and says so",
                f"no '{said}' in its output:\n{ng1.stderr[-3000:]}")
    if "NCCL" in plain.stderr + plain.stdout:
        tm.fail("a plain GPU run does not touch NCCL", plain.stderr[-3000:])
    tm.same_run(work, "plain", "ng1", "--num-gpus 1 against a plain GPU run")
    print("np1: --num-gpus 1 (the NCCL exchange in the update graph) equals the plain GPU run "
          "bit for bit (10 iterations)")


def group_bad(work):
    n = gpu_count()
    small = ["--total-timesteps", "16384"]
    p = tm.run(["train", *GPU, "--num-gpus", str(n + 1), *small], work, timeout=120)
    if p.returncode == 0 or f"this machine has {n} CUDA GPU" not in p.stderr:
        tm.fail(f"--num-gpus {n + 1} on {n} GPUs is refused naming the count",
                f"exit code {p.returncode}\nstderr: {p.stderr[-3000:]}")
    p = tm.run(["train", *GPU, "--num-gpus", "1", "--norm-obs", *small], work, timeout=120)
    if p.returncode == 0 or "--norm-obs" not in p.stderr or "for now" not in p.stderr:
        tm.fail("--norm-obs under --num-gpus 1 is refused naming it",
                f"exit code {p.returncode}\nstderr: {p.stderr[-3000:]}")
    print(f"bad: --num-gpus {n + 1} on {n} GPUs and --norm-obs on the GPU path are refused")


def group_np2(work):
    n = gpu_count()
    if n < 2:
        print(f"np2: skipped: {n} GPU(s) here, 2 needed (NCCL refuses two ranks on one GPU)")
        sys.exit(SKIP)
    if not tm.MPIRUN:
        print("np2: skipped: this build has no MPI or no mpirun (CUDARL_MPI)")
        sys.exit(SKIP)
    extra = ["--total-timesteps", "163840", "--seed", "1"]
    tm.run_ok(["train", *GPU, "--run-name", "one", *extra], work)
    two = tm.run_ok(["train", *GPU, "--run-name", "two", *extra], work, ranks=2)
    out = two.stderr + two.stdout
    for said in ("rank 0 of 2", "rank 1 of 2", "gradients averaged over NCCL on cuda:0",
                 "gradients averaged over NCCL on cuda:1"):  # a GPU each: its local rank
        if said not in out:
            tm.fail(f"2 GPU ranks say '{said}'", out[-3000:])
    tm.run_ok(["train", *GPU, "--run-name", "two_again", *extra], work, ranks=2)
    cols = ["charts/episodic_return", "charts/episodic_length", "charts/mean_return_100",
            "charts/episodes"]
    for c in cols:
        a, b = tm.column(work, "one", c)[0], tm.column(work, "two", c)[0]
        if a != b or a == "":
            tm.fail("the first iteration's episodes on 2 GPUs equal one GPU's (the same rollout)",
                    f"{c}: one GPU {a!r}, 2 GPUs {b!r}")
    tm.same_run(work, "two", "two_again", "two 2-GPU runs of one seed")
    print("np2: 2 GPUs over NCCL: the first rollout equals one GPU's, the ranks' weights stay "
          "identical, 2-GPU runs repeat bit for bit")


def group_ng2(work):
    n = gpu_count()
    if n < 2:
        print(f"ng2: skipped: {n} GPU(s) here, 2 needed")
        sys.exit(SKIP)
    extra = ["--total-timesteps", "163840", "--seed", "1"]
    tm.run_ok(["train", *GPU, "--run-name", "one", *extra], work)
    ng2 = tm.run_ok(["train", *GPU, "--run-name", "ng2", "--num-gpus", "2", *extra], work)
    out = ng2.stderr + ng2.stdout
    for said in ("rank 1 of 2", "gradients averaged over NCCL on cuda:0",
                 "gradients averaged over NCCL on cuda:1"):
        if said not in out:
            tm.fail(f"--num-gpus 2 says '{said}'", out[-3000:])
    tm.run_ok(["train", *GPU, "--run-name", "ng2_again", "--num-gpus", "2", *extra], work)
    for c in ["charts/episodic_return", "charts/episodic_length", "charts/episodes"]:
        a, b = tm.column(work, "one", c)[0], tm.column(work, "ng2", c)[0]
        if a != b or a == "":
            tm.fail("the first iteration's episodes on --num-gpus 2 equal one GPU's",
                    f"{c}: one GPU {a!r}, --num-gpus 2 {b!r}")
    tm.same_run(work, "ng2", "ng2_again", "two --num-gpus 2 runs of one seed")
    also = ""
    if tm.MPIRUN:
        tm.run_ok(["train", *GPU, "--run-name", "mpi2", *extra], work, ranks=2)
        tm.same_run(work, "ng2", "mpi2", "--num-gpus 2 against mpirun -np 2")
        also = "; it equals mpirun -np 2 bit for bit"
    print(f"ng2: --num-gpus 2: the first rollout equals one GPU's, runs repeat bit for bit{also}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cudarl", required=True)
    ap.add_argument("--mpirun", default="")
    ap.add_argument("--work", required=True)
    ap.add_argument("--only", choices=["np1", "bad", "np2", "ng2"], required=True)
    a = ap.parse_args()
    tm.CUDARL = a.cudarl
    tm.MPIRUN = a.mpirun or None
    work = os.path.join(a.work, a.only)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    {"np1": group_np1, "bad": group_bad, "np2": group_np2, "ng2": group_ng2}[a.only](work)


if __name__ == "__main__":
    main()
