"""Your own learner in torch over cudarl's envs on the GPU: make_vec's batch lives in device
memory, torch reads the observations and writes the actions through DLPack, nothing is copied.
Here a random policy, timed; put your network where the actions are drawn.

    python3 examples/python/torch_make_vec.py [--envs 65536] [--steps 1000]   (a GPU, torch)"""
import argparse
import time

import torch

import cudarl


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--envs", type=int, default=65536)
    ap.add_argument("--steps", type=int, default=1000)
    a = ap.parse_args()
    env = cudarl.make_vec("CartPole-v1", a.envs, device="cuda", array="dlpack", seed=1)
    obs = torch.from_dlpack(env.reset()[0])                  # (N, 4) float32, live
    actions = torch.from_dlpack(env.actions_buffer)          # (N,) int32, the batch's own
    returns = torch.zeros(a.envs, device="cuda")
    finished = []
    t = time.perf_counter()
    for _ in range(a.steps):
        actions.copy_((obs[:, 2] > 0).to(torch.int32))       # lean towards the pole's side
        _, reward, terminated, truncated, _ = env.step(env.actions_buffer)
        returns += torch.from_dlpack(reward)
        done = torch.from_dlpack(terminated) | torch.from_dlpack(truncated)
        finished.append(returns[done].clone())
        returns[done] = 0
    torch.cuda.synchronize()
    dt = time.perf_counter() - t
    ended = torch.cat(finished)
    print("%d envs x %d steps in %.2f s: %.1fM env steps/s; %d episodes, mean return %.1f" % (
        a.envs, a.steps, dt, a.envs * a.steps / dt / 1e6, ended.numel(),
        ended.mean().item() if ended.numel() else float("nan")))
    env.close()


if __name__ == "__main__":
    main()
