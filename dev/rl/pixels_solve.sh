#!/usr/bin/env bash
# Issue 26's CartPolePixels-v1 bar, "solved (mean of 100 >= 475) <= 5 s from launch": nature-cnn
# PPO shapes one after another on the whole GPU (no sharing: the seconds are each run's own),
# each stopped after SECONDS (default 12). Phase 1 runs every shape on seed 1; phase 2 the two
# fastest on seeds 2 and 3. The figure is the launch-to-solve time: the unix time cudarl prints
# at the solve minus the time just before the process started (load, planning and warm-up
# included).
#   dev/rl/pixels_solve.sh [SECONDS] [preset]   (repository root's build-gpu/, gpu-check.sh's build)
# With "preset": only `cudarl train --device cuda --env-id CartPolePixels-v1` with the recipe the
# env's kind picks (no shape flags), seeds 1, 2 and 3. With "keys K1,K2 [SEEDS]": those shapes on
# those seeds (default 1), e.g. the throughput shapes f* (a shared trunk, large minibatches, 1-2
# epochs: toward the 1M env steps/s bar).
cd "$(dirname "$0")/../.." || exit 1
C=$PWD/build-gpu/cudarl
secs=${1:-12}
R=/tmp/pixels_solve; rm -rf $R; mkdir -p $R
M="--device cuda --env-id CartPolePixels-v1 --policy nature-cnn --precision bf16 --no-clip-vloss --quiet --total-timesteps 20000000"
declare -A P=(
 [s64]="--separate-critic --num-envs 64 --num-steps 64 --num-minibatches 4 --learning-rate 2.5e-4"
 [s128]="--separate-critic --num-envs 128 --num-steps 32 --num-minibatches 4 --learning-rate 5e-4"
 [s256]="--separate-critic --num-envs 256 --num-steps 32 --num-minibatches 8 --learning-rate 5e-4"
 [h256]="--separate-critic false --num-envs 256 --num-steps 32 --num-minibatches 8 --learning-rate 5e-4"
 [h512]="--separate-critic false --num-envs 512 --num-steps 16 --num-minibatches 4 --learning-rate 1e-3"
 [h1k]="--separate-critic false --num-envs 1024 --num-steps 16 --num-minibatches 4 --learning-rate 1e-3"
 [f1k2]="--separate-critic false --num-envs 1024 --num-steps 16 --num-minibatches 2 --update-epochs 2 --learning-rate 1e-3"
 [f2k1]="--separate-critic false --num-envs 2048 --num-steps 16 --num-minibatches 2 --update-epochs 1 --learning-rate 1e-3"
 [f2k2]="--separate-critic false --num-envs 2048 --num-steps 16 --num-minibatches 2 --update-epochs 2 --learning-rate 1e-3"
 [f2k1m4]="--separate-critic false --num-envs 2048 --num-steps 16 --num-minibatches 4 --update-epochs 1 --learning-rate 1e-3"
 [f4k1]="--separate-critic false --num-envs 4096 --num-steps 16 --num-minibatches 4 --update-epochs 1 --learning-rate 2e-3"
 [f4k1s8]="--separate-critic false --num-envs 4096 --num-steps 8 --num-minibatches 2 --update-epochs 1 --learning-rate 1e-3"
 [f4k2]="--separate-critic false --num-envs 4096 --num-steps 16 --num-minibatches 4 --update-epochs 2 --learning-rate 1e-3"
 [s512]="--separate-critic --num-envs 512 --num-steps 32 --num-minibatches 8 --learning-rate 5e-4 --anneal-lr false"
 [s512m16]="--separate-critic --num-envs 512 --num-steps 32 --num-minibatches 16 --learning-rate 5e-4 --anneal-lr false"
 [s256m4]="--separate-critic --num-envs 256 --num-steps 32 --num-minibatches 4 --learning-rate 7e-4 --anneal-lr false"
 [s512e0]="--separate-critic --num-envs 512 --num-steps 32 --num-minibatches 16 --learning-rate 5e-4 --anneal-lr false --ent-coef 0"
 [s512lr7]="--separate-critic --num-envs 512 --num-steps 32 --num-minibatches 16 --learning-rate 7e-4 --anneal-lr false"
 [s512e3]="--separate-critic --num-envs 512 --num-steps 32 --num-minibatches 16 --learning-rate 5e-4 --anneal-lr false --update-epochs 3"
 [s512c2]="--separate-critic --num-envs 512 --num-steps 32 --num-minibatches 16 --learning-rate 5e-4 --anneal-lr false --clip-coef 0.2"
 [s768]="--separate-critic --num-envs 768 --num-steps 32 --num-minibatches 24 --learning-rate 5e-4 --anneal-lr false"
 [fs1k2]="--separate-critic --num-envs 1024 --num-steps 16 --num-minibatches 2 --update-epochs 2 --learning-rate 1e-3"
 [preset]=""
)
keys="s64 s128 s256 h256 h512 h1k"

# one run: prints "key seed seconds-to-solve|- steps/s last-mean"
run() {
  local k=$1 seed=$2 t0 log=$R/$1.$2.log flags
  flags="$M ${P[$k]}"
  [ "$k" = preset ] && flags="--device cuda --env-id CartPolePixels-v1 --quiet"
  t0=$(date +%s.%N)
  timeout -s INT "$secs" $C train $flags --seed "$seed" --runs-dir $R --run-name "$k.$seed" \
    > "$log" 2>&1
  python3 - "$log" "$t0" "$k" "$seed" "$R/$k.$seed/metrics.csv" <<'PY'
import csv, re, sys
log, t0, k, seed, path = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
text = open(log).read()
m = re.search(r"solved \(mean of 100 >= threshold\) at step (\d+), ([\d.]+) s into the loop "
              r"\(unix time ([\d.]+)\)", text)
try:
    rows = [r for r in csv.DictReader(open(path)) if r["charts/mean_return_100"]]
except OSError:
    rows = []
last = rows[-1] if rows else None
sps = last["charts/SPS"] if last else "-"
mean = f"{float(last['charts/mean_return_100']):.1f}" if last else "-"
if m:
    print(f"{k} seed {seed}: solved at step {m.group(1)}, {m.group(2)} s into the loop, "
          f"{float(m.group(3)) - t0:.2f} s from launch; {sps} steps/s")
else:
    print(f"{k} seed {seed}: not solved in the time given; last mean {mean}, {sps} steps/s")
PY
}

if [ "${2:-}" = keys ]; then
  echo "shapes $3, seeds ${4:-1}, at most $secs s each"
  for k in ${3//,/ }; do for s in ${4:-1}; do run "$k" "$s"; done; done
  exit 0
fi
if [ "${2:-}" = preset ]; then
  echo "the CUDA recipe (no shape flags), at most $secs s each"
  for s in 1 2 3; do run preset "$s"; done
  exit 0
fi
echo "phase 1: every shape, seed 1, at most $secs s each"
for k in $keys; do run "$k" 1; done | tee $R/phase1.txt
best=$(grep "from launch" $R/phase1.txt | sed -E 's/^([a-z0-9]+) .* ([0-9.]+) s from launch.*/\2 \1/' |
       sort -n | head -2 | awk '{print $2}')
echo
echo "phase 2: the fastest two ($(echo $best)), seeds 2 and 3"
for k in $best; do for s in 2 3; do run "$k" "$s"; done; done
