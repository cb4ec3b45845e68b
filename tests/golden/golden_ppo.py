#!/usr/bin/env python3
"""Golden reference for one CleanRL-style PPO update (CartPole MLP agent).

Computes, in float32 on the CPU with PyTorch:

  Part 1  GAE over a small (T=8, N=4) rollout, with terminated and truncated
          kept apart (bootstrap through truncation, not through termination).
  Part 2  One PPO minibatch update (B=64) exactly as CleanRL's ppo.py does it:
          losses, raw gradients, global-norm clipping, Adam step 1, then a
          second forward/backward/clip/Adam step on the same minibatch.

and writes everything (inputs, outputs, gradients, parameters, Adam moments)
to one small safetensors file that tests/golden/test_ppo_golden.c reproduces.

    python3 tests/golden/golden_ppo.py --out tests/golden/ppo_golden.safetensors

Needs torch, numpy and safetensors. Tensor names (state_dict name = NAME,
e.g. "critic.0.weight"; 12 parameters):

  params.NAME               initial parameters
  gae.rewards/values/next_values (T,N) f32, gae.terminated/done (T,N) u8
  gae.advantages/returns    (T,N) f32
  mb.obs (B,4) f32, mb.actions (B,) i32, mb.logprobs/advantages/values/returns (B,) f32
  mb.adv_normalized         (B,) f32
  out.loss/pg_loss/v_loss/entropy/approx_kl/old_approx_kl/clipfrac/grad_norm  0-dim f32
  out.newlogprob/entropy_per_sample/newvalue (B,) f32, out.logits (B,2) f32
  grad.NAME                 raw gradients of out.loss (before clipping)
  step1.NAME, step1.exp_avg.NAME, step1.exp_avg_sq.NAME   after Adam step t=1
  step2.NAME                parameters after Adam step t=2
  step2.loss, step2.grad_norm  0-dim f32, loss and pre-clip norm of the 2nd pass

Conventions a reimplementation must follow (all are PyTorch's / CleanRL's):
  * advantage normalisation uses the unbiased std (divide by B-1), + 1e-8;
  * clip_grad_norm_ scales by max_norm / (total_norm + 1e-6) when that is < 1;
  * Adam (not AdamW, no weight decay, no amsgrad): m = b1*m + (1-b1)*g,
    v = b2*v + (1-b2)*g*g, p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps).
"""

import argparse
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
from safetensors.torch import save_file
from torch.distributions.categorical import Categorical

HERE = os.path.dirname(os.path.abspath(__file__))  # the golden file is written beside this script

FORMAT = "cudarl-golden-ppo"
VERSION = "1"
SEED = 1234

# GAE shape and minibatch size.
T, N = 8, 4
B = 64

# Hyperparameters (CleanRL ppo.py defaults for CartPole).
HP = dict(
    gamma=0.99,
    gae_lambda=0.95,
    clip_coef=0.2,
    ent_coef=0.01,
    vf_coef=0.5,
    max_grad_norm=0.5,
    learning_rate=1e-3,
    adam_eps=1e-5,
    adam_beta1=0.9,
    adam_beta2=0.999,
    norm_adv=True,
    clip_vloss=True,
)

# Noise that makes the golden file exercise every branch.
BIAS_NOISE_STD = 0.05      # added to every bias after the CleanRL init
ACTOR_OUT_GAIN = 1.0       # CleanRL uses 0.01; 1.0 moves probabilities away from 0.5
LOGPROB_NOISE_STD = 0.3    # ratios straddle 1 +- clip_coef
VALUE_NOISE_STD = 0.5      # |newvalue - old value| > clip_coef for many samples
MIN_CLIPPED = 3            # each branch must be hit at least this many times


def layer_init(layer, std=math.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    """CleanRL ppo.py Agent for a 4-dimensional observation and 2 actions."""

    def __init__(self, obs_dim=4, n_actions=2, actor_out_gain=0.01):
        super().__init__()
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_dim, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, 1), std=1.0),
        )
        self.actor = nn.Sequential(
            layer_init(nn.Linear(obs_dim, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, n_actions), std=actor_out_gain),
        )

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        logits = self.actor(x)
        probs = Categorical(logits=logits)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x), logits


def f32(a):
    return torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32))


def snapshot(t):
    return t.detach().clone().contiguous()


# --------------------------------------------------------------------------
# Part 1: GAE
# --------------------------------------------------------------------------

def make_gae_inputs(rng):
    rewards = rng.normal(0.5, 1.0, size=(T, N)).astype(np.float32)
    values = rng.normal(0.0, 2.0, size=(T, N)).astype(np.float32)
    terminated = rng.random((T, N)) < 0.12
    truncated = rng.random((T, N)) < 0.12
    # Force every kind of step to be present, whatever the draws gave.
    terminated[2, 0] = True; truncated[2, 0] = False     # terminated only
    terminated[5, 1] = False; truncated[5, 1] = True     # truncated only
    terminated[3, 2] = True; truncated[3, 2] = True      # both
    terminated[6, 3] = False; truncated[6, 3] = True     # truncated only
    terminated[7, 0] = False; truncated[7, 0] = False    # last step, bootstraps
    done = terminated | truncated
    # V of the observation after step t: the next step's value inside an episode,
    # an independent draw (V(final obs), or V of the obs after the rollout) otherwise.
    extra = rng.normal(0.0, 2.0, size=(T, N)).astype(np.float32)
    next_values = np.empty((T, N), dtype=np.float32)
    for t in range(T):
        for n in range(N):
            if t < T - 1 and not done[t, n]:
                next_values[t, n] = values[t + 1, n]
            else:
                next_values[t, n] = extra[t, n]
    return dict(
        rewards=rewards,
        values=values,
        next_values=next_values,
        terminated=terminated.astype(np.uint8),
        done=done.astype(np.uint8),
    )


def compute_gae(rewards, values, next_values, terminated, done, gamma, gae_lambda):
    """All float32 torch; loop written out backwards over time."""
    advantages = torch.zeros_like(rewards)
    lastgaelam = torch.zeros(rewards.shape[1], dtype=torch.float32)
    for t in reversed(range(rewards.shape[0])):
        nonterminal = 1.0 - terminated[t].float()
        nondone = 1.0 - done[t].float()
        delta = rewards[t] + gamma * nonterminal * next_values[t] - values[t]
        lastgaelam = delta + gamma * gae_lambda * nondone * lastgaelam
        advantages[t] = lastgaelam
    returns = advantages + values
    return advantages, returns


# --------------------------------------------------------------------------
# Part 2: one PPO minibatch update
# --------------------------------------------------------------------------

OBS_LOW = np.array([-2.0, -3.0, -0.2, -3.0])
OBS_HIGH = np.array([2.0, 3.0, 0.2, 3.0])


def ppo_losses(agent, obs, actions, mb_logprobs, mb_advantages, mb_values, mb_returns, hp):
    """CleanRL ppo.py, the body of `for start in range(0, batch_size, minibatch_size)`."""
    _, newlogprob, entropy, newvalue, logits = agent.get_action_and_value(obs, actions)
    logratio = newlogprob - mb_logprobs
    ratio = logratio.exp()

    with torch.no_grad():
        old_approx_kl = (-logratio).mean()
        approx_kl = ((ratio - 1) - logratio).mean()
        clipfrac = ((ratio - 1.0).abs() > hp["clip_coef"]).float().mean()

    if hp["norm_adv"]:
        mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)

    # Policy loss
    pg_loss1 = -mb_advantages * ratio
    pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - hp["clip_coef"], 1 + hp["clip_coef"])
    pg_loss = torch.max(pg_loss1, pg_loss2).mean()

    # Value loss
    newvalue = newvalue.view(-1)
    if hp["clip_vloss"]:
        v_loss_unclipped = (newvalue - mb_returns) ** 2
        v_clipped = mb_values + torch.clamp(
            newvalue - mb_values,
            -hp["clip_coef"],
            hp["clip_coef"],
        )
        v_loss_clipped = (v_clipped - mb_returns) ** 2
        v_loss_max = torch.max(v_loss_unclipped, v_loss_clipped)
        v_loss = 0.5 * v_loss_max.mean()
    else:
        v_loss_unclipped = v_loss_clipped = None
        v_loss = 0.5 * ((newvalue - mb_returns) ** 2).mean()

    entropy_loss = entropy.mean()
    loss = pg_loss - hp["ent_coef"] * entropy_loss + v_loss * hp["vf_coef"]

    return dict(
        loss=loss, pg_loss=pg_loss, v_loss=v_loss, entropy_loss=entropy_loss,
        old_approx_kl=old_approx_kl, approx_kl=approx_kl, clipfrac=clipfrac,
        newlogprob=newlogprob, entropy=entropy, newvalue=newvalue, logits=logits,
        ratio=ratio, adv_normalized=mb_advantages,
        v_loss_unclipped=v_loss_unclipped, v_loss_clipped=v_loss_clipped,
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "ppo_golden.safetensors"),
                    help="output safetensors file (default: %(default)s)")
    args = ap.parse_args()

    device = torch.device("cpu")
    torch.set_default_dtype(torch.float32)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    rng = np.random.default_rng(SEED)
    hp = HP

    tensors = {}

    # ---- model -----------------------------------------------------------
    agent = Agent(actor_out_gain=ACTOR_OUT_GAIN).to(device)
    with torch.no_grad():
        for name, p in agent.named_parameters():
            if name.endswith(".bias"):
                p.add_(torch.randn(p.shape, dtype=torch.float32) * BIAS_NOISE_STD)
    names = [name for name, _ in agent.named_parameters()]
    assert names == list(agent.state_dict().keys()), names
    assert len(names) == 12, names
    for name, p in agent.named_parameters():
        assert p.dtype == torch.float32 and p.device == device
        tensors["params." + name] = snapshot(p)

    # ---- Part 1: GAE -----------------------------------------------------
    g = make_gae_inputs(rng)
    g_t = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in g.items()}
    gae_adv, gae_ret = compute_gae(
        g_t["rewards"], g_t["values"], g_t["next_values"],
        g_t["terminated"], g_t["done"], hp["gamma"], hp["gae_lambda"])
    for k, v in g_t.items():
        tensors["gae." + k] = snapshot(v)
    tensors["gae.advantages"] = snapshot(gae_adv)
    tensors["gae.returns"] = snapshot(gae_ret)
    term = g["terminated"].astype(bool)
    done = g["done"].astype(bool)
    trunc_only = done & ~term
    print("GAE  T=%d N=%d: terminated=%d (both terminated and truncated at [3,2]), "
          "truncated only=%d, done=%d" % (T, N, int(term.sum()), int(trunc_only.sum()), int(done.sum())))
    assert term.any() and trunc_only.any() and (term & done).any()

    # ---- Part 2: minibatch inputs ----------------------------------------
    obs_np = rng.uniform(OBS_LOW, OBS_HIGH, size=(B, 4)).astype(np.float32)
    actions_np = rng.integers(0, 2, size=B).astype(np.int32)
    logprob_noise = rng.normal(0.0, LOGPROB_NOISE_STD, size=B).astype(np.float32)
    advantages_np = rng.normal(0.5, 2.0, size=B).astype(np.float32)
    value_noise = rng.normal(0.0, VALUE_NOISE_STD, size=B).astype(np.float32)
    returns_np = rng.normal(0.0, 1.5, size=B).astype(np.float32)

    obs = f32(obs_np)
    actions_i32 = torch.from_numpy(actions_np)
    actions = actions_i32.long()
    with torch.no_grad():
        _, logprob0, _, value0, _ = agent.get_action_and_value(obs, actions)
        value0 = value0.view(-1)
    mb_logprobs = (logprob0 + f32(logprob_noise)).contiguous()
    mb_advantages = f32(advantages_np)
    mb_values = (value0 + f32(value_noise)).contiguous()
    mb_returns = f32(returns_np)

    tensors["mb.obs"] = snapshot(obs)
    tensors["mb.actions"] = snapshot(actions_i32)
    tensors["mb.logprobs"] = snapshot(mb_logprobs)
    tensors["mb.advantages"] = snapshot(mb_advantages)
    tensors["mb.values"] = snapshot(mb_values)
    tensors["mb.returns"] = snapshot(mb_returns)

    optimizer = torch.optim.Adam(
        agent.parameters(), lr=hp["learning_rate"], eps=hp["adam_eps"],
        betas=(hp["adam_beta1"], hp["adam_beta2"]))

    # ---- update 1 ---------------------------------------------------------
    r = ppo_losses(agent, obs, actions, mb_logprobs, mb_advantages, mb_values, mb_returns, hp)
    optimizer.zero_grad()
    r["loss"].backward()
    for name, p in agent.named_parameters():
        tensors["grad." + name] = snapshot(p.grad)
    grad_norm = nn.utils.clip_grad_norm_(agent.parameters(), hp["max_grad_norm"])
    optimizer.step()

    for name, p in agent.named_parameters():
        st = optimizer.state[p]
        tensors["step1." + name] = snapshot(p)
        tensors["step1.exp_avg." + name] = snapshot(st["exp_avg"])
        tensors["step1.exp_avg_sq." + name] = snapshot(st["exp_avg_sq"])
        assert float(st["step"]) == 1.0

    scalar = lambda x: snapshot(torch.as_tensor(x, dtype=torch.float32).reshape(()))
    tensors["out.loss"] = scalar(r["loss"])
    tensors["out.pg_loss"] = scalar(r["pg_loss"])
    tensors["out.v_loss"] = scalar(r["v_loss"])
    tensors["out.entropy"] = scalar(r["entropy_loss"])
    tensors["out.approx_kl"] = scalar(r["approx_kl"])
    tensors["out.old_approx_kl"] = scalar(r["old_approx_kl"])
    tensors["out.clipfrac"] = scalar(r["clipfrac"])
    tensors["out.grad_norm"] = scalar(grad_norm)
    tensors["out.newlogprob"] = snapshot(r["newlogprob"])
    tensors["out.entropy_per_sample"] = snapshot(r["entropy"])
    tensors["out.newvalue"] = snapshot(r["newvalue"])
    tensors["out.logits"] = snapshot(r["logits"])
    tensors["mb.adv_normalized"] = snapshot(r["adv_normalized"])

    # ---- update 2 (same minibatch, Adam t=2) --------------------------------
    r2 = ppo_losses(agent, obs, actions, mb_logprobs, mb_advantages, mb_values, mb_returns, hp)
    optimizer.zero_grad()
    r2["loss"].backward()
    grad_norm2 = nn.utils.clip_grad_norm_(agent.parameters(), hp["max_grad_norm"])
    optimizer.step()
    for name, p in agent.named_parameters():
        tensors["step2." + name] = snapshot(p)
        assert float(optimizer.state[p]["step"]) == 2.0
    tensors["step2.loss"] = scalar(r2["loss"])
    tensors["step2.grad_norm"] = scalar(grad_norm2)

    # ---- which branches does this file exercise? --------------------------
    c = hp["clip_coef"]
    with torch.no_grad():
        ratio = r["ratio"].detach()
        adv_n = r["adv_normalized"].detach()
        low = ratio < 1 - c
        high = ratio > 1 + c
        # The clamp is the chosen (gradient-free) term of max(pg_loss1, pg_loss2):
        low_active = low & (adv_n < 0)
        high_active = high & (adv_n > 0)
        v_clamped = (r["newvalue"].detach() - mb_values).abs() > c
        v_clip_chosen = v_clamped & (r["v_loss_clipped"].detach() > r["v_loss_unclipped"].detach())
        probs = torch.softmax(r["logits"].detach(), dim=-1)

    n = lambda m: int(m.sum())
    print("PPO  B=%d  loss=%.6f pg_loss=%.6f v_loss=%.6f entropy=%.6f"
          % (B, r["loss"].item(), r["pg_loss"].item(), r["v_loss"].item(), r["entropy_loss"].item()))
    print("     approx_kl=%.6f old_approx_kl=%.6f clipfrac=%.4f grad_norm=%.6f (max %.2f)"
          % (float(r["approx_kl"]), float(r["old_approx_kl"]), float(r["clipfrac"]),
             float(grad_norm), hp["max_grad_norm"]))
    print("     ratio in [%.4f, %.4f]; clipped low (ratio<%.1f): %d, of which active (adv<0): %d"
          % (float(ratio.min()), float(ratio.max()), 1 - c, n(low), n(low_active)))
    print("     clipped high (ratio>%.1f): %d, of which active (adv>0): %d; unclipped: %d"
          % (1 + c, n(high), n(high_active), B - n(low) - n(high)))
    print("     value clamp engaged: %d, clipped value loss chosen: %d"
          % (n(v_clamped), n(v_clip_chosen)))
    print("     action probabilities in [%.4f, %.4f]" % (float(probs.min()), float(probs.max())))
    # Update 1 takes clip_grad_norm_'s scaling branch (norm > max), update 2 may
    # take the other one (scale 1); both are fine, update 1 must clip.
    print("step2 loss=%.6f grad_norm=%.6f (%s)"
          % (r2["loss"].item(), float(grad_norm2),
             "clipped" if float(grad_norm2) > hp["max_grad_norm"] else "below max_grad_norm: not clipped"))

    assert n(low_active) >= MIN_CLIPPED, "too few samples clip low: change noise/seed"
    assert n(high_active) >= MIN_CLIPPED, "too few samples clip high: change noise/seed"
    assert B - n(low) - n(high) >= MIN_CLIPPED, "too few unclipped samples"
    assert n(v_clip_chosen) >= MIN_CLIPPED, "too few values clip: change noise/seed"
    assert B - n(v_clip_chosen) >= MIN_CLIPPED, "too few unclipped values"
    assert float(grad_norm) > hp["max_grad_norm"], "gradient clipping would not engage (step 1)"
    assert 0.0 < float(r["clipfrac"]) < 1.0
    for k, v in tensors.items():
        assert torch.isfinite(v.double()).all(), k

    # ---- write -------------------------------------------------------------
    metadata = {
        "format": FORMAT,
        "version": VERSION,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "seed": str(SEED),
        "T": str(T),
        "N": str(N),
        "B": str(B),
    }
    for k, v in hp.items():
        metadata[k] = ("true" if v else "false") if isinstance(v, bool) else repr(float(v))

    tensors = {k: v.contiguous() for k, v in sorted(tensors.items())}
    out_dir = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(out_dir, exist_ok=True)
    tmp = args.out + ".tmp"
    save_file(tensors, tmp, metadata=metadata)
    os.replace(tmp, args.out)
    total = sum(v.numel() * v.element_size() for v in tensors.values())
    print("wrote %s: %d tensors, %d bytes of data, torch %s"
          % (args.out, len(tensors), total, torch.__version__))
    return 0


if __name__ == "__main__":
    sys.exit(main())
