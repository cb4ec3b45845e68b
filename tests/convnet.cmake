# Convolutional policies (src/nn/convnet.h): layouts, spec text, init and finite-difference
# gradients (test_convnet), and whole CleanRL networks against PyTorch
# (tests/data/convnet_golden.safetensors, written by scripts/golden_convnet.py).
cudarl_test(test_convnet SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_convnet.c LABELS cpu)
cudarl_test(test_convnet_golden SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_convnet_golden.c LABELS cpu)
# the golden test reads the file's metadata with cJSON directly
target_include_directories(test_convnet_golden PRIVATE ${CJSON_INCLUDE_DIR})
