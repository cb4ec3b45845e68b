# Convolution ops of the CPU backend: against a naive double reference and finite differences
# (whole networks against PyTorch: test_conv_golden, tests/golden/golden.cmake).
cudarl_test(test_conv_cpu SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_conv_cpu.c LABELS cpu)
