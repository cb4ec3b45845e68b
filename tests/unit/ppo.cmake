# PPO on the CPU: learning CartPole-v1 (label slow), and the envs on CPU threads
# (src/algo/ppo/ppo_pool.c) against the env batch, on the CPU and on the GPU (label gpu).
cudarl_test(test_ppo_learn SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_ppo_learn.c LABELS "cpu;slow"
            ARGS ${CMAKE_CURRENT_BINARY_DIR}/learn-runs)
cudarl_test(test_ppo_pool SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_ppo_pool.c LABELS cpu ARGS cpu)
if(CUDARL_HAVE_CUDA)
  add_test(NAME test_ppo_pool_cuda COMMAND test_ppo_pool cuda)
  set_tests_properties(test_ppo_pool_cuda PROPERTIES LABELS gpu)
endif()
# Continuous actions: the Gaussian policy's rollout, resume and learning, CPU and GPU.
cudarl_test(test_ppo_continuous SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_ppo_continuous.c LABELS cpu
            ARGS cpu)
add_test(NAME test_ppo_continuous_learn COMMAND test_ppo_continuous cpu learn)
set_tests_properties(test_ppo_continuous_learn PROPERTIES LABELS "cpu;slow")
if(CUDARL_HAVE_CUDA)
  add_test(NAME test_ppo_continuous_cuda COMMAND test_ppo_continuous cuda)
  add_test(NAME test_ppo_continuous_learn_cuda COMMAND test_ppo_continuous cuda learn)
  set_tests_properties(test_ppo_continuous_cuda test_ppo_continuous_learn_cuda
                       PROPERTIES LABELS gpu)
endif()
# Pendulum-v1 to a mean of -200, 3 seeds, on the CPU (issue 24's acceptance in CI: the Release
# pass runs `slow` tests, the sanitizer pass, 10 to 20 times slower here, leaves them out).
cudarl_test(test_pendulum_learn SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_pendulum_learn.c
            LABELS "cpu;slow" ARGS ${CMAKE_CURRENT_BINARY_DIR}/pendulum-runs)
