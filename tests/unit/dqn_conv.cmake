# DQN with a convolutional Q-network (--policy minatar-cnn) on the CPU: --policy's refusals, a
# short MinAtar/Breakout-v1 run whose checkpoint records its network spec, eval refusing it; on
# a CUDA build (label gpu) the same updates on the GPU match the CPU's, MinAtar's CUDA twin gives
# the env pool's episodes and weights, and the CUDA preset trains minatar-cnn on the GPU (with
# the twin, in graphs).
cudarl_test(test_dqn_conv SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_dqn_conv.c LABELS cpu
            ARGS cpu ${CMAKE_CURRENT_BINARY_DIR}/dqn-conv-runs)
if(CUDARL_HAVE_CUDA)
  add_test(NAME test_dqn_conv_cuda
           COMMAND test_dqn_conv cuda ${CMAKE_CURRENT_BINARY_DIR}/dqn-conv-cuda-runs)
  set_tests_properties(test_dqn_conv_cuda PROPERTIES LABELS gpu)
endif()
