# DQN's CPU ops against double-precision references: one program, one ctest per op (label cpu).
add_executable(test_ops_dqn ${CMAKE_CURRENT_LIST_DIR}/test_ops_dqn.c)
target_include_directories(test_ops_dqn PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
target_compile_options(test_ops_dqn PRIVATE ${CUDARL_C_WARNINGS})
target_link_libraries(test_ops_dqn PRIVATE cudarl)
foreach(op relu dqn_loss egreedy polyak)
  add_test(NAME test_ops_dqn_${op} COMMAND test_ops_dqn ${op})
  set_tests_properties(test_ops_dqn_${op} PROPERTIES LABELS cpu)
endforeach()
