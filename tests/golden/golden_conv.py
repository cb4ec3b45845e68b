#!/usr/bin/env python3
"""Golden reference for the convolution ops: two small convolutional networks, forward and
backward of a scalar loss, in float32 on the CPU with PyTorch.

  nature   CleanRL's Atari trunk (Nature-CNN) on a batch of B_NATURE 84x84x4 uint8 frames:
           x / 255 -> conv 32@8x8/4 -> relu -> conv 64@4x4/2 -> relu -> conv 64@3x3/1 -> relu
           -> flatten (3136) -> fc NATURE_FC -> relu -> head A
  minatar  The MinAtar net on a batch of B_MINATAR 10x10xC float observations (0/1 channels):
           conv 16@3x3/1 -> relu -> flatten (1024) -> fc MINATAR_FC -> relu -> head A

The convolutions have the real shapes. The fully connected widths are cut (512 -> 16 and
128 -> 32) only to keep the file under 2 MB: a 3136x512 weight and its gradient alone are 13 MB,
and the FC layer is cr_cpu_linear_*, tested on its own.

The loss is  0.5 * mean((head - target)^2)  per network; its gradient w.r.t. the head is
(head - target) / head.numel(). Weights are CleanRL's layer_init (orthogonal, gain sqrt 2; the
head 0.01 in CleanRL, 1.0 here so the gradients are not tiny) with small random biases (CleanRL
uses 0, which would leave the bias path untested).

    python3 tests/golden/golden_conv.py --out tests/golden/conv_golden.safetensors

Tensor names, NET = nature or minatar, LAYER = conv1, conv2, conv3 (nature), conv1 (minatar),
fc, head:
  NET.obs                    input: (B, 4, 84, 84) u8 (nature), (B, 4, 10, 10) f32 (minatar)
  NET.LAYER.weight / .bias   parameters, PyTorch layouts: conv (K, C, R, S), fc (O, I)
  NET.LAYER.out              the layer's output after its ReLU (head: no ReLU), NCHW for convs
  NET.target                 (B, A) regression target of the loss
  NET.loss                   0-dim
  NET.grad.LAYER.weight / .bias   d loss / d parameter
  minatar.grad.obs           d loss / d input (nature's input is uint8: no gradient)

Needs torch, numpy and safetensors; no GPU.
"""

import argparse
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))  # the golden file is written beside this script

FORMAT = "cudarl-golden-conv"
VERSION = "1"
SEED = 4321

B_NATURE = 2
B_MINATAR = 4
NATURE_FC = 16
MINATAR_FC = 32
MINATAR_C = 4
A = 6
BIAS_STD = 0.05


def layer_init(layer, std=math.sqrt(2)):
    torch.nn.init.orthogonal_(layer.weight, std)
    with torch.no_grad():
        layer.bias.copy_(torch.randn(layer.bias.shape) * BIAS_STD)
    return layer


class Nature(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = layer_init(nn.Conv2d(4, 32, 8, stride=4))
        self.conv2 = layer_init(nn.Conv2d(32, 64, 4, stride=2))
        self.conv3 = layer_init(nn.Conv2d(64, 64, 3, stride=1))
        self.fc = layer_init(nn.Linear(64 * 7 * 7, NATURE_FC))
        self.head = layer_init(nn.Linear(NATURE_FC, A), std=1.0)
        self.layers = ["conv1", "conv2", "conv3", "fc", "head"]

    def forward(self, obs_u8):
        x = obs_u8.float() / 255.0
        outs = {}
        x = outs["conv1"] = torch.relu(self.conv1(x))
        x = outs["conv2"] = torch.relu(self.conv2(x))
        x = outs["conv3"] = torch.relu(self.conv3(x))
        x = outs["fc"] = torch.relu(self.fc(torch.flatten(x, 1)))
        outs["head"] = self.head(x)
        return outs


class MinAtar(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = layer_init(nn.Conv2d(MINATAR_C, 16, 3, stride=1))
        self.fc = layer_init(nn.Linear(16 * 8 * 8, MINATAR_FC))
        self.head = layer_init(nn.Linear(MINATAR_FC, A), std=1.0)
        self.layers = ["conv1", "fc", "head"]

    def forward(self, obs):
        outs = {}
        x = outs["conv1"] = torch.relu(self.conv1(obs))
        x = outs["fc"] = torch.relu(self.fc(torch.flatten(x, 1)))
        outs["head"] = self.head(x)
        return outs


def snapshot(t):
    return t.detach().clone().contiguous()


def run(net, name, obs, target, tensors, obs_grad):
    tensors[name + ".obs"] = snapshot(obs)
    tensors[name + ".target"] = snapshot(target)
    for layer in net.layers:
        mod = getattr(net, layer)
        tensors["%s.%s.weight" % (name, layer)] = snapshot(mod.weight)
        tensors["%s.%s.bias" % (name, layer)] = snapshot(mod.bias)
    if obs_grad:
        obs.requires_grad_(True)
    outs = net(obs)
    loss = 0.5 * ((outs["head"] - target) ** 2).mean()
    net.zero_grad()
    loss.backward()
    for layer in net.layers:
        mod = getattr(net, layer)
        tensors["%s.%s.out" % (name, layer)] = snapshot(outs[layer])
        tensors["%s.grad.%s.weight" % (name, layer)] = snapshot(mod.weight.grad)
        tensors["%s.grad.%s.bias" % (name, layer)] = snapshot(mod.bias.grad)
    if obs_grad:
        tensors[name + ".grad.obs"] = snapshot(obs.grad)
    tensors[name + ".loss"] = snapshot(loss.reshape(()))
    alive = ", ".join("%s %.2f" % (l, float((outs[l] > 0).float().mean()))
                      for l in net.layers[:-1])
    print("%-7s loss %.6f; fraction of ReLUs alive: %s" % (name, loss.item(), alive))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "conv_golden.safetensors"),
                    help="output safetensors file (default: %(default)s)")
    args = ap.parse_args()

    torch.set_default_dtype(torch.float32)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    rng = np.random.default_rng(SEED)
    tensors = {}

    nature = Nature()
    frames = torch.from_numpy(rng.integers(0, 256, size=(B_NATURE, 4, 84, 84), dtype=np.uint8))
    target = torch.from_numpy(rng.normal(0.0, 1.0, size=(B_NATURE, A)).astype(np.float32))
    run(nature, "nature", frames, target, tensors, obs_grad=False)

    minatar = MinAtar()
    obs = torch.from_numpy((rng.random((B_MINATAR, MINATAR_C, 10, 10)) < 0.3).astype(np.float32))
    target = torch.from_numpy(rng.normal(0.0, 1.0, size=(B_MINATAR, A)).astype(np.float32))
    run(minatar, "minatar", obs, target, tensors, obs_grad=True)

    for k, v in tensors.items():
        assert torch.isfinite(v.double()).all(), k

    metadata = {
        "format": FORMAT,
        "version": VERSION,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "seed": str(SEED),
        "B_nature": str(B_NATURE),
        "B_minatar": str(B_MINATAR),
        "nature_fc": str(NATURE_FC),
        "minatar_fc": str(MINATAR_FC),
        "minatar_channels": str(MINATAR_C),
        "actions": str(A),
    }
    # Wider dtypes first keeps every tensor aligned in the file (the u8 frames go last).
    tensors = {k: v.contiguous() for k, v in sorted(tensors.items(),
                                                    key=lambda kv: (-kv[1].element_size(), kv[0]))}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    tmp = args.out + ".tmp"
    save_file(tensors, tmp, metadata=metadata)
    os.replace(tmp, args.out)
    size = os.path.getsize(args.out)
    print("wrote %s: %d tensors, %d bytes, torch %s" % (args.out, len(tensors), size,
                                                        torch.__version__))
    assert size < 2 << 20, "the golden file should stay under 2 MB"
    return 0


if __name__ == "__main__":
    sys.exit(main())
