add_executable(bench_ppo_cpu ${CMAKE_CURRENT_LIST_DIR}/bench_ppo_cpu.c)
target_compile_options(bench_ppo_cpu PRIVATE ${CUDARL_C_WARNINGS})
target_link_libraries(bench_ppo_cpu PRIVATE cudarl)
