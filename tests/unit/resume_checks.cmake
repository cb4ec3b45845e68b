# What resume, eval, export and the runtime check before trusting a checkpoint (env states,
# non-finite numbers), and training stopping when it diverges (src/env state checks,
# io/checkpoint.c, algo/ppo/ppo_checkpoint.c).
cudarl_test(test_resume_checks SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_resume_checks.c LABELS cpu
            ARGS ${CMAKE_CURRENT_BINARY_DIR}/resume-checks-runs)
