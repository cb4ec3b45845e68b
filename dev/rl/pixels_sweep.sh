#!/usr/bin/env bash
# Issue 26's CartPolePixels-v1 recipe at scale: nature-cnn PPO shapes side by side on one GPU,
# each stopped after SECONDS (default 150) of wall time. What counts is the
# step where 475 was reached (the runs share the GPU, so their seconds are not a run's alone).
#   dev/rl/pixels_sweep.sh [SECONDS]   (repository root's build-gpu/, scripts/gpu-check.sh's build)
cd "$(dirname "$0")/../.." || exit 1
C=$PWD/build-gpu/cudarl
secs=${1:-150}
R=/tmp/pixels_sweep; rm -rf $R; mkdir -p $R
M="--device cuda --env-id CartPolePixels-v1 --policy nature-cnn --precision bf16 --no-clip-vloss --quiet --total-timesteps 20000000"
declare -A P=(
 [s32]="--separate-critic --num-envs 32 --num-minibatches 16"
 [s256]="--separate-critic --num-envs 256 --num-steps 32 --num-minibatches 8 --learning-rate 5e-4"
 [s1k]="--separate-critic --num-envs 1024 --num-steps 16 --num-minibatches 4 --learning-rate 1e-3"
 [h1k]="--num-envs 1024 --num-steps 16 --num-minibatches 4 --learning-rate 1e-3"
 [s1k2]="--separate-critic --num-envs 1024 --num-steps 16 --num-minibatches 4 --update-epochs 2 --learning-rate 1e-3"
 [s4k]="--separate-critic --num-envs 4096 --num-steps 16 --num-minibatches 4 --learning-rate 2e-3"
)
keys="s32 s256 s1k h1k s1k2 s4k"
for k in $keys; do
  ( timeout -s INT "$secs" $C train $M ${P[$k]} --runs-dir $R --run-name $k > $R/$k.log 2>&1 ) &
done
wait
for k in $keys; do
  echo "==== $k: ${P[$k]}"
  grep -iE "error|refused" $R/$k.log | head -3
  python3 - "$R/$k/metrics.csv" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["charts/mean_return_100"]]
if not rows:
    sys.exit("   no finished episode")
last = rows[-1]
print(f"   last: {int(float(last['global_step']))} steps, mean {float(last['charts/mean_return_100']):.1f}, "
      f"{last['charts/SPS']} steps/s (shared), {float(last['time/elapsed_s']):.0f} s")
for thr in (100, 200, 300, 400, 475):
    r = next((r for r in rows if float(r["charts/mean_return_100"]) >= thr), None)
    if r: print(f"   first >= {thr}: step {int(float(r['global_step']))} at {float(r['time/elapsed_s']):.1f} s (loop, shared GPU)")
PY
done
