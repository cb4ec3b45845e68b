"""PyTorch's convolutions on the shapes of conv_train_bench.cu: the peer beside the lab.

The Nature-CNN's three training convolutions (conv1 4->32 8x8/4 on 84x84, conv2 32->64 4x4/2 on
20x20, conv3 64->64 3x3/1 on 9x9, no padding, no bias) in bf16 with channels_last tensors, as
autocast + channels_last runs them in PyTorch's 16.8 ms learner step (bench/RESULTS.md), per pass:
forward (F.conv2d), backward data and backward filter (aten.convolution_backward with one output
each). PyTorch reaches cuDNN through its graph API (cudnn-frontend), not the legacy
cudnnConvolution* calls conv_train_bench.cu times, so this shows what the engines the legacy API
does not list would give. torch.backends.cudnn.benchmark on (it times cuDNN's engine configs at
the first call of a shape; that call is timed apart as "first call"), then the median of --reps
calls between CUDA events, with cudnn.deterministic on and then off.

Usage: python3 dev/cuda/conv_train_torch.py [--batch N]... [--reps N] [--deadline S]
       [--device cuda|cpu]   (cpu: a smoke test of the script, timed by the host clock)
Exit 0 done, 1 no GPU or a failure, 2 bad usage, 3 cut short by the deadline.
"""
import argparse
import statistics
import sys
import time

LAYERS = [  # name, C, H (= W), K, R (= S), stride; output P = (H - R) / stride + 1
    ("conv1 4->32 8x8/4 84x84", 4, 84, 32, 8, 4),
    ("conv2 32->64 4x4/2 20x20", 32, 20, 64, 4, 2),
    ("conv3 64->64 3x3/1 9x9", 64, 9, 64, 3, 1),
]
PASSES = ("fwd", "dgrad", "wgrad")


def macs(batch, layer):
    _, c, h, k, r, s = layer
    p = (h - r) // s + 1
    return batch * k * p * p * c * r * r


def positive(text):
    v = int(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"{text}: want an integer >= 1")
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=positive, action="append",
                    help="a batch size (repeatable; default 16384 and 4096)")
    ap.add_argument("--reps", type=positive, default=10, help="timed calls per median")
    ap.add_argument("--deadline", type=positive, default=40,
                    help="seconds after which the rest is skipped")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    a = ap.parse_args()
    batches = a.batch or [16384, 4096]
    t0 = time.monotonic()

    import torch
    import torch.nn.functional as F

    if a.device == "cuda" and not torch.cuda.is_available():
        print("conv_train_torch: torch sees no GPU (torch.cuda.is_available() is False); run it "
              "on the GPU machine, or --device cpu for a smoke test")
        return 1
    dev = torch.device(a.device)
    cuda = dev.type == "cuda"
    name = torch.cuda.get_device_name(dev) if cuda else "CPU"
    print(f"conv_train_torch: PyTorch {torch.__version__}, cuDNN "
          f"{torch.backends.cudnn.version() if cuda else '-'}, {name}; bf16 channels_last, "
          f"cudnn.benchmark on; median of {a.reps}; deadline {a.deadline} s", flush=True)
    torch.backends.cudnn.benchmark = True
    cl = torch.channels_last
    cut = False
    res = {}  # (batch, det, layer index, pass) -> ms

    def timed(fn):
        """ms of the first call, then the median ms of a.reps calls."""
        def one():
            if cuda:
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                fn()
                e1.record()
                e1.synchronize()
                return e0.elapsed_time(e1)
            s = time.perf_counter()
            fn()
            return 1e3 * (time.perf_counter() - s)
        first = one()
        for _ in range(2):
            fn()
        return first, statistics.median(one() for _ in range(a.reps))

    for batch in batches:
        for det in (True, False):
            torch.backends.cudnn.deterministic = det
            for li, layer in enumerate(LAYERS):
                lname, c, h, k, r, s = layer
                if time.monotonic() - t0 > a.deadline:
                    print(f"  [deadline {a.deadline} s passed: skipped batch {batch} "
                          f"deterministic={det} {lname}]", flush=True)
                    cut = True
                    continue
                g = torch.Generator(device=dev).manual_seed(li)
                bound = 1.0 / (c * r * r) ** 0.5
                x = torch.rand(batch, c, h, h, device=dev, generator=g).to(torch.bfloat16)
                x = x.contiguous(memory_format=cl)
                w = ((torch.rand(k, c, r, r, device=dev, generator=g) * 2 - 1) * bound)
                w = w.to(torch.bfloat16).contiguous(memory_format=cl)
                y = F.conv2d(x, w, stride=s)
                dy = (torch.rand(y.shape, device=dev, generator=g) - 0.5).to(torch.bfloat16)
                dy = dy.contiguous(memory_format=cl)
                conv_args = (None, [s, s], [0, 0], [1, 1], False, [0, 0], 1)
                fns = {
                    "fwd": lambda: F.conv2d(x, w, stride=s),
                    "dgrad": lambda: torch.ops.aten.convolution_backward(
                        dy, x, w, *conv_args, [True, False, False]),
                    "wgrad": lambda: torch.ops.aten.convolution_backward(
                        dy, x, w, *conv_args, [False, True, False]),
                }
                for p in PASSES:
                    if p == "dgrad" and li == 0:
                        continue
                    try:
                        first, ms = timed(fns[p])
                    except RuntimeError as e:  # an engine refused: say so, go on
                        print(f"batch {batch} det={det!s:5} {lname} {p}: failed: {e}",
                              flush=True)
                        continue
                    res[(batch, det, li, p)] = ms
                    tf = 2 * macs(batch, layer) / ms / 1e9
                    print(f"batch {batch:6} deterministic={det!s:5} {lname:26} {p:5} "
                          f"{ms:9.3f} ms {tf:8.1f} TFLOP/s (first call {first:.1f} ms)",
                          flush=True)
                del x, w, y, dy, fns
                if cuda:
                    torch.cuda.empty_cache()

    print("\nPyTorch, the convolutions of one learner step (3 fwd + dgrad conv2, conv3 + 3 "
          "wgrad), ms:\n\n| batch | cudnn.deterministic | fwd sum | bwd sum | step sum | "
          "TFLOP/s |\n|---:|---|---:|---:|---:|---:|")
    for batch in batches:
        flops = sum(2 * macs(batch, l) * (3 if i else 2) for i, l in enumerate(LAYERS))
        for det in (True, False):
            keys = [(batch, det, li, p) for li in range(3) for p in PASSES
                    if not (p == "dgrad" and li == 0)]
            if any(k not in res for k in keys):
                print(f"| {batch} | {det} | incomplete | | | |")
                continue
            f = sum(res[k] for k in keys if k[3] == "fwd")
            b = sum(res[k] for k in keys if k[3] != "fwd")
            print(f"| {batch} | {det} | {f:.3f} | {b:.3f} | {f + b:.3f} | "
                  f"{flops / (f + b) / 1e9:.0f} |")
    print(f"total {time.monotonic() - t0:.1f} s"
          + (" (the deadline cut the run short)" if cut else ""), flush=True)
    return 3 if cut else 0


if __name__ == "__main__":
    sys.exit(main())
