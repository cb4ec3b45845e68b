cudarl_test(test_dqn_learn SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_dqn_learn.c LABELS "cpu;slow"
            ARGS ${CMAKE_CURRENT_BINARY_DIR}/dqn-runs)
