"""Continuous (Box) actions from Python: a Gymnasium env of Box actions trains through the
Python-env path (actions reach it clipped into its box), its checkpoint serves float actions
through Policy, and bad Box spaces are refused with the fix."""
import gymnasium
import numpy as np
import pytest

import cudarl


class Reach(gymnasium.Env):
    """Two targets in [-1, 1] drawn at reset and observed; reward -(a - target)^2 summed; 8 steps."""
    observation_space = gymnasium.spaces.Box(-1, 1, (2,), np.float32)
    action_space = gymnasium.spaces.Box(-2, 2, (2,), np.float32)
    seen = []

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.target = 0, self.np_random.uniform(-1, 1, 2).astype(np.float32)
        return self.target.copy(), {}

    def step(self, action):
        a = np.asarray(action, np.float32)
        Reach.seen.append(a.copy())
        self.t += 1
        r = -float(np.sum((a - self.target) ** 2))
        return self.target.copy(), r, False, self.t >= 8, {}


def test_box_env_trains_and_serves(tmp_path):
    Reach.seen.clear()
    run = cudarl.train(env=Reach, device="cpu", seed=3, total_timesteps=102400, num_envs=4,
                       num_steps=512, runs_dir=str(tmp_path), quiet=True)
    assert run.final["charts/mean_return_100"] > -3.0, run.final
    seen = np.array(Reach.seen)
    assert seen.shape[1] == 2 and np.all(np.abs(seen) <= 2.0)  # clipped into the box
    pol = cudarl.Policy.load(run.checkpoint, device="cpu", max_batch=3)
    assert pol.info["action_dim"] == 2 and pol.info["action_low"] == [-2.0, -2.0]
    obs = np.array([[0.5, -0.5], [0.9, 0.1], [-0.9, -0.2]], np.float32)
    act, logits = pol.act(obs, logits=True)
    assert act.dtype == np.float32 and act.shape == (3, 2)
    assert np.array_equal(act, np.clip(logits, -2, 2))
    assert np.all(np.abs(act - obs) < 0.5), act
    one = pol.act(obs[0])
    assert one.shape == (2,) and np.array_equal(one, act[0])


class NaNReach(Reach):
    def step(self, action):
        obs, r, term, trunc, info = super().step(action)
        return obs, (float("nan") if self.t == 3 else r), term, trunc, info


def test_nan_from_user_env_refused(tmp_path):
    with pytest.raises(ValueError, match="non-finite reward"):
        cudarl.train(env=NaNReach, device="cpu", total_timesteps=4096, num_envs=2,
                     runs_dir=str(tmp_path), quiet=True)


def test_bad_box_refused():
    class Wide(Reach):
        action_space = gymnasium.spaces.Box(-np.inf, np.inf, (2,), np.float32)

    with pytest.raises(ValueError, match="finite bounds"):
        cudarl.train(env=Wide, device="cpu", total_timesteps=1024)
