cudarl_test(test_ppo_golden SOURCES test_ppo_golden.c LABELS cpu)
cudarl_test(test_ppo_learn SOURCES test_ppo_learn.c LABELS "cpu;slow"
            ARGS ${CMAKE_CURRENT_BINARY_DIR}/learn-runs)
if(CUDARL_HAVE_CUDA)
  cudarl_test(test_ppo_cuda SOURCES test_ppo_cuda.c LABELS gpu ARGS ${CMAKE_CURRENT_BINARY_DIR}/cuda-runs)
  # reads device-wide free memory (cudaMemGetInfo): other GPU tests must not run beside it
  set_tests_properties(test_ppo_cuda PROPERTIES RUN_SERIAL TRUE)
endif()
if(CUDARL_HAVE_CUDA)
  # the fused one-kernel rollout against the CPU backend's op-by-op rollout
  cudarl_test(test_ppo_rollout_cuda SOURCES test_ppo_rollout_cuda.c LABELS gpu)
endif()
# envs on CPU threads (src/algo/ppo_pool.c) against the env batch, on the CPU and on the GPU
cudarl_test(test_ppo_pool SOURCES test_ppo_pool.c LABELS cpu ARGS cpu)
if(CUDARL_HAVE_CUDA)
  add_test(NAME test_ppo_pool_cuda COMMAND test_ppo_pool cuda)
  set_tests_properties(test_ppo_pool_cuda PROPERTIES LABELS gpu)
endif()
