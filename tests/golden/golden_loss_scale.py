#!/usr/bin/env python3
"""Golden reference for dynamic loss scaling: torch.amp.GradScaler on CPU tensors.

Runs GradScaler through scripted sequences of steps and records, per step, the scale and growth
tracker after update(), whether any inf/NaN was found, Adam's step count (GradScaler.step skips
optimizer.step() on inf/NaN, so it does not advance) and, for the short sequences, the bits of
the gradients after unscaling. tests/unit/test_loss_scale.c replays the same sequences through
src/ops/cpu/loss_scale.c and must match every value exactly.

    python3 tests/golden/golden_loss_scale.py --out tests/golden/loss_scale_golden.json

Needs torch only; runs on the CPU in well under a minute.

One step of a sequence, with parameters w (len(c), float32, zeros) and c (float32) fixed:

    loss = (w * c).sum()
    scaler.scale(loss).backward()        # w.grad = scale * c, one float32 product per element
    event 'i' / 'n': w.grad[inject] = inf / nan   (event '.': nothing)
    scaler.step(adam)                    # unscale (g * float(1 / double(scale))), skip on inf/NaN
    scaler.update()

A scaled gradient may also overflow by itself (scale * c > FLT_MAX): the "near_max" sequence is
built so that it does. JSON layout: {"format", "version", "torch", "sequences": [{"name",
"init_scale", "growth_factor", "backoff_factor", "growth_interval", "c", "inject", "events" (one
character per step), "scale", "growth_tracker", "found_inf", "optimizer_steps" (per step, after
the step's update), "unscaled_grad_bits" (per step: the float32 bits of w.grad after unscaling,
as unsigned integers; only where recorded)}]}.
"""

import argparse
import json
import os
import struct
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))  # the golden file is written beside this script

FORMAT = "cudarl-golden-loss-scale"
VERSION = 1


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


# name, init_scale, growth_factor, backoff_factor, growth_interval, c, inject, events, grads?
SEQUENCES = [
    # GradScaler's defaults: an inf backs off from 2^16, 2000 clean steps grow it back exactly at
    # the 2000th, a NaN backs off, 1999 clean steps and an inf do not grow it.
    ("defaults", 2.0**16, 2.0, 0.5, 2000, [0.5, -0.25, 3.0, 1e-3], 1,
     "i" + "." * 2000 + "n" + "." * 1999 + "i" + "." * 100, False),
    # max |c| < 1: the scale reaches 2^127 and then refuses to grow to inf, twice.
    ("inf_guard", 2.0**125, 2.0, 0.5, 2, [0.125, -0.0625, 0.75, 1.0 - 2.0**-20], 0,
     "." * 10 + "i" + "." * 5, True),
    # 3 * 2^127 overflows float32 by itself: clean events, yet the scale oscillates.
    ("near_max", 2.0**125, 2.0, 0.5, 2, [0.5, -3.0, 0.25, 1.0], 2, "." * 14, True),
    # Factors whose products round (double product, then float): 1/scale is inexact too.
    ("odd_factors", 1000.0, 1.7, 0.3, 2, [0.1, -0.2, 0.3, 7.0], 3,
     "..i..n...i.i.....n......", True),
    # Scale 1 (the kernel skips the multiplication), then below 1, interval 1 (grow every step).
    ("interval_one", 1.0, 3.0, 0.25, 1, [1.5, -2.5, 1e-30, 1e30], 0, ".i.i.i..n...", True),
]


def run_sequence(name, init_scale, growth, backoff, interval, c, inject, events, grads):
    c_t = torch.tensor(c, dtype=torch.float32)
    w = torch.zeros(len(c), dtype=torch.float32, requires_grad=True)
    opt = torch.optim.Adam([w], lr=1e-3)
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale, growth_factor=growth,
                                  backoff_factor=backoff, growth_interval=interval)
    rec = {"name": name, "init_scale": init_scale, "growth_factor": growth,
           "backoff_factor": backoff, "growth_interval": interval,
           "c": [float(x) for x in c_t.tolist()], "inject": inject, "events": events,
           "scale": [], "growth_tracker": [], "found_inf": [], "optimizer_steps": []}
    if grads:
        rec["unscaled_grad_bits"] = []
    for ev in events:
        opt.zero_grad(set_to_none=True)
        loss = (w * c_t).sum()
        scaler.scale(loss).backward()
        with torch.no_grad():
            if ev == "i":
                w.grad[inject] = float("inf")
            elif ev == "n":
                w.grad[inject] = float("nan")
            else:
                assert ev == ".", ev
        scaler.unscale_(opt)
        found = sum(v.item() for v in scaler._found_inf_per_device(opt).values())
        if grads:
            rec["unscaled_grad_bits"].append([f32_bits(x) for x in w.grad.tolist()])
        scaler.step(opt)
        scaler.update()
        state = opt.state[w]
        rec["scale"].append(scaler.get_scale())
        rec["growth_tracker"].append(int(scaler._growth_tracker.item()))
        rec["found_inf"].append(1 if found else 0)
        rec["optimizer_steps"].append(int(state["step"].item()) if "step" in state else 0)
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(HERE, "loss_scale_golden.json"))
    args = ap.parse_args()
    torch.use_deterministic_algorithms(True)
    seqs = [run_sequence(*s) for s in SEQUENCES]
    # The sequences must use what they are there for.
    by = {s["name"]: s for s in seqs}
    d = by["defaults"]
    assert d["scale"][0] == 2.0**15 and d["scale"][2000] == 2.0**16 and d["scale"][1999] == 2.0**15
    assert d["growth_tracker"][4000] == 1999 and d["scale"][4001] == 2.0**14
    g = by["inf_guard"]
    assert max(g["scale"]) == 2.0**127 and g["scale"].count(2.0**127) >= 4
    n = by["near_max"]
    assert n["events"].count("i") == 0 and sum(n["found_inf"]) >= 2
    o = by["odd_factors"]
    assert 1.0 / 1000.0 != float(torch.tensor(1e-3, dtype=torch.float32))  # 1/scale is inexact
    assert len(set(o["scale"])) >= 5
    for s in seqs:
        assert len(s["scale"]) == len(s["events"])
        skipped = sum(s["found_inf"])
        assert s["optimizer_steps"][-1] == len(s["events"]) - skipped, s["name"]
    out = {"format": FORMAT, "version": VERSION, "torch": torch.__version__, "sequences": seqs}
    with open(args.out, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    for s in seqs:
        print(f"{s['name']:>13}: {len(s['events'])} steps, {sum(s['found_inf'])} skipped, "
              f"final scale {s['scale'][-1]!r}, tracker {s['growth_tracker'][-1]}")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
