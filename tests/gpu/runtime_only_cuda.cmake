# The CUDA runtime-only library acts as the full one, bit for bit (needs a GPU: label gpu):
# test_runtime_only_cuda.sh builds it beside this build and compares runtime_act_dump's words
# (a program that dlopens each library, so one binary runs on both).
if(CUDARL_HAVE_CUDA AND NOT CUDARL_RUNTIME_ONLY AND NOT CMAKE_CROSSCOMPILING)
  add_executable(runtime_act_dump ${CMAKE_CURRENT_LIST_DIR}/runtime_act_dump.c)
  target_include_directories(runtime_act_dump PRIVATE ${PROJECT_SOURCE_DIR}/include
                             ${CMAKE_CURRENT_LIST_DIR}/../common)
  target_compile_options(runtime_act_dump PRIVATE ${CUDARL_C_WARNINGS})
  target_link_libraries(runtime_act_dump PRIVATE ${CMAKE_DL_LIBS})
  # lists travel comma-separated (a ; would split the argument)
  string(REPLACE ";" "," archs "${CMAKE_CUDA_ARCHITECTURES}")
  string(REPLACE ";" "," prefix "${CMAKE_PREFIX_PATH}")
  add_test(NAME test_runtime_only_cuda
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/test_runtime_only_cuda.sh ${PROJECT_SOURCE_DIR}
                   ${CMAKE_CURRENT_BINARY_DIR}/runtime-only-cuda $<TARGET_FILE:cudarl_shared>
                   $<TARGET_FILE:cudarl_cli> $<TARGET_FILE:runtime_act_dump> ${CMAKE_GENERATOR}
                   "${archs}" "${prefix}")
  set_tests_properties(test_runtime_only_cuda PROPERTIES LABELS gpu TIMEOUT 900)
endif()
