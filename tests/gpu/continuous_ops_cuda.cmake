# The CUDA twins of the continuous-action ops (gaussian.cu, normalize.cu) against the CPU
# backend: one program, one ctest per group (needs a GPU: label gpu). The graph group runs again
# with CUDARL_SYNC_DEBUG=1, which waits for and checks every launch outside a capture.
if(CUDARL_HAVE_CUDA)
  add_executable(test_continuous_ops_cuda ${CMAKE_CURRENT_LIST_DIR}/test_continuous_ops_cuda.c)
  cudarl_test_target(test_continuous_ops_cuda)
  foreach(group sample loss running_stats normalize_obs normalize_reward graph)
    add_test(NAME test_continuous_ops_cuda_${group} COMMAND test_continuous_ops_cuda ${group})
    set_tests_properties(test_continuous_ops_cuda_${group} PROPERTIES LABELS gpu)
  endforeach()
  add_test(NAME test_continuous_ops_cuda_graph_sync_debug COMMAND test_continuous_ops_cuda graph)
  set_tests_properties(test_continuous_ops_cuda_graph_sync_debug PROPERTIES LABELS gpu
                       ENVIRONMENT CUDARL_SYNC_DEBUG=1)
endif()
