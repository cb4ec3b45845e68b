#!/usr/bin/env bash
# Builds and runs the fused-MLP kernel lab (dev/cuda/mlp_fused.cu; see mlp_fused.md) on the
# first visible GPU. Arguments go to the program (e.g. --B 65536 --reps 50 --variants v1,v2).
# A CUDA error (exit 2: a kernel faulted, so the context is gone) reruns once without v2,
# so a fault in the tensor-core variant does not hide the other results.
set -euo pipefail
cd "$(dirname "$0")/../.."

nvcc -O3 -arch=sm_90 -lineinfo -lcublas dev/cuda/mlp_fused.cu -o /tmp/mlp_fused
nvcc -O3 -arch=sm_90 -lineinfo --resource-usage -c dev/cuda/mlp_fused.cu -o /tmp/mlp_fused.o 2>&1 |
    grep -A2 "Compiling entry function '_ZN5fused" | grep -E "Compiling|Used|spill" || true
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,power.limit --format=csv || true

rc=0
/tmp/mlp_fused "$@" || rc=$?
if [ "$rc" -eq 2 ]; then
    echo "mlp_fused: CUDA error; rerunning with --variants v1,v1b"
    rc=0
    /tmp/mlp_fused --variants v1,v1b "$@" || rc=$?
fi
exit "$rc"
