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
    check_make_vec_pixels(torch)


def check_make_vec_pixels(torch):
    """make_vec of CartPolePixels-v1 on the GPU (its image twin, uint8 frames in device memory)
    steps as the CPU pool does: the same frames, rewards and flags, and the final frames of the
    envs that ended, random actions written by torch kernels (the batch waits for torch's
    stream before it steps)."""
    n = 64
    cpu = cudarl.make_vec("CartPolePixels-v1", n, device="cpu", seed=5)
    gpu = cudarl.make_vec("CartPolePixels-v1", n, device="cuda", array="dlpack", seed=5)
    oc, _ = cpu.reset()
    og = torch.from_dlpack(gpu.reset()[0])
    assert og.is_cuda and og.dtype == torch.uint8 and tuple(og.shape) == (n, 4, 84, 84)
    assert (og.cpu().numpy() == oc).all()
    act = torch.from_dlpack(gpu.actions_buffer)
    gen = torch.Generator(device="cuda").manual_seed(11)
    ended = 0
    for t in range(600):
        a = torch.randint(0, 2, (n,), device="cuda", generator=gen, dtype=torch.int32)
        act.copy_(a)  # queued on torch's stream: step() waits for it
        rg = gpu.step(gpu.actions_buffer)
        rc = cpu.step(a.cpu().numpy())
        for x, y in zip(rc[:4], rg[:4]):
            assert (torch.from_dlpack(y).cpu().numpy() == x).all(), t
        if "_final_obs" in rc[4]:
            m = rc[4]["_final_obs"]
            fg = torch.from_dlpack(rg[4]["final_obs"]).cpu().numpy()
            assert (fg[m] == rc[4]["final_obs"][m]).all(), t
            ended += int(m.sum())
    assert ended > 0
    print("make_vec on cuda: CartPolePixels-v1, 600 steps of %d envs equal to the CPU pool "
          "(%d episodes ended)" % (n, ended))


if __name__ == "__main__":
    sys.exit(main())
