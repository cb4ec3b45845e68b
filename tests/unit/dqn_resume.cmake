# DQN resumed bit for bit on the CPU (the env batch, the pool with prioritized replay, minatar-cnn)
# and what its resume refuses.
cudarl_test(test_dqn_resume SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_dqn_resume.c LABELS cpu
            ARGS ${CMAKE_CURRENT_BINARY_DIR}/dqn-resume-runs)
