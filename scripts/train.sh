#!/usr/bin/env bash
# The main job: set up, build cudarl (CUDA too when the toolkit is there) and train PPO on
# CartPole-v1 with the tuned defaults, on the GPU if there is one. Extra arguments go to
# `cudarl train`.
set -euo pipefail
cd "$(dirname "$0")/.."
CUDARL_SKIP_PYTHON=1 scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target cudarl_cli >/dev/null
exec build/cudarl train "$@"
