# DQN resumed bit for bit on a CUDA context (needs a GPU: label gpu): the CPU test's program
# (tests/unit/test_dqn_resume.c) with `cuda`: CartPole's CUDA twin in captured graph blocks
# (uniform and prioritized replay), the pool, and minatar-cnn on the MinAtar twin, the replay's
# CUDA twin saved and restored.
if(CUDARL_HAVE_CUDA)
  add_test(NAME test_dqn_resume_cuda
           COMMAND test_dqn_resume ${CMAKE_CURRENT_BINARY_DIR}/dqn-resume-cuda-runs cuda)
  set_tests_properties(test_dqn_resume_cuda PROPERTIES LABELS gpu)
endif()
