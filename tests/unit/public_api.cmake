cudarl_test(test_public_api SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_public_api.c LABELS cpu)
# libcudarl.so exports exactly the functions include/cudarl.h declares (nm reads its symbols).
add_test(NAME test_exports COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_exports.py
         $<TARGET_FILE:cudarl_shared> ${PROJECT_SOURCE_DIR}/include/cudarl.h)
set_tests_properties(test_exports PROPERTIES LABELS "cpu")
