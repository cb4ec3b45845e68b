"""Your own gymnasium.Env class, trained by cudarl: a corridor where the agent must walk right,
with a time limit. Any class with Box observations and Discrete actions works the same way.

    python3 examples/python/custom_env.py [--steps 30000]"""
import argparse

import gymnasium
import numpy as np

import cudarl


class Corridor(gymnasium.Env):
    """Cells 0..7; action 1 steps right, 0 left; reward 1 on reaching cell 7; 50 steps at most."""

    observation_space = gymnasium.spaces.Box(0.0, 1.0, (8,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def _obs(self):
        o = np.zeros(8, np.float32)
        o[self.pos] = 1.0
        return o

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.pos, self.t = 0, 0
        return self._obs(), {}

    def step(self, action):
        self.pos = min(self.pos + 1, 7) if action == 1 else max(self.pos - 1, 0)
        self.t += 1
        done = self.pos == 7
        return self._obs(), float(done), done, self.t >= 50, {}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30_000)
    ap.add_argument("--runs-dir", default="runs")
    a = ap.parse_args()
    run = cudarl.train(env=Corridor, num_envs=8, total_timesteps=a.steps, learning_rate=2.5e-3,
                       quiet=True, runs_dir=a.runs_dir)
    print("mean return of the last 100 episodes: %.2f" % run.final["mean_return_100"])
    with cudarl.Policy.load(run.checkpoint, device="cpu") as policy:
        env = Corridor()
        obs, _ = env.reset(seed=0)
        for t in range(50):
            obs, r, term, trunc, _ = env.step(int(policy.act(obs)))
            if term or trunc:
                break
        print("greedy episode: %s after %d steps" % ("reached the end" if term else "timed out",
                                                     t + 1))


if __name__ == "__main__":
    main()
