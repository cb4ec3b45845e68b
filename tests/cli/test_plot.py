#!/usr/bin/env python3
"""End-to-end tests of `cudarl plot` (tools/cmd_plot.c) on synthetic runs.

    python3 test_plot.py --cudarl build/cudarl --work build/plot-work [--only GROUP]

GROUP is one of:
  curves     runs written here: "flat" (return 100 at every row), "ramp" (400 -> 500), and two
             seeds of cudarl's default name (grp__ppo__1__..., grp__ppo__2__...: returns 200 and
             300). The PNG decodes (Pillow) to --width x --height; in both panels (env steps,
             wall time), at the middle of the x range, "flat"'s line is on the row of 100, the
             seeds' mean on the row of 250 and their band (min-max: 200 .. 300) blended at 25%
             between, each in its tab10 colour (the rows and columns from the axes the command
             prints). Grouping by name (<env>__<algo>__<seed>__<time>, -seed<N>, _s<N>) and by
             --group.
  bad_input  refusals, each exit code 2 and one stderr line naming the problem and the fix: no
             runs, no --out, --out not .png, in a missing folder, a directory; a missing run
             folder, one without metrics.csv, an empty metrics.csv, one with a header only, a
             missing column, a row of the wrong width, a value that is no number, no mean return
             yet; --group of the wrong count or an empty label, --width out of range.
  no_png     (a build without libpng) the command fails naming libpng-dev.
Needs Pillow (scripts/setup.sh installs it).
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys

CUDARL = None
HEADER = ("global_step,iteration,charts/episodic_return,charts/episodic_length,"
          "charts/mean_return_100,charts/episodes,time/elapsed_s")
TAB10 = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40)]


def fail(what, detail):
    print(f"FAIL: {what}\n{detail}", flush=True)
    sys.exit(1)


def run(args, cwd):
    argv = [CUDARL, "plot"] + [str(a) for a in args]
    p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, CUDARL_LOG="warn"))
    return p, (f"  command: {shlex.join(argv)}\n  exit code: {p.returncode}\n"
               f"  stdout: {p.stdout.rstrip()}\n  stderr: {p.stderr.rstrip()}")


def write_run(root, name, ret, rows=11, header=HEADER, extra=None):
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "metrics.csv"), "w") as f:
        if header is not None:
            f.write(header + "\n")
        for i in range(rows):
            r = ret(i) if callable(ret) else ret
            f.write(f"{i * 1000},{i + 1},,,{'' if r is None else r},{i},{i * 1.0}\n")
        if extra:
            f.write(extra)
    return d


def axes(stdout):
    """{panel: (x0, x1, c0, c1, y0, y1, r0, r1)} from the command's lines."""
    out = {}
    for m in re.finditer(r"panel (\w+): x (\S+) \.\. (\S+) at columns (\d+) \.\. (\d+); y (\S+)"
                         r" \.\. (\S+) at rows (\d+) \.\. (\d+)", stdout):
        out[m.group(1)] = tuple(float(v) for v in m.groups()[1:])
    return out


def col_of(ax, x):
    x0, x1, c0, c1 = ax[:4]
    return int(c0 + (x - x0) / (x1 - x0) * (c1 - c0))


def row_of(ax, y):
    y0, y1, r0, r1 = ax[4:]
    return int(r0 - (y - y0) / (y1 - y0) * (r0 - r1))  # floor for rows inside the image


def group_curves(cwd):
    from PIL import Image
    runs = [write_run(cwd, "flat", 100), write_run(cwd, "ramp", lambda i: 400 + 10 * i),
            write_run(cwd, "grp__ppo__1__1700000000", 200),
            write_run(cwd, "grp__ppo__2__1700000001", 300)]
    p, desc = run(runs + ["--out", "c.png", "--width", "1000", "--height", "480"], cwd)
    if p.returncode != 0 or "4 runs in 3 curves" not in p.stdout:
        fail("a plot of 4 runs in 3 curves", desc)
    im = Image.open(os.path.join(cwd, "c.png")).convert("RGB")
    if im.size != (1000, 480):
        fail("the image's size", f"  {im.size}, expected (1000, 480)")
    ax = axes(p.stdout)
    if set(ax) != {"steps", "time"}:
        fail("the axes printed", desc)
    band = tuple(round(255 + 0.25 * (c - 255)) for c in TAB10[2])
    for name, x in [("steps", 5000), ("time", 5.0)]:
        a, col = ax[name], col_of(ax[name], x)
        for what, y, want in [("flat's line at 100", 100, TAB10[0]),
                              ("the seeds' mean at 250", 250, TAB10[2]),
                              ("ramp's line at 450", 450, TAB10[1]),
                              ("the seeds' band at 225", 225, band),
                              ("the seeds' band at 275", 275, band)]:
            got = im.getpixel((col, row_of(a, y)))
            if got != want:
                fail(f"{name} panel: {what}", f"  pixel ({col}, {row_of(a, y)}) is {got}, "
                     f"expected {want}\n  axes {a}")
        # outside the band (above 300, below 200) no band colour: the band is min-max
        for y in (190, 310):
            got = im.getpixel((col, row_of(a, y)))
            if got == band:
                fail(f"{name} panel: the band ends at the seeds' min and max",
                     f"  pixel at {y} is the band's colour")
    print("ok: lines and band where the data says, in both panels", flush=True)

    for names, want in [(["a-seed1", "a-seed2", "b-seed1"], "3 runs in 2 curves"),
                        (["c_s1", "c_s2"], "2 runs in 1 curve"),
                        (["d1", "d2"], "2 runs in 2 curves")]:
        dirs = [write_run(cwd, n, 100) for n in names]
        p, desc = run(dirs + ["--out", "g.png"], cwd)
        if p.returncode != 0 or want not in p.stdout:
            fail(f"grouping {names}", f"  expected '{want}'\n{desc}")
    p, desc = run(runs + ["--out", "g.png", "--group", "x,x,y,y"], cwd)
    if p.returncode != 0 or "4 runs in 2 curves" not in p.stdout:
        fail("--group x,x,y,y", desc)
    print("ok: grouping by name and by --group", flush=True)


def expect_error(what, args, cwd, needles, rc=2):
    print(f"check: {what}", flush=True)
    p, desc = run(args, cwd)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    if p.returncode != rc or len(lines) != 1 or any(n not in lines[0] for n in needles):
        fail(what, f"  expected exit code {rc} and one stderr line containing {needles}\n{desc}")


def group_bad_input(cwd):
    good = write_run(cwd, "good", 100)
    expect_error("no runs", ["--out", "x.png"], cwd, ["which runs", "cudarl plot runs/A"])
    expect_error("no --out", [good], cwd, ["--out curves.png"])
    expect_error("--out not .png", [good, "--out", "x.jpg"], cwd, ["x.jpg", ".png"])
    expect_error("--out in a missing folder", [good, "--out", "nope/x.png"], cwd, ["nope"])
    os.makedirs(os.path.join(cwd, "d.png"), exist_ok=True)
    expect_error("--out a directory", [good, "--out", "d.png"], cwd, ["d.png", "directory"])
    expect_error("a missing run folder", ["missing", "--out", "x.png"], cwd,
                 ["'missing' does not exist", "runs/<run-name>"])
    os.makedirs(os.path.join(cwd, "bare"), exist_ok=True)
    expect_error("no metrics.csv", ["bare", "--out", "x.png"], cwd,
                 ["'bare' has no metrics.csv", "runs/<run-name>"])
    write_run(cwd, "empty", 0, rows=0, header=None)
    expect_error("an empty metrics.csv", ["empty", "--out", "x.png"], cwd,
                 ["empty/metrics.csv is empty"])
    write_run(cwd, "header", 0, rows=0)
    expect_error("a header only", ["header", "--out", "x.png"], cwd, ["no rows"])
    write_run(cwd, "nocol", 1, header="global_step,iteration,charts/episodic_return,"
              "charts/episodic_length,charts/mean_return_100,charts/episodes,time/other")
    expect_error("a missing column", ["nocol", "--out", "x.png"], cwd, ["'time/elapsed_s'"])
    write_run(cwd, "short", 100, extra="12000,13,1\n")
    expect_error("a row of the wrong width", ["short", "--out", "x.png"], cwd,
                 ["short/metrics.csv line 13", "3 fields", "header has 7"])
    write_run(cwd, "nan", 100, extra="12000,13,,,abc,12,12.0\n")
    expect_error("a value that is no number", ["nan", "--out", "x.png"], cwd,
                 ["line 13", "'abc'", "not a number"])
    write_run(cwd, "noret", None)
    expect_error("no mean return yet", ["noret", "--out", "x.png"], cwd,
                 ["no charts/mean_return_100 yet"])
    expect_error("--group of the wrong count", [good, good, "--out", "x.png", "--group", "a"],
                 cwd, ["--group gives 1 label for 2 runs"])
    expect_error("--group with an empty label", [good, good, "--out", "x.png", "--group", "a,"],
                 cwd, ["label 2 is empty"])
    expect_error("--width out of range", [good, "--out", "x.png", "--width", "10"], cwd,
                 ["--width"])
    for n in os.listdir(cwd):
        if n == "x.png" or ".tmp." in n:
            fail("nothing written by a refusal", f"  {n} exists")
    print("ok: bad input refused", flush=True)


def group_no_png(cwd):
    good = write_run(cwd, "good", 100)
    expect_error("a build without libpng", [good, "--out", "x.png"], cwd, ["libpng-dev"], rc=1)


def main():
    global CUDARL
    ap = argparse.ArgumentParser()
    ap.add_argument("--cudarl", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--only", default="curves")
    a = ap.parse_args()
    CUDARL = os.path.abspath(a.cudarl)
    cwd = os.path.join(os.path.abspath(a.work), a.only)
    shutil.rmtree(cwd, ignore_errors=True)
    os.makedirs(cwd)
    if a.only == "curves":
        try:
            from PIL import Image  # noqa: F401
        except ImportError as e:
            fail("the test's Python packages", f"  {e}: run scripts/setup.sh (pip install pillow)")
    {"curves": group_curves, "bad_input": group_bad_input, "no_png": group_no_png}[a.only](cwd)
    print(f"all {a.only} checks passed", flush=True)


if __name__ == "__main__":
    main()
