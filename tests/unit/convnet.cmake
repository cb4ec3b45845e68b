# Convolutional policies (src/nn/convnet.h): layouts, spec text, init and finite-difference
# gradients (whole CleanRL networks against PyTorch: test_convnet_golden,
# tests/golden/golden.cmake).
cudarl_test(test_convnet SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_convnet.c LABELS cpu)
