#!/usr/bin/env python3
"""Golden reference for one PPO update of a convolutional policy (--policy minatar-cnn).

CleanRL ppo_atari.py's Agent with MinAtar's network for MinAtar/Breakout-v1's observations
(4 x 10 x 10 uint8 0/1 channels, fed as floats, not divided by 255; 3 actions):

    network = Sequential(Conv2d(4, 16, 3, 1), ReLU, Flatten, Linear(1024, 128), ReLU)
    actor = Linear(128, 3)            critic = Linear(128, 1)

in float32 on the CPU with PyTorch: one PPO minibatch update exactly as ppo_atari.py's loop body
does it (the loss of golden_ppo.py's ppo_losses, which is ppo.py's and ppo_atari.py's
alike), raw gradients, clip_grad_norm_, Adam step 1, then a second forward/backward/clip/Adam
step on the same minibatch. tests/golden/test_ppo_conv_golden.c runs the same update through the
trainer's own cr_ppo_update_minibatch (its conv branch: the uint8 row gather, cr_convnet's
forward and backward, the loss, the clip and Adam) and compares.

    python3 tests/golden/golden_ppo_conv.py --out tests/golden/ppo_conv_golden.safetensors

Needs torch, numpy and safetensors; no GPU. Tensor names (NAME: a state_dict name, one of
network.0.weight, network.0.bias, network.3.weight, network.3.bias, actor.weight, actor.bias,
critic.weight, critic.bias):

  params.NAME               initial parameters (CleanRL's layer_init with the actor's gain 1
                            instead of 0.01, so probabilities move off uniform, and N(0, 0.05)
                            noise on every bias, so the bias paths are exercised)
  mb.obs (B,4,10,10) u8, mb.actions (B,) i32, mb.logprobs/advantages/values/returns (B,) f32
  out.loss/pg_loss/v_loss/entropy/approx_kl/old_approx_kl/clipfrac/grad_norm  0-dim f32
  out.logits (B,3), out.newvalue (B,) f32
  grad.NAME                 raw gradients of out.loss (before clipping)
  step1.NAME                parameters after Adam step t=1
  step1.exp_avg.NAME, step1.exp_avg_sq.NAME   Adam's moments after step 1, for every tensor
                            but network.3.weight (131,072 values each: left out to keep the
                            file near 2 MB; its step-1 and step-2 values are stored)
  step2.NAME                parameters after Adam step t=2
  step2.loss, step2.grad_norm  0-dim f32

The observations are redrawn until every ReLU pre-activation of both forward passes is at least
MARGIN times its layer's largest away from 0, so rounding in another summation order cannot flip
a ReLU between torch and cudarl. The script asserts that every branch is used (ratios clipped on
both sides, clipped value losses chosen, gradient clipping at step 1) and prints a summary. The
tensors come out the same on every run; the order of the metadata keys may not.
"""

import argparse
import copy
import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))  # the golden file is written beside this script
sys.path.insert(0, HERE)
from golden_ppo import layer_init, ppo_losses  # noqa: E402  (CleanRL's, shared)

FORMAT = "cudarl-golden-ppo-conv"
VERSION = "1"
SEED = 4242
B = 64
C, H, W, A = 4, 10, 10, 3
DENSITY = 0.15            # fraction of lit cells in the 0/1 channels
MARGIN = 1e-5
BIG = "network.3.weight"  # no Adam moments stored for it

# CleanRL ppo_atari.py's defaults, and lr at its value (2.5e-4)
HP = dict(
    clip_coef=0.1,
    ent_coef=0.01,
    vf_coef=0.5,
    max_grad_norm=0.5,
    learning_rate=2.5e-4,
    adam_eps=1e-5,
    adam_beta1=0.9,
    adam_beta2=0.999,
    norm_adv=True,
    clip_vloss=True,
)

BIAS_NOISE_STD = 0.05
ACTOR_OUT_GAIN = 1.0
LOGPROB_NOISE_STD = 0.3
VALUE_NOISE_STD = 0.5
MIN_CLIPPED = 3


class MinAtarAgent(nn.Module):
    """ppo_atari.py's Agent with MinAtar's network; observations are 0/1, cast to float."""

    def __init__(self):
        super().__init__()
        self.network = nn.Sequential(
            layer_init(nn.Conv2d(C, 16, 3, stride=1)),
            nn.ReLU(),
            nn.Flatten(),
            layer_init(nn.Linear(16 * (H - 2) * (W - 2), 128)),
            nn.ReLU(),
        )
        self.actor = layer_init(nn.Linear(128, A), std=ACTOR_OUT_GAIN)
        self.critic = layer_init(nn.Linear(128, 1), std=1)

    def get_value(self, x):
        return self.critic(self.network(x.float()))

    def get_action_and_value(self, x, action=None):
        hidden = self.network(x.float())
        logits = self.actor(hidden)
        probs = torch.distributions.Categorical(logits=logits)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(hidden), logits


def relu_margin(agent, obs):
    """The smallest |pre-activation| / (its layer's largest) over the two ReLUs."""
    with torch.no_grad():
        x = obs.float()
        pre_conv = agent.network[0](x)
        pre_lin = agent.network[3](torch.relu(pre_conv).flatten(1))
        return min(float(p.abs().min() / p.abs().max()) for p in (pre_conv, pre_lin))


def snapshot(t):
    return t.detach().clone().contiguous()


def draw_minibatch(agent, rng):
    """Observations, actions and the rollout's numbers, built so every branch is used."""
    obs = torch.from_numpy((rng.random((B, C, H, W)) < DENSITY).astype(np.uint8))
    actions = rng.integers(0, A, size=B).astype(np.int32)
    logprob_noise = rng.normal(0.0, LOGPROB_NOISE_STD, size=B).astype(np.float32)
    advantages = rng.normal(0.5, 2.0, size=B).astype(np.float32)
    value_noise = rng.normal(0.0, VALUE_NOISE_STD, size=B).astype(np.float32)
    returns = rng.normal(0.0, 1.5, size=B).astype(np.float32)
    with torch.no_grad():
        _, logprob0, _, value0, _ = agent.get_action_and_value(obs, torch.from_numpy(actions).long())
    return (obs, actions, (logprob0 + torch.from_numpy(logprob_noise)).contiguous(),
            torch.from_numpy(advantages), (value0.view(-1) + torch.from_numpy(value_noise)).contiguous(),
            torch.from_numpy(returns))


def adam(agent, hp):
    return torch.optim.Adam(agent.parameters(), lr=hp["learning_rate"], eps=hp["adam_eps"],
                            betas=(hp["adam_beta1"], hp["adam_beta2"]))


def update(agent, optimizer, mb, hp):
    """One clipped Adam step on minibatch mb; ppo_losses' results and the pre-clip norm."""
    obs, actions, logprobs, advantages, values, returns = mb
    r = ppo_losses(agent, obs, torch.from_numpy(actions).long(), logprobs, advantages, values,
                   returns, hp)
    optimizer.zero_grad()
    r["loss"].backward()
    grads = {name: snapshot(p.grad) for name, p in agent.named_parameters()}
    norm = nn.utils.clip_grad_norm_(agent.parameters(), hp["max_grad_norm"])
    optimizer.step()
    return r, grads, norm


def margin_after_step(agent, mb, hp):
    """relu_margin of the second forward: after one update on a copy of agent."""
    trial = copy.deepcopy(agent)
    update(trial, adam(trial, hp), mb, hp)
    return relu_margin(trial, mb[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "ppo_conv_golden.safetensors"),
                    help="output safetensors file (default: %(default)s)")
    args = ap.parse_args()

    torch.set_default_dtype(torch.float32)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    rng = np.random.default_rng(SEED)
    hp = HP

    agent = MinAtarAgent()
    with torch.no_grad():
        for name, p in agent.named_parameters():
            if name.endswith(".bias"):
                p.add_(torch.randn(p.shape, dtype=torch.float32) * BIAS_NOISE_STD)
    names = [name for name, _ in agent.named_parameters()]
    assert names == list(agent.state_dict().keys()) and len(names) == 8 and BIG in names, names
    init = {name: snapshot(p) for name, p in agent.named_parameters()}

    # ---- the minibatch: a margin at every ReLU of both passes ----------------------------------
    for attempt in range(100000):
        mb = draw_minibatch(agent, rng)
        margin1, margin2 = relu_margin(agent, mb[0]), 0.0
        if margin1 >= MARGIN:
            margin2 = margin_after_step(agent, mb, hp)
            if margin2 >= MARGIN:
                break
    else:
        raise SystemExit("no minibatch with a ReLU margin in both passes found")
    obs, actions_np, mb_logprobs, mb_advantages, mb_values, mb_returns = mb
    actions = torch.from_numpy(actions_np).long()

    tensors = {"params." + k: v for k, v in init.items()}
    tensors["mb.obs"] = snapshot(obs)
    tensors["mb.actions"] = torch.from_numpy(actions_np)
    tensors["mb.logprobs"] = snapshot(mb_logprobs)
    tensors["mb.advantages"] = snapshot(mb_advantages)
    tensors["mb.values"] = snapshot(mb_values)
    tensors["mb.returns"] = snapshot(mb_returns)

    optimizer = adam(agent, hp)
    scalar = lambda x: snapshot(torch.as_tensor(float(x), dtype=torch.float32).reshape(()))

    # ---- step 1 -----------------------------------------------------------------------------
    r, grads, grad_norm = update(agent, optimizer, mb, hp)
    for name, p in agent.named_parameters():
        tensors["grad." + name] = grads[name]
        tensors["step1." + name] = snapshot(p)
        if name != BIG:
            st = optimizer.state[p]
            tensors["step1.exp_avg." + name] = snapshot(st["exp_avg"])
            tensors["step1.exp_avg_sq." + name] = snapshot(st["exp_avg_sq"])
    for key in ("loss", "pg_loss", "v_loss", "approx_kl", "old_approx_kl", "clipfrac"):
        tensors["out." + key] = scalar(r[key].detach())
    tensors["out.entropy"] = scalar(r["entropy_loss"].detach())
    tensors["out.grad_norm"] = scalar(grad_norm)
    tensors["out.logits"] = snapshot(r["logits"])
    tensors["out.newvalue"] = snapshot(r["newvalue"])
    assert relu_margin(agent, obs) == margin2

    # ---- step 2 (same minibatch, Adam t=2) ----------------------------------------------------
    r2, _, grad_norm2 = update(agent, optimizer, mb, hp)
    for name, p in agent.named_parameters():
        tensors["step2." + name] = snapshot(p)
        assert float(optimizer.state[p]["step"]) == 2.0
    tensors["step2.loss"] = scalar(r2["loss"].detach())
    tensors["step2.grad_norm"] = scalar(grad_norm2)

    # ---- which branches does this file exercise? ----------------------------------------------
    c = hp["clip_coef"]
    with torch.no_grad():
        ratio, adv_n = r["ratio"].detach(), r["adv_normalized"].detach()
        low_active = (ratio < 1 - c) & (adv_n < 0)
        high_active = (ratio > 1 + c) & (adv_n > 0)
        unclipped = ((ratio - 1).abs() <= c).sum()
        v_clip_chosen = ((r["newvalue"].detach() - mb_values).abs() > c) & \
            (r["v_loss_clipped"].detach() > r["v_loss_unclipped"].detach())
    n = lambda m: int(m.sum())
    print("PPO conv (minatar-cnn, ppo_atari.py) B=%d: %d observations drawn for the ReLU margin "
          "(%.2g; after step 1: %.2g)" % (B, attempt + 1, margin1, margin2))
    print("  loss=%.6f pg_loss=%.6f v_loss=%.6f entropy=%.6f clipfrac=%.4f grad_norm=%.6f"
          % (float(r["loss"].detach()), float(r["pg_loss"].detach()),
             float(r["v_loss"].detach()), float(r["entropy_loss"].detach()),
             float(r["clipfrac"]), float(grad_norm)))
    print("  ratio clipped and chosen: low %d, high %d; unclipped %d; clipped value loss chosen "
          "%d; step 2: loss=%.6f grad_norm=%.6f" % (n(low_active), n(high_active),
                                                     int(unclipped), n(v_clip_chosen),
                                                     float(r2["loss"].detach()),
                                                     float(grad_norm2)))
    assert n(low_active) >= MIN_CLIPPED and n(high_active) >= MIN_CLIPPED, "change noise/seed"
    assert int(unclipped) >= MIN_CLIPPED, "too few unclipped ratios"
    assert MIN_CLIPPED <= n(v_clip_chosen) <= B - MIN_CLIPPED, "value clipping not exercised"
    assert float(grad_norm) > hp["max_grad_norm"], "gradient clipping would not engage (step 1)"
    assert margin2 >= MARGIN, "a ReLU of step 2's forward is at its kink: change the seed"
    for k, v in tensors.items():
        assert torch.isfinite(v.double()).all(), k

    metadata = {"format": FORMAT, "version": VERSION, "torch": torch.__version__,
                "numpy": np.__version__, "seed": str(SEED), "B": str(B), "policy": "minatar-cnn",
                "env_id": "MinAtar/Breakout-v1",
                "state_dict": json.dumps([[k, list(v.shape)] for k, v in init.items()])}
    for k, v in hp.items():
        metadata[k] = ("true" if v else "false") if isinstance(v, bool) else repr(float(v))
    tensors = {k: v.contiguous() for k, v in sorted(tensors.items())}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    tmp = args.out + ".tmp"
    save_file(tensors, tmp, metadata=metadata)
    os.replace(tmp, args.out)
    total = sum(v.numel() * v.element_size() for v in tensors.values())
    print("wrote %s: %d tensors, %d bytes of data, torch %s"
          % (args.out, len(tensors), total, torch.__version__))
    return 0


if __name__ == "__main__":
    sys.exit(main())
