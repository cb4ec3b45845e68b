# Replay buffer, CUDA twin against the CPU twin (needs a GPU: label gpu, excluded by ctest -LE gpu):
# the same steps into both, then storage, sampled batches (uniform and prioritized) and the tree
# after priority updates compared byte for byte. One program, one ctest per group.
# Until the library's CUDA glob lists src/replay/*.cu, the test compiles replay_cuda.cu itself.
if(CUDARL_HAVE_CUDA)
  get_target_property(CUDARL_REPLAY_CUDA_LIB_SOURCES cudarl SOURCES)
  list(FILTER CUDARL_REPLAY_CUDA_LIB_SOURCES INCLUDE REGEX "src/replay/replay_cuda\\.cu$")
  set(CUDARL_REPLAY_CUDA_TEST_SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_replay_cuda.c)
  if(NOT CUDARL_REPLAY_CUDA_LIB_SOURCES)
    list(APPEND CUDARL_REPLAY_CUDA_TEST_SOURCES ${PROJECT_SOURCE_DIR}/src/replay/replay_cuda.cu)
  endif()
  add_executable(test_replay_cuda ${CUDARL_REPLAY_CUDA_TEST_SOURCES})
  cudarl_test_target(test_replay_cuda)
  foreach(group storage uniform prioritized graph)
    add_test(NAME test_replay_cuda_${group} COMMAND test_replay_cuda ${group})
    set_tests_properties(test_replay_cuda_${group} PROPERTIES LABELS gpu)
  endforeach()
endif()
