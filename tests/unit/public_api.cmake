cudarl_test(test_public_api SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_public_api.c LABELS cpu)
