"""cudarl.make_vec: cudarl's CartPole as a Gymnasium VectorEnv steps as Gymnasium's own CartPole
from the same state (each env's episode replayed in gymnasium.make("CartPole-v1") from the
state cudarl reset it to: same observations to float32 rounding, same rewards and ends), resets
in the same step (final_obs), and its DLPack views are the numpy path's arrays without a copy."""
import gymnasium
import numpy as np
import pytest

import cudarl


def test_cartpole_matches_gymnasium():
    n = 6
    env = cudarl.make_vec("CartPole-v1", n, device="cpu", seed=11, threads=2)
    obs, _ = env.reset()
    rng = np.random.default_rng(0)
    refs = []
    for i in range(n):
        g = gymnasium.make("CartPole-v1").unwrapped
        g.reset(seed=0)
        g.state = obs[i].astype(np.float64)
        refs.append(g)
    ended_seen = 0
    for t in range(300):
        a = rng.integers(0, 2, n).astype(np.int32)
        obs, rew, term, trunc, info = env.step(a)
        for i in range(n):
            if refs[i] is None:
                continue
            o, r, te, tr, _ = refs[i].step(int(a[i]))
            got = info["final_obs"][i] if (term[i] or trunc[i]) else obs[i]
            np.testing.assert_allclose(got, np.asarray(o, np.float32), rtol=0, atol=1e-6)
            assert rew[i] == r and bool(term[i]) == te
            if te:
                ended_seen += 1
                refs[i] = None  # its next episode starts from cudarl's own reset
    assert ended_seen >= 1
    env.close()


def test_dlpack_views_and_spaces():
    a = cudarl.make_vec("CartPole-v1", 4, seed=5)
    b = cudarl.make_vec("CartPole-v1", 4, seed=5, array="dlpack")
    oa, _ = a.reset()
    ob, _ = b.reset()
    assert (np.from_dlpack(ob) == oa).all()
    acts = np.array([0, 1, 1, 0], np.int32)
    ra = a.step(acts)
    rb = b.step(acts)
    for x, y in zip(ra[:4], rb[:4]):
        assert (np.from_dlpack(y) == x).all()
    assert a.single_action_space.n == 2 and a.observation_space.shape == (4, 4)
    m = cudarl.make_vec("MinAtar/Breakout-v1", 2)
    assert m.reset()[0].dtype == np.uint8
    for e in (a, b, m):
        e.close()


def test_refusals():
    with pytest.raises(ValueError, match="no env 'Nope-v0'"):
        cudarl.make_vec("Nope-v0", 2)
    with pytest.raises(ValueError, match="num_envs"):
        cudarl.make_vec("CartPole-v1", 0)
    with pytest.raises(ValueError, match="device='tpu': use 'cpu' or 'cuda'"):
        cudarl.make_vec("CartPole-v1", 2, device="tpu")
    with pytest.raises(ValueError, match="array='list': use 'numpy' or 'dlpack'"):
        cudarl.make_vec("CartPole-v1", 2, array="list")
    with pytest.raises(ValueError, match="threads is 2000"):
        cudarl.make_vec("CartPole-v1", 2, threads=2000)
    e = cudarl.make_vec("CartPole-v1", 2)
    e.reset()
    with pytest.raises(ValueError, match="outside 0 .. 1"):
        e.step(np.array([0, 5], np.int32))
    with pytest.raises(ValueError, match="shape"):
        e.step(np.zeros(3, np.int32))
    e.close()


def test_continuous_env_box_actions():
    env = cudarl.make_vec("Pendulum-v1", num_envs=3, device="cpu")
    try:
        assert isinstance(env.single_action_space, gymnasium.spaces.Box)
        assert env.single_action_space.shape == (1,)
        assert env.single_action_space.low[0] == -2.0 and env.single_action_space.high[0] == 2.0
        obs, _ = env.reset(seed=5)
        assert obs.shape == (3, 3)
        obs, rew, term, trunc, _ = env.step(np.array([[0.5], [-7.0], [2.0]], np.float32))
        # -7 is clipped to -2 before the env sees it: Pendulum's reward counts 0.001 u^2 of the
        # clipped torque, so the reward stays within Pendulum's range
        assert rew.shape == (3,) and np.all(rew <= 0) and np.all(rew >= -16.3)
        with pytest.raises(ValueError, match="shape"):
            env.step(np.zeros(3, np.float32))
        with pytest.raises(ValueError, match="NaN"):
            env.step(np.array([[0.0], [np.nan], [0.0]], np.float32))
    finally:
        env.close()
