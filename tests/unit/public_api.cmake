cudarl_test(test_public_api SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_public_api.c LABELS cpu)
# libcudarl.so exports exactly the functions include/cudarl.h declares, in the version nodes of
# cmake/cudarl.map, with the SONAME of CUDARL_ABI_VERSION (nm and readelf read it).
add_test(NAME test_exports COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_exports.py
         $<TARGET_FILE:cudarl_shared> ${PROJECT_SOURCE_DIR}/include/cudarl.h
         ${PROJECT_SOURCE_DIR}/cmake/cudarl.map)
set_tests_properties(test_exports PROPERTIES LABELS "cpu")
