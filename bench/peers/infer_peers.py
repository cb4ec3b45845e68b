#!/usr/bin/env python3
"""Peers of `cudarl bench infer` (tools/cmd_bench.c): the same network, inputs and columns.

The network is a pixel policy, CleanRL ppo_atari.py's Agent at 256x256: input
(B, 4, 256, 256) uint8, x / 255, Conv 32@8x8/4, ReLU, Conv 64@4x4/2, ReLU, Conv 64@3x3/1, ReLU,
Flatten, Linear(64*28*28, 512), ReLU, then actor Linear(512, 7) and critic Linear(512, 1); the
greedy action is the argmax of the logits, computed on the device as cudarl's act() does. Its
weights are drawn once (numpy, seed 1) from PyTorch's default init distribution (uniform in
+-1/sqrt(fan_in), what `cudarl bench infer` draws too, from its own generator) and shared by every
row; the observations are one (128, 4, 256, 256) uint8 array (numpy, seed 2), the first row of
it for batch 1. Rows, each skipped (with the reason printed) when its package or device is
missing or it fails:

  torch eager fp32          the module as written, TF32 off for convolutions and matmuls
  torch eager fp16 CL       .half(), channels_last activations and weights
  torch graph fp16 CL       the fp16 channels_last forward captured once with torch.cuda.graph
  torch compile fp16 CL     torch.compile(mode="max-autotune") of the fp16 channels_last module
                            (run last: its autotuning takes minutes; --rows leaves it out)
  jax jit bf16, fp32        the same network in jax.lax (NCHW / OIHW), jit-compiled; fp32 with
                            jax.default_matmul_precision("highest") (no TF32)
  onnxruntime <provider>    the fp32 module exported to ONNX (opset 17, uint8 input, Cast and
                            Div(255) inside, outputs logits, value, action), one row per
                            available provider (CUDA, TensorRT, CPU, ...)

Columns, as cudarl's:
  GPU time     torch: two CUDA events around one forward on a device uint8 input (graph: one
               replay); jax and onnxruntime on the GPU: wall time of one call on device input to
               device output, waited for (they run on their own streams); p50 and p99
  end to end   a host numpy uint8 array in, a host numpy action array out (device copies,
               forward, argmax, copy back); p50 and p99
  obs/s        batch x calls / the calls' total end-to-end time (back to back)
  memory       torch: torch.cuda.max_memory_allocated() over the timed calls (peak stats reset
               after the warm-up, so torch.compile's autotuning buffers are left out; weights and
               static buffers still count) minus what was allocated before the row; jax:
               peak_bytes_in_use of the device's allocator, which cannot be reset (bf16 runs
               before fp32 so that each figure is its own as far as the order allows);
               onnxruntime: not measured
  max rel err  max |y - y_ref| over the row's logits / max |y_ref| over the logits of the whole
               reference batch, and likewise for the values (the larger of the two), y_ref torch
               eager fp32 (TF32 off) on the same weights and the largest batch's observations
               (batch 1: the first of them); not computed without torch

  python3 bench/peers/infer_peers.py --json peers.json --compare cudarl_infer.json
  python3 bench/peers/infer_peers.py --device cpu --iters 3 --batches 1   # a smoke test
"""
import argparse
import json
import os
import sys
import tempfile
import time
import traceback

import numpy as np

# JAX must not take 75% of the GPU before torch runs, and must not be imported before this.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

C, HW, ACTIONS = 4, 256, 7
CONVS = [(32, C, 8, 4), (64, 32, 4, 2), (64, 64, 3, 1)]  # (out, in, kernel, stride)
FLAT = 64 * 28 * 28
ROWS = ["torch_fp32", "torch_fp16_cl", "torch_graph_fp16_cl", "torch_compile_fp16_cl",
        "jax_bf16", "jax_fp32", "onnxruntime"]


def skip(row, why):
    print(f"infer_peers: {row}: skipped: {why}", file=sys.stderr)


# ---- weights, inputs, the reference ------------------------------------------------------------

def make_weights():
    """state_dict name -> float32 array, PyTorch's default init distribution."""
    rng = np.random.default_rng(1)
    sd = {}

    def layer(name, shape, fan_in):
        bound = 1.0 / np.sqrt(fan_in)
        sd[name + ".weight"] = rng.uniform(-bound, bound, shape).astype(np.float32)
        sd[name + ".bias"] = rng.uniform(-bound, bound, shape[0]).astype(np.float32)

    for i, (k, c, r, _) in enumerate(CONVS):
        layer(f"network.{2 * i}", (k, c, r, r), c * r * r)
    layer("network.7", (512, FLAT), FLAT)
    layer("actor", (ACTIONS, 512), 512)
    layer("critic", (1, 512), 512)
    return sd


def rel_err(got, want, scale):
    """max |got - want| / max |scale| (float64): scale is the whole reference batch, so that
    batch 1's one value is not its own scale (as cudarl bench infer computes it)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    e = np.max(np.abs(got - want)) if got.size else 0.0
    return float("inf") if np.isnan(e) else float(e / max(np.max(np.abs(scale)), 1e-30))


def error_of(logits, values, ref, batch):
    if ref is None:
        return None
    return max(rel_err(logits, ref["logits"][:batch], ref["logits"]),
               rel_err(values, ref["values"][:batch], ref["values"]))


def summary(name, precision, batch, gpu, e2e, mem, err, timing):
    e2e_sorted = sorted(e2e)

    def q(v, p):
        return v[max(0, min(len(v) - 1, int(np.ceil(p * len(v))) - 1))] if v else None

    gpu_sorted = sorted(gpu) if gpu else []
    return {"name": name, "runtime": name.split()[0], "precision": precision, "batch": batch,
            "gpu_ms_p50": q(gpu_sorted, 0.5), "gpu_ms_p99": q(gpu_sorted, 0.99),
            "e2e_ms_p50": q(e2e_sorted, 0.5), "e2e_ms_p99": q(e2e_sorted, 0.99),
            "obs_per_s": batch * len(e2e) / (sum(e2e) / 1e3), "peak_mem_bytes": mem,
            "max_rel_err": err, "gpu_timing": timing}


def wall_ms(fn, iters, warmup):
    """ms of each of iters calls of fn (which returns when its work is done), after warmup."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e3)
    return out


# ---- PyTorch -------------------------------------------------------------------------------------

def torch_module(sd):
    import torch
    import torch.nn as nn

    class Agent(nn.Module):  # cleanrl/ppo_atari.py's Agent, 256x256 input, greedy action
        def __init__(self):
            super().__init__()
            self.network = nn.Sequential(
                nn.Conv2d(4, 32, 8, stride=4), nn.ReLU(),
                nn.Conv2d(32, 64, 4, stride=2), nn.ReLU(),
                nn.Conv2d(64, 64, 3, stride=1), nn.ReLU(),
                nn.Flatten(), nn.Linear(FLAT, 512), nn.ReLU())
            self.actor = nn.Linear(512, ACTIONS)
            self.critic = nn.Linear(512, 1)

        def forward(self, x):
            w = self.network[0].weight
            x = x.to(dtype=w.dtype) / 255.0
            if w.is_contiguous(memory_format=torch.channels_last) and not w.is_contiguous():
                x = x.contiguous(memory_format=torch.channels_last)
            hidden = self.network(x)
            logits = self.actor(hidden)
            return logits, self.critic(hidden).squeeze(1), logits.argmax(dim=1)

    m = Agent()
    m.load_state_dict({k: torch.from_numpy(v) for k, v in sd.items()})
    return m.eval()


def torch_fp32_mode():
    import torch
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = True


def torch_reference(sd, obs, device):
    import torch
    torch_fp32_mode()
    m = torch_module(sd).to(device)
    with torch.inference_mode():
        logits, values, _ = m(torch.from_numpy(obs).to(device))
    ref = {"logits": logits.float().cpu().numpy(), "values": values.float().cpu().numpy()}
    del m
    if device == "cuda":
        torch.cuda.empty_cache()
    return ref


def torch_variant(sd, kind, device):
    """The module for row `kind` on device, and its precision."""
    import torch
    m = torch_module(sd)
    if kind == "torch_fp32":
        return m.to(device), "fp32"
    m = m.to(device=device, dtype=torch.float16).to(memory_format=torch.channels_last)
    if kind == "torch_compile_fp16_cl":
        m = torch.compile(m, mode="max-autotune")
    return m, "fp16"


def run_torch(sd, kind, obs, batch, ref, args):
    import torch
    dev = args.device
    if kind != "torch_fp32" and dev != "cuda":
        raise RuntimeError("fp16 channels_last rows run on CUDA only")
    torch_fp32_mode()
    x_host = obs[:batch]
    cuda = dev == "cuda"
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        base = torch.cuda.memory_allocated()
    with torch.inference_mode():
        m, precision = torch_variant(sd, kind, dev)
        x_dev = torch.from_numpy(x_host).to(dev)
        if kind == "torch_graph_fp16_cl":
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    m(x_dev)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                static_out = m(x_dev)

            def device_fn():
                graph.replay()
                return static_out

            def host_fn():
                x_dev.copy_(torch.from_numpy(x_host))
                graph.replay()
                return static_out[2].cpu().numpy()
        else:
            def device_fn():
                return m(x_dev)

            def host_fn():
                return m(torch.from_numpy(x_host).to(dev))[2].cpu().numpy()

        for _ in range(args.warmup):  # torch.compile compiles and autotunes here
            host_fn()
            device_fn()
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        gpu = []
        if cuda:
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            for _ in range(args.iters):
                a.record()
                device_fn()
                b.record()
                b.synchronize()
                gpu.append(a.elapsed_time(b))
        e2e = wall_ms(host_fn, args.iters, 0)
        mem = torch.cuda.max_memory_allocated() - base if cuda else None
        out = device_fn()
        logits, values = out[0].float().cpu().numpy(), out[1].float().cpu().numpy()
    names = {"torch_fp32": "torch eager", "torch_fp16_cl": "torch eager CL",
             "torch_graph_fp16_cl": "torch graph CL", "torch_compile_fp16_cl":
             "torch compile max-autotune CL"}
    row = summary(names[kind], precision, batch, gpu, e2e, mem,
                  error_of(logits, values, ref, batch), "cuda events" if cuda else None)
    del m, x_dev
    if cuda:
        torch.cuda.empty_cache()
    return row


# ---- JAX -----------------------------------------------------------------------------------------

def run_jax(sd, precision, obs, batch, ref, args):
    import jax
    import jax.numpy as jnp
    platform = "gpu" if args.device == "cuda" else "cpu"
    dev = jax.devices(platform)[0]
    dt = jnp.bfloat16 if precision == "bf16" else jnp.float32
    p = {k: jax.device_put(jnp.asarray(v, dt), dev) for k, v in sd.items()}

    def forward(p, x):
        h = x.astype(dt) / 255.0
        for i, (_, _, _, s) in enumerate(CONVS):
            h = jax.lax.conv_general_dilated(h, p[f"network.{2 * i}.weight"], (s, s), "VALID",
                                             dimension_numbers=("NCHW", "OIHW", "NCHW"))
            h = jax.nn.relu(h + p[f"network.{2 * i}.bias"][None, :, None, None])
        h = h.reshape(h.shape[0], -1)
        h = jax.nn.relu(h @ p["network.7.weight"].T + p["network.7.bias"])
        logits = h @ p["actor.weight"].T + p["actor.bias"]
        value = (h @ p["critic.weight"].T + p["critic.bias"])[:, 0]
        return logits.astype(jnp.float32), value.astype(jnp.float32), jnp.argmax(logits, 1)

    f = jax.jit(forward)
    x_host = obs[:batch]
    x_dev = jax.device_put(x_host, dev)
    mode = "highest" if precision == "fp32" else "default"
    with jax.default_matmul_precision(mode):
        gpu = wall_ms(lambda: jax.block_until_ready(f(p, x_dev)), args.iters, args.warmup)
        e2e = wall_ms(lambda: np.asarray(f(p, jax.device_put(x_host, dev))[2]), args.iters,
                      args.warmup)
        logits, values, _ = f(p, x_dev)
    stats = dev.memory_stats() or {}
    row = summary("jax jit", precision, batch, gpu if platform == "gpu" else None, e2e,
                  stats.get("peak_bytes_in_use"),
                  error_of(np.asarray(logits), np.asarray(values), ref, batch),
                  "wall, device in and out" if platform == "gpu" else None)
    del p, x_dev
    return row


# ---- ONNX Runtime --------------------------------------------------------------------------------

def export_onnx(sd, path):
    """The fp32 torch module as ONNX (uint8 obs; logits, value, action), dynamic batch."""
    import torch
    m = torch_module(sd)
    x = torch.zeros((1, C, HW, HW), dtype=torch.uint8)
    kw = dict(input_names=["obs"], output_names=["logits", "value", "action"], opset_version=17,
              dynamic_axes={"obs": {0: "batch"}, "logits": {0: "batch"}, "value": {0: "batch"},
                            "action": {0: "batch"}})
    try:  # the TorchScript exporter: no onnxscript needed
        torch.onnx.export(m, (x,), path, dynamo=False, **kw)
    except TypeError:  # a torch without the dynamo switch
        torch.onnx.export(m, (x,), path, **kw)


def run_ort(path, provider, obs, batch, ref, args):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    sess = ort.InferenceSession(path, sess_options=opts, providers=[provider])
    on_gpu = provider in ("CUDAExecutionProvider", "TensorrtExecutionProvider")
    iters = args.iters if on_gpu else args.iters_cpu
    warmup = args.warmup if on_gpu else min(args.warmup, 1)
    x_host = obs[:batch]
    gpu = None
    if on_gpu:
        binding = sess.io_binding()
        x_dev = ort.OrtValue.ortvalue_from_numpy(x_host, "cuda", 0)
        binding.bind_ortvalue_input("obs", x_dev)
        for name in ("logits", "value", "action"):
            binding.bind_output(name, "cuda", 0)
        gpu = wall_ms(lambda: sess.run_with_iobinding(binding), iters, warmup)
    e2e = wall_ms(lambda: sess.run(["action"], {"obs": x_host})[0], iters, warmup)
    logits, values, _ = sess.run(None, {"obs": x_host})
    short = provider.replace("ExecutionProvider", "")
    return summary(f"onnxruntime {short}", "fp32", batch, gpu, e2e, None,
                   error_of(logits, values.reshape(-1), ref, batch),
                   "wall, device in and out" if on_gpu else None)


def ort_rows(sd, obs, batches, ref, args, rows):
    import onnxruntime as ort
    providers = [p for p in ort.get_available_providers()
                 if p not in ("AzureExecutionProvider",)]
    if args.device == "cpu":
        providers = [p for p in providers if p == "CPUExecutionProvider"]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "agent.onnx")
        export_onnx(sd, path)
        for provider in providers:
            for batch in batches:
                guarded(f"onnxruntime {provider}, batch {batch}", rows,
                        lambda: run_ort(path, provider, obs, batch, ref, args))


# ---- driving ------------------------------------------------------------------------------------

def guarded(label, rows, fn):
    """Appends fn()'s row; a missing package or a failure only skips it."""
    try:
        rows.append(fn())
        r = rows[-1]
        print(f"infer_peers: {label}: GPU p50 {fmt(r['gpu_ms_p50'])} ms, end to end p50 "
              f"{fmt(r['e2e_ms_p50'])} ms", file=sys.stderr)
    except ImportError as e:
        skip(label, f"not installed ({e})")
    except Exception as e:  # noqa: BLE001 - a broken row must not end the others
        skip(label, f"{type(e).__name__}: {e}")
        if os.environ.get("INFER_PEERS_DEBUG"):
            traceback.print_exc()


def fmt(v, spec=".4f"):
    return "-" if v is None else format(v, spec)


def table(rows):
    print("| runtime | precision | batch | GPU time p50 ms | GPU time p99 ms | end to end p50 ms "
          "| end to end p99 ms | obs/s | peak device memory MiB | max rel. error vs fp32 |\n"
          "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        mem = None if r["peak_mem_bytes"] is None else r["peak_mem_bytes"] / 1048576
        print(f"| {r['name']} | {r['precision']} | {r['batch']} | {fmt(r['gpu_ms_p50'])} "
              f"| {fmt(r['gpu_ms_p99'])} | {fmt(r['e2e_ms_p50'])} | {fmt(r['e2e_ms_p99'])} "
              f"| {fmt(r['obs_per_s'], '.0f')} | {fmt(mem, '.1f')} "
              f"| {fmt(r['max_rel_err'], '.2e')} |")


def compare(path, rows):
    """cudarl's rows (cudarl bench infer --json) and the peers' in one table, per batch."""
    with open(path) as f:
        ours = json.load(f)
    print(f"\ncudarl ({ours.get('device', '?')}) and its peers, batch by batch:\n")
    both = []
    for batch in sorted({r["batch"] for r in ours["rows"] + rows}, reverse=True):
        both += [r for r in ours["rows"] if r["batch"] == batch]
        both += [r for r in rows if r["batch"] == batch]
    table(both)
    for s in ours.get("skipped", []):
        print(f"cudarl did not run {s['precision']}: {s['why']}")
    figures(ours["rows"], rows)


def best(rows, key, batch, runtime=None):
    c = [r for r in rows if r["batch"] == batch and r.get(key) is not None
         and (runtime is None or r["runtime"] == runtime)]
    return min(c, key=lambda r: r[key]) if c else None


def figures(ours, peers):
    """The figures the issue's targets name, side by side (no verdicts: measured by the lead)."""
    print("\nFigures for the issue's targets (H200: batch 128 fp16 GPU time <= 0.08 ms; batch 1 "
          "end to end <= 0.03 ms; peak memory at batch 128 <= 60% of PyTorch's best variant):")
    for key, batch, what in (("gpu_ms_p50", 128, "GPU time p50, batch 128"),
                             ("e2e_ms_p50", 1, "end to end p50, batch 1"),
                             ("peak_mem_bytes", 128, "peak device memory, batch 128")):
        mine, torch_best = best(ours, key, batch), best(peers, key, batch, "torch")
        if not mine:
            continue
        scale, unit = (1 / 1048576, "MiB") if key == "peak_mem_bytes" else (1, "ms")
        line = f"  {what}: cudarl {mine[key] * scale:.4g} {unit} ({mine['name']}, " \
               f"{mine['precision']})"
        if torch_best:
            line += f"; best PyTorch {torch_best[key] * scale:.4g} {unit} " \
                    f"({torch_best['name']}, {torch_best['precision']}); ratio " \
                    f"{mine[key] / torch_best[key]:.3f}"
        print(line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iters", type=int, default=1000, help="timed calls per row")
    ap.add_argument("--warmup", type=int, default=100, help="untimed calls first")
    ap.add_argument("--iters-cpu", type=int, default=5,
                    help="timed calls of rows that run on the CPU (onnxruntime CPU)")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--batches", default="128,1", help="comma-separated batch sizes (<= 128)")
    ap.add_argument("--rows", default=",".join(ROWS), help="comma-separated subset of: "
                    + ", ".join(ROWS))
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--compare", help="cudarl bench infer --json output, to print beside")
    args = ap.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    if any(b < 1 or b > 128 for b in batches):
        ap.error("--batches: each from 1 to 128")
    wanted = args.rows.split(",")
    unknown = [r for r in wanted if r not in ROWS]
    if unknown:
        ap.error(f"--rows: unknown {', '.join(unknown)}; choose from {', '.join(ROWS)}")
    sd = make_weights()
    obs = np.random.default_rng(2).integers(0, 256, (max(batches), C, HW, HW), dtype=np.uint8)
    device_name = args.device
    try:
        import torch
        if args.device == "cuda":
            if not torch.cuda.is_available():
                raise SystemExit("infer_peers: no CUDA device for torch; use --device cpu")
            device_name = torch.cuda.get_device_name(0)
    except ImportError:
        torch = None
    rows, ref = [], None
    try:
        ref = torch_reference(sd, obs, args.device)
    except Exception as e:  # noqa: BLE001 - then the first fp32 row is the reference
        skip("the torch fp32 reference", f"{type(e).__name__}: {e}")
    # torch.compile's autotuning takes minutes: it runs last, so that a run cut short by a time
    # limit still has the other rows (each prints its figures to stderr when done)
    for kind in [k for k in ROWS if k.startswith("torch") and k in wanted and "compile" not in k]:
        for batch in batches:
            guarded(f"{kind}, batch {batch}", rows,
                    lambda: run_torch(sd, kind, obs, batch, ref, args))
    for precision in ("bf16", "fp32"):
        if f"jax_{precision}" in wanted:
            for batch in batches:
                guarded(f"jax {precision}, batch {batch}", rows,
                        lambda: run_jax(sd, precision, obs, batch, ref, args))
    if "onnxruntime" in wanted:
        try:
            ort_rows(sd, obs, batches, ref, args, rows)
        except ImportError as e:
            skip("onnxruntime", f"not installed ({e})")
        except Exception as e:  # noqa: BLE001
            skip("onnxruntime", f"{type(e).__name__}: {e}")
    if "torch_compile_fp16_cl" in wanted:
        for batch in batches:
            guarded(f"torch_compile_fp16_cl, batch {batch}", rows,
                    lambda: run_torch(sd, "torch_compile_fp16_cl", obs, batch, ref, args))
    rows.sort(key=lambda r: -r["batch"])
    print(f"\ninfer peers on {device_name}: input {C}x{HW}x{HW} uint8 / 255, 3 convs, FC 512, "
          f"actor {ACTIONS} + critic 1; {args.iters} timed calls per row after {args.warmup}"
          f"{'' if ref else ' (no torch fp32 reference: errors not computed)'}\n")
    table(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"bench": "infer_peers", "device": device_name,
                       "torch": getattr(torch, "__version__", None), "iters": args.iters,
                       "warmup": args.warmup, "rows": rows}, f, indent=1)
    if args.compare:
        compare(args.compare, rows)


if __name__ == "__main__":
    main()
