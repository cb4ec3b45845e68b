# PPO on the GPU (needs one: label gpu): the CUDA trainer (test_ppo_cuda), and the fused
# one-kernel rollout against the CPU backend's op-by-op rollout (test_ppo_rollout_cuda).
if(CUDARL_HAVE_CUDA)
  cudarl_test(test_ppo_cuda SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_ppo_cuda.c LABELS gpu
              ARGS ${CMAKE_CURRENT_BINARY_DIR}/cuda-runs)
  # reads device-wide free memory (cudaMemGetInfo): other GPU tests must not run beside it
  set_tests_properties(test_ppo_cuda PROPERTIES RUN_SERIAL TRUE)
  cudarl_test(test_ppo_rollout_cuda SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_ppo_rollout_cuda.c
              LABELS gpu)
endif()
