# --profile's models (src/algo/ppo/ppo_profile.c): a conv net's FLOPs per row against hand-counted
# numbers, and the per-SM peak rates against the figures NVIDIA quotes for known GPUs.
cudarl_test(test_profile_model SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_profile_model.c LABELS cpu)
