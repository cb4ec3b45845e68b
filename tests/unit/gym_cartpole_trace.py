#!/usr/bin/env python3
"""Records a Gymnasium CartPole-v1 trace for tests/unit/test_cartpole_gym.c to replay.

Usage: gym_cartpole_trace.py OUT [--random-steps 10000] [--seed 1234]

Runs gymnasium.make("CartPole-v1") (TimeLimit 500 included) with uniformly random actions from
numpy.random.default_rng(seed) until at least --random-steps steps have been taken, finishing the
episode in progress, then 4 more episodes under a noisy balancing policy that survive to the
500-step truncation. Each episode starts from env.reset() (seeded once, with the first reset).

Binary format, little-endian, version 1:
  header:  char magic[8] = "CRCPGYM\\0"; u32 version = 1; u32 num_episodes; u64 num_steps;
           char gymnasium_version[16] (NUL-padded)
  then num_episodes episodes, each:
    u32 steps; f64 state[4] (env.unwrapped.state after reset); f32 obs[4] (reset observation)
    then `steps` records of 30 bytes:
      i32 action; f32 obs[4]; f64 reward; u8 terminated; u8 truncated
Only the last step of an episode has terminated or truncated set.
"""
import argparse
import struct
import sys

try:
    import gymnasium
    import numpy as np
except ImportError as e:
    sys.exit(f"gym_cartpole_trace.py: cannot import gymnasium ({e}) with {sys.executable}; "
             f"pip install gymnasium")

MAGIC = b"CRCPGYM\0"
VERSION = 1
HEADER = struct.Struct("<8sIIQ16s")
EPISODE = struct.Struct("<I4d4f")
STEP = struct.Struct("<i4fdBB")
BALANCED_EPISODES = 4


def balancing_action(obs, rng):
    """A PD controller on the pole with 20% random actions: long episodes that reach truncation."""
    x, x_dot, theta, theta_dot = (float(v) for v in obs)
    if rng.random() < 0.2:
        return int(rng.integers(2))
    return int(theta + 0.5 * theta_dot + 0.05 * x + 0.1 * x_dot > 0)


def random_action(obs, rng):
    """A uniformly random action."""
    return int(rng.integers(2))


def run_episode(env, rng, policy, seed=None):
    """One episode from reset to termination or truncation: (its bytes, its step count)."""
    obs, _ = env.reset(seed=seed)
    reset_state, reset_obs = env.unwrapped.state.tolist(), obs.tolist()
    steps = []
    while True:
        action = policy(obs, rng)
        obs, reward, terminated, truncated, _ = env.step(action)
        steps.append(STEP.pack(action, *obs.tolist(), float(reward), terminated, truncated))
        if terminated or truncated:
            break
    head = EPISODE.pack(len(steps), *reset_state, *reset_obs)
    return head + b"".join(steps), len(steps)


def record(random_steps, seed):
    """Runs the episodes; returns (episode bytes, episodes, steps)."""
    env = gymnasium.make("CartPole-v1")
    rng = np.random.default_rng(seed)
    chunks, episodes, steps = [], 0, 0
    while steps < random_steps:
        data, n = run_episode(env, rng, random_action, seed if episodes == 0 else None)
        chunks.append(data)
        episodes, steps = episodes + 1, steps + n
    for _ in range(BALANCED_EPISODES):
        data, n = run_episode(env, rng, balancing_action)
        chunks.append(data)
        episodes, steps = episodes + 1, steps + n
    return b"".join(chunks), episodes, steps


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--random-steps", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    body, episodes, steps = record(args.random_steps, args.seed)
    version = gymnasium.__version__.encode()[:16]
    with open(args.out, "wb") as f:
        f.write(HEADER.pack(MAGIC, VERSION, episodes, steps, version) + body)
    print(f"gym_cartpole_trace.py: gymnasium {gymnasium.__version__}: {episodes} episodes, "
          f"{steps} steps -> {args.out}")


if __name__ == "__main__":
    main()
