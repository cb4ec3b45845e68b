#!/usr/bin/env python3
"""Golden reference for one CleanRL-style DQN update (CartPole Q-network).

Computes, in float32 on the CPU with PyTorch, four variants of one DQN gradient step on the
same minibatch (B=64), each from the same initial online and target networks and a fresh Adam:

  dqn_mse       CleanRL dqn.py: td_target = r + gamma * max_a Q_target(s', a) * (1 - terminated),
                loss = F.mse_loss(q_sa, td_target)
  double_huber  double DQN (action chosen by the online network, valued by the target network),
                loss = F.smooth_l1_loss(q_sa, td_target)
  per_huber     vanilla targets, Huber loss weighted by prioritized-replay importance weights,
                loss = mean(w * F.smooth_l1_loss(q_sa, td_target, reduction="none"))
  mse_clip      dqn_mse, then nn.utils.clip_grad_norm_(params, max_grad_norm) before the step

plus one soft target update (Polyak, tau) from the online weights after dqn_mse's step, and
writes inputs and outputs to one small safetensors file that tests/golden/test_dqn_golden.c
reproduces.

    python3 tests/golden/golden_dqn.py --out tests/golden/dqn_golden.safetensors

Needs torch, numpy and safetensors; runs on the CPU. Tensor names (NAME = state_dict name of
CleanRL's QNetwork, network.0.weight, network.0.bias, network.2.*, network.4.*; V = variant):

  params.NAME               initial online parameters (the same for every variant)
  target.NAME               target-network parameters (online + noise, so target != online)
  mb.obs, mb.next_obs (B,4) f32; mb.actions (B,) i32; mb.rewards (B,) f32;
  mb.terminated (B,) u8; mb.weights (B,) f32 (importance weights, max 1; used by per_huber)
  loss.V                    0-dim f32, the loss
  td.V                      (B,) f32, delta = q_sa - td_target
  grad.V.NAME               raw gradients of loss.V (before any clipping)
  grad_norm.mse_clip        0-dim f32, the total norm clip_grad_norm_ returned (before clipping)
  step1.V.NAME              parameters after one Adam step (t = 1)
  polyak.NAME               tau * step1.dqn_mse.NAME + (1 - tau) * target.NAME, as CleanRL's
                            target_network_param.data.copy_(tau * p.data + (1.0 - tau) * t.data)

Conventions a reimplementation must follow (all are PyTorch's / CleanRL's):
  * a terminated row's target is r alone; truncation is not a terminal (it bootstraps);
  * smooth_l1 has beta 1: 0.5 d^2 for |d| < 1, |d| - 0.5 otherwise; its gradient is clamp(d, -1, 1);
    mse_loss's gradient is 2 d; both are means over the B rows;
  * argmax picks the first index on ties (no ties occur in this file);
  * clip_grad_norm_ scales by max_norm / (total_norm + 1e-6) when that is < 1;
  * Adam (torch defaults but lr: betas (0.9, 0.999), eps 1e-8, no weight decay, no amsgrad):
    m = b1*m + (1-b1)*g, v = b2*v + (1-b2)*g*g, p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps).
"""

import argparse
import copy
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))  # the golden file is written beside this script

FORMAT = "cudarl-golden-dqn"
VERSION = "1"
SEED = 1234

B = 64
OBS_DIM, N_ACTIONS = 4, 2

HP = dict(
    gamma=0.99,
    learning_rate=1e-3,    # CleanRL's default is 2.5e-4; 1e-3 makes the step easier to see
    adam_eps=1e-8,         # torch.optim.Adam's default, as CleanRL's dqn.py uses it
    adam_beta1=0.9,
    adam_beta2=0.999,
    max_grad_norm=0.5,     # mse_clip only
    tau=0.9,               # soft update (CleanRL's default 1.0 would be a plain copy)
)

# variant name -> (double_dqn, huber, importance weights, clip the gradient)
VARIANTS = {
    "dqn_mse": (False, False, False, False),
    "double_huber": (True, True, False, False),
    "per_huber": (False, True, True, False),
    "mse_clip": (False, False, False, True),
}

# Inputs chosen so every branch is used.
TARGET_NOISE_STD = 0.05    # target = online + N(0, this) on every parameter
TERMINATED_P = 0.25
REWARD_MEAN, REWARD_STD = 0.5, 1.5   # |delta| > 1 for many rows (Huber's linear branch)
MIN_BRANCH = 5             # each Huber branch, terminal / non-terminal row, ... at least this often
MIN_DOUBLE = 3             # non-terminated rows where double DQN picks another next action

# Margins that keep the file away from knife edges, where float32 rounding in another order
# (cudarl's matmuls against torch's sgemm) could flip a discrete choice.
MIN_PREACT = 1e-5          # |pre-activation| of every hidden unit, online net on obs
MIN_QGAP = 1e-5            # |Q(s',0) - Q(s',1)| of the nets whose argmax picks the next action


class QNetwork(nn.Module):
    """CleanRL dqn.py QNetwork for a 4-dimensional observation and 2 actions."""

    def __init__(self, obs_dim=OBS_DIM, n_actions=N_ACTIONS):
        super().__init__()
        self.network = nn.Sequential(
            nn.Linear(obs_dim, 120),
            nn.ReLU(),
            nn.Linear(120, 84),
            nn.ReLU(),
            nn.Linear(84, n_actions),
        )

    def forward(self, x):
        return self.network(x)


OBS_LOW = np.array([-2.0, -3.0, -0.2, -3.0])
OBS_HIGH = np.array([2.0, 3.0, 0.2, 3.0])


def f32(a):
    return torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32))


def snapshot(t):
    return t.detach().clone().contiguous()


def scalar(x):
    return snapshot(torch.as_tensor(x, dtype=torch.float32).reshape(()))


def td_targets(online, target, next_obs, rewards, terminated, gamma, double_dqn):
    """CleanRL dqn.py's target (and the double-DQN one), under no_grad."""
    with torch.no_grad():
        if double_dqn:
            next_actions = online(next_obs).argmax(dim=1, keepdim=True)
            target_next = target(next_obs).gather(1, next_actions).squeeze(1)
        else:
            target_next, _ = target(next_obs).max(dim=1)
        return rewards + gamma * target_next * (1 - terminated.float())


def dqn_update(base, target, mb, hp, double_dqn, huber, weighted, clip):
    """One update from a copy of `base`; returns the outputs and the updated network."""
    net = copy.deepcopy(base)
    optimizer = torch.optim.Adam(
        net.parameters(), lr=hp["learning_rate"], eps=hp["adam_eps"],
        betas=(hp["adam_beta1"], hp["adam_beta2"]))
    td_target = td_targets(net, target, mb["next_obs"], mb["rewards"], mb["terminated"],
                           hp["gamma"], double_dqn)
    old_val = net(mb["obs"]).gather(1, mb["actions"].long().unsqueeze(1)).squeeze(1)
    if weighted:
        per_row = F.smooth_l1_loss(td_target, old_val, reduction="none") if huber \
            else F.mse_loss(td_target, old_val, reduction="none")
        loss = (mb["weights"] * per_row).mean()
    elif huber:
        loss = F.smooth_l1_loss(td_target, old_val)
    else:
        loss = F.mse_loss(td_target, old_val)
    optimizer.zero_grad()
    loss.backward()
    grads = {name: snapshot(p.grad) for name, p in net.named_parameters()}
    grad_norm = None
    if clip:
        grad_norm = nn.utils.clip_grad_norm_(net.parameters(), hp["max_grad_norm"])
    optimizer.step()
    for p in net.parameters():
        assert float(optimizer.state[p]["step"]) == 1.0
    clipped = {name: snapshot(p.grad) for name, p in net.named_parameters()}
    return dict(loss=loss.detach(), delta=(old_val - td_target).detach(), grads=grads,
                clipped=clipped, grad_norm=grad_norm, net=net, td_target=td_target)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "dqn_golden.safetensors"),
                    help="output safetensors file (default: %(default)s)")
    args = ap.parse_args()

    torch.set_default_dtype(torch.float32)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    rng = np.random.default_rng(SEED)
    hp = HP
    tensors = {}

    # ---- networks (PyTorch's default nn.Linear init, as CleanRL's QNetwork gets it) -------
    online = QNetwork()
    target = copy.deepcopy(online)
    with torch.no_grad():
        for p in target.parameters():
            p.add_(torch.randn(p.shape, dtype=torch.float32) * TARGET_NOISE_STD)
    names = [name for name, _ in online.named_parameters()]
    assert names == list(online.state_dict().keys()), names
    assert names == ["network.%d.%s" % (k, w) for k in (0, 2, 4) for w in ("weight", "bias")], names
    for (name, p), (_, t) in zip(online.named_parameters(), target.named_parameters()):
        assert p.dtype == torch.float32 and p.device.type == "cpu"
        assert not torch.equal(p, t), name
        tensors["params." + name] = snapshot(p)
        tensors["target." + name] = snapshot(t)

    # ---- minibatch ---------------------------------------------------------------------
    obs_np = rng.uniform(OBS_LOW, OBS_HIGH, size=(B, OBS_DIM)).astype(np.float32)
    next_obs_np = rng.uniform(OBS_LOW, OBS_HIGH, size=(B, OBS_DIM)).astype(np.float32)
    actions_np = rng.integers(0, N_ACTIONS, size=B).astype(np.int32)
    rewards_np = rng.normal(REWARD_MEAN, REWARD_STD, size=B).astype(np.float32)
    terminated_np = (rng.random(B) < TERMINATED_P).astype(np.uint8)
    weights_np = rng.uniform(0.2, 1.0, size=B)
    weights_np = (weights_np / weights_np.max()).astype(np.float32)  # as PER: max weight 1
    mb = dict(obs=f32(obs_np), next_obs=f32(next_obs_np), actions=torch.from_numpy(actions_np),
              rewards=f32(rewards_np), terminated=torch.from_numpy(terminated_np),
              weights=f32(weights_np))
    for k, v in mb.items():
        tensors["mb." + k] = snapshot(v)

    # ---- the four updates ----------------------------------------------------------------
    results = {}
    for vname, (double_dqn, huber, weighted, clip) in VARIANTS.items():
        r = dqn_update(online, target, mb, hp, double_dqn, huber, weighted, clip)
        results[vname] = r
        tensors["loss." + vname] = scalar(r["loss"])
        tensors["td." + vname] = snapshot(r["delta"])
        for name, p in r["net"].named_parameters():
            tensors["grad.%s.%s" % (vname, name)] = r["grads"][name]
            tensors["step1.%s.%s" % (vname, name)] = snapshot(p)
        if clip:
            tensors["grad_norm." + vname] = scalar(r["grad_norm"])

    # ---- Polyak: CleanRL's soft update of the target from dqn_mse's stepped online net ----
    polyak = copy.deepcopy(target)
    with torch.no_grad():
        for t_param, q_param in zip(polyak.parameters(), results["dqn_mse"]["net"].parameters()):
            t_param.data.copy_(hp["tau"] * q_param.data + (1.0 - hp["tau"]) * t_param.data)
    for name, p in polyak.named_parameters():
        tensors["polyak." + name] = snapshot(p)

    # ---- which branches does this file exercise, and how far from the knife edges? ----------
    n = lambda m: int(torch.as_tensor(m).sum())
    term = mb["terminated"].bool()
    with torch.no_grad():
        q_next_online = online(mb["next_obs"])
        q_next_target = target(mb["next_obs"])
        double_differs = (q_next_online.argmax(1) != q_next_target.argmax(1)) & ~term
        x = mb["obs"]
        pre = []
        for layer in online.network:
            x = layer(x)
            if isinstance(layer, nn.Linear) and layer.out_features != N_ACTIONS:
                pre.append(x.abs().min().item())
        qgap = min((q_next_online[:, 0] - q_next_online[:, 1]).abs().min().item(),
                   (q_next_target[:, 0] - q_next_target[:, 1]).abs().min().item())
    grad_norm = float(results["mse_clip"]["grad_norm"])
    print("minibatch B=%d: %d terminated, %d not; double DQN picks another next action on %d "
          "non-terminated rows" % (B, n(term), B - n(term), n(double_differs)))
    for vname, r in results.items():
        d = r["delta"].abs()
        print("%-13s loss=%.6f  |delta| > 1 (Huber linear): %2d  < 1: %2d  max |delta| %.3f"
              % (vname, r["loss"].item(), n(d > 1), n(d < 1), d.max().item()))
    print("mse_clip: grad_norm=%.6f > max_grad_norm=%g: %s (scale %.6f)"
          % (grad_norm, hp["max_grad_norm"],
             "clipping active" if grad_norm > hp["max_grad_norm"] else "NOT clipped",
             min(1.0, hp["max_grad_norm"] / (grad_norm + 1e-6))))
    print("margins: min |pre-activation| %.3g, min |Q(s',0) - Q(s',1)| %.3g" % (min(pre), qgap))
    # Adam's first step moves each weight by lr * g / (|g| + eps), steep near g = 0: count the
    # gradient entries (after clipping) where float32 noise in g visibly moves the step; the C
    # test allows those what their gradient difference does to the step (its STEEP_GRAD).
    tiny = sum(n((r["clipped"][k] != 0) & (r["clipped"][k].abs() < 1e-6))
               for r in results.values() for k in names)
    zeros = sum(n(r["clipped"][k] == 0) for r in results.values() for k in names)
    print("gradients: %d exact zeros (dead units), %d nonzero entries below 1e-6 (4 variants)"
          % (zeros, tiny))

    for vname in ("double_huber", "per_huber"):
        d = results[vname]["delta"].abs()
        assert n(d > 1) >= MIN_BRANCH, "%s: too few |delta| > 1: change the rewards/seed" % vname
        assert n(d < 1) >= MIN_BRANCH, "%s: too few |delta| < 1: change the rewards/seed" % vname
    assert MIN_BRANCH <= n(term) <= B - MIN_BRANCH, "terminated rows: change TERMINATED_P/seed"
    assert n(double_differs) >= MIN_DOUBLE, "double DQN = vanilla here: raise TARGET_NOISE_STD"
    assert not torch.equal(results["double_huber"]["td_target"],
                           td_targets(online, target, mb["next_obs"], mb["rewards"],
                                      mb["terminated"], hp["gamma"], False))
    assert grad_norm > hp["max_grad_norm"], "mse_clip: clipping would not engage"
    assert min(pre) > MIN_PREACT, "a hidden unit sits on ReLU's kink: change the seed"
    assert qgap > MIN_QGAP, "a next-state argmax is nearly tied: change the seed"
    for k, v in tensors.items():
        assert torch.isfinite(v.double()).all(), k

    # ---- write -----------------------------------------------------------------------------
    metadata = {
        "format": FORMAT,
        "version": VERSION,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "seed": str(SEED),
        "B": str(B),
        "variants": ",".join(VARIANTS),
    }
    for k, v in hp.items():
        metadata[k] = repr(float(v))

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
