# Microbenchmark of the CPU convolution ops (an executable, not a test):
# ./bench_conv_cpu [batch [threads]]
add_executable(bench_conv_cpu ${CMAKE_CURRENT_LIST_DIR}/bench_conv_cpu.c)
target_include_directories(bench_conv_cpu PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_compile_options(bench_conv_cpu PRIVATE ${CUDARL_C_WARNINGS})
target_link_libraries(bench_conv_cpu PRIVATE cudarl)
