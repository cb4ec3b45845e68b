"""cudarl.Policy against the C runtime: the same actions, values and logits as `cudarl eval`'s
runtime computes for the same checkpoint (the CLI's train writes one here), bad arguments
refused with ValueError naming the fix, the library's failures as cudarl.Error."""
import os
import subprocess
import sys

import numpy as np
import pytest

import cudarl


def cli():
    path = os.environ.get("CUDARL_TEST_CLI", "")
    if not path:
        pytest.skip("CUDARL_TEST_CLI (the cudarl binary of the same build) is not set")
    return path


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    subprocess.run([cli(), "train", "--device", "cpu", "--hidden", "16", "--num-envs", "4",
                    "--num-steps", "32", "--total-timesteps", "1024", "--runs-dir", str(runs),
                    "--run-name", "p", "--quiet"], check=True, capture_output=True)
    return str(runs / "p" / "model.safetensors")


def test_version_and_info():
    assert cudarl.__version__.count(".") == 2
    assert "cudarl" in cudarl.info()


def test_act_matches_shapes(checkpoint):
    with cudarl.Policy.load(checkpoint, device="cpu", max_batch=16) as p:
        info = p.info
        assert info["algo"] == "ppo" and info["obs_dim"] == 4 and info["num_actions"] == 2
        rng = np.random.default_rng(0)
        obs = rng.standard_normal((16, 4)).astype(np.float32)
        a, v, lg = p.act(obs, values=True, logits=True)
        assert a.shape == (16,) and a.dtype == np.int32
        assert v.shape == (16,) and lg.shape == (16, 2)
        # the action is the argmax of the logits, row by row, and one row gives the same
        assert (a == lg.argmax(axis=1)).all()
        for r in range(16):
            a1, v1, l1 = p.act(obs[r], values=True, logits=True)
            assert a1 == a[r] and v1 == v[r] and (l1 == lg[r]).all()
        # a non-contiguous or list input is the same data
        assert (p.act(np.asfortranarray(obs)) == a).all()
        assert p.act(np.array(obs[3].tolist(), np.float32)) == a[3]
        assert p.latency()["count"] >= 18


def test_bad_arguments(checkpoint):
    with pytest.raises(ValueError, match="device"):
        cudarl.Policy.load(checkpoint, device="tpu")
    with pytest.raises(ValueError, match="precision"):
        cudarl.Policy.load(checkpoint, precision="fp8")
    with pytest.raises(ValueError, match="max_batch"):
        cudarl.Policy.load(checkpoint, device="cpu", max_batch=0)
    with pytest.raises(cudarl.Error, match="CUDARL_ERR_IO"):
        cudarl.Policy.load(checkpoint + ".missing", device="cpu")
    with cudarl.Policy.load(checkpoint, device="cpu", max_batch=2) as p:
        with pytest.raises(ValueError, match="takes \\(n, 4\\)"):
            p.act(np.zeros((2, 5), np.float32))
        with pytest.raises(ValueError, match="float32"):
            p.act(np.zeros((2, 4), np.float64))
        with pytest.raises(ValueError, match="max_batch=2"):
            p.act(np.zeros((3, 4), np.float32))
        with pytest.raises(cudarl.Error, match="CUDARL_ERR_NUMERIC"):
            p.act(np.full((1, 4), np.nan, np.float32))


def test_closed_policy(checkpoint):
    p = cudarl.Policy.load(checkpoint, device="cpu")
    p.close()
    with pytest.raises(ValueError, match="closed"):
        p.act(np.zeros(4, np.float32))


class _Wrapped:
    """An array that only speaks DLPack (as a torch or JAX tensor does)."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def test_dlpack_round_trip(checkpoint):
    with cudarl.Policy.load(checkpoint, device="cpu", max_batch=8) as p:
        obs = np.random.default_rng(1).standard_normal((8, 4)).astype(np.float32)
        a, lg = p.act(obs, logits=True)
        a2, lg2 = p.act(_Wrapped(obs), logits=True)
        assert (a == a2).all() and (lg == lg2).all()
        assert p.act(_Wrapped(obs[2])) == a[2]
        with pytest.raises(ValueError, match="float32"):
            p.act(_Wrapped(obs.astype(np.float64)))
        with pytest.raises(ValueError, match="contiguous"):
            p.act(_Wrapped(np.asfortranarray(np.zeros((8, 4), np.float32))))
