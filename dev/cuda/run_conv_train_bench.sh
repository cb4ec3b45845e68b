#!/usr/bin/env bash
# Builds dev/cuda/conv_train_bench.cu against a CUDA build tree's static library (BUILD, default
# build-gpu: scripts/gpu-check.sh --no-tests makes it) and runs it on the first GPU, then
# dev/cuda/conv_train_torch.py (PyTorch's cuDNN on the same shapes) where torch imports. What
# they measure: dev/cuda/README.md. Everything goes to stdout (stderr joined), one file's worth.
# Usage (repo root or anywhere): dev/cuda/run_conv_train_bench.sh [BUILD] [conv_train_bench args]
# Exit: the lab's status (0 done, 1 failed, 3 cut short by its deadline), else the peer's.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
exec 2>&1

build="build-gpu"
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then build=$1; shift; fi
for f in libcudarl.a cudarl.pc CMakeCache.txt; do
  if [ ! -f "$build/$f" ]; then
    echo "run_conv_train_bench.sh: no $build/$f; build the tree first" \
         "(scripts/gpu-check.sh --no-tests makes build-gpu) or name a CUDA build dir"
    exit 2
  fi
done
cache_get() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt" | head -1; }
cudnn_inc=$(cache_get CUDNN_INCLUDE_DIR)
if [ -z "$cudnn_inc" ] || [ ! -f "$cudnn_inc/cudnn.h" ] ||
   ! grep -q -- '-lcudart' "$build/cudarl.pc"; then
  echo "run_conv_train_bench.sh: $build is not a CUDA build with cuDNN (CUDNN_INCLUDE_DIR" \
       "'$cudnn_inc'; cudarl.pc without -lcudart); configure it with -DCUDARL_CUDA=ON where" \
       "cuDNN is installed"
  exit 2
fi
libs=$(sed -n 's/^Libs.private: //p' "$build/cudarl.pc")
case "$libs" in
  *cudnn*) ;;
  *) echo "run_conv_train_bench.sh: $build's library was built without cuDNN (cudarl.pc:" \
          "$libs)"; exit 2 ;;
esac
nvcc=$(cache_get CMAKE_CUDA_COMPILER)
[ -x "$nvcc" ] || nvcc=nvcc
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')
[[ $cap =~ ^[0-9]+$ ]] || cap=90

t0=$(date +%s)
# libcudarl.a's objects call the shared CUDA runtime (cudarl.pc: -lcudart): so must ours
# (-cudart shared), or the process would hold two runtimes. g++ links, as CMake does.
# shellcheck disable=SC2086  # $libs is a list of linker flags
if ! "$nvcc" -O3 -std=c++17 -arch="sm_$cap" -lineinfo -cudart shared -Xcompiler -Wall,-Wextra \
       -Iinclude -Isrc -I"$cudnn_inc" -DCUDARL_WITH_CUDA=1 -DCUDARL_WITH_CUDNN=1 \
       -c dev/cuda/conv_train_bench.cu -o /tmp/conv_train_bench.o ||
   ! g++ /tmp/conv_train_bench.o "$build/libcudarl.a" $libs -o /tmp/conv_train_bench; then
  echo "run_conv_train_bench.sh: the build failed"
  exit 1
fi
echo "built /tmp/conv_train_bench (sm_$cap, against $build) in $(( $(date +%s) - t0 )) s"
git log -1 --format='tree: %h %s' 2>/dev/null || true
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,power.limit --format=csv || true
echo

/tmp/conv_train_bench "$@"
rc=$?
echo "conv_train_bench: exit $rc"

echo
if python3 -c 'import torch' >/dev/null 2>&1; then
  python3 dev/cuda/conv_train_torch.py --deadline 40
  prc=$?
  echo "conv_train_torch.py: exit $prc"
  [ "$rc" -eq 0 ] && rc=$prc
else
  echo "conv_train_torch.py: skipped: python3 cannot import torch here"
fi
exit "$rc"
