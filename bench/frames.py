#!/usr/bin/env python3
"""Camera frames to a pixel policy's actions: `cudarl bench frames` beside its peers, in one call.

The workload, for every runtime the same: N cameras (4) of W x H (3840 x 2160) frames in NV12
or RGB8, ticking at a fixed rate (30 Hz) for a number of seconds; each tick every camera's frame
is converted to gray, area-resized to 84 x 84, pushed onto that camera's 4-frame stack, and the
N stacks go through CleanRL ppo_atari.py's Nature-CNN Agent (random weights, 6 actions) to
greedy actions on the host. A tick's latency runs from its start to the actions in host memory;
p50, p99 and max over the timed ticks (after --warmup untimed ones). The frames are the ones
`cudarl bench frames` writes (tools/bench_frames.c): a pool of N + 7 moving test patterns of
distinct phases, camera i reading pool[(t + i) % (N + 7)] at tick t, in pinned host memory or
in device memory (--sources).

Runtimes (rows), each skipped with its reason when its package or device is missing:
  cudarl              `cudarl bench frames --json` (cudarl_frames_tick: conversion, resize,
                      stacks and the policy in one call), run as a subprocess with the same
                      shape, rate and seconds; its figures are those of its timed ticks
  opencv (T threads)  cv2.setNumThreads(T): cvtColor (COLOR_YUV2GRAY_NV12 / COLOR_RGB2GRAY) and
                      resize(INTER_AREA) per camera on the CPU, the stacks in numpy, then the
                      policy in PyTorch on the GPU (uploaded, forward, argmax, actions back);
                      host frames only
  torch eager         on the GPU: each frame uploaded (non_blocking copy from pinned memory, or
                      read in place from device memory), converted (NV12: the Y plane; RGB:
                      0.299 R + 0.587 G + 0.114 B in float), F.interpolate(mode="area") to
                      84 x 84, rounded to uint8, the stacks rolled, the policy in channels_last
  torch graph         the same tick captured as CUDA graphs (torch.cuda.graph): one per pool
                      phase (N + 7), each with its uploads, so a tick is one replay
  dali                NVIDIA DALI if `import nvidia.dali` works: external_source (the N frames
                      as one batch), color_space_conversion to gray (RGB) or the Y plane (NV12),
                      resize to 84 x 84 with antialiasing, then the stacks and the policy in
                      PyTorch; else a line saying it is not installed

It prints one table: per input format and frame source, each runtime's p50, p99 and max, and
the peer's p99 over cudarl's (above 1: cudarl is faster), with cudarl's copy floor (the frames'
bytes / the pinned host-to-device bandwidth) beside its row.

  PYTHONPATH=/tmp/site python3 bench/frames.py --cudarl build-gpu/cudarl --json $OUT/frames.json
  python3 bench/frames.py --cudarl build/cudarl --device cpu --sources pageable --seconds 1 \
      --width 1280 --height 720            # a smoke test on a machine without a GPU
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np

POOL_EXTRA = 7
OUT_HW = 84
STACK = 4
ACTIONS = 6
GRAY_W = (0.299, 0.587, 0.114)


# ---- the frames (tools/bench_frames.c's, byte for byte) --------------------------------------

def pattern(w, h, p):
    x = np.arange(w, dtype=np.int64)[None, :]
    y = np.arange(h, dtype=np.int64)[:, None]
    v = (x + 4 * p + y // 2) & 255
    chk = (((x + 16 * p) // 64 + y // 64) & 1) * 128
    return (v ^ chk).astype(np.uint8)


def make_frame(fmt, w, h, p):
    """Phase p's frame as a numpy array: NV12 (h * 3 / 2, w), RGB8 (h, w, 3)."""
    v = pattern(w, h, p)
    if fmt == "nv12":
        cx = np.arange(w // 2, dtype=np.int64)[None, :]
        cy = np.arange(h // 2, dtype=np.int64)[:, None]
        uv = np.empty((h // 2, w // 2, 2), np.uint8)
        uv[..., 0] = (2 * cx + 2 * p) & 255
        uv[..., 1] = (2 * cy + 3 * p) & 255
        return np.concatenate([v, uv.reshape(h // 2, w)], axis=0)
    if fmt == "rgb8":
        return np.stack([v, (v.astype(np.int64) + 85).astype(np.uint8), 255 - v], axis=-1)
    raise ValueError(fmt)


# ---- measuring -------------------------------------------------------------------------------

def quantile(v, q):
    """Nearest rank, as cudarl's."""
    v = sorted(v)
    k = int(np.ceil(q * len(v))) - 1
    return v[min(max(k, 0), len(v) - 1)]


def paced(tick, a):
    """Runs tick(t) --warmup times back to back, then for --seconds at --rate (each tick starts
    at its period's start, or at once when late); returns the timed ticks' durations in ms."""
    t = 0
    for _ in range(a.warmup):
        tick(t)
        t += 1
    n = int(np.ceil(a.seconds * a.rate))
    period = 1.0 / a.rate
    times = []
    nxt = time.perf_counter()
    for _ in range(n):
        now = time.perf_counter()
        if now < nxt:
            time.sleep(nxt - now)
        nxt += period
        if time.perf_counter() > nxt:
            nxt = time.perf_counter()
        t0 = time.perf_counter()
        tick(t)
        times.append(1e3 * (time.perf_counter() - t0))
        t += 1
    return times


def summary(times):
    return {"p50_ms": quantile(times, 0.5), "p99_ms": quantile(times, 0.99),
            "max_ms": max(times), "ticks": len(times)}


# ---- the policy ------------------------------------------------------------------------------

def policy(torch, device):
    nn = torch.nn
    torch.manual_seed(1)

    class Agent(nn.Module):  # cleanrl/ppo_atari.py's Agent, greedy action
        def __init__(self):
            super().__init__()
            self.network = nn.Sequential(
                nn.Conv2d(STACK, 32, 8, stride=4), nn.ReLU(),
                nn.Conv2d(32, 64, 4, stride=2), nn.ReLU(),
                nn.Conv2d(64, 64, 3, stride=1), nn.ReLU(), nn.Flatten(),
                nn.Linear(64 * 7 * 7, 512), nn.ReLU())
            self.actor = nn.Linear(512, ACTIONS)
            self.critic = nn.Linear(512, 1)

        def forward(self, obs_u8):
            x = obs_u8.float().div(255.0).contiguous(memory_format=torch.channels_last)
            return self.actor(self.network(x)).argmax(dim=1)

    m = Agent().to(device).eval()
    if device.type == "cuda":
        m = m.to(memory_format=torch.channels_last)
    return m


# ---- opencv ----------------------------------------------------------------------------------

def run_opencv(a, fmt, host_pool, torch, device):
    import cv2
    cv2.setNumThreads(a.threads)
    model = policy(torch, device)
    n, P = a.cameras, len(host_pool)
    code = cv2.COLOR_YUV2GRAY_NV12 if fmt == "nv12" else cv2.COLOR_RGB2GRAY
    obs = np.zeros((n, STACK, OUT_HW, OUT_HW), np.uint8)
    pin = torch.from_numpy(obs)
    if device.type == "cuda":
        pin = pin.pin_memory()
        obs = pin.numpy()
    dev_obs = torch.empty((n, STACK, OUT_HW, OUT_HW), dtype=torch.uint8, device=device)

    def tick(t):
        for i in range(n):
            g = cv2.cvtColor(host_pool[(t + i) % P], code)
            small = cv2.resize(g, (OUT_HW, OUT_HW), interpolation=cv2.INTER_AREA)
            if t == 0:
                obs[i, :] = small
            else:
                obs[i, :-1] = obs[i, 1:].copy()
                obs[i, -1] = small
        with torch.no_grad():
            dev_obs.copy_(pin, non_blocking=True)
            return model(dev_obs).cpu()

    return paced(tick, a)


# ---- torch -----------------------------------------------------------------------------------

def torch_tick_fn(torch, a, fmt, model, sources, stage, obs, out):
    """The tick's GPU work for pool phase k: uploads (sources[k][i] -> stage[i], unless sources
    are device tensors read in place), conversion, area resize, stack, policy into out."""
    F = torch.nn.functional
    n, h, w = a.cameras, a.height, a.width
    wts = torch.tensor(GRAY_W, device=obs.device)

    def work(srcs, first):
        frames = []
        for i in range(n):
            s = srcs[i]
            if stage is not None:
                stage[i].copy_(s, non_blocking=True)
                s = stage[i]
            frames.append(s)
        if fmt == "nv12":
            x = torch.stack([f[:h * w].view(h, w) for f in frames]).unsqueeze(1).float()
        else:
            x = torch.matmul(torch.stack([f.view(h, w, 3) for f in frames]).float(), wts)
            x = x.unsqueeze(1)
        small = F.interpolate(x, size=(OUT_HW, OUT_HW), mode="area")
        small = small.add_(0.5).clamp_(0, 255).to(torch.uint8)  # round half up, as cudarl
        if first:
            obs.copy_(small.expand(n, STACK, OUT_HW, OUT_HW))
        else:
            obs.copy_(torch.cat([obs[:, 1:], small], dim=1))
        out.copy_(model(obs))

    return work


class Pinned:
    """numpy arrays page-locked in place with cudaHostRegister (as cudarl's frames are pinned
    with cudaHostAlloc), outside torch's caching host allocator, so that a copy from them can be
    captured in a CUDA graph without the allocator recording events; unregistered on close."""

    def __init__(self, torch, arrays):
        self.torch, self.ptrs = torch, []
        rt = torch.cuda.cudart()
        for x in arrays:
            err = rt.cudaHostRegister(x.ctypes.data, x.nbytes, 0)
            if int(err) != 0:
                self.close()
                raise RuntimeError(f"cudaHostRegister failed: error {int(err)}")
            self.ptrs.append(x.ctypes.data)

    def close(self):
        rt = self.torch.cuda.cudart()
        for p in self.ptrs:
            rt.cudaHostUnregister(p)
        self.ptrs = []


def run_torch(a, fmt, source, host_pool, torch, device, graphed):
    pinned = None
    if device.type == "cuda" and source == "pinned":
        pinned = Pinned(torch, host_pool)
    try:
        return run_torch_on(a, fmt, source, host_pool, torch, device, graphed)
    finally:
        if pinned is not None:
            torch.cuda.synchronize()
            pinned.close()


def run_torch_on(a, fmt, source, host_pool, torch, device, graphed):
    model = policy(torch, device)
    n, P, nbytes = a.cameras, len(host_pool), host_pool[0].nbytes
    flat = [torch.from_numpy(f.reshape(-1)) for f in host_pool]
    if source == "device":
        pool = [f.to(device) for f in flat]
        stage = None
    else:
        pool = flat  # pinned: registered by run_torch
        stage = [torch.empty(nbytes, dtype=torch.uint8, device=device) for _ in range(n)]
        if device.type != "cuda":
            stage = None
    obs = torch.zeros((n, STACK, OUT_HW, OUT_HW), dtype=torch.uint8, device=device)
    out = torch.zeros(n, dtype=torch.int64, device=device)
    work = torch_tick_fn(torch, a, fmt, model, pool, stage, obs, out)

    def srcs(t):
        return [pool[(t + i) % P] for i in range(n)]

    if not graphed:
        def tick(t):
            with torch.no_grad():
                work(srcs(t), t == 0)
                return out.cpu()
        return paced(tick, a)

    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for t in range(3):  # warm-up on a side stream before capture (cuDNN's choices)
                work(srcs(t), t == 0)
        torch.cuda.current_stream().wait_stream(side)
        graphs = []
        for k in range(P):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                work(srcs(k), False)
            graphs.append(g)
        torch.cuda.synchronize()

    def tick(t):
        if t == 0:  # the first tick fills the stacks: eager, as before a reset
            with torch.no_grad():
                work(srcs(0), True)
        else:
            graphs[t % P].replay()
        return out.cpu()

    return paced(tick, a)


# ---- dali ------------------------------------------------------------------------------------

def run_dali(a, fmt, source, host_pool, torch, device):
    from nvidia.dali import fn, pipeline_def, types
    from nvidia.dali.plugin.pytorch import feed_ndarray
    n, P, h, w = a.cameras, len(host_pool), a.height, a.width
    if fmt == "nv12":  # gray is the Y plane: a (h, w, 1) view of each frame
        frames = [f[:h].reshape(h, w, 1) for f in host_pool]
    else:
        frames = host_pool
    dev_frames = None
    if source == "device":
        dev_frames = [torch.from_numpy(np.ascontiguousarray(f)).to(device) for f in frames]
    state = {"t": 0}

    def feed():
        t = state["t"]
        if dev_frames is not None:
            return [dev_frames[(t + i) % P] for i in range(n)]
        return [frames[(t + i) % P] for i in range(n)]

    @pipeline_def(batch_size=n, num_threads=a.threads, device_id=0, prefetch_queue_depth=1)
    def pipe():
        x = fn.external_source(source=feed, device="gpu" if source == "device" else "cpu",
                               layout="HWC", no_copy=False)
        if source != "device":
            x = x.gpu()
        if fmt == "rgb8":
            x = fn.color_space_conversion(x, image_type=types.RGB, output_type=types.GRAY)
        x = fn.resize(x, resize_x=OUT_HW, resize_y=OUT_HW, interp_type=types.INTERP_LINEAR,
                      antialias=True)
        return x

    p = pipe(exec_async=False, exec_pipelined=False)
    p.build()
    model = policy(torch, device)
    obs = torch.zeros((n, STACK, OUT_HW, OUT_HW), dtype=torch.uint8, device=device)
    small = torch.empty((n, OUT_HW, OUT_HW, 1), dtype=torch.uint8, device=device)

    def tick(t):
        state["t"] = t
        (out,) = p.run()
        feed_ndarray(out.as_tensor(), small, cuda_stream=torch.cuda.current_stream())
        s = small.view(n, 1, OUT_HW, OUT_HW)
        with torch.no_grad():
            if t == 0:
                obs.copy_(s.expand(n, STACK, OUT_HW, OUT_HW))
            else:
                obs.copy_(torch.cat([obs[:, 1:], s], dim=1))
            return model(obs).cpu()

    return paced(tick, a)


# ---- cudarl ----------------------------------------------------------------------------------

def run_cudarl(a, fmt, source):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "frames.json")
        argv = [a.cudarl, "bench", "frames", "--device", a.device, "--source", source,
                "--format", fmt, "--cameras", str(a.cameras), "--width", str(a.width),
                "--height", str(a.height), "--rate", str(a.rate), "--seconds", str(a.seconds),
                "--warmup", str(a.warmup), "--json", path]
        print("$ " + " ".join(argv), flush=True)
        p = subprocess.run(argv, capture_output=True, text=True)
        sys.stdout.write(p.stdout)
        if p.returncode != 0:
            err = [ln for ln in p.stderr.splitlines() if ln.strip()]
            return {"error": err[-1] if err else f"exit code {p.returncode}"}
        with open(path) as f:
            doc = json.load(f)
    r = doc["runs"][0]
    return {"p50_ms": r["timed_p50_ms"], "p99_ms": r["timed_p99_ms"], "max_ms": r["timed_max_ms"],
            "ticks": r["timed_ticks"], "misses": r["timed_deadline_misses"],
            "copy_floor_ms": r["copy_floor_ms"], "h2d_gbps": r["h2d_gbps"],
            "bytes_per_tick": r["bytes_per_tick"], "device": doc["device"]}


# ---- the table -------------------------------------------------------------------------------

def guarded(label, fn):
    print(f"-- {label}", flush=True)
    try:
        return summary(fn())
    except Exception as e:  # a peer that fails is a row saying why, not the end of the run
        traceback.print_exc()
        return {"error": f"{type(e).__name__}: {e}".splitlines()[0][:200]}


def fmt_ms(r, k):
    return f"{r[k]:.3f}" if k in r and r[k] is not None else "-"


def table(a, results):
    print(f"\n{a.cameras} cameras, {a.width}x{a.height} -> {STACK}x{OUT_HW}x{OUT_HW} gray stacks "
          f"-> Nature-CNN actions, {a.rate:g} Hz for {a.seconds:g} s ({a.warmup} warm-up ticks "
          f"first); tick = frames in memory to actions on the host\n")
    print("| input | frames in | runtime | p50 ms | p99 ms | max ms | p99 / cudarl's p99 |")
    print("|---|---|---|---:|---:|---:|---:|")
    for (fmt, source), rows in results.items():
        ours = rows.get("cudarl", {})
        for name, r in rows.items():
            if "error" in r:
                print(f"| {fmt} | {source} | {name} | not run: {r['error']} | | | |")
                continue
            ratio = "-"
            if name == "cudarl":
                extra = ""
                if r.get("copy_floor_ms"):
                    floor = r["copy_floor_ms"]
                    extra = (f" (copy floor {floor:.3f} ms at {r['h2d_gbps']:.1f} GB/s: p99 "
                             f"{r['p99_ms'] / floor:.2f}x)")
                ratio = "1" + extra
            elif "p99_ms" in ours:
                ratio = f"{r['p99_ms'] / ours['p99_ms']:.2f}x"
            print(f"| {fmt} | {source} | {name} | {fmt_ms(r, 'p50_ms')} | {fmt_ms(r, 'p99_ms')} "
                  f"| {fmt_ms(r, 'max_ms')} | {ratio} |")
    print("\np99 / cudarl's p99 above 1: cudarl's tick is that many times shorter.")
    for (fmt, source), rows in results.items():
        ours = rows.get("cudarl", {})
        peers = {k: r for k, r in rows.items() if k != "cudarl" and "p99_ms" in r}
        if "p99_ms" in ours and peers:
            name, r = min(peers.items(), key=lambda kv: kv[1]["p99_ms"])
            print(f"{fmt} from {source} frames: cudarl p99 {ours['p99_ms']:.3f} ms, the best peer "
                  f"({name}) {r['p99_ms']:.3f} ms: {r['p99_ms'] / ours['p99_ms']:.2f}x")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 2)[2])
    ap.add_argument("--cudarl", required=True, help="the cudarl binary (a CUDA build for cuda)")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                    help="where cudarl's policy and the torch peers run (cpu: a smoke test)")
    ap.add_argument("--cameras", type=int, default=4)
    ap.add_argument("--width", type=int, default=3840)
    ap.add_argument("--height", type=int, default=2160)
    ap.add_argument("--rate", type=float, default=30.0, help="ticks a second (Hz)")
    ap.add_argument("--seconds", type=float, default=5.0, help="timed seconds per row")
    ap.add_argument("--warmup", type=int, default=10, help="untimed ticks first")
    ap.add_argument("--threads", type=int, default=16, help="OpenCV's (and DALI's) threads")
    ap.add_argument("--formats", default="nv12,rgb8", help="of nv12, rgb8")
    ap.add_argument("--sources", default="pinned,device",
                    help="of pinned, device, pageable (where the frames are)")
    ap.add_argument("--rows", default="cudarl,opencv,torch_eager,torch_graph,dali")
    ap.add_argument("--json", help="also write the rows here")
    a = ap.parse_args()
    formats, sources, rows = a.formats.split(","), a.sources.split(","), a.rows.split(",")
    bad = ([f for f in formats if f not in ("nv12", "rgb8")]
           + [s for s in sources if s not in ("pinned", "device", "pageable")]
           + [r for r in rows if r not in ("cudarl", "opencv", "torch_eager", "torch_graph",
                                           "dali")])
    if bad or a.cameras < 1 or a.width < 2 or a.height < 2 or a.width % 2 or a.height % 2 \
            or a.rate <= 0 or a.seconds <= 0 or a.warmup < 1:
        ap.error(f"bad values {bad or ''}: --formats of nv12,rgb8; --sources of pinned,device,"
                 "pageable; --rows of cudarl,opencv,torch_eager,torch_graph,dali; --cameras >= "
                 "1; even --width and --height; --rate, --seconds > 0; --warmup >= 1")
    if not os.access(a.cudarl, os.X_OK):
        ap.error(f"--cudarl {a.cudarl}: not an executable; build cudarl first")
    try:
        import torch
    except ImportError:
        torch = None
    device = None
    if torch is not None:
        if a.device == "cuda" and not torch.cuda.is_available():
            ap.error("--device cuda: torch sees no GPU; pass --device cpu for a smoke test")
        device = torch.device(a.device)
    results = {}
    for fmt in formats:
        P = a.cameras + POOL_EXTRA
        print(f"writing {P} {fmt} frames of {a.width}x{a.height}...", flush=True)
        host_pool = [make_frame(fmt, a.width, a.height, p) for p in range(P)]
        for source in sources:
            key = (fmt, source)
            res = results[key] = {}
            if "cudarl" in rows:
                res["cudarl"] = run_cudarl(a, fmt, source)
            host = source != "device"
            if "opencv" in rows and host:
                try:
                    import cv2
                    label = f"opencv ({a.threads} threads, cv2 {cv2.__version__})"
                    res[label] = guarded(label, lambda: run_opencv(a, fmt, host_pool, torch,
                                                                    device))
                except Exception as e:  # ImportError, or a numpy it was not built for
                    res["opencv"] = {"error": f"cv2 does not import ({type(e).__name__}: "
                                              f"{str(e).splitlines()[0][:120]}); install "
                                              "opencv-python-headless from .whl into /tmp/site "
                                              "(it needs numpy >= 2)"}
            if torch is None:
                res["torch"] = {"error": "torch is not installed"}
                continue
            if "torch_eager" in rows:
                res["torch eager"] = guarded(f"torch eager {fmt} {source}", lambda: run_torch(
                    a, fmt, source, host_pool, torch, device, False))
            if "torch_graph" in rows:
                if device.type == "cuda" and source != "pageable":
                    res["torch graph"] = guarded(f"torch graph {fmt} {source}", lambda: run_torch(
                        a, fmt, source, host_pool, torch, device, True))
                else:
                    res["torch graph"] = {"error": "CUDA graphs need --device cuda and pinned "
                                                   "or device frames (a graph cannot copy "
                                                   "from pageable memory)"}
            if "dali" in rows:
                try:
                    import nvidia.dali  # noqa: F401
                    if device.type != "cuda":
                        raise ImportError("DALI runs on the GPU")
                    res["dali"] = guarded(f"dali {fmt} {source}", lambda: run_dali(
                        a, fmt, source, host_pool, torch, device))
                except ImportError as e:
                    res["dali"] = {"error": f"NVIDIA DALI is not installed ({e})"}
        del host_pool
    table(a, results)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"bench": "frames", "cameras": a.cameras, "width": a.width,
                       "height": a.height, "rate_hz": a.rate, "seconds": a.seconds,
                       "rows": [{"format": k[0], "source": k[1], "runtime": name, **r}
                                for k, rows_ in results.items() for name, r in rows_.items()]},
                      f, indent=1)


if __name__ == "__main__":
    main()
