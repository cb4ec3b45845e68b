#!/usr/bin/env bash
# cudarl train once per variant (the COMMON flags plus the variant's), one after another or side
# by side, and for each run: its output, the seconds from launch to its "solved" line, and with
# --reach R the first metrics row whose mean of the last 100 episodes reached R.
# Usage: bench/train.sh [--parallel] [--timeout S] [--reach R] [--stop-at R] [--eval N]
#                       [--need-gpus N] CUDARL 'COMMON' 'VARIANT'...
#   --parallel    all runs at once, run k on GPU k mod (the GPUs present)
#   --timeout S   stop a run after S seconds (SIGINT: cudarl writes its checkpoint)
#   --reach R     report the first row where the mean of 100 reached R, and the last row
#   --stop-at R   as --reach, and stop the run (SIGINT) once it got there
#   --eval N      then the run's final policy, greedy, on the GPU for N episodes
#   --need-gpus N print a line and do nothing where fewer GPUs are present
# Runs go to $RUNS (default /tmp/bench-train), one folder per variant, emptied first.
set -uo pipefail
parallel=0 timeout_s="" reach="" stop_at="" eval_n="" need_gpus=0
while [ $# -gt 0 ]; do
  case "$1" in
  --parallel) parallel=1 ;;
  --timeout) timeout_s=$2; shift ;;
  --reach) reach=$2; shift ;;
  --stop-at) stop_at=$2 reach=$2; shift ;;
  --eval) eval_n=$2; shift ;;
  --need-gpus) need_gpus=$2; shift ;;
  -*) echo "train.sh: unknown option $1" >&2; exit 2 ;;
  *) break ;;
  esac
  shift
done
[ $# -ge 3 ] || { echo "usage: bench/train.sh [options] CUDARL 'COMMON' 'VARIANT'..." >&2; exit 2; }
cudarl=$1 common=$2
shift 2
runs=${RUNS:-/tmp/bench-train}
mkdir -p "$runs"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "$gpus" -lt "$need_gpus" ]; then
  echo "train.sh: skipped: needs $need_gpus GPUs, $gpus present"
  exit 0
fi
[ "$gpus" -ge 1 ] || gpus=1

# The first metrics row whose charts/mean_return_100 >= $2, by the CSV's header:
# "step S, T s into the loop"; nothing if none.
first_reach() {
  awk -F, -v r="$2" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $c["charts/mean_return_100"] ~ /^[0-9]/ && $c["charts/mean_return_100"] + 0 >= r { printf "step %d, %.1f s into the loop", $1,
                                         $c["time/elapsed_s"]; exit }' "$1" 2>/dev/null
}
# The last metrics row: step, mean of 100, steps/s, seconds, and fp16's loss scale and skips.
last_row() {
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } { l = $0 }
    END { if (NR < 2) exit; split(l, f, ",")
          printf "step %d, mean(100) %.2f, %.0f steps/s, %.1f s", f[1],
                 f[c["charts/mean_return_100"]], f[c["charts/SPS"]], f[c["time/elapsed_s"]]
          if (c["amp/loss_scale"] && f[c["amp/loss_scale"]] != "")
            printf ", loss scale %s, %s skipped", f[c["amp/loss_scale"]], f[c["amp/skipped_steps"]] }' \
    "$1" 2>/dev/null
}

names=() pids=() t0s=() stopped=() rcs=()
launch() { # k variant
  local k=$1 v=$2 name cmd=()
  name=$(printf '%s' "${v:-run}" | tr -cs 'A-Za-z0-9.' '-' | sed 's/^-*//; s/-*$//')
  rm -rf "${runs:?}/$name"
  [ -n "$timeout_s" ] && cmd=(timeout -s INT -k 30 "$timeout_s")
  names[k]=$name stopped[k]=0 t0s[k]=$(date +%s.%N)
  # shellcheck disable=SC2086 # the flags are words
  if [ "$parallel" = 1 ]; then
    CUDA_VISIBLE_DEVICES=$((k % gpus)) "${cmd[@]}" "$cudarl" train $common $v --runs-dir "$runs" \
      --run-name "$name" >"$runs/$name.log" 2>&1 &
  else
    "${cmd[@]}" "$cudarl" train $common $v --runs-dir "$runs" --run-name "$name" \
      >"$runs/$name.log" 2>&1 &
  fi
  pids[k]=$!
}
# Waits for the runs given, stopping each (once) that reached --stop-at.
wait_runs() {
  local k alive
  while [ -n "$stop_at" ]; do
    alive=0
    for k in "$@"; do
      kill -0 "${pids[k]}" 2>/dev/null || continue
      alive=1
      if [ "${stopped[k]}" = 0 ] &&
         [ -n "$(first_reach "$runs/${names[k]}/metrics.csv" "$stop_at")" ]; then
        kill -INT "${pids[k]}" && stopped[k]=1
      fi
    done
    [ $alive = 1 ] || break
    sleep 1
  done
  for k in "$@"; do wait "${pids[k]}"; rcs[k]=$?; done
}
report() { # k variant
  local k=$1 v=$2 log csv unix r
  log=$runs/${names[k]}.log csv=$runs/${names[k]}/metrics.csv
  echo "== ${v:-run}"
  cat "$log"
  case "${rcs[k]}/${stopped[k]}" in
  0/*) ;;
  130/1) echo "train.sh: stopped once the mean of 100 reached $stop_at" ;;
  124/*) echo "train.sh: stopped at the --timeout ($timeout_s s)" ;;
  *) echo "train.sh: exit status ${rcs[k]}"; status=1 ;;
  esac
  unix=$(sed -n 's/.*solved .*(unix time \([0-9.]*\)).*/\1/p' "$log" | head -1)
  [ -n "$unix" ] && awk -v a="${t0s[k]}" -v b="$unix" \
    'BEGIN { printf "train.sh: solved %.3f s after launch\n", b - a }'
  if [ -n "$reach" ]; then
    r=$(first_reach "$csv" "$reach")
    echo "train.sh: mean(100) >= $reach: ${r:-never}; last: $(last_row "$csv")"
  fi
  if [ -n "$eval_n" ]; then
    echo "train.sh: greedy: $(CUDA_VISIBLE_DEVICES=$((k % gpus)) "$cudarl" eval \
      "$runs/${names[k]}/model.safetensors" --device cuda --episodes "$eval_n" 2>&1 | tail -1)"
  fi
}

echo "train.sh: $cudarl train $common, plus each of:$(printf " '%s'" "$@")"
status=0 k=0
for v in "$@"; do
  launch $k "$v"
  if [ "$parallel" = 0 ]; then wait_runs $k; report $k "$v"; fi
  k=$((k + 1))
done
if [ "$parallel" = 1 ]; then
  wait_runs $(seq 0 $((k - 1)))
  k=0
  for v in "$@"; do report $k "$v"; k=$((k + 1)); done
fi
exit $status
