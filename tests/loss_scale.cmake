# Dynamic loss scaling (src/ops/cpu/loss_scale.c) against GradScaler's rules and a golden file of
# torch's own GradScaler (label cpu, one ctest per group); its CUDA twin against it (label gpu).
add_executable(test_loss_scale ${CMAKE_CURRENT_LIST_DIR}/test_loss_scale.c)
target_include_directories(test_loss_scale PRIVATE ${PROJECT_SOURCE_DIR}/src
                           ${PROJECT_SOURCE_DIR}/tests ${CJSON_INCLUDE_DIR})
target_compile_options(test_loss_scale PRIVATE ${CUDARL_C_WARNINGS})
target_link_libraries(test_loss_scale PRIVATE cudarl)
foreach(group overflow growth boundary no_inf table config golden)
  add_test(NAME test_loss_scale_${group} COMMAND test_loss_scale ${group})
  set_tests_properties(test_loss_scale_${group} PROPERTIES LABELS cpu
                       ENVIRONMENT "CUDARL_TEST_DATA=${PROJECT_SOURCE_DIR}/tests/data")
endforeach()

if(CUDARL_HAVE_CUDA)
  cudarl_test(test_loss_scale_cuda SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_loss_scale_cuda.c
              LABELS gpu)
endif()
