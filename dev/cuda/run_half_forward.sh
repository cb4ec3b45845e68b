#!/usr/bin/env bash
# Builds and runs the half-precision forward's kernel labs (dev/cuda/conv_half_forward.cu and
# fc_half_forward.cu; dev/cuda/README.md says what they hold) on the first visible GPU: every
# conv version at batch 128 and 1 in fp16 and at batch 128 in bf16, every FC version at batch 1
# and 8 in fp16 and bf16. Exits non-zero if a check failed.
set -euo pipefail
cd "$(dirname "$0")/../.."

nvcc -O3 -arch=sm_90 -lineinfo dev/cuda/conv_half_forward.cu -o /tmp/conv_half_forward &
conv=$!
nvcc -O3 -arch=sm_90 -lineinfo dev/cuda/fc_half_forward.cu -o /tmp/fc_half_forward -lcublas
wait "$conv"
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,power.limit --format=csv || true

rc=0
/tmp/conv_half_forward --batch 128 || rc=1
/tmp/conv_half_forward --batch 1 || rc=1
/tmp/conv_half_forward --batch 128 --bf16 || rc=1
for b in 1 8; do
    /tmp/fc_half_forward --batch "$b" || rc=1
    /tmp/fc_half_forward --batch "$b" --bf16 || rc=1
done
exit "$rc"
