#!/usr/bin/env python3
"""Sums an ncu source page (ncu -i REP --page source --print-source sass --csv) by SASS opcode.

Prints, for the warp-stall samples and the executed instructions, the totals per opcode (the
first word of the instruction after its predicate), largest first, the samples by stall reason
(the stall_* columns), and the top instructions by samples. Used by bench/ncu_infer.sh stalls
(the infer_ncu_source benchmark; ncu 2025's column names)."""
import csv
import sys
from collections import defaultdict


def number(s):
    s = s.replace(",", "").strip()
    try:
        return float(s)
    except ValueError:
        return None


def opcode(sass):
    words = sass.strip().split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else "?"


def main(path):
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]  # skip ncu's banner lines
    rows = list(csv.reader(lines))
    if not rows:
        sys.exit(f"{path}: no CSV rows (see the .log beside it)")
    at = next((k for k, r in enumerate(rows) if "Source" in r), None)
    if at is None:
        sys.exit(f"{path}: no header row with a Source column (see the .log beside it)")
    head, body = rows[at], rows[at + 1:]  # rows above it name the kernel
    src = head.index("Source")
    want = [i for i, h in enumerate(head)
            if h in ("Warp Stall Sampling (All Samples)", "Instructions Executed")]
    stalls = [i for i, h in enumerate(head) if h.startswith("stall_") and "Not Issued" not in h]
    by_stall = defaultdict(float)
    totals = defaultdict(lambda: defaultdict(float))
    per_inst = []
    for r in body:
        if len(r) != len(head):
            continue
        op = opcode(r[src])
        for i in want:
            v = number(r[i])
            if v is not None:
                totals[head[i]][op] += v
        for i in stalls:
            by_stall[head[i]] += number(r[i]) or 0.0
        all_i = want[0] if want else None
        if all_i is not None and number(r[all_i]):
            per_inst.append((number(r[all_i]), r[src].strip()))
    for col, byop in totals.items():
        s = sum(byop.values())
        if s <= 0:
            continue
        print(f"\n{col}: total {s:.0f}")
        for op, v in sorted(byop.items(), key=lambda kv: -kv[1])[:14]:
            print(f"  {op:<12} {v:12.0f} {100 * v / s:5.1f}%")
    s = sum(by_stall.values())
    if s > 0:
        print(f"\nstall reasons (samples): total {s:.0f}")
        for k, v in sorted(by_stall.items(), key=lambda kv: -kv[1])[:10]:
            print(f"  {k:<24} {v:10.0f} {100 * v / s:5.1f}%")
    print(f"\ntop instructions by {head[want[0]] if want else '?'}:")
    for v, s in sorted(per_inst, reverse=True)[:25]:
        print(f"  {v:10.0f}  {s[:90]}")


if __name__ == "__main__":
    main(sys.argv[1])
