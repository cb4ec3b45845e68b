# The cudarl command line end to end, driven by python3 (numpy, safetensors) on the built
# binary: bad input and bad files, --help, determinism, the checkpoint format, resume after
# Ctrl-C, eval. One ctest entry per group; each group works in its own folder under cli-work.
if(Python3_EXECUTABLE)
  set(CUDARL_CLI_PYTHON ${Python3_EXECUTABLE})
else()
  # Never skip silently: without a configured interpreter the tests run python3 from PATH and
  # fail, saying so, if there is none.
  set(CUDARL_CLI_PYTHON python3)
endif()
foreach(group bad_input help determinism checkpoint resume eval dqn_plan ppo_conv runs limits continuous config
              profile)
  add_test(NAME cli_${group}
           COMMAND ${CUDARL_CLI_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_cli.py
                   --cudarl ${CUDARL_CLI_RUN} --work ${CMAKE_CURRENT_BINARY_DIR}/cli-work
                   --only ${group})
  set_tests_properties(cli_${group} PROPERTIES LABELS "cpu;cli" TIMEOUT 300)
endforeach()
# --profile on a GPU: a conv policy's rollout split by timing events, its TFLOP/s against the peak
if(CUDARL_HAVE_CUDA)
  add_test(NAME cli_profile_gpu
           COMMAND ${CUDARL_CLI_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_cli.py
                   --cudarl ${CUDARL_CLI_RUN} --work ${CMAKE_CURRENT_BINARY_DIR}/cli-work
                   --only profile_gpu)
  set_tests_properties(cli_profile_gpu PROPERTIES LABELS "gpu;cli" TIMEOUT 300)
endif()
