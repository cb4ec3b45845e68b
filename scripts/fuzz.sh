#!/usr/bin/env bash
# The libFuzzer harnesses of fuzz/ under AddressSanitizer + UndefinedBehaviorSanitizer, each for
# SECONDS over its corpus; exits 1 on any crash, sanitizer report, leak or hang.
#   scripts/fuzz.sh [SECONDS] [NAME...]   default 60 s each; NAME: checkpoint config onnx resume
# Build: build-fuzz (CC=clang, CUDARL_FUZZ=ON, CUDARL_SANITIZE=ON, no CUDA). Corpus: the seeds in
# fuzz/corpus/ (small PPO and DQN checkpoints) and a minatar-cnn checkpoint trained here (1.6 MB,
# not kept in git); what a run adds goes to build-fuzz/corpus/NAME, so a later run goes on from
# there. A failing input is saved as build-fuzz/crash-NAME-*: reproduce it with
# build-fuzz/fuzz/fuzz_NAME FILE.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(checkpoint config onnx resume)
command -v clang >/dev/null || { echo "fuzz.sh: clang is missing: apt-get install clang libomp-dev" >&2; exit 1; }
jobs=$(nproc)

CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DCUDARL_CUDA=OFF -DCUDARL_WERROR=ON \
  -DCUDARL_SANITIZE=ON -DCUDARL_FUZZ=ON -DBUILD_TESTING=OFF >/dev/null
targets=(cudarl_cli)
for n in "${names[@]}"; do targets+=("fuzz_$n"); done
cmake --build build-fuzz -j"$jobs" --target "${targets[@]}" >/dev/null

seeds=build-fuzz/seeds
if [ ! -f $seeds/ppo_conv.safetensors ]; then
  rm -rf build-fuzz/seed-runs && mkdir -p $seeds
  ASAN_OPTIONS=detect_leaks=0 build-fuzz/cudarl train --device cpu --env-id MinAtar/Breakout-v1 \
    --policy minatar-cnn --num-envs 2 --num-steps 8 --num-minibatches 2 --total-timesteps 16 \
    --runs-dir build-fuzz/seed-runs --run-name conv --quiet >/dev/null 2>&1
  cp build-fuzz/seed-runs/conv/model.safetensors $seeds/ppo_conv.safetensors
fi

status=0
for n in "${names[@]}"; do
  mkdir -p "build-fuzz/corpus/$n"
  log=build-fuzz/fuzz_$n.log
  rc=0
  ASAN_OPTIONS=detect_leaks=1 build-fuzz/fuzz/fuzz_$n -max_total_time="$seconds" -timeout=20 \
    -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="build-fuzz/crash-$n-" \
    "build-fuzz/corpus/$n" fuzz/corpus $seeds >"$log" 2>&1 || rc=$?
  runs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log")
  size=$(find "build-fuzz/corpus/$n" fuzz/corpus $seeds -type f | wc -l)
  if [ $rc -ne 0 ]; then
    echo "fuzz_$n: FAILED (rc $rc) after ${runs:-?} runs; the input: build-fuzz/crash-$n-*"
    grep -E "ERROR|runtime error|SUMMARY" "$log" | head -5
    status=1
  else
    echo "fuzz_$n: ${runs:-?} runs in ${seconds} s, no failure (corpus: $size files)"
  fi
done
exit $status
