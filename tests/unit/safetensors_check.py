#!/usr/bin/env python3
"""Interop of cudarl's safetensors files with the `safetensors` Python package.

  safetensors_check.py --check PATH   loads PATH (from `test_safetensors --write`) and checks it
  safetensors_check.py --write PATH   writes PATH with save_file for `test_safetensors --read`

Exits non-zero on the first wrong value, saying which, expected and got. The expected values
mirror the constants in tests/unit/test_safetensors.c; change both together."""
import sys

try:
    import numpy as np
    from safetensors import safe_open
    from safetensors.numpy import load_file, save_file
except ImportError as e:
    sys.exit(f"safetensors_check.py: {e}; this test needs the safetensors and numpy Python "
             f"packages for {sys.executable}: pip install safetensors numpy")

# What `test_safetensors --write` writes (interop_fill in test_safetensors.c).
FROM_C = {
    "scalar_f64": np.array(-2.5, dtype=np.float64),
    "actor/0.weight": np.array([[-1.0, -0.5, 0.0], [0.5, 1.0, 1.5]], dtype=np.float32),
    "i64": np.array([-(1 << 62), -1, 0, 1 << 40], dtype=np.int64),
    "mask": np.array([True, False, True, True, False]),
    "bytes": np.array([0, 255], dtype=np.uint8),
    "unaligned.é": np.array([1.25, -3.0, 1e-8], dtype=np.float32),
    "i32": np.array([[-7, 0], [7, 2**31 - 1]], dtype=np.int32),
    "u32": np.array([0, 1, 2**32 - 1], dtype=np.uint32),
    "empty": np.zeros((0, 4), dtype=np.float32),
}
FROM_C_META = {
    "format": "cudarl",
    "step": "12345",
    "note": "quote \" backslash \\ newline \n tab \t unicode é ✓",
}

# What this script writes for `test_safetensors --read` (interop_check_py_file).
FROM_PY = {
    "a_f32": (np.arange(6, dtype=np.float32) * 0.25 - 0.5).reshape(2, 3),
    "b_f64_scalar": np.array(1.5, dtype=np.float64),
    "c_i64": np.array([-5, 1 << 50, -(1 << 62)], dtype=np.int64),
    "d_i32": np.array([[1, -2], [3, -4]], dtype=np.int32),
    "e_u8": np.array([0, 200, 255], dtype=np.uint8),
    "f_bool": np.array([True, False, True]),
    "g_f16": np.array([1.0, -2.0], dtype=np.float16),
    "h_empty": np.zeros((0, 3), dtype=np.float32),
}
FROM_PY_META = {"source": "safetensors.numpy", "note": "quote \" backslash \\ é"}


def fail(msg):
    sys.exit(f"FAIL safetensors_check.py: {msg}")


def check(path):
    got = load_file(path)
    if set(got) != set(FROM_C):
        fail(f"{path}: expected tensors {sorted(FROM_C)}, got {sorted(got)}")
    for name, want in FROM_C.items():
        g = got[name]
        if g.dtype != want.dtype or g.shape != want.shape:
            fail(f"{name}: expected {want.dtype}{list(want.shape)}, got {g.dtype}{list(g.shape)}")
        if not np.array_equal(g, want):
            fail(f"{name}: expected {want.tolist()}, got {g.tolist()}")
    with safe_open(path, framework="numpy") as f:
        meta = f.metadata()
    if meta != FROM_C_META:
        fail(f"metadata: expected {FROM_C_META!r}, got {meta!r}")
    print(f"safetensors_check.py: {path}: {len(got)} tensors and metadata match")


def write(path):
    save_file(FROM_PY, path, metadata=FROM_PY_META)
    print(f"safetensors_check.py: wrote {path}")


def main(argv):
    if len(argv) != 3 or argv[1] not in ("--check", "--write"):
        sys.exit(f"usage: {argv[0]} --check PATH | --write PATH")
    (check if argv[1] == "--check" else write)(argv[2])


if __name__ == "__main__":
    main(sys.argv)
