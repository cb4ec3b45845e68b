# The CUDA convolution ops (cuDNN, src/ops/cuda/conv2d_cudnn.cu) against the CPU ops: one program, one
# ctest per group (needs a GPU: label gpu, excluded by ctest -LE gpu). The layers and graph
# groups run again with CUDARL_SYNC_DEBUG=1, which waits for and checks every launch outside a
# capture, so a fault is reported at its own launch.
if(CUDARL_HAVE_CUDA AND CUDARL_HAVE_CUDNN)
  add_executable(test_conv_cuda ${CMAKE_CURRENT_LIST_DIR}/test_conv_cuda.c)
  cudarl_test_target(test_conv_cuda)
  foreach(group plan layers random graph scale)
    add_test(NAME test_conv_cuda_${group} COMMAND test_conv_cuda ${group})
    set_tests_properties(test_conv_cuda_${group} PROPERTIES LABELS gpu)
  endforeach()
  foreach(group layers graph)
    add_test(NAME test_conv_cuda_${group}_sync_debug COMMAND test_conv_cuda ${group})
    set_tests_properties(test_conv_cuda_${group}_sync_debug PROPERTIES LABELS gpu
                         ENVIRONMENT CUDARL_SYNC_DEBUG=1)
  endforeach()
  # graph reads device-wide free memory (cudaMemGetInfo): nothing else may run beside it
  set_tests_properties(test_conv_cuda_graph test_conv_cuda_graph_sync_debug PROPERTIES
                       RUN_SERIAL TRUE)
endif()
