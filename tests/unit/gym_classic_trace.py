#!/usr/bin/env python3
"""Records Gymnasium traces of the classic-control envs for tests/unit/test_classic_gym.c.

Usage: gym_classic_trace.py OUT_DIR [--steps 4000] [--seed 1234]

For each of Acrobot-v1, MountainCar-v0, Pendulum-v1 and MountainCarContinuous-v0, runs
gymnasium.make(id) (its TimeLimit included; the two continuous ones behind ClipAction, as cudarl
clips actions into the box) and writes OUT_DIR/<id>.bin: episodes under uniformly random actions
(continuous ones drawn from a normal wider than the box, so clipping happens) until at least
--steps steps, finishing the episode in progress, then 4 episodes under a noisy policy that pumps
energy into the system (the goal-reaching episodes that end in termination: Acrobot, both
MountainCars). Actions come from numpy.random.default_rng(seed); each episode starts from
env.reset() (seeded once, with the first reset).

Binary format, little-endian, version 1:
  header:  char magic[8] = "CRCLGYM\\0"; u32 version = 1; u32 state_dim S; u32 obs_dim D;
           u32 action_dim K (0: one int32 action); u32 num_episodes; u32 numpy_is_libm (1: numpy's
           float64 cos, sin and x**2 and float32 x**2 gave libm's results on a sample, see
           numpy_is_libm); u64 num_steps; char env_id[32]; char gymnasium_version[16] (both
           NUL-padded)
  then num_episodes episodes, each:
    u32 steps; f64 state[S] (env.unwrapped.state after reset); f32 obs[D] (reset observation)
    then `steps` records:
      action (i32, or f32[K] as passed to the env, before ClipAction); f64 state[S] (after the
      step); f32 obs[D]; f64 reward; u8 terminated; u8 truncated
Only the last step of an episode has terminated or truncated set.
"""
import argparse
import ctypes
import ctypes.util
import math
import os
import struct
import sys

try:
    import gymnasium
    import numpy as np
except ImportError as e:
    sys.exit(f"gym_classic_trace.py: cannot import gymnasium ({e}) with {sys.executable}; "
             f"pip install gymnasium")

MAGIC = b"CRCLGYM\0"
VERSION = 1
HEADER = struct.Struct("<8s6IQ32s16s")
POLICY_EPISODES = 4
EPSILON = 0.2  # the policy episodes' share of random actions


def acrobot_pump(state, rng):
    """Torque along the joint's swing: reaches the goal height in one or two hundred steps."""
    return 2 if state[3] > 0 else 0


def mountain_car_pump(state, rng):
    """Push along the velocity: climbs out of the valley in about a hundred steps."""
    return 2 if state[1] >= 0 else 0


def pendulum_pump(state, rng):
    """Torque along the angular velocity, beyond the box (clipped)."""
    return np.array([3.0 if state[1] >= 0 else -3.0], dtype=np.float32)


def continuous_pump(state, rng):
    """Force along the velocity, beyond the box (clipped)."""
    return np.array([1.5 if state[1] >= 0 else -1.5], dtype=np.float32)


# id: (state components, continuous action scale or None, energy-pumping policy)
ENVS = {
    "Acrobot-v1": (4, None, acrobot_pump),
    "MountainCar-v0": (2, None, mountain_car_pump),
    "Pendulum-v1": (2, 2.5, pendulum_pump),
    "MountainCarContinuous-v0": (2, 1.5, continuous_pump),
}


def numpy_is_libm(samples=20000, seed=7):
    """Whether numpy computes float64 cos, sin and x**2, and float32 x**2, as libm's cos, sin, pow
    and powf do (numpy may have routines of its own) on a sample of the envs' range: then the C
    replay, which calls libm, can agree with Gymnasium bit for bit."""
    try:
        libm = ctypes.CDLL(ctypes.util.find_library("m"))
        powf = libm.powf
        powf.restype, powf.argtypes = ctypes.c_float, [ctypes.c_float, ctypes.c_float]
    except (OSError, AttributeError, TypeError):
        return False
    xs = np.random.default_rng(seed).uniform(-100.0, 100.0, samples)
    for x in xs:
        d, f = np.float64(x), np.float32(x)
        if np.cos(d) != math.cos(x) or np.sin(d) != math.sin(x) or d**2 != math.pow(x, 2.0):
            return False
        if f**2 != np.float32(powf(float(f), 2.0)):
            return False
    return True


def make(env_id):
    """The env as cudarl steps it: Gymnasium's, with ClipAction for a continuous one."""
    env = gymnasium.make(env_id)
    if isinstance(env.action_space, gymnasium.spaces.Box):
        env = gymnasium.wrappers.ClipAction(env)
    return env


def state_of(env, dim):
    """env.unwrapped.state as dim Python floats (numpy float64 or float32, or a tuple)."""
    s = [float(v) for v in env.unwrapped.state]
    assert len(s) == dim
    return s


def random_action(env, scale, rng):
    """A uniformly random discrete action, or a normal one of std `scale` (float32, shape (1,))."""
    if scale is None:
        return int(rng.integers(env.action_space.n))
    return np.array([rng.normal(0.0, scale)], dtype=np.float32)


def pack_action(action, scale):
    if scale is None:
        return struct.pack("<i", action)
    return struct.pack("<f", float(action[0]))


def run_episode(env, env_id, rng, policy, seed=None):
    """One episode from reset to termination or truncation: (its bytes, its step count)."""
    dim, scale, _ = ENVS[env_id]
    obs, _ = env.reset(seed=seed)
    head_state, head_obs = state_of(env, dim), obs.tolist()
    records = []
    while True:
        state = env.unwrapped.state
        if policy is not None and rng.random() >= EPSILON:
            action = policy(state, rng)
        else:
            action = random_action(env, scale, rng)
        obs, reward, terminated, truncated, _ = env.step(action)
        records.append(pack_action(action, scale) +
                       struct.pack(f"<{dim}d", *state_of(env, dim)) +
                       struct.pack(f"<{len(head_obs)}f", *obs.tolist()) +
                       struct.pack("<dBB", float(reward), terminated, truncated))
        if terminated or truncated:
            break
    head = struct.pack(f"<I{dim}d{len(head_obs)}f", len(records), *head_state, *head_obs)
    return head + b"".join(records), len(records)


def record(env_id, steps, seed):
    """Runs the episodes of one env; returns (header fields, episode bytes)."""
    env = make(env_id)
    rng = np.random.default_rng(seed)
    policy = ENVS[env_id][2]
    chunks, episodes, total = [], 0, 0
    while total < steps:
        data, n = run_episode(env, env_id, rng, None, seed if episodes == 0 else None)
        chunks.append(data)
        episodes, total = episodes + 1, total + n
    for _ in range(POLICY_EPISODES):
        data, n = run_episode(env, env_id, rng, policy)
        chunks.append(data)
        episodes, total = episodes + 1, total + n
    return episodes, total, b"".join(chunks)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    version = gymnasium.__version__.encode()[:16]
    libm = numpy_is_libm()
    for env_id, (dim, scale, _) in ENVS.items():
        episodes, steps, body = record(env_id, args.steps, args.seed)
        obs_dim = make(env_id).observation_space.shape[0]
        header = HEADER.pack(MAGIC, VERSION, dim, obs_dim, 0 if scale is None else 1, episodes,
                             int(libm), steps, env_id.encode(), version)
        path = os.path.join(args.out_dir, env_id + ".bin")
        with open(path, "wb") as f:
            f.write(header + body)
        print(f"gym_classic_trace.py: gymnasium {gymnasium.__version__}: {env_id}: {episodes} "
              f"episodes, {steps} steps -> {path}")
    print(f"gym_classic_trace.py: numpy {np.__version__}'s cos, sin and x**2 "
          f"{'are' if libm else 'are not'} libm's")


if __name__ == "__main__":
    main()
