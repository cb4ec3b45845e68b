# Gymnasium's MuJoCo tasks (src/env/mujoco/): in a build with MuJoCo, a replay of Gymnasium
# traces that the fixture test gym_mujoco_trace records into the build dir first, and the
# unit tests; in any build, the refusal of their ids by a library without MuJoCo.
if(CUDARL_HAVE_MUJOCO)
  set(MUJOCO_GYM_TRACE ${CMAKE_CURRENT_BINARY_DIR}/mujoco_gym_trace.bin)
  add_test(NAME gym_mujoco_trace
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/gym_mujoco_trace.py
                   ${MUJOCO_GYM_TRACE})
  set_tests_properties(gym_mujoco_trace PROPERTIES LABELS "cpu;gym;mujoco"
                       FIXTURES_SETUP mujoco_gym_trace)
  cudarl_test(test_mujoco_gym SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_mujoco_gym.c
              LABELS cpu gym mujoco ARGS ${MUJOCO_GYM_TRACE})
  set_tests_properties(test_mujoco_gym PROPERTIES FIXTURES_REQUIRED mujoco_gym_trace)
  cudarl_test(test_mujoco SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_mujoco.c LABELS cpu mujoco)
  target_include_directories(test_mujoco SYSTEM PRIVATE ${MUJOCO_INCLUDE_DIR}) # the state's layout
endif()
# With mujoco_missing.c's definitions linked first, the library's MuJoCo tasks stay out of this
# program: it sees the registry of a build without MuJoCo, in either build.
cudarl_test(test_mujoco_missing SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_mujoco_missing.c
            ${PROJECT_SOURCE_DIR}/src/env/mujoco/mujoco_missing.c LABELS cpu mujoco)
