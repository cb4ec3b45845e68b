cudarl_test(test_ppo_golden SOURCES test_ppo_golden.c LABELS cpu)
cudarl_test(test_ppo_learn SOURCES test_ppo_learn.c LABELS "cpu;slow"
            ARGS ${CMAKE_CURRENT_BINARY_DIR}/learn-runs)
