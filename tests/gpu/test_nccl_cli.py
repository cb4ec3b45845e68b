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
  conv_np1  the conv policies on the image envs' CUDA twins: `--num-gpus 1` (the NCCL exchange
        in a job of one rank) equals a plain GPU run bit for bit: Nature-CNN on
        CartPolePixels-v1's twin, minatar-cnn with --separate-critic on MinAtar/Breakout-v1's;
        and a --num-gpus 1 run stopped after 2 iterations and resumed under --num-gpus 1 equals
        the uninterrupted one.
  conv_np2  (2 GPUs and mpirun; else 77) Nature-CNN on CartPolePixels-v1's twin on `mpirun -np
        2`: after the first iteration every state.* tensor of the checkpoint (the twin's env
        states gathered from the two GPUs in the job's env order, observations, episode sums,
        the sampler's position) is one GPU's bit for bit, and the first iteration's episodes
        are one GPU's (the ranks seed the job's envs from their first and skip each other's
        sampler words); two 2-GPU runs repeat bit for bit.
  conv_ng2  (2 GPUs; else 77) the same on `--num-gpus 2`'s threads, with minatar-cnn
        (--separate-critic) on MinAtar/Breakout-v1's twin too; a 2-GPU run stopped after 2
        iterations and resumed on 2 GPUs equals the uninterrupted run bit for bit, the file
        resumes on one GPU too; with mpirun, --num-gpus 2 equals mpirun -np 2 bit for bit.
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
    p = tm.run(["train", *MINATAR, "--num-gpus", "1", "--env-device", "cpu", *small], work,
               timeout=120)
    if p.returncode == 0 or "CPU threads" not in p.stderr or "for now" not in p.stderr:
        tm.fail("a conv policy with its envs on CPU threads under --num-gpus 1 is refused",
                f"exit code {p.returncode}\nstderr: {p.stderr[-3000:]}")
    p = tm.run(["train", *PIXELS, "--num-gpus", "1", "--precision", "fp16", *small], work,
               timeout=120)
    if p.returncode == 0 or "--precision fp16" not in p.stderr or "loss scale" not in p.stderr:
        tm.fail("--precision fp16 under --num-gpus 1 is refused naming its loss scale",
                f"exit code {p.returncode}\nstderr: {p.stderr[-3000:]}")
    print(f"bad: --num-gpus {n + 1} on {n} GPUs, --norm-obs, a conv policy's envs on CPU "
          "threads and fp16 on the GPU path are refused")


def need_two_gpus(group, mpirun):
    """Exits SKIP where the machine has fewer than 2 GPUs (or, with mpirun, no mpirun)."""
    n = gpu_count()
    if n < 2:
        why = " (NCCL refuses two ranks on one GPU)" if mpirun else ""
        print(f"{group}: skipped: {n} GPU(s) here, 2 needed{why}")
        sys.exit(SKIP)
    if mpirun and not tm.MPIRUN:
        print(f"{group}: skipped: this build has no MPI or no mpirun (CUDARL_MPI)")
        sys.exit(SKIP)


def group_np2(work):
    need_two_gpus("np2", mpirun=True)
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
    need_two_gpus("ng2", mpirun=False)
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


# the conv policies on the image envs' CUDA twins (the envs step on the GPU: --env-device auto)
CONV_GPU = ["--device", "cuda", "--quiet", "--runs-dir", "runs", "--num-steps", "32",
            "--num-minibatches", "4", "--update-epochs", "2"]
PIXELS = [*CONV_GPU, "--env-id", "CartPolePixels-v1", "--policy", "nature-cnn",
          "--num-envs", "16"]
MINATAR = [*CONV_GPU, "--env-id", "MinAtar/Breakout-v1", "--policy", "minatar-cnn",
           "--num-envs", "32", "--separate-critic", "true"]


def conv(work, name, flags, extra, ranks=None):
    p = tm.run_ok(["train", *flags, "--run-name", name, *extra], work, ranks=ranks)
    if "stepped by their CUDA twin" not in p.stderr + p.stdout:
        tm.fail(f"{name}: the envs step on their CUDA twin", (p.stderr + p.stdout)[-3000:])
    return p


def said_ranks(p, what, ranks):
    out = p.stderr + p.stdout
    for said in [f"rank {r} of {ranks}" for r in range(ranks)] + \
            [f"gradients averaged over NCCL on cuda:{r}" for r in range(ranks)]:
        if said not in out:
            tm.fail(f"{what} says '{said}'", out[-3000:])


def group_conv_np1(work):
    for name, flags, steps in (("pixels", PIXELS, 2048), ("minatar", MINATAR, 4096)):
        extra = ["--total-timesteps", str(steps), "--seed", "3"]  # 4 iterations
        conv(work, f"{name}_plain", flags, extra)
        ng1 = conv(work, f"{name}_ng1", flags, [*extra, "--num-gpus", "1"])
        said_ranks(ng1, f"{name}: --num-gpus 1", 1)
        tm.same_run(work, f"{name}_plain", f"{name}_ng1",
                    f"{name}: the conv policy on --num-gpus 1 against a plain GPU run")
    # a --num-gpus 1 run stopped after 2 iterations and resumed equals the uninterrupted one
    extra = ["--seed", "5", "--anneal-lr", "false", "--num-gpus", "1"]
    conv(work, "full", MINATAR, [*extra, "--total-timesteps", "4096"])
    conv(work, "part", MINATAR, [*extra, "--total-timesteps", "2048"])
    tm.run_ok(["train", "--resume", "runs/part/model.safetensors", "--total-timesteps", "4096",
               "--num-gpus", "1", "--quiet"], work)
    tm.same_run(work, "full", "part", "a --num-gpus 1 conv run resumed against uninterrupted")
    print("conv_np1: --num-gpus 1 equals the plain GPU run bit for bit (Nature-CNN on "
          "CartPolePixels-v1's twin, minatar-cnn --separate-critic on MinAtar/Breakout-v1's, 4 "
          "iterations each); a resumed --num-gpus 1 run equals the uninterrupted one")


def first_rollout(work, one, two, what):
    episodes = tm.first_rollout_same(work, one, two, what, min_state=9)
    if episodes < 1:
        tm.fail(f"{what}: the first rollout ends episodes (else the comparison is vacuous)",
                "none")
    _, t = tm.safetensors(os.path.join(work, "runs", two, "model.safetensors"))
    if "state.twin" not in t:
        tm.fail(f"{what}: the checkpoint holds the twin's env states", sorted(t))
    return episodes


def group_conv_np2(work):
    need_two_gpus("conv_np2", mpirun=True)
    one = ["--total-timesteps", "512", "--seed", "1"]  # 1 iteration of 16 x 32
    conv(work, "one", PIXELS, one)
    two = conv(work, "two", PIXELS, one, ranks=2)
    said_ranks(two, "2 GPU ranks (conv)", 2)
    episodes = first_rollout(work, "one", "two", "Nature-CNN on CartPolePixels-v1, mpirun -np 2")
    more = ["--total-timesteps", "2048", "--seed", "1"]
    conv(work, "rep", PIXELS, more, ranks=2)
    conv(work, "rep_again", PIXELS, more, ranks=2)
    tm.same_run(work, "rep", "rep_again", "two 2-GPU conv runs of one seed")
    print(f"conv_np2: the first conv rollout on 2 GPU ranks ({episodes} episodes) leaves one "
          "GPU's state bit for bit (the twin's envs gathered); 2-GPU runs repeat bit for bit")


def group_conv_ng2(work):
    need_two_gpus("conv_ng2", mpirun=False)
    one = ["--total-timesteps", "512", "--seed", "1"]
    conv(work, "one", PIXELS, one)
    ng2 = conv(work, "ng2", PIXELS, [*one, "--num-gpus", "2"])
    said_ranks(ng2, "--num-gpus 2 (conv)", 2)
    episodes = first_rollout(work, "one", "ng2", "Nature-CNN on CartPolePixels-v1, --num-gpus 2")
    m_one = ["--total-timesteps", "1024", "--seed", "2"]
    conv(work, "m_one", MINATAR, m_one)
    conv(work, "m_ng2", MINATAR, [*m_one, "--num-gpus", "2"])
    first_rollout(work, "m_one", "m_ng2", "minatar-cnn on MinAtar/Breakout-v1, --num-gpus 2")
    # stopped after 2 iterations and resumed on 2 GPUs: the uninterrupted run, bit for bit
    extra = ["--seed", "5", "--anneal-lr", "false", "--num-gpus", "2"]
    conv(work, "full", MINATAR, [*extra, "--total-timesteps", "4096"])
    conv(work, "part", MINATAR, [*extra, "--total-timesteps", "2048"])
    shutil.copytree(os.path.join(work, "runs", "part"), os.path.join(work, "runs", "part_copy"))
    tm.run_ok(["train", "--resume", "runs/part/model.safetensors", "--total-timesteps", "4096",
               "--num-gpus", "2", "--quiet"], work)
    tm.same_run(work, "full", "part", "a 2-GPU conv run resumed on 2 GPUs against uninterrupted")
    tm.run_ok(["train", "--resume", "runs/part_copy/model.safetensors", "--total-timesteps",
               "4096", "--quiet"], work)
    steps = tm.column(work, "part_copy", "global_step")
    if steps[-1] != "4096" or len(steps) != 4:
        tm.fail("the 2-GPU conv file resumed on one GPU trains on to 4096 steps",
                f"global_step column {steps}")
    also = ""
    if tm.MPIRUN:
        more = ["--total-timesteps", "2048", "--seed", "1"]
        conv(work, "t2", PIXELS, [*more, "--num-gpus", "2"])
        conv(work, "m2", PIXELS, more, ranks=2)
        tm.same_run(work, "t2", "m2", "conv: --num-gpus 2 against mpirun -np 2")
        also = "; it equals mpirun -np 2 bit for bit"
    print(f"conv_ng2: --num-gpus 2: the first conv rollout ({episodes} episodes) leaves one GPU's "
          "state bit for bit (Nature-CNN on CartPolePixels-v1, minatar-cnn on "
          f"MinAtar/Breakout-v1); resumed on 2 GPUs equals uninterrupted, and on 1 GPU trains on{also}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cudarl", required=True)
    ap.add_argument("--mpirun", default="")
    ap.add_argument("--work", required=True)
    ap.add_argument("--only", choices=["np1", "bad", "np2", "ng2", "conv_np1", "conv_np2",
                                       "conv_ng2"], required=True)
    a = ap.parse_args()
    tm.CUDARL = a.cudarl
    tm.MPIRUN = a.mpirun or None
    work = os.path.join(a.work, a.only)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    {"np1": group_np1, "bad": group_bad, "np2": group_np2, "ng2": group_ng2,
     "conv_np1": group_conv_np1, "conv_np2": group_conv_np2,
     "conv_ng2": group_conv_ng2}[a.only](work)


if __name__ == "__main__":
    main()
