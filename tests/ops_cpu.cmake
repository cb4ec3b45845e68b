# CPU ops against double-precision references: one program, one ctest per op (label cpu).
add_executable(test_ops_cpu ${CMAKE_CURRENT_LIST_DIR}/test_ops_cpu.c)
target_include_directories(test_ops_cpu PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
target_compile_options(test_ops_cpu PRIVATE ${CUDARL_C_WARNINGS})
target_link_libraries(test_ops_cpu PRIVATE cudarl)
foreach(op linear tanh categorical gae ppo_loss grad_norm adam orthogonal)
  add_test(NAME test_ops_cpu_${op} COMMAND test_ops_cpu ${op})
  set_tests_properties(test_ops_cpu_${op} PROPERTIES LABELS cpu)
endforeach()
