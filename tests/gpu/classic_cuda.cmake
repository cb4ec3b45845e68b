# The classic-control envs' CUDA twin against their CPU twin through the env batch (needs a GPU:
# label gpu, excluded by ctest -LE gpu).
if(CUDARL_HAVE_CUDA)
  cudarl_test(test_classic_cuda SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_classic_cuda.c LABELS gpu)
endif()
