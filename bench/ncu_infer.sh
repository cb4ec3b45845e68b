#!/usr/bin/env bash
# Nsight Compute over `cudarl bench infer` (gemm engine, one timed call a row), two ways:
#   kernels CUDARL [BENCH_ARGS...]  GPU time per kernel and grid of the half-precision forward
#       (bf16 and fp16 at batch 128 and 1: the conv kernels, cuBLAS's 16-bit GEMMs, the FC and
#       heads; fp32's im2col path would use up the launch count), graph nodes at base clocks;
#       e.g. BENCH_ARGS "--batch 1" for batch 1's alone (loading at batch 128 runs each batch
#       size's forward once before capturing the graphs, ~900 launches)
#   stalls CUDARL  where the warps of the fp16 batch-128 convs stall, per SASS instruction:
#       ncu --set full over one launch each of the first conv's kernel (hconv_s2d_kernel, its
#       8th launch) and the unsplit convs' (hconv_halo_kernel, its 5th: batch 128's conv2;
#       loading runs each batch size's forward once, eagerly, 1 to 128, before the graphs),
#       summed by opcode and stall by scripts/sass_stalls.py; conv2's source CSV goes to
#       $OUT/infer_ncu_source.csv
# Reports and CSVs go to $RUNS (default /tmp/bench-ncu).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
[ $# -ge 2 ] || { echo "usage: bench/ncu_infer.sh kernels|stalls CUDARL [BENCH_ARGS...]" >&2; exit 2; }
mode=$1 cudarl=$2
shift 2
runs=${RUNS:-/tmp/bench-ncu}
mkdir -p "$runs"
bench=("$cudarl" bench infer --device cuda --engine gemm --iters 1 --warmup 0 "$@")

case "$mode" in
kernels)
  ncu --metrics gpu__time_duration.sum --graph-profiling node --csv -c 600 \
    --kernel-name "regex:hconv|linear_epilogue|heads_kernel|fc_stream|input_kernel|nvjet|f16|bf16|splitK" \
    "${bench[@]}" >"$runs/ncu_infer.csv" 2>"$runs/ncu_infer.err" ||
    { tail -20 "$runs/ncu_infer.err"; exit 1; }
  python3 scripts/ncu_kernels.py "$runs/ncu_infer.csv" --by-grid --top 40
  ;;
stalls)
  status=0
  for k in "hconv_s2d_kernel:7" "hconv_halo_kernel:4"; do
    name=${k%%:*} skip=${k##*:}
    ncu --set full --import-source no --kernel-name-base demangled -k "regex:$name<__half" \
      --launch-skip "$skip" --launch-count 1 -o "$runs/$name" -f \
      "${bench[@]}" >"$runs/$name.log" 2>&1 || { tail -20 "$runs/$name.log"; status=1; continue; }
    # the kernel's duration, grid and occupancy: which launch it was
    ncu -i "$runs/$name.ncu-rep" --page details 2>/dev/null |
      grep -E "^  [a-z_]+<|Duration|Grid Size|Registers Per|Achieved Occupancy|Compute \(SM\) Th|Memory Throughput|L2 Hit"
    csv=$runs/$name.source.csv
    ncu -i "$runs/$name.ncu-rep" --page source --print-source sass --csv >"$csv" 2>>"$runs/$name.log" ||
      { tail -5 "$runs/$name.log"; status=1; continue; }
    echo "== $name"
    python3 scripts/sass_stalls.py "$csv"
    [ "$name" = hconv_halo_kernel ] && [ -n "${OUT:-}" ] && cp "$csv" "$OUT/infer_ncu_source.csv"
  done
  exit $status
  ;;
*) echo "ncu_infer.sh: unknown mode '$mode'; kernels or stalls" >&2; exit 2 ;;
esac
