#!/usr/bin/env python3
"""Per-kernel GPU time from an `ncu --metrics gpu__time_duration.sum --csv` log.

Sums each kernel's time over the profiled launches and, with --steps-of NAME, divides by the
number of launches of the kernel named NAME (one per step: the step count), so the
table reads as time per step; with --by-grid, each (kernel, grid size) pair is a row of its own
with its mean time per launch (one kernel at two batch sizes runs on two grids). Usage:
  python3 scripts/ncu_kernels.py ncu.csv [--steps-of adam_kernel | --by-grid] [--top 30]
"""
import argparse
import collections
import csv
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--steps-of", help="the name of a kernel launched once per step")
    ap.add_argument("--by-grid", action="store_true",
                    help="a row per kernel and grid size, with the mean time per launch")
    ap.add_argument("--top", type=int, default=30)
    a = ap.parse_args()
    with open(a.csv, newline="") as f:
        rows = [r for r in csv.reader(f) if len(r) > 10]
    if not rows:
        sys.exit(f"{a.csv}: no ncu rows (is ncu installed, and did the program run?)")
    hdr, rows = rows[0], rows[1:]
    try:
        ki, vi, ui = hdr.index("Kernel Name"), hdr.index("Metric Value"), hdr.index("Metric Unit")
        gi = hdr.index("Grid Size") if a.by_grid else None
    except ValueError:
        sys.exit(f"{a.csv}: not ncu --csv output (no Kernel Name / Metric Value columns)")
    # ncu spells the unit "nsecond" in older releases and "ns" in newer ones
    scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6,
             "ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
    units = {r[ui] for r in rows} - scale.keys()
    if units:
        sys.exit(f"{a.csv}: unknown time unit(s) {sorted(units)}; add them to the scale table")
    total, count = collections.defaultdict(float), collections.Counter()
    for r in rows:
        try:
            v = float(r[vi].replace(",", "")) * scale[r[ui]]
        except ValueError:
            continue
        name = r[ki].removeprefix("void ").split("(")[0][:70]
        if gi is not None:
            name = f"{name} grid {r[gi]}"
        total[name] += v
        count[name] += 1
    if a.by_grid:
        print(f"{sum(count.values())} launches profiled; mean time per launch (us):")
        print("| kernel, grid | us per launch | launches |\n|---|---:|---:|")
        for name, t in sorted(total.items(), key=lambda kv: -kv[1] / count[kv[0]])[:a.top]:
            print(f"| {name} | {t / count[name]:.1f} | {count[name]} |")
        return
    steps = 1
    if a.steps_of:
        hits = [n for n in count if n.strip() == a.steps_of]
        steps = max(sum(count[n] for n in hits), 1)
    print(f"{sum(count.values())} launches profiled, {steps} steps; time per step (us):")
    print("| kernel | us per step | launches per step |\n|---|---:|---:|")
    for name, t in sorted(total.items(), key=lambda kv: -kv[1])[:a.top]:
        print(f"| {name} | {t / steps:.1f} | {count[name] / steps:.1f} |")
    print(f"| all | {sum(total.values()) / steps:.1f} | {sum(count.values()) / steps:.1f} |")


if __name__ == "__main__":
    main()
