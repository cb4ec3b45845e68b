#!/usr/bin/env python3
"""Golden reference for the PPO loss of CleanRL's ppo_continuous_action.py (Gaussian policy).

Computes, in float32 on the CPU with PyTorch, CleanRL's continuous Agent (actor_mean and critic
MLPs 17 -> 64 -> 64 -> out with tanh, a state-independent actor_logstd) on one fixed minibatch
(B=64, K=6 action dimensions, HalfCheetah's shapes):

  the loss of ppo_continuous_action.py's update body: Normal(action_mean, exp(actor_logstd)),
  log_prob(action).sum(1), entropy().sum(1), the clipped surrogate on the normalised
  advantages, the clipped value loss, loss = pg_loss - ent_coef * entropy + vf_coef * v_loss;
  its statistics (CleanRL's names) and, by autograd, its gradients with respect to the op's
  inputs: the action means (B,K), actor_logstd (K) and the values (B).

in two variants: "clip" (norm_adv and clip_vloss, CleanRL's defaults) and "plain" (neither).
Also Box-Muller sampling (cudarl's cr_box_muller: sqrt(-2 log(1 - u1)) cos(2 pi u2)) written
with torch's float32 ops, and Normal.log_prob of the draws. Everything goes to one small
safetensors file that tests/golden/test_ppo_gaussian_golden.c reproduces with the CPU ops.

    python3 tests/golden/golden_ppo_gaussian.py --out tests/golden/ppo_gaussian_golden.safetensors

Needs torch, numpy and safetensors; no GPU. Tensor names (all float32):

  mb.mean (B,K)       the actor's action_mean on the minibatch's observations
  mb.logstd (K)       actor_logstd
  mb.action (B,K)     the stored actions (drawn from a nearby policy)
  mb.logprobs, mb.advantages, mb.values, mb.returns (B)   the rollout's (CleanRL's b_*)
  mb.newvalue (B)     the critic's value on the minibatch's observations
  out.newlogprob (B)  log_prob(action).sum(1) under the current policy
  out.V.loss / pg_loss / v_loss / entropy / old_approx_kl / approx_kl / clipfrac  0-dim
  grad.V.mean (B,K), grad.V.logstd (K), grad.V.value (B)   d out.V.loss / d input
  sample.u (B,2K)     uniforms in [0, 1): element j of (B,K) uses u[2j], u[2j+1]
  sample.action (B,K), sample.logp (B)   mb.mean + exp(mb.logstd) z, and its log-prob

for V in "clip" and "plain". Conventions (PyTorch's / CleanRL's): the advantage normalisation
uses the unbiased std, + 1e-8; clamp passes the gradient at its bounds and max splits it on a
tie (the minibatch keeps every ratio and value difference 1e-3 away from those kinks).
"""

import argparse
import math
import os

import numpy as np
import torch
import torch.nn as nn
from safetensors.torch import save_file
from torch.distributions.normal import Normal

HERE = os.path.dirname(os.path.abspath(__file__))  # the golden file is written beside this script

FORMAT = "cudarl-golden-ppo-gaussian"
VERSION = "1"
SEED = 4321

OBS_DIM, K, B = 17, 6, 64

# CleanRL ppo_continuous_action.py's defaults, except ent_coef: its default is 0.0, which would
# leave the entropy's gradient untested.
HP = dict(clip_coef=0.2, ent_coef=0.01, vf_coef=0.5)
VARIANTS = {"clip": dict(norm_adv=True, clip_vloss=True),
            "plain": dict(norm_adv=False, clip_vloss=False)}

ACTOR_OUT_GAIN = 1.0    # CleanRL uses 0.01; 1.0 spreads the means over about [-1, 1]
LOGSTD_MEAN, LOGSTD_STD = -0.5, 0.3  # actor_logstd starts at 0 in CleanRL; spread it out
ACTION_NOISE_STD = 0.2  # the stored actions come from a policy this far from the current one
LOGPROB_NOISE_STD = 0.3  # ratios straddle 1 +- clip_coef
VALUE_NOISE_STD = 0.5   # |newvalue - old value| > clip_coef for many rows
KINK_GAP = 1e-3         # no ratio or value difference closer than this to a clip bound
MIN_BRANCH = 3          # each branch must be taken at least this many times


def layer_init(layer, std=math.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    """CleanRL ppo_continuous_action.py's Agent for OBS_DIM observations and K actions."""

    def __init__(self, actor_out_gain=0.01):
        super().__init__()
        self.critic = nn.Sequential(
            layer_init(nn.Linear(OBS_DIM, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, 1), std=1.0),
        )
        self.actor_mean = nn.Sequential(
            layer_init(nn.Linear(OBS_DIM, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, K), std=actor_out_gain),
        )
        self.actor_logstd = nn.Parameter(torch.zeros(1, K))

    def get_action_and_value(self, x, action=None):
        """CleanRL's, also returning action_mean and the critic's output (autograd leaves the
        golden differentiates against)."""
        action_mean = self.actor_mean(x)
        action_logstd = self.actor_logstd.expand_as(action_mean)
        action_std = torch.exp(action_logstd)
        probs = Normal(action_mean, action_std)
        if action is None:
            action = probs.sample()
        value = self.critic(x)
        return action, probs.log_prob(action).sum(1), probs.entropy().sum(1), value, action_mean


def ppo_loss(agent, obs, b_actions, b_logprobs, b_advantages, b_values, b_returns, hp, v):
    """The body of ppo_continuous_action.py's minibatch loop, up to loss.backward()."""
    _, newlogprob, entropy, newvalue, action_mean = agent.get_action_and_value(obs, b_actions)
    action_mean.retain_grad()
    newvalue.retain_grad()
    logratio = newlogprob - b_logprobs
    ratio = logratio.exp()

    with torch.no_grad():
        old_approx_kl = (-logratio).mean()
        approx_kl = ((ratio - 1) - logratio).mean()
        clipfrac = ((ratio - 1.0).abs() > hp["clip_coef"]).float().mean()

    mb_advantages = b_advantages
    if v["norm_adv"]:
        mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)

    pg_loss1 = -mb_advantages * ratio
    pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - hp["clip_coef"], 1 + hp["clip_coef"])
    pg_loss = torch.max(pg_loss1, pg_loss2).mean()

    newvalue_flat = newvalue.view(-1)
    if v["clip_vloss"]:
        v_loss_unclipped = (newvalue_flat - b_returns) ** 2
        v_clipped = b_values + torch.clamp(
            newvalue_flat - b_values,
            -hp["clip_coef"],
            hp["clip_coef"],
        )
        v_loss_clipped = (v_clipped - b_returns) ** 2
        v_loss_max = torch.max(v_loss_unclipped, v_loss_clipped)
        v_loss = 0.5 * v_loss_max.mean()
    else:
        v_loss = 0.5 * ((newvalue_flat - b_returns) ** 2).mean()

    entropy_loss = entropy.mean()
    loss = pg_loss - hp["ent_coef"] * entropy_loss + v_loss * hp["vf_coef"]
    agent.zero_grad()
    loss.backward()
    return dict(loss=loss, pg_loss=pg_loss, v_loss=v_loss, entropy=entropy_loss,
                old_approx_kl=old_approx_kl, approx_kl=approx_kl, clipfrac=clipfrac,
                newlogprob=newlogprob.detach(), ratio=ratio.detach(),
                adv=mb_advantages.detach(), newvalue=newvalue_flat.detach(),
                grad_mean=action_mean.grad.detach().clone(),
                grad_logstd=agent.actor_logstd.grad.detach().clone().view(-1),
                grad_value=newvalue.grad.detach().clone().view(-1))


def snapshot(t):
    return t.detach().clone().contiguous().to(torch.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "ppo_gaussian_golden.safetensors"),
                    help="output safetensors file (default: %(default)s)")
    args = ap.parse_args()

    torch.set_default_dtype(torch.float32)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    rng = np.random.default_rng(SEED)
    hp = HP
    c = hp["clip_coef"]

    agent = Agent(actor_out_gain=ACTOR_OUT_GAIN)
    with torch.no_grad():
        agent.actor_logstd.copy_(torch.from_numpy(
            rng.normal(LOGSTD_MEAN, LOGSTD_STD, size=(1, K)).astype(np.float32)))

    obs = torch.from_numpy(rng.uniform(-2.0, 2.0, size=(B, OBS_DIM)).astype(np.float32))
    with torch.no_grad():
        _, _, _, value0, mean0 = agent.get_action_and_value(obs, torch.zeros(B, K))
        std0 = torch.exp(agent.actor_logstd).expand_as(mean0)
        noise = torch.from_numpy(rng.normal(0.0, 1.0, size=(B, K)).astype(np.float32))
        shift = torch.from_numpy(rng.normal(0.0, ACTION_NOISE_STD, size=(B, K)).astype(np.float32))
        actions = (mean0 + shift + std0 * noise).contiguous()
        _, logprob0, _, _, _ = agent.get_action_and_value(obs, actions)
        value0 = value0.view(-1)
    advantages = torch.from_numpy(rng.normal(0.5, 2.0, size=B).astype(np.float32))
    returns = torch.from_numpy(rng.normal(0.0, 1.5, size=B).astype(np.float32))
    # old log-probs and values near the current ones, redrawn row by row until every ratio and
    # value difference keeps KINK_GAP from the clip bounds (and the two value losses from a tie)
    logprobs = torch.empty(B)
    values = torch.empty(B)
    for b in range(B):
        while True:
            lp = float(logprob0[b]) + rng.normal(0.0, LOGPROB_NOISE_STD)
            lp32 = np.float32(lp)
            r = math.exp(float(logprob0[b]) - float(lp32))
            if abs(r - (1 - c)) > KINK_GAP and abs(r - (1 + c)) > KINK_GAP:
                break
        while True:
            vv = np.float32(float(value0[b]) + rng.normal(0.0, VALUE_NOISE_STD))
            dv = float(value0[b]) - float(vv)
            vc = float(vv) + max(-c, min(c, dv))
            lu = (float(value0[b]) - float(returns[b])) ** 2
            lc = (vc - float(returns[b])) ** 2
            if abs(abs(dv) - c) > KINK_GAP and (abs(dv) < c or abs(lu - lc) > KINK_GAP):
                break
        logprobs[b] = float(lp32)
        values[b] = float(vv)

    tensors = {
        "mb.mean": snapshot(mean0),
        "mb.logstd": snapshot(agent.actor_logstd.view(-1)),
        "mb.action": snapshot(actions),
        "mb.logprobs": snapshot(logprobs),
        "mb.advantages": snapshot(advantages),
        "mb.values": snapshot(values),
        "mb.returns": snapshot(returns),
        "mb.newvalue": snapshot(value0),
    }

    summary = []
    for name, v in VARIANTS.items():
        r = ppo_loss(agent, obs, actions, logprobs, advantages, values, returns, hp, v)
        assert torch.equal(r["newvalue"], value0) and torch.equal(r["newlogprob"], logprob0)
        tensors["out.newlogprob"] = snapshot(r["newlogprob"])
        for k in ("loss", "pg_loss", "v_loss", "entropy", "old_approx_kl", "approx_kl", "clipfrac"):
            tensors["out.%s.%s" % (name, k)] = snapshot(torch.as_tensor(r[k]).reshape(()))
        tensors["grad.%s.mean" % name] = snapshot(r["grad_mean"])
        tensors["grad.%s.logstd" % name] = snapshot(r["grad_logstd"])
        tensors["grad.%s.value" % name] = snapshot(r["grad_value"])

        ratio, adv = r["ratio"], r["adv"]
        low_active = int(((ratio < 1 - c) & (adv < 0)).sum())
        high_active = int(((ratio > 1 + c) & (adv > 0)).sum())
        inside = int(((ratio >= 1 - c) & (ratio <= 1 + c)).sum())
        summary.append("%-5s loss=%.6f pg_loss=%.6f v_loss=%.6f entropy=%.6f approx_kl=%.6f "
                       "clipfrac=%.4f; clamp active low %d, high %d; ratios inside %d"
                       % (name, float(r["loss"]), float(r["pg_loss"]), float(r["v_loss"]),
                          float(r["entropy"]), float(r["approx_kl"]), float(r["clipfrac"]),
                          low_active, high_active, inside))
        assert low_active >= MIN_BRANCH and high_active >= MIN_BRANCH and inside >= MIN_BRANCH, \
            "a branch of the clipped objective is barely used: change the noise or the seed"
        if v["clip_vloss"]:
            dv = (value0 - values).abs()
            vc = values + torch.clamp(value0 - values, -c, c)
            chosen = int(((dv > c) & ((vc - returns) ** 2 > (value0 - returns) ** 2)).sum())
            summary[-1] += "; clipped value loss chosen %d" % chosen
            assert chosen >= MIN_BRANCH, "the value clip is barely used: change the noise/seed"

    # Box-Muller in torch's float32 ops, as cr_box_muller writes it, and Normal.log_prob
    u = torch.from_numpy(rng.random(size=(B, 2 * K), dtype=np.float32))
    u[0, 0], u[0, 2], u[0, 3] = 0.0, 1.0 - 2.0 ** -24, 0.5  # z = 0; the largest |z|, cos(pi)
    u1, u2 = u[:, 0::2], u[:, 1::2]
    z = torch.sqrt(-2.0 * torch.log(1.0 - u1)) * torch.cos(np.float32(2 * math.pi) * u2)
    with torch.no_grad():
        std = torch.exp(agent.actor_logstd.view(-1)).expand_as(mean0)
        sample_action = mean0 + std * z
        sample_logp = Normal(mean0, std).log_prob(sample_action).sum(1)
    tensors["sample.u"] = snapshot(u)
    tensors["sample.action"] = snapshot(sample_action)
    tensors["sample.logp"] = snapshot(sample_logp)

    for k, t in tensors.items():
        assert torch.isfinite(t.double()).all(), k
    for line in summary:
        print(line)

    metadata = {"format": FORMAT, "version": VERSION, "torch": torch.__version__,
                "numpy": np.__version__, "seed": str(SEED), "B": str(B), "K": str(K),
                "obs_dim": str(OBS_DIM), "variants": ",".join(VARIANTS)}
    for k, val in hp.items():
        metadata[k] = repr(float(val))
    for name, v in VARIANTS.items():
        for k, val in v.items():
            metadata["%s.%s" % (name, k)] = "true" if val else "false"

    tensors = {k: t.contiguous() for k, t in sorted(tensors.items())}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    tmp = args.out + ".tmp"
    save_file(tensors, tmp, metadata=metadata)
    os.replace(tmp, args.out)
    total = sum(t.numel() * t.element_size() for t in tensors.values())
    print("wrote %s: %d tensors, %d bytes of data, torch %s"
          % (args.out, len(tensors), total, torch.__version__))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
