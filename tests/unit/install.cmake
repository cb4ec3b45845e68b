# cmake --install of this build into a folder of its own, and what it put there: the files, the
# exports of the installed library, pkg-config's view of cudarl.pc, the installed CLI
# (test_install.py). scripts/consumer-check.sh builds programs against such an install.
add_test(NAME test_install
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_install.py
                 ${CMAKE_CURRENT_BINARY_DIR}/install-test ${PROJECT_SOURCE_DIR}/include/cudarl.h
                 ${PROJECT_SOURCE_DIR}/cmake/cudarl.map ${CMAKE_BINARY_DIR}
                 --install=${CMAKE_COMMAND}
                 --emulator=${CUDARL_EMULATOR_RUN})
set_tests_properties(test_install PROPERTIES LABELS "cpu")
