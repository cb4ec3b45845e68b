# The image twins' device blocks regrouped env by env on the host (cr_image_twin_copy_env: a
# data-parallel PPO checkpoint's gather on GPU ranks, docs/multigpu.md), with each rank's twin
# seeding the job's envs from its first one: CPU-testable, the layouts being plain data.
cudarl_test(test_image_twin_copy SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_image_twin_copy.c
            LABELS cpu)
