#!/usr/bin/env bash
# cudarl as a user gets it (docs/install.md), from a build scripts/test.sh made (default
# build-test): `cmake --install` into a temporary prefix and its files checked; a checkpoint
# made by the installed CLI; examples/consumer built against the install by CMake (libcudarl.so,
# then libcudarl.a) and by make with pkg-config (both), each run on the checkpoint, their
# actions compared; the CMake package's components asked for. Then the runtime-only build
# (-DCUDARL_RUNTIME_ONLY=ON, CPU: a small build) configured, built and tested (its exports,
# NEEDED list and install), and the same consumer built and run against it; and a program that
# calls a trainer refused by the dynamic linker on the runtime-only library.
#
# Usage: scripts/consumer-check.sh [BUILD]   (KEEP=1 keeps the work folder and says where)
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build-test}")
[ -f "$build/CMakeCache.txt" ] || {
  echo "consumer-check: $build is not a CMake build folder; build first (scripts/test.sh)" >&2
  exit 2
}
src=$PWD
jobs=$(nproc)
abi=$(sed -n 's/^#define CUDARL_ABI_VERSION \([0-9]*\)$/\1/p' include/cudarl.h)
work=$(mktemp -d)
if [ "${KEEP:-0}" = 1 ]; then
  echo "consumer-check: work folder $work" >&2
else
  trap 'rm -rf "$work"' EXIT
fi
say() { echo "consumer-check: $*" >&2; }

# Runs the consumer binary $1 on the checkpoint; its actions go to $work/$2.out, which must be
# the same as the first run's.
run_consumer() {
  "$1" "$ckpt" --batch 16 >"$work/$2.out"
  if [ -f "$work/first.out" ]; then
    cmp -s "$work/first.out" "$work/$2.out" || {
      say "$2: other actions than the first build's:"; diff "$work/first.out" "$work/$2.out"; exit 1; }
  else
    cp "$work/$2.out" "$work/first.out"
  fi
  say "$2: $(wc -l <"$work/$2.out") valid actions"
}

# Configures, builds and runs examples/consumer with CMake against prefix $1 (static: $2 = ON).
cmake_consumer() {
  local name=cmake-$(basename "$1")-$([ "$2" = ON ] && echo static || echo shared)
  cmake -S examples/consumer -B "$work/$name" -DCMAKE_PREFIX_PATH="$1" -DCONSUMER_STATIC="$2" \
        -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS="-Werror" >"$work/$name.log"
  cmake --build "$work/$name" >>"$work/$name.log"
  run_consumer "$work/$name/consumer" "$name"
}

# find_package(cudarl CONFIG REQUIRED COMPONENTS $2) against prefix $1: "ok", or its message.
find_component() {
  mkdir -p "$work/find-$2"
  printf 'cmake_minimum_required(VERSION 3.24)\nproject(find C)\n%s\n' \
    "find_package(cudarl CONFIG REQUIRED COMPONENTS $2)" >"$work/find-$2/CMakeLists.txt"
  if cmake -S "$work/find-$2" -B "$work/find-$2/b" -DCMAKE_PREFIX_PATH="$1" >"$work/find.log" 2>&1
  then echo ok; else tr '\n' ' ' <"$work/find.log"; fi
  rm -rf "$work/find-$2"
}
expect() { # expect WHAT GOT PATTERN
  [[ "$2" == *$3* ]] || { say "$1: expected '$3', got: $2"; exit 1; }
  say "$1: $3"
}

# ---- the full build, installed -----------------------------------------------------------
prefix=$work/full
cmake --install "$build" --prefix "$prefix" >&2 # it says what it installs
python3 tests/unit/test_install.py "$prefix" include/cudarl.h cmake/cudarl.map "$build"
"$prefix/bin/cudarl" train --device cpu --total-timesteps 20000 --runs-dir "$work/runs" \
                          --run-name consumer --quiet
ckpt=$work/runs/consumer/model.safetensors
cmake_consumer "$prefix" OFF
cmake_consumer "$prefix" ON
mkdir -p "$work/make"
PKG_CONFIG_PATH=$(echo "$prefix"/lib*/pkgconfig) make -s -C "$work/make" -f "$src/examples/consumer/Makefile" \
  CFLAGS="-O2 -Wall -Wextra -Werror" consumer consumer-static
run_consumer "$work/make/consumer" make-shared
run_consumer "$work/make/consumer-static" make-static

expect "COMPONENTS static train" "$(find_component "$prefix" "static train")" ok
if grep -q "set(cudarl_HAS_CUDA ON)" "$prefix"/lib*/cmake/cudarl/cudarlConfig.cmake; then
  expect "COMPONENTS cuda" "$(find_component "$prefix" cuda)" ok
else
  expect "COMPONENTS cuda" "$(find_component "$prefix" cuda)" "built without the CUDA backend"
fi
expect "COMPONENTS nonsense" "$(find_component "$prefix" nonsense)" "no such component"

# ---- the runtime-only build (CPU) ----------------------------------------------------------
rt=$work/rt-build
cmake -S . -B "$rt" -DCMAKE_BUILD_TYPE=Release -DCUDARL_WERROR=ON -DCUDARL_RUNTIME_ONLY=ON \
      -DCUDARL_CUDA=OFF >"$work/rt.log"
cmake --build "$rt" -j"$jobs" >>"$work/rt.log"
(cd "$rt" && ctest --output-on-failure) >&2
say "runtime-only libcudarl.so: $(stat -c %s "$rt"/libcudarl.so.*.*.*) bytes"
rtprefix=$work/rt
cmake --install "$rt" --prefix "$rtprefix" >/dev/null
cmake_consumer "$rtprefix" OFF
cmake_consumer "$rtprefix" ON
expect "runtime-only COMPONENTS train" "$(find_component "$rtprefix" train)" "runtime-only build"

# A program built against the full library that calls a trainer: it runs there, and the
# dynamic linker refuses it on the runtime-only library, naming the version node.
lib=$(echo "$prefix"/lib*/libcudarl.so | xargs dirname)
cc -I"$prefix/include" tests/unit/trainer_caller.c -L"$lib" -lcudarl -Wl,-rpath,"$lib" \
   -o "$work/trainer_caller"
expect "trainer_caller on the full library" "$("$work/trainer_caller")" ok
got=$(LD_LIBRARY_PATH=$(echo "$rtprefix"/lib*) "$work/trainer_caller" 2>&1) && {
  say "trainer_caller started on the runtime-only library: $got"; exit 1; }
expect "trainer_caller on the runtime-only library" "$got" "version \`CUDARL_${abi}_TRAIN' not found"
say "ok"
