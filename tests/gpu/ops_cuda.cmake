# The CUDA backend against the CPU backend, op by op: one program, one ctest per group (needs a
# GPU: label gpu, excluded by ctest -LE gpu). The graph group runs again with
# CUDARL_SYNC_DEBUG=1, which waits for and checks every launch outside a capture.
if(CUDARL_HAVE_CUDA)
  add_executable(test_ops_cuda ${CMAKE_CURRENT_LIST_DIR}/test_ops_cuda.c)
  cudarl_test_target(test_ops_cuda)
  foreach(group memory linear tanh rng categorical episodes gae gather ppo_loss optim graph
                noalloc ppo_fused dqn)
    add_test(NAME test_ops_cuda_${group} COMMAND test_ops_cuda ${group})
    set_tests_properties(test_ops_cuda_${group} PROPERTIES LABELS gpu)
  endforeach()
  # noalloc reads device-wide free memory (cudaMemGetInfo): nothing else may run beside it
  set_tests_properties(test_ops_cuda_noalloc PROPERTIES RUN_SERIAL TRUE)
  add_test(NAME test_ops_cuda_graph_sync_debug COMMAND test_ops_cuda graph)
  set_tests_properties(test_ops_cuda_graph_sync_debug PROPERTIES LABELS gpu
                       ENVIRONMENT CUDARL_SYNC_DEBUG=1)
endif()
