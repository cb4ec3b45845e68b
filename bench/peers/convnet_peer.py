"""PyTorch peer of bench/bench_convnet_cuda.cu: one learner step of a convolutional policy.

The step is what bench_convnet_cuda times: forward on a batch of uint8 observations, backward from
a given output gradient (torch.autograd.backward(outputs, grads): the loss's own arithmetic left
out on both sides), and Adam on the parameters, after CleanRL's optimizer.zero_grad(). The modules
are CleanRL's, as written:

  * QNetwork of cleanrl/dqn_atari.py (nature-cnn: Conv 32@8x8/4, 64@4x4/2, 64@3x3/1, Linear
    3136 -> 512, Linear 512 -> actions; forward(x) = network(x / 255.0)), PyTorch's default init,
    Adam(lr 1e-4);
  * Agent of cleanrl/ppo_atari.py (the same trunk with layer_init's orthogonal weights, actor
    Linear(512, actions), critic Linear(512, 1); both heads on one trunk pass), Adam(lr 2.5e-4,
    eps 1e-5); the step backpropagates into both heads;
  * the MinAtar Q-network (minatar-cnn: Conv 16@3x3/1, Linear 1024 -> 128, Linear 128 ->
    actions; the 0/1 channels cast to float, not scaled) on Breakout's 4x10x10, 3 actions.

Same batches, actions and output gradients' scale as the cudarl benchmark. Precision: fp32 with
CleanRL's torch.backends.cudnn.deterministic = True (its --torch-deterministic default) and TF32
off (torch.backends.cudnn.allow_tf32 = False; matmuls are fp32 by default), which is what cudarl
computes. For reference a third figure runs PyTorch's defaults (cuDNN free to pick
non-deterministic algorithms, TF32 tensor cores for the convolutions).

Timing, as bench_convnet_cuda: GPU time between two CUDA events around one step on the current
stream, median of --reps after 10 warm-up steps:
  eager  the step as CleanRL runs it (Python, autograd, Adam's default foreach implementation);
  graph  the step captured once with torch.cuda.graph (Adam(capturable=True)), then replayed.
With --compare FILE (bench_convnet_cuda --json's output) it prints both side by side and a last
line with the issue's acceptance figure: the Nature-CNN QNetwork step at batch 32, cudarl's
graph-replayed step against PyTorch eager fp32.

  python3 bench/peers/convnet_peer.py --compare /tmp/out/bench_convnet.json
  python3 bench/peers/convnet_peer.py --device cpu --reps 3      # a smoke test without a GPU
"""

import argparse
import json
import statistics
import time

import numpy as np
import torch
import torch.nn as nn

WARMUP = 10

# name, module, input (C, H, W), actions, batch: bench_convnet_cuda's cases, in its order
CASES = [
    ("nature-cnn", "QNetwork", (4, 84, 84), 6, 32),
    ("nature-cnn", "QNetwork", (4, 84, 84), 6, 256),
    ("nature-cnn", "Agent", (4, 84, 84), 6, 32),
    ("nature-cnn", "Agent", (4, 84, 84), 6, 256),
    ("minatar-cnn", "QNetwork", (4, 10, 10), 3, 32),
]


def layer_init(layer, std=np.sqrt(2), bias_const=0.0):  # cleanrl/ppo_atari.py
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class QNetwork(nn.Module):  # cleanrl/dqn_atari.py
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

    def forward(self, x):
        return (self.network(x / 255.0),)


class Agent(nn.Module):  # cleanrl/ppo_atari.py: get_action_and_value's network pass
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

    def forward(self, x):
        hidden = self.network(x / 255.0)
        return self.actor(hidden), self.critic(hidden)


class MinAtarQNetwork(nn.Module):  # MinAtar's DQN network, cudarl's minatar-cnn
    def __init__(self, in_channels, n_actions):
        super().__init__()
        self.network = nn.Sequential(
            nn.Conv2d(in_channels, 16, 3, stride=1),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(16 * 8 * 8, 128),
            nn.ReLU(),
            nn.Linear(128, n_actions),
        )

    def forward(self, x):
        return (self.network(x.float()),)


def build(case, device, capturable):
    name, module, (c, h, w), actions, batch = case
    torch.manual_seed(1)
    if name == "minatar-cnn":
        model = MinAtarQNetwork(c, actions)
    elif module == "Agent":
        model = Agent(actions)
    else:
        model = QNetwork(actions)
    model = model.to(device)
    lr, eps = (2.5e-4, 1e-5) if module == "Agent" else (1e-4, 1e-8)
    kw = {"capturable": True} if capturable else {}
    opt = torch.optim.Adam(model.parameters(), lr=lr, eps=eps, **kw)
    g = torch.Generator().manual_seed(2)
    if name == "minatar-cnn":
        obs = torch.randint(0, 2, (batch, c, h, w), generator=g, dtype=torch.uint8)
    else:
        obs = torch.randint(0, 256, (batch, c, h, w), generator=g, dtype=torch.uint8)
    obs = obs.to(device)
    shapes = [(batch, actions)] + ([(batch, 1)] if module == "Agent" else [])
    grads = [((torch.rand(s, generator=g) * 2 - 1) / batch).to(device) for s in shapes]
    return model, opt, obs, grads


def median_ms(fn, reps, device):
    times = []
    for r in range(reps + WARMUP):
        if device == "cuda":
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            ms = a.elapsed_time(b)
        else:
            t0 = time.perf_counter()
            fn()
            ms = (time.perf_counter() - t0) * 1e3
        if r >= WARMUP:
            times.append(ms)
    return statistics.median(times)


def time_eager(case, reps, device):
    model, opt, obs, grads = build(case, device, capturable=False)

    def step():
        opt.zero_grad()
        outs = model(obs)
        torch.autograd.backward(outs, grads)
        opt.step()

    return median_ms(step, reps, device)


def time_amp(case, reps, dtype, channels_last=False):
    """The seed's mixed-precision step: torch.autocast, and for float16 torch.amp.GradScaler
    (scale the loss, backward, unscale + step unless inf, update); the output gradients enter
    as the loss sum(out * grad), whose gradient they are. channels_last: the model's weights and
    the observations in torch.channels_last (NHWC), cuDNN's fastest layout on tensor cores."""
    model, opt, obs, grads = build(case, "cuda", capturable=False)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
        obs = obs.contiguous(memory_format=torch.channels_last)
    scaler = torch.amp.GradScaler("cuda") if dtype == torch.float16 else None

    def step():
        opt.zero_grad()
        with torch.autocast("cuda", dtype=dtype):
            outs = model(obs)
        loss = sum((o.float() * g).sum() for o, g in zip(outs, grads))
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()

    return median_ms(step, reps, "cuda")


def time_graph(case, reps):
    """torch.cuda.graph's whole-network capture (PyTorch's CUDA graphs notes)."""
    model, opt, obs, grads = build(case, "cuda", capturable=True)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            torch.autograd.backward(model(obs), grads)
            opt.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        torch.autograd.backward(model(obs), grads)
        opt.step()
    return median_ms(graph.replay, reps, "cuda")


def set_fp32(on):
    """on: CleanRL's deterministic cuDNN, no TF32; off: PyTorch's defaults."""
    torch.backends.cudnn.deterministic = on
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.allow_tf32 = not on
    torch.backends.cuda.matmul.allow_tf32 = False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--compare", help="bench_convnet_cuda --json output to print beside")
    ap.add_argument("--json", help="write the peer's figures here")
    ap.add_argument("--case", type=int, help="only the K-th case (0-based), as bench_convnet_cuda")
    ap.add_argument("--batch", type=int, help="every case at this batch, as bench_convnet_cuda")
    args = ap.parse_args()
    cases = CASES
    if args.case is not None:
        if not 0 <= args.case < len(CASES):
            ap.error(f"--case {args.case}: choose 0 .. {len(CASES) - 1}")
        cases = [CASES[args.case]]
    if args.batch is not None:
        if args.batch < 1:
            ap.error(f"--batch {args.batch}: must be at least 1")
        cases = [c[:4] + (args.batch,) for c in cases]
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("convnet_peer: no CUDA device for torch; use --device cpu")
    dev = args.device
    name = torch.cuda.get_device_name(0) if dev == "cuda" else "cpu"
    print(f"PyTorch {torch.__version__} (cuDNN {torch.backends.cudnn.version()}), {name}, "
          f"median of {args.reps}\n")
    rows = []
    for case in cases:
        set_fp32(True)
        eager = time_eager(case, args.reps, dev)
        graph = time_graph(case, args.reps) if dev == "cuda" else float("nan")
        set_fp32(False)
        default = time_eager(case, args.reps, dev)
        amp = {}
        if dev == "cuda":
            amp = {"amp_bf16_ms": time_amp(case, args.reps, torch.bfloat16),
                   "amp_fp16_ms": time_amp(case, args.reps, torch.float16),
                   "amp_bf16_cl_ms": time_amp(case, args.reps, torch.bfloat16, True)}
        set_fp32(True)
        rows.append({"net": case[0], "module": case[1], "batch": case[4], "eager_ms": eager,
                     "graph_ms": graph, "eager_default_ms": default, **amp})
    print("| network | batch | PyTorch eager fp32 ms | PyTorch graph fp32 ms "
          "| PyTorch eager, defaults (TF32 convs) ms | autocast bf16 ms "
          "| autocast fp16 + GradScaler ms | autocast bf16, channels_last ms |\n"
          "|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['net']} {r['module']} | {r['batch']} | {r['eager_ms']:.3f} "
              f"| {r['graph_ms']:.3f} | {r['eager_default_ms']:.3f} "
              f"| {r.get('amp_bf16_ms', float('nan')):.3f} "
              f"| {r.get('amp_fp16_ms', float('nan')):.3f} "
              f"| {r.get('amp_bf16_cl_ms', float('nan')):.3f} |")
    print()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": name, "torch": torch.__version__, "reps": args.reps,
                       "rows": rows}, f, indent=1)
    if args.compare:
        compare(args.compare, rows)


def compare(path, rows):
    with open(path) as f:
        ours = json.load(f)
    print(f"cudarl ({ours['device']}) against PyTorch, learner step ms (GPU time, median):\n")
    print("| network | batch | cudarl graph (engine) | cudarl eager | PyTorch eager fp32 "
          "| PyTorch graph fp32 | cudarl graph vs PyTorch eager fp32 |\n"
          "|---|---:|---:|---:|---:|---:|---:|")
    accept = None
    for r in rows:
        mine = [o for o in ours["rows"] if o["net"] == r["net"] and o["module"] == r["module"]
                and o["batch"] == r["batch"] and o.get("precision", "fp32") == "fp32"]
        if not mine:
            continue
        best = min(mine, key=lambda o: o["graph_ms"])
        ratio = r["eager_ms"] / best["graph_ms"]
        print(f"| {r['net']} {r['module']} | {r['batch']} | {best['graph_ms']:.3f} "
              f"({best['engine']}) | {best['eager_ms']:.3f} | {r['eager_ms']:.3f} "
              f"| {r['graph_ms']:.3f} | {ratio:.2f}x |")
        if r["net"] == "nature-cnn" and r["module"] == "QNetwork" and r["batch"] == 32:
            accept = (best, r, ratio)
    print()
    tf32 = [(r, [o for o in ours["rows"] if o["net"] == r["net"] and o["module"] == r["module"]
                 and o["batch"] == r["batch"] and o.get("precision") == "tf32"]) for r in rows]
    if any(m for _, m in tf32):
        print("| network | batch | cudarl graph tf32 (engine) | cudarl graph fp32 "
              "| PyTorch eager, defaults (TF32 convs) | cudarl tf32 vs its fp32 "
              "| cudarl tf32 vs PyTorch defaults |\n|---|---:|---:|---:|---:|---:|---:|")
        for r, m in tf32:
            if not m:
                continue
            t = min(m, key=lambda o: o["graph_ms"])
            f = min((o for o in ours["rows"] if o["net"] == r["net"] and o["module"] == r["module"]
                     and o["batch"] == r["batch"] and o.get("precision", "fp32") == "fp32"),
                    key=lambda o: o["graph_ms"])
            print(f"| {r['net']} {r['module']} | {r['batch']} | {t['graph_ms']:.3f} "
                  f"({t['engine']}) | {f['graph_ms']:.3f} | {r['eager_default_ms']:.3f} "
                  f"| {f['graph_ms'] / t['graph_ms']:.2f}x "
                  f"| {r['eager_default_ms'] / t['graph_ms']:.2f}x |")
        print()
    half = [(r, {p: [o for o in ours["rows"] if o["net"] == r["net"]
                     and o["module"] == r["module"] and o["batch"] == r["batch"]
                     and o.get("precision") == p] for p in ("bf16", "fp16")}) for r in rows]
    verdicts = []
    if any(m["bf16"] or m["fp16"] for _, m in half):
        print("| network | batch | precision | cudarl graph (engine) | cudarl fp32 graph "
              "| PyTorch AMP eager | PyTorch AMP channels_last | vs cudarl fp32 "
              "| vs PyTorch's best AMP |\n|---|---:|---|---:|---:|---:|---:|---:|---:|")
        for r, m in half:
            f = [o for o in ours["rows"] if o["net"] == r["net"] and o["module"] == r["module"]
                 and o["batch"] == r["batch"] and o.get("precision", "fp32") == "fp32"]
            for p in ("bf16", "fp16"):
                if not m[p] or f"amp_{p}_ms" not in r:
                    continue
                t = min(m[p], key=lambda o: o["graph_ms"])
                f32 = min(f, key=lambda o: o["graph_ms"])["graph_ms"] if f else float("nan")
                peer = r[f"amp_{p}_ms"]
                cl = r.get(f"amp_{p}_cl_ms", float("nan"))
                best = min(peer, cl) if cl == cl else peer
                print(f"| {r['net']} {r['module']} | {r['batch']} | {p} | {t['graph_ms']:.3f} "
                      f"({t['engine']}) | {f32:.3f} | {peer:.3f} | {cl:.3f} "
                      f"| {f32 / t['graph_ms']:.2f}x | {best / t['graph_ms']:.2f}x |")
                for o in sorted(m[p], key=lambda o: o["engine"]):
                    if o is not t:
                        print(f"|  |  | {p} | {o['graph_ms']:.3f} ({o['engine']}) | | | | "
                              f"| {best / o['graph_ms']:.2f}x |")
                if r["net"] == "nature-cnn" and r["module"] == "Agent" and r["batch"] == 256 and f:
                    own, vs = f32 / t["graph_ms"], peer / t["graph_ms"]
                    ok = own >= 1.5 and vs >= 2
                    verdicts.append(f"Nature-CNN Agent learner step, batch 256, {p}: {own:.2f}x "
                                    f"cudarl fp32 and {vs:.2f}x PyTorch AMP "
                                    f"({'meets' if ok else 'MISSES'} issue 7's 1.5x and 2x)")
        print()
        print("\n".join(verdicts) + "\n")
    if accept:
        best, r, ratio = accept
        print(f"Nature-CNN QNetwork learner step, batch 32: cudarl {best['graph_ms']:.3f} ms "
              f"(graph, {best['engine']}) vs PyTorch eager fp32 {r['eager_ms']:.3f} ms: "
              f"{ratio:.2f}x ({'meets' if ratio >= 3 else 'MISSES'} the issue's 3x)")


if __name__ == "__main__":
    main()
