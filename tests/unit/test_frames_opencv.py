"""cudarl_frame_convert (the CPU reference of the camera preprocessing) against OpenCV.

    test_frames_opencv.py FRAMES_DUMP WORKDIR

For each case a frame (random bytes, or a structured picture: gradients, bars and a checker, which
give the resize long runs of equal and of changing pixels) in one of the five formats, at a size
and with a crop and row padding, goes through frames_dump (cudarl_frame_convert) and through
OpenCV: cv2.cvtColor to gray or RGB, the crop by slicing, cv2.resize(INTER_AREA), planar. Checks:

- the conversion alone (output size = crop size, so the resize is the identity): equal to
  cvtColor, every byte (OpenCV's RGB2GRAY and BT.601 YUV2RGB fixed point, the same integers);
- the whole: equal to the exact box average of OpenCV's converted pixels, rounded half up
  (numpy, float64: every sum is an integer below 2^53), every byte: the arithmetic cudarl.h
  states, for every ratio;
- against cv2.resize(INTER_AREA): max |diff| <= 1 where both sides shrink or both grow (OpenCV's
  float weights round differently; measured max and mean printed). Where one side shrinks and
  the other grows OpenCV's INTER_AREA is not an area average (it interpolates linearly), so
  those cases are held to the exact box average only, and their difference from OpenCV printed.

Needs numpy and opencv-python-headless (scripts/setup.sh installs them)."""
import os
import subprocess
import sys

# One BLAS thread: the many small products below would spend their time starting threads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

try:
    import cv2
    import numpy as np
except ImportError as e:
    sys.exit("test_frames_opencv: %s; install numpy and opencv-python-headless "
             "(scripts/setup.sh does)" % e)

TOLERANCE = 1  # max |ours - cv2.resize(INTER_AREA)| where both sides shrink or both grow

BPP = {"gray8": 1, "rgb8": 3, "bgr8": 3, "yuyv": 2, "nv12": 1}


def picture(kind, h, w, c, rng):
    """uint8 (h, w, c): random bytes or a structured picture."""
    if kind == "random":
        return rng.integers(0, 256, (h, w, c), dtype=np.uint8)
    y, x = np.mgrid[0:h, 0:w]
    out = np.empty((h, w, c), np.uint8)
    for k in range(c):
        grad = (x * 255 // max(w - 1, 1) + k * 60) % 256
        bars = np.where((x // max(w // 17, 1) + k) % 2 == 0, 230, 20)
        checker = np.where(((x // 7) + (y // 5)) % 2 == 0, 255, 0)
        out[..., k] = np.where(y < h // 3, grad, np.where(y < 2 * h // 3, bars, checker))
    return out


def make_frame(fmt, w, h, kind, rng):
    """The camera's bytes (tight rows) and OpenCV's input of the same frame."""
    if fmt == "gray8":
        f = picture(kind, h, w, 1, rng)[..., 0]
        return f, f
    if fmt in ("rgb8", "bgr8"):
        f = picture(kind, h, w, 3, rng)
        return f, f
    if fmt == "yuyv":
        f = picture(kind, h, w, 2, rng)  # (h, w, 2): Y, then U or V by pixel parity
        return f, f
    y = picture(kind, h, w, 1, rng)[..., 0]
    uv = picture(kind, h // 2, w, 1, rng)[..., 0]  # U V U V ... rows
    f = np.vstack([y, uv])
    return f, f


def opencv_convert(fmt, img, channels):
    """OpenCV's gray (h, w) or RGB (h, w, 3) of the frame."""
    gray = channels == 1
    if fmt == "gray8":
        return img if gray else cv2.cvtColor(img, cv2.COLOR_GRAY2RGB)
    if fmt == "rgb8":
        return cv2.cvtColor(img, cv2.COLOR_RGB2GRAY) if gray else img
    if fmt == "bgr8":
        return cv2.cvtColor(img, cv2.COLOR_BGR2GRAY if gray else cv2.COLOR_BGR2RGB)
    if fmt == "yuyv":
        return cv2.cvtColor(img, cv2.COLOR_YUV2GRAY_YUYV if gray else cv2.COLOR_YUV2RGB_YUYV)
    return cv2.cvtColor(img, cv2.COLOR_YUV2GRAY_NV12 if gray else cv2.COLOR_YUV2RGB_NV12)


def weights(n_src, n_out):
    """(n_out, n_src) overlaps of output o's interval [o n_src, (o+1) n_src) with source j's
    [j n_out, (j+1) n_out): the integer weights of cudarl.h's area resize."""
    o = np.arange(n_out)[:, None].astype(np.int64)
    j = np.arange(n_src)[None, :].astype(np.int64)
    lo = np.maximum(o * n_src, j * n_out)
    hi = np.minimum((o + 1) * n_src, (j + 1) * n_out)
    return np.maximum(hi - lo, 0)


def box(img, out_w, out_h):
    """The exact area average of img (h, w) rounded half up, uint8 (out_h, out_w)."""
    h, w = img.shape
    wy = weights(h, out_h).astype(np.float64)
    wx = weights(w, out_w).astype(np.float64)
    s = (wy @ img.astype(np.float64) @ wx.T).astype(np.int64)  # integers below 2^53: exact
    area = w * h
    return ((s + area // 2) // area).astype(np.uint8)


def planar(img):
    return img[None] if img.ndim == 2 else np.ascontiguousarray(img.transpose(2, 0, 1))


def run_dump(dump, work, fmt, w, h, pitch, crop, out_w, out_h, channels, data):
    src = os.path.join(work, "frame.bin")
    dst = os.path.join(work, "out.bin")
    data.tofile(src)
    cx, cy, cw, ch = crop
    args = [dump, fmt, str(w), str(h), str(pitch), str(cx), str(cy), str(cw), str(ch),
            str(out_w), str(out_h), str(channels), src, dst]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("FAIL: %s: %s" % (" ".join(args), r.stderr.strip()))
    return np.fromfile(dst, np.uint8).reshape(channels, out_h, out_w)


def padded(frame, fmt, w, pad):
    """The frame's rows with `pad` bytes of 0xEE after each: (bytes, pitch)."""
    rows = frame.reshape(frame.shape[0], -1)
    tight = rows.shape[1]
    assert tight == w * BPP[fmt]
    if pad == 0:
        return rows, 0
    out = np.full((rows.shape[0], tight + pad), 0xEE, np.uint8)
    out[:, :tight] = rows
    return out, tight + pad


# (format, width, height, crop (x, y, w, h) or None, out_w, out_h, pad bytes a row, channels)
CASES = [
    ("nv12", 3840, 2160, None, 84, 84, 0, 1),        # the frame: 4K NV12 to 84x84 gray
    ("rgb8", 3840, 2160, None, 84, 84, 0, 3),        # 4K RGB to 84x84 RGB
]
for fmt in ("gray8", "rgb8", "bgr8", "yuyv", "nv12"):
    for ch in (1, 3):
        CASES += [
            (fmt, 640, 480, None, 84, 84, 0, ch),          # 7.62 x 5.71
            (fmt, 334, 218, None, 84, 84, 12, ch),         # odd ratios, padded rows
            (fmt, 640, 360, (131, 61, 417, 263), 96, 96, 0, ch),  # a crop at odd x, y
            (fmt, 160, 120, None, 40, 30, 0, ch),          # 4 x 4 exactly
            (fmt, 50, 40, None, 84, 84, 0, ch),            # up, both sides
            (fmt, 84, 84, None, 84, 84, 0, ch),            # the identity
            (fmt, 200, 20, None, 84, 84, 4, ch),           # down in x, up in y
        ]


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: test_frames_opencv.py FRAMES_DUMP WORKDIR")
    dump, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(20260527)
    worst = {"area": 0, "mixed": 0}
    diffs, n_conv = [], 0
    for fmt, w, h, crop, out_w, out_h, pad, ch in CASES:
        for kind in ("random", "structured"):
            if w * h > 1 << 22 and kind == "structured":
                continue  # one 4K frame a case keeps the test fast
            frame, cv_in = make_frame(fmt, w, h, kind, rng)
            data, pitch = padded(frame, fmt, w, pad)
            conv = opencv_convert(fmt, cv_in, ch)
            cx, cy, cw, chh = crop if crop else (0, 0, w, h)
            crop_t = crop if crop else (0, 0, 0, 0)
            conv = conv[cy:cy + chh, cx:cx + cw]
            name = "%s %dx%d crop %s -> %dx%dx%d (%s, pitch %d)" % (
                fmt, w, h, crop_t, out_w, out_h, ch, kind, pitch)
            if w * h <= 1 << 20:  # the conversion alone, exactly cvtColor's
                same = run_dump(dump, work, fmt, w, h, pitch, crop_t, cw, chh, ch, data)
                if not np.array_equal(same, planar(conv)):
                    bad = np.argwhere(same != planar(conv))[0]
                    sys.exit("FAIL %s: conversion differs from cvtColor at %s: %d, want %d" % (
                        name, tuple(bad), same[tuple(bad)], planar(conv)[tuple(bad)]))
                n_conv += 1
            ours = run_dump(dump, work, fmt, w, h, pitch, crop_t, out_w, out_h, ch, data)
            planes = [conv] if conv.ndim == 2 else [conv[..., k] for k in range(3)]
            exact = np.stack([box(p, out_w, out_h) for p in planes])
            if not np.array_equal(ours, exact):
                bad = np.argwhere(ours != exact)[0]
                sys.exit("FAIL %s: differs from the exact box average at %s: %d, want %d" % (
                    name, tuple(bad), ours[tuple(bad)], exact[tuple(bad)]))
            ref = planar(cv2.resize(conv, (out_w, out_h), interpolation=cv2.INTER_AREA))
            d = np.abs(ours.astype(np.int64) - ref.astype(np.int64))
            mixed = (out_w < cw and out_h > chh) or (out_w > cw and out_h < chh)
            print("%-72s vs INTER_AREA: max %3d  mean %.5f%s" % (
                name, d.max(), d.mean(), "  (one side up, one down: not checked)" if mixed else ""))
            if mixed:
                worst["mixed"] = max(worst["mixed"], int(d.max()))
                continue
            worst["area"] = max(worst["area"], int(d.max()))
            diffs.append(d.mean())
            if d.max() > TOLERANCE:
                bad = np.argwhere(d > TOLERANCE)[0]
                sys.exit("FAIL %s: |ours - INTER_AREA| = %d at %s, over the tolerance %d" % (
                    name, d.max(), tuple(bad), TOLERANCE))
    print("conversions equal to cvtColor: %d cases; every resize equal to the exact box average"
          % n_conv)
    print("against cv2.resize(INTER_AREA) %s: max |diff| %d (tolerance %d), mean of the cases' "
          "mean |diff| %.5f; one side up and one down: max %d (OpenCV interpolates there)" % (
              cv2.__version__, worst["area"], TOLERANCE, float(np.mean(diffs)), worst["mixed"]))
    print("test_frames_opencv: OK")


if __name__ == "__main__":
    main()
