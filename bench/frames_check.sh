#!/usr/bin/env bash
# Issue 27's two latency bars for the camera tick, in one run on the GPU machine after a build
# (it builds nothing): `cudarl bench frames` for four 3840x2160 cameras into the Nature-CNN
# (4x84x84 gray stacks) on cuda:0, one run each of
#   nv12 from pinned host memory, fp32 and bf16    bar: timed p99 <= 1.3 x the copy floor
#   nv12 from device memory, fp32 and bf16         bar: timed p99 <= 0.3 ms
#   rgb8 from pinned host memory, fp32             (the same 1.3x, shown for the RGB8 input)
#   nv12 from pinned host memory, fp32, --pipeline (no bar: submit / wait one tick ahead, back to
#     back for 10 s; its row beside the one-by-one row: the period the ticks reach against a
#     tick's copy time (the upload floor), compute time (a tick of device frames) and both)
# each after 20 back-to-back warm-up ticks, the pinned NV12 rows at 120 Hz for 10 s (1,200 timed
# ticks: a p99 of 12 ticks above it, not of the two largest of 150), the others at 30 Hz for 5 s
# (about 45 s in all); then a table of p50, p99, max, the copy floor (the frames' bytes / the
# pinned host-to-device bandwidth measured in the same run) and each p99 against its bar, and for
# NV12 into gray, whose tick uploads the Y planes alone (2/3 of the frames' bytes), p99 against
# the floor of those bytes too. It is the `frames_bars` row of bench/README.md.
# Usage: bench/frames_check.sh [--ctest BUILD] CUDARL [RATE [SECONDS]]
#   RATE SECONDS: every row at that rate for that long instead
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
rate=${2:-} secs=${3:-}
[ -x "$cudarl" ] || { echo "frames_check.sh: $cudarl is not an executable cudarl" >&2; exit 2; }

status=0
if [ -n "$build" ]; then
  (cd "$build" && ctest --output-on-failure -L gpu -R 'frames|cameras' --timeout 600) || status=1
fi

# one run: FORMAT SOURCE PRECISION BAR(pinned|device) RATE SECONDS; its output shown, a table
# row kept
rows=()
# one cudarl bench frames run: FORMAT SOURCE PRECISION RATE SECONDS [FLAG...]; prints its output
# and sets out, rc, p50, p99, max (the timed ticks), floor (the frames' copy floor) and uratio
# (p99 against the floor of the bytes uploaded, where the run prints it)
measure() {
  local fmt=$1 src=$2 prec=$3 hz=$4 s=$5 ufloor
  shift 5
  out=$("$cudarl" bench frames --device cuda --cameras 4 --width 3840 --height 2160 \
        --format "$fmt" --source "$src" --precision "$prec" --rate "$hz" --seconds "$s" \
        --warmup 20 "$@" 2>&1)
  rc=$?
  echo "$out"
  [ $rc -ne 0 ] && return
  read -r p50 p99 max < <(sed -nE 's/^latency \(the [0-9]+ timed ticks\): p50 ([0-9.]+) ms, p99 ([0-9.]+) ms, max ([0-9.]+) ms.*/\1 \2 \3/p' <<<"$out")
  floor=$(sed -nE 's/.*; copy floor ([0-9.]+) ms.*/\1/p' <<<"$out")
  ufloor=$(sed -nE 's/^uploaded per tick: .*their copy floor ([0-9.]+) ms.*/\1/p' <<<"$out")
  uratio=""
  [ -n "$ufloor" ] && uratio=$(awk -v a="$p99" -v b="$ufloor" 'BEGIN { printf "%.2fx of %.3f", a / b, b }')
}

# one row against its bar: FORMAT SOURCE PRECISION BAR(pinned|device) RATE SECONDS
run() {
  local fmt=$1 src=$2 prec=$3 bar=$4 hz=${rate:-$5} s=${secs:-$6} verdict ratio
  echo "==== cudarl bench frames: $fmt from $src memory, $prec, $hz Hz for $s s"
  measure "$fmt" "$src" "$prec" "$hz" "$s"
  if [ $rc -ne 0 ]; then
    status=1
    rows+=("| $fmt | $src | $prec | $hz Hz x $s s | failed (exit $rc) | | | | | | |")
    return
  fi
  if [ "$bar" = pinned ]; then
    ratio=$(awk -v a="$p99" -v b="$floor" 'BEGIN { printf "%.2fx", a / b }')
    verdict=$(awk -v a="$p99" -v b="$floor" 'BEGIN { print a <= 1.3 * b ? "met" : "NOT met" }')
    rows+=("| $fmt | $src | $prec | $hz Hz x $s s | $p50 | $p99 | $max | $floor | p99 / floor $ratio (bar 1.3x) | $verdict | $uratio |")
  else
    verdict=$(awk -v a="$p99" 'BEGIN { print a <= 0.3 ? "met" : "NOT met" }')
    rows+=("| $fmt | $src | $prec | $hz Hz x $s s | $p50 | $p99 | $max | $floor | p99 $p99 ms (bar 0.3 ms) | $verdict | |")
  fi
}

# the pipelined run: FORMAT SOURCE PRECISION SECONDS, back to back
run_pipe() {
  local fmt=$1 src=$2 prec=$3 s=${secs:-$4} period line
  echo "==== cudarl bench frames --pipeline: $fmt from $src memory, $prec, back to back for $s s"
  measure "$fmt" "$src" "$prec" 0 "$s" --pipeline
  if [ $rc -ne 0 ]; then
    status=1
    rows+=("| $fmt | $src | $prec | pipelined x $s s | failed (exit $rc) | | | | | | |")
    return
  fi
  period=$(sed -nE 's/^pipelined .*: period ([0-9.]+) ms a tick.*/\1/p' <<<"$out")
  line=$(sed -nE 's/^a tick one by one: ([0-9.]+) ms; copy ([0-9.]+) ms .*compute ([0-9.]+) ms .*sum ([0-9.]+) ms, max ([0-9.]+) ms.*/one by one \1, copy \2, compute \3: sum \4, max \5/p' <<<"$out")
  rows+=("| $fmt | $src | $prec | pipelined, back to back x $s s | $p50 | $p99 | $max | $floor | period $period ms ($line) | - | $uratio |")
}

run nv12 pinned fp32 pinned 120 10
run_pipe nv12 pinned fp32 10
run nv12 pinned bf16 pinned 120 10
run nv12 device fp32 device 30 5
run nv12 device bf16 device 30 5
run rgb8 pinned fp32 pinned 30 5

echo
echo "frames_check: four 3840x2160 cameras -> 4x84x84 gray stacks -> Nature-CNN actions (timed ticks), ms"
echo
echo "| format | frames in | precision | run | p50 | p99 | max | copy floor | against the bar | bar | p99 / floor of the bytes uploaded |"
echo "|---|---|---|---|---:|---:|---:|---:|---|---|---|"
printf '%s\n' "${rows[@]}"
exit $status
