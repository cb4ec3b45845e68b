# The env thread pool: CartPole steps/s over threads x envs, and the dispatch round trip
# (an executable, not a test): ./bench_env_pool [--threads 1,2,4,8,16] [--envs ...] [--dispatch]
add_executable(bench_env_pool ${CMAKE_CURRENT_LIST_DIR}/bench_env_pool.c)
target_include_directories(bench_env_pool PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_compile_options(bench_env_pool PRIVATE ${CUDARL_C_WARNINGS})
target_link_libraries(bench_env_pool PRIVATE cudarl)
