#!/usr/bin/env bash
# The whole test suite: set up, build with -Werror, run every CPU test; then the same under
# AddressSanitizer + UndefinedBehaviorSanitizer; then each fuzz harness for FUZZ_SECONDS (60;
# 0 skips them: scripts/fuzz.sh). The `gpu` label runs too where a GPU is.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
jobs=$(nproc)

# CUDARL_MPI=ON: the data-parallel tests (ctest -L mpi) run, never skipped for a missing MPI
cmake -S . -B build-test -DCMAKE_BUILD_TYPE=Release -DCUDARL_WERROR=ON -DCUDARL_MPI=ON
cmake --build build-test -j"$jobs"
(cd build-test && ctest --output-on-failure -j"$jobs" -LE gpu)
scripts/consumer-check.sh build-test # install, consume (CMake, pkg-config), runtime-only build

# The Python package: pip builds it from this tree into a fresh venv (the CPU library), then
# its tests, which take the CLI of the build above to make checkpoints.
python3 -m venv --clear build-test/venv
CMAKE_ARGS="-DCUDARL_CUDA=OFF" build-test/venv/bin/pip install -q ".[test]"
CUDARL_TEST_CLI="$PWD/build-test/cudarl" build-test/venv/bin/python -m pytest -q python/tests

cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCUDARL_WERROR=ON -DCUDARL_SANITIZE=ON \
      -DCUDARL_CUDA=OFF -DCUDARL_MPI=ON
cmake --build build-asan -j"$jobs"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j"$jobs" -LE "gpu|slow")

scripts/aarch64-check.sh build-aarch64 # aarch64 under qemu, CUDA sm_100/110 (docs/testing.md)

if [ "${FUZZ_SECONDS:-60}" -gt 0 ]; then
  scripts/fuzz.sh "${FUZZ_SECONDS:-60}"
fi

if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  (cd build-test && ctest --output-on-failure -L gpu)
fi
