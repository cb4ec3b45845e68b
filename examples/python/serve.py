"""Serve a trained policy from Python: load a checkpoint with the C policy runtime (a CUDA graph
per batch size on a GPU), act on batches of observations, read the latency percentiles.

    python3 examples/python/serve.py runs/<run>/model.safetensors [--device auto] [--batch 64]"""
import argparse

import numpy as np

import cudarl


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("checkpoint")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--calls", type=int, default=1000)
    a = ap.parse_args()
    with cudarl.Policy.load(a.checkpoint, device=a.device, max_batch=a.batch) as policy:
        info = policy.info
        print("%s policy for %s on %s: %d inputs, %d actions" % (
            info["algo"], info["env_id"], info["device"], info["obs_dim"], info["num_actions"]))
        dtype = np.uint8 if info["obs_dtype"] == "uint8" else np.float32
        obs = np.zeros((a.batch, info["obs_dim"]), dtype)
        for _ in range(a.calls):
            actions = policy.act(obs)
        print("actions of the last batch:", actions[:8], "...")
        lat = policy.latency()
        print("act(): %d calls, p50 %.1f us, p99 %.1f us, max %.1f us" % (
            lat["count"], lat["p50_us"], lat["p99_us"], lat["max_us"]))


if __name__ == "__main__":
    main()
