# The precision policy (src/nn/precision.c): spelling, table invariants, roundings, and the
# tolerance table and a network's chain tolerance against a CPU emulation of each precision
# (label cpu, one ctest per group).
add_executable(test_precision ${CMAKE_CURRENT_LIST_DIR}/test_precision.c)
cudarl_test_target(test_precision)
foreach(group parse policy round tolerances chain)
  add_test(NAME test_precision_${group} COMMAND test_precision ${group})
  set_tests_properties(test_precision_${group} PROPERTIES LABELS cpu)
endforeach()
