#!/usr/bin/env bash
# What the main build does not compile or run, checked on this x86-64 machine (docs/testing.md,
# "Other architectures"):
#  1. cudarl cross-compiled for aarch64 (a Jetson's CPU) with Debian's gcc-aarch64-linux-gnu and
#     the multiarch :arm64 libraries, CPU only and without MuJoCo, with -Werror; its CPU suite
#     run under qemu-user but for eleven heavy runs (below), the Python side of the
#     tests (Gymnasium, MinAtar, onnxruntime, safetensors) on this machine's python3.
#  2. The CUDA sources compiled, device code only, for the GPU architectures that nvcc has and
#     the main build leaves out (sm_100, sm_110); the main build compiles sm_87 and sm_90.
# Installs what it needs (apt, with arm64 added to dpkg's architectures) when it is missing.
# Usage: scripts/aarch64-check.sh [BUILD_DIR]   (default build-aarch64)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-aarch64}
jobs=$(nproc)
triple=aarch64-linux-gnu

# The CPU suite runs under qemu (-LE "gpu|slow", as in the sanitizer pass) but for the tests
# named here: emulated, the target's float code runs 20-50 times slower than natively, and these
# runs that train conv nets or a DQN pool, corrupt checkpoints by the hundred or SIGKILL a run
# at random points took 81% of the suite's time under qemu (docs/testing.md). What they compute
# is the ops' and envs' that the rest checks. Every name here must exist (checked below).
qemu_skip=(test_dqn_conv test_policy_conv policy_conv_train_dqn test_ppo_conv test_dqn_pool
           test_convnet cli_runs cli_ppo_conv onnx_export_conv cli_resume_property signals_kill)

need_apt=()
command -v ${triple}-gcc >/dev/null || need_apt+=(gcc-${triple})
command -v qemu-aarch64 >/dev/null || need_apt+=(qemu-user)
for lib in cjson:libcjson-dev protobuf-c:libprotobuf-c-dev png:libpng-dev; do
  [ -e /usr/lib/${triple}/lib${lib%%:*}.so ] || need_apt+=("${lib#*:}:arm64")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "aarch64-check: installing ${need_apt[*]} (apt-get)" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  dpkg --print-foreign-architectures | grep -qx arm64 || $SUDO dpkg --add-architecture arm64
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

toolchain=cmake/toolchains/${triple}.cmake
# -march=native tunes for the build machine: refused when cross-compiling.
if cmake -S . -B "$build-native-refused" --toolchain "$toolchain" -DCUDARL_NATIVE=ON \
     -DCUDARL_CUDA=OFF >"$build-native-refused.log" 2>&1 ||
   ! grep -q "CUDARL_NATIVE=ON while cross-compiling" "$build-native-refused.log"; then
  echo "aarch64-check: CUDARL_NATIVE=ON was not refused when cross-compiling:" >&2
  cat "$build-native-refused.log" >&2
  exit 1
fi
rm -rf "$build-native-refused" "$build-native-refused.log"

t0=$(date +%s)
cmake -S . -B "$build" --toolchain "$toolchain" -DCMAKE_BUILD_TYPE=Release -DCUDARL_WERROR=ON \
      -DCUDARL_CUDA=OFF -DCUDARL_MUJOCO=OFF >/dev/null
cmake --build "$build" -j"$jobs"
t1=$(date +%s)
listed=$(cd "$build" && ctest -N)
for name in "${qemu_skip[@]}"; do
  if ! grep -qE "Test +#[0-9]+: ${name}\$" <<<"$listed"; then
    echo "aarch64-check: no test '$name' in $build: update qemu_skip in $0" >&2
    exit 1
  fi
done
skip="^($(IFS='|'; echo "${qemu_skip[*]}"))\$"
(cd "$build" && ctest --output-on-failure -j"$jobs" -LE "gpu|slow" -E "$skip")
t2=$(date +%s)
echo "aarch64-check: cross build $((t1 - t0)) s, tests under qemu $((t2 - t1)) s"

# The CUDA sources, device code only (nvcc -fatbin: no host compile), with the flags CMake gives
# them, for each architecture the toolkit has beyond the main build's sm_87 and sm_90.
if ! command -v nvcc >/dev/null; then
  echo "aarch64-check: no nvcc: CUDA architectures not checked"
  exit 0
fi
archs=()
for a in 100 110; do
  nvcc --list-gpu-code | grep -qx "sm_$a" && archs+=("$a-real")
done
[ ${#archs[@]} -gt 0 ] || { echo "aarch64-check: nvcc has no sm_100 or sm_110"; exit 0; }
cuda_build=$build/cuda-archs
cmake -S . -B "$cuda_build" -DCMAKE_BUILD_TYPE=Release -DCUDARL_CUDA=ON -DCUDARL_MUJOCO=OFF \
      -DBUILD_TESTING=OFF -DCUDARL_BENCH=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
      "-DCMAKE_CUDA_ARCHITECTURES=$(IFS=';'; echo "${archs[*]}")" >/dev/null
mkdir -p "$cuda_build/fatbin"
python3 - "$cuda_build" <<'PY' | xargs -d '\n' -P "$jobs" -I{} sh -c '{}'
import json, os, shlex, sys
build = os.path.abspath(sys.argv[1])  # the commands run in the CUDA build's folder
for e in json.load(open(os.path.join(build, "compile_commands.json"))):
    if not e["file"].endswith(".cu"):
        continue
    a = shlex.split(e["command"])
    a[a.index("-c")] = "-fatbin"
    a[a.index("-o") + 1] = os.path.join(build, "fatbin", os.path.basename(e["file"]) + ".fatbin")
    print("cd " + shlex.quote(e["directory"]) + " && " + shlex.join(a))
PY
t3=$(date +%s)
echo "aarch64-check: CUDA sources for ${archs[*]}: $(ls "$cuda_build/fatbin" | wc -l) files," \
     "$((t3 - t2)) s"
