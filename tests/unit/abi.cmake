# The version macros and functions, and the struct_size of every struct a caller fills (refused
# when unset, too big or of no header; an earlier size read with the later fields' defaults).
cudarl_test(test_abi SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_abi.c LABELS cpu)
