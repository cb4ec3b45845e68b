#!/usr/bin/env bash
# One call on the GPU machine: build this tree (build-gpu: Release, CUDA for the GPUs present),
# run the gpu-labelled tests, then the benchmarks named (bench/run.sh; their table, the only
# list of them, is in bench/README.md). The CPU suite is CI's.
# Usage (repo root there): scripts/gpu-check.sh [--no-tests | --tests REGEX] [NAME...]
#   --tests REGEX  only the gpu tests whose names match
# $OUT gets ctest-gpu.log, a log per benchmark, and build.log where the build failed; the last
# lines printed are the benchmarks' summary, then the build's and the tests' status.
# cJSON and protobuf-c come from .debs/ where the machine lacks them (bench/prep.sh), gymnasium
# from .whl/ (bench_wheels in bench/build.sh).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/out}
export OUT
tests=. names=()
while [ $# -gt 0 ]; do
  case "$1" in
  --no-tests) tests="" ;;
  --tests) tests=$2; shift ;;
  -*) echo "gpu-check.sh: unknown option $1" >&2; exit 2 ;;
  *) names+=("$1") ;;
  esac
  shift
done
mkdir -p "$OUT"
# shellcheck source=bench/build.sh
. bench/build.sh
bench_deps || exit 1
bench_wheels || exit 1

# NCCL (data parallel on GPUs, docs/multigpu.md): on the lent machines only pip's
# nvidia-nccl-cu13 has it; name its folder so CMake finds it whichever python3 it picks.
# NVLink multicast stays off there (KINDS.md): a program that uses it can take the host's GPUs
# out of service.
export NCCL_NVLS_ENABLE=0
nccl_root=${NCCL_ROOT:-$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__path__[0] + "/x"))' 2>/dev/null)}

t0=$(date +%s)
bench_build . build-gpu "$(nproc)" ${nccl_root:+-DNCCL_ROOT=$nccl_root} >/tmp/build.log 2>&1
rc=$?
status=("build-gpu: rc=$rc in $(( $(date +%s) - t0 )) s; $(grep -o 'NCCL (data-parallel training on GPUs) .*' /tmp/build.log | tail -1)")
if [ $rc -ne 0 ]; then
  cp /tmp/build.log "$OUT/build.log"
  tail -30 /tmp/build.log
  printf '%s\n' "${status[@]}"
  exit 1
fi

if [ -n "$tests" ]; then
  (cd build-gpu && ctest --output-on-failure -L gpu -R "$tests" --timeout 600) >"$OUT/ctest-gpu.log" 2>&1
  rc=$?
  status+=("ctest -L gpu -R '$tests': rc=$rc ($(grep -E 'tests passed' "$OUT/ctest-gpu.log"))")
fi

[ ${#names[@]} -gt 0 ] && bench/run.sh --build build-gpu "${names[@]}"

if [ -f "$OUT/ctest-gpu.log" ] && grep -qE '\*\*\*(Failed|Timeout|Exception)' "$OUT/ctest-gpu.log"; then
  echo
  echo "==== failed gpu tests (the last lines of each)"
  # ctest --output-on-failure prints a failed test's output after its ***Failed line
  awk 'function flush() { if (head != "") { print head; for (i = n > 25 ? n - 25 : 0; i < n; i++) print b[i] } }
       /\*\*\*(Failed|Timeout|Exception)/ { flush(); head = $0; n = 0; on = 1; next }
       /^ +Start +[0-9]+:/ { flush(); head = ""; on = 0; next }
       on { b[n++] = $0 }
       END { flush() }' "$OUT/ctest-gpu.log" | tail -120
fi
echo
printf '%s\n' "${status[@]}"
