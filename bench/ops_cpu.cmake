# Microbenchmark of the CPU ops (an executable, not a test): ./bench_ops_cpu [threads...]
add_executable(bench_ops_cpu ${CMAKE_CURRENT_LIST_DIR}/bench_ops_cpu.c)
target_include_directories(bench_ops_cpu PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_compile_options(bench_ops_cpu PRIVATE ${CUDARL_C_WARNINGS})
target_link_libraries(bench_ops_cpu PRIVATE cudarl)
