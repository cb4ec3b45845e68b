#!/usr/bin/env python3
"""End-to-end tests of `cudarl eval --video` (tools/cmd_eval.c, src/algo/record.c).

    python3 test_video.py --cudarl build/cudarl --dump build/tests/render_dump \
        --work build/video-work [--only GROUP]

GROUP is one of:
  gif        a CartPole PPO policy trained for a few seconds: the GIF of 2 episodes decodes
             (Pillow) to sum(length + 1) frames of 600x400 at 20 ms; the episode returns it
             prints are the ones eval plays (eval's mean over the same 2 episodes); its first
             frame is render_dump's picture of the same reset, pixel for pixel; --fps 25 gives
             40 ms frames; the pole, read from each frame's pixels, stays inside
             CartPole's 12-degree termination bound (an episode of 500 steps among them). A
             Pendulum policy (continuous actions) gives 201 frames of 500x500; a
             DQN MLP on MinAtar/Breakout 320x320 frames.
  mp4        an `ffmpeg` stand-in first on PATH gets the frames as rgb24 (bytes = frames x
             600 x 400 x 3) and its file lands at the target; a failing one is an error with
             nothing left behind; with no ffmpeg on PATH (and a real one, if installed, writes a
             file that ffprobe reads as that many frames).
  bad_input  refusals, each exit code 2 (1 for a run that fails), one stderr line naming the
             problem and the fix: an unknown extension, --fps out of range or above 50 for a GIF,
             --video-episodes out of range, --video-episodes/--fps without --video, a missing
             folder, a directory as the target; no file and no temp file left.
  no_gif     (a build without giflib) --video x.gif is refused naming libgif-dev.
  gpu        (a GPU: label gpu) conv policies played through the CUDA policy runtime: a PPO
             minatar-cnn policy on MinAtar/Breakout trained on the GPU, its video with
             --device cuda in fp32 and bf16 and with --device cpu (each GIF the frames of the
             episodes its eval printed, 320x320 at 50 ms; fp32 on CUDA plays the CPU's episodes
             unless a near tie of two logits flips, which is printed), and a DQN minatar-cnn
             policy's on CUDA.
Needs Pillow and numpy (scripts/setup.sh installs them).
"""
import argparse
import os
import re
import shlex
import shutil
import stat
import struct
import subprocess
import sys

CUDARL = DUMP = None


def fail(what, detail):
    print(f"FAIL: {what}\n{detail}", flush=True)
    sys.exit(1)


def run(args, cwd, env=None, timeout=300):
    argv = [CUDARL] + [str(a) for a in args]
    e = dict(os.environ, CUDARL_LOG="warn")
    e.update(env or {})
    p = subprocess.run(argv, cwd=cwd, env=e, capture_output=True, text=True, timeout=timeout)
    desc = (f"  command: {shlex.join(argv)}\n  exit code: {p.returncode}\n"
            f"  stdout: {p.stdout.rstrip()}\n  stderr: {p.stderr.rstrip()}")
    return p, desc


def ok_run(what, args, cwd, env=None):
    p, desc = run(args, cwd, env)
    if p.returncode != 0:
        fail(what, desc)
    return p.stdout


def expect_error(what, args, cwd, needles, rc=2, env=None):
    print(f"check: {what}", flush=True)
    p, desc = run(args, cwd, env)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    if p.returncode != rc or len(lines) != 1 or any(n not in lines[0] for n in needles):
        fail(what, f"  expected exit code {rc} and one stderr line containing {needles}\n{desc}")


def no_leftovers(folder, what):
    left = [n for n in os.listdir(folder) if ".tmp." in n]
    if left:
        fail(what, f"  temp files left: {left}")


def fresh(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def train(cwd, name, *flags):
    ok_run(f"training {name}", ["train", "--run-name", name, "--quiet"] + list(flags), cwd)
    return os.path.join(cwd, "runs", name, "model.safetensors")


def episodes_of(stdout):
    eps = [(int(n), float(r)) for n, r in
           re.findall(r"episode \d+: (\d+) steps, return (-?[\d.]+)", stdout)]
    mean = re.search(r"mean return (-?[\d.]+)", stdout)
    return eps, float(mean.group(1)) if mean else None


def gif_frames(path):
    from PIL import Image
    import numpy as np
    im = Image.open(path)
    frames, durations = [], []
    for k in range(im.n_frames):
        im.seek(k)
        frames.append(np.array(im.convert("RGB")))
        durations.append(im.info.get("duration"))
    return frames, durations, im.size


POLE_RGB = (202, 152, 101)  # Gymnasium's pole colour, which the CartPole renderer uses
THETA_BOUND = 12 * 2 * 3.141592653589793 / 360  # CartPole's termination angle (0.2095 rad)


def pole_angle(frame):
    """The pole's angle from vertical (radians, unsigned) in a 600x400 CartPole frame: the main
    axis of its pixels (the pole is a 10 x 125 px bar drawn in POLE_RGB)."""
    import numpy as np
    ys, xs = np.nonzero((frame == POLE_RGB).all(axis=2))
    if len(xs) < 100:
        return None
    pts = np.stack([xs - xs.mean(), ys - ys.mean()])
    w, v = np.linalg.eigh(pts @ pts.T)
    ax = v[:, np.argmax(w)]
    return float(np.arctan2(abs(ax[0]), abs(ax[1])))


def check_pole_balanced(frames, eps):
    """Every frame of an episode shows the pole inside the termination bound, but the last of
    an episode that ended by termination (shorter than 500 steps); at least one episode ran to
    the time limit. The angle is read from the pixels, so within a degree of rasterization."""
    at, worst, full = 0, 0.0, 0
    for n, _ in eps:
        kept = n + 1 if n == 500 else n  # a terminated episode's last frame is past the bound
        full += n == 500
        for k in range(kept):
            a = pole_angle(frames[at + k])
            if a is None:
                fail("the pole is drawn", f"  frame {at + k}: no pole pixels")
            worst = max(worst, a)
            if a > THETA_BOUND + 0.02:
                fail("the pole stays inside the termination bound",
                     f"  frame {at + k} (episode step {k}): {a:.4f} rad > {THETA_BOUND:.4f}")
        at += n + 1
    if not full:
        fail("the policy balances the pole", f"  no episode reached 500 steps: {eps}")
    return worst


def dump_reset(env_id, seed):
    import numpy as np
    out = os.path.join(WORK, "reset.bin")
    subprocess.run([DUMP, out, env_id, "play", str(seed), "0"], check=True)
    b = open(out, "rb").read()
    w, h, _ = struct.unpack("<3i", b[:12])
    return np.frombuffer(b[12:12 + w * h * 3], np.uint8).reshape(h, w, 3)


def group_gif(cwd):
    ckpt = train(cwd, "cp", "--total-timesteps", "200000", "--device", "cpu")
    print("check: a CartPole GIF of 2 episodes", flush=True)
    out = ok_run("eval --video", ["eval", ckpt, "--episodes", "2", "--video", "cp.gif",
                                  "--video-episodes", "2"], cwd)
    eps, mean = episodes_of(out)
    frames, durations, size = gif_frames(os.path.join(cwd, "cp.gif"))
    want = sum(n + 1 for n, _ in eps)
    if len(eps) != 2 or len(frames) != want or size != (600, 400):
        fail("frames of the GIF", f"  episodes {eps}: expected {want} frames of 600x400, got "
             f"{len(frames)} of {size}\n  stdout: {out}")
    if set(durations) != {20}:
        fail("frame durations at 50 fps", f"  got {sorted(set(durations))} ms")
    if abs(sum(r for _, r in eps) / 2 - mean) > 0.006:
        fail("the video's episodes are eval's", f"  video returns {eps}, eval's mean {mean}")
    first = dump_reset("CartPole-v1", 12345)
    if not (frames[0] == first).all():
        fail("the first frame is the renderer's picture of the reset",
             f"  {(frames[0] != first).any(2).sum()} pixels differ")
    worst = check_pole_balanced(frames, eps)
    print(f"ok: {len(frames)} frames for episodes {eps}; eval's mean {mean}; frame 0 = the "
          f"renderer's reset; the pole within {worst:.4f} rad of vertical (bound "
          f"{THETA_BOUND:.4f})", flush=True)
    ok_run("--fps 25", ["eval", ckpt, "--episodes", "1", "--video", "slow.gif", "--fps", "25"],
           cwd)
    _, durations, _ = gif_frames(os.path.join(cwd, "slow.gif"))
    if set(durations) != {40}:
        fail("--fps 25 gives 40 ms frames", f"  got {sorted(set(durations))} ms")
    print("ok: --fps 25: 40 ms a frame", flush=True)

    ckpt = train(cwd, "pd", "--env-id", "Pendulum-v1", "--total-timesteps", "2048")
    out = ok_run("Pendulum video", ["eval", ckpt, "--episodes", "1", "--video", "pd.gif"], cwd)
    frames, durations, size = gif_frames(os.path.join(cwd, "pd.gif"))
    if len(frames) != 201 or size != (500, 500) or episodes_of(out)[0][0][0] != 200:
        fail("a Pendulum video", f"  {len(frames)} frames of {size}\n  {out}")
    print("ok: Pendulum (continuous actions): 201 frames of 500x500", flush=True)

    ckpt = train(cwd, "mb", "--algo", "dqn", "--env-id", "MinAtar/Breakout-v1", "--policy", "mlp",
                 "--total-timesteps", "2000", "--learning-starts", "500")
    out = ok_run("MinAtar video", ["eval", ckpt, "--episodes", "1", "--video", "mb.gif"], cwd)
    frames, durations, size = gif_frames(os.path.join(cwd, "mb.gif"))
    n = episodes_of(out)[0][0][0]
    if len(frames) != n + 1 or size != (320, 320) or set(durations) != {50}:
        fail("a MinAtar video", f"  {len(frames)} frames of {size}, {durations[:3]} ms\n  {out}")
    print(f"ok: MinAtar/Breakout (DQN MLP): {len(frames)} frames of 320x320 at 50 ms",
          flush=True)
    no_leftovers(cwd, "gif")


def minatar_video(cwd, ckpt, name, *flags):
    """eval CKPT --video NAME (2 episodes) with flags; checks the GIF against the episodes eval
    printed and returns them."""
    out = ok_run(f"MinAtar video {name}", ["eval", ckpt, "--episodes", "2", "--video", name,
                                           "--video-episodes", "2", *flags], cwd)
    eps, mean = episodes_of(out)
    frames, durations, size = gif_frames(os.path.join(cwd, name))
    want = sum(n + 1 for n, _ in eps)
    if len(eps) != 2 or len(frames) != want or size != (320, 320) or set(durations) != {50}:
        fail(f"a MinAtar video {name} ({' '.join(flags)})",
             f"  episodes {eps}: expected {want} frames of 320x320 at 50 ms, got {len(frames)} "
             f"of {size}, {sorted(set(durations))} ms\n  {out}")
    if abs(sum(r for _, r in eps) / 2 - mean) > 0.006:
        fail("the video's episodes are eval's", f"  video returns {eps}, eval's mean {mean}")
    print(f"ok: {name} ({' '.join(flags)}): {len(frames)} frames for episodes {eps}",
          flush=True)
    return eps


def group_gpu(cwd):
    ckpt = train(cwd, "mp", "--env-id", "MinAtar/Breakout-v1", "--policy", "minatar-cnn",
                 "--device", "cuda", "--total-timesteps", "300000")
    gpu = minatar_video(cwd, ckpt, "mp-cuda.gif", "--device", "cuda")
    cpu = minatar_video(cwd, ckpt, "mp-cpu.gif", "--device", "cpu")
    if gpu != cpu:
        print(f"note: the CUDA and CPU plays differ (a near tie of two logits): {gpu} vs {cpu}",
              flush=True)
    minatar_video(cwd, ckpt, "mp-bf16.gif", "--device", "cuda", "--precision", "bf16")
    ckpt = train(cwd, "mq", "--algo", "dqn", "--env-id", "MinAtar/Breakout-v1", "--policy",
                 "minatar-cnn", "--device", "cuda", "--total-timesteps", "20000",
                 "--learning-starts", "1000")
    minatar_video(cwd, ckpt, "mq-cuda.gif", "--device", "cuda")
    no_leftovers(cwd, "gpu")


def write_fake_ffmpeg(folder, body):
    path = os.path.join(folder, "ffmpeg")
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body + "\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


def group_mp4(cwd):
    ckpt = train(cwd, "cp", "--total-timesteps", "4096")
    fake = fresh(os.path.join(cwd, "fake"))
    write_fake_ffmpeg(fake, 'for a; do last=$a; done\ncat > "$last"')
    path = f"{fake}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    print("check: .mp4 through ffmpeg on PATH", flush=True)
    out = ok_run("eval --video x.mp4", ["eval", ckpt, "--episodes", "1", "--video", "a.mp4"],
                 cwd, env={"PATH": path})
    frames = int(re.search(r"(\d+) frames", out).group(1))
    size = os.path.getsize(os.path.join(cwd, "a.mp4"))
    if size != frames * 600 * 400 * 3:
        fail("ffmpeg's input", f"  {size} bytes for {frames} frames of 600x400 rgb24")
    print(f"ok: ffmpeg got {frames} rgb24 frames", flush=True)
    write_fake_ffmpeg(fake, "cat > /dev/null; echo 'fake ffmpeg: no encoder' >&2; exit 4")
    print("check: a failing ffmpeg", flush=True)
    p, desc = run(["eval", ckpt, "--episodes", "1", "--video", "b.mp4"], cwd,
                  env={"PATH": path})
    if p.returncode != 1 or "exit status 4" not in p.stderr or \
            os.path.exists(os.path.join(cwd, "b.mp4")):
        fail("a failing ffmpeg is an error, nothing written", desc)
    no_leftovers(cwd, "a failing ffmpeg")
    expect_error("no ffmpeg on PATH", ["eval", ckpt, "--video", "c.mp4"], cwd,
                 ["ffmpeg", "apt-get install ffmpeg", ".gif"], env={"PATH": fake + "/none"})
    real = shutil.which("ffmpeg")
    if real and shutil.which("ffprobe"):
        ok_run("a real ffmpeg", ["eval", ckpt, "--episodes", "1", "--video", "r.mp4"], cwd)
        n = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0",
                            "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0",
                            os.path.join(cwd, "r.mp4")], capture_output=True, text=True)
        print(f"ok: the real ffmpeg ({real}) wrote {n.stdout.strip()} frames", flush=True)
    else:
        print("note: no real ffmpeg/ffprobe installed; the stand-in covered the pipe", flush=True)


def group_bad_input(cwd):
    ckpt = train(cwd, "cp", "--total-timesteps", "4096")
    expect_error("an unknown extension", ["eval", ckpt, "--video", "x.avi"], cwd,
                 ["x.avi", ".gif", ".mp4"])
    expect_error("a GIF above 50 fps", ["eval", ckpt, "--video", "x.gif", "--fps", "60"], cwd,
                 ["--fps", "50", ".mp4"])
    expect_error("--fps above the range", ["eval", ckpt, "--video", "x.gif", "--fps", "101"],
                 cwd, ["--fps", "100"])
    expect_error("--video-episodes 0", ["eval", ckpt, "--video", "x.gif",
                                        "--video-episodes", "0"], cwd, ["--video-episodes"])
    expect_error("--video-episodes 65", ["eval", ckpt, "--video", "x.gif",
                                         "--video-episodes", "65"], cwd, ["--video-episodes",
                                                                          "64"])
    expect_error("--video-episodes without --video", ["eval", ckpt, "--video-episodes", "2"],
                 cwd, ["--video-episodes", "--video PATH"])
    expect_error("--fps without --video", ["eval", ckpt, "--fps", "30"], cwd,
                 ["--fps", "--video PATH"])
    expect_error("a missing folder", ["eval", ckpt, "--video", "nowhere/x.gif"], cwd,
                 ["nowhere"])
    os.makedirs(os.path.join(cwd, "d.gif"), exist_ok=True)
    expect_error("a directory as the target", ["eval", ckpt, "--video", "d.gif"], cwd,
                 ["d.gif", "directory"])
    for name in ["x.avi", "x.gif", "nowhere"]:
        if os.path.exists(os.path.join(cwd, name)):
            fail("nothing written by a refusal", f"  {name} exists")
    no_leftovers(cwd, "bad input")
    print("ok: bad input refused", flush=True)


def group_no_gif(cwd):
    ckpt = train(cwd, "cp", "--total-timesteps", "4096")
    expect_error("a build without giflib", ["eval", ckpt, "--video", "x.gif"], cwd,
                 ["giflib", "libgif-dev"])


def main():
    global CUDARL, DUMP, WORK
    ap = argparse.ArgumentParser()
    ap.add_argument("--cudarl", required=True)
    ap.add_argument("--dump", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--only", default="gif")
    a = ap.parse_args()
    CUDARL, DUMP = os.path.abspath(a.cudarl), os.path.abspath(a.dump)
    WORK = fresh(os.path.join(os.path.abspath(a.work), a.only))
    if a.only in ("gif", "gpu"):
        try:
            import numpy  # noqa: F401
            from PIL import Image  # noqa: F401
        except ImportError as e:
            fail("the test's Python packages", f"  {e}: run scripts/setup.sh (pip install "
                 f"pillow numpy)")
    {"gif": group_gif, "mp4": group_mp4, "bad_input": group_bad_input,
     "no_gif": group_no_gif, "gpu": group_gpu}[a.only](WORK)
    print(f"all {a.only} checks passed", flush=True)


WORK = None
if __name__ == "__main__":
    main()
