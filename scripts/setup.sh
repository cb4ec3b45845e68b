#!/usr/bin/env bash
# Installs what cudarl needs to build and test on Debian/Ubuntu: a C compiler, CMake, cJSON,
# clang with OpenMP for the fuzz harnesses, Python with gymnasium, safetensors and numpy, and
# MuJoCo (its pip wheel: the library and headers the MuJoCo tasks build on, and, with imageio,
# Gymnasium's MuJoCo envs that their test compares with), giflib for GIF videos, and pygame and
# Pillow for the tests that hold cudarl's renders against Gymnasium's and decode its GIFs, and
# OpenCV (opencv-python-headless) for the test that holds the camera preprocessing against it,
# and OpenMPI (libopenmpi-dev, openmpi-bin) for data-parallel training and its tests
# (`mpirun -np 2 cudarl train`, docs/multigpu.md). Idempotent; quiet when everything is there.
set -euo pipefail

need_apt=()
command -v cmake >/dev/null || need_apt+=(cmake)
command -v cc >/dev/null || need_apt+=(build-essential)
command -v python3 >/dev/null || need_apt+=(python3 python3-pip)
python3 -c 'import ensurepip' 2>/dev/null || need_apt+=(python3-venv) # the package's venv
[ -f /usr/include/cjson/cJSON.h ] || need_apt+=(libcjson-dev)
command -v protoc-c >/dev/null || need_apt+=(protobuf-c-compiler)
[ -f /usr/include/protobuf-c/protobuf-c.h ] || need_apt+=(libprotobuf-c-dev)
[ -f /usr/include/png.h ] || need_apt+=(libpng-dev)
[ -f /usr/include/gif_lib.h ] || need_apt+=(libgif-dev)      # GIF videos (cudarl eval --video)
command -v pkg-config >/dev/null || need_apt+=(pkg-config) # scripts/consumer-check.sh
command -v clang >/dev/null || need_apt+=(clang)            # the fuzz harnesses (libFuzzer)
compgen -G '/usr/lib/llvm-*/lib/libomp.so' >/dev/null || need_apt+=(libomp-dev)
# OpenMPI: the headers and library (CMake's FindMPI asks mpicc) and mpirun
compgen -G '/usr/lib/*/openmpi/include/mpi.h' >/dev/null || need_apt+=(libopenmpi-dev)
command -v mpirun >/dev/null || need_apt+=(openmpi-bin)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]} (apt-get)" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if [ "${CUDARL_SKIP_PYTHON:-0}" != 1 ] &&
   ! python3 -c 'import gymnasium, safetensors, numpy, tensorboard, minatar, onnx, onnxruntime, mujoco, imageio, pygame, PIL, cv2' 2>/dev/null; then
  echo "setup: installing gymnasium safetensors numpy tensorboard minatar onnx onnxruntime mujoco imageio pygame pillow opencv-python-headless (pip)" >&2
  python3 -m pip install -q gymnasium safetensors numpy tensorboard minatar==1.0.15 onnx \
    onnxruntime mujoco imageio pygame pillow opencv-python-headless 2>&1 |
    grep -v -i "warning" >&2 || true
  python3 -c 'import gymnasium, safetensors, numpy, tensorboard, minatar, onnx, onnxruntime, mujoco, imageio, pygame, PIL, cv2'
fi
