#!/usr/bin/env python3
"""cudarl's env renderers (src/env/render.h) against the drawings they imitate.

    python3 test_render_gym.py RENDER_DUMP WORKDIR

Gymnasium's envs (CartPole-v1, Acrobot-v1, MountainCar-v0, MountainCarContinuous-v0,
Pendulum-v1): for several states, Gymnasium's render_mode="rgb_array" picture of the state (its
env.unwrapped.state set) against cudarl's (render_dump ... state), same size. Gymnasium draws
anti-aliased outlines and lines (pygame.gfxdraw.aapolygon, aalines) over its filled shapes, and
rounds polygon edges its own way; cudarl fills the same shapes without anti-aliasing. So the
pictures differ on the shapes' 1-px borders, by design, and nowhere else. The measure:

  unmatched  the fraction of all pixels where either picture has a colour that the other does not
             have (within 64 of 255 in every channel) anywhere within 1 px: what is left after
             allowing each edge to move by one pixel. Limits: CartPole 0.0005 (measured
             0.00002 .. 0.00016), the others 0.005 (measured up to 0.0031: MountainCar's track is
             a 1-px line against Gymnasium's 2-px anti-aliased one; Acrobot's and Pendulum's
             thin bars up to 0.0009).
  IoU        CartPole also: intersection over union of the pixels at least half inked (some
             channel at most 127), >= 0.93 (measured 0.95 .. 0.995).

A control shows the measure can fail: the same comparison against the picture of a state moved by
0.1 (12.5 px for CartPole's cart) must exceed the limits.

CartPolePixels-v1: a played state's picture is its observation's newest frame, each pixel a 4x4
grey square, exactly.

MinAtar: a played state of each game, every 32x32 cell of cudarl's picture in the colour
MinAtar's display gives it: seaborn's "cubehelix" palette of C colours, colour c + 1 for the
last channel c set in the cell, black for none (within 1 of 255: bytes from floats).

Needs gymnasium, pygame, numpy and seaborn (scripts/setup.sh installs them); a missing one fails
the test saying so.
"""
import os
import struct
import subprocess
import sys

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # pygame draws off-screen
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
try:
    import numpy as np
    import gymnasium as gym
    import pygame  # noqa: F401  (Gymnasium's renderers need it)
    import seaborn as sns
except ImportError as e:
    print(f"FAIL: {e}; install the test's Python packages: scripts/setup.sh (pip install "
          f"gymnasium pygame numpy seaborn)")
    sys.exit(1)

DUMP, WORK = sys.argv[1], sys.argv[2]
FAILED = []

STATES = {
    "CartPole-v1": [[0, 0, 0, 0], [1.0, 0, 0.2, 0], [-2.3, 0, -0.2, 0], [2.4, 0, 0.21, 0],
                    [0.3, 0, -0.1, 0]],
    "Acrobot-v1": [[0, 0, 0, 0], [1.0, 0.5, 0, 0], [-2.5, 1.5, 0, 0]],
    "MountainCar-v0": [[-0.5, 0], [0.4, 0], [-1.1, 0]],
    "MountainCarContinuous-v0": [[-0.5, 0], [0.3, 0]],
    "Pendulum-v1": [[0, 0], [1.0, 0], [-2.5, 0]],
}
LIMIT = {"CartPole-v1": 0.0005}
DEFAULT_LIMIT = 0.005
IOU_MIN = 0.93


def dump(env_id, *args):
    out = os.path.join(WORK, "dump.bin")
    subprocess.run([DUMP, out, env_id] + [str(a) for a in args], check=True)
    b = open(out, "rb").read()
    w, h, ob = struct.unpack("<3i", b[:12])
    rgb = np.frombuffer(b[12:12 + w * h * 3], np.uint8).reshape(h, w, 3)
    return rgb, np.frombuffer(b[12 + w * h * 3:12 + w * h * 3 + ob], np.uint8)


def unmatched(a, b, tol=64):
    """Pixels of a with no pixel of b within 1 px whose colour is within tol in every channel."""
    h, w, _ = a.shape
    best = np.full((h, w), 999)
    pb = np.pad(b, ((1, 1), (1, 1), (0, 0)), mode="edge")
    for dy in range(3):
        for dx in range(3):
            best = np.minimum(best, np.abs(a - pb[dy:dy + h, dx:dx + w]).max(2))
    return best > tol


def measure(g, m):
    g, m = g.astype(int), m.astype(int)
    frac = (unmatched(g, m) | unmatched(m, g)).mean()
    gi, mi = (255 - g).max(2) >= 128, (255 - m).max(2) >= 128
    iou = (gi & mi).sum() / max((gi | mi).sum(), 1)
    return frac, iou


def within(env_id, frac, iou):
    ok = frac <= LIMIT.get(env_id, DEFAULT_LIMIT)
    return ok and (env_id != "CartPole-v1" or iou >= IOU_MIN)


def check_gymnasium():
    for env_id, states in STATES.items():
        env = gym.make(env_id, render_mode="rgb_array")
        env.reset(seed=0)
        for s in states:
            env.unwrapped.state = np.array(s, dtype=np.float64)
            if env_id == "Pendulum-v1":
                env.unwrapped.last_u = None  # no torque arrow: cudarl draws none
            g = env.render()
            m, _ = dump(env_id, "state", *s)
            if g.shape != m.shape:
                FAILED.append(f"{env_id} {s}: size {m.shape}, Gymnasium's {g.shape}")
                continue
            frac, iou = measure(g, m)
            verdict = "ok" if within(env_id, frac, iou) else "FAIL"
            print(f"{verdict}: {env_id} state {s}: unmatched {frac:.6f} (limit "
                  f"{LIMIT.get(env_id, DEFAULT_LIMIT)}), IoU {iou:.4f}")
            if verdict != "ok":
                FAILED.append(f"{env_id} {s}: unmatched {frac:.6f}, IoU {iou:.4f}")
            moved = list(s)
            moved[0] += 0.1  # the control: another state must not pass
            frac, iou = measure(g, dump(env_id, "state", *moved)[0])
            if within(env_id, frac, iou):
                FAILED.append(f"{env_id} {s}: the picture of {moved} passed as the same "
                              f"(unmatched {frac:.6f}, IoU {iou:.4f}): the measure cannot fail")
        env.close()


def check_minatar():
    cell = 32
    for game in ["Breakout", "Asterix", "Freeway", "Seaquest", "SpaceInvaders"]:
        env_id = f"MinAtar/{game}-v1"
        m, obs = dump(env_id, "play", 3, 40)
        n = obs.size // 100
        obs = obs.reshape(n, 10, 10)
        palette = [(0, 0, 0)] + [tuple(int(v * 255) for v in c)
                                 for c in sns.color_palette("cubehelix", n)]
        bad = 0
        for y in range(10):
            for x in range(10):
                set_ = np.nonzero(obs[:, y, x])[0]
                want = np.array(palette[set_[-1] + 1 if set_.size else 0])
                block = m[y * cell:(y + 1) * cell, x * cell:(x + 1) * cell].astype(int)
                bad += int(np.abs(block - want).max() > 1)
        lit = int((obs.sum(0) > 0).sum())
        print(f"{'ok' if bad == 0 else 'FAIL'}: {env_id}: {m.shape[1]}x{m.shape[0]}, {lit} "
              f"cells lit, {bad} cells off MinAtar's palette")
        if bad or m.shape != (320, 320, 3) or lit == 0:
            FAILED.append(f"{env_id}: {bad} cells off the palette, {lit} lit, size {m.shape}")


def check_pixels():
    m, obs = dump("CartPolePixels-v1", "play", 5, 30)
    newest = obs.reshape(4, 84, 84)[3]
    want = np.repeat(np.repeat(newest, 4, 0), 4, 1)
    ok = m.shape == (336, 336, 3) and all((m[:, :, c] == want).all() for c in range(3))
    print(f"{'ok' if ok else 'FAIL'}: CartPolePixels-v1: the observation's newest frame, 4x, "
          f"grey ({m.shape[1]}x{m.shape[0]})")
    if not ok:
        FAILED.append("CartPolePixels-v1: the picture is not the newest frame scaled 4x")


def main():
    os.makedirs(WORK, exist_ok=True)
    check_gymnasium()
    check_minatar()
    check_pixels()
    if FAILED:
        print("FAIL:\n  " + "\n  ".join(FAILED))
        sys.exit(1)
    print("all renders match")


if __name__ == "__main__":
    main()
