# The env thread pool (src/env/env_pool.c) and the env registry (src/env/env.c): shards, groups,
# autoreset, truncation, CartPole through the pool against the batch, registration errors.
cudarl_test(test_env_pool SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_env_pool.c LABELS cpu)
