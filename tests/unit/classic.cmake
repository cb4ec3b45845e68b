# The classic-control envs (Acrobot-v1, MountainCar-v0, Pendulum-v1, MountainCarContinuous-v0):
# their defs through the pool, the CPU batch against the pool, the state checks and the
# registry's refusals of bad continuous defs; and a replay of Gymnasium traces that the fixture
# test gym_classic_trace records into the build dir first (needs python3 with gymnasium).
cudarl_test(test_classic SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_classic.c LABELS cpu)

set(CLASSIC_GYM_TRACES ${CMAKE_CURRENT_BINARY_DIR}/classic_gym_traces)
if(Python3_Interpreter_FOUND)
  add_test(NAME gym_classic_trace
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/gym_classic_trace.py
                   ${CLASSIC_GYM_TRACES})
else()
  # Never skip silently: without Python the comparisons fail and say why.
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/classic_no_python.cmake
       "message(FATAL_ERROR \"no python3 interpreter found at configure time; install python3 "
       "and pip install gymnasium, then reconfigure\")\n")
  add_test(NAME gym_classic_trace
           COMMAND ${CMAKE_COMMAND} -P ${CMAKE_CURRENT_BINARY_DIR}/classic_no_python.cmake)
endif()
set_tests_properties(gym_classic_trace PROPERTIES LABELS "cpu;gym"
                     FIXTURES_SETUP classic_gym_traces)

add_executable(test_classic_gym ${CMAKE_CURRENT_LIST_DIR}/test_classic_gym.c)
cudarl_test_target(test_classic_gym)
foreach(env Acrobot-v1 MountainCar-v0 Pendulum-v1 MountainCarContinuous-v0)
  string(REGEX REPLACE "-v[0-9]+$" "" stem ${env})
  string(TOLOWER ${stem} stem)
  add_test(NAME test_classic_gym_${stem} COMMAND test_classic_gym ${CLASSIC_GYM_TRACES} ${env})
  set_tests_properties(test_classic_gym_${stem} PROPERTIES LABELS "cpu;gym"
                       FIXTURES_REQUIRED classic_gym_traces)
endforeach()
