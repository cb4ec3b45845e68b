"""The Python layer's overhead on Policy.act: a PPO CartPole policy (trained here for a few
iterations) on `--device`, batch 1, N calls from numpy (and from a torch tensor on the device
through DLPack where torch is there): microseconds per call in Python beside the C runtime's own
p50 (cudarl_policy_latency), and their difference.

  python3 bench/python_act.py --device cuda [--calls 20000]   (PYTHONPATH: the staged package)"""
import argparse
import tempfile
import time

import numpy as np

import cudarl


def per_call(f, calls):
    for _ in range(min(1000, calls)):
        f()
    t = time.perf_counter()
    for _ in range(calls):
        f()
    return (time.perf_counter() - t) / calls * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--calls", type=int, default=20000)
    a = ap.parse_args()
    runs = tempfile.mkdtemp(prefix="cudarl-pyact-")
    run = cudarl.train(env="CartPole-v1", device=a.device, quiet=True, runs_dir=runs,
                       total_timesteps=65536 if a.device == "cuda" else 4096)
    rows = []
    with cudarl.Policy.load(run.checkpoint, device=a.device, max_batch=1) as p:
        x = np.zeros((1, 4), np.float32)
        py = per_call(lambda: p.act(x), a.calls)
        c = p.latency()["p50_us"]
        rows.append(("numpy (1, 4) float32", py, c))
        try:
            import torch
            if a.device == "cuda":
                t = torch.zeros((1, 4), dtype=torch.float32, device="cuda")
                p2 = cudarl.Policy.load(run.checkpoint, device=a.device, max_batch=1)
                py = per_call(lambda: p2.act(t), a.calls)
                rows.append(("torch CUDA tensor, DLPack", py, p2.latency()["p50_us"]))
                p2.close()
        except ImportError:
            pass
    print("Policy.act at batch 1 on %s, %d calls: Python per call vs the C runtime's p50"
          % (a.device, a.calls))
    print("| input | Python us/call | C p50 us | Python layer us |")
    print("|---|---:|---:|---:|")
    for name, py, c in rows:
        print("| %s | %.2f | %.2f | %.2f |" % (name, py, c, py - c))


if __name__ == "__main__":
    main()
