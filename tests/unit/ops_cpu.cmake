# CPU ops against double-precision references: one program, one ctest per op (label cpu).
add_executable(test_ops_cpu ${CMAKE_CURRENT_LIST_DIR}/test_ops_cpu.c)
cudarl_test_target(test_ops_cpu)
foreach(op linear tanh categorical gae ppo_loss grad_norm adam orthogonal keep)
  add_test(NAME test_ops_cpu_${op} COMMAND test_ops_cpu ${op})
  set_tests_properties(test_ops_cpu_${op} PROPERTIES LABELS cpu)
endforeach()
