cudarl_test(test_core SOURCES test_core.c LABELS cpu)
