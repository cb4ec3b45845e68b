# DQN with the envs on CPU threads (--env-device cpu) against the env batch, bit for bit, and a
# MinAtar/Breakout-v1 run (uint8 observations) on the CPU; the same on the GPU (label gpu).
cudarl_test(test_dqn_pool SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_dqn_pool.c LABELS cpu
            ARGS cpu ${CMAKE_CURRENT_BINARY_DIR}/dqn-pool-runs)
if(CUDARL_HAVE_CUDA)
  add_test(NAME test_dqn_pool_cuda
           COMMAND test_dqn_pool cuda ${CMAKE_CURRENT_BINARY_DIR}/dqn-pool-cuda-runs)
  set_tests_properties(test_dqn_pool_cuda PROPERTIES LABELS gpu)
endif()
