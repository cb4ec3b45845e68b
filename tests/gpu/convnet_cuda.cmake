# The CUDA convolutional networks (src/nn/convnet_cuda.cu) against the CPU ones
# (src/nn/convnet.c): one program, one ctest per group (needs a GPU: label gpu, excluded by
# ctest -LE gpu). Every conv engine the build has runs: gemm always, cudnn and the igemm training
# engine where cuDNN was found.
# The nets, graph and igemm groups run again with CUDARL_SYNC_DEBUG=1, which waits for and checks
# every launch outside a capture, so a fault is reported at its own launch.
if(CUDARL_HAVE_CUDA)
  add_executable(test_convnet_cuda ${CMAKE_CURRENT_LIST_DIR}/test_convnet_cuda.c)
  cudarl_test_target(test_convnet_cuda)
  foreach(group nets repeat graph mixed igemm bad)
    add_test(NAME test_convnet_cuda_${group} COMMAND test_convnet_cuda ${group})
    set_tests_properties(test_convnet_cuda_${group} PROPERTIES LABELS gpu)
  endforeach()
  foreach(group nets graph igemm)
    add_test(NAME test_convnet_cuda_${group}_sync_debug COMMAND test_convnet_cuda ${group})
    set_tests_properties(test_convnet_cuda_${group}_sync_debug PROPERTIES LABELS gpu
                         ENVIRONMENT CUDARL_SYNC_DEBUG=1)
  endforeach()
  # repeat reads device-wide free memory (cudaMemGetInfo): nothing else may run beside it
  set_tests_properties(test_convnet_cuda_repeat test_convnet_cuda_igemm
                       test_convnet_cuda_igemm_sync_debug PROPERTIES RUN_SERIAL TRUE)
endif()
