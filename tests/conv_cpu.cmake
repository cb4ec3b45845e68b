# Convolution ops of the CPU backend: against a naive double reference and finite differences,
# and a whole Nature-CNN / MinAtar network against PyTorch (tests/data/conv_golden.safetensors,
# written by scripts/golden_conv.py).
cudarl_test(test_conv_cpu SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_conv_cpu.c LABELS cpu)
cudarl_test(test_conv_golden SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_conv_golden.c LABELS cpu)
