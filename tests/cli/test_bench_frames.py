#!/usr/bin/env python3
"""`cudarl bench frames` end to end on the CPU: every bad flag refused with exit code 2 and one
line naming it and the fix; short runs at 4K and small sizes through every pixel format, the
printed figures and the --json file; --find-max on small frames.

    python3 test_bench_frames.py --cudarl build/cudarl --work build/bench-frames-work
        [--only bad_input|runs] [--gpu]

--gpu (a CUDA build on a machine with a GPU): the runs from pinned host memory on the GPU too,
with the bandwidth and copy floor printed, one by one and pipelined (--pipeline). Each check
prints what it checks; the first wrong value prints the command, expected and got, and exits 1.
Standard library only.
"""
import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys

CUDARL = None


def check(what):
    print(f"check: {what}", flush=True)


def fail(what, want, got):
    print(f"FAIL: {what}\n  expected: {want}\n{got}", file=sys.stderr)
    sys.exit(1)


def run(args, timeout=300):
    argv = [CUDARL, "bench", "frames"] + args
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    desc = (f"  command: {shlex.join(argv)}\n  exit code: {p.returncode}\n"
            f"  stdout: {p.stdout[-2000:]}\n  stderr: {p.stderr[-2000:]}")
    return p, desc


def expect_error(args, needles, rc=2):
    """Exit code rc, nothing on stdout, and for a usage error exactly one stderr line holding
    every needle (a failure in the run: its last line holds them)."""
    check(f"bench frames {shlex.join(args)} is refused: {' / '.join(needles)}")
    p, desc = run(args)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    last = lines[-1] if lines else ""
    if (p.returncode != rc or p.stdout.strip() or (rc == 2 and len(lines) != 1)
            or any(n not in last for n in needles)):
        fail(f"bench frames {shlex.join(args)}",
             f"exit code {rc}, empty stdout, a stderr line containing {needles}", desc)


def bad_input(work):
    expect_error(["--format", "nv21"], ["--format 'nv21'", "nv12, yuyv, rgb8, bgr8 or gray8"])
    expect_error(["--width", "101"], ["--width 101 is odd", "nv12"])
    expect_error(["--height", "7", "--width", "8"], ["--height 7 is odd"])
    expect_error(["--format", "yuyv", "--width", "9"], ["--width 9 is odd", "yuyv"])
    expect_error(["--format", "rgb8", "--width", "1"], ["--width", "between 2 and 32768"])
    expect_error(["--width", "40000"], ["--width", "between 2 and 32768"])
    expect_error(["--channels", "2"], ["--channels 2", "choose 1", "or 3"])
    expect_error(["--channels", "4"], ["--channels", "between 1 and 3"])
    expect_error(["--source", "gpu"], ["--source 'gpu'", "pageable, pinned, device or auto"])
    expect_error(["--cameras", "0"], ["--cameras", "between 1 and 256"])
    expect_error(["--cameras", "two"], ["--cameras"])
    expect_error(["--rate", "-1"], ["--rate", "between 0 and 100000"])
    expect_error(["--seconds", "0"], ["--seconds", "between 0.001 and 86400"])
    expect_error(["--warmup", "-1"], ["--warmup", "between 0 and 100000"])
    expect_error(["--policy", ""], ["--policy"])
    expect_error(["--find-max", "--rate", "0"], ["--find-max needs a rate"])
    expect_error(["--max-cameras", "3"], ["--max-cameras", "add --find-max"])
    expect_error(["--max-cameras", "0", "--find-max"], ["--max-cameras", "between 1 and 256"])
    expect_error(["--pipeline"], ["--pipeline runs the ticks back to back", "add --rate 0"])
    expect_error(["--pipeline", "--find-max", "--rate", "30"],
                 ["--pipeline runs the ticks back to back", "drop --find-max"])
    expect_error(["--device", "tpu"], ["--device", "cpu, cuda or auto"])
    expect_error(["--precision", "fp8"], ["--precision", "fp32, tf32, bf16 or fp16"])
    expect_error(["--camera", "2"], ["unknown flag '--camera'", "--cameras"])
    expect_error(["--json", os.path.join(work, "no-such-dir", "x.json")],
                 ["--json", "does not exist"])
    # failures in the run: exit code 1, the library's message
    expect_error(["--device", "cpu", "--policy", os.path.join(work, "missing.safetensors"),
                  "--width", "64", "--height", "64"], ["missing.safetensors"], rc=1)
    expect_error(["--device", "cpu", "--precision", "bf16", "--width", "64", "--height", "64"],
                 ["PRECISION_BF16 runs on CUDA only"], rc=1)
    if not GPU:
        p, _ = run(["--source", "pinned", "--device", "cpu", "--width", "64", "--height", "64",
                    "--seconds", "0.01", "--warmup", "0"])
        if p.returncode == 2: # a CPU-only build refuses the CUDA memories as usage errors
            expect_error(["--source", "pinned"], ["--source pinned needs the CUDA build"])
            expect_error(["--source", "device"], ["--source device needs the CUDA build"])


def expect_run(args, json_path, want):
    """A run that succeeds, prints its figures, and writes json_path whose keys match want."""
    check(f"bench frames {shlex.join(args)} runs and writes its JSON")
    if os.path.exists(json_path):
        os.remove(json_path)
    p, desc = run(args + ["--json", json_path])
    needles = ["bytes per tick:", "cudarl_frames_latency", "timed ticks",
               "equal to the CPU reference", "host-to-device bandwidth"]
    if p.returncode != 0 or any(n not in p.stdout for n in needles):
        fail("the run", f"exit code 0 and {needles} on stdout", desc)
    with open(json_path) as f:
        doc = json.load(f)
    for k, v in want.items():
        if doc.get(k) != v:
            fail(f"{json_path}: {k}", v, f"  got: {doc.get(k)!r}\n{desc}")
    for r in doc["runs"]:
        if not (r["ticks"] >= r["timed_ticks"] >= 1 and r["p50_ms"] > 0
                and r["p99_ms"] >= r["p50_ms"] and r["max_ms"] >= r["p99_ms"]
                and r["timed_p99_ms"] >= r["timed_p50_ms"] > 0):
            fail(f"{json_path}: latency figures", "ticks >= timed >= 1, 0 < p50 <= p99 <= max",
                 f"  got: {r}")
    return doc, p


def runs(work):
    px = {"nv12": 1.5, "yuyv": 2, "rgb8": 3, "bgr8": 3, "gray8": 1}
    j = os.path.join(work, "frames.json")
    # the default shape: four 3840x2160 NV12 cameras, a few ticks
    cpu = ["--device", "cpu", "--source", "pageable"]
    doc, _ = expect_run(cpu + ["--seconds", "0.1", "--rate", "20", "--warmup", "1"], j,
                        {"bench": "frames", "format": "nv12", "width": 3840, "height": 2160,
                         "source": "pageable", "policy_device": "cpu", "precision": "fp32"})
    r = doc["runs"][0]
    if r["cameras"] != 4 or r["bytes_per_tick"] != 4 * 3840 * 2160 * 1.5 or r["timed_ticks"] != 2:
        fail("4K run: 4 cameras, 49,766,400 bytes a tick, 2 timed ticks (0.1 s at 20 Hz)",
             "those", f"  got: {r}")
    if r["ticks"] != 3 or r["h2d_gbps"] is not None:
        fail("4K run: 1 warm-up + 2 ticks, no bandwidth on the CPU", "3, null", f"  got: {r}")
    for fmt, b in px.items():
        for ch in (1, 3):
            doc, _ = expect_run(cpu + ["--format", fmt, "--channels", str(ch), "--cameras", "3",
                                       "--width", "322", "--height", "242", "--rate", "0",
                                       "--seconds", "0.05", "--warmup", "2"], j,
                                {"format": fmt, "channels": ch, "width": 322})
            if doc["runs"][0]["bytes_per_tick"] != 3 * 322 * 242 * b:
                fail(f"{fmt}: bytes per tick", 3 * 322 * 242 * b, f"  got: {doc['runs'][0]}")
    # --find-max on frames small enough that any machine, however loaded, holds 1, 2 and 3 at 2 Hz
    doc, p = expect_run(cpu + ["--find-max", "--max-cameras", "3", "--rate", "2", "--seconds",
                               "1", "--warmup", "1", "--width", "64", "--height", "64"], j,
                        {"find_max": True, "max_cameras_sustained": 3})
    if [r["cameras"] for r in doc["runs"]] != [1, 2, 3]:
        got = [r["cameras"] for r in doc["runs"]]
        fail("--find-max's trials", "1, 2, 3 cameras", f"  got: {got}")
    if "sustained at 2 Hz with p99 <= 500.000 ms: 3 (--max-cameras" not in p.stdout:
        fail("--find-max's line", "the most ... sustained ...: 3", p.stdout)
    # --pipeline: submit / wait one tick ahead, back to back; its period and yardsticks
    doc, p = expect_run(cpu + ["--pipeline", "--rate", "0", "--seconds", "0.2", "--warmup", "3",
                               "--cameras", "2", "--width", "128", "--height", "96"], j,
                        {"pipeline": True})
    r = doc["runs"][0]
    if not (r["period_ms"] > 0 and r["one_by_one_ms"] > 0 and r["compute_ms"] > 0
            and r["copy_ms"] == 0 and r["ticks"] == r["timed_ticks"] + 3
            and "period / max(copy, compute)" in p.stdout):
        fail("--pipeline on the CPU: period, one by one, compute > 0, copy 0, 3 warm-up ticks",
             "those", f"  got: {r}\n{p.stdout}")
    if GPU:
        doc, p = expect_run(["--device", "cuda", "--source", "pinned", "--seconds", "1",
                             "--rate", "30"], j, {"source": "pinned", "policy_device": "cuda"})
        if not doc["runs"][0]["h2d_gbps"] or "copy floor" not in p.stdout:
            fail("pinned on the GPU: the bandwidth and the copy floor", "printed", p.stdout)
        doc, p = expect_run(["--device", "cuda", "--source", "pinned", "--seconds", "1",
                             "--rate", "0", "--pipeline"], j, {"pipeline": True})
        r = doc["runs"][0]
        if not (r["copy_ms"] > 0 and r["compute_ms"] > 0 and r["period_ms"] > 0):
            fail("--pipeline from pinned frames on the GPU: copy, compute, period > 0", "those",
                 f"  got: {r}")


def main():
    global CUDARL, GPU
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cudarl", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--only", choices=["bad_input", "runs"])
    ap.add_argument("--gpu", action="store_true")
    a = ap.parse_args()
    CUDARL, GPU = os.path.abspath(a.cudarl), a.gpu
    work = os.path.join(a.work, a.only or "all")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    if a.only in (None, "bad_input"):
        bad_input(work)
    if a.only in (None, "runs"):
        runs(work)
    print("ok")


GPU = False
if __name__ == "__main__":
    main()
