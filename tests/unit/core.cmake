cudarl_test(test_core SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_core.c LABELS cpu)
