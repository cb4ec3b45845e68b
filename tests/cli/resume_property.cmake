# The resume property test (test_resume_property.py): every state.* tensor of small PPO
# checkpoints (MLP on CartPole-v1, envs in the batch and on CPU threads, and on Acrobot-v1 in the
# batch; minatar-cnn on Breakout) corrupted several ways, each resume refused naming the tensor or
# run to its end, never a crash or a sanitizer report; NaN weights refused by resume, eval and
# export; every state.* tensor of DQN's checkpoints likewise. The full version (every MinAtar game,
# CartPolePixels-v1, many more corruptions) is labelled slow.
if(Python3_EXECUTABLE)
  set(CUDARL_RESUME_PYTHON ${Python3_EXECUTABLE})
else()
  set(CUDARL_RESUME_PYTHON python3) # fails, saying so, where there is none
endif()
set(CUDARL_RESUME_PROPERTY ${CMAKE_CURRENT_LIST_DIR}/test_resume_property.py)
add_test(NAME cli_resume_property
         COMMAND ${CUDARL_RESUME_PYTHON} ${CUDARL_RESUME_PROPERTY}
                 --cudarl ${CUDARL_CLI_RUN}
                 --work ${CMAKE_CURRENT_BINARY_DIR}/resume-property)
set_tests_properties(cli_resume_property PROPERTIES LABELS "cpu;cli" TIMEOUT 300)
add_test(NAME cli_resume_property_full
         COMMAND ${CUDARL_RESUME_PYTHON} ${CUDARL_RESUME_PROPERTY}
                 --cudarl ${CUDARL_CLI_RUN}
                 --work ${CMAKE_CURRENT_BINARY_DIR}/resume-property-full --full)
set_tests_properties(cli_resume_property_full PROPERTIES LABELS "cpu;cli;slow" TIMEOUT 1800)
