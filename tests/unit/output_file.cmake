# Output files (io/output_file.h, cudarl_output_*): refusals of targets that are not regular
# files, and no temp file left on any failure path.
cudarl_test(test_output_file SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_output_file.c LABELS cpu)
