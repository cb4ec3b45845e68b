#!/usr/bin/env python3
"""End-to-end tests of `cudarl render` (tools/cmd_render.c).

Runs the built `cudarl` binary and checks what a user gets: --steps N valid PNG files (signature,
chunk CRCs, IHDR of an 8-bit grayscale image of the 4 stacked frames side by side, pixels decoded
with the standard library's zlib) whose contents are a frame stack (the reset's observation four
copies of one frame, every later one the previous shifted by a frame, or a fresh padded stack
after an episode ends), the same bytes for the same seed; and refusals of bad --steps, an unknown
or non-pixel env id, a missing or unwritable --out, each with exit code 2 and one stderr line
naming the problem. Built without libpng, the command must fail naming the package.

    python3 test_render.py --cudarl build/cudarl --work build/render-work [--only GROUP]

GROUP is one of: files, bad_input, no_png (default: files and bad_input). Each group works in
its own folder <work>/<group>, emptied first. Needs only Python 3's standard library.
"""
import argparse
import binascii
import os
import shlex
import shutil
import struct
import subprocess
import sys
import zlib

SIDE, STACK = 84, 4
WIDTH = STACK * SIDE + STACK - 1  # 1-px separators
SEPARATOR = 255
SCENE = {0, 80, 160, 255}  # background, track, pole, cart; anti-aliased edges lie between
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

CUDARL = None  # path of the binary, set by main()


class Result:
    def __init__(self, argv, rc, out, err):
        self.argv, self.rc, self.out, self.err = argv, rc, out, err

    def describe(self):
        return (f"  command:   {shlex.join(self.argv)}\n  exit code: {self.rc}\n"
                f"  stdout:    {self.out.rstrip() or '(empty)'}\n"
                f"  stderr:    {self.err.rstrip() or '(empty)'}")


def check(what):
    print(f"check: {what}", flush=True)


def fail(what, expected, got):
    """Prints expected and got and ends the test with exit code 1."""
    print(f"FAIL: {what}\n  expected:  {expected}\n{got}", flush=True)
    sys.exit(1)


def run(args, cwd, timeout=120):
    argv = [CUDARL] + [str(a) for a in args]
    env = dict(os.environ, CUDARL_LOG="warn")
    try:
        p = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        fail("command finished in time", f"exit within {timeout} s", f"  command: {shlex.join(argv)}")
    return Result(argv, p.returncode, p.stdout, p.stderr)


def expect_error(what, args, cwd, rc, needles):
    """A command that must fail with exit code `rc`, nothing on stdout and exactly one line on
    stderr containing every string in `needles`."""
    check(what)
    r = run(args, cwd)
    lines = [ln for ln in r.err.splitlines() if ln.strip()]
    missing = [n for n in needles if not lines or n not in lines[0]]
    if r.rc != rc or len(lines) != 1 or missing or r.out.strip():
        fail(what, f"exit code {rc}, empty stdout, one stderr line containing "
                   f"{', '.join(repr(n) for n in needles)}", r.describe())
    return r


def fresh_dir(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


# ---- reading PNG files ------------------------------------------------------------------------

def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def read_png(path):
    """(width, height, rows, text) of an 8-bit grayscale, non-interlaced PNG; fails the test on
    anything else: a bad signature, a chunk CRC, a missing IHDR/IDAT/IEND, a bad filter."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != PNG_SIGNATURE:
        fail(f"{path} is a PNG", "the PNG signature", f"  got: {data[:8]!r}")
    pos, chunks = 8, []
    while pos < len(data):
        if pos + 12 > len(data):
            fail(f"{path} chunks", "whole chunks", f"  got: {len(data) - pos} stray bytes")
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        crc = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])[0]
        if binascii.crc32(kind + body) != crc:
            fail(f"{path} chunk {kind!r} CRC", f"{binascii.crc32(kind + body):#x}", f"  got: {crc:#x}")
        chunks.append((kind, body))
        pos += 12 + length
    kinds = [k for k, _ in chunks]
    if kinds[0] != b"IHDR" or kinds[-1] != b"IEND" or b"IDAT" not in kinds:
        fail(f"{path} chunk order", "IHDR first, IDAT, IEND last", f"  got: {kinds}")
    w, h, depth, color, comp, filt, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    if (depth, color, comp, filt, interlace) != (8, 0, 0, 0, 0):
        fail(f"{path} IHDR", "8-bit grayscale, deflate, no interlace",
             f"  got: depth {depth}, color type {color}, interlace {interlace}")
    raw = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    if len(raw) != h * (w + 1):
        fail(f"{path} image data", f"{h * (w + 1)} bytes", f"  got: {len(raw)}")
    rows, prev = [], bytes(w)
    for y in range(h):
        ftype, line = raw[y * (w + 1)], bytearray(raw[y * (w + 1) + 1:(y + 1) * (w + 1)])
        for x in range(w):
            a = line[x - 1] if x else 0
            b, c = prev[x], prev[x - 1] if x else 0
            pred = [0, a, b, (a + b) // 2, paeth(a, b, c)][ftype] if ftype < 5 else None
            if pred is None:
                fail(f"{path} row {y} filter", "0 to 4", f"  got: {ftype}")
            line[x] = (line[x] + pred) & 255
        rows.append(bytes(line))
        prev = line
    text = {}
    for kind, body in chunks:
        if kind == b"tEXt":
            key, _, value = body.partition(b"\0")
            text[key.decode("latin-1")] = value.decode("latin-1")
    return w, h, rows, text


def frames_of(rows):
    """The STACK frames (each SIDE rows of SIDE bytes) laid side by side in `rows`."""
    return [b"".join(r[k * (SIDE + 1):k * (SIDE + 1) + SIDE] for r in rows) for k in range(STACK)]


# ---- 1. the files -----------------------------------------------------------------------------

def test_files(work):
    steps = 40
    check(f"render --steps {steps} exits 0 and says where the files went")
    r = run(["render", "--env-id", "CartPolePixels-v1", "--seed", 3, "--steps", steps, "--out",
             "out/a"], work)
    if r.rc != 0 or "wrote 40 PNG files" not in r.out:
        fail("render", "exit code 0 and 'wrote 40 PNG files'", r.describe())

    check("exactly the files obs_000000.png .. obs_000039.png")
    names = sorted(os.listdir(os.path.join(work, "out", "a")))
    want = [f"obs_{t:06d}.png" for t in range(steps)]
    if names != want:
        fail("the files", f"{want[0]} .. {want[-1]}", f"  got: {names}")

    check("each is a valid 8-bit grayscale PNG of 4 frames side by side, with a stack's contents")
    stacks, resets = [], 0
    for t, name in enumerate(names):
        path = os.path.join(work, "out", "a", name)
        w, h, rows, text = read_png(path)
        if (w, h) != (WIDTH, SIDE):
            fail(f"{name} size", f"{WIDTH} x {SIDE}", f"  got: {w} x {h}")
        if not text.get("Software", "").startswith("cudarl ") or \
                f"CartPolePixels-v1 seed 3 step {t}," not in text.get("Description", ""):
            fail(f"{name} text chunks", "Software: cudarl <version>, Description naming env, "
                 "seed and step", f"  got: {text}")
        for r_ in rows:
            for k in range(1, STACK):
                if r_[k * (SIDE + 1) - 1] != SEPARATOR:
                    fail(f"{name} separators", f"intensity {SEPARATOR} between frames",
                         f"  got: {r_[k * (SIDE + 1) - 1]}")
        frames = frames_of(rows)
        values = set(b"".join(frames))
        if not {0, 80, 255} <= values or not values - SCENE:
            fail(f"{name} pixels", "background, track and a cart (0, 80, 255), and anti-aliased "
                 "edges (values other than those of the scene)",
                 f"  got: values {sorted(values)}")
        padded = all(f == frames[0] for f in frames)
        if t == 0 and not padded:
            fail(f"{name}: the reset's observation", "4 copies of the first frame", "  got: differing frames")
        if t > 0 and frames[:3] != stacks[-1][1:]:
            if not padded:
                fail(f"{name}: the stack", "the previous observation shifted by one frame, or a "
                     "new episode's padded stack", "  got: neither")
            resets += 1
        stacks.append(frames)
    if resets == 0:
        fail("episodes ended under the random policy in 40 steps", "at least one reset",
             "  got: none")

    check("the same seed writes the same bytes; another seed other frames")
    run(["render", "--seed", 3, "--steps", 5, "--out", "out/b"], work)
    run(["render", "--seed", 4, "--steps", 5, "--out", "out/c"], work)
    for t in range(5):
        name = f"obs_{t:06d}.png"
        a, b, c = (open(os.path.join(work, "out", d, name), "rb").read() for d in "abc")
        if a != b:
            fail(f"{name} for seed 3 twice", "identical files", "  got: different bytes")
        if t == 0 and frames_of(read_png(os.path.join(work, "out", "c", name))[2]) == stacks[0]:
            fail("seed 4's first frame", "differs from seed 3's", "  got: the same frame")

    check("--out is created with its parents; --help exits 0")
    run(["render", "--steps", 1, "--out", "deep/er/folder"], work)
    if not os.path.isfile(os.path.join(work, "deep", "er", "folder", "obs_000000.png")):
        fail("nested --out", "deep/er/folder/obs_000000.png", "  got: no file")
    r = run(["render", "--help"], work)
    if r.rc != 0 or "--steps" not in r.out or "--out" not in r.out:
        fail("render --help", "exit 0 and the flags", r.describe())
    r = run(["--help"], work)
    if "cudarl render" not in r.out:
        fail("cudarl --help", "a line for render", r.describe())


# ---- 2. bad input -----------------------------------------------------------------------------

def test_bad_input(work):
    out = ["--out", "out"]
    for bad in ("0", "-3", "abc", "1.5", "100001"):
        expect_error(f"--steps {bad} refused", ["render", "--steps", bad, *out], work, 2, ["--steps"])
    expect_error("unknown env id refused", ["render", "--env-id", "Foo-v0", *out], work, 2,
                 ["'Foo-v0'", "not a known environment", "CartPolePixels-v1"])
    expect_error("an env without pixels refused", ["render", "--env-id", "CartPole-v1", *out],
                 work, 2, ["'CartPole-v1'", "no pixel observations", "CartPolePixels-v1"])
    expect_error("no --out refused", ["render", "--steps", "3"], work, 2, ["--out DIR"])
    with open(os.path.join(work, "a_file"), "w") as f:
        f.write("not a folder\n")
    expect_error("--out naming a file refused", ["render", "--out", "a_file"], work, 2,
                 ["cannot write PNG files to --out 'a_file'", "choose a folder"])
    expect_error("--out under a file refused", ["render", "--out", "a_file/sub"], work, 2,
                 ["cannot write PNG files to --out 'a_file/sub'", "choose a folder"])
    expect_error("unknown flag refused", ["render", "--stepz", "3", *out], work, 2,
                 ["--stepz", "--steps"])
    if os.path.exists(os.path.join(work, "out")):
        fail("refused commands write nothing", "no folder 'out'", "  got: one")


# ---- 3. built without libpng ------------------------------------------------------------------

def test_no_png(work):
    expect_error("render without libpng names the package", ["render", "--out", "out"], work, 1,
                 ["libpng-dev"])


GROUPS = {"files": test_files, "bad_input": test_bad_input, "no_png": test_no_png}


def main():
    global CUDARL
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cudarl", required=True, help="path of the cudarl binary")
    ap.add_argument("--work", required=True, help="scratch folder (emptied per group)")
    ap.add_argument("--only", choices=sorted(GROUPS), help="run one group of checks")
    args = ap.parse_args()
    CUDARL = os.path.abspath(args.cudarl)
    if not os.access(CUDARL, os.X_OK):
        fail("the cudarl binary exists", f"an executable at {CUDARL}", "  got: none; build first")
    for name, fn in GROUPS.items():
        if (args.only and name != args.only) or (not args.only and name == "no_png"):
            continue
        print(f"== {name}", flush=True)
        fn(fresh_dir(os.path.abspath(os.path.join(args.work, name))))
    print("all checks passed")


if __name__ == "__main__":
    main()
