# Signals sent to a running `cudarl train` (tests/cli/test_signals.py): SIGTERM, SIGHUP and SIGINT
# each stop a run with its final checkpoint (exit code 128 + the signal), which loads and resumes;
# DQN stops on SIGTERM too; SIGKILL at random points leaves the last checkpoint loadable and no
# temp file after the next resume. One ctest entry per group, each in its own folder.
if(Python3_EXECUTABLE)
  set(CUDARL_SIGNALS_PYTHON ${Python3_EXECUTABLE})
else()
  set(CUDARL_SIGNALS_PYTHON python3) # never skip silently: fails saying so if there is none
endif()
foreach(group term hup int dqn kill)
  add_test(NAME signals_${group}
           COMMAND ${CUDARL_SIGNALS_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_signals.py
                   --cudarl ${CUDARL_CLI_RUN}
                   --work ${CMAKE_CURRENT_BINARY_DIR}/signals-work --only ${group})
  set_tests_properties(signals_${group} PROPERTIES LABELS "cpu;cli" TIMEOUT 300)
endforeach()
