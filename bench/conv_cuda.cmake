# GPU microbenchmark of the CUDA convolution ops (cuDNN) on the Nature-CNN trunk (an executable,
# not a test; needs a GPU): ./bench_conv_cuda [reps]
if(CUDARL_HAVE_CUDA AND CUDARL_HAVE_CUDNN)
  add_executable(bench_conv_cuda ${CMAKE_CURRENT_LIST_DIR}/bench_conv_cuda.cu)
  target_include_directories(bench_conv_cuda PRIVATE ${PROJECT_SOURCE_DIR}/src
                             ${CUDNN_INCLUDE_DIR})
  target_link_libraries(bench_conv_cuda PRIVATE cudarl)
endif()
