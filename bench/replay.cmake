# GPU microbenchmark of the CUDA replay buffer (an executable, not a test; needs a GPU):
# ./bench_replay [capacity] [reps]. Until the library's CUDA glob lists src/replay/*.cu, the
# benchmark compiles replay_cuda.cu itself.
if(CUDARL_HAVE_CUDA)
  get_target_property(CUDARL_BENCH_REPLAY_LIB_SOURCES cudarl SOURCES)
  list(FILTER CUDARL_BENCH_REPLAY_LIB_SOURCES INCLUDE REGEX "src/replay/replay_cuda\\.cu$")
  set(CUDARL_BENCH_REPLAY_SOURCES ${CMAKE_CURRENT_LIST_DIR}/bench_replay.cu)
  if(NOT CUDARL_BENCH_REPLAY_LIB_SOURCES)
    list(APPEND CUDARL_BENCH_REPLAY_SOURCES ${PROJECT_SOURCE_DIR}/src/replay/replay_cuda.cu)
  endif()
  add_executable(bench_replay ${CUDARL_BENCH_REPLAY_SOURCES})
  target_include_directories(bench_replay PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(bench_replay PRIVATE cudarl)
endif()
