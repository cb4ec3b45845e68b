# CartPole-v1 on the GPU against the CPU batch (needs a GPU: label gpu, excluded by ctest -LE gpu).
if(CUDARL_HAVE_CUDA)
  cudarl_test(test_cartpole_cuda SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cartpole_cuda.c LABELS gpu)
endif()
