"""The runtime-only libcudarl.so (-DCUDARL_RUNTIME_ONLY=ON, docs/install.md) needs only what the
policy runtime needs: every NEEDED entry (readelf -d) is the C library's (libc, libm, the
dynamic loader, libdl, libpthread, librt, libgcc_s), cJSON's, or, in a CUDA build, the CUDA
runtime's and cuBLAS's (and the C++ runtime the CUDA objects link). Anything else (OpenMP's
libgomp, cuDNN, protobuf-c, libpng, MuJoCo, ...) is a failure naming the library.

Usage: test_needed.py LIBRARY
Run by ctest in the runtime-only build (tests/runtime_only.cmake; scripts/consumer-check.sh)."""
import re
import subprocess
import sys

ALLOWED = [
    r"libc\.so\.\d+", r"libm\.so\.\d+", r"ld-linux[-\w.]*\.so\.\d+", r"libdl\.so\.\d+",
    r"libpthread\.so\.\d+", r"librt\.so\.\d+", r"libgcc_s\.so\.\d+", r"libcjson\.so\.\d+",
    r"libcudart\.so\.\d+", r"libcublas\.so\.\d+", r"libcublasLt\.so\.\d+",
    r"libstdc\+\+\.so\.\d+",
]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = subprocess.run(["readelf", "-d", sys.argv[1]], check=True, capture_output=True,
                         text=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)
    bad = [n for n in needed if not any(re.fullmatch(a, n) for a in ALLOWED)]
    print("NEEDED of %s: %s" % (sys.argv[1], " ".join(needed)))
    if bad or not needed:
        print("FAIL: the runtime-only library needs %s, which the policy runtime does not; "
              "the allowed: the C library, cJSON, the CUDA runtime and cuBLAS"
              % (", ".join(bad) or "nothing (readelf found no NEEDED entry)"))
        sys.exit(1)


if __name__ == "__main__":
    main()
