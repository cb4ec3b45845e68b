#!/usr/bin/env bash
# issue 26 sweep, round 2: PPO recipe variants on Breakout and the recipe on the other games (side by side), DQN solo
cd "$(dirname "$0")/../.." || exit 1  # the repository root; build-gpu/ is scripts/gpu-check.sh's build
C=$PWD/build-gpu/cudarl
R=/tmp/s26; rm -rf $R; mkdir -p $R
M="--device cuda --policy minatar-cnn --precision bf16 --quiet --total-timesteps 40000000"
E="--num-envs 1024 --num-steps 128 --update-epochs 4 --num-minibatches 32 --learning-rate 1e-3 --clip-coef 0.2"
declare -A P=(
 [E]="--env-id MinAtar/Breakout-v1 $E"
 [E2]="--env-id MinAtar/Breakout-v1 --num-envs 1024 --num-steps 128 --update-epochs 4 --num-minibatches 32 --learning-rate 2e-3 --clip-coef 0.2"
 [G]="--env-id MinAtar/Breakout-v1 --num-envs 2048 --num-steps 64 --update-epochs 4 --num-minibatches 32 --learning-rate 1e-3 --clip-coef 0.2"
 [H]="--env-id MinAtar/Breakout-v1 --num-envs 512 --num-steps 128 --update-epochs 4 --num-minibatches 16 --learning-rate 1e-3 --clip-coef 0.2"
 [As]="--env-id MinAtar/Asterix-v1 $E"
 [Fr]="--env-id MinAtar/Freeway-v1 $E"
 [SI]="--env-id MinAtar/SpaceInvaders-v1 $E"
 [Sq]="--env-id MinAtar/Seaquest-v1 $E"
)
keys="E E2 G H As Fr SI Sq"
for k in $keys; do
  ( timeout -s INT 80 $C train $M ${P[$k]} --runs-dir $R --run-name ppo$k > $R/ppo$k.log 2>&1 ) &
done
wait
for k in $keys; do
  echo "==== ppo$k: ${P[$k]}"
  grep -iE "error|refused" $R/ppo$k.log | head -3
  python3 - "$R/ppo$k/metrics.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
marks = [1e6, 2e6, 5e6, 10e6, 15e6, 20e6, 30e6, 40e6]
out = []
for m in marks:
    r = next((r for r in rows if float(r["global_step"]) >= m), None)
    if r: out.append(f"{m/1e6:g}M:{float(r['charts/mean_return_100']):.1f}@{float(r['time/elapsed_s']):.0f}s")
last = rows[-1]
print("  ", " ".join(out), f"| last {int(float(last['global_step']))/1e6:.1f}M {float(last['charts/mean_return_100']):.1f} sps {last['charts/SPS']}")
for thr in (10, 20, 40, 60, 100):
    r = next((r for r in rows if float(r["charts/mean_return_100"]) >= thr), None)
    if r: print(f"   first >= {thr}: step {int(float(r['global_step']))} at {float(r['time/elapsed_s']):.1f}s (loop, shared GPU)")
PY
done
D="--algo dqn --device cuda --env-id MinAtar/Breakout-v1 --policy minatar-cnn --quiet --total-timesteps 1200000 --end-e 0.01 --exploration-fraction 0.02 --huber --buffer-size 100000"
Q4="--num-envs 256 --batch-size 512 --learning-rate 1e-3 --train-frequency 64 --target-network-frequency 8192 --learning-starts 5000"
declare -A Q=(
 [4s1]="$Q4 --seed 1" [4s2]="$Q4 --seed 2" [4s3]="$Q4 --seed 3"
 [7]="--num-envs 512 --batch-size 1024 --learning-rate 2e-3 --train-frequency 128 --target-network-frequency 8192 --learning-starts 5000"
 [8]="--num-envs 256 --batch-size 512 --learning-rate 2e-3 --train-frequency 64 --target-network-frequency 8192 --learning-starts 5000"
 [9]="--num-envs 256 --batch-size 512 --learning-rate 1e-3 --train-frequency 64 --target-network-frequency 4096 --learning-starts 2000"
 [10]="--num-envs 512 --batch-size 512 --learning-rate 1e-3 --train-frequency 128 --target-network-frequency 8192 --learning-starts 5000"
)
for k in 4s1 4s2 4s3 7 8 9 10; do
  echo "==== dqn$k: ${Q[$k]}"
  t0=$(date +%s.%N)
  timeout -s INT 20 $C train $D ${Q[$k]} --runs-dir $R --run-name dqn$k > $R/dqn$k.log 2>&1
  t1=$(date +%s.%N)
  python3 - "$R/dqn$k/metrics.csv" "$t0" "$t1" "$R/dqn$k.log" <<'PY'
import csv, sys, re
rows = list(csv.DictReader(open(sys.argv[1])))
t0 = float(sys.argv[2])
log = open(sys.argv[4]).read()
m = re.search(r"solved .* at step (\d+), ([\d.]+) s into the loop \(unix time ([\d.]+)\)", log)
sps = re.search(r"\((\d+) steps/s\)", log)
for thr in (5, 10, 15):
    r = next((r for r in rows if float(r["charts/mean_return_100"]) >= thr), None)
    if r: print(f"   first >= {thr}: step {int(float(r['global_step']))} loop {float(r['time/elapsed_s']):.2f}s")
if m: print(f"   solved at step {m.group(1)}: {float(m.group(3)) - t0:.2f} s from launch ({m.group(2)} s into the loop)")
print(f"   last: step {rows[-1]['global_step']} mean {float(rows[-1]['charts/mean_return_100']):.1f}; {sps.group(1) if sps else '?'} steps/s")
PY
done
grep -h "threshold\|solve" $R/dqn4s1.log | head -3
