# shellcheck shell=bash
# Sourced by scripts/gpu-check.sh and bench/run.sh on the GPU machine: the dependencies and the
# build of one source tree.
#
# bench_deps: cJSON and protobuf-c (and libpng, for cudarl render, and giflib, for eval --video)
#   from the .deb files in the repository's .debs/ (git-ignored; bench/prep.sh downloads them),
#   unpacked into /tmp/deps, where the machine lacks them; sets BENCH_CMAKE_PREFIX and exports
#   PATH and LD_LIBRARY_PATH (the binaries load libcjson at run time).
# bench_build SRC BUILD JOBS [CMAKE_ARGS...]: configures and builds the tree at SRC into BUILD:
#   Release, the CUDA backend (required) for the GPUs present (CMAKE_CUDA_ARCHITECTURES from
#   nvidia-smi, e.g. 90-real on an H200: the same machine code as the default build runs there,
#   without the other architectures' compile time), Ninja where there is one. The log goes to
#   stdout; the status is cmake's.

BENCH_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_CMAKE_PREFIX=()

bench_deps() {
  if [ -f /usr/include/cjson/cJSON.h ] && [ -f /usr/include/protobuf-c/protobuf-c.h ] &&
     [ -f /usr/include/gif_lib.h ] && command -v protoc-c >/dev/null; then
    return 0
  fi
  if ! compgen -G "$BENCH_ROOT/.debs/*.deb" >/dev/null; then
    echo "bench_deps: cJSON or protobuf-c missing and no $BENCH_ROOT/.debs/*.deb to unpack" \
         "(run bench/prep.sh where apt-get works, and carry .debs)" >&2
    return 1
  fi
  if [ ! -f /tmp/deps/.unpacked ]; then
    for f in "$BENCH_ROOT"/.debs/*.deb; do dpkg -x "$f" /tmp/deps || return 1; done
    touch /tmp/deps/.unpacked
  fi
  BENCH_CMAKE_PREFIX=(-DCMAKE_PREFIX_PATH=/tmp/deps/usr)
  export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
  export PATH=/tmp/deps/usr/bin:$PATH
}

# bench_wheels: gymnasium (and gymnax, farama-notifications) from the repository's .whl/ into
# /tmp/site where python3 lacks gymnasium, and /tmp/site on PYTHONPATH, before cmake configures:
# the gpu tests' Python cases (test_python_gpu's make_vec) and the Python benchmarks import it.
# Only these wheels: the others (Pillow, MuJoCo, SB3) are the benchmarks' to install.
bench_wheels() {
  python3 -c 'import gymnasium' 2>/dev/null && return 0
  local w=()
  for p in gymnasium-1 farama_notifications gymnax; do
    w+=("$BENCH_ROOT"/.whl/"$p"*.whl)
  done
  if ! ls "${w[@]}" >/dev/null 2>&1; then
    # not fatal: the tests and benchmarks that need gymnasium say so themselves
    echo "bench_wheels: gymnasium is not installed and .whl/ lacks its wheels (bench/README.md," \
         "\"Wheels\"): test_python_gpu's make_vec case will fail" >&2
    return 0
  fi
  [ -f /tmp/site/.gym ] ||
    { python3 -m pip install -q --no-index --no-deps --target /tmp/site "${w[@]}" &&
      touch /tmp/site/.gym; } || return 1
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
}

# The first GPU's architecture as CMake names it (90-real), or nothing when nvidia-smi cannot say.
bench_cuda_arch() {
  local cap
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')
  [[ $cap =~ ^[0-9]+$ ]] && echo "$cap-real"
}

bench_build() {
  local src=$1 build=$2 jobs=$3 arch gen=()
  shift 3
  arch=$(bench_cuda_arch)
  command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S "$src" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DCUDARL_CUDA=ON \
        ${arch:+-DCMAKE_CUDA_ARCHITECTURES=$arch} "${BENCH_CMAKE_PREFIX[@]}" "$@" &&
    cmake --build "$build" -j "$jobs"
}
