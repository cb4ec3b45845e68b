#!/usr/bin/env python3
"""Data-parallel PPO and DQN over MPI on the CPU (docs/multigpu.md): `mpirun -np R cudarl train`.

Groups (--only GROUP), each in its own folder <work>/<group>, emptied first:

  np1     `mpirun -np 1` equals a plain run bit for bit: every checkpoint tensor, and every
          metrics.csv value but the two timing columns (SPS, elapsed).
  np2     2 ranks sharing 8 envs against one process with the same 8 envs and seed: the first
          iteration's episode columns (return, length, mean of 100, count) are equal exactly (the
          rollouts before the first update are the same: CartPole's returns are whole numbers,
          so the job's sums do not depend on their order); two 2-rank runs are identical (the
          same seed gives the same run); the ranks' weights are compared every iteration by the
          trainer, and a job whose ranks differ (rank 1 with another --learning-rate: the
          weights part after the first update) is stopped with that error. Acrobot-v1 and
          Pendulum-v1 (Gaussian, --norm-obs and --norm-reward on): after one iteration every
          state.* and obs_rms.* tensor of the checkpoint is one process's bit for bit, and the
          rollout's explained variance equals one process's to 1e-6 (the sums' order differs). --target-kl 0.0022 on 2
          ranks runs to its end (every rank stops the epochs after the same one).
  learn   the 2-rank run learns CartPole as one process does: its mean return of the last 100
          episodes after 51200 steps is >= 250 (one process with the same seed: 341; solved is
          475), and within 150 of one process's (2 ranks: 317).
  resume  a 2-rank run of 10 iterations resumed on 2 ranks to 20 equals an uninterrupted 2-rank
          run of 20 bit for bit (checkpoint tensors, metrics.csv less timing), on CartPole-v1
          (its env arrays) and Pendulum-v1 (the batch block, gathered per env, and the
          normalizations' statistics); the CartPole
          file resumes on 1 process too (the state is the job's, in one process's format).
  bad     refusals under 2 ranks, each naming the problem and the fix: --num-envs not divisible,
          a minibatch that does not split, the normalizations with env pool groups (--env-groups
          2), --num-gpus under mpirun; the job ends (non-zero) without hanging.
  conv_np1     the conv policy on the env pool (MinAtar/Breakout-v1, minatar-cnn, 8 envs x 16
               steps): `mpirun -np 1` equals a plain run bit for bit.
  conv_np2     the same on 2 ranks against one process: after one iteration every state.* tensor
               of the checkpoint (the pool's env states and step counts, the uint8 observations,
               the episode sums, the streams) is one process's bit for bit, the returns of the
               episodes so far the same (in another order: rank by rank), and the first
               iteration's episode columns and explained variance equal; so with --env-groups 2
               on each rank (the sampler's words drawn group by group), and for the MLP policy on
               the pool (CartPole-v1 --env-device cpu, --norm-obs and --norm-reward: obs_rms.*
               too); two 2-rank runs repeat bit for bit; a rank with another --learning-rate is
               stopped by the weight check (the conv gradients are averaged as the MLP's).
  conv_resume  a 2-rank conv run (--separate-critic: its second network in the same flat
               buffers) of 2 iterations resumed on 2 ranks to 4 equals 4 uninterrupted, bit for
               bit; the 2-rank file resumes on 1 process too (the one-process format).
  dqn_np1    DQN: `mpirun -np 1` equals a plain run bit for bit (checkpoint, replay included, and
             metrics.csv less timing).
  dqn_np2    DQN on 2 ranks sharing 8 envs: every metrics row before the first train step
             (learning_starts) equals one process's exactly (the transitions are the same: the
             episodes' columns and epsilon), and the replay shards hold one process's
             transitions (rank r's rows are one process's envs r*4..r*4+3); two 2-rank runs are
             identical; a rank with another --learning-rate is stopped by the weight check.
  dqn_learn  DQN on 2 ranks learns CartPole: mean return of the last 100 episodes after 60000
             steps >= 150 (random play: about 20; one process with the same seed: about 290).
  dqn_resume a 2-rank DQN run of 800 steps resumed on 2 ranks to 1600 equals an uninterrupted
             2-rank run bit for bit (the replay shards wrap); the 2-rank file is refused on 1
             process and on 4 ranks, naming the rank count.
  dqn_bad    DQN refusals on 2 ranks: --num-envs, --batch-size and --buffer-size that do not
             split, --prioritized (a vector env's: ctest mpi_dqn_vec_refused, mpi_dqn_vec.c).
  dqn_conv_np1     DQN with a conv Q-network on the env pool (MinAtar/Breakout-v1, minatar-cnn,
                   8 envs, minibatches of 16): `mpirun -np 1` equals a plain run bit for bit.
  dqn_conv_np2     the same on 2 ranks against one process, run to learning_starts (the first
                   transitions): every state.* tensor but the replay (the pool's env states and
                   step counts, the uint8 observations, the episode sums, the streams) is one
                   process's bit for bit, every metrics row too, and rank r's replay shard holds
                   one process's envs r*4..r*4+3 (their frame rings, actions, rewards, flags and
                   heads, byte for byte); so for Nature-CNN on CartPolePixels-v1 (4 envs: its
                   frame-once replay, 84x84 frames) and for the MLP on CartPole-v1's pool
                   (--env-device cpu); two 2-rank conv runs that train repeat bit for bit; a rank
                   with another --learning-rate is stopped by the weight check.
  dqn_conv_resume  a 2-rank minatar-cnn run on the pool of 256 steps resumed on 2 ranks to 512
                   equals 512 uninterrupted bit for bit (the shards wrap); the file is refused on
                   1 process, naming the rank count.
  kill    rank 1 killed (SIGKILL) mid-run: the job ends non-zero within 30 s, and the checkpoint
          rank 0 wrote before (every iteration) is intact: one process resumes it.

    python3 test_mpi.py --cudarl build/cudarl --mpirun mpirun --work build/mpi-work [--only G]

Needs Python 3 only (the safetensors files are read here with json and struct).
"""
import argparse
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time

CUDARL = MPIRUN = None
MPI_FLAGS = []
TIMEOUT = 420  # any single command (ASan Debug: dqn_learn's one process ~150 s, more on a busy
#                machine); a hang fails the test instead of stalling ctest
BASE = ["--device", "cpu", "--threads", "1", "--quiet", "--runs-dir", "runs", "--num-envs", "8",
        "--num-steps", "128"]
TIMING = {"charts/SPS", "time/elapsed_s"}


def fail(what, detail=""):
    print(f"FAIL: {what}\n{detail}", file=sys.stderr)
    sys.exit(1)


def env():
    e = dict(os.environ)
    # mpirun as root (CI containers), more ranks than cores (CI has 2)
    e.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
             OMPI_MCA_rmaps_base_oversubscribe="1")
    # OpenMPI keeps allocations until exit: LeakSanitizer (the ASan build's ctest) would fail it
    e["ASAN_OPTIONS"] = (e.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":")
    return e


def run(argv, cwd, ranks=None, timeout=TIMEOUT):
    if ranks is not None:
        argv = [MPIRUN, *MPI_FLAGS, "-np", str(ranks), CUDARL, *argv]
    else:
        argv = [CUDARL, *argv]
    try:
        p = subprocess.run(argv, cwd=cwd, env=env(), capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        fail(f"{' '.join(argv)} ends within {timeout} s", "it hung")
    return p


def run_ok(argv, cwd, ranks=None):
    p = run(argv, cwd, ranks)
    if p.returncode != 0:
        fail(f"{' '.join(argv)} (ranks {ranks}) exits 0",
             f"exit code {p.returncode}\nstdout: {p.stdout}\nstderr: {p.stderr}")
    return p


def train(work, name, extra, ranks=None):
    return run_ok(["train", *BASE, "--run-name", name, *extra], work, ranks)


def safetensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    head = json.loads(b[8:8 + n])
    meta = head.pop("__metadata__", {})
    data = b[8 + n:]
    return meta, {k: (v["dtype"], tuple(v["shape"]), data[v["data_offsets"][0]:v["data_offsets"][1]])
                  for k, v in head.items()}


def metrics(path):
    lines = open(path).read().splitlines()
    head = lines[0].split(",")
    keep = [i for i, h in enumerate(head) if h not in TIMING]
    return head, [[row.split(",")[i] for i in keep] for row in lines[1:]], keep


def same_run(work, a, b, what):
    """Run folders a and b hold the same training: every tensor, every metrics value but timing."""
    ma, ta = safetensors(os.path.join(work, "runs", a, "model.safetensors"))
    mb, tb = safetensors(os.path.join(work, "runs", b, "model.safetensors"))
    if set(ta) != set(tb):
        fail(f"{what}: the same tensors", f"only in one: {sorted(set(ta) ^ set(tb))}")
    differ = [k for k in ta if ta[k] != tb[k]]
    if differ:
        fail(f"{what}: every checkpoint tensor bit for bit", f"differ: {differ}")
    meta_differ = {k for k in set(ma) | set(mb) if ma.get(k) != mb.get(k)} - {"run_name"}
    if meta_differ:
        fail(f"{what}: the same metadata", f"differ: {sorted(meta_differ)}")
    _, ra, _ = metrics(os.path.join(work, "runs", a, "metrics.csv"))
    _, rb, _ = metrics(os.path.join(work, "runs", b, "metrics.csv"))
    if ra != rb:
        bad = next(i for i in range(min(len(ra), len(rb))) if ra[i] != rb[i]) \
            if len(ra) == len(rb) else f"rows {len(ra)} vs {len(rb)}"
        fail(f"{what}: metrics.csv the same (less SPS and elapsed)", f"first difference: {bad}")


def column(work, name, col):
    head = open(os.path.join(work, "runs", name, "metrics.csv")).readline().strip().split(",")
    rows = [r.split(",") for r in open(os.path.join(work, "runs", name, "metrics.csv"))
            .read().splitlines()[1:]]
    return [r[head.index(col)] for r in rows]


def group_np1(work):
    extra = ["--total-timesteps", "20480", "--seed", "3"]
    train(work, "plain", extra)
    train(work, "np1", extra, ranks=1)
    same_run(work, "plain", "np1", "mpirun -np 1 against a plain run")
    print("np1: mpirun -np 1 equals the plain run bit for bit (20 iterations)")


def group_np2(work):
    extra = ["--total-timesteps", "20480", "--seed", "1"]
    train(work, "one", extra)
    train(work, "two", extra, ranks=2)
    train(work, "two_again", extra, ranks=2)
    cols = ["charts/episodic_return", "charts/episodic_length", "charts/mean_return_100",
            "charts/episodes"]
    for c in cols:
        a, b = column(work, "one", c)[0], column(work, "two", c)[0]
        if a != b or a == "":
            fail("the first iteration's episodes equal one process's (the same rollout)",
                 f"{c}: one process {a!r}, 2 ranks {b!r}")
    same_run(work, "two", "two_again", "two 2-rank runs of one seed")
    # the classic envs' batch, discrete and Gaussian (Pendulum's preset: --norm-obs and
    # --norm-reward on): after one iteration every env state, observation, episode sum, stream
    # position and normalization statistic is one process's bit for bit (the checkpoint's
    # state.* and obs_rms.*; only the weights moved by the update differ), and the rollout's
    # explained variance, summed in another order on 2 ranks, equal to 1e-6
    for env_id in ("Acrobot-v1", "Pendulum-v1"):
        flags = ["--total-timesteps", "1024", "--seed", "2", "--env-id", env_id]
        train(work, f"one_{env_id}", flags)
        train(work, f"two_{env_id}", flags, ranks=2)
        _, ta = safetensors(os.path.join(work, "runs", f"one_{env_id}", "model.safetensors"))
        _, tb = safetensors(os.path.join(work, "runs", f"two_{env_id}", "model.safetensors"))
        state = [k for k in ta if k.startswith(("state.", "obs_rms."))]
        differ = [k for k in state if ta[k] != tb.get(k)]
        if differ or len(state) < 8:
            fail(f"{env_id}: the first rollout on 2 ranks leaves one process's state",
                 f"differ: {differ} (of {sorted(state)})")
        a = float(column(work, f"one_{env_id}", "losses/explained_variance")[0])
        b = float(column(work, f"two_{env_id}", "losses/explained_variance")[0])
        if not abs(a - b) <= 1e-6 * max(1e-3, abs(a)):
            fail(f"{env_id}: the first rollout on 2 ranks is one process's",
                 f"explained variance: one process {a!r}, 2 ranks {b!r}")
    # --target-kl: every rank stops its epochs after the same one (the job's KL), or the ranks'
    # exchanges would pair other calls (a hang, which the timeout fails, or an MPI error). 0.0022
    # lies between the two ranks' own KLs after iteration 1's first epoch (0.0020 and 0.0024 on
    # this seed): ranks that each read their own part there (checked: such a build hangs)
    train(work, "kl", ["--total-timesteps", "10240", "--seed", "1", "--target-kl", "0.0022"],
          ranks=2)
    # the weight check: rank 1 with another learning rate parts the weights at the first update
    ranks_apart_stop(work, [*BASE, *extra], "weights and Adam moments differ",
                     "a job whose ranks' weights differ stops saying so")
    print("np2: the first rollout equals one process's (CartPole's episodes exactly, Acrobot's "
          "and Pendulum's explained variance to 1e-6); 2-rank runs repeat bit for bit; a rank "
          "with other weights stops the job")


def group_learn(work):
    extra = ["--total-timesteps", "51200", "--seed", "1"]
    t0 = time.monotonic()
    train(work, "one", extra)
    t1 = time.monotonic()
    train(work, "two", extra, ranks=2)
    t2 = time.monotonic()
    one = float(column(work, "one", "charts/mean_return_100")[-1])
    two = float(column(work, "two", "charts/mean_return_100")[-1])
    if not (two >= 250 and abs(two - one) <= 150):
        fail("2 ranks learn CartPole as one process does",
             f"mean return of the last 100 after 51200 steps: 2 ranks {two}, one process {one}; "
             "wanted >= 250 and within 150 of one process")
    print(f"learn: mean return(100) after 51200 steps: 2 ranks {two}, one process {one} "
          f"(one process {t1 - t0:.1f} s, 2 ranks {t2 - t1:.1f} s)")


def resumed_on_two(work, trainer, extra, total, what, prefix=""):
    """`trainer` (train, conv, dqn, dqn_conv) on 2 ranks: <prefix>full to `total` steps and
    <prefix>part to half of it, a copy of the part (<prefix>part_copy) for other resumes, then
    the part resumed on 2 ranks to `total`, which must equal the full run bit for bit."""
    full, part = prefix + "full", prefix + "part"
    trainer(work, full, extra + ["--total-timesteps", str(total)], ranks=2)
    trainer(work, part, extra + ["--total-timesteps", str(total // 2)], ranks=2)
    shutil.copytree(os.path.join(work, "runs", part), os.path.join(work, "runs", part + "_copy"))
    run_ok(["train", "--resume", f"runs/{part}/model.safetensors", "--total-timesteps",
            str(total), "--quiet"], work, ranks=2)
    same_run(work, full, part, what)


def group_resume(work):
    extra = ["--seed", "5", "--anneal-lr", "false"]  # the schedule does not depend on the total
    resumed_on_two(work, train, extra, 20480,
                   "a 2-rank run resumed on 2 ranks against an uninterrupted one")
    run_ok(["train", "--resume", "runs/part_copy/model.safetensors", "--total-timesteps",
            "20480", "--quiet"], work)
    # Pendulum-v1: the env batch's block gathered per env, a Gaussian policy, the running
    # normalizations (its preset)
    pend = extra + ["--env-id", "Pendulum-v1"]
    resumed_on_two(work, train, pend, 20480,
                   "Pendulum-v1 on 2 ranks resumed against uninterrupted", prefix="pend_")
    print("resume: 2 ranks stopped at 10 iterations and resumed to 20 equal 20 uninterrupted, "
          "bit for bit (CartPole-v1, Pendulum-v1); the file resumes on 1 process too")


def refused(work, argv, ranks, words, what):
    t = time.monotonic()
    p = run(argv, work, ranks=ranks, timeout=60)
    if p.returncode == 0 or not all(w in p.stderr for w in words):
        fail(f"{what} is refused saying {words}",
             f"exit code {p.returncode}\nstderr: {p.stderr[-3000:]}")
    return time.monotonic() - t


def group_bad(work):
    small = ["--total-timesteps", "4096"]
    refused(work, ["train", *BASE[:-4], "--runs-dir", "runs", "--num-envs", "7", *small], 2,
            ["--num-envs 7", "does not divide it", "pick a multiple of 2"], "--num-envs 7 on 2 ranks")
    refused(work, ["train", *BASE, "--num-minibatches", "1024", *small], 2,
            ["minibatch of 1 rows", "pick --num-minibatches"], "a minibatch of 1 row on 2 ranks")
    refused(work, ["train", *BASE, "--env-device", "cpu", "--env-groups", "2", "--norm-obs",
                   "true", *small], 2, ["--env-groups 2 on 2 ranks", "use --env-groups 1"],
            "--norm-obs with env pool groups on 2 ranks")
    refused(work, ["train", "--quiet", "--runs-dir", "runs", "--num-gpus", "1", *small], 2,
            ["--num-gpus 1 in a job that mpirun started"], "--num-gpus under mpirun")
    print("bad: --num-envs, the minibatch split, the normalizations with env groups and "
          "--num-gpus refused on 2 ranks")


# the conv policy on the env pool, at a tiny shape: seconds per group (ASan: well under a minute)
CONV = ["--device", "cpu", "--threads", "1", "--env-threads", "1", "--quiet", "--runs-dir", "runs",
        "--env-id", "MinAtar/Breakout-v1", "--policy", "minatar-cnn", "--num-envs", "8",
        "--num-steps", "16", "--num-minibatches", "4", "--update-epochs", "2"]


def ranks_apart_stop(work, flags, says, what):
    """A 2-rank job of `flags` whose rank 1 has another learning rate (its weights part at the
    first update) stops, saying `says`."""
    p = run(["train", *flags, "--run-name", "split", ":", "-np", "1", CUDARL, "train", *flags,
             "--run-name", "split", "--learning-rate", "0.001"], work, ranks=1)
    if p.returncode == 0 or says not in p.stderr:
        fail(what, f"exit code {p.returncode}\nstderr: {p.stderr[-3000:]}")


def conv(work, name, extra, ranks=None):
    return run_ok(["train", *CONV, "--run-name", name, *extra], work, ranks)


def recent(tensors, count):
    """The returns of the episodes so far in state.recent_returns (f64), sorted: a job of ranks
    logs an iteration's episodes rank by rank, one process step by step."""
    b = tensors["state.recent_returns"][2]
    vals = struct.unpack(f"<{len(b) // 8}d", b)
    return sorted(vals[:min(count, len(vals))])


def first_rollout_same(work, one, two, what, min_state=8):
    """After one iteration, the 2-rank checkpoint's state (state.*, obs_rms.*) is one
    process's bit for bit, the recent returns as a set, and the first row's episode columns and
    explained variance the same."""
    _, ta = safetensors(os.path.join(work, "runs", one, "model.safetensors"))
    _, tb = safetensors(os.path.join(work, "runs", two, "model.safetensors"))
    state = [k for k in ta if k.startswith(("state.", "obs_rms.")) and k != "state.recent_returns"]
    differ = [k for k in state if ta[k] != tb.get(k)]
    if differ or len(state) < min_state:
        fail(f"{what}: the first rollout on 2 ranks leaves one process's state",
             f"differ: {differ} (of {sorted(state)})")
    episodes = int(float(column(work, one, "charts/episodes")[0]))
    if recent(ta, episodes) != recent(tb, episodes):
        fail(f"{what}: the first rollout's episode returns are one process's",
             f"one process {recent(ta, episodes)}, 2 ranks {recent(tb, episodes)}")
    for c in ("charts/episodic_return", "charts/episodic_length", "charts/episodes",
              "losses/explained_variance"):
        a, b = column(work, one, c)[0], column(work, two, c)[0]
        if c == "losses/explained_variance":
            ok = a != "" and abs(float(a) - float(b)) <= 1e-6 * max(1e-3, abs(float(a)))
        else:
            ok = a == b and a != ""
        if not ok:
            fail(f"{what}: the first iteration's metrics are one process's",
                 f"{c}: one process {a!r}, 2 ranks {b!r}")
    return episodes


def group_conv_np1(work):
    extra = ["--total-timesteps", "512", "--seed", "3"]
    conv(work, "plain", extra)
    conv(work, "np1", extra, ranks=1)
    same_run(work, "plain", "np1", "conv policy: mpirun -np 1 against a plain run")
    print("conv_np1: mpirun -np 1 equals the plain conv run bit for bit (4 iterations)")


def group_conv_np2(work):
    one = ["--total-timesteps", "128", "--seed", "1"]
    conv(work, "one", one)
    conv(work, "two", one, ranks=2)
    episodes = first_rollout_same(work, "one", "two", "minatar-cnn", min_state=9)
    if episodes < 1:
        fail("the first conv rollout ends episodes (else the comparison is vacuous)", "none")
    # the pool's groups on each rank: the sampler's words are drawn group by group
    conv(work, "two_groups", one + ["--env-groups", "2"], ranks=2)
    first_rollout_same(work, "one", "two_groups", "minatar-cnn, --env-groups 2", min_state=9)
    # the MLP policy on the env pool, with the running normalizations
    mlp = ["--device", "cpu", "--threads", "1", "--env-threads", "1", "--quiet", "--runs-dir",
           "runs", "--env-device", "cpu", "--num-envs", "8", "--num-steps", "32",
           "--num-minibatches", "4", "--total-timesteps", "256", "--seed", "2", "--norm-obs",
           "true", "--norm-reward", "true"]
    run_ok(["train", *mlp, "--run-name", "mlp_one"], work)
    run_ok(["train", *mlp, "--run-name", "mlp_two"], work, ranks=2)
    first_rollout_same(work, "mlp_one", "mlp_two", "the MLP on the env pool", min_state=12)
    more = ["--total-timesteps", "512", "--seed", "1"]
    conv(work, "rep", more, ranks=2)
    conv(work, "rep_again", more, ranks=2)
    same_run(work, "rep", "rep_again", "two 2-rank conv runs of one seed")
    ranks_apart_stop(work, [*CONV, *more], "weights and Adam moments differ",
                     "a conv job whose ranks' weights differ stops saying so")
    print(f"conv_np2: the first conv rollout on 2 ranks ({episodes} episodes) leaves one "
          "process's state bit for bit (also with 2 env groups a rank, and the MLP on the pool "
          "with its normalizations); 2-rank runs repeat; a rank with other weights stops the job")


def group_conv_resume(work):
    extra = ["--seed", "5", "--anneal-lr", "false", "--separate-critic", "true"]
    resumed_on_two(work, conv, extra, 512,
                   "a 2-rank conv run resumed on 2 ranks against uninterrupted")
    run_ok(["train", "--resume", "runs/part_copy/model.safetensors", "--total-timesteps", "512",
            "--quiet"], work)
    steps = column(work, "part_copy", "global_step")
    if steps[-1] != "512" or len(steps) != 4:
        fail("the 2-rank conv file resumed on 1 process trains on to 512 steps",
             f"global_step column {steps}")
    print("conv_resume: 2 ranks (--separate-critic) stopped at 2 iterations and resumed to 4 "
          "equal 4 uninterrupted, bit for bit; the file resumes on 1 process too")


DQN = ["--algo", "dqn", "--device", "cpu", "--threads", "1", "--quiet", "--runs-dir", "runs",
       "--num-envs", "8"]


def dqn(work, name, extra, ranks=None):
    return run_ok(["train", *DQN, "--run-name", name, *extra], work, ranks)


def group_dqn_np1(work):
    extra = ["--total-timesteps", "4000", "--learning-starts", "1000", "--seed", "3"]
    dqn(work, "plain", extra)
    dqn(work, "np1", extra, ranks=1)
    same_run(work, "plain", "np1", "DQN: mpirun -np 1 against a plain run")
    print("dqn_np1: mpirun -np 1 equals the plain DQN run bit for bit")


def group_dqn_np2(work):
    extra = ["--total-timesteps", "4000", "--learning-starts", "1000", "--seed", "1",
             "--buffer-size", "4000"]
    dqn(work, "one", extra)
    dqn(work, "two", extra, ranks=2)
    dqn(work, "two_again", extra, ranks=2)
    head, ra, keep = metrics(os.path.join(work, "runs", "one", "metrics.csv"))
    _, rb, _ = metrics(os.path.join(work, "runs", "two", "metrics.csv"))
    names = [head[i] for i in keep]
    step = names.index("global_step")
    before = [r for r in ra if int(r[step]) <= 1000]
    episodes = names.index("charts/episodes")
    if len(before) < 20 or before[-1][episodes] in ("", "0"):
        fail("the rows before learning_starts have episodes", f"{before[-3:]}")
    if rb[:len(before)] != before:
        bad = next(i for i in range(len(before)) if rb[i] != before[i])
        fail("every metrics row before the first train step equals one process's",
             f"row {bad}: one process {before[bad]}, 2 ranks {rb[bad]}")
    # the shards: each env has its own ring of buffer_size / num_envs rows (500), rank r's
    # shard holds its 4 envs' rings; the first 125 rows of each (the steps before learning
    # starts) are one process's env r*4+j's, byte for byte
    _, ta = safetensors(os.path.join(work, "runs", "one", "model.safetensors"))
    _, tb = safetensors(os.path.join(work, "runs", "two", "model.safetensors"))
    for piece in ("frames", "actions", "rewards", "flags"):
        one = ta["state.replay." + piece][2]
        shards = [tb.get(f"state.replay.rank{r}.{piece}") for r in range(2)]
        if None in shards:
            fail("the 2-rank checkpoint holds both ranks' shards", f"{sorted(tb)}")
        row = len(one) // 4000
        ring = 500 * row
        for e in range(8):
            r, j = divmod(e, 4)
            if shards[r][2][j * ring:j * ring + 125 * row] != one[e * ring:e * ring + 125 * row]:
                fail("rank r's replay shard holds one process's envs r*4..r*4+3",
                     f"{piece}: env {e} (rank {r}'s env {j}) differs")
    same_run(work, "two", "two_again", "two 2-rank DQN runs of one seed")
    ranks_apart_stop(work, [*DQN, *extra], "weights, target and Adam moments differ",
                     "a DQN job whose ranks' weights differ stops saying so")
    print(f"dqn_np2: the {len(before)} rows before learning_starts equal one process's, and so "
          "do the replay shards' transitions; 2-rank runs repeat bit for bit; a rank with other "
          "weights stops the job")


def group_dqn_learn(work):
    extra = ["--num-envs", "4", "--total-timesteps", "60000", "--learning-starts", "2000",
             "--train-frequency", "4", "--target-network-frequency", "500", "--batch-size", "64",
             "--buffer-size", "20000", "--learning-rate", "0.001", "--exploration-fraction",
             "0.3", "--seed", "1"]
    t0 = time.monotonic()
    dqn(work, "one", extra)
    t1 = time.monotonic()
    dqn(work, "two", extra, ranks=2)
    t2 = time.monotonic()
    one = float(column(work, "one", "charts/mean_return_100")[-1])
    two = float(column(work, "two", "charts/mean_return_100")[-1])
    if not two >= 150:
        fail("DQN on 2 ranks learns CartPole",
             f"mean return of the last 100 after 60000 steps: 2 ranks {two} (wanted >= 150), "
             f"one process {one}")
    print(f"dqn_learn: mean return(100) after 60000 steps: 2 ranks {two}, one process {one} "
          f"(one process {t1 - t0:.1f} s, 2 ranks {t2 - t1:.1f} s)")


def group_dqn_resume(work):
    # a constant epsilon and log rows every iteration (total / 200 < 8 envs): neither depends
    # on --total-timesteps, so the resumed run's schedule is the uninterrupted one's
    extra = ["--seed", "5", "--learning-starts", "200", "--start-e", "0.3", "--end-e", "0.3",
             "--batch-size", "32", "--buffer-size", "1000", "--train-frequency", "2",
             "--target-network-frequency", "64"]
    resumed_on_two(work, dqn, extra, 1600,
                   "a 2-rank DQN run resumed on 2 ranks against uninterrupted")
    refused(work, ["train", "--resume", "runs/part_copy/model.safetensors", "--total-timesteps",
                   "1600", "--quiet"], None,
            ["written by a DQN job of 2 rank(s)", "this run is 1", "resume it on 2 rank(s)"],
            "a 2-rank DQN checkpoint resumed on 1 process")
    refused(work, ["train", "--resume", "runs/part_copy/model.safetensors", "--total-timesteps",
                   "1600", "--quiet"], 4,
            ["written by a DQN job of 2 rank(s)", "this run is 4"],
            "a 2-rank DQN checkpoint resumed on 4 ranks")
    print("dqn_resume: 2 ranks stopped at 800 steps and resumed to 1600 equal 1600 "
          "uninterrupted, bit for bit; the file is refused on 1 process and on 4 ranks")


def group_dqn_bad(work):
    small = ["--total-timesteps", "2000"]
    refused(work, ["train", *DQN[:-2], "--num-envs", "7", *small], 2,
            ["--num-envs 7", "does not divide it", "pick a multiple of 2"],
            "DQN --num-envs 7 on 2 ranks")
    refused(work, ["train", *DQN, "--batch-size", "33", *small], 2,
            ["--batch-size 33", "does not divide it"], "DQN --batch-size 33 on 2 ranks")
    refused(work, ["train", *DQN, "--buffer-size", "10001", *small], 2,
            ["--buffer-size 10001", "does not divide it"], "DQN --buffer-size 10001 on 2 ranks")
    refused(work, ["train", *DQN, "--prioritized", "true", *small], 2,
            ["--prioritized is set", "for now"], "DQN --prioritized on 2 ranks")
    print("dqn_bad: --num-envs, --batch-size, --buffer-size and --prioritized refused on 2 ranks")


# DQN with a conv Q-network on the env pool, at a tiny shape: seconds per group
DQN_CONV = ["--algo", "dqn", "--device", "cpu", "--threads", "1", "--env-threads", "1", "--quiet",
            "--runs-dir", "runs", "--env-id", "MinAtar/Breakout-v1", "--policy", "minatar-cnn",
            "--num-envs", "8", "--batch-size", "16"]


def dqn_conv(work, name, extra, ranks=None):
    return run_ok(["train", *DQN_CONV, "--run-name", name, *extra], work, ranks)


def group_dqn_conv_np1(work):
    extra = ["--total-timesteps", "512", "--learning-starts", "256", "--buffer-size", "1024",
             "--seed", "3"]
    dqn_conv(work, "plain", extra)
    dqn_conv(work, "np1", extra, ranks=1)
    same_run(work, "plain", "np1", "DQN minatar-cnn on the pool: mpirun -np 1 against a plain run")
    print("dqn_conv_np1: mpirun -np 1 equals the plain DQN minatar-cnn run bit for bit")


def dqn_first_same(work, one, two, envs, buffer, what):
    """Runs that stop at learning_starts: the 2-rank checkpoint's state is one process's (every
    state.* tensor but the replay's and the ranks' own), every metrics row, and rank r's replay
    shard holds one process's envs r*envs/2 .. (its rings of buffer/envs rows, and heads)."""
    _, ta = safetensors(os.path.join(work, "runs", one, "model.safetensors"))
    _, tb = safetensors(os.path.join(work, "runs", two, "model.safetensors"))
    state = [k for k in ta if k.startswith("state.") and not k.startswith("state.replay.")]
    differ = [k for k in state if ta[k] != tb.get(k)]
    if differ or len(state) < 10:
        fail(f"{what}: the first transitions on 2 ranks leave one process's state",
             f"differ: {differ} (of {sorted(state)})")
    same_rows = metrics(os.path.join(work, "runs", one, "metrics.csv"))[1] == \
        metrics(os.path.join(work, "runs", two, "metrics.csv"))[1]
    episodes = int(float(column(work, one, "charts/episodes")[-1]))
    if not same_rows or episodes < 1:
        fail(f"{what}: every metrics row before learning_starts is one process's, with episodes",
             f"same rows: {same_rows}, episodes: {episodes}")
    half, ring = envs // 2, buffer // envs
    for piece in ("frames", "actions", "rewards", "flags", "heads"):
        whole = ta["state.replay." + piece][2]
        shards = [tb.get(f"state.replay.rank{r}.{piece}") for r in range(2)]
        if None in shards:
            fail(f"{what}: the 2-rank checkpoint holds both ranks' shards", f"{sorted(tb)}")
        if piece == "heads":  # one per env
            if shards[0][2] + shards[1][2] != whole:
                fail(f"{what}: the shards' heads are one process's envs'", piece)
            continue
        row = len(whole) // buffer
        for e in range(envs):
            r, j = divmod(e, half)
            mine = shards[r][2][j * ring * row:(j + 1) * ring * row]
            if mine != whole[e * ring * row:(e + 1) * ring * row]:
                fail(f"{what}: rank r's replay shard holds one process's envs",
                     f"{piece}: env {e} (rank {r}'s env {j}) differs")
    return episodes


def group_dqn_conv_np2(work):
    first = ["--total-timesteps", "256", "--learning-starts", "256", "--buffer-size", "1024",
             "--seed", "1"]
    dqn_conv(work, "one", first)
    dqn_conv(work, "two", first, ranks=2)
    episodes = dqn_first_same(work, "one", "two", 8, 1024, "minatar-cnn")
    # Nature-CNN on CartPolePixels-v1: 84x84 frames, each stored once (the frame-once replay)
    px = ["--env-id", "CartPolePixels-v1", "--policy", "nature-cnn", "--num-envs", "4",
          "--batch-size", "8", "--buffer-size", "512", "--learning-starts", "96",
          "--total-timesteps", "96", "--seed", "2"]
    dqn_conv(work, "px_one", px)
    dqn_conv(work, "px_two", px, ranks=2)
    dqn_first_same(work, "px_one", "px_two", 4, 512, "nature-cnn on CartPolePixels-v1")
    # the MLP on CartPole-v1's env pool
    mlp = ["--env-device", "cpu", "--total-timesteps", "400", "--learning-starts", "400",
           "--buffer-size", "800", "--seed", "4"]
    dqn(work, "mlp_one", mlp)
    dqn(work, "mlp_two", mlp, ranks=2)
    dqn_first_same(work, "mlp_one", "mlp_two", 8, 800, "the MLP on CartPole-v1's pool")
    more = ["--total-timesteps", "512", "--learning-starts", "128", "--train-frequency", "2",
            "--target-network-frequency", "64", "--buffer-size", "1024", "--seed", "1"]
    dqn_conv(work, "rep", more, ranks=2)
    dqn_conv(work, "rep_again", more, ranks=2)
    same_run(work, "rep", "rep_again", "two 2-rank DQN minatar-cnn runs of one seed")
    ranks_apart_stop(work, [*DQN_CONV, *more], "weights, target and Adam moments differ",
                     "a DQN conv job whose ranks' weights differ stops saying so")
    print(f"dqn_conv_np2: the first transitions on 2 ranks ({episodes} episodes on MinAtar) "
          "leave one process's state, metrics and replay rows bit for bit (also Nature-CNN on "
          "CartPolePixels-v1 and the MLP on the pool); 2-rank runs repeat; a rank with other "
          "weights stops the job")


def group_dqn_conv_resume(work):
    # a constant epsilon and log rows every iteration (total / 200 < 8 envs), as dqn_resume
    extra = ["--seed", "5", "--learning-starts", "96", "--start-e", "0.3", "--end-e", "0.3",
             "--buffer-size", "384", "--train-frequency", "2", "--target-network-frequency", "32"]
    resumed_on_two(work, dqn_conv, extra, 512,
                   "a 2-rank DQN conv run resumed on 2 ranks against uninterrupted")
    refused(work, ["train", "--resume", "runs/part_copy/model.safetensors", "--total-timesteps",
                   "512", "--quiet"], None,
            ["written by a DQN job of 2 rank(s)", "this run is 1", "resume it on 2 rank(s)"],
            "a 2-rank DQN conv checkpoint resumed on 1 process")
    print("dqn_conv_resume: 2 ranks (minatar-cnn, the pool) stopped at 256 steps and resumed to "
          "512 equal 512 uninterrupted, bit for bit; the file is refused on 1 process")


def group_kill(work):
    tag = f"{os.getpid()}-{time.time_ns()}"
    e = env()
    e["DP_TEST_TAG"] = tag  # not CUDARL_*: cudarl refuses environment variables it does not know
    argv = [MPIRUN, *MPI_FLAGS, "-np", "2", CUDARL, "train", *BASE, "--run-name", "k",
            "--total-timesteps", "500000000", "--checkpoint-every", "1"]
    ckpt = os.path.join(work, "runs", "k", "model.safetensors")
    with open(os.path.join(work, "k.stderr"), "w") as err:
        p = subprocess.Popen(argv, cwd=work, env=e, stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + 60
        while not os.path.exists(ckpt) and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.05)
        if not os.path.exists(ckpt):
            p.kill()
            fail("the 2-rank run writes a checkpoint within 60 s", open(err.name).read())
        time.sleep(0.3)  # a few more iterations and checkpoints
        victims = []
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                env_of = open(f"/proc/{d}/environ", "rb").read().split(b"\0")
            except OSError:
                continue
            if f"DP_TEST_TAG={tag}".encode() in env_of and b"OMPI_COMM_WORLD_RANK=1" in env_of:
                victims.append(int(d))
        if not victims:
            p.kill()
            fail("rank 1's process is found (OMPI_COMM_WORLD_RANK=1)", "none")
        t = time.monotonic()
        for v in victims:
            os.kill(v, signal.SIGKILL)
        try:
            rc = p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            fail("the job ends within 30 s of rank 1's death", "mpirun still runs: a hang")
        took = time.monotonic() - t
    if rc == 0:
        fail("the job ends with a non-zero exit code when a rank is killed", f"exit code {rc}")
    meta, _ = safetensors(ckpt)  # parses: header, tensors
    step = int(meta["global_step"])
    run_ok(["train", "--resume", "runs/k/model.safetensors", "--total-timesteps",
            str(step + 2048), "--quiet"], work)
    print(f"kill: rank 1 killed after step {step}: the job ended in {took:.1f} s with exit code "
          f"{rc}; the checkpoint it left resumes on 1 process")


def main():
    global CUDARL, MPIRUN, MPI_FLAGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--cudarl", required=True)
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--only", choices=["np1", "np2", "learn", "resume", "bad", "kill",
                                       "conv_np1", "conv_np2", "conv_resume",
                                       "dqn_np1", "dqn_np2", "dqn_learn", "dqn_resume",
                                       "dqn_bad", "dqn_conv_np1", "dqn_conv_np2",
                                       "dqn_conv_resume"])
    a = ap.parse_args()
    CUDARL, MPIRUN = os.path.abspath(a.cudarl), a.mpirun
    v = subprocess.run([MPIRUN, "--version"], capture_output=True, text=True).stdout
    MPI_FLAGS = ["--oversubscribe"] if "Open MPI" in v or "OpenRTE" in v else []
    groups = [a.only] if a.only else ["np1", "np2", "learn", "resume", "bad", "kill",
                                      "conv_np1", "conv_np2", "conv_resume", "dqn_np1",
                                      "dqn_np2", "dqn_learn", "dqn_resume", "dqn_bad",
                                      "dqn_conv_np1", "dqn_conv_np2", "dqn_conv_resume"]
    for g in groups:
        work = os.path.join(a.work, g)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        globals()[f"group_{g}"](work)
    print("ok")


if __name__ == "__main__":
    main()
