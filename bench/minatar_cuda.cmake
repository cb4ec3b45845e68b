# GPU benchmark of the MinAtar CUDA twins (an executable, not a test; needs a GPU): env steps/s
# at 4,096 and 65,536 envs next to the CPU def on one thread, as a markdown table:
# ./bench_minatar_cuda [seconds per measurement]
if(CUDARL_HAVE_CUDA)
  add_executable(bench_minatar_cuda ${CMAKE_CURRENT_LIST_DIR}/bench_minatar_cuda.cu)
  target_include_directories(bench_minatar_cuda PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(bench_minatar_cuda PRIVATE cudarl)
endif()
