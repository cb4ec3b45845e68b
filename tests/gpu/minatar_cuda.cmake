# The five MinAtar games on the GPU against their CPU defs in the env pool, bit for bit (needs a
# GPU: label gpu, excluded by ctest -LE gpu).
if(CUDARL_HAVE_CUDA)
  cudarl_test(test_minatar_cuda SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_minatar_cuda.c LABELS gpu)
endif()
