# `cudarl export`: the CLI side of ONNX export (cmake/onnx.cmake builds the library side).
target_sources(cudarl_cli PRIVATE ${PROJECT_SOURCE_DIR}/tools/export.c)
