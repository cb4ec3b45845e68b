#!/usr/bin/env bash
# issue 26 recipe sweep: PPO MinAtar Breakout configs side by side (learning per step), then DQN solo (time from launch)
cd "$(dirname "$0")/../.." || exit 1  # the repository root; build-gpu/ is scripts/gpu-check.sh's build
C=$PWD/build-gpu/cudarl
R=/tmp/s26; rm -rf $R; mkdir -p $R
M="--device cuda --env-id MinAtar/Breakout-v1 --policy minatar-cnn --precision bf16 --quiet --total-timesteps 60000000"
declare -A P=(
 [A]="--num-envs 4096 --num-steps 128 --update-epochs 3 --num-minibatches 128 --learning-rate 3e-4 --clip-coef 0.2"
 [B]="--num-envs 4096 --num-steps 128 --update-epochs 3 --num-minibatches 128 --learning-rate 1e-3 --clip-coef 0.2"
 [C]="--num-envs 1024 --num-steps 32 --update-epochs 4 --num-minibatches 8 --learning-rate 5e-4 --clip-coef 0.2"
 [D]="--num-envs 2048 --num-steps 64 --update-epochs 3 --num-minibatches 32 --learning-rate 5e-4 --clip-coef 0.2"
 [E]="--num-envs 1024 --num-steps 128 --update-epochs 4 --num-minibatches 32 --learning-rate 1e-3 --clip-coef 0.2"
 [F]="--num-envs 4096 --num-steps 32 --update-epochs 2 --num-minibatches 16 --learning-rate 1e-3 --clip-coef 0.2"
)
for k in A B C D E F; do
  ( timeout -s INT 75 $C train $M ${P[$k]} --runs-dir $R --run-name ppo$k > $R/ppo$k.log 2>&1 ) &
done
wait
for k in A B C D E F; do
  echo "==== ppo$k: ${P[$k]}"
  python3 - "$R/ppo$k/metrics.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
marks = [1e6, 2e6, 5e6, 10e6, 20e6, 30e6, 40e6, 60e6]
out = []
for m in marks:
    r = next((r for r in rows if float(r["global_step"]) >= m), None)
    if r: out.append(f"{m/1e6:g}M:{float(r['charts/mean_return_100']):.1f}@{float(r['time/elapsed_s']):.0f}s")
last = rows[-1]
print("  ", " ".join(out), f"| last {int(float(last['global_step']))/1e6:.1f}M {float(last['charts/mean_return_100']):.1f} sps {last['charts/SPS']}")
for thr in (10, 20, 40, 60):
    r = next((r for r in rows if float(r["charts/mean_return_100"]) >= thr), None)
    if r: print(f"   first >= {thr}: step {int(float(r['global_step']))} at {float(r['time/elapsed_s']):.1f}s (loop, shared GPU)")
PY
done
D="--algo dqn --device cuda --env-id MinAtar/Breakout-v1 --policy minatar-cnn --quiet --total-timesteps 1500000 --end-e 0.01 --exploration-fraction 0.02 --huber --buffer-size 100000"
declare -A Q=(
 [1]="--num-envs 64 --batch-size 128 --learning-rate 5e-4 --train-frequency 16 --target-network-frequency 8192 --learning-starts 5000"
 [2]="--num-envs 128 --batch-size 256 --learning-rate 1e-3 --train-frequency 32 --target-network-frequency 8192 --learning-starts 5000"
 [3]="--num-envs 256 --batch-size 256 --learning-rate 1e-3 --train-frequency 32 --target-network-frequency 8192 --learning-starts 5000"
 [4]="--num-envs 256 --batch-size 512 --learning-rate 1e-3 --train-frequency 64 --target-network-frequency 8192 --learning-starts 5000"
 [5]="--num-envs 512 --batch-size 512 --learning-rate 1e-3 --train-frequency 64 --target-network-frequency 16384 --learning-starts 10000"
 [6]="--num-envs 128 --batch-size 128 --learning-rate 5e-4 --train-frequency 16 --target-network-frequency 8192 --learning-starts 5000"
)
for k in 1 2 3 4 5 6; do
  echo "==== dqn$k: ${Q[$k]}"
  t0=$(date +%s.%N)
  timeout -s INT 20 $C train $D ${Q[$k]} --runs-dir $R --run-name dqn$k > $R/dqn$k.log 2>&1
  t1=$(date +%s.%N)
  grep -E "solved|steps in" $R/dqn$k.log | sed 's/^/   /'
  python3 - "$R/dqn$k/metrics.csv" "$t0" "$t1" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
wall = float(sys.argv[3]) - float(sys.argv[2])
last = float(rows[-1]["time/elapsed_s"])
off = wall - last  # launch -> loop start, roughly (includes exit)
for thr in (5, 10, 15):
    r = next((r for r in rows if float(r["charts/mean_return_100"]) >= thr), None)
    if r: print(f"   first >= {thr}: step {int(float(r['global_step']))} loop {float(r['time/elapsed_s']):.2f}s (process wall {wall:.2f}s, loop end {last:.2f}s)")
print(f"   last: step {rows[-1]['global_step']} mean {float(rows[-1]['charts/mean_return_100']):.1f}")
PY
done
