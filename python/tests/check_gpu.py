"""The Python package on a GPU (ctest test_python_gpu, label gpu; run by scripts/gpu-check.sh
with the package staged beside the build's libcudarl.so): PPO trained from Python on CUDA, its
policy served on CUDA from numpy and from a torch CUDA tensor through DLPack (no copy) with the
same actions as the CPU runtime and logits within fp32 rounding, and the errors of a device array
handed to a CPU policy. Exits non-zero on the first wrong value."""
import os
import sys
import tempfile

import numpy as np

import cudarl


def main():
    if cudarl.cuda_device_count() < 1:
        print("check_gpu: no GPU (this test needs one)")
        return 1
    runs = tempfile.mkdtemp(prefix="cudarl-pygpu-")
    run = cudarl.train(env="CartPole-v1", device="cuda", quiet=True, runs_dir=runs,
                       total_timesteps=300_000)
    print("trained on cuda:", run)
    # whole iterations of 1,024 envs x 16 steps: 18 of them fit in 300,000 steps
    assert run.final["global_step"] == 300_000 // 16384 * 16384, run.final["global_step"]
    obs = np.random.default_rng(0).standard_normal((64, 4)).astype(np.float32)
    with cudarl.Policy.load(run.checkpoint, device="cpu", max_batch=64) as cpu, \
            cudarl.Policy.load(run.checkpoint, device="cuda", max_batch=64) as gpu:
        assert gpu.info["device"] == "cuda"
        a_c, l_c = cpu.act(obs, logits=True)
        a_g, l_g = gpu.act(obs, logits=True)
        tol = 1e-4 * (1 + np.abs(l_c).max())
        assert np.abs(l_c - l_g).max() <= tol, np.abs(l_c - l_g).max()
        close = np.abs(l_c[:, 0] - l_c[:, 1]) > 2 * tol  # argmax decided beyond rounding
        assert (a_c[close] == a_g[close]).all()
        try:
            import torch
        except ImportError:
            print("check_gpu: torch missing: the DLPack case is not run")
            torch = None
        if torch is not None:
            t = torch.from_numpy(obs).cuda()
            a_t, l_t = gpu.act(t, logits=True)
            assert (a_t == a_g).all() and (l_t == l_g).all()
            try:
                cpu.act(t)
                raise AssertionError("a CPU policy took a CUDA tensor")
            except ValueError as e:
                assert "device='cuda'" in str(e), e
        print("policy on cuda: numpy and DLPack agree with the CPU runtime")
    if torch is not None:
        check_make_vec(torch)
    return 0


def check_make_vec(torch):
    """make_vec on the GPU (CartPole's CUDA twin, DLPack views) steps as the CPU batch does."""
    n = 257
    cpu = cudarl.make_vec("CartPole-v1", n, device="cpu", seed=7)
    gpu = cudarl.make_vec("CartPole-v1", n, device="cuda", array="dlpack", seed=7)
    oc, _ = cpu.reset()
    og = torch.from_dlpack(gpu.reset()[0])
    assert og.is_cuda and (og.cpu().numpy() == oc).all()
    rng = np.random.default_rng(3)
    act = torch.from_dlpack(gpu.actions_buffer)
    for t in range(600):
        a = rng.integers(0, 2, n).astype(np.int32)
        rc = cpu.step(a)
        act.copy_(torch.from_numpy(a))
        rg = gpu.step(gpu.actions_buffer)
        for x, y in zip(rc[:4], rg[:4]):
            assert (torch.from_dlpack(y).cpu().numpy() == x).all(), t
    print("make_vec on cuda: 600 steps of 257 envs equal to the CPU batch")


if __name__ == "__main__":
    sys.exit(main())
