"""cudarl.train: PPO from Python solves CartPole on the CPU, the callback sees CleanRL's names
and can stop the run, the stopped run resumes where it stopped, DQN runs and resumes, and bad
keywords are
refused with the library's (the CLI's) messages."""
import os

import pytest

import cudarl


@pytest.fixture()
def runs(tmp_path):
    return str(tmp_path)


def test_ppo_solves_cartpole(runs):
    rows = []
    run = cudarl.train(env="CartPole-v1", device="cpu", seed=1, quiet=True, runs_dir=runs,
                       callback=rows.append)
    assert run.final["mean_return_100"] >= 475, run.final
    assert os.path.exists(run.checkpoint) and not run.interrupted
    assert len(rows) == len(run.history) > 0
    for name in ("charts/episodic_return", "losses/value_loss", "losses/approx_kl",
                 "charts/SPS", "global_step", "iteration"):
        assert name in rows[-1]
    # the checkpoint serves
    with cudarl.Policy.load(run.checkpoint, device="cpu") as p:
        assert p.info["env_id"] == "CartPole-v1"


def test_callback_stops_and_resume_continues(runs):
    run = cudarl.train(env="CartPole-v1", device="cpu", quiet=True, runs_dir=runs,
                       callback=lambda m: m["iteration"] >= 3)
    assert run.interrupted and run.final["global_step"] == 3 * 16 * 64
    more = cudarl.train(resume=run.checkpoint, quiet=True,
                        total_timesteps=run.final["global_step"] + 2 * 16 * 64)
    assert os.path.realpath(more.path) == os.path.realpath(run.path)
    assert more.final["global_step"] == run.final["global_step"] + 2 * 16 * 64
    with pytest.raises(ValueError, match="cannot be changed with resume"):
        cudarl.train(resume=run.checkpoint, learning_rate=0.1)


def test_callback_exception_stops_and_raises(runs):
    def boom(m):
        raise KeyError("from the callback")

    with pytest.raises(KeyError, match="from the callback"):
        cudarl.train(env="CartPole-v1", device="cpu", quiet=True, runs_dir=runs, callback=boom)


def test_dqn_runs(runs):
    run = cudarl.train("dqn", env="CartPole-v1", device="cpu", quiet=True, runs_dir=runs,
                       total_timesteps=4000, learning_starts=1000)
    assert run.final["global_step"] == 4000 and os.path.exists(run.checkpoint)


def test_dqn_stops_and_resumes(runs):
    run = cudarl.train("dqn", env="CartPole-v1", device="cpu", quiet=True, runs_dir=runs,
                       total_timesteps=4000, learning_starts=1000,
                       callback=lambda m: m["global_step"] >= 2000)
    assert run.interrupted and 2000 <= run.final["global_step"] < 4000
    more = cudarl.train("dqn", resume=run.checkpoint, quiet=True)
    assert os.path.realpath(more.path) == os.path.realpath(run.path)
    assert more.final["global_step"] == 4000 and not more.interrupted
    with pytest.raises(ValueError, match="cannot be changed with resume"):
        cudarl.train("dqn", resume=run.checkpoint, gamma=0.5)


@pytest.mark.parametrize("kwargs, message", [
    ({"num_envs": 0}, "--num-envs must be between 1 and"),
    ({"learning_rate": "x"}, "--learning-rate takes a number"),
    ({"num_envz": 4}, "--num-envz is not a flag of cudarl train"),
    ({"device": "tpu"}, "--device 'tpu' is not a device"),
    ({"precision": "fp8"}, "--precision 'fp8' is not a precision"),
    ({"env": "Pong-v5"}, "Pong-v5"),
    ({"algo": "sac"}, "algo='sac' is not available"),
    ({"run_name": "../x"}, "run"),
])
def test_bad_keywords(runs, kwargs, message):
    kwargs = dict(kwargs)
    kwargs.setdefault("runs_dir", runs)
    with pytest.raises(ValueError, match=message):
        cudarl.train(**kwargs)
