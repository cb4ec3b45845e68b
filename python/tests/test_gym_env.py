"""Training on Gymnasium envs stepped in Python: Gymnasium's own Acrobot-v1 reaches its
reward threshold, a gymnasium.Env class of the test's own trains through a callable, a
VectorEnv in same-step autoreset is taken as it is and one in Gymnasium's default mode refused,
spaces cudarl cannot train refused, and an exception inside the env's step stops the run and is
raised."""
import gymnasium
import numpy as np
import pytest

import cudarl


class Corridor(gymnasium.Env):
    """Walk right along 6 cells (action 1), reward 1 at the end; 30 steps at most."""

    observation_space = gymnasium.spaces.Box(0, 5, (1,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.pos, self.t = 0, 0
        return np.array([0.0], np.float32), {}

    def step(self, action):
        self.pos = min(self.pos + 1, 5) if action == 1 else max(self.pos - 1, 0)
        self.t += 1
        done = self.pos == 5
        return (np.array([self.pos], np.float32), 1.0 if done else 0.0, done, self.t >= 30,
                {})


def test_acrobot_reaches_its_threshold(tmp_path):
    run = cudarl.train(env="gym:Acrobot-v1", device="cpu", quiet=True, seed=1,
                       runs_dir=str(tmp_path))
    assert run.final["mean_return_100"] >= -100, run.final
    assert run.final["global_step"] >= 500_000 - 512


def test_custom_env_class_trains(tmp_path):
    run = cudarl.train(env=Corridor, device="cpu", quiet=True, runs_dir=str(tmp_path),
                       total_timesteps=20_000, learning_rate=2.5e-3)
    assert run.final["mean_return_100"] > 0.9, run.final
    with cudarl.Policy.load(run.checkpoint, device="cpu") as p:
        assert p.act(np.array([2.0], np.float32)) == 1


def test_vector_env_modes(tmp_path):
    same = gymnasium.vector.SyncVectorEnv(
        [Corridor] * 3, autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP)
    run = cudarl.train(env=same, device="cpu", quiet=True, runs_dir=str(tmp_path),
                       total_timesteps=3 * 128 * 2)
    assert run.final["global_step"] == 3 * 128 * 2
    nxt = gymnasium.vector.SyncVectorEnv([Corridor] * 2)
    with pytest.raises(ValueError, match="SAME_STEP"):
        cudarl.train(env=nxt, device="cpu", runs_dir=str(tmp_path))
    with pytest.raises(ValueError, match="vector env of 3 envs; use --num-envs 3"):
        cudarl.train(env=same, device="cpu", runs_dir=str(tmp_path), num_envs=4)


class MultiCorridor(Corridor):
    action_space = gymnasium.spaces.MultiDiscrete([2, 2])


def test_spaces_refused(tmp_path):
    with pytest.raises(ValueError, match="Discrete actions"):
        cudarl.train(env=MultiCorridor, device="cpu", runs_dir=str(tmp_path))
    with pytest.raises(ValueError, match="neither a cudarl env"):
        cudarl.train(env="NoSuchEnv-v9", device="cpu", runs_dir=str(tmp_path))


class Broken(Corridor):
    def step(self, action):
        if getattr(self, "t", 0) >= 3:
            raise RuntimeError("the env broke")
        return super().step(action)


def test_env_exception_stops_the_run(tmp_path):
    with pytest.raises(RuntimeError, match="the env broke"):
        cudarl.train(env=Broken, device="cpu", quiet=True, runs_dir=str(tmp_path))


def test_async_vectorization(tmp_path):
    run = cudarl.train(env=Corridor, vectorization="async", num_envs=2, device="cpu",
                       quiet=True, runs_dir=str(tmp_path), total_timesteps=2 * 128 * 2)
    assert run.final["global_step"] == 2 * 128 * 2
    with pytest.raises(ValueError, match="vectorization"):
        cudarl.train(env=Corridor, vectorization="threads", device="cpu",
                     runs_dir=str(tmp_path))
