# PPO with a convolutional policy (--policy minatar-cnn | nature-cnn): on the CPU, --policy's
# refusals, a MinAtar/Breakout-v1 run whose checkpoint records its network spec (eval refusing
# it), an exact resume, and learning a small image task; on a CUDA build (label gpu) the CPU and
# CUDA trainers side by side (rollouts and updates within the tolerances of the test's header),
# a CUDA run with its exact resume, and nature-cnn on CartPolePixels-v1.
cudarl_test(test_ppo_conv SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_ppo_conv.c LABELS cpu
            ARGS cpu ${CMAKE_CURRENT_BINARY_DIR}/ppo-conv-runs
                 validation,precision,breakout,resume,separate)
# learning the small image task, with one network and with --separate-critic: the slowest
# cases (not under the sanitizers, where learn alone took 252 s)
add_test(NAME test_ppo_conv_learn
         COMMAND test_ppo_conv cpu ${CMAKE_CURRENT_BINARY_DIR}/ppo-conv-runs-learn learn)
set_tests_properties(test_ppo_conv_learn PROPERTIES LABELS "cpu;slow")
add_test(NAME test_ppo_conv_learn_separate
         COMMAND test_ppo_conv cpu ${CMAKE_CURRENT_BINARY_DIR}/ppo-conv-runs-sep learn_separate)
set_tests_properties(test_ppo_conv_learn_separate PROPERTIES LABELS "cpu;slow")
if(CUDARL_HAVE_CUDA)
  add_test(NAME test_ppo_conv_cuda
           COMMAND test_ppo_conv cuda ${CMAKE_CURRENT_BINARY_DIR}/ppo-conv-cuda-runs)
  # reads device-wide free memory (the run's memory growth): other GPU tests must not run beside it
  set_tests_properties(test_ppo_conv_cuda PROPERTIES LABELS gpu RUN_SERIAL TRUE)
endif()
