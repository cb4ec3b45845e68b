# The tests of the runtime-only build (-DCUDARL_RUNTIME_ONLY=ON), which builds no test program:
# its libcudarl.so exports exactly the runtime's functions (the first node of cmake/cudarl.map),
# needs only what the runtime needs (test_needed.py), and installs as test_install.py expects.
# scripts/consumer-check.sh configures this build once in CI and runs them, and the consumer.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
set(dir ${CMAKE_CURRENT_LIST_DIR}/unit)
add_test(NAME test_exports_runtime
         COMMAND ${Python3_EXECUTABLE} ${dir}/test_exports.py $<TARGET_FILE:cudarl_shared>
                 ${PROJECT_SOURCE_DIR}/include/cudarl.h ${PROJECT_SOURCE_DIR}/cmake/cudarl.map
                 --runtime-only)
add_test(NAME test_needed COMMAND ${Python3_EXECUTABLE} ${dir}/test_needed.py
                                  $<TARGET_FILE:cudarl_shared>)
add_test(NAME test_install_runtime
         COMMAND ${Python3_EXECUTABLE} ${dir}/test_install.py ${CMAKE_BINARY_DIR}/install-test
                 ${PROJECT_SOURCE_DIR}/include/cudarl.h ${PROJECT_SOURCE_DIR}/cmake/cudarl.map
                 ${CMAKE_BINARY_DIR} --runtime-only --install=${CMAKE_COMMAND})
set_tests_properties(test_exports_runtime test_needed test_install_runtime PROPERTIES LABELS cpu)
