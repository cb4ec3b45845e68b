# The benchmark table in bench/README.md, which bench/run.sh runs from: every row parses, every
# command is valid shell, every script it names exists.
if(BUILD_TESTING)
  add_test(NAME bench_table COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/run.sh --check)
  set_tests_properties(bench_table PROPERTIES LABELS cpu)
endif()
