# Dynamic loss scaling (src/ops/cpu/loss_scale.c) against GradScaler's rules and a golden file of
# torch's own GradScaler (tests/golden/loss_scale_golden.json; label cpu, one ctest per group).
# Its CUDA twin: tests/gpu/loss_scale_cuda.cmake.
add_executable(test_loss_scale ${CMAKE_CURRENT_LIST_DIR}/test_loss_scale.c)
cudarl_test_target(test_loss_scale)
target_include_directories(test_loss_scale PRIVATE ${CJSON_INCLUDE_DIR})
foreach(group overflow growth boundary no_inf table config golden)
  add_test(NAME test_loss_scale_${group} COMMAND test_loss_scale ${group})
  set_tests_properties(test_loss_scale_${group} PROPERTIES LABELS cpu
                       ENVIRONMENT "CUDARL_TEST_DATA=${CUDARL_TEST_DATA}")
endforeach()
