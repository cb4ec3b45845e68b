#!/usr/bin/env bash
# issue 26 baseline: pixel PPO/DQN throughput and profiles on the current code
cd "$(dirname "$0")/../.." || exit 1  # the repository root; build-gpu/ is scripts/gpu-check.sh's build
C=build-gpu/cudarl
export CUDARL_LOG=info
which nsys ncu 2>&1 | head -3
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm --format=csv
run() { local name=$1; shift; echo "==== $name: $*"; /usr/bin/time -f "wall %e s" timeout 120 $C train --device cuda --runs-dir /tmp/r26 --run-name $name --profile "$@" 2>&1 | grep -vE "^cudarl: step" | tail -30; }
P="--env-id CartPolePixels-v1 --policy nature-cnn --precision bf16 --no-clip-vloss"
run cp1k  $P --num-envs 1024 --num-steps 16 --num-minibatches 4 --total-timesteps 655360
run cp4k  $P --num-envs 4096 --num-steps 16 --num-minibatches 4 --total-timesteps 1310720
run cp4kf $P --num-envs 4096 --num-steps 16 --num-minibatches 4 --total-timesteps 1310720 --precision fp32
run cp4ks $P --num-envs 4096 --num-steps 16 --num-minibatches 4 --total-timesteps 1310720 --separate-critic
M="--env-id MinAtar/Breakout-v1 --policy minatar-cnn"
run mb1k  $M --num-envs 1024 --num-steps 32 --num-minibatches 8 --total-timesteps 3276800
run mb1kh $M --num-envs 1024 --num-steps 32 --num-minibatches 8 --total-timesteps 3276800 --precision bf16
echo "==== dqn"
/usr/bin/time -f "wall %e s" timeout 60 $C train --device cuda --algo dqn --env-id MinAtar/Breakout-v1 --policy minatar-cnn --num-envs 64 --total-timesteps 500000 --runs-dir /tmp/r26 --run-name dqn 2>&1 | tail -8
