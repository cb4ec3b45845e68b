# Replay buffer (CPU): round trips against a naive full-stack reference, chi-square tests of
# uniform and prioritized sampling, the memory plan. One program, one ctest per group.
# Until the library's source glob lists src/replay/*.c, the test compiles the sources itself.
get_target_property(CUDARL_REPLAY_LIB_SOURCES cudarl SOURCES)
list(FILTER CUDARL_REPLAY_LIB_SOURCES INCLUDE REGEX "src/replay/")
set(CUDARL_REPLAY_TEST_SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_replay.c)
if(NOT CUDARL_REPLAY_LIB_SOURCES)
  file(GLOB CUDARL_REPLAY_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/replay/*.c)
  list(APPEND CUDARL_REPLAY_TEST_SOURCES ${CUDARL_REPLAY_SOURCES})
endif()
add_executable(test_replay ${CUDARL_REPLAY_TEST_SOURCES})
cudarl_test_target(test_replay)
foreach(group roundtrip uniform prioritized plan stride)
  add_test(NAME test_replay_${group} COMMAND test_replay ${group})
  set_tests_properties(test_replay_${group} PROPERTIES LABELS cpu)
endforeach()
