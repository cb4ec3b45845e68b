#!/usr/bin/env bash
# PPO on CartPolePixels-v1: variants of the recipe side by side on the one GPU, each for a fixed
# wall time (stopped by SIGINT, which writes the checkpoint), then each run's curve
# (step:mean(100)) and its final policy's greedy return over 100 episodes. For the GPU machine;
# builds from this tree.
# Usage (repo root): [SWEEP_S=330] [SEEDS="1 2"] [SWEEP_GPUS=2] [SWEEP_BUILD=dir] scripts/ppo-pixels-sweep.sh 'FLAGS A' 'FLAGS B' ...
# e.g. scripts/ppo-pixels-sweep.sh '--vf-coef 0.05' '--vf-coef 0.05 --learning-rate 5e-4' \
#      '--vf-coef 0.02'   (the 2026-11-30 sweep in bench/RESULTS.md)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
[ $# -ge 1 ] || { echo "usage: $0 'FLAGS' ['FLAGS' ...]" >&2; exit 2; }
prefix=()
if [ -d .debs ] && [ ! -f /usr/include/cjson/cJSON.h ]; then # as gpu-check.sh
  for f in .debs/*.deb; do dpkg -x "$f" /tmp/deps; done
  export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
  prefix=(-DCMAKE_PREFIX_PATH=/tmp/deps/usr)
fi
bd=${SWEEP_BUILD:-build-sweep} # SWEEP_BUILD: a build of this tree to use instead (gpu-check's)
if [ ! -x "$bd/cudarl" ]; then
  cmake -S . -B "$bd" -DCMAKE_BUILD_TYPE=Release "${prefix[@]}" >/dev/null 2>&1
  cmake --build "$bd" -j16 --target cudarl_cli > "$OUT/sweep_build.log" 2>&1 ||
    { tail -30 "$OUT/sweep_build.log"; exit 1; }
fi
base=(--device cuda --env-id CartPolePixels-v1 --policy nature-cnn --no-clip-vloss --num-envs 32
      --num-minibatches 16 --total-timesteps 8000000 --precision tf32 --quiet --runs-dir /tmp/sweep)
v=0 k=0
for flags in "$@"; do
  v=$((v + 1))
  for seed in ${SEEDS:-1 2}; do
    # the k-th run on GPU k mod SWEEP_GPUS (default 1: all on the first)
    gpu[v * 1000 + seed]=$((k % ${SWEEP_GPUS:-1})); k=$((k + 1))
    # shellcheck disable=SC2086 # the variant's flags are words
    CUDA_VISIBLE_DEVICES=${gpu[v * 1000 + seed]} timeout -s INT -k 30 "${SWEEP_S:-330}" "$bd"/cudarl train "${base[@]}" $flags \
      --seed "$seed" \
      --run-name "v$v-$seed" > "$OUT/sweep_v$v-$seed.log" 2>&1 &
  done
done
wait
v=0
for flags in "$@"; do
  v=$((v + 1))
  for seed in ${SEEDS:-1 2}; do
    f=/tmp/sweep/v$v-$seed/metrics.csv
    # the last whole row (a run stopped by timeout may leave a partial one)
    echo "v$v seed $seed ($flags): $(awk -F, 'NF >= 17 { l = $0 } END { split(l, a, ",");
      printf "step %d, mean(100) %.1f", a[1], a[5] }' "$f")"
    awk -F, 'NR > 1 && NF >= 17 { s[n] = $1; m[n++] = $5 } END { k = n > 10 ? int(n / 10) : 1;
      for (i = k - 1; i < n; i += k) printf "%d:%.0f ", s[i], m[i]; print "" }' "$f"
    # the policy the run stopped with (SIGINT writes its checkpoint), greedy, 100 episodes
    echo "  greedy: $(CUDA_VISIBLE_DEVICES=${gpu[v * 1000 + seed]} "$bd"/cudarl eval "/tmp/sweep/v$v-$seed/model.safetensors" \
      --device cuda --episodes 100 2>&1 | tail -1)"
  done
done | tee "$OUT/sweep.txt"
