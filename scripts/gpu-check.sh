#!/usr/bin/env bash
# One call on the GPU machine: build from source (-j16), run the gpu-labelled tests and the CPU
# suite that needs no Gymnasium, run the benchmarks side by side with their peers, print a table.
# Usage (from the repo root there): [SKIP_CPU_SUITE=1] scripts/gpu-check.sh [bench ...]
#   benches: ppo_cpu (CPU PPO vs the PyTorch peer on 2 cores), ppo_gpu (GPU PPO vs the peer),
#            train_gpu (one profiled GPU run), replay (the replay buffer on the GPU),
#            mlp_fused (the dev/cuda kernel lab), profile_big (a profiled run at the benchmark's
#            65,536 envs x 16 steps), env_cpu (CartPole on CPU threads + GPU learner, per thread
#            count), conv (the cuDNN convolutions on the Nature-CNN trunk), convnet (a conv
#            policy's learner step, cudarl vs PyTorch eager and graphed), dqn_gpu (DQN's
#            time to solve CartPole on the GPU, 3 seeds), convnet_profile (ncu: the Nature-CNN
#            learner step's time per kernel, fp32 and bf16), parity_cartpole (PPO CartPole,
#            3 seeds per precision), minatar (the five MinAtar games'
#            CUDA twins, steps/s at 4,096 and 65,536 envs, vs the CPU def on 1 thread),
#            dqn_minatar (DQN on MinAtar Breakout, 3 seeds, frames and seconds to a mean of 10), infer
#            (the policy runtime on the seed's 4x256x256 pixel policy at batch 128 and 1, per
#            precision and conv engine: cudarl bench infer, then bench/peers/infer_peers.py on
#            the same network and inputs, one combined table; INFER_PEER_ROWS a subset of the
#            peers' rows, PEERS_TIMEOUT their bound), infer_levels (the half forward's kernel
#            levels in INFER_LEVELS side by side, through --kernel-level), ppo_pixels (PPO on
#            CartPolePixels-v1 with nature-cnn, 3 seeds per precision side by side in the
#            background while the rest runs; steps and seconds to the solved mark; PIXELS_SEEDS,
#            PIXELS_PRECISIONS, PIXELS_GPUS, PIXELS_STEPS, PIXELS_TIMEOUT, PIXELS_ARGS),
#            convnet_prec (the Nature-CNN Agent's learner step at batch 256 per precision, cudarl
#            only), dqn_parity (dqn_minatar's recipe in bf16 and fp16, 3 seeds each, in the
#            background), pixels_sweep (scripts/ppo-pixels-sweep.sh in the background; SWEEP_ARGS
#            holds its variants separated by ';'), two_gpus (issue 4: --async with the learner on
#            the second GPU against both on one; needs the nvidia-h200-x2 kind), infer_profile
#            (ncu: the policy runtime's forward per kernel and grid, issue 8), infer_ncu_full
#            (ncu --set full over the fp16 forward's convs at batch 128), infer_ncu_source (the same
#            convs' warp-stall samples per SASS instruction, summed by scripts/sass_stalls.py)
# GPU_TESTS_AFTER=1 runs ctest -L gpu after the benches are started (beside a background one);
# SKIP_GPU_TESTS=1 skips them; GPU_TESTS_REGEX runs only the gpu tests whose names match.
# Needs cJSON and protobuf-c (and libpng for cudarl render): the .deb files in .debs/ (apt-get
# download libcjson1 libcjson-dev protobuf-c-compiler libprotobuf-c-dev libprotobuf-c1
# libprotobuf32 libprotoc32 libpng-dev libpng16-16 zlib1g-dev) are unpacked into /tmp/deps when
# the machine lacks them.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
prefix=()
if [ ! -f /usr/include/cjson/cJSON.h ] || [ ! -f /usr/include/protobuf-c/protobuf-c.h ] ||
   ! command -v protoc-c >/dev/null; then
  for f in .debs/*.deb; do dpkg -x "$f" /tmp/deps; done
  prefix=(-DCMAKE_PREFIX_PATH=/tmp/deps/usr)
  export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
  export PATH=/tmp/deps/usr/bin:$PATH
fi
bg_pids=() bg_collect=()
PIXELS_SEEDS=${PIXELS_SEEDS:-1 2 3} PIXELS_PRECISIONS=${PIXELS_PRECISIONS:-bf16}
# ppo_pixels: a run is stopped (SIGINT: it writes its checkpoint) once its mean of 100 reaches
# 475 (the device time goes to the others); runs in the background from the runs' launch, beside
# the gpu tests and other benches
solved_at() { awk -F, 'NR > 1 && $5 >= 475 { printf "solved at step %d, %.1f s", $1, $17; exit }' "$1" 2>/dev/null; }
pixels_watch() {
  local stopped=()
  while :; do
    alive=0
    for k in "${!pixels_pid[@]}"; do
      kill -0 "${pixels_pid[$k]}" 2>/dev/null || continue
      alive=1
      # once: a second interrupt a second later ends cudarl at once, without its checkpoint
      [ -z "${stopped[$k]:-}" ] && [ -n "$(solved_at /tmp/ppop/${pixels_run[$k]}/metrics.csv)" ] &&
        kill -INT "${pixels_pid[$k]}" && stopped[$k]=1
    done
    [ $alive = 1 ] || break
    sleep 5
  done
}
collect_dqn_parity() {
  for prec in bf16 fp16; do
    for seed in 1 2 3; do
      f=/tmp/dqnp/$prec-$seed/metrics.csv
      r=$(awk -F, 'NR > 1 && $5 >= 10 { printf "reached 10 at frame %d, %.1f s", $1, $11; exit }' "$f" 2>/dev/null)
      last=$(tail -1 "$f" 2>/dev/null | awk -F, '{ printf "last: frame %d, mean(100) %.2f, %.1f s, loss scale %s, skipped %s", $1, $5, $11, $12, $13 }')
      echo "$prec seed $seed: ${r:-never reached 10}; $last" | tee -a "$OUT/dqn_parity.txt"
    done
  done
  add "DQN MinAtar Breakout bf16/fp16 parity" "see $OUT/dqn_parity.txt"
}
collect_sweep() {
  tail -40 /tmp/sweep_all.txt | tee "$OUT/pixels_sweep.txt"
  add "PPO pixels sweep" "see $OUT/pixels_sweep.txt"
}
summary=()
add() { summary+=("$(printf '%-44s %s' "$1" "$2")"); }

t0=$(date +%s)
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release "${prefix[@]}" >"$OUT/cmake.log" 2>&1 &&
  cmake --build build-gpu -j16 >"$OUT/build.log" 2>&1
build_rc=$?
add "build (cmake, -j16)" "rc=$build_rc in $(( $(date +%s) - t0 )) s"
[ $build_rc -eq 0 ] || { tail -30 "$OUT/build.log"; printf '%s\n' "${summary[@]}"; exit 1; }
# only about 8 files come back from the device: the logs of a good build stay behind
mv "$OUT/cmake.log" "$OUT/build.log" /tmp/ 2>/dev/null

gpu_tests() {
  [ "${SKIP_GPU_TESTS:-0}" = 1 ] && return # already run on this commit's code
  (cd build-gpu && ctest --output-on-failure -L gpu -R "${GPU_TESTS_REGEX:-.}" \
    --timeout "${GPU_TEST_TIMEOUT:-600}") \
    >"$OUT/ctest-gpu.log" 2>&1
  add "ctest -L gpu" "rc=$? ($(grep -E 'tests passed' "$OUT/ctest-gpu.log"))"
  # each failed test's output (ctest --output-on-failure prints it after the ***Failed line),
  # printed again after the summary so that it is in the output's tail
  awk '/\*\*\*(Failed|Timeout|Exception)/ { on = 1 } /^ +Start +[0-9]+:/ { on = 0 } on' \
    "$OUT/ctest-gpu.log" > "$OUT/gpu-failures.txt"
}
[ "${GPU_TESTS_AFTER:-0}" = 1 ] || gpu_tests
if [ "${SKIP_CPU_SUITE:-0}" != 1 ]; then # CI runs it too; skip it when device time is short
  (cd build-gpu && ctest --output-on-failure -LE "gym|gpu" -j8) >"$OUT/ctest.log" 2>&1
  add "ctest -LE gym|gpu (CPU suite)" "rc=$? ($(grep -E 'tests passed' "$OUT/ctest.log"))"
fi

for b in "$@"; do
  case "$b" in
  ppo_cpu)
    taskset -c 0,1 build-gpu/bench/bench_ppo_cpu --seeds 5 --runs-dir /tmp/bench-runs \
      | tee "$OUT/bench_ppo_cpu.txt"
    add "cudarl CPU PPO (2 cores, 1 thread)" "$(tail -1 "$OUT/bench_ppo_cpu.txt")"
    taskset -c 0,1 python3 bench/peers/ppo_torch.py --device cpu --threads 2 --seeds 5 \
      --json "$OUT/peer_torch_cpu.json" 2>&1 | tee "$OUT/peer_torch_cpu.txt"
    add "PyTorch PPO peer (2 cores, cpu)" "$(tail -1 "$OUT/peer_torch_cpu.txt")"
    ;;
  parity_cartpole)
    # issue 7's parity on CartPole: PPO with the CUDA preset, seeds 1-3, per precision (bf16 and
    # fp16 run the MLP op by op; fp32 in the fused kernels): mean(100) at the end, 475 reached at
    for prec in fp32 bf16 fp16; do
      for seed in 1 2 3; do
        build-gpu/cudarl train --device cuda --precision $prec --seed $seed --quiet \
          --runs-dir /tmp/parity --run-name "$prec-$seed" 2>&1 | grep "steps in\|solved" |
          tr '\n' ' ' | sed "s/^/$prec seed $seed: /" | tee -a "$OUT/parity_cartpole.txt"
        echo | tee -a "$OUT/parity_cartpole.txt"
      done
    done
    add "PPO CartPole per precision (parity)" "see $OUT/parity_cartpole.txt"
    ;;
  ppo_gpu)
    PYTHONUNBUFFERED=1 python3 bench/ppo_gpu.py --cudarl build-gpu/cudarl --seeds 5 --envs 65536 \
      --out "$OUT/ppo_gpu.json" 2>&1 | tee "$OUT/ppo_gpu.txt"
    add "PPO GPU vs PyTorch" "see the table above ($OUT/ppo_gpu.txt)"
    ;;
  train_gpu)
    build-gpu/cudarl train --device cuda --profile --runs-dir /tmp/tg 2>&1 | tail -16 | tee "$OUT/train_gpu.txt"
    add "cudarl train --device cuda --profile" "$(grep 'steps/s' "$OUT/train_gpu.txt" | head -1)"
    ;;
  profile_big)
    build-gpu/cudarl train --device cuda --profile --runs-dir /tmp/tg --num-envs 65536 \
      --num-steps 16 --num-minibatches 4 --update-epochs 4 --learning-rate 5e-3 --ent-coef 0 \
      --total-timesteps 100000000 2>&1 | tail -16 | tee "$OUT/profile_big.txt"
    add "train --profile, 65,536 envs x 16" "$(grep 'steps/s' "$OUT/profile_big.txt" | head -1)"
    ;;
  two_gpus)
    # issue 4's --actor-device / --learner-device: env_cpu's recipe on 16 threads with --async,
    # the actor and learner on one GPU against the learner on the second GPU (peer access)
    if [ "$(nvidia-smi -L | wc -l)" -lt 2 ]; then add "two_gpus" "skipped: one GPU"; continue; fi
    PA="--device cuda --env-device cpu --num-envs 65536 --num-steps 16 --num-minibatches 4
        --update-epochs 4 --learning-rate 5e-3 --ent-coef 0 --total-timesteps 52428800 --profile
        --env-threads 16 --async --runs-dir /tmp/twogpu"
    for split in "--actor-device 0 --learner-device 0" "--actor-device 0 --learner-device 1"; do
      echo "== $split" | tee -a "$OUT/two_gpus.txt"
      build-gpu/cudarl train $PA $split 2>&1 | grep -E "rollout \(|update \(|host waiting|device idle|device busy|steps in|solved|error" |
        tee -a "$OUT/two_gpus.txt"
    done
    add "PPO --async, learner on GPU 0 / GPU 1" "$(grep -o '([0-9]* steps/s)' "$OUT/two_gpus.txt" | tr -d '()' | paste -sd' ')"
    ;;
  env_cpu)
    # envs on CPU threads, the policy and learner on the GPU (issue 4): the pool alone, then
    # PPO end to end per thread count, then the synchronous schedule against two groups
    build-gpu/bench/bench_env_pool --threads 1,4,8,16 --envs 65536 --seconds 0.5 2>&1 |
      tee "$OUT/bench_env_pool.txt" | tail -8
    PA="--device cuda --env-device cpu --num-envs 65536 --num-steps 16 --num-minibatches 4
        --update-epochs 4 --learning-rate 5e-3 --ent-coef 0 --total-timesteps 52428800 --profile
        --runs-dir /tmp/envcpu"
    for th in 1 4 8 16; do
      echo "== --env-threads $th"
      build-gpu/cudarl train $PA --env-threads $th 2>&1 | grep -E "rollout \(|update \(|host waiting|device idle|device busy|threads waiting|bottleneck|steps in|solved" |
        tee -a "$OUT/env_cpu.txt"
    done
    for th in 8 16; do
      echo "== --env-threads $th --async"
      build-gpu/cudarl train $PA --env-threads $th --async 2>&1 |
        grep -E "rollout \(|host waiting|device idle|device busy|threads waiting|steps in|solved" | tee -a "$OUT/env_cpu.txt"
    done
    echo "== --env-threads 16 --env-groups 1 (synchronous)"
    build-gpu/cudarl train $PA --env-threads 16 --env-groups 1 2>&1 |
      grep -E "rollout \(|device idle|device busy|threads waiting|steps in" | tee -a "$OUT/env_cpu.txt"
    add "PPO, CartPole on CPU threads + GPU learner" \
      "steps/s for 1, 4, 8, 16 threads, 8 and 16 --async, 16 in 1 group: $(grep -o '([0-9]* steps/s)' "$OUT/env_cpu.txt" | tr -d '()' | sed 's/ steps\/s//' | paste -sd' ')"
    add "  device busy in the rollout (8 threads)" \
      "$(grep -m3 'device busy in the rollout' "$OUT/env_cpu.txt" | tail -1 | sed 's/^ *//')"
    ;;
  dqn_gpu)
    # DQN on the GPU, CUDA preset, three seeds: wall time of the whole process and when the
    # mean of the last 100 episodes first reached 475 (issue 5: <= 5 s from process start)
    for seed in 1 2 3; do
      t0=$(date +%s.%N)
      build-gpu/cudarl train --algo dqn --device cuda --seed $seed --runs-dir /tmp/dqn \
        2>&1 | grep -E "steps in|solved|syncs|host waited" | tee -a "$OUT/dqn_gpu.txt"
      t1=$(date +%s.%N)
      echo "seed $seed: process wall $(python3 -c "print(round($t1 - $t0, 3))") s, started at unix $t0" | tee -a "$OUT/dqn_gpu.txt"
    done
    add "DQN CartPole on the GPU (3 seeds)" "see above ($OUT/dqn_gpu.txt)"
    ;;
  conv)
    "$(find build-gpu -name bench_conv_cuda -type f | head -1)" 20 2>&1 | tee "$OUT/bench_conv.txt" | tail -30
    add "cuDNN conv (Nature-CNN trunk)" "see the table above"
    ;;
  convnet)
    # one learner step (forward + backward + Adam) of the conv policies, eager and graph, per
    # conv engine, then PyTorch's CleanRL modules on the same step (issue 6: Nature-CNN at
    # batch 32 >= 3x PyTorch eager fp32)
    "$(find build-gpu -name bench_convnet_cuda -type f | head -1)" --json "$OUT/bench_convnet.json" \
      2>&1 | tee "$OUT/bench_convnet.txt" | tail -40
    PYTHONUNBUFFERED=1 python3 bench/peers/convnet_peer.py --compare "$OUT/bench_convnet.json" \
      --json "$OUT/convnet_peer.json" 2>&1 | tee "$OUT/convnet_peer.txt"
    add "conv learner step vs PyTorch (convnet)" "$(tail -1 "$OUT/convnet_peer.txt")"
    ;;
  convnet_prec)
    # issue 7's acceptance row alone: the Nature-CNN Agent's learner step at batch 256 (case 3)
    # per precision, cudarl only (convnet has the PyTorch AMP peer)
    "$(find build-gpu -name bench_convnet_cuda -type f | head -1)" --reps 100 --engine gemm \
      --case 3 2>&1 | tee "$OUT/convnet_prec.txt" | tail -8
    add "Nature-CNN Agent b256 per precision" "see the table above"
    ;;
  convnet_profile)
    # where a learner step's time goes, per kernel: ncu over bench_convnet_cuda's Nature-CNN
    # Agent at batch 256 (case 3), eager steps and graph replays, per precision
    bc="$(find build-gpu -name bench_convnet_cuda -type f | head -1)"
    for prec in fp32 bf16; do
      ncu --metrics gpu__time_duration.sum --graph-profiling node --csv -c 600 "$bc" --reps 4 \
        --engine gemm --precision $prec --case 3 > "$OUT/ncu_convnet_$prec.csv" 2>"$OUT/ncu_$prec.err"
      python3 scripts/ncu_kernels.py "$OUT/ncu_convnet_$prec.csv" --steps-of adam_kernel 2>&1 |
        tee "$OUT/convnet_profile_$prec.txt" | head -30
    done
    add "conv learner step per kernel (convnet_profile)" "see $OUT/convnet_profile_*.txt"
    ;;
  replay)
    "$(find build-gpu -name bench_replay -type f | head -1)" 2>&1 | tee "$OUT/bench_replay.txt"
    PYTHONUNBUFFERED=1 timeout "${PEERS_TIMEOUT:-600}" python3 bench/peers/replay_peers.py \
      --json "$OUT/replay_peers.json" 2>&1 |
      tee "$OUT/replay_peers.txt"
    add "replay buffer (GPU) and its peers" "see the tables above"
    ;;
  dqn_minatar)
    # DQN on MinAtar Breakout (issue 6: mean return >= 10 within 5M frames in <= 120 s, 3 seeds),
    # the envs on their CUDA twin, iterations in graphs; the 3 seeds run side by side (each
    # slower than alone). DQN_MINATAR_STEPS (default 2500000) caps the frames; DQN_ARGS adds
    # flags (issue 7's parity: DQN_ARGS="--precision bf16").
    for seed in 1 2 3; do
      timeout 300 build-gpu/cudarl train --algo dqn --env-id MinAtar/Breakout-v1 \
        --policy minatar-cnn --device cuda --seed $seed --num-envs 64 --batch-size 128 \
        --learning-rate 5e-4 --train-frequency 16 --target-network-frequency 8192 \
        --buffer-size 100000 --learning-starts 5000 --end-e 0.01 --exploration-fraction 0.02 \
        --huber --total-timesteps "${DQN_MINATAR_STEPS:-2500000}" ${DQN_ARGS:-} --quiet --runs-dir /tmp/dqnm \
        --run-name "seed$seed" > "$OUT/dqn_minatar_$seed.log" 2>&1 &
    done
    wait
    for seed in 1 2 3; do
      f=/tmp/dqnm/seed$seed/metrics.csv
      r=$(awk -F, 'NR > 1 && $5 >= 10 { printf "reached 10 at frame %d, %.1f s", $1, $11; exit }' "$f" 2>/dev/null)
      last=$(tail -1 "$f" 2>/dev/null | awk -F, '{ printf "last: frame %d, mean(100) %.2f, %.1f s", $1, $5, $11 }')
      echo "seed $seed: ${r:-never reached 10}; $last" | tee -a "$OUT/dqn_minatar.txt"
    done
    add "DQN MinAtar Breakout, 3 seeds side by side" "see $OUT/dqn_minatar.txt"
    ;;
  dqn_parity)
    # issue 7's parity on MinAtar Breakout: dqn_minatar's recipe in bf16 and in fp16, 3 seeds
    # each, the 6 runs side by side in the background (collected at the end: the frame where
    # the mean of 100 reached 10; the timing is not the criterion, contended as they are)
    for prec in bf16 fp16; do
      for seed in 1 2 3; do
        timeout "${DQN_PARITY_TIMEOUT:-380}" build-gpu/cudarl train --algo dqn \
          --env-id MinAtar/Breakout-v1 --policy minatar-cnn --device cuda --seed $seed \
          --num-envs 64 --batch-size 128 --learning-rate 5e-4 --train-frequency 16 \
          --target-network-frequency 8192 --buffer-size 100000 --learning-starts 5000 \
          --end-e 0.01 --exploration-fraction 0.02 --huber --precision $prec \
          --total-timesteps "${DQN_MINATAR_STEPS:-2500000}" --quiet --runs-dir /tmp/dqnp \
          --run-name "$prec-$seed" > "$OUT/dqn_parity_$prec-$seed.log" 2>&1 &
        bg_pids+=($!)
      done
    done
    bg_collect+=(collect_dqn_parity)
    ;;
  pixels_sweep)
    # scripts/ppo-pixels-sweep.sh in the background on this build: SWEEP_ARGS holds the variants
    # separated by ';' (SWEEP_S, SEEDS as the script's)
    IFS=';' read -r -a variants <<< "${SWEEP_ARGS:---vf-coef 0.02}"
    SWEEP_BUILD=build-gpu scripts/ppo-pixels-sweep.sh "${variants[@]}" > /tmp/sweep_all.txt 2>&1 &
    bg_pids+=($!)
    bg_collect+=(collect_sweep)
    ;;
  minatar)
    "$(find build-gpu -name bench_minatar_cuda -type f | head -1)" 2>&1 | tee "$OUT/bench_minatar.txt"
    add "MinAtar CUDA twins vs CPU def (steps/s)" "see the table above ($OUT/bench_minatar.txt)"
    ;;
  infer)
    # the policy runtime's latency table (issue 8): GPU time of the forward graph, end to end
    # from host uint8 to host actions, obs/s, peak device memory, error against fp32; then the
    # peers (PyTorch eager / CUDA graph / torch.compile, JAX, ONNX Runtime) beside it
    rm -f "$OUT/infer_cudarl.json"
    build-gpu/cudarl bench infer --device cuda --json "$OUT/infer_cudarl.json" 2>&1 |
      tee "$OUT/infer_cudarl.txt" | grep -v "^cudarl bench infer: .*\.\.\.$"
    cmp=(); [ -f "$OUT/infer_cudarl.json" ] && cmp=(--compare "$OUT/infer_cudarl.json")
    # torch.compile's autotuning logs go to a file of their own: only the tables are shown
    # (INFER_PEER_ROWS: a subset of the peers' rows, e.g. without torch.compile's minutes of
    # autotuning; PEERS_TIMEOUT bounds them)
    rows=(); [ -n "${INFER_PEER_ROWS:-}" ] && rows=(--rows "$INFER_PEER_ROWS")
    PYTHONUNBUFFERED=1 timeout "${PEERS_TIMEOUT:-900}" python3 bench/peers/infer_peers.py \
      --json "$OUT/infer_peers.json" "${rows[@]}" "${cmp[@]}" 2>"$OUT/infer_peers.err" |
      tee "$OUT/infer_peers.txt"
    add "policy runtime inference vs peers (infer)" "see the tables above ($OUT/infer_peers.txt)"
    ;;
  infer_profile)
    # where the policy runtime's forward spends its time (issue 8): ncu over cudarl bench
    # infer's gemm-engine rows, one timed call each, only the half-precision forward's kernels
    # (bf16 and fp16 at batch 128 and 1: convnet_half.cu's and cuBLAS's 16-bit GEMMs; the fp32
    # rows' im2col path would use up the launch count); a row per kernel and grid size.
    # INFER_PROFILE_ARGS go to the bench, e.g. "--batch 1" (loading at batch 128 runs every
    # batch size's forward once, ~900 launches, before the graphs)
    ncu --metrics gpu__time_duration.sum --graph-profiling node --csv -c 600 \
      --kernel-name "regex:hconv|linear_epilogue|heads_kernel|fc_stream|input_kernel|nvjet|f16|bf16|splitK" \
      build-gpu/cudarl bench infer --device cuda --engine gemm --iters 1 --warmup 0 \
      ${INFER_PROFILE_ARGS:-} > "$OUT/ncu_infer.csv" 2>/tmp/ncu_infer.err
    python3 scripts/ncu_kernels.py "$OUT/ncu_infer.csv" --by-grid --top 40 |
      tee "$OUT/infer_profile.txt" | head -45
    add "policy runtime forward per kernel (infer_profile)" "see $OUT/infer_profile.txt"
    ;;
  infer_ncu_full)
    # the three convs of the fp16 forward at batch 128 under ncu --set full (occupancy,
    # throughputs, stall reasons). Loading runs each batch size's forward once, eagerly, 1 to
    # 128 (policy_cuda.cu's conv_warm_up), before it captures the graphs: the 8th launch of the
    # first conv's kernel and the 5th and 6th of hconv_halo_kernel (level 12, the default: the
    # unsplit convs only, from batch 32 on) are batch 128's
    ncu --set full --kernel-name-base demangled -k "regex:hconv_s2d_kernel<__half" \
      --launch-skip 7 --launch-count 1 \
      build-gpu/cudarl bench infer --device cuda --engine gemm --iters 1 --warmup 0 \
      > "$OUT/ncu_full.txt" 2>"$OUT/ncu_full.err"
    ncu --set full --kernel-name-base demangled -k "regex:hconv_halo_kernel<__half" \
      --launch-skip 4 --launch-count 2 \
      build-gpu/cudarl bench infer --device cuda --engine gemm --iters 1 --warmup 0 \
      >> "$OUT/ncu_full.txt" 2>>"$OUT/ncu_full.err"
    grep -E "hconv_|Duration|Compute \(SM\) Throughput|Memory Throughput|L1/TEX Hit|L2 Hit|DRAM Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit (Registers|Shared)|Executed Ipc A|Issue Slots Busy|One or More Eligible|Warp Cycles Per Issued|Stall|Grid Size" \
      "$OUT/ncu_full.txt" | grep -v "^ *----" | cut -c1-150 | head -120
    add "fp16 b128 convs under ncu --set full (infer_ncu_full)" "see $OUT/ncu_full.txt"
    ;;
  infer_ncu_source)
    # where the fp16 batch-128 convs' warps stall, per SASS instruction: ncu --set full over
    # one launch each of hconv_s2d_kernel and NCU_MMA_KERNEL (default hconv_halo_kernel, level
    # 12; hconv_mma_lean_kernel at levels 7 to 11 with NCU_MMA_SKIP=14, hconv_mma_kernel at 4
    # to 6) on conv2, its source page as CSV (a row per
    # instruction, with its warp-stall samples); scripts/sass_stalls.py sums the samples by
    # opcode and by stall. Back in $OUT: ncu_stalls.txt and the conv2 kernel's CSV (the device
    # tool returns at most 8 files); the reports and the s2d CSV stay in /tmp/ncu-src
    # NCU_BENCH_ARGS go to the bench (e.g. "--kernel-level 11"), NCU_MMA_SKIP is the conv
    # kernel's launches to skip (default 4: the halo kernel runs the unsplit convs only, two a
    # batch from 32 on, so its fifth launch is batch 128's conv2); the kernel's duration, grid
    # and occupancy are printed from the report, to show which launch it was
    mkdir -p /tmp/ncu-src
    for k in "hconv_s2d_kernel<__half:7" \
             "${NCU_MMA_KERNEL:-hconv_halo_kernel}<__half:${NCU_MMA_SKIP:-4}"; do
      name=${k%%<*} skip=${k##*:}
      ncu --set full --import-source no --kernel-name-base demangled -k "regex:${k%%:*}" \
        --launch-skip "$skip" --launch-count 1 -o "/tmp/ncu-src/$name" -f \
        build-gpu/cudarl bench infer --device cuda --engine gemm --iters 1 --warmup 0 \
        ${NCU_BENCH_ARGS:-} >"/tmp/ncu-src/$name.log" 2>&1
      ncu -i "/tmp/ncu-src/$name.ncu-rep" --page details 2>/dev/null |
        grep -E "^  [a-z_]+<|Duration|Grid Size|Registers Per|Achieved Occupancy|Compute \(SM\) Th|Memory Throughput|L2 Hit" |
        tee -a "$OUT/ncu_stalls.txt"
      csv="/tmp/ncu-src/$name.source.csv"
      [ "$name" = hconv_s2d_kernel ] || csv="$OUT/$name.source.csv"
      ncu -i "/tmp/ncu-src/$name.ncu-rep" --page source --print-source sass --csv \
        >"$csv" 2>>"/tmp/ncu-src/$name.log" || tail -5 "/tmp/ncu-src/$name.log"
      { echo "== $name"; python3 scripts/sass_stalls.py "$csv" 2>&1; } | tee -a "$OUT/ncu_stalls.txt" |
        head -40
    done
    add "fp16 b128 convs' stalls per instruction (infer_ncu_source)" "see $OUT/ncu_stalls.txt"
    ;;
  infer_levels)
    # the half forward's kernel levels (src/nn/convnet_cuda.h, cr_convnet_half_set_pipelined)
    # side by side in one build: cudarl bench infer --kernel-level for each of INFER_LEVELS
    # (default 11 12; gemm engine; the fp16 and bf16 rows are the ones that differ)
    # (INFER_LEVELS_ARGS go to each run, e.g. "--batch 1" for batch 1's rows alone)
    for lv in ${INFER_LEVELS:-11 12}; do
      echo "== level $lv" | tee -a "$OUT/infer_levels.txt"
      build-gpu/cudarl bench infer --device cuda --engine gemm --iters 300 --warmup 30 \
        --kernel-level "$lv" ${INFER_LEVELS_ARGS:-} 2>&1 | grep -E "^\| cudarl \(igemm\)|error|refus" |
        tee -a "$OUT/infer_levels.txt"
    done
    add "half forward levels (infer_levels)" "see $OUT/infer_levels.txt"
    ;;
  mlp_fused)
    dev/cuda/run_mlp_fused.sh 2>&1 | tee "$OUT/mlp_fused.txt" | tail -30
    add "fused MLP kernel lab" "see the table above"
    ;;
  ppo_pixels)
    # PPO solving CartPole from pixels (issue 6: 3 of 3 seeds), the envs on their CUDA twin
    # (the default for a conv policy on the GPU), actor and critic networks of their own; the
    # runs go side by side in the background (each slower than alone) and are collected at the
    # end. One run per precision in PIXELS_PRECISIONS (default bf16) and seed in PIXELS_SEEDS
    # (default 1 2 3); PIXELS_GPUS=N spreads them over N GPUs (run k on GPU k mod N, through
    # CUDA_VISIBLE_DEVICES)
    k=0
    for prec in $PIXELS_PRECISIONS; do
      for seed in $PIXELS_SEEDS; do
        run="$prec-seed$seed"
        pixels_gpu[$k]=$(( k % ${PIXELS_GPUS:-1} )) pixels_run[$k]=$run
        CUDA_VISIBLE_DEVICES=${pixels_gpu[$k]} \
        timeout -s INT -k 30 "${PIXELS_TIMEOUT:-520}" build-gpu/cudarl train --device cuda \
          --env-id CartPolePixels-v1 --policy nature-cnn --separate-critic --no-clip-vloss \
          --seed $seed --num-envs 32 --num-minibatches 16 --precision $prec \
          --total-timesteps "${PIXELS_STEPS:-5000000}" ${PIXELS_ARGS:-} \
          --quiet --runs-dir /tmp/ppop --run-name "$run" > "$OUT/ppo_pixels_$run.log" 2>&1 &
        pixels_pid[$k]=$!
        k=$((k + 1))
      done
    done
    pixels_bg=1
    pixels_watch & pixels_watcher=$!
    ;;
  *) add "$b" "unknown benchmark" ;;
  esac
done
[ "${GPU_TESTS_AFTER:-0}" = 1 ] && gpu_tests
# background benches (dqn_parity, pixels_sweep): wait, then each one's report
for pid in "${bg_pids[@]}"; do wait "$pid"; done
for c in "${bg_collect[@]}"; do "$c"; done
if [ "${pixels_bg:-0}" = 1 ]; then
  wait "$pixels_watcher"
  for k in "${!pixels_pid[@]}"; do
    run=${pixels_run[$k]} f=/tmp/ppop/${pixels_run[$k]}/metrics.csv
    r=$(solved_at "$f")
    last=$(tail -1 "$f" 2>/dev/null | awk -F, '{ printf "last: step %d, mean(100) %.1f, %.0f steps/s, %.1f s", $1, $5, $16, $17 }')
    echo "$run: ${r:-not solved}; $last" | tee -a "$OUT/ppo_pixels.txt"
    # the curve, about 12 points: step:mean(100)
    awk -F, 'NR > 1 { s[n] = $1; m[n++] = $5 } END { k = n > 12 ? int(n / 12) : 1;
      for (i = k - 1; i < n; i += k) printf "%d:%.0f ", s[i], m[i]; print "" }' "$f" 2>/dev/null |
      tee -a "$OUT/ppo_pixels.txt"
    # the policy it ended with, greedy (argmax) on the GPU: 100 episodes
    echo "$run greedy: $(CUDA_VISIBLE_DEVICES=${pixels_gpu[$k]} build-gpu/cudarl eval /tmp/ppop/$run/model.safetensors \
      --device cuda --episodes 100 2>&1 | tail -1)" | tee -a "$OUT/ppo_pixels.txt"
  done
  add "PPO CartPolePixels-v1 nature-cnn, $PIXELS_PRECISIONS x seeds $PIXELS_SEEDS" "see $OUT/ppo_pixels.txt"
fi

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/gpu.txt" 2>&1
add "device" "$(cat "$OUT/gpu.txt"); $(nproc) cores; commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
if [ -s "$OUT/gpu-failures.txt" ]; then
  echo; echo "==== failed gpu tests (last lines of each) ===="
  awk 'function flush() { if (head != "") { print head; for (i = n > 25 ? n - 25 : 0; i < n; i++) print b[i] } }
       /\*\*\*(Failed|Timeout|Exception)/ { flush(); head = $0; n = 0; next } { b[n++] = $0 }
       END { flush() }' \
    "$OUT/gpu-failures.txt" | tail -120
fi
echo; echo "==== summary ===="; printf '%s\n' "${summary[@]}"
