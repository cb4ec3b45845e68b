# CartPole-v1: unit tests, and a replay of a Gymnasium trace that the fixture test
# gym_cartpole_trace records into the build dir first (needs python3 with gymnasium).
cudarl_test(test_cartpole SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cartpole.c LABELS cpu)

set(CARTPOLE_GYM_TRACE ${CMAKE_CURRENT_BINARY_DIR}/cartpole_gym_trace.bin)
if(Python3_Interpreter_FOUND)
  add_test(NAME gym_cartpole_trace
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/gym_cartpole_trace.py
                   ${CARTPOLE_GYM_TRACE})
else()
  # Never skip silently: without Python the comparison fails and says why.
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/cartpole_no_python.cmake
       "message(FATAL_ERROR \"no python3 interpreter found at configure time; install python3 "
       "and pip install gymnasium, then reconfigure\")\n")
  add_test(NAME gym_cartpole_trace
           COMMAND ${CMAKE_COMMAND} -P ${CMAKE_CURRENT_BINARY_DIR}/cartpole_no_python.cmake)
endif()
set_tests_properties(gym_cartpole_trace PROPERTIES LABELS "cpu;gym"
                     FIXTURES_SETUP cartpole_gym_trace)

cudarl_test(test_cartpole_gym SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cartpole_gym.c LABELS cpu gym
            ARGS ${CARTPOLE_GYM_TRACE})
set_tests_properties(test_cartpole_gym PROPERTIES FIXTURES_REQUIRED cartpole_gym_trace)
