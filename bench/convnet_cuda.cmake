# GPU benchmark of one learner step (forward + backward + Adam) of the convolutional policies
# (src/nn/convnet_cuda.h), eager and graph-replayed, per conv engine (an executable, not a test;
# needs a GPU); bench/peers/convnet_peer.py is its PyTorch peer:
#   ./bench_convnet_cuda [--reps N] [--engine gemm|cudnn|all] [--json FILE]
if(CUDARL_HAVE_CUDA)
  add_executable(bench_convnet_cuda ${CMAKE_CURRENT_LIST_DIR}/bench_convnet_cuda.cu)
  target_include_directories(bench_convnet_cuda PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(bench_convnet_cuda PRIVATE cudarl)
endif()
