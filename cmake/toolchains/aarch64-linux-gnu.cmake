# Cross-compiling cudarl for 64-bit Arm Linux (a Jetson's CPU, Graviton) on a Debian or Ubuntu
# x86-64 host, with the distribution's cross compiler and its multiarch :arm64 libraries:
#
#   apt-get install gcc-aarch64-linux-gnu qemu-user      (dpkg --add-architecture arm64 first)
#   apt-get install libcjson-dev:arm64 libprotobuf-c-dev:arm64 libpng-dev:arm64
#   cmake -S . -B build-aarch64 --toolchain cmake/toolchains/aarch64-linux-gnu.cmake \
#         -DCUDARL_CUDA=OFF -DCUDARL_MUJOCO=OFF
#
# Host programs (protoc-c, python3) come from the host; libraries and headers for the target
# from the multiarch folders (/usr/lib/aarch64-linux-gnu, /usr/include). The tests run through
# qemu-user: ctest puts CMAKE_CROSSCOMPILING_EMULATOR before every test that is a target, and
# the Python tests run the binaries through the same emulator (tests/CMakeLists.txt).
# scripts/aarch64-check.sh is the whole leg as CI runs it; docs/testing.md says what it covers.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CUDARL_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${CUDARL_CROSS_TRIPLE}-gcc)
set(CMAKE_LIBRARY_ARCHITECTURE ${CUDARL_CROSS_TRIPLE})

# The target's libraries: the cross toolchain's own (libc, libgomp) and multiarch's, never the
# host's. Programs run on the host.
set(CMAKE_FIND_ROOT_PATH /usr/${CUDARL_CROSS_TRIPLE} /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# qemu-user runs the target's binaries here, with the cross toolchain's loader and libc. Its
# libc is put first on the library path: the :arm64 packages bring the multiarch libc6:arm64,
# which may be another build of glibc than the cross toolchain's libc6-arm64-cross, and the
# loader of one with the libc of the other hangs in the first pthread_create.
find_program(CUDARL_QEMU_AARCH64 qemu-aarch64)
if(CUDARL_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${CUDARL_QEMU_AARCH64} -L /usr/${CUDARL_CROSS_TRIPLE}
      -E LD_LIBRARY_PATH=/usr/${CUDARL_CROSS_TRIPLE}/lib)
endif()
