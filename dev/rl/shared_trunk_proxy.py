#!/usr/bin/env python3
"""Is the shared trunk why PPO plateaus on CartPolePixels-v1? A CPU proxy, not part of the build.

dev/rl/quantized_cartpole.c showed that what 4 binary frames tell (the last 4 (x, theta), rounded
to the renderer's pixel, no velocities) is enough for PPO with separate actor and critic MLPs.
The pixel policy differs in two ways: it must learn its features (the conv trunk), and actor and
critic share them. This runs the same proxy observations through PPO (the pixel recipe:
32 envs x 128 steps, 16 minibatches, 4 epochs, lr 2.5e-4 annealed, clip 0.1, entropy 0.01, no
value clipping) with either separate 64-64 tanh MLPs (or 256-256 ReLU ones: separate-relu) or one shared 256-256 ReLU trunk and two
heads (or "detached": the critic head on the trunk's features without its gradient flowing into
the trunk), at a given value coefficient, and prints the curve of the mean return of the last 100
episodes and the final policy's greedy return.

  python3 dev/rl/shared_trunk_proxy.py --net shared --vf-coef 0.005 --steps 1500000 --seed 1
"""
import argparse
import time

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn

QX, QTHETA = 1.0 / 15, 1.0 / 30  # as quantized_cartpole.c's defaults


class Proxy(gym.Wrapper):
    """CartPole-v1 observed as the last 4 rounded (x, theta): 8 floats, oldest first."""

    def __init__(self, env):
        super().__init__(env)
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (8,), np.float32)
        self.hist = np.zeros(8, np.float32)

    def _push(self, s):
        self.hist[:6] = self.hist[2:]
        self.hist[6] = np.round(s[0] / QX) * QX
        self.hist[7] = np.round(s[2] / QTHETA) * QTHETA
        return self.hist.copy()

    def reset(self, **kw):
        s, info = self.env.reset(**kw)
        self.hist[:] = 0
        for _ in range(4):
            o = self._push(s)
        return o, info

    def step(self, a):
        s, r, term, trunc, info = self.env.step(a)
        return self._push(s), r, term, trunc, info


def make():
    return Proxy(gym.make("CartPole-v1"))


def layer(i, o, std=np.sqrt(2)):
    m = nn.Linear(i, o)
    nn.init.orthogonal_(m.weight, std)
    nn.init.constant_(m.bias, 0.0)
    return m


class Separate(nn.Module):
    def __init__(self, width=64, act=nn.Tanh):
        super().__init__()
        w = width
        self.critic = nn.Sequential(layer(8, w), act(), layer(w, w), act(), layer(w, 1, 1.0))
        self.actor = nn.Sequential(layer(8, w), act(), layer(w, w), act(), layer(w, 2, 0.01))

    def forward(self, x):
        return self.actor(x), self.critic(x).squeeze(-1)


class Shared(nn.Module):
    def __init__(self, detach=False):
        super().__init__()
        self.trunk = nn.Sequential(layer(8, 256), nn.ReLU(), layer(256, 256), nn.ReLU())
        self.actor, self.critic = layer(256, 2, 0.01), layer(256, 1, 1.0)
        self.detach = detach  # the value loss trains the critic head only, not the trunk

    def forward(self, x):
        h = self.trunk(x)
        return self.actor(h), self.critic(h.detach() if self.detach else h).squeeze(-1)


def greedy(net, episodes=100, seed=10_000):
    env = make()
    total = []
    for e in range(episodes):
        o, _ = env.reset(seed=seed + e)
        ret, done = 0.0, False
        while not done:
            with torch.no_grad():
                a = int(net(torch.as_tensor(o)[None])[0].argmax())
            o, r, term, trunc, _ = env.step(a)
            ret, done = ret + r, term or trunc
        total.append(ret)
    return float(np.mean(total))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--net", choices=["separate", "separate-relu", "shared", "detached"],
                    default="shared")
    ap.add_argument("--vf-coef", type=float, default=0.5)
    ap.add_argument("--steps", type=int, default=1_500_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lr", type=float, default=2.5e-4)
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    np.random.seed(a.seed)
    torch.set_num_threads(1)
    N, T, MB, EPOCHS, CLIP, ENT, GAMMA, LAM = 32, 128, 16, 4, 0.1, 0.01, 0.99, 0.95
    envs = gym.vector.SyncVectorEnv([make for _ in range(N)],
                                    autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    if a.net == "separate":
        net = Separate()
    elif a.net == "separate-relu":  # the shared trunk's shape, one per head
        net = Separate(256, nn.ReLU)
    else:
        net = Shared(detach=a.net == "detached")
    opt = torch.optim.Adam(net.parameters(), lr=a.lr, eps=1e-5)
    obs = torch.zeros(T, N, 8)
    act = torch.zeros(T, N, dtype=torch.long)
    logp = torch.zeros(T, N)
    rew = torch.zeros(T, N)
    done = torch.zeros(T, N)
    val = torch.zeros(T, N)
    o, _ = envs.reset(seed=a.seed)
    o = torch.as_tensor(o)
    d = torch.zeros(N)
    returns, ep_ret, curve, step, t0 = [], np.zeros(N), [], 0, time.time()
    iters = a.steps // (N * T)
    for it in range(iters):
        opt.param_groups[0]["lr"] = a.lr * (1.0 - it / iters)
        for t in range(T):
            obs[t], done[t] = o, d
            with torch.no_grad():
                logits, v = net(o)
                dist = torch.distributions.Categorical(logits=logits)
                x = dist.sample()
            act[t], logp[t], val[t] = x, dist.log_prob(x), v
            o2, r, term, trunc, info = envs.step(x.numpy())
            ep_ret += r
            ended = np.logical_or(term, trunc)
            for i in np.nonzero(ended)[0]:
                returns.append(ep_ret[i])
                ep_ret[i] = 0
            # truncation as termination, as CleanRL and cudarl's PPO
            rew[t] = torch.as_tensor(r, dtype=torch.float32)
            o, d = torch.as_tensor(o2), torch.as_tensor(ended, dtype=torch.float32)
        step += N * T
        with torch.no_grad():
            nv = net(o)[1]
            adv = torch.zeros(T, N)
            last = torch.zeros(N)
            for t in reversed(range(T)):
                nnt = 1.0 - (d if t == T - 1 else done[t + 1])
                nval = nv if t == T - 1 else val[t + 1]
                delta = rew[t] + GAMMA * nval * nnt - val[t]
                last = delta + GAMMA * LAM * nnt * last
                adv[t] = last
            ret = adv + val
        bo, ba, bl, badv, bret = (obs.reshape(-1, 8), act.reshape(-1), logp.reshape(-1),
                                  adv.reshape(-1), ret.reshape(-1))
        B = N * T
        for _ in range(EPOCHS):
            perm = torch.randperm(B)
            for s in range(0, B, B // MB):
                mb = perm[s:s + B // MB]
                logits, v = net(bo[mb])
                dist = torch.distributions.Categorical(logits=logits)
                ratio = (dist.log_prob(ba[mb]) - bl[mb]).exp()
                ad = badv[mb]
                ad = (ad - ad.mean()) / (ad.std() + 1e-8)
                pg = torch.max(-ad * ratio, -ad * ratio.clamp(1 - CLIP, 1 + CLIP)).mean()
                vl = 0.5 * ((v - bret[mb]) ** 2).mean()
                loss = pg - ENT * dist.entropy().mean() + a.vf_coef * vl
                opt.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(net.parameters(), 0.5)
                opt.step()
        m = float(np.mean(returns[-100:])) if returns else 0.0
        if it % max(iters // 12, 1) == 0 or it == iters - 1:
            curve.append(f"{step}:{m:.0f}")
        if len(returns) >= 100 and m >= 475:
            curve.append(f"solved at {step}")
            break
    print(f"{a.net} vf {a.vf_coef} seed {a.seed}: {' '.join(curve)}; greedy {greedy(net):.1f}; "
          f"{time.time() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
