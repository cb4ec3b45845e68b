"""PPO on Gymnasium's own Python CartPole-v1 through cudarl's Python-env path beside
Stable-Baselines3's PPO on the same env, in one run: env steps per second, the wall time until
the mean return of the last 100 episodes first reached 475 (checked at each of cudarl's metrics
rows and at SB3's rollout ends), and for cudarl the share of the time spent stepping the envs in
Python (timed inside the adapter's step).

  python3 bench/python_env.py [--steps 500000] [--seed 1] [--device cpu] [--sb3-device cpu]

SB3 runs with its PPO defaults for classic control (CleanRL ppo.py's settings: 4 envs x 128
steps, learning rate 2.5e-4, 4 minibatches, 4 epochs, entropy 0.01), which cudarl also uses on a
Gymnasium env. Both are stopped once solved or at --steps."""
import argparse
import collections
import sys
import time

import gymnasium
import numpy as np

import cudarl
from cudarl import gym_env


def run_cudarl(steps, seed, device):
    stepping = [0.0]
    orig = gym_env.Adapter._step

    def timed(self, *a):
        t = time.perf_counter()
        orig(self, *a)
        stepping[0] += time.perf_counter() - t

    gym_env.Adapter._step = timed
    t0 = time.perf_counter()
    solved = [None]

    def cb(m):
        if solved[0] is None and m["charts/mean_return_100"] >= 475:
            solved[0] = (m["global_step"], time.perf_counter() - t0)
            return True
        return False

    try:
        run = cudarl.train(env="gym:CartPole-v1", device=device, seed=seed, quiet=True,
                           total_timesteps=steps, callback=cb, runs_dir="/tmp/bench-python-env")
    finally:
        gym_env.Adapter._step = orig
    wall = time.perf_counter() - t0
    return {"steps": run.final["global_step"], "sps": run.final["global_step"] / wall,
            "solved": solved[0], "python_share": stepping[0] / wall}


def run_sb3(steps, seed, device):
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env

    class Stop(BaseCallback):
        def __init__(self):
            super().__init__()
            self.returns = collections.deque(maxlen=100)
            self.solved = None

        def _on_step(self):
            for info in self.locals["infos"]:
                if "episode" in info:
                    self.returns.append(info["episode"]["r"])
            if self.solved is None and len(self.returns) == 100 and \
                    np.mean(self.returns) >= 475:
                self.solved = (self.num_timesteps, time.perf_counter() - t0)
                return False
            return True

    env = make_vec_env("CartPole-v1", n_envs=4, seed=seed)
    t0 = time.perf_counter()
    model = PPO("MlpPolicy", env, n_steps=128, batch_size=128, n_epochs=4, learning_rate=2.5e-4,
                ent_coef=0.01, clip_range=0.2, gae_lambda=0.95, gamma=0.99, seed=seed,
                device=device, verbose=0)
    stop = Stop()
    model.learn(total_timesteps=steps, callback=stop)
    wall = time.perf_counter() - t0
    return {"steps": model.num_timesteps, "sps": model.num_timesteps / wall,
            "solved": stop.solved, "python_share": None}


def run_cleanrl(script, pythonpath, steps, seed, timeout):
    """CleanRL's ppo.py (its own file, not in this repository: bench/README.md says which commit
    ran) as a subprocess on the CPU; the episodes it prints are timed as they arrive."""
    import os
    import re
    import subprocess
    env = dict(os.environ, PYTHONPATH=pythonpath)
    cmd = [sys.executable, script, "--env-id", "CartPole-v1", "--total-timesteps", str(steps),
           "--seed", str(seed), "--no-cuda", "--no-track"]
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=env, cwd="/tmp")
    returns = collections.deque(maxlen=100)
    step, solved, last = 0, None, ""
    for line in p.stdout:
        last = line
        m = re.match(r"global_step=(\d+), episodic_return=\[?([-0-9.e]+)", line)
        if m:
            step = int(m.group(1))
            returns.append(float(m.group(2)))
            if solved is None and len(returns) == 100 and np.mean(returns) >= 475:
                solved = (step, time.perf_counter() - t0)
                p.kill()
                break
        if time.perf_counter() - t0 > timeout:
            p.kill()
            break
    p.wait()
    wall = time.perf_counter() - t0
    if step == 0:
        raise RuntimeError("CleanRL's ppo.py printed no episode; its last line: " + last)
    return {"steps": step, "sps": step / wall, "solved": solved, "python_share": None}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cleanrl", help="CleanRL's ppo.py, run beside the others when given")
    ap.add_argument("--cleanrl-pythonpath", default="",
                    help="its PYTHONPATH (gymnasium 0.29.1, which ppo.py is written for, and tyro)")
    ap.add_argument("--cleanrl-timeout", type=float, default=300)
    ap.add_argument("--steps", type=int, default=500_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--sb3-device", default="cpu")
    a = ap.parse_args()
    rows = [("cudarl (Python env path)", run_cudarl(a.steps, a.seed, a.device)),
            ("Stable-Baselines3 PPO", run_sb3(a.steps, a.seed, a.sb3_device))]
    if a.cleanrl:
        rows.append(("CleanRL ppo.py", run_cleanrl(a.cleanrl, a.cleanrl_pythonpath, a.steps,
                                                   a.seed, a.cleanrl_timeout)))
    print("PPO on Gymnasium's CartPole-v1 (Python env), seed %d, up to %d steps, gymnasium %s"
          % (a.seed, a.steps, gymnasium.__version__))
    print("| run | env steps | steps/s | solved at step | seconds to solve | Python stepping |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, r in rows:
        s = r["solved"]
        print("| %s | %d | %.0f | %s | %s | %s |" % (
            name, r["steps"], r["sps"], s[0] if s else "-", "%.1f" % s[1] if s else "-",
            "%.0f%%" % (100 * r["python_share"]) if r["python_share"] is not None else "-"))
    for name, r in rows[1:]:
        print("steps/s ratio cudarl / %s: %.2f" % (name, rows[0][1]["sps"] / r["sps"]))


if __name__ == "__main__":
    main()
