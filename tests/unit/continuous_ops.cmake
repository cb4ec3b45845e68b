# The continuous-action CPU ops (Gaussian policy, running normalization) against double-precision
# references: one program, one ctest per group (label cpu).
add_executable(test_continuous_ops ${CMAKE_CURRENT_LIST_DIR}/test_continuous_ops.c)
cudarl_test_target(test_continuous_ops)
foreach(group sample loss normalize)
  add_test(NAME test_continuous_ops_${group} COMMAND test_continuous_ops ${group})
  set_tests_properties(test_continuous_ops_${group} PROPERTIES LABELS cpu)
endforeach()
