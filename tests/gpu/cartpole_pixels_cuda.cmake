# CartPolePixels-v1's CUDA renderer against the CPU's bytes (needs a GPU: label gpu, excluded by
# ctest -LE gpu).
if(CUDARL_HAVE_CUDA)
  cudarl_test(test_cartpole_pixels_cuda
              SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cartpole_pixels_cuda.c LABELS gpu)
endif()
