# DQN on the GPU (needs one: label gpu): CPU and CUDA agree after a few hundred updates from one
# seed (match), the CUDA preset solves CartPole-v1 and prints the time from process start
# (learn), and a run allocates nothing on the device after setup (noalloc). One program, one
# ctest per group.
if(CUDARL_HAVE_CUDA)
  add_executable(test_dqn_cuda ${CMAKE_CURRENT_LIST_DIR}/test_dqn_cuda.c)
  cudarl_test_target(test_dqn_cuda)
  foreach(group match learn noalloc)
    add_test(NAME test_dqn_cuda_${group}
             COMMAND test_dqn_cuda ${group} ${CMAKE_CURRENT_BINARY_DIR}/dqn-cuda-runs)
    set_tests_properties(test_dqn_cuda_${group} PROPERTIES LABELS gpu)
  endforeach()
  # reads device-wide memory in use (cudaMemGetInfo): nothing else may run beside it; learn is
  # timed
  set_tests_properties(test_dqn_cuda_noalloc test_dqn_cuda_learn PROPERTIES RUN_SERIAL TRUE)
endif()
