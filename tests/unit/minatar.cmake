# The five MinAtar games: unit tests, and a step-by-step comparison with the minatar package
# (1.0.15) whose traces the fixture test minatar_trace records into the build dir first (needs
# python3 with gymnasium and minatar==1.0.15; scripts/setup.sh installs them).
cudarl_test(test_minatar SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_minatar.c LABELS cpu)

set(MINATAR_TRACE_DIR ${CMAKE_CURRENT_BINARY_DIR})
if(Python3_Interpreter_FOUND)
  add_test(NAME minatar_trace
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/minatar_trace.py
                   ${MINATAR_TRACE_DIR})
else()
  # Never skip silently: without Python the comparison fails and says why.
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/minatar_no_python.cmake
       "message(FATAL_ERROR \"no python3 interpreter found at configure time; install python3 "
       "and pip install gymnasium minatar==1.0.15, then reconfigure\")\n")
  add_test(NAME minatar_trace
           COMMAND ${CMAKE_COMMAND} -P ${CMAKE_CURRENT_BINARY_DIR}/minatar_no_python.cmake)
endif()
set_tests_properties(minatar_trace PROPERTIES LABELS "cpu;gym" FIXTURES_SETUP minatar_trace)

cudarl_test(test_minatar_ref SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_minatar_ref.c LABELS cpu gym
            ARGS ${MINATAR_TRACE_DIR})
set_tests_properties(test_minatar_ref PROPERTIES FIXTURES_REQUIRED minatar_trace)
