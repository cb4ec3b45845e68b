#!/usr/bin/env python3
"""Records Gymnasium traces of its MuJoCo tasks for tests/unit/test_mujoco_gym.c to replay.

Usage: gym_mujoco_trace.py OUT [--steps 1000] [--seed 1234] [--tasks HalfCheetah-v5 ...]

For each task, gymnasium.make(id) (its TimeLimit included) is reset with the seed, then stepped
--steps times with actions drawn uniformly from its action box by
numpy.random.default_rng(seed) as float32; an episode that ends is followed by env.reset(), and
the trace goes on. Every reset and step is recorded with the MuJoCo state after it.

Binary format, little-endian, version 1:
  header: char magic[8] = "CRMJGYM\\0"; u32 version = 1; u32 num_tasks;
          char gymnasium_version[16]; char mujoco_version[16]; char numpy_version[16]
  then per task: char id[32]; u32 nq, nv, nu, obs_dim, num_records; then num_records records,
  each a u8 kind and its body:
    kind 0, a reset:  f64 qpos[nq]; f64 qvel[nv]; f64 obs[obs_dim]
    kind 1, a step:   f32 action[nu]; f64 obs[obs_dim]; f64 reward; u8 terminated;
                      u8 truncated; f64 qpos[nq]; f64 qvel[nv]
The first record of a task is a reset.
"""
import argparse
import struct
import sys

try:
    import gymnasium
    import mujoco
    import numpy as np
except ImportError as e:
    sys.exit(f"gym_mujoco_trace.py: cannot import gymnasium, mujoco or numpy ({e}) with "
             f"{sys.executable}; pip install mujoco 'gymnasium[mujoco]'")

MAGIC = b"CRMJGYM\0"
VERSION = 1
TASKS = ["HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Ant-v5"]
HEADER = struct.Struct("<8sII16s16s16s")
TASK = struct.Struct("<32s5I")


def f64(values):
    """values (any float array) as little-endian float64 bytes."""
    return np.ascontiguousarray(values, dtype="<f8").tobytes()


def reset_record(data, obs):
    return b"\0" + f64(data.qpos) + f64(data.qvel) + f64(obs)


def step_record(data, action, obs, reward, terminated, truncated):
    return (b"\1" + np.ascontiguousarray(action, dtype="<f4").tobytes() + f64(obs) +
            struct.pack("<dBB", float(reward), bool(terminated), bool(truncated)) +
            f64(data.qpos) + f64(data.qvel))


def record(task, steps, seed):
    """The task's header and records, as bytes."""
    env = gymnasium.make(task)
    data, model = env.unwrapped.data, env.unwrapped.model
    rng = np.random.default_rng(seed)
    low, high = env.action_space.low, env.action_space.high
    obs, _ = env.reset(seed=seed)
    records = [reset_record(data, obs)]
    ends = 0
    for _ in range(steps):
        action = rng.uniform(low, high).astype(np.float32)
        obs, reward, terminated, truncated, _ = env.step(action)
        records.append(step_record(data, action, obs, reward, terminated, truncated))
        if terminated or truncated:
            ends += 1
            obs, _ = env.reset()
            records.append(reset_record(data, obs))
    head = TASK.pack(task.encode(), model.nq, model.nv, model.nu, obs.size, len(records))
    print(f"gym_mujoco_trace.py: {task}: {steps} steps, {ends} episodes ended")
    return head + b"".join(records)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--tasks", nargs="+", default=TASKS)
    args = ap.parse_args()
    # MuJoCo's warnings (HalfCheetah's XML uses a deprecated attribute) to stderr, not to
    # MUJOCO_LOG.TXT in the working folder.
    mujoco.set_mju_user_warning(lambda msg: print(f"MuJoCo: {msg}", file=sys.stderr))
    body = b"".join(record(t, args.steps, args.seed) for t in args.tasks)
    head = HEADER.pack(MAGIC, VERSION, len(args.tasks), gymnasium.__version__.encode()[:16],
                       mujoco.__version__.encode()[:16], np.__version__.encode()[:16])
    with open(args.out, "wb") as f:
        f.write(head + body)
    print(f"gym_mujoco_trace.py: gymnasium {gymnasium.__version__}, mujoco {mujoco.__version__}, "
          f"numpy {np.__version__} -> {args.out}")


if __name__ == "__main__":
    main()
