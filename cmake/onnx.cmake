# ONNX export (`cudarl export --onnx`): C code for the ONNX schema, generated at build time by
# protoc-c from third_party/onnx/onnx.proto, compiled into the cudarl library and linked against
# libprotobuf-c. src/runtime/onnx_export.c is the only user of the generated code.
find_program(CUDARL_PROTOC_C protoc-c)
find_path(PROTOBUF_C_INCLUDE_DIR protobuf-c/protobuf-c.h)
find_library(PROTOBUF_C_LIBRARY protobuf-c)
if(NOT CUDARL_PROTOC_C OR NOT PROTOBUF_C_INCLUDE_DIR OR NOT PROTOBUF_C_LIBRARY)
  message(FATAL_ERROR "protobuf-c not found (protoc-c: ${CUDARL_PROTOC_C}, header: "
                      "${PROTOBUF_C_INCLUDE_DIR}, library: ${PROTOBUF_C_LIBRARY}); ONNX export "
                      "needs it: install it (Debian: apt-get install protobuf-c-compiler "
                      "libprotobuf-c-dev, or run scripts/setup.sh) or pass "
                      "-DCMAKE_PREFIX_PATH=<prefix with bin/protoc-c, include/protobuf-c and lib>")
endif()

set(CUDARL_ONNX_PROTO ${PROJECT_SOURCE_DIR}/third_party/onnx/onnx.proto)
set(CUDARL_ONNX_GEN ${PROJECT_BINARY_DIR}/generated/onnx)
add_custom_command(
  OUTPUT ${CUDARL_ONNX_GEN}/onnx.pb-c.c ${CUDARL_ONNX_GEN}/onnx.pb-c.h
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CUDARL_ONNX_GEN}
  COMMAND ${CUDARL_PROTOC_C} --c_out=${CUDARL_ONNX_GEN}
          --proto_path=${PROJECT_SOURCE_DIR}/third_party/onnx ${CUDARL_ONNX_PROTO}
  DEPENDS ${CUDARL_ONNX_PROTO}
  COMMENT "protoc-c: C code for the ONNX schema (third_party/onnx/onnx.proto)"
  VERBATIM)

# onnx_export.c is also matched by the library's glob of src/runtime/*.c; CMake lists a source
# once per target, so naming it here only makes the dependency explicit.
target_sources(cudarl PRIVATE ${CUDARL_ONNX_GEN}/onnx.pb-c.c ${CUDARL_ONNX_GEN}/onnx.pb-c.h
               ${PROJECT_SOURCE_DIR}/src/runtime/onnx_export.c)
target_include_directories(cudarl PRIVATE ${CUDARL_ONNX_GEN} ${PROTOBUF_C_INCLUDE_DIR})
# PUBLIC: libcudarl is static, so whatever links it needs libprotobuf-c too.
cudarl_import(protobuf_c ${PROTOBUF_C_LIBRARY})
target_link_libraries(cudarl PUBLIC cudarl::protobuf_c)
