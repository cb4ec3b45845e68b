# DQN's CPU ops against double-precision references: one program, one ctest per op (label cpu).
add_executable(test_ops_dqn ${CMAKE_CURRENT_LIST_DIR}/test_ops_dqn.c)
cudarl_test_target(test_ops_dqn)
foreach(op relu dqn_loss egreedy polyak)
  add_test(NAME test_ops_dqn_${op} COMMAND test_ops_dqn ${op})
  set_tests_properties(test_ops_dqn_${op} PROPERTIES LABELS cpu)
endforeach()
