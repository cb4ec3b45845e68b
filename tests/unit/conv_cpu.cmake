# Convolution ops of the CPU backend: against a naive double reference and finite differences
# (whole networks against PyTorch: test_conv_golden, tests/golden/golden.cmake).
cudarl_test(test_conv_cpu SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_conv_cpu.c LABELS cpu)
# The op table's conv2d entries (ops/conv2d.h) against a direct double reference: the CPU's here,
# the CUDA backend's (every engine and product format) in the gpu group.
cudarl_test(test_conv_ops SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_conv_ops.c ARGS cpu LABELS cpu)
if(CUDARL_HAVE_CUDA)
  add_test(NAME test_conv_ops_gpu COMMAND test_conv_ops gpu)
  set_tests_properties(test_conv_ops_gpu PROPERTIES LABELS gpu)
endif()
