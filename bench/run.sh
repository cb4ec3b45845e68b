#!/usr/bin/env bash
# Runs benchmarks by name from the table in bench/README.md, the only list of them: each row's
# command, then its peer, into $OUT/NAME.txt and the screen; a summary last (status, seconds,
# the figures read from the command's output). On the GPU machine, after a build (gpu-check.sh).
#
# Usage: bench/run.sh [--build DIR] [--dry-run] NAME...        (DIR default build-gpu)
#        bench/run.sh --baseline DIR [--repeats N] [--deadline S] [--dry-run] NAME...
#        bench/run.sh --list | --check
#   --baseline DIR  builds the tree at DIR (before) and this one (after), then runs each NAME's
#                   command (not its peer) on both, the order alternating, N rounds (default
#                   5); prints medians and after / before per figure. Starts no round that
#                   would end past S seconds from the start (default 540: the device's
#                   10-minute limit less a margin).
#   --list          the names and what each prints; --check: the table parses, every command
#                   is valid shell, and every script it names exists (a ctest runs this)
# Cells see B (the build folder, absolute), OUT (where files come back) and RUNS (an empty
# scratch folder for the run). The device returns at most 8 files: when $OUT holds more, the
# ones past the seventh go into $OUT/more.tgz.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
OUT=${OUT:-/tmp/out}
TABLE=$ROOT/bench/README.md

build=build-gpu baseline="" repeats=5 deadline=540 dry=0 action=run names=()
while [ $# -gt 0 ]; do
  case "$1" in
  --build) build=$2; shift ;;
  --baseline) baseline=$2; shift ;;
  --repeats) repeats=$2; shift ;;
  --deadline) deadline=$2; shift ;;
  --dry-run) dry=1 ;;
  --list) action=list ;;
  --check) action=check ;;
  -h|--help) sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  -*) echo "run.sh: unknown option $1 (bench/run.sh --help)" >&2; exit 2 ;;
  *) names+=("$1") ;;
  esac
  shift
done

# ---- the table --------------------------------------------------------------------------------

# The rows of the table whose header starts "| name | command |", a line each, the cells
# separated by tabs ("\|" in a cell is "|", as GitHub renders it).
table_rows() {
  awk '/^\| *name *\| *command *\|/ { on = 1; next }
    on && /^\|[-:| ]+\|$/ { next }
    on && !/^\|/ { exit }
    on { line = $0; gsub(/\\[|]/, "\001", line); n = split(line, c, "|"); out = ""
         for (i = 2; i < n; i++) { x = c[i]; gsub(/\001/, "|", x); sub(/^ +/, "", x)
                                   sub(/ +$/, "", x); out = out (i > 2 ? "\t" : "") x }
         print out }' "$TABLE"
}

# A cell that is one code span holds a command: prints it; else prints nothing.
code_of() { [[ $1 =~ ^\`([^\`]+)\`$ ]] && printf '%s' "${BASH_REMATCH[1]}"; }

declare -A CMD PEER PRINTS
ORDER=()
while IFS=$'\t' read -r name cmd peer prints; do
  name=${name//\`/}
  ORDER+=("$name")
  CMD[$name]=$(code_of "$cmd") PEER[$name]=$(code_of "$peer") PRINTS[$name]=$prints
done < <(table_rows)

check_table() {
  local bad=0 name f seen=" "
  [ ${#ORDER[@]} -gt 0 ] || { echo "run.sh: no table in $TABLE" >&2; return 1; }
  for name in "${ORDER[@]}"; do
    [[ $name =~ ^[a-z][a-z0-9_]*$ ]] || { echo "run.sh: row '$name': not a name" >&2; bad=1; }
    [[ $seen == *" $name "* ]] && { echo "run.sh: row '$name': twice" >&2; bad=1; }
    seen+="$name "
    [ -n "${CMD[$name]}" ] || { echo "run.sh: row '$name': the command is not one code span" >&2; bad=1; }
    [ -n "${PRINTS[$name]}" ] || { echo "run.sh: row '$name': says nothing of what it prints" >&2; bad=1; }
    for f in "${CMD[$name]}" "${PEER[$name]}"; do
      [ -n "$f" ] || continue
      bash -n -c "$f" 2>/dev/null || { echo "run.sh: row '$name': not valid shell: $f" >&2; bad=1; }
    done
    while read -r f; do
      [ -f "$f" ] || { echo "run.sh: row '$name': $f does not exist" >&2; bad=1; }
    done < <(grep -oE '(bench|scripts)/[A-Za-z0-9_./-]+\.(sh|py)' <<<"${CMD[$name]} ${PEER[$name]}")
  done
  return $bad
}

if [ "$action" = check ]; then
  check_table && echo "run.sh: ${#ORDER[@]} benchmarks in $TABLE, all well formed"
  exit
fi
if [ "$action" = list ]; then
  for name in "${ORDER[@]}"; do printf '%-18s %s\n' "$name" "${PRINTS[$name]}"; done
  exit 0
fi
[ ${#names[@]} -gt 0 ] || { echo "run.sh: which benchmarks? (bench/run.sh --list)" >&2; exit 2; }
for name in "${names[@]}"; do
  [ -n "${CMD[$name]+x}" ] || { echo "run.sh: no benchmark '$name' in $TABLE (bench/run.sh --list)" >&2; exit 2; }
done

# ---- figures read from a command's output ---------------------------------------------------

# "label<TAB>value<TAB>higher|lower|same" for each figure found in the output on stdin:
# cudarl train's summary (steps/s, the solve), bench/train.sh's time from launch, bench_replay's
# uniform buffer in a graph, cudarl bench infer's fp16 rows, cudarl bench frames's timed p99 and
# --find-max's camera count.
figures() {
  awk -F'|' '
    /^cudarl: step [0-9]+: [0-9]+ steps in .* steps\/s\)/ {
      s = $0; sub(/ steps\/s\).*/, "", s); sub(/.*\(/, "", s); print "steps/s\t" s "\thigher" }
    /^cudarl cuda throughput: [0-9]+ steps\/s/ {
      s = $0; sub(/^cudarl cuda throughput: /, "", s); print "steps/s (65,536 x 16)\t" s + 0 "\thigher" }
    /^cudarl: solved .* at step [0-9]+, [0-9.]+ s into the loop/ {
      s = $0; sub(/.* at step /, "", s); st = s; sub(/,.*/, "", st); sub(/ s into the loop.*/, "", s)
      sub(/.*, /, "", s); print "solved at step\t" st "\tsame"; print "solve s in the loop\t" s "\tlower" }
    /^train.sh: solved [0-9.]+ s after launch/ {
      s = $0; sub(/^train.sh: solved /, "", s); print "solve s from launch\t" s + 0 "\tlower" }
    /^\| uniform \| graph \|/ && NF == 14 {
      print "insert 1,024 us (graph)\t" $6 + 0 "\tlower"
      print "sample 32 us (window, graph)\t" $9 + 0 "\tlower"
      print "sample 1,024 us (window, graph)\t" $10 + 0 "\tlower" }
    /^latency \(the [0-9]+ timed ticks\): p50 [0-9.]+ ms, p99 [0-9.]+ ms/ {
      s = $0; sub(/.* p99 /, "", s); print "frames tick p99 ms\t" s + 0 "\tlower" }
    /^the most .* cameras sustained at .*: [0-9]+/ {
      s = $0; sub(/.*ms: /, "", s); print "cameras sustained\t" s + 0 "\thigher" }
    /^\| cudarl \([a-z]+\) \| fp16 \| / && NF == 12 {
      b = $4 + 0
      print "fp16 b" b " GPU p50 ms\t" $5 + 0 "\tlower"
      if (b == 1) print "fp16 b1 end to end p50 ms\t" $7 + 0 "\tlower" }'
}

# ---- running one command ----------------------------------------------------------------------

# run_cell CMD BUILD RUNS CELL_OUT LOG: the command in a shell of its own at the repository
# root, with B, RUNS (emptied first) and OUT; its output appended to LOG and shown; its status.
run_cell() {
  rm -rf "$3" && mkdir -p "$3" "$4"
  B=$2 RUNS=$3 OUT=$4 bash -c "$1" 2>&1 | tee -a "$5"
  return "${PIPESTATUS[0]}"
}

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

device_line() {
  local gpu="no nvidia-smi"
  command -v nvidia-smi >/dev/null &&
    gpu=$(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>&1 | head -1)
  echo "device: $gpu; $(nproc) cores"
}

# At most 8 files come back from the device: logs first, in the order written; the rest of
# what is past the seventh goes into more.tgz.
pack_out() {
  local files=() extra
  mapfile -t files < <(cd "$OUT" && find . -maxdepth 1 -type f -printf '%T@ %f\n' | sort -n |
                       awk '{ f = $2 } f ~ /\.(txt|log)$/ { print f; next } { rest[n++] = f }
                            END { for (i = 0; i < n; i++) print rest[i] }')
  [ ${#files[@]} -le 8 ] && return 0
  extra=("${files[@]:7}")
  tar -czf "$OUT/more.tgz" -C "$OUT" "${extra[@]}" && (cd "$OUT" && rm -f -- "${extra[@]}") &&
    echo "run.sh: more than 8 files for \$OUT: more.tgz holds ${extra[*]}"
}

# ---- the benchmarks, once ----------------------------------------------------------------------

run_named() {
  local name t0 rc prc figs summary=()
  B=$(cd "$build" 2>/dev/null && pwd) || { echo "run.sh: no build folder '$build'" >&2; exit 1; }
  if [ "$dry" = 1 ]; then
    echo "B=$B OUT=$OUT RUNS=/tmp/bench-runs/NAME"
    for name in "${names[@]}"; do
      echo "$name: ${CMD[$name]}"
      [ -n "${PEER[$name]}" ] && echo "$name peer: ${PEER[$name]}"
    done
    return 0
  fi
  mkdir -p "$OUT"
  for name in "${names[@]}"; do
    local log=$OUT/$name.txt
    : >"$log"
    echo "==== $name: ${CMD[$name]}" | tee -a "$log"
    t0=$(now)
    run_cell "${CMD[$name]}" "$B" "/tmp/bench-runs/$name" "$OUT" "$log"
    rc=$? prc=-
    figs=$(figures <"$log" | awk -F'\t' '{ v[$1] = v[$1] " " $2; if (!($1 in o)) o[$1] = n++ }
      END { for (k in o) l[o[k]] = k; for (i = 0; i < n; i++) printf "%s%s:%s", i ? "; " : "", l[i], v[l[i]] }')
    [ -n "$figs" ] || figs=$(grep -v '^ *$' "$log" | tail -1 | sed 's/^ *//' | cut -c1-100)
    if [ -n "${PEER[$name]}" ]; then
      echo "==== $name peer: ${PEER[$name]}" | tee -a "$log"
      run_cell "${PEER[$name]}" "$B" "/tmp/bench-runs/$name.peer" "$OUT" "$log"
      prc=$?
    fi
    summary+=("$(printf '%-18s %4s %4s %7s  %s' "$name" "$rc" "$prc" "$(secs "$t0" "$(now)")" "$figs")")
  done
  pack_out
  echo
  echo "==== bench/run.sh summary"
  printf '%-18s %4s %4s %7s  %s\n' name rc peer seconds "figures (or the command's last line)"
  printf '%s\n' "${summary[@]}"
  device_line
}

# ---- before and after ---------------------------------------------------------------------

# Medians per (name, label, side) of the per-run medians in the file of
# "name<TAB>label<TAB>side<TAB>round<TAB>value<TAB>direction" rows, as a markdown table.
ab_table() {
  awk -F'\t' '
    function med(a, n,   i, j, t) {
      for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    function fmt(v) {
      if (v >= 1e6) return sprintf("%.2fM", v / 1e6)
      if (v >= 1000) return sprintf("%.0f", v)
      return sprintf("%.4g", v)
    }
    { k = $1 "\t" $2; if (!(k in dir)) { dir[k] = $6; order[nk++] = k }
      r = k "\t" $3 "\t" $4; if (!(r in nv)) { runs[k "\t" $3, ++nr[k "\t" $3]] = r }
      val[r, ++nv[r]] = $5 }
    END {
      print "| benchmark | figure | before | after | after / before | runs | verdict |"
      print "|---|---|---:|---:|---:|---:|---|"
      for (i = 0; i < nk; i++) {
        k = order[i]
        for (s = 0; s < 2; s++) {
          side = s ? "after" : "before"; m[s] = ""; n = nr[k "\t" side]
          for (j = 1; j <= n; j++) {
            r = runs[k "\t" side, j]; delete a
            for (q = 1; q <= nv[r]; q++) a[q] = val[r, q]
            per[j] = med(a, nv[r])
          }
          if (n) { delete a; for (j = 1; j <= n; j++) a[j] = per[j]; m[s] = med(a, n) }
          cnt[s] = n
        }
        split(k, kk, "\t")
        if (m[0] == "" || m[1] == "") {
          printf "| %s | %s | %s | %s | - | %d / %d | %s |\n", kk[1], kk[2],
            m[0] == "" ? "-" : fmt(m[0]), m[1] == "" ? "-" : fmt(m[1]), cnt[0], cnt[1],
            dir[k] == "fail" ? "FAILED" : "missing"
          continue
        }
        ratio = m[0] ? m[1] / m[0] : 0
        if (dir[k] == "higher") v = ratio >= 0.97 ? "ok" : "SLOWER"
        else if (dir[k] == "lower") v = ratio <= 1.03 ? "ok" : "SLOWER"
        else if (dir[k] == "fail") v = "FAILED"
        else v = m[0] == m[1] ? "same" : "DIFFERS"
        printf "| %s | %s | %s | %s | %.3f | %d / %d | %s |\n", kk[1], kk[2], fmt(m[0]), fmt(m[1]),
          ratio, cnt[0], cnt[1], v
      }
    }' "$1"
}

run_baseline() {
  local start base w=/tmp/bench-ab jobs name side r rc t0 round_s=0 rounds=0 first
  start=$(now)
  base=$(cd "$baseline" 2>/dev/null && pwd) || { echo "run.sh: no baseline folder '$baseline'" >&2; exit 1; }
  [ -f "$base/CMakeLists.txt" ] || { echo "run.sh: $base holds no CMakeLists.txt" >&2; exit 1; }
  jobs=$(( $(nproc) / 2 > 0 ? $(nproc) / 2 : 1 ))
  if [ "$dry" = 1 ]; then
    echo "build: $base -> $w/before and $ROOT -> $w/after, side by side, -j$jobs each"
    for ((r = 1; r <= repeats; r++)); do
      [ $((r % 2)) = 1 ] && first="before after" || first="after before"
      for name in "${names[@]}"; do echo "round $r: $name on $first: ${CMD[$name]}"; done
    done
    return 0
  fi
  mkdir -p "$OUT" "$w"
  bench_deps || exit 1
  echo "run.sh: building $base (before) and $ROOT (after), -j$jobs each"
  bench_build "$base" "$w/before" "$jobs" -DBUILD_TESTING=OFF >"$w/build-before.log" 2>&1 &
  local pb=$!
  bench_build "$ROOT" "$w/after" "$jobs" -DBUILD_TESTING=OFF >"$w/build-after.log" 2>&1 &
  local pa=$!
  wait $pb; local rb=$?
  wait $pa; local ra=$?
  echo "run.sh: builds done in $(secs "$start" "$(now)") s (before rc=$rb, after rc=$ra)"
  for side in before after; do
    [ "$side" = before ] && rc=$rb || rc=$ra
    [ "$rc" = 0 ] && continue
    cp "$w/build-$side.log" "$OUT/"
    tail -30 "$w/build-$side.log"
    echo "run.sh: the $side build failed (\$OUT/build-$side.log)"
    exit 1
  done
  local figs=$w/figures.tsv log=$OUT/ab.txt
  : >"$figs"
  : >"$log"
  for ((r = 1; r <= repeats; r++)); do
    if [ $rounds -gt 0 ] &&
       awk -v a="$start" -v b="$(now)" -v s="$round_s" -v d="$deadline" 'BEGIN { exit !(b - a + s > d) }'; then
      echo "run.sh: round $r would end past ${deadline} s: stopping after $rounds rounds" | tee -a "$log"
      break
    fi
    t0=$(now)
    [ $((r % 2)) = 1 ] && first="before after" || first="after before"
    for name in "${names[@]}"; do
      for side in $first; do
        local one=$w/out/$side.$name.$r.txt
        mkdir -p "$w/out"
        run_cell "${CMD[$name]}" "$w/$side" "$w/runs/$side/$name" "$w/files/$side" "$one" \
          >/dev/null
        rc=$?
        { echo "==== round $r, $side, $name (status $rc)"; cat "$one"; } >>"$log"
        { figures <"$one"; [ "$rc" = 0 ] || printf 'exit status\t%s\tfail\n' "$rc"; } |
          awk -F'\t' -v n="$name" -v s="$side" -v r="$r" \
          '{ print n "\t" $1 "\t" s "\t" r "\t" $2 "\t" $3 }' >>"$figs"
        echo "round $r: $name $side: status $rc, $(figures <"$one" | cut -f1,2 | tr '\t\n' '= ' )"
      done
    done
    rounds=$r
    round_s=$(secs "$t0" "$(now)")
    # after every round, so that a run stopped by the device's limit still leaves a table
    {
      echo "Before: $base; after: $ROOT; each built from source on this machine; $rounds"
      echo "rounds, the side that runs first alternating; per figure the median over rounds of"
      echo "each run's median. Verdict: ok where after is within 3% of before, or better."
      echo
      ab_table "$figs"
      echo
      device_line
      echo "wall: $(secs "$start" "$(now)") s"
    } >"$OUT/ab.md"
  done
  echo
  cat "$OUT/ab.md"
}

# shellcheck source=bench/build.sh
. "$ROOT/bench/build.sh"
if [ -n "$baseline" ]; then
  run_baseline
else
  [ "$dry" = 1 ] || bench_deps || exit 1
  run_named
fi
