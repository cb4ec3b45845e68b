#!/usr/bin/env python3
"""Golden reference for whole convolutional policies (src/nn/convnet.h): CleanRL's own modules,
forward and backward, in float32 on the CPU with PyTorch.

Cases (CASE.*):
  minatar_ppo  minatar-cnn with PPO heads (CleanRL ppo_atari.py's Agent layout: `network`
               Sequential trunk, `actor`, `critic`), C = 4, A = 6, B = 4, every tensor stored
  minatar_dqn  minatar-cnn with the DQN head (CleanRL dqn_atari.py's QNetwork: one Sequential
               `network`, the Q head last), C = 7, A = 3, B = 4, every tensor stored
  nature_ppo   nature-cnn with PPO heads, exactly ppo_atari.py's Agent, A = 6, B = 2; the
               3136x512 weight network.7.weight is not stored (6.4 MB, and its gradient as much
               again) but recreated from a seed in both places, its gradient stored as 4096
               sampled entries and its norm
  nature_dqn   dqn_atari.py's QNetwork: its state_dict names and shapes and its spec only

Weights: CleanRL's own init (layer_init: orthogonal, gain sqrt 2, actor 0.01, critic 1, biases 0;
QNetwork: PyTorch's defaults) from torch.manual_seed(SEED), then every PPO bias replaced by
N(0, BIAS_STD) noise so the bias path is exercised (CleanRL's zero biases would leave it untested).
The seeded weight is the init cudarl's DQN layers use, replayed here in numpy:
  Philox4x32-10, key = SEEDED_SEED, counter (i lo, i hi, stream lo, stream hi), stream =
  SEEDED_STREAM; per element u = ((w0 >> 5) * 2^26 + (w1 >> 6)) * 2^-53 from the next two words,
  value = float32((2 u - 1) / sqrt(fan_in)), fan_in = 3136
so cudarl recreates it bit for bit (checked on its first 16 values, CASE.seeded_head).

The backward is torch.autograd.backward([out, value], [dout, dvalue]) with random dout (B, A) and
dvalue (B): the gradients of the scalar sum(dout * out) + sum(dvalue * value), which is what
cr_convnet_backward is given. The inputs are redrawn until every ReLU pre-activation is at least
MARGIN * (the layer's largest |pre-activation|) away from 0, so float rounding in another order
cannot flip a ReLU between torch and cudarl (measured forward error: about 1e-6 of that scale).

Tensors (NAME = a state_dict name such as network.0.weight or actor.bias):
  CASE.obs              (B, C, H, W) uint8 (nature: 0..255 frames; minatar: 0/1 channels)
  CASE.params.NAME      the parameters (not the seeded one)
  CASE.dout, .dvalue    (B, A), (B) (dvalue: ppo only)
  CASE.features         (B, F) the trunk's output
  CASE.out, .value      (B, A) logits or Q-values, (B) the critic (ppo only)
  CASE.grad.NAME        d / d NAME (all but the seeded one)
  CASE.grad.NAME.idx / .val / .norm   for the seeded one: int32 flat indices, their gradients,
                        and the gradient's Frobenius norm (0-dim)
  CASE.seeded_head      the seeded weight's first 16 values
Metadata: CASE.network  the spec's text form (convnet.h), derived from the torch modules
          CASE.state_dict  JSON [[name, [shape...]], ...] in state_dict order

    python3 tests/golden/golden_convnet.py --out tests/golden/convnet_golden.safetensors

Needs torch, numpy and safetensors; no GPU.
"""

import argparse
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))  # the golden file is written beside this script

FORMAT = "cudarl-golden-convnet"
VERSION = "1"
SEED = 2024
BIAS_STD = 0.05
MARGIN = 1e-5
SEEDED_SEED = 77
SEEDED_STREAM = 7
SEEDED_SAMPLES = 4096


def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    """CleanRL's layer_init (ppo_atari.py), as it is."""
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class NatureAgent(nn.Module):
    """CleanRL ppo_atari.py's Agent."""

    def __init__(self, n_actions):
        super().__init__()
        self.network = nn.Sequential(
            layer_init(nn.Conv2d(4, 32, 8, stride=4)),
            nn.ReLU(),
            layer_init(nn.Conv2d(32, 64, 4, stride=2)),
            nn.ReLU(),
            layer_init(nn.Conv2d(64, 64, 3, stride=1)),
            nn.ReLU(),
            nn.Flatten(),
            layer_init(nn.Linear(64 * 7 * 7, 512)),
            nn.ReLU(),
        )
        self.actor = layer_init(nn.Linear(512, n_actions), std=0.01)
        self.critic = layer_init(nn.Linear(512, 1), std=1)
        self.scale = True


class MinAtarAgent(nn.Module):
    """The same Agent layout on MinAtar's network (observations fed as float, not scaled)."""

    def __init__(self, channels, n_actions):
        super().__init__()
        self.network = nn.Sequential(
            layer_init(nn.Conv2d(channels, 16, 3, stride=1)),
            nn.ReLU(),
            nn.Flatten(),
            layer_init(nn.Linear(16 * 8 * 8, 128)),
            nn.ReLU(),
        )
        self.actor = layer_init(nn.Linear(128, n_actions), std=0.01)
        self.critic = layer_init(nn.Linear(128, 1), std=1)
        self.scale = False


class NatureQNetwork(nn.Module):
    """CleanRL dqn_atari.py's QNetwork."""

    def __init__(self, n_actions):
        super().__init__()
        self.network = nn.Sequential(
            nn.Conv2d(4, 32, 8, stride=4),
            nn.ReLU(),
            nn.Conv2d(32, 64, 4, stride=2),
            nn.ReLU(),
            nn.Conv2d(64, 64, 3, stride=1),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(3136, 512),
            nn.ReLU(),
            nn.Linear(512, n_actions),
        )
        self.scale = True


class MinAtarQNetwork(nn.Module):
    """QNetwork's layout on MinAtar's network."""

    def __init__(self, channels, n_actions):
        super().__init__()
        self.network = nn.Sequential(
            nn.Conv2d(channels, 16, 3, stride=1),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(16 * 8 * 8, 128),
            nn.ReLU(),
            nn.Linear(128, n_actions),
        )
        self.scale = False


def is_ppo(net):
    return hasattr(net, "actor")


def trunk(net):
    """The trunk's modules: all of `network`, less the Q head for a QNetwork."""
    mods = list(net.network)
    return mods if is_ppo(net) else mods[:-1]


def spec_text(net, name, in_shape, n_actions):
    """The spec's text form (src/nn/convnet.h), read off the torch modules."""
    layers = []
    for m in trunk(net):
        if isinstance(m, nn.Conv2d):
            assert m.stride[0] == m.stride[1] and m.padding[0] == m.padding[1]
            layers.append({"type": "conv", "out": m.out_channels, "kernel": list(m.kernel_size),
                           "stride": m.stride[0], "pad": m.padding[0]})
        elif isinstance(m, nn.Linear):
            layers.append({"type": "linear", "out": m.out_features})
        elif isinstance(m, nn.ReLU):
            layers.append({"type": "relu"})
        elif isinstance(m, nn.Flatten):
            layers.append({"type": "flatten"})
        else:
            raise TypeError(m)
    spec = {"format": "cudarl-convnet", "version": 1, "name": name,
            "input": {"shape": list(in_shape), "dtype": "u8",
                      "scale": "1/255" if net.scale else "none"},
            "layers": layers,
            "heads": {"type": "ppo" if is_ppo(net) else "dqn", "actions": n_actions}}
    return json.dumps(spec, separators=(",", ":"))


def state_dict_text(net):
    return json.dumps([[k, list(v.shape)] for k, v in net.state_dict().items()],
                      separators=(",", ":"))


def philox_words(seed, stream, n):
    """The first n words of cudarl's Philox4x32-10 stream (core/philox.h)."""
    mask = np.uint64(0xFFFFFFFF)
    blocks = (n + 3) // 4
    i = np.arange(blocks, dtype=np.uint64)
    c = [i & mask, i >> np.uint64(32), np.full(blocks, stream & 0xFFFFFFFF, np.uint64),
         np.full(blocks, stream >> 32, np.uint64)]
    k0, k1 = seed & 0xFFFFFFFF, seed >> 32
    for _ in range(10):
        p0 = np.uint64(0xD2511F53) * c[0]
        p1 = np.uint64(0xCD9E8D57) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ np.uint64(k0), p1 & mask,
             (p0 >> np.uint64(32)) ^ c[3] ^ np.uint64(k1), p0 & mask]
        k0, k1 = (k0 + 0x9E3779B9) & 0xFFFFFFFF, (k1 + 0xBB67AE85) & 0xFFFFFFFF
    return np.stack(c, axis=1).reshape(-1)[:n]


def seeded_weight(shape, fan_in):
    """cudarl's default-init draw of a weight on stream SEEDED_STREAM of SEEDED_SEED."""
    count = int(np.prod(shape))
    w = philox_words(SEEDED_SEED, SEEDED_STREAM, 2 * count)
    u = ((w[0::2] >> np.uint64(5)) * np.uint64(67108864) + (w[1::2] >> np.uint64(6)))
    u = u.astype(np.float64) * (1.0 / 9007199254740992.0)
    return torch.from_numpy(((2.0 * u - 1.0) * (1.0 / math.sqrt(fan_in))).astype(np.float32)
                            .reshape(shape))


def forward(net, obs):
    """(features, out, value or None) and the pre-activations of every ReLU."""
    x = obs.float() / 255.0 if net.scale else obs.float()
    pre = []
    mods = list(net.network)
    for m in mods[:len(trunk(net))]:
        if isinstance(m, nn.ReLU):
            pre.append(x.detach())
        x = m(x)
    if is_ppo(net):
        return x, net.actor(x), net.critic(x).view(-1), pre
    return x, mods[-1](x), None, pre


def margin_ok(pre):
    return all(float(z.abs().min()) >= MARGIN * float(z.abs().max()) for z in pre)


def draw_obs(rng, b, c, nature):
    if nature:
        return torch.from_numpy(rng.integers(0, 256, size=(b, c, 84, 84), dtype=np.uint8))
    return torch.from_numpy((rng.random((b, c, 10, 10)) < 0.3).astype(np.uint8))


def snapshot(t):
    return t.detach().clone().contiguous()


def run_case(case, net, name, in_shape, n_actions, batch, rng, tensors, meta, seeded=None):
    meta[case + ".network"] = spec_text(net, name, in_shape, n_actions)
    meta[case + ".state_dict"] = state_dict_text(net)
    if is_ppo(net):
        with torch.no_grad():
            for k, p in net.named_parameters():
                if k.endswith(".bias"):
                    p.copy_(torch.randn(p.shape) * BIAS_STD)
    params = dict(net.named_parameters())
    if seeded:
        w = params[seeded]
        with torch.no_grad():
            w.copy_(seeded_weight(tuple(w.shape), w.shape[1]))
        tensors[case + ".seeded_head"] = snapshot(w.reshape(-1)[:16])
    for tries in range(100):
        obs = draw_obs(rng, batch, in_shape[0], name == "nature-cnn")
        feats, out, value, pre = forward(net, obs)
        if margin_ok(pre):
            break
    else:
        raise RuntimeError(case + ": no input kept every ReLU off its kink")
    dout = torch.from_numpy(rng.normal(0.0, 1.0, size=tuple(out.shape)).astype(np.float32))
    net.zero_grad()
    if value is not None:
        dvalue = torch.from_numpy(rng.normal(0.0, 1.0, size=(batch,)).astype(np.float32))
        torch.autograd.backward([out, value], [dout, dvalue])
        tensors[case + ".dvalue"] = dvalue
        tensors[case + ".value"] = snapshot(value)
    else:
        out.backward(dout)
    tensors[case + ".obs"] = snapshot(obs)
    tensors[case + ".dout"] = dout
    tensors[case + ".features"] = snapshot(feats)
    tensors[case + ".out"] = snapshot(out)
    for k, p in params.items():
        g = p.grad.reshape(-1)
        if k == seeded:
            idx = torch.from_numpy(rng.integers(0, g.numel(), size=SEEDED_SAMPLES)
                                   .astype(np.int32))
            tensors["%s.grad.%s.idx" % (case, k)] = idx
            tensors["%s.grad.%s.val" % (case, k)] = snapshot(g[idx.long()])
            tensors["%s.grad.%s.norm" % (case, k)] = snapshot(
                g.double().norm().float().reshape(()))
            continue
        tensors["%s.params.%s" % (case, k)] = snapshot(p)
        tensors["%s.grad.%s" % (case, k)] = snapshot(p.grad)
    margins = ", ".join("%.1e" % (float(z.abs().min()) / float(z.abs().max())) for z in pre)
    alive = ", ".join("%.2f" % float((z > 0).float().mean()) for z in pre)
    print("%-12s %d draw(s); min |pre-act| / max per ReLU: %s; alive: %s"
          % (case, tries + 1, margins, alive))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "convnet_golden.safetensors"),
                    help="output safetensors file (default: %(default)s)")
    args = ap.parse_args()

    torch.set_default_dtype(torch.float32)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    rng = np.random.default_rng(SEED)
    tensors, meta = {}, {}

    run_case("minatar_ppo", MinAtarAgent(4, 6), "minatar-cnn", (4, 10, 10), 6, 4, rng, tensors,
             meta)
    run_case("minatar_dqn", MinAtarQNetwork(7, 3), "minatar-cnn", (7, 10, 10), 3, 4, rng,
             tensors, meta)
    run_case("nature_ppo", NatureAgent(6), "nature-cnn", (4, 84, 84), 6, 2, rng, tensors, meta,
             seeded="network.7.weight")
    q = NatureQNetwork(4)
    meta["nature_dqn.network"] = spec_text(q, "nature-cnn", (4, 84, 84), 4)
    meta["nature_dqn.state_dict"] = state_dict_text(q)

    for k, v in tensors.items():
        assert torch.isfinite(v.double()).all(), k
    meta.update({
        "format": FORMAT,
        "version": VERSION,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "seed": str(SEED),
        "cases": "minatar_ppo,minatar_dqn,nature_ppo",
        "layout_only": "nature_dqn",
        "seeded_seed": str(SEEDED_SEED),
        "seeded_stream": str(SEEDED_STREAM),
        "margin": repr(MARGIN),
    })
    # Wider dtypes first keeps every tensor aligned in the file (the u8 frames go last).
    tensors = {k: v.contiguous() for k, v in sorted(tensors.items(),
                                                    key=lambda kv: (-kv[1].element_size(), kv[0]))}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    tmp = args.out + ".tmp"
    save_file(tensors, tmp, metadata=meta)
    os.replace(tmp, args.out)
    size = os.path.getsize(args.out)
    print("wrote %s: %d tensors, %d bytes, torch %s" % (args.out, len(tensors), size,
                                                        torch.__version__))
    assert size < 3_000_000, "the golden file should stay under 3 MB"
    return 0


if __name__ == "__main__":
    sys.exit(main())
