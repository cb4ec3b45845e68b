#!/usr/bin/env bash
# The runtime-only library on a GPU computes what the full one computes, bit for bit (issue 25;
# tests/gpu/runtime_only_cuda.cmake registers it, label gpu). It configures and builds the CUDA
# runtime-only libcudarl.so (-DCUDARL_RUNTIME_ONLY=ON) beside this build, with its generator,
# CUDA architectures and prefix path, runs that build's own tests (exports, NEEDED, install),
# trains three small checkpoints with this build's CLI (PPO CartPole-v1, DQN CartPole-v1, PPO
# Pendulum-v1 with --norm-obs), then runs runtime_act_dump on each library: the actions,
# values and logits of those checkpoints and of nature-cnn and minatar-cnn at every precision,
# batches 1, 5 and 64, must be the same words.
#   test_runtime_only_cuda.sh SRC WORK FULL_LIB CLI DUMP GENERATOR CUDA_ARCHS [PREFIX_PATH]
# (CUDA_ARCHS and PREFIX_PATH: CMake lists with , for ;)
set -euo pipefail
[ $# -ge 7 ] || { echo "usage: $0 SRC WORK FULL_LIB CLI DUMP GENERATOR CUDA_ARCHS [PREFIX]" >&2; exit 2; }
src=$1 work=$2 full=$3 cli=$4 dump=$5 gen=$6 archs=${7//,/;} prefix=${8:-}
prefix=${prefix//,/;} # CMake lists, passed comma-separated
rt=$work/build
mkdir -p "$work"
say() { echo "test_runtime_only_cuda: $*"; }

cmake -S "$src" -B "$rt" -G "$gen" -DCMAKE_BUILD_TYPE=Release -DCUDARL_RUNTIME_ONLY=ON \
      -DCUDARL_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=$archs" ${prefix:+"-DCMAKE_PREFIX_PATH=$prefix"} \
      >"$work/configure.log" || { tail -30 "$work/configure.log"; exit 1; }
grep -q "CUDA backend ON" "$work/configure.log" || { say "the runtime-only build has no CUDA"; exit 1; }
cmake --build "$rt" -j "$(nproc)" >"$work/build.log" || { tail -30 "$work/build.log"; exit 1; }
(cd "$rt" && ctest --output-on-failure)
lib=$(realpath "$rt/libcudarl.so")
say "runtime-only $(basename "$lib"): $(stat -c %s "$lib") bytes; NEEDED:" \
    "$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
say "full $(basename "$(realpath "$full")"): $(stat -c %s "$(realpath "$full")") bytes"

runs=$work/runs
rm -rf "$runs"
train() { "$cli" train --device cpu --runs-dir "$runs" --quiet --total-timesteps 4096 "$@"; }
train --run-name ppo
train --run-name dqn --algo dqn
train --run-name pendulum --env-id Pendulum-v1 --norm-obs
ckpts=("$runs"/ppo/model.safetensors "$runs"/dqn/model.safetensors
       "$runs"/pendulum/model.safetensors)

"$dump" "$full" "${ckpts[@]}" >"$work/full.txt"
"$dump" "$lib" "${ckpts[@]}" >"$work/runtime.txt"
cases=$(grep -c "precision" "$work/full.txt")
ran=$(grep -c " inputs, " "$work/full.txt")
if ! cmp -s "$work/full.txt" "$work/runtime.txt"; then
  say "the runtime-only library computes other words than the full one:"
  diff "$work/full.txt" "$work/runtime.txt" | head -40
  exit 1
fi
# Every case that can run must have: 4 precisions of each conv net, fp32 and tf32 of each MLP.
[ "$ran" -ge 14 ] || { say "only $ran of $cases cases loaded"; grep precision "$work/full.txt"; exit 1; }
say "$ran of $cases (policy, precision) cases loaded, the rest refused alike;" \
    "$(wc -l <"$work/full.txt") lines, the same from both libraries"
