#!/usr/bin/env bash
# Issue 27's two latency bars for the camera tick, in one run on the GPU machine after a build
# (it builds nothing): `cudarl bench frames` for four 3840x2160 cameras into the Nature-CNN
# (4x84x84 gray stacks) on cuda:0, one run each of
#   nv12 from pinned host memory, fp32 and bf16    bar: timed p99 <= 1.3 x the copy floor
#   nv12 from device memory, fp32 and bf16         bar: timed p99 <= 0.3 ms
#   rgb8 from pinned host memory, fp32             (the same 1.3x, shown for the RGB8 input)
# each at RATE Hz for SECONDS s after 20 back-to-back warm-up ticks; then a table of p50, p99,
# max, the copy floor (the frames' bytes / the pinned host-to-device bandwidth measured in the
# same run) and each p99 against its bar. It is the `frames_bars` row of bench/README.md.
# Usage: bench/frames_check.sh [--ctest BUILD] CUDARL [RATE [SECONDS]]   (default 30 Hz, 5 s)
#   --ctest BUILD  first `ctest -L gpu -R 'frames|cameras'` in BUILD (gpu-check.sh's --tests does
#                  the same: leave it out there)
# Exit status: 0 when every run finished (met or not: the table says), 1 when one failed.
set -uo pipefail
build=""
if [ "${1:-}" = --ctest ]; then
  build=${2:?--ctest needs a build folder}
  shift 2
fi
cudarl=${1:?usage: bench/frames_check.sh [--ctest BUILD] CUDARL [RATE [SECONDS]]}
rate=${2:-30} secs=${3:-5}
[ -x "$cudarl" ] || { echo "frames_check.sh: $cudarl is not an executable cudarl" >&2; exit 2; }

status=0
if [ -n "$build" ]; then
  (cd "$build" && ctest --output-on-failure -L gpu -R 'frames|cameras' --timeout 600) || status=1
fi

# one run: FORMAT SOURCE PRECISION BAR(pinned|device); its output shown, a table row kept
rows=()
run() {
  local fmt=$1 src=$2 prec=$3 bar=$4 out rc p50 p99 max floor verdict ratio
  echo "==== cudarl bench frames: $fmt from $src memory, $prec"
  out=$("$cudarl" bench frames --device cuda --cameras 4 --width 3840 --height 2160 \
        --format "$fmt" --source "$src" --precision "$prec" --rate "$rate" --seconds "$secs" \
        --warmup 20 2>&1)
  rc=$?
  echo "$out"
  if [ $rc -ne 0 ]; then
    status=1
    rows+=("| $fmt | $src | $prec | failed (exit $rc) | | | | | |")
    return
  fi
  read -r p50 p99 max < <(sed -nE 's/^latency \(the [0-9]+ timed ticks\): p50 ([0-9.]+) ms, p99 ([0-9.]+) ms, max ([0-9.]+) ms.*/\1 \2 \3/p' <<<"$out")
  floor=$(sed -nE 's/.*copy floor ([0-9.]+) ms.*/\1/p' <<<"$out")
  if [ "$bar" = pinned ]; then
    ratio=$(awk -v a="$p99" -v b="$floor" 'BEGIN { printf "%.2fx", a / b }')
    verdict=$(awk -v a="$p99" -v b="$floor" 'BEGIN { print a <= 1.3 * b ? "met" : "NOT met" }')
    rows+=("| $fmt | $src | $prec | $p50 | $p99 | $max | $floor | p99 / floor $ratio (bar 1.3x) | $verdict |")
  else
    verdict=$(awk -v a="$p99" 'BEGIN { print a <= 0.3 ? "met" : "NOT met" }')
    rows+=("| $fmt | $src | $prec | $p50 | $p99 | $max | $floor | p99 $p99 ms (bar 0.3 ms) | $verdict |")
  fi
}

run nv12 pinned fp32 pinned
run nv12 pinned bf16 pinned
run nv12 device fp32 device
run nv12 device bf16 device
run rgb8 pinned fp32 pinned

echo
echo "frames_check: four 3840x2160 cameras -> 4x84x84 gray stacks -> Nature-CNN actions, $rate Hz for $secs s (timed ticks), ms"
echo
echo "| format | frames in | precision | p50 | p99 | max | copy floor | against the bar | bar |"
echo "|---|---|---|---:|---:|---:|---:|---|---|"
printf '%s\n' "${rows[@]}"
exit $status
